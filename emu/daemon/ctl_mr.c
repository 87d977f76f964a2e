/* SPDX-License-Identifier: MIT */
/* Control requests on memory regions (core/mr.c, mrmap.c, odp.c): register,
 * reregister, deregister, map a shared-memory MR into the daemon, the
 * memory channel (core/pin.c), list them (uroce-ctl mrs), advise,
 * import (ibv_import_pd / _mr / _dm), an MR over device memory. */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_reg_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_mr_reg(k->c, &k->q->mr, &k->rep->mr);
}

static int emu_op_rereg_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_mr_rereg(k->c, &k->q->rereg, &k->rep->mr);
}

static int emu_op_dereg_mr(struct emu_op *k)
{
	return emu_mr_dereg(k->c, k->q->hm.handle);
}

/* the file stays mapped through its own reference; the descriptor is
 * closed with the request's. Every refusal -EACCES (core/mrmap.c). */
static int emu_op_map_mr(struct emu_op *k)
{
	if (k->nfds != 1)
		return -EACCES;
	return emu_mr_map(k->c, &k->q->map, k->fds[0]);
}

/* the client's io_uring, taken from its process (core/pin.c) */
static int emu_op_mem_channel(struct emu_op *k)
{
	return emu_pin_attach(k->c, &k->q->chan);
}

/* uroce-ctl mrs: the registrations this client may see */
static int emu_op_query_mrs(struct emu_op *k)
{
	emu_mr_info_fill(&k->dm->dev, k->c, &k->q->mrs, &k->rep->mrs);
	k->rlen = sizeof(k->rep->mrs);
	return 0;
}

static int emu_op_import(struct emu_op *k)
{
	const struct uroce_import_req *q = &k->q->imp;

	k->rlen = sizeof(k->rep->imp);
	if (q->type != UROCE_IMPORT_DM)
		return emu_obj_import(k->c, q, &k->rep->imp);
	memset(&k->rep->imp, 0, sizeof(k->rep->imp));
	if (q->pd || q->rsvd)
		return -EINVAL;
	return emu_dm_import(k->c, q->handle, &k->rep->imp.length, &k->mfd);
}

static int emu_op_reg_dm_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_dm_reg_mr(k->c, &k->q->dmmr, &k->rep->mr);
}

static int emu_op_advise_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->adv);
	return emu_mr_advise(k->c, &k->q->adv, &k->rep->adv);
}

static const struct emu_op_def emu_ctl_mr_defs[] = {
	{ .op = UROCE_OP_REG_MR, .len = sizeof(struct uroce_reg_mr_req), .run = emu_op_reg_mr },
	{ .op = UROCE_OP_REREG_MR, .len = sizeof(struct uroce_rereg_mr_req),
	  .run = emu_op_rereg_mr },
	{ .op = UROCE_OP_DEREG_MR, .len = sizeof(struct uroce_handle_msg), .run = emu_op_dereg_mr },
	{ .op = UROCE_OP_MAP_MR, .len = sizeof(struct uroce_map_mr_req),
	  .fds = 1, .run = emu_op_map_mr },
	{ .op = UROCE_OP_MEM_CHANNEL, .len = sizeof(struct uroce_mem_chan_req),
	  .run = emu_op_mem_channel },
	{ .op = UROCE_OP_QUERY_MRS, .len = sizeof(struct uroce_query_mrs_req),
	  .run = emu_op_query_mrs },
	{ .op = UROCE_OP_IMPORT, .len = sizeof(struct uroce_import_req), .run = emu_op_import },
	{ .op = UROCE_OP_REG_DM_MR, .len = sizeof(struct uroce_reg_dm_mr_req),
	  .run = emu_op_reg_dm_mr },
	{ .op = UROCE_OP_ADVISE_MR, .len = sizeof(struct uroce_advise_mr_req),
	  .run = emu_op_advise_mr },
};
const struct emu_op_table emu_ctl_mr = EMU_OP_TABLE(emu_ctl_mr_defs);
