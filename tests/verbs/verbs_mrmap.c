/* SPDX-License-Identifier: MIT */
/* Daemon-mapped memory regions (issue 10, docs/verbs.md): MRs over shared
 * tmpfs mappings are placed and gathered by the daemon with memcpy. Every
 * operation is checked byte by byte, and the port counters say which path
 * the daemon took. Random data and offsets are seeded and printed. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "vt.h"
#include "vt_stats.h"

#define RLEN (2 * VT_BUF) /* source half, target half */

static unsigned seed;

static uint32_t rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

static void seed_init(void)
{
	const char *e = getenv("VT_SEED");

	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL);
	fprintf(stderr, "seed %u (VT_SEED= to repeat)\n", seed);
}

static void counts(uint64_t *mapped, uint64_t *sys)
{
	struct uroce_port_stats p;

	CHECK(vt_port_stats(&p) == 0);
	*mapped = p.mr_mapped;
	*sys = p.mr_syscall;
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
	CHECK(f >= 0);
	CHECK(!ftruncate(f, RLEN));
	uint8_t *p = mmap(NULL, RLEN, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	CHECK(p != MAP_FAILED);
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

	CHECK(!vt_post_send(q, lmr, op, loff, len, IBV_SEND_SIGNALED, add, raddr, rkey, 7));
	vt_poll_n(t->scq, 1, &wc);
	if (wc.status != want)
		fprintf(stderr, "op %d: status %s, want %s\n", op, ibv_wc_status_str(wc.status),
			ibv_wc_status_str(want));
	CHECK(wc.status == want);
}

/* WRITE, READ, SEND, FETCH_ADD, CMP_SWAP between two MRs in r, checked
 * byte by byte against a model of the memory. */
static void traffic(struct vt *t, uint8_t *r, struct ibv_mr *src, struct ibv_mr *dst)
{
	uint8_t *model = calloc(1, RLEN);
	struct ibv_wc wc;

	CHECK(model);
	for (size_t i = 0; i < VT_BUF; i++)
		r[i] = model[i] = (uint8_t)rnd();
	memset(r + VT_BUF, 0, VT_BUF);

	/* WRITE: src -> dst */
	uint32_t len = 1000 + rnd() % 40000, so = rnd() % 1000, doff = rnd() % 1000;
	run_one(t, t->qa, IBV_WR_RDMA_WRITE, src, so, len, (uintptr_t)dst->addr + doff, dst->rkey,
		0, IBV_WC_SUCCESS);
	memcpy(model + VT_BUF + doff, model + so, len);
	/* READ: dst -> src */
	uint32_t rl = 100 + rnd() % 20000, ro = rnd() % 2000, lo = 20000 + rnd() % 1000;
	run_one(t, t->qa, IBV_WR_RDMA_READ, src, lo, rl, (uintptr_t)dst->addr + ro, dst->rkey, 0,
		IBV_WC_SUCCESS);
	memcpy(model + lo, model + VT_BUF + ro, rl);
	/* SEND (over the CQ-ring size, so it is placed): src -> dst */
	uint32_t sl = 65 + rnd() % 9000, sro = 45000 + rnd() % 1000;
	vt_post_recv(t->qb, dst, sro, sl, 9);
	run_one(t, t->qa, IBV_WR_SEND, src, 3000, sl, 0, 0, 0, IBV_WC_SUCCESS);
	vt_poll_n(t->rcq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == sl);
	memcpy(model + VT_BUF + sro, model + 3000, sl);
	/* atomics on dst (still zero there: past what WRITE and SEND
	 * reached), originals into src */
	uint64_t ao = 60000 + 8 * (rnd() % 100), old = 0, sw = 0x1234;
	uint32_t add = rnd() | 1;
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
			CHECK(0);
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

	seed_init();
	vt_init(&t, NULL);
	uint8_t *r = region(b, &fd);
	struct ibv_mr *src = ibv_reg_mr(t.pd, r, VT_BUF, acc);
	struct ibv_mr *dst = ibv_reg_mr(t.pd, r + VT_BUF, VT_BUF, acc);
	CHECK(src && dst);
	if (b == B_SHM)
		shm_unlink(shm_name);
	counts(&m0, &s0);
	traffic(&t, r, src, dst);
	counts(&m1, &s1);
	fprintf(stderr, "mapped %llu, through /proc/pid/mem %llu\n",
		(unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
	if (want_mapped) {
		CHECK(m1 - m0 >= 6 && s1 == s0);
	} else {
		CHECK(m1 == m0 && s1 - s0 >= 6);
	}
	CHECK(!ibv_dereg_mr(src));
	CHECK(!ibv_dereg_mr(dst));
	munmap(r, RLEN);
	if (fd >= 0)
		close(fd);
	vt_fini(&t);
}

/* t, and an MR for writes over len bytes of a memfd mapping (*r, *fd) */
static struct ibv_mr *setup_w(struct vt *t, uint8_t **r, int *fd, size_t len)
{
	seed_init();
	vt_init(t, NULL);
	*r = region(B_MEMFD, fd);
	struct ibv_mr *mr = ibv_reg_mr(t->pd, *r, len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr);
	return mr;
}

static void case_memfd(void) { ops(B_MEMFD, true); }
static void case_shm(void) { ops(B_SHM, true); }

/* UROCE_MAP_MR=0: the same traffic, all through the old path */
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

	CHECK(!ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r + VT_BUF, VT_BUF, 0));
	memset(r, 0, RLEN);
	for (size_t i = 0; i < 4096; i++)
		t.buf[i] = (uint8_t)rnd();
	counts(&m0, &s0);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + VT_BUF + 100, mr->rkey,
		0, IBV_WC_SUCCESS);
	counts(&m1, &s1);
	CHECK(!memcmp(r + VT_BUF + 100, t.buf, 4096));
	for (size_t i = 0; i < VT_BUF; i++)
		CHECK(r[i] == 0);
	/* the write into the new translation: mapped (per packet); the
	 * gather from t.buf (malloc): the old path */
	fprintf(stderr, "mapped %llu, through /proc/pid/mem %llu\n",
		(unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
	CHECK(m1 - m0 >= 1 && s1 - s0 >= 1);
	/* the old range is no longer registered */
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 16, (uintptr_t)r + 100, mr->rkey, 0,
		IBV_WC_REM_ACCESS_ERR);
	for (size_t i = 0; i < VT_BUF; i++)
		CHECK(r[i] == 0);
	CHECK(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	/* qa is in error now: vt_fini destroys it all the same */
	vt_fini(&t);
}

/* The client shrinks the file under a mapped MR: the daemon's copy
 * faults (SIGBUS), which must become the error an unreachable address
 * gives, and another client keeps being served. */
static void case_truncate(void)
{
	struct vt t, u;
	int fd;
	uint8_t *r;
	struct ibv_mr *mr = setup_w(&t, &r, &fd, RLEN);

	memset(t.buf, 0x5a, 4096);
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + 8192, mr->rkey, 0,
		IBV_WC_SUCCESS);
	CHECK(r[8192] == 0x5a && r[8192 + 4095] == 0x5a);
	CHECK(!ftruncate(fd, 4096)); /* r + 8192 on is beyond the end of the file now */
	run_one(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 4096, (uintptr_t)r + 8192, mr->rkey, 0,
		IBV_WC_REM_ACCESS_ERR);
	/* a second client: verified data */
	vt_init(&u, NULL);
	for (size_t i = 0; i < 8192; i++)
		u.buf[i] = (uint8_t)rnd();
	run_one(&u, u.qa, IBV_WR_RDMA_WRITE, u.mr, 0, 8192, (uintptr_t)u.buf + 20000, u.mr->rkey,
		0, IBV_WC_SUCCESS);
	CHECK(!memcmp(u.buf + 20000, u.buf, 8192));
	vt_fini(&u);
	CHECK(!ibv_dereg_mr(mr));
	munmap(r, RLEN);
	close(fd);
	vt_fini(&t);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "memfd", case_memfd },
		{ "shm", case_shm },
		{ "off", case_off },
		{ "rereg", case_rereg },
		{ "truncate", case_truncate },
	};
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
