/* SPDX-License-Identifier: MIT */
/* A device, whole: the core's tables (emu_dev_core_init) with the
 * transport's operations installed, the table through which the core
 * reaches the layers above it (struct emu_xport_ops in emu.h). The top of
 * the transport: it names the state machine (qp_modify.c), the doorbell
 * and timer entry points (xport.c) and the net layer's address resolution,
 * so none of those has to name the others back. */
#include "xport_int.h"

/* What the core calls of the transport (emu.h, struct emu_xport_ops). */
static const struct emu_xport_ops emu_xport_dev_ops = {
	.qp_init = emu_xport_qp_init,
	.qp_fini = emu_xport_qp_fini,
	.qp_modify = emu_qp_modify,
	.qp_query = emu_qp_query,
	.sq_kick = emu_xport_sq_kick,
	.rq_kick = emu_xport_rq_kick,
	.srq_kick = emu_xport_srq_kick,
	.mem_fault = emu_xport_mem_fault,
	.av_resolve = emu_av_resolve,
};

int emu_dev_init(struct emu_dev *d, const char *name, const uint8_t mac[6],
		 uint32_t eth_mtu, const union ibv_gid *gids, uint32_t ngid)
{
	int rc = emu_dev_core_init(d, name, mac, eth_mtu, gids, ngid);

	if (rc)
		return rc;
	d->xops = &emu_xport_dev_ops;
	emu_dcqcn_defaults(&d->dcqcn);
	return 0;
}

void emu_dev_fini(struct emu_dev *d)
{
	emu_dev_core_fini(d);
	/* the fault injector sits in front of this layer's receive path */
	emu_fault_free(d->fault);
	d->fault = NULL;
}
