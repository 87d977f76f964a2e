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
	/* the port: the link's and 12 totals; each QP: 5 + the reasons */
	CHECK_EQ(port, EMU_XDROP_NUM + 12);
	CHECK_EQ(total, port + 40 * (5 + EMU_XDROP_NUM));
	CHECK(pages > 1);
	sim_fini(&s);
	return 0;
}

static const struct xt_test tests[] = {
	{ "drops_named", t_drops_named },
	{ "drops_pages", t_drops_pages },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
