/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions. A piece of an MR that the client has in a
 * MAP_SHARED mapping of a tmpfs or hugetlbfs file is mapped into the daemon
 * too, from the descriptor the shim sends (UROCE_OP_MAP_MR), so placement
 * and gathering are a memcpy instead of a system call on /proc/<pid>/mem.
 * Nothing the client sends is believed: the file, the offset and the
 * access mode are checked against the client's own mapping at that
 * address (read through /proc/<pid>/maps of the process its mem
 * descriptor is bound to) before anything is mapped, and any failure
 * leaves the piece on the old path. A client that shrinks the file later
 * makes our copy fault: that SIGBUS is caught per thread and becomes the
 * error an unreachable address gives (docs/security.md). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <uroce/procmaps.h>

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"

/* Every mapping counts against the daemon's vm.max_map_count (65530 by
 * default), which its rings need too: at most three pieces per MR (the
 * shim sends one, or one per moved range), and a bound per device; past
 * either the piece stays on the old path. */
#define EMU_MRMAP_PER_MR 3
#define EMU_MRMAP_PER_DEV 16384

/* ---------------- SIGBUS recovery ---------------- */

/* set while this thread copies; volatile and fenced: the compiler knows
 * memcpy does not read it and would drop the store */
static __thread sigjmp_buf *volatile emu_bus_env;
static struct sigaction emu_bus_prev;
static pthread_once_t emu_bus_once = PTHREAD_ONCE_INIT;

static void emu_bus_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *env = emu_bus_env;

	if (env) {
		emu_bus_env = NULL;
		siglongjmp(*env, 1);
	}
	/* not a fault of a copy into a client's mapping */
	if (emu_bus_prev.sa_flags & SA_SIGINFO) {
		emu_bus_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (emu_bus_prev.sa_handler != SIG_DFL && emu_bus_prev.sa_handler != SIG_IGN) {
		emu_bus_prev.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void emu_bus_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = emu_bus_handler;
	/* NODEFER: we leave the handler by siglongjmp without restoring the
	 * mask (no system call on the copy path), so it must not be blocked */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &emu_bus_prev))
		EMU_LOG(ERR, "SIGBUS handler: %s\n", strerror(errno));
}

int emu_mrmap_copy(void *dst, const void *src, size_t n)
{
	sigjmp_buf env;

	if (sigsetjmp(env, 0))
		return -EFAULT; /* the client shrank the file under us */
	emu_bus_env = &env;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(dst, src, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	emu_bus_env = NULL;
	return 0;
}

/* ---------------- the mapping and its references ---------------- */

/* refs: one for the registration (dropped at emu_mr_unmap) and one per
 * frame in flight that points into it; the port frees frames on its own
 * engine thread or, on a link:NAME pair, on the peer's: atomic. */
struct emu_mrmap_hold {
	uint32_t refs;
	void *map;
	size_t maplen;
};

void emu_mrmap_get(struct emu_mrmap_hold *h)
{
	__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
}

void emu_mrmap_put(struct emu_mrmap_hold *h)
{
	if (__atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL))
		return;
	munmap(h->map, h->maplen);
	free(h);
}

/* ---------------- lookup ---------------- */

/* The piece that holds all of [addr, addr + len) (writable if write), or
 * NULL. Pieces are sorted by start; the few that begin at or before addr
 * are the candidates. */
static const struct emu_mrmap *emu_mrmap_piece(const struct emu_ctx *c, uint64_t addr,
					       uint64_t len, bool write)
{
	uint32_t lo = 0, hi = c->nmaps;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (c->maps[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t k = 0; lo > 0 && k < 8; k++) {
		const struct emu_mrmap *m = &c->maps[--lo];

		if (addr - m->addr <= m->len && len <= m->len - (addr - m->addr) &&
		    (!write || m->writable))
			return m;
	}
	return NULL;
}

uint8_t *emu_mrmap_find(const struct emu_ctx *c, uint64_t addr, uint64_t len, bool write)
{
	const struct emu_mrmap *m = emu_mrmap_piece(c, addr, len, write);

	return m ? m->base + (addr - m->addr) : NULL;
}

const uint8_t *emu_mrmap_find_held(const struct emu_ctx *c, uint64_t addr, uint64_t len,
				   struct emu_mrmap_hold **h)
{
	const struct emu_mrmap *m = emu_mrmap_piece(c, addr, len, false);

	if (!m || !m->hold)
		return NULL;
	*h = m->hold;
	return m->base + (addr - m->addr);
}

int emu_mrmap_persist(const struct emu_ctx *c, uint64_t addr, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	for (uint32_t i = 0; i < c->nmaps && len; i++) {
		const struct emu_mrmap *m = &c->maps[i];
		uint64_t lo = addr > m->addr ? addr : m->addr;
		uint64_t hi = addr + len < m->addr + m->len ? addr + len : m->addr + m->len;

		if (lo >= hi)
			continue;
		/* msync wants a page-aligned start; m->map is one */
		uintptr_t s = (uintptr_t)(m->base + (lo - m->addr)) & ~(uintptr_t)(pg - 1);
		uintptr_t e = (uintptr_t)(m->base + (hi - m->addr));

		if (msync((void *)s, e - s, MS_SYNC))
			return -errno;
	}
	return 0;
}

/* ---------------- validation ---------------- */

/* The client's own mapping at addr, read from the maps of the process its
 * mem descriptor is bound to. With the maps descriptor it sent (checked at
 * HELLO like the mem one), a fresh open of that same file: it names the
 * client's process whatever procfs it is on (another container's too), and
 * fails once that process is gone. Without one: opened by pid, then that
 * pid's mem file must still be the inode of c->mem_fd, which the
 * descriptor pins (a reused pid gets a new inode), so the maps read are
 * that process's. */
static int emu_client_vma(const struct emu_ctx *c, uint64_t addr, struct uroce_vma *v)
{
	char path[48];
	struct stat a, b;
	int fd, rc;

	if (c->mem_fd < 0 || c->pid <= 0 || fstat(c->mem_fd, &a))
		return -EACCES;
	if (c->maps_fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", c->maps_fd);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		rc = uroce_vma_find(fd, addr, v);
		close(fd);
		return rc;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)c->pid);
	if (stat(path, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(fd);
		return -EACCES;
	}
	rc = uroce_vma_find(fd, addr, v);
	close(fd);
	return rc;
}

/* What may be mapped: a regular file on tmpfs (memfd, /dev/shm) or
 * hugetlbfs, which never block on I/O; never FUSE, NFS or a disk. Its
 * page size for the mapping's alignment in *align. */
static int emu_mrmap_file_ok(int fd, const struct stat *st, uint64_t *align)
{
	struct statfs sf;
	long pg = sysconf(_SC_PAGESIZE);

	if (!S_ISREG(st->st_mode) || fstatfs(fd, &sf))
		return -EINVAL;
	if (sf.f_type == TMPFS_MAGIC)
		*align = (uint64_t)pg;
	else if (sf.f_type == HUGETLBFS_MAGIC && st->st_blksize >= pg)
		*align = (uint64_t)st->st_blksize;
	else
		return -EOPNOTSUPP;
	return 0;
}

static bool emu_mr_writes(const struct emu_mr *mr)
{
	return mr->access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC);
}

/* Every check on what the client sent; 0 or -errno. */
static int emu_mrmap_check(const struct emu_ctx *c, const struct emu_mr *mr, uint64_t addr,
			   uint64_t len, uint64_t off, int fd, bool wr, uint64_t *align)
{
	struct uroce_vma v;
	struct stat st;
	int fl, rc;

	if (!len || addr < mr->addr || addr - mr->addr > mr->length ||
	    len > mr->length - (addr - mr->addr) || off + len < off)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st))
		return -EBADF;
	if ((rc = emu_mrmap_file_ok(fd, &st, align)))
		return rc;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY ||
	    (wr && (fl & O_ACCMODE) != O_RDWR))
		return -EACCES;
	if ((uint64_t)st.st_size < off + len)
		return -ERANGE;
	if ((rc = emu_client_vma(c, addr, &v)))
		return rc;
	/* one shared mapping of this very file over the whole piece, at
	 * this offset */
	if (v.perms[3] != 's' || v.maj != major(st.st_dev) || v.min != minor(st.st_dev) ||
	    v.ino != (uint64_t)st.st_ino)
		return -EACCES;
	if (len > v.end - addr || v.off + (addr - v.start) != off)
		return -EACCES;
	return 0;
}

static int emu_mrmap_insert(struct emu_ctx *c, const struct emu_mrmap *m)
{
	uint32_t i;

	if (c->dev->nmrmaps >= EMU_MRMAP_PER_DEV)
		return -ENOMEM;
	if (c->nmaps == c->capmaps) {
		uint32_t n = c->capmaps ? c->capmaps * 2 : 8;
		struct emu_mrmap *t = realloc(c->maps, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		c->maps = t;
		c->capmaps = n;
	}
	for (i = c->nmaps; i > 0 && c->maps[i - 1].addr > m->addr; i--)
		c->maps[i] = c->maps[i - 1];
	c->maps[i] = *m;
	c->nmaps++;
	return 0;
}

/* Page tables for the pages the file already holds, now: a NIC's MR is
 * pinned and translated at registration, and a first-touch fault per
 * 4 KB page on the data path (one per placed page: write faults on a
 * shared mapping get no fault-around) cost more than the copy here. Holes
 * stay holes (populating them would allocate the whole range), hugetlbfs
 * pieces fault once per huge page anyway, and the work is bounded so a
 * huge registration does not hold up the engine's other QPs; failures
 * only leave the faults to the data path. */
#define EMU_MRMAP_POPULATE_MAX (64ull << 20)

static void emu_mrmap_populate(uint8_t *p, size_t len, bool wr, uint64_t align)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n;
	unsigned char *vec;

	if (align != pg)
		return;
	if (len > EMU_MRMAP_POPULATE_MAX)
		len = EMU_MRMAP_POPULATE_MAX;
	n = len / pg;
	if (!n || !(vec = malloc(n)))
		return;
	if (!mincore(p, n * pg, vec)) {
		for (size_t i = 0, j; i < n; i = j) {
			for (j = i; j < n && (vec[j] & 1); j++)
				;
			if (j > i)
				(void)madvise(p + i * pg, (j - i) * pg,
					      wr ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
			else
				j++;
		}
	}
	free(vec);
}

int emu_mr_map(struct emu_ctx *c, const struct uroce_map_mr_req *q, int fd)
{
	struct emu_mr *mr = emu_ctx_get(c, q->handle, EMU_OBJ_MR);
	struct emu_mrmap m;
	uint64_t align = 0;
	int rc;

	/* an ODP MR follows the process's mapping: a copy of today's pages
	 * would miss a later munmap + mmap (odp.c) */
	if (!mr || (mr->access & IBV_ACCESS_ON_DEMAND))
		return -EINVAL;
	if (mr->nmaps >= EMU_MRMAP_PER_MR)
		return -ENOMEM;
	bool wr = emu_mr_writes(mr);
	if ((rc = emu_mrmap_check(c, mr, q->addr, q->length, q->file_off, fd, wr, &align)))
		return rc;
	uint64_t moff = q->file_off & ~(align - 1), delta = q->file_off - moff;
	if (delta + q->length < delta || delta + q->length > SIZE_MAX - align)
		return -EINVAL;
	size_t mlen = (size_t)((delta + q->length + align - 1) & ~(align - 1));
	struct emu_mrmap_hold *h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	void *p = mmap(NULL, mlen, PROT_READ | (wr ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)moff);
	if (p == MAP_FAILED) {
		free(h);
		return -errno;
	}
	*h = (struct emu_mrmap_hold){ .refs = 1, .map = p, .maplen = mlen };
	pthread_once(&emu_bus_once, emu_bus_install);
	emu_mrmap_populate(p, mlen, wr, align);
	m = (struct emu_mrmap){ .mr = mr, .addr = q->addr, .len = q->length,
				.base = (uint8_t *)p + delta, .hold = h, .writable = wr };
	if ((rc = emu_mrmap_insert(c, &m))) {
		emu_mrmap_put(h);
		return rc;
	}
	mr->nmaps++;
	c->dev->nmrmaps++;
	return 0;
}

int emu_mr_map_dm(struct emu_mr *mr, uint8_t *base)
{
	struct emu_mrmap m = { .mr = mr, .addr = mr->addr, .len = mr->length, .base = base,
			       .writable = emu_mr_writes(mr) };
	int rc = emu_mrmap_insert(mr->ctx, &m);

	if (rc)
		return rc;
	mr->nmaps++;
	mr->ctx->dev->nmrmaps++;
	return 0;
}

void emu_mr_unmap(struct emu_mr *mr)
{
	struct emu_ctx *c = mr->ctx;
	uint32_t i, j = 0;

	if (!mr->nmaps)
		return;
	for (i = 0; i < c->nmaps; i++) {
		if (c->maps[i].mr == mr) {
			struct emu_mrmap_hold *h = c->maps[i].hold;

			/* none: device memory, the DM's own; frames still
			 * pointing into it keep it mapped until they are freed
			 * (nothing new reaches it: the MR's epoch moved) */
			if (h) {
				if (__atomic_load_n(&h->refs, __ATOMIC_ACQUIRE) > 1)
					c->dev->cnt.zc_unmap_deferred++;
				emu_mrmap_put(h);
			}
			c->dev->nmrmaps--;
			continue;
		}
		c->maps[j++] = c->maps[i];
	}
	c->nmaps = j;
	mr->nmaps = 0;
	if (!j) {
		free(c->maps);
		c->maps = NULL;
		c->capmaps = 0;
	}
}

int emu_mr_unmap_handle(struct emu_ctx *c, uint32_t handle)
{
	struct emu_mr *mr = emu_ctx_get(c, handle, EMU_OBJ_MR);

	if (!mr)
		return -EINVAL;
	emu_mr_unmap(mr);
	return 0;
}
