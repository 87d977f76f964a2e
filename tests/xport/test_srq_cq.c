/* SPDX-License-Identifier: MIT */
/* Shared receive queues end to end, and CQ overrun.
 * Usage: test_srq_cq <name>; exit 0 pass, 1 fail. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

#define NQ 3
#define MSG 1500

struct srq_rig {
	struct sim s;
	struct sim_qp a[NQ], b[NQ];
	struct sim_mr ma, mb;
	struct emu_srq *srq;
	uint32_t srq_h;
};

static int srq_setup(struct srq_rig *r)
{
	int h, i;

	memset(r, 0, sizeof(*r));
	if (sim_init(&r->s))
		return -1;
	h = sim_srq(&r->s.n[1], 64, 2);
	if (h < 0)
		return -1;
	r->srq_h = (uint32_t)h;
	r->srq = emu_ctx_get(r->s.n[1].ctx, r->srq_h, EMU_OBJ_SRQ);
	if (sim_mr(&r->s.n[0], 1 << 20, ALL_ACCESS, &r->ma) ||
	    sim_mr(&r->s.n[1], 1 << 20, ALL_ACCESS, &r->mb))
		return -1;
	for (i = 0; i < NQ; i++)
		if (sim_qp(&r->s.n[0], IBV_QPT_RC, 64, &r->a[i], -1) ||
		    sim_qp(&r->s.n[1], IBV_QPT_RC, 64, &r->b[i], h) ||
		    sim_connect(&r->a[i], &r->b[i], IBV_MTU_1024) ||
		    sim_connect(&r->b[i], &r->a[i], IBV_MTU_1024))
			return -1;
	return 0;
}

static void srq_fini(struct srq_rig *r)
{
	sim_fini(&r->s);
	free(r->ma.buf);
	free(r->mb.buf);
}

/* SRQ receive k: 2048 B at k * 2048 of B's MR. */
static void srq_post(struct srq_rig *r, uint64_t k)
{
	struct uroce_sge s = xt_sge(&r->mb, k * 2048, 2048);

	sim_post_srq_recv(r->srq, 100 + k, &s, 1);
}

/* Message j of QP i: MSG bytes of A's MR at (i * 64 + j) * 2048. */
static void srq_send(struct srq_rig *r, int i, int j)
{
	struct uroce_send_wqe w;
	uint32_t off = (uint32_t)(i * 64 + j) * 2048;
	struct uroce_sge s = xt_sge(&r->ma, off, MSG);

	xt_fill((uint8_t *)r->ma.buf + off, MSG, (uint32_t)(i * 64 + j));
	xt_wqe(&w, (uint64_t)j, IBV_WR_SEND, 1);
	sim_post_send(&r->a[i], &w, &s, NULL);
}

static void srq_limit(struct srq_rig *r, uint32_t limit)
{
	struct uroce_modify_srq_req q;

	memset(&q, 0, sizeof(q));
	q.handle = r->srq_h;
	q.attr_mask = IBV_SRQ_LIMIT;
	q.attr.srq_limit = limit;
	CHECK_EQ(emu_srq_modify(r->s.n[1].ctx, &q), 0);
}

/* Receives of B's QPs: each completion names its QP, every SRQ WQE is used
 * exactly once and holds the message that QP's peer sent, in order per QP. */
static int check_recvs(struct srq_rig *r, int per_qp, bool *used, int nused)
{
	int i, k, total = 0;

	for (i = 0; i < NQ; i++) {
		struct uroce_cqe c[64];
		int n = sim_poll(r->b[i].rcq, c, 64);

		CHECK_EQ(n, per_qp);
		for (k = 0; k < n; k++) {
			uint64_t slot = c[k].wr_id - 100;
			uint8_t want[MSG];

			CHECK_EQ(c[k].status, IBV_WC_SUCCESS);
			CHECK_EQ(c[k].qp_num, r->b[i].qp->qpn);
			CHECK_EQ(c[k].byte_len, MSG);
			if (slot >= (uint64_t)nused || used[slot]) {
				CHECK(!"SRQ WQE used twice or unknown");
				continue;
			}
			used[slot] = true;
			xt_fill(want, MSG, (uint32_t)(i * 64 + k));
			CHECK(!memcmp((uint8_t *)r->mb.buf + slot * 2048, want, MSG));
		}
		total += n;
	}
	return total;
}

static int t_srq_shared(void)
{
	struct srq_rig r;
	bool used[64] = { false };
	struct uroce_cqe c[64];
	int i, j;

	if (srq_setup(&r))
		return 1;
	for (i = 0; i < 12; i++)
		srq_post(&r, (uint64_t)i);
	srq_limit(&r, 5);
	for (j = 0; j < 4; j++)
		for (i = 0; i < NQ; i++)
			srq_send(&r, i, j);
	sim_run(&r.s, 1000000000ull);
	CHECK_EQ(check_recvs(&r, 4, used, 12), 12);
	for (i = 0; i < NQ; i++)
		CHECK_EQ(sim_poll(r.a[i].scq, c, 64), 4);
	/* one event per arm, although the count fell past the limit 5 times */
	CHECK_EQ(xt_events(&r.s.n[1], IBV_EVENT_SRQ_LIMIT_REACHED), 1);
	CHECK_EQ(r.srq->srq_limit, 0);

	/* an empty SRQ: RNR NAKs, then a post lets the retry through */
	srq_send(&r, 0, 4);
	sim_run(&r.s, 5000);
	CHECK(r.a[0].qp->x->cnt.rnr_naks_rcvd >= 1);
	for (i = 12; i < 20; i++)
		srq_post(&r, (uint64_t)i);
	srq_limit(&r, 4);
	sim_run(&r.s, 1000000000ull);
	CHECK_EQ(sim_poll(r.b[0].rcq, c, 64), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].wr_id, 112);
	CHECK_EQ(xt_events(&r.s.n[1], IBV_EVENT_SRQ_LIMIT_REACHED), 0); /* 7 left */
	for (j = 5; j < 9; j++)
		srq_send(&r, 1, j);
	sim_run(&r.s, 1000000000ull);
	CHECK_EQ(sim_poll(r.b[1].rcq, c, 64), 4);
	CHECK_EQ(xt_events(&r.s.n[1], IBV_EVENT_SRQ_LIMIT_REACHED), 1); /* 3 < 4 */

	/* b[0] to ERR: LAST_WQE_REACHED; the SRQ keeps its WQEs for the others */
	{
		struct ibv_qp_attr at;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_ERR;
		CHECK_EQ(emu_qp_modify(r.b[0].qp, &at, IBV_QP_STATE), 0);
	}
	CHECK_EQ(xt_events(&r.s.n[1], IBV_EVENT_QP_LAST_WQE_REACHED), 1);
	CHECK_EQ(sim_poll(r.b[0].rcq, c, 64), 0);  /* nothing of the SRQ flushed */
	CHECK_EQ(emu_ring_pending(&r.srq->rq), 3);
	for (j = 9; j < 12; j++)
		srq_send(&r, 2, j);
	sim_run(&r.s, 1000000000ull);
	CHECK_EQ(sim_poll(r.b[2].rcq, c, 64), 3);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[i].wr_id, 117 + (uint64_t)i);
	}
	srq_fini(&r);
	return 0;
}

/* An SRQ QP that fails in the middle of a message flushes the receive it
 * had taken (it is this QP's now), and only that one. */
static bool drop_after_first(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (to != 1 || !xt_parse(frame, len, &pkt))
		return true;
	return pkt.bth.opcode != WIRE_OP_RC_SEND_MIDDLE && pkt.bth.opcode != WIRE_OP_RC_SEND_LAST;
}

static int t_srq_err_midmsg(void)
{
	struct srq_rig r;
	struct uroce_cqe c[8];
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct ibv_qp_attr at;
	int i;

	if (srq_setup(&r))
		return 1;
	for (i = 0; i < 4; i++)
		srq_post(&r, (uint64_t)i);
	sim_hook = drop_after_first;
	xt_wqe(&w, 1, IBV_WR_SEND, 1);
	s = xt_sge(&r.ma, 0, 3000);
	sim_post_send(&r.a[0], &w, &s, NULL);
	sim_run(&r.s, 1000); /* FIRST arrives, the rest is lost; no timeout yet */
	sim_hook = NULL;
	CHECK_EQ(r.b[0].qp->x->rwqe_valid, 1);
	CHECK_EQ(emu_ring_pending(&r.srq->rq), 3);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	CHECK_EQ(emu_qp_modify(r.b[0].qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(sim_poll(r.b[0].rcq, c, 8), 1);
	CHECK_EQ(c[0].wr_id, 100);
	CHECK_EQ(c[0].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(emu_ring_pending(&r.srq->rq), 3);
	CHECK_EQ(xt_events(&r.s.n[1], IBV_EVENT_QP_LAST_WQE_REACHED), 1);
	srq_fini(&r);
	return 0;
}

/* ---- CQ overrun ---- */
static int t_cq_overrun_send(void)
{
	struct sim s;
	struct sim_qp a, b;
	struct sim_mr ma, mb;
	struct ibv_qp_cap cap = { 64, 64, 2, 2, 0 };
	struct uroce_cqe c[256];
	uint32_t cap_a, i, prod;
	int n;

	if (sim_init(&s) || sim_qp_cap(&s.n[0], IBV_QPT_RC, &cap, 4, &a, -1) ||
	    sim_qp(&s.n[1], IBV_QPT_RC, 64, &b, -1) || sim_mr(&s.n[0], 1 << 16, ALL_ACCESS, &ma) ||
	    sim_mr(&s.n[1], 1 << 16, ALL_ACCESS, &mb) || sim_connect(&a, &b, IBV_MTU_1024) ||
	    sim_connect(&b, &a, IBV_MTU_1024))
		return 1;
	cap_a = a.scq->entries;
	for (i = 0; i < cap_a + 3; i++) {
		struct uroce_send_wqe w;
		struct uroce_sge sg = xt_sge(&ma, i * 64, 64);

		xt_wqe(&w, i, IBV_WR_RDMA_WRITE, 1);
		w.rdma.remote_addr = (uintptr_t)mb.buf + i * 64;
		w.rdma.rkey = mb.rkey;
		sim_post_send(&a, &w, &sg, NULL);
	}
	sim_run(&s, 1000000000ull);
	CHECK(a.scq->error);
	CHECK(a.scq->hdr->flags & UROCE_RING_F_ERROR);
	CHECK_EQ(xt_events(&s.n[0], IBV_EVENT_CQ_ERR) , 1);
	CHECK_EQ(a.qp->attr.qp_state, IBV_QPS_ERR);
	/* IBV_EVENT_QP_FATAL was read together with CQ_ERR above: read again */
	CHECK_EQ(b.qp->attr.qp_state, IBV_QPS_RTS);
	n = sim_poll(a.scq, c, 256);
	CHECK_EQ((uint32_t)n, cap_a);
	for (i = 0; i < (uint32_t)n; i++) {
		CHECK_EQ(c[i].wr_id, i);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	/* every WR retired exactly once: the SQ consumer index equals prod */
	CHECK_EQ(a.qp->sq.hdr->cons, a.qp->sq.hdr->prod);
	CHECK_EQ(a.qp->x->sq_comp, a.qp->x->sq_fetch);
	/* the CQ stays dead: nothing more lands in it, posting still terminates */
	prod = a.scq->hdr->prod;
	for (i = 0; i < 5; i++) {
		struct uroce_send_wqe w;

		xt_wqe(&w, 1000 + i, IBV_WR_SEND, 0);
		sim_post_send(&a, &w, NULL, NULL);
	}
	sim_run(&s, 1000000000ull);
	CHECK_EQ(a.scq->hdr->prod, prod);
	CHECK_EQ(a.qp->x->sq_comp, a.qp->x->sq_fetch);
	CHECK_EQ(a.qp->sq.hdr->cons, a.qp->sq.hdr->prod);
	sim_fini(&s);
	free(ma.buf);
	free(mb.buf);
	return 0;
}

static int t_cq_overrun_recv(void)
{
	struct sim s;
	struct sim_qp a, b;
	struct sim_mr ma, mb;
	struct ibv_qp_cap cap = { 64, 64, 2, 2, 0 };
	struct uroce_async_event ev[16];
	struct uroce_cqe c[256];
	uint32_t cap_b, i;
	int k, n, fatal = 0, cqerr = 0;

	if (sim_init(&s) || sim_qp(&s.n[0], IBV_QPT_RC, 64, &a, -1) ||
	    sim_qp_cap(&s.n[1], IBV_QPT_RC, &cap, 4, &b, -1) ||
	    sim_mr(&s.n[0], 1 << 16, ALL_ACCESS, &ma) || sim_mr(&s.n[1], 1 << 16, ALL_ACCESS, &mb) ||
	    sim_connect(&a, &b, IBV_MTU_1024) || sim_connect(&b, &a, IBV_MTU_1024))
		return 1;
	cap_b = b.rcq->entries;
	for (i = 0; i < cap_b + 2; i++) {
		struct uroce_sge sg = xt_sge(&mb, i * 64, 64);
		struct uroce_send_wqe w;

		sim_post_recv(&b, 500 + i, &sg, 1);
		xt_wqe(&w, i, IBV_WR_SEND, 1);
		sg = xt_sge(&ma, i * 64, 64);
		sim_post_send(&a, &w, &sg, NULL);
	}
	sim_run(&s, 100000000000ull);
	k = sim_events(&s.n[1], ev, 16);
	for (n = 0; n < k; n++) {
		fatal += ev[n].event_type == IBV_EVENT_QP_FATAL;
		cqerr += ev[n].event_type == IBV_EVENT_CQ_ERR;
	}
	CHECK_EQ(cqerr, 1);
	CHECK_EQ(fatal, 1);
	CHECK_EQ(b.qp->attr.qp_state, IBV_QPS_ERR);
	CHECK(b.rcq->error);
	/* the sender learns nothing but silence: its retries run out */
	CHECK_EQ(a.qp->attr.qp_state, IBV_QPS_ERR);
	n = sim_poll(a.scq, c, 256);
	CHECK_EQ((uint32_t)n, cap_b + 2);
	for (i = 0; i < (uint32_t)n && i < cap_b; i++)
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	CHECK(n > 0 && c[n - 1].status != IBV_WC_SUCCESS);
	sim_fini(&s);
	free(ma.buf);
	free(mb.buf);
	return 0;
}

static const struct xt_test tests[] = {
	{ "srq_shared", t_srq_shared },
	{ "srq_err_midmsg", t_srq_err_midmsg },
	{ "cq_overrun_send", t_cq_overrun_send },
	{ "cq_overrun_recv", t_cq_overrun_recv },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
