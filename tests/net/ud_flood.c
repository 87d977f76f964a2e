/* SPDX-License-Identifier: MIT */
/* A UD flood with every datagram accounted (issue 22, tests/net/udload.py):
 * a UD QP on device SRC sends N datagrams of SIZE bytes as fast as its
 * send queue takes them to a UD QP on device DST, which has RQ receives
 * posted once (never reposted). A real HCA delivers min(N, RQ) of them
 * and loses the rest for want of a posted receive, nothing else; so must
 * uroce. Every datagram carries its sequence number and a pattern derived
 * from it and the seed: each delivered one is checked byte for byte and
 * seen at most once.
 *
 *   ud_flood SRC DST GIDX N RQ SIZE SEED [SQ]
 *
 * SQ (128 by default) sends are kept posted: a deep send queue lets the
 * daemon put that many datagrams on the wire (or its self ring) at once.
 * Once every send has completed, the receiver is polled until a line comes
 * on stdin: the harness says when the receiving daemon has accounted for
 * all N (received or counted lost), so no clock decides; then until the
 * posted receives are used up or stdin ends (the harness gave up).
 * Prints "sent N received R dup D bad B" and exits 0 when the datagrams
 * delivered are all intact and unique (the count is the harness's
 * verdict), 1 on a verbs error or a bad datagram. */
#include <endian.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QKEY 0x11110022u
#define GRH 40

static unsigned sq_depth = 128; /* the send queue: argv[8] */

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static uint8_t pat(uint64_t seed, uint32_t seq, uint32_t i)
{
	uint64_t x = seed ^ ((uint64_t)seq << 32) ^ i;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint8_t)x;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return c;
}

static int setup(struct end *e, const char *dev, size_t bytes, unsigned rq, unsigned cqe)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };

	e->ctx = open_dev(dev);
	if (!e->ctx) {
		fprintf(stderr, "no device %s\n", dev);
		return -1;
	}
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, (int)cqe, NULL, NULL, 0) : NULL;
	e->buf = calloc(1, bytes);
	e->mr = e->cq && e->buf ? ibv_reg_mr(e->pd, e->buf, bytes, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!e->mr) {
		perror("pd/cq/mr");
		return -1;
	}
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = ia.recv_cq = e->cq;
	ia.cap.max_send_wr = sq_depth;
	ia.cap.max_recv_wr = rq ? rq : 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp) {
		perror("ibv_create_qp");
		return -1;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return perror("INIT"), -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE))
		return perror("RTR"), -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return perror("RTS"), -1;
	return 0;
}

static void teardown(struct end *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);
	free(e->buf);
}

struct tally {
	unsigned got, dup, bad;
	uint8_t *seen;
};

/* the receive completions there are: each datagram checked */
static int drain_recv(struct end *r, unsigned size, unsigned n, uint64_t seed, struct tally *t,
		      struct ibv_wc *wc, int nwc)
{
	for (int i = 0; i < nwc; i++) {
		if (wc[i].opcode != IBV_WC_RECV)
			continue;
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "receive completion status %s\n",
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		const uint8_t *p = r->buf + wc[i].wr_id * (GRH + size) + GRH;
		uint32_t seq;

		memcpy(&seq, p, 4);
		seq = le32toh(seq);
		t->got++;
		if (wc[i].byte_len != GRH + size || seq >= n) {
			t->bad++;
			continue;
		}
		if (t->seen[seq]++) {
			t->dup++;
			continue;
		}
		for (uint32_t k = 4; k < size; k++)
			if (p[k] != pat(seed, seq, k)) {
				fprintf(stderr, "datagram %u: byte %u wrong\n", seq, k);
				t->bad++;
				break;
			}
	}
	return 0;
}

static int flood(struct end *s, struct end *r, struct ibv_ah *ah, unsigned n, unsigned size,
		 uint64_t seed, struct tally *t)
{
	unsigned posted = 0, done = 0;
	struct ibv_wc wc[64];

	while (done < n) {
		while (posted < n && posted - done < sq_depth) {
			uint8_t *p = s->buf + (size_t)posted * size;
			uint32_t seq = htole32(posted);
			struct ibv_sge sg = { (uintptr_t)p, size, s->mr->lkey };
			struct ibv_send_wr wr = { 0 }, *badw;

			memcpy(p, &seq, 4);
			for (uint32_t k = 4; k < size; k++)
				p[k] = pat(seed, posted, k);
			wr.wr_id = posted;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = r->qp->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
			if (ibv_post_send(s->qp, &wr, &badw)) {
				perror("ibv_post_send");
				return -1;
			}
			posted++;
		}
		int k = ibv_poll_cq(s->cq, 64, wc);
		if (k < 0)
			return -1;
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "send %lu: %s\n", (unsigned long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
			done++;
		}
		/* the receiver's completions meanwhile: its CQ is as deep as N */
		k = ibv_poll_cq(r->cq, 64, wc);
		if (k < 0 || drain_recv(r, size, n, seed, t, wc, k))
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 8 && argc != 9) {
		fprintf(stderr, "usage: ud_flood SRC DST GIDX N RQ SIZE SEED [SQ]\n");
		return 2;
	}
	int gidx = atoi(argv[3]);
	unsigned n = (unsigned)strtoul(argv[4], NULL, 0), rq = (unsigned)strtoul(argv[5], NULL, 0);
	unsigned size = (unsigned)strtoul(argv[6], NULL, 0);
	uint64_t seed = strtoull(argv[7], NULL, 0);
	if (argc == 9)
		sq_depth = (unsigned)strtoul(argv[8], NULL, 0);
	struct end s = { 0 }, r = { 0 };
	struct tally t = { 0 };
	union ibv_gid dgid;
	struct ibv_wc wc[64];
	char line[64];

	if (size < 4 || !n) {
		fprintf(stderr, "SIZE >= 4, N > 0\n");
		return 2;
	}
	t.seen = calloc(n, 1);
	if (!t.seen || setup(&s, argv[1], (size_t)n * size, 0, sq_depth + 1) ||
	    setup(&r, argv[2], (size_t)(rq ? rq : 1) * (GRH + size), rq, n + 1))
		return 1;
	for (unsigned i = 0; i < rq; i++) {
		struct ibv_sge sg = { (uintptr_t)(r.buf + (size_t)i * (GRH + size)), GRH + size,
				      r.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 }, *bad;

		if (ibv_post_recv(r.qp, &wr, &bad)) {
			perror("ibv_post_recv");
			return 1;
		}
	}
	if (ibv_query_gid(r.ctx, 1, gidx, &dgid)) {
		perror("ibv_query_gid");
		return 1;
	}
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	aa.grh.dgid = dgid;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 64;
	struct ibv_ah *ah = ibv_create_ah(s.pd, &aa);
	if (!ah) {
		perror("ibv_create_ah");
		return 1;
	}
	/* UD_FLOOD_GO set: everything is set up (both daemons asked all they
	 * will be asked before the end), and the flood waits for a line on
	 * stdin: the harness stops the receiving daemon meanwhile (udload.py
	 * stall cases) */
	if (getenv("UD_FLOOD_GO")) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, line, sizeof(line)) <= 0)
			return 1;
	}
	printf("flooding %u datagrams of %u B, %u receives posted\n", n, size, rq);
	fflush(stdout);
	if (flood(&s, &r, ah, n, size, seed, &t))
		return 1;
	printf("sent %u\n", n);
	fflush(stdout);
	/* until the harness says the receiving daemon accounted for all N:
	 * the QP stays until then (destroyed earlier, the datagrams still on
	 * their way would be dropped for want of it, drop.unknown-qp) */
	struct pollfd pf = { .fd = 0, .events = POLLIN };
	for (;;) {
		int k = ibv_poll_cq(r.cq, 64, wc);

		if (k < 0 || drain_recv(&r, size, n, seed, &t, wc, k))
			return 1;
		if (!k && poll(&pf, 1, 10) > 0)
			break;
	}
	/* the daemon counted every datagram in; the completions of those it
	 * delivered may still be on their way to the ring: until the posted
	 * receives are used up, or EOF (the harness's bound ran out) */
	if (read(0, line, sizeof(line)) > 0)
		while (t.got < (rq < n ? rq : n)) {
			int k = ibv_poll_cq(r.cq, 64, wc);

			if (k < 0 || drain_recv(&r, size, n, seed, &t, wc, k))
				return 1;
			if (!k && poll(&pf, 1, 10) > 0 && read(0, line, sizeof(line)) <= 0)
				break;
		}
	printf("sent %u received %u dup %u bad %u\n", n, t.got, t.dup, t.bad);
	ibv_destroy_ah(ah);
	teardown(&s);
	teardown(&r);
	free(t.seen);
	return t.dup || t.bad ? 1 : 0;
}
