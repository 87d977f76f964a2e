/* SPDX-License-Identifier: MIT */
/* Control requests about the port's Ethernet device (port_nic.c through
 * dm->nic_ops): what it is and its statistics (uroce-ctl devices and
 * counters), and its MTU changed at run time (uroce-ctl mtu, admin). */
#include <errno.h>
#include <string.h>

#include "ctl_op.h"

static int emu_op_query_nic(struct emu_op *k)
{
	if (!k->dm->nic_ops)
		return -ENODEV;
	k->dm->nic_ops->query(k->dm, k->q->nic.first, &k->rep->nic);
	k->rlen = sizeof(k->rep->nic);
	return 0;
}

static int emu_op_set_mtu(struct emu_op *k)
{
	if (!k->dm->nic_ops)
		return -ENODEV;
	int rc = k->dm->nic_ops->set_mtu(k->dm, k->q->mtu.mtu);
	if (rc)
		return rc;
	emu_admin_dev_info(k->dm, &k->rep->dev_info);
	k->rlen = sizeof(k->rep->dev_info);
	return 0;
}

static const struct emu_op_def emu_ctl_nic_defs[] = {
	{ .op = UROCE_OP_QUERY_NIC, .len = sizeof(struct uroce_query_nic_req),
	  .run = emu_op_query_nic },
	{ .op = UROCE_OP_SET_MTU, .len = sizeof(struct uroce_set_mtu_req),
	  .run = emu_op_set_mtu, .admin = true },
};
const struct emu_op_table emu_ctl_nic = EMU_OP_TABLE(emu_ctl_nic_defs);
