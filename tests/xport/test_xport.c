/* SPDX-License-Identifier: MIT */
/* Transport tests over the simulated wire: every operation on RC/UC/UD,
 * faults, error completions, async events and the QP state machine.
 * Usage: test_xport <name> (see the table at the end); exit 0 pass, 1 fail. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

/* shorter local names for the shared helpers of pair.h */
#define fill xt_fill
#define sge_of xt_sge
#define wqe_init xt_wqe

/* ---- RC: every operation, once, on a clean wire ---- */
static void run_rc_ops(struct pair *p)
{
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[16];
	uint8_t *A = p->ma.buf, *B = p->mb.buf;
	uint64_t *ab = (uint64_t *)(B + 60000);
	int n;

	/* SEND 3000 B (3 packets at 1024) + SEND_IMM 0 B */
	fill(A, 3000, 1);
	s = sge_of(&p->mb, 10000, 4000);
	sim_post_recv(&p->b, 501, &s, 1);
	s = sge_of(&p->mb, 20000, 100);
	sim_post_recv(&p->b, 502, &s, 1);
	wqe_init(&w, 1, IBV_WR_SEND, 1);
	s = sge_of(&p->ma, 0, 3000);
	sim_post_send(&p->a, &w, &s, NULL);
	wqe_init(&w, 2, IBV_WR_SEND_WITH_IMM, 0);
	w.imm_or_inv = htobe32(0x12345678);
	w.send_flags |= IBV_SEND_SOLICITED;
	sim_post_send(&p->a, &w, NULL, NULL);
	/* WRITE 10000 B, WRITE_IMM 5 B inline */
	fill(A + 4096, 10000, 2);
	wqe_init(&w, 3, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)B + 30000;
	w.rdma.rkey = p->mb.rkey;
	s = sge_of(&p->ma, 4096, 10000);
	sim_post_send(&p->a, &w, &s, NULL);
	s = sge_of(&p->mb, 20200, 16);
	sim_post_recv(&p->b, 503, &s, 1);
	wqe_init(&w, 4, IBV_WR_RDMA_WRITE_WITH_IMM, 0);
	w.send_flags |= IBV_SEND_INLINE;
	w.inline_len = 5;
	w.imm_or_inv = htobe32(0xabcdef01);
	w.rdma.remote_addr = (uintptr_t)B + 50000;
	w.rdma.rkey = p->mb.rkey;
	sim_post_send(&p->a, &w, NULL, "hello");
	/* READ 5000 B back from B */
	fill(B + 40000, 5000, 3);
	wqe_init(&w, 5, IBV_WR_RDMA_READ, 1);
	w.rdma.remote_addr = (uintptr_t)B + 40000;
	w.rdma.rkey = p->mb.rkey;
	s = sge_of(&p->ma, 20000, 5000);
	sim_post_send(&p->a, &w, &s, NULL);
	/* CAS (hit) then FAA */
	*ab = 77;
	wqe_init(&w, 6, IBV_WR_ATOMIC_CMP_AND_SWP, 1);
	w.atomic.remote_addr = (uintptr_t)ab;
	w.atomic.rkey = p->mb.rkey;
	w.atomic.compare_add = 77;
	w.atomic.swap = 1000;
	s = sge_of(&p->ma, 30000, 8);
	sim_post_send(&p->a, &w, &s, NULL);
	wqe_init(&w, 7, IBV_WR_ATOMIC_FETCH_AND_ADD, 1);
	w.atomic.remote_addr = (uintptr_t)ab;
	w.atomic.rkey = p->mb.rkey;
	w.atomic.compare_add = 5;
	s = sge_of(&p->ma, 30008, 8);
	sim_post_send(&p->a, &w, &s, NULL);
	/* unsignaled zero-length WRITE: no CQE */
	wqe_init(&w, 8, IBV_WR_RDMA_WRITE, 0);
	w.send_flags = 0;
	sim_post_send(&p->a, &w, NULL, NULL);

	sim_run(&p->s, 5000000000ull);

	n = sim_poll(p->a.scq, c, 16);
	CHECK_EQ(n, 7);
	for (int i = 0; i < n && i < 7; i++) {
		static const uint32_t opc[] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
						IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD };
		CHECK_EQ(c[i].wr_id, i + 1);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[i].opcode, opc[i]);
		CHECK_EQ(c[i].qp_num, p->a.qp->qpn);
	}
	n = sim_poll(p->b.rcq, c, 16);
	CHECK_EQ(n, 3);
	if (n == 3) {
		CHECK_EQ(c[0].wr_id, 501);
		CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[0].opcode, IBV_WC_RECV);
		CHECK_EQ(c[0].byte_len, 3000);
		CHECK_EQ(c[0].wc_flags, 0);
		CHECK_EQ(c[0].src_qp, p->a.qp->qpn);
		CHECK_EQ(c[1].wr_id, 502);
		CHECK_EQ(c[1].byte_len, 0);
		CHECK_EQ(c[1].wc_flags, IBV_WC_WITH_IMM);
		CHECK_EQ(c[1].imm_or_inv, htobe32(0x12345678));
		CHECK_EQ(c[1].solicited, 1);
		CHECK_EQ(c[2].wr_id, 503);
		CHECK_EQ(c[2].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(c[2].byte_len, 5);
		CHECK_EQ(c[2].imm_or_inv, htobe32(0xabcdef01));
	}
	CHECK(!memcmp(B + 10000, A, 3000));
	CHECK(!memcmp(B + 30000, A + 4096, 10000));
	CHECK(!memcmp(B + 50000, "hello", 5));
	CHECK(!memcmp(A + 20000, B + 40000, 5000));
	CHECK_EQ(*(uint64_t *)(A + 30000), 77);
	CHECK_EQ(*(uint64_t *)(A + 30008), 1000);
	CHECK_EQ(*ab, 1005);
	CHECK_EQ(p->a.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p->b.qp->attr.qp_state, IBV_QPS_RTS);
}

static int t_rc_ops(void)
{
	struct pair p;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	run_rc_ops(&p);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	CHECK_EQ(p.b.qp->x->cnt.dup_requests, 0);
	pair_fini(&p);
	return 0;
}


/* ---- RC/UC under faults: every byte, every CQE, in order, exactly once ---- */
#define FN 120
#define FREG 8192u
#define FMR (2u << 20)

struct fault_case {
	const char *name;
	struct emu_fault_cfg cfg;
};

static const struct fault_case fault_cases[] = {
	{ "none", { .seed = 1 } },
	{ "drop", { .drop = 0.10, .seed = 1 } },
	{ "dup", { .dup = 0.10, .seed = 1 } },
	{ "reorder", { .reorder = 0.10, .seed = 1 } },
	{ "corrupt", { .corrupt = 0.10, .seed = 1 } },
	{ "all", { .drop = 0.05, .dup = 0.05, .reorder = 0.05, .corrupt = 0.05, .seed = 1 } },
};

static uint32_t rnd(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return (uint32_t)(*st >> 11);
}

static int run_faults(enum ibv_qp_type type, const struct emu_fault_cfg *cfg0, uint64_t seed)
{
	struct pair p;
	struct emu_fault_cfg cfg = *cfg0;
	uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
	uint8_t op[FN];
	uint32_t len[FN];
	struct uroce_cqe c[FN * 2];
	int nrecv = 0, i, n;
	uint8_t *A, *B;
	uint64_t *ctr;
	uint64_t faa_sum = 0;
	bool rc = type == IBV_QPT_RC;

	if (pair_setup(&p, type, IBV_MTU_1024, FMR))
		return 1;
	A = p.ma.buf;
	B = p.mb.buf;
	ctr = (uint64_t *)(B + FMR - 8);
	cfg.seed = seed;
	sim_fault(&p.s, 0, &cfg);
	cfg.seed = seed + 1000;
	sim_fault(&p.s, 1, &cfg);
	fill(A, FN * FREG, (uint32_t)seed);
	fill(B, FN * FREG, (uint32_t)seed + 7);
	for (i = 0; i < FN; i++) {
		static const uint8_t rc_ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP };
		op[i] = rc_ops[rnd(&st) % (rc ? 7 : 4)];
		len[i] = rnd(&st) % 3 == 0 ? rnd(&st) % 64 : rnd(&st) % 5000;
		if (op[i] == IBV_WR_SEND || op[i] == IBV_WR_SEND_WITH_IMM ||
		    op[i] == IBV_WR_RDMA_WRITE_WITH_IMM) {
			struct uroce_sge s = sge_of(&p.mb, (1u << 20) + (uint32_t)nrecv * FREG, FREG);
			sim_post_recv(&p.b, 1000 + (uint64_t)nrecv, &s, 1);
			nrecv++;
		}
	}
	for (i = 0; i < FN; i++) {
		struct uroce_send_wqe w;
		struct uroce_sge s;
		uint32_t off = (uint32_t)i * FREG;

		wqe_init(&w, (uint64_t)i, op[i], 1);
		switch (op[i]) {
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			w.imm_or_inv = htobe32(0x1000u + (uint32_t)i);
			/* fall through */
		case IBV_WR_SEND:
		case IBV_WR_RDMA_WRITE:
			w.rdma.remote_addr = (uintptr_t)B + off;
			w.rdma.rkey = p.mb.rkey;
			s = sge_of(&p.ma, off, len[i]);
			break;
		case IBV_WR_RDMA_READ:
			w.rdma.remote_addr = (uintptr_t)B + off;
			w.rdma.rkey = p.mb.rkey;
			s = sge_of(&p.ma, (1u << 20) + off, len[i]);
			break;
		default:
			w.atomic.remote_addr = (uintptr_t)ctr;
			w.atomic.rkey = p.mb.rkey;
			w.atomic.compare_add = op[i] == IBV_WR_ATOMIC_CMP_AND_SWP ? 0xdead : 3;
			w.atomic.swap = 0xbeef;
			s = sge_of(&p.ma, (1u << 20) + off, 8);
			len[i] = 8;
			break;
		}
		sim_post_send(&p.a, &w, &s, NULL);
		if (i % 16 == 15)
			sim_run(&p.s, 1000);
	}
	sim_run(&p.s, 60ull * 1000000000ull);

	n = sim_poll(p.a.scq, c, FN * 2);
	CHECK_EQ(n, FN);
	for (i = 0; i < n && i < FN; i++) {
		CHECK_EQ(c[i].wr_id, i);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[i].opcode, xp_wc_opcode(op[i]));
	}
	n = sim_poll(p.b.rcq, c, FN * 2);
	if (rc)
		CHECK_EQ(n, nrecv);
	else
		CHECK(n <= nrecv);
	{
		/* RC: every message, in order. UC: an in-order subsequence (lost
		 * messages consume no receive WQE), each intact and only once. */
		int k, last = -1;

		for (k = 0; k < n; k++) {
			int found = -1;

			for (i = last + 1; i < FN && found < 0; i++) {
				bool imm = op[i] != IBV_WR_SEND;

				if (op[i] != IBV_WR_SEND && op[i] != IBV_WR_SEND_WITH_IMM &&
				    op[i] != IBV_WR_RDMA_WRITE_WITH_IMM)
					continue;
				if (imm != !!(c[k].wc_flags & IBV_WC_WITH_IMM) ||
				    (imm && c[k].imm_or_inv != htobe32(0x1000u + (uint32_t)i)) ||
				    c[k].byte_len != len[i]) {
					CHECK(!rc);
					if (rc)
						break;
					continue;
				}
				if (op[i] != IBV_WR_RDMA_WRITE_WITH_IMM &&
				    memcmp(B + (1u << 20) + (c[k].wr_id - 1000) * FREG, A + i * FREG,
					   len[i])) {
					CHECK(!rc);
					continue;
				}
				found = i;
			}
			CHECK(found >= 0);
			if (found < 0)
				break;
			last = found;
			CHECK_EQ(c[k].status, IBV_WC_SUCCESS);
			CHECK_EQ(c[k].wr_id, 1000 + k);
			CHECK_EQ(c[k].opcode, op[found] == IBV_WR_RDMA_WRITE_WITH_IMM
						      ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
			CHECK_EQ(c[k].src_qp, p.a.qp->qpn);
			if (op[found] == IBV_WR_RDMA_WRITE_WITH_IMM)
				CHECK(!memcmp(B + found * FREG, A + found * FREG, len[found]));
		}
	}
	for (i = 0; i < FN; i++) {
		uint32_t off = (uint32_t)i * FREG;

		if (op[i] == IBV_WR_RDMA_WRITE || op[i] == IBV_WR_RDMA_WRITE_WITH_IMM) {
			if (rc)
				CHECK(!memcmp(B + off, A + off, len[i]));
		} else if (op[i] == IBV_WR_RDMA_READ) {
			CHECK(!memcmp(A + (1u << 20) + off, B + off, len[i]));
		} else if (op[i] == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			CHECK_EQ(*(uint64_t *)(A + (1u << 20) + off), faa_sum);
			faa_sum += 3;
		} else if (op[i] == IBV_WR_ATOMIC_CMP_AND_SWP) {
			CHECK_EQ(*(uint64_t *)(A + (1u << 20) + off), faa_sum);
		}
	}
	if (rc) {
		CHECK_EQ(*ctr, faa_sum);
		CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
		CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
		if (cfg0->drop > 0 || cfg0->corrupt > 0)
			CHECK(p.a.qp->x->cnt.retransmits > 0 || p.a.qp->x->cnt.timeouts > 0);
		if (cfg0->dup > 0)
			CHECK(p.b.qp->x->cnt.dup_requests > 0);
		if (cfg0->drop == 0 && cfg0->corrupt == 0 && cfg0->reorder == 0 && cfg0->dup == 0)
			CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	}
	if (sim_psn_start >= 0) {
		/* both directions started just below 2^24 and went past it */
		CHECK(p.a.qp->x->sq_psn < (uint32_t)sim_psn_start);
		CHECK(p.b.qp->x->epsn < (uint32_t)sim_psn_start);
	}
	if (sim_failures) {
		struct emu_xport_qp *x = p.a.qp->x;

		fprintf(stderr, "  (seed %llu) A state %d comp %u req %u/%u fetch %u psn %x max %x "
			"acked %x retrans_at %llu rnr_at %llu rdat %u stalled %u now %llu B epsn %x\n",
			(unsigned long long)seed, p.a.qp->attr.qp_state, x->sq_comp, x->sq_req,
			x->sq_req_pkt, x->sq_fetch, x->sq_psn, x->sq_psn_max, x->acked_psn,
			(unsigned long long)x->retrans_at, (unsigned long long)x->rnr_at,
			x->rd_atomic_out, x->req_stalled, (unsigned long long)sim_now,
			p.b.qp->x->epsn);
		for (uint32_t j = x->sq_comp; j != x->sq_comp + 3; j++) {
			struct emu_xport_swqe *sw = xp_swqe(p.a.qp, j);
			fprintf(stderr, "  wqe %u op %u st %u first %x last %x npkts %u resp_psn %x len %u\n",
				j, xp_wqe(p.a.qp, j)->opcode, sw->state, sw->first_psn, sw->last_psn,
				sw->npkts, sw->resp_psn, sw->total_len);
		}
		fprintf(stderr, "  cnt retrans %llu timeouts %llu B dup %llu\n",
			(unsigned long long)x->cnt.retransmits, (unsigned long long)x->cnt.timeouts,
			(unsigned long long)p.b.qp->x->cnt.dup_requests);
	}
	pair_fini(&p);
	return 0;
}

static int t_faults(enum ibv_qp_type type, const char *kind)
{
	unsigned i;
	uint64_t seed;

	for (i = 0; i < sizeof(fault_cases) / sizeof(fault_cases[0]); i++) {
		if (strcmp(kind, fault_cases[i].name))
			continue;
		for (seed = (getenv("XP_SEED") ? strtoull(getenv("XP_SEED"),0,0) : 1); seed <= (getenv("XP_SEED") ? strtoull(getenv("XP_SEED"),0,0) : 4); seed++)
			run_faults(type, &fault_cases[i].cfg, seed);
		return 0;
	}
	return 1;
}

static int t_rc_none(void) { return t_faults(IBV_QPT_RC, "none"); }
static int t_rc_drop(void) { return t_faults(IBV_QPT_RC, "drop"); }
static int t_rc_dup(void) { return t_faults(IBV_QPT_RC, "dup"); }
static int t_rc_reorder(void) { return t_faults(IBV_QPT_RC, "reorder"); }
static int t_rc_corrupt(void) { return t_faults(IBV_QPT_RC, "corrupt"); }
static int t_rc_all(void) { return t_faults(IBV_QPT_RC, "all"); }
/* PSN wrap: both directions start 16 PSNs below 2^24, with loss */
static int t_wrap(enum ibv_qp_type type, const char *kind)
{
	int r;

	sim_psn_start = 0xfffff0;
	r = t_faults(type, kind);
	sim_psn_start = -1;
	return r;
}
static int t_rc_wrap_drop(void) { return t_wrap(IBV_QPT_RC, "drop"); }
static int t_rc_wrap_all(void) { return t_wrap(IBV_QPT_RC, "all"); }
static int t_uc_wrap_all(void) { return t_wrap(IBV_QPT_UC, "all"); }
static int t_uc_none(void) { return t_faults(IBV_QPT_UC, "none"); }
static int t_uc_all(void) { return t_faults(IBV_QPT_UC, "all"); }


/* ---- UD ---- */
static int t_ud(void)
{
	struct pair p;
	uint32_t ahh;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[16];
	uint8_t *A, *B;
	int n;

	if (pair_setup(&p, IBV_QPT_UD, IBV_MTU_1024, 1 << 16))
		return 1;
	A = p.ma.buf;
	B = p.mb.buf;
	if (pair_ah(&p, 0, &ahh))
		return 1;
	fill(A, 4096, 9);
	for (int i = 0; i < 4; i++) {
		s = sge_of(&p.mb, (uint32_t)i * 2048, i == 3 ? 100 : 2048);
		sim_post_recv(&p.b, 700 + (uint64_t)i, &s, 1);
	}
	/* 1: plain send; 2: imm + Q_Key bit 31 (use the QP's); 3: wrong Q_Key
	 * (dropped); 4: too long for the receive buffer; 5: longer than MTU */
	wqe_init(&w, 1, IBV_WR_SEND, 1);
	w.ud.ah = ahh;
	w.ud.remote_qpn = p.b.qp->qpn;
	w.ud.remote_qkey = 0x11111111;
	s = sge_of(&p.ma, 0, 500);
	sim_post_send(&p.a, &w, &s, NULL);
	w.wr_id = 2;
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.imm_or_inv = htobe32(42);
	w.ud.remote_qkey = 0x80000000;
	s = sge_of(&p.ma, 1000, 1024);
	sim_post_send(&p.a, &w, &s, NULL);
	w.wr_id = 3;
	w.opcode = IBV_WR_SEND;
	w.ud.remote_qkey = 0x222;
	sim_post_send(&p.a, &w, &s, NULL);
	w.wr_id = 4;
	w.ud.remote_qkey = 0x11111111;
	s = sge_of(&p.ma, 0, 200);
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	/* fill the 3rd and 4th receive buffers in order: msg 4 goes to recv 702 */
	n = sim_poll(p.b.rcq, c, 16);
	CHECK_EQ(n, 3);
	if (n == 3) {
		CHECK_EQ(c[0].wr_id, 700);
		CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[0].byte_len, 540);
		CHECK_EQ(c[0].src_qp, p.a.qp->qpn);
		CHECK_EQ(c[0].wc_flags, IBV_WC_GRH);
		CHECK_EQ(B[20] >> 4, 4); /* IPv4 header in GRH bytes 20..39 */
		CHECK(!memcmp(B + 40, A, 500));
		CHECK_EQ(c[1].wr_id, 701);
		CHECK_EQ(c[1].byte_len, 1064);
		CHECK_EQ(c[1].wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
		CHECK_EQ(c[1].imm_or_inv, htobe32(42));
		CHECK(!memcmp(B + 2048 + 40, A + 1000, 1024));
		CHECK_EQ(c[2].wr_id, 702);
		CHECK_EQ(c[2].byte_len, 240);
	}
	CHECK(p.b.qp->x->cnt.rx_dropped >= 1);
	n = sim_poll(p.a.scq, c, 16);
	CHECK_EQ(n, 4);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(c[i].wr_id, i + 1);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	/* recv 703 has 100 bytes: 40 + 200 does not fit */
	w.wr_id = 5;
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	n = sim_poll(p.b.rcq, c, 16);
	CHECK_EQ(n, 1);
	if (n == 1) {
		CHECK_EQ(c[0].wr_id, 703);
		CHECK_EQ(c[0].status, IBV_WC_LOC_LEN_ERR);
	}
	/* longer than the path MTU: local length error, SQ error state */
	w.wr_id = 6;
	s = sge_of(&p.ma, 0, 2000);
	sim_post_send(&p.a, &w, &s, NULL);
	w.wr_id = 7;
	s = sge_of(&p.ma, 0, 20);
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	n = sim_poll(p.a.scq, c, 16);
	CHECK_EQ(n, 3);
	if (n == 3) {
		CHECK_EQ(c[0].wr_id, 5);
		CHECK_EQ(c[1].wr_id, 6);
		CHECK_EQ(c[1].status, IBV_WC_LOC_LEN_ERR);
		CHECK_EQ(c[2].wr_id, 7);
		CHECK_EQ(c[2].status, IBV_WC_WR_FLUSH_ERR);
	}
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_SQE);
	pair_fini(&p);
	return 0;
}

/* ---- error completions ---- */
static int one_send(struct pair *p, uint64_t id, uint8_t op, uint32_t off, uint32_t len,
		    uint32_t rkey, uint32_t lkey)
{
	struct uroce_send_wqe w;
	struct uroce_sge s = sge_of(&p->ma, off, len);

	s.lkey = lkey;
	wqe_init(&w, id, op, 1);
	w.rdma.remote_addr = (uintptr_t)p->mb.buf;
	w.rdma.rkey = rkey;
	sim_post_send(&p->a, &w, &s, NULL);
	return 0;
}

static int has_event(struct sim_node *n, enum ibv_event_type t)
{
	struct uroce_async_event e[16];
	int k = sim_events(n, e, 16), i, hit = 0;

	for (i = 0; i < k; i++)
		if (e[i].event_type == (uint32_t)t)
			hit++;
	return hit;
}

static void expect_err(struct pair *p, uint8_t status)
{
	struct uroce_cqe c[8];
	int n = sim_poll(p->a.scq, c, 8);

	CHECK_EQ(n, 2);
	if (n >= 1) {
		CHECK_EQ(c[0].wr_id, 1);
		CHECK_EQ(c[0].status, status);
	}
	if (n >= 2) {
		CHECK_EQ(c[1].wr_id, 2);
		CHECK_EQ(c[1].status, IBV_WC_WR_FLUSH_ERR);
	}
	CHECK_EQ(p->a.qp->attr.qp_state, IBV_QPS_ERR);
}

static int t_err_rem_access(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct uroce_sge s;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	s = sge_of(&p.mb, 0, 64);
	sim_post_recv(&p.b, 9, &s, 1);
	one_send(&p, 1, IBV_WR_RDMA_WRITE, 0, 100, p.mb.rkey ^ 0x100, p.ma.lkey);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
	CHECK_EQ(has_event(&p.s.n[1], IBV_EVENT_QP_ACCESS_ERR), 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(c[0].wr_id, 9);
	/* a receive posted in ERR is flushed at once */
	sim_post_recv(&p.b, 10, &s, 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 10);
	CHECK_EQ(c[0].status, IBV_WC_WR_FLUSH_ERR);
	pair_fini(&p);
	return 0;
}

static int t_err_rnr(void)
{
	struct pair p;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	p.a.qp->attr.rnr_retry = 2;
	p.a.qp->x->rnr_left = 2;
	one_send(&p, 1, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(p.a.qp->x->cnt.rnr_naks_rcvd, 3);
	CHECK_EQ(p.b.qp->x->cnt.rnr_naks_sent, 3);
	CHECK_EQ(p.a.qp->x->cnt.rnr_retry_exceeded, 1);
	pair_fini(&p);
	return 0;
}

static int t_rnr_recover(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct uroce_sge s;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	fill(p.ma.buf, 100, 5);
	one_send(&p, 1, IBV_WR_SEND, 0, 100, 0, p.ma.lkey);
	sim_run(&p.s, 5000); /* RNR NAKed, waiting */
	CHECK_EQ(p.a.qp->x->cnt.rnr_naks_rcvd, 1);
	s = sge_of(&p.mb, 0, 100);
	sim_post_recv(&p.b, 9, &s, 1);
	sim_run(&p.s, 10000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, 100));
	pair_fini(&p);
	return 0;
}

static int t_err_retry(void)
{
	struct pair p;
	struct emu_fault_cfg cfg = { .drop = 1.0, .seed = 1 };

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	sim_fault(&p.s, 1, &cfg);
	one_send(&p, 1, IBV_WR_RDMA_WRITE, 0, 10, p.mb.rkey, p.ma.lkey);
	one_send(&p, 2, IBV_WR_RDMA_WRITE, 0, 10, p.mb.rkey, p.ma.lkey);
	sim_run(&p.s, 100000000000ull);
	expect_err(&p, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 8); /* retry_cnt 7: 1 + 7 tries */
	CHECK_EQ(p.a.qp->x->cnt.retry_exceeded, 1);
	pair_fini(&p);
	return 0;
}

static int t_err_inv_req(void)
{
	struct pair p;
	struct ibv_qp_attr at;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	memset(&at, 0, sizeof(at));
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE; /* no remote write */
	CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_ACCESS_FLAGS), 0);
	one_send(&p, 1, IBV_WR_RDMA_WRITE, 0, 10, p.mb.rkey, p.ma.lkey);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(has_event(&p.s.n[1], IBV_EVENT_QP_REQ_ERR), 1);
	pair_fini(&p);
	return 0;
}

static int t_err_rem_op(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct uroce_sge s;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	s = sge_of(&p.mb, 0, 100);
	sim_post_recv(&p.b, 9, &s, 1);
	one_send(&p, 1, IBV_WR_SEND, 0, 3000, 0, p.ma.lkey);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_REM_OP_ERR);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 9);
	CHECK_EQ(c[0].status, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
	pair_fini(&p);
	return 0;
}

static int t_err_loc_prot(void)
{
	struct pair p;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	one_send(&p, 1, IBV_WR_RDMA_WRITE, 0, 10, p.mb.rkey, p.ma.lkey ^ 0x300);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(p.s.frames, 0); /* nothing went on the wire */
	pair_fini(&p);
	return 0;
}

static int t_err_atomic_align(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_sge s;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	wqe_init(&w, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 1);
	w.atomic.remote_addr = (uintptr_t)p.mb.buf + 4;
	w.atomic.rkey = p.mb.rkey;
	s = sge_of(&p.ma, 0, 8);
	sim_post_send(&p.a, &w, &s, NULL);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_LOC_QP_OP_ERR);
	pair_fini(&p);
	return 0;
}

/* A type-2 window allocated on node n of p (0: A, 1: B) and w, a
 * signaled WR id that binds it with the key tag to len bytes at off in
 * m with REMOTE_WRITE: the key, or 0 when the window cannot be made. */
static uint32_t mw_bind_wqe(struct pair *p, int n, struct uroce_send_wqe *w, uint64_t id,
			    uint8_t tag, struct sim_mr *m, size_t off, uint64_t len)
{
	struct uroce_alloc_mw_req mq = { p->s.n[n].pd, IBV_MW_TYPE_2 };
	struct uroce_alloc_mw_rep mr;

	if (emu_mw_alloc(p->s.n[n].ctx, &mq, &mr))
		return 0;
	memset(w, 0, sizeof(*w));
	w->wr_id = id;
	w->opcode = IBV_WR_BIND_MW;
	w->send_flags = IBV_SEND_SIGNALED;
	w->bind.mw = mr.handle;
	w->bind.rkey = (mr.rkey & ~0xffu) | tag;
	w->bind.addr = (uintptr_t)m->buf + off;
	w->bind.length = len;
	w->bind.mr_lkey = m->lkey;
	w->bind.access = IBV_ACCESS_REMOTE_WRITE;
	return w->bind.rkey;
}

/* SEND_WITH_INV of a bound type-2 window: WITH_INV at the receiver, and
 * the key is dead afterwards (REM_ACCESS_ERR). */
static int t_send_inv(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[4];
	uint32_t rkey;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	/* B binds the window through its own SQ */
	rkey = mw_bind_wqe(&p, 1, &w, 77, 0x5a, &p.mb, 0, 4096);
	if (!rkey)
		return 1;
	sim_post_send(&p.b, &w, NULL, NULL);
	CHECK_EQ(sim_poll(p.b.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].opcode, IBV_WC_BIND_MW);
	/* A writes through the window, then invalidates it */
	one_send(&p, 1, IBV_WR_RDMA_WRITE, 0, 16, rkey, p.ma.lkey);
	s = sge_of(&p.mb, 8192, 64);
	sim_post_recv(&p.b, 9, &s, 1);
	wqe_init(&w, 2, IBV_WR_SEND_WITH_INV, 1);
	w.imm_or_inv = rkey;
	s = sge_of(&p.ma, 0, 8);
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 10000000000ull);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].wc_flags, IBV_WC_WITH_INV);
	CHECK_EQ(c[0].imm_or_inv, rkey);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 2);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[1].status, IBV_WC_SUCCESS);
	one_send(&p, 3, IBV_WR_RDMA_WRITE, 0, 16, rkey, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR);
	pair_fini(&p);
	return 0;
}

/* A bind that does not fit its MR completes with MW_BIND_ERR, the window
 * stays unbound (a WRITE through the requested key fails), the QP goes to
 * ERR and the next WR is flushed. */
static int t_err_mw_bind(void)
{
	struct pair p;
	struct uroce_send_wqe w;
	uint32_t rkey;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	/* runs past the end of the MR */
	rkey = mw_bind_wqe(&p, 0, &w, 1, 0x33, &p.ma, 4096, p.ma.len);
	if (!rkey)
		return 1;
	sim_post_send(&p.a, &w, NULL, NULL);
	one_send(&p, 2, IBV_WR_SEND, 0, 10, 0, p.ma.lkey);
	sim_run(&p.s, 10000000000ull);
	expect_err(&p, IBV_WC_MW_BIND_ERR);
	/* nothing reached the wire, and the key was never made valid */
	CHECK_EQ(p.b.qp->x->cnt.rx_pkts, 0);
	{
		int err = 0;
		uint64_t pa;
		struct emu_ctx *owner;

		CHECK(emu_mr_check_rkey(p.a.qp, rkey, (uintptr_t)p.ma.buf + 4096, 8,
					IBV_ACCESS_REMOTE_WRITE, &pa, &owner, &err) == NULL);
	}
	pair_fini(&p);
	return 0;
}

/* ---- async events ---- */
static int t_events(void)
{
	struct sim s;
	struct sim_qp a, b;
	struct sim_mr ma, mb;
	struct ibv_qp_attr at;
	struct uroce_sge sg;
	struct uroce_cqe c[4];

	if (sim_init(&s) || sim_qp(&s.n[0], IBV_QPT_RC, 16, &a, -1) ||
	    sim_qp(&s.n[1], IBV_QPT_RC, 16, &b, -1) || sim_mr(&s.n[0], 4096, ALL_ACCESS, &ma) ||
	    sim_mr(&s.n[1], 4096, ALL_ACCESS, &mb) || sim_connect(&a, &b, IBV_MTU_1024) ||
	    sim_connect(&b, &a, IBV_MTU_1024))
		return 1;
	/* move B back to a fresh RTR: first packet -> COMM_EST */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(b.qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(sim_connect(&b, &a, IBV_MTU_1024), 0);
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(b.qp, &at, IBV_QP_STATE), 0);
	{
		struct ibv_qp_attr x;

		memset(&x, 0, sizeof(x));
		x.qp_state = IBV_QPS_INIT;
		x.port_num = 1;
		x.qp_access_flags = ALL_ACCESS;
		CHECK_EQ(emu_qp_modify(b.qp, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						      IBV_QP_ACCESS_FLAGS), 0);
		x.qp_state = IBV_QPS_RTR;
		x.path_mtu = IBV_MTU_1024;
		x.dest_qp_num = a.qp->qpn;
		x.rq_psn = 0x100 + a.qp->qpn * 7;
		x.max_dest_rd_atomic = 1;
		x.min_rnr_timer = 1;
		x.ah_attr.is_global = 1;
		x.ah_attr.port_num = 1;
		x.ah_attr.grh.sgid_index = 1;
		x.ah_attr.grh.dgid = s.n[0].dev.gids[1];
		CHECK_EQ(emu_qp_modify(b.qp, &x, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	}
	sg = sge_of(&mb, 0, 64);
	sim_post_recv(&b, 1, &sg, 1);
	{
		struct uroce_send_wqe w;

		wqe_init(&w, 5, IBV_WR_SEND, 1);
		sg = sge_of(&ma, 0, 64);
		sim_post_send(&a, &w, &sg, NULL);
	}
	sim_run(&s, 1000000000ull);
	CHECK_EQ(has_event(&s.n[1], IBV_EVENT_COMM_EST), 1);
	CHECK_EQ(sim_poll(b.rcq, c, 4), 1);
	CHECK_EQ(sim_poll(a.scq, c, 4), 1);
	/* SQD with notification: SQ_DRAINED */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_SQD;
	at.en_sqd_async_notify = 1;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	sim_run(&s, 1000000000ull);
	CHECK_EQ(has_event(&s.n[0], IBV_EVENT_SQ_DRAINED), 1);
	at.qp_state = IBV_QPS_RTS;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), 0);
	sim_fini(&s);
	free(ma.buf);
	free(mb.buf);
	return 0;
}

/* ---- QP state machine ---- */
static int t_qp_state(void)
{
	struct sim s;
	struct sim_qp a, u;
	struct ibv_qp_attr at, q;
	int base = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

	if (sim_init(&s) || sim_qp(&s.n[0], IBV_QPT_RC, 16, &a, -1) ||
	    sim_qp(&s.n[0], IBV_QPT_UD, 16, &u, -1))
		return 1;
	memset(&at, 0, sizeof(at));
	at.port_num = 1;
	at.qp_access_flags = ALL_ACCESS;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = 0x55;
	at.max_dest_rd_atomic = 1;
	at.max_rd_atomic = 1;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.grh.sgid_index = 1;
	at.ah_attr.grh.dgid = s.n[1].dev.gids[1];

	at.qp_state = IBV_QPS_RTR;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), -EINVAL);          /* RESET -> RTR */
	at.qp_state = IBV_QPS_INIT;
	CHECK_EQ(emu_qp_modify(a.qp, &at, base & ~IBV_QP_PORT), -EINVAL); /* missing */
	CHECK_EQ(emu_qp_modify(a.qp, &at, base | IBV_QP_QKEY), -EINVAL);  /* not allowed */
	at.port_num = 2;
	CHECK_EQ(emu_qp_modify(a.qp, &at, base), -EINVAL);
	at.port_num = 1;
	at.pkey_index = 1;
	CHECK_EQ(emu_qp_modify(a.qp, &at, base), -EINVAL);
	at.pkey_index = 0;
	CHECK_EQ(emu_qp_modify(a.qp, &at, base), 0);
	CHECK_EQ(emu_qp_modify(a.qp, &at, base), 0);                /* INIT -> INIT */
	at.qp_state = IBV_QPS_RTS;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rts), -EINVAL);           /* INIT -> RTS */
	at.qp_state = IBV_QPS_RTR;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr & ~IBV_QP_MIN_RNR_TIMER), -EINVAL);
	at.path_mtu = IBV_MTU_4096;                                  /* > active 1024 */
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), -EINVAL);
	at.path_mtu = IBV_MTU_1024;
	at.ah_attr.is_global = 0;                                    /* RoCE needs a GRH */
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), -EINVAL);
	at.ah_attr.is_global = 1;
	at.ah_attr.grh.sgid_index = 9;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), -EINVAL);
	at.ah_attr.grh.sgid_index = 1;
	at.max_dest_rd_atomic = 200;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), -EINVAL);
	at.max_dest_rd_atomic = 1;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rtr), 0);
	CHECK_EQ(a.qp->attr.qp_state, IBV_QPS_RTR);
	at.qp_state = IBV_QPS_RTS;
	at.retry_cnt = 8;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rts), -EINVAL);
	at.retry_cnt = 7;
	at.timeout = 32;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rts), -EINVAL);
	at.timeout = 14;
	CHECK_EQ(emu_qp_modify(a.qp, &at, rts & ~IBV_QP_SQ_PSN), -EINVAL);
	CHECK_EQ(emu_qp_modify(a.qp, &at, rts), 0);
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0); /* RTS->RTS */
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_PATH_MTU), -EINVAL);
	at.qp_state = IBV_QPS_SQD;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(emu_qp_query(a.qp, &q, 0), 0);
	CHECK_EQ(q.qp_state, IBV_QPS_SQD);
	at.qp_state = IBV_QPS_RTS;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), 0);
	at.qp_state = IBV_QPS_SQE;                                   /* never by modify */
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), -EINVAL);
	at.qp_state = IBV_QPS_ERR;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), 0);
	at.qp_state = IBV_QPS_RTS;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), -EINVAL);
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(a.qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(emu_qp_query(a.qp, &q, 0), 0);
	CHECK_EQ(q.qp_state, IBV_QPS_RESET);
	CHECK_EQ(q.dest_qp_num, 0x55);
	/* UD: INIT needs a Q_Key, RTR needs nothing, RTS needs the SQ PSN */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), -EINVAL);
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_QKEY), 0);
	at.qp_state = IBV_QPS_RTR;
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE | IBV_QP_AV), -EINVAL);
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE), 0);
	at.qp_state = IBV_QPS_RTS;
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE), -EINVAL);
	CHECK_EQ(emu_qp_modify(u.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	sim_fini(&s);
	return 0;
}

static const struct xt_test tests[] = {
	{ "rc_ops", t_rc_ops },
	{ "rc_none", t_rc_none },
	{ "rc_drop", t_rc_drop },
	{ "rc_dup", t_rc_dup },
	{ "rc_reorder", t_rc_reorder },
	{ "rc_corrupt", t_rc_corrupt },
	{ "rc_all", t_rc_all },
	{ "rc_wrap_drop", t_rc_wrap_drop },
	{ "rc_wrap_all", t_rc_wrap_all },
	{ "uc_wrap_all", t_uc_wrap_all },
	{ "uc_none", t_uc_none },
	{ "uc_all", t_uc_all },
	{ "ud", t_ud },
	{ "err_rem_access", t_err_rem_access },
	{ "err_rnr", t_err_rnr },
	{ "rnr_recover", t_rnr_recover },
	{ "err_retry", t_err_retry },
	{ "err_inv_req", t_err_inv_req },
	{ "err_rem_op", t_err_rem_op },
	{ "err_loc_prot", t_err_loc_prot },
	{ "err_atomic_align", t_err_atomic_align },
	{ "send_inv", t_send_inv },
	{ "err_mw_bind", t_err_mw_bind },
	{ "events", t_events },
	{ "qp_state", t_qp_state },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
