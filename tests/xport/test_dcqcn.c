/* SPDX-License-Identifier: MIT */
/* DCQCN (docs/dcqcn.md): ECN marking of what the transport sends, the
 * notification point's CNPs, the reaction point's algorithm step by step,
 * and two flows through a marking bottleneck on the simulated wire. */
#include <errno.h>
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
	p.s.n[0].dev.x->dcqcn.ect = on;
	p.s.n[1].dev.x->dcqcn.ect = on;
	p.a.qp->x->path.tclass = 46 << 2 | WIRE_ECN_ECT1;
	p.b.qp->x->path.tclass = 46 << 2 | WIRE_ECN_ECT1;
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
		/* the atomic ACK (the WRITEs' coalesced ACK is implied by the
		 * READ's responses right behind it, which carry its AETH) */
		CHECK(ect.ack >= 1);
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
	struct uroce_send_wqe w;
	struct uroce_sge s;
	struct uroce_cqe c[4];
	uint32_t ahh;

	if (pair_setup(&p, IBV_QPT_UD, IBV_MTU_1024, 1 << 16))
		return 1;
	if (pair_ah(&p, 10 << 2, &ahh))
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
		p.s.n[1].dev.x->dcqcn.np = (uint8_t)on;
		p.s.n[0].dev.x->dcqcn.rp = 0; /* only the NP here */
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
		CHECK(!xp_rp_active(p.a.qp->x)); /* rp=off: never rate-limited */
		pair_fini(&p);
	}
	return 0;
}

/* A CNP for A's RC QP from src (node B's address, or another one). */
static void cnp_to_a(struct pair *p, const union ibv_gid *src)
{
	struct wire_pkt k;
	uint8_t fr[256];
	size_t len;

	wire_pkt_init(&k, 4);
	memcpy(k.dmac, p->s.n[0].dev.mac, 6);
	memcpy(k.smac, p->s.n[1].dev.mac, 6);
	memcpy(k.ip.src.raw, src->raw, 16);
	memcpy(k.ip.dst.raw, p->s.n[0].dev.gids[1].raw, 16);
	k.ip.ttl = 64;
	k.bth.opcode = WIRE_OP_CNP;
	k.bth.becn = true;
	k.bth.pkey = 0xffff;
	k.bth.dqpn = p->a.qp->qpn;
	if (wire_build(&k, fr, sizeof(fr), 0, &len) == 0)
		emu_port_rx_frame(&p->s.n[0].dev, fr, (uint32_t)len);
	else
		CHECK(!"build");
}

/* A CNP slows a connected QP down only when its peer sent it: a forged
 * one from another address is dropped (src-mismatch), no rate cut. */
static int t_cnp_source(void)
{
	struct pair p;
	struct emu_xport_counters c;
	union ibv_gid other;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	other = p.s.n[1].dev.gids[1];
	other.raw[15] ^= 0x40;
	cnp_to_a(&p, &other);
	emu_xport_qp_counters(p.a.qp, &c);
	CHECK_EQ(c.cnp_rcvd, 0);
	CHECK_EQ(c.drops[EMU_XDROP_SRC], 1);
	CHECK(!p.a.qp->x->rp);
	cnp_to_a(&p, &p.s.n[1].dev.gids[1]);
	emu_xport_qp_counters(p.a.qp, &c);
	CHECK_EQ(c.cnp_rcvd, 1);
	CHECK(xp_rp_active(p.a.qp->x));
	CHECK_EQ(p.s.n[0].dev.x->dcqcn_cnt.rate_cuts, 1);
	pair_fini(&p);
	return 0;
}

/* ---- the reaction point, step by step (virtual times, direct calls) ---- */
#define US 1000ull
#define MAX_KBPS 25000000ull /* the port's 25 Gb/s */

/* A connected RC QP on node A, its reaction point configured by cfg. */
static struct emu_qp *rp_qp(struct pair *p, void (*cfg)(struct emu_dcqcn_cfg *c))
{
	if (pair_setup(p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return NULL;
	if (cfg)
		cfg(&p->s.n[0].dev.x->dcqcn);
	return p->a.qp;
}

/* First CNP: into the limiter, alpha 1023, rc cut by alpha/2 at once;
 * more CNPs within rate_reduce_monitor_period (4 us) make one more cut,
 * at the end of the period, with alpha as the 1 us updates left it. */
static int t_rp_cut(void)
{
	struct pair p;
	struct emu_qp *qp = rp_qp(&p, NULL);
	struct emu_dcqcn_rp *rp;
	uint64_t t0 = sim_now, rc1, rc2;

	if (!qp)
		return 1;
	CHECK(!qp->x->rp); /* nothing allocated before a CNP */
	CHECK_EQ(emu_dcqcn_rate_kbps(qp), MAX_KBPS);
	xp_rp_cnp(qp, t0);
	rp = qp->x->rp;
	if (!rp)
		return 1;
	CHECK(rp->active);
	rc1 = MAX_KBPS - (MAX_KBPS * 1023 >> 11); /* about half */
	CHECK_EQ(rp->rc, rc1);
	CHECK_EQ(rp->rt, MAX_KBPS);
	CHECK_EQ(rp->cuts, 1);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_FAST_RECOVERY);
	/* alpha in 1/2^20 (1/1024 with 10 more bits): g = 1019/1024 */
	uint64_t a = 1023u << 10;
	CHECK_EQ(rp->alpha, a);
	xp_rp_cnp(qp, t0 + 1 * US); /* alpha period 1 ended without a CNP */
	a = a * 1019 / 1024;
	CHECK_EQ(rp->alpha, a);
	xp_rp_cnp(qp, t0 + 2 * US); /* period 2 had one: up again */
	a = a * 1019 / 1024 + (5u << 10);
	CHECK_EQ(rp->alpha, a);
	xp_rp_advance(qp, t0 + 4 * US - 1);
	a = a * 1019 / 1024 + (5u << 10); /* period 3 had one */
	CHECK_EQ(rp->alpha, a);
	CHECK_EQ(rp->cuts, 1); /* once per monitor period */
	CHECK_EQ(rp->rc, rc1);
	xp_rp_advance(qp, t0 + 4 * US);
	a = a * 1019 / 1024; /* period 4 none, then the cut */
	CHECK_EQ(rp->cuts, 2);
	CHECK_EQ(rp->alpha, a);
	rc2 = rc1 - (rc1 * a >> 21);
	CHECK_EQ(rp->rc, rc2);
	CHECK_EQ(rp->rt, MAX_KBPS); /* no increase between the cuts: target kept */
	/* no more CNPs: alpha decays every us, (1019/1024)^t */
	xp_rp_advance(qp, t0 + 5 * US);
	CHECK_EQ(rp->alpha, a * 1019 / 1024);
	xp_rp_advance(qp, t0 + 145 * US); /* 0.5 after ~141 us */
	CHECK(rp->alpha > 480u << 10 && rp->alpha < 520u << 10);
	CHECK_EQ(rp->rc, rc2); /* the first timer increase is 300 us after the cut */
	xp_rp_advance(qp, t0 + 4000 * US); /* 2^-20 after ~2.8 ms */
	CHECK_EQ(rp->alpha, 0);
	CHECK_EQ(rp->alpha_at, UINT64_MAX);
	pair_fini(&p);
	return 0;
}

static void cfg_stages(struct emu_dcqcn_cfg *c)
{
	c->clamp_tgt_rate = 1;   /* rt = rc at every cut */
	c->rpg_byte_reset = 16;  /* a byte-counter event every 1 KB */
}

/* Increase events by timer and by bytes: fast recovery (rt kept), then
 * additive (rt + 5 Mb/s) once either count reaches rpg_threshold (1),
 * then hyper (rt + 50 Mb/s) once both are past it; rc halves its
 * distance to rt at each. */
static int t_rp_stages(void)
{
	struct pair p;
	struct emu_qp *qp = rp_qp(&p, cfg_stages);
	struct emu_dcqcn_rp *rp;
	uint64_t t0 = sim_now, rt, rc;

	if (!qp)
		return 1;
	xp_rp_cnp(qp, t0);
	xp_rp_cnp(qp, t0 + 4 * US); /* second cut: rt = the rate before it */
	rp = qp->x->rp;
	if (!rp)
		return 1;
	CHECK_EQ(rp->cuts, 2);
	rt = MAX_KBPS - (MAX_KBPS * 1023 >> 11);
	CHECK_EQ(rp->rt, rt);
	rc = rp->rc;
	CHECK(rc < rt);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_FAST_RECOVERY);
	xp_rp_advance(qp, t0 + 304 * US - 1);
	CHECK_EQ(rp->rc, rc); /* the timer runs from the last cut */
	xp_rp_advance(qp, t0 + 304 * US); /* timer event 1: fast recovery */
	CHECK_EQ(rp->rt, rt);
	rc = (rc + rt + 1) / 2;
	CHECK_EQ(rp->rc, rc);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_ADDITIVE);
	xp_rp_sent(qp, 1024); /* byte event 1: additive */
	rt += 5000;
	rc = (rc + rt + 1) / 2;
	CHECK_EQ(rp->rt, rt);
	CHECK_EQ(rp->rc, rc);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_ADDITIVE);
	xp_rp_advance(qp, t0 + 604 * US); /* timer event 2: additive */
	rt += 5000;
	rc = (rc + rt + 1) / 2;
	CHECK_EQ(rp->rt, rt);
	CHECK_EQ(rp->rc, rc);
	xp_rp_sent(qp, 512);
	CHECK_EQ(rp->rt, rt); /* half a byte period: nothing */
	xp_rp_sent(qp, 512); /* byte event 2: additive (counts 2 and 1) */
	rt += 5000;
	rc = (rc + rt + 1) / 2;
	CHECK_EQ(rp->rt, rt);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_HYPER);
	xp_rp_sent(qp, 1024); /* both counts past the threshold: hyper */
	rt += 50000;
	rc = (rc + rt + 1) / 2;
	CHECK_EQ(rp->rt, rt);
	CHECK_EQ(rp->rc, rc);
	/* a CNP ends the increase: counts from 0, fast recovery again */
	xp_rp_cnp(qp, t0 + 700 * US);
	CHECK_EQ(rp->cuts, 3);
	CHECK_EQ(rp->rt, rc); /* clamp_tgt_rate */
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_FAST_RECOVERY);
	CHECK_EQ(rp->t_stage + rp->b_stage, 0);
	pair_fini(&p);
	return 0;
}

static void cfg_floor(struct emu_dcqcn_cfg *c)
{
	c->rpg_min_rate = 1000;     /* 1 Gb/s */
	c->rpg_min_dec_fac = 80;    /* a cut keeps at least 80% */
	c->rpg_max_rate = 10000;
}

/* rpg_min_dec_fac bounds each cut, rpg_min_rate bounds them all; with no
 * CNPs the rate climbs back, and at the line rate the QP is released
 * (paced at the line rate, no timers; the next CNP starts afresh, alpha
 * reset). */
static int t_rp_floor(void)
{
	struct pair p;
	struct emu_qp *qp = rp_qp(&p, cfg_floor);
	struct emu_dcqcn_rp *rp;
	uint64_t t = sim_now;

	if (!qp)
		return 1;
	xp_rp_cnp(qp, t);
	rp = qp->x->rp;
	if (!rp)
		return 1;
	CHECK_EQ(rp->rc, 8000000); /* alpha/2 would take ~50%, 20% at most */
	for (int i = 0; i < 40; i++) {
		t += 4 * US;
		xp_rp_cnp(qp, t);
	}
	CHECK_EQ(rp->cuts, 41);
	CHECK_EQ(rp->rc, 1000000);
	CHECK_EQ(emu_dcqcn_rate_kbps(qp), 1000000);
	/* recovery by timer alone (no bytes sent), additive up to 10 Gb/s:
	 * ~1800 increases of 300 us, caught up in one call */
	xp_rp_advance(qp, t + 2000000 * US);
	CHECK(rp->recovered);
	CHECK_EQ(emu_dcqcn_stage(qp), EMU_DCQCN_LINE_RATE);
	CHECK_EQ(emu_dcqcn_rate_kbps(qp), 10000000);
	CHECK_EQ(rp->inc_at, UINT64_MAX); /* nothing left to catch up */
	CHECK_EQ(rp->alpha_at, UINT64_MAX);
	xp_rp_cnp(qp, t + 2000001 * US);
	CHECK(rp->active);
	CHECK_EQ(rp->alpha, 1023u << 10);
	CHECK_EQ(rp->rc, 8000000);
	pair_fini(&p);
	return 0;
}

static void cfg_first(struct emu_dcqcn_cfg *c)
{
	c->rate_to_set_on_first_cnp = 1000; /* 1 Gb/s */
}

/* The pacer: a packet of n bytes holds the next one back n*8/rc; a turn
 * that comes late may catch up 10 us, no more. */
static int t_rp_pace(void)
{
	struct pair p;
	struct emu_qp *qp = rp_qp(&p, cfg_first);
	struct emu_dcqcn_rp *rp;
	uint64_t t0 = sim_now;

	if (!qp)
		return 1;
	xp_rp_cnp(qp, t0);
	rp = qp->x->rp;
	if (!rp)
		return 1;
	CHECK_EQ(rp->rc, 1000000);
	CHECK_EQ(rp->rt, 1000000);
	CHECK_EQ(xp_rp_pace(qp, t0), 0);
	xp_rp_sent(qp, 1000);  /* 8 us at 1 Gb/s */
	xp_rp_sent(qp, 1);     /* 8 ns */
	CHECK_EQ(rp->pace_next, t0 + 8008);
	CHECK_EQ(xp_rp_pace(qp, t0 + 8007), -EBUSY);
	CHECK(rp->pace_wait);
	CHECK_EQ(xp_rp_pace(qp, t0 + 8008), 0);
	/* the picoseconds add up: 1000 x 1 byte = 8 us exactly */
	for (int i = 0; i < 1000; i++)
		xp_rp_sent(qp, 1);
	CHECK_EQ(rp->pace_next, t0 + 16008);
	xp_rp_turn(qp, t0 + 100 * US);
	CHECK_EQ(rp->pace_next, t0 + 90 * US);
	pair_fini(&p);
	return 0;
}

/* READ responses are the responder's data: a CNP to the responder QP
 * (its peer saw them marked CE) paces them as it paces a requester's
 * WRITEs. B's rate cut to 1 Gb/s with no increase: 256 responses of
 * 1 KiB take at least 255 x 8.2 us of (simulated) time. */
static uint64_t rr_first, rr_last;
static unsigned rr_n;

static bool rr_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (to != 0 || !xt_parse(frame, len, &pkt) || !(pkt.op->flags & WIRE_OPF_RESP) ||
	    !pkt.payload_len)
		return true;
	if (!rr_n++)
		rr_first = sim_now;
	rr_last = sim_now;
	return true;
}

static int t_rp_read_pace(void)
{
	struct emu_dcqcn_cfg *c;
	struct uroce_cqe cq[2];
	struct pair p;
	const uint32_t len = 256 * 1024;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, len))
		return 1;
	c = &p.s.n[1].dev.x->dcqcn;
	c->rate_to_set_on_first_cnp = 1000; /* 1 Gb/s */
	c->rpg_time_reset = 1000000;        /* no increase within the test */
	c->rpg_byte_reset = 0;
	xt_fill(p.mb.buf, len, 3);
	xp_rp_cnp(p.b.qp, sim_now);
	REQUIRE(xp_rp_active(p.b.qp->x));
	rr_n = 0;
	sim_hook = rr_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, len, 0);
	sim_run(&p.s, 1000000000ull);
	sim_hook = NULL;
	REQUIRE(sim_poll(p.a.scq, cq, 2) == 1);
	CHECK_EQ(cq[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, len));
	CHECK_EQ(rr_n, 256);
	CHECK(rr_last - rr_first >= 255ull * 1024 * 8);
	CHECK(p.b.qp->x->rp->paced > 0);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	pair_fini(&p);
	return 0;
}

/* ---- two flows through a marking bottleneck ---- */
/* The simulated wire from node A to node B: each flow leaves its host on
 * a link of BN_MBPS (two hosts, as far as the wire can tell) into a switch
 * port, a FIFO drained at BN_MBPS that marks ECN-capable frames CE with
 * RED's probability on the queue they find (0 below BN_KMIN, rising to
 * BN_PMAX at BN_KMAX, 1 above), seeded. Lossless (as with PFC); a host
 * link buffers whatever its sender puts on it (an unpaced QP's whole
 * window). The other direction (ACKs, CNPs) is not queued. */
#define BN_MBPS   10000u
#define BN_KMIN   (20u * 1024)
#define BN_KMAX   (200u * 1024)
#define BN_PMAX   200u         /* per mille at BN_KMAX */
#define BN_BIN    (100 * US)   /* samples */
#define BN_BINS   400          /* 40 ms */
#define BN_MSG    (64u * 1024) /* each flow: WRITEs of 64 KB ... */
#define BN_OUT    16u          /* ... 16 outstanding */
#define BN_QBOUND (160u * 1024) /* the queue DCQCN keeps under (below BN_KMAX) */

struct bn_frame {
	struct bn_frame *next;
	uint8_t *data;
	uint32_t len;
	int flow;
	uint64_t at;               /* reaches the switch / leaves it (ns) */
};

struct bn_fifo {
	struct bn_frame *head, *tail;
	uint64_t free_ps;          /* its link is free again */
	uint32_t n;                /* frames in it */
};

static struct {
	uint64_t rng;
	struct bn_fifo host[2];    /* the flows' host links */
	struct bn_fifo sw;         /* the switch port */
	uint64_t qbytes, qmax;     /* switch queue now / max in the current bin */
	uint32_t qpn[2];           /* the flows' destination QPNs */
	uint64_t bytes[2];         /* delivered per flow, current bin */
	uint64_t marked;
} bn;

/* Append f to q, on its link from t (ns): f->at = when it has crossed. */
static void bn_push(struct bn_fifo *q, struct bn_frame *f, uint64_t t)
{
	uint64_t start = t * 1000 > q->free_ps ? t * 1000 : q->free_ps;

	q->free_ps = start + (uint64_t)f->len * 8000000 / BN_MBPS;
	f->at = (q->free_ps + 999) / 1000;
	f->next = NULL;
	if (q->tail)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	q->n++;
}

static struct bn_frame *bn_pop(struct bn_fifo *q)
{
	struct bn_frame *f = q->head;

	q->head = f->next;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	return f;
}

static bool bn_take(int to, uint8_t *frame, uint32_t len)
{
	struct bn_frame *f;
	struct wire_pkt p;

	if (to != 1 || !xt_parse(frame, len, &p))
		return false;
	f = malloc(sizeof(*f));
	if (!f)
		return false;
	f->data = frame;
	f->len = len;
	f->flow = p.bth.dqpn == bn.qpn[1];
	bn_push(&bn.host[f->flow], f, sim_now);
	return true;
}

/* A frame reaches the switch at t: RED on the queue it finds. */
static void bn_arrive(struct bn_frame *f, uint64_t t)
{
	uint64_t q = bn.qbytes, pm;
	struct wire_pkt p;

	pm = q <= BN_KMIN ? 0 : q >= BN_KMAX ? 1000 : BN_PMAX * (q - BN_KMIN) / (BN_KMAX - BN_KMIN);
	if (pm && xt_rng(&bn.rng) % 1000 < pm && xt_parse(f->data, f->len, &p) &&
	    (p.ip.tos & WIRE_ECN_MASK) != WIRE_ECN_NOT_ECT) {
		p.ip.tos |= WIRE_ECN_CE;
		xt_rebuild(f->data, f->len, &p);
		bn.marked++;
	}
	bn_push(&bn.sw, f, t);
	bn.qbytes += f->len;
	if (bn.qbytes > bn.qmax)
		bn.qmax = bn.qbytes;
}

/* Everything due by now, in time order: arrivals, departures. */
static void bn_run(uint64_t now)
{
	for (;;) {
		struct bn_fifo *q = NULL;

		for (int i = 0; i < 2; i++)
			if (bn.host[i].head && (!q || bn.host[i].head->at < q->head->at))
				q = &bn.host[i];
		if (bn.sw.head && (!q || bn.sw.head->at <= q->head->at))
			q = &bn.sw;
		if (!q || q->head->at > now)
			return;
		struct bn_frame *f = bn_pop(q);

		if (q != &bn.sw) {
			bn_arrive(f, f->at);
			continue;
		}
		bn.qbytes -= f->len;
		bn.bytes[f->flow] += f->len;
		sim_deliver(1, f->data, f->len);
		free(f);
	}
}

static uint64_t bn_next(void)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < 2; i++)
		if (bn.host[i].head && bn.host[i].head->at < t)
			t = bn.host[i].head->at;
	if (bn.sw.head && bn.sw.head->at < t)
		t = bn.sw.head->at;
	return t;
}

static void bn_free(struct bn_fifo *q)
{
	while (q->head) {
		struct bn_frame *f = bn_pop(q);

		free(f->data);
		free(f);
	}
}

static const struct sim_wire bn_wire = { bn_take, bn_run, bn_next };

static void cfg_bn(struct emu_dcqcn_cfg *c)
{
	c->rpg_max_rate = BN_MBPS;
}

/* Keep BN_OUT WRITEs of BN_MSG outstanding on q (refill after the
 * completions); false on a failed completion. */
static bool bn_refill(struct pair *p, struct sim_qp *q, unsigned *out, uint64_t *id)
{
	struct uroce_cqe c[BN_OUT];
	int n = sim_poll(q->scq, c, BN_OUT);
	bool ok = true;

	for (int i = 0; i < n; i++)
		ok &= c[i].status == IBV_WC_SUCCESS;
	*out -= (unsigned)n;
	for (; *out < BN_OUT; (*out)++) {
		struct uroce_send_wqe w;
		struct uroce_sge s = xt_sge(&p->ma, 0, BN_MSG);

		xt_wqe(&w, (*id)++, IBV_WR_RDMA_WRITE, 1);
		w.rdma.remote_addr = (uintptr_t)p->mb.buf;
		w.rdma.rkey = p->mb.rkey;
		sim_post_send(q, &w, &s, NULL);
	}
	return ok;
}

/* What a run measured over its second half (after convergence). */
struct bn_result {
	uint64_t qmax;           /* bytes */
	double util, jain;
	uint64_t cuts[2], cnps;
};

/* Two RC flows A->B (QPs a, a2 to b, b2) through the bottleneck for
 * BN_BINS bins; the series goes to stderr (and to csv, if given). */
static int bn_run_flows(bool rp, FILE *csv, struct bn_result *res)
{
	struct pair p;
	struct sim_qp a2, b2;
	unsigned out[2] = { 0, 0 };
	uint64_t id = 1, half_bytes[2] = { 0, 0 }, seed = 0x5eed;
	const char *env = getenv("XP_SEED");

	if (env)
		seed = strtoull(env, NULL, 0);
	fprintf(stderr, "  bottleneck %u Mb/s, RED %u..%u KB (%u/1000), rp %s, seed 0x%lx\n",
		BN_MBPS, BN_KMIN / 1024, BN_KMAX / 1024, BN_PMAX, rp ? "on" : "off",
		(unsigned long)seed);
	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, BN_MSG) ||
	    sim_qp(&p.s.n[0], IBV_QPT_RC, 256, &a2, -1) ||
	    sim_qp(&p.s.n[1], IBV_QPT_RC, 256, &b2, -1) || sim_connect(&a2, &b2, IBV_MTU_1024) ||
	    sim_connect(&b2, &a2, IBV_MTU_1024))
		return 1;
	cfg_bn(&p.s.n[0].dev.x->dcqcn);
	p.s.n[0].dev.x->dcqcn.rp = rp;
	memset(&bn, 0, sizeof(bn));
	bn.rng = seed;
	bn.qpn[0] = p.b.qp->qpn;
	bn.qpn[1] = b2.qp->qpn;
	sim_wire = &bn_wire;
	memset(res, 0, sizeof(*res));
	if (csv)
		fprintf(csv, "t_us,queue_kb,flow1_mbps,flow2_mbps,rate1_mbps,rate2_mbps\n");
	for (int bin = 0; bin < BN_BINS; bin++) {
		uint64_t end = sim_now + BN_BIN;
		double mbps[2], rate[2];

		CHECK(bn_refill(&p, &p.a, &out[0], &id));
		CHECK(bn_refill(&p, &a2, &out[1], &id));
		bn.qmax = bn.qbytes;
		bn.bytes[0] = bn.bytes[1] = 0;
		sim_run(&p.s, BN_BIN);
		if (sim_now < end)
			sim_now = end;
		for (int i = 0; i < 2; i++) {
			mbps[i] = (double)bn.bytes[i] * 8 / (BN_BIN / 1000) ;
			if (bin >= BN_BINS / 2)
				half_bytes[i] += bn.bytes[i];
		}
		rate[0] = (double)emu_dcqcn_rate_kbps(p.a.qp) / 1000;
		rate[1] = (double)emu_dcqcn_rate_kbps(a2.qp) / 1000;
		if (bin >= BN_BINS / 2 && bn.qmax > res->qmax)
			res->qmax = bn.qmax;
		if (csv)
			fprintf(csv, "%d,%.1f,%.0f,%.0f,%.0f,%.0f\n", (bin + 1) * 100,
				(double)bn.qmax / 1024, mbps[0], mbps[1], rate[0], rate[1]);
		if (bin % 20 == 19)
			fprintf(stderr, "  t %5d us  queue max %7.1f KB  flows %5.0f %5.0f Mb/s"
				"  rates %5.0f %5.0f Mb/s\n", (bin + 1) * 100,
				(double)bn.qmax / 1024, mbps[0], mbps[1], rate[0], rate[1]);
	}
	double x = (double)half_bytes[0], y = (double)half_bytes[1];
	double secs = (double)BN_BINS / 2 * BN_BIN / 1e9;

	res->util = (x + y) * 8 / (BN_MBPS * 1e6 * secs);
	res->jain = (x + y) * (x + y) / (2 * (x * x + y * y) + 1e-9);
	res->cuts[0] = p.a.qp->x->rp ? p.a.qp->x->rp->cuts : 0;
	res->cuts[1] = a2.qp->x->rp ? a2.qp->x->rp->cuts : 0;
	struct emu_xport_counters c1, c2;
	emu_xport_qp_counters(p.a.qp, &c1);
	emu_xport_qp_counters(a2.qp, &c2);
	res->cnps = c1.cnp_rcvd + c2.cnp_rcvd;
	fprintf(stderr, "  second half: queue max %.1f KB, utilisation %.3f, Jain %.3f, "
		"marked %lu, CNPs %lu, cuts %lu/%lu\n", (double)res->qmax / 1024, res->util,
		res->jain, (unsigned long)bn.marked, (unsigned long)res->cnps,
		(unsigned long)res->cuts[0], (unsigned long)res->cuts[1]);
	sim_wire = NULL;
	bn_free(&bn.host[0]);
	bn_free(&bn.host[1]);
	bn_free(&bn.sw);
	pair_fini(&p);
	return 0;
}

/* DCQCN keeps the bottleneck's queue bounded, shares it fairly and keeps
 * it busy; without the reaction point the same flows fill the queue. */
static int t_bottleneck(void)
{
	struct bn_result on, off;
	const char *path = getenv("DCQCN_CSV");
	FILE *csv = NULL;

	if (path) {
		char name[512];

		snprintf(name, sizeof(name), "%s-on.csv", path);
		csv = fopen(name, "w");
	}
	if (bn_run_flows(true, csv, &on))
		return 1;
	if (csv) {
		char name[512];

		fclose(csv);
		snprintf(name, sizeof(name), "%s-off.csv", path);
		csv = fopen(name, "w");
	}
	if (bn_run_flows(false, csv, &off))
		return 1;
	if (csv)
		fclose(csv);
	CHECK(on.qmax < BN_QBOUND);
	CHECK(on.util >= 0.8);
	CHECK(on.jain >= 0.9);
	CHECK(on.cuts[0] > 0 && on.cuts[1] > 0);
	CHECK(off.qmax > BN_QBOUND); /* the reaction point is what bounds it */
	CHECK(off.cnps > 0);
	CHECK_EQ(off.cuts[0] + off.cuts[1], 0);
	return 0;
}

static const struct xt_test tests[] = {
	{ "bottleneck", t_bottleneck },
	{ "rp_cut", t_rp_cut },
	{ "rp_stages", t_rp_stages },
	{ "rp_floor", t_rp_floor },
	{ "rp_pace", t_rp_pace },
	{ "rp_read_pace", t_rp_read_pace },
	{ "ect_rc", t_ect_rc },
	{ "ect_uc", t_ect_uc },
	{ "ect_ud", t_ect_ud },
	{ "np_off", t_np_off },
	{ "cnp_source", t_cnp_source },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
