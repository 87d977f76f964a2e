/* SPDX-License-Identifier: MIT */
/* Control requests on completion channels (core/event.c) and CQs (core/cq.c). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ctl_op.h"

static int emu_op_create_channel(struct emu_op *k)
{
	int wfd;
	int rc = emu_evq_pipe(&k->ofds[0], &wfd);
	if (rc)
		return rc;
	rc = emu_channel_create(k->c, wfd, &k->rep->hm.handle); /* owns wfd, even on error */
	if (rc) {
		close(k->ofds[0]);
		return rc;
	}
	k->nofds = 1;
	k->oclose = 0; /* the read end goes to the client only */
	k->rlen = sizeof(k->rep->hm);
	return 0;
}

static int emu_op_destroy_channel(struct emu_op *k)
{
	return emu_channel_destroy(k->c, k->q->hm.handle);
}

static int emu_op_create_cq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cq);
	return emu_cq_create(k->c, &k->q->cq, &k->rep->cq, &k->mfd);
}

static int emu_op_resize_cq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cq);
	return emu_cq_resize(k->c, &k->q->rcq, &k->rep->cq, &k->mfd);
}

static int emu_op_destroy_cq(struct emu_op *k)
{
	return emu_cq_destroy(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_cq_defs[] = {
	{ .op = UROCE_OP_CREATE_COMP_CHANNEL, .len = 0, .run = emu_op_create_channel },
	{ .op = UROCE_OP_DESTROY_COMP_CHANNEL, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_destroy_channel },
	{ .op = UROCE_OP_CREATE_CQ, .len = sizeof(struct uroce_create_cq_req),
	  .run = emu_op_create_cq },
	{ .op = UROCE_OP_RESIZE_CQ, .len = sizeof(struct uroce_resize_cq_req),
	  .run = emu_op_resize_cq },
	{ .op = UROCE_OP_DESTROY_CQ, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_destroy_cq },
};
const struct emu_op_table emu_ctl_cq = EMU_OP_TABLE(emu_ctl_cq_defs);
