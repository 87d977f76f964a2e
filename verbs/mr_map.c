/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions, shim side: after a registration whose
 * range lies in one MAP_SHARED mapping of a tmpfs or hugetlbfs file the
 * application made (memfd, /dev/shm, hugetlbfs), hand the daemon a
 * descriptor of that file (UROCE_OP_MAP_MR), so that it places and
 * gathers payload with memcpy instead of system calls. Sharing is what
 * such a mapping asked for: the daemon's view of the file is the
 * application's. Private memory is never made shared (its copy-on-write,
 * zero-fill and fork rules are the kernel's; mr_pin.c). Anything else, or
 * a refusal by the daemon, leaves the MR on its pinned route, which the
 * application cannot tell apart except by speed (docs/verbs.md).
 * UROCE_MAP_MR=0 turns it off. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <uroce/procmaps.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"

bool urv_mr_map_on(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("UROCE_MAP_MR");
		on = !(e && !strcmp(e, "0"));
	}
	return on;
}

static bool urv_fd_is(int fd, const struct uroce_vma *v, bool wr)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY ||
	    (wr && (fl & O_ACCMODE) != O_RDWR))
		return false;
	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_ino == v->ino &&
	       major(st.st_dev) == v->maj && minor(st.st_dev) == v->min;
}

/* A descriptor of our own for the file of v: a copy of one the process
 * holds (a memfd has no other way in: /proc/self/map_files needs a
 * capability), else the file opened by its path when it lives on
 * /dev/shm or hugetlbfs. -1 if none. */
static int urv_file_fd(const struct uroce_vma *v, bool wr)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;

	while (d && fd < 0 && (e = readdir(d))) {
		int n = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || n == dirfd(d) ||
		    !urv_fd_is(n, v, wr))
			continue;
		/* our own copy; checked again, the application may have
		 * closed and reused n meanwhile */
		fd = fcntl(n, F_DUPFD_CLOEXEC, 0);
		if (fd >= 0 && !urv_fd_is(fd, v, wr)) {
			close(fd);
			fd = -1;
		}
	}
	if (d)
		closedir(d);
	if (fd >= 0 || v->path[0] != '/')
		return fd;
	struct statfs sf;
	if (strncmp(v->path, "/dev/shm/", 9) &&
	    (statfs(v->path, &sf) || sf.f_type != HUGETLBFS_MAGIC))
		return -1;
	fd = open(v->path, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd >= 0 && !urv_fd_is(fd, v, wr)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The piece of [addr, addr + len) the daemon can map: all of it, in one
 * shared mapping of a file we can find; false: none. */
static bool urv_mr_piece(const struct uroce_vma *v, bool wr, struct uroce_map_mr_req *q, int *fd)
{
	if (v->perms[3] != 's' || q->length > v->end - q->addr)
		return false;
	*fd = urv_file_fd(v, wr);
	q->file_off = v->off + (q->addr - v->start);
	return *fd >= 0;
}

void urv_mr_map(struct urv_context *c, struct urv_mr *umr)
{
	struct uroce_vma v;
	uint64_t addr = (uintptr_t)umr->ibmr.addr, len = umr->ibmr.length;
	bool wr = umr->access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_ATOMIC);
	struct uroce_map_mr_req req = { .handle = umr->ibmr.handle, .addr = addr, .length = len };
	int mfd, fd = -1;

	/* an ODP MR must see a later munmap + mmap of its range (odp.c) */
	if (!urv_mr_map_on() || !len || urv_mr_odp(umr))
		return;
	mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (mfd < 0)
		return;
	if (!uroce_vma_find(mfd, addr, &v) && urv_mr_piece(&v, wr, &req, &fd)) {
		/* the daemon never faults a page of the file in on its own
		 * account (mrmap.c): the pages are ours, now. A pinned
		 * registration has them already. */
		if (umr->pin.pin != UROCE_PIN_RING) {
			uintptr_t s = addr & ~(uintptr_t)4095;
			(void)madvise((void *)s, addr + len - s,
				      wr ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
		}
		/* a refusal is not an error: the MR keeps its route */
		umr->mapped = !urv_ctl(c, UROCE_OP_MAP_MR, &req, sizeof(req), NULL, 0, &fd, 1,
				       NULL, 0);
	}
	close(mfd);
	if (fd >= 0)
		close(fd);
}
