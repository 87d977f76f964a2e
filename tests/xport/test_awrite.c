/* SPDX-License-Identifier: MIT */
/* IBTA 1.5 RDMA ATOMIC WRITE over the simulated wire:
 *  atomic_write      - one opcode 0x1D packet (RETH, dma_len 8, 8 bytes of
 *                      payload from the WQE), answered (IBTA 1.5, rxe 6.2+)
 *                      with an RDMA READ Response Only of no payload, AETH
 *                      ACK, its PSN, no RC ACK; IBV_WC_ATOMIC_WRITE, the 8
 *                      bytes at the target over a WRITE posted before it
 *                      (placed after it), no receive consumed;
 *  atomic_write_dup  - the answer lost: the requester sends it again, the
 *                      responder answers again from its responder resource
 *                      and does not write again (the target, changed
 *                      meanwhile, keeps the new value);
 *  atomic_write_limit - the requester counts ATOMIC WRITEs (and FLUSHes)
 *                      against max_rd_atomic as READs: with 1, one is in
 *                      flight at a time, all complete;
 *  atomic_write_nores - max_dest_rd_atomic 0 at the responder: ATOMIC
 *                      WRITE (and FLUSH) need a responder resource, NAK
 *                      invalid request (REM_INV_REQ_ERR), nothing written;
 *  atomic_write_bad  - a misaligned address (LOC_QP_OP_ERR, nothing sent),
 *                      a bad rkey (REM_ACCESS_ERR), and a frame rewritten on
 *                      the wire to carry 4 bytes (NAK invalid request:
 *                      REM_INV_REQ_ERR). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

static unsigned n_awrite;      /* 0x1D frames seen */
static bool awrite_reth_ok = true;
static bool shrink;            /* rewrite the first 0x1D frame to 4 bytes */
static unsigned n_zero, n_ack; /* answers to node 0: zero READ Response Only, RC ACK of
				* the ATOMIC WRITE's PSN */
static uint32_t awrite_psn, zero_psn;
static int drop_zero;          /* answers to drop */
static uint64_t *poke;         /* written with poke_val when one is dropped */
static uint64_t poke_val;

/* Answers to the requester (node 0). */
static bool hook_answer(const struct wire_pkt *pkt)
{
	if (pkt->bth.opcode == WIRE_OP_RC_ACK && n_awrite && pkt->bth.psn == awrite_psn)
		n_ack++;
	if (pkt->bth.opcode != WIRE_OP_RC_READ_RESP_ONLY || pkt->payload_len ||
	    wire_aeth_type(pkt->aeth.syndrome) != WIRE_AETH_ACK)
		return true;
	n_zero++;
	zero_psn = pkt->bth.psn;
	if (drop_zero > 0) {
		drop_zero--;
		if (poke)
			*poke = poke_val; /* the application writes there meanwhile */
		return false;
	}
	return true;
}

static bool hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (!xt_parse(f, len, &pkt))
		return true;
	if (to == 0)
		return hook_answer(&pkt);
	if (pkt.bth.opcode != WIRE_OP_RC_ATOMIC_WRITE)
		return true;
	awrite_psn = pkt.bth.psn;
	n_awrite++;
	if (pkt.reth.dma_len != 8 || pkt.payload_len != 8)
		awrite_reth_ok = false;
	if (shrink) {
		uint8_t tmp[2048];
		size_t fl;

		shrink = false;
		pkt.payload_len = 4;
		/* deliver a frame 4 bytes shorter: built elsewhere, copied back,
		 * the rest of the buffer is past its new end */
		if (wire_build(&pkt, tmp, sizeof(tmp), 0, &fl) || fl > len)
			return true;
		memcpy(f, tmp, fl);
		return true;
	}
	return true;
}

static int setup(struct pair *p)
{
	if (pair_setup(p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	sim_hook = hook;
	n_awrite = n_zero = n_ack = 0;
	drop_zero = 0;
	poke = NULL;
	return 0;
}

static void awrite_wqe(struct uroce_send_wqe *w, uint64_t id, void *dst, uint32_t rkey,
		       uint64_t v)
{
	xt_wqe(w, id, IBV_WR_ATOMIC_WRITE, 0);
	w->rdma.remote_addr = (uintptr_t)dst;
	w->rdma.rkey = rkey;
	w->atomic.swap = v;
}

/* a global FLUSH of the 8 bytes at dst */
static void flush8_wqe(struct uroce_send_wqe *w, uint64_t id, void *dst, uint32_t rkey)
{
	xt_wqe(w, id, UROCE_WR_OP_FLUSH, 0);
	w->flush.remote_addr = (uintptr_t)dst;
	w->flush.rkey = rkey;
	w->flush.length = 8;
	w->flush.type = UROCE_FLUSH_GLOBAL;
	w->flush.level = UROCE_FLUSH_RANGE;
}

static int t_atomic_write(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[4];
	uint8_t *B;

	if (setup(&p))
		return 1;
	B = p.mb.buf;
	/* a WRITE of 64 bytes, then an ATOMIC WRITE over its first 8 */
	xt_fill(p.ma.buf, 64, 7);
	xt_wqe(&w, 1, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)B + 4096;
	w.rdma.rkey = p.mb.rkey;
	s = xt_sge(&p.ma, 0, 64);
	sim_post_send(&p.a, &w, &s, NULL);
	awrite_wqe(&w, 2, B + 4096, p.mb.rkey, 0x1122334455667788ull);
	sim_post_send(&p.a, &w, NULL, NULL);
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 2);
	CHECK_EQ(c[1].wr_id, 2);
	CHECK_EQ(c[1].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[1].opcode, IBV_WC_ATOMIC_WRITE);
	CHECK_EQ(*(uint64_t *)(void *)(B + 4096), 0x1122334455667788ull);
	CHECK(!memcmp(B + 4096 + 8, (uint8_t *)p.ma.buf + 8, 56));
	CHECK_EQ(n_awrite, 1);
	CHECK(awrite_reth_ok);
	/* its answer: one READ Response Only of no payload at its PSN, no
	 * RC ACK for that PSN */
	CHECK_EQ(n_zero, 1);
	CHECK_EQ(zero_psn, awrite_psn);
	CHECK_EQ(n_ack, 0);
	/* nothing reached the receive queue */
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 0);
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&p);
	return 0;
}

/* Post w (no SGEs) on p's A side, run up to ns of virtual time: the one
 * completion's status (~0u when not exactly one came). */
static uint32_t post_one(struct pair *p, const struct uroce_send_wqe *w, uint64_t ns)
{
	struct uroce_cqe c[4];

	sim_post_send(&p->a, w, NULL, NULL);
	sim_run(&p->s, ns);
	return sim_poll(p->a.scq, c, 4) == 1 ? c[0].status : ~0u;
}

/* On a fresh pair, one ATOMIC WRITE of v to B + off with B's rkey
 * xor rkey_xor: its one completion's status, the frames of it seen on the
 * wire, and the 8 bytes at B + off afterwards. */
static void awrite_once(uint32_t off, uint32_t rkey_xor, uint64_t v, uint32_t *status,
			unsigned *frames, uint64_t *after)
{
	struct pair p;
	struct uroce_send_wqe w;

	*status = *frames = ~0u; /* what no run gives: a failed set-up fails the checks */
	*after = ~0ull;
	if (setup(&p))
		return;
	awrite_wqe(&w, 1, (uint8_t *)p.mb.buf + off, p.mb.rkey ^ rkey_xor, v);
	*status = post_one(&p, &w, 5000000000ull);
	*frames = n_awrite;
	memcpy(after, (uint8_t *)p.mb.buf + off, sizeof(*after));
	pair_fini(&p);
}

static int t_atomic_write_bad(void)
{
	uint32_t st;
	unsigned frames;
	uint64_t after;

	/* misaligned: refused by the requester, nothing on the wire */
	awrite_once(4, 0, 1, &st, &frames, &after);
	CHECK_EQ(st, IBV_WC_LOC_QP_OP_ERR);
	CHECK_EQ(frames, 0);
	/* a bad rkey: REM_ACCESS_ERR */
	awrite_once(8, 0x100, 2, &st, &frames, &after);
	CHECK_EQ(st, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(after, 0);
	/* 4 bytes where 8 must be: NAK invalid request, nothing placed */
	shrink = true;
	awrite_once(16, 0, 0xffffffffffffffffull, &st, &frames, &after);
	CHECK_EQ(st, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(after, 0);
	return 0;
}

static int t_atomic_write_dup(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	uint64_t *dst;

	if (setup(&p))
		return 1;
	dst = (uint64_t *)(void *)((uint8_t *)p.mb.buf + 256);
	drop_zero = 1;
	poke = dst;
	poke_val = 0xdddddddddddddddd;
	awrite_wqe(&w, 1, dst, p.mb.rkey, 0x5555555555555555ull);
	CHECK_EQ(post_one(&p, &w, 20000000000ull), IBV_WC_SUCCESS);
	CHECK_EQ(n_awrite, 2);
	CHECK_EQ(n_zero, 2);
	CHECK_EQ(zero_psn, awrite_psn);
	CHECK(p.b.qp->x->cnt.dup_requests >= 1);
	/* executed once: what the application wrote after it stays */
	CHECK_EQ(*dst, poke_val);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	/* the QP goes on */
	awrite_wqe(&w, 2, dst + 1, p.mb.rkey, 7);
	CHECK_EQ(post_one(&p, &w, 5000000000ull), IBV_WC_SUCCESS);
	CHECK_EQ(dst[1], 7);
	pair_fini(&p);
	return 0;
}

static int t_atomic_write_nores(void)
{
	for (int k = 0; k < 2; k++) {
		struct pair p;
		struct uroce_send_wqe w;
		uint64_t *dst;

		if (setup(&p))
			return 1;
		dst = (uint64_t *)(void *)((uint8_t *)p.mb.buf + 512);
		*dst = 0;
		p.b.qp->attr.max_dest_rd_atomic = 0;
		if (k == 0) {
			awrite_wqe(&w, 1, dst, p.mb.rkey, 9);
		} else {
			p.b.qp->attr.qp_access_flags |= UROCE_ACCESS_FLUSH;
			flush8_wqe(&w, 1, dst, p.mb.rkey);
		}
		CHECK_EQ(post_one(&p, &w, 5000000000ull), IBV_WC_REM_INV_REQ_ERR);
		CHECK_EQ(*dst, 0);
		CHECK_EQ(n_zero, 0);
		CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
		pair_fini(&p);
	}
	return 0;
}

static int t_atomic_write_limit(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_cqe c[8];
	struct sim_mr mf;
	uint64_t *dst;

	if (setup(&p) || sim_mr(&p.s.n[1], 4096, ALL_ACCESS | UROCE_ACCESS_FLUSH, &mf))
		return 1;
	dst = (uint64_t *)(void *)((uint8_t *)p.mb.buf + 1024);
	p.a.qp->attr.max_rd_atomic = 1;
	for (unsigned i = 0; i < 3; i++) {
		awrite_wqe(&w, i, dst + i, p.mb.rkey, 100 + i);
		sim_post_send(&p.a, &w, NULL, NULL);
	}
	flush8_wqe(&w, 9, mf.buf, mf.rkey);
	p.b.qp->attr.qp_access_flags |= UROCE_ACCESS_FLUSH;
	sim_post_send(&p.a, &w, NULL, NULL);
	CHECK_EQ(p.a.qp->x->rd_atomic_out, 1);
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 4);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	CHECK_EQ(n_awrite, 3);
	CHECK_EQ(p.a.qp->x->rd_atomic_out, 0);
	CHECK(dst[0] == 100 && dst[1] == 101 && dst[2] == 102);
	pair_fini(&p);
	free(mf.buf);
	return 0;
}

static const struct xt_test tests[] = {
	{ "atomic_write", t_atomic_write },
	{ "atomic_write_dup", t_atomic_write_dup },
	{ "atomic_write_limit", t_atomic_write_limit },
	{ "atomic_write_nores", t_atomic_write_nores },
	{ "atomic_write_bad", t_atomic_write_bad },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
