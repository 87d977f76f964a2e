/* SPDX-License-Identifier: MIT */
/* Consumer side of the SQ/RQ/SRQ rings. Everything in shared memory may
 * change under us at any moment, so each WQE is copied first and only the
 * copy is validated and used. */
#include <errno.h>
#include <string.h>

#include "emu_obj.h"
#include "emu_cq.h"
#include "emu_ring.h"
#include "emu_int.h"
#include <uroce/wr.h>

uint32_t emu_ring_prod(const struct emu_ring *r)
{
	return __atomic_load_n(&r->hdr->prod, __ATOMIC_ACQUIRE);
}

int emu_ring_pending(const struct emu_ring *r)
{
	uint32_t n = emu_ring_prod(r) - r->cons;

	return n > r->entries ? -EINVAL : (int)n;
}

void emu_ring_publish(struct emu_ring *r, uint32_t cons)
{
	r->cons = cons;
	__atomic_store_n(&r->hdr->cons, cons, __ATOMIC_RELEASE);
}

void emu_ring_sync(struct emu_ring *r)
{
	emu_ring_publish(r, r->cons);
}

int emu_sq_copy(struct emu_qp *qp, uint32_t idx, void *dst)
{
	const struct emu_ring *r = &qp->sq;
	const uint8_t *src = emu_ring_slot(r, idx);
	struct uroce_send_wqe *w = dst;
	uint32_t room = r->stride - UROCE_SEND_WQE_HDR;
	uint32_t body;

	if (r->stride > EMU_SQ_STRIDE_MAX || r->stride < UROCE_SEND_WQE_HDR)
		return -EINVAL;
	memcpy(w, src, UROCE_SEND_WQE_HDR);
	/* the shim checked this WR against the same table; the ring is
	 * application memory, so check again */
	if (!uroce_wr_allowed(qp->type, w->opcode, w->send_flags))
		return -EINVAL;
	if (w->send_flags & IBV_SEND_INLINE) {
		if (w->inline_len > qp->cap.max_inline_data || w->inline_len > room)
			return -EINVAL;
		body = w->inline_len;
	} else {
		if (w->num_sge > qp->cap.max_send_sge || w->num_sge > EMU_MAX_SGE ||
		    (uint32_t)w->num_sge * sizeof(struct uroce_sge) > room)
			return -EINVAL;
		body = (uint32_t)w->num_sge * sizeof(struct uroce_sge);
	}
	memcpy((uint8_t *)dst + UROCE_SEND_WQE_HDR, src + UROCE_SEND_WQE_HDR, body);
	return (int)(UROCE_SEND_WQE_HDR + body);
}

static int emu_recv_get(struct emu_qp *qp, struct emu_recv_wqe *out, bool take)
{
	struct emu_ring *r;
	uint32_t max_sge;
	struct emu_srq *srq = qp->srq;

	if (srq) {
		if (srq->error)
			return -EINVAL;
		r = &srq->rq;
		max_sge = srq->max_sge;
	} else {
		r = &qp->rq;
		max_sge = qp->cap.max_recv_sge;
	}
	if (r->entries == 0)
		return 0;
	/* the producer index is read again only when what was seen of it is
	 * used up, or when the SRQ limit needs the true count */
	uint32_t n = r->prod_seen - r->cons;
	if (n == 0 || n > r->entries || (srq && srq->srq_limit)) {
		int p = emu_ring_pending(r);

		if (p < 0) {
			/* report an impossible producer index once, then look
			 * empty, so "take until 0" drain loops terminate */
			if (r->broken)
				return 0;
			r->broken = true;
			return -EINVAL;
		}
		r->broken = false;
		n = (uint32_t)p;
		r->prod_seen = r->cons + n;
		if (n == 0)
			return 0;
	}
	/* the next slot, for the message after this one: its line moves
	 * while the engine works on this one (the shim wrote it long ago) */
	if (n > 1)
		__builtin_prefetch(emu_ring_slot(r, r->cons + 1));
	const uint8_t *src = emu_ring_slot(r, r->cons);
	int rc = 1;
	memcpy(out, src, UROCE_RECV_WQE_HDR);
	if (out->num_sge > max_sge || out->num_sge > EMU_MAX_SGE ||
	    UROCE_RECV_WQE_HDR + out->num_sge * sizeof(struct uroce_sge) > r->stride) {
		out->num_sge = 0;
		rc = -EINVAL;
	} else {
		memcpy(out->sge, src + UROCE_RECV_WQE_HDR, out->num_sge * sizeof(struct uroce_sge));
	}
	if (!take)
		return rc;
	emu_ring_publish(r, r->cons + 1);
	if (srq && srq->srq_limit && n - 1 < srq->srq_limit) {
		srq->srq_limit = 0; /* one event per arm (ibv_modify_srq(3)) */
		emu_async_event(srq->ctx, srq->user_handle, IBV_EVENT_SRQ_LIMIT_REACHED);
	}
	return rc;
}

int emu_recv_take(struct emu_qp *qp, struct emu_recv_wqe *out)
{
	return emu_recv_get(qp, out, true);
}

int emu_recv_peek(struct emu_qp *qp, struct emu_recv_wqe *out)
{
	return emu_recv_get(qp, out, false);
}

/* Bytes of a shared ring (header, then entries slots of stride bytes),
 * rounded to whole pages: every CQ, SQ, RQ and SRQ ring is sized here. */
size_t emu_ring_bytes(uint32_t entries, uint32_t stride)
{
	return page_align(UROCE_RING_HDR_SIZE + (size_t)entries * stride);
}

/* Slot size of a receive ring (RQ or SRQ) for sge scatter entries. */
uint32_t emu_recv_stride(uint32_t sge)
{
	return pow2_at_least(UROCE_RECV_WQE_HDR + sge * (uint32_t)sizeof(struct uroce_sge));
}

void emu_ring_init(struct emu_ring *r, void *base, uint32_t entries, uint32_t stride)
{
	r->hdr = base;
	r->slots = (uint8_t *)base + UROCE_RING_HDR_SIZE;
	r->entries = entries;
	r->mask = entries ? entries - 1 : 0;
	r->stride = stride;
	r->cons = 0;
	r->prod_seen = 0;
	r->hdr->entries = entries;
	r->hdr->stride = stride;
}
