/* SPDX-License-Identifier: MIT */
/* Ordering and send-queue states: IBV_SEND_FENCE, the max_rd_atomic limit
 * counted on the wire, max_dest_rd_atomic 0 at the responder, SQD drain and
 * resume, SQE and its recovery. Usage: test_order <name>. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

static int set_sqd(struct emu_qp *qp, bool notify)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_SQD;
	at.en_sqd_async_notify = notify;
	return emu_qp_modify(qp, &at, IBV_QP_STATE | (notify ? IBV_QP_EN_SQD_ASYNC_NOTIFY : 0));
}

static int set_state(struct emu_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = s;
	return emu_qp_modify(qp, &at, IBV_QP_STATE);
}

/* ---- FENCE ---- */
static int fence_read_done, fence_violations, fence_unfenced_early;
static uint32_t fence_write_psn, fence_plain_psn;

static bool fence_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 0 && (p.bth.opcode == WIRE_OP_RC_READ_RESP_LAST))
		fence_read_done++;
	if (to == 1 && p.bth.opcode == WIRE_OP_RC_WRITE_ONLY) {
		if (p.bth.psn == fence_write_psn && fence_read_done < 1)
			fence_violations++;
		if (p.bth.psn == fence_plain_psn && fence_read_done < 1)
			fence_unfenced_early++;
	}
	return true;
}

static int t_fence(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[8];
	int n;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	xt_fill(p.mb.buf, 8192, 3);
	sim_hook = fence_hook;
	/* READ 8 KB, a plain WRITE (may pass the READ), a fenced WRITE (may not) */
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, 8192, 0);
	fence_plain_psn = wire_psn_add(p.a.qp->x->sq_psn_max, 0);
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 16384, 64, 16384);
	fence_write_psn = p.a.qp->x->sq_psn_max;
	xt_wqe(&w, 3, IBV_WR_RDMA_WRITE, 1);
	w.send_flags |= IBV_SEND_FENCE;
	w.rdma.remote_addr = (uintptr_t)p.mb.buf + 20000;
	w.rdma.rkey = p.mb.rkey;
	s = xt_sge(&p.ma, 20000, 64);
	sim_post_send(&p.a, &w, &s, NULL);
	CHECK_EQ(p.a.qp->x->sq_req, 2);  /* held behind the READ */
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(fence_violations, 0);
	CHECK_EQ(fence_unfenced_early, 1);
	CHECK_EQ(fence_read_done, 1);
	n = sim_poll(p.a.scq, c, 8);
	CHECK_EQ(n, 3);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(c[i].wr_id, i + 1);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	CHECK(!memcmp(p.ma.buf, p.mb.buf, 8192));
	pair_fini(&p);
	return 0;
}

/* ---- max_rd_atomic on the wire ---- */
static int rd_out, rd_max;
static uint32_t rd_seen_psn[64];
static int rd_nseen;

static bool rd_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;
	int i;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 1 && (p.op->cls == WIRE_OPC_READ || p.op->cls == WIRE_OPC_ATOMIC)) {
		for (i = 0; i < rd_nseen; i++)
			if (rd_seen_psn[i] == p.bth.psn)
				return true; /* a retransmission is not a new request */
		if (rd_nseen < 64)
			rd_seen_psn[rd_nseen++] = p.bth.psn;
		if (++rd_out > rd_max)
			rd_max = rd_out;
	}
	if (to == 0 && (p.bth.opcode == WIRE_OP_RC_READ_RESP_LAST ||
			p.bth.opcode == WIRE_OP_RC_READ_RESP_ONLY ||
			p.bth.opcode == WIRE_OP_RC_ATOMIC_ACK))
		rd_out--;
	return true;
}

static int t_rd_atomic_limit(void)
{
	struct pair p;
	struct ibv_qp_attr at;
	struct uroce_cqe c[32];
	int i, n;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 17))
		return 1;
	/* SQD -> SQD may change max_rd_atomic (and more) */
	CHECK_EQ(set_sqd(p.a.qp, false), 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_SQD;
	at.max_rd_atomic = 2;
	CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	CHECK_EQ(set_state(p.a.qp, IBV_QPS_RTS), 0);
	xt_fill(p.mb.buf, 1 << 16, 9);
	sim_hook = rd_hook;
	for (i = 0; i < 12; i++) {
		if (i % 3 == 2)
			xt_post(&p, (uint64_t)i, IBV_WR_ATOMIC_FETCH_AND_ADD, 70000 + (uint32_t)i * 8, 8,
				100000);
		else
			xt_post(&p, (uint64_t)i, IBV_WR_RDMA_READ, (uint32_t)i * 4096, 3000,
				(uint32_t)i * 4096);
		/* a non-READ between them is not held by the limit */
		if (i == 5)
			xt_post(&p, 100, IBV_WR_RDMA_WRITE, 90000, 100, 90000);
	}
	CHECK_EQ(p.a.qp->x->rd_atomic_out, 2);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(rd_max, 2);
	CHECK_EQ(rd_out, 0);
	n = sim_poll(p.a.scq, c, 32);
	CHECK_EQ(n, 13);
	for (i = 0; i < n; i++)
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	for (i = 0; i < 12; i++)
		if (i % 3 != 2)
			CHECK(!memcmp((uint8_t *)p.ma.buf + i * 4096, (uint8_t *)p.mb.buf + i * 4096,
				      3000));
	CHECK_EQ(*(uint64_t *)((uint8_t *)p.mb.buf + 100000), 4);
	pair_fini(&p);
	return 0;
}

/* ---- max_dest_rd_atomic 0: READ / atomic NAKed invalid request ---- */
static int t_dest_rd_atomic0(void)
{
	static const uint8_t ops[] = { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP };

	for (unsigned k = 0; k < 2; k++) {
		struct pair p;
		struct ibv_qp_attr at;
		struct uroce_cqe c[8];
		int n;

		if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
			return 1;
		CHECK_EQ(set_sqd(p.b.qp, false), 0);
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_SQD;
		at.max_dest_rd_atomic = 0;
		CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC), 0);
		CHECK_EQ(set_state(p.b.qp, IBV_QPS_RTS), 0);
		xt_post(&p, 1, ops[k], 0, 8, 64);
		xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 8, 128);
		sim_run(&p.s, 1000000000ull);
		n = sim_poll(p.a.scq, c, 8);
		CHECK_EQ(n, 2);
		if (n == 2) {
			CHECK_EQ(c[0].status, IBV_WC_REM_INV_REQ_ERR);
			CHECK_EQ(c[1].status, IBV_WC_WR_FLUSH_ERR);
		}
		CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
		CHECK_EQ(xt_events(&p.s.n[1], IBV_EVENT_QP_REQ_ERR), 1);
		CHECK_EQ(p.a.qp->x->cnt.naks_rcvd, 1);
		pair_fini(&p);
	}
	return 0;
}

/* ---- SQD ---- */
static bool drop_acks(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	return !(to == 0 && xt_parse(frame, len, &p) && p.bth.opcode == WIRE_OP_RC_ACK);
}

static int t_sqd(void)
{
	struct pair p;
	struct ibv_qp_attr at, q;
	struct uroce_cqe c[64];
	uint64_t frames;
	int i, n;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 18))
		return 1;
	xt_fill(p.ma.buf, 1 << 17, 4);
	/* the whole send window open from the start (it starts small and
	 * grows with the ACKs: xp_cwnd), so all 80 packets go at once */
	p.a.qp->x->cwnd = XP_GBN_WIN_MAX;
	for (i = 0; i < 20; i++)
		xt_post(&p, (uint64_t)i, IBV_WR_RDMA_WRITE, (uint32_t)i * 4096, 4000,
			(uint32_t)i * 4096);
	/* everything is on the wire, nothing acknowledged */
	CHECK_EQ(set_sqd(p.a.qp, true), 0);
	CHECK_EQ(emu_qp_query(p.a.qp, &q, 0), 0);
	CHECK_EQ(q.qp_state, IBV_QPS_SQD);
	CHECK_EQ(q.sq_draining, 1);
	CHECK_EQ(xt_events(&p.s.n[0], IBV_EVENT_SQ_DRAINED), 0);
	/* ACKs lost: still draining (retransmits happen in SQD) */
	sim_hook = drop_acks;
	sim_run(&p.s, 200000000ull);
	CHECK(p.a.qp->x->cnt.timeouts >= 1);
	CHECK_EQ(xt_events(&p.s.n[0], IBV_EVENT_SQ_DRAINED), 0);
	CHECK_EQ(emu_qp_query(p.a.qp, &q, 0), 0);
	CHECK_EQ(q.sq_draining, 1);
	sim_hook = NULL;
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(xt_events(&p.s.n[0], IBV_EVENT_SQ_DRAINED), 1);
	CHECK_EQ(emu_qp_query(p.a.qp, &q, 0), 0);
	CHECK_EQ(q.sq_draining, 0);
	CHECK_EQ(sim_poll(p.a.scq, c, 64), 20);
	for (i = 0; i < 20; i++)
		CHECK(!memcmp((uint8_t *)p.ma.buf + i * 4096, (uint8_t *)p.mb.buf + i * 4096, 4000));
	/* new WRs wait in SQD; attributes change */
	frames = p.s.frames;
	for (i = 20; i < 25; i++)
		xt_post(&p, (uint64_t)i, IBV_WR_RDMA_WRITE, (uint32_t)i * 4096, 4000,
			(uint32_t)i * 4096);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(p.s.frames, frames);
	CHECK_EQ(sim_poll(p.a.scq, c, 64), 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_SQD;
	at.timeout = 10;
	at.retry_cnt = 3;
	at.rnr_retry = 2;
	at.min_rnr_timer = 5;
	CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ(emu_qp_query(p.a.qp, &q, 0), 0);
	CHECK_EQ(q.timeout, 10);
	CHECK_EQ(q.retry_cnt, 3);
	CHECK_EQ(q.rnr_retry, 2);
	CHECK_EQ(q.min_rnr_timer, 5);
	CHECK_EQ(p.a.qp->x->retry_left, 3);
	at.qp_state = IBV_QPS_SQD;
	at.sq_psn = 5;           /* not modifiable in SQD */
	CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), -EINVAL);
	/* SQD -> RTS: the held WRs go */
	CHECK_EQ(set_state(p.a.qp, IBV_QPS_RTS), 0);
	sim_run(&p.s, 1000000000ull);
	n = sim_poll(p.a.scq, c, 64);
	CHECK_EQ(n, 5);
	for (i = 0; i < n; i++) {
		CHECK_EQ(c[i].wr_id, 20 + i);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	for (i = 0; i < 25; i++)
		CHECK(!memcmp((uint8_t *)p.ma.buf + i * 4096, (uint8_t *)p.mb.buf + i * 4096, 4000));
	pair_fini(&p);
	return 0;
}

/* ---- SQE: a local send error stops the SQ only; SQE -> RTS ---- */
static int t_sqe(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[8];
	int n;

	if (pair_setup(&p, IBV_QPT_UC, IBV_MTU_1024, 1 << 16))
		return 1;
	/* a bad lkey, then a good WR behind it */
	xt_wqe(&w, 1, IBV_WR_SEND, 1);
	s = xt_sge(&p.ma, 0, 100);
	s.lkey ^= 0x100;
	sim_post_send(&p.a, &w, &s, NULL);
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 100, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_SQE);
	n = sim_poll(p.a.scq, c, 8);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK_EQ(c[0].status, IBV_WC_LOC_PROT_ERR);
		CHECK_EQ(c[1].status, IBV_WC_WR_FLUSH_ERR);
	}
	/* posts in SQE are flushed */
	xt_post(&p, 3, IBV_WR_RDMA_WRITE, 0, 100, 0);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_WR_FLUSH_ERR);
	/* the receive side keeps working */
	xt_fill(p.mb.buf, 500, 8);
	s = xt_sge(&p.ma, 4096, 1000);
	sim_post_recv(&p.a, 77, &s, 1);
	xt_wqe(&w, 9, IBV_WR_SEND, 1);
	s = xt_sge(&p.mb, 0, 500);
	sim_post_send(&p.b, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.rcq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, 500);
	CHECK(!memcmp((uint8_t *)p.ma.buf + 4096, p.mb.buf, 500));
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_SQE);
	/* SQE -> RTS (cur_qp_state RTS is accepted as in rxe) and send again */
	{
		struct ibv_qp_attr at;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTS;
		at.cur_qp_state = IBV_QPS_SQE;
		CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	}
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	xt_fill(p.ma.buf, 300, 5);
	xt_post(&p, 4, IBV_WR_RDMA_WRITE, 0, 300, 8192);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].wr_id, 4);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, (uint8_t *)p.mb.buf + 8192, 300));
	/* RC: a local error is fatal for the whole QP */
	CHECK_EQ(set_state(p.a.qp, IBV_QPS_ERR), 0);
	pair_fini(&p);
	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	xt_wqe(&w, 1, IBV_WR_SEND, 1);
	s = xt_sge(&p.ma, 0, 100);
	s.lkey ^= 0x100;
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_ERR);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "fence", t_fence },
	{ "rd_atomic_limit", t_rd_atomic_limit },
	{ "dest_rd_atomic0", t_dest_rd_atomic0 },
	{ "sqd", t_sqd },
	{ "sqe", t_sqe },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
