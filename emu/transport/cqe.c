/* SPDX-License-Identifier: MIT */
/* Completions and asynchronous events of QPs: CQEs into their rings
 * (emu_cq_put / emu_cq_publish, core/cq.c), held in the RX burst while one
 * is open, the SQ consumer indices the completer retires, and a QP in
 * error: to ERR with its async event, every outstanding and later work
 * request completed with IBV_WC_WR_FLUSH_ERR, in order. The flush and the
 * CQE push are one file because they recurse into each other (a flush CQE
 * that overruns its CQ errors the QP, which flushes again); the completer
 * retires and xp_qp_error flushes through here, so neither depends on the
 * other. */
#include <errno.h>
#include <string.h>
#include "xport_int.h"

void xp_event(struct emu_qp *qp, enum ibv_event_type ev)
{
	if (qp->ctx)
		emu_async_event(qp->ctx, qp->user_handle, ev);
}

/* CQEs produced while an RX burst is worked through wait in the burst
 * (struct emu_burst, core/emu_burst.h; d->burst while it is open) and enter
 * their rings at its end, right after the deferred payload writes
 * (emu_mem_batch): a burst of SENDs then costs one process_vm_writev
 * instead of one per message, as each CQE would otherwise flush. */

/* SQ consumer indices moved during a burst are published once, at its
 * end, before its CQEs: a slot is still free before its CQE is seen. */
static void xp_sq_sync(struct emu_burst *b, const struct emu_ctx *skip)
{
	for (unsigned i = 0; i < b->nsq && i < EMU_BURST_CQES; i++)
		if (b->sq[i]->ctx != skip)
			emu_ring_sync(&b->sq[i]->sq);
	b->nsq = 0;
}

void xp_sq_retire(struct emu_qp *qp, uint32_t cons)
{
	struct emu_burst *b = qp->dev->burst;
	unsigned k;

	if (!b || !b->hold) {
		emu_ring_publish(&qp->sq, cons);
		return;
	}
	qp->sq.cons = cons;
	for (k = 0; k < b->nsq && b->sq[k] != qp; k++)
		;
	if (k < b->nsq)
		return;
	if (b->nsq == EMU_BURST_CQES)
		emu_ring_sync(&qp->sq); /* a burst over many QPs: at once */
	else
		b->sq[b->nsq++] = qp;
}

/* Write a CQE without publishing it (emu_cq_put). */
static void xp_cq_put(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
		      const struct uroce_cqe_inl *inl, uint64_t ts)
{
	e->qp_num = qp->qpn;
	if (emu_cq_put(cq, e, inl, ts) == -ENOSPC && qp->attr.qp_state != IBV_QPS_ERR) {
		/* The CQ is dead (CQ_ERR raised by the core); a QP that can no
		 * longer report completions is in a fatal state. */
		xp_qp_error(qp, IBV_EVENT_QP_FATAL);
	}
}

static void xp_cq_push_now(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
			   const struct uroce_cqe_inl *inl)
{
	uint64_t now = 0;

	xp_cq_put(qp, cq, e, inl, emu_cq_stamp(cq, &now));
	emu_cq_publish(cq);
}

/* The held-back CQEs enter their rings with at most one clock read for
 * all of them (none unless a CQ wants timestamps) and one producer-index
 * store (and arm check) per ring. */
static void xp_burst_drain(struct emu_dev *d, struct emu_burst *b)
{
	struct emu_cq *touched[EMU_BURST_CQES];
	unsigned nt = 0;
	bool on = b->hold;

	xp_sq_sync(b, NULL);
	if (!b->n)
		return;
	emu_mem_flush(d); /* the data the CQEs announce goes first */
	b->hold = false; /* an overrun flushes a QP: those CQEs go directly */
	uint64_t now = 0;
	for (unsigned i = 0; i < b->n; i++) {
		struct emu_cq *cq = b->cqe[i].cq;
		unsigned k;

		xp_cq_put(b->cqe[i].qp, cq, &b->cqe[i].e, &b->cqe[i].inl,
			  emu_cq_stamp(cq, &now));
		for (k = 0; k < nt && touched[k] != cq; k++)
			;
		if (k == nt)
			touched[nt++] = cq;
	}
	for (unsigned k = 0; k < nt; k++)
		emu_cq_publish(touched[k]);
	b->n = 0;
	b->hold = on;
}

void xp_cq_push_inl(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
		    const struct uroce_cqe_inl *inl)
{
	struct emu_burst *b = qp->dev->burst;

	if (!cq)
		return;
	if (!inl)
		e->inl_nseg = 0;
	if (b && b->hold) {
		if (b->n == EMU_BURST_CQES)
			xp_burst_drain(qp->dev, b);
		b->cqe[b->n].qp = qp;
		b->cqe[b->n].cq = cq;
		b->cqe[b->n].e = *e;
		if (e->inl_nseg) {
			memcpy(b->cqe[b->n].inl.seg, inl->seg,
			       e->inl_nseg * sizeof(inl->seg[0]));
			memcpy(b->cqe[b->n].inl.data, inl->data, e->byte_len);
		}
		b->n++;
		return;
	}
	emu_mem_flush(qp->dev); /* the data a CQE announces must be in place first */
	xp_cq_push_now(qp, cq, e, inl);
}

void xp_cq_push(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e)
{
	xp_cq_push_inl(qp, cq, e, NULL);
}

void emu_rx_burst_begin(struct emu_dev *d, struct emu_burst *b)
{
	d->burst = b;
	emu_mem_batch(d, true);
	b->hold = true;
}

void emu_rx_burst_end(struct emu_dev *d)
{
	struct emu_burst *b = d->burst;

	if (!b)
		return;
	emu_mem_batch(d, false);
	xp_burst_drain(d, b);
	b->hold = false;
	d->burst = NULL;
}

/* The CQEs an abandoned engine thread was holding back when it blocked
 * (its burst, still attached to the device): those of every other client
 * enter their rings now (their data was written before the blocked
 * client's, emu_mem_write_deferred keeps one process at a time); the
 * blocked client's are dropped with its QPs. */
void emu_rx_burst_adopt(struct emu_dev *d, struct emu_ctx *skip)
{
	struct emu_burst *o = d->burst;

	if (!o)
		return;
	d->burst = NULL; /* what it held now goes directly */
	unsigned n = o->n < EMU_BURST_CQES ? o->n : EMU_BURST_CQES;

	xp_sq_sync(o, skip);
	for (unsigned i = 0; i < n; i++)
		if (o->cqe[i].qp->ctx != skip)
			xp_cq_push_inl(o->cqe[i].qp, o->cqe[i].cq, &o->cqe[i].e, &o->cqe[i].inl);
	o->n = 0;
}

/* ---- errors and flushing ---- */

void xp_qp_error(struct emu_qp *qp, int ev)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	EMU_LOG_RL(DEBUG, "qp %u -> ERR (event %d)\n", qp->qpn, ev);
	qp->attr.qp_state = IBV_QPS_ERR;
	qp->attr.cur_qp_state = IBV_QPS_ERR;
	xp_infl_sync(qp); /* nothing counts as out any more */
	if (ev)
		xp_event(qp, (enum ibv_event_type)ev);
	emu_xport_flush(qp);
	if (qp->srq)
		xp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

void emu_xport_quarantine(struct emu_ctx *c)
{
	c->mem_stalled = true;
	for (uint32_t i = 0; i < c->nh; i++)
		if (c->h[i].type == EMU_OBJ_QP)
			xp_qp_error(c->h[i].obj, IBV_EVENT_QP_FATAL);
}

enum ibv_wc_opcode xp_wc_opcode(uint8_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case UROCE_WR_OP_FLUSH:
		return (enum ibv_wc_opcode)UROCE_WC_FLUSH;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

/* ---- flushing (the completer retires, xp_qp_error flushes: both here so
 * neither depends on the other) ---- */

static void flush_cqe(struct emu_qp *qp, struct emu_cq *cq, uint64_t wr_id, uint32_t opcode)
{
	struct uroce_cqe e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = IBV_WC_WR_FLUSH_ERR;
	e.opcode = opcode;
	xp_cq_push(qp, cq, &e);
}

void xp_flush_sq(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t prod;

	if (!x->sq_copy)
		return;
	prod = emu_ring_prod(&qp->sq);
	if (prod - x->sq_comp > x->sq_entries)
		prod = x->sq_fetch; /* garbage index: flush what we know */
	uint32_t n = prod - x->sq_fetch;
	if (n > prod - x->sq_comp)
		n = 0; /* prod moved back behind what we fetched */
	for (; n; n--) {
		struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_fetch);

		memset(sw, 0, sizeof(*sw));
		if (emu_sq_copy(qp, x->sq_fetch, xp_wqe(qp, x->sq_fetch)) < 0)
			memset(xp_wqe(qp, x->sq_fetch), 0, UROCE_SEND_WQE_HDR);
		x->sq_fetch++;
	}
	/* Pushing a CQE can overrun the CQ, which errors the QP and flushes
	 * it again from inside flush_cqe: the head moves before the push so
	 * the nested flush never sees this WQE, and the count bounds the loop
	 * whatever the nested call did to the indices. */
	for (uint32_t left = x->sq_fetch - x->sq_comp; left && x->sq_comp != x->sq_fetch; left--) {
		const struct uroce_send_wqe *w = xp_wqe(qp, x->sq_comp);
		uint64_t wr_id = w->wr_id;
		uint32_t op = xp_wc_opcode(w->opcode);

		x->sq_comp++;
		flush_cqe(qp, qp->send_cq, wr_id, op);
	}
	x->sq_req = x->sq_comp;
	x->sq_req_pkt = 0;
	x->rd_atomic_out = 0;
	x->retrans_at = x->probe_at = 0;
	x->rnr_at = 0;
	/* a requester stalled (a go-back-N, TX full) when its QP failed: the
	 * poll loop would kick it every 10 us for as long as the QP lives */
	x->req_stalled = 0;
	emu_ring_publish(&qp->sq, x->sq_comp);
}

void xp_flush_rq(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_recv_wqe *r = x->rwqe;

	/* from now on receives posted to this QP ring the doorbell, so
	 * they are flushed too; the fence pairs with post_recv's (verbs/post.c) */
	if (!qp->srq && qp->rq.hdr && qp->attr.qp_state == IBV_QPS_ERR) {
		__atomic_fetch_or(&qp->rq.hdr->flags, UROCE_RING_F_KICK, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	if (!r)
		return;
	if (x->rwqe_valid) {
		x->rwqe_valid = 0;
		flush_cqe(qp, qp->recv_cq, r->wr_id, IBV_WC_RECV);
	}
	if (qp->srq)
		return; /* SRQ WQEs belong to the SRQ, not to this QP */
	/* each take consumes one slot, so the ring size bounds the loop even
	 * if a nested flush (CQ overrun) or the application moves indices */
	for (uint32_t left = qp->rq.entries + 1; left; left--) {
		int n = emu_recv_take(qp, r);

		if (n == 0)
			break;
		flush_cqe(qp, qp->recv_cq, n > 0 ? r->wr_id : 0, IBV_WC_RECV);
	}
}

void emu_xport_flush(struct emu_qp *qp)
{
	xp_flush_sq(qp);
	xp_flush_rq(qp);
}
