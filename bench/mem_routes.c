/* SPDX-License-Identifier: MIT */
/* The ways a daemon can move payload into and out of another process's
 * registered memory, measured in one run, interleaved (docs/performance.md,
 * "Registered memory"). A forked child is the client: 64 MiB of private
 * memory pinned into its io_uring, and 64 MiB of a shared memfd. The parent
 * is the daemon, with the child's ring (pidfd_getfd) and its own pipes:
 *
 *   memcpy      into a mapping of the child's memfd (shared memory the
 *               application made: uroce's mapped route; before issue 19
 *               also private memory moved onto a memfd)
 *   pin         vmsplice (or write, up to 8 KiB) into a pipe + READ_FIXED
 *               into the pinned buffer; WRITE_FIXED into a pipe + readv
 *               (uroce's pinned route)
 *   pin-punt    READ_FIXED / WRITE_FIXED against a memfd staging file
 *               (no NOWAIT on tmpfs: every operation goes to an io-wq
 *               worker), memcpy to or from the staging mapping
 *   pin-ext4    the same against a staging file on a disk file system
 *               ($TMPDIR, else /var/tmp: NOWAIT works, but every write
 *               dirties page cache that writeback then sends to the disk)
 *   pvm         process_vm_writev / readv (uroce's unpinned route)
 *   procmem     pwritev / preadv on /proc/<pid>/mem (ODP registrations)
 *
 * Each case moves BURST pieces of SIZE (one burst of a 64 KB message is
 * 16 x 4 KB), both directions, ROUNDS times in turn with the others; the
 * median per burst and the resulting GB/s. No verdict: numbers.
 *   mem_routes [ROUNDS] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEN (64u << 20)
#define STG (4u << 20)
#define die(...) do { fprintf(stderr, "mem_routes: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct ring {
	int fd;
	struct io_uring_params p;
	uint8_t *sq;
	struct io_uring_sqe *sqes;
	uint32_t tail, head;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static long reg(int fd, unsigned op, const void *a, unsigned n)
{
	return syscall(__NR_io_uring_register, fd, op, a, n);
}

/* queue one fixed-buffer operation on file index f */
static void sqe(struct ring *r, uint8_t op, int f, uint64_t off, void *addr, uint32_t len,
		bool link)
{
	uint32_t i = r->tail & (r->p.sq_entries - 1);
	struct io_uring_sqe *s = &r->sqes[i];

	memset(s, 0, sizeof(*s));
	s->opcode = op;
	s->flags = IOSQE_FIXED_FILE | (link ? IOSQE_IO_LINK : 0);
	s->fd = f;
	s->off = off;
	s->addr = (uintptr_t)addr;
	s->len = len;
	((uint32_t *)(r->sq + r->p.sq_off.array))[i] = i;
	r->tail++;
}

/* submit n, wait for n, check each moved len bytes */
static void run(struct ring *r, unsigned n, uint32_t len)
{
	__atomic_store_n((uint32_t *)(r->sq + r->p.sq_off.tail), r->tail, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0) != n)
		die("enter: %s", strerror(errno));
	uint32_t *h = (uint32_t *)(r->sq + r->p.cq_off.head);
	uint32_t t = __atomic_load_n((uint32_t *)(r->sq + r->p.cq_off.tail), __ATOMIC_ACQUIRE);
	struct io_uring_cqe *c = (void *)(r->sq + r->p.cq_off.cqes);
	for (; *h != t; (*h)++)
		if (c[*h & (r->p.cq_entries - 1)].res != (int)len)
			die("res %d", c[*h & (r->p.cq_entries - 1)].res);
}

struct env {
	struct ring r;
	pid_t kid;
	uint8_t *priv;      /* the child's pinned buffer (its address) */
	uint8_t *shm;       /* our mapping of its memfd */
	uint8_t *stg;       /* our staging memfd, fixed file 2 */
	uint8_t *dstg;      /* our staging file on disk, fixed file 3 */
	int pr, pw, gr, gw; /* placement and gather pipes: fixed files 0, 1 */
	int mem;            /* /proc/<kid>/mem */
	uint8_t *src;       /* our side */
};

enum { M_MEMCPY, M_PIN, M_PUNT, M_EXT4, M_PVM, M_PROCMEM, M_N };
static const char *names[M_N] = { "memcpy", "pin", "pin-punt", "pin-ext4", "pvm", "procmem" };

/* one burst of n pieces of len each way: place (write into the child),
 * then gather (read it back) */
static void burst(struct env *e, int m, unsigned n, uint32_t len, size_t at)
{
	struct iovec l[64], rv[64];
	uint8_t *dst = e->priv + at;

	for (unsigned i = 0; i < n; i++) {
		l[i] = (struct iovec){ e->src + i * len, len };
		rv[i] = (struct iovec){ dst + i * len, len };
	}
	switch (m) {
	case M_MEMCPY:
		for (unsigned i = 0; i < n; i++)
			memcpy(e->shm + at + i * len, e->src + i * len, len);
		for (unsigned i = 0; i < n; i++)
			memcpy(e->src + i * len, e->shm + at + i * len, len);
		break;
	case M_PIN: {
		size_t tot = (size_t)n * len;
		ssize_t w = tot > 8192 ? vmsplice(e->pw, l, n, SPLICE_F_NONBLOCK)
				       : writev(e->pw, l, (int)n);
		if (w != (ssize_t)tot)
			die("fill %zd", w);
		sqe(&e->r, IORING_OP_READ_FIXED, 0, (uint64_t)-1, dst, (uint32_t)tot, false);
		run(&e->r, 1, (uint32_t)tot);
		int left = 0;
		if (tot > 8192 && (ioctl(e->pr, FIONREAD, &left) || left))
			die("left %d", left);
		sqe(&e->r, IORING_OP_WRITE_FIXED, 1, (uint64_t)-1, dst, (uint32_t)tot, false);
		run(&e->r, 1, (uint32_t)tot);
		if (readv(e->gr, l, (int)n) != (ssize_t)tot)
			die("readv");
		break;
	}
	case M_PUNT:
	case M_EXT4: {
		uint8_t *stg = m == M_PUNT ? e->stg : e->dstg;
		int f = m == M_PUNT ? 2 : 3;
		for (unsigned i = 0; i < n; i++)
			memcpy(stg + i * len, e->src + i * len, len);
		for (unsigned i = 0; i < n; i++)
			sqe(&e->r, IORING_OP_READ_FIXED, f, (uint64_t)i * len, dst + i * len, len, false);
		run(&e->r, n, len);
		for (unsigned i = 0; i < n; i++)
			sqe(&e->r, IORING_OP_WRITE_FIXED, f, (uint64_t)i * len, dst + i * len, len, false);
		run(&e->r, n, len);
		for (unsigned i = 0; i < n; i++)
			memcpy(e->src + i * len, stg + i * len, len);
		break;
	}
	case M_PVM:
		if (process_vm_writev(e->kid, l, n, rv, n, 0) != (ssize_t)n * len ||
		    process_vm_readv(e->kid, l, n, rv, n, 0) != (ssize_t)n * len)
			die("pvm: %s", strerror(errno));
		break;
	case M_PROCMEM:
		if (pwritev(e->mem, l, (int)n, (off_t)(uintptr_t)dst) != (ssize_t)n * len ||
		    preadv(e->mem, l, (int)n, (off_t)(uintptr_t)dst) != (ssize_t)n * len)
			die("procmem: %s", strerror(errno));
		break;
	}
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The client: pins its buffer into a ring, shares a memfd, waits. */
static void child(int sock)
{
	uint8_t *b = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
			  MAP_POPULATE, -1, 0);
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int r = (int)syscall(__NR_io_uring_setup, 64, &p);
	struct iovec iov = { b, LEN };
	int mfd = memfd_create("mem-routes", MFD_CLOEXEC);
	if (b == MAP_FAILED || r < 0 || reg(r, IORING_REGISTER_BUFFERS, &iov, 1) ||
	    mfd < 0 || ftruncate(mfd, LEN))
		_exit(2);
	uint8_t *s = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, mfd, 0);
	if (s == MAP_FAILED)
		_exit(2);
	int msg[3] = { r, mfd, 0 };
	uintptr_t at = (uintptr_t)b;
	if (write(sock, msg, sizeof(msg)) != sizeof(msg) ||
	    write(sock, &at, sizeof(at)) != sizeof(at) || write(sock, &p, sizeof(p)) != sizeof(p))
		_exit(2);
	char c;
	(void)!read(sock, &c, 1); /* until the parent is done */
	_exit(0);
}

static void setup(struct env *e)
{
	int sv[2], msg[3], fds[2];
	uintptr_t at;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	e->kid = fork();
	if (!e->kid)
		child(sv[1]);
	if (read(sv[0], msg, sizeof(msg)) != sizeof(msg) || read(sv[0], &at, sizeof(at)) != sizeof(at) ||
	    read(sv[0], &e->r.p, sizeof(e->r.p)) != sizeof(e->r.p))
		die("child");
	int pidfd = (int)syscall(SYS_pidfd_open, e->kid, 0);
	e->r.fd = (int)syscall(SYS_pidfd_getfd, pidfd, msg[0], 0);
	int mfd = (int)syscall(SYS_pidfd_getfd, pidfd, msg[1], 0);
	if (e->r.fd < 0 || mfd < 0)
		die("pidfd_getfd: %s", strerror(errno));
	e->priv = (uint8_t *)at;
	e->shm = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, mfd, 0);
	int sfd = memfd_create("stage", MFD_CLOEXEC);
	if (sfd < 0 || ftruncate(sfd, STG))
		die("stage");
	e->stg = mmap(NULL, STG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, sfd, 0);
	/* a staging file on disk, unlinked at once */
	const char *td = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	char dpath[512];
	snprintf(dpath, sizeof(dpath), "%s/mem_routes.XXXXXX", td);
	int dfd = mkstemp(dpath);
	if (dfd < 0 || unlink(dpath) || ftruncate(dfd, STG))
		die("disk stage in %s: %s", td, strerror(errno));
	e->dstg = mmap(NULL, STG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, dfd, 0);
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		die("pipe");
	e->pr = fds[0];
	e->pw = fds[1];
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		die("pipe");
	e->gr = fds[0];
	e->gw = fds[1];
	fcntl(e->pw, F_SETPIPE_SZ, 1 << 20);
	fcntl(e->gw, F_SETPIPE_SZ, 1 << 20);
	int files[4] = { e->pr, e->gw, sfd, dfd };
	if (reg(e->r.fd, IORING_REGISTER_FILES, files, 4))
		die("register files: %s", strerror(errno));
	size_t sq = e->r.p.sq_off.array + e->r.p.sq_entries * 4;
	size_t cq = e->r.p.cq_off.cqes + e->r.p.cq_entries * sizeof(struct io_uring_cqe);
	e->r.sq = mmap(NULL, sq > cq ? sq : cq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       e->r.fd, IORING_OFF_SQ_RING);
	e->r.sqes = mmap(NULL, e->r.p.sq_entries * sizeof(struct io_uring_sqe),
			 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, e->r.fd, IORING_OFF_SQES);
	e->r.tail = *(uint32_t *)(e->r.sq + e->r.p.sq_off.tail);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)e->kid);
	e->mem = open(path, O_RDWR | O_CLOEXEC);
	e->src = mmap(NULL, STG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		      -1, 0);
	if (e->shm == MAP_FAILED || e->stg == MAP_FAILED || e->dstg == MAP_FAILED ||
	    e->r.sq == MAP_FAILED ||
	    e->r.sqes == MAP_FAILED || e->mem < 0 || e->src == MAP_FAILED)
		die("setup: %s", strerror(errno));
	memset(e->src, 0x5a, STG);
	close(sv[1]); /* sv[0] stays open: the child waits on it */
}

int main(int argc, char **argv)
{
	static const struct { unsigned n; uint32_t len; } cs[] = {
		{ 1, 64 }, { 1, 4096 }, { 16, 4096 }, { 16, 65536 },
	};
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	struct env e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup(&e);
	printf("# median per burst (both directions), GB/s of payload each way; %d rounds\n", rounds);
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		double t[M_N][64];
		size_t span = (size_t)cs[c].n * cs[c].len;
		for (int k = 0; k < rounds && k < 64; k++)
			for (int m = 0; m < M_N; m++) {
				/* a fresh part of the 64 MiB each time: cold, as payloads are */
				size_t at = ((size_t)(k * M_N + m) * span) % (LEN - span);
				int reps = span >= (1u << 20) ? 4 : span >= 65536 ? 32 : 256;
				uint64_t t0 = now_ns();
				for (int i = 0; i < reps; i++)
					burst(&e, m, cs[c].n, cs[c].len, (at + (size_t)i * span) % (LEN - span));
				t[m][k] = (double)(now_ns() - t0) / reps;
			}
		printf("%2u x %6u B:", cs[c].n, cs[c].len);
		for (int m = 0; m < M_N; m++) {
			int n = rounds < 64 ? rounds : 64;
			qsort(t[m], (size_t)n, sizeof(double), cmpd);
			double med = t[m][n / 2];
			printf("  %s %.2f us %.2f GB/s", names[m], med / 1e3, (double)span / med);
		}
		printf("\n");
	}
	kill(e.kid, SIGKILL);
	waitpid(e.kid, NULL, 0);
	return 0;
}
