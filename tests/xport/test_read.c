/* SPDX-License-Identifier: MIT */
/* READ responses paced by transmit room (docs/transport.md, "READ
 * responses paced by transmit room"). The responder's node (B) has only
 * ROOM transmit buffers (sim_txbufs: a buffer is held from allocation
 * until the frame is delivered), far fewer than a READ's responses: the
 * responder must send what fits, keep the READ's progress and resume as
 * buffers come back, with no allocation failing (drop tx-nobuf), no
 * response lost and no requester timeout or retransmission.
 *
 *  read_big        - one READ of 4096 packets through 64 buffers, every byte
 *  read_order      - READ, SEND, READ, WRITE, atomic on one QP: completed
 *                    in order, the responder's frames in PSN order
 *  read_two_qps    - two QPs READ at once: both progress (round robin)
 *  read_dup        - a response lost mid-READ: the requester asks again
 *                    from there and the responder restarts from that PSN
 *  read_err        - the responder QP moved to ERR mid-READ: its pending
 *                    responses are released, nothing more is sent
 *  read_destroy    - the same with the QP destroyed
 *  read_too_many   - more READs than max_dest_rd_atomic while all still owe
 *                    responses: dropped and counted, served when asked again
 *  read_fatal      - a WRITE outside B's MR right behind a READ still
 *                    sending: the NAK leaves after the READ's responses, the
 *                    READ completes, then the WRITE in error, then B is ERR
 */
#include <stdlib.h>
#include <string.h>

#include "pair.h"

#define ROOM  64u
#define NPKT  4096u
#define MTU   1024u
#define BIG   (NPKT * MTU)

static void no_loss(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(p->s.n[i].dev.cnt.drops[EMU_DROP_TX_NOBUF], 0);
	}
	CHECK_EQ(p->b.qp->x->cnt.tx_no_buf, 0);
	CHECK_EQ(p->a.qp->x->cnt.retransmits, 0);
	CHECK_EQ(p->a.qp->x->cnt.timeouts, 0);
	CHECK_EQ(p->a.qp->x->cnt.probes, 0);
}

static int setup(struct pair *p, size_t mrlen)
{
	if (pair_setup(p, IBV_QPT_RC, IBV_MTU_1024, mrlen))
		return -1;
	xt_fill(p->mb.buf, mrlen, 7);
	memset(p->ma.buf, 0, mrlen);
	sim_txbufs[1] = ROOM;
	return 0;
}

/* ---- one READ of NPKT packets through ROOM buffers ---- */
static int t_read_big(void)
{
	struct pair p;
	struct uroce_cqe c[4];

	if (setup(&p, BIG))
		return 1;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, BIG, 0);
	sim_run(&p.s, 10000000000ull);
	REQUIRE((sim_poll(p.a.scq, c, 4)) == 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, BIG);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, BIG));
	no_loss(&p);
	CHECK_EQ(p.b.qp->x->cnt.tx_pkts, NPKT);
	CHECK_EQ(p.b.qp->x->rd_pend, 0);
	CHECK_EQ(p.s.n[1].dev.x->resp_npend, 0);
	pair_fini(&p);
	return 0;
}

/* ---- ordering on one QP ---- */
static uint32_t last_psn;
static bool psn_seen, psn_backwards;

/* every response B sends (to node 0) has a PSN not before the last one */
static bool order_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (to != 0 || !xt_parse(frame, len, &pkt) || !(pkt.op->flags & WIRE_OPF_RESP))
		return true;
	if (psn_seen && wire_psn_before(pkt.bth.psn, last_psn))
		psn_backwards = true;
	psn_seen = true;
	last_psn = pkt.bth.psn;
	return true;
}

static int t_read_order(void)
{
	const uint32_t half = BIG / 2, q = BIG / 4;
	struct uroce_cqe c[8];
	struct uroce_sge sge;
	struct pair p;

	if (setup(&p, BIG))
		return 1;
	psn_seen = psn_backwards = false;
	sim_hook = order_hook;
	sge = xt_sge(&p.mb, half + q, 64);
	sim_post_recv(&p.b, 77, &sge, 1);
	/* READ 2048 packets, SEND, READ 1024 packets, WRITE 64 KiB, FETCH_ADD */
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, half, 0);
	xt_post(&p, 2, IBV_WR_SEND, half, 64, 0);
	xt_post(&p, 3, IBV_WR_RDMA_READ, half + 64 * 1024, q, half + 64 * 1024);
	xt_post(&p, 4, IBV_WR_RDMA_WRITE, BIG - 128 * 1024, 64 * 1024, BIG - 128 * 1024);
	xt_post(&p, 5, IBV_WR_ATOMIC_FETCH_AND_ADD, BIG - 8, 8, BIG - 8);
	uint64_t before;
	memcpy(&before, (uint8_t *)p.mb.buf + BIG - 8, 8);
	sim_run(&p.s, 10000000000ull);
	REQUIRE((sim_poll(p.a.scq, c, 8)) == 5);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(c[i].wr_id, (uint64_t)i + 1);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	CHECK(!memcmp(p.ma.buf, p.mb.buf, half));
	CHECK(!memcmp((uint8_t *)p.ma.buf + half + 64 * 1024,
		      (uint8_t *)p.mb.buf + half + 64 * 1024, q));
	CHECK(!memcmp((uint8_t *)p.ma.buf + BIG - 128 * 1024,
		      (uint8_t *)p.mb.buf + BIG - 128 * 1024, 64 * 1024));
	uint64_t after, got;
	memcpy(&after, (uint8_t *)p.mb.buf + BIG - 8, 8);
	memcpy(&got, (uint8_t *)p.ma.buf + BIG - 8, 8);
	CHECK_EQ(after, before + 1);
	CHECK_EQ(got, before);
	REQUIRE((sim_poll(p.b.rcq, c, 8)) == 1);
	CHECK_EQ(c[0].wr_id, 77);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(psn_seen);
	CHECK(!psn_backwards);
	no_loss(&p);
	pair_fini(&p);
	return 0;
}

/* ---- two QPs share the room ---- */
static uint32_t resp_to[2], dqpn0, done_at_other;

static bool count_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (to == 0 && xt_parse(frame, len, &pkt) && (pkt.op->flags & WIRE_OPF_RESP)) {
		int k = pkt.bth.dqpn != dqpn0;

		/* when one READ has its last response, how far is the other? */
		if (++resp_to[k] == NPKT / 2 && !done_at_other)
			done_at_other = resp_to[!k] + 1;
	}
	return true;
}

static int t_read_two_qps(void)
{
	struct sim_qp a2, b2;
	struct uroce_cqe c[4];
	struct uroce_send_wqe w;
	struct uroce_sge sge;
	struct pair p;
	const uint32_t len = BIG / 2;

	if (setup(&p, BIG))
		return 1;
	REQUIRE(!sim_qp(&p.s.n[0], IBV_QPT_RC, 256, &a2, -1));
	REQUIRE(!sim_qp(&p.s.n[1], IBV_QPT_RC, 256, &b2, -1));
	REQUIRE(!sim_connect(&a2, &b2, IBV_MTU_1024));
	REQUIRE(!sim_connect(&b2, &a2, IBV_MTU_1024));
	resp_to[0] = resp_to[1] = done_at_other = 0;
	dqpn0 = p.a.qp->qpn;
	sim_hook = count_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, len, 0);
	sge = xt_sge(&p.ma, len, len);
	xt_wqe(&w, 2, IBV_WR_RDMA_READ, 1);
	w.rdma.remote_addr = (uintptr_t)p.mb.buf + len;
	w.rdma.rkey = p.mb.rkey;
	sim_post_send(&a2, &w, &sge, NULL);
	sim_run(&p.s, 10000000000ull);
	REQUIRE((sim_poll(p.a.scq, c, 4)) == 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	REQUIRE((sim_poll(a2.scq, c, 4)) == 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, BIG));
	CHECK_EQ(resp_to[0], NPKT / 2);
	CHECK_EQ(resp_to[1], NPKT / 2);
	/* round robin: when the first READ was done, the other had most of
	 * its responses too (one after the other, it would have had none) */
	fprintf(stderr, "  the other READ had %u of %u responses when one was done\n",
		done_at_other, NPKT / 2);
	CHECK(done_at_other >= NPKT / 2 * 3 / 4);
	no_loss(&p);
	CHECK_EQ(b2.qp->x->cnt.tx_no_buf, 0);
	CHECK_EQ(a2.qp->x->cnt.retransmits, 0);
	pair_fini(&p);
	return 0;
}

/* ---- a response lost mid-READ: the READ asked again from there ---- */
static uint32_t dup_seen, dup_at, dup_psn0;

static bool dup_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (!xt_parse(frame, len, &pkt))
		return true;
	if (to == 1 && pkt.bth.opcode == WIRE_OP_RC_READ_REQ) {
		if (!dup_seen++)
			dup_psn0 = pkt.bth.psn;
		else
			dup_at = wire_psn_dist(dup_psn0, pkt.bth.psn);
		return true;
	}
	/* the 1000th response, once */
	return !(to == 0 && dup_seen == 1 && pkt.bth.psn == wire_psn_add(dup_psn0, 1000));
}

static int t_read_dup(void)
{
	struct uroce_cqe c[4];
	struct pair p;

	if (setup(&p, BIG))
		return 1;
	dup_seen = dup_at = 0;
	sim_hook = dup_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, BIG, 0);
	sim_run(&p.s, 10000000000ull);
	REQUIRE((sim_poll(p.a.scq, c, 4)) == 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, BIG));
	CHECK_EQ(dup_seen, 2);            /* asked again once ... */
	CHECK_EQ(dup_at, 1000);           /* ... from the lost response */
	CHECK_EQ(p.b.qp->x->cnt.dup_requests, 1);
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	CHECK_EQ(p.s.n[1].dev.cnt.drops[EMU_DROP_TX_NOBUF], 0);
	CHECK_EQ(p.b.qp->x->cnt.tx_no_buf, 0);
	/* the restart sent the rest once more, not the whole READ again, and
	 * what was on its way when the request came is all the waste */
	fprintf(stderr, "  responder sent %llu packets for a READ of %u\n",
		(unsigned long long)p.b.qp->x->cnt.tx_pkts, NPKT);
	CHECK(p.b.qp->x->cnt.tx_pkts <= NPKT + 2 * ROOM);
	CHECK_EQ(p.s.n[1].dev.x->resp_npend, 0);
	pair_fini(&p);
	return 0;
}

/* ---- ERR or destroy mid-READ ---- */
static struct pair *mid_p;
static uint32_t mid_seen, mid_after;
static int mid_destroy, mid_done;

static bool mid_hook(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (to != 0 || !xt_parse(frame, len, &pkt) || pkt.bth.opcode != WIRE_OP_RC_READ_RESP_MIDDLE)
		return true;
	if (mid_done) {
		mid_after++;
		return true;
	}
	if (++mid_seen == 1000) {
		mid_done = 1;
		if (mid_destroy) {
			CHECK_EQ(emu_qp_destroy(mid_p->s.n[1].ctx, mid_p->b.handle), 0);
		} else {
			struct ibv_qp_attr at;

			memset(&at, 0, sizeof(at));
			at.qp_state = IBV_QPS_ERR;
			CHECK_EQ(emu_qp_modify(mid_p->b.qp, &at, IBV_QP_STATE), 0);
		}
	}
	return true;
}

static int mid_read(int destroy)
{
	struct pair p;

	if (setup(&p, BIG))
		return 1;
	mid_p = &p;
	mid_seen = mid_after = 0;
	mid_done = 0;
	mid_destroy = destroy;
	sim_hook = mid_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, BIG, 0);
	/* a short run: the requester's retries are not what is tested */
	sim_run(&p.s, 1000000ull);
	CHECK(mid_done);
	/* what was queued when it happened arrives; nothing is sent after */
	CHECK(mid_after <= ROOM);
	CHECK_EQ(p.s.n[1].dev.x->resp_npend, 0);
	CHECK_EQ(p.s.n[1].dev.cnt.drops[EMU_DROP_TX_NOBUF], 0);
	if (!destroy) {
		CHECK_EQ(p.b.qp->x->rd_pend, 0);
		CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
		CHECK_EQ(p.b.qp->x->cnt.tx_no_buf, 0);
	}
	pair_fini(&p);
	return 0;
}

static int t_read_err(void)
{
	return mid_read(0);
}

static int t_read_destroy(void)
{
	return mid_read(1);
}

/* ---- more READs than max_dest_rd_atomic, all still owing responses ---- */
static int t_read_too_many(void)
{
	struct sim_conn cn = {
		.mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE,
		.psn = -1, .rd_atomic = 4, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};
	struct uroce_cqe c[8];
	struct pair p;
	int n, i;

	/* A may have 8 outstanding, B keeps 2: the third READ finds both of
	 * B's resources still sending */
	memset(&p, 0, sizeof(p));
	REQUIRE(!sim_init(&p.s));
	REQUIRE(!sim_qp(&p.s.n[0], IBV_QPT_RC, 256, &p.a, -1));
	REQUIRE(!sim_qp(&p.s.n[1], IBV_QPT_RC, 256, &p.b, -1));
	REQUIRE(!sim_mr(&p.s.n[0], BIG, ALL_ACCESS, &p.ma));
	REQUIRE(!sim_mr(&p.s.n[1], BIG, ALL_ACCESS, &p.mb));
	cn.rd_atomic = 8;
	REQUIRE(!sim_connect_with(&p.a, &p.b, &cn));
	cn.rd_atomic = 2;
	REQUIRE(!sim_connect_with(&p.b, &p.a, &cn));
	xt_fill(p.mb.buf, BIG, 7);
	/* READs of 16 packets, all four inside A's initial send window; 4
	 * buffers keep the first two sending when the third arrives */
	sim_txbufs[1] = 4;
	for (i = 0; i < 4; i++)
		xt_post(&p, (uint64_t)i + 1, IBV_WR_RDMA_READ, (uint32_t)i * 16 * MTU, 16 * MTU,
			(uint32_t)i * 16 * MTU);
	sim_run(&p.s, 10000000000ull);
	/* not executed, not fatal: dropped, asked again, answered */
	n = sim_poll(p.a.scq, c, 8);
	REQUIRE(n == 4);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(c[i].wr_id, (uint64_t)i + 1);
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
	}
	CHECK(!memcmp(p.ma.buf, p.mb.buf, 64 * MTU));
	CHECK(p.b.qp->x->cnt.drops[EMU_XDROP_RD_OVER] >= 1);
	/* the sequence NAK for READ 4, sent after the responses, asked for
	 * READ 3 again: no timeout */
	CHECK_EQ(p.a.qp->x->cnt.timeouts, 0);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(p.s.n[1].dev.x->resp_npend, 0);
	CHECK_EQ(p.s.n[1].dev.cnt.drops[EMU_DROP_TX_NOBUF], 0);
	pair_fini(&p);
	return 0;
}

/* ---- a fatal NAK behind pending READ responses ---- */
static int t_read_fatal(void)
{
	struct uroce_cqe c[4];
	struct pair p;

	if (setup(&p, BIG))
		return 1;
	psn_seen = psn_backwards = false;
	sim_hook = order_hook;
	xt_post(&p, 1, IBV_WR_RDMA_READ, 0, BIG / 2, 0);
	/* past the end of B's MR: R_Key violation, NAK remote access */
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, BIG / 2, 64, BIG);
	sim_run(&p.s, 10000000000ull);
	sim_hook = NULL;
	/* IBTA 9.7.5.2: responses in PSN order, the NAK after the READ's */
	REQUIRE((sim_poll(p.a.scq, c, 4)) == 2);
	CHECK_EQ(c[0].wr_id, 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(c[0].byte_len, BIG / 2);
	CHECK(!memcmp(p.ma.buf, p.mb.buf, BIG / 2));
	CHECK_EQ(c[1].wr_id, 2);
	CHECK_EQ(c[1].status, IBV_WC_REM_ACCESS_ERR);
	CHECK(psn_seen);
	CHECK(!psn_backwards);
	CHECK_EQ(p.b.qp->attr.qp_state, IBV_QPS_ERR);
	CHECK_EQ(p.b.qp->x->cnt.tx_pkts, NPKT / 2 + 1);
	CHECK_EQ(p.b.qp->x->rd_pend, 0);
	CHECK_EQ(p.s.n[1].dev.x->resp_npend, 0);
	CHECK_EQ(xt_events(&p.s.n[1], IBV_EVENT_QP_ACCESS_ERR), 1);
	CHECK_EQ(p.s.n[1].dev.cnt.drops[EMU_DROP_TX_NOBUF], 0);
	CHECK_EQ(p.a.qp->x->cnt.retransmits, 0);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "read_big", t_read_big },
	{ "read_order", t_read_order },
	{ "read_two_qps", t_read_two_qps },
	{ "read_dup", t_read_dup },
	{ "read_err", t_read_err },
	{ "read_destroy", t_read_destroy },
	{ "read_too_many", t_read_too_many },
	{ "read_fatal", t_read_fatal },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
