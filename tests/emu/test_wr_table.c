/* SPDX-License-Identifier: MIT */
/* The daemon side of the shared opcode table (include/uroce/wr.h):
 * the table says what IBTA says (an independent matrix written here), and
 * emu_sq_copy refuses every WQE the table refuses and takes every one it
 * allows, for every opcode x QP type x inline flag. The shim side is
 * tests/verbs/verbs_wr.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xport.h"
#include <uroce/wr.h>

static int fails;
#define T_FAILURES fails
#include "../include/check.h"

/* IBTA Vol. 1 ch. 9 BTH opcodes per transport, plus the local
 * LOCAL_INV / BIND_MW on connected QPs. UC has no SEND_WITH_INV. */
static bool ibta_allows(enum ibv_qp_type t, unsigned op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_UD;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE: /* IBTA 1.5: RC only */
	case UROCE_WR_OP_FLUSH:   /* IBTA 1.5: RC only */
		return t == IBV_QPT_RC;
	default:
		return false;
	}
}

static bool carries_payload(unsigned op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static struct emu_qp *make_qp(struct emu_ctx *c, uint32_t pd, uint32_t cq, enum ibv_qp_type t)
{
	struct uroce_create_qp_req q = { .pd = pd, .send_cq = cq, .recv_cq = cq, .srq = -1,
					 .qp_type = (uint8_t)t,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						  .max_recv_sge = 1, .max_inline_data = 64 } };
	struct uroce_create_qp_rep r;
	int mfd = -1;

	CHECK(emu_qp_create(c, &q, &r, &mfd) == 0, "create qp type %d", t);
	return emu_ctx_get(c, r.handle, EMU_OBJ_QP);
}

/* One WQE in slot 0 of the SQ, then the daemon's fetch-time check. */
static int copy_one(struct emu_qp *qp, unsigned op, unsigned flags)
{
	static uint8_t out[EMU_SQ_STRIDE_MAX];
	struct uroce_send_wqe *w = (void *)emu_ring_slot(&qp->sq, 0);

	memset(w, 0, UROCE_SEND_WQE_HDR);
	w->opcode = (uint8_t)op;
	w->send_flags = (uint16_t)flags;
	if (flags & IBV_SEND_INLINE)
		w->inline_len = 8;
	else
		w->num_sge = 1;
	return emu_sq_copy(qp, 0, out);
}

int main(void)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	static const unsigned flag_sets[] = { 0, IBV_SEND_SIGNALED, IBV_SEND_INLINE,
					      IBV_SEND_FENCE | IBV_SEND_SOLICITED, 1u << 7 };
	uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };
	struct emu_dev d;
	uint32_t pd = 0;

	CHECK(emu_dev_init(&d, "t0", mac, 1500, NULL, 0) == 0, "dev");
	struct emu_ctx *c = emu_ctx_new(&d, getpid(), -1);
	CHECK(c && emu_pd_alloc(c, &pd) == 0, "ctx/pd");
	struct uroce_create_cq_req cq_q = { .cqe = 4, .channel = -1 };
	struct uroce_create_cq_rep cq_r;
	int mfd;
	CHECK(emu_cq_create(c, &cq_q, &cq_r, &mfd) == 0, "cq");

	for (size_t ti = 0; ti < 3; ti++) {
		struct emu_qp *qp = make_qp(c, pd, cq_r.handle, types[ti]);

		if (!qp)
			continue;
		for (unsigned op = 0; op <= UROCE_WR_NOPS + 2; op++) {
			/* the table is IBTA's */
			CHECK(uroce_wr_allowed(types[ti], op, 0) == ibta_allows(types[ti], op),
			      "table: qpt %d op %u", types[ti], op);
			for (size_t fi = 0; fi < sizeof(flag_sets) / sizeof(flag_sets[0]); fi++) {
				unsigned f = flag_sets[fi];
				bool want = ibta_allows(types[ti], op) && !(f & (1u << 7)) &&
					    (!(f & IBV_SEND_INLINE) || carries_payload(op));
				int r = copy_one(qp, op, f);

				CHECK(uroce_wr_allowed(types[ti], op, f) == want,
				      "table: qpt %d op %u flags %#x", types[ti], op, f);
				CHECK(want ? r > 0 : r == -EINVAL,
				      "daemon: qpt %d op %u flags %#x -> %d", types[ti], op, f, r);
			}
		}
	}
	emu_ctx_destroy(c);
	emu_dev_fini(&d);
	if (fails)
		fprintf(stderr, "%d failure(s)\n", fails);
	else
		printf("wr table: daemon agrees for %zu opcodes x 3 QP types\n", UROCE_WR_NOPS);
	return fails ? 1 : 0;
}
