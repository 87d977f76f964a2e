/* SPDX-License-Identifier: MIT */
/* Timers and recovery: RNR timer and rnr_retry 0..7, ACK coalescing bound
 * and AckReq, go-back-N of READ responses from the middle, CNP generation
 * and accounting, per-QP counters. Usage: test_recovery <name>. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

static int set_attr(struct emu_qp *qp, struct ibv_qp_attr *at, int mask)
{
	struct ibv_qp_attr s;
	int r;

	/* through SQD, where every RC attribute may change */
	memset(&s, 0, sizeof(s));
	s.qp_state = IBV_QPS_SQD;
	r = emu_qp_modify(qp, &s, IBV_QP_STATE);
	at->qp_state = IBV_QPS_SQD;
	r = r ? r : emu_qp_modify(qp, at, IBV_QP_STATE | mask);
	s.qp_state = IBV_QPS_RTS;
	return r ? r : emu_qp_modify(qp, &s, IBV_QP_STATE);
}

/* ---- RNR ---- */
#define LOGN 4096
static uint64_t log_t[LOGN];
static uint8_t log_op[LOGN];
static uint8_t log_to[LOGN];
static uint8_t log_ackreq[LOGN];
static uint32_t log_psn[LOGN];
static uint8_t log_syn[LOGN];
static int nlog;

static bool log_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (nlog < LOGN && xt_parse(frame, len, &p)) {
		log_t[nlog] = sim_now;
		log_op[nlog] = p.bth.opcode;
		log_to[nlog] = (uint8_t)to;
		log_ackreq[nlog] = p.bth.ackreq;
		log_psn[nlog] = p.bth.psn;
		log_syn[nlog] = (p.hdrs & WIRE_HDR_AETH) ? p.aeth.syndrome : 0;
		nlog++;
	}
	return true;
}

static int t_rnr_timer(void)
{
	static const uint8_t codes[] = { 1, 14, 31, 0 };

	for (unsigned k = 0; k < sizeof(codes); k++) {
		struct pair p;
		struct ibv_qp_attr at;
		uint64_t want = (uint64_t)wire_rnr_timer_us(codes[k]) * 1000u;
		int i, naks = 0;

		if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
			return 1;
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTS;
		at.min_rnr_timer = codes[k];
		CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
		memset(&at, 0, sizeof(at));
		at.rnr_retry = 3;
		CHECK_EQ(set_attr(p.a.qp, &at, IBV_QP_RNR_RETRY), 0);
		nlog = 0;
		sim_hook = log_hook;
		xt_post(&p, 1, IBV_WR_SEND, 0, 10, 0);
		sim_run(&p.s, 10ull * 1000000000ull);
		/* every RNR NAK carries the timer; the retry waits exactly that long */
		for (i = 0; i < nlog; i++) {
			if (log_to[i] != 0 || log_op[i] != WIRE_OP_RC_ACK)
				continue;
			CHECK_EQ(log_syn[i], wire_aeth_rnr_nak(codes[k]));
			naks++;
			if (i + 1 < nlog && naks <= 3) {
				CHECK_EQ(log_op[i + 1], WIRE_OP_RC_SEND_ONLY);
				CHECK_EQ(log_t[i + 1] - log_t[i], want);
			}
		}
		CHECK_EQ(naks, 4);
		pair_fini(&p);
	}
	CHECK_EQ(wire_rnr_timer_us(0), 655360);
	CHECK_EQ(wire_rnr_timer_us(1), 10);
	CHECK_EQ(wire_rnr_timer_us(31), 491520);
	return 0;
}

static int t_rnr_retry(void)
{
	for (unsigned n = 0; n <= 7; n++) {
		struct pair p;
		struct ibv_qp_attr at;
		struct uroce_cqe c[4];

		if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
			return 1;
		memset(&at, 0, sizeof(at));
		at.rnr_retry = (uint8_t)n;
		CHECK_EQ(set_attr(p.a.qp, &at, IBV_QP_RNR_RETRY), 0);
		xt_fill(p.ma.buf, 64, n);
		xt_post(&p, 1, IBV_WR_SEND, 0, 64, 0);
		if (n < 7) {
			sim_run(&p.s, 10ull * 1000000000ull);
			CHECK_EQ(p.a.qp->x.cnt.rnr_naks_rcvd, n + 1);
			CHECK_EQ(p.b.qp->x.cnt.rnr_naks_sent, n + 1);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
			CHECK_EQ(c[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
			CHECK_EQ(p.a.qp->x.cnt.rnr_retry_exceeded, 1);
		} else {
			struct uroce_sge s = xt_sge(&p.mb, 0, 64);

			/* 7 = forever: 10 ms of 10 us NAKs, still trying */
			sim_run(&p.s, 10000000ull);
			CHECK(p.a.qp->x.cnt.rnr_naks_rcvd > 100);
			CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 0);
			sim_post_recv(&p.b, 9, &s, 1);
			sim_run(&p.s, 1000000000ull);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
			CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
			CHECK(!memcmp(p.ma.buf, p.mb.buf, 64));
		}
		pair_fini(&p);
	}
	return 0;
}

/* ---- ACK coalescing ---- */
static int t_ack_coalesce(void)
{
	struct pair p;
	struct uroce_cqe c[16];
	int i, j, nreq = 0, nack = 0, nackreq = 0;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 20))
		return 1;
	nlog = 0;
	sim_hook = log_hook;
	xt_fill(p.ma.buf, 1 << 19, 1);
	for (i = 0; i < 8; i++)
		xt_post(&p, (uint64_t)i, IBV_WR_RDMA_WRITE, (uint32_t)i * 40960, 40000,
			(uint32_t)i * 40960);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 16), 8);
	for (i = 0; i < nlog; i++) {
		if (log_to[i] == 1) {
			nreq++;
			if (!log_ackreq[i])
				continue;
			nackreq++;
			/* honoured: an ACK covering it follows within the bound */
			for (j = i + 1; j < nlog; j++)
				if (log_to[j] == 0 && log_op[j] == WIRE_OP_RC_ACK &&
				    !wire_psn_before(log_psn[j], log_psn[i]))
					break;
			CHECK(j < nlog);
			if (j < nlog)
				CHECK(log_t[j] - log_t[i] <= EMU_XPORT_ACK_DELAY_NS);
		} else if (log_op[i] == WIRE_OP_RC_ACK) {
			nack++;
		}
	}
	CHECK_EQ(nreq, 8 * 40);
	/* the requester asks at least every EMU_XPORT_ACK_EVERY packets ... */
	CHECK(nackreq >= nreq / EMU_XPORT_ACK_EVERY);
	/* ... and the responder coalesces: fewer ACKs than AckReqs */
	CHECK(nack >= 1 && nack <= nackreq);
	CHECK(nack < nreq / 4);
	pair_fini(&p);
	return 0;
}

/* ---- READ responses lost in the middle: re-READ from there ---- */
static int gbn_dropped;
static uint32_t gbn_first_psn;
static int gbn_rereq, gbn_resp_after;
static uint64_t gbn_va;

static bool gbn_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 1 && p.bth.opcode == WIRE_OP_RC_READ_REQ && p.bth.psn != gbn_first_psn) {
		/* the re-issued request starts at the lost response */
		CHECK_EQ(p.bth.psn, wire_psn_add(gbn_first_psn, 3));
		CHECK_EQ(p.reth.va, gbn_va + 3 * 1024);
		CHECK_EQ(p.reth.dma_len, 8000 - 3 * 1024);
		gbn_rereq++;
	}
	if (to == 0 && p.op->cls == WIRE_OPC_READ_RESP) {
		if (p.bth.psn == wire_psn_add(gbn_first_psn, 3) && !gbn_dropped) {
			gbn_dropped = 1;
			return false;
		}
		if (gbn_rereq)
			gbn_resp_after++;
	}
	return true;
}

static int t_read_gbn(void)
{
	struct pair p;
	struct uroce_cqe c[4];

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	xt_fill(p.mb.buf, 16384, 5);
	gbn_first_psn = p.a.qp->x.sq_psn_max;
	gbn_va = (uintptr_t)p.mb.buf + 4096;
	sim_hook = gbn_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, 8000, 4096);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(gbn_dropped, 1);
	CHECK_EQ(gbn_rereq, 1);
	CHECK_EQ(gbn_resp_after, 5); /* responses 3..7 once more, not 0..7 */
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, (uint8_t *)p.mb.buf + 4096, 8000));
	CHECK_EQ(p.a.qp->x.cnt.timeouts, 0);       /* no timer needed */
	CHECK(p.a.qp->x.cnt.retransmits >= 1);
	CHECK_EQ(p.b.qp->x.cnt.dup_requests, 1);
	pair_fini(&p);
	return 0;
}

/* ---- CNP ---- */
static int cnp_seen, cnp_bad;
static uint64_t cnp_last_t;
static uint32_t cnp_dqpn;

static bool cnp_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 1 && (p.op->flags & WIRE_OPF_REQ)) {
		p.ip.tos |= WIRE_ECN_CE; /* a congested switch marks it */
		xt_rebuild(frame, len, &p);
	}
	if (p.bth.opcode == WIRE_OP_CNP) {
		CHECK_EQ(to, 0);
		if (!p.bth.becn || p.bth.pkey != 0xffff || p.bth.psn != 0 ||
		    p.bth.dqpn != cnp_dqpn || (p.ip.tos & WIRE_ECN_MASK) == WIRE_ECN_CE)
			cnp_bad++;
		for (unsigned i = 0; i < WIRE_CNP_RESV_LEN; i++)
			cnp_bad += p.cnp_resv[i] != 0;
		if (cnp_seen && sim_now - cnp_last_t < EMU_XPORT_CNP_INTERVAL_NS)
			cnp_bad++;
		cnp_seen++;
		cnp_last_t = sim_now;
	}
	return true;
}

static int t_cnp(void)
{
	struct pair p;
	struct uroce_cqe c[32];
	struct emu_xport_counters ca, cb;
	int i;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	cnp_dqpn = p.a.qp->qpn;
	sim_hook = cnp_hook;
	for (i = 0; i < 20; i++) {
		xt_post(&p, (uint64_t)i, IBV_WR_RDMA_WRITE, 0, 3000, 0);
		sim_run(&p.s, 1000000000ull);
		sim_now += EMU_XPORT_CNP_INTERVAL_NS + 1000;
	}
	CHECK_EQ(sim_poll(p.a.scq, c, 32), 20);
	emu_xport_qp_counters(p.a.qp, &ca);
	emu_xport_qp_counters(p.b.qp, &cb);
	CHECK_EQ(cb.ce_rcvd, 60);
	CHECK_EQ(cb.cnp_sent, 20);   /* one per burst: the rest rate-limited */
	CHECK_EQ(ca.cnp_rcvd, 20);
	CHECK_EQ(cnp_seen, 20);
	CHECK_EQ(cnp_bad, 0);
	CHECK_EQ(ca.rx_dropped, 0);
	pair_fini(&p);
	return 0;
}

/* ---- counters ---- */
static int cnt_dropped;

static bool cnt_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to == 1 && !cnt_dropped && xt_parse(frame, len, &p) &&
	    p.bth.opcode == WIRE_OP_RC_WRITE_MIDDLE) {
		cnt_dropped = 1;
		return false;
	}
	return true;
}

static int t_counters(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_xport_counters ca, cb;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	sim_hook = cnt_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 10 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	emu_xport_qp_counters(p.a.qp, &ca);
	emu_xport_qp_counters(p.b.qp, &cb);
	/* packet 1 lost: 2..9 arrive out of sequence, one NAK, go-back-N */
	CHECK_EQ(cb.out_of_seq, 8);
	CHECK_EQ(cb.seq_naks_sent, 1);
	CHECK_EQ(ca.seq_naks_rcvd, 1);
	CHECK_EQ(ca.retransmits, 9);
	CHECK_EQ(ca.timeouts, 0);
	CHECK_EQ(cb.dup_requests, 0);
	CHECK_EQ(ca.tx_pkts, 19);
	CHECK_EQ(cb.rx_pkts, 18);
	/* once more, every packet twice (a duplicating link) */
	sim_hook = NULL;
	{
		struct emu_fault_cfg dup = { 0, 1.0, 0, 0, 0, 1 };

		sim_fault(&p.s, 1, &dup);
	}
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 4 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	emu_xport_qp_counters(p.b.qp, &cb);
	CHECK_EQ(cb.dup_requests, 4);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "rnr_timer", t_rnr_timer },
	{ "rnr_retry", t_rnr_retry },
	{ "ack_coalesce", t_ack_coalesce },
	{ "read_gbn", t_read_gbn },
	{ "cnp", t_cnp },
	{ "counters", t_counters },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
