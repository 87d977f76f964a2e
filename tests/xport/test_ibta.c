/* SPDX-License-Identifier: MIT */
/* IBTA's packet checks, one test per row of docs/transport.md's check
 * table ("Checks on received packets"): the test plays the peer, crafts
 * the offending frame with wire_build() and hands it to the QP under
 * test's device, and asserts what the QP does about it on the virtual
 * clock - the answer on the wire (nothing, an ACK, a NAK of a code at a
 * PSN, READ responses), the completion status, the QP state, the
 * counter that moves.
 *
 * Responder rows: the QP under test is B (node 1); every frame B sends is
 * recorded and kept from A. Requester rows: the QP under test is A (node
 * 0), which posts real work requests; its requests are recorded and kept
 * from B, and the test answers them. */
#include <stdlib.h>
#include <string.h>

#include "pair.h"

#define PKT 1024u
#define RECV_LEN 4096u
#define RUN_NS 100000ull /* 100 us: ACKs go out; no retransmit timer fires (67 ms) */
#define NREC 256
#define NONE 0xff /* no opcode (RC SEND First is 0) */

/* ---- what the peer's side of the wire sees ---- */
struct rec {
	uint8_t op, syn;
	uint32_t psn, msn, len;
	uint64_t orig;
	uint64_t va;
	uint32_t dma_len;
};
static struct rec rec[NREC];
static unsigned nrec;
static int rec_to; /* frames to this node are recorded and dropped */
static uint8_t pat[8192];

static bool rec_hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to != rec_to)
		return true;
	if (nrec < NREC && wire_parse(f, len, &p) == WIRE_OK) {
		struct rec *r = &rec[nrec++];

		r->op = xp_rc_op(p.bth.opcode);
		r->psn = p.bth.psn;
		r->syn = p.aeth.syndrome;
		r->msn = p.aeth.msn;
		r->len = p.payload_len;
		r->orig = p.atomicacketh.orig;
		r->va = p.reth.va;
		r->dma_len = p.reth.dma_len;
	}
	return false;
}

struct t {
	struct pair p;
	int dut;             /* node of the QP under test */
	struct sim_qp *q;    /* the QP under test */
	struct sim_mr *mr;   /* its node's MR */
	uint32_t psn;        /* responder rows: the next request PSN */
};

/* A pair of type type, the QP under test on node dut with nrecv receives
 * of RECV_LEN bytes posted (wr_id 100, 101, ...). */
static int t_setup(struct t *t, enum ibv_qp_type type, int dut, unsigned nrecv)
{
	memset(t, 0, sizeof(*t));
	if (pair_setup(&t->p, type, IBV_MTU_1024, 1 << 20))
		return -1;
	t->dut = dut;
	t->q = dut ? &t->p.b : &t->p.a;
	t->mr = dut ? &t->p.mb : &t->p.ma;
	for (unsigned i = 0; i < nrecv; i++) {
		struct uroce_sge r = xt_sge(t->mr, i * RECV_LEN, RECV_LEN);

		sim_post_recv(t->q, 100 + i, &r, 1);
	}
	t->psn = t->q->qp->x->epsn;
	xt_fill(pat, sizeof(pat), 3);
	nrec = 0;
	rec_to = 1 - dut;
	sim_hook = rec_hook;
	return 0;
}

/* A frame from the peer node to the QP under test: op is RC's (UC and
 * UD get their transport bits), psn, len payload bytes of pat and the
 * pad that aligns them; RETH and AtomicETH point at the QP's MR. */
static void t_pkt(struct t *t, struct wire_pkt *d, uint8_t op, uint32_t psn, uint32_t len)
{
	struct sim_node *to = &t->p.s.n[t->dut], *from = &t->p.s.n[1 - t->dut];
	const struct wire_opcode_info *oi;

	if (t->q->qp->type == IBV_QPT_UC)
		op |= WIRE_TR_UC;
	else if (t->q->qp->type == IBV_QPT_UD)
		op = op == WIRE_OP_RC_SEND_ONLY_IMM ? WIRE_OP_UD_SEND_ONLY_IMM : WIRE_OP_UD_SEND_ONLY;
	oi = wire_opcode_info(op);
	wire_pkt_init(d, 4);
	memcpy(d->dmac, to->dev.mac, 6);
	memcpy(d->smac, from->dev.mac, 6);
	memcpy(d->ip.src.raw, from->dev.gids[1].raw, 16);
	memcpy(d->ip.dst.raw, to->dev.gids[1].raw, 16);
	d->udp.sport = 0xc123;
	d->bth.opcode = op;
	d->bth.dqpn = t->q->qp->qpn;
	d->bth.psn = psn & WIRE_PSN_MASK;
	d->bth.ackreq = (oi->flags & WIRE_OPF_REQ) && (oi->flags & WIRE_OPF_LAST);
	d->bth.pad = wire_pad(len);
	d->payload = pat;
	d->payload_len = len;
	d->reth.va = (uintptr_t)t->mr->buf;
	d->reth.rkey = t->mr->rkey;
	d->reth.dma_len = len;
	d->atomiceth.va = (uintptr_t)t->mr->buf + 8192;
	d->atomiceth.rkey = t->mr->rkey;
	d->atomiceth.swap_add = 5;
	d->aeth.syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
	d->deth.qkey = 0x11111111;
	d->deth.sqpn = (t->dut ? t->p.a.qp : t->p.b.qp)->qpn;
}

/* Build d as it is (pad count and lengths as set: KEEP_PAD), hand it to
 * the QP under test's device, run the engine. */
static void t_send(struct t *t, const struct wire_pkt *d)
{
	static uint8_t f[9000];
	size_t n = 0;

	CHECK_EQ(wire_build(d, f, sizeof(f), WIRE_BUILD_KEEP_PAD, &n), 0);
	emu_port_rx_frame(&t->p.s.n[t->dut].dev, f, (uint32_t)n);
	sim_run(&t->p.s, RUN_NS);
}

/* Responder rows: request op of len bytes at the next PSN. */
static void t_req(struct t *t, uint8_t op, uint32_t len)
{
	struct wire_pkt d;

	t_pkt(t, &d, op, t->psn, len);
	t_send(t, &d);
	t->psn = wire_psn_next(t->psn);
}

/* The recorded frames since mark that are ACK/NAKs with syndrome syn at psn. */
static unsigned t_acks(unsigned mark, uint8_t syn, uint32_t psn)
{
	unsigned k = 0;

	for (unsigned i = mark; i < nrec; i++)
		k += rec[i].op == WIRE_OP_RC_ACK && rec[i].syn == syn && rec[i].psn == psn;
	return k;
}

static struct emu_xport_counters t_cnt(struct t *t)
{
	struct emu_xport_counters c;

	emu_xport_qp_counters(t->q->qp, &c);
	return c;
}

/* An RC responder error of class C/A (IBTA 9.9.3): nothing but one NAK
 * of code at psn, the QP in ERR with event ev, and the first receive
 * completed with wc (a message in progress) or flushed. */
static void t_expect_fatal(struct t *t, unsigned mark, uint8_t code, uint32_t psn, int ev,
			   int wc)
{
	struct uroce_cqe c[8];

	CHECK_EQ(nrec - mark, 1);
	CHECK_EQ(t_acks(mark, wire_aeth_nak(code), psn), 1);
	CHECK_EQ(t->q->qp->attr.qp_state, IBV_QPS_ERR);
	CHECK_EQ(t_cnt(t).naks_sent, 1);
	if (ev)
		CHECK_EQ(xt_events(t->q->node, ev), 1);
	if (sim_poll(t->q->rcq, c, 8) >= 1) {
		CHECK_EQ(c[0].wr_id, 100);
		CHECK_EQ(c[0].status, wc ? wc : IBV_WC_WR_FLUSH_ERR);
	} else {
		CHECK(!"no receive completion");
	}
}

/* The QP under test answered nothing since mark and is still in state. */
static void t_expect_silent(struct t *t, unsigned mark, enum ibv_qp_state state)
{
	CHECK_EQ(nrec - mark, 0);
	CHECK_EQ(t->q->qp->attr.qp_state, state);
}

/* ================= responder: opcode sequence (IBTA 9.7.5.1) ================= */

/* Every (message in progress, next opcode) combination: the ones IBTA's
 * opcode sequence check allows go on, the others are NAKed invalid
 * request at their PSN and the QP goes to ERR; a SEND's receive in
 * progress completes with REM_INV_REQ_ERR. */
static const uint8_t seq_ops[] = {
	WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_SEND_MIDDLE, WIRE_OP_RC_SEND_LAST,
	WIRE_OP_RC_SEND_ONLY, WIRE_OP_RC_WRITE_FIRST, WIRE_OP_RC_WRITE_MIDDLE,
	WIRE_OP_RC_WRITE_LAST, WIRE_OP_RC_WRITE_ONLY, WIRE_OP_RC_READ_REQ,
	WIRE_OP_RC_FETCH_ADD,
};

static bool seq_ok(uint8_t in_progress, uint8_t op)
{
	const struct wire_opcode_info *oi = wire_opcode_info(op);

	if (in_progress == NONE)
		return oi->flags & WIRE_OPF_FIRST;
	if (in_progress == WIRE_OP_RC_SEND_FIRST)
		return op == WIRE_OP_RC_SEND_MIDDLE || op == WIRE_OP_RC_SEND_LAST;
	return op == WIRE_OP_RC_WRITE_MIDDLE || op == WIRE_OP_RC_WRITE_LAST;
}

static int seq_case(uint8_t first, uint8_t op)
{
	struct t t;
	unsigned mark;
	uint32_t psn, len = 0;
	const struct wire_opcode_info *oi = wire_opcode_info(op);

	if (t_setup(&t, IBV_QPT_RC, 1, 4))
		return 1;
	if (first != NONE) {
		struct wire_pkt d;

		t_pkt(&t, &d, first, t.psn, PKT);
		d.reth.dma_len = 2 * PKT; /* FIRST and a LAST of one MTU */
		t_send(&t, &d);
		t.psn = wire_psn_next(t.psn);
	}
	if (oi->flags & WIRE_OPF_PAYLOAD)
		len = (oi->flags & WIRE_OPF_ONLY) == WIRE_OPF_ONLY ? 100 : PKT;
	mark = nrec;
	psn = t.psn;
	t_req(&t, op, len);
	if (seq_ok(first, op)) {
		CHECK_EQ(t_acks(mark, wire_aeth_nak(WIRE_NAK_INVALID_REQ), psn), 0);
		CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	} else {
		t_expect_fatal(&t, mark, WIRE_NAK_INVALID_REQ, psn, IBV_EVENT_QP_REQ_ERR,
			       first == WIRE_OP_RC_SEND_FIRST ? IBV_WC_REM_INV_REQ_ERR : 0);
		if (op == WIRE_OP_RC_FETCH_ADD)
			CHECK(xt_zero((uint8_t *)t.mr->buf + 8192, 8)); /* not executed */
	}
	pair_fini(&t.p);
	return 0;
}

static int t_op_seq(void)
{
	static const uint8_t firsts[] = { NONE, WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_WRITE_FIRST };

	for (size_t f = 0; f < sizeof(firsts); f++)
		for (size_t o = 0; o < sizeof(seq_ops); o++) {
			int before = sim_failures;

			if (seq_case(firsts[f], seq_ops[o]))
				return 1;
			if (sim_failures != before)
				fprintf(stderr, "  in progress %#x, then %s\n", firsts[f],
					wire_opcode_name(seq_ops[o]));
		}
	return 0;
}

/* Issue 26, case 1: WRITE FIRST, MIDDLE, MIDDLE, then at the next PSN a
 * READ request that still carries 256 bytes. rxe NAKs it invalid request
 * (the opcode sequence) and its QP goes to ERR; so does uroce's (it used
 * to drop it in the parser, "payload-unexpected", and stay in RTS). */
static int t_seq_write_read_payload(void)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;
	uint32_t psn;

	if (t_setup(&t, IBV_QPT_RC, 1, 1))
		return 1;
	t_pkt(&t, &d, WIRE_OP_RC_WRITE_FIRST, t.psn, PKT);
	d.reth.dma_len = 4 * PKT;
	t_send(&t, &d);
	t.psn = wire_psn_next(t.psn);
	t_req(&t, WIRE_OP_RC_WRITE_MIDDLE, PKT);
	t_req(&t, WIRE_OP_RC_WRITE_MIDDLE, PKT);
	mark = nrec;
	psn = t.psn;
	t_req(&t, WIRE_OP_RC_READ_REQ, 256);
	t_expect_fatal(&t, mark, WIRE_NAK_INVALID_REQ, psn, IBV_EVENT_QP_REQ_ERR, 0);
	pair_fini(&t.p);
	return 0;
}

/* ================= responder: length (IBTA 9.7.5.1) ================= */

/* One request op of len bytes (pad: its own, or pad if >= 0; dma: the
 * RETH length, or len if 0) on a fresh RC responder, after the request
 * pre (NONE: none) of pre_len bytes: NAK invalid request at its PSN, QP to
 * ERR; the receive of a SEND in progress completes REM_INV_REQ_ERR. */
static int len_case(uint8_t pre, uint32_t pre_len, uint32_t pre_dma, uint8_t op, uint32_t len,
		    int pad, uint32_t dma)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;
	uint32_t psn;

	if (t_setup(&t, IBV_QPT_RC, 1, 2))
		return 1;
	if (pre != NONE) {
		t_pkt(&t, &d, pre, t.psn, pre_len);
		if (pre_dma)
			d.reth.dma_len = pre_dma;
		t_send(&t, &d);
		t.psn = wire_psn_next(t.psn);
	}
	mark = nrec;
	psn = t.psn;
	t_pkt(&t, &d, op, psn, len);
	if (pad >= 0)
		d.bth.pad = (uint8_t)pad;
	if (dma)
		d.reth.dma_len = dma;
	t_send(&t, &d);
	t_expect_fatal(&t, mark, WIRE_NAK_INVALID_REQ, psn, IBV_EVENT_QP_REQ_ERR,
		       pre == WIRE_OP_RC_SEND_FIRST ? IBV_WC_REM_INV_REQ_ERR : 0);
	/* nothing placed by the faulty packet */
	if (op == WIRE_OP_RC_FETCH_ADD)
		CHECK(xt_zero((uint8_t *)t.mr->buf + 8192, 8));
	pair_fini(&t.p);
	return 0;
}

/* payload on an opcode that carries none: READ request, atomic */
static int t_len_read_payload(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_READ_REQ, 256, -1, 512);
}

static int t_len_atomic_payload(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_FETCH_ADD, 8, -1, 0);
}

/* missing payload: an empty FIRST */
static int t_len_first_empty(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_WRITE_FIRST, 0, -1, 4 * PKT);
}

/* short payload: a FIRST/MIDDLE of less than one MTU */
static int t_len_first_short(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_SEND_FIRST, PKT - 4, -1, 0);
}

static int t_len_middle_short(void)
{
	return len_case(WIRE_OP_RC_SEND_FIRST, PKT, 0, WIRE_OP_RC_SEND_MIDDLE, 512, -1, 0);
}

/* more than one MTU in a MIDDLE and in an ONLY */
static int t_len_middle_long(void)
{
	return len_case(WIRE_OP_RC_WRITE_FIRST, PKT, 4 * PKT, WIRE_OP_RC_WRITE_MIDDLE, PKT + 4, -1, 0);
}

static int t_len_only_long(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_SEND_ONLY, PKT + 4, -1, 0);
}

/* an empty LAST: a message of n MTUs ends with a full packet */
static int t_len_last_empty(void)
{
	return len_case(WIRE_OP_RC_SEND_FIRST, PKT, 0, WIRE_OP_RC_SEND_LAST, 0, -1, 0);
}

/* a WRITE whose packets do not add up to the RETH's DMA length */
static int t_len_write_last_short(void)
{
	return len_case(WIRE_OP_RC_WRITE_FIRST, PKT, 2 * PKT, WIRE_OP_RC_WRITE_LAST, 512, -1, 0);
}

static int t_len_write_last_long(void)
{
	return len_case(WIRE_OP_RC_WRITE_FIRST, PKT, 1500, WIRE_OP_RC_WRITE_LAST, 512, -1, 0);
}

static int t_len_write_only(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_WRITE_ONLY, 200, -1, 100);
}

static int t_len_write_middle_over(void)
{
	return len_case(WIRE_OP_RC_WRITE_FIRST, PKT, 1500, WIRE_OP_RC_WRITE_MIDDLE, PKT, -1, 0);
}

/* a RETH DMA length over 2^31 */
static int t_len_dma_max(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_READ_REQ, 0, -1, 0x80000001u);
}

/* pad count: on a FIRST (its payload is then not one MTU); one that does
 * not align the payload (5 bytes, pad 0; 8 bytes, pad 1 - on the wire
 * 9 bytes); on a READ request */
static int t_pad_first(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_SEND_FIRST, PKT - 1, 1, 0);
}

static int t_pad_misaligned(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_SEND_ONLY, 5, 0, 0);
}

static int t_pad_last(void)
{
	return len_case(WIRE_OP_RC_WRITE_FIRST, PKT, PKT + 8, WIRE_OP_RC_WRITE_LAST, 8, 1, 0);
}

static int t_pad_read(void)
{
	return len_case(NONE, 0, 0, WIRE_OP_RC_READ_REQ, 0, 2, 64);
}

/* ================= responder: the other checks, in IBTA's order ================= */

/* PSN ahead of the expected one: one sequence NAK for the gap, at the
 * expected PSN; the QP stays in RTS and takes the expected PSN next */
static int t_psn_ahead(void)
{
	struct t t;
	struct wire_pkt d;
	uint32_t e;

	if (t_setup(&t, IBV_QPT_RC, 1, 2))
		return 1;
	e = t.psn;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, e + 3, 100);
	t_send(&t, &d);
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, e + 4, 100);
	t_send(&t, &d);
	CHECK_EQ(nrec, 1);
	CHECK_EQ(t_acks(0, wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR), e), 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(t_cnt(&t).out_of_seq, 2);
	CHECK_EQ(t_cnt(&t).seq_naks_sent, 1);
	t_req(&t, WIRE_OP_RC_SEND_ONLY, 100);
	CHECK_EQ(t_acks(1, wire_aeth_ack(WIRE_AETH_CREDITS_INVALID), e), 1);
	struct uroce_cqe c[2];
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	pair_fini(&t.p);
	return 0;
}

/* Duplicates (IBTA 9.7.5.1.2): answered again, never executed twice. */
static int dup_setup(struct t *t, uint8_t op, uint32_t len)
{
	if (t_setup(t, IBV_QPT_RC, 1, 2))
		return -1;
	t_req(t, op, len);
	return 0;
}

/* SEND: ACKed again at the last PSN taken; one receive completion only */
static int t_dup_send(void)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[4];
	unsigned mark;

	if (dup_setup(&t, WIRE_OP_RC_SEND_ONLY, 200))
		return 1;
	mark = nrec;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, t.psn - 1, 200);
	t_send(&t, &d);
	CHECK_EQ(nrec - mark, 1);
	CHECK_EQ(t_acks(mark, wire_aeth_ack(WIRE_AETH_CREDITS_INVALID), t.psn - 1), 1);
	CHECK_EQ(sim_poll(t.q->rcq, c, 4), 1);
	CHECK_EQ(t_cnt(&t).dup_requests, 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

/* WRITE: ACKed again, the memory not written again */
static int t_dup_write(void)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;

	if (dup_setup(&t, WIRE_OP_RC_WRITE_ONLY, 200))
		return 1;
	CHECK(!memcmp(t.mr->buf, pat, 200));
	memset(t.mr->buf, 0xee, 200); /* the application wrote there since */
	mark = nrec;
	t_pkt(&t, &d, WIRE_OP_RC_WRITE_ONLY, t.psn - 1, 200);
	t_send(&t, &d);
	CHECK_EQ(t_acks(mark, wire_aeth_ack(WIRE_AETH_CREDITS_INVALID), t.psn - 1), 1);
	CHECK_EQ(((uint8_t *)t.mr->buf)[0], 0xee);
	CHECK_EQ(t_cnt(&t).dup_requests, 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

/* READ: the responses again from the responder resource, whole or from
 * the middle (a re-issued READ with its VA and length moved on) */
static int t_dup_read(void)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;
	uint32_t psn;

	if (t_setup(&t, IBV_QPT_RC, 1, 0))
		return 1;
	psn = t.psn;
	t_pkt(&t, &d, WIRE_OP_RC_READ_REQ, psn, 0);
	d.reth.dma_len = 3 * PKT;
	t_send(&t, &d);
	CHECK_EQ(nrec, 3);
	t.psn = psn + 3;
	mark = nrec;
	t_send(&t, &d); /* the same request again */
	CHECK_EQ(nrec - mark, 3);
	CHECK(rec[mark].op == WIRE_OP_RC_READ_RESP_FIRST && rec[mark].psn == psn);
	mark = nrec;
	t_pkt(&t, &d, WIRE_OP_RC_READ_REQ, psn + 1, 0); /* from its second response */
	d.reth.va += PKT;
	d.reth.dma_len = 2 * PKT;
	t_send(&t, &d);
	CHECK_EQ(nrec - mark, 2);
	CHECK(rec[mark].psn == psn + 1 && rec[mark].len == PKT);
	CHECK(rec[mark + 1].psn == psn + 2 && rec[mark + 1].len == PKT);
	CHECK_EQ(t_cnt(&t).dup_requests, 2);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

/* atomics: the original value again, the operation not done twice */
static int dup_atomic(uint8_t op)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;
	uint64_t v = 40, *m;

	if (t_setup(&t, IBV_QPT_RC, 1, 0))
		return 1;
	m = (uint64_t *)((uint8_t *)t.mr->buf + 8192);
	*m = v;
	t_pkt(&t, &d, op, t.psn, 0);
	d.atomiceth.compare = 40;
	d.atomiceth.swap_add = 7;
	t_send(&t, &d);
	CHECK_EQ(nrec, 1);
	CHECK(rec[0].op == WIRE_OP_RC_ATOMIC_ACK && rec[0].orig == 40);
	CHECK_EQ(*m, op == WIRE_OP_RC_FETCH_ADD ? 47 : 7);
	*m = 40; /* a CmpSwap done twice would swap again */
	mark = nrec;
	t_send(&t, &d);
	CHECK_EQ(nrec - mark, 1);
	CHECK(rec[mark].op == WIRE_OP_RC_ATOMIC_ACK && rec[mark].orig == 40);
	CHECK_EQ(*m, 40);
	CHECK_EQ(t_cnt(&t).dup_requests, 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

static int t_dup_fetch_add(void) { return dup_atomic(WIRE_OP_RC_FETCH_ADD); }
static int t_dup_cmp_swap(void) { return dup_atomic(WIRE_OP_RC_CMP_SWAP); }

/* One request op of len bytes, edited by edit (the packet, or the QP
 * before it arrives), to a fresh RC responder with nrecv receives: the
 * class A/C error of NAK code (t_expect_fatal), nothing executed. */
static int fatal_case(unsigned nrecv, uint8_t op, uint32_t len,
		      void (*edit)(struct t *t, struct wire_pkt *d), uint8_t code, int ev, int wc)
{
	struct t t;
	struct wire_pkt d;

	if (t_setup(&t, IBV_QPT_RC, 1, nrecv))
		return 1;
	t_pkt(&t, &d, op, t.psn, len);
	edit(&t, &d);
	t_send(&t, &d);
	t_expect_fatal(&t, 0, code, t.psn, ev, wc);
	CHECK(xt_zero(t.mr->buf, 64));
	CHECK(xt_zero((uint8_t *)t.mr->buf + 8192, 16));
	pair_fini(&t.p);
	return 0;
}

/* opcode not allowed by the QP's access flags: invalid request */
static void ed_no_write(struct t *t, struct wire_pkt *d)
{
	struct ibv_qp_attr a;

	(void)d;
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(emu_qp_modify(t->q->qp, &a, IBV_QP_ACCESS_FLAGS), 0);
}

static int t_op_access(void)
{
	return fatal_case(1, WIRE_OP_RC_WRITE_ONLY, 64, ed_no_write, WIRE_NAK_INVALID_REQ,
			  IBV_EVENT_QP_REQ_ERR, 0);
}

/* no receive WQE: RNR NAK with the QP's min_rnr_timer, no state change */
static int t_rnr(void)
{
	struct t t;

	if (t_setup(&t, IBV_QPT_RC, 1, 0))
		return 1;
	t_req(&t, WIRE_OP_RC_SEND_ONLY, 64);
	CHECK_EQ(nrec, 1);
	CHECK_EQ(t_acks(0, wire_aeth_rnr_nak(1), t.psn - 1), 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(t_cnt(&t).rnr_naks_sent, 1);
	pair_fini(&t.p);
	return 0;
}

/* R_Key violation: NAK remote access, QP_ACCESS_ERR, nothing written */
static void ed_rkey(struct t *t, struct wire_pkt *d)
{
	(void)t;
	d->reth.rkey ^= 0x100;
}

static int t_rkey(void)
{
	return fatal_case(1, WIRE_OP_RC_WRITE_ONLY, 64, ed_rkey, WIRE_NAK_REM_ACCESS_ERR,
			  IBV_EVENT_QP_ACCESS_ERR, 0);
}

/* the same for a READ (no READ response goes out: t_expect_fatal counts
 * one frame) and an atomic (not executed): each kind's key is checked
 * before it executes, not only the WRITE's, whose packets are checked
 * again while they land */
static void ed_rkey_read(struct t *t, struct wire_pkt *d)
{
	(void)t;
	d->reth.rkey ^= 0x100;
	d->reth.dma_len = 64;
}

static void ed_rkey_atomic(struct t *t, struct wire_pkt *d)
{
	(void)t;
	d->atomiceth.rkey ^= 0x100;
}

/* a WRITE whose range ends past its MR: a bounds violation */
static void ed_rkey_bounds(struct t *t, struct wire_pkt *d)
{
	d->reth.va = (uintptr_t)t->mr->buf + t->mr->len - 32;
}

static int t_rkey_read(void)
{
	return fatal_case(1, WIRE_OP_RC_READ_REQ, 0, ed_rkey_read, WIRE_NAK_REM_ACCESS_ERR,
			  IBV_EVENT_QP_ACCESS_ERR, 0);
}

static int t_rkey_atomic(void)
{
	return fatal_case(1, WIRE_OP_RC_FETCH_ADD, 0, ed_rkey_atomic, WIRE_NAK_REM_ACCESS_ERR,
			  IBV_EVENT_QP_ACCESS_ERR, 0);
}

static int t_rkey_bounds(void)
{
	return fatal_case(1, WIRE_OP_RC_WRITE_ONLY, 64, ed_rkey_bounds, WIRE_NAK_REM_ACCESS_ERR,
			  IBV_EVENT_QP_ACCESS_ERR, 0);
}

/* a SEND longer than the receive: remote operational error (as rxe and
 * ConnectX say; IBTA: invalid request), the receive LOC_LEN_ERR */
static void ed_short_recv(struct t *t, struct wire_pkt *d)
{
	struct uroce_sge r = xt_sge(t->mr, 4096, 100);

	(void)d;
	sim_post_recv(t->q, 100, &r, 1);
}

static int t_send_too_long(void)
{
	return fatal_case(0, WIRE_OP_RC_SEND_ONLY, 200, ed_short_recv, WIRE_NAK_REM_OP_ERR, 0,
			  IBV_WC_LOC_LEN_ERR);
}

/* an atomic to an address not 8-aligned: invalid request, not executed */
static void ed_misalign(struct t *t, struct wire_pkt *d)
{
	(void)t;
	d->atomiceth.va += 4;
}

static int t_atomic_align(void)
{
	return fatal_case(1, WIRE_OP_RC_FETCH_ADD, 0, ed_misalign, WIRE_NAK_INVALID_REQ,
			  IBV_EVENT_QP_REQ_ERR, 0);
}

/* READ/atomic with max_dest_rd_atomic 0: invalid request */
static const struct sim_conn conn0 = {
	.mtu = IBV_MTU_1024,
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		  IBV_ACCESS_LOCAL_WRITE,
	.psn = -1, .rd_atomic = 0, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
};

static int t_no_rd_res(void)
{
	struct t t;
	struct ibv_qp_attr a;
	unsigned mark;
	uint32_t psn;

	if (t_setup(&t, IBV_QPT_RC, 1, 0))
		return 1;
	/* max_dest_rd_atomic is set at RTR: connect B again with 0 */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(t.q->qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(sim_connect_with(t.q, &t.p.a, &conn0), 0);
	struct uroce_sge r = xt_sge(t.mr, 0, RECV_LEN);
	sim_post_recv(t.q, 100, &r, 1);
	t.psn = t.q->qp->x->epsn;
	mark = nrec;
	psn = t.psn;
	t_req(&t, WIRE_OP_RC_READ_REQ, 0);
	t_expect_fatal(&t, mark, WIRE_NAK_INVALID_REQ, psn, IBV_EVENT_QP_REQ_ERR, 0);
	pair_fini(&t.p);
	return 0;
}

/* SEND with invalidate of a key that is no MR or window of the PD:
 * invalid request, the receive REM_INV_REQ_ERR */
static int t_bad_inv(void)
{
	struct t t;
	struct wire_pkt d;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 1, 1))
		return 1;
	mark = nrec;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY_INV, t.psn, 100);
	d.ieth_rkey = 0x7777;
	t_send(&t, &d);
	t_expect_fatal(&t, mark, WIRE_NAK_INVALID_REQ, t.psn, IBV_EVENT_QP_REQ_ERR,
		       IBV_WC_REM_INV_REQ_ERR);
	pair_fini(&t.p);
	return 0;
}

/* ================= header validation (IBTA 9.6): silent drops ================= */

/* The frame d, corrupted by edit after it is built (its ICRC is computed
 * again unless keep_icrc), to the QP under test: nothing answered, the
 * QP unchanged, the port's drop counter drop (or the QP's xdrop) up. */
static void hdr_send_raw(struct t *t, const struct wire_pkt *d, void (*edit)(uint8_t *f, size_t *n),
			 bool icrc_again)
{
	static uint8_t f[9000];
	size_t n = 0;

	CHECK_EQ(wire_build(d, f, sizeof(f), WIRE_BUILD_KEEP_PAD, &n), 0);
	if (edit)
		edit(f, &n);
	if (icrc_again) {
		uint32_t v;

		CHECK(wire_icrc_calc(f + 14, n - 14 - 4, &v));
		wire_icrc_put(f + n - 4, v);
	}
	emu_port_rx_frame(&t->p.s.n[t->dut].dev, f, (uint32_t)n);
	sim_run(&t->p.s, RUN_NS);
}

static int hdr_case(void (*edit)(uint8_t *f, size_t *n), bool icrc_again,
		    void (*pkt_edit)(struct t *t, struct wire_pkt *d), int drop, int xdrop,
		    int reason)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[2];
	uint64_t before, rbefore;

	if (t_setup(&t, IBV_QPT_RC, 1, 1))
		return 1;
	struct emu_dev *dev = &t.p.s.n[1].dev;
	before = drop >= 0 ? dev->cnt.drops[drop] : 0;
	/* the parser's reason too: a later check that happens to drop the
	 * same packet (a reserved opcode also fails the payload check) must
	 * not stand in for the one of the row */
	rbefore = reason >= 0 ? dev->cnt.rx_reason[reason] : 0;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, t.psn, 100);
	if (pkt_edit)
		pkt_edit(&t, &d);
	hdr_send_raw(&t, &d, edit, icrc_again);
	t_expect_silent(&t, 0, IBV_QPS_RTS);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 0);
	if (drop >= 0)
		CHECK_EQ(dev->cnt.drops[drop], before + 1);
	if (xdrop >= 0)
		CHECK_EQ(t_cnt(&t).drops[xdrop], 1);
	if (reason >= 0)
		CHECK_EQ(dev->cnt.rx_reason[reason], rbefore + 1);
	/* and the QP takes the right packet at that PSN afterwards */
	t_req(&t, WIRE_OP_RC_SEND_ONLY, 100);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 1);
	pair_fini(&t.p);
	return 0;
}

static void ed_icrc(uint8_t *f, size_t *n) { f[*n - 1] ^= 1; }
static void ed_tver(uint8_t *f, size_t *n) { (void)n; f[14 + 28 + 1] |= 1; }
static void ed_opcode(uint8_t *f, size_t *n) { (void)n; f[14 + 28] = 0x15; }
/* the opcode's headers cut: an RC WRITE ONLY's RETH in a SEND's frame */
static void ed_trunc(uint8_t *f, size_t *n)
{
	f[14 + 28] = WIRE_OP_RC_WRITE_ONLY;
	*n = 14 + 20 + 8 + 12 + 8 + 4;
	/* IP and UDP lengths follow the cut */
	wire_put_be16(f + 14 + 2, (uint16_t)(*n - 14));
	wire_put_be16(f + 14 + 24, (uint16_t)(*n - 14 - 20));
	wire_put_be16(f + 14 + 10, 0);
	wire_put_be16(f + 14 + 10, wire_ipv4_csum(f + 14, 20));
}

static void pe_pkey(struct t *t, struct wire_pkt *d) { (void)t; d->bth.pkey = 0x1234; }
static void pe_qpn(struct t *t, struct wire_pkt *d) { (void)t; d->bth.dqpn = 0x7777; }
static void pe_uc_op(struct t *t, struct wire_pkt *d) { (void)t; d->bth.opcode = WIRE_OP_UC_SEND_ONLY; }
static void pe_src(struct t *t, struct wire_pkt *d) { (void)t; d->ip.src.raw[15] ^= 0x40; }

static int t_hdr_icrc(void) { return hdr_case(ed_icrc, false, NULL, EMU_DROP_ICRC, -1, WIRE_R_ICRC); }
static int t_hdr_tver(void) { return hdr_case(ed_tver, true, NULL, EMU_DROP_PARSE, -1, WIRE_R_BTH_TVER); }
static int t_hdr_opcode(void) { return hdr_case(ed_opcode, true, NULL, EMU_DROP_PARSE, -1, WIRE_R_OPCODE); }
static int t_hdr_trunc(void) { return hdr_case(ed_trunc, true, NULL, EMU_DROP_PARSE, -1, WIRE_R_TRUNC_EXT); }
static int t_hdr_pkey(void) { return hdr_case(NULL, false, pe_pkey, EMU_DROP_PKEY, -1, -1); }
static int t_hdr_qpn(void) { return hdr_case(NULL, false, pe_qpn, EMU_DROP_UNKNOWN_QP, -1, -1); }
static int t_hdr_qp_type(void) { return hdr_case(NULL, false, pe_uc_op, -1, EMU_XDROP_OPCODE, -1); }
static int t_hdr_src(void) { return hdr_case(NULL, false, pe_src, EMU_DROP_SRC_MISMATCH, EMU_XDROP_SRC, -1); }

/* A P_Key that matches the default one as a limited member (0x7fff) is
 * taken: the port's key is a full member */
static int t_hdr_pkey_limited(void)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_RC, 1, 1))
		return 1;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, t.psn, 100);
	d.bth.pkey = 0x7fff;
	t_send(&t, &d);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 1);
	CHECK_EQ(t_acks(0, wire_aeth_ack(WIRE_AETH_CREDITS_INVALID), t.psn), 1);
	pair_fini(&t.p);
	return 0;
}

/* a request to a QP that takes none yet (INIT) */
static int t_hdr_qp_state(void)
{
	struct t t;
	struct ibv_qp_attr a;
	struct wire_pkt d;

	if (t_setup(&t, IBV_QPT_RC, 1, 1))
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(t.q->qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(emu_qp_modify(t.q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						   IBV_QP_ACCESS_FLAGS), 0);
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, t.psn, 100);
	t_send(&t, &d);
	t_expect_silent(&t, 0, IBV_QPS_INIT);
	CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_QP_STATE], 1);
	pair_fini(&t.p);
	return 0;
}

/* ================= UC and UD: silent drops (IBTA 9.8, 9.9.3) ================= */

/* After the faulty packet(s), nothing answered, the QP in RTS, the xdrop
 * counted; a good SEND ONLY then lands in the first receive from byte 0. */
static void uc_after(struct t *t, int xdrop, uint32_t n)
{
	struct uroce_cqe c[4];

	t_expect_silent(t, 0, IBV_QPS_RTS);
	CHECK_EQ(sim_poll(t->q->rcq, c, 4), 0);
	CHECK_EQ(t_cnt(t).drops[xdrop], n);
	memset(t->mr->buf, 0, 2 * RECV_LEN);
	t_req(t, WIRE_OP_RC_SEND_ONLY, 300);
	CHECK_EQ(sim_poll(t->q->rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 100);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, 300);
	CHECK(!memcmp(t->mr->buf, pat, 300));
}

/* a MIDDLE with no message in progress: dropped with the rest of it */
static int t_uc_seq(void)
{
	struct t t;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	t_req(&t, WIRE_OP_RC_SEND_MIDDLE, PKT);
	t_req(&t, WIRE_OP_RC_SEND_LAST, 100);
	uc_after(&t, EMU_XDROP_UC_INV_REQ, 1);
	CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_UC_GAP], 1);
	pair_fini(&t.p);
	return 0;
}

/* a FIRST inside a message: both dropped */
static int t_uc_seq_first(void)
{
	struct t t;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	t_req(&t, WIRE_OP_RC_SEND_FIRST, PKT);
	t_req(&t, WIRE_OP_RC_SEND_FIRST, PKT);
	t_req(&t, WIRE_OP_RC_SEND_LAST, 100);
	uc_after(&t, EMU_XDROP_UC_INV_REQ, 1);
	pair_fini(&t.p);
	return 0;
}

/* a length fault: a misaligned pad, a short FIRST */
static int t_uc_len(void)
{
	struct t t;
	struct wire_pkt d;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, t.psn, 5);
	d.bth.pad = 0;
	t_send(&t, &d);
	t.psn++;
	t_req(&t, WIRE_OP_RC_SEND_FIRST, 512);
	uc_after(&t, EMU_XDROP_UC_INV_REQ, 2);
	pair_fini(&t.p);
	return 0;
}

/* a PSN gap: the message in progress is abandoned (uc-gap) */
static int t_uc_gap(void)
{
	struct t t;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	t_req(&t, WIRE_OP_RC_SEND_FIRST, PKT);
	t.psn++; /* the MIDDLE is lost */
	t_req(&t, WIRE_OP_RC_SEND_LAST, 100);
	uc_after(&t, EMU_XDROP_UC_GAP, 1);
	pair_fini(&t.p);
	return 0;
}

/* a WRITE with a bad R_Key; a WRITE to a QP without REMOTE_WRITE */
static int t_uc_rkey(void)
{
	struct t t;
	struct wire_pkt d;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	t_pkt(&t, &d, WIRE_OP_RC_WRITE_ONLY, t.psn, 64);
	d.reth.rkey ^= 0x100;
	t_send(&t, &d);
	t.psn++;
	CHECK(xt_zero(t.mr->buf, 64));
	uc_after(&t, EMU_XDROP_UC_RKEY, 1);
	pair_fini(&t.p);
	return 0;
}

static int t_uc_access(void)
{
	struct t t;
	struct ibv_qp_attr a;

	if (t_setup(&t, IBV_QPT_UC, 1, 2))
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = 0;
	CHECK_EQ(emu_qp_modify(t.q->qp, &a, IBV_QP_ACCESS_FLAGS), 0);
	t_req(&t, WIRE_OP_RC_WRITE_ONLY, 64);
	CHECK(xt_zero(t.mr->buf, 64));
	uc_after(&t, EMU_XDROP_UC_INV_REQ, 1);
	pair_fini(&t.p);
	return 0;
}

/* no receive posted: dropped (UC has no RNR) */
static int t_uc_no_recv(void)
{
	struct t t;
	struct uroce_sge r;

	if (t_setup(&t, IBV_QPT_UC, 1, 0))
		return 1;
	t_req(&t, WIRE_OP_RC_SEND_ONLY, 64);
	r = xt_sge(t.mr, 0, RECV_LEN);
	sim_post_recv(t.q, 100, &r, 1);
	uc_after(&t, EMU_XDROP_UC_NO_RECV, 1);
	pair_fini(&t.p);
	return 0;
}

/* UD: a wrong Q_Key, a length fault, no receive posted: dropped */
static int ud_case(int what)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_UD, 1, what == 2 ? 0 : 1))
		return 1;
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, 0, 64);
	if (what == 0)
		d.deth.qkey ^= 1;
	if (what == 1)
		d.bth.pad = 1; /* 64 bytes, pad 1: 63 bytes not aligned */
	t_send(&t, &d);
	t_expect_silent(&t, 0, IBV_QPS_RTS);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 0);
	CHECK_EQ(t_cnt(&t).drops[what == 2 ? EMU_XDROP_UD_NO_RECV : EMU_XDROP_UD_INVALID], 1);
	if (what == 2) {
		struct uroce_sge r = xt_sge(t.mr, 0, RECV_LEN);

		sim_post_recv(t.q, 100, &r, 1);
	}
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, 0, 64);
	t_send(&t, &d);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, 40 + 64);
	pair_fini(&t.p);
	return 0;
}

static int t_ud_qkey(void) { return ud_case(0); }
static int t_ud_len(void) { return ud_case(1); }
static int t_ud_no_recv(void) { return ud_case(2); }

/* a datagram longer than the receive: the receive LOC_LEN_ERR, no answer */
static int t_ud_too_long(void)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[2];
	struct uroce_sge r;

	if (t_setup(&t, IBV_QPT_UD, 1, 0))
		return 1;
	r = xt_sge(t.mr, 0, 40 + 32);
	sim_post_recv(t.q, 100, &r, 1);
	t_pkt(&t, &d, WIRE_OP_RC_SEND_ONLY, 0, 64);
	t_send(&t, &d);
	t_expect_silent(&t, 0, IBV_QPS_RTS);
	CHECK_EQ(sim_poll(t.q->rcq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_LOC_LEN_ERR);
	pair_fini(&t.p);
	return 0;
}

/* ================= requester (IBTA 9.7.5.2) ================= */

/* A posts one signaled op of len bytes; its request packets are recorded
 * (and kept from B). Returns the PSN of the first. */
static uint32_t q_post(struct t *t, uint8_t op, uint32_t len, uint64_t id)
{
	unsigned mark = nrec;

	xt_post(&t->p, id, op, 0, len, 0);
	sim_run(&t->p.s, RUN_NS);
	CHECK(nrec > mark);
	return nrec > mark ? rec[mark].psn : 0;
}

/* A response op at psn, len bytes of payload, syndrome syn */
static void q_resp(struct t *t, uint8_t op, uint32_t psn, uint32_t len, uint8_t syn)
{
	struct wire_pkt d;

	t_pkt(t, &d, op, psn, len);
	d.aeth.syndrome = syn;
	t_send(t, &d);
}

/* The requester's verdict: one completion id with status, the QP in
 * state, and no request sent again (mark: recorded frames before). */
static void q_expect(struct t *t, unsigned mark, uint64_t id, int status,
		     enum ibv_qp_state state)
{
	struct uroce_cqe c[4];
	int n = sim_poll(t->q->scq, c, 4);

	CHECK(n >= 1);
	if (n >= 1) {
		CHECK_EQ(c[0].wr_id, id);
		CHECK_EQ(c[0].status, status);
	}
	CHECK_EQ(t->q->qp->attr.qp_state, state);
	CHECK_EQ(nrec, mark);
	CHECK_EQ(t_cnt(t).retransmits, 0);
	CHECK_EQ(t_cnt(t).timeouts, 0);
}

#define ACK_SYN 0x1f /* ACK, no credit information (what rxe sends) */

/* Issue 26, case 2: a READ of 1536 bytes answered FIRST, then a MIDDLE
 * that carries the last 512 bytes and the AETH a LAST would have: a bad
 * response at once (rxe fails the WR at once too), not three re-reads
 * and RETRY_EXC_ERR after the timeouts. */
static int t_resp_read_middle_aeth(void)
{
	struct t t;
	uint8_t buf[516];
	struct wire_pkt d;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_RDMA_READ, 1536, 7);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_READ_RESP_FIRST, psn, PKT, ACK_SYN);
	t_pkt(&t, &d, WIRE_OP_RC_READ_RESP_MIDDLE, psn + 1, sizeof(buf));
	wire_put_be32(buf, (uint32_t)ACK_SYN << 24 | 1);
	memcpy(buf + 4, pat, 512);
	d.payload = buf;
	t_send(&t, &d);
	q_expect(&t, mark, 7, IBV_WC_BAD_RESP_ERR, IBV_QPS_ERR);
	CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_BAD_RESP], 1);
	pair_fini(&t.p);
	return 0;
}

/* One READ of rlen bytes (posted by A) answered by the responses resp[]
 * (opcode, length, syndrome; PSNs from the READ's): the last one is a bad
 * response, the READ fails at once with BAD_RESP_ERR. */
struct rsp {
	uint8_t op;
	uint32_t len;
	uint8_t syn;
	int pad; /* -1: its own */
};

static int read_bad(uint32_t rlen, const struct rsp *r, unsigned n)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_RDMA_READ, rlen, 9);
	mark = nrec;
	for (unsigned i = 0; i < n; i++) {
		struct wire_pkt d;

		t_pkt(&t, &d, r[i].op, psn + i, r[i].len);
		d.aeth.syndrome = r[i].syn;
		if (r[i].pad >= 0)
			d.bth.pad = (uint8_t)r[i].pad;
		t_send(&t, &d);
	}
	q_expect(&t, mark, 9, IBV_WC_BAD_RESP_ERR, IBV_QPS_ERR);
	CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_BAD_RESP], 1);
	pair_fini(&t.p);
	return 0;
}

static int t_resp_read_short(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_ONLY, 96, ACK_SYN, -1 } };
	return read_bad(100, r, 1);
}

static int t_resp_read_long(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_FIRST, PKT, ACK_SYN, -1 },
					{ WIRE_OP_RC_READ_RESP_LAST, 600, ACK_SYN, -1 } };
	return read_bad(1536, r, 2);
}

static int t_resp_read_no_first(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_MIDDLE, PKT, ACK_SYN, -1 } };
	return read_bad(1536, r, 1);
}

static int t_resp_read_only_multi(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_ONLY, PKT, ACK_SYN, -1 } };
	return read_bad(1536, r, 1);
}

static int t_resp_read_first_again(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_FIRST, PKT, ACK_SYN, -1 },
					{ WIRE_OP_RC_READ_RESP_FIRST, PKT, ACK_SYN, -1 } };
	return read_bad(3 * PKT, r, 2);
}

static int t_resp_read_nak_aeth(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_ONLY, 100, 0x61, -1 } };
	return read_bad(100, r, 1);
}

static int t_resp_read_empty_first(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_FIRST, 0, ACK_SYN, -1 } };
	return read_bad(1536, r, 1);
}

static int t_resp_read_pad(void)
{
	static const struct rsp r[] = { { WIRE_OP_RC_READ_RESP_ONLY, 100, ACK_SYN, 2 } };
	return read_bad(100, r, 1);
}

/* a response of the wrong kind for the outstanding request: READ data for
 * a WRITE, an atomic result for a READ or a SEND, a zero-length READ
 * response (the answer to FLUSH / ATOMIC WRITE) for a SEND, an ACK that
 * carries payload */
static int wrong_kind(uint8_t wr, uint32_t wlen, uint8_t op, uint32_t len, int status)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, wr, wlen, 11);
	mark = nrec;
	q_resp(&t, op, psn, len, ACK_SYN);
	q_expect(&t, mark, 11, status, status ? IBV_QPS_ERR : IBV_QPS_RTS);
	if (status == IBV_WC_BAD_RESP_ERR)
		CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_BAD_RESP], 1);
	pair_fini(&t.p);
	return 0;
}

static int t_resp_read_for_write(void)
{
	return wrong_kind(IBV_WR_RDMA_WRITE, 100, WIRE_OP_RC_READ_RESP_ONLY, 100, IBV_WC_BAD_RESP_ERR);
}

static int t_resp_atomic_for_read(void)
{
	return wrong_kind(IBV_WR_RDMA_READ, 8, WIRE_OP_RC_ATOMIC_ACK, 0, IBV_WC_BAD_RESP_ERR);
}

static int t_resp_atomic_for_send(void)
{
	return wrong_kind(IBV_WR_SEND, 8, WIRE_OP_RC_ATOMIC_ACK, 0, IBV_WC_BAD_RESP_ERR);
}

static int t_resp_zero_read_for_send(void)
{
	return wrong_kind(IBV_WR_SEND, 8, WIRE_OP_RC_READ_RESP_ONLY, 0, IBV_WC_BAD_RESP_ERR);
}

static int t_resp_ack_payload(void)
{
	return wrong_kind(IBV_WR_SEND, 8, WIRE_OP_RC_ACK, 4, IBV_WC_BAD_RESP_ERR);
}

/* a bad response for the WQE after the head: the head, a WRITE, is
 * acknowledged by it as by any later response and completes; the READ it
 * answers fails - once with a length fault (the parser's), once with a
 * NAK syndrome on READ data */
static int bad_after_write(uint8_t syn, int pad)
{
	struct t t;
	struct wire_pkt d;
	struct uroce_cqe c[4];
	uint32_t w, r;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	w = q_post(&t, IBV_WR_RDMA_WRITE, 100, 21);
	r = q_post(&t, IBV_WR_RDMA_READ, 100, 22);
	CHECK_EQ(r, wire_psn_next(w));
	t_pkt(&t, &d, WIRE_OP_RC_READ_RESP_ONLY, r, 100);
	d.aeth.syndrome = syn;
	if (pad >= 0)
		d.bth.pad = (uint8_t)pad;
	t_send(&t, &d);
	CHECK_EQ(sim_poll(t.q->scq, c, 4), 2);
	CHECK(c[0].wr_id == 21 && c[0].status == IBV_WC_SUCCESS);
	CHECK(c[1].wr_id == 22 && c[1].status == IBV_WC_BAD_RESP_ERR);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_ERR);
	pair_fini(&t.p);
	return 0;
}

static int t_resp_bad_after_write(void)
{
	return bad_after_write(ACK_SYN, 3) || bad_after_write(0x61, -1);
}

/* an atomic result with a NAK syndrome */
static int t_resp_atomic_nak_aeth(void)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 12);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_ATOMIC_ACK, psn, 0, wire_aeth_nak(WIRE_NAK_REM_ACCESS_ERR));
	q_expect(&t, mark, 12, IBV_WC_BAD_RESP_ERR, IBV_QPS_ERR);
	pair_fini(&t.p);
	return 0;
}

/* AETH syndromes: NAK codes (the responder's verdicts), a reserved NAK
 * code (rxe: remote operational error), a reserved type (bad response),
 * reserved bit 7 (ignored) */
static int syn_case(uint8_t syn, int status, int xdrop)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_SEND, 100, 13);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_ACK, psn, 0, syn);
	q_expect(&t, mark, 13, status, status ? IBV_QPS_ERR : IBV_QPS_RTS);
	if (xdrop >= 0)
		CHECK_EQ(t_cnt(&t).drops[xdrop], 1);
	pair_fini(&t.p);
	return 0;
}

static int t_nak_inv_req(void)
{
	return syn_case(wire_aeth_nak(WIRE_NAK_INVALID_REQ), IBV_WC_REM_INV_REQ_ERR, -1);
}

static int t_nak_rem_access(void)
{
	return syn_case(wire_aeth_nak(WIRE_NAK_REM_ACCESS_ERR), IBV_WC_REM_ACCESS_ERR, -1);
}

static int t_nak_rem_op(void)
{
	return syn_case(wire_aeth_nak(WIRE_NAK_REM_OP_ERR), IBV_WC_REM_OP_ERR, -1);
}

static int t_nak_reserved(void)
{
	return syn_case(wire_aeth_nak(7), IBV_WC_REM_OP_ERR, EMU_XDROP_ACK_SYNDROME);
}

static int t_syn_reserved_type(void)
{
	return syn_case(0x40 | 0x1f, IBV_WC_BAD_RESP_ERR, EMU_XDROP_ACK_SYNDROME);
}

static int t_syn_bit7(void)
{
	return syn_case(0x80 | ACK_SYN, IBV_WC_SUCCESS, -1);
}

/* RNR NAK: the request goes again after the NAK's timer (code 1: 10 us),
 * nothing completes; PSN sequence NAK: go back to its PSN at once */
static int t_nak_rnr(void)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_SEND, 100, 14);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_ACK, psn, 0, wire_aeth_rnr_nak(1));
	CHECK_EQ(nrec, mark + 1); /* resent within RUN_NS (after 10 us) */
	CHECK_EQ(rec[mark].psn, psn);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(t_cnt(&t).rnr_naks_rcvd, 1);
	struct uroce_cqe c[2];
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 0);
	pair_fini(&t.p);
	return 0;
}

static int t_nak_seq(void)
{
	struct t t;
	uint32_t psn;
	unsigned mark;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_SEND, 3 * PKT, 15);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_ACK, psn + 1, 0, wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR));
	CHECK_EQ(nrec, mark + 2); /* psn + 1 and psn + 2 again */
	CHECK_EQ(rec[mark].psn, psn + 1);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(t_cnt(&t).seq_naks_rcvd, 1);
	pair_fini(&t.p);
	return 0;
}

/* ghosts: an ACK and a READ response for PSNs no request took - never
 * sent, or numbered but not sent yet (beyond the send window); dropped
 * ("ack-psn"), the QP and its WQE untouched; the real ACK completes it */
static int ghost_case(bool unsent, uint8_t op)
{
	struct t t;
	uint32_t psn, ghost;
	unsigned mark;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	/* 200 packets: the first send window (64) leaves the rest numbered
	 * but not sent */
	psn = q_post(&t, IBV_WR_RDMA_WRITE, unsent ? 200 * PKT : 100, 16);
	mark = nrec;
	ghost = unsent ? psn + 150 : psn + 1000;
	q_resp(&t, op, ghost, op == WIRE_OP_RC_ACK ? 0 : 100, ACK_SYN);
	CHECK_EQ(nrec, mark);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 0);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(t_cnt(&t).drops[EMU_XDROP_ACK_PSN], 1);
	CHECK_EQ(t.q->qp->x->acked_psn, psn);
	if (!unsent) {
		q_resp(&t, WIRE_OP_RC_ACK, psn, 0, ACK_SYN);
		CHECK_EQ(sim_poll(t.q->scq, c, 2), 1);
		CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	}
	pair_fini(&t.p);
	return 0;
}

static int t_ghost_ack(void) { return ghost_case(false, WIRE_OP_RC_ACK); }
static int t_ghost_ack_unsent(void) { return ghost_case(true, WIRE_OP_RC_ACK); }
static int t_ghost_read_resp(void) { return ghost_case(false, WIRE_OP_RC_READ_RESP_ONLY); }

/* duplicates: an ACK again, a READ response again, an ACK when nothing
 * is outstanding, an old response while a later WQE is the head - ignored */
static int t_dup_responses(void)
{
	struct t t;
	uint32_t psn;
	unsigned mark;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_RDMA_READ, 2 * PKT, 17);
	q_resp(&t, WIRE_OP_RC_READ_RESP_FIRST, psn, PKT, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_READ_RESP_FIRST, psn, PKT, ACK_SYN); /* again */
	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 1, PKT, ACK_SYN);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 1, PKT, ACK_SYN); /* nothing outstanding */
	q_resp(&t, WIRE_OP_RC_ACK, psn + 1, 0, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_ACK, psn, 0, 0x20); /* a stale RNR NAK */
	CHECK_EQ(nrec, mark);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 0);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	CHECK(!memcmp(t.mr->buf, pat, PKT) && !memcmp((uint8_t *)t.mr->buf + PKT, pat, PKT));
	/* the READ's response again, and an ACK of bytes at its PSN, while a
	 * WRITE is the head: old news, not a bad response for the WRITE */
	uint32_t wpsn = q_post(&t, IBV_WR_RDMA_WRITE, 64, 20);

	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 1, PKT, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_ACK, psn + 1, 4, ACK_SYN);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 0);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	q_resp(&t, WIRE_OP_RC_ACK, wpsn, 0, ACK_SYN);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 1);
	CHECK_EQ(c[0].wr_id, 20);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

/* a READ re-issued from the middle is answered from there as a new
 * message (FIRST.., uroce's responder) or as the rest of the old one
 * (MIDDLE.., rxe's): both complete it */
static int read_resumed(uint8_t op)
{
	struct t t;
	uint32_t psn;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_RDMA_READ, 3 * PKT, 18);
	q_resp(&t, WIRE_OP_RC_READ_RESP_FIRST, psn, PKT, ACK_SYN);
	/* the second is lost: the third makes the requester ask again */
	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 2, PKT, ACK_SYN);
	CHECK(nrec >= 2 && rec[nrec - 1].op == WIRE_OP_RC_READ_REQ && rec[nrec - 1].psn == psn + 1);
	q_resp(&t, op, psn + 1, PKT, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 2, PKT, ACK_SYN);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

/* rxe, asked again for a READ it had RNR-NAKed, answers from its first
 * PSN with MIDDLEs (its responder resource was already past FIRST): seen
 * in interop_rxe_loss. The READ was asked twice, so that completes it; a
 * MIDDLE first for a READ asked once is a bad response
 * (xport_ibta_resp_read_no_first). */
static int t_read_rnr_middle(void)
{
	struct t t;
	uint32_t psn;
	unsigned mark;
	struct uroce_cqe c[2];

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	psn = q_post(&t, IBV_WR_RDMA_READ, 3 * PKT, 20);
	mark = nrec;
	q_resp(&t, WIRE_OP_RC_ACK, psn, 0, wire_aeth_rnr_nak(1));
	CHECK(nrec == mark + 1 && rec[mark].op == WIRE_OP_RC_READ_REQ && rec[mark].psn == psn);
	q_resp(&t, WIRE_OP_RC_READ_RESP_MIDDLE, psn, PKT, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_READ_RESP_MIDDLE, psn + 1, PKT, ACK_SYN);
	q_resp(&t, WIRE_OP_RC_READ_RESP_LAST, psn + 2, PKT, ACK_SYN);
	CHECK_EQ(sim_poll(t.q->scq, c, 2), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(t.q->qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&t.p);
	return 0;
}

static int t_read_resumed_first(void) { return read_resumed(WIRE_OP_RC_READ_RESP_FIRST); }
static int t_read_resumed_middle(void) { return read_resumed(WIRE_OP_RC_READ_RESP_MIDDLE); }

/* A requester held by its send window whose QP then fails (found by
 * fuzz_rings' frame rewriting): the flush must take it off the device's
 * timer list, or the engine woke every 10 us for a dead QP. The window
 * itself is no stall (req.c, req_may_send): the engine waits for the
 * ACK or the QP's timer, not the 10 us retry of a stall. */
static int t_err_stalled_idle(void)
{
	struct t t;
	struct ibv_qp_attr a;

	if (t_setup(&t, IBV_QPT_RC, 0, 0))
		return 1;
	(void)q_post(&t, IBV_WR_RDMA_WRITE, 200 * PKT, 19);
	CHECK(!t.q->qp->x->req_stalled);
	CHECK_EQ(wire_psn_diff(t.q->qp->x->sq_psn_hw, t.q->qp->x->acked_psn),
		 (int32_t)xp_cwnd(t.q->qp->x));
	CHECK(emu_xport_next_deadline(&t.p.s.n[0].dev) > sim_now + 10000);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK_EQ(emu_qp_modify(t.q->qp, &a, IBV_QP_STATE), 0);
	sim_run(&t.p.s, RUN_NS);
	CHECK_EQ(emu_xport_next_deadline(&t.p.s.n[0].dev), UINT64_MAX);
	pair_fini(&t.p);
	return 0;
}

static const struct xt_test tests[] = {
	/* header validation */
	{ "ibta_hdr_icrc", t_hdr_icrc },
	{ "ibta_hdr_tver", t_hdr_tver },
	{ "ibta_hdr_opcode", t_hdr_opcode },
	{ "ibta_hdr_trunc", t_hdr_trunc },
	{ "ibta_hdr_pkey", t_hdr_pkey },
	{ "ibta_hdr_pkey_limited", t_hdr_pkey_limited },
	{ "ibta_hdr_qpn", t_hdr_qpn },
	{ "ibta_hdr_qp_type", t_hdr_qp_type },
	{ "ibta_hdr_qp_state", t_hdr_qp_state },
	{ "ibta_hdr_src", t_hdr_src },
	/* RC responder */
	{ "ibta_psn_ahead", t_psn_ahead },
	{ "ibta_dup_send", t_dup_send },
	{ "ibta_dup_write", t_dup_write },
	{ "ibta_dup_read", t_dup_read },
	{ "ibta_dup_fetch_add", t_dup_fetch_add },
	{ "ibta_dup_cmp_swap", t_dup_cmp_swap },
	{ "ibta_op_seq", t_op_seq },
	{ "ibta_seq_write_read_payload", t_seq_write_read_payload },
	{ "ibta_op_access", t_op_access },
	{ "ibta_len_read_payload", t_len_read_payload },
	{ "ibta_len_atomic_payload", t_len_atomic_payload },
	{ "ibta_len_first_empty", t_len_first_empty },
	{ "ibta_len_first_short", t_len_first_short },
	{ "ibta_len_middle_short", t_len_middle_short },
	{ "ibta_len_middle_long", t_len_middle_long },
	{ "ibta_len_only_long", t_len_only_long },
	{ "ibta_len_last_empty", t_len_last_empty },
	{ "ibta_len_write_last_short", t_len_write_last_short },
	{ "ibta_len_write_last_long", t_len_write_last_long },
	{ "ibta_len_write_only", t_len_write_only },
	{ "ibta_len_write_middle_over", t_len_write_middle_over },
	{ "ibta_len_dma_max", t_len_dma_max },
	{ "ibta_pad_first", t_pad_first },
	{ "ibta_pad_misaligned", t_pad_misaligned },
	{ "ibta_pad_last", t_pad_last },
	{ "ibta_pad_read", t_pad_read },
	{ "ibta_no_rd_res", t_no_rd_res },
	{ "ibta_rnr", t_rnr },
	{ "ibta_rkey", t_rkey },
	{ "ibta_rkey_read", t_rkey_read },
	{ "ibta_rkey_atomic", t_rkey_atomic },
	{ "ibta_rkey_bounds", t_rkey_bounds },
	{ "ibta_atomic_align", t_atomic_align },
	{ "ibta_send_too_long", t_send_too_long },
	{ "ibta_bad_inv", t_bad_inv },
	/* UC, UD */
	{ "ibta_uc_seq", t_uc_seq },
	{ "ibta_uc_seq_first", t_uc_seq_first },
	{ "ibta_uc_len", t_uc_len },
	{ "ibta_uc_gap", t_uc_gap },
	{ "ibta_uc_rkey", t_uc_rkey },
	{ "ibta_uc_access", t_uc_access },
	{ "ibta_uc_no_recv", t_uc_no_recv },
	{ "ibta_ud_qkey", t_ud_qkey },
	{ "ibta_ud_len", t_ud_len },
	{ "ibta_ud_no_recv", t_ud_no_recv },
	{ "ibta_ud_too_long", t_ud_too_long },
	/* RC requester */
	{ "ibta_ghost_ack", t_ghost_ack },
	{ "ibta_ghost_ack_unsent", t_ghost_ack_unsent },
	{ "ibta_ghost_read_resp", t_ghost_read_resp },
	{ "ibta_dup_responses", t_dup_responses },
	{ "ibta_nak_seq", t_nak_seq },
	{ "ibta_nak_rnr", t_nak_rnr },
	{ "ibta_nak_inv_req", t_nak_inv_req },
	{ "ibta_nak_rem_access", t_nak_rem_access },
	{ "ibta_nak_rem_op", t_nak_rem_op },
	{ "ibta_nak_reserved", t_nak_reserved },
	{ "ibta_syn_reserved_type", t_syn_reserved_type },
	{ "ibta_syn_bit7", t_syn_bit7 },
	{ "ibta_resp_read_middle_aeth", t_resp_read_middle_aeth },
	{ "ibta_resp_read_short", t_resp_read_short },
	{ "ibta_resp_read_long", t_resp_read_long },
	{ "ibta_resp_read_no_first", t_resp_read_no_first },
	{ "ibta_resp_read_only_multi", t_resp_read_only_multi },
	{ "ibta_resp_read_first_again", t_resp_read_first_again },
	{ "ibta_resp_read_nak_aeth", t_resp_read_nak_aeth },
	{ "ibta_resp_read_empty_first", t_resp_read_empty_first },
	{ "ibta_resp_read_pad", t_resp_read_pad },
	{ "ibta_resp_read_for_write", t_resp_read_for_write },
	{ "ibta_resp_atomic_for_read", t_resp_atomic_for_read },
	{ "ibta_resp_atomic_for_send", t_resp_atomic_for_send },
	{ "ibta_resp_atomic_nak_aeth", t_resp_atomic_nak_aeth },
	{ "ibta_resp_zero_read_for_send", t_resp_zero_read_for_send },
	{ "ibta_resp_ack_payload", t_resp_ack_payload },
	{ "ibta_resp_bad_after_write", t_resp_bad_after_write },
	{ "ibta_read_resumed_first", t_read_resumed_first },
	{ "ibta_read_resumed_middle", t_read_resumed_middle },
	{ "ibta_read_rnr_middle", t_read_rnr_middle },
	{ "ibta_err_stalled_idle", t_err_stalled_idle },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
