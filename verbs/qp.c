/* SPDX-License-Identifier: MIT */
/* Queue pairs: created by the daemon, whose rings the shim produces into;
 * XRC TGT QPs (without rings) created and opened. */
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

static int wq_setup(struct urv_wq *wq, void *map, size_t map_size,
		    uint64_t off, uint32_t entries, uint32_t stride,
		    uint32_t max_wr, uint32_t max_sge)
{
	if (!entries)
		return 0;
	if ((entries & (entries - 1)) || (stride & (stride - 1)) ||
	    off + UROCE_RING_HDR_SIZE + (uint64_t)entries * stride > map_size)
		return -EPROTO;
	wq->hdr = (struct uroce_ring_hdr *)(void *)((char *)map + off);
	wq->slots = (uint8_t *)wq->hdr + UROCE_RING_HDR_SIZE;
	wq->entries = entries;
	wq->stride = stride;
	wq->max_wr = max_wr < entries ? max_wr : entries;
	wq->max_sge = max_sge;
	wq->cons_seen = __atomic_load_n(&wq->hdr->cons, __ATOMIC_ACQUIRE);
	return 0;
}

/* Validate the application's attributes; an errno, or 0. */
static int qp_create_check(struct ibv_context *ibctx,
			   const struct ibv_qp_init_attr_ex *a)
{
	const struct ibv_device_attr *da = &to_uctx(ibctx)->info.dev_attr;
	uint32_t unknown = a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
						      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
						      IBV_QP_INIT_ATTR_CREATE_FLAGS |
						      IBV_QP_INIT_ATTR_XRCD);

	if (unknown)
		return EOPNOTSUPP;
	/* an XRC TGT QP has a domain and nothing else of its own */
	if (a->qp_type == IBV_QPT_XRC_RECV)
		return (a->comp_mask & IBV_QP_INIT_ATTR_XRCD) && a->xrcd &&
		       a->xrcd->context == ibctx && !a->srq ? 0 : EINVAL;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != ibctx)
		return EINVAL;
	/* the mask may name create_flags as long as none is asked for (as
	 * rxe answers): rdma-core's suite sets it at random with 0 flags */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC &&
	    a->qp_type != IBV_QPT_UD && a->qp_type != IBV_QPT_XRC_SEND)
		return EOPNOTSUPP;
	/* an XRC INI QP only sends: no receive CQ needed, no SRQ */
	if (a->qp_type == IBV_QPT_XRC_SEND && (a->srq || a->cap.max_recv_wr))
		return EINVAL;
	if (!a->send_cq || (!a->recv_cq && a->qp_type != IBV_QPT_XRC_SEND) ||
	    a->send_cq->context != ibctx || (a->recv_cq && a->recv_cq->context != ibctx) ||
	    (a->srq && a->srq->context != ibctx) ||
	    a->cap.max_send_wr > (uint32_t)da->max_qp_wr ||
	    a->cap.max_recv_wr > (uint32_t)da->max_qp_wr ||
	    a->cap.max_send_sge > (uint32_t)da->max_sge ||
	    a->cap.max_recv_sge > (uint32_t)da->max_sge)
		return EINVAL;
	return 0;
}

/* The arena chunk a reply names, mapped once per connection (o, under
 * its ctl_lock): from the descriptor the reply brought when the chunk is
 * new, else the mapping made then. NULL with *err on a reply that does
 * not fit what we have. */
static uint8_t *arena_chunk(struct urv_context *o, const struct uroce_create_qp_arena_rep *rep,
			    int fd, int *err)
{
	uint32_t k = rep->chunk;

	*err = -EPROTO;
	if (!(rep->flags & UROCE_ARENA_F_NEW))
		return k < o->narena && o->arena[k] ? o->arena[k] : NULL;
	if (fd < 0 || rep->chunk_size != UROCE_ARENA_CHUNK || k >= (1u << 20) ||
	    (k < o->narena && o->arena[k]))
		return NULL;
	if (k >= o->narena) {
		uint32_t n = o->narena ? o->narena : 16;

		while (n <= k)
			n *= 2;
		uint8_t **t = realloc(o->arena, n * sizeof(*t));
		if (!t) {
			*err = -ENOMEM;
			return NULL;
		}
		memset(t + o->narena, 0, (n - o->narena) * sizeof(*t));
		o->arena = t;
		o->narena = n;
	}
	void *map = mmap(NULL, UROCE_ARENA_CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	o->arena[k] = map;
	return map;
}

/* Point SQ and RQ into the rings the daemon made: in an arena chunk, or
 * (UROCE_ARENA_OWN) a memfd of their own, mapped here and unmapped when
 * the QP goes. fd: the descriptor the reply brought, or -1; closed here. */
static int qp_map_rings(struct urv_qp *qp, struct urv_context *o,
			const struct uroce_create_qp_arena_rep *ar, int fd, bool has_srq)
{
	const struct uroce_create_qp_rep *rep = &ar->qp;
	uint8_t *base;
	size_t size;
	int ret = 0;

	if (ar->chunk == UROCE_ARENA_OWN) {
		void *m = fd < 0 || ar->chunk_size != rep->map_size ? MAP_FAILED :
			mmap(NULL, rep->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			ret = fd < 0 ? -EPROTO : -errno;
		else
			qp->map = m;
		base = m;
		size = rep->map_size;
	} else {
		base = arena_chunk(o, ar, fd, &ret);
		size = UROCE_ARENA_CHUNK;
	}
	if (fd >= 0)
		close(fd);
	if (!base || base == MAP_FAILED)
		return ret;
	ret = wq_setup(&qp->sq, base, size, rep->sq_offset,
		       rep->sq_entries, rep->sq_stride, rep->cap.max_send_wr,
		       rep->cap.max_send_sge);
	if (!ret && !has_srq)
		ret = wq_setup(&qp->rq, base, size, rep->rq_offset,
			       rep->rq_entries, rep->rq_stride,
			       rep->cap.max_recv_wr, rep->cap.max_recv_sge);
	if (ret && qp->map) {
		munmap(qp->map, rep->map_size);
		qp->map = NULL;
	}
	qp->map_size = rep->map_size;
	return ret;
}

/* The ibv_qp the application sees, in RESET. */
void urv_qp_fill(struct urv_qp *qp, struct ibv_context *ibctx,
		 const struct ibv_qp_init_attr_ex *a, const struct uroce_create_qp_rep *rep)
{
	struct ibv_qp *q = &qp->ex.qp_base;

	qp->ctx = to_uctx(ibctx);
	qp->db_index = rep->db_index;
	qp->cap = rep->cap;
	qp->sq_sig_all = (uint32_t)!!a->sq_sig_all;
	urv_spin_init(&qp->sq_lock);
	urv_spin_init(&qp->rq_lock);
	q->context = ibctx;
	q->qp_context = a->qp_context;
	q->pd = a->pd;
	qp->pdom = urv_pdom_get(a->pd);
	q->send_cq = a->send_cq;
	q->recv_cq = a->recv_cq;
	q->srq = a->srq;
	q->handle = rep->handle;
	q->qp_num = rep->qpn;
	q->state = IBV_QPS_RESET;
	q->qp_type = a->qp_type;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	urv_qp_ex_init(qp);
}

/* validate -> ask the daemon -> map its rings -> fill the ibv_qp. */
struct ibv_qp *urv_create_qp_ex(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *a)
{
	struct urv_context *c = to_uctx(ibctx), *o;
	struct uroce_create_qp_req req;
	struct uroce_create_qp_arena_rep rep;
	struct urv_qp *qp;
	int fd, ret;

	ret = qp_create_check(ibctx, a);
	if (ret) {
		errno = ret;
		return NULL;
	}
	if (a->qp_type == IBV_QPT_XRC_RECV)
		return urv_xrc_qp_new(ibctx, UROCE_OP_CREATE_XTGT, a->xrcd, 0, a);
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	urv_obj_add(&qp->obj, URV_OBJ_QP);
	memset(&req, 0, sizeof(req));
	req.pd = a->pd->handle;
	req.send_cq = a->send_cq->handle;
	/* the daemon's INI QP names a receive CQ it never uses */
	req.recv_cq = (a->recv_cq ? a->recv_cq : a->send_cq)->handle;
	req.srq = a->srq ? (int32_t)a->srq->handle : -1;
	req.qp_type = a->qp_type;
	req.sq_sig_all = (uint32_t)!!a->sq_sig_all;
	req.cap = a->cap;
	if (a->srq) {
		req.cap.max_recv_wr = 0;
		req.cap.max_recv_sge = 0;
	}
	req.user_handle = qp->obj.id;
	/* the lock stays held until the chunk a reply names is mapped: a
	 * later reply may name it without its descriptor. After a fork the
	 * arena's chunks are no longer this process's alone (a chunk another
	 * process mapped would come without its descriptor): rings of their
	 * own then, as before the arena */
	bool forked = urv_ctl_forked_now();

	o = urv_ctl_hold(c);
	if (forked) {
		memset(&rep, 0, sizeof(rep));
		ret = urv_ctl_held(o, UROCE_OP_CREATE_QP, &req, sizeof(req), &rep.qp,
				   sizeof(rep.qp), NULL, 0, &fd, 1);
		rep.chunk = UROCE_ARENA_OWN;
		rep.flags = UROCE_ARENA_F_NEW;
		rep.chunk_size = rep.qp.map_size;
	} else {
		ret = urv_ctl_held(o, UROCE_OP_CREATE_QP_ARENA, &req, sizeof(req), &rep,
				   sizeof(rep), NULL, 0, &fd, -1);
	}
	if (!ret) {
		ret = qp_map_rings(qp, o, &rep, fd, a->srq || a->qp_type == IBV_QPT_XRC_SEND);
		if (ret) {
			struct uroce_handle_msg d = { .handle = rep.qp.handle };

			urv_ctl_held(o, UROCE_OP_DESTROY_QP, &d, sizeof(d), NULL, 0, NULL, 0,
				     NULL, 0);
		}
	}
	urv_ctl_release(o);
	if (ret) {
		urv_obj_del(&qp->obj);
		free(qp);
		errno = -ret;
		return NULL;
	}
	urv_qp_fill(qp, ibctx, a, &rep.qp);
	a->cap = rep.qp.cap;
	return &qp->ex.qp_base;
}

struct ibv_qp *urv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = a->qp_context;
	ex.send_cq = a->send_cq;
	ex.recv_cq = a->recv_cq;
	ex.srq = a->srq;
	ex.cap = a->cap;
	ex.qp_type = a->qp_type;
	ex.sq_sig_all = a->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = urv_create_qp_ex(pd->context, &ex);
	if (qp)
		a->cap = ex.cap;
	return qp;
}

/* Only the members the mask names, into a zeroed dst: ibv_modify_qp(3)
 * reads no others, so the application may leave them (and the padding)
 * uninitialised, and they must not travel to the daemon. */
static void urv_qp_attr_copy(struct ibv_qp_attr *d, const struct ibv_qp_attr *a,
			     int mask)
{
	if (mask & IBV_QP_STATE)
		d->qp_state = a->qp_state;
	if (mask & IBV_QP_CUR_STATE)
		d->cur_qp_state = a->cur_qp_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		d->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		d->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		d->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		d->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		d->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		urv_ah_attr_copy(&d->ah_attr, &a->ah_attr);
	if (mask & IBV_QP_PATH_MTU)
		d->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		d->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		d->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		d->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		d->rq_psn = a->rq_psn;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		d->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		urv_ah_attr_copy(&d->alt_ah_attr, &a->alt_ah_attr);
		d->alt_pkey_index = a->alt_pkey_index;
		d->alt_port_num = a->alt_port_num;
		d->alt_timeout = a->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		d->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		d->sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		d->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		d->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_CAP)
		d->cap = a->cap;
	if (mask & IBV_QP_DEST_QPN)
		d->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RATE_LIMIT)
		d->rate_limit = a->rate_limit;
}

int urv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct uroce_modify_qp_req req;
	int ret;

	memset(&req, 0, sizeof(req));
	req.handle = ibqp->handle;
	req.attr_mask = (uint32_t)mask;
	urv_qp_attr_copy(&req.attr, a, mask);
	ret = urv_ctl(qp->ctx, UROCE_OP_MODIFY_QP, &req, sizeof(req), NULL, 0,
		      NULL, 0, NULL, 0);
	if (ret)
		return -ret;
	if (mask & IBV_QP_STATE)
		ibqp->state = a->qp_state;
	if ((mask & IBV_QP_STATE) && a->qp_state == IBV_QPS_RESET) {
		if (ibqp->recv_cq)
			urv_cq_clean(ibqp->recv_cq, ibqp->qp_num);
		if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
			urv_cq_clean(ibqp->send_cq, ibqp->qp_num);
	}
	return 0;
}

int urv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
		 struct ibv_qp_init_attr *init)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct uroce_query_qp_req req = {
		.handle = ibqp->handle,
		.attr_mask = (uint32_t)mask,
	};
	struct uroce_query_qp_rep rep;
	int ret;

	ret = urv_ctl(qp->ctx, UROCE_OP_QUERY_QP, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret)
		return -ret;
	*a = rep.attr;
	a->cap = rep.cap;
	ibqp->state = rep.attr.qp_state;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
		init->cap = rep.cap;
		init->qp_type = ibqp->qp_type;
		init->sq_sig_all = (int)rep.sq_sig_all;
	}
	return 0;
}

int urv_destroy_qp(struct ibv_qp *ibqp)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct uroce_handle_msg req = { .handle = ibqp->handle };
	int ret;

	ret = urv_ctl(qp->ctx, UROCE_OP_DESTROY_QP, &req, sizeof(req), NULL, 0,
		      NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	urv_obj_del(&qp->obj);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->obj.events_got)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	if (qp->map)
		munmap(qp->map, qp->map_size);
	urv_pdom_put(qp->pdom);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(qp);
	return 0;
}

static int mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid,
		 uint32_t op)
{
	struct uroce_mcast_req req;

	if (ibqp->qp_type != IBV_QPT_UD)
		return EINVAL;
	memset(&req, 0, sizeof(req));
	req.qp = ibqp->handle;
	req.lid = lid;
	req.gid = *gid;
	return -urv_ctl(to_uqp(ibqp)->ctx, op, &req, sizeof(req), NULL, 0, NULL,
			0, NULL, 0);
}

int urv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, gid, lid, UROCE_OP_ATTACH_MCAST);
}

int urv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, gid, lid, UROCE_OP_DETACH_MCAST);
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
