/* SPDX-License-Identifier: MIT */
/* The responder's ACK held for the reply (resp.c, resp_ack_hold;
 * docs/transport.md "When an ACK leaves"): in a ping-pong the ACK of a
 * message leaves in one TX burst with the QP's reply; without a reply at
 * the bound, exactly; never for a stream, never a NAK; at once when the
 * QP goes to ERR; dropped by RESET. On the simulator's clock, counting
 * each node's TX flushes (the daemon's sendto or ring kick).
 * XT_ACK_HOLD_NS=0 in the environment runs them with the hold off, as
 * before it existed: ack_hold_reply, ack_hold_bound fail then.
 * Usage: test_ackhold <name>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

#define LOGN 256
static struct {
	int from;
	uint8_t op;
	uint32_t psn;
	uint8_t syn;
	uint64_t t, flush;
} lg[LOGN];
static int nlg;
static int drop_next; /* frames to B to drop, after skip_to_b */

static void tx_log(int from, const uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	if (nlg < LOGN && xt_parse(frame, len, &p)) {
		lg[nlg].from = from;
		lg[nlg].op = p.bth.opcode;
		lg[nlg].psn = p.bth.psn;
		lg[nlg].syn = (p.hdrs & WIRE_HDR_AETH) ? p.aeth.syndrome : 0;
		lg[nlg].t = sim_now;
		lg[nlg].flush = sim_flushes[from];
		nlg++;
	}
}

static bool drop_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	(void)s;
	(void)frame;
	(void)len;
	if (to == 1 && drop_next) {
		drop_next--;
		return false;
	}
	return true;
}

static uint64_t hold_ns;

static int setup(struct pair *p)
{
	const char *e = getenv("XT_ACK_HOLD_NS");

	if (pair_setup(p, IBV_QPT_RC, IBV_MTU_1024, 1 << 20))
		return -1;
	hold_ns = e ? strtoull(e, NULL, 0) : EMU_XPORT_ACK_HOLD_NS;
	for (int i = 0; i < 2; i++)
		emu_xport_ack_hold_set(&p->s.n[i].dev, (uint32_t)hold_ns);
	nlg = 0;
	drop_next = 0;
	sim_tx_hook = tx_log;
	sim_hook = drop_hook;
	return 0;
}

/* q sends a 64-byte SEND from its node's MR */
static void send_from(struct sim_qp *q, struct sim_mr *m, uint64_t id)
{
	struct uroce_send_wqe w;
	struct uroce_sge s = xt_sge(m, 0, 64);

	xt_wqe(&w, id, IBV_WR_SEND, 1);
	sim_post_send(q, &w, &s, NULL);
}

static void recv_on(struct sim_qp *q, struct sim_mr *m, uint64_t id)
{
	struct uroce_sge s = xt_sge(m, 4096, 64);

	sim_post_recv(q, id, &s, 1);
}

/* Frames node from sent with opcode op since the log began, and the index of the first. */
static int count(int from, uint8_t op, int *first)
{
	int n = 0;

	*first = -1;
	for (int i = 0; i < nlg; i++)
		if (lg[i].from == from && lg[i].op == op && n++ == 0)
			*first = i;
	return n;
}

static int ncqe(struct emu_cq *cq, uint8_t status)
{
	struct uroce_cqe c[64];
	int n = sim_poll(cq, c, 64), ok = 0;

	for (int i = 0; i < n; i++)
		ok += c[i].status == status;
	return ok;
}

/* One exchange a -> b, b -> a (each sim_run to the end): b has seen a
 * message end and then posted its own, the QP's traffic alternates. */
static void exchange(struct sim *s, struct sim_qp *a, struct sim_mr *ma, struct sim_qp *b,
		     struct sim_mr *mb, uint64_t id)
{
	recv_on(b, mb, id);
	recv_on(a, ma, id);
	send_from(a, ma, id);
	sim_run(s, 10000000);
	send_from(b, mb, id);
	sim_run(s, 10000000);
	CHECK_EQ(ncqe(a->scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(b->scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(a->rcq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(b->rcq, IBV_WC_SUCCESS), 1);
}

/* exchange() between the pair's QPs; the log starts empty after it. */
static void warm(struct pair *p)
{
	exchange(&p->s, &p->a, &p->ma, &p->b, &p->mb, 1);
	nlg = 0;
}

/* A SEND answered by a SEND within the bound: B's ACK and its reply leave
 * in one TX flush, the ACK first (it gets its buffer before the reply
 * takes what is left); meanwhile the engine's deadline is the
 * hold's end, so an idle engine would wake for it. */
static int t_ack_hold_reply(void)
{
	struct pair p;
	struct emu_dev *b;
	uint64_t t0, f0;
	int ia, is;

	if (setup(&p))
		return 1;
	b = &p.s.n[1].dev;
	warm(&p);
	recv_on(&p.b, &p.mb, 2);
	recv_on(&p.a, &p.ma, 2);
	t0 = sim_now;
	send_from(&p.a, &p.ma, 2);
	sim_run(&p.s, 1000); /* B receives; its ACK waits */
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 0);
	CHECK_EQ(ncqe(p.b.rcq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(emu_xport_next_deadline(b), t0 + hold_ns);
	/* the engine keeps spinning for the reply while it waits */
	CHECK(emu_xport_rx_expected(b));
	f0 = sim_flushes[1];
	send_from(&p.b, &p.mb, 2); /* the reply, 1 us later */
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	CHECK_EQ(count(1, WIRE_OP_RC_SEND_ONLY, &is), 1);
	if (ia >= 0 && is >= 0) {
		CHECK(ia < is);
		CHECK_EQ(lg[ia].flush, lg[is].flush);
		CHECK_EQ(lg[ia].flush, f0);
	}
	CHECK_EQ(sim_flushes[1], f0 + 1); /* one burst */
	CHECK(!emu_xport_rx_expected(b));
	sim_run(&p.s, 10000000);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(p.a.rcq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(p.b.qp->x->cnt.acks_held, 1);
	CHECK_EQ(p.b.qp->x->cnt.acks_held_late, 0);
	pair_fini(&p);
	return 0;
}

/* No reply: the ACK leaves at the bound exactly (not before, not never),
 * and the QP stops holding: the next message's ACK leaves at once. */
static int t_ack_hold_bound(void)
{
	struct pair p;
	uint64_t t0, t1;
	int ia;

	if (setup(&p))
		return 1;
	warm(&p);
	recv_on(&p.b, &p.mb, 2);
	recv_on(&p.b, &p.mb, 3);
	t0 = sim_now;
	send_from(&p.a, &p.ma, 2);
	sim_run(&p.s, 10000000);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	if (ia >= 0)
		CHECK_EQ(lg[ia].t, t0 + hold_ns);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(p.b.qp->x->cnt.acks_held_late, 1);
	CHECK(!emu_xport_rx_expected(&p.s.n[1].dev));
	nlg = 0;
	t1 = sim_now;
	send_from(&p.a, &p.ma, 3);
	sim_run(&p.s, 10000000);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	if (ia >= 0)
		CHECK_EQ(lg[ia].t, t1);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(p.b.qp->x->cnt.acks_held, 1);
	pair_fini(&p);
	return 0;
}

/* A stream (ib_send_bw's SENDs, a long WRITE's AckReq every 16 packets)
 * on a QP that alternated before: no ACK waits for a reply. */
static int t_ack_hold_stream(void)
{
	struct pair p;
	uint64_t t0;
	int i, n;

	if (setup(&p))
		return 1;
	warm(&p);
	for (i = 0; i < 16; i++)
		recv_on(&p.b, &p.mb, (uint64_t)i);
	t0 = sim_now;
	for (i = 0; i < 16; i++)
		send_from(&p.a, &p.ma, (uint64_t)i);
	for (i = 0; i < 4; i++)
		xt_post(&p, 100 + (uint64_t)i, IBV_WR_RDMA_WRITE, 0, 65536,
			(uint32_t)i * 65536);
	sim_run(&p.s, 10000000);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 20);
	n = 0;
	for (i = 0; i < nlg; i++)
		if (lg[i].from == 1 && lg[i].op == WIRE_OP_RC_ACK) {
			CHECK_EQ(lg[i].t, t0);
			n++;
		}
	CHECK(n >= 1);
	CHECK_EQ(p.b.qp->x->cnt.acks_held_late, 0);
	pair_fini(&p);
	return 0;
}

/* NAKs are never held: an RNR NAK leaves at once; a sequence NAK too,
 * with the ACK held for the message before it ahead of it in its burst. */
static int t_ack_hold_nak(void)
{
	struct pair p;
	uint64_t t0;
	int ia, in = -1;

	if (setup(&p))
		return 1;
	warm(&p);
	/* no receive posted: RNR NAK at once */
	t0 = sim_now;
	send_from(&p.a, &p.ma, 2);
	sim_run(&p.s, 1000);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	if (ia >= 0) {
		CHECK_EQ(wire_aeth_type(lg[ia].syn), WIRE_AETH_RNR_NAK);
		CHECK_EQ(lg[ia].t, t0);
	}
	for (int i = 0; i < 4; i++)
		recv_on(&p.b, &p.mb, 10 + (uint64_t)i);
	sim_run(&p.s, 100000000); /* the RNR retry delivers it */
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(p.b.rcq, IBV_WC_SUCCESS), 1);
	/* alternate again, then a message whose ACK is held ... */
	recv_on(&p.a, &p.ma, 3);
	send_from(&p.b, &p.mb, 3);
	sim_run(&p.s, 100000000);
	CHECK_EQ(ncqe(p.a.rcq, IBV_WC_SUCCESS), 1);
	send_from(&p.a, &p.ma, 4);
	sim_run(&p.s, 1000);
	nlg = 0;
	CHECK(p.b.qp->x->ack_hold_at != 0);
	/* ... and a gap after it: the NAK leaves at once, the ACK ahead */
	drop_next = 1;
	t0 = sim_now;
	send_from(&p.a, &p.ma, 5);
	send_from(&p.a, &p.ma, 6);
	sim_run(&p.s, 1000);
	/* (then the ACK of the messages resent at once) */
	CHECK(count(1, WIRE_OP_RC_ACK, &ia) >= 2);
	for (int i = nlg - 1; i >= 0; i--)
		if (lg[i].from == 1 && wire_aeth_type(lg[i].syn) == WIRE_AETH_NAK)
			in = i;
	CHECK(ia >= 0 && in > ia);
	if (ia >= 0 && in > ia) {
		CHECK_EQ(wire_aeth_type(lg[ia].syn), WIRE_AETH_ACK);
		CHECK_EQ(lg[in].t, t0);
		CHECK_EQ(lg[ia].flush, lg[in].flush);
	}
	sim_run(&p.s, 100000000);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 3);
	CHECK_EQ(ncqe(p.b.rcq, IBV_WC_SUCCESS), 3);
	pair_fini(&p);
	return 0;
}

static int to_state(struct sim_qp *q, enum ibv_qp_state st)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = st;
	return emu_qp_modify(q->qp, &at, IBV_QP_STATE);
}

/* A QP moved to ERR with an ACK held sends it at once (the message was
 * delivered: the peer's WR completes); one moved to RESET drops it. */
static int t_ack_hold_state(void)
{
	for (int k = 0; k < 2; k++) {
		struct pair p;
		struct emu_dev *b;
		uint64_t t1;
		int ia;

		if (setup(&p))
			return 1;
		b = &p.s.n[1].dev;
		warm(&p);
		recv_on(&p.b, &p.mb, 2);
		send_from(&p.a, &p.ma, 2);
		sim_run(&p.s, 1000);
		CHECK(p.b.qp->x->ack_hold_at != 0);
		CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 0);
		t1 = sim_now;
		CHECK_EQ(to_state(&p.b, k ? IBV_QPS_RESET : IBV_QPS_ERR), 0);
		if (!k) {
			CHECK(emu_xport_next_deadline(b) <= t1);
			sim_run(&p.s, 1000);
			CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
			if (ia >= 0)
				CHECK_EQ(lg[ia].t, t1);
			CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
		} else {
			/* nothing of B's is due any more */
			CHECK_EQ(emu_xport_next_deadline(b), UINT64_MAX);
			sim_run(&p.s, 2 * hold_ns);
			CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 0);
		}
		pair_fini(&p);
	}
	return 0;
}

/* setup() with the hold for the reply off on both nodes: the default
 * ACK path, every coalesced ACK. */
static int setup_nohold(struct pair *p)
{
	if (setup(p))
		return -1;
	for (int i = 0; i < 2; i++)
		emu_xport_ack_hold_set(&p->s.n[i].dev, 0);
	return 0;
}

/* An ACK that finds no TX buffer (the pool and the part kept for ACKs
 * empty) goes again EMU_XPORT_ACK_DELAY_NS later: the requester completes
 * without a timeout or a resent packet (before, the ACK was lost and the
 * requester waited for its retransmit timeout, 67 ms here, and sent
 * again). */
static int t_ack_nobuf_retry(void)
{
	struct pair p;
	uint64_t t0;
	int ia, is;

	if (setup_nohold(&p))
		return 1;
	recv_on(&p.b, &p.mb, 1);
	sim_txfail[1] = 1;
	t0 = sim_now;
	send_from(&p.a, &p.ma, 1);
	sim_run(&p.s, 100000000);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(p.b.rcq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(count(0, WIRE_OP_RC_SEND_ONLY, &is), 1);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	if (ia >= 0)
		CHECK_EQ(lg[ia].t, t0 + EMU_XPORT_ACK_DELAY_NS);
	CHECK_EQ(p.b.qp->x->cnt.tx_no_buf, 1);
	CHECK_EQ(p.a.qp->x->cnt.probes, 0);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	CHECK_EQ(p.b.qp->x->ack_retry, 0);
	pair_fini(&p);
	return 0;
}

/* A sequence NAK that finds no TX buffer goes again too (one NAK per
 * gap: lost, the gap waited for the requester's timers). */
static int t_ack_nobuf_nak(void)
{
	struct pair p;
	uint64_t t0;
	int ia;

	if (setup_nohold(&p))
		return 1;
	recv_on(&p.b, &p.mb, 1);
	recv_on(&p.b, &p.mb, 2);
	drop_next = 1;
	sim_txfail[1] = 1;
	t0 = sim_now;
	send_from(&p.a, &p.ma, 1);
	send_from(&p.a, &p.ma, 2);
	sim_run(&p.s, 100000000);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 2);
	CHECK_EQ(ncqe(p.b.rcq, IBV_WC_SUCCESS), 2);
	CHECK(count(1, WIRE_OP_RC_ACK, &ia) >= 2);
	if (ia >= 0) {
		CHECK_EQ(wire_aeth_type(lg[ia].syn), WIRE_AETH_NAK);
		CHECK_EQ(lg[ia].t, t0 + EMU_XPORT_ACK_DELAY_NS);
	}
	CHECK_EQ(p.b.qp->x->cnt.tx_no_buf, 1);
	CHECK_EQ(p.a.qp->x->cnt.seq_naks_rcvd, 1);
	CHECK_EQ(p.a.qp->x->cnt.probes, 0);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	pair_fini(&p);
	return 0;
}

/* Buffers that never come back: the ACK is given up after
 * EMU_XPORT_ACK_RETRIES retries (no engine spinning for ever on it), and
 * the requester's timers end the WR (RETRY_EXC_ERR), as for any lost ACK. */
static int t_ack_nobuf_giveup(void)
{
	struct pair p;

	if (setup_nohold(&p))
		return 1;
	recv_on(&p.b, &p.mb, 1);
	sim_txfail[1] = UINT32_MAX;
	send_from(&p.a, &p.ma, 1);
	sim_run(&p.s, 100000000000ull);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_RETRY_EXC_ERR), 1);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &(int){ 0 }), 0);
	/* the first ACK and every resent SEND's: each tried 1 + RETRIES times */
	CHECK(p.b.qp->x->cnt.tx_no_buf >= 1 + EMU_XPORT_ACK_RETRIES);
	CHECK_EQ(p.b.qp->x->cnt.tx_no_buf % (1 + EMU_XPORT_ACK_RETRIES), 0);
	CHECK_EQ(emu_xport_next_deadline(&p.s.n[1].dev), UINT64_MAX);
	CHECK_EQ(p.b.qp->x->ack_retry, 0);
	pair_fini(&p);
	return 0;
}

/* A ping-pong's message ends at a QP whose ACK is held for the reply;
 * the program then destroys the QP (its last message: no reply comes).
 * The ACK it owed leaves with the QP, at once: dropped, the peer learned
 * of it only through its loss probe and the dead QP's tomb
 * (net_link_drops with --ack-hold-us 60, one probe per run). */
static int t_ack_hold_destroy(void)
{
	struct pair p;
	uint64_t t0;
	int ia;

	if (setup(&p))
		return 1;
	emu_xport_ack_hold_set(&p.s.n[1].dev, 60000);
	warm(&p);
	recv_on(&p.b, &p.mb, 2);
	send_from(&p.a, &p.ma, 2);
	sim_run(&p.s, 20000);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 0);
	CHECK(p.b.qp->x->ack_pending && p.b.qp->x->ack_hold_at);
	t0 = sim_now;
	CHECK_EQ(emu_qp_destroy(p.s.n[1].ctx, p.b.handle), 0);
	sim_run(&p.s, 100000000ull);
	CHECK_EQ(count(1, WIRE_OP_RC_ACK, &ia), 1);
	if (ia >= 0)
		CHECK_EQ(lg[ia].t, t0);
	CHECK_EQ(ncqe(p.a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(p.a.qp->x->cnt.probes, 0);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	pair_fini(&p);
	return 0;
}

/* Two QPs of one device (the loopback port, or a real port's self ring):
 * A's message ends at B, whose ACK is held for B's reply; then the engine
 * is off its core past the hold and past A's loss probe (two
 * busy-polling ibv_rc_pingpong on two cores: 2.4 ms in net_link_drops).
 * The poll that finds both due sends B's ACK first, and A's expired probe
 * waits for the RX that brings it: no probe, no duplicate. */
static int t_ack_hold_self(void)
{
	struct sim s;
	struct sim_qp a, b;
	struct sim_mr ma, mb;
	uint64_t due, late;

	if (sim_init(&s) || sim_mr(&s.n[0], 1 << 16, ALL_ACCESS, &ma) ||
	    sim_mr(&s.n[0], 1 << 16, ALL_ACCESS, &mb) ||
	    sim_qp(&s.n[0], IBV_QPT_RC, 16, &a, -1) || sim_qp(&s.n[0], IBV_QPT_RC, 16, &b, -1) ||
	    sim_connect(&a, &b, IBV_MTU_1024) || sim_connect(&b, &a, IBV_MTU_1024)) {
		CHECK(0);
		return 1;
	}
	/* frames take time: round trips are measured, the probe is armed */
	sim_cost_ns[0] = 2000;
	emu_xport_ack_hold_set(&s.n[0].dev, 60000);
	for (uint64_t i = 1; i <= 3; i++)
		exchange(&s, &a, &ma, &b, &mb, i);
	late = b.qp->x->cnt.acks_held_late;
	recv_on(&b, &mb, 4);
	send_from(&a, &ma, 4);
	sim_run(&s, 20000);
	CHECK(b.qp->x->ack_pending && b.qp->x->ack_hold_at);
	CHECK(a.qp->x->probe_at);
	due = a.qp->x->probe_at > b.qp->x->ack_hold_at ? a.qp->x->probe_at
						       : b.qp->x->ack_hold_at;
	CHECK(!a.qp->x->retrans_at || a.qp->x->retrans_at > due + 1000000);
	sim_now = due + 1000000; /* the engine off its core */
	sim_run(&s, 100000000ull);
	CHECK_EQ(ncqe(a.scq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(ncqe(b.rcq, IBV_WC_SUCCESS), 1);
	CHECK_EQ(b.qp->x->cnt.acks_held_late, late + 1);
	CHECK_EQ(a.qp->x->cnt.probes, 0);
	CHECK_EQ(a.qp->x->cnt.retransmits, 0);
	CHECK_EQ(b.qp->x->cnt.dup_requests, 0);
	sim_fini(&s);
	free(ma.buf);
	free(mb.buf);
	return 0;
}

static const struct xt_test tests[] = {
	{ "ack_hold_destroy", t_ack_hold_destroy },
	{ "ack_hold_self", t_ack_hold_self },
	{ "ack_nobuf_retry", t_ack_nobuf_retry },
	{ "ack_nobuf_nak", t_ack_nobuf_nak },
	{ "ack_nobuf_giveup", t_ack_nobuf_giveup },
	{ "ack_hold_reply", t_ack_hold_reply },
	{ "ack_hold_bound", t_ack_hold_bound },
	{ "ack_hold_stream", t_ack_hold_stream },
	{ "ack_hold_nak", t_ack_hold_nak },
	{ "ack_hold_state", t_ack_hold_state },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
