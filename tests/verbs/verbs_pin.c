/* SPDX-License-Identifier: MIT */
/* Registered memory with the semantics of pinned pages (issue 19,
 * docs/verbs.md "Registered memory"). After ibv_reg_mr the device reaches
 * the pages that backed the range at registration; whatever the
 * application, its allocator or a raw system call then does to its
 * mappings, its own view behaves as Linux defines private memory, nothing
 * of it is changed by the device or by deregistration, and the device
 * never reaches a new mapping at the same address.
 *
 * Every byte is checked; data and sizes are seeded (VT_SEED) and printed.
 * Each case is a program of its own (the allocator cases run under
 * LD_PRELOAD of the allocator named by VT_ALLOC, re-executing themselves:
 * the runner's daemon keeps the C library's). */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "vt.h"
#include "vt_stats.h"

#define PG 4096u
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)

/* ---------------- helpers ---------------- */

/* One operation from t's QP a into [raddr, +len) of rkey, local bytes at
 * t.buf + loff; its status. Atomics: add is the operand. */
static enum ibv_wc_status op(struct vt *t, enum ibv_wr_opcode o, size_t loff, uint32_t len,
			     uint64_t raddr, uint32_t rkey, uint32_t add)
{
	struct ibv_wc wc;

	REQUIRE(!vt_post_send(t->qa, t->mr, o, loff, len, IBV_SEND_SIGNALED, add, raddr, rkey, 9));
	vt_poll_n(t->scq, 1, &wc);
	return wc.status;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 131 + (i >> 12));
}

static bool all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v) {
			fprintf(stderr, "byte %zu of %p: %#x, want %#x\n", i, (const void *)p, p[i], v);
			return false;
		}
	return true;
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + nb && y < x + na;
}

/* The bytes the device reaches through mr at [addr, +len), READ into
 * t.buf + loff */
static void device_view(struct vt *t, struct ibv_mr *mr, uint64_t addr, uint32_t len,
			size_t loff)
{
	REQUIRE(op(t, IBV_WR_RDMA_READ, loff, len, addr, mr->rkey, 0) == IBV_WC_SUCCESS);
}

static uint64_t pin_counts(void)
{
	struct uroce_port_stats p;

	REQUIRE(vt_port_stats(&p) == 0);
	return p.mr_pinned;
}

/* ---------------- allocators: free before deregistration ---------------- */

/* Another thread allocating, filling, checking and freeing all along:
 * nothing the device or the library does may touch its memory. */
struct churn {
	volatile bool stop;
	unsigned rounds;
	uint32_t seed;
};

static void *churn_run(void *arg)
{
	struct churn *c = arg;
	uint32_t s = c->seed;

	while (!c->stop) {
		s = s * 1103515245u + 12345u;
		size_t n = (size_t)((s >> 8) % (512u << 10)) + 1;
		uint8_t *p = malloc(n);
		REQUIRE(p);
		memset(p, (int)(s >> 24), n);
		sched_yield();
		REQUIRE(all(p, n, (uint8_t)(s >> 24)));
		free(p);
		c->rounds++;
	}
	return NULL;
}

/* The scenario and its variants, for one size: the old buffer's
 * registration outlives it (freed, its address reused by the next
 * allocation), the device still reaches what it registered (a READ
 * through it completes), the deregistration changes nothing of the new
 * buffer, and calloc still hands out zeroes. (No WRITE after the free:
 * an allocator that keeps the pages hands them out again, and a device
 * writing there corrupts the heap on any HCA.) order: 0 free, malloc,
 * dereg; 1 free, dereg, malloc; 2 malloc, free, dereg; 3 free, malloc +
 * its own registration, dereg. */
static unsigned reuse_one(struct vt *t, size_t n, size_t m, int order)
{
	uint8_t *p = malloc(n), *q = NULL;
	unsigned reused = 0;

	REQUIRE(p);
	memset(p, 'A', n);
	struct ibv_mr *old = ibv_reg_mr(t->pd, p, n, ACC), *nmr = NULL;
	REQUIRE(old);
	uint64_t oaddr = (uintptr_t)p;
	if (order == 2) {
		q = malloc(m);
		REQUIRE(q);
		memset(q, 'Q', m);
	}
	free(p);
	if (order == 1)
		REQUIRE(!ibv_dereg_mr(old));
	if (order != 2) {
		q = malloc(m);
		REQUIRE(q);
		memset(q, 'Q', m);
	}
	reused = overlaps((void *)(uintptr_t)oaddr, n, q, m);
	if (order == 3) {
		nmr = ibv_reg_mr(t->pd, q, m, ACC);
		REQUIRE(nmr);
	}
	if (order != 1) {
		uint32_t l = n < VT_BUF / 2 ? (uint32_t)n : VT_BUF / 2;
		device_view(t, old, oaddr, l, VT_BUF / 2);
		REQUIRE(all(q, m, 'Q'));
		REQUIRE(!ibv_dereg_mr(old));
	}
	REQUIRE(all(q, m, 'Q'));
	if (nmr) {
		/* and q's own registration reaches q */
		uint32_t l = m < 256 ? (uint32_t)m : 256;
		memset(t->buf, 'N', l);
		REQUIRE(op(t, IBV_WR_RDMA_WRITE, 0, l, (uintptr_t)q, nmr->rkey, 0) == IBV_WC_SUCCESS);
		REQUIRE(all(q, l, 'N') && all(q + l, m - l, 'Q'));
		REQUIRE(!ibv_dereg_mr(nmr));
	}
	free(q);
	/* an allocator that purged freed pages trusts them to read zero */
	uint8_t *z = calloc(1, n);
	REQUIRE(z && all(z, n, 0));
	free(z);
	return reused;
}

static void reexec_with_allocator(char **argv)
{
	const char *a = getenv("VT_ALLOC"), *pre = getenv("LD_PRELOAD");

	if (!a || !*a || (pre && strstr(pre, a)))
		return;
	if (access(a, R_OK)) {
		fprintf(stderr, "allocator %s not installed: skipped\n", a);
		exit(VT_SKIP);
	}
	REQUIRE(!setenv("LD_PRELOAD", a, 1));
	execv("/proc/self/exe", argv);
	REQUIRE(0);
}

static void case_alloc(void)
{
	static const size_t sizes[][2] = {
		{ 1000, 3000 },              /* the heap */
		{ 256u << 10, 1u << 20 },    /* the issue's: mmap'd by glibc's default */
		{ 1u << 20, 256u << 10 },
		{ 8u << 20, 8u << 20 },
	};
	struct churn ch = { .seed = vt_seed() };
	pthread_t th;
	struct vt t;
	unsigned reused = 0, runs = 0;

	fprintf(stderr, "allocator: %s\n", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "glibc");
	vt_init(&t, NULL);
	REQUIRE(!pthread_create(&th, NULL, churn_run, &ch));
	for (int rep = 0; rep < 3; rep++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			for (int order = 0; order < 4; order++, runs++)
				reused += reuse_one(&t, sizes[i][0], sizes[i][1], order);
	ch.stop = true;
	REQUIRE(!pthread_join(th, NULL));
	fprintf(stderr, "%u of %u runs reused the freed address; the other thread made %u "
		"allocations\n", reused, runs, ch.rounds);
	vt_fini(&t);
}

/* ---------------- raw system calls over registered ranges ---------------- */

static uint8_t *anon(size_t n)
{
	uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED);
	return p;
}

/* What replaces the unmapped range: a new anonymous mapping, a read-only
 * mapping of a file, a read-only executable one. */
enum repl { R_ANON, R_FILE_RO, R_EXEC };

static uint8_t *replace(uint8_t *at, size_t n, enum repl how, int *fd)
{
	void *p;

	*fd = -1;
	if (how == R_ANON) {
		p = mmap(at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p != MAP_FAILED)
			memset(p, 'N', n);
	} else {
		char path[] = "/tmp/vt-pin-XXXXXX";
		*fd = mkstemp(path);
		REQUIRE(*fd >= 0);
		unlink(path);
		uint8_t *b = malloc(n);
		REQUIRE(b);
		memset(b, 'N', n);
		REQUIRE(write(*fd, b, n) == (ssize_t)n);
		free(b);
		p = mmap(at, n, PROT_READ | (how == R_EXEC ? PROT_EXEC : 0),
			 MAP_PRIVATE | MAP_FIXED_NOREPLACE, *fd, 0);
	}
	REQUIRE(p == at); /* the address the registration covered */
	return p;
}

/* A registration over 16 pages; 4 of them unmapped with a raw munmap and
 * replaced: WRITE, READ and both atomics through the registration reach
 * the pages it pinned, never the new mapping. */
static void unmapped(enum repl how)
{
	struct vt t;
	uint8_t *p = anon(16 * PG);
	int fd;

	vt_init(&t, NULL);
	fill(p, 16 * PG, 3);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 16 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(!syscall(SYS_munmap, p + 4 * PG, 4 * PG));
	uint8_t *n = replace(p + 4 * PG, 4 * PG, how, &fd);
	uint64_t a = (uintptr_t)p + 5 * PG + 8;
	size_t o = 5 * PG + 8 + 1000; /* 8-aligned, right after the WRITE */
	uint8_t reg[16];
	for (size_t i = 0; i < sizeof(reg); i++) /* what the pages held at registration */
		reg[i] = (uint8_t)(3 + (o + i) * 131 + ((o + i) >> 12));
	memset(t.buf, 'W', 1000);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 1000, a, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(op(&t, IBV_WR_ATOMIC_FETCH_AND_ADD, 4096, 8, (uintptr_t)p + o, mr->rkey, 5) ==
	      IBV_WC_SUCCESS);
	REQUIRE(op(&t, IBV_WR_ATOMIC_CMP_AND_SWP, 4104, 8, (uintptr_t)p + o + 8, mr->rkey, 0) ==
	      IBV_WC_SUCCESS);
	REQUIRE(all(n, 4 * PG, 'N'));
	/* the atomics read the registered pages, not the new mapping */
	REQUIRE(!memcmp(t.buf + 4096, reg, 8) && !memcmp(t.buf + 4104, reg + 8, 8));
	device_view(&t, mr, a, 1016, 8192);
	REQUIRE(all(t.buf + 8192, 1000, 'W'));
	uint64_t v, r0;
	memcpy(&v, t.buf + 8192 + 1000, 8);
	memcpy(&r0, reg, 8);
	REQUIRE(v == r0 + 5); /* the add landed in the pinned page */
	/* the rest of the registration is still the application's memory */
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 100, (uintptr_t)p + 10 * PG, mr->rkey, 0) ==
	      IBV_WC_SUCCESS);
	REQUIRE(all(p + 10 * PG, 100, 'W'));
	REQUIRE(!ibv_dereg_mr(mr));
	REQUIRE(all(n, 4 * PG, 'N'));
	munmap(p, 16 * PG);
	if (fd >= 0)
		close(fd);
	vt_fini(&t);
}

static void case_munmap_anon(void) { unmapped(R_ANON); }
static void case_munmap_file_ro(void) { unmapped(R_FILE_RO); }
static void case_munmap_exec(void) { unmapped(R_EXEC); }

/* madvise by raw system call: DONTNEED gives the application fresh zero
 * pages; the device keeps the pages it pinned. FREE leaves the same pages
 * mapped (the application and the device agree on them until they are
 * written). REMOVE on private memory is refused, on a shared file it
 * punches the file: the application reads zero, the device its page. */
static void case_madvise(void)
{
	struct vt t;
	uint8_t *p = anon(8 * PG);

	vt_init(&t, NULL);
	memset(p, 'A', 8 * PG);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 8 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(!syscall(SYS_madvise, p, 2 * PG, MADV_DONTNEED));
	REQUIRE(all(p, 2 * PG, 0));
	memset(t.buf, 'W', 64);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p + 100, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(p, 2 * PG, 0));
	device_view(&t, mr, (uintptr_t)p + 96, 72, 4096);
	REQUIRE(all(t.buf + 4096, 4, 'A') && all(t.buf + 4100, 64, 'W') && all(t.buf + 4164, 4, 'A'));
	/* the application writes its fresh page; the device does not see it */
	memset(p, 'B', PG);
	device_view(&t, mr, (uintptr_t)p, 16, 4096);
	REQUIRE(all(t.buf + 4096, 16, 'A'));
	/* FREE */
	REQUIRE(!syscall(SYS_madvise, p + 4 * PG, 2 * PG, MADV_FREE));
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p + 4 * PG, mr->rkey, 0) ==
	      IBV_WC_SUCCESS);
	REQUIRE(all(p + 4 * PG, 64, 'W') || all(p + 4 * PG, 64, 0));
	/* REMOVE: private memory cannot be removed */
	REQUIRE(syscall(SYS_madvise, p + 6 * PG, PG, MADV_REMOVE) == -1);
	REQUIRE(all(p + 6 * PG, PG, 'A'));
	REQUIRE(!ibv_dereg_mr(mr));
	REQUIRE(all(p, PG, 'B') && all(p + PG, PG, 0));
	munmap(p, 8 * PG);
	/* REMOVE on a shared file */
	int fd = memfd_create("vt-pin", MFD_CLOEXEC);
	REQUIRE(fd >= 0 && !ftruncate(fd, 4 * PG));
	uint8_t *s = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(s != MAP_FAILED);
	memset(s, 'S', 4 * PG);
	mr = ibv_reg_mr(t.pd, s, 4 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(!syscall(SYS_madvise, s + PG, PG, MADV_REMOVE));
	REQUIRE(all(s + PG, PG, 0));
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)s + PG + 8, mr->rkey, 0) ==
	      IBV_WC_SUCCESS);
	REQUIRE(all(s + PG, PG, 0));
	device_view(&t, mr, (uintptr_t)s + PG, 80, 4096);
	REQUIRE(all(t.buf + 4096, 8, 'S') && all(t.buf + 4104, 64, 'W') && all(t.buf + 4168, 8, 'S'));
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(s, 4 * PG);
	close(fd);
	vt_fini(&t);
}

/* mremap by raw system call: the pages move, and with them what the
 * device reaches (the same pages, as an HCA's translation); a new mapping
 * at the old address is not reached. */
static void case_mremap(void)
{
	struct vt t;
	uint8_t *p = anon(4 * PG);
	uint8_t *dst = anon(4 * PG);
	int fd;

	vt_init(&t, NULL);
	memset(p, 'A', 4 * PG);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 4 * PG, ACC);
	REQUIRE(mr);
	uint8_t *np = (uint8_t *)syscall(SYS_mremap, p, 4 * PG, 4 * PG,
					 MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	REQUIRE(np == dst);
	uint8_t *n = replace(p, 4 * PG, R_ANON, &fd);
	memset(t.buf, 'W', 128);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 128, (uintptr_t)p + PG, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(n, 4 * PG, 'N'));
	REQUIRE(all(np + PG, 128, 'W') && all(np, PG, 'A'));
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(n, 4 * PG);
	munmap(np, 4 * PG);
	vt_fini(&t);
}

/* mprotect by raw system call: the protection is the application's view;
 * the device keeps the pages it pinned (as an HCA: pinning checked the
 * access once, at registration). */
static void case_mprotect(void)
{
	struct vt t;
	uint8_t *p = anon(4 * PG);

	vt_init(&t, NULL);
	memset(p, 'A', 4 * PG);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 4 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(!syscall(SYS_mprotect, p, 4 * PG, PROT_READ));
	memset(t.buf, 'W', 64);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p + 8, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(p + 8, 64, 'W') && all(p, 8, 'A'));
	REQUIRE(!syscall(SYS_mprotect, p, 4 * PG, PROT_NONE));
	device_view(&t, mr, (uintptr_t)p, 80, 4096);
	REQUIRE(all(t.buf + 4096, 8, 'A') && all(t.buf + 4104, 64, 'W'));
	REQUIRE(!syscall(SYS_mprotect, p, 4 * PG, PROT_READ | PROT_WRITE));
	REQUIRE(!ibv_dereg_mr(mr));
	REQUIRE(all(p + 8, 64, 'W'));
	munmap(p, 4 * PG);
	vt_fini(&t);
}

/* ---------------- fork, _Fork, vfork, clone ---------------- */

enum fk { F_FORK, F__FORK, F_VFORK, F_CLONE };

static pid_t do_fork(enum fk how)
{
	switch (how) {
	case F_FORK:
		return fork();
	case F__FORK:
		return _Fork();
	case F_CLONE:
		/* no C library, no atfork handlers */
		return (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	default:
		return -1;
	}
}

/* Without RDMAV_FORK_SAFE the child gets a copy of the registered pages
 * (the kernel copies pinned anonymous pages at fork, the parent keeps the
 * pinned ones): writes on either side stay on that side, and the device
 * keeps reaching the parent's. With it, rdma-core's rule: the range is
 * not inherited at all (MADV_DONTFORK), unless the kernel says copies
 * make that unneeded (IBV_FORK_UNNEEDED), which is the first case. vfork:
 * the child shares everything until it executes a program. */
static void forked(enum fk how, bool safe)
{
	struct vt t;
	uint8_t *p = anon(4 * PG);
	int sync[2];

	if (safe)
		REQUIRE(!setenv("RDMAV_FORK_SAFE", "1", 1));
	vt_init(&t, NULL);
	bool dontfork = safe && ibv_is_fork_initialized() == IBV_FORK_ENABLED;
	fprintf(stderr, "fork status %d: the child %s the registered range\n",
		ibv_is_fork_initialized(), dontfork ? "does not inherit" : "copies");
	memset(p, 'A', 4 * PG);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 4 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(!pipe(sync));
	if (how == F_VFORK) {
		pid_t pid = vfork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st;
		REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	} else {
		pid_t pid = do_fork(how);
		REQUIRE(pid >= 0);
		if (pid == 0) {
			char c;
			unsigned char v;
			if (read(sync[0], &c, 1) != 1)
				_exit(2);
			if (dontfork)
				_exit(mincore(p, PG, &v) == 0 ? 3 : 0);
			for (size_t i = 0; i < 4 * PG; i++)
				if (p[i] != 'A')
					_exit(4); /* the parent's, or the device's, write showed */
			memset(p, 'C', 4 * PG);
			_exit(0);
		}
		/* the parent and the device write after the fork */
		memset(p, 'B', 2 * PG);
		memset(t.buf, 'W', 256);
		REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 256, (uintptr_t)p + 3 * PG, mr->rkey, 0) ==
		      IBV_WC_SUCCESS);
		REQUIRE(write(sync[1], "x", 1) == 1);
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fprintf(stderr, "child status %#x\n", st);
		REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		REQUIRE(all(p, 2 * PG, 'B') && all(p + 2 * PG, PG, 'A') && all(p + 3 * PG, 256, 'W'));
	}
	/* the registration still reaches the parent's pages */
	memset(t.buf, 'D', 64);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p + PG, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(p + PG, 64, 'D'));
	REQUIRE(!ibv_dereg_mr(mr));
	close(sync[0]);
	close(sync[1]);
	munmap(p, 4 * PG);
	vt_fini(&t);
}

static void case_fork(void) { forked(F_FORK, false); }
static void case_fork_safe(void) { forked(F_FORK, true); }
static void case__Fork(void) { forked(F__FORK, false); }
static void case__Fork_safe(void) { forked(F__FORK, true); }
static void case_vfork(void) { forked(F_VFORK, false); }
static void case_vfork_safe(void) { forked(F_VFORK, true); }
static void case_clone(void) { forked(F_CLONE, false); }
static void case_clone_safe(void) { forked(F_CLONE, true); }

/* ---------------- where the kernel will not pin ---------------- */

/* io_uring refused as container runtimes do: podman's default seccomp
 * profile (containers-common) answers every system call it does not list,
 * io_uring_setup among them, with ENOSYS; the kernel.io_uring_disabled
 * sysctl makes io_uring_setup fail with EPERM (a machine-wide switch no
 * test may flip on a shared machine: the same errno from a filter takes
 * the same path in the shim). Registrations follow the address (said on
 * stderr, counted), traffic works, and a WRITE through a registration
 * whose memory was replaced by a read-only mapping fails
 * (process_vm_writev honours protections): the mapping is untouched.
 * With UROCE_MR_PIN=require the registration fails with that errno. */
static void no_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct uroce_port_stats s0, s1;
	struct vt t;
	int fd;

	REQUIRE(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	REQUIRE(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
	vt_init(&t, NULL);
	uint8_t *p = anon(4 * PG);
	memset(p, 'A', 4 * PG);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 4 * PG, ACC);
	REQUIRE(mr);
	REQUIRE(vt_port_stats(&s0) == 0);
	memset(t.buf, 'W', 256);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 256, (uintptr_t)p + 8, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(p + 8, 256, 'W'));
	REQUIRE(vt_port_stats(&s1) == 0);
	REQUIRE(s1.mr_unpinned > s0.mr_unpinned && s1.mr_pinned == s0.mr_pinned);
	REQUIRE(!syscall(SYS_munmap, p, 4 * PG));
	uint8_t *n = replace(p, 4 * PG, R_FILE_RO, &fd);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 256, (uintptr_t)p + 8, mr->rkey, 0) ==
	      IBV_WC_REM_ACCESS_ERR);
	REQUIRE(all(n, 4 * PG, 'N'));
	REQUIRE(!ibv_dereg_mr(mr));
	vt_fini(&t);
	munmap(n, 4 * PG);
	close(fd);
	/* a new connection asks for its own channel: refused the same way */
	vt_init(&t, NULL);
	setenv("UROCE_MR_PIN", "require", 1);
	p = anon(4 * PG);
	errno = 0;
	REQUIRE(!ibv_reg_mr(t.pd, p, 4 * PG, ACC) && errno == err, "require: errno %d", errno);
	unsetenv("UROCE_MR_PIN");
	vt_fini(&t);
	munmap(p, 4 * PG);
}

static void case_no_uring(void) { no_uring(ENOSYS); }
static void case_no_uring_eperm(void) { no_uring(EPERM); }

/* RLIMIT_MEMLOCK, for a process without CAP_IPC_LOCK: pinning past it
 * fails ibv_reg_mr with ENOMEM, as ib_umem_get does; below it, fine. */
static void case_memlock(void)
{
	struct vt t;
	struct rlimit rl = { 2u << 20, 2u << 20 };

	if (geteuid() == 0) {
		/* root keeps its uid but loses the capability that lifts the
		 * limit (io_uring accounts to the user when the ring's maker
		 * lacks it, as ib_umem_get checks the caller) */
		struct { uint32_t version; int pid; } h = { 0x20080522, 0 };
		struct { uint32_t eff, perm, inh; } d[2];
		REQUIRE(!syscall(SYS_capget, &h, d));
		d[0].eff &= ~(1u << 14);
		d[0].perm &= ~(1u << 14);
		d[0].inh &= ~(1u << 14);
		REQUIRE(!syscall(SYS_capset, &h, d));
	}
	REQUIRE(!setrlimit(RLIMIT_MEMLOCK, &rl));
	vt_init(&t, NULL);
	uint8_t *big = anon(8u << 20), *small = anon(256u << 10);
	errno = 0;
	REQUIRE(!ibv_reg_mr(t.pd, big, 8u << 20, ACC) && errno == ENOMEM);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, small, 256u << 10, ACC);
	REQUIRE(mr);
	memset(t.buf, 'W', 64);
	REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)small, mr->rkey, 0) == IBV_WC_SUCCESS);
	REQUIRE(all(small, 64, 'W'));
	REQUIRE(!ibv_dereg_mr(mr));
	/* once released, the same amount pins again */
	mr = ibv_reg_mr(t.pd, small, 256u << 10, ACC);
	REQUIRE(mr && !ibv_dereg_mr(mr));
	munmap(big, 8u << 20);
	munmap(small, 256u << 10);
	vt_fini(&t);
}

/* The pinned route is the one traffic takes (counted), for malloc'd
 * memory of every size, SGE lists across MRs, and 1 GiB buffer
 * boundaries are not in reach here: sizes up to 4 MiB. */
static void case_counted(void)
{
	struct vt t;
	uint64_t c0, c1;

	vt_init(&t, NULL);
	uint8_t *p = malloc(4u << 20);
	REQUIRE(p);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, 4u << 20, ACC);
	REQUIRE(mr);
	c0 = pin_counts();
	for (uint32_t len = 1; len <= VT_BUF; len = len * 3 + 1) {
		uint64_t at = (uintptr_t)p + vt_rnd() % ((4u << 20) - len);
		fill(t.buf, len, (uint8_t)len);
		REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, len, at, mr->rkey, 0) == IBV_WC_SUCCESS);
		REQUIRE(!memcmp((void *)(uintptr_t)at, t.buf, len));
		memset(t.buf + VT_BUF / 2, 0, len < VT_BUF / 2 ? len : VT_BUF / 2);
		uint32_t back = len < VT_BUF / 2 ? len : VT_BUF / 2;
		device_view(&t, mr, at, back, VT_BUF / 2);
		REQUIRE(!memcmp((void *)(uintptr_t)at, t.buf + VT_BUF / 2, back));
	}
	c1 = pin_counts();
	fprintf(stderr, "pinned pieces: %llu\n", (unsigned long long)(c1 - c0));
	REQUIRE(c1 > c0);
	REQUIRE(!ibv_dereg_mr(mr));
	free(p);
	vt_fini(&t);
}

/* ---------------- memory cgroups ---------------- */

/* Bytes the device writes into a client's memory are charged to that
 * client (docs/security.md, "Whose memory"): the pinned pages are the
 * client's own, faulted in by its registration, and the daemon brings
 * no page into being (a hole punched in a shared file stays a hole).
 * The daemon is moved into a memory cgroup of its own to measure what it
 * holds; the client into one limited to 64 MiB. */
struct cg {
	bool v2;
	char base[1024];    /* where our groups go */
	char c[1100], d[1100];
	char orig_self[1024], orig_daemon[1024];
	pid_t daemon;
};

static bool cg_write(const char *dir, const char *file, const char *val)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

static uint64_t cg_usage(const struct cg *g, bool daemon)
{
	char path[1200];
	unsigned long long v = 0;
	snprintf(path, sizeof(path), "%s/%s", daemon ? g->d : g->c,
		 g->v2 ? "memory.current" : "memory.usage_in_bytes");
	FILE *f = fopen(path, "r");
	REQUIRE(f && fscanf(f, "%llu", &v) == 1);
	fclose(f);
	return v;
}

/* the cgroup directory pid is in now (the memory hierarchy's) */
static bool cg_of(const struct cg *g, pid_t pid, const char *mnt, char *out, size_t n)
{
	char path[64], line[512];
	bool ok = false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && !ok && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *q = p ? strchr(p + 1, ':') : NULL;
		if (!q)
			continue;
		line[strcspn(line, "\n")] = 0;
		bool mine = g->v2 ? !strncmp(line, "0::", 3) : !strncmp(p + 1, "memory:", 7);
		if (mine) {
			snprintf(out, n, "%s%s", mnt, q + 1);
			ok = true;
		}
	}
	if (f)
		fclose(f);
	return ok;
}

/* a cgroup2 mount whose root offers the memory controller */
static bool cg_v2_mount(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], ctl[256];
	bool ok = false;
	while (f && !ok && fgets(line, sizeof(line), f)) {
		char mnt[256], fstype[64];
		char *sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		char path[600];
		snprintf(path, sizeof(path), "%s/cgroup.controllers", mnt);
		FILE *c = fopen(path, "r");
		if (c && fgets(ctl, sizeof(ctl), c) && strstr(ctl, "memory")) {
			snprintf(out, n, "%s", mnt);
			ok = true;
		}
		if (c)
			fclose(c);
	}
	if (f)
		fclose(f);
	return ok;
}

static void cg_setup(struct cg *g, bool v2)
{
	const char *e = getenv("UROCE_TEST_DAEMON_PID");
	char mnt[256];

	memset(g, 0, sizeof(*g));
	g->v2 = v2;
	if (geteuid() != 0 || !e) {
		fprintf(stderr, "needs root and the daemon's pid: skipped\n");
		exit(VT_SKIP);
	}
	g->daemon = (pid_t)atoi(e);
	if (v2 ? !cg_v2_mount(mnt, sizeof(mnt)) : access("/sys/fs/cgroup/memory/cgroup.procs", W_OK)) {
		fprintf(stderr, "no cgroup %s memory controller here: skipped\n", v2 ? "v2" : "v1");
		exit(VT_SKIP);
	}
	if (!v2)
		snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup/memory");
	REQUIRE(cg_of(g, getpid(), mnt, g->orig_self, sizeof(g->orig_self)));
	REQUIRE(cg_of(g, g->daemon, mnt, g->orig_daemon, sizeof(g->orig_daemon)));
	/* v2: processes only in leaves, so our own group of two leaves under
	 * the hierarchy's root (exempt from that rule); v1: under ours */
	if (v2) {
		snprintf(g->base, sizeof(g->base), "%s/uroce-pin-%d", mnt, (int)getpid());
		REQUIRE(!mkdir(g->base, 0755));
		if ((!cg_write(mnt, "cgroup.subtree_control", "+memory") && errno != EBUSY) ||
		    !cg_write(g->base, "cgroup.subtree_control", "+memory")) {
			rmdir(g->base);
			fprintf(stderr, "memory controller not delegable: skipped\n");
			exit(VT_SKIP);
		}
	} else {
		snprintf(g->base, sizeof(g->base), "%s", g->orig_self);
	}
	snprintf(g->c, sizeof(g->c), "%s/uroce-pin-%d-client", g->base, (int)getpid());
	snprintf(g->d, sizeof(g->d), "%s/uroce-pin-%d-daemon", g->base, (int)getpid());
	REQUIRE(!mkdir(g->c, 0755) && !mkdir(g->d, 0755));
	REQUIRE(cg_write(g->c, v2 ? "memory.max" : "memory.limit_in_bytes", "67108864"));
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)g->daemon);
	REQUIRE(cg_write(g->d, "cgroup.procs", pid));
	REQUIRE(cg_write(g->c, "cgroup.procs", "0"));
}

static void cg_teardown(struct cg *g)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)g->daemon);
	cg_write(g->orig_daemon, "cgroup.procs", pid);
	cg_write(g->orig_self, "cgroup.procs", "0");
	/* charges left behind go to the parent; the groups must be empty */
	for (int i = 0; i < 50 && (rmdir(g->c) || rmdir(g->d)) && errno == EBUSY; i++)
		usleep(100000);
	if (g->v2)
		rmdir(g->base);
}

static void cgroup_check(bool v2)
{
	const size_t n = 32u << 20, sh = 16u << 20;
	struct cg g;
	struct vt t;

	cg_setup(&g, v2);
	vt_init(&t, NULL);
	uint64_t d0 = cg_usage(&g, true), c0 = cg_usage(&g, false);
	/* untouched memory: the registration faults it in, on the client */
	uint8_t *p = anon(n);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, n, ACC);
	REQUIRE(mr);
	uint64_t c1 = cg_usage(&g, false), d1 = cg_usage(&g, true);
	fprintf(stderr, "after registering %zu MiB: client +%lld KiB, daemon %+lld KiB\n", n >> 20,
		(long long)(c1 - c0) / 1024, (long long)(d1 - d0) / 1024);
	REQUIRE(c1 >= c0 + n - (1u << 20));
	/* a peer writes all of it */
	fill(t.buf, VT_BUF, 7);
	for (size_t off = 0; off < n; off += VT_BUF)
		REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, VT_BUF, (uintptr_t)p + off, mr->rkey, 0) ==
		      IBV_WC_SUCCESS);
	REQUIRE(!memcmp(p + n - VT_BUF, t.buf, VT_BUF));
	uint64_t d2 = cg_usage(&g, true);
	fprintf(stderr, "after %zu MiB written into it: daemon %+lld KiB\n", n >> 20,
		(long long)(d2 - d0) / 1024);
	REQUIRE(d2 < d0 + (8u << 20));
	/* a shared file: pages punched out after registration stay out */
	int fd = memfd_create("vt-pin-cg", MFD_CLOEXEC);
	REQUIRE(fd >= 0 && !ftruncate(fd, (off_t)sh));
	uint8_t *s = mmap(NULL, sh, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(s != MAP_FAILED);
	struct ibv_mr *smr = ibv_reg_mr(t.pd, s, sh, ACC);
	REQUIRE(smr);
	REQUIRE(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)(sh / 2)));
	for (size_t off = 0; off < sh / 2; off += VT_BUF)
		REQUIRE(op(&t, IBV_WR_RDMA_WRITE, 0, VT_BUF, (uintptr_t)s + off, smr->rkey, 0) ==
		      IBV_WC_SUCCESS);
	struct stat st;
	REQUIRE(!fstat(fd, &st));
	uint64_t d3 = cg_usage(&g, true);
	fprintf(stderr, "after %zu MiB written into a punched file: daemon %+lld KiB, file %lld KiB\n",
		(sh / 2) >> 20, (long long)(d3 - d0) / 1024, (long long)st.st_blocks / 2);
	REQUIRE((uint64_t)st.st_blocks * 512 <= sh / 2);
	REQUIRE(d3 < d0 + (8u << 20));
	REQUIRE(!ibv_dereg_mr(smr) && !ibv_dereg_mr(mr));
	munmap(s, sh);
	close(fd);
	munmap(p, n);
	vt_fini(&t);
	cg_teardown(&g);
}

static void case_cgroup_v1(void) { cgroup_check(false); }
static void case_cgroup_v2(void) { cgroup_check(true); }

static char **pin_argv;

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "alloc", case_alloc },
		{ "munmap_anon", case_munmap_anon },
		{ "munmap_file_ro", case_munmap_file_ro },
		{ "munmap_exec", case_munmap_exec },
		{ "madvise", case_madvise },
		{ "mremap", case_mremap },
		{ "mprotect", case_mprotect },
		{ "fork", case_fork },
		{ "fork_safe", case_fork_safe },
		{ "_Fork", case__Fork },
		{ "_Fork_safe", case__Fork_safe },
		{ "vfork", case_vfork },
		{ "vfork_safe", case_vfork_safe },
		{ "clone", case_clone },
		{ "clone_safe", case_clone_safe },
		{ "no_uring", case_no_uring },
		{ "no_uring_eperm", case_no_uring_eperm },
		{ "memlock", case_memlock },
		{ "counted", case_counted },
		{ "cgroup_v1", case_cgroup_v1 },
		{ "cgroup_v2", case_cgroup_v2 },
	};

	pin_argv = argv;
	reexec_with_allocator(pin_argv);
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
