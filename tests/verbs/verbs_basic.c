/* SPDX-License-Identifier: MIT */
/* Device, query and object calls of liburoce, extended CQ/QP interfaces,
 * SRQ, UD, and the daemon dying underneath. usage: verbs_basic CASE */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "vt.h"

static void device_query(void)
{
	struct ibv_context *ctx = vt_open();
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	__be16 pkey;
	int idx;

	REQUIRE(!ibv_query_device(ctx, &da));
	REQUIRE(da.vendor_id == 0x001ace && da.phys_port_cnt == 1);
	REQUIRE(da.max_qp > 0 && da.max_cqe > 0 && da.max_mr > 0);
	{
		/* what the device advertises, a context can create (rdma-core's
		 * test_cq creates a CQ of max_cqe: it failed with ENOMEM when
		 * CQE companion slots made that ring larger than a context's
		 * queue-memory limit) */
		struct ibv_cq *big = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);

		REQUIRE(big && big->cqe >= da.max_cqe);
		REQUIRE(!ibv_destroy_cq(big));
		REQUIRE(!ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0));
	}
	REQUIRE(!ibv_query_device_ex(ctx, NULL, &dx));
	REQUIRE(dx.orig_attr.vendor_id == da.vendor_id);
	REQUIRE(!ibv_query_port(ctx, 1, &pa));
	REQUIRE(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET);
	REQUIRE(pa.gid_tbl_len > 0 && pa.pkey_tbl_len >= 1);
	REQUIRE(ibv_query_port(ctx, 2, &pa) != 0);
	idx = vt_find_gid(ctx, &gid);
	REQUIRE(!ibv_query_gid_ex(ctx, 1, (uint32_t)idx, &ge, 0));
	REQUIRE(ge.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(&ge.gid, &gid, 16));
	{
		union ibv_gid g2;

		REQUIRE(!ibv_query_gid(ctx, 1, idx, &g2) && !memcmp(&g2, &gid, 16));
	}
	REQUIRE(!ibv_query_pkey(ctx, 1, 0, &pkey) && pkey == htons(0xffff));
	REQUIRE(ibv_get_pkey_index(ctx, 1, htons(0xffff)) == 0);
	REQUIRE(ctx->num_comp_vectors >= 1);
	/* libibverbs' inline wrappers call through these without checks */
	{
		struct verbs_context *v = verbs_get_ctx(ctx);
		void **ops = (void **)(void *)&ctx->ops;
		void **x;
		size_t k;

		REQUIRE(v && v->sz >= sizeof(*v));
		for (k = 0; k < sizeof(ctx->ops) / sizeof(void *); k++)
			REQUIRE(ops[k] != NULL);
		for (x = (void **)(void *)&v->query_port;
		     x < (void **)(void *)&v->priv; x++)
			REQUIRE(*x != NULL);
		for (x = (void **)(void *)&v->query_device_ex;
		     x <= (void **)(void *)&v->close_xrcd; x++)
			REQUIRE(*x != NULL);
	}
	REQUIRE(!ibv_close_device(ctx));
}

static void objects(void)
{
	struct vt t;
	struct ibv_mr *mr2;
	struct ibv_mw *mw;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc[8];
	uint8_t *b2 = aligned_alloc(4096, 8192);
	int i;

	vt_init(&t, NULL);
	REQUIRE(b2);
	/* the daemon writes it from outside this process: valgrind cannot
	 * see that, so it must start out defined */
	memset(b2, 0, 8192);
	/* MR with an optional access flag goes through ibv_reg_mr_iova2 */
	mr2 = ibv_reg_mr(t.pd, b2, 8192, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_RELAXED_ORDERING);
	REQUIRE(mr2 && mr2->addr == b2 && mr2->length == 8192 && mr2->pd == t.pd);
	REQUIRE(!ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	REQUIRE(!ibv_dereg_mr(mr2));
	/* ibv_reg_mr_iova: the peer addresses the region by its iova, also
	 * after an access-only rereg */
	mr2 = ibv_reg_mr_iova(t.pd, b2, 8192, 0x10000000, IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr2);
	REQUIRE(!ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ));
	memset(t.buf + 8192, 0x6b, 32);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 8192, 32,
			    IBV_SEND_SIGNALED, 0, 0x10000000 + 100, mr2->rkey, 57));
	vt_poll_n(t.scq, 1, wc);
	REQUIRE(wc[0].status == IBV_WC_SUCCESS && b2[100] == 0x6b && b2[131] == 0x6b);
	REQUIRE(!ibv_dereg_mr(mr2));
	free(b2);
	/* MW type 1: ibv_bind_mw posts a BIND_MW WQE; the window's new rkey
	 * then admits an RDMA WRITE into the bound range */
	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	{
		struct ibv_mr *bmr = ibv_reg_mr(t.pd, t.buf, VT_BUF,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_MW_BIND);
		struct ibv_mw_bind bind = {
			.wr_id = 55, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = bmr, .addr = (uintptr_t)t.buf + 4096,
				       .length = 4096,
				       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
		};
		uint32_t old = mw->rkey;

		REQUIRE(bmr);
		REQUIRE(!ibv_bind_mw(t.qa, mw, &bind));
		REQUIRE(mw->rkey != old);
		vt_poll_n(t.scq, 1, wc);
		REQUIRE(wc[0].wr_id == 55 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_BIND_MW);
		memset(t.buf + 8192, 0x61, 64);
		REQUIRE(!vt_post_send(t.qb, t.mr, IBV_WR_RDMA_WRITE, 8192, 64,
				    IBV_SEND_SIGNALED, 0, (uintptr_t)t.buf + 4096,
				    mw->rkey, 56));
		vt_poll_n(t.scq, 1, wc);
		REQUIRE(wc[0].status == IBV_WC_SUCCESS && t.buf[4096] == 0x61);
		REQUIRE(!ibv_dealloc_mw(mw));
		REQUIRE(!ibv_dereg_mr(bmr));
	}
	/* query QP */
	REQUIRE(!ibv_query_qp(t.qa, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi));
	REQUIRE(qa.qp_state == IBV_QPS_RTS && qi.qp_type == IBV_QPT_RC &&
	      qi.send_cq == t.scq && qi.cap.max_send_wr >= 32);
	/* bad WRs: too many SGEs, inline too big, bad opcode for UD */
	{
		struct ibv_sge sge[8];
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		for (i = 0; i < 8; i++) {
			sge[i].addr = (uintptr_t)t.buf;
			sge[i].length = 8;
			sge[i].lkey = t.mr->lkey;
		}
		wr.sg_list = sge;
		wr.num_sge = 8;
		wr.opcode = IBV_WR_SEND;
		REQUIRE(ibv_post_send(t.qa, &wr, &bad) == EINVAL && bad == &wr);
		wr.num_sge = 1;
		sge[0].length = 60000;
		wr.send_flags = IBV_SEND_INLINE;
		bad = NULL;
		REQUIRE(ibv_post_send(t.qa, &wr, &bad) == EINVAL && bad == &wr);
	}
	/* queue full: ENOMEM with *bad_wr at the first WR not posted */
	{
		struct ibv_qp *q = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 4, 4);
		struct ibv_qp_attr qa2;
		struct ibv_qp_init_attr qi2;
		struct ibv_recv_wr rw[80], *rbad = NULL;
		struct ibv_sge s = { (uintptr_t)t.buf, 8, t.mr->lkey };
		uint32_t cap;

		REQUIRE(!ibv_query_qp(q, &qa2, IBV_QP_CAP, &qi2));
		cap = qi2.cap.max_recv_wr;
		REQUIRE(cap >= 4 && cap < 80);
		memset(rw, 0, sizeof(rw));
		for (i = 0; i < 80; i++) {
			rw[i].sg_list = &s;
			rw[i].num_sge = 1;
			rw[i].next = i < 79 ? &rw[i + 1] : NULL;
		}
		REQUIRE(ibv_post_recv(q, rw, &rbad) == ENOMEM && rbad == &rw[cap]);
		REQUIRE(!ibv_destroy_qp(q));
	}
	/* a receive-only QP (max_send_wr = 0): posting a send fails cleanly */
	{
		struct ibv_qp *q = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 0, 4);
		struct ibv_sge s = { (uintptr_t)t.buf, 8, t.mr->lkey };
		struct ibv_send_wr sw = { .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_SEND }, *sbad = NULL;

		REQUIRE(ibv_post_send(q, &sw, &sbad) != 0 && sbad == &sw);
		REQUIRE(!ibv_destroy_qp(q));
	}
	/* CQ resize keeps unpolled completions */
	for (i = 0; i < 3; i++)
		vt_post_recv(t.qb, t.mr, 0, 64, (uint64_t)i);
	for (i = 0; i < 3; i++)
		REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 8,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
	vt_poll_n(t.scq, 3, wc);
	REQUIRE(!ibv_resize_cq(t.rcq, 200) && t.rcq->cqe >= 200);
	vt_poll_n(t.rcq, 3, wc);
	for (i = 0; i < 3; i++)
		REQUIRE(wc[i].wr_id == (uint64_t)i);
	vt_fini(&t);
}

static void cq_ex(void)
{
	struct vt t;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 32,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cx;
	struct ibv_qp *a, *b;
	int i, n = 0, r;

	vt_init(&t, NULL);
	cx = ibv_create_cq_ex(t.ctx, &ca);
	REQUIRE(cx);
	a = vt_qp(&t, IBV_QPT_RC, ibv_cq_ex_to_cq(cx), ibv_cq_ex_to_cq(cx),
		  NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_RC, ibv_cq_ex_to_cq(cx), ibv_cq_ex_to_cq(cx),
		  NULL, 16, 16);
	vt_connect(&t, a, b);
	for (i = 0; i < 4; i++)
		vt_post_recv(b, t.mr, 0, 64, 10 + (uint64_t)i);
	/* the CQ asked for timestamps (the daemon stamps only such CQs):
	 * CLOCK_MONOTONIC, between the posts and the poll, in ring order */
	uint64_t t0 = vt_mono_ns(), last_ts = 0;
	for (i = 0; i < 4; i++)
		REQUIRE(!vt_post_send(a, t.mr, IBV_WR_SEND_WITH_IMM, 8192, 32,
				    IBV_SEND_SIGNALED, htonl(7), 0, 0, (uint64_t)i));
	double end = vt_now() + VT_WAIT_S;

	while (n < 8) {
		REQUIRE(vt_now() < end);
		r = ibv_start_poll(cx, &pa);
		if (r == ENOENT)
			continue;
		REQUIRE(r == 0);
		do {
			uint64_t ts = ibv_wc_read_completion_ts(cx);

			REQUIRE(ts >= t0 && ts >= last_ts && ts <= vt_mono_ns());
			last_ts = ts;
			REQUIRE(cx->status == IBV_WC_SUCCESS);
			if (ibv_wc_read_opcode(cx) == IBV_WC_RECV) {
				REQUIRE(cx->wr_id >= 10 && ibv_wc_read_byte_len(cx) == 32);
				REQUIRE(ibv_wc_read_imm_data(cx) == htonl(7));
				REQUIRE(ibv_wc_read_qp_num(cx) == b->qp_num);
			} else {
				REQUIRE(ibv_wc_read_opcode(cx) == IBV_WC_SEND);
			}
			n++;
		} while ((r = ibv_next_poll(cx)) == 0);
		REQUIRE(r == ENOENT);
		ibv_end_poll(cx);
	}
	REQUIRE(ibv_start_poll(cx, &pa) == ENOENT);
	REQUIRE(!ibv_destroy_qp(a) && !ibv_destroy_qp(b));
	REQUIRE(!ibv_destroy_cq(ibv_cq_ex_to_cq(cx)));
	vt_fini(&t);
}

static void qp_ex(void)
{
	struct vt t;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_ex *x;
	struct ibv_qp *a;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	vt_qp_ex_attr(&t, &qa, IBV_QPT_RC, 16, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	qa.cap.max_inline_data = 32;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	x = vt_qp_ex_init(&t, &qa, IBV_ACCESS_REMOTE_WRITE, &a);
	/* reuse qb's peer: disconnect qa and connect a <-> qb */
	REQUIRE(!ibv_destroy_qp(t.qb));
	t.qb = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, a, t.qb);
	vt_post_recv(t.qb, t.mr, 0, 64, 77);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "hello", 5);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, t.mr->rkey, (uintptr_t)t.buf + 1000);
	ibv_wr_set_sge(x, t.mr->lkey, (uintptr_t)t.buf + 8192, 16);
	memset(t.buf + 8192, 0x42, 16);
	REQUIRE(!ibv_wr_complete(x));
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.wr_id == 77 && wc.byte_len == 5 && !memcmp(t.buf, "hello", 5));
	vt_poll_n(t.scq, 2, (struct ibv_wc[2]){ 0 });
	REQUIRE(t.buf[1000] == 0x42 && t.buf[1015] == 0x42);
	REQUIRE(!ibv_destroy_qp(a));
	vt_fini(&t);
}

static void srq(void)
{
	struct vt t;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr q;
	struct ibv_srq *s;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[4];
	int i;

	vt_init(&t, NULL);
	s = ibv_create_srq(t.pd, &sa);
	REQUIRE(s && sa.attr.max_wr >= 16);
	REQUIRE(!ibv_query_srq(s, &q) && q.max_wr >= 16);
	a = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, s, 16, 0);
	vt_connect(&t, a, b);
	for (i = 0; i < 4; i++) {
		struct ibv_sge sge = { (uintptr_t)t.buf + 1024 * (unsigned)i, 1024,
				       t.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 50 + (uint64_t)i,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		REQUIRE(!ibv_post_srq_recv(s, &wr, &bad));
	}
	for (i = 0; i < 4; i++)
		REQUIRE(!vt_post_send(a, t.mr, IBV_WR_SEND, 8192, 8,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
	vt_poll_n(t.rcq, 4, wc);
	for (i = 0; i < 4; i++)
		REQUIRE(wc[i].wr_id == 50 + (uint64_t)i && wc[i].qp_num == b->qp_num);
	vt_poll_n(t.scq, 4, wc);
	/* srq_limit: when the SRQ drops below it, one SRQ_LIMIT_REACHED */
	for (i = 0; i < 4; i++) {
		struct ibv_sge sge = { (uintptr_t)t.buf, 1024, t.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 60 + (uint64_t)i,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		REQUIRE(!ibv_post_srq_recv(s, &wr, &bad));
	}
	q.srq_limit = 2;
	REQUIRE(!ibv_modify_srq(s, &q, IBV_SRQ_LIMIT));
	REQUIRE(!ibv_query_srq(s, &q) && q.srq_limit == 2);
	for (i = 0; i < 3; i++)
		REQUIRE(!vt_post_send(a, t.mr, IBV_WR_SEND, 8192, 8,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
	vt_poll_n(t.rcq, 3, wc);
	vt_poll_n(t.scq, 3, wc);
	{
		struct ibv_async_event ev;

		REQUIRE(vt_readable(t.ctx->async_fd, VT_WAIT_S * 1000));
		REQUIRE(!ibv_get_async_event(t.ctx, &ev));
		REQUIRE(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
		      ev.element.srq == s);
		ibv_ack_async_event(&ev);
	}
	REQUIRE(!ibv_destroy_qp(a) && !ibv_destroy_qp(b));
	REQUIRE(!ibv_destroy_srq(s));
	vt_fini(&t);
}

static void ud(void)
{
	struct vt t;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah, *ah2;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	a = vt_qp(&t, IBV_QPT_UD, t.scq, t.rcq, NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_UD, t.scq, t.rcq, NULL, 16, 16);
	ah = vt_ah(&t);
	{
		union ibv_gid mg;

		memset(&mg, 0, sizeof(mg));
		mg.raw[0] = 0xff;
		mg.raw[1] = 0x0e;
		mg.raw[15] = 1;
		REQUIRE(!ibv_attach_mcast(b, &mg, 0));
		REQUIRE(!ibv_detach_mcast(b, &mg, 0));
		REQUIRE(ibv_attach_mcast(t.qa, &mg, 0) != 0);  /* RC: no */
	}
	vt_post_recv(b, t.mr, 0, 40 + 256, 9);
	memset(t.buf + 8192, 0x33, 100);
	sge.addr = (uintptr_t)t.buf + 8192;
	sge.length = 100;
	sge.lkey = t.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(!ibv_post_send(a, &wr, &bad));
	/* RDMA WRITE is not a UD opcode */
	wr.opcode = IBV_WR_RDMA_WRITE;
	REQUIRE(ibv_post_send(a, &wr, &bad) == EINVAL && bad == &wr);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == 140 &&
	      (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == a->qp_num &&
	      t.buf[40] == 0x33 && t.buf[139] == 0x33);
	/* the network header type, as ConnectX reports it for RoCE (UCX's
	 * ud_verbs depends on it): 2 = IPv4 (::ffff:a.b.c.d GID), 1 = IPv6 */
	{
		static const uint8_t v4pfx[12] = { [10] = 0xff, [11] = 0xff };
		bool v4 = !memcmp(t.gid.raw, v4pfx, sizeof(v4pfx));

		REQUIRE(wc.sl == (v4 ? 2 : 1));
	}
	ah2 = ibv_create_ah_from_wc(t.pd, &wc, (struct ibv_grh *)(void *)t.buf, 1);
	REQUIRE(ah2);
	REQUIRE(!ibv_destroy_ah(ah2));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(!ibv_destroy_ah(ah));
	REQUIRE(!ibv_destroy_qp(a) && !ibv_destroy_qp(b));
	vt_fini(&t);
}

/* A datagram posted right before ibv_destroy_qp leaves, as with a NIC
 * (whose doorbell beats a destroy command): libfabric's rxd posts its last
 * ACK and closes. Many rounds, so a destroy that overtakes the doorbell
 * scan is caught whichever order the daemon sees them in. */
static void ud_destroy_sends(void)
{
	struct vt t;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	b = vt_qp(&t, IBV_QPT_UD, t.scq, t.rcq, NULL, 16, 16);
	ah = vt_ah(&t);
	for (int i = 0; i < 100; i++) {
		a = vt_qp(&t, IBV_QPT_UD, t.scq, t.rcq, NULL, 16, 16);
		vt_post_recv(b, t.mr, 0, 40 + 64, (uint64_t)i);
		t.buf[8192] = (uint8_t)i;
		sge.addr = (uintptr_t)t.buf + 8192;
		sge.length = 1;
		sge.lkey = t.mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
		REQUIRE(!ibv_post_send(a, &wr, &bad));   /* unsignaled */
		REQUIRE(!ibv_destroy_qp(a));
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i &&
		      wc.byte_len == 41 && t.buf[40] == (uint8_t)i);
	}
	REQUIRE(!ibv_destroy_ah(ah));
	REQUIRE(!ibv_destroy_qp(b));
	vt_fini(&t);
}

/* The daemon dies: calls fail with errno, the async fd reports one
 * IBV_EVENT_DEVICE_FATAL, ibv_get_cq_event returns -1, never a hang. */
static void daemon_death(void)
{
	const char *p = getenv("UROCE_TEST_DAEMON_PID");
	struct vt_opts o = { .channel = true };
	struct ibv_async_event ev;
	struct ibv_device **l;
	struct ibv_cq *cq;
	void *cc;
	struct vt t;
	pid_t pid;
	int n, i;

	if (!p) {
		fprintf(stderr, "UROCE_TEST_DAEMON_PID not set\n");
		exit(VT_SKIP);
	}
	pid = (pid_t)atoi(p);
	vt_init(&t, &o);
	l = ibv_get_device_list(&n);
	REQUIRE(l);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	REQUIRE(!kill(pid, SIGKILL));
	REQUIRE(vt_readable(t.ctx->async_fd, VT_WAIT_S * 1000));
	REQUIRE(!ibv_get_async_event(t.ctx, &ev));
	REQUIRE(ev.event_type == IBV_EVENT_DEVICE_FATAL);
	ibv_ack_async_event(&ev);
	REQUIRE(ibv_get_async_event(t.ctx, &ev) == -1);
	REQUIRE(vt_readable(t.ch->fd, VT_WAIT_S * 1000));
	REQUIRE(ibv_get_cq_event(t.ch, &cq, &cc) == -1);
	/* busy-polling an empty CQ eventually reports the loss too */
	{
		struct ibv_wc wc;
		double end = vt_now() + VT_WAIT_S * 3;
		int r;

		while ((r = ibv_poll_cq(t.rcq, 1, &wc)) == 0)
			REQUIRE(vt_now() < end);
		REQUIRE(r < 0);
	}
	errno = 0;
	REQUIRE(!ibv_alloc_pd(t.ctx) && errno != 0);
	errno = 0;
	REQUIRE(!ibv_create_cq(t.ctx, 4, NULL, NULL, 0) && errno != 0);
	/* a device whose daemon is gone cannot be opened: a clear error */
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(l[i]), "uroce0"))
			continue;
		errno = 0;
		REQUIRE(!ibv_open_device(l[i]) && errno == ENODEV);
	}
	ibv_free_device_list(l);
	/* and is no longer listed */
	l = ibv_get_device_list(&n);
	REQUIRE(l);
	for (i = 0; i < n; i++)
		REQUIRE(strcmp(ibv_get_device_name(l[i]), "uroce0"));
	ibv_free_device_list(l);
	/* tearing down still works */
	vt_fini(&t);
}

/* ibv_modify_srq(IBV_SRQ_MAX_WR) grows a full SRQ: the WQEs already posted
 * survive the move to the bigger ring, in order, and the new room is
 * usable; shrinking below what is posted is refused. */
static void srq_grow(void)
{
	struct vt t;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr q;
	struct ibv_srq *s;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[16];
	const int total = 100;
	int i, posted = 0, done = 0;

	vt_init(&t, NULL);
	s = ibv_create_srq(t.pd, &sa);
	REQUIRE(s);
	a = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, s, 16, 0);
	vt_connect(&t, a, b);
	memset(t.buf, 0, 16384);
	for (;; posted++) {
		struct ibv_sge sge = { (uintptr_t)t.buf + 64 * (unsigned)posted, 64, t.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + (uint64_t)posted,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(s, &wr, &bad))
			break; /* full */
		REQUIRE(posted < 64);
	}
	REQUIRE(posted >= 16);
	q.max_wr = (uint32_t)posted - 1;
	REQUIRE(ibv_modify_srq(s, &q, IBV_SRQ_MAX_WR) == EINVAL);
	q.max_wr = (uint32_t)total;
	REQUIRE(!ibv_modify_srq(s, &q, IBV_SRQ_MAX_WR));
	REQUIRE(!ibv_query_srq(s, &q) && q.max_wr >= (uint32_t)total);
	for (; posted < total; posted++) {
		struct ibv_sge sge = { (uintptr_t)t.buf + 64 * (unsigned)posted, 64, t.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + (uint64_t)posted,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		REQUIRE(!ibv_post_srq_recv(s, &wr, &bad));
	}
	/* total messages, each 8 bytes naming its index */
	while (done < total) {
		int n = total - done < 8 ? total - done : 8;

		for (i = 0; i < n; i++) {
			uint64_t v = 0xabc00000ull + (uint64_t)(done + i);

			memcpy(t.buf + 32768 + 64 * (done + i), &v, 8);
			REQUIRE(!vt_post_send(a, t.mr, IBV_WR_SEND, 32768 + 64 * (size_t)(done + i), 8,
					    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)(done + i)));
		}
		vt_poll_n(t.scq, n, wc);
		vt_poll_n(t.rcq, n, wc);
		for (i = 0; i < n; i++) {
			uint64_t v;

			REQUIRE(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == 8);
			REQUIRE(wc[i].wr_id == 1000 + (uint64_t)(done + i));
			memcpy(&v, t.buf + 64 * (done + i), 8);
			REQUIRE(v == 0xabc00000ull + (uint64_t)(done + i));
		}
		done += n;
	}
	REQUIRE(!ibv_destroy_qp(a) && !ibv_destroy_qp(b));
	REQUIRE(!ibv_destroy_srq(s));
	vt_fini(&t);
}

/* SIGKILL while one thread sleeps in ibv_get_cq_event and another spins on
 * an empty CQ: both return an error. The spinner must notice within a
 * bounded number of empty polls (the shim checks the control socket about
 * once per millisecond of empty polling); the old check ran once per 2^26
 * empty polls, seconds of spinning. */
struct kill_waiter {
	struct ibv_comp_channel *ch;
	int rc;
	int err;
};

static void *kill_waiter_fn(void *arg)
{
	struct kill_waiter *w = arg;
	struct ibv_cq *cq;
	void *cc;

	w->rc = ibv_get_cq_event(w->ch, &cq, &cc);
	w->err = errno;
	return NULL;
}

static void daemon_kill_poll(void)
{
	const char *p = getenv("UROCE_TEST_DAEMON_PID");
	struct vt_opts o = { .channel = true };
	struct kill_waiter w = { .rc = 1 };
	struct ibv_wc wc;
	pthread_t th;
	uint64_t polls = 0;
	double t0, end;
	int r;
	struct vt t;

	if (!p) {
		fprintf(stderr, "UROCE_TEST_DAEMON_PID not set\n");
		exit(VT_SKIP);
	}
	vt_init(&t, &o);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	w.ch = t.ch;
	REQUIRE(!pthread_create(&th, NULL, kill_waiter_fn, &w));
	/* spin a while with the daemon alive: empty, no error */
	for (int i = 0; i < 100000; i++)
		REQUIRE(ibv_poll_cq(t.scq, 1, &wc) == 0);
	REQUIRE(!kill((pid_t)atoi(p), SIGKILL));
	t0 = vt_now();
	end = t0 + VT_WAIT_S;
	while ((r = ibv_poll_cq(t.scq, 1, &wc)) == 0) {
		polls++;
		REQUIRE(vt_now() < end || polls < 1000); /* a hang bound, not a verdict */
	}
	printf("busy poll saw the daemon gone after %llu empty polls, %.3f ms\n",
	       (unsigned long long)polls, (vt_now() - t0) * 1e3);
	REQUIRE(r < 0);
	REQUIRE(polls < (1u << 24));
	REQUIRE(!pthread_join(th, NULL));
	REQUIRE(w.rc == -1);
	vt_fini(&t);
}

/* An orderly shutdown (SIGTERM): rings are marked dead, so an empty CQ
 * polls negative instead of 0 forever, and the async fd reports the end. */
static void daemon_stop(void)
{
	const char *p = getenv("UROCE_TEST_DAEMON_PID");
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct vt t;
	int r;

	if (!p)
		exit(VT_SKIP);
	vt_init(&t, NULL);
	REQUIRE(ibv_poll_cq(t.rcq, 1, &wc) == 0);
	REQUIRE(!kill((pid_t)atoi(p), SIGTERM));
	REQUIRE(vt_readable(t.ctx->async_fd, VT_WAIT_S * 1000));
	REQUIRE(!ibv_get_async_event(t.ctx, &ev));
	REQUIRE(ev.event_type == IBV_EVENT_DEVICE_FATAL);
	ibv_ack_async_event(&ev);
	r = ibv_poll_cq(t.rcq, 1, &wc);
	REQUIRE(r < 0);
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "daemon_stop", daemon_stop },
	{ "device_query", device_query },
	{ "objects", objects },
	{ "cq_ex", cq_ex },
	{ "qp_ex", qp_ex },
	{ "srq", srq },
	{ "ud", ud },
	{ "ud_destroy_sends", ud_destroy_sends },
	{ "daemon_death", daemon_death },
	{ "daemon_kill_poll", daemon_kill_poll },
	{ "srq_grow", srq_grow },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
