/* SPDX-License-Identifier: MIT */
/* Robustness and resource use: seeded random and malformed packets aimed at
 * live QPs while another QP pair carries verified traffic; daemon memory per
 * connected RC QP. Usage: test_robust <name>. */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

#define VMR (256u * 1024)
#define CANARY 4096u

struct rig {
	struct sim s;
	struct sim_qp va, vb;   /* RC victims */
	struct sim_qp ua, ub;   /* UC victims */
	struct sim_qp ga, gb;   /* verified traffic */
	struct sim_mr ma, mb;   /* victims' MRs */
	struct sim_mr mga, mgb; /* verified pair's MRs */
	uint8_t *canary;
};

static uint64_t rs;

static uint32_t r32(void)
{
	return xt_rng(&rs);
}

static uint64_t r64(void)
{
	return (uint64_t)r32() << 32 | r32();
}

/* A random RoCE frame from node 1-to's address to node to, for one of the
 * victim QPs (or a random QPN), with plausible or random fields. */
static int random_frame(struct rig *g, int to, uint8_t *buf, size_t cap, size_t *len)
{
	static const uint8_t ops[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
		0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,
		0x64, 0x65, 0x81,
	};
	struct emu_dev *d = &g->s.n[to].dev, *peer = &g->s.n[1 - to].dev;
	struct sim_qp *vq[] = { to ? &g->vb : &g->va, to ? &g->ub : &g->ua };
	struct emu_qp *qp = vq[r32() % 2]->qp;
	struct sim_mr *mr = to ? &g->mb : &g->ma;
	static uint8_t pay[2048];
	struct wire_pkt p;
	uint32_t k;

	wire_pkt_init(&p, 4);
	memcpy(p.dmac, d->mac, 6);
	memcpy(p.smac, peer->mac, 6);
	memcpy(p.ip.src.raw, peer->gids[1].raw, 16);
	memcpy(p.ip.dst.raw, d->gids[1].raw, 16);
	p.udp.sport = (uint16_t)(0xc000 | r32());
	p.bth.opcode = r32() % 16 ? ops[r32() % sizeof(ops)] : (uint8_t)r32();
	p.bth.dqpn = r32() % 16 ? qp->qpn : r32() & WIRE_QPN_MASK;
	p.bth.pkey = r32() % 16 ? 0xffff : (uint16_t)r32();
	p.bth.se = r32() & 1;
	p.bth.ackreq = r32() & 1;
	p.bth.becn = r32() % 8 == 0;
	switch (r32() % 4) {
	case 0: /* around what the responder expects */
		p.bth.psn = wire_psn_add(qp->x->epsn, (r32() % 16) - 8);
		break;
	case 1: /* around what the requester has outstanding */
		p.bth.psn = wire_psn_add(qp->x->acked_psn, r32() % 16);
		break;
	default:
		p.bth.psn = r32() & WIRE_PSN_MASK;
		break;
	}
	k = r32() % 4;
	p.reth.va = k == 0 ? r64() : (uintptr_t)mr->buf + (r32() % (VMR + 64)) - 32;
	p.reth.rkey = r32() % 2 ? mr->rkey : r32();
	p.reth.dma_len = r32() % 4 == 0 ? r32() : r32() % 9000;
	p.aeth.syndrome = (uint8_t)r32();
	p.aeth.msn = r32() & WIRE_PSN_MASK;
	p.atomiceth.va = r32() % 2 ? (uintptr_t)mr->buf + (r32() % VMR) : r64();
	p.atomiceth.rkey = p.reth.rkey;
	p.atomiceth.compare = r64();
	p.atomiceth.swap_add = r64();
	p.atomicacketh.orig = r64();
	p.deth.qkey = r32() % 2 ? 0x11111111 : r32();
	p.deth.sqpn = r32() & WIRE_QPN_MASK;
	p.imm = r32();
	p.ieth_rkey = r32() % 2 ? mr->rkey : r32();
	for (k = 0; k < sizeof(pay); k += 4) {
		uint32_t v = r32();

		memcpy(pay + k, &v, 4);
	}
	p.payload = pay;
	switch (r32() % 4) {
	case 0:
		p.payload_len = 0;
		break;
	case 1:
		p.payload_len = 1024;
		break;
	default:
		p.payload_len = r32() % 1400;
		break;
	}
	if (r32() % 8 == 0)
		p.ip.tos = WIRE_ECN_CE;
	return wire_build(&p, buf, cap, 0, len);
}

static int rig_setup(struct rig *g)
{
	struct sim_node *n0, *n1;

	memset(g, 0, sizeof(*g));
	if (sim_init(&g->s))
		return -1;
	n0 = &g->s.n[0];
	n1 = &g->s.n[1];
	if (sim_qp(n0, IBV_QPT_RC, 64, &g->va, -1) || sim_qp(n1, IBV_QPT_RC, 64, &g->vb, -1) ||
	    sim_qp(n0, IBV_QPT_UC, 64, &g->ua, -1) || sim_qp(n1, IBV_QPT_UC, 64, &g->ub, -1) ||
	    sim_qp(n0, IBV_QPT_RC, 256, &g->ga, -1) || sim_qp(n1, IBV_QPT_RC, 256, &g->gb, -1) ||
	    sim_mr(n0, VMR, ALL_ACCESS, &g->ma) || sim_mr(n1, VMR, ALL_ACCESS, &g->mb) ||
	    sim_mr(n0, 1 << 20, ALL_ACCESS, &g->mga) || sim_mr(n1, 1 << 20, ALL_ACCESS, &g->mgb) ||
	    sim_connect(&g->va, &g->vb, IBV_MTU_1024) || sim_connect(&g->vb, &g->va, IBV_MTU_1024) ||
	    sim_connect(&g->ua, &g->ub, IBV_MTU_1024) || sim_connect(&g->ub, &g->ua, IBV_MTU_1024) ||
	    sim_connect(&g->ga, &g->gb, IBV_MTU_1024) || sim_connect(&g->gb, &g->ga, IBV_MTU_1024))
		return -1;
	g->canary = malloc(CANARY);
	if (!g->canary)
		return -1;
	memset(g->canary, 0xa5, CANARY);
	return 0;
}

static void rig_fini(struct rig *g)
{
	sim_fini(&g->s);
	free(g->ma.buf);
	free(g->mb.buf);
	free(g->mga.buf);
	free(g->mgb.buf);
	free(g->canary);
}

/* Victim traffic: random ops in both directions on both victim pairs. */
static void victim_post(struct rig *g, struct sim_qp *q, struct sim_mr *mine,
			struct sim_mr *theirs, struct sim_qp *peer, uint64_t id)
{
	static const uint8_t ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
				       IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_WRITE_WITH_IMM };
	unsigned nops = q->qp->type == IBV_QPT_RC ? 5 : 2;
	uint8_t op = ops[r32() % nops];
	struct uroce_send_wqe w;
	uint32_t off = (r32() % 60) * 4096, len = r32() % 4000;
	struct uroce_sge s = xt_sge(mine, off, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : len);
	struct uroce_sge r = xt_sge(theirs, (r32() % 60) * 4096, 4096);

	(void)g;
	if (op == IBV_WR_SEND || op == IBV_WR_RDMA_WRITE_WITH_IMM)
		sim_post_recv(peer, id, &r, 1);
	xt_wqe(&w, id, op, 1);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.atomic.remote_addr = (uintptr_t)theirs->buf + (r32() % 1000) * 8;
		w.atomic.rkey = theirs->rkey;
		w.atomic.compare_add = 1;
	} else {
		w.rdma.remote_addr = (uintptr_t)theirs->buf + (r32() % 60) * 4096;
		w.rdma.rkey = theirs->rkey;
	}
	sim_post_send(q, &w, &s, NULL);
}

/* Every WR of a victim QP completes exactly once, in order, and the QP is
 * either idle in a sane state or in ERR. */
static void victim_check(struct sim_qp *q, uint64_t nposted)
{
	struct uroce_cqe c[512];
	uint64_t seen = 0;
	int n;

	while ((n = sim_poll(q->scq, c, 512)) > 0)
		for (int i = 0; i < n; i++) {
			CHECK_EQ(c[i].wr_id, seen);
			seen++;
		}
	CHECK_EQ(seen, nposted);
	CHECK_EQ(q->qp->x->sq_comp, q->qp->x->sq_fetch);
	CHECK_EQ(q->qp->sq.hdr->cons, q->qp->sq.hdr->prod);
	CHECK(q->qp->attr.qp_state == IBV_QPS_RTS || q->qp->attr.qp_state == IBV_QPS_ERR ||
	      q->qp->attr.qp_state == IBV_QPS_SQE);
	while (sim_poll(q->rcq, c, 512) > 0)
		;
}

/* A victim pair that fell into ERR: check it, then RESET and reconnect it
 * so the random packets keep hitting a live QP. */
static int victim_recycle(struct sim_qp *a, struct sim_qp *b, uint64_t *na, uint64_t *nb)
{
	struct ibv_qp_attr at;

	if (a->qp->attr.qp_state != IBV_QPS_ERR && b->qp->attr.qp_state != IBV_QPS_ERR)
		return 0;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	CHECK_EQ(emu_qp_modify(a->qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(emu_qp_modify(b->qp, &at, IBV_QP_STATE), 0);
	victim_check(a, *na);
	victim_check(b, *nb);
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(a->qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(emu_qp_modify(b->qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(sim_connect(a, b, IBV_MTU_1024), 0);
	CHECK_EQ(sim_connect(b, a, IBV_MTU_1024), 0);
	*na = *nb = 0;
	return 1;
}

static int run_random(uint64_t seed, unsigned iters)
{
	struct rig g;
	uint64_t nv[4] = { 0 }, ng = 0, i;
	struct uroce_cqe c[512];
	uint8_t frame[4096];
	int n, injected = 0, recycled = 0;
	uint64_t good = 0;

	rs = seed * 0x9e3779b97f4a7c15ull + 7;
	if (rig_setup(&g))
		return 1;
	xt_fill(g.mga.buf, 1 << 20, 11);
	xt_fill(g.mgb.buf, 1 << 20, 12);
	for (i = 0; i < iters; i++) {
		unsigned k, nf = 1 + r32() % 3;

		if (i % 4 == 0 && ng < 200) {
			/* verified: WRITE A->B at slot ng, READ B->A of slot ng */
			uint32_t off = (uint32_t)(ng % 100) * 4096;
			struct uroce_send_wqe w;
			struct uroce_sge s;

			xt_wqe(&w, ng, ng % 2 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, 1);
			w.rdma.remote_addr = (uintptr_t)g.mgb.buf + off;
			w.rdma.rkey = g.mgb.rkey;
			s = xt_sge(&g.mga, ng % 2 ? 512 * 1024 + off : off, 4000);
			sim_post_send(&g.ga, &w, &s, NULL);
			ng++;
		}
		if (i % 8 == 1) {
			struct sim_qp *q[4] = { &g.va, &g.vb, &g.ua, &g.ub };
			struct sim_qp *pe[4] = { &g.vb, &g.va, &g.ub, &g.ua };
			struct sim_mr *mm[4] = { &g.ma, &g.mb, &g.ma, &g.mb };
			unsigned v = r32() % 4;

			if (q[v]->qp->x->sq_fetch - q[v]->qp->x->sq_comp < 32)
				victim_post(&g, q[v], mm[v], mm[v ^ 1], pe[v], nv[v]++);
		}
		for (k = 0; k < nf; k++) {
			size_t len;
			int to = (int)(r32() % 2);

			if (random_frame(&g, to, frame, sizeof(frame), &len))
				continue;
			if (r32() % 8 == 0 && len > 60)
				len -= 1 + r32() % 20; /* truncated (the parser's problem) */
			emu_port_rx_frame(&g.s.n[to].dev, frame, (uint32_t)len);
			injected++;
		}
		sim_run(&g.s, 20000);
		if (i % 16 == 15) {
			recycled += victim_recycle(&g.va, &g.vb, &nv[0], &nv[1]);
			recycled += victim_recycle(&g.ua, &g.ub, &nv[2], &nv[3]);
		}
	}
	sim_run(&g.s, 100ull * 1000000000ull);

	n = sim_poll(g.ga.scq, c, 512);
	CHECK_EQ((uint64_t)n, ng);
	for (i = 0; i < (uint64_t)n; i++) {
		CHECK_EQ(c[i].wr_id, i);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		good += c[i].status == IBV_WC_SUCCESS;
	}
	for (i = 0; i < ng; i++) {
		uint32_t off = (uint32_t)(i % 100) * 4096;

		if (i % 2)
			CHECK(!memcmp((uint8_t *)g.mga.buf + 512 * 1024 + off,
				      (uint8_t *)g.mgb.buf + off, 4000));
		else if (i + 1 >= ng || (i + 2) % 100 != i % 100)
			CHECK(!memcmp((uint8_t *)g.mga.buf + off, (uint8_t *)g.mgb.buf + off, 4000));
	}
	CHECK_EQ(g.ga.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(g.gb.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(g.ga.qp->x->cnt.rx_dropped, 0);
	victim_check(&g.va, nv[0]);
	victim_check(&g.vb, nv[1]);
	victim_check(&g.ua, nv[2]);
	victim_check(&g.ub, nv[3]);
	for (i = 0; i < CANARY; i++)
		if (g.canary[i] != 0xa5) {
			CHECK(!"canary overwritten");
			break;
		}
	fprintf(stderr, "  seed %llu: %d random frames, %llu verified WRs ok, victims reset %d "
		"times, now %s/%s/%s/%s\n",
		(unsigned long long)seed, injected, (unsigned long long)good, recycled,
		g.va.qp->attr.qp_state == IBV_QPS_ERR ? "ERR" : "RTS",
		g.vb.qp->attr.qp_state == IBV_QPS_ERR ? "ERR" : "RTS",
		g.ua.qp->attr.qp_state == IBV_QPS_RTS ? "RTS" : "SQE/ERR",
		g.ub.qp->attr.qp_state == IBV_QPS_RTS ? "RTS" : "SQE/ERR");
	rig_fini(&g);
	return 0;
}

static int t_random_packets(void)
{
	uint64_t seed0 = getenv("XP_SEED") ? strtoull(getenv("XP_SEED"), NULL, 0) : 1;

	for (uint64_t seed = seed0; seed < seed0 + 4; seed++)
		run_random(seed, 5000);
	return 0;
}

/* ---- daemon memory per connected RC QP ---- */
static int t_qp_memory(void)
{
	static const uint32_t depth[] = { 1, 16, 128 };
	/* the responder's receive WQE copy as xp_qp_alloc sizes it: for
	 * the SGEs this QP's receives may have (one here) */
	const size_t rwqe = offsetof(struct emu_recv_wqe, sge) + sizeof(struct uroce_sge);
	struct sim s;

	if (sim_init(&s))
		return 1;
	for (unsigned k = 0; k < 3; k++) {
		struct sim_qp a, b;
		struct ibv_qp_cap cap = { depth[k], depth[k], 1, 1, 0 };
		size_t fixed, per_wr, total;

		if (sim_qp_cap(&s.n[0], IBV_QPT_RC, &cap, 0, &a, -1) ||
		    sim_qp_cap(&s.n[1], IBV_QPT_RC, &cap, 0, &b, -1) ||
		    sim_connect(&a, &b, IBV_MTU_1024))
			return 1;
		/* what the transport keeps whatever the queue depth (the QP
		 * and its transport state, one allocation) ... */
		fixed = sizeof(struct emu_qp) + sizeof(struct emu_xport_qp) + rwqe +
			a.qp->x->res_n * sizeof(struct emu_xport_res);
		/* ... and per send queue entry (private slot copy + progress) */
		per_wr = a.qp->x->sq_stride + sizeof(struct emu_xport_swqe);
		total = fixed + a.qp->x->sq_entries * per_wr;
		fprintf(stderr, "  RC QP, max_send_wr %u (1 SGE, max_dest_rd_atomic %u): "
			"sizeof(emu_qp) + state %zu + rwqe %zu + res %u x %zu = %zu B fixed; "
			"%u SQ entries x (%u copy + %zu) B = %zu B total\n",
			depth[k], a.qp->attr.max_dest_rd_atomic,
			sizeof(struct emu_qp) + sizeof(struct emu_xport_qp),
			rwqe, a.qp->x->res_n, sizeof(struct emu_xport_res),
			fixed, a.qp->x->sq_entries, a.qp->x->sq_stride, sizeof(struct emu_xport_swqe),
			total);
		CHECK(fixed <= 2048);
	}
	/* the responder resources follow max_dest_rd_atomic: up to 16 of them
	 * still fit 2 KB; the device maximum (128) costs more only when a QP
	 * asks for it */
	CHECK(sizeof(struct emu_qp) + sizeof(struct emu_xport_qp) + rwqe +
	      16 * sizeof(struct emu_xport_res) <= 2048);
	CHECK(EMU_XPORT_MAX_RD_ATOMIC >= 128);
	sim_fini(&s);
	return 0;
}

/* An application that moves its SQ producer index back behind WQEs the
 * requester already fetched (found by fuzz_rings): the fetch loop used to
 * walk from the fetch index forward to the smaller producer index, ~2^32
 * WQE copies with the engine unresponsive. A kick must return at once
 * without fetching anything, and once the index is sane again the WRs
 * already fetched complete normally. */
static int t_sq_prod_back(void)
{
	struct uroce_cqe c[8];
	struct pair p;
	int n = 0, k;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 65536))
		return 1;
	for (uint64_t id = 0; id < 3; id++)
		xt_post(&p, id, IBV_WR_RDMA_WRITE, (uint32_t)id * 64, 64, (uint32_t)id * 64);
	CHECK_EQ(p.a.qp->x->sq_fetch, 3);
	CHECK(p.a.qp->x->sq_comp < 3);
	__atomic_store_n(&p.a.qp->sq.hdr->prod, 1, __ATOMIC_RELEASE);
	emu_xport_sq_kick(p.a.qp);
	CHECK_EQ(p.a.qp->x->sq_fetch, 3);
	__atomic_store_n(&p.a.qp->sq.hdr->prod, 3, __ATOMIC_RELEASE);
	sim_run(&p.s, 1000000000ull);
	while ((k = sim_poll(p.a.scq, c + n, 8 - n)) > 0)
		n += k;
	CHECK_EQ(n, 3);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(c[i].wr_id, i);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	CHECK_EQ(p.a.qp->attr.qp_state, IBV_QPS_RTS);
	pair_fini(&p);
	return 0;
}

/* ---- source check: a SEND with the right QPN and PSN from an address
 * that is not the connected peer is dropped and counted; the same packet
 * from the peer's address is accepted; the pair then carries verified
 * traffic. Before the check, the forged packet consumed B's receive. ---- */
static size_t src_frame(struct pair *p, const union ibv_gid *src, uint8_t *buf, size_t cap)
{
	struct emu_qp *b = p->b.qp;
	static uint8_t pay[64];
	struct wire_pkt w;
	size_t len = 0;

	memset(pay, 0x5c, sizeof(pay));
	wire_pkt_init(&w, b->x->path.ipv6 ? 6 : 4);
	memcpy(w.dmac, p->s.n[1].dev.mac, 6);
	memcpy(w.smac, p->s.n[0].dev.mac, 6);
	memcpy(w.ip.src.raw, src->raw, 16);
	memcpy(w.ip.dst.raw, b->x->path.sgid.raw, 16);
	w.udp.sport = 0xc123;
	w.bth.opcode = b->type == IBV_QPT_RC ? 0x04 : 0x24; /* SEND_ONLY */
	w.bth.dqpn = b->qpn;
	w.bth.pkey = 0xffff;
	w.bth.psn = b->x->epsn;
	w.payload = pay;
	w.payload_len = sizeof(pay);
	CHECK_EQ(wire_build(&w, buf, cap, 0, &len), 0);
	return len;
}

static int source_check(enum ibv_qp_type t)
{
	struct pair p;
	struct uroce_cqe c[8];
	uint8_t f[512];
	size_t len;

	if (pair_setup(&p, t, IBV_MTU_1024, 1 << 16))
		return 1;
	struct emu_dev *db = &p.s.n[1].dev;
	union ibv_gid forged = p.b.qp->x->path.dgid, peer = p.b.qp->x->path.dgid;
	forged.raw[15] ^= 0x40; /* another host of the same subnet */
	struct uroce_sge r = xt_sge(&p.mb, 0, 4096);
	sim_post_recv(&p.b, 1, &r, 1);
	uint32_t epsn = p.b.qp->x->epsn;

	len = src_frame(&p, &forged, f, sizeof(f));
	emu_port_rx_frame(db, f, (uint32_t)len);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(db->cnt.drops[EMU_DROP_SRC_MISMATCH], 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 8), 0);
	CHECK_EQ(p.b.qp->x->epsn, epsn);
	CHECK(((uint8_t *)p.mb.buf)[0] != 0x5c);

	/* the same packet from the peer's address: accepted */
	len = src_frame(&p, &peer, f, sizeof(f));
	emu_port_rx_frame(db, f, (uint32_t)len);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(db->cnt.drops[EMU_DROP_SRC_MISMATCH], 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(((uint8_t *)p.mb.buf)[63], 0x5c);

	/* a SEND from the real peer still completes, verified. For RC the
	 * hand-made packet above consumed a PSN A did not send: reconnect. */
	{
		struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };
		CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE), 0);
		CHECK_EQ(emu_qp_modify(p.b.qp, &at, IBV_QP_STATE), 0);
		CHECK_EQ(sim_connect(&p.a, &p.b, IBV_MTU_1024), 0);
		CHECK_EQ(sim_connect(&p.b, &p.a, IBV_MTU_1024), 0);
	}
	xt_fill(p.ma.buf, 4096, 3);
	r = xt_sge(&p.mb, 8192, 4096);
	sim_post_recv(&p.b, 2, &r, 1);
	xt_post(&p, 7, IBV_WR_SEND, 0, 3000, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 8), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(sim_poll(p.b.rcq, c, 8), 1);
	CHECK_EQ(c[0].wr_id, 2);
	CHECK(!memcmp((uint8_t *)p.mb.buf + 8192, p.ma.buf, 3000));
	CHECK_EQ(db->cnt.drops[EMU_DROP_SRC_MISMATCH], 1);
	pair_fini(&p);
	return 0;
}

static int t_source_rc(void)
{
	return source_check(IBV_QPT_RC);
}

static int t_source_uc(void)
{
	return source_check(IBV_QPT_UC);
}

static const struct xt_test tests[] = {
	{ "source_rc", t_source_rc },
	{ "source_uc", t_source_uc },
	{ "random_packets", t_random_packets },
	{ "qp_memory", t_qp_memory },
	{ "sq_prod_back", t_sq_prod_back },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
