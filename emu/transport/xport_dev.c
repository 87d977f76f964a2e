/* SPDX-License-Identifier: MIT */
/* A device, whole: the core's tables (emu_dev_core_init) with the
 * transport's operations installed, the table through which the core
 * reaches the layers above it (struct emu_xport_ops, core/emu_dev.h), and
 * the transport's own state of the device (d->x). The top of
 * the transport: it names the state machine (qp_modify.c), the doorbell
 * and timer entry points (xport.c) and the net layer's address resolution,
 * so none of those has to name the others back. */
#include <errno.h>
#include <stdlib.h>

#include "xport_int.h"

/* What the core calls of the transport (struct emu_xport_ops). */
static const struct emu_xport_ops emu_xport_dev_ops = {
	.qp_init = emu_xport_qp_init,
	.qp_fini = emu_xport_qp_fini,
	.qp_modify = emu_qp_modify,
	.qp_query = emu_qp_query,
	.sq_kick = emu_xport_sq_kick,
	.rq_kick = emu_xport_rq_kick,
	.srq_kick = emu_xport_srq_kick,
	.mem_fault = emu_xport_mem_fault,
	.xrc_tgt_unbind = emu_xport_xrc_tgt_unbind,
	.av_resolve = emu_av_resolve,
	.qp_size = sizeof(struct emu_xport_qp),
	.swqe_size = sizeof(struct emu_xport_swqe),
};

int emu_dev_init(struct emu_dev *d, const char *name, const uint8_t mac[6],
		 uint32_t eth_mtu, const union ibv_gid *gids, uint32_t ngid)
{
	int rc = emu_dev_core_init(d, name, mac, eth_mtu, gids, ngid);

	if (rc)
		return rc;
	d->xops = &emu_xport_dev_ops;
	d->x = calloc(1, sizeof(*d->x));
	if (!d->x) {
		emu_dev_core_fini(d);
		return -ENOMEM;
	}
	emu_dcqcn_defaults(&d->x->dcqcn);
	d->x->ack_hold_ns = 0; /* off unless --ack-hold-us (resp_ack_hold) */
	return 0;
}

void emu_dev_fini(struct emu_dev *d)
{
	emu_dev_core_fini(d); /* destroys the QPs: their state goes to d->x's tombs */
	free(d->x);
	d->x = NULL;
	/* the fault injector sits in front of this layer's receive path */
	emu_fault_free(d->fault);
	d->fault = NULL;
}
