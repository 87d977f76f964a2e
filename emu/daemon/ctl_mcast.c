/* SPDX-License-Identifier: MIT */
/* Control requests attaching UD QPs to multicast groups (core/mcast.c). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_mcast(struct emu_op *k)
{
	return emu_mcast_op(k->c, &k->q->mc, k->op == UROCE_OP_ATTACH_MCAST);
}

static const struct emu_op_def emu_ctl_mcast_defs[] = {
	{ .op = UROCE_OP_ATTACH_MCAST, .len = sizeof(struct uroce_mcast_req), .run = emu_op_mcast },
	{ .op = UROCE_OP_DETACH_MCAST, .len = sizeof(struct uroce_mcast_req), .run = emu_op_mcast },
};
const struct emu_op_table emu_ctl_mcast = EMU_OP_TABLE(emu_ctl_mcast_defs);
