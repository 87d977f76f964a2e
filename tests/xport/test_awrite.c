/* SPDX-License-Identifier: MIT */
/* IBTA 1.5 RDMA ATOMIC WRITE over the simulated wire:
 *  atomic_write      - one opcode 0x1D packet (RETH, dma_len 8, 8 bytes of
 *                      payload from the WQE), an RC ACK, IBV_WC_ATOMIC_WRITE,
 *                      the 8 bytes at the target over a WRITE posted before
 *                      it (placed after it), no receive consumed;
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

static bool hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	(void)to;
	if (!xt_parse(f, len, &pkt) || pkt.bth.opcode != WIRE_OP_RC_ATOMIC_WRITE)
		return true;
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
	n_awrite = 0;
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
	/* nothing reached the receive queue */
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 0);
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&p);
	return 0;
}

/* On a fresh pair, one ATOMIC WRITE of v to B + off with B's rkey
 * xor rkey_xor: its one completion's status, the frames of it seen on the
 * wire, and the 8 bytes at B + off afterwards. */
static void awrite_once(uint32_t off, uint32_t rkey_xor, uint64_t v, uint32_t *status,
			unsigned *frames, uint64_t *after)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_cqe c[4];

	*status = *frames = ~0u; /* what no run gives: a failed set-up fails the checks */
	*after = ~0ull;
	if (setup(&p))
		return;
	awrite_wqe(&w, 1, (uint8_t *)p.mb.buf + off, p.mb.rkey ^ rkey_xor, v);
	sim_post_send(&p.a, &w, NULL, NULL);
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	*status = c[0].status;
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

static const struct xt_test tests[] = {
	{ "atomic_write", t_atomic_write },
	{ "atomic_write_bad", t_atomic_write_bad },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
