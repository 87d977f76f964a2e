/* SPDX-License-Identifier: MIT */
/* Control requests on address handles (core/ah.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_create_ah(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->hm);
	return emu_ah_create(k->c, &k->q->ah, &k->rep->hm.handle);
}

static int emu_op_destroy_ah(struct emu_op *k)
{
	return emu_ah_destroy(k->c, k->q->hm.handle);
}

static const struct emu_op_def emu_ctl_ah_defs[] = {
	{ .op = UROCE_OP_CREATE_AH, .len = sizeof(struct uroce_create_ah_req),
	  .run = emu_op_create_ah },
	{ .op = UROCE_OP_DESTROY_AH, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_destroy_ah },
};
const struct emu_op_table emu_ctl_ah = EMU_OP_TABLE(emu_ctl_ah_defs);
