/* SPDX-License-Identifier: MIT */
/* Attribute structs the application leaves partly uninitialised (only the
 * members the mask names are set, padding never): liburoce must not hand
 * those bytes to the daemon's socket. Meant to run under valgrind, where
 * malloc'd memory is undefined and a sendmsg() of it is an error; without
 * valgrind it still checks the calls work. */
#include "vt.h"

static void *undefined(size_t n)
{
	/* not calloc: under valgrind these bytes must stay "undefined" */
	void *p = malloc(n);

	REQUIRE(p);
	return p;
}

static void connect_sparse(struct vt *t, struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp *qs[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr *m = undefined(sizeof(*m));

		m->qp_state = IBV_QPS_RTR;
		m->path_mtu = IBV_MTU_1024;
		m->dest_qp_num = qs[1 - i]->qp_num;
		m->rq_psn = 7;
		m->max_dest_rd_atomic = 1;
		m->min_rnr_timer = 1;
		/* the members one by one: the struct's padding stays undefined */
		m->ah_attr.is_global = 1;
		m->ah_attr.grh.dgid = t->gid;
		m->ah_attr.grh.flow_label = 0;
		m->ah_attr.grh.sgid_index = (uint8_t)t->gid_idx;
		m->ah_attr.grh.hop_limit = 64;
		m->ah_attr.grh.traffic_class = 0;
		m->ah_attr.dlid = 0;
		m->ah_attr.sl = 0;
		m->ah_attr.src_path_bits = 0;
		m->ah_attr.static_rate = 0;
		m->ah_attr.port_num = 1;
		REQUIRE(!ibv_modify_qp(qs[i], m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
		free(m);
		m = undefined(sizeof(*m));
		m->qp_state = IBV_QPS_RTS;
		m->sq_psn = 7;
		m->timeout = 14;
		m->retry_cnt = 7;
		m->rnr_retry = 7;
		m->max_rd_atomic = 1;
		REQUIRE(!ibv_modify_qp(qs[i], m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC));
		free(m);
	}
}

int main(void)
{
	struct vt t;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr *sq;
	struct ibv_ah_attr *aa;
	struct ibv_srq *srq;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	srq = ibv_create_srq(t.pd, &sa);
	REQUIRE(srq);
	sq = undefined(sizeof(*sq));
	sq->srq_limit = 4; /* max_wr, max_sge: not named by the mask */
	REQUIRE(!ibv_modify_srq(srq, sq, IBV_SRQ_LIMIT));
	sq->max_wr = 32;
	REQUIRE(!ibv_modify_srq(srq, sq, IBV_SRQ_MAX_WR));
	free(sq);

	a = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	connect_sparse(&t, a, b);
	memset(t.buf, 0x5a, 64);
	vt_post_recv(b, t.mr, 4096, 64, 1);
	REQUIRE(!vt_post_send(a, t.mr, IBV_WR_SEND, 0, 64, IBV_SEND_SIGNALED, 0, 0, 0, 2));
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == 64 && t.buf[4096 + 63] == 0x5a);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);

	aa = undefined(sizeof(*aa));
	aa->is_global = 1;
	aa->grh.dgid = t.gid;
	aa->grh.flow_label = 0;
	aa->grh.sgid_index = (uint8_t)t.gid_idx;
	aa->grh.hop_limit = 64;
	aa->grh.traffic_class = 0;
	aa->dlid = 0;
	aa->sl = 0;
	aa->src_path_bits = 0;
	aa->static_rate = 0;
	aa->port_num = 1;
	ah = ibv_create_ah(t.pd, aa);
	REQUIRE(ah);
	free(aa);
	REQUIRE(!ibv_destroy_ah(ah));

	REQUIRE(!ibv_destroy_qp(a));
	REQUIRE(!ibv_destroy_qp(b));
	REQUIRE(!ibv_destroy_srq(srq));
	vt_fini(&t);
	printf("attrs: ok\n");
	return 0;
}
