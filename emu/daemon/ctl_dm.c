/* SPDX-License-Identifier: MIT */
/* Control requests on device memory (core/dm.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_alloc_dm(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->dm);
	return emu_dm_alloc(k->c, &k->q->dm, &k->rep->dm, &k->mfd);
}

static int emu_op_free_dm(struct emu_op *k)
{
	return emu_dm_free(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_dm_defs[] = {
	{ .op = UROCE_OP_ALLOC_DM, .len = sizeof(struct uroce_alloc_dm_req),
	  .run = emu_op_alloc_dm },
	{ .op = UROCE_OP_FREE_DM, .len = sizeof(struct uroce_handle_msg), .run = emu_op_free_dm },
};
const struct emu_op_table emu_ctl_dm = EMU_OP_TABLE(emu_ctl_dm_defs);
