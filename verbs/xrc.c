/* SPDX-License-Identifier: MIT */
/* XRC domains (docs/verbs.md "XRC"; XRC SRQs: srq.c, TGT QPs: qp.c). The
 * daemon owns the domain; the file that names a shared one travels as a
 * descriptor (SCM_RIGHTS), never as a path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

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
