/* SPDX-License-Identifier: MIT */
/* Device memory, parent and thread domains, MR access flags (issue 11):
 * what rdma-core's suite checks and what it does not — bounds as mlx5,
 * free while registered, remote WRITE / READ / atomics and SEND / RECV
 * through DM verified byte by byte, another context's DM out of reach,
 * the limits, concurrent allocation from forked children. The random
 * choices come from a seed that is printed. */
#include <sys/wait.h>

#include "vt.h"

static unsigned dm_seed;

static void dm_seed_init(void)
{
	const char *s = getenv("VT_SEED");

	dm_seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	fprintf(stderr, "seed %u (VT_SEED to repeat)\n", dm_seed);
	srandom(dm_seed);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)random();
}

static uint64_t max_dm(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dx;

	REQUIRE(!ibv_query_device_ex(ctx, NULL, &dx));
	return dx.max_dm_size;
}

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, uint64_t len)
{
	struct ibv_alloc_dm_attr a = { .length = len, .log_align_req = 3 };

	return ibv_alloc_dm(ctx, &a);
}

#define DM_MR_ALL (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* alloc attributes, copy bounds and granularity, registration checks */
static void bounds(void)
{
	struct ibv_alloc_dm_attr a = { .length = 4096 };
	uint8_t in[512], out[512];
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct vt t;

	dm_seed_init();
	vt_init(&t, NULL);
	uint64_t max = max_dm(t.ctx);
	REQUIRE(max == 256 * 1024);
	a.comp_mask = 1;
	REQUIRE(!ibv_alloc_dm(t.ctx, &a) && errno == EINVAL);
	a.comp_mask = 0;
	a.length = max + 1;
	REQUIRE(!ibv_alloc_dm(t.ctx, &a) && errno == EINVAL);
	a.length = 0;
	REQUIRE(!ibv_alloc_dm(t.ctx, &a) && errno == EINVAL);
	a.length = 1000;
	a.log_align_req = 13; /* past a page */
	REQUIRE(!ibv_alloc_dm(t.ctx, &a) && errno == EINVAL);
	dm = dm_alloc(t.ctx, 1000);
	REQUIRE(dm);
	fill(in, sizeof(in));
	REQUIRE(ibv_memcpy_to_dm(dm, 492, in, 512) == EFAULT);        /* past the end */
	REQUIRE(ibv_memcpy_to_dm(dm, UINT64_MAX - 3, in, 8) == EFAULT); /* wraps */
	REQUIRE(ibv_memcpy_to_dm(dm, 2, in, 8) == EINVAL);            /* offset % 4 */
	REQUIRE(ibv_memcpy_to_dm(dm, 4, in, 6) == EINVAL);            /* length % 4 */
	REQUIRE(ibv_memcpy_from_dm(out, dm, 996, 8) == EFAULT);
	REQUIRE(ibv_memcpy_from_dm(out, dm, 1, 4) == EINVAL);
	REQUIRE(!ibv_memcpy_to_dm(dm, 488, in, 512));                 /* the last byte */
	memset(out, 0, sizeof(out));
	REQUIRE(!ibv_memcpy_from_dm(out, dm, 488, 512));
	REQUIRE(!memcmp(in, out, 512));
	REQUIRE(!ibv_memcpy_to_dm(dm, 1000, in, 0));
	/* ibv_reg_dm_mr: zero-based, mlx5's access set, inside the DM */
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND) &&
	      errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE) &&
	      errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB) &&
	      errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 0, 1004, DM_MR_ALL) && errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 1004, 0, DM_MR_ALL) && errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(t.pd, dm, 8, UINT64_MAX - 4, DM_MR_ALL) && errno == EINVAL);
	mr = ibv_reg_dm_mr(t.pd, dm, 996, 4, DM_MR_ALL | IBV_ACCESS_RELAXED_ORDERING);
	REQUIRE(mr && mr->addr == NULL && mr->length == 4);
	/* a DM MR has no translation to change */
	REQUIRE(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) != 0);
	REQUIRE(!ibv_dereg_mr(mr));
	REQUIRE(!ibv_free_dm(dm));
	vt_fini(&t);
}

/* ibv_free_dm is EBUSY while an MR covers the DM, as the kernel's usecnt */
static void free_busy(void)
{
	struct ibv_dm *dm;
	struct ibv_mr *m1, *m2;
	struct vt t;

	vt_init(&t, NULL);
	dm = dm_alloc(t.ctx, 8192);
	REQUIRE(dm);
	m1 = ibv_reg_dm_mr(t.pd, dm, 0, 4096, DM_MR_ALL);
	m2 = ibv_reg_dm_mr(t.pd, dm, 4096, 4096, IBV_ACCESS_ZERO_BASED);
	REQUIRE(m1 && m2);
	REQUIRE(ibv_free_dm(dm) == EBUSY);
	REQUIRE(!ibv_dereg_mr(m1));
	REQUIRE(ibv_free_dm(dm) == EBUSY);
	/* still usable after the refusals */
	uint32_t v = 0xabcd1234, w = 0;
	REQUIRE(!ibv_memcpy_to_dm(dm, 8188, &v, 4) && !ibv_memcpy_from_dm(&w, dm, 8188, 4));
	REQUIRE(w == v);
	REQUIRE(!ibv_dereg_mr(m2));
	REQUIRE(!ibv_free_dm(dm));
	vt_fini(&t);
}

static void post1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	REQUIRE(!ibv_post_send(qp, wr, &bad));
}

static void recv1(struct ibv_qp *qp, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { addr, len, lkey };
	struct ibv_recv_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1 }, *bad;

	REQUIRE(!ibv_post_recv(qp, &w, &bad));
}

/* SEND of len bytes from lmr at laddr into rmr at raddr (a receive on qb) */
static void send_one(struct vt *t, struct ibv_mr *lmr, uint64_t laddr, struct ibv_mr *rmr,
		     uint64_t raddr, uint32_t len)
{
	struct ibv_sge s = { laddr, len, lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	recv1(t->qb, raddr, len, rmr->lkey);
	post1(t->qa, &wr);
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	vt_poll_n(t->rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == len);
}

/* RDMA WRITE / READ / atomics into and out of DM, SEND and RECV through DM
 * SGEs (small ones too: they must not take the CQ-ring path), every byte
 * compared; then out-of-range and access errors */
static void traffic(void)
{
	enum { DML = 65536, OFF = 8192, ML = 32768 };
	static uint8_t want[DML], got[DML];
	struct ibv_wc wc;
	struct ibv_dm *dm;
	struct ibv_mr *mr, *ro;
	struct vt t;

	dm_seed_init();
	vt_init(&t, NULL);
	dm = dm_alloc(t.ctx, DML);
	REQUIRE(dm);
	/* the MR covers [OFF, OFF + ML) of the DM: its address 0 is DM byte OFF */
	mr = ibv_reg_dm_mr(t.pd, dm, OFF, ML, DM_MR_ALL);
	ro = ibv_reg_dm_mr(t.pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr && ro);
	fill(want, sizeof(want));
	REQUIRE(!ibv_memcpy_to_dm(dm, 0, want, DML));
	/* WRITE (several packets) from host memory into DM at MR offset 100 */
	fill(t.buf, 20000);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 0, 20000, IBV_SEND_SIGNALED, 0,
			    100, mr->rkey, 2));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	memcpy(want + OFF + 100, t.buf, 20000);
	REQUIRE(!ibv_memcpy_from_dm(got, dm, 0, DML));
	REQUIRE(!memcmp(got, want, DML)); /* nothing outside the range moved */
	/* READ it back out of DM into host memory at 32768 */
	memset(t.buf + 32768, 0, 20000);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_READ, 32768, 20000, IBV_SEND_SIGNALED, 0,
			    100, mr->rkey, 3));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(t.buf + 32768, want + OFF + 100, 20000));
	/* fetch-and-add on DM */
	uint64_t old, now;
	memcpy(&old, want + OFF + 64, 8);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, IBV_SEND_SIGNALED,
			    5, 64, mr->rkey, 4));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	REQUIRE(!memcmp(t.buf, &old, 8));
	REQUIRE(!ibv_memcpy_from_dm(&now, dm, OFF + 64, 8));
	REQUIRE(now == old + 5);
	memcpy(want + OFF + 64, &now, 8);
	/* SEND from DM (local SGE: MR offset 0) into host memory, small and large */
	send_one(&t, mr, 0, t.mr, (uintptr_t)t.buf + 4096, 40);
	REQUIRE(!memcmp(t.buf + 4096, want + OFF, 40));
	send_one(&t, mr, 1000, t.mr, (uintptr_t)t.buf + 4096, 12000);
	REQUIRE(!memcmp(t.buf + 4096, want + OFF + 1000, 12000));
	/* SEND from host memory into a DM receive buffer, small and large */
	fill(t.buf, 16000);
	send_one(&t, t.mr, (uintptr_t)t.buf, mr, 20000, 48);
	memcpy(want + OFF + 20000, t.buf, 48);
	send_one(&t, t.mr, (uintptr_t)t.buf + 100, mr, 4, 9000);
	memcpy(want + OFF + 4, t.buf + 100, 9000);
	REQUIRE(!ibv_memcpy_from_dm(got, dm, 0, DML));
	REQUIRE(!memcmp(got, want, DML));
	/* past the MR (still inside the DM): a remote access error, DM untouched */
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 0, 64, IBV_SEND_SIGNALED, 0,
			    ML - 32, mr->rkey, 5));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_REM_ACCESS_ERR);
	REQUIRE(!ibv_memcpy_from_dm(got, dm, 0, DML) && !memcmp(got, want, DML));
	REQUIRE(!ibv_dereg_mr(mr) && !ibv_dereg_mr(ro) && !ibv_free_dm(dm));
	vt_fini(&t);
}

/* a second context: it cannot name the first's DM (import by handle, an
 * MR over it), and the first's DM MR rkey does not serve its QPs */
static void isolation(void)
{
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct vt a, b;

	vt_init(&a, NULL);
	vt_init(&b, NULL);
	dm = dm_alloc(a.ctx, 4096);
	REQUIRE(dm);
	mr = ibv_reg_dm_mr(a.pd, dm, 0, 4096, DM_MR_ALL);
	REQUIRE(mr);
	uint32_t secret = 0x5ec4e7, zero = 0;
	REQUIRE(!ibv_memcpy_to_dm(dm, 0, &secret, 4));
	REQUIRE(!ibv_import_dm(b.ctx, dm->handle) && errno == EINVAL);
	REQUIRE(!ibv_reg_dm_mr(b.pd, dm, 0, 64, DM_MR_ALL) && errno == EINVAL);
	/* b's QP reads with a's DM rkey: another PD, refused */
	REQUIRE(!vt_post_send(b.qa, b.mr, IBV_WR_RDMA_READ, 0, 4, IBV_SEND_SIGNALED, 0, 0,
			    mr->rkey, 9));
	vt_poll_n(b.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_REM_ACCESS_ERR);
	REQUIRE(!memcmp(b.buf, &zero, 4));
	/* the same handle imported on a's own connection is a's DM */
	struct ibv_dm *im = ibv_import_dm(a.ctx, dm->handle);
	uint32_t r = 0;
	REQUIRE(im && !ibv_memcpy_from_dm(&r, im, 0, 4) && r == secret);
	ibv_unimport_dm(im);
	REQUIRE(!ibv_dereg_mr(mr) && !ibv_free_dm(dm));
	vt_fini(&b);
	vt_fini(&a);
}

/* limits: at most "dm" DMs per context (--limit dm=), and their memory
 * counts against --limit mem= with the queues */
static void limits(void)
{
	struct ibv_dm *dm[8];
	struct vt t;
	int n;

	vt_init(&t, NULL); /* the daemon runs with --limit dm=4 */
	for (n = 0; n < 8; n++)
		if (!(dm[n] = dm_alloc(t.ctx, 4)))
			break;
	REQUIRE(n == 4 && errno == ENOMEM);
	REQUIRE(!ibv_free_dm(dm[0]));
	REQUIRE((dm[0] = dm_alloc(t.ctx, max_dm(t.ctx))));
	for (int i = 0; i < n; i++)
		REQUIRE(!ibv_free_dm(dm[i]));
	vt_fini(&t);
}

/* five children of one context allocate, use and free DM at once, as
 * rdma-core's test_multi_process_alloc_dm; the parent's DM stays its own */
static void fork_alloc(void)
{
	enum { KIDS = 5, ROUNDS = 20 };
	pid_t pid[KIDS];
	struct ibv_dm *mine;
	uint32_t v = 0x600dcafe, r = 0;
	struct vt t;

	vt_init(&t, NULL);
	mine = dm_alloc(t.ctx, 4096);
	REQUIRE(mine && !ibv_memcpy_to_dm(mine, 0, &v, 4));
	for (int k = 0; k < KIDS; k++) {
		pid[k] = fork();
		REQUIRE(pid[k] >= 0);
		if (pid[k])
			continue;
		for (int i = 0; i < ROUNDS; i++) {
			uint32_t x = (uint32_t)(k << 16 | i), y = 0;
			struct ibv_dm *d = dm_alloc(t.ctx, 8192);

			if (!d || ibv_memcpy_to_dm(d, 4096, &x, 4) ||
			    ibv_memcpy_from_dm(&y, d, 4096, 4) || y != x || ibv_free_dm(d))
				_exit(1);
		}
		_exit(0);
	}
	for (int k = 0; k < KIDS; k++) {
		int st;

		REQUIRE(waitpid(pid[k], &st, 0) == pid[k]);
		REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	REQUIRE(!ibv_memcpy_from_dm(&r, mine, 0, 4) && r == v);
	REQUIRE(!ibv_free_dm(mine));
	vt_fini(&t);
}

static unsigned pd_allocs;

static void *pd_alloc(struct ibv_pd *pd, void *pdc, size_t size, size_t align, uint64_t type)
{
	(void)pd; (void)pdc; (void)size; (void)align; (void)type;
	pd_allocs++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void pd_free(struct ibv_pd *pd, void *pdc, void *ptr, uint64_t type)
{
	(void)pd; (void)pdc; (void)ptr; (void)type;
	pd_allocs++;
}

/* thread and parent domains: refusals as mlx5, a CQ / QP / MR / SRQ on a
 * parent domain working as on its PD, EBUSY while in use */
static void parent_domain(void)
{
	struct ibv_td_init_attr ta = { .comp_mask = 1 };
	struct ibv_parent_domain_init_attr pa;
	struct ibv_cq_init_attr_ex ca;
	struct ibv_td *td;
	struct ibv_pd *par;
	struct ibv_mr *mr;
	struct ibv_qp *qa, *qb;
	struct ibv_cq_ex *cq;
	struct ibv_wc wc;
	struct vt t;

	vt_init(&t, NULL);
	REQUIRE(!ibv_alloc_td(t.ctx, &ta) && errno == EINVAL);
	ta.comp_mask = 0;
	td = ibv_alloc_td(t.ctx, &ta);
	REQUIRE(td);
	memset(&pa, 0, sizeof(pa));
	REQUIRE(!ibv_alloc_parent_domain(t.ctx, &pa) && errno == EINVAL); /* no PD */
	pa.pd = t.pd;
	pa.td = td;
	pa.comp_mask = 1u << 7;
	REQUIRE(!ibv_alloc_parent_domain(t.ctx, &pa) && errno == EINVAL);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = pd_alloc;
	pa.free = pd_free;
	pa.pd_context = &t;
	par = ibv_alloc_parent_domain(t.ctx, &pa);
	REQUIRE(par && par->context == t.ctx && par->handle == t.pd->handle);
	pa.pd = par;
	REQUIRE(!ibv_alloc_parent_domain(t.ctx, &pa) && errno == EINVAL); /* nested */
	/* a CQ with the PD mask wants a parent domain */
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 64;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = t.pd;
	REQUIRE(!ibv_create_cq_ex(t.ctx, &ca) && errno == EINVAL);
	ca.parent_domain = par;
	cq = ibv_create_cq_ex(t.ctx, &ca);
	REQUIRE(cq);
	/* QPs and an MR on the parent domain; traffic with the PD's MR */
	struct vt p = t;
	p.pd = par;
	qa = vt_qp(&p, IBV_QPT_RC, ibv_cq_ex_to_cq(cq), ibv_cq_ex_to_cq(cq), NULL, 8, 8);
	qb = vt_qp(&p, IBV_QPT_RC, ibv_cq_ex_to_cq(cq), ibv_cq_ex_to_cq(cq), NULL, 8, 8);
	REQUIRE(qa && qb && qa->pd == par);
	vt_connect(&t, qa, qb);
	mr = ibv_reg_mr(par, t.buf + 32768, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr && mr->pd == par);
	fill(t.buf, 64);
	REQUIRE(!vt_post_send(qa, t.mr, IBV_WR_RDMA_WRITE, 0, 64, IBV_SEND_SIGNALED, 0,
			    (uintptr_t)t.buf + 32768, mr->rkey, 1));
	vt_poll_n(ibv_cq_ex_to_cq(cq), 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && !memcmp(t.buf, t.buf + 32768, 64));
	/* in use: the PD under a parent domain, the TD of one, the parent
	 * domain with QPs and a CQ on it (mlx5 counts those two) */
	REQUIRE(ibv_dealloc_pd(t.pd) == EBUSY);
	REQUIRE(ibv_dealloc_td(td) == EBUSY);
	REQUIRE(pd_allocs == 0); /* uroce takes no queue memory from the process */
	REQUIRE(ibv_dealloc_pd(par) == EBUSY);
	REQUIRE(!ibv_destroy_qp(qa) && !ibv_destroy_qp(qb));
	REQUIRE(ibv_dealloc_pd(par) == EBUSY);
	REQUIRE(!ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	/* an MR on it is not counted, and lives on as the PD's */
	REQUIRE(!ibv_dealloc_pd(par));
	REQUIRE(!ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE));
	REQUIRE(!ibv_dereg_mr(mr));
	REQUIRE(!ibv_dealloc_td(td));
	vt_fini(&t); /* deallocates the PD: no longer busy */
}

/* every access flag of libibverbs 44 on ibv_reg_mr, as mlx5 (and the
 * kernel's ib_check_mr_access) answer: known flags and the optional range
 * accepted (remote write / atomic only with local write), bits outside
 * refused, ON_DEMAND and the FLUSH flags as the device says it has them */
static void access_flags(void)
{
	static const unsigned ok[] = {
		0, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_MW_BIND,
		IBV_ACCESS_ZERO_BASED, IBV_ACCESS_HUGETLB, IBV_ACCESS_RELAXED_ORDERING,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING,
	};
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr;
	struct vt t;

	vt_init(&t, NULL);
	REQUIRE(!ibv_query_device_ex(t.ctx, NULL, &dx));
	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		mr = ibv_reg_mr(t.pd, t.buf, 4096, (int)ok[i]);
		if (!mr)
			fprintf(stderr, "access 0x%x refused\n", ok[i]);
		REQUIRE(mr && !ibv_dereg_mr(mr));
	}
	for (unsigned b = 20; b < 30; b++) { /* the optional range: hints */
		mr = ibv_reg_mr(t.pd, t.buf, 4096, (int)(IBV_ACCESS_LOCAL_WRITE | 1u << b));
		REQUIRE(mr && !ibv_dereg_mr(mr));
	}
	REQUIRE(!ibv_reg_mr(t.pd, t.buf, 4096, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL);
	REQUIRE(!ibv_reg_mr(t.pd, t.buf, 4096, IBV_ACCESS_REMOTE_ATOMIC) && errno == EINVAL);
	for (unsigned b = 10; b < 20; b++) {
		mr = ibv_reg_mr(t.pd, t.buf, 4096, (int)(1u << b));
		REQUIRE(!mr && errno == EINVAL);
	}
	mr = ibv_reg_mr(t.pd, t.buf, 4096, (int)(1u << 30));
	REQUIRE(!mr && errno == EINVAL);
	/* with the capability, accepted (without it the kernel says
	 * EOPNOTSUPP: not asserted here, ODP is another branch's) */
	if (dx.odp_caps.general_caps & IBV_ODP_SUPPORT) {
		mr = ibv_reg_mr(t.pd, t.buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
		REQUIRE(mr && !ibv_dereg_mr(mr));
	}
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "bounds", bounds },
	{ "free_busy", free_busy },
	{ "traffic", traffic },
	{ "isolation", isolation },
	{ "limits", limits },
	{ "fork_alloc", fork_alloc },
	{ "parent_domain", parent_domain },
	{ "access_flags", access_flags },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
