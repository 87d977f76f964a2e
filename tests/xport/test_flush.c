/* SPDX-License-Identifier: MIT */
/* IBTA 1.5 RDMA FLUSH over the simulated wire (RX bursts with deferred
 * placements, as the daemon runs):
 *  flush_ops      - WRITEs then a global FLUSH of their range and a
 *                   persistent FLUSH of the whole MR: each one opcode 0x1C
 *                   packet whose BTH/FETH/RETH are byte for byte the layout
 *                   rxe (Linux 6.2+) sends (written out here, not by wire/),
 *                   answered by a READ Response Only of no payload at its
 *                   PSN sent only once the WRITEs before it are in memory;
 *                   IBV_WC_FLUSH completions, no receive consumed;
 *  flush_access   - an MR without the FLUSH flag (REM_ACCESS_ERR), an MR
 *                   with only the global flag asked to persist
 *                   (REM_ACCESS_ERR), a QP without the flag (REM_INV_REQ_ERR);
 *  flush_bad      - a type or level the requester refuses (LOC_QP_OP_ERR,
 *                   nothing sent); frames rewritten on the wire with no type,
 *                   a reserved type bit, level 2 (NAK invalid request);
 *  flush_dup      - the answer lost: the FLUSH goes again, the responder
 *                   answers the duplicate, one completion;
 *  atomic_write_rc_ack - an ATOMIC WRITE answered with an RC ACK (as uroce
 *                   answered it before it answered as IBTA 1.5 and rxe
 *                   6.2+ do, test_awrite.c) completes too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

static struct {
	unsigned flush_frames, flush_resps, bad_layout, resp_before_data;
	uint32_t flush_psn[4];
	int drop_resps;           /* answers to drop */
	int feth_rewrite;         /* -1 none, else the FETH's low byte to put */
	bool awrite_as_ack;       /* READ Response Only to node 0 -> RC ACK */
	const uint8_t *want_b;    /* node 1 memory the answer must find written */
	const uint8_t *want_src;
	uint32_t want_len;
	uint64_t va;
	uint32_t rkey, len;
	uint8_t type, level;
} h;

/* BTH, FETH, RETH of a FLUSH as rxe builds them (rxe_req.c init_req_packet,
 * rxe_hdr.h feth_init): opcode 0x1C, SE 0, pad 0, P_Key 0xFFFF, AckReq,
 * FETH = level << 4 | type, RETH = VA, R_Key, length. The M bit is the
 * QP's, as for every other request. */
static bool rxe_layout(const uint8_t *t, const struct wire_pkt *p)
{
	uint8_t want[32] = { 0x1c, 0x00, 0xff, 0xff, 0x00 };

	want[5] = (uint8_t)(p->bth.dqpn >> 16);
	want[6] = (uint8_t)(p->bth.dqpn >> 8);
	want[7] = (uint8_t)p->bth.dqpn;
	want[8] = 0x80;
	want[9] = (uint8_t)(p->bth.psn >> 16);
	want[10] = (uint8_t)(p->bth.psn >> 8);
	want[11] = (uint8_t)p->bth.psn;
	want[15] = (uint8_t)(h.level << 4 | h.type);
	for (int i = 0; i < 8; i++)
		want[16 + i] = (uint8_t)(h.va >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		want[24 + i] = (uint8_t)(h.rkey >> (24 - 8 * i));
		want[28 + i] = (uint8_t)(h.len >> (24 - 8 * i));
	}
	return t[0] == want[0] && (t[1] & 0xbf) == 0 && !memcmp(t + 2, want + 2, 30);
}

static bool hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (!xt_parse(f, len, &pkt))
		return true;
	if (to == 1 && pkt.bth.opcode == WIRE_OP_RC_FLUSH) {
		if (h.flush_frames < 4)
			h.flush_psn[h.flush_frames] = pkt.bth.psn;
		h.flush_frames++;
		if (!rxe_layout(f + pkt.bth_off, &pkt) || pkt.payload_len ||
		    len != pkt.bth_off + 32 + WIRE_ICRC_LEN)
			h.bad_layout++;
		if (h.feth_rewrite >= 0) {
			pkt.feth.plt = (uint8_t)(h.feth_rewrite & 0xf);
			pkt.feth.sel = (uint8_t)(h.feth_rewrite >> 4 & 3);
			xt_rebuild(f, len, &pkt);
		}
		return true;
	}
	if (to == 0 && h.awrite_as_ack && pkt.bth.opcode == WIRE_OP_RC_READ_RESP_ONLY) {
		pkt.bth.opcode = WIRE_OP_RC_ACK;
		xt_rebuild(f, len, &pkt);
		return true;
	}
	if (to == 0 && pkt.bth.opcode == WIRE_OP_RC_READ_RESP_ONLY && !pkt.payload_len &&
	    wire_aeth_type(pkt.aeth.syndrome) == WIRE_AETH_ACK) {
		h.flush_resps++;
		if (h.want_b && memcmp(h.want_b, h.want_src, h.want_len))
			h.resp_before_data++;
		if (h.drop_resps > 0) {
			h.drop_resps--;
			return false;
		}
		return true;
	}
	return true;
}

/* A pair whose B has an MR with the FLUSH flags `mflags` (mf) and a QP
 * with `qflags` of them in its access flags. */
static int setup(struct pair *p, struct sim_mr *mf, unsigned mflags, unsigned qflags)
{
	memset(&h, 0, sizeof(h));
	h.feth_rewrite = -1;
	sim_batch = true;
	if (pair_setup(p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16) ||
	    sim_mr(&p->s.n[1], 1 << 16, ALL_ACCESS | mflags, mf))
		return 1;
	p->b.qp->attr.qp_access_flags |= qflags;
	sim_hook = hook;
	return 0;
}

static void fini(struct pair *p, struct sim_mr *mf)
{
	pair_fini(p);
	free(mf->buf);
	sim_batch = false;
}

static void flush_wqe(struct uroce_send_wqe *w, uint64_t id, uint64_t va, uint32_t rkey,
		      uint32_t len, uint8_t type, uint8_t level)
{
	xt_wqe(w, id, UROCE_WR_OP_FLUSH, 0);
	w->send_flags |= IBV_SEND_SOLICITED; /* must not reach the wire */
	w->flush.remote_addr = va;
	w->flush.rkey = rkey;
	w->flush.length = len;
	w->flush.type = type;
	w->flush.level = level;
	h.va = va;
	h.rkey = rkey;
	h.len = len;
	h.type = type;
	h.level = level;
}

/* Post one FLUSH from A and run; its completion status (-1: none). */
static int flush_once(struct pair *p, uint64_t va, uint32_t rkey, uint32_t len, uint8_t type,
		      uint8_t level)
{
	struct uroce_send_wqe w;
	struct uroce_cqe c[4];

	flush_wqe(&w, 9, va, rkey, len, type, level);
	sim_post_send(&p->a, &w, NULL, NULL);
	sim_run(&p->s, 5000000000ull);
	if (sim_poll(p->a.scq, c, 4) != 1)
		return -1;
	CHECK_EQ(c[0].wr_id, 9);
	return (int)c[0].status;
}

static int t_flush_ops(void)
{
	struct pair p;
	struct sim_mr mf;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[8];
	uint8_t *F;

	if (setup(&p, &mf, UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH))
		return 1;
	F = mf.buf;
	xt_fill(p.ma.buf, 1 << 16, 3);
	/* 40 KB of WRITE (40 packets), then FLUSH global of that range */
	xt_wqe(&w, 1, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)F + 8192;
	w.rdma.rkey = mf.rkey;
	s = xt_sge(&p.ma, 0, 40960);
	sim_post_send(&p.a, &w, &s, NULL);
	flush_wqe(&w, 2, (uintptr_t)F + 8192, mf.rkey, 40960, UROCE_FLUSH_GLOBAL, UROCE_FLUSH_RANGE);
	sim_post_send(&p.a, &w, NULL, NULL);
	h.want_b = F + 8192;
	h.want_src = p.ma.buf;
	h.want_len = 40960;
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 2);
	CHECK_EQ(c[0].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(c[1].wr_id, 2);
	CHECK_EQ(c[1].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[1].opcode, UROCE_WC_FLUSH);
	CHECK(!memcmp(F + 8192, p.ma.buf, 40960));
	CHECK_EQ(h.flush_frames, 1);
	CHECK_EQ(h.flush_resps, 1);
	CHECK_EQ(h.resp_before_data, 0);
	CHECK_EQ(h.bad_layout, 0);
	/* a WRITE, then FLUSH persistent | global of the whole MR (VA and
	 * length of the RETH ignored: pass garbage) */
	xt_wqe(&w, 3, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)F;
	w.rdma.rkey = mf.rkey;
	s = xt_sge(&p.ma, 100, 3000);
	sim_post_send(&p.a, &w, &s, NULL);
	h.want_b = F;
	h.want_src = (uint8_t *)p.ma.buf + 100;
	h.want_len = 3000;
	flush_wqe(&w, 4, 0xdead0000, mf.rkey, 0x7fffffff,
		  UROCE_FLUSH_GLOBAL | UROCE_FLUSH_PERSISTENT, UROCE_FLUSH_MR);
	sim_post_send(&p.a, &w, NULL, NULL);
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 2);
	CHECK_EQ(c[1].wr_id, 4);
	CHECK_EQ(c[1].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[1].opcode, UROCE_WC_FLUSH);
	CHECK(!memcmp(F, (uint8_t *)p.ma.buf + 100, 3000));
	CHECK_EQ(h.flush_frames, 2);
	CHECK_EQ(h.flush_resps, 2);
	CHECK_EQ(h.resp_before_data, 0);
	CHECK_EQ(h.bad_layout, 0);
	CHECK_EQ(sim_poll(p.b.rcq, c, 8), 0);
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	fini(&p, &mf);
	return 0;
}

static int t_flush_access(void)
{
	struct pair p;
	struct sim_mr mf;

	/* the pair's own MR has no FLUSH flag */
	if (setup(&p, &mf, UROCE_ACCESS_FLUSH_GLOBAL, UROCE_ACCESS_FLUSH))
		return 1;
	CHECK_EQ(flush_once(&p, (uintptr_t)p.mb.buf, p.mb.rkey, 64, UROCE_FLUSH_GLOBAL,
			    UROCE_FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(h.flush_frames, 1);
	fini(&p, &mf);
	/* global only, asked to persist */
	if (setup(&p, &mf, UROCE_ACCESS_FLUSH_GLOBAL, UROCE_ACCESS_FLUSH))
		return 1;
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 64, UROCE_FLUSH_PERSISTENT,
			    UROCE_FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	fini(&p, &mf);
	/* ... and global is what it may do; out of its range it may not */
	if (setup(&p, &mf, UROCE_ACCESS_FLUSH_GLOBAL, UROCE_ACCESS_FLUSH))
		return 1;
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 64, UROCE_FLUSH_GLOBAL,
			    UROCE_FLUSH_RANGE), IBV_WC_SUCCESS);
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf + 65536 - 32, mf.rkey, 64, UROCE_FLUSH_GLOBAL,
			    UROCE_FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	fini(&p, &mf);
	/* the responder QP lacks the persistent flag: invalid request */
	if (setup(&p, &mf, UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH_GLOBAL))
		return 1;
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 64, UROCE_FLUSH_PERSISTENT,
			    UROCE_FLUSH_MR), IBV_WC_REM_INV_REQ_ERR);
	fini(&p, &mf);
	return 0;
}

static int t_flush_bad(void)
{
	static const int rewrites[] = { 0x00, 0x04, 0x21, 0x0f };
	struct pair p;
	struct sim_mr mf;
	struct uroce_send_wqe w;
	struct uroce_cqe c[4];

	/* refused before the wire: no type, an unknown type bit, level 2 */
	static const uint8_t bad[][2] = { { 0, 0 }, { 4, 0 }, { 1, 2 } };
	for (unsigned i = 0; i < 3; i++) {
		if (setup(&p, &mf, UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH))
			return 1;
		flush_wqe(&w, 1, (uintptr_t)mf.buf, mf.rkey, 8, bad[i][0], bad[i][1]);
		sim_post_send(&p.a, &w, NULL, NULL);
		sim_run(&p.s, 5000000000ull);
		CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
		CHECK_EQ(c[0].status, IBV_WC_LOC_QP_OP_ERR);
		CHECK_EQ(h.flush_frames, 0);
		fini(&p, &mf);
	}
	/* the same on the wire: the responder NAKs them */
	for (unsigned i = 0; i < sizeof(rewrites) / sizeof(rewrites[0]); i++) {
		if (setup(&p, &mf, UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH))
			return 1;
		h.feth_rewrite = rewrites[i];
		CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 8, UROCE_FLUSH_GLOBAL,
				    UROCE_FLUSH_RANGE), IBV_WC_REM_INV_REQ_ERR);
		CHECK_EQ(h.flush_resps, 0);
		CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
		fini(&p, &mf);
	}
	return 0;
}

static int t_flush_dup(void)
{
	struct pair p;
	struct sim_mr mf;

	if (setup(&p, &mf, UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH))
		return 1;
	h.drop_resps = 1;
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 4096, UROCE_FLUSH_PERSISTENT,
			    UROCE_FLUSH_RANGE), IBV_WC_SUCCESS);
	CHECK_EQ(h.flush_frames, 2);
	CHECK_EQ(h.flush_psn[1], h.flush_psn[0]);
	CHECK_EQ(h.flush_resps, 2);
	CHECK(p.b.qp->x->cnt.dup_requests >= 1);
	/* the QP goes on: a second FLUSH at the next PSN */
	CHECK_EQ(flush_once(&p, (uintptr_t)mf.buf, mf.rkey, 8, UROCE_FLUSH_GLOBAL,
			    UROCE_FLUSH_RANGE), IBV_WC_SUCCESS);
	CHECK_EQ(h.flush_psn[2], wire_psn_next(h.flush_psn[0]));
	fini(&p, &mf);
	return 0;
}

static int t_awrite_rc_ack(void)
{
	struct pair p;
	struct sim_mr mf;
	struct uroce_send_wqe w;
	struct uroce_cqe c[4];

	if (setup(&p, &mf, 0, 0))
		return 1;
	h.awrite_as_ack = true;
	xt_wqe(&w, 5, IBV_WR_ATOMIC_WRITE, 0);
	w.rdma.remote_addr = (uintptr_t)p.mb.buf + 64;
	w.rdma.rkey = p.mb.rkey;
	w.atomic.swap = 0x0102030405060708ull;
	sim_post_send(&p.a, &w, NULL, NULL);
	sim_run(&p.s, 5000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].opcode, IBV_WC_ATOMIC_WRITE);
	CHECK_EQ(h.flush_resps, 0);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	CHECK_EQ(*(uint64_t *)(void *)((uint8_t *)p.mb.buf + 64), 0x0102030405060708ull);
	fini(&p, &mf);
	return 0;
}

static const struct xt_test tests[] = {
	{ "flush_ops", t_flush_ops },
	{ "flush_access", t_flush_access },
	{ "flush_bad", t_flush_bad },
	{ "flush_dup", t_flush_dup },
	{ "atomic_write_rc_ack", t_awrite_rc_ack },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
