/* SPDX-License-Identifier: MIT */
/* uroce-ctl's administrative requests (admin.c): fault injection, DCQCN
 * settings, capture. They change what every user's traffic goes through:
 * root and the daemon's uid only (emu_req_check, emu_admin_allowed). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_fault(struct emu_op *k)
{
	int rc = 0;

	if (k->op == UROCE_OP_FAULT_SET)
		rc = emu_admin_fault_set(k->dm, &k->q->fault, &k->rep->fault);
	else if (k->op == UROCE_OP_FAULT_CLEAR)
		emu_admin_fault_clear(k->dm, &k->rep->fault);
	else
		emu_admin_fault_get(k->dm, &k->rep->fault);
	k->rlen = sizeof(k->rep->fault);
	return rc;
}

static int emu_op_cc_set(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cc);
	return emu_admin_cc_set(k->dm, k->c, &k->q->cc_set, &k->rep->cc);
}

static int emu_op_capture_start(struct emu_op *k)
{
	int no_fd = -1;

	return emu_admin_capture_start(k->dm, k->nfds >= 1 ? &k->fds[0] : &no_fd);
}

static int emu_op_capture_stop(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->capture);
	return emu_admin_capture_stop(k->dm, &k->rep->capture);
}

static const struct emu_op_def emu_ctl_admin_defs[] = {
	{ .op = UROCE_OP_FAULT_GET, .len = 0, .run = emu_op_fault },
	{ .op = UROCE_OP_FAULT_SET, .len = sizeof(struct uroce_fault_set_req),
	  .run = emu_op_fault, .admin = true },
	{ .op = UROCE_OP_FAULT_CLEAR, .len = 0, .run = emu_op_fault, .admin = true },
	{ .op = UROCE_OP_CC_SET, .len = sizeof(struct uroce_cc_set_req),
	  .run = emu_op_cc_set, .admin = true },
	{ .op = UROCE_OP_CAPTURE_START, .len = 0,
	  .fds = 1, .run = emu_op_capture_start, .admin = true },
	{ .op = UROCE_OP_CAPTURE_STOP, .len = 0, .run = emu_op_capture_stop, .admin = true },
};
const struct emu_op_table emu_ctl_admin = EMU_OP_TABLE(emu_ctl_admin_defs);
