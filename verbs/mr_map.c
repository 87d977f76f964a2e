/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions, shim side: after a registration, find
 * the file behind the registered range and hand the daemon a descriptor
 * of it (UROCE_OP_MAP_MR), so that it places and gathers payload with
 * memcpy instead of a system call. A range inside one MAP_SHARED mapping
 * of a tmpfs or hugetlbfs file goes as it is; the whole pages of a range
 * in private anonymous memory are moved onto a memfd first (mr_move.c).
 * Anything else (file-backed private mappings, several mappings, a
 * refusal by the daemon) leaves the MR on the /proc/<pid>/mem path, which
 * the application cannot tell apart except by speed (docs/verbs.md).
 * UROCE_MAP_MR=0 turns it off. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
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

/* Private anonymous read-write memory: what mr_move.c may move */
static bool urv_vma_private_anon(const struct uroce_vma *v)
{
	return !strcmp(v->perms, "rw-p") && !v->maj && !v->min && !v->ino &&
	       (!v->path[0] || !strcmp(v->path, "[heap]") || !strncmp(v->path, "[anon:", 6));
}

/* [v->start, e) all private anonymous memory, in adjacent mappings (a
 * range moved back earlier is a mapping of its own) */
static bool urv_anon_upto(int mfd, const struct uroce_vma *v, uintptr_t e)
{
	struct uroce_vma w = *v;

	while (urv_vma_private_anon(&w) && w.end < e) {
		uint64_t next = w.end;
		if (lseek(mfd, 0, SEEK_SET) || uroce_vma_find(mfd, next, &w) || w.start != next)
			return false;
	}
	return urv_vma_private_anon(&w);
}

/* The piece of [addr, addr + len) the daemon can map, with the file and
 * its offset; *own: fd is ours to close. false: none. */
static bool urv_mr_piece(struct urv_mr *umr, int mfd, const struct uroce_vma *v, bool wr,
			 struct uroce_map_mr_req *q, int *fd, bool *own)
{
	uintptr_t addr = q->addr, pg = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (v->perms[3] == 's') {
		if (q->length > v->end - addr)
			return false;
		*fd = urv_file_fd(v, wr);
		*own = true;
		q->file_off = v->off + (addr - v->start);
		/* pages an earlier registration moved: share its reference */
		if (*fd >= 0)
			umr->mv = urv_mv_of_file(v->maj, v->min, v->ino);
		return *fd >= 0;
	}
	/* whole pages only; the partial ones at the ends keep the old path */
	uintptr_t s = (addr + pg - 1) & ~(pg - 1), e = (addr + q->length) & ~(pg - 1);
	if (s >= e || !urv_anon_upto(mfd, v, e))
		return false;
	umr->mv = urv_mv_get(s, e, fd);
	*own = false;
	q->addr = s;
	q->length = e - s;
	q->file_off = 0;
	return umr->mv != NULL;
}

void urv_mr_map(struct urv_context *c, struct urv_mr *umr)
{
	struct uroce_vma v;
	uint64_t addr = (uintptr_t)umr->ibmr.addr, len = umr->ibmr.length;
	bool wr = umr->access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_ATOMIC);
	struct uroce_map_mr_req req = { .handle = umr->ibmr.handle, .addr = addr, .length = len };
	int mfd, fd = -1, rc;
	bool own = false;

	/* an ODP MR must see a later munmap + mmap of its range (odp.c) */
	if (!urv_mr_map_on() || !len || urv_mr_odp(umr))
		return;
	urv_mv_setup();
	mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (mfd < 0)
		return;
	rc = uroce_vma_find(mfd, addr, &v);
	if (rc) {
		close(mfd);
		return;
	}
	urv_mv_lock();
	if (urv_mr_piece(umr, mfd, &v, wr, &req, &fd, &own))
		/* a refusal is not an error: the MR stays on the old path */
		umr->mapped = !urv_ctl(c, UROCE_OP_MAP_MR, &req, sizeof(req), NULL, 0, &fd, 1,
				       NULL, 0);
	if (umr->mapped || umr->mv)
		urv_mv_track(umr);
	urv_mv_unlock();
	close(mfd);
	if (own && fd >= 0)
		close(fd);
}
