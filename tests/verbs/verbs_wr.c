/* SPDX-License-Identifier: MIT */
/* The shim side of the shared opcode table (include/uroce/wr.h): a WR
 * the table refuses is refused by ibv_post_send (EINVAL, *bad_wr) and by
 * the qp_ex wr_* path (ibv_wr_complete EINVAL) before it reaches the
 * daemon, and the QP stays usable. tests/emu/test_wr_table.c checks that
 * the daemon refuses the same set. */
#include <infiniband/verbs.h>
#include <uroce/wr.h>

#include "vt.h"

static const unsigned flag_sets[] = { 0, IBV_SEND_SIGNALED, IBV_SEND_INLINE,
				      IBV_SEND_FENCE | IBV_SEND_SOLICITED, 1u << 7 };

/* a SEND from a to b arrives: the QP still works after a refused WR */
static void send_arrives(struct vt *t, struct ibv_qp *a, struct ibv_qp *b, uint64_t id)
{
	struct ibv_wc wc;

	vt_post_recv(b, t->mr, 4096, 64, id);
	memcpy(t->buf + 8192, "ping", 4);
	REQUIRE(!vt_post_send(a, t->mr, IBV_WR_SEND, 8192, 4, IBV_SEND_SIGNALED, 0, 0, 0, id));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == id);
	vt_poll_n(t->rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == id && wc.byte_len == 4 &&
	      !memcmp(t->buf + 4096, "ping", 4));
}

/* IBTA: UC has no SEND with invalidate. The WR before it in the chain is
 * posted, the refused one is *bad_wr, nothing after it is posted. */
static void uc_send_inv(void)
{
	struct vt t;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	a = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 16, 16);
	b = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, a, b);
	vt_post_recv(b, t.mr, 0, 64, 10);
	memcpy(t.buf + 8192, "first", 5);
	struct ibv_sge sge = { (uintptr_t)t.buf + 8192, 5, t.mr->lkey };
	struct ibv_send_wr w3 = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr w2 = { .wr_id = 2, .next = &w3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = t.mr->rkey };
	struct ibv_send_wr w1 = { .wr_id = 1, .next = &w2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;

	REQUIRE(ibv_post_send(a, &w1, &bad) == EINVAL && bad == &w2);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.wr_id == 10 && wc.byte_len == 5 && !(wc.wc_flags & IBV_WC_WITH_INV));
	/* no second completion: w2 and w3 were not posted */
	usleep(100 * 1000);
	REQUIRE(ibv_poll_cq(t.scq, 1, &wc) == 0 && ibv_poll_cq(t.rcq, 1, &wc) == 0);
	send_arrives(&t, a, b, 20);
	REQUIRE(!ibv_destroy_qp(a));
	REQUIRE(!ibv_destroy_qp(b));
	vt_fini(&t);
}

/* Same through the extended API: ibv_wr_send_inv on UC; and
 * wr_set_inline_data on LOCAL_INV, which carries no payload. */
static void uc_send_inv_ex(void)
{
	struct vt t;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;

	vt_init(&t, NULL);
	vt_qp_ex_attr(&t, &qa, IBV_QPT_UC, 16, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
			   IBV_QP_EX_WITH_LOCAL_INV;
	x = vt_qp_ex_init(&t, &qa, 0, &a);
	b = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, a, b);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(x, t.mr->rkey);
	ibv_wr_set_sge(x, t.mr->lkey, (uintptr_t)t.buf + 8192, 4);
	REQUIRE(ibv_wr_complete(x) == EINVAL);
	/* inline data on an opcode without payload: refused at the shim too */
	ibv_wr_start(x);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(x, t.mr->rkey);
	ibv_wr_set_inline_data(x, "abc", 3);
	REQUIRE(ibv_wr_complete(x) == EINVAL);
	send_arrives(&t, a, b, 30);
	REQUIRE(!ibv_destroy_qp(a));
	REQUIRE(!ibv_destroy_qp(b));
	vt_fini(&t);
}

/* ibv_wr_complete on a QP that cannot send fails with EINVAL, as
 * ibv_post_send does (rdma-core's test_post_send_qp_state_bad_flow):
 * before RTS, then in RTS it posts, then after a move to RESET it fails
 * again. */
static int ex_send_one(struct vt *t, struct ibv_qp_ex *x, uint64_t id)
{
	ibv_wr_start(x);
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, t->mr->lkey, (uintptr_t)t->buf + 8192, 4);
	return ibv_wr_complete(x);
}

static void ex_bad_state(void)
{
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_recv_wr rw = { 0 }, *bad;
	struct ibv_sge rs;
	struct ibv_wc wc;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct vt t;

	vt_init(&t, NULL);
	vt_qp_ex_attr(&t, &qa, IBV_QPT_RC, 16, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a = ibv_create_qp_ex(t.ctx, &qa);
	REQUIRE(a);
	x = ibv_qp_to_qp_ex(a);
	REQUIRE(x);
	REQUIRE(ex_send_one(&t, x, 1) == EINVAL);             /* RESET */
	REQUIRE(!ibv_modify_qp(a, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	REQUIRE(ex_send_one(&t, x, 2) == EINVAL);             /* INIT */
	b = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, a, b);
	rs = (struct ibv_sge){ (uintptr_t)t.buf + 16384, 4, t.mr->lkey };
	rw.wr_id = 9;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	REQUIRE(!ibv_post_recv(b, &rw, &bad));
	REQUIRE(ex_send_one(&t, x, 3) == 0);                  /* RTS: posts */
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 9);
	m.qp_state = IBV_QPS_RESET;
	REQUIRE(!ibv_modify_qp(a, &m, IBV_QP_STATE));
	REQUIRE(ex_send_one(&t, x, 4) == EINVAL);             /* RESET again */
	REQUIRE(!ibv_destroy_qp(a));
	REQUIRE(!ibv_destroy_qp(b));
	vt_fini(&t);
}

/* Every opcode x QP type x flag set the table refuses, the shim refuses. */
static void table_walk(void)
{
	struct vt t;
	struct ibv_qp *qp[3], *uc_peer;
	static const enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	int refused = 0;

	vt_init(&t, NULL);
	qp[0] = t.qa;
	qp[1] = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 16, 16);
	qp[2] = vt_qp(&t, IBV_QPT_UD, t.scq, t.rcq, NULL, 16, 16);
	uc_peer = vt_qp(&t, IBV_QPT_UC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, qp[1], uc_peer);
	for (int ti = 0; ti < 3; ti++) {
		for (unsigned op = 0; op <= UROCE_WR_NOPS + 2; op++) {
			for (size_t fi = 0; fi < sizeof(flag_sets) / sizeof(flag_sets[0]); fi++) {
				struct ibv_sge sge = { (uintptr_t)t.buf, 8, t.mr->lkey };
				struct ibv_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1,
					.opcode = (enum ibv_wr_opcode)op, .send_flags = flag_sets[fi] };
				struct ibv_send_wr *bad = NULL;

				if (uroce_wr_allowed(types[ti], op, flag_sets[fi]))
					continue;
				errno = 0;
				int r = ibv_post_send(qp[ti], &wr, &bad);
				if (r != EINVAL || bad != &wr) {
					fprintf(stderr, "qpt %d op %u flags %#x: post %d\n",
						types[ti], op, flag_sets[fi], r);
					exit(1);
				}
				refused++;
			}
		}
	}
	/* nothing reached the daemon: no completion, and the QPs still work */
	struct ibv_wc wc;
	usleep(100 * 1000);
	REQUIRE(ibv_poll_cq(t.scq, 1, &wc) == 0);
	send_arrives(&t, t.qa, t.qb, 40);
	printf("shim refused %d WRs the table refuses\n", refused);
	REQUIRE(refused > 0);
	REQUIRE(!ibv_destroy_qp(qp[1]));
	REQUIRE(!ibv_destroy_qp(qp[2]));
	REQUIRE(!ibv_destroy_qp(uc_peer));
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "uc_send_inv", uc_send_inv },
	{ "uc_send_inv_ex", uc_send_inv_ex },
	{ "table_walk", table_walk },
	{ "ex_bad_state", ex_bad_state },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
