/* SPDX-License-Identifier: MIT */
/* ECE (enhanced connection establishment) of uroce QPs: a provider that
 * speaks ECE and supports no optional feature. Its vendor ID is the
 * device's (ibv_device_attr.vendor_id, 24 bits as the CM carries it),
 * as mlx5 answers with its own; the options it reports are always 0, so
 * the peer learns that none of its requested options was taken. librdmacm
 * queries it when it creates the QP and sets the peer's values back
 * (docs/cm.md "ECE"). */
#include <errno.h>

#include "urv_dev.h"
#include "urv_verbs.h"

static uint32_t urv_ece_vendor(struct ibv_qp *qp)
{
	return to_uctx(qp->context)->info.dev_attr.vendor_id & 0xFFFFFFu;
}

int urv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	ece->vendor_id = urv_ece_vendor(qp);
	ece->options = 0;
	ece->comp_mask = 0;
	return 0;
}

/* libibverbs' and mlx5's rules: no vendor ID is EOPNOTSUPP (the caller
 * has nothing to ask for), an unknown comp_mask or another vendor's ID
 * EINVAL; options are requests, of which this device grants none, so any
 * are accepted and ibv_query_ece() keeps reporting 0. */
int urv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!ece->vendor_id)
		errno = EOPNOTSUPP;
	else if (ece->comp_mask || ece->vendor_id != urv_ece_vendor(qp))
		errno = EINVAL;
	else
		return 0;
	return errno;
}
