/* SPDX-License-Identifier: MIT */
/* Timers and recovery: RNR timer and rnr_retry 0..7, ACK coalescing bound
 * and AckReq, go-back-N of READ responses from the middle, CNP generation
 * and accounting, per-QP counters. Usage: test_recovery <name>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_log.h>
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
			CHECK_EQ(p.a.qp->x->cnt.rnr_naks_rcvd, n + 1);
			CHECK_EQ(p.b.qp->x->cnt.rnr_naks_sent, n + 1);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
			CHECK_EQ(c[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
			CHECK_EQ(p.a.qp->x->cnt.rnr_retry_exceeded, 1);
		} else {
			struct uroce_sge s = xt_sge(&p.mb, 0, 64);

			/* 7 = forever: 10 ms of 10 us NAKs, still trying */
			sim_run(&p.s, 10000000ull);
			CHECK(p.a.qp->x->cnt.rnr_naks_rcvd > 100);
			CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 0);
			sim_post_recv(&p.b, 9, &s, 1);
			sim_run(&p.s, 1000000000ull);
			CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
			CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
			/* a small payload reaches the buffer when its receive
			 * completion is polled (CQ ring inline, abi.h) */
			CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
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
	gbn_first_psn = p.a.qp->x->sq_psn_max;
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
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);       /* no timer needed */
	CHECK(p.a.qp->x->cnt.retransmits >= 1);
	CHECK_EQ(p.b.qp->x->cnt.dup_requests, 1);
	pair_fini(&p);
	return 0;
}

/* ---- CNP ---- */
static int cnp_seen, cnp_bad;
static uint64_t cnp_last_t;
static uint32_t cnp_dqpn;

/* ---- a timer that expired while the port still holds frames ---- */
static bool hold_drop_acks;
static bool hold_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	(void)s;
	(void)frame;
	(void)len;
	return !(hold_drop_acks && to == 0); /* A's ACKs */
}

/* The engine was off its core past the retransmit timeout: the ACK may
 * sit in the port's RX backlog (d->rx_more: the last poll was a full
 * burst). The expired timer waits while that is so, at most
 * XP_RX_HOLD_TURNS turns, then fires. */
static int t_timer_rx_hold(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_dev *a;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	a = &p.s.n[0].dev;
	hold_drop_acks = true;
	sim_hook = hold_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 512, 0);
	sim_run(&p.s, 1000);          /* the WRITE goes, its ACK is lost */
	uint64_t at = p.a.qp->x->retrans_at;
	CHECK(at != 0);
	sim_now = at + 1;
	a->rx_more = 1;
	emu_xport_poll(a, sim_now);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	a->rx_more = XP_RX_HOLD_TURNS;
	emu_xport_poll(a, sim_now);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	a->rx_more = XP_RX_HOLD_TURNS + 1; /* held long enough: it fires */
	emu_xport_poll(a, sim_now);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 1);
	a->rx_more = 0;
	hold_drop_acks = false;
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	sim_hook = NULL;
	pair_fini(&p);
	return 0;
}

/* ---- what the engine's spin after RX asks (emu_xport_rx_expected) ---- */
static uint8_t exp_drop_op; /* drop frames of this opcode (0: none) */
static unsigned exp_acks_dropped, exp_acks_drop;
static bool exp_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (exp_drop_op && p.bth.opcode == exp_drop_op)
		return false;
	if (to == 0 && p.bth.opcode == WIRE_OP_RC_ACK && exp_acks_dropped < exp_acks_drop) {
		exp_acks_dropped++;
		return false;
	}
	return true;
}

/* A packet announces more only as a request that is not its message's
 * last or as a response that leaves packets of its QP unacknowledged: a
 * daemon spins after RX (yielding its core) only then, and sleeps after
 * a ping-pong's message and its ACK (engine.c). */
static int t_rx_expected(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_dev *a, *b;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	a = &p.s.n[0].dev;
	b = &p.s.n[1].dev;
	sim_hook = exp_hook;
	exp_drop_op = 0;
	/* a ping-pong's message: one packet, then its ACK */
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 512, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK(!emu_xport_rx_expected(b));
	CHECK(!emu_xport_rx_expected(a));
	/* a WRITE of three packets whose last is lost: the responder has
	 * seen its first and middle packets */
	exp_drop_op = WIRE_OP_RC_WRITE_LAST;
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 3000, 0);
	sim_run(&p.s, 1000);
	CHECK(emu_xport_rx_expected(b));
	exp_drop_op = 0;
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!emu_xport_rx_expected(b));
	CHECK(!emu_xport_rx_expected(a));
	/* a READ of three responses whose last is lost: the requester has
	 * its first two, the READ is not yet acknowledged */
	exp_drop_op = WIRE_OP_RC_READ_RESP_LAST;
	xt_post(&p, 3, IBV_WR_RDMA_READ, 0, 3000, 0);
	sim_run(&p.s, 1000);
	CHECK(emu_xport_rx_expected(a));
	CHECK(!emu_xport_rx_expected(b)); /* a READ request is one packet */
	exp_drop_op = 0;
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!emu_xport_rx_expected(a));
	sim_hook = NULL;
	pair_fini(&p);
	return 0;
}

/* The loss probe waits at least twice the longest recent round trip
 * (max_rtt_ns, forgetting 1/64 per sample; that term at most a quarter
 * of the retransmit timeout), not only 2 x SRTT + 4 x RTTVAR, which forget a slow round trip within a few samples: qperf
 * rc_lat between two daemons that sleep probed 1.5-2.5 % of its round
 * trips for nothing lost. */
static int t_probe_floor(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_xport_qp *x;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	x = p.a.qp->x;
	/* the sample: the longest recent one, decaying */
	x->srtt_ns = x->rttvar_ns = x->max_rtt_ns = 0;
	x->rtt_at = sim_now - 1000000;
	xp_rtt_end(x);
	CHECK_EQ(x->max_rtt_ns, 1000000);
	x->rtt_at = sim_now - 100000;
	xp_rtt_end(x);
	CHECK_EQ(x->max_rtt_ns, 1000000 - 1000000 / 64);
	sim_hook = exp_hook;
	exp_drop_op = 0;
	uint64_t rto = wire_retrans_timeout_ns(p.a.qp->attr.timeout);
	for (int k = 0; k < 3; k++) {
		/* round trips of 100 us, one of 1 ms lately (k = 0), none
		 * (k = 1), one of a whole retransmit timeout (k = 2) */
		static const uint64_t slow[3] = { 1000000, 0, 0 };
		x->srtt_ns = 100000;
		x->rttvar_ns = 10000;
		x->max_rtt_ns = (uint32_t)(k == 2 ? rto : slow[k]);
		exp_acks_dropped = 0;
		exp_acks_drop = 1; /* the WRITE's ACK is lost, the probe's not */
		uint64_t t0 = sim_now, p0 = x->cnt.probes;
		xt_post(&p, 10 + k, IBV_WR_RDMA_WRITE, 0, 512, 0);
		sim_run(&p.s, 1000);
		CHECK(x->probe_at != 0);
		/* k = 0: 2 x 1 ms; k = 1: the 250 us floor (2 x 100 + 4 x 10 us
		 * less); k = 2: a quarter of the retransmit timeout, not past it */
		uint64_t want = k == 0 ? 2000000 : k == 1 ? 250000 : rto / 4;
		CHECK(x->probe_at >= t0 + want && x->probe_at <= t0 + want + 1000);
		sim_run(&p.s, 1000000000ull);
		CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
		CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(x->cnt.probes, p0 + 1);
		CHECK_EQ(x->cnt.timeouts, 0);
	}
	sim_hook = NULL;
	pair_fini(&p);
	return 0;
}

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
	/* the notification point alone: a paced sender would spread each
	 * burst past the CNP interval (test_dcqcn has the reaction point) */
	p.s.n[0].dev.x->dcqcn.rp = 0;
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
		struct emu_fault_cfg dup = { .dup = 1.0, .seed = 1 };

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

/* ---- RNR under a pipelined stream (ib_send_bw -s 64 against a slow
 * receiver): hundreds of small SENDs in flight, receives posted in batches.
 * Everything behind the RNR'd packet is out of sequence; none of that may
 * spend retry_cnt, duplicate a message or reorder one. ---- */
#define PL_SQ      512u
#define PL_RQ      512u
#define PL_MSG     64u
#define PL_INFLIGHT 400u

/* peer_seqnak: act like a responder that also sends a PSN sequence NAK
 * for the packets behind every RNR NAK (rxe does): the requester must
 * not spend a retry on it. */
static int pl_peer_seqnak;
static uint64_t pl_seqnak_injected;

static bool pl_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;
	uint8_t copy[256];

	if (!pl_peer_seqnak || to != 0 || len > sizeof(copy) || !xt_parse(frame, len, &p) ||
	    p.bth.opcode != WIRE_OP_RC_ACK || wire_aeth_type(p.aeth.syndrome) != WIRE_AETH_RNR_NAK)
		return true;
	/* deliver the RNR NAK, then a sequence NAK for the same PSN */
	emu_port_rx_frame(&s->n[0].dev, frame, len);
	memcpy(copy, frame, len);
	if (!xt_parse(copy, len, &p))
		return false;
	p.aeth.syndrome = wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR);
	xt_rebuild(copy, len, &p);
	emu_port_rx_frame(&s->n[0].dev, copy, len);
	pl_seqnak_injected++;
	return false;
}

static void pl_payload(uint8_t *b, uint64_t seq)
{
	xt_fill(b, PL_MSG, (uint32_t)seq);
	memcpy(b, &seq, sizeof(seq));
}

/* Send n messages keeping up to PL_INFLIGHT outstanding; the receiver
 * posts batch receives every gap_ns. expect_fail: the receiver stops
 * after its first batch, so the requester must give up with
 * RNR_RETRY_EXC_ERR (never RETRY_EXC_ERR) after rnr_retry retries. */
static int pl_run(uint8_t rnr_retry, uint8_t retry_cnt, uint64_t gap_ns, unsigned n,
		  unsigned batch, bool expect_fail)
{
	struct pair p;
	struct ibv_qp_attr at;
	struct emu_xport_counters ca, cb;
	struct uroce_cqe c[64];
	const uint8_t rnr_code = 12; /* 0.64 ms, perftest's min_rnr_timer */
	const uint64_t wait_ns = (uint64_t)wire_rnr_timer_us(rnr_code) * 1000u;
	const uint64_t step = 50000;
	uint64_t sent = 0, scomp = 0, rposted = 0, rdone = 0, ok = 0, bad = 0, flushed = 0;
	uint64_t rnr_exc = 0, retry_exc = 0, gaps = 0, next_post, deadline;
	uint8_t want[PL_MSG];
	int k, i;

	memset(&p, 0, sizeof(p));
	if (sim_init(&p.s) || sim_qp(&p.s.n[0], IBV_QPT_RC, PL_SQ, &p.a, -1) ||
	    sim_qp(&p.s.n[1], IBV_QPT_RC, PL_RQ, &p.b, -1) ||
	    sim_mr(&p.s.n[0], PL_SQ * PL_MSG, ALL_ACCESS, &p.ma) ||
	    sim_mr(&p.s.n[1], PL_RQ * PL_MSG, ALL_ACCESS, &p.mb) ||
	    sim_connect(&p.a, &p.b, IBV_MTU_1024) || sim_connect(&p.b, &p.a, IBV_MTU_1024)) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.min_rnr_timer = rnr_code;
	CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&at, 0, sizeof(at));
	at.rnr_retry = rnr_retry;
	at.retry_cnt = retry_cnt;
	CHECK_EQ(set_attr(p.a.qp, &at, IBV_QP_RNR_RETRY | IBV_QP_RETRY_CNT), 0);
	pl_seqnak_injected = 0;
	sim_hook = pl_hook;

	next_post = sim_now;
	deadline = sim_now + (uint64_t)(n / batch + 2) * (gap_ns + 10 * wait_ns) + 1000000000ull;
	while ((scomp < n || rdone < rposted) && sim_now < deadline) {
		uint64_t end;

		/* receiver: one batch per gap (only the first if expect_fail) */
		if (sim_now >= next_post && rposted < n && (!expect_fail || !rposted)) {
			for (i = 0; i < (int)batch && rposted < n && rposted - rdone < PL_RQ; i++) {
				struct uroce_sge sg = xt_sge(&p.mb, (rposted % PL_RQ) * PL_MSG, PL_MSG);

				sim_post_recv(&p.b, rposted, &sg, 1);
				rposted++;
			}
			next_post += gap_ns;
			gaps++;
		}
		/* sender: keep the pipe full */
		while (sent < n && sent - scomp < PL_INFLIGHT) {
			struct uroce_send_wqe w;
			struct uroce_sge sg = xt_sge(&p.ma, (sent % PL_SQ) * PL_MSG, PL_MSG);

			pl_payload((uint8_t *)p.ma.buf + (sent % PL_SQ) * PL_MSG, sent);
			xt_wqe(&w, sent, IBV_WR_SEND, 1);
			sim_post_send(&p.a, &w, &sg, NULL);
			sent++;
		}
		end = sim_now + step;
		sim_run(&p.s, step);
		if (sim_now < end)
			sim_now = end;
		while ((k = sim_poll(p.a.scq, c, 64)) > 0) {
			for (i = 0; i < k; i++, scomp++) {
				/* completions strictly in posting order */
				CHECK_EQ(c[i].wr_id, scomp);
				if (c[i].status == IBV_WC_SUCCESS && !rnr_exc && !retry_exc && !flushed)
					ok++;
				else if (c[i].status == IBV_WC_RNR_RETRY_EXC_ERR)
					rnr_exc++;
				else if (c[i].status == IBV_WC_RETRY_EXC_ERR)
					retry_exc++;
				else if (c[i].status == IBV_WC_WR_FLUSH_ERR)
					flushed++;
				else
					bad++;
			}
		}
		while ((k = sim_poll(p.b.rcq, c, 64)) > 0) {
			for (i = 0; i < k; i++, rdone++) {
				uint64_t seq;
				const uint8_t *got = (const uint8_t *)p.mb.buf + (rdone % PL_RQ) * PL_MSG;

				/* each message exactly once, in order, intact */
				CHECK_EQ(c[i].wr_id, rdone);
				CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
				CHECK_EQ(c[i].byte_len, PL_MSG);
				memcpy(&seq, got, sizeof(seq));
				CHECK_EQ(seq, rdone);
				pl_payload(want, rdone);
				CHECK(!memcmp(got, want, PL_MSG));
			}
		}
		if (rnr_exc || retry_exc || bad)
			break;
	}
	sim_run(&p.s, 1000000000ull);
	while ((k = sim_poll(p.a.scq, c, 64)) > 0)
		for (i = 0; i < k; i++, scomp++)
			flushed += c[i].status == IBV_WC_WR_FLUSH_ERR;
	emu_xport_qp_counters(p.a.qp, &ca);
	emu_xport_qp_counters(p.b.qp, &cb);
	fprintf(stderr,
		"rnr_retry %u retry_cnt %u gap %llu us%s: ok %llu rcvd %llu rnr naks %llu "
		"seq naks %llu/%llu oos %llu dup %llu retrans %llu timeouts %llu\n",
		rnr_retry, retry_cnt, (unsigned long long)(gap_ns / 1000),
		pl_peer_seqnak ? " (peer seq NAKs)" : "", (unsigned long long)ok,
		(unsigned long long)rdone, (unsigned long long)ca.rnr_naks_rcvd,
		(unsigned long long)cb.seq_naks_sent, (unsigned long long)ca.seq_naks_rcvd,
		(unsigned long long)cb.out_of_seq, (unsigned long long)cb.dup_requests,
		(unsigned long long)ca.retransmits, (unsigned long long)ca.timeouts);

	CHECK_EQ(retry_exc, 0);
	CHECK_EQ(ca.retry_exceeded, 0);
	CHECK_EQ(bad, 0);
	/* the wire is lossless: no timer, no duplicate, nothing re-executed */
	CHECK_EQ(ca.timeouts, 0);
	CHECK_EQ(cb.dup_requests, 0);
	CHECK_EQ(ca.rnr_naks_rcvd, cb.rnr_naks_sent);
	/* the packets behind an RNR'd one are dropped silently: the RNR NAK
	 * already names the PSN to resume from */
	CHECK_EQ(cb.seq_naks_sent, 0);
	/* (a NAK that reaches a QP already in ERR is not counted) */
	if (expect_fail)
		CHECK(ca.seq_naks_rcvd <= pl_seqnak_injected);
	else
		CHECK_EQ(ca.seq_naks_rcvd, pl_seqnak_injected);
	CHECK(cb.out_of_seq > 0);
	CHECK(cb.rnr_naks_sent > 0);
	if (expect_fail) {
		/* the first batch arrives, then rnr_retry retries and the
		 * head fails; everything behind it is flushed */
		CHECK_EQ(ok, batch);
		CHECK_EQ(rdone, batch);
		CHECK_EQ(rnr_exc, 1);
		CHECK_EQ(ca.rnr_retry_exceeded, 1);
		CHECK_EQ(ca.rnr_naks_rcvd, (uint64_t)rnr_retry + 1);
		CHECK_EQ(ok + rnr_exc + flushed, sent);
		CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_ERR);
	} else {
		CHECK_EQ(ok, n);
		CHECK_EQ(rdone, n);
		CHECK_EQ(rnr_exc, 0);
		CHECK_EQ(ca.rnr_retry_exceeded, 0);
		/* at most one RNR NAK per RNR timer period of each gap */
		CHECK(cb.rnr_naks_sent <= gaps * (gap_ns / wait_ns + 2));
		CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	}
	pair_fini(&p);
	return 0;
}

static int t_rnr_pipeline(void)
{
	int r = 0;

	/* rnr_retry 7 (forever) across gaps of ~16 RNR periods: more RNR
	 * rounds without progress than retry_cnt allows retries */
	pl_peer_seqnak = 0;
	r |= pl_run(7, 7, 10000000, 1500, 64, false);
	/* a responder that also NAKs the gap (rxe): still no retry spent */
	pl_peer_seqnak = 1;
	r |= pl_run(7, 7, 10000000, 1500, 64, false);
	r |= pl_run(4, 1, 2500000, 1000, 48, false);
	pl_peer_seqnak = 0;
	/* rnr_retry < 7: up to 5 RNR NAKs per gap of 3 ms, retry_cnt 2 */
	r |= pl_run(5, 2, 3000000, 1000, 48, false);
	r |= pl_run(1, 0, 600000, 600, 32, false);
	/* receiver stops: exactly rnr_retry retries, then RNR_RETRY_EXC_ERR */
	r |= pl_run(2, 7, 10000000, 600, 64, true);
	pl_peer_seqnak = 1;
	r |= pl_run(3, 1, 10000000, 600, 64, true);
	pl_peer_seqnak = 0;
	return r;
}


/* ---- state trace: at debug level every state the responder and the
 * completer pass is logged by name (emu_resp_state_name[],
 * emu_comp_state_name[]); the names and the order of the states for a
 * two-packet WRITE and an rkey violation are checked, so neither the name
 * tables nor the state functions can drift silently. ---- */

/* Names of the states the responder or completer (who) logged for
 * qp/psn, in order, separated by '|'. */
static void trace_states(const char *log, const char *who, uint32_t qpn, uint32_t psn,
			 char *out, size_t n)
{
	char pfx[48];
	size_t o = 0;
	const char *l;

	snprintf(pfx, sizeof(pfx), "qp %u psn %u %s ", qpn, psn, who);
	out[0] = 0;
	for (l = log; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (strncmp(l, pfx, strlen(pfx)) || len <= strlen(pfx))
			continue;
		len -= strlen(pfx);
		if (o + len + 2 > n)
			break;
		if (o)
			out[o++] = '|';
		memcpy(out + o, l + strlen(pfx), len);
		o += len;
		out[o] = 0;
	}
}

static int t_state_trace(void)
{
	static const char *const want_resp[3] = {
		"GET_REQ|CHK_PSN|CHK_OP_SEQ|CHK_OP_VALID|CHK_LENGTH|CHK_RESOURCE|CHK_RKEY|"
		"EXECUTE|ACKNOWLEDGE|CLEANUP",
		"GET_REQ|CHK_PSN|CHK_OP_SEQ|CHK_OP_VALID|CHK_LENGTH|CHK_RESOURCE|CHK_RKEY|"
		"EXECUTE|COMPLETE|ACKNOWLEDGE|CLEANUP",
		"GET_REQ|CHK_PSN|CHK_OP_SEQ|CHK_OP_VALID|CHK_LENGTH|CHK_RESOURCE|CHK_RKEY|"
		"ERR_RKEY_VIOLATION",
	};
	/* the WRITE's FIRST asks for no ACK; its ACK retires it; the NAK
	 * (remote access) fails the second WRITE */
	static const char *const want_comp[3] = {
		"",
		"GET ACK|GET WQE|CHECK PSN|COMP WQE|GET WQE",
		"GET ACK|GET WQE|CHECK PSN|CHECK ACK|ERROR",
	};
	struct pair p;
	struct uroce_cqe c[4];
	char *log = NULL, got[512];
	size_t loglen = 0;
	FILE *f;
	uint32_t psn0, i;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	f = open_memstream(&log, &loglen);
	CHECK(f != NULL);
	CHECK_EQ(rte_openlog_stream(f), 0);
	CHECK_EQ(rte_log_set_level_pattern("uroce.emu", RTE_LOG_DEBUG), 0);
	psn0 = p.b.qp->x->epsn;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 2 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	/* past the end of B's MR: remote access error, QP to ERR */
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 64, 1 << 16);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR);
	rte_log_set_level_pattern("uroce.emu", RTE_LOG_NOTICE);
	rte_openlog_stream(NULL);
	fclose(f);
	CHECK(log != NULL);
	for (i = 0; i < 3; i++) {
		uint32_t psn = wire_psn_add(psn0, i);

		trace_states(log, "resp", p.b.qp->qpn, psn, got, sizeof(got));
		printf("resp psn %u: %s\n", psn, got);
		CHECK(!strcmp(got, want_resp[i]));
		trace_states(log, "comp", p.a.qp->qpn, psn, got, sizeof(got));
		printf("comp psn %u: %s\n", psn, got);
		CHECK(!strcmp(got, want_comp[i]));
	}
	free(log);
	pair_fini(&p);
	return 0;
}

/* ---- drop reasons: a UC WRITE whose FIRST packet is lost has its MIDDLE
 * and LAST dropped as "uc-gap", counted per QP and per port and named in
 * the stats reply uroce-stat prints; rx_dropped stays their sum. ---- */
static int drop_first_uc;

static bool drop_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to == 1 && !drop_first_uc && xt_parse(frame, len, &p) &&
	    p.bth.opcode == (WIRE_TR_UC | WIRE_OP_RC_WRITE_FIRST)) {
		drop_first_uc = 1;
		return false;
	}
	return true;
}

static int t_drop_reasons(void)
{
	static struct uroce_query_stats_rep rep;
	struct pair p;
	struct emu_xport_counters cb;
	uint64_t sum = 0;
	unsigned i, found = 0;

	if (pair_setup(&p, IBV_QPT_UC, IBV_MTU_1024, 1 << 16))
		return 1;
	drop_first_uc = 0;
	sim_hook = drop_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 3 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	sim_hook = NULL;
	CHECK_EQ(drop_first_uc, 1);
	emu_xport_qp_counters(p.b.qp, &cb);
	CHECK_EQ(cb.drops[EMU_XDROP_UC_GAP], 2);
	for (i = 0; i < EMU_XDROP_NUM; i++)
		sum += cb.drops[i];
	CHECK_EQ(sum, 2);
	CHECK_EQ(cb.rx_dropped, 2);
	CHECK_EQ(p.b.qp->dev->x->xdrops[EMU_XDROP_UC_GAP], 2);
	emu_stats_fill(p.b.qp->dev, NULL, 0, &rep);
	CHECK_EQ(rep.nxdrops, EMU_XDROP_NUM);
	for (i = 0; i < rep.nxdrops; i++) {
		CHECK(rep.xdrop_name[i][0] != 0); /* every reason has a name */
		if (!strcmp(rep.xdrop_name[i], "uc-gap")) {
			CHECK_EQ(rep.xdrops[i], 2);
			found++;
		} else {
			CHECK_EQ(rep.xdrops[i], 0);
		}
	}
	CHECK_EQ(found, 1);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "rnr_timer", t_rnr_timer },
	{ "rnr_retry", t_rnr_retry },
	{ "ack_coalesce", t_ack_coalesce },
	{ "read_gbn", t_read_gbn },
	{ "cnp", t_cnp },
	{ "timer_rx_hold", t_timer_rx_hold },
	{ "counters", t_counters },
	{ "rnr_pipeline", t_rnr_pipeline },
	{ "state_trace", t_state_trace },
	{ "drop_reasons", t_drop_reasons },
	{ "rx_expected", t_rx_expected },
	{ "probe_floor", t_probe_floor },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
