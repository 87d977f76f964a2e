/* SPDX-License-Identifier: MIT */
/* Queue pairs: create with full validation (caps, QPN, rings in the
 * context's arena or a memfd of their own, doorbell), modify and query
 * through the transport (d->xops), destroy. Handles are scoped to the context, so another context's handle is
 * simply unknown (-EINVAL); an object still referenced is -EBUSY, as the
 * kernel answers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_int.h"

static int emu_qpn_alloc(struct emu_dev *d, struct emu_qp *qp)
{
	if (d->nqp >= EMU_MAX_QP)
		return -ENOMEM;
	/* round robin so a destroyed QPN is not reused at once (late
	 * packets of the old QP must not reach a new one) */
	for (uint32_t k = 0; k < EMU_QPN_TABLE; k++) {
		uint32_t n = d->next_qpn++;
		if (d->next_qpn >= EMU_QPN_TABLE)
			d->next_qpn = EMU_QPN_FIRST;
		if (n < EMU_QPN_FIRST || d->qpn[n])
			continue;
		d->qpn[n] = qp;
		d->nqp++;
		qp->qpn = n;
		return 0;
	}
	return -ENOMEM;
}

/* Ring geometry of one QP: computed once, used for the charge, the mapping,
 * the reported caps and the reply. */
struct emu_qp_layout {
	uint32_t sq_entries, sq_stride, rq_entries, rq_stride;
	size_t sq_size, size;
};

/* validate: objects exist, type and caps within limits; *cap is adjusted
 * (no receive queue with an SRQ) */
static int emu_qp_check(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct emu_srq **srqp, struct ibv_qp_cap *cap)
{
	struct emu_srq *srq = NULL;

	if (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC && q->qp_type != IBV_QPT_UD &&
	    q->qp_type != IBV_QPT_XRC_SEND && q->qp_type != IBV_QPT_XRC_RECV)
		return -EOPNOTSUPP;
	/* XRC QPs have no receive queue: INI QPs only send, TGT QPs take
	 * the XRC SRQ each request names */
	if (q->qp_type == IBV_QPT_XRC_SEND || q->qp_type == IBV_QPT_XRC_RECV) {
		if (q->srq != -1)
			return -EINVAL;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (q->srq != -1) {
		srq = emu_ctx_get(c, (uint32_t)q->srq, EMU_OBJ_SRQ);
		if (!srq)
			return -EINVAL;
	}
	if (cap->max_send_wr > EMU_MAX_QP_WR || cap->max_send_sge > EMU_MAX_SGE ||
	    cap->max_inline_data > EMU_MAX_INLINE)
		return -EINVAL;
	if (srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else if (cap->max_recv_wr > EMU_MAX_QP_WR || cap->max_recv_sge > EMU_MAX_SGE ||
		   (emu_qp_no_rq(q->qp_type) && cap->max_recv_wr)) {
		return -EINVAL;
	}
	*srqp = srq;
	return 0;
}

static void emu_qp_layout(const struct ibv_qp_cap *cap, bool srq, struct emu_qp_layout *l)
{
	l->sq_entries = pow2_at_least(cap->max_send_wr ? cap->max_send_wr : 1);
	uint32_t sbody = cap->max_send_sge * (uint32_t)sizeof(struct uroce_sge);
	if (cap->max_inline_data > sbody)
		sbody = cap->max_inline_data;
	if (sbody < sizeof(struct uroce_sge))
		sbody = sizeof(struct uroce_sge);
	l->sq_stride = pow2_at_least(UROCE_SEND_WQE_HDR + sbody);
	l->rq_entries = srq ? 0 : pow2_at_least(cap->max_recv_wr ? cap->max_recv_wr : 1);
	uint32_t rsge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	l->rq_stride = srq ? 0 : emu_recv_stride(rsge);
	l->sq_size = emu_ring_bytes(l->sq_entries, l->sq_stride);
	size_t rq_size = srq ? 0 : emu_ring_bytes(l->rq_entries, l->rq_stride);
	l->size = l->sq_size + (srq ? 4096 : rq_size); /* an unused RQ header with an SRQ */
}

/* report what the rings can really hold (>= requested) */
static void emu_qp_real_caps(struct emu_qp *qp, const struct emu_qp_layout *l)
{
	qp->cap.max_send_wr = l->sq_entries;
	qp->cap.max_send_sge = (l->sq_stride - UROCE_SEND_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (qp->cap.max_send_sge > EMU_MAX_SGE)
		qp->cap.max_send_sge = EMU_MAX_SGE;
	qp->cap.max_inline_data = l->sq_stride - UROCE_SEND_WQE_HDR;
	if (qp->cap.max_inline_data > EMU_MAX_INLINE)
		qp->cap.max_inline_data = EMU_MAX_INLINE;
	qp->cap.max_recv_wr = l->rq_entries;
	qp->cap.max_recv_sge = !l->rq_entries ? 0 :
		(l->rq_stride - UROCE_RECV_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (qp->cap.max_recv_sge > EMU_MAX_SGE)
		qp->cap.max_recv_sge = EMU_MAX_SGE;
}

static void emu_qp_reply(const struct emu_qp *qp, const struct emu_qp_layout *l,
			 struct uroce_create_qp_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->handle = qp->handle;
	r->qpn = qp->qpn;
	r->db_index = qp->db_index;
	r->cap = qp->cap;
	r->sq_entries = l->sq_entries;
	r->sq_stride = l->sq_stride;
	r->rq_entries = l->rq_entries;
	r->rq_stride = l->rq_stride;
	r->sq_offset = 0;
	r->rq_offset = l->sq_size;
	r->map_size = l->size;
}

/* The rings' memory: a memfd of their own (ar NULL, or rings larger than
 * the arena takes) or a piece of the arena (*off in its chunk); what it
 * costs is charged to c (an arena chunk is charged whole when it is made,
 * arena.c). *new_fd: an arena chunk's descriptor to send, or -1. */
static int emu_qp_rings_get(struct emu_ctx *c, struct emu_qp *qp, const struct emu_qp_layout *l,
			    struct uroce_create_qp_arena_rep *ar, int *new_fd, uint64_t *off)
{
	/* the transport's private copy of the send queue */
	uint64_t charge = (uint64_t)l->sq_entries * (l->sq_stride + c->dev->xops->swqe_size);
	bool own = !ar || l->size > UROCE_ARENA_MAX_RINGS;
	struct emu_arena_piece p;
	int rc;

	*new_fd = -1;
	*off = 0;
	if (own)
		charge += l->size;
	rc = emu_ctx_charge(c, charge);
	if (rc)
		return rc;
	qp->charged = charge;
	qp->map_size = l->size;
	if (own) {
		rc = emu_shm_create("uroce-qp", l->size, &qp->memfd, &qp->map);
		if (!rc && ar) {
			ar->chunk = UROCE_ARENA_OWN;
			ar->flags = UROCE_ARENA_F_NEW;
			ar->chunk_size = l->size;
		}
	} else {
		rc = emu_arena_alloc(c, l->size, &p);
		if (!rc) {
			qp->memfd = -1;
			qp->map = p.map;
			*new_fd = p.new_fd;
			*off = p.off;
			ar->chunk = p.chunk;
			ar->flags = p.new_fd >= 0 ? UROCE_ARENA_F_NEW : 0;
			ar->chunk_size = UROCE_ARENA_CHUNK;
		}
	}
	if (rc)
		emu_ctx_uncharge(c, charge);
	return rc;
}

static void emu_qp_rings_put(struct emu_ctx *c, struct emu_qp *qp)
{
	if (qp->memfd >= 0)
		emu_shm_destroy(qp->memfd, qp->map, qp->map_size);
	else
		emu_arena_free(c, qp->map, qp->map_size);
	emu_ctx_uncharge(c, qp->charged);
}

/* validate -> allocate -> publish; ar NULL: CREATE_QP (a memfd of its
 * own in *fd_out), else CREATE_QP_ARENA; xref: an XRC TGT QP of that
 * domain, which has no PD, CQ or doorbell of its own (q names none) and
 * whose rings never leave the daemon */
static int emu_qp_new(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		      struct emu_xrcd_ref *xref, struct uroce_create_qp_rep *r,
		      struct uroce_create_qp_arena_rep *ar, int *fd_out)
{
	struct emu_dev *d = c->dev;
	struct emu_pd *pd = xref ? NULL : emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	struct emu_cq *scq = xref ? NULL : emu_ctx_get(c, q->send_cq, EMU_OBJ_CQ);
	struct emu_cq *rcq = xref ? NULL : emu_ctx_get(c, q->recv_cq, EMU_OBJ_CQ);
	struct emu_srq *srq = NULL;
	struct ibv_qp_cap cap = q->cap;
	struct emu_qp_layout l;
	uint64_t off;
	int rc, new_fd;

	if ((!pd || !scq || !rcq) != !!xref || (q->qp_type == IBV_QPT_XRC_RECV) != !!xref)
		return -EINVAL;
	if (emu_ctx_quota(c, EMU_OBJ_QP))
		return -ENOMEM; /* before the queue memory is made */
	rc = emu_qp_check(c, q, &srq, &cap);
	if (rc)
		return rc;

	/* the transport's state of the QP follows it (qp->x, XQP) */
	struct emu_qp *qp = calloc(1, sizeof(*qp) + d->xops->qp_size);
	if (!qp)
		return -ENOMEM;
	emu_qp_layout(&cap, srq || emu_qp_no_rq(q->qp_type), &l);
	rc = emu_qp_rings_get(c, qp, &l, ar, &new_fd, &off);
	if (rc) {
		free(qp);
		return rc;
	}
	qp->dev = d;
	qp->x = (struct emu_xport_qp *)(qp + 1);
	qp->ctx = c;
	qp->type = (enum ibv_qp_type)q->qp_type;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->srq = srq;
	qp->sq_sig_all = q->sq_sig_all != 0;
	qp->user_handle = q->user_handle;
	emu_ring_init(&qp->sq, qp->map, l.sq_entries, l.sq_stride);
	emu_ring_init(&qp->rq, (uint8_t *)qp->map + l.sq_size, l.rq_entries, l.rq_stride);
	emu_qp_real_caps(qp, &l);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.cap = qp->cap;
	qp->attr.port_num = 1;

	rc = emu_qpn_alloc(d, qp);
	if (rc)
		goto err_shm;
	rc = emu_ctx_put(c, EMU_OBJ_QP, qp, &qp->handle);
	if (rc)
		goto err_qpn;
	/* a TGT QP has nothing the client posts to: no doorbell, and its
	 * rings never leave the daemon */
	qp->db_index = UINT32_MAX;
	rc = xref ? 0 : emu_db_alloc(c, EMU_OBJ_QP, qp, &qp->db_index);
	if (rc)
		goto err_handle;
	if (xref) {
		qp->xref = xref;
		xref->users++;
	} else {
		pd->refcnt++;
		scq->refcnt++;
		rcq->refcnt++;
	}
	if (srq)
		srq->refcnt++;
	c->dev->xops->qp_init(qp);

	emu_qp_reply(qp, &l, r);
	r->sq_offset += off;
	r->rq_offset += off;
	*fd_out = xref ? -1 : new_fd >= 0 ? new_fd : qp->memfd;
	return 0;

err_handle:
	emu_ctx_drop(c, qp->handle);
err_qpn:
	d->qpn[qp->qpn] = NULL;
	d->nqp--;
err_shm:
	/* a chunk made for this QP stays in the arena (charged, empty) */
	if (new_fd >= 0)
		close(new_fd);
	emu_qp_rings_put(c, qp);
	free(qp);
	return rc;
}

int emu_qp_create(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		  struct uroce_create_qp_rep *r, int *memfd_out)
{
	return emu_qp_new(c, q, NULL, r, NULL, memfd_out);
}

int emu_qp_create_x(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		    struct emu_xrcd_ref *xref, struct uroce_create_qp_rep *r, int *memfd_out)
{
	return emu_qp_new(c, q, xref, r, NULL, memfd_out);
}

int emu_qp_create_arena(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct uroce_create_qp_arena_rep *r, int *fd_out, bool *fd_close)
{
	memset(r, 0, sizeof(*r));
	int rc = emu_qp_new(c, q, NULL, &r->qp, r, fd_out);
	/* an arena chunk's descriptor is the client's once sent; a QP's own
	 * memfd stays with it (as CREATE_QP's) */
	*fd_close = !rc && r->chunk != UROCE_ARENA_OWN;
	return rc;
}

int emu_qp_modify_op(struct emu_ctx *c, const struct uroce_modify_qp_req *q)
{
	struct emu_qp *qp = emu_qp_of_handle(c, q->handle);

	if (!qp)
		return -EINVAL;
	/* the kernel's modify_qp (uverbs): a controlled Q_Key is for
	 * CAP_NET_RAW only, else a user could speak for the host on QP1 */
	if ((q->attr_mask & IBV_QP_QKEY) && (q->attr.qkey & UROCE_QKEY_CONTROLLED) &&
	    !c->privileged)
		return -EPERM;
	return c->dev->xops->qp_modify(qp, &q->attr, (int)q->attr_mask);
}

int emu_qp_query_op(struct emu_ctx *c, const struct uroce_query_qp_req *q,
		    struct uroce_query_qp_rep *r)
{
	struct emu_qp *qp = emu_qp_of_handle(c, q->handle);

	if (!qp)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	int rc = c->dev->xops->qp_query(qp, &r->attr, (int)q->attr_mask);
	if (rc)
		return rc;
	r->cap = qp->cap;
	r->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int emu_qp_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_qp *qp = emu_ctx_get(c, handle, EMU_OBJ_QP);
	struct emu_dev *d = c->dev;

	if (emu_ctx_get(c, handle, EMU_OBJ_XQP))
		return emu_xrc_qp_close(c, handle);
	if (!qp)
		return -EINVAL;
	if (qp->xref && emu_xrc_tgt_handover(c, handle, qp))
		return 0; /* another context has it open: it lives on there */
	if (qp->mcast_groups && !c->dead)
		return -EBUSY; /* rxe: detach multicast groups first */
	/* WRs posted before the destroy call are on the wire with a NIC (its
	 * doorbell is microseconds, a destroy a firmware command): send what
	 * the doorbells announce before the QP goes. Datagram protocols over
	 * UD (libfabric's rxd) post their last ACK and close right away. */
	if (!c->dead)
		emu_ctx_doorbells(c);
	emu_mcast_detach_all(qp);
	/* type 2 windows bound through this QP lose their binding (a scan of
	 * every handle: only when there are windows) */
	for (uint32_t i = 0; c->nobj[EMU_OBJ_MW] && i < c->nh; i++) {
		if (c->h[i].type == EMU_OBJ_MW) {
			struct emu_mw *mw = c->h[i].obj;
			if (mw->qp == qp)
				emu_mw_release(mw);
		}
	}
	d->qpn[qp->qpn] = NULL;
	d->nqp--;
	c->dev->xops->qp_fini(qp);
	if (d->nqp == 0)
		emu_ctx_reap(d); /* no transport state can point at a zombie now */
	emu_db_free(c, qp->db_index);
	if (qp->xref) {
		qp->xref->users--; /* pd, recv_cq, srq: an XRC SRQ's, borrowed */
	} else {
		qp->pd->refcnt--;
		qp->send_cq->refcnt--;
		qp->recv_cq->refcnt--;
		if (qp->srq)
			qp->srq->refcnt--;
	}
	__atomic_fetch_or(&qp->sq.hdr->flags, UROCE_RING_F_ERROR, __ATOMIC_RELEASE);
	emu_qp_rings_put(c, qp);
	emu_ctx_drop(c, handle);
	free(qp);
	return 0;
}
