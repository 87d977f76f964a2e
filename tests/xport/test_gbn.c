/* SPDX-License-Identifier: MIT */
/* Retransmission under a slow peer: bounded go-back-N after a timeout, a
 * sequence NAK of a PSN already being resent, RNR retry pacing. Virtual
 * clock; the slow peer is sim.h's timed model (per-frame processing
 * time). Usage: test_gbn <name>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

/* Per-frame processing time of the normal side and of the slowed one. */
#define COST_NS 1500ull
#define SLOW    50ull

/* A perftest-like WRITE stream from A into one buffer of B: depth
 * messages of msg bytes outstanding, count in all. Returns the number of
 * successful completions; *bad is the first other status seen (-1 none). */
static unsigned op_stream(struct pair *p, uint8_t op, uint32_t msg, unsigned depth,
			  unsigned count, int *bad)
{
	unsigned posted = 0, done = 0;
	uint64_t t0 = sim_now;

	*bad = -1;
	while (done < count && *bad < 0 && sim_now - t0 < 60ull * 1000000000ull) {
		struct uroce_cqe c[64];
		int n;

		while (posted < count && posted - done < depth)
			xt_post(p, posted++, op, 0, msg, 0);
		uint64_t before = sim_now;
		sim_run(&p->s, 5000000ull);
		if (sim_now == before) /* idle until a timer beyond the 5 ms */
			sim_run(&p->s, 1000000000ull);
		n = sim_poll(p->a.scq, c, 64);
		for (int i = 0; i < n; i++) {
			if (c[i].status == IBV_WC_SUCCESS)
				done++;
			else if (*bad < 0)
				*bad = c[i].status;
		}
	}
	return done;
}

/* The one WRITE of the test completed, its len bytes landed; then the
 * pair goes. Returns 0 for the test function. */
static int one_write_done(struct pair *p, uint32_t len)
{
	struct uroce_cqe c[4];

	CHECK_EQ(sim_poll(p->a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p->ma.buf, p->mb.buf, len));
	pair_fini(p);
	return 0;
}

/* One side's engine slowed 50x: a stream of msg-byte WRITEs at the
 * default timeout (14: 67 ms) and retry_cnt 7 must complete, resending a
 * bounded number of packets. slow = which node is slowed.
 *
 * COST_NS: this machine's loaded loopback daemon moves 403 MB/s of 1 KB
 * packets (docs/performance.md), about 1.2 us per frame; 50x that is 75
 * us, so the 4096 packets of a full window drain in 307 ms: more than four
 * timeouts pass before their first ACK leaves the shared FIFO. Each such
 * timeout is spurious; before bounded go-back-N each one queued the whole
 * window again and the stream ended in RETRY_EXC_ERR. */
static uint32_t last_cwnd; /* the send window at the end of the last stream */

static double stream_drop; /* frames lost each way in slow_stream_op (seeded) */

static int slow_stream_op(uint8_t op, uint32_t msg, unsigned depth, unsigned count, int slow,
			  uint64_t factor)
{
	uint64_t pkts = (uint64_t)msg / 1024 * count, t0 = sim_now;

	struct pair p;
	struct emu_xport_counters ca;
	unsigned ok;
	int bad;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, msg))
		return 1;
	CHECK_EQ(p.a.qp->attr.timeout, 14);
	CHECK_EQ(p.a.qp->attr.retry_cnt, 7);
	xt_fill(p.ma.buf, msg, msg);
	sim_cost_ns[0] = sim_cost_ns[1] = COST_NS;
	sim_cost_ns[slow] = COST_NS * factor;
	if (stream_drop > 0) {
		struct emu_fault_cfg f = { .drop = stream_drop, .seed = 5 };
		sim_fault(&p.s, 0, &f);
		f.seed = 6;
		sim_fault(&p.s, 1, &f);
	}
	ok = op_stream(&p, op, msg, depth, count, &bad);
	emu_xport_qp_counters(p.a.qp, &ca);
	printf("op %u msg %u depth %u slow node %d (%llux): %u/%u done, status %d, %.3f s virtual, "
	       "timeouts %llu, retransmits %llu, seq NAKs %llu, window %u, tx %llu rx %llu\n",
	       op, msg, depth, slow, (unsigned long long)factor, ok, count, bad,
	       (double)(sim_now - t0) / 1e9,
	       (unsigned long long)ca.timeouts, (unsigned long long)ca.retransmits,
	       (unsigned long long)ca.seq_naks_rcvd, xp_cwnd(p.a.qp->x),
	       (unsigned long long)ca.tx_pkts, (unsigned long long)ca.rx_pkts);
	CHECK_EQ(bad, -1);
	CHECK_EQ(ok, count);
	CHECK_EQ(ca.retry_exceeded, 0);
	/* each timeout resends one bound, and nothing else goes twice (with
	 * losses a READ is also asked for again from each gap) */
	if (stream_drop <= 0) {
		CHECK(ca.retransmits <= XP_GBN_BURST * ca.timeouts);
		CHECK(ca.retransmits * 32 <= pkts);
	}
	CHECK(!memcmp(p.ma.buf, p.mb.buf, msg));
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	last_cwnd = xp_cwnd(p.a.qp->x);
	pair_fini(&p);
	return 0;
}

static int slow_stream_x(uint32_t msg, unsigned depth, unsigned count, int slow, uint64_t factor)
{
	return slow_stream_op(IBV_WR_RDMA_WRITE, msg, depth, count, slow, factor);
}

static int slow_stream(uint32_t msg, unsigned depth, unsigned count, int slow)
{
	return slow_stream_x(msg, depth, count, slow, SLOW);
}

static int t_gbn_slow_64k(void)
{
	/* ib_write_bw -s 65536: 128 outstanding (its tx depth) */
	slow_stream(65536, 128, 256, 1);
	return slow_stream(65536, 128, 256, 0);
}

/* A peer slowed past what bounded go-back-N alone survives: at 300 us per
 * 1 KB frame the 4096 packets of a full window take 1.2 s to drain, more
 * than retry_cnt + 1 timeouts (8 x 67 ms). After a timeout the send
 * window shrinks (as TCP's after an RTO) and grows back with the ACKs,
 * so the peer's backlog and its ACKs' delay stay below the timeout. */
static int t_cwnd_slow_64k(void)
{
	slow_stream_x(65536, 128, 256, 1, 200);
	/* it settled near what the peer drains in a timeout (~220) */
	CHECK(last_cwnd < XP_GBN_WIN_MAX / 4);
	return slow_stream_x(65536, 128, 256, 0, 200);
}

/* The same for READs from a slow responder over a lossy link (ib_read_bw
 * -o 16 against kernel rxe under TCG with 5 % loss, interop_rxe_loss): a
 * READ request is one packet but takes the PSNs of its responses, which
 * the window must bound. READ requests that ignored the window kept
 * max_rd_atomic READs out (here 4 x 64 responses at 450 us each); each
 * timeout or gap asked for all of them again, the responder's duplicate
 * READs queued more responses than a timeout drains, and the stream ended
 * in RETRY_EXC_ERR (28/64 done at 300x, 24/64 at 600x). Seeded drops. */
static int t_cwnd_slow_read(void)
{
	stream_drop = 0.05;
	slow_stream_op(IBV_WR_RDMA_READ, 65536, 4, 64, 1, 600);
	return 0;
}

static int t_gbn_slow_1m(void)
{
	slow_stream(1 << 20, 4, 16, 1);
	return slow_stream(1 << 20, 4, 16, 0);
}

/* ---- the retransmit timer covers the oldest unacknowledged packet ---- */
static uint32_t rt_from;        /* A->B packets from this PSN are lost, once */
static int rt_pass;
static uint64_t rt_first_resend; /* when the first of them came again */

static bool rt_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to != 1 || !xt_parse(frame, len, &p) || wire_psn_before(p.bth.psn, rt_from))
		return true;
	if (p.bth.psn == rt_from && rt_pass++ == 1)
		rt_first_resend = sim_now;
	return rt_pass > 1;
}

/* ACKs take 40 ms to come back; the last 32 packets of a 64-packet WRITE
 * are lost. The ACK for the first 32 is progress at 40 ms and restarts
 * the timer: the lost ones go again 67 ms after that, not 67 ms after
 * they were sent. */
static int t_gbn_timer_restart(void)
{
	struct pair p;
	struct emu_fault_cfg f = { .delay_us = 40000 };
	uint64_t t0, to = wire_retrans_timeout_ns(14);

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 65536))
		return 1;
	xt_fill(p.ma.buf, 65536, 11);
	sim_fault(&p.s, 0, &f); /* everything A receives is 40 ms late */
	rt_from = wire_psn_add(p.a.qp->x->sq_psn, 32);
	rt_pass = 0;
	rt_first_resend = 0;
	sim_hook = rt_hook;
	t0 = sim_now;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 65536, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(rt_first_resend - t0, 40000000ull + to);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 1);
	return one_write_done(&p, 65536);
}

/* A long message that the requester sends in bursts: the timer runs from
 * the first burst, not from the last packet of the message. A requester
 * slowed 50x needs 155 ms for 2 MB; nothing arrives. */
static bool drop_to_b(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	(void)s;
	(void)frame;
	(void)len;
	return to != 1;
}

static int t_gbn_timer_long_msg(void)
{
	struct pair p;
	uint64_t to = wire_retrans_timeout_ns(14);

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 2 << 20))
		return 1;
	sim_cost_ns[0] = COST_NS * SLOW;
	sim_cost_ns[1] = COST_NS;
	sim_hook = drop_to_b;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 2 << 20, 0);
	/* the first burst (256 packets, 19 ms) arms it */
	sim_run(&p.s, to + 256 * COST_NS * SLOW + 1000000);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 1);
	CHECK(wire_psn_before(p.a.qp->x->sq_psn_hw, p.a.qp->x->sq_psn_max));
	pair_fini(&p);
	return 0;
}

/* A stream of 64 KB READs and WRITEs over a link losing 3% of the frames
 * both ways (seeded, XP_SEED): timeouts come and go between NAK-driven
 * go-back-N rounds, and nothing fails. Once a bound's packets are all
 * acknowledged it must end, or it would keep holding (and keep NAKs from
 * acting) for the rest of the stream. */
static int t_gbn_lossy_stream(void)
{
	uint64_t seed = getenv("XP_SEED") ? strtoull(getenv("XP_SEED"), 0, 0) : 1;
	struct emu_fault_cfg f = { .drop = 0.03, .seed = seed };
	struct pair p;
	unsigned posted = 0, done = 0;
	int bad = -1;

	printf("seed %llu (XP_SEED=%llu replays)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 65536))
		return 1;
	xt_fill(p.mb.buf, 65536, 13);
	sim_fault(&p.s, 0, &f);
	f.seed = seed + 1;
	sim_fault(&p.s, 1, &f);
	while (done < 96 && bad < 0 && sim_now < 600ull * 1000000000ull) {
		struct uroce_cqe c[16];
		int n;

		while (posted < 96 && posted - done < 8) {
			xt_post(&p, posted, posted % 3 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, 0,
				65536, 0);
			posted++;
		}
		sim_run(&p.s, 100000000ull);
		n = sim_poll(p.a.scq, c, 16);
		for (int i = 0; i < n; i++) {
			if (c[i].status == IBV_WC_SUCCESS)
				done++;
			else if (bad < 0)
				bad = c[i].status;
		}
	}
	printf("%u done, timeouts %llu, retransmits %llu, seq NAKs %llu\n", done,
	       (unsigned long long)p.a.qp->x->cnt.timeouts,
	       (unsigned long long)p.a.qp->x->cnt.retransmits,
	       (unsigned long long)p.a.qp->x->cnt.seq_naks_rcvd);
	CHECK_EQ(bad, -1);
	CHECK_EQ(done, 96);
	CHECK(p.a.qp->x->cnt.timeouts > 0);
	CHECK_EQ(p.a.qp->x->gbn_bound, XP_GBN_OFF);
	pair_fini(&p);
	return 0;
}

/* ---- a sequence NAK of a PSN already being resent ---- */
static uint32_t nak_first;          /* first PSN of the WRITE */
static uint8_t nak_frame[256];      /* the responder's sequence NAK, held */
static uint32_t nak_len;
static int nak_dropped, nak_injected;
static uint8_t nak_left_before, nak_left_after;
static struct sim_qp *nak_req;

static bool nak_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 1 && p.bth.psn == nak_first && !nak_dropped++)
		return false; /* the first packet is lost: the responder NAKs */
	if (to == 0 && (p.hdrs & WIRE_HDR_AETH) &&
	    wire_aeth_type(p.aeth.syndrome) == WIRE_AETH_NAK && !nak_len && len <= sizeof(nak_frame)) {
		memcpy(nak_frame, frame, len); /* held back past the timeout */
		nak_len = len;
		return false;
	}
	if (to == 1 && p.bth.psn == nak_first && nak_len && !nak_injected &&
	    nak_req->qp->x->cnt.timeouts == 1) {
		/* the timeout's resend is under way: now the NAK arrives */
		nak_left_before = nak_req->qp->x->retry_left;
		emu_port_rx_frame(&s->n[0].dev, nak_frame, nak_len);
		nak_left_after = nak_req->qp->x->retry_left;
		nak_injected = 1;
	}
	return true;
}

static int t_gbn_nak_resent(void)
{
	struct pair p;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 8192))
		return 1;
	xt_fill(p.ma.buf, 8192, 5);
	nak_first = p.a.qp->x->sq_psn;
	nak_req = &p.a;
	sim_hook = nak_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 8192, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(nak_dropped, 2);
	CHECK(nak_len > 0);
	CHECK_EQ(nak_injected, 1);
	/* the timeout spent one retry, the NAK none */
	CHECK_EQ(nak_left_before, 6);
	CHECK_EQ(nak_left_after, 6);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 1);
	CHECK_EQ(p.a.qp->x->cnt.seq_naks_rcvd, 1);
	/* and the 8 packets went again once, not twice */
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 8);
	return one_write_done(&p, 8192);
}

/* ---- a lost tail: bounded go-back-N moves with the ACKs, doubling ---- */
static uint32_t tail_from, tail_to;
static int tail_lost;
/* resent packets between two ACKs, per round trip */
static unsigned tail_run[16], tail_nrun;

static bool tail_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (!xt_parse(frame, len, &p))
		return true;
	if (tail_lost < 0) {
		/* after the first pass everything A sends is a resend */
		if (to == 0 && tail_run[tail_nrun] && tail_nrun + 1 < 16)
			tail_nrun++;
		else if (to == 1)
			tail_run[tail_nrun]++;
		return true;
	}
	if (to == 0 || !wire_psn_in_window(p.bth.psn, tail_from, tail_to - tail_from))
		return true;
	if (p.bth.psn == wire_psn_add(tail_to, -1))
		tail_lost = -1; /* one pass of the window only */
	else
		tail_lost++;
	return false;
}

/* the largest window (xport_int.h): one pass of it, then the tail lost */
#define TAIL_N XP_CWND_MAX
static int t_gbn_tail_loss(void)
{
	struct pair p;
	uint32_t first;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, TAIL_N * 1024))
		return 1;
	xt_fill(p.ma.buf, TAIL_N * 1024, 9);
	first = p.a.qp->x->sq_psn;
	/* everything after the 100th packet of a TAIL_N-packet WRITE is lost:
	 * the responder sees no gap and stays silent, only the timer helps */
	tail_from = wire_psn_add(first, 100);
	tail_to = wire_psn_add(first, TAIL_N);
	tail_lost = 0;
	memset(tail_run, 0, sizeof(tail_run));
	tail_nrun = 0;
	/* the whole send window open (it starts small: xp_cwnd), so the
	 * first pass sends all TAIL_N packets before the timeout */
	p.a.qp->x->cwnd = XP_CWND_MAX;
	sim_hook = tail_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, TAIL_N * 1024, 0);
	sim_run(&p.s, 2000000000ull);
	CHECK_EQ(tail_lost, -1);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 1);
	/* from the last ACK (packet 96, AckReq every 16) to the end, once,
	 * in round trips of growing size */
	CHECK_EQ(p.a.qp->x->cnt.retransmits, TAIL_N - 96);
	/* XP_GBN_BURST, then twice as many per round trip */
	CHECK_EQ(tail_run[0], XP_GBN_BURST);
	for (unsigned k = 1, sum = XP_GBN_BURST; k < 16 && sum < TAIL_N - 96; k++) {
		unsigned want = XP_GBN_BURST << k;

		if (want > TAIL_N - 96 - sum)
			want = TAIL_N - 96 - sum;
		CHECK_EQ(tail_run[k], want);
		sum += tail_run[k];
	}
	return one_write_done(&p, TAIL_N * 1024);
}

/* ---- RNR: the retry comes exactly the NAK's timer later, one packet ---- */
#define RL_N 1024
static struct {
	uint64_t t;
	uint32_t psn;
	uint8_t to, op, syn;
} rl[RL_N];
static int nrl;

static bool rnr_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (nrl < RL_N && xt_parse(frame, len, &p)) {
		rl[nrl].t = sim_now;
		rl[nrl].psn = p.bth.psn;
		rl[nrl].to = (uint8_t)to;
		rl[nrl].op = p.bth.opcode;
		rl[nrl].syn = (p.hdrs & WIRE_HDR_AETH) ? p.aeth.syndrome : 0;
		nrl++;
	}
	return true;
}

static void post_recvs(struct pair *p, unsigned from, unsigned n)
{
	for (unsigned k = from; k < from + n; k++) {
		struct uroce_sge sg = xt_sge(&p->mb, k * 64, 64);

		sim_post_recv(&p->b, k, &sg, 1);
	}
}

/* ib_send_bw's settings (min_rnr_timer 12: 0.64 ms, rnr_retry 7): 64
 * SENDs of 64 B at a receiver with 16 receives, which posts 48 more after
 * 2 ms. Each RNR NAK is followed, exactly 0.64 ms later, by one packet (the
 * NAK'd one); once that is acknowledged the rest goes. */
static int t_rnr_pace(void)
{
	struct pair p;
	struct ibv_qp_attr at;
	struct uroce_cqe c[128];
	int naks = 0, n;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 64 * 64))
		return 1;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.min_rnr_timer = 12;
	CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ(p.a.qp->attr.rnr_retry, 7);
	xt_fill(p.ma.buf, 64 * 64, 3);
	post_recvs(&p, 0, 16);
	nrl = 0;
	sim_hook = rnr_hook;
	for (unsigned k = 0; k < 64; k++)
		xt_post(&p, k, IBV_WR_SEND, k * 64, 64, 0);
	sim_run(&p.s, 2000000ull);
	post_recvs(&p, 16, 48);
	sim_run(&p.s, 1000000000ull);
	for (int i = 0; i < nrl; i++) {
		int burst = 0, j;

		if (rl[i].to != 0 || wire_aeth_type(rl[i].syn) != WIRE_AETH_RNR_NAK)
			continue;
		naks++;
		CHECK_EQ(rl[i].syn, wire_aeth_rnr_nak(12));
		/* what A sends before B answers again */
		for (j = i + 1; j < nrl && rl[j].to == 1; j++)
			burst++;
		CHECK_EQ(burst, 1);
		if (i + 1 < nrl) {
			CHECK_EQ(rl[i + 1].t - rl[i].t, 640000);
			CHECK_EQ(rl[i + 1].psn, rl[i].psn);
		}
	}
	/* NAKs at 0, 0.64, 1.28 and 1.92 ms; the probe at 2.56 ms finds the
	 * receives posted at 2 ms */
	CHECK_EQ(naks, 4);
	CHECK_EQ(p.a.qp->x->cnt.rnr_naks_rcvd, 4);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 4 + 47);
	n = sim_poll(p.a.scq, c, 128);
	CHECK_EQ(n, 64);
	for (int i = 0; i < n; i++)
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	CHECK_EQ(sim_poll(p.b.rcq, c, 128), 64);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, 64 * 64));
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "gbn_slow_64k", t_gbn_slow_64k },
	{ "gbn_slow_1m", t_gbn_slow_1m },
	{ "cwnd_slow_64k", t_cwnd_slow_64k },
	{ "cwnd_slow_read", t_cwnd_slow_read },
	{ "gbn_timer_restart", t_gbn_timer_restart },
	{ "gbn_timer_long_msg", t_gbn_timer_long_msg },
	{ "gbn_lossy_stream", t_gbn_lossy_stream },
	{ "gbn_nak_resent", t_gbn_nak_resent },
	{ "gbn_tail_loss", t_gbn_tail_loss },
	{ "rnr_pace", t_rnr_pace },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
