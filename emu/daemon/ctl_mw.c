/* SPDX-License-Identifier: MIT */
/* Control requests on memory windows (core/mw.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_alloc_mw(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mw);
	return emu_mw_alloc(k->c, &k->q->mw, &k->rep->mw);
}

static int emu_op_dealloc_mw(struct emu_op *k)
{
	return emu_mw_dealloc(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_mw_defs[] = {
	{ .op = UROCE_OP_ALLOC_MW, .len = sizeof(struct uroce_alloc_mw_req),
	  .run = emu_op_alloc_mw },
	{ .op = UROCE_OP_DEALLOC_MW, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_dealloc_mw },
};
const struct emu_op_table emu_ctl_mw = EMU_OP_TABLE(emu_ctl_mw_defs);
