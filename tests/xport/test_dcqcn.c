/* SPDX-License-Identifier: MIT */
/* DCQCN (docs/dcqcn.md): ECN marking of what the transport sends, the
 * notification point's CNPs, the reaction point's algorithm step by step,
 * and two flows through a marking bottleneck on the simulated wire. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

/* ---- ECT marking ---- */
/* ECN and DSCP of what crossed the wire, by kind of packet */
static struct {
	unsigned data, data_ect, data_dscp;  /* requests and READ responses */
	unsigned ack, ack_ect;               /* ACK / NAK / atomic ACK */
	unsigned cnp, cnp_bad;               /* CNP: not ECT, cnp_dscp */
	uint8_t dscp;                        /* the path's DSCP */
	uint8_t ecn;                         /* what data packets must carry */
	bool mark_ce;                        /* mark requests CE on the way */
} ect;

static bool ect_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;
	uint8_t op;

	(void)s;
	(void)to;
	if (!xt_parse(frame, len, &p))
		return true;
	op = p.bth.opcode;
	if (op == WIRE_OP_CNP) {
		ect.cnp++;
		ect.cnp_bad += p.ip.tos != 48 << 2;
	} else if (op == WIRE_OP_RC_ACK || op == WIRE_OP_RC_ATOMIC_ACK) {
		ect.ack++;
		ect.ack_ect += (p.ip.tos & WIRE_ECN_MASK) != WIRE_ECN_NOT_ECT;
	} else {
		ect.data++;
		ect.data_ect += (p.ip.tos & WIRE_ECN_MASK) == ect.ecn;
		ect.data_dscp += p.ip.tos >> 2 == ect.dscp;
		if (ect.mark_ce && (p.op->flags & WIRE_OPF_REQ)) {
			p.ip.tos |= WIRE_ECN_CE; /* a congested switch on the way */
			xt_rebuild(frame, len, &p);
		}
	}
	return true;
}

/* Every operation of an RC (or UC) pair, with path DSCP 46 and the ECN
 * bits the application asked for (tclass 01: ECT(1)), ECT marking on or
 * off: data packets carry ECT(0) (on) or the application's bits (off),
 * the DSCP stays, ACKs are not ECN-capable (on) or as asked (off). */
static int ect_run(enum ibv_qp_type t, bool on)
{
	struct pair p;
	struct uroce_cqe c[16];
	unsigned ops = t == IBV_QPT_RC ? 4 : 2;

	if (pair_setup(&p, t, IBV_MTU_1024, 1 << 16))
		return 1;
	p.s.n[0].dev.dcqcn.ect = on;
	p.s.n[1].dev.dcqcn.ect = on;
	p.a.qp->x.path.tclass = 46 << 2 | WIRE_ECN_ECT1;
	p.b.qp->x.path.tclass = 46 << 2 | WIRE_ECN_ECT1;
	memset(&ect, 0, sizeof(ect));
	ect.dscp = 46;
	ect.ecn = on ? WIRE_ECN_ECT0 : WIRE_ECN_ECT1;
	sim_hook = ect_hook;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 3000, 0);
	xt_post(&p, 2, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 100, 0);
	if (t == IBV_QPT_RC) {
		xt_post(&p, 3, IBV_WR_RDMA_READ, 0, 2500, 0);
		xt_post(&p, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, 64);
	}
	struct uroce_sge r = xt_sge(&p.mb, 4096, 64);
	sim_post_recv(&p.b, 9, &r, 1);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 16), (int)ops);
	/* WRITE 3 + WRITE_IMM 1 (+ READ request 1 + 3 responses + FETCH_ADD 1) */
	CHECK_EQ(ect.data, t == IBV_QPT_RC ? 9 : 4);
	CHECK_EQ(ect.data_ect, ect.data);
	CHECK_EQ(ect.data_dscp, ect.data);
	if (t == IBV_QPT_RC)
		CHECK(ect.ack >= 2); /* the WRITEs' (coalesced) and the atomic ACK */
	/* off: the application's ECT(1) stays on ACKs too, as before */
	CHECK_EQ(ect.ack_ect, on ? 0 : ect.ack);
	CHECK_EQ(ect.cnp, 0);
	pair_fini(&p);
	return 0;
}

static int t_ect_rc(void)
{
	return ect_run(IBV_QPT_RC, true) || ect_run(IBV_QPT_RC, false);
}

static int t_ect_uc(void)
{
	return ect_run(IBV_QPT_UC, true) || ect_run(IBV_QPT_UC, false);
}

/* UD SENDs leave ECT(0); the AH's traffic class gives the DSCP. */
static int t_ect_ud(void)
{
	struct pair p;
	struct uroce_create_ah_req ah;
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[4];
	uint32_t ahh;

	if (pair_setup(&p, IBV_QPT_UD, IBV_MTU_1024, 1 << 16))
		return 1;
	memset(&ah, 0, sizeof(ah));
	ah.pd = p.s.n[0].pd;
	ah.attr.is_global = 1;
	ah.attr.port_num = 1;
	ah.attr.grh.sgid_index = 1;
	ah.attr.grh.dgid = p.s.n[1].dev.gids[1];
	ah.attr.grh.traffic_class = 10 << 2;
	if (emu_ah_create(p.s.n[0].ctx, &ah, &ahh))
		return 1;
	memset(&ect, 0, sizeof(ect));
	ect.dscp = 10;
	ect.ecn = WIRE_ECN_ECT0;
	sim_hook = ect_hook;
	s = xt_sge(&p.mb, 0, 2048);
	sim_post_recv(&p.b, 1, &s, 1);
	xt_wqe(&w, 1, IBV_WR_SEND, 1);
	w.ud.ah = ahh;
	w.ud.remote_qpn = p.b.qp->qpn;
	w.ud.remote_qkey = 0x11111111;
	s = xt_sge(&p.ma, 0, 500);
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(ect.data, 1);
	CHECK_EQ(ect.data_ect, 1);
	CHECK_EQ(ect.data_dscp, 1);
	pair_fini(&p);
	return 0;
}

/* CE-marked requests: the CNP leaves with cnp_dscp (48) and Not-ECT; with
 * the notification point off, CE is counted and nothing is sent. */
static int t_np_off(void)
{
	for (int on = 1; on >= 0; on--) {
		struct pair p;
		struct uroce_cqe c[8];
		struct emu_xport_counters ca, cb;

		if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
			return 1;
		p.s.n[1].dev.dcqcn.np = (uint8_t)on;
		p.s.n[0].dev.dcqcn.rp = 0; /* only the NP here */
		memset(&ect, 0, sizeof(ect));
		ect.ecn = WIRE_ECN_ECT0;
		ect.mark_ce = true;
		sim_hook = ect_hook;
		for (int i = 0; i < 3; i++) {
			xt_post(&p, (uint64_t)i, IBV_WR_RDMA_WRITE, 0, 2000, 0);
			sim_run(&p.s, 1000000000ull);
			sim_now += 10000; /* past min_time_between_cnps */
		}
		CHECK_EQ(sim_poll(p.a.scq, c, 8), 3);
		emu_xport_qp_counters(p.a.qp, &ca);
		emu_xport_qp_counters(p.b.qp, &cb);
		CHECK_EQ(cb.ce_rcvd, 6);
		CHECK_EQ(cb.cnp_sent, on ? 3 : 0);
		CHECK_EQ(ca.cnp_rcvd, on ? 3 : 0);
		CHECK_EQ(ect.cnp, on ? 3 : 0);
		CHECK_EQ(ect.cnp_bad, 0);
		CHECK(!xp_rp_active(&p.a.qp->x)); /* rp=off: never rate-limited */
		pair_fini(&p);
	}
	return 0;
}

static const struct xt_test tests[] = {
	{ "ect_rc", t_ect_rc },
	{ "ect_uc", t_ect_uc },
	{ "ect_ud", t_ect_ud },
	{ "np_off", t_np_off },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
