/* SPDX-License-Identifier: MIT */
/* Message lengths: zero-length SEND/WRITE/READ, MTU boundaries, the
 * max_msg_sz limit, SGE lists up to max_sge with zero-length SGEs, inline
 * data up to max_inline. Usage: test_len <name>. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

static const uint32_t lens[] = { 0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 4097 };
#define NLEN (sizeof(lens) / sizeof(lens[0]))

static void run_lengths(enum ibv_qp_type t)
{
	static const uint8_t rc_ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
					  IBV_WR_RDMA_READ };
	unsigned nops = t == IBV_QPT_RC ? 4 : 3, o, i;
	struct pair p;

	if (pair_setup(&p, t, IBV_MTU_1024, 1 << 20)) {
		sim_failures++;
		return;
	}
	for (o = 0; o < nops; o++) {
		uint8_t op = rc_ops[o];
		struct uroce_cqe c[32];
		int n, nr;

		memset(p.mb.buf, 0, 1 << 20);
		for (i = 0; i < NLEN; i++) {
			uint32_t off = i * 8192;
			struct uroce_sge s;

			xt_fill((uint8_t *)p.ma.buf + off, 8192, o * 16 + i);
			xt_fill((uint8_t *)p.mb.buf + 512 * 1024 + off, 8192, o * 16 + i + 100);
			if (op == IBV_WR_SEND || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
				s = xt_sge(&p.mb, off, 8192);
				sim_post_recv(&p.b, 1000 + i, &s, 1);
			}
			if (op == IBV_WR_RDMA_READ)
				xt_post(&p, i, op, off, lens[i], 512 * 1024 + off);
			else
				xt_post(&p, i, op, off, lens[i], off);
		}
		sim_run(&p.s, 1000000000ull);
		n = sim_poll(p.a.scq, c, 32);
		CHECK_EQ(n, NLEN);
		for (i = 0; i < (unsigned)n; i++) {
			CHECK_EQ(c[i].wr_id, i);
			CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		}
		nr = sim_poll(p.b.rcq, c, 32);
		CHECK_EQ(nr, op == IBV_WR_SEND || op == IBV_WR_RDMA_WRITE_WITH_IMM ? (int)NLEN : 0);
		for (i = 0; i < (unsigned)nr; i++) {
			CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
			CHECK_EQ(c[i].byte_len, lens[i]);
		}
		for (i = 0; i < NLEN; i++) {
			uint32_t off = i * 8192;
			const uint8_t *src = op == IBV_WR_RDMA_READ
						     ? (uint8_t *)p.mb.buf + 512 * 1024 + off
						     : (uint8_t *)p.ma.buf + off;
			const uint8_t *dst = op == IBV_WR_RDMA_READ ? (uint8_t *)p.ma.buf + off
								    : (uint8_t *)p.mb.buf + off;

			CHECK(!memcmp(src, dst, lens[i]));
			/* not one byte more */
			if (op != IBV_WR_RDMA_READ)
				CHECK_EQ(dst[lens[i]], 0);
		}
	}
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&p);
}

static int t_lengths_rc(void)
{
	run_lengths(IBV_QPT_RC);
	return 0;
}

static int t_lengths_uc(void)
{
	run_lengths(IBV_QPT_UC);
	return 0;
}

/* max_msg_sz = 2^31: 2^31 + 1 is a length error before any key is looked
 * at; exactly 2^31 passes the length check (and fails on the bogus key). */
static int t_max_msg(void)
{
	static const struct { uint32_t l0, l1, l2; uint8_t status; } cases[] = {
		{ 1u << 30, 1u << 30, 1, IBV_WC_LOC_LEN_ERR },
		{ 1u << 30, 1u << 30, 0, IBV_WC_LOC_PROT_ERR },
		{ 0x80000000u, 0, 0, IBV_WC_LOC_PROT_ERR },
		{ 0xffffffffu, 0xffffffffu, 0, IBV_WC_LOC_LEN_ERR },
	};

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pair p;
		struct uroce_send_wqe w;
		struct uroce_sge s[3];
		struct uroce_cqe c[4];

		if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
			return 1;
		xt_wqe(&w, 1, k & 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, 3);
		w.rdma.remote_addr = (uintptr_t)p.mb.buf;
		w.rdma.rkey = p.mb.rkey;
		s[0] = (struct uroce_sge){ 0x10000000, cases[k].l0, 0x777700 };
		s[1] = (struct uroce_sge){ 0x50000000, cases[k].l1, 0x777700 };
		s[2] = (struct uroce_sge){ 0x90000000, cases[k].l2, 0x777700 };
		sim_post_send(&p.a, &w, s, NULL);
		sim_run(&p.s, 1000000000ull);
		CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
		CHECK_EQ(c[0].status, cases[k].status);
		CHECK_EQ(p.s.frames, 0);
		CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_ERR);
		pair_fini(&p);
	}
	return 0;
}

/* 32 SGEs each side, every third one empty; 33 is refused. */
static int t_max_sge(void)
{
	struct pair p;
	struct ibv_qp_cap cap = { 16, 16, EMU_MAX_SGE, EMU_MAX_SGE, 0 };
	struct uroce_sge ss[EMU_MAX_SGE + 1], rs[EMU_MAX_SGE];
	struct uroce_send_wqe w;
	struct uroce_cqe c[8];
	uint8_t want[EMU_MAX_SGE * 100], got[EMU_MAX_SGE * 100];
	uint32_t total = 0, rtotal = 0, k = 0;
	int i;

	if (pair_setup_cap(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16, &cap))
		return 1;
	CHECK(p.a.qp->cap.max_send_sge >= EMU_MAX_SGE);
	xt_fill(p.ma.buf, 1 << 16, 77);
	for (i = 0; i < EMU_MAX_SGE; i++) {
		uint32_t l = i % 3 == 1 ? 0 : 37 + (uint32_t)i * 3;

		ss[i] = xt_sge(&p.ma, (uint32_t)i * 1000, l);
		memcpy(want + total, (uint8_t *)p.ma.buf + i * 1000, l);
		total += l;
		rs[i] = xt_sge(&p.mb, (uint32_t)i * 1000, i % 3 == 2 ? 0 : 150);
		rtotal += rs[i].length;
	}
	CHECK(rtotal >= total);
	sim_post_recv(&p.b, 5, rs, EMU_MAX_SGE);
	xt_wqe(&w, 1, IBV_WR_SEND, EMU_MAX_SGE);
	sim_post_send(&p.a, &w, ss, NULL);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(sim_poll(p.b.rcq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, total);
	for (i = 0; i < EMU_MAX_SGE && k < total; i++) {
		uint32_t l = rs[i].length < total - k ? rs[i].length : total - k;

		memcpy(got + k, (uint8_t *)p.mb.buf + i * 1000, l);
		k += l;
	}
	CHECK(!memcmp(got, want, total));
	/* a WQE claiming more SGEs than max_send_sge never runs */
	ss[EMU_MAX_SGE] = ss[0];
	xt_wqe(&w, 2, IBV_WR_SEND, EMU_MAX_SGE + 1);
	sim_post_send(&p.a, &w, ss, NULL);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_LOC_QP_OP_ERR);
	pair_fini(&p);
	return 0;
}

/* inline up to max_inline_data; one byte more is refused */
static int t_max_inline(void)
{
	struct pair p;
	struct ibv_qp_cap cap = { 16, 16, 2, 2, EMU_MAX_INLINE };
	struct uroce_send_wqe w;
	struct uroce_cqe c[8];
	uint8_t data[EMU_MAX_INLINE + 1];
	uint32_t max;

	if (pair_setup_cap(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16, &cap))
		return 1;
	max = p.a.qp->cap.max_inline_data;
	CHECK(max >= EMU_MAX_INLINE);
	if (max > EMU_MAX_INLINE)
		max = EMU_MAX_INLINE;
	xt_fill(data, sizeof(data), 3);
	xt_wqe(&w, 1, IBV_WR_RDMA_WRITE, 0);
	w.send_flags |= IBV_SEND_INLINE;
	w.inline_len = max;
	w.rdma.remote_addr = (uintptr_t)p.mb.buf + 100;
	w.rdma.rkey = p.mb.rkey;
	sim_post_send(&p.a, &w, NULL, data);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp((uint8_t *)p.mb.buf + 100, data, max));
	if (p.a.qp->sq.stride - UROCE_SEND_WQE_HDR > max) {
		w.wr_id = 2;
		w.inline_len = max + 1;
		sim_post_send(&p.a, &w, NULL, data);
		sim_run(&p.s, 1000000000ull);
		CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
		CHECK_EQ(c[0].status, IBV_WC_LOC_QP_OP_ERR);
	}
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "lengths_rc", t_lengths_rc },
	{ "lengths_uc", t_lengths_uc },
	{ "max_msg", t_max_msg },
	{ "max_sge", t_max_sge },
	{ "max_inline", t_max_inline },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
