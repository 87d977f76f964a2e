/* SPDX-License-Identifier: MIT */
/* Control requests on shared receive queues (core/srq.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_create_srq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->srq);
	return emu_srq_create(k->c, &k->q->srq, &k->rep->srq, &k->mfd);
}

static int emu_op_modify_srq(struct emu_op *k)
{
	if (k->q->msrq.attr_mask & IBV_SRQ_MAX_WR)
		k->rlen = sizeof(k->rep->srq);
	return emu_srq_modify_ex(k->c, &k->q->msrq, &k->rep->srq, &k->mfd);
}

static int emu_op_query_srq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->srq_attr);
	return emu_srq_query(k->c, k->q->hm.handle, &k->rep->srq_attr);
}

static int emu_op_destroy_srq(struct emu_op *k)
{
	return emu_srq_destroy(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_srq_defs[] = {
	{ .op = UROCE_OP_CREATE_SRQ, .len = sizeof(struct uroce_create_srq_req),
	  .run = emu_op_create_srq },
	{ .op = UROCE_OP_MODIFY_SRQ, .len = sizeof(struct uroce_modify_srq_req),
	  .run = emu_op_modify_srq },
	{ .op = UROCE_OP_QUERY_SRQ, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_query_srq },
	{ .op = UROCE_OP_DESTROY_SRQ, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_destroy_srq },
};
const struct emu_op_table emu_ctl_srq = EMU_OP_TABLE(emu_ctl_srq_defs);
