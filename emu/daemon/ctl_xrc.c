/* SPDX-License-Identifier: MIT */
/* Control requests on XRC domains, XRC SRQs and TGT QPs (core/xrcd.c, xrc_create.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

/* XRC (core/xrcd.c); the descriptor that came with the request is
 * closed with it: a new domain keeps a copy of its own (the inode) */
static int emu_op_open_xrcd(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xrcd);
	return emu_xrcd_open(k->c, &k->q->xrcd, k->nfds ? k->fds[0] : -1, &k->rep->xrcd);
}

static int emu_op_close_xrcd(struct emu_op *k)
{
	return emu_xrcd_close(k->c, k->q->hm.handle);
}

static int emu_op_create_xsrq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xsrq);
	return emu_xsrq_create(k->c, &k->q->xsrq, &k->rep->xsrq, &k->mfd);
}

static int emu_op_create_xtgt(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xqp);
	return emu_xrc_tgt_create(k->c, &k->q->xqp, &k->rep->xqp);
}

static int emu_op_open_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xqp);
	return emu_xrc_qp_open(k->c, &k->q->xqp, &k->rep->xqp);
}

static const struct emu_op_def emu_ctl_xrc_defs[] = {
	{ .op = UROCE_OP_OPEN_XRCD, .len = sizeof(struct uroce_open_xrcd_req),
	  .fds = 1, .run = emu_op_open_xrcd },
	{ .op = UROCE_OP_CLOSE_XRCD, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_close_xrcd },
	{ .op = UROCE_OP_CREATE_XSRQ, .len = sizeof(struct uroce_create_xsrq_req),
	  .run = emu_op_create_xsrq },
	{ .op = UROCE_OP_CREATE_XTGT, .len = sizeof(struct uroce_xrc_qp_req),
	  .run = emu_op_create_xtgt },
	{ .op = UROCE_OP_OPEN_QP, .len = sizeof(struct uroce_xrc_qp_req), .run = emu_op_open_qp },
};
const struct emu_op_table emu_ctl_xrc = EMU_OP_TABLE(emu_ctl_xrc_defs);
