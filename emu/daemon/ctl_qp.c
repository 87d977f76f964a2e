/* SPDX-License-Identifier: MIT */
/* Control requests on queue pairs (core/qp.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_create_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->qp);
	return emu_qp_create(k->c, &k->q->qp, &k->rep->qp, &k->mfd);
}

static int emu_op_create_qp_arena(struct emu_op *k)
{
	int fd;
	bool fd_close;
	int rc = emu_qp_create_arena(k->c, &k->q->qp, &k->rep->qpa, &fd, &fd_close);

	if (rc)
		return rc;
	k->rlen = sizeof(k->rep->qpa);
	if (fd >= 0) {
		k->ofds[0] = fd;
		k->nofds = 1;
		k->oclose = fd_close ? 0 : 1;
	}
	return 0;
}

static int emu_op_modify_qp(struct emu_op *k)
{
	return emu_qp_modify_op(k->c, &k->q->mqp);
}

static int emu_op_query_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->qq);
	return emu_qp_query_op(k->c, &k->q->qqp, &k->rep->qq);
}

static int emu_op_destroy_qp(struct emu_op *k)
{
	return emu_qp_destroy(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_qp_defs[] = {
	{ .op = UROCE_OP_CREATE_QP, .len = sizeof(struct uroce_create_qp_req),
	  .run = emu_op_create_qp },
	{ .op = UROCE_OP_CREATE_QP_ARENA, .len = sizeof(struct uroce_create_qp_req),
	  .run = emu_op_create_qp_arena },
	{ .op = UROCE_OP_MODIFY_QP, .len = sizeof(struct uroce_modify_qp_req),
	  .run = emu_op_modify_qp },
	{ .op = UROCE_OP_QUERY_QP, .len = sizeof(struct uroce_query_qp_req),
	  .run = emu_op_query_qp },
	{ .op = UROCE_OP_DESTROY_QP, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_destroy_qp },
};
const struct emu_op_table emu_ctl_qp = EMU_OP_TABLE(emu_ctl_qp_defs);
