/* SPDX-License-Identifier: MIT */
/* Which parts of a client's address space it mapped readable or
 * writable. The daemon reaches it through /proc/<pid>/mem, and the kernel
 * serves that with FOLL_FORCE: it writes into pages the process mapped
 * read-only (a private mapping gets a copy-on-write page it then sees)
 * and reads PROT_NONE ones, where an HCA cannot — pinning fails on them
 * (ib_umem_get; FOLL_WRITE for an MR the device may write), and so does
 * an ODP fault (hmm_range_fault on a VMA without VM_READ, or without
 * VM_WRITE for a write). So a registration and every access to an ODP MR
 * ask the client's /proc/<pid>/maps first (docs/security.md, "Reaching
 * application memory"): one PROCMAP_QUERY ioctl per VMA (Linux 6.11), or
 * a scan of the text where the kernel has no such ioctl. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <uroce/procmaps.h>

#include "emu_obj.h"
#include "emu_mem.h"

/* <linux/fs.h> of Linux 6.11; Debian 12's headers predate it */
struct emu_procmap_query {
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags;
	uint64_t vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define EMU_PROCMAP_QUERY _IOWR('f', 17, struct emu_procmap_query)
#define EMU_PROCMAP_VMA_READABLE 0x01
#define EMU_PROCMAP_VMA_WRITABLE 0x02
#define EMU_PROCMAP_VMA_EXECUTABLE 0x04
#define EMU_PROCMAP_VMA_SHARED 0x08

int emu_vma_attach(struct emu_ctx *c)
{
	char path[48];

	if (c->maps_fd >= 0)
		close(c->maps_fd);
	/* opened after the /proc/<pid>/mem descriptor was checked: were the
	 * pid another process's by now, its answers would not matter, since
	 * the descriptor no longer reaches a live address space */
	c->maps_fd = -1;
	if (c->pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)c->pid);
	c->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
	return c->maps_fd >= 0 ? 0 : -errno;
}

/* One line of the maps text: does it take [*cur, ...) further? 1 if it
 * covers *cur with the permission (and *cur moves to its end), 0 if it
 * lies before *cur, -1 if *cur is in a hole or a VMA without it. */
static int emu_vma_line(const char *s, uint64_t *cur, bool write)
{
	uint64_t a, b;
	char perm[5];

	if (sscanf(s, "%" SCNx64 "-%" SCNx64 " %4s", &a, &b, perm) != 3)
		return 0;
	if (b <= *cur)
		return 0;
	if (a > *cur || perm[write ? 1 : 0] != (write ? 'w' : 'r'))
		return -1;
	*cur = b;
	return 1;
}

/* Without PROCMAP_QUERY: one pass over the text (sorted by address). */
int emu_vma_scan(int fd, uint64_t cur, uint64_t len, bool write)
{
	uint64_t end = cur + len;

	char buf[4096];
	size_t have = 0;
	off_t off = 0;
	bool skip = false; /* in the tail of a line longer than buf */

	for (;;) {
		ssize_t n = pread(fd, buf + have, sizeof(buf) - 1 - have, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EFAULT;
		off += n;
		have += (size_t)n;
		buf[have] = 0;
		char *s = buf, *nl;
		while ((nl = memchr(s, '\n', have - (size_t)(s - buf)))) {
			*nl = 0;
			int r = skip ? 0 : emu_vma_line(s, &cur, write);
			skip = false;
			if (r < 0)
				return -EFAULT;
			if (cur >= end)
				return 0;
			s = nl + 1;
		}
		have -= (size_t)(s - buf);
		memmove(buf, s, have);
		if (have == sizeof(buf) - 1) {
			/* a long path: its line's head is all that counts */
			if (!skip && emu_vma_line(buf, &cur, write) < 0)
				return -EFAULT;
			if (cur >= end)
				return 0;
			skip = true;
			have = 0;
		}
	}
}

int emu_vma_allowed(struct emu_ctx *c, uint64_t addr, uint64_t len, bool write)
{
	uint64_t cur = addr, end = addr + len;

	if (!len)
		return 0;
	if (end < addr)
		return -EFAULT;
	if (c->maps_fd < 0 && c->mem_fd >= 0)
		return 0; /* a client that gave no maps and whose we may not open */
	/* in-process tests: our own maps */
	if (c->maps_fd < 0 && c->pid == getpid())
		(void)emu_vma_attach(c);
	if (c->maps_fd < 0)
		return -EFAULT;
	while (cur < end) {
		struct emu_procmap_query q = { .size = sizeof(q),
					       .query_flags = write ? EMU_PROCMAP_VMA_WRITABLE :
								      EMU_PROCMAP_VMA_READABLE,
					       .query_addr = cur };

		if (ioctl(c->maps_fd, EMU_PROCMAP_QUERY, &q) == 0) {
			if (q.vma_start > cur || q.vma_end <= cur)
				return -EFAULT;
			cur = q.vma_end;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == ENOTTY || errno == EINVAL)
			return emu_vma_scan(c->maps_fd, cur, end - cur, write);
		return -EFAULT; /* ENOENT: a hole, or mapped without it; ESRCH: gone */
	}
	return 0;
}

bool emu_mem_alive(const struct emu_ctx *c)
{
	uint8_t b;

	if (c->mem_fd < 0)
		return true;
	/* address 0 is not mapped (mmap_min_addr): a live address space
	 * answers EIO, a dead one (exit, exec) nothing */
	return pread(c->mem_fd, &b, 1, 0) != 0;
}

int emu_vma_get(struct emu_ctx *c, uint64_t addr, struct uroce_vma *v)
{
	struct emu_procmap_query q = { .size = sizeof(q), .query_addr = addr };

	/* the descriptor bound at HELLO only: opened by pid now, it could be
	 * another program's (an exec since) */
	if (c->maps_fd < 0)
		return -EACCES;
	memset(v, 0, sizeof(*v));
	if (ioctl(c->maps_fd, EMU_PROCMAP_QUERY, &q) == 0) {
		if (q.vma_start > addr || q.vma_end <= addr)
			return -EACCES;
		v->start = q.vma_start;
		v->end = q.vma_end;
		v->off = q.vma_offset;
		v->ino = q.inode;
		v->maj = q.dev_major;
		v->min = q.dev_minor;
		v->perms[0] = q.vma_flags & EMU_PROCMAP_VMA_READABLE ? 'r' : '-';
		v->perms[1] = q.vma_flags & EMU_PROCMAP_VMA_WRITABLE ? 'w' : '-';
		v->perms[2] = q.vma_flags & EMU_PROCMAP_VMA_EXECUTABLE ? 'x' : '-';
		v->perms[3] = q.vma_flags & EMU_PROCMAP_VMA_SHARED ? 's' : 'p';
		return 0;
	}
	if (errno != ENOTTY && errno != EINVAL)
		return -EACCES; /* ENOENT: not mapped; ESRCH: that address space is gone */
	if (lseek(c->maps_fd, 0, SEEK_SET) || uroce_vma_find(c->maps_fd, addr, v))
		return -EACCES;
	return 0;
}

int emu_mr_odp_access(const struct emu_mr *mr, uint64_t proc, uint64_t len, bool write)
{
	/* an ODP fault fails on a page mapped without the permission the
	 * access needs, and the access completes in error; the kernel's
	 * /proc/<pid>/mem would reach it */
	if (!(mr->access & IBV_ACCESS_ON_DEMAND))
		return 0;
	return emu_vma_allowed(mr->ctx, proc, len, write);
}
