/* SPDX-License-Identifier: MIT */
/* uroced core: the consumer side of the shared SQ, RQ and SRQ rings
 * (ring.c): every WQE copied out of shared memory before it is checked. */
#ifndef EMU_RING_H
#define EMU_RING_H

#include "emu_obj.h"

/* ------------------------------------------------------------------ */
/* Shared rings                                                        */
/* ------------------------------------------------------------------ */
/* Producer index (acquire) minus r->cons, or -EINVAL when the application
 * wrote an impossible index (more than entries outstanding). */
int emu_ring_pending(const struct emu_ring *r);
/* Producer index as loaded with acquire (for consumers that keep their own
 * cursor, like the transport's sq_fetch). */
uint32_t emu_ring_prod(const struct emu_ring *r);
static inline uint8_t *emu_ring_slot(const struct emu_ring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->stride;
}
/* Publish r->cons = cons with release. */
void emu_ring_publish(struct emu_ring *r, uint32_t cons);
/* Publish r->cons as it stands (advanced privately before, e.g. for a
 * whole RX burst: one store per ring instead of one per WQE). */
void emu_ring_sync(struct emu_ring *r);

/* Copy send WQE idx of qp's SQ into dst (room for sq.stride bytes, at most
 * EMU_SQ_STRIDE_MAX) and validate the copy: opcode valid for the QP type,
 * num_sge <= cap.max_send_sge, inline_len <= min(max_inline, slot room),
 * flags known. Returns bytes copied or -EINVAL. The transport reads only
 * the copy afterwards. */
int emu_sq_copy(struct emu_qp *qp, uint32_t idx, void *dst);
static inline const struct uroce_sge *emu_wqe_sges(const void *wqe)
{
	return (const struct uroce_sge *)((const uint8_t *)wqe + UROCE_SEND_WQE_HDR);
}
static inline const uint8_t *emu_wqe_inline(const void *wqe)
{
	return (const uint8_t *)wqe + UROCE_SEND_WQE_HDR;
}

/* A receive WQE in daemon memory: header then sge[num_sge]. */
struct emu_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
	struct uroce_sge sge[EMU_MAX_SGE];
};
/* Take the oldest receive WQE of qp (its RQ or its SRQ) into out and
 * publish the slot free. 1 = got one, 0 = empty, -EINVAL = garbage: either
 * a bad WQE (consumed; complete it in error) or an impossible producer
 * index (nothing consumed; reported once, then the ring reads as empty
 * until the index is sane again, so drain loops "until 0" terminate). For an SRQ this raises SRQ_LIMIT_REACHED when the posted count
 * drops below an armed limit. */
int emu_recv_take(struct emu_qp *qp, struct emu_recv_wqe *out);
/* Same without consuming (peek at what the next message would use). */
int emu_recv_peek(struct emu_qp *qp, struct emu_recv_wqe *out);

#endif /* EMU_RING_H */
