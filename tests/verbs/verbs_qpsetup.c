/* SPDX-License-Identifier: MIT */
/* QP setup through liburoce as it is fast now (docs/performance.md, "QP
 * setup"): rings carved from each context's arena, control requests by
 * the doorbell page's mailbox. usage: verbs_qpsetup CASE
 *
 *   two_ctx        300 RC QPs in each of two contexts (several arena
 *                  chunks each), QP numbers all distinct, pairs across the
 *                  contexts carry verified SENDs; half destroyed and made
 *                  again (their ranges reused), traffic again; query_qp
 *                  gives back exactly what the modifies set
 *   modify_errors  every refused transition returns EINVAL at once (and
 *                  sets errno, as a kernel provider's write() does) and
 *                  leaves the QP where it was (query_qp), in order
 */
#include "vt.h"

#define NQP 300

static struct ibv_qp *rc_qp(struct vt *t)
{
	return vt_qp(t, IBV_QPT_RC, t->scq, t->rcq, NULL, 4, 4);
}

/* a SEND of 100 seeded bytes from a (t) to b (u), checked at b */
static void traffic(struct vt *t, struct ibv_qp *a, struct vt *u, struct ibv_qp *b, unsigned seed)
{
	struct ibv_wc wc;

	for (int i = 0; i < 100; i++)
		t->buf[i] = (uint8_t)(seed * 31 + (unsigned)i);
	memset(u->buf + 4096, 0, 100);
	vt_post_recv(b, u->mr, 4096, 100, seed);
	REQUIRE(!vt_post_send(a, t->mr, IBV_WR_SEND, 0, 100, IBV_SEND_SIGNALED, 0, 0, 0, seed));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == seed);
	vt_poll_n(u->rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == seed && wc.byte_len == 100);
	REQUIRE(!memcmp(u->buf + 4096, t->buf, 100));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void two_ctx(void)
{
	static struct ibv_qp *q[2][NQP];
	static uint32_t qpn[2 * NQP];
	struct vt_opts o = { .cqe = 256 };
	struct vt t[2];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	vt_init(&t[0], &o);
	vt_init(&t[1], &o);
	for (int i = 0; i < NQP; i++)
		for (int k = 0; k < 2; k++) {
			q[k][i] = rc_qp(&t[k]);
			qpn[k * NQP + i] = q[k][i]->qp_num;
		}
	qsort(qpn, 2 * NQP, sizeof(qpn[0]), cmp_u32);
	for (int i = 1; i < 2 * NQP; i++)
		REQUIRE(qpn[i] != qpn[i - 1]);
	for (int i = 0; i < NQP; i += 37) {
		vt_connect(&t[0], q[0][i], q[1][i]);
		traffic(&t[0], q[0][i], &t[1], q[1][i], (unsigned)i);
		traffic(&t[1], q[1][i], &t[0], q[0][i], (unsigned)i + 1);
	}
	/* exactly what vt_qp and vt_connect set */
	REQUIRE(!ibv_query_qp(q[0][37], &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN, &ia));
	REQUIRE(qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == q[1][37]->qp_num &&
	      qa.rq_psn == 100 && qa.sq_psn == 100 && qa.path_mtu == IBV_MTU_1024 &&
	      qa.timeout == 14 && qa.retry_cnt == 7 && qa.rnr_retry == 7 &&
	      qa.max_rd_atomic == 4 && qa.max_dest_rd_atomic == 4 && qa.min_rnr_timer == 1 &&
	      qa.port_num == 1 && qa.ah_attr.is_global && qa.ah_attr.grh.hop_limit == 64 &&
	      !memcmp(&qa.ah_attr.grh.dgid, &t[0].gid, sizeof(t[0].gid)));
	REQUIRE(ia.cap.max_send_wr >= 4 && ia.cap.max_recv_wr >= 4 && ia.send_cq == t[0].scq &&
	      ia.qp_type == IBV_QPT_RC);
	/* half of them go, as many come back in the freed ranges */
	for (int i = 0; i < NQP; i += 2)
		for (int k = 0; k < 2; k++)
			REQUIRE(!ibv_destroy_qp(q[k][i]));
	for (int i = 0; i < NQP; i += 2)
		for (int k = 0; k < 2; k++)
			q[k][i] = rc_qp(&t[k]);
	for (int i = 0; i < NQP; i += 29) {
		if (i % 37 == 0)
			continue; /* connected above */
		vt_connect(&t[1], q[1][i], q[0][i]);
		traffic(&t[1], q[1][i], &t[0], q[0][i], (unsigned)i + 7);
		traffic(&t[0], q[0][i], &t[1], q[1][i], (unsigned)i + 8);
	}
	for (int i = 0; i < NQP; i++)
		for (int k = 0; k < 2; k++)
			REQUIRE(!ibv_destroy_qp(q[k][i]));
	vt_fini(&t[1]);
	vt_fini(&t[0]);
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	REQUIRE(!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	return a.qp_state;
}

static void modify_errors(void)
{
	struct vt t;
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

	vt_init(&t, NULL);
	ia.send_cq = t.scq;
	ia.recv_cq = t.rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(t.pd, &ia);
	REQUIRE(qp && state_of(qp) == IBV_QPS_RESET);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL && state_of(qp) == IBV_QPS_RESET);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	REQUIRE(ibv_modify_qp(qp, &a, init) == EINVAL && state_of(qp) == IBV_QPS_RESET);
	a.port_num = 1;
	REQUIRE(ibv_modify_qp(qp, &a, init & ~IBV_QP_ACCESS_FLAGS) == EINVAL);
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	REQUIRE(!ibv_modify_qp(qp, &a, init) && state_of(qp) == IBV_QPS_INIT);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = t.gid;
	a.ah_attr.grh.sgid_index = (uint8_t)t.gid_idx;
	a.ah_attr.grh.hop_limit = 1;
	/* RoCE: a GRH is mandatory; and errno holds the error as a kernel
	 * provider's failed write() leaves it (qperf prints strerror(errno)) */
	errno = EAGAIN;
	REQUIRE(ibv_modify_qp(qp, &a, rtr) == EINVAL && errno == EINVAL &&
		state_of(qp) == IBV_QPS_INIT);
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 15; /* beyond the loopback port's GIDs */
	REQUIRE(ibv_modify_qp(qp, &a, rtr) == EINVAL && state_of(qp) == IBV_QPS_INIT);
	a.ah_attr.grh.sgid_index = (uint8_t)t.gid_idx;
	a.max_dest_rd_atomic = 255;
	REQUIRE(ibv_modify_qp(qp, &a, rtr) == EINVAL && state_of(qp) == IBV_QPS_INIT);
	a.max_dest_rd_atomic = 1;
	REQUIRE(!ibv_modify_qp(qp, &a, rtr) && state_of(qp) == IBV_QPS_RTR);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	REQUIRE(ibv_modify_qp(qp, &a, rts & ~IBV_QP_RETRY_CNT) == EINVAL &&
	      state_of(qp) == IBV_QPS_RTR);
	a.retry_cnt = 8;
	REQUIRE(ibv_modify_qp(qp, &a, rts) == EINVAL && state_of(qp) == IBV_QPS_RTR);
	a.retry_cnt = 7;
	REQUIRE(!ibv_modify_qp(qp, &a, rts) && state_of(qp) == IBV_QPS_RTS);
	a.qp_state = IBV_QPS_INIT;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL && state_of(qp) == IBV_QPS_RTS);
	a.qp_state = IBV_QPS_ERR;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE) && state_of(qp) == IBV_QPS_ERR);
	a.qp_state = IBV_QPS_RTS;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL && state_of(qp) == IBV_QPS_ERR);
	a.qp_state = IBV_QPS_RESET;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE) && state_of(qp) == IBV_QPS_RESET);
	REQUIRE(!ibv_destroy_qp(qp));
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "two_ctx", two_ctx },
	{ "modify_errors", modify_errors },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
