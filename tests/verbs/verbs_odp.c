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

	CHECK(p != MAP_FAILED);
	return p;
}

static bool resident(const void *p)
{
	unsigned char v = 0;

	CHECK(!mincore((void *)((uintptr_t)p & ~(uintptr_t)(PG - 1)), PG, &v));
	return v & 1;
}

static enum ibv_wc_status op(struct vt *t, struct ibv_qp *q, enum ibv_wr_opcode o,
			     struct ibv_mr *l, size_t loff, uint32_t len, uint64_t raddr,
			     uint32_t rkey)
{
	struct ibv_wc wc;

	CHECK(!vt_post_send(q, l, o, loff, len, IBV_SEND_SIGNALED, 0, raddr, rkey, 1));
	vt_poll_n(t->scq, 1, &wc);
	return wc.status;
}

/* a fresh connected pair after an error put the last one in ERR */
static void repair(struct vt *t)
{
	CHECK(!ibv_destroy_qp(t->qa));
	CHECK(!ibv_destroy_qp(t->qb));
	t->qa = vt_qp(t, IBV_QPT_RC, t->scq, t->rcq, NULL, 32, 32);
	t->qb = vt_qp(t, IBV_QPT_RC, t->scq, t->rcq, NULL, 32, 32);
	vt_connect(t, t->qa, t->qb);
}

/* both CQs of t emptied (the error completions of a failed test step) */
static void drain(struct vt *t)
{
	struct ibv_wc wc[8];

	while (ibv_poll_cq(t->scq, 8, wc) > 0)
		;
	while (ibv_poll_cq(t->rcq, 8, wc) > 0)
		;
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
	CHECK(m);
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
	CHECK(!resident(r) && !resident(r + NPG * PG - 1) && !resident(s));
	/* WRITE into untouched pages, across a page boundary */
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 3 * PG + 100, (uintptr_t)r + 50,
		 rm->rkey) == IBV_WC_SUCCESS);
	CHECK(!memcmp(r + 50, t.buf, 3 * PG + 100) && r[49] == 0);
	/* READ out of untouched pages (zeros) and into untouched pages */
	CHECK(op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 8192, 2 * PG, (uintptr_t)r + 8 * PG,
		 rm->rkey) == IBV_WC_SUCCESS);
	for (size_t i = 0; i < 2 * PG; i++)
		CHECK(t.buf[8192 + i] == 0);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_READ, sm, 5 * PG, PG, (uintptr_t)r + 50, rm->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(!memcmp(s + 5 * PG, t.buf, PG));
	/* SEND from untouched ODP pages into untouched ODP receive buffers:
	 * 40 bytes (the CQ-ring size) and 5000 (placed) */
	uint32_t lens[2] = { 40, 5000 };
	for (int k = 0; k < 2; k++) {
		size_t roff = (10 + 2 * k) * PG + 7, soff = (10 + 2 * k) * PG;
		CHECK(!resident(r + roff) && !resident(s + soff));
		vt_post_recv(t.qb, rm, roff, lens[k], 9);
		CHECK(op(&t, t.qa, IBV_WR_SEND, sm, soff, lens[k], 0, 0) == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == lens[k]);
		for (uint32_t i = 0; i < lens[k]; i++)
			CHECK(r[roff + i] == 0);
		memset(s + soff, 0x5a, lens[k]);
		vt_post_recv(t.qb, rm, roff, lens[k], 9);
		CHECK(op(&t, t.qa, IBV_WR_SEND, sm, soff, lens[k], 0, 0) == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && r[roff] == 0x5a && r[roff + lens[k] - 1] == 0x5a);
	}
	/* atomics on an untouched page */
	CHECK(!resident(r + 15 * PG));
	CHECK(vt_post_send(t.qa, sm, IBV_WR_ATOMIC_FETCH_AND_ADD, 15 * PG, 8, IBV_SEND_SIGNALED,
			   5, (uintptr_t)r + 15 * PG, rm->rkey, 2) == 0);
	vt_poll_n(t.scq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS && *(uint64_t *)(s + 15 * PG) == 0 &&
	      *(uint64_t *)(r + 15 * PG) == 5);
	CHECK(!ibv_dereg_mr(rm) && !ibv_dereg_mr(sm));
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
	CHECK(mmap(o, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		   -1, 0) == o && o[0] == 0);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 300, PG + 8, (uintptr_t)o + 3, om->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(!memcmp(o + 3, t.buf + 300, PG + 8) && o[2] == 0);
	CHECK(!ibv_dereg_mr(om));
	munmap(o, 2 * PG);

	uint8_t *r;
	struct ibv_mr *rm = odp_mr(&t, &r, 4 * PG);
	memset(r, 0x11, 4 * PG);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 64, (uintptr_t)r, rm->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(!munmap(r + PG, 2 * PG));
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 100,
				   (uintptr_t)r + PG + 10, rm->rkey);
	fprintf(stderr, "WRITE into unmapped pages: %s\n", ibv_wc_status_str(st));
	CHECK(st == IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	/* mapped again: the same address, new (zero) pages */
	uint8_t *again = mmap(r + PG, 2 * PG, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(again == r + PG);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 100, 2 * PG - 20, (uintptr_t)r + PG + 10,
		 rm->rkey) == IBV_WC_SUCCESS);
	CHECK(!memcmp(r + PG + 10, t.buf + 100, 2 * PG - 20) && r[PG + 9] == 0);
	/* MAP_FIXED over the live mapping, no munmap: the daemon must see
	 * the new pages (a copy of the old ones made at registration would
	 * take the WRITE instead) */
	uint8_t *over = mmap(r, 4 * PG, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(over == r && r[0] == 0);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 500, 3 * PG, (uintptr_t)r + 5, rm->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(!memcmp(r + 5, t.buf + 500, 3 * PG) && r[4] == 0);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_READ, t.mr, 40000, PG, (uintptr_t)r + 2 * PG, rm->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(!memcmp(t.buf + 40000, r + 2 * PG, PG));
	/* a posted receive whose pages go away: small (CQ-ring sized) SEND */
	vt_post_recv(t.qb, rm, 3 * PG, 32, 9);
	CHECK(!munmap(r + 3 * PG, PG));
	st = op(&t, t.qa, IBV_WR_SEND, t.mr, 0, 32, 0, 0);
	vt_poll_n(t.rcq, 1, &wc);
	fprintf(stderr, "SEND into an unmapped receive buffer: requester %s, receive %s\n",
		ibv_wc_status_str(st), ibv_wc_status_str(wc.status));
	CHECK(st != IBV_WC_SUCCESS && wc.status != IBV_WC_SUCCESS);
	drain(&t);
	CHECK(!ibv_dereg_mr(rm));
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
	CHECK(!munmap(r + 3 * PG, PG));
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_RDMA_WRITE, t.mr, 0, 3 * PG + 8,
				   (uintptr_t)r + 100, rm->rkey);
	fprintf(stderr, "WRITE whose last packet is unmapped: %s\n", ibv_wc_status_str(st));
	CHECK(st == IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	vt_post_recv(t.qb, rm, 100, 200, 9);
	CHECK(op(&t, t.qa, IBV_WR_SEND, t.mr, 1000, 200, 0, 0) == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS && !memcmp(r + 100, t.buf + 1000, 200));
	CHECK(!ibv_dereg_mr(rm));
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
	CHECK(im && im->addr == NULL && im->length == SIZE_MAX);
	uint8_t *a = malloc(3 * PG), *b = fresh(3 * PG);
	CHECK(a);
	for (size_t i = 0; i < 3 * PG; i++)
		a[i] = rnd();
	/* vt_post_send adds mr->addr (NULL): offsets are addresses */
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 2 * PG + 3, (uintptr_t)b + 1,
		 im->rkey) == IBV_WC_SUCCESS);
	CHECK(!memcmp(b + 1, a, 2 * PG + 3));
	memset(a, 0, 3 * PG);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_READ, im, (uintptr_t)a + 7, PG, (uintptr_t)b + 1,
		 im->rkey) == IBV_WC_SUCCESS);
	CHECK(!memcmp(a + 7, b + 1, PG));
	vt_post_recv(t.qb, im, (uintptr_t)b + PG, 200, 9);
	enum ibv_wc_status st = op(&t, t.qa, IBV_WR_SEND, im, (uintptr_t)a + 7, 200, 0, 0);
	if (st != IBV_WC_SUCCESS)
		fprintf(stderr, "SEND: %s\n", ibv_wc_status_str(st));
	CHECK(st == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS && !memcmp(b + PG, a + 7, 200));
	/* unmapped memory through the implicit rkey */
	CHECK(!munmap(b, 3 * PG));
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 64, (uintptr_t)b, im->rkey) ==
	      IBV_WC_REM_ACCESS_ERR);
	recover(&t);
	/* an implicit MR without remote write refuses remote writes */
	struct ibv_mr *ro = ibv_reg_mr(t.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	CHECK(ro);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_READ, im, (uintptr_t)a + 100, 64, (uintptr_t)a, ro->rkey) ==
	      IBV_WC_SUCCESS);
	CHECK(op(&t, t.qa, IBV_WR_RDMA_WRITE, im, (uintptr_t)a, 64, (uintptr_t)a + 100,
		 ro->rkey) == IBV_WC_REM_ACCESS_ERR);
	drain(&t);
	/* implicit needs ON_DEMAND and iova 0 */
	errno = 0;
	CHECK(!ibv_reg_mr(t.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL);
	errno = 0;
	CHECK(!ibv_reg_mr_iova2(t.pd, NULL, SIZE_MAX, 4096, ODP_RW) && errno == EINVAL);
	CHECK(!ibv_dereg_mr(ro) && !ibv_dereg_mr(im));
	free(a);
	vt_fini(&t);
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
	CHECK(adv(t.pd, NF, F, m, base, PG) == 0 && !resident(r));
	CHECK(adv(t.pd, W, F, m, base + 10, 2 * PG) == 0);
	CHECK(resident(r) && resident(r + 2 * PG) && !resident(r + 3 * PG));
	CHECK(adv(t.pd, R, F, m, base + 4 * PG, PG) == 0 && resident(r + 4 * PG));
	CHECK(adv(t.pd, W, 0, m, base + 6 * PG, PG) == 0); /* asynchronous: may be done now */
	/* a list longer than one control message, all good */
	struct ibv_sge many[100];
	for (int i = 0; i < 100; i++)
		many[i] = (struct ibv_sge){ .addr = base + (uint64_t)(i % 8) * PG, .length = 8,
					    .lkey = m->lkey };
	CHECK(ibv_advise_mr(t.pd, W, F, many, 100) == 0 && resident(r + 7 * PG));
	/* bad lists */
	CHECK(ibv_advise_mr(t.pd, W, F, many, 0) == EINVAL);
	CHECK(adv(t.pd, W, 2, m, base, 8) == EINVAL);
	CHECK(adv(t.pd, 7, F, m, base, 8) == EOPNOTSUPP);
	CHECK(adv(t.pd, W, F, t.mr, (uintptr_t)t.buf, 8) == ENOENT); /* not ODP */
	struct ibv_mr fake = *m;
	fake.lkey ^= 0x55;
	CHECK(adv(t.pd, W, F, &fake, base, 8) == ENOENT);
	struct ibv_pd *pd2 = ibv_alloc_pd(t.ctx);
	CHECK(pd2);
	CHECK(adv(pd2, W, F, m, base, 8) == EPERM);
	struct ibv_mr *rdonly = ibv_reg_mr(t.pd, r, PG, IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_ON_DEMAND);
	CHECK(rdonly);
	CHECK(adv(t.pd, W, F, rdonly, base, 8) == EPERM);
	CHECK(adv(t.pd, R, F, rdonly, base, 8) == 0);
	struct ibv_mw *mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	CHECK(mw);
	fake.lkey = mw->rkey;
	CHECK(adv(t.pd, R, F, &fake, base, 8) == EINVAL);
	/* outside the MR: synchronous -EFAULT, asynchronous ignored */
	CHECK(adv(t.pd, W, F, m, base + NPG * PG - 4, 8) == EFAULT);
	CHECK(adv(t.pd, W, F, m, base - 8, 8) == EFAULT);
	CHECK(adv(t.pd, W, 0, m, base + NPG * PG - 4, 8) == 0);
	/* inside the MR but not mapped: the same */
	CHECK(!munmap(r + 8 * PG, PG));
	CHECK(adv(t.pd, W, F, m, base + 8 * PG, 8) == EFAULT);
	CHECK(adv(t.pd, W, 0, m, base + 8 * PG, 8) == 0);
	/* the first bad entry decides; the ones before it were prefetched */
	struct ibv_sge two[2] = { { base + 9 * PG, 8, m->lkey }, { base, 8, t.mr->lkey } };
	CHECK(!resident(r + 9 * PG));
	CHECK(ibv_advise_mr(t.pd, W, F, two, 2) == ENOENT && resident(r + 9 * PG));
	/* implicit ODP takes any mapped address */
	struct ibv_mr *im = ibv_reg_mr(t.pd, NULL, SIZE_MAX, ODP_RW);
	CHECK(im);
	CHECK(!resident(r + 11 * PG));
	CHECK(adv(t.pd, W, F, im, base + 11 * PG, 8) == 0 && resident(r + 11 * PG));
	CHECK(adv(t.pd, W, F, im, base + 8 * PG, 8) == EFAULT);
	CHECK(!ibv_dealloc_mw(mw));
	CHECK(!ibv_dereg_mr(im) && !ibv_dereg_mr(rdonly) && !ibv_dereg_mr(m));
	CHECK(!ibv_dealloc_pd(pd2));
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
	CHECK(!ibv_query_device_ex(t.ctx, NULL, &a));
	CHECK(a.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
	CHECK(a.odp_caps.per_transport_caps.rc_odp_caps == rc);
	CHECK((a.odp_caps.per_transport_caps.ud_odp_caps &
	       (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)) ==
	      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV));
	/* nothing advertised that UD has no use for */
	CHECK(!(a.odp_caps.per_transport_caps.ud_odp_caps &
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
		{ "advise", c_advise },
		{ "caps", c_caps },
	};

	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
