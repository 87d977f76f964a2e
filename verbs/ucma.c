/* SPDX-License-Identifier: MIT */
/* The kernel's rdma_ucm character device, emulated so that the real,
 * unmodified librdmacm runs on uroce (docs/cm.md).
 *
 * librdmacm opens /dev/infiniband/rdma_cm, fstat()s it (a character
 * device), write()s `struct rdma_ucm_cmd_hdr` + a command struct for every
 * call and poll()s the fd for events. Here:
 *   open   -> UROCE_OP_UCMA_OPEN on this process's rdma_cm connection to
 *             the daemon; the fd returned is the read end of the daemon's
 *             event pipe (one byte per queued event: pollable, blocking or
 *             not per the fd's own flags, as the kernel's fd);
 *   write  -> UROCE_OP_UCMA_CMD, the reply copied to the command's
 *             `response` pointer; the kernel's ucma_write return values
 *             and errnos (byte count, EINVAL, EFAULT, ENOSPC, ENOSYS, ...);
 *   GET_EVENT reads one pipe byte first (that is where it blocks);
 *   close  -> UROCE_OP_UCMA_CLOSE (the daemon destroys the file's ids);
 *   fstat  -> a character device.
 * Any other fd goes to libc after one load and, while an rdma_cm file is
 * open, one bit test.
 *
 * fork: the child inherits the fds but not the right to drive the parent's
 * ids over the parent's connection (that would interleave requests on one
 * socket). A child's write() on an inherited rdma_cm fd fails with EACCES
 * (what the kernel's ucma_write returns for a file used from another
 * context), its close() only closes its copy, and a new open() in the
 * child gets a connection of its own.
 *
 * Files: ucma.c (the libc interposers), ucma_open.c (which paths are ours,
 * open, fork), ucma_libc.c (libc's read and close), ucma_file.c (the open
 * files), ucma_conn.c (the daemon
 * connection), ucma_cmd.c (write of one command), ucma_mem.c (the
 * application's memory), ucma_shadow.c (wildcard listeners' copies),
 * ucma_mux.c (an fd over several devices' files), ucma_gone.c (the ids,
 * DEVICE_REMOVAL); private header ucma_int.h. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "urv_ctl.h"
#include "real_fn.h"
#include "ucma.h"
#include "ucma_int.h"

#define URV_EXPORT __attribute__((visibility("default")))

/* ---- the real libc functions ------------------------------------------ */

REAL_PTR(write);
REAL_PTR(close);
REAL_PTR(dup2);
REAL_PTR(dup3);
REAL_PTR(fstat);
REAL_PTR(fstat64);

/* ---- the libc interposers -------------------------------------------------- */

static __attribute__((noinline)) ssize_t write_slow(int fd, const void *buf, size_t len)
{
	struct ucma_file *f;
	ssize_t r;

	f = ucma_file_get(fd);
	if (!f)
		return real_write(fd, buf, len);
	r = ucma_write(f, buf, len);
	ucma_file_put(f);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

URV_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	LOAD(write, -1);
	if (!ucma_maybe_fd(fd))
		return real_write(fd, buf, len);
	return write_slow(fd, buf, len);
}

/* The file goes: its ids with it, unless they are the parent's. */
static void file_release(struct ucma_file *f)
{
	if (!f->foreign) {
		struct uroce_handle_msg h = { .handle = f->handle };

		ucma_ctl_call(UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
	}
	urv_mux_close(&f->mux);
	ucma_file_put(f);
	ucma_conn_drop_if_idle();
}

URV_EXPORT int close(int fd)
{
	struct ucma_file *f;

	LOAD(close, -1);
	if (ucma_maybe_fd(fd) && (f = ucma_file_take(fd)))
		file_release(f);
	return real_close(fd);
}

/* dup2/dup3 onto an rdma_cm fd close it first, as the kernel does */
static void drop_target(int oldfd, int newfd)
{
	struct ucma_file *f;

	if (oldfd == newfd || !ucma_maybe_fd(newfd) || fcntl(oldfd, F_GETFD) < 0)
		return;
	f = ucma_file_take(newfd);
	if (f)
		file_release(f);
}

URV_EXPORT int dup2(int oldfd, int newfd)
{
	LOAD(dup2, -1);
	drop_target(oldfd, newfd);
	return real_dup2(oldfd, newfd);
}

URV_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	LOAD(dup3, -1);
	drop_target(oldfd, newfd);
	return real_dup3(oldfd, newfd, flags);
}

/* librdmacm's open_cdev() insists on a character device. The kernel's
 * misc minor is dynamic; a kernel node's number is used when there is
 * one (its netlink answer names it). */
static void fake_chr(mode_t *mode, dev_t *rdev)
{
	struct stat st;

	*mode = S_IFCHR | 0666;
	if (syscall(SYS_newfstatat, AT_FDCWD, URV_UCMA_DEV, &st, 0) == 0 &&
	    S_ISCHR(st.st_mode))
		*rdev = st.st_rdev;
	else
		*rdev = makedev(10, 58);
}

static bool fd_is_ours(int fd)
{
	struct ucma_file *f;

	if (!ucma_maybe_fd(fd) || !(f = ucma_file_get(fd)))
		return false;
	ucma_file_put(f);
	return true;
}

URV_EXPORT int fstat(int fd, struct stat *st)
{
	int r;

	LOAD(fstat, -1);
	r = real_fstat(fd, st);
	if (!r && fd_is_ours(fd))
		fake_chr(&st->st_mode, &st->st_rdev);
	return r;
}

URV_EXPORT int fstat64(int fd, struct stat64 *st)
{
	int r;

	LOAD(fstat64, -1);
	r = real_fstat64(fd, st);
	if (!r && fd_is_ours(fd))
		fake_chr(&st->st_mode, &st->st_rdev);
	return r;
}

/* programs built against glibc < 2.33 */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
URV_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat(fd, st);
}
URV_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	(void)ver;
	return fstat64(fd, st);
}
