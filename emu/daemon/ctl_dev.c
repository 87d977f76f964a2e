/* SPDX-License-Identifier: MIT */
/* Control requests about the device as a whole: its port (ibv_query_port),
 * counters (uroce-stat) and drops by reason, DCQCN state, the description
 * uroce-ctl shows, the transport state of its QPs, and a uid's limits and
 * usage. */
#include <errno.h>
#include <string.h>
#include "cm/ibcm.h"

#include "ctl_op.h"

static int emu_op_query_port(struct emu_op *k)
{
	const struct emu_dev *d = &k->dm->dev;
	struct uroce_query_port_rep *r = &k->rep->port;

	if (k->q->port.port_num != 1)
		return -EINVAL;
	r->port_attr = d->port_attr;
	r->port_attr.state = d->port_state;
	r->gid_count = d->gid_count;
	for (uint32_t i = 0; i < d->gid_count; i++) {
		r->gids[i] = d->gids[i];
		r->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
	}
	k->rlen = sizeof(*r);
	return 0;
}

static int emu_op_query_stats(struct emu_op *k)
{
	emu_stats_fill(&k->dm->dev, k->c, k->q->st.first_qpn, &k->rep->stats);
	k->rlen = sizeof(k->rep->stats);
	return 0;
}

/* drops by reason: the port's link (port_drops.c), then the transport's */
static int emu_op_query_drops(struct emu_op *k)
{
	struct emu_named link[EMU_LINK_DROPS_MAX];
	unsigned n = 0;

	if (!k->q->drops.first_qpn)
		n = emu_port_link_drops(k->dm, link, EMU_LINK_DROPS_MAX);
	emu_drops_fill(&k->dm->dev, k->c, link, n, &k->q->drops, &k->rep->drops);
	k->rlen = sizeof(k->rep->drops);
	return 0;
}

static int emu_op_query_cc(struct emu_op *k)
{
	emu_cc_fill(&k->dm->dev, k->c, k->q->st.first_qpn, &k->rep->cc);
	k->rlen = sizeof(k->rep->cc);
	return 0;
}

/* uroce-ctl (admin.c) */
static int emu_op_dev_info(struct emu_op *k)
{
	emu_admin_dev_info(k->dm, &k->rep->dev_info);
	k->rlen = sizeof(k->rep->dev_info);
	return 0;
}

static int emu_op_query_qps(struct emu_op *k)
{
	emu_qp_info_fill(&k->dm->dev, k->c, k->q->qps.first_qpn, &k->rep->qps);
	k->rlen = sizeof(k->rep->qps);
	return 0;
}

/* limits and usage (uroce-ctl limits): one's own uid, any for root and
 * the daemon's user (who see every QP already) */
static int emu_op_query_limits(struct emu_op *k)
{
	uint32_t uid = k->q->lim.uid == UROCE_LIMITS_SELF ? k->c->uid : k->q->lim.uid;
	struct emu_ibcm *cm = emu_ibcm_get(&k->dm->dev);

	if (uid != k->c->uid && !k->c->see_all)
		return -EPERM;
	emu_limits_fill(k->c, uid, &k->rep->limits);
	k->rep->limits.cm_ids = cm ? emu_ibcm_ids_max(cm) : 0;
	k->rep->limits.cm_ids_used = cm ? emu_ibcm_ids_in_use(cm) : 0;
	k->rlen = sizeof(k->rep->limits);
	return 0;
}

static const struct emu_op_def emu_ctl_dev_defs[] = {
	{ .op = UROCE_OP_QUERY_PORT, .len = sizeof(struct uroce_query_port_req),
	  .run = emu_op_query_port },
	{ .op = UROCE_OP_QUERY_STATS, .len = sizeof(struct uroce_query_stats_req),
	  .run = emu_op_query_stats },
	{ .op = UROCE_OP_QUERY_DROPS, .len = sizeof(struct uroce_query_drops_req),
	  .run = emu_op_query_drops },
	{ .op = UROCE_OP_QUERY_CC, .len = sizeof(struct uroce_query_stats_req),
	  .run = emu_op_query_cc },
	{ .op = UROCE_OP_DEV_INFO, .len = 0, .run = emu_op_dev_info },
	{ .op = UROCE_OP_QUERY_QPS, .len = sizeof(struct uroce_query_qps_req),
	  .run = emu_op_query_qps },
	{ .op = UROCE_OP_QUERY_LIMITS, .len = sizeof(struct uroce_query_limits_req),
	  .run = emu_op_query_limits },
};
const struct emu_op_table emu_ctl_dev = EMU_OP_TABLE(emu_ctl_dev_defs);
