/* SPDX-License-Identifier: MIT */
/* Responder corner cases: UC messages abandoned mid-way (loss, invalid
 * packet, placement failure) and the TIME_WAIT source check. */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "pair.h"

#define PKT 1024u

/* ---- UC mid-message loss / invalid packet: the next message lands at
 * offset 0 of the same receive, one completion with its byte_len. ---- */
static int mid_mode;  /* 1: drop the MIDDLE, 2: turn it into an invalid one */
static int mid_hits;

static bool mid_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to != 1 || mid_hits || !xt_parse(frame, len, &p) ||
	    p.bth.opcode != (WIRE_TR_UC | WIRE_OP_RC_SEND_MIDDLE))
		return true;
	mid_hits++;
	if (mid_mode == 1)
		return false;
	/* a WRITE_MIDDLE inside a SEND: out of sequence, same length */
	p.bth.opcode = WIRE_TR_UC | WIRE_OP_RC_WRITE_MIDDLE;
	xt_rebuild(frame, len, &p);
	return true;
}

static int uc_mid(int mode)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_xport_counters cb;
	uint8_t *rb;

	if (pair_setup(&p, IBV_QPT_UC, IBV_MTU_1024, 1 << 16))
		return 1;
	rb = p.mb.buf;
	xt_fill(p.ma.buf, 8192, 5);
	memset(rb, 0, 8192);
	struct uroce_sge r = xt_sge(&p.mb, 0, 4096);
	sim_post_recv(&p.b, 11, &r, 1);
	mid_mode = mode;
	mid_hits = 0;
	sim_hook = mid_hook;
	xt_post(&p, 1, IBV_WR_SEND, 0, 3 * PKT, 0);
	sim_run(&p.s, 1000000000ull);
	sim_hook = NULL;
	CHECK_EQ(mid_hits, 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 0);
	/* the second message, from other bytes of A's MR */
	xt_post(&p, 2, IBV_WR_SEND, 4096, 2000, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 2);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 11);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, 2000);
	CHECK(!memcmp(rb, (uint8_t *)p.ma.buf + 4096, 2000));
	emu_xport_qp_counters(p.b.qp, &cb);
	CHECK_EQ(cb.drops[mode == 1 ? EMU_XDROP_UC_GAP : EMU_XDROP_UC_INV_REQ], 1);
	pair_fini(&p);
	return 0;
}

static int t_uc_mid_loss(void) { return uc_mid(1); }
static int t_uc_mid_invalid(void) { return uc_mid(2); }

/* ---- UC placement failure: the receive's second SGE is deregistered
 * when the MIDDLE arrives. One error completion; the LAST is dropped
 * ("uc-gap"), places nothing and completes nothing; the QP goes on. ---- */
static struct sim_node *pf_node;
static struct sim_mr *pf_mr;
static int pf_fired;

static bool pf_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to != 1 || pf_fired || !xt_parse(frame, len, &p) ||
	    p.bth.opcode != (WIRE_TR_UC | WIRE_OP_RC_SEND_MIDDLE))
		return true;
	pf_fired = 1;
	CHECK_EQ(emu_mr_dereg(pf_node->ctx, pf_mr->handle), 0);
	return true;
}

static int t_uc_place_fail(void)
{
	struct pair p;
	struct sim_mr my;
	struct uroce_cqe c[4];
	struct emu_xport_counters cb;
	uint8_t *rb;

	if (pair_setup(&p, IBV_QPT_UC, IBV_MTU_1024, 1 << 16))
		return 1;
	if (sim_mr(&p.s.n[1], 4096, ALL_ACCESS, &my))
		return 1;
	rb = p.mb.buf;
	xt_fill(p.ma.buf, 8192, 9);
	memset(rb, 0, 8192);
	/* MIDDLE -> my (taken away), LAST -> [1024, 2048) of B's MR */
	struct uroce_sge r[3] = { xt_sge(&p.mb, 0, PKT), xt_sge(&my, 0, PKT),
				  xt_sge(&p.mb, PKT, PKT) };
	sim_post_recv(&p.b, 21, r, 3);
	pf_node = &p.s.n[1];
	pf_mr = &my;
	pf_fired = 0;
	sim_hook = pf_hook;
	xt_post(&p, 1, IBV_WR_SEND, 0, 3 * PKT, 0);
	sim_run(&p.s, 1000000000ull);
	sim_hook = NULL;
	CHECK(pf_fired);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 21);
	CHECK_EQ(c[0].status, IBV_WC_LOC_PROT_ERR);
	CHECK(xt_zero(rb + PKT, PKT));
	emu_xport_qp_counters(p.b.qp, &cb);
	CHECK_EQ(cb.drops[EMU_XDROP_UC_GAP], 1);
	/* the QP goes on with the next receive */
	struct uroce_sge r2 = xt_sge(&p.mb, 4096, 4096);
	sim_post_recv(&p.b, 22, &r2, 1);
	xt_post(&p, 2, IBV_WR_SEND, 4096, 1500, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 22);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, 1500);
	CHECK(!memcmp(rb + 4096, (uint8_t *)p.ma.buf + 4096, 1500));
	free(my.buf);
	pair_fini(&p);
	return 0;
}

/* ---- TIME_WAIT: a duplicate for a destroyed RC QP is ACKed only when it
 * comes from the dead QP's peer; a forged one is dropped "src-mismatch". */
static int tw_acks;

static bool tw_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to == 0 && xt_parse(frame, len, &p) && p.bth.opcode == WIRE_OP_RC_ACK)
		tw_acks++;
	return true;
}

static size_t tw_frame(struct pair *p, const struct emu_xport_path *path, uint32_t qpn,
		       uint32_t psn, const union ibv_gid *src, uint8_t *buf, size_t cap)
{
	static uint8_t pay[64];
	struct wire_pkt w;
	size_t len = 0;

	memset(pay, 0x5c, sizeof(pay));
	wire_pkt_init(&w, path->ipv6 ? 6 : 4);
	memcpy(w.dmac, p->s.n[1].dev.mac, 6);
	memcpy(w.smac, p->s.n[0].dev.mac, 6);
	memcpy(w.ip.src.raw, src->raw, 16);
	memcpy(w.ip.dst.raw, path->sgid.raw, 16);
	w.udp.sport = 0xc123;
	w.bth.opcode = WIRE_OP_RC_SEND_ONLY;
	w.bth.dqpn = qpn;
	w.bth.pkey = 0xffff;
	w.bth.psn = psn;
	w.bth.ackreq = 1;
	w.payload = pay;
	w.payload_len = sizeof(pay);
	CHECK_EQ(wire_build(&w, buf, cap, 0, &len), 0);
	return len;
}

static int t_tomb_src(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	uint8_t f[512];
	size_t len;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	struct emu_dev *db = &p.s.n[1].dev;
	struct uroce_sge r = xt_sge(&p.mb, 0, 4096);
	sim_post_recv(&p.b, 1, &r, 1);
	xt_post(&p, 1, IBV_WR_SEND, 0, 100, 0);
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(sim_poll(p.b.rcq, c, 4), 1);
	struct emu_xport_path path = p.b.qp->x->path;
	uint32_t qpn = p.b.qp->qpn, dup = wire_psn_add(p.b.qp->x->epsn, WIRE_PSN_MASK);
	union ibv_gid forged = path.dgid;
	forged.raw[15] ^= 0x40;
	CHECK_EQ(emu_qp_destroy(p.s.n[1].ctx, p.b.handle), 0);
	tw_acks = 0;
	sim_hook = tw_hook;
	uint64_t src0 = db->cnt.drops[EMU_DROP_SRC_MISMATCH];
	len = tw_frame(&p, &path, qpn, dup, &forged, f, sizeof(f));
	emu_port_rx_frame(db, f, (uint32_t)len);
	sim_run(&p.s, 1000000ull);
	CHECK_EQ(tw_acks, 0);
	CHECK_EQ(db->cnt.drops[EMU_DROP_SRC_MISMATCH], src0 + 1);
	CHECK_EQ(db->x->xdrops[EMU_XDROP_SRC], 1);
	/* the same duplicate from the peer: acknowledged */
	len = tw_frame(&p, &path, qpn, dup, &path.dgid, f, sizeof(f));
	emu_port_rx_frame(db, f, (uint32_t)len);
	sim_run(&p.s, 1000000ull);
	CHECK_EQ(tw_acks, 1);
	CHECK_EQ(db->cnt.drops[EMU_DROP_SRC_MISMATCH], src0 + 1);
	pair_fini(&p);
	return 0;
}

/* ---- deferred placement failure: a WRITE into registered memory the
 * application has unmapped passes the key checks, is recorded as a
 * deferred write and fails when the burst's writes are flushed. The ACK
 * must wait for that flush and become a remote access error NAK. ---- */
static int t_deferred_fault(void)
{
	struct pair p;
	struct uroce_cqe c[4];
	struct uroce_reg_mr_req q;
	struct uroce_reg_mr_rep r;
	struct uroce_send_wqe w;
	size_t len = 2 * 4096;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	void *gone = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone == MAP_FAILED)
		return 1;
	/* B's memory through /proc/<pid>/mem, as the daemon reaches a client
	 * (the in-process shortcut would just fault on the unmapped page) */
	int mfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mfd < 0 || emu_mem_attach(p.s.n[1].ctx, mfd, -1)) {
		fprintf(stderr, "cannot attach /proc/self/mem\n");
		return 1;
	}
	memset(&q, 0, sizeof(q));
	q.pd = p.s.n[1].pd;
	q.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	q.addr = q.iova = (uintptr_t)gone;
	q.length = len;
	q.pin = UROCE_PIN_NONE; /* at the address, as a client whose pages cannot be pinned */
	CHECK_EQ(emu_mr_reg(p.s.n[1].ctx, &q, &r), 0);
	CHECK_EQ(munmap(gone, len), 0);
	xt_fill(p.ma.buf, 4096, 4);
	struct uroce_sge s = xt_sge(&p.ma, 0, 3000);
	xt_wqe(&w, 31, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)gone;
	w.rdma.rkey = r.rkey;
	sim_batch = true;
	sim_post_send(&p.a, &w, &s, NULL);
	sim_run(&p.s, 2000000000ull);
	sim_batch = false;
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 31);
	CHECK_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
	CHECK_EQ(xt_events(&p.s.n[1], IBV_EVENT_QP_ACCESS_ERR), 1);
	pair_fini(&p);
	return 0;
}

/* The same path when every write succeeds: the ACK still comes and the
 * data is in place (the settle step must not lose or delay it). */
static int t_deferred_ok(void)
{
	struct pair p;
	struct uroce_cqe c[4];

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	xt_fill(p.ma.buf, 8192, 6);
	sim_batch = true;
	xt_post(&p, 41, IBV_WR_RDMA_WRITE, 0, 3000, 0);
	xt_post(&p, 42, IBV_WR_RDMA_READ, 4096, 3000, 0);
	sim_run(&p.s, 2000000000ull);
	sim_batch = false;
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 2);
	CHECK_EQ(c[0].wr_id, 41);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[1].wr_id, 42);
	CHECK_EQ(c[1].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.mb.buf, p.ma.buf, 3000));
	CHECK(!memcmp((uint8_t *)p.ma.buf + 4096, p.ma.buf, 3000));
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "deferred_fault", t_deferred_fault },
	{ "deferred_ok", t_deferred_ok },
	{ "uc_mid_loss", t_uc_mid_loss },
	{ "uc_mid_invalid", t_uc_mid_invalid },
	{ "uc_place_fail", t_uc_place_fail },
	{ "tomb_src", t_tomb_src },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
