/* SPDX-License-Identifier: MIT */
/* Control requests on protection domains (core/pd.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_alloc_pd(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->hm);
	return emu_pd_alloc(k->c, &k->rep->hm.handle);
}

static int emu_op_dealloc_pd(struct emu_op *k)
{
	return emu_pd_dealloc(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_pd_defs[] = {
	{ .op = UROCE_OP_ALLOC_PD, .len = 0, .run = emu_op_alloc_pd },
	{ .op = UROCE_OP_DEALLOC_PD, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_dealloc_pd },
};
const struct emu_op_table emu_ctl_pd = EMU_OP_TABLE(emu_ctl_pd_defs);
