/* SPDX-License-Identifier: MIT */
/* XRC (docs/verbs.md "XRC"): domains, XRC SRQs, TGT QPs created and
 * opened. The daemon owns the domain; the file that names a shared one
 * travels as a descriptor (SCM_RIGHTS), never as a path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv.h"

struct ibv_xrcd *urv_open_xrcd(struct ibv_context *ibctx, struct ibv_xrcd_init_attr *a)
{
	struct urv_context *c = to_uctx(ibctx);
	struct uroce_open_xrcd_req req = { .oflags = (uint32_t)a->oflags };
	struct uroce_open_xrcd_rep rep;
	struct urv_xrcd *x;
	int ret;

	/* rdma-core's ibv_cmd_open_xrcd: both fields are mandatory */
	if (a->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) || a->fd < -1) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urv_ctl(c, UROCE_OP_OPEN_XRCD, &req, sizeof(req), &rep, sizeof(rep),
		      a->fd >= 0 ? &a->fd : NULL, a->fd >= 0 ? 1 : 0, NULL, 0);
	if (ret) {
		free(x);
		errno = -ret;
		return NULL;
	}
	x->ibxrcd.context = ibctx;
	x->ctx = c;
	x->handle = rep.handle;
	x->num = rep.xrcdn;
	return &x->ibxrcd;
}

int urv_close_xrcd(struct ibv_xrcd *ibx)
{
	struct urv_xrcd *x = (struct urv_xrcd *)(void *)ibx;
	struct uroce_handle_msg req = { .handle = x->handle };
	int ret;

	ret = urv_ctl(x->ctx, UROCE_OP_CLOSE_XRCD, &req, sizeof(req), NULL, 0, NULL, 0,
		      NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	free(x);
	return 0;
}

/* ibv_create_srq_ex with IBV_SRQT_XRC: a PD, a domain and the CQ its
 * receives complete on, all of this context. */
struct ibv_srq *urv_create_xsrq(struct ibv_context *ibctx, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TYPE;
	struct uroce_create_xsrq_req xq;
	struct ibv_srq_init_attr in;
	struct ibv_srq *srq;

	if (a->comp_mask & ~need) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & need) != need || !a->pd || !a->xrcd || !a->cq ||
	    a->pd->context != ibctx || a->xrcd->context != ibctx || a->cq->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	memset(&xq, 0, sizeof(xq));
	xq.xrcd = ((struct urv_xrcd *)(void *)a->xrcd)->handle;
	xq.cq = a->cq->handle;
	in.srq_context = a->srq_context;
	in.attr = a->attr;
	srq = urv_srq_create_x(a->pd, &in, &xq);
	if (srq)
		a->attr = in.attr;
	return srq;
}

int urv_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	struct urv_srq *s = to_usrq(srq);

	if (!s->xrc)
		return EINVAL; /* only XRC SRQs are named on the wire */
	*num = s->srqn;
	return 0;
}

/* An XRC TGT QP (UROCE_OP_CREATE_XTGT) or a handle on one (OPEN_QP):
 * an ibv_qp without rings, from the attributes in ia. */
struct ibv_qp *urv_xrc_qp_new(struct ibv_context *ibctx, uint32_t op, struct ibv_xrcd *xrcd,
			      uint32_t qpn, const struct ibv_qp_init_attr_ex *ia)
{
	struct uroce_xrc_qp_req req = {
		.xrcd = ((struct urv_xrcd *)(void *)xrcd)->handle,
		.qpn = qpn,
	};
	struct uroce_create_qp_rep rep;
	struct uroce_xrc_qp_rep r;
	struct urv_qp *qp = calloc(1, sizeof(*qp));
	int ret;

	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	urv_obj_add(&qp->obj, URV_OBJ_QP);
	req.user_handle = qp->obj.id;
	ret = urv_ctl(to_uctx(ibctx), op, &req, sizeof(req), &r, sizeof(r), NULL, 0, NULL, 0);
	if (ret) {
		urv_obj_del(&qp->obj);
		free(qp);
		errno = -ret;
		return NULL;
	}
	memset(&rep, 0, sizeof(rep));
	rep.handle = r.handle;
	rep.qpn = r.qpn;
	rep.db_index = UINT32_MAX; /* nothing to post to */
	urv_qp_fill(qp, ibctx, ia, &rep);
	return &qp->ex.qp_base;
}

/* ibv_open_qp: a handle on a TGT QP of this domain, made by any process
 * of it. Its state is the QP's own (query it). */
struct ibv_qp *urv_open_qp(struct ibv_context *ibctx, struct ibv_qp_open_attr *a)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			      IBV_QP_OPEN_ATTR_TYPE;
	struct ibv_qp_init_attr_ex ia;

	if (a->comp_mask & ~(need | IBV_QP_OPEN_ATTR_CONTEXT)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & need) != need || a->qp_type != IBV_QPT_XRC_RECV || !a->xrcd ||
	    a->xrcd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.qp_context = (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? a->qp_context : NULL;
	return urv_xrc_qp_new(ibctx, UROCE_OP_OPEN_QP, a->xrcd, a->qp_num, &ia);
}
