/* SPDX-License-Identifier: MIT */
/* The transport's half of XRC (core/xrcd.c keeps the domains and the XRC
 * SRQs): which SRQ a TGT QP serves the request being received from, and
 * what it forgets when that SRQ goes (d->xops->xrc_tgt_unbind). */
#include "xport_int.h"

bool xp_xrc_tgt_bind(struct emu_qp *qp, uint32_t srqn)
{
	struct emu_srq *srq = emu_xrc_srq_find(qp->dev, srqn);
	bool ok = srq && srq->xref->x == qp->xref->x;

	if (qp->x->rwqe_valid)
		/* a message in progress finishes on the SRQ it started on */
		return ok && srq == qp->srq;
	qp->srq = ok ? srq : NULL;
	qp->pd = ok ? srq->pd : NULL;
	qp->recv_cq = ok ? srq->cq : NULL;
	return ok;
}

void emu_xport_xrc_tgt_unbind(struct emu_qp *qp)
{
	qp->x->rwqe_valid = 0;
	qp->x->rcv_off = 0;
}
