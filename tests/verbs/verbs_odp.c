/* SPDX-License-Identifier: MIT */
/* On-demand paging (issue 11, docs/verbs.md "On-demand paging"): ODP
 * registrations over pages never touched, munmap and mmap again under a
 * registration, implicit ODP across separate allocations, ibv_advise_mr
 * with good and bad lists, and the capabilities. Random bytes are seeded
 * and printed. */
#include <sys/mman.h>

#include "vt.h"

#define PG 4096
#define NPG 16
#define ODP_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND)

static unsigned seed;

static uint8_t rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return (uint8_t)(seed >> 16);
}

static void seed_init(void)
{
	const char *e = getenv("VT_SEED");

	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL);
	fprintf(stderr, "seed %u (VT_SEED= to repeat)\n", seed);
}

static uint8_t *fresh(size_t n)
{
	uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED);
	return p;
}

static bool resident(const void *p)
{
	unsigned char v = 0;

	REQUIRE(!mincore((void *)((uintptr_t)p & ~(uintptr_t)(PG - 1)), PG, &v));
	return v & 1;
}

static enum ibv_wc_status op(struct vt *t, struct ibv_qp *q, enum ibv_wr_opcode o,
			     struct ibv_mr *l, size_t loff, uint32_t len, uint64_t raddr,
			     uint32_t rkey)
{
	struct ibv_wc wc;

	REQUIRE(!vt_post_send(q, l, o, loff, len, IBV_SEND_SIGNALED, 0, raddr, rkey, 1));
	vt_poll_n(t->scq, 1, &wc);
	return wc.status;
}

/* a fresh connected pair (qb's receives from srq, if given) */
static void repair_srq(struct vt *t, struct ibv_srq *srq)
{
	REQUIRE(!ibv_destroy_qp(t->qa));
	REQUIRE(!ibv_destroy_qp(t->qb));
	t->qa = vt_qp(t, IBV_QPT_RC, t->scq, t->rcq, NULL, 32, 32);
	t->qb = vt_qp(t, IBV_QPT_RC, t->scq, t->rcq, srq, 32, 32);
	vt_connect(t, t->qa, t->qb);
}

/* a fresh connected pair after an error put the last one in ERR */
static void repair(struct vt *t)
{
	repair_srq(t, NULL);
}

/* one CQ emptied */
static void drain_cq(struct ibv_cq *cq)
{
	struct ibv_wc wc[8];

	while (ibv_poll_cq(cq, 8, wc) > 0)
		;
}

/* both CQs of t emptied (the error completions of a failed test step) */
static void drain(struct vt *t)
{
	drain_cq(t->scq);
	drain_cq(t->rcq);
}

/* after a step that put the pair in ERR: its completions gone, a new pair */
static void recover(struct vt *t)
{
	drain(t);
	repair(t);
}

/* a seeded context whose buffer holds random bytes */
static void start(struct vt *t)
{
	seed_init();
	vt_init(t, NULL);
	for (size_t i = 0; i < VT_BUF; i++)
		t->buf[i] = rnd();
}

/* n fresh (untouched) bytes at *p, registered ODP read/write */
static struct ibv_mr *odp_mr(struct vt *t, uint8_t **p, size_t n)
{
	struct ibv_mr *m;

	*p = fresh(n);
	m = ibv_reg_mr(t->pd, *p, n, ODP_RW);
	REQUIRE(m);
	return m;
}

/* WRITE, READ, SEND (placed and CQ-ring sized), atomics into and out of
 * ODP pages that nothing touched before: registering does not fault
 * them in, the traffic does, and every byte lands. */
static void c_fresh(void)
{
	struct vt t;
	struct ibv_wc wc;

	start(&t);
	uint8_t *r, *s;
	struct ibv_mr *rm = odp_mr(&t, &r, NPG * PG), *sm = odp_mr(&t, &s, NPG * PG);
	/* a pinning registration (or a probe of its ends) faults pages in */
	REQUIRE(!resident(r) && !resident(r + NPG * PG - 1) && !resident(s));
	/* WRITE into untouched pages, across a page boundary */
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 3 * PG + 100, (uintptr_t)r + 50,
		 rm->rkey) == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(r + 50, t.buf, 3 * PG + 100) && r[49] == 0);
	/* READ out of untouched pages (zeros) and into untouched pages */
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 8192, 2 * PG, (uintptr_t)r + 8 * PG,
		 rm->rkey) == IBV_WC_SUCCESS);
	for (size_t i = 0; i < 2 * PG; i++)
		REQUIRE(t.buf[8192 + i] == 0);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, sm, 5 * PG, PG, (uintptr_t)r + 50, rm->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(!memcmp(s + 5 * PG, t.buf, PG));
	/* SEND from untouched ODP pages into untouched ODP receive buffers:
	 * 40 bytes (the CQ-ring size) and 5000 (placed) */
	uint32_t lens[2] = { 40, 5000 };
	for (int k = 0; k < 2; k++) {
		size_t roff = (10 + 2 * k) * PG + 7, soff = (10 + 2 * k) * PG;
		REQUIRE(!resident(r + roff) && !resident(s + soff));
		vt_post_recv(t.qb, rm, roff, lens[k], 9);
		REQUIRE(op(&t, t.qa, IBV_WR_SEND, sm, soff, lens[k], 0, 0) == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == lens[k]);
		for (uint32_t i = 0; i < lens[k]; i++)
			REQUIRE(r[roff + i] == 0);
		memset(s + soff, 0x5a, lens[k]);
		vt_post_recv(t.qb, rm, roff, lens[k], 9);
		REQUIRE(op(&t, t.qa, IBV_WR_SEND, sm, soff, lens[k], 0, 0) == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && r[roff] == 0x5a && r[roff + lens[k] - 1] == 0x5a);
	}
	/* atomics on an untouched page */
	REQUIRE(!resident(r + 15 * PG));
	REQUIRE(vt_post_send(t.qa, sm, IBV_WR_ATOMIC_FETCH_AND_ADD, 15 * PG, 8, IBV_SEND_SIGNALED,
			   5, (uintptr_t)r + 15 * PG, rm->rkey, 2) == 0);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && *(uint64_t *)(s + 15 * PG) == 0 &&
	      *(uint64_t *)(r + 15 * PG) == 5);
	REQUIRE(!ibv_dereg_mr(rm) && !ibv_dereg_mr(sm));
	munmap(r, NPG * PG);
	munmap(s, NPG * PG);
	vt_fini(&t);
}

/* munmap under an ODP registration: a WRITE there fails as on hardware;
 * mapped again at the same address (by munmap + mmap, or by MAP_FIXED
 * over the live mapping) the next WRITE lands in the new pages. A
 * receive buffer unmapped before its SEND arrives is an error
 * completion, not a fault in the application. */
static void c_munmap(void)
{
	struct vt t;
	struct ibv_wc wc;

	start(&t);
	/* MAP_FIXED over the live (touched) mapping, no munmap: the daemon
	 * must see the new pages, not a copy of the old ones taken at
	 * registration (a moved or daemon-mapped MR would) */
	uint8_t *o;
	struct ibv_mr *om = odp_mr(&t, &o, 2 * PG);
	memset(o, 0x22, 2 * PG);
	REQUIRE(mmap(o, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		   -1, 0) == o && o[0] == 0);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 300, PG + 8, (uintptr_t)o + 3, om->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(!memcmp(o + 3, t.buf + 300, PG + 8) && o[2] == 0);
	REQUIRE(!ibv_dereg_mr(om));
	munmap(o, 2 * PG);

	uint8_t *r;
	struct ibv_mr *rm = odp_mr(&t, &r, 4 * PG);
	memset(r, 0x11, 4 * PG);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 64, (uintptr_t)r, rm->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(!munmap(r + PG, 2 * PG));
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 100,
				   (uintptr_t)r + PG + 10, rm->rkey);
	fprintf(stderr, "WRITE into unmapped pages: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	/* mapped again: the same address, new (zero) pages */
	uint8_t *again = mmap(r + PG, 2 * PG, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	REQUIRE(again == r + PG);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 100, 2 * PG - 20, (uintptr_t)r + PG + 10,
		 rm->rkey) == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(r + PG + 10, t.buf + 100, 2 * PG - 20) && r[PG + 9] == 0);
	/* MAP_FIXED over the live mapping, no munmap: the daemon must see
	 * the new pages (a copy of the old ones made at registration would
	 * take the WRITE instead) */
	uint8_t *over = mmap(r, 4 * PG, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	REQUIRE(over == r && r[0] == 0);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 500, 3 * PG, (uintptr_t)r + 5, rm->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(!memcmp(r + 5, t.buf + 500, 3 * PG) && r[4] == 0);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 40000, PG, (uintptr_t)r + 2 * PG, rm->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(!memcmp(t.buf + 40000, r + 2 * PG, PG));
	/* a posted receive whose pages go away: small (CQ-ring sized) SEND */
	vt_post_recv(t.qb, rm, 3 * PG, 32, 9);
	REQUIRE(!munmap(r + 3 * PG, PG));
	st = op(&t, t.qa, IBV_WR_SEND, t.mr, 0, 32, 0, 0);
	vt_poll_n(t.rcq, 1, &wc);
	fprintf(stderr, "SEND into an unmapped receive buffer: requester %s, receive %s\n",
		ibv_wc_status_str(st), ibv_wc_status_str(wc.status));
	REQUIRE(st != IBV_WC_SUCCESS && wc.status != IBV_WC_SUCCESS);
	drain(&t);
	REQUIRE(!ibv_dereg_mr(rm));
	munmap(r, 3 * PG);
	vt_fini(&t);
}

/* A multi-packet WRITE whose last packet's target is no longer mapped:
 * the WRITE fails (not only the next operation), and the QP pair after
 * it works. */
static void c_span(void)
{
	struct vt t;
	struct ibv_wc wc;

	start(&t);
	uint8_t *r;
	struct ibv_mr *rm = odp_mr(&t, &r, 4 * PG);
	REQUIRE(!munmap(r + 3 * PG, PG));
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 3 * PG + 8,
				   (uintptr_t)r + 100, rm->rkey);
	fprintf(stderr, "WRITE whose last packet is unmapped: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	vt_post_recv(t.qb, rm, 100, 200, 9);
	REQUIRE(op(&t, t.qa, IBV_WR_SEND, t.mr, 1000, 200, 0, 0) == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && !memcmp(r + 100, t.buf + 1000, 200));
	REQUIRE(!ibv_dereg_mr(rm));
	munmap(r, 3 * PG);
	vt_fini(&t);
}

/* Implicit ODP: one lkey/rkey for the whole address space, used across
 * two allocations made after it; its access flags still apply, and
 * memory that is not mapped is an error. */
static void c_implicit(void)
{
	struct vt t;
	struct ibv_wc wc;

	start(&t);
	struct ibv_mr *im = ibv_reg_mr(t.pd, NULL, SIZE_MAX, ODP_RW);
	REQUIRE(im && im->addr == NULL && im->length == SIZE_MAX);
	uint8_t *a = malloc(3 * PG), *b = fresh(3 * PG);
	REQUIRE(a);
	for (size_t i = 0; i < 3 * PG; i++)
		a[i] = rnd();
	/* vt_post_send adds mr->addr (NULL): offsets are addresses */
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 2 * PG + 3, (uintptr_t)b + 1,
		 im->rkey) == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(b + 1, a, 2 * PG + 3));
	memset(a, 0, 3 * PG);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, im, (uintptr_t)a + 7, PG, (uintptr_t)b + 1,
		 im->rkey) == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(a + 7, b + 1, PG));
	vt_post_recv(t.qb, im, (uintptr_t)b + PG, 200, 9);
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_SEND, im, (uintptr_t)a + 7, 200, 0, 0);
	if (st != IBV_WC_SUCCESS)
		fprintf(stderr, "SEND: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && !memcmp(b + PG, a + 7, 200));
	/* unmapped memory through the implicit rkey */
	REQUIRE(!munmap(b, 3 * PG));
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 64, (uintptr_t)b, im->rkey) ==
	      IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	/* an implicit MR without remote write refuses remote writes */
	struct ibv_mr *ro = ibv_reg_mr(t.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	REQUIRE(ro);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, im, (uintptr_t)a + 100, 64, (uintptr_t)a, ro->rkey) ==
	      IBV_WC_SUCCESS);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 64, (uintptr_t)a + 100,
		 ro->rkey) == IBV_WC_REM_ACCESS_ERR);
	drain(&t);
	/* implicit needs ON_DEMAND and iova 0 */
	errno = 0;
	REQUIRE(!ibv_reg_mr(t.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL);
	errno = 0;
	REQUIRE(!ibv_reg_mr_iova2(t.pd, NULL, SIZE_MAX, 4096, ODP_RW) && errno == EINVAL);
	REQUIRE(!ibv_dereg_mr(ro) && !ibv_dereg_mr(im));
	free(a);
	vt_fini(&t);
}

/* A page of a file (seeded bytes) mapped read-only, private or shared. */
static uint8_t *ro_file(int flags, uint8_t fill)
{
	char path[] = "/tmp/uroce-odp-roXXXXXX";
	int fd = mkstemp(path);
	uint8_t pg[PG];

	REQUIRE(fd >= 0 && !unlink(path));
	memset(pg, fill, PG);
	REQUIRE(write(fd, pg, PG) == PG);
	uint8_t *p = mmap(NULL, PG, PROT_READ, flags, fd, 0);
	REQUIRE(p != MAP_FAILED && !close(fd));
	return p;
}

/* Pages the process maps without PROT_WRITE: /proc/<pid>/mem would write
 * into them (FOLL_FORCE), an HCA cannot. A remote WRITE, ATOMIC or SEND
 * into them through an implicit or explicit ODP MR fails, and so does a
 * READ response into them; nothing changes. mprotect'ed writable, the
 * same WRITE lands. A registration that is not ODP and may be written is
 * refused over them (EFAULT, as pinning with FOLL_WRITE). PROT_NONE pages
 * are neither read (remote READ, SEND gather) nor registered. */
static void c_rdonly(void)
{
	struct vt t;
	struct ibv_wc wc;
	uint8_t zero[PG] = { 0 };

	seed_init();
	vt_init(&t, NULL);
	for (size_t i = 0; i < VT_BUF; i++)
		t.buf[i] = rnd();
	struct ibv_mr *im = ibv_reg_mr(t.pd, NULL, SIZE_MAX, ODP_RW);
	REQUIRE(im);
	uint8_t *ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ro != MAP_FAILED && ro[0] == 0); /* read: a zero page is mapped */
	uint8_t *pf = ro_file(MAP_PRIVATE, 0x33), *sf = ro_file(MAP_SHARED, 0x44);
	uint8_t *targets[3] = { ro, pf, sf };
	for (int k = 0; k < 3; k++) {
		uint8_t before[PG];
		memcpy(before, targets[k], PG);
		enum ibv_wc_status st = op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 100,
					   (uintptr_t)targets[k] + 8, im->rkey);
		fprintf(stderr, "WRITE into read-only mapping %d: %s\n", k, ibv_wc_status_str(st));
		REQUIRE(st == IBV_WC_REM_ACCESS_ERR && !memcmp(before, targets[k], PG));
		drain_cq(t.scq);
		repair(&t);
	}
	/* an explicit ODP registration over it: allowed (nothing is faulted
	 * at registration), its WRITE fails the same way */
	struct ibv_mr *em = ibv_reg_mr(t.pd, ro, PG, ODP_RW);
	REQUIRE(em);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 64, (uintptr_t)ro, em->rkey) ==
	      IBV_WC_REM_ACCESS_ERR && !memcmp(ro, zero, PG));
	drain_cq(t.scq);
	repair(&t);
	/* atomics */
	REQUIRE(op(&t, t.qa, IBV_WR_ATOMIC_FETCH_AND_ADD, t.mr, 0, 8, (uintptr_t)ro + 64,
		 im->rkey) == IBV_WC_REM_ACCESS_ERR && !memcmp(ro, zero, PG));
	drain_cq(t.scq);
	repair(&t);
	/* a receive buffer there: the receive fails, the requester is told */
	vt_post_recv(t.qb, im, (uintptr_t)ro, 200, 9);
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_SEND, t.mr, 0, 200, 0, 0);
	vt_poll_n(t.rcq, 1, &wc);
	fprintf(stderr, "SEND into a read-only receive buffer: requester %s, receive %s\n",
		ibv_wc_status_str(st), ibv_wc_status_str(wc.status));
	REQUIRE(st == IBV_WC_REM_OP_ERR && wc.status == IBV_WC_LOC_PROT_ERR && wc.wr_id == 9);
	REQUIRE(!memcmp(ro, zero, PG));
	drain_cq(t.scq);
	drain_cq(t.rcq);
	repair(&t);
	/* a READ whose local buffer is there (the remote side is fine) */
	st = op(&t, t.qa, IBV_WR_RDMA_READ, im, (uintptr_t)ro, 64, (uintptr_t)t.buf, t.mr->rkey);
	fprintf(stderr, "READ into a read-only local buffer: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_LOC_PROT_ERR && !memcmp(ro, zero, PG));
	drain_cq(t.scq);
	repair(&t);
	/* writable now: the same WRITE lands (the check follows mprotect) */
	REQUIRE(!mprotect(ro, PG, PROT_READ | PROT_WRITE));
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 100, (uintptr_t)ro + 8, im->rkey) ==
	      IBV_WC_SUCCESS && !memcmp(ro + 8, t.buf, 100));
	REQUIRE(!mprotect(ro, PG, PROT_READ));
	/* not ODP: a writable registration over read-only pages is refused,
	 * a read-only one is not */
	const int wflags[3] = { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_MW_BIND };
	for (int k = 0; k < 3; k++)
		for (int f = 0; f < 3; f++) {
			errno = 0;
			REQUIRE(!ibv_reg_mr(t.pd, targets[k], PG, wflags[f]) && errno == EFAULT);
		}
	uint8_t *rw = fresh(2 * PG);
	REQUIRE(!mprotect(rw + PG, PG, PROT_READ)); /* the second half only */
	errno = 0;
	REQUIRE(!ibv_reg_mr(t.pd, rw, 2 * PG, IBV_ACCESS_LOCAL_WRITE) && errno == EFAULT);
	struct ibv_mr *ok = ibv_reg_mr(t.pd, rw, PG, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rd = ibv_reg_mr(t.pd, ro, PG, IBV_ACCESS_REMOTE_READ);
	REQUIRE(ok && rd);
	REQUIRE(op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 0, 64, (uintptr_t)ro, rd->rkey) ==
	      IBV_WC_SUCCESS && !memcmp(t.buf, ro, 64));
	/* PROT_NONE: not even read, from either end, nor registered */
	uint8_t *none = fresh(PG);
	memset(none, 0x77, PG);
	REQUIRE(!mprotect(none, PG, PROT_NONE));
	st = op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 0, 64, (uintptr_t)none, im->rkey);
	fprintf(stderr, "READ from a PROT_NONE page: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_REM_ACCESS_ERR);
	drain_cq(t.scq);
	repair(&t);
	vt_post_recv(t.qb, t.mr, 0, 64, 9);
	st = op(&t, t.qa, IBV_WR_SEND, im, (uintptr_t)none, 64, 0, 0);
	fprintf(stderr, "SEND out of a PROT_NONE page: %s\n", ibv_wc_status_str(st));
	REQUIRE(st == IBV_WC_LOC_PROT_ERR);
	drain_cq(t.scq);
	drain_cq(t.rcq);
	repair(&t);
	errno = 0;
	REQUIRE(!ibv_reg_mr(t.pd, none, PG, IBV_ACCESS_REMOTE_READ) && errno == EFAULT);
	REQUIRE(!ibv_dereg_mr(ok) && !ibv_dereg_mr(rd) && !ibv_dereg_mr(em) && !ibv_dereg_mr(im));
	munmap(none, PG);
	munmap(rw, 2 * PG);
	munmap(ro, PG);
	munmap(pf, PG);
	munmap(sf, PG);
	vt_fini(&t);
}

static void post_srq(struct ibv_srq *srq, struct ibv_mr *mr, uint8_t *addr, uint32_t len,
		     uint64_t id)
{
	struct ibv_sge sg = { (uintptr_t)addr, len, mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	REQUIRE(!ibv_post_srq_recv(srq, &w, &bad));
}

/* A received SEND that cannot be placed — its buffer unmapped after the
 * post (an MR that is not ODP: the daemon reaches the pages the process
 * has now, and there are none), or ODP memory mapped read-only — completes
 * its receive with IBV_WC_LOC_PROT_ERR, as mlx5 and rxe do; the QP goes
 * to ERR and only the receives after it are flushed. An SRQ's later
 * receives stay on the SRQ and serve the next QP. */
static void placefail(bool use_srq, bool odp, uint32_t len, bool uc)
{
	struct vt t;
	struct ibv_wc wc[4];
	struct ibv_srq *srq = NULL;

	fprintf(stderr, "%s %s, %s buffer, %u bytes\n", uc ? "UC" : "RC", use_srq ? "SRQ" : "RQ",
		odp ? "read-only ODP" : "unmapped unpinned", len);
	vt_init(&t, NULL);
	if (uc) {
		REQUIRE(!ibv_destroy_qp(t.qa) && !ibv_destroy_qp(t.qb));
		t.qa = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 32, 32);
		t.qb = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 32, 32);
		vt_connect(&t, t.qa, t.qb);
	}
	if (use_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		srq = ibv_create_srq(t.pd, &sa);
		REQUIRE(srq);
		repair_srq(&t, srq);
	}
	uint8_t *r = fresh(4 * PG);
	/* the unmapped buffer's registration is one the kernel could not pin
	 * (UROCE_MR_PIN=off: the route that follows the address): a pinned
	 * one keeps placing into the pages it pinned after an munmap, as an
	 * HCA does (verbs_pin.c), and nothing would fail */
	if (!odp)
		setenv("UROCE_MR_PIN", "off", 1);
	struct ibv_mr *mr = ibv_reg_mr(t.pd, r, 4 * PG, odp ? ODP_RW : IBV_ACCESS_LOCAL_WRITE);
	unsetenv("UROCE_MR_PIN");
	REQUIRE(mr);
	for (uint64_t id = 1; id <= 3; id++) {
		uint8_t *a = r + (id == 1 ? 0 : id * PG);
		if (use_srq)
			post_srq(srq, mr, a, id == 1 ? 2 * PG : PG, id);
		else
			vt_post_recv(t.qb, mr, (size_t)(a - r), id == 1 ? 2 * PG : PG, id);
	}
	if (odp)
		REQUIRE(!mprotect(r, 2 * PG, PROT_READ));
	else
		REQUIRE(!munmap(r, 2 * PG));
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_SEND, t.mr, 0, len, 0, 0);
	int n = use_srq ? 1 : 3;
	vt_poll_n(t.rcq, n, wc);
	fprintf(stderr, "  requester %s; receives:", ibv_wc_status_str(st));
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %lu %s", (unsigned long)wc[i].wr_id,
			ibv_wc_status_str(wc[i].status));
	fputc('\n', stderr);
	/* UC has no NAK: the requester's SEND succeeded */
	REQUIRE(st == (uc ? IBV_WC_SUCCESS : IBV_WC_REM_OP_ERR));
	REQUIRE(wc[0].wr_id == 1 && wc[0].status == IBV_WC_LOC_PROT_ERR);
	for (int i = 1; i < n; i++)
		REQUIRE(wc[i].wr_id == (uint64_t)i + 1 && wc[i].status == IBV_WC_WR_FLUSH_ERR);
	REQUIRE(ibv_poll_cq(t.rcq, 4, wc) == 0);
	drain_cq(t.scq);
	if (use_srq) {
		/* receives 2 and 3 are still the SRQ's: a new QP takes them */
		repair_srq(&t, srq);
		memset(t.buf, 0x6b, 100);
		REQUIRE(op(&t, t.qa, IBV_WR_SEND, t.mr, 0, 100, 0, 0) == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, wc);
		REQUIRE(wc[0].wr_id == 2 && wc[0].status == IBV_WC_SUCCESS &&
		      r[2 * PG] == 0x6b && r[2 * PG + 99] == 0x6b);
	}
	if (odp)
		REQUIRE(r[0] == 0);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(r, 4 * PG);
	if (srq) {
		repair(&t);
		REQUIRE(!ibv_destroy_srq(srq));
	}
	vt_fini(&t);
}

static void c_placefail(void)
{
	/* 5000 bytes: placed by the daemon (deferred to the end of the RX
	 * burst); 3 packets at MTU 1024 + 1 */
	placefail(false, false, 5000, false);
	placefail(true, false, 5000, false);
	placefail(false, true, 5000, false);
	placefail(true, true, 5000, false);
	/* a CQ-ring sized SEND: into ODP memory the daemon places it too */
	placefail(false, true, 40, false);
	/* UC, the placement failing when the burst is written out: the same
	 * receive status, and the QP's later receives flushed (one failing
	 * at once instead abandons the message and keeps the QP: see
	 * docs/transport.md) */
	placefail(false, false, 5000, true);
}

/* The requester's side of the same: a READ whose local buffer (ODP) was
 * unmapped after registration (its responses are placed at the end of an
 * RX burst) completes IBV_WC_LOC_PROT_ERR, not successfully, and the WR
 * after it is flushed: 5000 bytes (all responses in one burst, the READ
 * retired in it) and 60000 (failing in the first of several bursts). */
static void c_readfail(void)
{
	static const uint32_t lens[2] = { 5000, 60000 };

	for (int k = 0; k < 2; k++) {
		struct vt t;
		struct ibv_wc wc[2];

		vt_init(&t, NULL);
		uint8_t *l = fresh(16 * PG);
		/* ODP: a pinned registration would place into its old pages */
		struct ibv_mr *lm = ibv_reg_mr(t.pd, l, 16 * PG,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
		REQUIRE(lm);
		REQUIRE(!munmap(l, 2 * PG));
		REQUIRE(!vt_post_send(t.qa, lm, IBV_WR_RDMA_READ, 0, lens[k], IBV_SEND_SIGNALED, 0,
				    (uintptr_t)t.buf, t.mr->rkey, 1));
		REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 0, 64, IBV_SEND_SIGNALED, 0,
				    (uintptr_t)t.buf + 8192, t.mr->rkey, 2));
		vt_poll_n(t.scq, 2, wc);
		fprintf(stderr, "READ of %u into an unmapped buffer: %s, then %s\n", lens[k],
			ibv_wc_status_str(wc[0].status), ibv_wc_status_str(wc[1].status));
		REQUIRE(wc[0].wr_id == 1 && wc[0].status == IBV_WC_LOC_PROT_ERR);
		REQUIRE(wc[1].wr_id == 2 && wc[1].status == IBV_WC_WR_FLUSH_ERR);
		REQUIRE(!ibv_dereg_mr(lm));
		munmap(l + 2 * PG, 14 * PG);
		vt_fini(&t);
	}
}

static int adv(struct ibv_pd *pd, int advice, uint32_t flags, struct ibv_mr *mr, uint64_t addr,
	       uint32_t len)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = mr->lkey };

	return ibv_advise_mr(pd, advice, flags, &s, 1);
}

/* ibv_advise_mr: a synchronous prefetch faults the pages in (writable
 * for PREFETCH_WRITE), NO_FAULT does not; bad lists get mlx5's errnos. */
static void c_advise(void)
{
	struct vt t;
	const int W = IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, R = IBV_ADVISE_MR_ADVICE_PREFETCH,
		  NF = IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, F = IBV_ADVISE_MR_FLAG_FLUSH;

	vt_init(&t, NULL);
	uint8_t *r;
	struct ibv_mr *m = odp_mr(&t, &r, NPG * PG);
	uint64_t base = (uintptr_t)r;
	REQUIRE(adv(t.pd, NF, F, m, base, PG) == 0 && !resident(r));
	REQUIRE(adv(t.pd, W, F, m, base + 10, 2 * PG) == 0);
	REQUIRE(resident(r) && resident(r + 2 * PG) && !resident(r + 3 * PG));
	REQUIRE(adv(t.pd, R, F, m, base + 4 * PG, PG) == 0 && resident(r + 4 * PG));
	REQUIRE(adv(t.pd, W, 0, m, base + 6 * PG, PG) == 0); /* asynchronous: may be done now */
	/* a list longer than one control message, all good */
	struct ibv_sge many[100];
	for (int i = 0; i < 100; i++)
		many[i] = (struct ibv_sge){ .addr = base + (uint64_t)(i % 8) * PG, .length = 8,
					    .lkey = m->lkey };
	REQUIRE(ibv_advise_mr(t.pd, W, F, many, 100) == 0 && resident(r + 7 * PG));
	/* bad lists */
	REQUIRE(ibv_advise_mr(t.pd, W, F, many, 0) == EINVAL);
	REQUIRE(adv(t.pd, W, 2, m, base, 8) == EINVAL);
	REQUIRE(adv(t.pd, 7, F, m, base, 8) == EOPNOTSUPP);
	REQUIRE(adv(t.pd, W, F, t.mr, (uintptr_t)t.buf, 8) == ENOENT); /* not ODP */
	struct ibv_mr fake = *m;
	fake.lkey ^= 0x55;
	REQUIRE(adv(t.pd, W, F, &fake, base, 8) == ENOENT);
	struct ibv_pd *pd2 = ibv_alloc_pd(t.ctx);
	REQUIRE(pd2);
	REQUIRE(adv(pd2, W, F, m, base, 8) == EPERM);
	struct ibv_mr *rdonly = ibv_reg_mr(t.pd, r, PG, IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_ON_DEMAND);
	REQUIRE(rdonly);
	REQUIRE(adv(t.pd, W, F, rdonly, base, 8) == EPERM);
	REQUIRE(adv(t.pd, R, F, rdonly, base, 8) == 0);
	struct ibv_mw *mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	fake.lkey = mw->rkey;
	REQUIRE(adv(t.pd, R, F, &fake, base, 8) == EINVAL);
	/* outside the MR: synchronous -EFAULT, asynchronous ignored */
	REQUIRE(adv(t.pd, W, F, m, base + NPG * PG - 4, 8) == EFAULT);
	REQUIRE(adv(t.pd, W, F, m, base - 8, 8) == EFAULT);
	REQUIRE(adv(t.pd, W, 0, m, base + NPG * PG - 4, 8) == 0);
	/* inside the MR but not mapped: the same */
	REQUIRE(!munmap(r + 8 * PG, PG));
	REQUIRE(adv(t.pd, W, F, m, base + 8 * PG, 8) == EFAULT);
	REQUIRE(adv(t.pd, W, 0, m, base + 8 * PG, 8) == 0);
	/* the first bad entry decides; the ones before it were prefetched */
	struct ibv_sge two[2] = { { base + 9 * PG, 8, m->lkey }, { base, 8, t.mr->lkey } };
	REQUIRE(!resident(r + 9 * PG));
	REQUIRE(ibv_advise_mr(t.pd, W, F, two, 2) == ENOENT && resident(r + 9 * PG));
	/* implicit ODP takes any mapped address */
	struct ibv_mr *im = ibv_reg_mr(t.pd, NULL, SIZE_MAX, ODP_RW);
	REQUIRE(im);
	REQUIRE(!resident(r + 11 * PG));
	REQUIRE(adv(t.pd, W, F, im, base + 11 * PG, 8) == 0 && resident(r + 11 * PG));
	REQUIRE(adv(t.pd, W, F, im, base + 8 * PG, 8) == EFAULT);
	/* a page the process may only read: a write prefetch cannot fault
	 * it in (EFAULT, as mlx5's page fault for write fails), a read one
	 * can; PROT_NONE takes neither */
	REQUIRE(!mprotect(r + 12 * PG, PG, PROT_READ) && !mprotect(r + 13 * PG, PG, PROT_NONE));
	REQUIRE(adv(t.pd, W, F, im, base + 12 * PG, 8) == EFAULT);
	REQUIRE(adv(t.pd, W, 0, im, base + 12 * PG, 8) == 0);
	REQUIRE(adv(t.pd, R, F, im, base + 12 * PG, 8) == 0 && resident(r + 12 * PG));
	REQUIRE(adv(t.pd, R, F, im, base + 13 * PG, 8) == EFAULT);
	REQUIRE(!ibv_dealloc_mw(mw));
	REQUIRE(!ibv_dereg_mr(im) && !ibv_dereg_mr(rdonly) && !ibv_dereg_mr(m));
	REQUIRE(!ibv_dealloc_pd(pd2));
	vt_fini(&t);
}

static void c_caps(void)
{
	struct vt t;
	struct ibv_device_attr_ex a;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			    IBV_ODP_SUPPORT_SRQ_RECV;

	vt_init(&t, NULL);
	memset(&a, 0, sizeof(a));
	REQUIRE(!ibv_query_device_ex(t.ctx, NULL, &a));
	REQUIRE(a.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
	REQUIRE(a.odp_caps.per_transport_caps.rc_odp_caps == rc);
	REQUIRE((a.odp_caps.per_transport_caps.ud_odp_caps &
	       (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)) ==
	      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV));
	/* nothing advertised that UD has no use for */
	REQUIRE(!(a.odp_caps.per_transport_caps.ud_odp_caps &
		(IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)));
	vt_fini(&t);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "fresh", c_fresh },
		{ "munmap", c_munmap },
		{ "span", c_span },
		{ "implicit", c_implicit },
		{ "rdonly", c_rdonly },
		{ "placefail", c_placefail },
		{ "readfail", c_readfail },
		{ "advise", c_advise },
		{ "caps", c_caps },
	};

	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
