/* SPDX-License-Identifier: MIT */
/* XRC objects made on top of the core's (srq.c, qp.c): XRC SRQs, TGT QPs, and
 * handles from ibv_open_qp; their domain bookkeeping is xrcd.c's
 * (docs/verbs.md "XRC"). */
#include <errno.h>
#include <stdlib.h>

#include "emu_int.h"

/* A free XRC SRQ number: round robin, as QPNs, so a late request for a
 * destroyed SRQ does not reach its successor at once. 0 is never used. */
static int xsrq_num(struct emu_dev *d, uint32_t *num)
{
	if (!d->srqn) {
		d->srqn = calloc(EMU_SRQN_TABLE, sizeof(*d->srqn));
		if (!d->srqn)
			return -ENOMEM;
	}
	for (uint32_t k = 0; k < EMU_SRQN_TABLE; k++) {
		uint32_t n = d->next_srqn++ % EMU_SRQN_TABLE;

		if (n && !d->srqn[n]) {
			*num = n;
			return 0;
		}
	}
	return -ENOMEM;
}

int emu_xsrq_create(struct emu_ctx *c, const struct uroce_create_xsrq_req *q,
		    struct uroce_create_xsrq_rep *r, int *memfd_out)
{
	struct emu_xrcd_ref *ref = emu_ctx_get(c, q->xrcd, EMU_OBJ_XRCD);
	struct emu_cq *cq = emu_ctx_get(c, q->cq, EMU_OBJ_CQ);
	struct emu_dev *d = c->dev;
	uint32_t num;
	int rc;

	if (!ref || !cq)
		return -EINVAL;
	rc = xsrq_num(d, &num);
	if (rc)
		return rc;
	rc = emu_srq_create(c, &q->srq, &r->srq, memfd_out);
	if (rc)
		return rc;
	struct emu_srq *srq = emu_ctx_get(c, r->srq.handle, EMU_OBJ_SRQ);
	srq->xref = ref;
	srq->cq = cq;
	srq->srqn = num;
	cq->refcnt++;
	ref->users++;
	d->srqn[num] = srq;
	r->srqn = num;
	return 0;
}

int emu_xrc_tgt_create(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		       struct uroce_xrc_qp_rep *r)
{
	struct emu_xrcd_ref *ref = emu_ctx_get(c, q->xrcd, EMU_OBJ_XRCD);
	struct uroce_create_qp_req qq = {
		.srq = -1, .qp_type = IBV_QPT_XRC_RECV, .user_handle = q->user_handle,
	};
	struct uroce_create_qp_rep qr;
	int mfd, rc;

	if (!ref)
		return -EINVAL;
	rc = emu_qp_create_x(c, &qq, ref, &qr, &mfd);
	if (rc)
		return rc;
	r->handle = qr.handle;
	r->qpn = qr.qpn;
	return 0;
}

/* ibv_open_qp: a TGT QP of the caller's domain, whoever created it; a QP
 * of another domain is -EACCES whatever the caller's uid. */
int emu_xrc_qp_open(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		    struct uroce_xrc_qp_rep *r)
{
	struct emu_xrcd_ref *ref = emu_ctx_get(c, q->xrcd, EMU_OBJ_XRCD);
	struct emu_qp *qp = emu_qp_lookup(c->dev, q->qpn);
	int rc;

	if (!ref || !qp || qp->type != IBV_QPT_XRC_RECV)
		return -EINVAL;
	if (qp->xref->x != ref->x)
		return -EACCES;
	struct emu_xqp *xq = calloc(1, sizeof(*xq));
	if (!xq)
		return -ENOMEM;
	rc = emu_ctx_put(c, EMU_OBJ_XQP, xq, &xq->handle);
	if (rc) {
		free(xq);
		return rc;
	}
	xq->ref = ref;
	xq->qpn = q->qpn;
	xq->user_handle = q->user_handle;
	ref->users++;
	r->handle = xq->handle;
	r->qpn = q->qpn;
	return 0;
}
