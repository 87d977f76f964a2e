/* SPDX-License-Identifier: MIT */
/* READ recovery under loss: one re-issue per gap (docs/transport.md,
 * "Recovery in round trips", C7). A wire with a one-way delay and a
 * serialization time per frame (FIFO each way, virtual clock) drops a
 * seeded share of the responses to node A: the requester re-issues a
 * READ once per gap (and once per timeout), not at every out-of-sequence
 * response that follows the gap, every byte arrives, and the responses
 * it ignored are counted (resp-ignored).
 *
 *  readloss_1        - one READ of 256 responses, 1 % of them lost
 *  readloss_5        - the same, 5 % lost
 *  readloss_multi    - eight READs of 64 responses outstanding, 5 % lost:
 *                      re-issued from the first missing, the later READs
 *                      resent behind it, each round once per gap
 *  readloss_lost     - the re-issued READ request is lost too: the loss
 *                      probe asks again (no retransmit timeout), the
 *                      ignored responses in between spent no retry
 *  readloss_progress - after a re-issue, a response of it in sequence is
 *                      progress: a second gap re-issues once more
 *  readloss_again    - the answer to the re-issue loses the same response:
 *                      asked again at once, not after the timeout
 *  readloss_swap     - two responses swapped, none lost: one re-issue (the
 *                      rest of the old stream behind it asks nothing)
 *  readloss_reorder  - 2 % reordered and 2 % duplicated: a round per gap
 *  readloss_interop  - the interop loss group's read_bw in the model
 */
#include <stdlib.h>
#include <string.h>

#include "pair.h"

#define MTU      1024u
#define DELAY_NS 20000u  /* one way */
#define SER_NS   1000u   /* a frame's time on the wire */

/* ---- the wire ---- */
struct rl_frame {
	struct rl_frame *next;
	uint64_t at;
	uint8_t *frame;
	uint32_t len;
};

static struct {
	struct rl_frame *head[2], *tail[2];
	uint64_t last[2];          /* when the last frame to i arrives */
	uint64_t rng;
	uint32_t loss_ppm;         /* of the responses to node 0 */
	uint32_t req_loss_ppm;     /* of the READ requests to node 1 */
	uint32_t reorder_ppm;      /* of the responses: behind the next one */
	uint32_t dup_ppm;          /* of the responses: twice */
	struct rl_frame *held;     /* a response held behind the next one */
	int swap;                  /* hold the response at swap_off once */
	uint32_t swap_off;
	uint32_t read_reqs;        /* READ request packets to node 1 */
	uint32_t rounds;           /* ... of recovery: a request sent before
				    * that does not follow the one before */
	uint32_t req_end;          /* past the responses of the last one */
	uint32_t req_hi;           /* past the responses of all of them */
	uint32_t reordered;        /* responses held behind the next one */
	uint32_t lost;             /* responses dropped */
	int drop_req;              /* drop the next READ request after ... */
	uint32_t drop_req_after;   /* ... this many READ requests */
	struct {
		uint32_t off;      /* PSN offset from the READ's first */
		uint32_t after;    /* once this many READ requests went */
	} drop_set[8];             /* responses to drop once each */
	unsigned ndrop;
	uint32_t psn0;             /* first PSN of the first READ */
} rl;

static uint32_t rl_rand(void)
{
	rl.rng = rl.rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rl.rng >> 33);
}

/* the wire's verdict on a frame: false drops it */
static bool rl_keep(int to, const uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	if (!xt_parse(frame, len, &p))
		return true;
	if (to == 1 && p.bth.opcode == WIRE_OP_RC_READ_REQ) {
		uint32_t end = wire_psn_add(p.bth.psn, (p.reth.dma_len + MTU - 1) / MTU);

		if (!rl.read_reqs++)
			rl.psn0 = rl.req_hi = p.bth.psn;
		else if (wire_psn_before(p.bth.psn, rl.req_hi) && p.bth.psn != rl.req_end)
			rl.rounds++;
		rl.req_end = end;
		if (wire_psn_after(end, rl.req_hi))
			rl.req_hi = end;
		if (rl.drop_req && rl.read_reqs == rl.drop_req_after + 1) {
			rl.drop_req = 0;
			return false;
		}
		return !(rl.req_loss_ppm && rl_rand() % 1000000u < rl.req_loss_ppm);
	}
	if (to != 0 || p.op->cls != WIRE_OPC_READ_RESP)
		return true;
	for (unsigned i = 0; i < rl.ndrop; i++)
		if (p.bth.psn == wire_psn_add(rl.psn0, rl.drop_set[i].off) &&
		    rl.read_reqs >= rl.drop_set[i].after) {
			rl.drop_set[i] = rl.drop_set[--rl.ndrop];
			rl.lost++;
			return false;
		}
	if (rl.loss_ppm && rl_rand() % 1000000u < rl.loss_ppm) {
		rl.lost++;
		return false;
	}
	return true;
}

/* is frame the READ response at PSN offset off? */
static bool rl_is(const uint8_t *frame, uint32_t len, uint32_t off)
{
	struct wire_pkt p;

	return xt_parse(frame, len, &p) && p.op->cls == WIRE_OPC_READ_RESP &&
	       p.bth.psn == wire_psn_add(rl.psn0, off);
}

static void rl_queue(int to, struct rl_frame *f)
{
	f->next = NULL;
	f->at = sim_now + DELAY_NS;
	if (f->at < rl.last[to] + SER_NS)
		f->at = rl.last[to] + SER_NS;
	rl.last[to] = f->at;
	if (rl.tail[to])
		rl.tail[to]->next = f;
	else
		rl.head[to] = f;
	rl.tail[to] = f;
}

static bool rl_take(int to, uint8_t *frame, uint32_t len)
{
	struct rl_frame *f;

	if (!rl_keep(to, frame, len)) {
		free(frame);
		return true;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return false;
	f->frame = frame;
	f->len = len;
	if (to == 0 && rl.dup_ppm && rl_rand() % 1000000u < rl.dup_ppm) {
		struct rl_frame *d = calloc(1, sizeof(*d));

		if (d && (d->frame = malloc(len))) {
			memcpy(d->frame, frame, len);
			d->len = len;
			rl_queue(to, d);
		} else {
			free(d);
		}
	}
	if (to == 0 && !rl.held && rl.swap && rl_is(frame, len, rl.swap_off)) {
		rl.swap = 0;
		rl.held = f;
		rl.reordered++;
		return true;
	}
	if (to == 0 && !rl.held && rl.reorder_ppm && rl_rand() % 1000000u < rl.reorder_ppm) {
		rl.held = f;
		rl.reordered++;
		return true;
	}
	rl_queue(to, f);
	if (to == 0 && rl.held) {
		rl_queue(to, rl.held);
		rl.held = NULL;
	}
	return true;
}

static void rl_run(uint64_t now)
{
	for (int i = 0; i < 2; i++)
		while (rl.head[i] && rl.head[i]->at <= now) {
			struct rl_frame *f = rl.head[i];

			rl.head[i] = f->next;
			if (!rl.head[i])
				rl.tail[i] = NULL;
			sim_deliver(i, f->frame, f->len);
			free(f);
		}
}

static uint64_t rl_next(void)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < 2; i++)
		if (rl.head[i] && rl.head[i]->at < t)
			t = rl.head[i]->at;
	return t;
}

static const struct sim_wire rl_wire = { rl_take, rl_run, rl_next };

static void rl_free(void)
{
	if (rl.held) {
		free(rl.held->frame);
		free(rl.held);
		rl.held = NULL;
	}
	for (int i = 0; i < 2; i++)
		while (rl.head[i]) {
			struct rl_frame *f = rl.head[i];

			rl.head[i] = f->next;
			free(f->frame);
			free(f);
		}
	rl.tail[0] = rl.tail[1] = NULL;
}

static void drop_once(uint32_t off, uint32_t after)
{
	rl.drop_set[rl.ndrop].off = off;
	rl.drop_set[rl.ndrop++].after = after;
}

/* a connected pair with max_rd_atomic rd both ways, len bytes of MR */
static int setup_rd(struct pair *p, size_t len, uint32_t loss_ppm, uint8_t rd)
{
	const struct sim_conn cn = {
		.mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE,
		.psn = -1, .rd_atomic = rd, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};

	memset(&rl, 0, sizeof(rl));
	rl.rng = 0x5eed1; /* fixed: the same losses every run */
	rl.loss_ppm = loss_ppm;
	memset(p, 0, sizeof(*p));
	if (sim_init(&p->s) || sim_qp(&p->s.n[0], IBV_QPT_RC, 256, &p->a, -1) ||
	    sim_qp(&p->s.n[1], IBV_QPT_RC, 256, &p->b, -1) ||
	    sim_mr(&p->s.n[0], len, ALL_ACCESS, &p->ma) ||
	    sim_mr(&p->s.n[1], len, ALL_ACCESS, &p->mb) || sim_connect_with(&p->a, &p->b, &cn) ||
	    sim_connect_with(&p->b, &p->a, &cn)) {
		fprintf(stderr, "setup failed\n");
		return -1;
	}
	xt_fill(p->mb.buf, len, 11);
	memset(p->ma.buf, 0, len);
	sim_wire = &rl_wire;
	return 0;
}

static void fini(struct pair *p)
{
	sim_wire = NULL;
	rl_free();
	pair_fini(p);
}

/* value name of QP qpn (0: the port's totals) as uroce-ctl counters gets
 * it (UROCE_OP_QUERY_DROPS, first page), or -1 */
static long long named(struct emu_dev *d, uint32_t qpn, const char *name)
{
	static struct uroce_query_drops_rep r;
	struct uroce_query_drops_req q = { 0, 0 };

	emu_drops_fill(d, NULL, NULL, 0, &q, &r);
	for (uint32_t i = 0; i < r.n; i++)
		if (r.v[i].qpn == qpn && !strcmp(r.v[i].name, name))
			return (long long)r.v[i].val;
	return -1;
}

static uint64_t ignored(const struct pair *p)
{
	return p->a.qp->x->cnt.resp_ignored;
}

/* ---- n READs of npkt responses each, outstanding together ---- */
struct rl_case {
	uint32_t n, npkt;       /* READs, responses each */
	uint8_t rd_atomic;      /* outstanding at most */
	uint32_t loss_ppm, req_loss_ppm, reorder_ppm, dup_ppm;
	uint32_t amp;           /* responses the responder may send per one needed */
};

static int reads(const struct rl_case *k)
{
	const uint32_t len = k->npkt * MTU;
	struct uroce_cqe c[64];
	struct pair p;
	int got = 0;

	if (setup_rd(&p, (size_t)len * k->n, k->loss_ppm, k->rd_atomic))
		return 1;
	rl.req_loss_ppm = k->req_loss_ppm;
	rl.reorder_ppm = k->reorder_ppm;
	rl.dup_ppm = k->dup_ppm;
	for (uint32_t i = 0; i < k->n; i++)
		xt_post(&p, i + 1, IBV_WR_RDMA_READ, i * len, len, i * len);
	sim_run(&p.s, 600000000000ull);
	got = sim_poll(p.a.scq, c, 64);
	REQUIRE(got == (int)k->n);
	for (uint32_t i = 0; i < k->n; i++) {
		CHECK_EQ(c[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(c[i].wr_id, (uint64_t)i + 1);
	}
	CHECK(!memcmp(p.ma.buf, p.mb.buf, (size_t)len * k->n));

	const struct emu_xport_counters *a = &p.a.qp->x->cnt;
	/* every round of recovery (a gap in the responses, or a timeout)
	 * asks again once: from the head READ's first missing response,
	 * and each READ behind it goes again with it */
	fprintf(stderr, "  %u READs x %u responses, %u lost, %u reordered: %u READ requests "
		"in %u rounds, %llu timeouts, %llu probes, %llu responses ignored, responder "
		"sent %llu, virtual time %.3f ms\n",
		k->n, k->npkt, rl.lost, rl.reordered, rl.read_reqs, rl.rounds,
		(unsigned long long)a->timeouts,
		(unsigned long long)a->probes, (unsigned long long)ignored(&p),
		(unsigned long long)p.b.qp->x->cnt.tx_pkts, sim_now / 1e6);
	CHECK(rl.lost + rl.reordered > 0);
	/* a round per gap (a response lost, or overtaken by the next) or
	 * timeout, not one per response past the gap */
	CHECK(rl.rounds <= rl.lost + rl.reordered + a->timeouts);
	/* each round asks for the head READ and the READs behind it once */
	CHECK(rl.read_reqs <= k->rd_atomic * (rl.rounds + 1));
	/* what the responder sent again is bounded: later READs' responses
	 * are kept, only the head READ is asked for again (before: 33x in
	 * readloss_interop, 6.9x in readloss_multi, 4.4x in readloss_reorder) */
	CHECK(p.b.qp->x->cnt.tx_pkts <= (uint64_t)k->amp * k->n * k->npkt);
	CHECK_EQ(a->retry_exceeded, 0);
	/* losses were there to ignore something behind */
	CHECK(ignored(&p) > 0);
	fini(&p);
	return 0;
}

static int t_readloss_1(void)
{
	const struct rl_case k = { .n = 1, .npkt = 256, .rd_atomic = 1, .loss_ppm = 10000,
				   .amp = 3 };

	return reads(&k);
}

static int t_readloss_5(void)
{
	const struct rl_case k = { .n = 1, .npkt = 256, .rd_atomic = 1, .loss_ppm = 50000,
				   .amp = 8 };

	return reads(&k);
}

static int t_readloss_multi(void)
{
	const struct rl_case k = { .n = 8, .npkt = 64, .rd_atomic = 8, .loss_ppm = 50000,
				   .amp = 4 };

	return reads(&k);
}

/* responses reordered and duplicated, none lost */
static int t_readloss_reorder(void)
{
	const struct rl_case k = { .n = 1, .npkt = 256, .rd_atomic = 1, .reorder_ppm = 20000,
				   .dup_ppm = 20000, .amp = 3 };

	return reads(&k);
}

/* tests/interop's loss group's read_bw: 50 READs of 64 KiB, 16
 * outstanding, 5 % of the frames lost each way, 2 % of what arrives
 * duplicated or reordered */
static int t_readloss_interop(void)
{
	const struct rl_case k = { .n = 50, .npkt = 64, .rd_atomic = 16, .loss_ppm = 50000,
				   .req_loss_ppm = 50000, .reorder_ppm = 20000,
				   .dup_ppm = 20000, .amp = 8 };

	return reads(&k);
}

/* ---- one READ of ONE_PKT responses through the faults set up ---- */
#define ONE_PKT 256u

/* p set up (setup_rd), its faults set: READ ONE_PKT responses, every
 * byte checked; A's counters after */
static const struct emu_xport_counters *one_read(struct pair *p)
{
	const uint32_t len = ONE_PKT * MTU;
	struct uroce_cqe c[4];
	const struct emu_xport_counters *a = &p->a.qp->x->cnt;

	xt_post(p, 1, IBV_WR_RDMA_READ, 0, len, 0);
	sim_run(&p->s, 60000000000ull);
	CHECK_EQ(sim_poll(p->a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	CHECK(!memcmp(p->ma.buf, p->mb.buf, len));
	fprintf(stderr, "  READ requests %u, lost %u, reordered %u, timeouts %llu, probes %llu, "
		"ignored %llu\n", rl.read_reqs, rl.lost, rl.reordered,
		(unsigned long long)a->timeouts, (unsigned long long)a->probes,
		(unsigned long long)ignored(p));
	return a;
}

/* ---- the re-issue lost: the loss probe asks again ---- */
static int t_readloss_lost(void)
{
	struct pair p;

	if (setup_rd(&p, ONE_PKT * MTU, 0, 4))
		return 1;
	drop_once(10, 1);                      /* the 11th response */
	rl.drop_req = 1;                       /* ... and the READ asking for it again */
	rl.drop_req_after = 1;
	const struct emu_xport_counters *a = one_read(&p);
	/* the first, the re-issue (lost), the one the loss probe sends: the
	 * READ's responses had begun, and their silence is the loss (before:
	 * the retransmit timeout, 67 ms at timeout 14) */
	CHECK_EQ(a->timeouts, 0);
	CHECK_EQ(a->probes, 1);
	CHECK_EQ(rl.read_reqs, 3);
	/* the 245 responses behind the gap waited for nothing */
	CHECK_EQ(ignored(&p), ONE_PKT - 11 - 1);
	CHECK_EQ(p.a.qp->x->retry_left, p.a.qp->attr.retry_cnt);
	fini(&p);
	return 0;
}

/* ---- two responses lost: the 11th of the first request, then the
 * one at off of the answer to its re-issue, once each ---- */
static int two_lost(uint32_t off)
{
	struct pair p;

	if (setup_rd(&p, ONE_PKT * MTU, 0, 4))
		return 1;
	drop_once(10, 1);
	drop_once(off, 2);
	const struct emu_xport_counters *a = one_read(&p);
	CHECK_EQ(rl.lost, 2);
	CHECK_EQ(a->timeouts, 0);
	CHECK_EQ(rl.read_reqs, 3);
	fini(&p);
	return 0;
}

/* two gaps, one after the other: one re-issue each */
static int t_readloss_progress(void)
{
	return two_lost(100);
}

/* the answer to the re-issue loses the same response: its responses
 * past the same gap ask again at once (the same PSN, but a stream that
 * began after the re-issue), not after the retransmit timeout */
static int t_readloss_again(void)
{
	return two_lost(10);
}

/* ---- one response overtaken by the next: one re-issue ---- */
static int t_readloss_swap(void)
{
	struct pair p;

	if (setup_rd(&p, ONE_PKT * MTU, 0, 4))
		return 1;
	rl.swap = 1;
	rl.swap_off = 10; /* 11 arrives before 10 */
	const struct emu_xport_counters *a = one_read(&p);
	CHECK_EQ(rl.reordered, 1);
	CHECK_EQ(rl.lost, 0);
	/* 11 re-issues from 10; 10 then arrives and is taken, 12.. are the
	 * rest of the same stream, and 11 comes with the re-issue's answer:
	 * no second re-issue from 11 */
	CHECK_EQ(rl.read_reqs, 2);
	CHECK_EQ(a->timeouts, 0);
	CHECK(ignored(&p) >= ONE_PKT - 13);
	/* counted per QP and in the port's totals, by name */
	CHECK_EQ(named(&p.s.n[0].dev, p.a.qp->qpn, "resp-ignored"), (long long)ignored(&p));
	CHECK_EQ(named(&p.s.n[0].dev, 0, "qps.resp-ignored"), (long long)ignored(&p));
	fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "readloss_1", t_readloss_1 },
	{ "readloss_5", t_readloss_5 },
	{ "readloss_multi", t_readloss_multi },
	{ "readloss_reorder", t_readloss_reorder },
	{ "readloss_interop", t_readloss_interop },
	{ "readloss_lost", t_readloss_lost },
	{ "readloss_progress", t_readloss_progress },
	{ "readloss_again", t_readloss_again },
	{ "readloss_swap", t_readloss_swap },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
