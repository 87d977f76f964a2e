/* SPDX-License-Identifier: MIT */
/* Posting work requests: WQEs written straight into the shared rings, then
 * a doorbell bit; a system call only when the daemon sleeps. Checks follow
 * rdma-core providers: errno returned, *bad_wr set, earlier WRs posted. */
#include <errno.h>
#include <string.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"
#include <uroce/wr.h>

/* The daemon's cons is read only when the value seen last says full: a
 * post then touches no line the daemon writes (its index only ever moves
 * forward, so an old value errs on the side of full). */
static inline bool wq_full(struct urv_wq *wq, uint32_t prod)
{
	if (prod - wq->cons_seen < wq->max_wr)
		return false;
	wq->cons_seen = __atomic_load_n(&wq->hdr->cons, __ATOMIC_ACQUIRE);
	return prod - wq->cons_seen >= wq->max_wr;
}

static inline void *wq_slot(struct urv_wq *wq, uint32_t idx)
{
	return wq->slots + (size_t)(idx & (wq->entries - 1)) * wq->stride;
}

/* Header fields every WQE has, whichever API built it. */
static void wqe_init(struct urv_qp *qp, struct uroce_send_wqe *w,
		     uint64_t wr_id, unsigned op, unsigned flags)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = (uint8_t)op;
	w->send_flags = (uint16_t)(flags | (qp->sq_sig_all ? IBV_SEND_SIGNALED : 0));
}

static uint32_t inline_room(const struct urv_qp *qp)
{
	uint32_t room = qp->sq.stride - UROCE_SEND_WQE_HDR;

	return room < qp->cap.max_inline_data ? room : qp->cap.max_inline_data;
}

/* Gather list into the WQE; an atomic needs exactly one SGE of 8 bytes. */
static int wqe_put_sges(struct urv_qp *qp, struct uroce_send_wqe *w,
			const struct ibv_sge *sg, size_t n)
{
	struct uroce_sge *s = (struct uroce_sge *)(void *)
		((uint8_t *)w + UROCE_SEND_WQE_HDR);
	const struct uroce_wr_info *info = uroce_wr_info(w->opcode);

	if (n > qp->sq.max_sge ||
	    UROCE_SEND_WQE_HDR + n * sizeof(*s) > qp->sq.stride)
		return EINVAL;
	if (info && (info->needs & UROCE_WR_ATOMIC) && (n != 1 || sg[0].length < 8))
		return EINVAL;
	for (size_t i = 0; i < n; i++) {
		s[i].addr = sg[i].addr;
		s[i].length = sg[i].length;
		s[i].lkey = sg[i].lkey;
	}
	w->num_sge = (uint8_t)n;
	w->send_flags &= (uint16_t)~IBV_SEND_INLINE;
	return 0;
}

/* ATOMIC WRITE through ibv_post_send: its 8 bytes are what the SGEs
 * hold now (ibv_wr_atomic_write passes them by pointer); they travel in
 * the WQE. */
static bool awrite_ok(const struct ibv_send_wr *wr)
{
	uint64_t len = 0;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return !(wr->wr.rdma.remote_addr & 7) && len == 8;
}

static void awrite_value(const struct ibv_send_wr *wr, struct uroce_send_wqe *w)
{
	uint8_t *dst = (uint8_t *)&w->atomic.swap;

	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		dst += wr->sg_list[i].length;
	}
}

/* QP0 and QP1 speak for the host (subnet management, the CM): as with
 * the kernel, only a privileged context may send to them (abi.h
 * UROCE_HELLO_F_PRIVILEGED; the daemon checks the WQE again) */
static bool qp01_ok(struct ibv_context *ibctx, uint32_t qpn)
{
	return qpn > 1 || (to_uctx(ibctx)->info.flags & UROCE_HELLO_F_PRIVILEGED);
}

/* Validate: what the table and the opcode's operands allow, before any
 * byte of the slot is written. */
static int send_validate(struct urv_qp *qp, const struct ibv_send_wr *wr)
{
	const struct ibv_qp *q = &qp->ex.qp_base;
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;
	unsigned needs;

	if (!uroce_wr_allowed(q->qp_type, wr->opcode, wr->send_flags) ||
	    wr->num_sge < 0)
		return EINVAL;
	if (wr->opcode == UROCE_WR_OP_FLUSH)
		return EINVAL; /* ibv_qp_ex only: ibv_send_wr has no field for it */
	needs = uroce_wr_info(wr->opcode)->needs;
	if ((needs & UROCE_WR_ATOMIC) && (wr->wr.atomic.remote_addr & 7))
		return EINVAL;
	if ((needs & UROCE_WR_AWRITE) && !awrite_ok(wr))
		return EINVAL;
	if ((needs & UROCE_WR_BIND) &&
	    (!wr->bind_mw.mw || wr->bind_mw.mw->context != q->context ||
	     (b->mr && b->mr->context != q->context)))
		return EINVAL;
	if (q->qp_type == IBV_QPT_UD && !(needs & UROCE_WR_LOCAL) &&
	    (!wr->wr.ud.ah || wr->wr.ud.ah->context != q->context))
		return EINVAL;
	if (q->qp_type == IBV_QPT_UD && !(needs & UROCE_WR_LOCAL) &&
	    !qp01_ok(q->context, wr->wr.ud.remote_qpn))
		return EPERM;
	return 0;
}

/* Convert: the opcode's operands into the WQE's union. */
static void send_operands(struct urv_qp *qp, const struct ibv_send_wr *wr,
			  struct uroce_send_wqe *w)
{
	unsigned needs = uroce_wr_info(wr->opcode)->needs;
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	if (needs & UROCE_WR_IMM)
		w->imm_or_inv = wr->imm_data;
	if (needs & UROCE_WR_INV)
		w->imm_or_inv = wr->invalidate_rkey;
	if (needs & UROCE_WR_REMOTE) {
		w->rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->rdma.rkey = wr->wr.rdma.rkey;
	}
	if (needs & UROCE_WR_ATOMIC) {
		w->atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->atomic.compare_add = wr->wr.atomic.compare_add;
		w->atomic.swap = wr->wr.atomic.swap;
		w->atomic.rkey = wr->wr.atomic.rkey;
	}
	if (needs & UROCE_WR_AWRITE)
		awrite_value(wr, w);
	if (needs & UROCE_WR_BIND) {
		w->bind.mw = wr->bind_mw.mw->handle;
		w->bind.rkey = wr->bind_mw.rkey;
		w->bind.addr = b->addr;
		w->bind.length = b->length;
		w->bind.mr_lkey = b->mr ? b->mr->lkey : 0;
		w->bind.access = b->mw_access_flags;
	}
	if (qp->ex.qp_base.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->ex.qp_base.qp_type == IBV_QPT_UD && !(needs & UROCE_WR_LOCAL)) {
		w->ud.ah = wr->wr.ud.ah->handle;
		w->ud.remote_qpn = wr->wr.ud.remote_qpn;
		w->ud.remote_qkey = wr->wr.ud.remote_qkey;
	}
}

/* Payload copied into the slot (IBV_SEND_INLINE): the caller's buffers
 * are free again when ibv_post_send returns. */
static int send_inline(struct urv_qp *qp, const struct ibv_send_wr *wr,
		       struct uroce_send_wqe *w)
{
	uint8_t *dst = (uint8_t *)w + UROCE_SEND_WQE_HDR;
	uint64_t len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > inline_room(qp))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		dst += wr->sg_list[i].length;
	}
	w->inline_len = (uint32_t)len;
	w->num_sge = 0;
	return 0;
}

/* validate -> convert -> build the payload, as rdma-core providers post. */
static int build_send(struct urv_qp *qp, struct ibv_send_wr *wr,
		      struct uroce_send_wqe *w)
{
	int ret = send_validate(qp, wr);

	if (ret)
		return ret;
	wqe_init(qp, w, wr->wr_id, wr->opcode, wr->send_flags);
	send_operands(qp, wr, w);
	if (uroce_wr_info(wr->opcode)->needs & (UROCE_WR_BIND | UROCE_WR_AWRITE))
		return 0;  /* no payload */
	if (wr->send_flags & IBV_SEND_INLINE)
		return send_inline(qp, wr, w);
	return wqe_put_sges(qp, w, wr->sg_list, (size_t)wr->num_sge);
}

int urv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct urv_wq *sq = &qp->sq;
	uint32_t prod, start;
	int ret = 0;

	/* a QP created with max_send_wr = 0 has no send ring at all */
	if (ibqp->state < IBV_QPS_RTS || !sq->hdr) {
		*bad = wr;
		return EINVAL;
	}
	urv_spin_lock(&qp->sq_lock);
	start = prod = sq->hdr->prod;
	for (; wr; wr = wr->next) {
		if (wq_full(sq, prod)) {
			ret = ENOMEM;
			break;
		}
		ret = build_send(qp, wr, wq_slot(sq, prod));
		if (ret)
			break;
		prod++;
	}
	if (prod != start)
		__atomic_store_n(&sq->hdr->prod, prod, __ATOMIC_RELEASE);
	urv_spin_unlock(&qp->sq_lock);
	if (prod != start)
		urv_doorbell(qp->ctx, qp->db_index);
	if (ret)
		*bad = wr;
	return ret;
}

static int post_recv_ring(struct urv_wq *wq, urv_spin_t *lock,
			  struct urv_context *c, uint32_t db_index,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	uint32_t prod, start, i;
	int ret = 0;

	urv_spin_lock(lock);
	start = prod = wq->hdr->prod;
	for (; wr; wr = wr->next) {
		struct uroce_recv_wqe *w;
		struct uroce_sge *s;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge ||
		    UROCE_RECV_WQE_HDR + (size_t)wr->num_sge *
		    sizeof(struct uroce_sge) > wq->stride) {
			ret = EINVAL;
			break;
		}
		if (wq_full(wq, prod)) {
			ret = ENOMEM;
			break;
		}
		w = wq_slot(wq, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		w->rsvd = 0;
		s = (struct uroce_sge *)(void *)((uint8_t *)w + UROCE_RECV_WQE_HDR);
		for (i = 0; i < (uint32_t)wr->num_sge; i++) {
			s[i].addr = wr->sg_list[i].addr;
			s[i].length = wr->sg_list[i].length;
			s[i].lkey = wr->sg_list[i].lkey;
		}
		prod++;
	}
	if (prod != start)
		__atomic_store_n(&wq->hdr->prod, prod, __ATOMIC_RELEASE);
	urv_spin_unlock(lock);
	/* The daemon takes receives when a message needs one: no doorbell
	 * (two atomics on lines it polls) unless the QP is in ERR and its
	 * receives must be flushed. It sets F_KICK, fences, then flushes up
	 * to prod; we publish prod, fence, then read F_KICK: either it
	 * flushes what we posted or we ring. */
	if (prod != start) {
		atomic_thread_fence(memory_order_seq_cst);
		if (__atomic_load_n(&wq->hdr->flags, __ATOMIC_RELAXED) & UROCE_RING_F_KICK)
			urv_doorbell(c, db_index);
	}
	if (ret)
		*bad = wr;
	return ret;
}

int urv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad)
{
	struct urv_qp *qp = to_uqp(ibqp);

	if (ibqp->srq || ibqp->state == IBV_QPS_RESET || !qp->rq.hdr) {
		*bad = wr;
		return EINVAL;
	}
	return post_recv_ring(&qp->rq, &qp->rq_lock, qp->ctx, qp->db_index,
			      wr, bad);
}

int urv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	struct urv_srq *srq = to_usrq(ibsrq);

	return post_recv_ring(&srq->rq, &srq->lock, srq->ctx, srq->db_index,
			      wr, bad);
}

/* ---- ibv_qp_ex: the same WQEs, built field by field ---- */

static inline struct urv_qp *ex_qp(struct ibv_qp_ex *ex)
{
	return (struct urv_qp *)(void *)ex;
}

static struct uroce_send_wqe *ex_new(struct ibv_qp_ex *ex, enum ibv_wr_opcode op)
{
	struct urv_qp *qp = ex_qp(ex);
	struct uroce_send_wqe *w;

	qp->ex_cur = NULL;
	if (qp->ex_err)
		return NULL;
	if (!uroce_wr_allowed(ex->qp_base.qp_type, op, ex->wr_flags)) {
		qp->ex_err = EINVAL;
		return NULL;
	}
	if (wq_full(&qp->sq, qp->ex_prod)) {
		qp->ex_err = ENOMEM;
		return NULL;
	}
	w = wq_slot(&qp->sq, qp->ex_prod++);
	wqe_init(qp, w, ex->wr_id, op, ex->wr_flags);
	qp->ex_cur = w;
	return w;
}

static void ex_wr_start(struct ibv_qp_ex *ex)
{
	struct urv_qp *qp = ex_qp(ex);

	urv_spin_lock(&qp->sq_lock);
	qp->ex_prod = qp->sq.hdr ? qp->sq.hdr->prod : 0;
	/* the same rule as ibv_post_send: a QP that cannot send (below RTS)
	 * fails the batch at ibv_wr_complete with EINVAL */
	qp->ex_err = qp->sq.hdr && ex->qp_base.state >= IBV_QPS_RTS ? 0 : EINVAL;
	qp->ex_cur = NULL;
}

static int ex_wr_complete(struct ibv_qp_ex *ex)
{
	struct urv_qp *qp = ex_qp(ex);
	bool posted = false;
	int err = qp->ex_err;

	if (!err && qp->ex_prod != qp->sq.hdr->prod) {	/* err if no ring */
		__atomic_store_n(&qp->sq.hdr->prod, qp->ex_prod, __ATOMIC_RELEASE);
		posted = true;
	}
	urv_spin_unlock(&qp->sq_lock);
	if (posted)
		urv_doorbell(qp->ctx, qp->db_index);
	return err;
}

static void ex_wr_abort(struct ibv_qp_ex *ex)
{
	urv_spin_unlock(&ex_qp(ex)->sq_lock);
}

static void ex_rdma(struct ibv_qp_ex *ex, enum ibv_wr_opcode op, uint32_t rkey,
		    uint64_t addr, __be32 imm)
{
	struct uroce_send_wqe *w = ex_new(ex, op);

	if (!w)
		return;
	w->rdma.rkey = rkey;
	w->rdma.remote_addr = addr;
	w->imm_or_inv = imm;
}

static void ex_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{ ex_rdma(ex, IBV_WR_RDMA_WRITE, rkey, addr, 0); }
static void ex_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey,
			      uint64_t addr, __be32 imm)
{ ex_rdma(ex, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm); }
static void ex_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{ ex_rdma(ex, IBV_WR_RDMA_READ, rkey, addr, 0); }

static void ex_atomic(struct ibv_qp_ex *ex, enum ibv_wr_opcode op,
		      uint32_t rkey, uint64_t addr, uint64_t cmp, uint64_t swap)
{
	struct uroce_send_wqe *w = ex_new(ex, op);

	if (!w)
		return;
	if (addr & 7) {
		ex_qp(ex)->ex_err = EINVAL;
		return;
	}
	w->atomic.rkey = rkey;
	w->atomic.remote_addr = addr;
	w->atomic.compare_add = cmp;
	w->atomic.swap = swap;
}

static void ex_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr,
		       uint64_t cmp, uint64_t swap)
{ ex_atomic(ex, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, cmp, swap); }
static void ex_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr,
			 uint64_t add)
{ ex_atomic(ex, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0); }

static void ex_send(struct ibv_qp_ex *ex) { ex_new(ex, IBV_WR_SEND); }
static void ex_send_imm(struct ibv_qp_ex *ex, __be32 imm)
{
	struct uroce_send_wqe *w = ex_new(ex, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_or_inv = imm;
}
static void ex_send_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	struct uroce_send_wqe *w = ex_new(ex, IBV_WR_SEND_WITH_INV);

	if (w)
		w->imm_or_inv = rkey;
}
static void ex_local_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	struct uroce_send_wqe *w = ex_new(ex, IBV_WR_LOCAL_INV);

	if (w)
		w->imm_or_inv = rkey;
}
static void ex_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *b)
{
	struct uroce_send_wqe *w = ex_new(ex, IBV_WR_BIND_MW);

	if (!w)
		return;
	w->bind.mw = mw->handle;
	w->bind.rkey = rkey;
	w->bind.addr = b->addr;
	w->bind.length = b->length;
	w->bind.mr_lkey = b->mr ? b->mr->lkey : 0;
	w->bind.access = b->mw_access_flags;
}
static void ex_send_tso(struct ibv_qp_ex *ex, void *hdr, uint16_t sz,
			uint16_t mss)
{
	(void)hdr; (void)sz; (void)mss;
	ex_qp(ex)->ex_err = EOPNOTSUPP;
}
static void ex_atomic_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr,
			    const void *v)
{
	struct uroce_send_wqe *w = ex_new(ex, IBV_WR_ATOMIC_WRITE);

	if (!w)
		return;
	if (addr & 7) {
		ex_qp(ex)->ex_err = EINVAL;
		return;
	}
	w->rdma.rkey = rkey;
	w->rdma.remote_addr = addr;
	memcpy(&w->atomic.swap, v, 8);
}
/* IBTA 1.5 FLUSH: no payload, one packet; its operands in the WQE */
static void ex_flush(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, size_t len,
		     uint8_t type, uint8_t level)
{
	struct uroce_send_wqe *w = ex_new(ex, UROCE_WR_OP_FLUSH);

	if (!w)
		return;
	if (!type || (type & ~(unsigned)(UROCE_FLUSH_GLOBAL | UROCE_FLUSH_PERSISTENT)) ||
	    level > UROCE_FLUSH_MR || len > UINT32_MAX) {
		ex_qp(ex)->ex_err = EINVAL;
		return;
	}
	w->flush.rkey = rkey;
	w->flush.remote_addr = addr;
	w->flush.length = (uint32_t)len;
	w->flush.type = type;
	w->flush.level = level;
}
static void ex_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t n)
{
	struct uroce_send_wqe *w = ex_qp(ex)->ex_cur;

	if (w)
		w->xrc_srqn = n;
}

static void ex_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah,
			   uint32_t qpn, uint32_t qkey)
{
	struct uroce_send_wqe *w = ex_qp(ex)->ex_cur;

	if (!w)
		return;
	if (!qp01_ok(ex->qp_base.context, qpn))
		ex_qp(ex)->ex_err = EPERM;
	w->ud.ah = ah->handle;
	w->ud.remote_qpn = qpn;
	w->ud.remote_qkey = qkey;
}

static void ex_set_sge_list(struct ibv_qp_ex *ex, size_t n,
			    const struct ibv_sge *sg)
{
	struct urv_qp *qp = ex_qp(ex);

	if (qp->ex_cur && wqe_put_sges(qp, qp->ex_cur, sg, n))
		qp->ex_err = EINVAL;
}

static void ex_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr,
		       uint32_t len)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };

	ex_set_sge_list(ex, 1, &s);
}

static void ex_set_inline_list(struct ibv_qp_ex *ex, size_t n,
			       const struct ibv_data_buf *b)
{
	struct urv_qp *qp = ex_qp(ex);
	struct uroce_send_wqe *w = qp->ex_cur;
	const struct uroce_wr_info *info;
	uint8_t *dst;
	size_t i, len = 0;

	if (!w)
		return;
	for (i = 0; i < n; i++)
		len += b[i].length;
	info = uroce_wr_info(w->opcode);
	if (len > inline_room(qp) || !info || !(info->needs & UROCE_WR_INLINE)) {
		qp->ex_err = EINVAL;
		return;
	}
	dst = (uint8_t *)w + UROCE_SEND_WQE_HDR;
	for (i = 0; i < n; i++) {
		memcpy(dst, b[i].addr, b[i].length);
		dst += b[i].length;
	}
	w->inline_len = (uint32_t)len;
	w->num_sge = 0;
	w->send_flags |= IBV_SEND_INLINE;
}

static void ex_set_inline(struct ibv_qp_ex *ex, void *addr, size_t len)
{
	struct ibv_data_buf b = { .addr = addr, .length = len };

	ex_set_inline_list(ex, 1, &b);
}

void urv_qp_ex_init(struct urv_qp *qp)
{
	struct ibv_qp_ex *ex = &qp->ex;

	ex->wr_atomic_cmp_swp = ex_cmp_swp;
	ex->wr_atomic_fetch_add = ex_fetch_add;
	ex->wr_bind_mw = ex_bind_mw;
	ex->wr_local_inv = ex_local_inv;
	ex->wr_rdma_read = ex_rdma_read;
	ex->wr_rdma_write = ex_rdma_write;
	ex->wr_rdma_write_imm = ex_rdma_write_imm;
	ex->wr_send = ex_send;
	ex->wr_send_imm = ex_send_imm;
	ex->wr_send_inv = ex_send_inv;
	ex->wr_send_tso = ex_send_tso;
	ex->wr_set_ud_addr = ex_set_ud_addr;
	ex->wr_set_xrc_srqn = ex_set_xrc_srqn;
	ex->wr_set_inline_data = ex_set_inline;
	ex->wr_set_inline_data_list = ex_set_inline_list;
	ex->wr_set_sge = ex_set_sge;
	ex->wr_set_sge_list = ex_set_sge_list;
	ex->wr_start = ex_wr_start;
	ex->wr_complete = ex_wr_complete;
	ex->wr_abort = ex_wr_abort;
	ex->wr_atomic_write = ex_atomic_write;
	qp->wr_flush = ex_flush;
}
