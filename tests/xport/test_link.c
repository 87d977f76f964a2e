/* SPDX-License-Identifier: MIT */
/* RDMA over a link (issue 22): drops and discards by reason, per QP and
 * per port (UROCE_OP_QUERY_DROPS). Virtual clock. Usage: test_link <name>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

/* ---- drops by reason (emu_drops_fill) ---- */

/* the value named name of QP qpn (0: the port's) in the reply, or -1 */
static long long drop_val(const struct uroce_query_drops_rep *r, uint32_t qpn, const char *name)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (r->v[i].qpn == qpn && !strcmp(r->v[i].name, name))
			return (long long)r->v[i].val;
	return -1;
}

/* every page of a device's values into one reply (at most
 * UROCE_DROPS_PER_MSG * 4 values) */
static unsigned drops_all(struct emu_dev *d, const struct emu_named *link, unsigned nlink,
			  struct uroce_query_drops_rep *all, unsigned per_page)
{
	static struct uroce_query_drops_rep r;
	struct uroce_query_drops_req q = { 0, 0 };
	unsigned pages = 0;

	memset(all, 0, sizeof(*all));
	do {
		emu_drops_fill(d, NULL, link, nlink, &q, &r);
		pages++;
		for (uint32_t i = 0; i < r.n && all->n < UROCE_DROPS_PER_MSG; i++)
			all->v[all->n++] = r.v[i];
		CHECK(r.n <= UROCE_DROPS_PER_MSG);
		if (r.more) {
			/* pages move forward */
			CHECK(r.next_qpn > q.first_qpn ||
			      (r.next_qpn == q.first_qpn && r.next > q.first));
			q.first_qpn = r.next_qpn;
			q.first = r.next;
		}
	} while (r.more && pages < 64);
	(void)per_page;
	return pages;
}

static int lost_once;

/* the second WRITE MIDDLE packet to B is lost (once) */
static bool lose_one(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;

	(void)s;
	if (to == 1 && !lost_once && xt_parse(frame, len, &p) &&
	    p.bth.opcode == WIRE_OP_RC_WRITE_MIDDLE) {
		lost_once = 1;
		return false;
	}
	return true;
}

/* Each transport discard made to happen on a live RC pair (one lost
 * packet: out-of-seq behind it and one sequence NAK; a duplicating link:
 * duplicates; a SEND with no receive posted: an RNR discard), seen by
 * reason on the QP and in the port's totals, which keep them after the
 * QPs are gone; the link's values (the daemon's, here made up) come
 * first under qpn 0; every page is consistent. */
static int t_drops_named(void)
{
	static struct uroce_query_drops_rep all;
	const struct emu_named link[] = { { "rx-missed", 7 }, { "xdp-rx-ring-full", 11 } };
	struct pair p;
	struct uroce_cqe c[4];
	struct emu_fault_cfg dup = { .dup = 1.0, .seed = 1 };
	uint32_t bq;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 16))
		return 1;
	bq = p.b.qp->qpn;
	lost_once = 0;
	sim_hook = lose_one;
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 10 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	sim_hook = NULL;
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	sim_fault(&p.s, 1, &dup);
	xt_post(&p, 2, IBV_WR_RDMA_WRITE, 0, 4 * 1024, 0);
	sim_run(&p.s, 1000000000ull);
	sim_fault(&p.s, 1, NULL);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	/* no receive posted at B: RNR NAKs until one is */
	xt_post(&p, 3, IBV_WR_SEND, 0, 64, 0);
	sim_run(&p.s, 2000000ull);
	{
		struct uroce_sge s = xt_sge(&p.mb, 0, 64);

		sim_post_recv(&p.b, 9, &s, 1);
	}
	sim_run(&p.s, 1000000000ull);
	CHECK_EQ(sim_poll(p.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);

	drops_all(&p.s.n[1].dev, link, 2, &all, 0);
	CHECK_EQ(drop_val(&all, 0, "link.rx-missed"), 7);
	CHECK_EQ(drop_val(&all, 0, "link.xdp-rx-ring-full"), 11);
	CHECK_EQ(all.v[0].qpn, 0);
	CHECK(!strcmp(all.v[0].name, "link.rx-missed"));
	CHECK_EQ(drop_val(&all, bq, "out-of-seq"), (long long)p.b.qp->x->cnt.out_of_seq);
	CHECK(drop_val(&all, bq, "out-of-seq") >= 8);
	CHECK(drop_val(&all, bq, "duplicate") >= 4);
	CHECK(drop_val(&all, bq, "rnr-discard") >= 1);
	CHECK_EQ(drop_val(&all, bq, "qp-state"), 0); /* the transport's reasons, by name */
	CHECK_EQ(drop_val(&all, 0, "qps.out-of-seq"), drop_val(&all, bq, "out-of-seq"));
	CHECK_EQ(drop_val(&all, 0, "qps.seq-naks-sent"), 1);
	drops_all(&p.s.n[0].dev, NULL, 0, &all, 0);
	CHECK(drop_val(&all, 0, "qps.retransmits") >= 9);
	CHECK(drop_val(&all, 0, "qps.rnr-naks-rcvd") >= 1);
	CHECK_EQ(drop_val(&all, 0, "qps.seq-naks-rcvd"), 1);
	long long retrans = drop_val(&all, 0, "qps.retransmits");

	/* the QPs go: the port's totals stay */
	CHECK_EQ(emu_qp_destroy(p.s.n[0].ctx, p.a.handle), 0);
	CHECK_EQ(emu_qp_destroy(p.s.n[1].ctx, p.b.handle), 0);
	drops_all(&p.s.n[0].dev, NULL, 0, &all, 0);
	CHECK_EQ(drop_val(&all, 0, "qps.retransmits"), retrans);
	drops_all(&p.s.n[1].dev, link, 2, &all, 0);
	CHECK(drop_val(&all, 0, "qps.out-of-seq") >= 8);
	CHECK(drop_val(&all, 0, "qps.duplicate") >= 4);
	CHECK(drop_val(&all, 0, "qps.rnr-discard") >= 1);
	CHECK_EQ(drop_val(&all, bq, "out-of-seq"), -1);
	pair_fini(&p);
	return 0;
}

/* Many QPs: the values page, each page full until the last, the port's
 * first, every QP's values once. */
static int t_drops_pages(void)
{
	static struct uroce_query_drops_rep r;
	struct emu_named link[EMU_XDROP_NUM];
	struct sim s;
	struct sim_qp q[40];
	unsigned total = 0, pages = 0, port = 0;
	struct uroce_query_drops_req req = { 0, 0 };

	if (sim_init(&s))
		return 1;
	for (unsigned i = 0; i < 40; i++)
		if (sim_qp(&s.n[0], IBV_QPT_RC, 4, &q[i], -1))
			return 1;
	for (unsigned i = 0; i < EMU_XDROP_NUM; i++)
		link[i] = (struct emu_named){ "x", i };
	do {
		emu_drops_fill(&s.n[0].dev, NULL, link, EMU_XDROP_NUM, &req, &r);
		pages++;
		if (r.more)
			CHECK_EQ(r.n, UROCE_DROPS_PER_MSG);
		for (uint32_t i = 0; i < r.n; i++) {
			port += r.v[i].qpn == 0;
			CHECK(r.v[i].name[0] != 0);
			CHECK(memchr(r.v[i].name, 0, UROCE_DROP_NAME_LEN) != NULL);
		}
		total += r.n;
		req.first_qpn = r.next_qpn;
		req.first = r.next;
	} while (r.more && pages < 100);
	/* the port: the link's and 16 totals; each QP: 6 + the reasons */
	CHECK_EQ(port, EMU_XDROP_NUM + 16);
	CHECK_EQ(total, port + 40 * (6 + EMU_XDROP_NUM));
	CHECK(pages > 1);
	sim_fini(&s);
	return 0;
}

/* ---- a link between two daemons ---- */
/* The simulated wire between the nodes as two daemons on two hosts see
 * it (bench/link.py's veth): per direction, the sender's port puts frames
 * on the wire at LK_MBPS (frames waiting are its TX backlog, which the
 * requester sees), they arrive LK_DELAY_NS later, possibly lost (seeded,
 * lk.loss per mille... per million), in the receiver's RX ring of lk.ring
 * frames (an AF_XDP socket's), which the receiver's engine empties one
 * frame every lk.cost_ns while it runs; the engine is descheduled for
 * lk.off_ns every lk.period_ns (a shared machine: another process has the
 * core). A frame that finds the ring full is lost: what the port counts
 * as link.xdp-rx-ring-full, and what issue 22 saw at 43 %. */
#define LK_MBPS     12000u       /* what one daemon's TX puts on a veth here */
#define LK_DELAY_NS 20000u       /* the wire and the kernel between the daemons */

struct lk_frame {
	struct lk_frame *next;
	uint8_t *data;
	uint32_t len;
	uint64_t at;                 /* arrives in the ring */
};

struct lk_fifo {
	struct lk_frame *head, *tail;
	uint32_t n;
};

static struct {
	struct pair *p;
	uint64_t rng;
	uint32_t loss_ppm;           /* frames lost on the wire, per million */
	uint32_t ring;               /* RX ring, frames */
	uint64_t cost_ns;            /* receiver's engine, per frame */
	uint64_t period_ns, off_ns;  /* descheduled off_ns every period_ns (0: never) */
	uint64_t late_ns;            /* QPs after the first start posting that late */
	struct lk_fifo tx[2];        /* frames on their way to node i */
	uint64_t tx_free_ps[2];      /* that wire is free again */
	struct lk_fifo rx[2];        /* node i's RX ring */
	uint64_t drain_at[2];        /* node i's engine takes its next frame */
	uint64_t ring_drops[2], wire_drops[2], frames[2];
	uint32_t ring_max[2], backlog_max[2];
} lk;

static void lk_push(struct lk_fifo *q, struct lk_frame *f)
{
	f->next = NULL;
	if (q->tail)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	q->n++;
}

static struct lk_frame *lk_pop(struct lk_fifo *q)
{
	struct lk_frame *f = q->head;

	q->head = f->next;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	return f;
}

/* the sender's port: frames not yet on the wire are its TX backlog */
static void lk_backlog(int to)
{
	struct emu_dev *d = &lk.p->s.n[!to].dev;
	uint32_t n = 0;

	for (struct lk_frame *f = lk.tx[to].head; f; f = f->next)
		n += f->at > sim_now + LK_DELAY_NS;
	d->tx_backlog = n;
	if (n > lk.backlog_max[!to])
		lk.backlog_max[!to] = n;
}

static bool lk_take(int to, uint8_t *frame, uint32_t len)
{
	struct lk_frame *f = malloc(sizeof(*f));
	uint64_t start = sim_now * 1000 > lk.tx_free_ps[to] ? sim_now * 1000 : lk.tx_free_ps[to];

	if (!f)
		return false;
	lk.tx_free_ps[to] = start + (uint64_t)len * 8000000 / LK_MBPS;
	f->data = frame;
	f->len = len;
	f->at = (lk.tx_free_ps[to] + 999) / 1000 + LK_DELAY_NS;
	lk_push(&lk.tx[to], f);
	lk_backlog(to);
	return true;
}

/* the earliest time from t at which node i's engine runs */
static uint64_t lk_running(int i, uint64_t t)
{
	if (!lk.period_ns || !lk.off_ns)
		return t;
	uint64_t phase = i ? lk.period_ns / 2 : 0, k = (t + lk.period_ns - phase) % lk.period_ns;

	return k < lk.off_ns ? t + lk.off_ns - k : t;
}

static uint64_t lk_next_drain(int i)
{
	return lk.rx[i].head ? lk_running(i, lk.drain_at[i]) : UINT64_MAX;
}

static uint64_t lk_next(void)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < 2; i++) {
		if (lk.tx[i].head && lk.tx[i].head->at < t)
			t = lk.tx[i].head->at;
		if (lk_next_drain(i) < t)
			t = lk_next_drain(i);
	}
	return t;
}

/* Everything due by now, in time order. */
static void lk_run(uint64_t now)
{
	for (;;) {
		int kind = -1, i = 0;
		uint64_t t = UINT64_MAX;

		for (int j = 0; j < 2; j++) {
			if (lk.tx[j].head && lk.tx[j].head->at < t) {
				t = lk.tx[j].head->at;
				kind = 0;
				i = j;
			}
			if (lk_next_drain(j) < t) {
				t = lk_next_drain(j);
				kind = 1;
				i = j;
			}
		}
		if (kind < 0 || t > now)
			break;
		struct lk_frame *f;
		if (kind == 0) {
			f = lk_pop(&lk.tx[i]);
			lk.frames[i]++;
			if (lk.loss_ppm && xt_rng(&lk.rng) % 1000000 < lk.loss_ppm) {
				lk.wire_drops[i]++;
				free(f->data);
				free(f);
			} else if (lk.rx[i].n >= lk.ring) {
				lk.ring_drops[i]++;
				free(f->data);
				free(f);
			} else {
				if (!lk.rx[i].head && lk.drain_at[i] < t)
					lk.drain_at[i] = t;
				lk_push(&lk.rx[i], f);
				if (lk.rx[i].n > lk.ring_max[i])
					lk.ring_max[i] = lk.rx[i].n;
			}
		} else {
			f = lk_pop(&lk.rx[i]);
			lk.drain_at[i] = t + lk.cost_ns;
			sim_deliver(i, f->data, f->len);
			free(f);
		}
	}
	lk_backlog(0);
	lk_backlog(1);
}

static const struct sim_wire lk_wire = { lk_take, lk_run, lk_next };

static void lk_free(void)
{
	for (int i = 0; i < 2; i++) {
		while (lk.tx[i].head) {
			struct lk_frame *f = lk_pop(&lk.tx[i]);
			free(f->data);
			free(f);
		}
		while (lk.rx[i].head) {
			struct lk_frame *f = lk_pop(&lk.rx[i]);
			free(f->data);
			free(f);
		}
	}
}

static uint64_t lk_seed(void)
{
	const char *e = getenv("XP_SEED");

	return e ? strtoull(e, NULL, 0) : 0x11c4;
}

/* What one stream over the link did. */
struct lk_result {
	unsigned done;               /* messages completed successfully */
	int bad;                     /* first other status, -1 none */
	double mbps;                 /* goodput */
	uint64_t ring_drops, wire_drops, retransmits, timeouts, probes;
	uint32_t ring_max, cwnd_max;
	unsigned min_at_first;       /* fewest messages another QP had done when QP 0 was done */
};

#define LK_QPS 16

/* nqp RC QPs from A to B, each a stream of count op messages of msg bytes
 * with depth outstanding, over the link as lk is set (ring, cost,
 * descheduling, loss). Every READ/WRITE lands on B's / A's buffer. */
static void lk_stream(uint8_t op, uint32_t msg, unsigned depth, unsigned count, unsigned nqp,
		      struct lk_result *res)
{
	struct pair p;
	struct sim_qp a[LK_QPS], b[LK_QPS];
	unsigned posted[LK_QPS] = { 0 }, done[LK_QPS] = { 0 }, total = 0;
	uint64_t t0, bytes = 0;

	memset(res, 0, sizeof(*res));
	res->bad = -1;
	if (nqp > LK_QPS || pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, msg)) {
		res->bad = -2;
		return;
	}
	a[0] = p.a;
	b[0] = p.b;
	for (unsigned q = 1; q < nqp; q++)
		if (sim_qp(&p.s.n[0], IBV_QPT_RC, 256, &a[q], -1) ||
		    sim_qp(&p.s.n[1], IBV_QPT_RC, 256, &b[q], -1) ||
		    sim_connect(&a[q], &b[q], IBV_MTU_1024) || sim_connect(&b[q], &a[q], IBV_MTU_1024)) {
			res->bad = -2;
			return;
		}
	lk.p = &p;
	for (int i = 0; i < 2; i++) {
		lk.drain_at[i] = 0;
		lk.tx_free_ps[i] = 0;
		lk.ring_drops[i] = lk.wire_drops[i] = lk.frames[i] = 0;
		lk.ring_max[i] = lk.backlog_max[i] = 0;
	}
	sim_wire = &lk_wire;
	t0 = sim_now;
	res->min_at_first = UINT32_MAX;
	while (total < count * nqp && res->bad < 0 && sim_now - t0 < 120ull * 1000000000ull) {
		for (unsigned q = 0; q < nqp; q++) {
			struct uroce_cqe c[64];
			int n = sim_poll(a[q].scq, c, 64);

			if (q && sim_now - t0 < lk.late_ns)
				continue;

			for (int k = 0; k < n; k++) {
				if (c[k].status == IBV_WC_SUCCESS) {
					done[q]++;
					total++;
					bytes += msg;
				} else if (res->bad < 0) {
					res->bad = c[k].status;
				}
			}
			while (posted[q] < count && posted[q] - done[q] < depth) {
				struct uroce_send_wqe w;
				struct uroce_sge s = xt_sge(&p.ma, 0, msg);

				xt_wqe(&w, posted[q]++, op, 1);
				w.rdma.remote_addr = (uintptr_t)p.mb.buf;
				w.rdma.rkey = p.mb.rkey;
				sim_post_send(&a[q], &w, &s, NULL);
			}
			if (a[q].qp->x->cwnd > res->cwnd_max)
				res->cwnd_max = a[q].qp->x->cwnd;
		}
		if (done[0] == count && res->min_at_first == UINT32_MAX)
			for (unsigned q = 1; q < nqp; q++)
				if (done[q] < res->min_at_first)
					res->min_at_first = done[q];
		uint64_t before = sim_now;
		sim_run(&p.s, 200000ull);
		if (sim_now == before)
			sim_now += 1000;
	}
	res->done = total;
	res->mbps = (double)bytes * 8 * 1000 / (double)(sim_now - t0);
	res->ring_drops = lk.ring_drops[0] + lk.ring_drops[1];
	res->wire_drops = lk.wire_drops[0] + lk.wire_drops[1];
	res->ring_max = lk.ring_max[0] > lk.ring_max[1] ? lk.ring_max[0] : lk.ring_max[1];
	for (unsigned q = 0; q < nqp; q++) {
		res->retransmits += a[q].qp->x->cnt.retransmits;
		res->timeouts += a[q].qp->x->cnt.timeouts;
		res->probes += a[q].qp->x->cnt.probes;
	}
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ)
		CHECK(!memcmp(p.ma.buf, p.mb.buf, msg));
	/* everything acknowledged: nothing counts as in flight (XP_DEV_INFL_MAX) */
	if (total == count * nqp)
		CHECK_EQ(p.s.n[0].dev.x->infl, 0);
	sim_wire = NULL;
	lk_free();
	pair_fini(&p);
}

static void lk_print(const char *what, const struct lk_result *r)
{
	fprintf(stderr, "  %-34s %7.0f Mb/s, %u done%s, ring drops %lu (max %u), wire drops %lu, "
		"retransmits %lu, timeouts %lu, probes %lu, cwnd max %u\n", what, r->mbps, r->done,
		r->bad >= 0 ? " (failed)" : "", (unsigned long)r->ring_drops, r->ring_max,
		(unsigned long)r->wire_drops, (unsigned long)r->retransmits,
		(unsigned long)r->timeouts, (unsigned long)r->probes, r->cwnd_max);
}

static void lk_default(void)
{
	memset(&lk, 0, sizeof(lk));
	lk.rng = lk_seed();
	lk.ring = 2048;
	lk.cost_ns = 600;            /* 1 KB frames: 1.7 GB/s while it runs */
}

/* the same receiver, off its core 4 ms in every 16 (another process has
 * it) */
static void lk_offcore(void)
{
	lk_default();
	lk.period_ns = 16000000;
	lk.off_ns = 4000000;
}

/* every message done, nothing lost at the ring, no retransmit timeout */
static void lk_check_clean(const struct lk_result *r, uint32_t done)
{
	CHECK_EQ(r->done, done);
	CHECK_EQ(r->ring_drops, 0);
	CHECK_EQ(r->timeouts, 0);
}

/* A receiving daemon that is descheduled 4 ms in every 16 (another
 * process has the core) behind a link its peer fills at 1.5 GB/s: before
 * issue 22 the requester's window (up to 4096 packets) overran the
 * receiver's 2048-frame RX ring and go-back-N resent every window; the
 * window is now bounded by what a receiver holds, and nothing is lost. One
 * QP, then four QPs sharing the ring. */
static int t_link_no_ring_loss(void)
{
	struct lk_result r;

	lk_offcore();
	fprintf(stderr, "  link %u Mb/s, ring %u, receiver %lu ns/frame, off %lu of every %lu us, "
		"seed 0x%lx\n", LK_MBPS, lk.ring, (unsigned long)lk.cost_ns,
		(unsigned long)lk.off_ns / 1000, (unsigned long)lk.period_ns / 1000,
		(unsigned long)lk_seed());
	lk_stream(IBV_WR_RDMA_WRITE, 65536, 64, 512, 1, &r);
	lk_print("WRITE 64 KB x 512, 1 QP", &r);
	lk_check_clean(&r, 512);
	lk_stream(IBV_WR_RDMA_WRITE, 65536, 64, 256, 4, &r);
	lk_print("WRITE 64 KB x 256, 4 QPs", &r);
	lk_check_clean(&r, 4 * 256);
	return 0;
}

/* Many QPs into one receiver (issue 22, "zero RX-ring loss with many
 * QPs"): each QP's window stays below the receiver's ring, but not their
 * sum: 16 QPs x 512 packets is four rings. The device bounds the packets
 * its QPs have in flight together (xp_infl, XP_DEV_INFL_MAX), so the
 * receiver, descheduled 4 ms in every 16, loses nothing at its ring and
 * no requester times out: 16 QPs each with 128 WRITEs of 64 KB
 * outstanding (ib_write_bw -q 16 -t 128), then 16 QPs each with 16 READs
 * (ib_read_bw -q 16 -o 16: the READ responses land on the requester's
 * ring, which the same bound protects). */
static int t_link_many_qps(void)
{
	struct lk_result r;

	lk_offcore();
	lk_stream(IBV_WR_RDMA_WRITE, 65536, 128, 64, 16, &r);
	lk_print("WRITE 64 KB x 64, 16 QPs x 128", &r);
	lk_check_clean(&r, 16 * 64);
	CHECK(r.ring_max <= XP_DEV_INFL_MAX + 64); /* + what was sent again */
	/* a QP held by the bound mid-message asked for its ACK: without
	 * AckReq on its last packet it waited for a probe (53 here) */
	CHECK(r.probes <= 8);
	lk_offcore();
	lk_stream(IBV_WR_RDMA_READ, 65536, 16, 64, 16, &r);
	lk_print("READ 64 KB x 64, 16 QPs x 16", &r);
	lk_check_clean(&r, 16 * 64);
	CHECK(r.ring_max <= XP_DEV_INFL_MAX + 16 * 64);
	return 0;
}

/* QPs that start while another already streams are not starved by the
 * device's bound (xp_infl_room): QP 0 streams 256 WRITEs of 64 KB, seven
 * more QPs start 2 ms later with as many, the receiver descheduled 4 ms
 * in 16; each late QP has at least half of its WRITEs done when QP 0 is
 * done. The bound alone does not share itself: each ACK frees room the QP
 * it acknowledges takes at once, and with the bound set to 64 (by hand)
 * the late QPs had 4 of 256 done; at 512 the per-QP windows keep the
 * bound from binding that hard (docs/transport.md, "Send window"). */
static int t_link_infl_fair(void)
{
	struct lk_result r;

	lk_offcore();
	lk.late_ns = 2000000;
	lk_stream(IBV_WR_RDMA_WRITE, 65536, 128, 256, 8, &r);
	lk_print("WRITE 64 KB x 256, 8 QPs, 7 late", &r);
	fprintf(stderr, "  the late QP had %u of 256 done when the first was done\n",
		r.min_at_first);
	CHECK_EQ(r.done, 8 * 256);
	CHECK_EQ(r.ring_drops, 0);
	CHECK(r.min_at_first != UINT32_MAX && r.min_at_first >= 256 / 2);
	return 0;
}

/* The device's count of packets in flight (xp_infl_sync) gives back what
 * a QP had out when it goes to ERR or RESET: a count kept would hold
 * every other QP of the device to one packet at a time for good. */
static bool drop_to_b(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	(void)s;
	(void)frame;
	(void)len;
	return to != 1;
}

static int t_link_infl_release(void)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct sim_qp a2, b2;
	struct pair p;

	REQUIRE(!pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 65536));
	REQUIRE(!sim_qp(&p.s.n[0], IBV_QPT_RC, 256, &a2, -1));
	REQUIRE(!sim_qp(&p.s.n[1], IBV_QPT_RC, 256, &b2, -1));
	REQUIRE(!sim_connect(&a2, &b2, IBV_MTU_1024));
	REQUIRE(!sim_connect(&b2, &a2, IBV_MTU_1024));
	sim_hook = drop_to_b; /* nothing is acknowledged */
	xt_post(&p, 1, IBV_WR_RDMA_WRITE, 0, 32768, 0);
	{
		struct uroce_send_wqe w;
		struct uroce_sge s = xt_sge(&p.ma, 32768, 32768);

		xt_wqe(&w, 2, IBV_WR_RDMA_WRITE, 1);
		w.rdma.remote_addr = (uintptr_t)p.mb.buf + 32768;
		w.rdma.rkey = p.mb.rkey;
		sim_post_send(&a2, &w, &s, NULL);
	}
	sim_run(&p.s, 1000000ull); /* 1 ms: sent, not yet timed out */
	CHECK_EQ(p.a.qp->x->infl, 32);
	CHECK_EQ(a2.qp->x->infl, 32);
	CHECK_EQ(p.s.n[0].dev.x->infl, 64);
	CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(p.s.n[0].dev.x->infl, 32);
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(emu_qp_modify(p.a.qp, &at, IBV_QP_STATE), 0);
	CHECK_EQ(p.s.n[0].dev.x->infl, 32);
	CHECK_EQ(emu_qp_modify(a2.qp, &at, IBV_QP_STATE), 0); /* RTS -> RESET */
	CHECK_EQ(p.s.n[0].dev.x->infl, 0);
	sim_hook = NULL;
	pair_fini(&p);
	return 0;
}

/* Seeded loss on the wire at 0.1 %, 1 % and 5 % (each frame, both ways,
 * ACKs too) against the same stream without loss: every message
 * completes and the goodput stays within the stated factor of
 * (1 - loss) x the loss-free goodput; recovery takes round trips (a NAK
 * per gap, resent at once; a loss probe for what no NAK reports), and at
 * 0.1 % no retransmit timeout fires. The factors are what go-back-N
 * allows (RC responders drop everything behind a gap, as ConnectX and rxe
 * do: each loss costs about a window of resent packets and a round trip)
 * with a margin under what seed 0x11c4 gives: 0.88, 0.28 and 0.105
 * (before issue 22's recovery: 0.24 with a timeout, 0.023, 0.002). */
static const struct {
	uint32_t ppm;
	double factor;      /* goodput >= factor x (1 - loss) x loss-free */
	bool no_timeout;
} lk_losses[] = { { 1000, 0.75, true }, { 10000, 0.22, false }, { 50000, 0.08, false } };

static int t_link_loss(void)
{
	struct lk_result r0, r;
	char what[64];

	lk_default();
	fprintf(stderr, "  link %u Mb/s, ring %u, receiver %lu ns/frame, seed 0x%lx\n", LK_MBPS,
		lk.ring, (unsigned long)lk.cost_ns, (unsigned long)lk_seed());
	lk_stream(IBV_WR_RDMA_WRITE, 65536, 16, 512, 1, &r0);
	lk_print("WRITE 64 KB x 512, no loss", &r0);
	CHECK_EQ(r0.done, 512);
	CHECK_EQ(r0.retransmits, 0);
	for (unsigned i = 0; i < sizeof(lk_losses) / sizeof(lk_losses[0]); i++) {
		double p = lk_losses[i].ppm / 1e6;

		lk_default();
		lk.loss_ppm = lk_losses[i].ppm;
		lk_stream(IBV_WR_RDMA_WRITE, 65536, 16, 512, 1, &r);
		snprintf(what, sizeof(what), "WRITE 64 KB x 512, loss %.1f %%", p * 100);
		lk_print(what, &r);
		fprintf(stderr, "    goodput %.3f of (1 - loss) x loss-free (at least %.2f)\n",
			r.mbps / ((1 - p) * r0.mbps), lk_losses[i].factor);
		CHECK_EQ(r.done, 512);
		CHECK(r.wire_drops > 0);
		CHECK(r.mbps >= lk_losses[i].factor * (1 - p) * r0.mbps);
		if (lk_losses[i].no_timeout)
			CHECK_EQ(r.timeouts, 0);
	}
	return 0;
}

static const struct xt_test tests[] = {
	{ "drops_named", t_drops_named },
	{ "drops_pages", t_drops_pages },
	{ "link_no_ring_loss", t_link_no_ring_loss },
	{ "link_many_qps", t_link_many_qps },
	{ "link_infl_release", t_link_infl_release },
	{ "link_infl_fair", t_link_infl_fair },
	{ "link_loss", t_link_loss },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
