/* SPDX-License-Identifier: MIT */
/* emu_core services without DPDK ethdev or a socket: CQ production and the
 * arm/event rules of ibv_req_notify_cq(3), overrun, key checks (bounds,
 * access, PD, stale keys, windows), receive-ring validation and the SRQ
 * limit event, deterministic fault injection. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xport.h"

static int fails;
#define T_FAILURES fails
#include "../include/check.h"

static int nframes;
static uint8_t last_frame[2048];
static void deliver(struct emu_dev *d, const uint8_t *f, uint32_t len)
{
	(void)d;
	nframes++;
	memcpy(last_frame, f, len < sizeof(last_frame) ? len : sizeof(last_frame));
}

static uint64_t vclock;
static uint64_t vnow(void) { return vclock; }

static int pipe_count(int fd, size_t rec)
{
	uint8_t b[4096];
	ssize_t n = read(fd, b, sizeof(b));
	return n < 0 ? 0 : (int)((size_t)n / rec);
}

static void test_cq(struct emu_dev *d)
{
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	int ap[2], cp[2];
	CHECK(pipe2(ap, O_NONBLOCK) == 0 && pipe2(cp, O_NONBLOCK) == 0, "pipes");
	c->async_fd = ap[1];
	uint32_t ch;
	CHECK(emu_channel_create(c, cp[1], &ch) == 0, "channel");
	struct uroce_create_cq_req q = { .cqe = 4, .channel = (int32_t)ch, .user_handle = 0xabc };
	struct uroce_create_cq_rep r;
	int mfd;
	CHECK(emu_cq_create(c, &q, &r, &mfd) == 0, "cq");
	struct emu_cq *cq = emu_ctx_get(c, r.handle, EMU_OBJ_CQ);
	struct uroce_cqe e = { .wr_id = 1, .status = IBV_WC_SUCCESS };

	/* not armed: no event */
	CHECK(emu_cq_push(cq, &e) == 0, "push");
	CHECK(pipe_count(cp[0], 8) == 0, "no event unarmed");
	/* SOLICITED: an unsolicited success does not fire, a solicited one
	 * does, and only once */
	cq->hdr->arm = UROCE_ARM_SOLICITED;
	CHECK(emu_cq_push(cq, &e) == 0, "push");
	CHECK(pipe_count(cp[0], 8) == 0, "unsolicited no event");
	e.solicited = 1;
	emu_cq_push(cq, &e);
	CHECK(pipe_count(cp[0], 8) == 1 && cq->hdr->arm == 0, "solicited fires once, disarms");
	emu_cq_push(cq, &e); /* cq now full: 4 entries */
	CHECK(pipe_count(cp[0], 8) == 0, "disarmed");
	/* an error completion fires SOLICITED too */
	cq->hdr->cons = 2;
	cq->hdr->arm = UROCE_ARM_SOLICITED;
	e.solicited = 0;
	e.status = IBV_WC_REM_ACCESS_ERR;
	emu_cq_push(cq, &e);
	CHECK(pipe_count(cp[0], 8) == 1, "error completion fires solicited arm");
	/* NEXT fires on anything */
	cq->hdr->arm = UROCE_ARM_NEXT;
	e.status = IBV_WC_SUCCESS;
	emu_cq_push(cq, &e);
	CHECK(pipe_count(cp[0], 8) == 1, "next fires");
	CHECK(cq->hdr->prod == 6, "prod %u", cq->hdr->prod);
	/* overrun: ring full (prod - cons == entries) */
	CHECK(emu_cq_push(cq, &e) == -ENOSPC, "overrun");
	CHECK(cq->error && (cq->hdr->flags & UROCE_RING_F_ERROR), "error flag");
	struct uroce_async_event ae;
	CHECK(read(ap[0], &ae, sizeof(ae)) == sizeof(ae) && ae.event_type == IBV_EVENT_CQ_ERR &&
	      ae.element == 0xabc, "CQ_ERR async event");
	CHECK(emu_cq_push(cq, &e) == -ENOSPC, "stays dead");
	CHECK(emu_channel_destroy(c, ch) == -EBUSY, "channel busy");

	/* resize keeps unpolled CQEs at the same free-running indices */
	struct uroce_create_cq_req q2 = { .cqe = 4, .channel = -1 };
	CHECK(emu_cq_create(c, &q2, &r, &mfd) == 0, "cq2");
	struct emu_cq *cq2 = emu_ctx_get(c, r.handle, EMU_OBJ_CQ);
	for (uint64_t i = 0; i < 4; i++) {
		e.wr_id = 100 + i;
		emu_cq_push(cq2, &e);
	}
	cq2->hdr->cons = 1; /* one polled, three pending */
	struct uroce_resize_cq_req rz = { .handle = r.handle, .cqe = 2 };
	CHECK(emu_cq_resize(c, &rz, &r, &mfd) == -EINVAL, "shrink below pending");
	rz.cqe = 16;
	CHECK(emu_cq_resize(c, &rz, &r, &mfd) == 0 && r.entries == 16, "grow");
	cq2 = emu_ctx_get(c, r.handle, EMU_OBJ_CQ);
	CHECK(cq2->hdr->cons == 1 && cq2->hdr->prod == 4, "indices kept");
	CHECK(cq2->slots[1].wr_id == 101 && cq2->slots[3].wr_id == 103, "entries kept");
	e.wr_id = 104;
	CHECK(emu_cq_push(cq2, &e) == 0 && cq2->slots[4].wr_id == 104, "continues");
	close(ap[0]);
	close(cp[0]);
	emu_ctx_destroy(c);
}

/* The daemon reads the shim's cons only when the value it saw last says
 * the ring is full: over many wraps it must still never write over an
 * unread CQE, report an overrun exactly when the ring is full, and treat a
 * cons beyond prod as an overrun. Timestamps only for a CQ that asked. */
static void test_cq_cached_cons(struct emu_dev *d)
{
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	struct uroce_create_cq_req q = { .cqe = 8, .channel = -1, .flags = UROCE_CQ_F_TIMESTAMP };
	struct uroce_create_cq_rep r;
	struct uroce_cqe e = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	unsigned seed = (unsigned)getpid();
	uint32_t cons = 0;
	uint64_t next = 0;
	int mfd;

	fprintf(stderr, "test_cq_cached_cons seed %u\n", seed);
	srand(seed);
	q.flags = 0x80;
	CHECK(emu_cq_create(c, &q, &r, &mfd) == -EINVAL, "unknown CQ flag refused");
	q.flags = UROCE_CQ_F_TIMESTAMP;
	CHECK(emu_cq_create(c, &q, &r, &mfd) == 0, "cq");
	close(mfd);
	struct emu_cq *cq = emu_ctx_get(c, r.handle, EMU_OBJ_CQ);
	uint32_t n = cq->entries;
	/* ~100 wraps: fill up to the brim in random steps, consume in others */
	for (int round = 0; round < 100 * 4; round++) {
		uint32_t room = n - (uint32_t)(next - cons), k = (uint32_t)rand() % (room + 1);

		for (uint32_t i = 0; i < k; i++) {
			e.wr_id = next++;
			CHECK(emu_cq_push(cq, &e) == 0, "push %lu with room", (unsigned long)e.wr_id);
		}
		uint32_t take = (uint32_t)rand() % ((uint32_t)(next - cons) + 1);
		for (uint32_t i = 0; i < take; i++, cons++) {
			const struct uroce_cqe *s = &cq->slots[cons & cq->mask];

			CHECK(s->wr_id == cons && s->timestamp_ns, "slot %u holds %lu", cons,
			      (unsigned long)s->wr_id);
		}
		__atomic_store_n(&cq->hdr->cons, cons, __ATOMIC_RELEASE);
		if (fails)
			break;
	}
	CHECK(cq->hdr->prod == (uint32_t)next, "prod published");
	/* full: the last push that fits, then the overrun */
	while ((uint32_t)(next - cons) < n) {
		e.wr_id = next++;
		CHECK(emu_cq_push(cq, &e) == 0, "fill");
	}
	CHECK(cq->slots[cons & cq->mask].wr_id == cons, "unread head intact");
	e.wr_id = next;
	CHECK(emu_cq_push(cq, &e) == -ENOSPC && (cq->hdr->flags & UROCE_RING_F_ERROR), "overrun when full");
	CHECK(cq->slots[cons & cq->mask].wr_id == cons, "unread head not overwritten");

	/* a cons beyond prod (garbage from the application) is an overrun too,
	 * however far the cached value was from full */
	struct uroce_create_cq_req q2 = { .cqe = 8, .channel = -1 };
	CHECK(emu_cq_create(c, &q2, &r, &mfd) == 0, "cq2");
	close(mfd);
	cq = emu_ctx_get(c, r.handle, EMU_OBJ_CQ);
	for (uint32_t i = 0; i < cq->entries - 1; i++) {
		e.wr_id = i;
		CHECK(emu_cq_push(cq, &e) == 0, "cq2 push");
		CHECK(cq->slots[i].timestamp_ns == 0, "no timestamp unless asked for");
	}
	__atomic_store_n(&cq->hdr->cons, cq->entries + 5, __ATOMIC_RELEASE);
	CHECK(emu_cq_push(cq, &e) == 0, "the last slot the old cons allowed");
	CHECK(emu_cq_push(cq, &e) == -ENOSPC && (cq->hdr->flags & UROCE_RING_F_ERROR),
	      "cons beyond prod: overrun");
	emu_ctx_destroy(c);
}

static void test_keys(struct emu_dev *d)
{
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	static uint8_t buf[8192];
	uint32_t pd = 0, pd2 = 0;
	CHECK(emu_pd_alloc(c, &pd) == 0, "pd");
	CHECK(emu_pd_alloc(c, &pd2) == 0, "pd2");
	struct emu_pd *p = emu_ctx_get(c, pd, EMU_OBJ_PD), *p2 = emu_ctx_get(c, pd2, EMU_OBJ_PD);
	struct uroce_reg_mr_req q = { .pd = pd, .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_MW_BIND, .addr = (uintptr_t)buf, .length = 4096,
				      .iova = 0x100000 };
	struct uroce_reg_mr_rep r;
	CHECK(emu_mr_reg(c, &q, &r) == 0, "mr");
	int err;
	CHECK(emu_mr_check_lkey(p, r.lkey, (uintptr_t)buf, 4096, IBV_ACCESS_LOCAL_WRITE, &err), "lkey ok");
	CHECK(!emu_mr_check_lkey(p, r.lkey, (uintptr_t)buf + 1, 4096, 0, &err) && err == -ERANGE, "bounds");
	CHECK(!emu_mr_check_lkey(p, r.lkey, UINT64_MAX - 2, 8, 0, &err), "overflow");
	CHECK(!emu_mr_check_lkey(p2, r.lkey, (uintptr_t)buf, 1, 0, &err) && err == -EINVAL, "other pd");
	CHECK(!emu_mr_check_lkey(p, r.lkey ^ 1, (uintptr_t)buf, 1, 0, &err), "wrong key byte");

	/* remote checks need a QP in the PD */
	struct uroce_create_cq_req cq_q = { .cqe = 4, .channel = -1 };
	struct uroce_create_cq_rep cq_r;
	int mfd;
	CHECK(emu_cq_create(c, &cq_q, &cq_r, &mfd) == 0, "cq");
	struct uroce_create_qp_req qq = { .pd = pd, .send_cq = cq_r.handle, .recv_cq = cq_r.handle,
					  .srq = -1, .qp_type = IBV_QPT_RC,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_recv_sge = 1 } };
	struct uroce_create_qp_rep qr;
	CHECK(emu_qp_create(c, &qq, &qr, &mfd) == 0, "qp");
	struct emu_qp *qp = emu_ctx_get(c, qr.handle, EMU_OBJ_QP);
	uint64_t pa;
	struct emu_ctx *own;
	CHECK(emu_mr_check_rkey(qp, r.rkey, 0x100010, 16, IBV_ACCESS_REMOTE_READ, &pa, &own, &err) &&
	      pa == (uintptr_t)buf + 16 && own == c, "rkey iova translation");
	CHECK(!emu_mr_check_rkey(qp, r.rkey, 0x100010, 16, IBV_ACCESS_REMOTE_WRITE, &pa, &own, &err) &&
	      err == -EACCES, "no remote write");
	CHECK(!emu_mr_check_rkey(qp, r.rkey, 0x0fffff, 2, IBV_ACCESS_REMOTE_READ, &pa, &own, &err),
	      "below iova");

	/* type 2 window: bind, use, invalidate */
	struct uroce_alloc_mw_req wq = { .pd = pd, .type = IBV_MW_TYPE_2 };
	struct uroce_alloc_mw_rep wr;
	CHECK(emu_mw_alloc(c, &wq, &wr) == 0, "mw");
	uint32_t nk = (wr.rkey & ~0xffu) | 0x5a, got;
	CHECK(emu_mw_bind(qp, wr.handle, nk, r.lkey, 0x100100, 256, IBV_ACCESS_REMOTE_READ, &got) == 0 &&
	      got == nk, "bind");
	CHECK(emu_mr_check_rkey(qp, nk, 0x100100, 256, IBV_ACCESS_REMOTE_READ, &pa, &own, &err) &&
	      pa == (uintptr_t)buf + 256, "window access");
	CHECK(!emu_mr_check_rkey(qp, nk, 0x100100, 257, IBV_ACCESS_REMOTE_READ, &pa, &own, &err),
	      "window bounds");
	CHECK(emu_mr_dereg(c, r.handle) == -EBUSY, "mr with bound window");
	CHECK(emu_key_invalidate(p2, nk) == -EINVAL, "invalidate from other pd");
	CHECK(emu_key_invalidate(p, nk) == 0, "invalidate");
	CHECK(!emu_mr_check_rkey(qp, nk, 0x100100, 1, IBV_ACCESS_REMOTE_READ, &pa, &own, &err),
	      "invalidated window");
	uint32_t old = r.lkey;
	CHECK(emu_mr_dereg(c, r.handle) == 0, "dereg");
	CHECK(!emu_mr_check_lkey(p, old, (uintptr_t)buf, 1, 0, &err), "stale lkey");
	CHECK(emu_mr_reg(c, &q, &r) == 0 && r.lkey != old, "new key differs");

	/* receive ring validation and the SRQ limit event */
	int ap[2];
	CHECK(pipe2(ap, O_NONBLOCK) == 0, "pipe");
	c->async_fd = ap[1];
	struct emu_recv_wqe w;
	CHECK(emu_recv_take(qp, &w) == 0, "empty rq");
	struct uroce_recv_wqe *slot = (void *)emu_ring_slot(&qp->rq, 0);
	slot->wr_id = 77;
	slot->num_sge = 99;
	__atomic_store_n(&qp->rq.hdr->prod, 1, __ATOMIC_RELEASE);
	CHECK(emu_recv_take(qp, &w) == -EINVAL && qp->rq.hdr->cons == 1, "bad num_sge consumed");
	__atomic_store_n(&qp->rq.hdr->prod, 1000, __ATOMIC_RELEASE);
	CHECK(emu_recv_take(qp, &w) == -EINVAL, "impossible prod reported");
	CHECK(emu_recv_take(qp, &w) == 0, "then empty (drain loops end)");

	struct uroce_create_srq_req sq = { .pd = pd, .max_wr = 8, .max_sge = 1 };
	struct uroce_create_srq_rep sr;
	CHECK(emu_srq_create(c, &sq, &sr, &mfd) == 0, "srq");
	struct emu_srq *srq = emu_ctx_get(c, sr.handle, EMU_OBJ_SRQ);
	qq.srq = (int32_t)sr.handle;
	CHECK(emu_qp_create(c, &qq, &qr, &mfd) == 0, "qp on srq");
	struct emu_qp *sqp = emu_ctx_get(c, qr.handle, EMU_OBJ_QP);
	for (int i = 0; i < 4; i++) {
		struct uroce_recv_wqe *s = (void *)emu_ring_slot(&srq->rq, (uint32_t)i);
		s->wr_id = (uint64_t)i;
		s->num_sge = 1;
	}
	__atomic_store_n(&srq->rq.hdr->prod, 4, __ATOMIC_RELEASE);
	struct uroce_modify_srq_req ms = { .handle = sr.handle, .attr_mask = IBV_SRQ_LIMIT,
					   .attr = { .srq_limit = 3 } };
	CHECK(emu_srq_modify(c, &ms) == 0, "arm limit");
	struct uroce_async_event ae;
	CHECK(emu_recv_take(sqp, &w) == 1 && w.wr_id == 0, "take 1 (3 left)");
	CHECK(read(ap[0], &ae, sizeof(ae)) < 0, "no event at limit");
	CHECK(emu_recv_take(sqp, &w) == 1 && w.wr_id == 1, "take 2 (2 left)");
	CHECK(read(ap[0], &ae, sizeof(ae)) == sizeof(ae) && ae.event_type == IBV_EVENT_SRQ_LIMIT_REACHED,
	      "limit event below limit");
	CHECK(srq->srq_limit == 0, "disarmed");
	CHECK(emu_srq_destroy(c, sr.handle) == -EBUSY, "srq busy");
	close(ap[0]);
	emu_ctx_destroy(c);
}

/* A RoCE frame to qpn with opcode into buf (room for 256 bytes): its length. */
static uint32_t fault_frame(struct emu_dev *d, uint8_t *buf, uint32_t qpn, uint8_t opcode)
{
	struct wire_pkt p;
	size_t len = 0;

	wire_pkt_init(&p, 4);
	memcpy(p.dmac, d->mac, 6);
	memcpy(p.smac, d->mac, 6);
	memcpy(p.ip.src.raw, d->gids[1].raw, 16);
	memcpy(p.ip.dst.raw, d->gids[1].raw, 16);
	p.bth.opcode = opcode;
	p.bth.dqpn = qpn;
	CHECK(wire_build(&p, buf, 256, 0, &len) == 0, "frame built");
	return (uint32_t)len;
}

/* qp= / opcode= (uroce-ctl fault set): only matching RoCE frames meet the
 * faults; other frames and what is not RoCE pass untouched. */
static void test_fault_filter(struct emu_dev *d)
{
	struct emu_fault_cfg cfg;
	uint8_t a[256], b[256], c[256], zero[64] = { 0 };

	CHECK(emu_fault_parse("drop=1,qp=0x12,opcode=4", &cfg) == 0 && cfg.qpn == 0x12 &&
	      cfg.by_opcode && cfg.opcode == 4, "parse qp, opcode");
	CHECK(emu_fault_parse("drop=1", &cfg) == 0 && !cfg.qpn && !cfg.by_opcode, "no limits");
	CHECK(emu_fault_parse("qp=0", &cfg) == -EINVAL, "qp 0");
	CHECK(emu_fault_parse("qp=0x1000000", &cfg) == -EINVAL, "qp > 24 bits");
	CHECK(emu_fault_parse("opcode=256", &cfg) == -EINVAL, "opcode > 255");
	uint32_t la = fault_frame(d, a, 0x12, 0x04), lb = fault_frame(d, b, 0x13, 0x04);
	uint32_t lc = fault_frame(d, c, 0x12, 0x0a);
	emu_fault_parse("drop=1,qp=0x12", &cfg);
	struct emu_fault *fl = emu_fault_new(&cfg);
	nframes = 0;
	emu_fault_rx(fl, d, a, la, deliver);
	CHECK(nframes == 0, "frame to the QP dropped");
	emu_fault_rx(fl, d, b, lb, deliver);
	CHECK(nframes == 1 && !memcmp(last_frame, b, lb), "frame to another QP delivered");
	emu_fault_rx(fl, d, zero, sizeof(zero), deliver);
	CHECK(nframes == 2, "non-RoCE frame delivered");
	/* now by opcode: 0x0a (RDMA WRITE Only) to the same QP passes */
	emu_fault_parse("drop=1,opcode=4", &cfg);
	emu_fault_reconfig(fl, &cfg);
	emu_fault_rx(fl, d, c, lc, deliver);
	CHECK(nframes == 3, "other opcode delivered");
	emu_fault_rx(fl, d, b, lb, deliver);
	CHECK(nframes == 3, "SEND Only dropped, whatever its QP");
	emu_fault_free(fl);
}

static void test_fault(struct emu_dev *d)
{
	struct emu_fault_cfg cfg;
	CHECK(emu_fault_parse("drop=0.5,seed=7", &cfg) == 0 && cfg.drop == 0.5 && cfg.seed == 7, "parse");
	CHECK(emu_fault_parse("drop=2", &cfg) == -EINVAL, "p > 1");
	CHECK(emu_fault_parse("bogus=1", &cfg) == -EINVAL, "unknown key");
	CHECK(emu_fault_parse("drop=0.1,", &cfg) == 0, "trailing comma");
	uint8_t f[100] = { 0 };
	int counts[2];
	for (int run = 0; run < 2; run++) {
		emu_fault_parse("drop=0.3,dup=0.1,seed=42", &cfg);
		struct emu_fault *fl = emu_fault_new(&cfg);
		nframes = 0;
		for (int i = 0; i < 1000; i++)
			emu_fault_rx(fl, d, f, sizeof(f), deliver);
		counts[run] = nframes;
		emu_fault_free(fl);
	}
	CHECK(counts[0] == counts[1], "deterministic %d %d", counts[0], counts[1]);
	CHECK(counts[0] > 600 && counts[0] < 900, "drop/dup rate %d", counts[0]);
	/* delay holds frames until the clock passes */
	emu_clock_set(vnow);
	vclock = 1000000;
	emu_fault_parse("delay_us=100", &cfg);
	struct emu_fault *fl = emu_fault_new(&cfg);
	nframes = 0;
	f[0] = 1;
	emu_fault_rx(fl, d, f, sizeof(f), deliver);
	CHECK(nframes == 0 && emu_fault_next_deadline(fl) == 1100000, "held");
	vclock = 1099999;
	emu_fault_poll(fl, d, vclock, deliver);
	CHECK(nframes == 0, "not yet");
	vclock = 1100000;
	emu_fault_poll(fl, d, vclock, deliver);
	CHECK(nframes == 1 && last_frame[0] == 1, "delivered");
	emu_fault_free(fl);
	/* reorder: a held frame goes right after its successor */
	emu_fault_parse("reorder=1,seed=1", &cfg);
	fl = emu_fault_new(&cfg);
	nframes = 0;
	emu_fault_rx(fl, d, f, sizeof(f), deliver);
	CHECK(nframes == 0, "held for reorder");
	emu_fault_free(fl);
	/* corrupt: the frame changes */
	emu_fault_parse("corrupt=1,seed=3", &cfg);
	fl = emu_fault_new(&cfg);
	uint8_t g[64] = { 0 };
	emu_fault_rx(fl, d, g, sizeof(g), deliver);
	int diff = 0;
	for (unsigned i = 0; i < sizeof(g); i++)
		diff += last_frame[i] != 0;
	CHECK(diff == 1, "one byte flipped (%d)", diff);
	emu_fault_free(fl);
	/* ce: an ECN-capable frame arrives CE-marked, still valid (IPv4
	 * checksum redone, ICRC unaffected); a Not-ECT one is left alone */
	CHECK(emu_fault_parse("ce=1,seed=5", &cfg) == 0 && cfg.ce == 1, "parse ce");
	fl = emu_fault_new(&cfg);
	for (int v = 4; v <= 6; v += 2) {
		for (int ect = 0; ect < 2; ect++) {
			struct wire_pkt pk, got;
			uint8_t fr[256];
			size_t fl_len;

			wire_pkt_init(&pk, (uint8_t)v);
			pk.bth.opcode = WIRE_OP_RC_SEND_ONLY;
			pk.ip.tos = (uint8_t)(0xb8 | (ect ? WIRE_ECN_ECT0 : 0));
			pk.ip.ttl = 64;
			pk.bth.pkey = 0xffff;
			if (v == 4) { /* IPv4-mapped addresses */
				pk.ip.src.raw[10] = pk.ip.src.raw[11] = 0xff;
				pk.ip.dst.raw[10] = pk.ip.dst.raw[11] = 0xff;
			}
			CHECK(wire_build(&pk, fr, sizeof(fr), 0, &fl_len) == 0, "build");
			nframes = 0;
			emu_fault_rx(fl, d, fr, (uint32_t)fl_len, deliver);
			CHECK(nframes == 1, "delivered");
			CHECK(wire_parse(last_frame, (uint32_t)fl_len, &got) == WIRE_OK, "valid v%d", v);
			CHECK(got.ip.tos == (ect ? 0xbb : 0xb8), "v%d ect %d: tos %#x", v, ect,
			      got.ip.tos);
		}
	}
	emu_fault_free(fl);
	emu_clock_set(NULL);
	test_fault_filter(d);
}

/* Random and mutated RoCE frames through the receive path of a device
 * that has QPs: nothing may crash, every frame is accounted. */
static int tx_count;
static uint8_t tx_buf[16384];
static int t_tx_alloc(struct emu_dev *d, struct emu_txbuf *b)
{
	(void)d;
	b->data = tx_buf;
	b->cap = sizeof(tx_buf);
	b->priv = NULL;
	return 0;
}
static void t_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	(void)d; (void)b; (void)len;
	tx_count++;
}
static const struct emu_port_ops t_ops = { .tx_alloc = t_tx_alloc, .tx_send = t_tx_send };

static void test_rx_fuzz(struct emu_dev *d)
{
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	uint32_t pd;
	int mfd;
	emu_pd_alloc(c, &pd);
	struct uroce_create_cq_req cq_q = { .cqe = 64, .channel = -1 };
	struct uroce_create_cq_rep cq_r;
	CHECK(emu_cq_create(c, &cq_q, &cq_r, &mfd) == 0, "cq");
	uint32_t qpn[3];
	uint32_t types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	for (int k = 0; k < 3; k++) {
		struct uroce_create_qp_req qq = { .pd = pd, .send_cq = cq_r.handle, .recv_cq = cq_r.handle,
						  .srq = -1, .qp_type = types[k],
						  .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_recv_sge = 1 } };
		struct uroce_create_qp_rep qr;
		CHECK(emu_qp_create(c, &qq, &qr, &mfd) == 0, "qp");
		qpn[k] = qr.qpn;
	}
	d->ops = &t_ops;
	uint64_t seed = 99;
	uint8_t f[2048], pl[64] = { 0 };
	uint64_t before = d->cnt.rx_pkts;
	for (int i = 0; i < 20000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		struct wire_pkt p;
		wire_pkt_init(&p, (seed >> 33) & 1 ? 4 : 6);
		memcpy(p.dmac, d->mac, 6);
		memcpy(p.smac, d->mac, 6);
		memcpy(p.ip.src.raw, d->gids[p.ip.version == 4 ? 1 : 0].raw, 16);
		memcpy(p.ip.dst.raw, d->gids[p.ip.version == 4 ? 1 : 0].raw, 16);
		p.bth.opcode = (uint8_t)(seed >> 40);
		p.bth.dqpn = (seed >> 20) & 1 ? qpn[(seed >> 50) % 3] : (uint32_t)(seed >> 8) & 0xffffff;
		p.bth.psn = (uint32_t)(seed >> 12) & 0xffffff;
		p.reth.dma_len = (uint32_t)(seed >> 24) & 0xfff;
		/* not the frame buffer itself: the build copies the payload
		 * behind the headers, which would overlap it */
		p.payload = pl;
		p.payload_len = (uint32_t)(seed >> 44) % 64;
		size_t len = 0;
		if (wire_build(&p, f, sizeof(f), 0, &len) != 0)
			len = 60 + (seed >> 55);
		/* a third keep a valid ICRC, the rest get a byte flipped */
		if ((seed >> 58) % 3)
			f[(seed >> 16) % len] ^= (uint8_t)(1u << ((seed >> 61) & 7));
		emu_port_rx_frame(d, f, (uint32_t)len);
	}
	CHECK(d->cnt.rx_pkts - before == 20000, "all frames counted");
	CHECK(d->cnt.icrc_errors > 0 && d->cnt.rx_roce > 0, "icrc %lu roce %lu",
	      (unsigned long)d->cnt.icrc_errors, (unsigned long)d->cnt.rx_roce);
	emu_ctx_destroy(c);
	d->ops = NULL;
}

/* Keys and QPNs are unpredictable: a new registration on a freed index
 * never reuses its key byte, and two device starts (as two daemon starts)
 * hand out different keys and a different first QPN. Before, keys were
 * index << 8 | index * 37 and the first QPN was 17 on every start. */
static void first_ids(uint32_t *keys, int nkeys, uint32_t *qpn)
{
	struct emu_dev d;
	uint8_t mac[6] = { 2, 0, 0, 0, 0, 7 };
	static uint8_t buf[4096];

	CHECK(emu_dev_init(&d, "tr", mac, 1500, NULL, 0) == 0, "dev");
	*qpn = d.next_qpn;
	struct emu_ctx *c = emu_ctx_new(&d, getpid(), -1);
	uint32_t pd = 0;
	CHECK(emu_pd_alloc(c, &pd) == 0, "pd");
	struct uroce_reg_mr_req q = { .pd = pd, .access = IBV_ACCESS_LOCAL_WRITE,
				      .addr = (uintptr_t)buf, .length = sizeof(buf) };
	struct uroce_reg_mr_rep r;
	for (int i = 0; i < nkeys; i++) {
		CHECK(emu_mr_reg(c, &q, &r) == 0, "mr");
		keys[i] = r.lkey;
	}
	/* re-registration on a freed index: never the byte it had last */
	static uint32_t last[1024];
	int reused = 0;
	memset(last, 0, sizeof(last));
	for (int i = 0; i < 2000; i++) {
		CHECK(emu_mr_dereg(c, r.handle) == 0, "dereg");
		CHECK(emu_mr_reg(c, &q, &r) == 0, "rereg");
		uint32_t ix = r.lkey >> 8;
		if (ix >= 1024)
			continue;
		if (last[ix]) {
			reused++;
			CHECK(r.lkey != last[ix], "key %#x reused on its index", r.lkey);
		}
		last[ix] = r.lkey;
	}
	CHECK(reused > 100, "indices reused %d times", reused);
	emu_ctx_destroy(c);
	emu_dev_fini(&d);
}

static void test_unpredictable(void)
{
	enum { NK = 8 };
	uint32_t k1[NK], k2[NK], k3[NK], q1, q2, q3;
	int same = 0, spread = 0;

	unsetenv("UROCE_TEST_SEED");
	first_ids(k1, NK, &q1);
	first_ids(k2, NK, &q2);
	first_ids(k3, NK, &q3);
	for (int i = 0; i < NK; i++) {
		same += k1[i] == k2[i];
		spread += (uint8_t)k1[i] != (uint8_t)((k1[i] >> 8) * 37u);
	}
	/* 8 random bytes all equal: 2^-64 */
	CHECK(same < NK, "keys identical across starts (%#x ...)", k1[0]);
	CHECK(spread > 0, "key bytes follow index*37");
	/* three equal random starts in 65519: ~2e-10 */
	CHECK(!(q1 == q2 && q2 == q3), "QPN start %u on every start", q1);
	CHECK(q1 >= EMU_QPN_FIRST && q1 < EMU_QPN_TABLE, "QPN start %u in range", q1);

	/* UROCE_TEST_SEED (tests, debugging): the same seed, the same ids */
	setenv("UROCE_TEST_SEED", "12345", 1);
	first_ids(k1, NK, &q1);
	first_ids(k2, NK, &q2);
	setenv("UROCE_TEST_SEED", "12346", 1);
	first_ids(k3, NK, &q3);
	unsetenv("UROCE_TEST_SEED");
	CHECK(q1 == q2 && !memcmp(k1, k2, sizeof(k1)), "seeded runs differ");
	CHECK(q1 != q3 || memcmp(k1, k3, sizeof(k1)), "another seed, the same ids");
}

/* vma.c: what the process maps readable / writable, through PROCMAP_QUERY
 * and through the maps text (older kernels), on [rw][ro][none][hole][rw]
 * [hole];
 * the text path also on a made-up file with a line longer than its
 * buffer. */
static void test_vma(struct emu_dev *d)
{
	const size_t pg = 4096;
	uint8_t *m = mmap(NULL, 6 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "mmap");
	CHECK(!mprotect(m + pg, pg, PROT_READ) && !mprotect(m + 2 * pg, pg, PROT_NONE) &&
	      !munmap(m + 3 * pg, pg) && !munmap(m + 5 * pg, pg), "layout");
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	int mf = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	uint64_t b = (uintptr_t)m;
	static const struct { unsigned off, len; bool write, ok; } k[] = {
		{ 0, 4096, true, true }, { 100, 3996, true, true }, { 100, 3997, true, false },
		{ 0, 8192, false, true }, { 4096, 4096, true, false }, { 4096, 10, false, true },
		{ 8192, 1, false, false }, { 12288, 1, false, false }, { 16384, 4096, true, true },
		{ 16384, 4097, true, false }, { 4095, 2, false, true }, { 0, 0, true, true },
	};
	CHECK(c && mf >= 0, "ctx, maps");
	for (unsigned i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		int a = emu_vma_allowed(c, b + k[i].off, k[i].len, k[i].write);
		int t = k[i].len ? emu_vma_scan(mf, b + k[i].off, k[i].len, k[i].write) : 0;
		CHECK(a == (k[i].ok ? 0 : -EFAULT) && t == a, "case %u: ioctl %d text %d", i, a, t);
	}
	CHECK(emu_vma_allowed(c, UINT64_MAX - 10, 20, false) == -EFAULT, "wrap");
	close(mf);
	/* a made-up maps text: a 6000-byte line (a long path) between two
	 * writable VMAs that touch */
	char path[] = "/tmp/uroce-vma-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0 && !unlink(path), "tmp");
	FILE *f = fdopen(fd, "w+");
	fprintf(f, "1000-2000 r--p 00000000 00:00 0\n2000-3000 rw-p 00000000 00:00 0 /");
	for (int i = 0; i < 6000; i++)
		fputc('x', f);
	fprintf(f, "\n3000-5000 rw-p 00000000 00:00 0\n6000-7000 r-xp 0 00:00 0\n");
	fflush(f);
	CHECK(emu_vma_scan(fd, 0x2000, 0x3000, true) == 0, "across the long line");
	CHECK(emu_vma_scan(fd, 0x1800, 0x1000, true) == -EFAULT, "read-only head");
	CHECK(emu_vma_scan(fd, 0x1800, 0x1000, false) == 0, "readable head");
	CHECK(emu_vma_scan(fd, 0x4000, 0x1001, false) == -EFAULT, "hole");
	CHECK(emu_vma_scan(fd, 0x6000, 0x10, false) == 0 &&
	      emu_vma_scan(fd, 0x6000, 0x10, true) == -EFAULT, "last line");
	CHECK(emu_vma_scan(fd, 0x8000, 1, false) == -EFAULT, "past the end");
	fclose(f);
	emu_ctx_destroy(c);
	munmap(m, 5 * pg);
}

/* fdinfo's "Pid:" of a pidfd: the process it names, in our pid namespace */
static long pidfd_pid(int pidfd)
{
	char path[64], line[128];
	long pid = -1;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %ld", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid;
}

/* The client as a pidfd comes from the socket (SO_PEERPIDFD), not from
 * the pid: a client whose pid the daemon cannot see (SO_PEERCRED says 0:
 * another pid namespace, as in a container) still gets pinned
 * registrations; without a socket, the pid; with neither, none. */
static void test_peer_pidfd(struct emu_dev *d)
{
	int sp[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0, "socketpair");
	struct emu_ctx *c = emu_ctx_new(d, 0, sp[0]);
	CHECK(c != NULL, "ctx");
	int pfd = emu_ctx_pidfd(c);
	CHECK(pfd >= 0 && pidfd_pid(pfd) == getpid(), "pid 0: pidfd %d of %ld", pfd,
	      pfd >= 0 ? pidfd_pid(pfd) : -1L);
	if (pfd >= 0)
		close(pfd);
	emu_ctx_destroy(c);
	close(sp[1]);
	c = emu_ctx_new(d, getpid(), -1);
	pfd = emu_ctx_pidfd(c);
	CHECK(pfd >= 0 && pidfd_pid(pfd) == getpid(), "no socket: pidfd of the pid");
	if (pfd >= 0)
		close(pfd);
	c->pid = 0;
	CHECK(emu_ctx_pidfd(c) == -1, "neither socket nor pid: none");
	emu_ctx_destroy(c);
}

int main(void)
{
	struct emu_dev d;
	uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 } };

	CHECK(emu_dev_init(&d, "t0", mac, 1500, &g, 1) == 0, "dev");
	CHECK(d.active_mtu == IBV_MTU_1024 && d.gid_count == 2, "mtu %d", d.active_mtu);
	struct emu_dev d9;
	CHECK(emu_dev_init(&d9, "t9", mac, 9000, NULL, 0) == 0 && d9.active_mtu == IBV_MTU_4096, "9000");
	emu_dev_fini(&d9);
	d.loopback = true;
	test_cq(&d);
	test_cq_cached_cons(&d);
	test_keys(&d);
	test_vma(&d);
	test_fault(&d);
	test_rx_fuzz(&d);
	test_peer_pidfd(&d);
	emu_dev_fini(&d);
	test_unpredictable();
	if (fails)
		fprintf(stderr, "%d failure(s)\n", fails);
	return fails ? 1 : 0;
}
