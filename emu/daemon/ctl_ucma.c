/* SPDX-License-Identifier: MIT */
/* Control requests of the emulated rdma_cm device (emu/cm/ucma.c) and
 * the CM engine's counters (emu/cm/ibcm.c). */
#include <errno.h>
#include <string.h>
#include "cm/ibcm.h"
#include "cm/ucma.h"

#include "ctl_op.h"

/* rdma_cm (emu/cm/ucma.c): the pipe's read end goes to the client only */
static int emu_op_ucma_open(struct emu_op *k)
{
	int rc = emu_ucma_open(k->c, &k->rep->ucma_open.handle, &k->ofds[0]);
	if (rc)
		return rc;
	k->nofds = 1;
	k->oclose = 0;
	k->rlen = sizeof(k->rep->ucma_open);
	return 0;
}

static int emu_op_ucma_cmd(struct emu_op *k)
{
	return emu_ucma_cmd(k->c, k->q->ucma, k->qlen, k->rep->ucma_out, &k->rlen);
}

static int emu_op_ucma_close(struct emu_op *k)
{
	return emu_ucma_close(k->c, k->q->hm.handle);
}

static int emu_op_query_cm_stats(struct emu_op *k)
{
	int rc = emu_ibcm_stats_fill(&k->dm->dev, &k->rep->cm_stats);
	if (!rc)
		k->rlen = sizeof(k->rep->cm_stats);
	return rc;
}

static const struct emu_op_def emu_ctl_ucma_defs[] = {
	{ .op = UROCE_OP_UCMA_OPEN, .len = 0, .run = emu_op_ucma_open },
	{ .op = UROCE_OP_UCMA_CMD, .len = sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN,
	  .run = emu_op_ucma_cmd },
	{ .op = UROCE_OP_UCMA_CLOSE, .len = sizeof(struct uroce_handle_msg),
	  .run = emu_op_ucma_close },
	{ .op = UROCE_OP_QUERY_CM_STATS, .len = 0, .run = emu_op_query_cm_stats },
};
const struct emu_op_table emu_ctl_ucma = EMU_OP_TABLE(emu_ctl_ucma_defs);
