/* SPDX-License-Identifier: MIT */
/* Shared receive queues, XRC SRQs among them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

/* xq: an XRC SRQ of that domain and CQ (xq->srq is filled here) */
struct ibv_srq *urv_srq_create_x(struct ibv_pd *pd, struct ibv_srq_init_attr *a,
				 struct uroce_create_xsrq_req *xq)
{
	struct urv_context *c = to_uctx(pd->context);
	struct uroce_create_xsrq_req xreq;
	struct uroce_create_xsrq_rep xrep;
	struct uroce_create_srq_req *req = xq ? &xq->srq : &xreq.srq;
	struct uroce_create_srq_rep *rep = &xrep.srq;
	struct urv_srq *srq;
	void *map;
	int fd, ret;

	if (!a->attr.max_wr || a->attr.max_wr > (uint32_t)c->info.dev_attr.max_srq_wr ||
	    a->attr.max_sge > (uint32_t)c->info.dev_attr.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	urv_obj_add(&srq->obj, URV_OBJ_SRQ);
	memset(req, 0, sizeof(*req));
	memset(&xrep, 0, sizeof(xrep));
	req->pd = pd->handle;
	req->max_wr = a->attr.max_wr;
	req->max_sge = a->attr.max_sge;
	req->srq_limit = a->attr.srq_limit;
	req->user_handle = srq->obj.id;
	ret = xq ? urv_ctl(c, UROCE_OP_CREATE_XSRQ, xq, sizeof(*xq), &xrep, sizeof(xrep),
			   NULL, 0, &fd, 1)
		 : urv_ctl(c, UROCE_OP_CREATE_SRQ, req, sizeof(*req), rep, sizeof(*rep),
			   NULL, 0, &fd, 1);
	if (ret)
		goto err;
	srq->srqn = xrep.srqn;
	srq->xrc = xq != NULL;
	map = mmap(NULL, rep->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED || !rep->entries || (rep->entries & (rep->entries - 1)) ||
	    UROCE_RING_HDR_SIZE + (uint64_t)rep->entries * rep->stride > rep->map_size) {
		struct uroce_handle_msg d = { .handle = rep->handle };

		ret = map == MAP_FAILED ? -errno : -EPROTO;
		if (map != MAP_FAILED)
			munmap(map, rep->map_size);
		urv_ctl(c, UROCE_OP_DESTROY_SRQ, &d, sizeof(d), NULL, 0, NULL, 0,
			NULL, 0);
		goto err;
	}
	srq->map = map;
	srq->map_size = rep->map_size;
	srq->rq.hdr = map;
	srq->rq.slots = (uint8_t *)map + UROCE_RING_HDR_SIZE;
	srq->rq.entries = rep->entries;
	srq->rq.stride = rep->stride;
	srq->rq.max_wr = rep->max_wr < rep->entries ? rep->max_wr : rep->entries;
	srq->rq.max_sge = rep->max_sge;
	srq->ctx = c;
	srq->db_index = rep->db_index;
	urv_spin_init(&srq->lock);
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = a->srq_context;
	srq->ibsrq.pd = pd;
	srq->ibsrq.handle = rep->handle;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	a->attr.max_wr = rep->max_wr;
	a->attr.max_sge = rep->max_sge;
	return &srq->ibsrq;
err:
	urv_obj_del(&srq->obj);
	free(srq);
	errno = -ret;
	return NULL;
}

struct ibv_srq *urv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{
	return urv_srq_create_x(pd, a, NULL);
}

struct ibv_srq *urv_create_srq_ex(struct ibv_context *ibctx,
				  struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq_init_attr in;
	struct ibv_srq *srq;

	if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type == IBV_SRQT_XRC)
		return urv_create_xsrq(ibctx, a);
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd ||
	    a->pd->context != ibctx ||
	    ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     a->srq_type != IBV_SRQT_BASIC) ||
	    (a->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD |
					IBV_SRQ_INIT_ATTR_TYPE))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	in.srq_context = a->srq_context;
	in.attr = a->attr;
	srq = urv_create_srq(a->pd, &in);
	if (srq)
		a->attr = in.attr;
	return srq;
}

int urv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *a, int mask)
{
	struct uroce_modify_srq_req req;

	memset(&req, 0, sizeof(req));
	req.handle = srq->handle;
	req.attr_mask = (uint32_t)mask;
	/* only the fields the mask names: the others may be uninitialised in
	 * the application and must not travel to the daemon */
	if (mask & IBV_SRQ_MAX_WR)
		req.attr.max_wr = a->max_wr;
	if (mask & IBV_SRQ_LIMIT)
		req.attr.srq_limit = a->srq_limit;
	if (!(mask & IBV_SRQ_MAX_WR))
		return -urv_ctl(to_usrq(srq)->ctx, UROCE_OP_MODIFY_SRQ, &req,
				sizeof(req), NULL, 0, NULL, 0, NULL, 0);

	/* growing: the daemon answers with the ring in use (a new one when it
	 * grew, holding the WQEs not consumed yet); posts wait meanwhile */
	struct urv_srq *s = to_usrq(srq);
	struct uroce_create_srq_rep rep;
	int fd = -1, ret;
	void *map;

	urv_spin_lock(&s->lock);
	ret = urv_ctl(s->ctx, UROCE_OP_MODIFY_SRQ, &req, sizeof(req), &rep, sizeof(rep),
		      NULL, 0, &fd, 1);
	if (ret)
		goto out;
	map = mmap(NULL, rep.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	if (!rep.entries || (rep.entries & (rep.entries - 1)) || rep.stride != s->rq.stride ||
	    UROCE_RING_HDR_SIZE + (uint64_t)rep.entries * rep.stride > rep.map_size) {
		munmap(map, rep.map_size);
		ret = -EPROTO;
		goto out;
	}
	munmap(s->map, s->map_size);
	s->map = map;
	s->map_size = rep.map_size;
	s->rq.hdr = map;
	s->rq.slots = (uint8_t *)map + UROCE_RING_HDR_SIZE;
	s->rq.entries = rep.entries;
	s->rq.max_wr = rep.max_wr < rep.entries ? rep.max_wr : rep.entries;
out:
	urv_spin_unlock(&s->lock);
	if (fd >= 0)
		close(fd);
	return -ret;
}

int urv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *a)
{
	struct uroce_handle_msg req = { .handle = srq->handle };

	return -urv_ctl(to_usrq(srq)->ctx, UROCE_OP_QUERY_SRQ, &req,
			sizeof(req), a, sizeof(*a), NULL, 0, NULL, 0);
}

int urv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct urv_srq *srq = to_usrq(ibsrq);
	struct uroce_handle_msg req = { .handle = ibsrq->handle };
	int ret;

	ret = urv_ctl(srq->ctx, UROCE_OP_DESTROY_SRQ, &req, sizeof(req), NULL,
		      0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	urv_obj_del(&srq->obj);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->obj.events_got)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	munmap(srq->map, srq->map_size);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
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
