/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions (issues 10 and 19, docs/verbs.md): MRs over
 * shared tmpfs mappings the application made are placed and gathered by
 * the daemon with memcpy, over the pages the registration pinned; pages
 * the file loses later are the pinned ones' business. Every operation is
 * checked byte by byte, and the port counters say which route the daemon
 * took. Random data and offsets are seeded and printed. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "vt.h"
#include "vt_stats.h"

#define RLEN (2 * VT_BUF) /* source half, target half */


/* payload pieces the daemon moved by memcpy of its mapping, and by every
 * other route (pinned, unpinned, /proc/<pid>/mem) */
static void counts(uint64_t *mapped, uint64_t *other)
{
	struct uroce_port_stats p;

	REQUIRE(vt_port_stats(&p) == 0);
	*mapped = p.mr_mapped;
	*other = p.mr_syscall + p.mr_pinned + p.mr_unpinned;
}

enum backing { B_MEMFD, B_SHM };

static char shm_name[64];

/* A shared mapping of a tmpfs file; the descriptor stays open (*fd) for a
 * memfd, is closed for /dev/shm (the shim must open the file by path:
 * shm_unlink after the registrations). */
static uint8_t *region(enum backing b, int *fd)
{
	char *name = shm_name;
	int f;

	if (b == B_MEMFD) {
		f = memfd_create("vt-mrmap", MFD_CLOEXEC);
	} else {
		snprintf(name, sizeof(shm_name), "/vt-mrmap-%d", (int)getpid());
		f = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	REQUIRE(f >= 0);
	REQUIRE(!ftruncate(f, RLEN));
	uint8_t *p = mmap(NULL, RLEN, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	REQUIRE(p != MAP_FAILED);
	if (b == B_SHM) {
		close(f);
		f = -1;
	}
	*fd = f;
	return p;
}

static void run_one(struct vt *t, struct ibv_qp *q, enum ibv_wr_opcode op, struct ibv_mr *lmr,
		    size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t add,
		    enum ibv_wc_status want)
{
	struct ibv_wc wc;

	REQUIRE(!vt_post_send(q, lmr, op, loff, len, IBV_SEND_SIGNALED, add, raddr, rkey, 7));
	vt_poll_n(t->scq, 1, &wc);
	if (wc.status != want)
		fprintf(stderr, "op %d: status %s, want %s\n", op, ibv_wc_status_str(wc.status),
			ibv_wc_status_str(want));
	REQUIRE(wc.status == want);
}

/* WRITE, READ, SEND, FETCH_ADD, CMP_SWAP between two MRs in r, checked
 * byte by byte against a model of the memory. */
static void traffic(struct vt *t, uint8_t *r, struct ibv_mr *src, struct ibv_mr *dst)
{
	uint8_t *model = calloc(1, RLEN);
	struct ibv_wc wc;

	REQUIRE(model);
	for (size_t i = 0; i < VT_BUF; i++)
		r[i] = model[i] = (uint8_t)vt_rnd();
	memset(r + VT_BUF, 0, VT_BUF);

	/* WRITE: src -> dst */
	uint32_t len = 1000 + vt_rnd() % 40000, so = vt_rnd() % 1000, doff = vt_rnd() % 1000;
	run_one(t, t->qa, IBV_WR_RDMA_WRITE, src, so, len, (uintptr_t)dst->addr + doff, dst->rkey,
		0, IBV_WC_SUCCESS);
	memcpy(model + VT_BUF + doff, model + so, len);
	/* READ: dst -> src */
	uint32_t rl = 100 + vt_rnd() % 20000, ro = vt_rnd() % 2000, lo = 20000 + vt_rnd() % 1000;
	run_one(t, t->qa, IBV_WR_RDMA_READ, src, lo, rl, (uintptr_t)dst->addr + ro, dst->rkey, 0,
		IBV_WC_SUCCESS);
	memcpy(model + lo, model + VT_BUF + ro, rl);
	/* SEND (over the CQ-ring size, so it is placed): src -> dst */
	uint32_t sl = 65 + vt_rnd() % 9000, sro = 45000 + vt_rnd() % 1000;
	vt_post_recv(t->qb, dst, sro, sl, 9);
	run_one(t, t->qa, IBV_WR_SEND, src, 3000, sl, 0, 0, 0, IBV_WC_SUCCESS);
	vt_poll_n(t->rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == sl);
	memcpy(model + VT_BUF + sro, model + 3000, sl);
	/* atomics on dst (still zero there: past what WRITE and SEND
	 * reached), originals into src */
	uint64_t ao = 60000 + 8 * (vt_rnd() % 100), old = 0, sw = 0x1234;
	uint32_t add = vt_rnd() | 1;
	run_one(t, t->qa, IBV_WR_ATOMIC_FETCH_AND_ADD, src, 64000, 8, (uintptr_t)dst->addr + ao,
		dst->rkey, add, IBV_WC_SUCCESS);
	memcpy(model + 64000, &old, 8);
	old += add;
	memcpy(model + VT_BUF + ao, &old, 8);
	/* compare with the current value: swapped to 0x1234 (vt_post_send) */
	run_one(t, t->qa, IBV_WR_ATOMIC_CMP_AND_SWP, src, 64008, 8, (uintptr_t)dst->addr + ao,
		dst->rkey, add, IBV_WC_SUCCESS);
	memcpy(model + 64008, &old, 8);
	memcpy(model + VT_BUF + ao, &sw, 8);
	for (size_t i = 0; i < RLEN; i++)
		if (r[i] != model[i]) {
			fprintf(stderr, "byte %zu: 0x%02x, want 0x%02x\n", i, r[i], model[i]);
			REQUIRE(0);
		}
	free(model);
}

static void ops(enum backing b, bool want_mapped)
{
	struct vt t;
	int fd;
	uint64_t m0, s0, m1, s1;
	unsigned acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	(void)vt_seed();
	vt_init(&t, NULL);
	uint8_t *r = region(b, &fd);
	struct ibv_mr *src = ibv_reg_mr(t.pd, r, VT_BUF, acc);
	struct ibv_mr *dst = ibv_reg_mr(t.pd, r + VT_BUF, VT_BUF, acc);
	REQUIRE(src && dst);
	if (b == B_SHM)
		shm_unlink(shm_name);
	counts(&m0, &s0);
	traffic(&t, r, src, dst);
	counts(&m1, &s1);
	fprintf(stderr, "mapped %llu, through /proc/pid/mem %llu\n",
		(unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
	if (want_mapped) {
		REQUIRE(m1 - m0 >= 6 && s1 == s0);
	} else {
		REQUIRE(m1 == m0 && s1 - s0 >= 6);
	}
	REQUIRE(!ibv_dereg_mr(src));
	REQUIRE(!ibv_dereg_mr(dst));
	munmap(r, RLEN);
	if (fd >= 0)
		close(fd);
	vt_fini(&t);
}

/* t, and an MR for writes over len bytes of a memfd mapping (*r, *fd) */
static struct ibv_mr *setup_w(struct vt *t, uint8_t **r, int *fd, size_t len)
{
	(void)vt_seed();
	vt_init(t, NULL);
	*r = region(B_MEMFD, fd);
	struct ibv_mr *mr = ibv_reg_mr(t->pd, *r, len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr);
	return mr;
}

static void case_memfd(void) { ops(B_MEMFD, true); }
static void case_shm(void) { ops(B_SHM, true); }

/* UROCE_MAP_MR=0: the same traffic, all through the pinned pages */
static void case_off(void)
{
	setenv("UROCE_MAP_MR", "0", 1);
	ops(B_MEMFD, false);
}

/* A reregistration onto the other half is mapped again; the old half
 * gets nothing more. */
static void case_rereg(void)
{
	struct vt t;
	int fd;
	uint64_t m0, s0, m1, s1;
	uint8_t *r;
	struct ibv_mr *mr = setup_w(&t, &r, &fd, VT_BUF);

	REQUIRE(!ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r + VT_BUF, VT_BUF, 0));
	memset(r, 0, RLEN);
	for (size_t i = 0; i < 4096; i++)
		t.buf[i] = (uint8_t)vt_rnd();
	counts(&m0, &s0);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + VT_BUF + 100, mr->rkey,
		0, IBV_WC_SUCCESS);
	counts(&m1, &s1);
	REQUIRE(!memcmp(r + VT_BUF + 100, t.buf, 4096));
	for (size_t i = 0; i < VT_BUF; i++)
		REQUIRE(r[i] == 0);
	/* the write into the new translation: mapped (per packet) */
	fprintf(stderr, "mapped %llu, through /proc/pid/mem %llu\n",
		(unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
	REQUIRE(m1 - m0 >= 1);
	/* the old range is no longer registered */
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 16, (uintptr_t)r + 100, mr->rkey, 0,
		IBV_WC_REM_ACCESS_ERR);
	for (size_t i = 0; i < VT_BUF; i++)
		REQUIRE(r[i] == 0);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	/* qa is in error now: vt_fini destroys it all the same */
	vt_fini(&t);
}

/* The client shrinks the file under a mapped MR: the daemon's copy
 * faults (SIGBUS) and the WRITE takes the page the registration pinned,
 * as an HCA's would (the file does not grow back), and another client
 * keeps being served. Without the pin (UROCE_MR_PIN=off), it follows the
 * address, which is now beyond the end of the file: the error an
 * unreachable address gives. */
static void truncate_check(bool pinned)
{
	struct vt t, u;
	int fd;
	uint8_t *r;

	if (!pinned)
		setenv("UROCE_MR_PIN", "off", 1);
	struct ibv_mr *mr = setup_w(&t, &r, &fd, RLEN);

	memset(t.buf, 0x5a, 4096);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + 8192, mr->rkey, 0,
		IBV_WC_SUCCESS);
	REQUIRE(r[8192] == 0x5a && r[8192 + 4095] == 0x5a);
	REQUIRE(!ftruncate(fd, 4096)); /* r + 8192 on is beyond the end of the file now */
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + 8192, mr->rkey, 0,
		pinned ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR);
	struct stat st;
	REQUIRE(!fstat(fd, &st) && st.st_size == 4096 && st.st_blocks <= 4096 / 512);
	/* a second client: verified data */
	vt_init(&u, NULL);
	for (size_t i = 0; i < 8192; i++)
		u.buf[i] = (uint8_t)vt_rnd();
	run_one(&u, u.qa, IBV_WR_RDMA_WRITE, u.mr, 0, 8192, (uintptr_t)u.buf + 20000, u.mr->rkey,
		0, IBV_WC_SUCCESS);
	REQUIRE(!memcmp(u.buf + 20000, u.buf, 8192));
	vt_fini(&u);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	vt_fini(&t);
}

static void case_truncate(void) { truncate_check(true); }
static void case_truncate_unpinned(void) { truncate_check(false); }

#define PG 4096

/* file blocks (512 B units) a descriptor's file holds */
static long long blocks(int fd)
{
	struct stat st;

	REQUIRE(!fstat(fd, &st));
	return (long long)st.st_blocks;
}

/* A page punched out of the file after registration: the application's
 * view of it is a hole again (reads zero; the file gets no page back),
 * and a WRITE through the registration lands in the page it pinned, as
 * an HCA's would. The daemon never faults a page of the file in: no
 * memory comes into being on its account (docs/security.md). */
static void case_hole(void)
{
	struct vt t;
	int fd;
	uint8_t *r;
	uint64_t m0, s0, m1, s1;
	struct ibv_mr *mr = setup_w(&t, &r, &fd, RLEN);

	memset(r, 0x11, RLEN);
	REQUIRE(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * PG, PG));
	long long b0 = blocks(fd);
	memset(t.buf, 0x5a, 256);
	counts(&m0, &s0);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 256, (uintptr_t)r + 4 * PG + 64, mr->rkey, 0,
		IBV_WC_SUCCESS);
	counts(&m1, &s1);
	fprintf(stderr, "file blocks %lld after the punch, %lld after the WRITE; mapped +%llu, "
		"other routes +%llu\n", b0, blocks(fd), (unsigned long long)(m1 - m0),
		(unsigned long long)(s1 - s0));
	REQUIRE(blocks(fd) == b0);
	REQUIRE(s1 > s0); /* the daemon's copy refused the hole, the pinned page took it */
	/* and the rest of the registration is still the file */
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 256, (uintptr_t)r + 6 * PG, mr->rkey, 0,
		IBV_WC_SUCCESS);
	REQUIRE(r[6 * PG] == 0x5a && r[6 * PG + 255] == 0x5a);
	for (size_t i = 0; i < PG; i++)
		REQUIRE(r[4 * PG + i] == 0);
	REQUIRE(blocks(fd) == b0 + PG / 512);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	vt_fini(&t);
}

/* UROCE_MR_PIN=off: a shared file the daemon maps, whose pages the shim
 * populated at registration (charged to the client); with a page punched
 * out later, a WRITE follows the address (the route of a registration
 * the kernel cannot pin) and the application sees it. */
static void case_unpinned(void)
{
	struct vt t;
	int fd;
	uint8_t *r;

	setenv("UROCE_MR_PIN", "off", 1);
	struct ibv_mr *mr = setup_w(&t, &r, &fd, RLEN);
	REQUIRE(blocks(fd) >= RLEN / 512);
	memset(t.buf, 0x6b, 256);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 256, (uintptr_t)r + 64, mr->rkey, 0,
		IBV_WC_SUCCESS);
	REQUIRE(r[64] == 0x6b && r[319] == 0x6b);
	REQUIRE(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * PG, PG));
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 256, (uintptr_t)r + 4 * PG + 64, mr->rkey, 0,
		IBV_WC_SUCCESS);
	REQUIRE(r[4 * PG + 64] == 0x6b && r[4 * PG + 319] == 0x6b);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	vt_fini(&t);
}

static unsigned long daemon_minflt(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	REQUIRE(f && fgets(buf, sizeof(buf), f));
	fclose(f);
	/* field 10 (minflt), counted from the ')' that ends the name */
	REQUIRE(sscanf(strrchr(buf, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %lu", &v) == 1);
	return v;
}

/* Registration pins every page of the range, as ib_umem_get does: the
 * file holds them from then on, allocated by (and charged to) the
 * client. The daemon's mapping has page tables for them from
 * registration on (a write fault per placed page cost more than the
 * copy). */
static void case_populate(void)
{
	enum { N = 64 };
	const char *e = getenv("UROCE_TEST_DAEMON_PID");
	struct stat st0, st1;
	struct vt t;
	int fd = memfd_create("vt-populate", MFD_CLOEXEC);

	if (!e) {
		fprintf(stderr, "UROCE_TEST_DAEMON_PID not set\n");
		exit(VT_SKIP);
	}
	pid_t dpid = (pid_t)atoi(e);
	REQUIRE(fd >= 0 && !ftruncate(fd, N * PG));
	uint8_t *p = mmap(NULL, N * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(p != MAP_FAILED);
	/* even pages in the file, odd ones holes */
	for (int i = 0; i < N; i += 2)
		p[i * PG] = 1;
	vt_init(&t, NULL);
	REQUIRE(!fstat(fd, &st0));
	struct ibv_mr *mr = ibv_reg_mr(t.pd, p, N * PG, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr);
	REQUIRE(!fstat(fd, &st1));
	fprintf(stderr, "file blocks %lld before registration, %lld after\n",
		(long long)st0.st_blocks, (long long)st1.st_blocks);
	REQUIRE(st1.st_blocks == N * PG / 512);
	memset(t.buf, 'P', 64);
	unsigned long f0 = daemon_minflt(dpid);
	for (int i = 0; i < N; i += 2)
		run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 64, (uintptr_t)p + i * PG + 8,
			mr->rkey, 0, IBV_WC_SUCCESS);
	unsigned long f1 = daemon_minflt(dpid);
	fprintf(stderr, "daemon minor faults during %d page-placing WRITEs: %lu\n", N / 2, f1 - f0);
	for (int i = 0; i < N; i += 2)
		REQUIRE(p[i * PG + 8] == 'P' && p[i * PG + 71] == 'P' && p[i * PG + 72] == 0);
	/* without the page tables every WRITE faults once; a few faults of
	 * the daemon's own (a new stack page, the log) are allowed */
	REQUIRE(f1 - f0 < N / 4);
	REQUIRE(!ibv_dereg_mr(mr));
	vt_fini(&t);
	munmap(p, N * PG);
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "hole", case_hole },
		{ "unpinned", case_unpinned },
		{ "truncate_unpinned", case_truncate_unpinned },
		{ "populate", case_populate },
		{ "memfd", case_memfd },
		{ "shm", case_shm },
		{ "off", case_off },
		{ "rereg", case_rereg },
		{ "truncate", case_truncate },
	};
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
