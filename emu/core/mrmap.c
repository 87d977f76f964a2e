/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions. A piece of an MR that the client has in a
 * MAP_SHARED mapping of a tmpfs or hugetlbfs file is mapped into the daemon
 * too, from the descriptor the shim sends (UROCE_OP_MAP_MR), so placement
 * and gathering are a memcpy instead of system calls: shared memory the
 * application made itself, whose sharing is what it asked for.
 * Nothing the client sends is believed: the file, the offset and the
 * access mode are checked against the client's own mapping at that
 * address, asked through the maps descriptor bound at HELLO to the
 * address space that said HELLO (never by pid: after an exec the answer
 * would be another program's), before anything is mapped; every refusal
 * is the same -EACCES and leaves the MR on the route it has.
 *
 * The daemon never brings a page of such a file into being: every byte it
 * writes must be charged to the client (docs/security.md, "Whose memory").
 * The shim populates the range at registration (the pinning does), and
 * each of our mappings is registered with a userfaultfd in "missing" mode
 * with UFFD_FEATURE_SIGBUS: a page the client punched out later, or a
 * file it shrank, is a SIGBUS in our copy instead of a page allocated on
 * our account. That SIGBUS is caught per thread and the access takes the
 * pinned route (the page the registration pinned, as an HCA would keep
 * using it), or fails as an unreachable address does. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
 * default), which its rings need too: at most EMU_MRMAP_PER_MR pieces per
 * MR, and a bound per device; past either the MR keeps its route. */
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

/* Are all pages of [p, p + n) in our page tables? One guarded load per
 * page: a page our mapping lacks (beyond what registration populated, or
 * punched out since) is a SIGBUS, not a fault served on our account. */
static bool emu_mrmap_present(const uint8_t *p, size_t n)
{
	const uintptr_t pg = 4096;
	sigjmp_buf env;

	if (!n)
		return true;
	if (sigsetjmp(env, 0))
		return false;
	emu_bus_env = &env;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (uintptr_t a = (uintptr_t)p & ~(pg - 1); a < (uintptr_t)p + n; a += pg)
		(void)*(const volatile uint8_t *)(a < (uintptr_t)p ? (uintptr_t)p : a);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	emu_bus_env = NULL;
	return true;
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

/* The piece of mr that holds all of [addr, addr + len) (writable if write),
 * or NULL. By registration: two MRs of one address may be different pages
 * (a registration, an munmap and mmap, another registration). */
static const struct emu_mrmap *emu_mrmap_piece(const struct emu_mr *mr, uint64_t addr,
					       uint64_t len, bool write)
{
	for (uint32_t i = 0; i < mr->nmaps; i++) {
		const struct emu_mrmap *m = &mr->maps[i];

		if (addr - m->addr <= m->len && len <= m->len - (addr - m->addr) &&
		    (!write || m->writable))
			return m;
	}
	return NULL;
}

uint8_t *emu_mrmap_at(const struct emu_mr *mr, uint64_t addr, uint64_t len, bool write)
{
	const struct emu_mrmap *m = emu_mrmap_piece(mr, addr, len, write);

	return m ? m->base + (addr - m->addr) : NULL;
}

const uint8_t *emu_mrmap_find_held(const struct emu_mr *mr, uint64_t addr, uint64_t len,
				   struct emu_mrmap_hold **h)
{
	const struct emu_mrmap *m = emu_mrmap_piece(mr, addr, len, false);

	if (!m || !m->hold)
		return NULL;
	const uint8_t *p = m->base + (addr - m->addr);
	/* a frame is read where no guard is (a port, the receiver's
	 * linearisation): only pages we can read without a fault; the others
	 * are copied, through the registration's own route */
	if (!emu_mrmap_present(p, (size_t)len))
		return NULL;
	*h = m->hold;
	return p;
}

int emu_mrmap_persist(const struct emu_mr *mr, uint64_t addr, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	for (uint32_t i = 0; i < mr->nmaps && len; i++) {
		const struct emu_mrmap *m = &mr->maps[i];
		uint64_t lo = addr > m->addr ? addr : m->addr;
		uint64_t hi = addr + len < m->addr + m->len ? addr + len : m->addr + m->len;

		if (lo >= hi || !m->hold)
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

/* Every check on what the client sent: 0, or -EACCES whatever failed.
 * One answer for every refusal: what the client's address space holds is
 * its own business, and a context whose process executed another program
 * must not learn that program's layout from our errors (docs/security.md). */
static int emu_mrmap_check(struct emu_ctx *c, const struct emu_mr *mr, uint64_t addr,
			   uint64_t len, uint64_t off, int fd, bool wr, uint64_t *align)
{
	struct uroce_vma v;
	struct stat st;
	int fl;

	if (!len || addr < mr->addr || addr - mr->addr > mr->length ||
	    len > mr->length - (addr - mr->addr) || off + len < off)
		return -EACCES;
	if (fd < 0 || fstat(fd, &st) || emu_mrmap_file_ok(fd, &st, align))
		return -EACCES;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY ||
	    (wr && (fl & O_ACCMODE) != O_RDWR))
		return -EACCES;
	if ((uint64_t)st.st_size < off + len || emu_vma_get(c, addr, &v))
		return -EACCES;
	/* one shared mapping of this very file over the whole piece, at
	 * this offset */
	if (v.perms[3] != 's' || v.maj != major(st.st_dev) || v.min != minor(st.st_dev) ||
	    v.ino != (uint64_t)st.st_ino)
		return -EACCES;
	if (len > v.end - addr || v.off + (addr - v.start) != off)
		return -EACCES;
	return 0;
}

static int emu_mrmap_insert(struct emu_mr *mr, const struct emu_mrmap *m)
{
	if (mr->ctx->dev->nmrmaps >= EMU_MRMAP_PER_DEV || mr->nmaps >= EMU_MRMAP_PER_MR)
		return -ENOMEM;
	if (!mr->maps && !(mr->maps = calloc(EMU_MRMAP_PER_MR, sizeof(*mr->maps))))
		return -ENOMEM;
	mr->maps[mr->nmaps++] = *m;
	mr->ctx->nmaps++;
	mr->ctx->dev->nmrmaps++;
	return 0;
}

/* ---------------- no page comes into being on our account ---------------- */

/* One userfaultfd for the daemon's own mappings of client files, in
 * "missing" and "minor" modes with UFFD_FEATURE_SIGBUS: nobody reads it.
 * Once a mapping's page tables are filled at registration, every later
 * fault there raises SIGBUS (caught in emu_mrmap_copy) instead of being
 * served: a missing page (a hole the client punched, a file it shrank)
 * would be allocated on our account, and a minor one (the page the file
 * holds now after a punch and a refill) is not the page the registration
 * pinned. The access then takes the registration's own route. User-mode
 * faults only, so an unprivileged daemon may have one
 * (vm.unprivileged_userfaultfd=0): our copies are user-mode code, and
 * kernel-mode faults on such a range fail rather than wait. -1: none, and
 * no file is mapped. */
static int emu_uffd = -2;
static pthread_once_t emu_uffd_once = PTHREAD_ONCE_INIT;

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static void emu_uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MISSING_SHMEM |
					      UFFD_FEATURE_MISSING_HUGETLBFS |
					      UFFD_FEATURE_MINOR_SHMEM |
					      UFFD_FEATURE_MINOR_HUGETLBFS };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		EMU_LOG(NOTICE, "no userfaultfd (%s): shared-memory registrations are not "
			"mapped, their payload moves through their pinned pages\n", strerror(errno));
	emu_uffd = fd;
}

static int emu_uffd_guard(void *p, size_t len, bool minor)
{
	struct uffdio_register r = { .range = { (uintptr_t)p, len },
				     .mode = UFFDIO_REGISTER_MODE_MISSING |
					     (minor ? UFFDIO_REGISTER_MODE_MINOR : 0) };

	pthread_once(&emu_uffd_once, emu_uffd_open);
	return emu_uffd >= 0 && !ioctl(emu_uffd, UFFDIO_REGISTER, &r) ? 0 : -EOPNOTSUPP;
}

/* Page tables now, as a NIC translates an MR when it is registered, for
 * the pages the file holds (mincore), with the "missing" guard already
 * on: a page the client punches out meanwhile is a failed populate, not
 * a page allocated on our account. Then the "minor" guard too (it would
 * have refused the populate itself). Bounded, so a huge registration
 * does not hold up the engine's other QPs; past the bound, accesses take
 * the registration's own route. */
#define EMU_MRMAP_POPULATE_MAX (256ull << 20)

static void emu_mrmap_populate(uint8_t *p, size_t len, bool wr, uint64_t align)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n;
	unsigned char *vec;

	if (align != pg)
		return; /* hugetlbfs: one fault per huge page anyway */
	n = (len > EMU_MRMAP_POPULATE_MAX ? EMU_MRMAP_POPULATE_MAX : len) / pg;
	if (!n || !(vec = malloc(n)))
		return;
	if (!mincore(p, n * pg, vec)) {
		for (size_t i = 0, j; i < n; i = j + 1) {
			for (j = i; j < n && (vec[j] & 1); j++)
				;
			if (j > i)
				(void)madvise(p + i * pg, (j - i) * pg,
					      wr ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
		}
	}
	free(vec);
}

int emu_mr_map(struct emu_ctx *c, const struct uroce_map_mr_req *q, int fd)
{
	struct emu_mr *mr = emu_ctx_get(c, q->handle, EMU_OBJ_MR);
	uint64_t align = 0;

	/* an ODP MR follows the process's mapping: a copy of today's pages
	 * would miss a later munmap + mmap (odp.c) */
	if (!mr || (mr->access & IBV_ACCESS_ON_DEMAND) || mr->dm)
		return -EACCES;
	bool wr = emu_mr_writes(mr);
	if (emu_mrmap_check(c, mr, q->addr, q->length, q->file_off, fd, wr, &align))
		return -EACCES;
	uint64_t moff = q->file_off & ~(align - 1), delta = q->file_off - moff;
	if (delta + q->length < delta || delta + q->length > SIZE_MAX - align)
		return -EACCES;
	size_t mlen = (size_t)((delta + q->length + align - 1) & ~(align - 1));
	struct emu_mrmap_hold *h = malloc(sizeof(*h));
	if (!h)
		return -EACCES;
	void *p = mmap(NULL, mlen, PROT_READ | (wr ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)moff);
	if (p == MAP_FAILED) {
		free(h);
		return -EACCES;
	}
	*h = (struct emu_mrmap_hold){ .refs = 1, .map = p, .maplen = mlen };
	if (emu_uffd_guard(p, mlen, false)) {
		emu_mrmap_put(h);
		return -EACCES;
	}
	emu_mrmap_populate(p, mlen, wr, align);
	if (emu_uffd_guard(p, mlen, true)) {
		emu_mrmap_put(h);
		return -EACCES;
	}
	pthread_once(&emu_bus_once, emu_bus_install);
	struct emu_mrmap m = { .addr = q->addr, .len = q->length, .base = (uint8_t *)p + delta,
			       .hold = h, .writable = wr };
	if (emu_mrmap_insert(mr, &m)) {
		emu_mrmap_put(h);
		return -EACCES; /* the bounds on our mappings: the same answer */
	}
	return 0;
}

int emu_mr_map_dm(struct emu_mr *mr, uint8_t *base)
{
	struct emu_mrmap m = { .addr = mr->addr, .len = mr->length, .base = base,
			       .writable = emu_mr_writes(mr) };

	return emu_mrmap_insert(mr, &m);
}

void emu_mr_unmap(struct emu_mr *mr)
{
	struct emu_ctx *c = mr->ctx;

	for (uint32_t i = 0; i < mr->nmaps; i++) {
		struct emu_mrmap_hold *h = mr->maps[i].hold;

		/* none: device memory, the DM's own; frames still pointing
		 * into it keep it mapped until they are freed (nothing new
		 * reaches it: the MR's epoch moved) */
		if (h) {
			if (__atomic_load_n(&h->refs, __ATOMIC_ACQUIRE) > 1)
				c->dev->cnt.zc_unmap_deferred++;
			emu_mrmap_put(h);
		}
		c->nmaps--;
		c->dev->nmrmaps--;
	}
	mr->nmaps = 0;
	free(mr->maps);
	mr->maps = NULL;
}
