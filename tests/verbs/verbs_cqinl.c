/* SPDX-License-Identifier: MIT */
/* Small receive payloads in the CQ ring (abi.h uroce_cqe_inl,
 * docs/performance.md): SENDs of at most UROCE_CQE_INL_PAYLOAD bytes
 * reach the receive buffer when the application polls, larger ones (or
 * ones scattered over more than UROCE_CQE_INL_SEGS pieces) are placed by
 * the daemon before the completion exists. Both must give the same bytes
 * and the same ibv_wc.
 *
 * Which path a message took is seen without timing: a completion event
 * (ibv_get_cq_event) comes only once the CQE is in the ring, so between
 * the event and the poll an inlined payload is not in the buffer yet and a
 * placed one is. Sizes around the threshold, several SGEs, SRQ, UD's GRH,
 * one-at-a-time, batched and ibv_cq_ex polling, invalid keys. */
#include <arpa/inet.h>
#include <endian.h>

#include <uroce/abi.h>

#include "vt.h"

#define T UROCE_CQE_INL_PAYLOAD
#define FILL 0xee
#define SEND_OFF 32768 /* source area of the sends in the MR */
#define RBUF 4096      /* receive area: [0, RBUF) */

static unsigned seed;

struct ci {
	struct vt t;          /* context, PD, MR, GID (its own QPs unused) */
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *a, *b;
};

static struct ibv_qp *ci_qp(struct ci *c, enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = c->scq;
	a.recv_cq = c->rcq;
	a.srq = srq;
	a.qp_type = type;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = srq ? 0 : 64;
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = srq ? 0 : 6;
	a.cap.max_inline_data = 64;
	qp = ibv_create_qp(c->t.pd, &a);
	REQUIRE(qp);
	vt_qp_start(qp, IBV_ACCESS_REMOTE_WRITE, 1);
	return qp;
}

static void ci_init(struct ci *c, enum ibv_qp_type type, struct ibv_srq **srq, int cqe)
{
	const char *s = getenv("VT_SEED");

	if (!seed) {
		seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
		printf("seed %u (VT_SEED to repeat)\n", seed);
		srand(seed);
	}
	memset(c, 0, sizeof(*c));
	vt_init(&c->t, NULL);
	c->ch = ibv_create_comp_channel(c->t.ctx);
	REQUIRE(c->ch);
	c->scq = ibv_create_cq(c->t.ctx, 64, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->t.ctx, cqe ? cqe : 128, (void *)0x7c, c->ch, 0);
	REQUIRE(c->scq && c->rcq);
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 6 } };

		*srq = ibv_create_srq(c->t.pd, &sa);
		REQUIRE(*srq);
	}
	c->a = ci_qp(c, type, NULL);
	c->b = ci_qp(c, type, srq ? *srq : NULL);
	if (type != IBV_QPT_UD)
		vt_connect(&c->t, c->a, c->b);
}

static void ci_fini(struct ci *c, struct ibv_srq *srq)
{
	REQUIRE(!ibv_destroy_qp(c->a) && !ibv_destroy_qp(c->b));
	if (srq)
		REQUIRE(!ibv_destroy_srq(srq));
	REQUIRE(!ibv_destroy_cq(c->scq) && !ibv_destroy_cq(c->rcq));
	REQUIRE(!ibv_destroy_comp_channel(c->ch));
	vt_fini(&c->t);
}

/* Receive layout: nsge pieces, the first nsge-1 of `small` bytes, the last
 * of 160, with 16-byte gaps between them (which must stay FILL). */
struct layout {
	struct ibv_sge sge[6];
	int nsge;
	size_t base;
};

static void layout(struct ci *c, struct layout *l, size_t base, int nsge, uint32_t small)
{
	size_t off = base;

	l->nsge = nsge;
	l->base = base;
	for (int i = 0; i < nsge; i++) {
		uint32_t len = i == nsge - 1 ? 160 : small;

		l->sge[i].addr = (uintptr_t)c->t.buf + off;
		l->sge[i].length = len;
		l->sge[i].lkey = c->t.mr->lkey;
		off += len + 16;
	}
	REQUIRE(off <= RBUF * 4);
	memset(c->t.buf + base, FILL, off - base);
}

static size_t layout_end(const struct layout *l, const struct ci *c)
{
	const struct ibv_sge *s = &l->sge[l->nsge - 1];

	return (size_t)(s->addr - (uintptr_t)c->t.buf) + s->length + 16;
}

/* pieces a message of len bytes from byte 0 occupies */
static int pieces(const struct layout *l, uint32_t len)
{
	int n = 0;

	for (int i = 0; i < l->nsge && len; i++) {
		uint32_t take = l->sge[i].length < len ? l->sge[i].length : len;

		if (take) {
			n++;
			len -= take;
		}
	}
	return n;
}

/* the bytes the receive area must hold: want (len bytes) scattered, the
 * rest FILL. true when it does. */
static bool scattered(const struct ci *c, const struct layout *l, const uint8_t *want,
		      uint32_t len)
{
	uint32_t done = 0;
	const uint8_t *p = c->t.buf + l->base;
	const uint8_t *end = c->t.buf + layout_end(l, c);

	for (int i = 0; i < l->nsge; i++) {
		const uint8_t *s = (const uint8_t *)(uintptr_t)l->sge[i].addr;

		for (; p < s; p++)  /* gap */
			if (*p != FILL)
				return false;
		for (uint32_t k = 0; k < l->sge[i].length; k++, p++) {
			uint8_t w = done < len ? want[done++] : FILL;

			if (*p != w)
				return false;
		}
	}
	for (; p < end; p++)
		if (*p != FILL)
			return false;
	return done == len;
}

static bool untouched(const struct ci *c, const struct layout *l)
{
	for (size_t i = l->base; i < layout_end(l, c); i++)
		if (c->t.buf[i] != FILL)
			return false;
	return true;
}

static void post_recv_l(struct ci *c, struct ibv_srq *srq, struct layout *l, uint64_t wr_id)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = l->sge, .num_sge = l->nsge }, *bad;

	if (srq)
		REQUIRE(!ibv_post_srq_recv(srq, &wr, &bad));
	else
		REQUIRE(!ibv_post_recv(c->b, &wr, &bad));
}

/* send len random bytes (returned in data) from SEND_OFF */
static void send_msg(struct ci *c, struct ibv_ah *ah, uint32_t len, bool imm, uint32_t immv,
		     uint64_t wr_id, uint8_t *data)
{
	struct ibv_sge sge = { (uintptr_t)c->t.buf + SEND_OFF, len, c->t.mr->lkey };
	struct ibv_send_wr wr, *bad;

	for (uint32_t i = 0; i < len; i++)
		data[i] = (uint8_t)rand();
	memcpy(c->t.buf + SEND_OFF, data, len);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htonl(immv);
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = c->b->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
	}
	REQUIRE(!ibv_post_send(c->a, &wr, &bad));
}

static void wait_event(struct ci *c)
{
	struct ibv_cq *cq;
	void *ctx;

	vt_get_event(c->ch, &cq, &ctx);
	REQUIRE(cq == c->rcq && ctx == (void *)0x7c);
	ibv_ack_cq_events(cq, 1);
}

static void check_wc(const struct ci *c, const struct ibv_wc *wc, uint64_t wr_id,
		     uint32_t byte_len, bool imm, uint32_t immv, bool ud)
{
	unsigned want_flags = (imm ? IBV_WC_WITH_IMM : 0) | (ud ? IBV_WC_GRH : 0);

	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != wr_id || wc->opcode != IBV_WC_RECV ||
	    wc->byte_len != byte_len || wc->wc_flags != want_flags ||
	    (imm && wc->imm_data != htonl(immv)) || wc->qp_num != c->b->qp_num ||
	    wc->src_qp != c->a->qp_num) {
		fprintf(stderr, "wc: status %d wr_id %llu (want %llu) opcode %d byte_len %u "
			"(want %u) flags %#x (want %#x) imm %#x qp %u src %u\n", wc->status,
			(unsigned long long)wc->wr_id, (unsigned long long)wr_id, wc->opcode,
			wc->byte_len, byte_len, wc->wc_flags, want_flags, ntohl(wc->imm_data),
			wc->qp_num, wc->src_qp);
		exit(1);
	}
}

/* The GRH area of a UD receive, as the placed path writes it: the IPv4
 * header in bytes 20..39 (IPv4-mapped GID), else the IPv6 header. */
static bool grh_ok(const struct ci *c, const uint8_t *g)
{
	static const uint8_t v4pfx[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(c->t.gid.raw, v4pfx, sizeof(v4pfx)))
		return g[20] == 0x45 && !memcmp(g + 32, c->t.gid.raw + 12, 4) &&
		       !memcmp(g + 36, c->t.gid.raw + 12, 4);
	return (g[0] >> 4) == 6 && !memcmp(g + 8, c->t.gid.raw, 16) &&
	       !memcmp(g + 24, c->t.gid.raw, 16);
}

static const uint32_t sizes[] = { 0, 1, T - 1, T, T + 1 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* One message at a time: event, path check, poll, exact wc and bytes. */
static void one_by_one(enum ibv_qp_type type, bool use_srq)
{
	struct ibv_srq *srq = NULL;
	struct ci c;
	bool ud = type == IBV_QPT_UD;
	struct ibv_ah *ah;
	uint64_t id = 1;
	unsigned inl = 0, placed = 0;

	ci_init(&c, type, use_srq ? &srq : NULL, 0);
	ah = ud ? vt_ah(&c.t) : NULL;
	/* nsge 1: one piece; 3 of 8 bytes: up to 3 pieces; 6 of 1 byte:
	 * more than UROCE_CQE_INL_SEGS pieces from 5 bytes on (placed) */
	static const struct { int nsge; uint32_t small; } lay[] = { { 1, 0 }, { 3, 8 }, { 6, 1 } };
	for (unsigned li = 0; li < 3; li++) {
		for (unsigned si = 0; si < NSIZES; si++) {
			for (int imm = 0; imm < 2; imm++) {
				struct layout l;
				struct ibv_wc wc;
				uint8_t data[256], want[256];
				uint32_t len = sizes[si], immv = 0x1000u + (uint32_t)id;
				uint32_t blen = len + (ud ? 40 : 0);
				int nsge = lay[li].nsge;

				/* UD: the GRH area needs 40 bytes; the first SGE of
				 * the 8-byte layout takes part of it */
				layout(&c, &l, 0, nsge, lay[li].small ? lay[li].small : 160);
				REQUIRE(!ibv_req_notify_cq(c.rcq, 0));
				post_recv_l(&c, srq, &l, id);
				send_msg(&c, ah, len, imm, immv, id, data);
				wait_event(&c);
				bool expect_inl = len <= T && pieces(&l, blen) <= UROCE_CQE_INL_SEGS &&
						  blen > 0;
				if (expect_inl) {
					REQUIRE(untouched(&c, &l));
					inl++;
				} else if (blen) {
					/* placed before the completion existed */
					REQUIRE(!untouched(&c, &l));
					placed++;
				}
				REQUIRE(ibv_poll_cq(c.rcq, 1, &wc) == 1);
				check_wc(&c, &wc, id, blen, imm, immv, ud);
				if (ud) {
					uint8_t g[40];
					uint32_t k = 0;

					/* the GRH area is the first 40 bytes of the SGE list */
					for (int i = 0; i < l.nsge && k < 40; i++)
						for (uint32_t j = 0; j < l.sge[i].length && k < 40; j++)
							g[k++] = ((uint8_t *)(uintptr_t)l.sge[i].addr)[j];
					REQUIRE(grh_ok(&c, g));
					memcpy(want, g, 40);
					memcpy(want + 40, data, len);
					REQUIRE(scattered(&c, &l, want, blen));
				} else {
					REQUIRE(scattered(&c, &l, data, len));
				}
				REQUIRE(ibv_poll_cq(c.rcq, 1, &wc) == 0);
				vt_poll_n(c.scq, 1, &wc);
				REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == id);
				id++;
			}
		}
	}
	printf("%u inlined, %u placed\n", inl, placed);
	REQUIRE(inl >= 10 && placed >= 10);
	if (ah)
		REQUIRE(!ibv_destroy_ah(ah));
	ci_fini(&c, srq);
}

static void rc_sizes(void) { one_by_one(IBV_QPT_RC, false); }
static void uc_sizes(void) { one_by_one(IBV_QPT_UC, false); }
static void ud_sizes(void) { one_by_one(IBV_QPT_UD, false); }
static void srq_sizes(void) { one_by_one(IBV_QPT_RC, true); }

/* Many messages in flight, mixed sizes, polled in batches of varying
 * size (fewer than available, more than available): every completion's
 * bytes are in place exactly when it is returned, in order. */
#define NB 40
static void batch_common(bool ex)
{
	struct ci c;
	struct layout l[NB];
	uint8_t data[NB][256];
	uint32_t len[NB];
	struct ibv_cq_ex *cx = NULL;
	struct ibv_cq *rcq;
	int got = 0;

	ci_init(&c, IBV_QPT_RC, NULL, 0);
	rcq = c.rcq;
	if (ex) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 64,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
		};

		/* b receives into the ex CQ */
		cx = ibv_create_cq_ex(c.t.ctx, &ca);
		REQUIRE(cx);
		rcq = ibv_cq_ex_to_cq(cx);
		REQUIRE(!ibv_destroy_qp(c.a) && !ibv_destroy_qp(c.b));
		REQUIRE(!ibv_destroy_cq(c.rcq));
		c.rcq = rcq;
		c.a = ci_qp(&c, IBV_QPT_RC, NULL);
		c.b = ci_qp(&c, IBV_QPT_RC, NULL);
		vt_connect(&c.t, c.a, c.b);
	}
	for (int i = 0; i < NB; i++) {
		len[i] = sizes[(unsigned)rand() % NSIZES];
		layout(&c, &l[i], (size_t)i * 320, 1 + (i % 3), 8);
		post_recv_l(&c, NULL, &l[i], 100 + (uint64_t)i);
	}
	for (int i = 0; i < NB; i++) {
		send_msg(&c, NULL, len[i], i & 1, (uint32_t)i, (uint64_t)i, data[i]);
		/* the send source is reused: wait for each send */
		struct ibv_wc w;
		vt_poll_n(c.scq, 1, &w);
		REQUIRE(w.status == IBV_WC_SUCCESS);
	}
	double end = vt_now() + VT_WAIT_S;
	int step = 0;

	while (got < NB) {
		REQUIRE(vt_now() < end);
		if (!ex) {
			struct ibv_wc wc[8];
			int ask = 1 + (step++ % 8);
			int n = ibv_poll_cq(rcq, ask, wc);

			REQUIRE(n >= 0 && n <= ask);
			for (int k = 0; k < n; k++, got++) {
				check_wc(&c, &wc[k], 100 + (uint64_t)got, len[got], got & 1,
					 (uint32_t)got, false);
				REQUIRE(scattered(&c, &l[got], data[got], len[got]));
			}
			/* the next one's bytes are not there before it is polled
			 * when it is inlined */
			if (got < NB && len[got] && len[got] <= T &&
			    pieces(&l[got], len[got]) <= UROCE_CQE_INL_SEGS)
				REQUIRE(untouched(&c, &l[got]));
			continue;
		}
		struct ibv_poll_cq_attr pa = { 0 };
		int r = ibv_start_poll(cx, &pa);

		if (r == ENOENT)
			continue;
		REQUIRE(r == 0);
		do {
			REQUIRE(got < NB);
			REQUIRE(cx->status == IBV_WC_SUCCESS && cx->wr_id == 100 + (uint64_t)got);
			REQUIRE(ibv_wc_read_opcode(cx) == IBV_WC_RECV);
			REQUIRE(ibv_wc_read_byte_len(cx) == len[got]);
			REQUIRE(ibv_wc_read_wc_flags(cx) == ((got & 1) ? IBV_WC_WITH_IMM : 0u));
			if (got & 1)
				REQUIRE(ibv_wc_read_imm_data(cx) == htonl((uint32_t)got));
			REQUIRE(ibv_wc_read_qp_num(cx) == c.b->qp_num);
			REQUIRE(ibv_wc_read_src_qp(cx) == c.a->qp_num);
			REQUIRE(scattered(&c, &l[got], data[got], len[got]));
			got++;
		} while ((r = ibv_next_poll(cx)) == 0);
		REQUIRE(r == ENOENT);
		ibv_end_poll(cx);
	}
	{
		struct ibv_wc w;
		REQUIRE(ibv_poll_cq(rcq, 1, &w) == 0);
	}
	if (ex) {
		REQUIRE(!ibv_destroy_qp(c.a) && !ibv_destroy_qp(c.b));
		c.a = c.b = NULL;
		REQUIRE(!ibv_destroy_cq(rcq));
		REQUIRE(!ibv_destroy_cq(c.scq));
		REQUIRE(!ibv_destroy_comp_channel(c.ch));
		vt_fini(&c.t);
		return;
	}
	ci_fini(&c, NULL);
}

static void batch(void) { batch_common(false); }
static void batch_ex(void) { batch_common(true); }

/* A receive whose key is wrong, or whose MR does not allow local writes,
 * completes in error as before (the daemon checks before it decides to
 * inline), and nothing is written. */
static void bad_lkey(void)
{
	for (int k = 0; k < 2; k++) {
		struct ci c;
		struct layout l;
		struct ibv_wc wc;
		uint8_t data[16];
		struct ibv_mr *ro = NULL;

		ci_init(&c, IBV_QPT_RC, NULL, 0);
		layout(&c, &l, 0, 1, 0);
		if (k == 0) {
			l.sge[0].lkey = c.t.mr->lkey ^ 0x5a5a00;
		} else {
			/* same memory, registered read-only */
			ro = ibv_reg_mr(c.t.pd, c.t.buf, RBUF, 0);
			REQUIRE(ro);
			l.sge[0].lkey = ro->lkey;
		}
		post_recv_l(&c, NULL, &l, 7);
		send_msg(&c, NULL, 8, false, 0, 1, data);
		vt_poll_n(c.rcq, 1, &wc);
		REQUIRE(wc.wr_id == 7 && wc.status == IBV_WC_LOC_PROT_ERR);
		REQUIRE(untouched(&c, &l));
		if (ro)
			REQUIRE(!ibv_dereg_mr(ro));
		ci_fini(&c, NULL);
	}
}

/* More small completions than the CQ holds: the overrun is reported
 * (ibv_poll_cq < 0) as before, and the ring's payloads never leak into
 * buffers of completions that are not returned. */
static void overrun(void)
{
	struct ci c;
	struct layout l[8];
	uint8_t data[16];
	int r = 0;

	ci_init(&c, IBV_QPT_RC, NULL, 4);
	for (int i = 0; i < 8; i++) {
		layout(&c, &l[i], (size_t)i * 256, 1, 0);
		post_recv_l(&c, NULL, &l[i], (uint64_t)i);
	}
	for (int i = 0; i < 8; i++)
		send_msg(&c, NULL, 8, false, 0, (uint64_t)i, data);
	double end = vt_now() + VT_WAIT_S;
	struct ibv_wc wc[8];
	/* n = 0 reads nothing: wait for the error alone */
	while ((r = ibv_poll_cq(c.rcq, 0, wc)) == 0 && vt_now() < end)
		usleep(1000);
	REQUIRE(r < 0);
	REQUIRE(ibv_poll_cq(c.rcq, 8, wc) < 0);
	for (int i = 0; i < 8; i++)
		REQUIRE(untouched(&c, &l[i]));
	REQUIRE(!ibv_destroy_qp(c.a) && !ibv_destroy_qp(c.b));
	c.a = c.b = NULL;
	REQUIRE(!ibv_destroy_cq(c.scq) && !ibv_destroy_cq(c.rcq));
	REQUIRE(!ibv_destroy_comp_channel(c.ch));
	vt_fini(&c.t);
}

/* A list of small SENDs, only one of them solicited (first, middle, last):
 * they come back in one RX burst, whose CQEs are published together
 * (emu_cq_publish); a SOLICITED arm must fire whichever CQE of the burst
 * carried the bit, and every payload must still be right. */
static void solicited_burst(void)
{
	for (int which = 0; which < 3; which++) {
		enum { N = 8 };
		struct ci c;
		struct layout l[N];
		struct ibv_sge sge[N];
		struct ibv_send_wr wr[N], *bad;
		uint8_t data[N][T];
		struct ibv_wc wc[N];
		int sol = which == 0 ? 0 : which == 1 ? N / 2 : N - 1;

		ci_init(&c, IBV_QPT_RC, NULL, 0);
		for (int i = 0; i < N; i++) {
			layout(&c, &l[i], (size_t)i * 256, 1, 0);
			post_recv_l(&c, NULL, &l[i], (uint64_t)i);
		}
		REQUIRE(!ibv_req_notify_cq(c.rcq, 1));
		memset(wr, 0, sizeof(wr));
		for (int i = 0; i < N; i++) {
			for (int k = 0; k < T; k++)
				data[i][k] = (uint8_t)rand();
			memcpy(c.t.buf + SEND_OFF + (size_t)i * T, data[i], T);
			sge[i] = (struct ibv_sge){ (uintptr_t)c.t.buf + SEND_OFF + (size_t)i * T, T,
						   c.t.mr->lkey };
			wr[i].wr_id = (uint64_t)i;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].opcode = IBV_WR_SEND;
			wr[i].send_flags = IBV_SEND_SIGNALED | (i == sol ? IBV_SEND_SOLICITED : 0);
			wr[i].next = i + 1 < N ? &wr[i + 1] : NULL;
		}
		REQUIRE(!ibv_post_send(c.a, wr, &bad));
		wait_event(&c);
		vt_poll_n(c.rcq, N, wc);
		for (int i = 0; i < N; i++) {
			check_wc(&c, &wc[i], (uint64_t)i, T, false, 0, false);
			REQUIRE(scattered(&c, &l[i], data[i], T));
		}
		vt_poll_n(c.scq, N, wc);
		ci_fini(&c, NULL);
	}
}

/* Traffic between two devices of one daemon (VT_DEV_A, VT_DEV_B; default
 * uroce0, uroce1: a link:NAME pair), both directions, sizes from the
 * inlined to the multi-packet: the ICRC test (icrc_skip.py) runs it with
 * and without captures and reads the counters and the capture. */
struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
	int gid_idx;
};

static void end_open(struct end *e, const char *name)
{
	struct ibv_device **l;
	int n;

	memset(e, 0, sizeof(*e));
	l = ibv_get_device_list(&n);
	REQUIRE(l);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			e->ctx = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!e->ctx) {
		fprintf(stderr, "no device %s\n", name);
		exit(1);
	}
	e->gid_idx = vt_find_gid(e->ctx, &e->gid);
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = aligned_alloc(4096, VT_BUF);
	REQUIRE(e->pd && e->buf);
	memset(e->buf, 0, VT_BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, VT_BUF, IBV_ACCESS_LOCAL_WRITE);
	e->cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	REQUIRE(e->mr && e->cq);
	struct ibv_qp_init_attr a = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 } };
	e->qp = ibv_create_qp(e->pd, &a);
	REQUIRE(e->qp);
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	REQUIRE(!ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS));
}

static void end_connect(struct end *e, const struct end *peer)
{
	struct ibv_qp_attr m;

	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	m.path_mtu = IBV_MTU_1024;
	m.dest_qp_num = peer->qp->qp_num;
	m.rq_psn = 1;
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 1;
	m.ah_attr.is_global = 1;
	m.ah_attr.grh.dgid = peer->gid;
	m.ah_attr.grh.sgid_index = (uint8_t)e->gid_idx;
	m.ah_attr.grh.hop_limit = 64;
	m.ah_attr.port_num = 1;
	REQUIRE(!ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER));
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTS;
	m.sq_psn = 1;
	m.timeout = 12;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	REQUIRE(!ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

static void end_close(struct end *e)
{
	REQUIRE(!ibv_destroy_qp(e->qp) && !ibv_destroy_cq(e->cq) && !ibv_dereg_mr(e->mr) &&
	      !ibv_dealloc_pd(e->pd) && !ibv_close_device(e->ctx));
	free(e->buf);
}

static void two_dev(void)
{
	const char *na = getenv("VT_DEV_A"), *nb = getenv("VT_DEV_B");
	static const uint32_t len[] = { 0, 8, T, T + 1, 3000 };
	struct end e[2];

	srand(1);
	end_open(&e[0], na ? na : "uroce0");
	end_open(&e[1], nb ? nb : "uroce1");
	end_connect(&e[0], &e[1]);
	end_connect(&e[1], &e[0]);
	for (unsigned r = 0; r < 10; r++) {
		for (int dir = 0; dir < 2; dir++) {
			struct end *s = &e[dir], *d = &e[1 - dir];
			uint32_t l = len[r % 5];
			struct ibv_sge rs = { (uintptr_t)d->buf, 4096, d->mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = r, .sg_list = &rs, .num_sge = 1 }, *rb;
			struct ibv_sge ss = { (uintptr_t)s->buf + 8192, l, s->mr->lkey };
			struct ibv_send_wr sw = { .wr_id = r, .sg_list = &ss, .num_sge = l ? 1 : 0,
				.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sb;
			struct ibv_wc wc;

			for (uint32_t i = 0; i < l; i++)
				s->buf[8192 + i] = (uint8_t)rand();
			REQUIRE(!ibv_post_recv(d->qp, &rw, &rb));
			REQUIRE(!ibv_post_send(s->qp, &sw, &sb));
			vt_poll_n(d->cq, 1, &wc);
			REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
			      wc.byte_len == l && !memcmp(d->buf, s->buf + 8192, l));
			vt_poll_n(s->cq, 1, &wc);
			REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND);
		}
	}
	end_close(&e[0]);
	end_close(&e[1]);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "rc_sizes", rc_sizes },
		{ "uc_sizes", uc_sizes },
		{ "ud_sizes", ud_sizes },
		{ "srq_sizes", srq_sizes },
		{ "batch", batch },
		{ "batch_ex", batch_ex },
		{ "bad_lkey", bad_lkey },
		{ "overrun", overrun },
		{ "two_dev", two_dev },
		{ "solicited_burst", solicited_burst },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
