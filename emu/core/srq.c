/* SPDX-License-Identifier: MIT */
/* Shared receive queues: create (with their ring), modify (the limit,
 * a larger ring), query, destroy. Handles are scoped to the context, so another context's handle is
 * simply unknown (-EINVAL); an object still referenced is -EBUSY, as the
 * kernel answers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_ring.h"
#include "emu_int.h"

int emu_srq_create(struct emu_ctx *c, const struct uroce_create_srq_req *q,
		   struct uroce_create_srq_rep *r, int *memfd_out)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);

	if (!pd || q->max_wr < 1 || q->max_wr > EMU_MAX_SRQ_WR || q->max_sge > EMU_MAX_SRQ_SGE)
		return -EINVAL;
	if (c->nobj[EMU_OBJ_SRQ] >= EMU_MAX_SRQ || emu_ctx_quota(c, EMU_OBJ_SRQ))
		return -ENOMEM;
	struct emu_srq *srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	uint32_t sge = q->max_sge ? q->max_sge : 1;
	uint32_t entries = pow2_at_least(q->max_wr);
	uint32_t stride = emu_recv_stride(sge);
	size_t size = emu_ring_bytes(entries, stride);
	int rc = emu_ctx_charge(c, size);
	if (rc) {
		free(srq);
		return rc;
	}
	rc = emu_shm_create("uroce-srq", size, &srq->memfd, &srq->map);
	if (rc) {
		emu_ctx_uncharge(c, size);
		free(srq);
		return rc;
	}
	srq->map_size = size;
	srq->ctx = c;
	srq->pd = pd;
	srq->user_handle = q->user_handle;
	emu_ring_init(&srq->rq, srq->map, entries, stride);
	srq->max_wr = entries;
	srq->max_sge = (stride - UROCE_RECV_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (srq->max_sge > EMU_MAX_SRQ_SGE)
		srq->max_sge = EMU_MAX_SRQ_SGE;
	/* srq_limit is ignored at creation (ibv_create_srq(3)) */
	rc = emu_ctx_put(c, EMU_OBJ_SRQ, srq, &srq->handle);
	if (!rc) {
		rc = emu_db_alloc(c, EMU_OBJ_SRQ, srq, &srq->db_index);
		if (rc)
			emu_ctx_drop(c, srq->handle);
	}
	if (rc) {
		emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
		emu_ctx_uncharge(c, srq->map_size);
		free(srq);
		return rc;
	}
	pd->refcnt++;
	memset(r, 0, sizeof(*r));
	r->handle = srq->handle;
	r->db_index = srq->db_index;
	r->max_wr = srq->max_wr;
	r->max_sge = srq->max_sge;
	r->entries = entries;
	r->stride = stride;
	r->map_size = size;
	*memfd_out = srq->memfd;
	return 0;
}

/* A new ring of at least want entries (same stride) holding the WQEs not
 * yet consumed at the same free-running indices, so the shim's producer
 * index stays valid; the old ring goes. */
static int emu_srq_regrow(struct emu_srq *srq, uint32_t want)
{
	uint32_t entries = pow2_at_least(want);
	uint32_t stride = srq->rq.stride;
	size_t size = emu_ring_bytes(entries, stride);
	uint32_t prod = emu_ring_prod(&srq->rq), cons = srq->rq.cons;
	void *map;
	int mfd;
	/* the new ring is charged while the old one still exists */
	int rc = emu_ctx_charge(srq->ctx, size);

	if (rc)
		return rc;
	rc = emu_shm_create("uroce-srq", size, &mfd, &map);
	if (rc) {
		emu_ctx_uncharge(srq->ctx, size);
		return rc;
	}
	struct emu_ring nr = { 0 };
	emu_ring_init(&nr, map, entries, stride);
	/* prod is the application's and may have moved since the caller
	 * checked it: copy at most one old ring's worth, and never more than
	 * the new ring holds */
	uint32_t n = prod - cons;
	if (n > srq->rq.entries || n > entries) {
		emu_shm_destroy(mfd, map, size);
		emu_ctx_uncharge(srq->ctx, size);
		return -EINVAL;
	}
	for (uint32_t k = 0, i = cons; k < n; k++, i++)
		memcpy(nr.slots + (size_t)(i & nr.mask) * stride,
		       srq->rq.slots + (size_t)(i & srq->rq.mask) * stride, stride);
	nr.cons = cons;
	nr.prod_seen = cons;
	nr.hdr->cons = cons;
	nr.hdr->prod = prod;
	nr.hdr->flags = srq->rq.hdr->flags;
	emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
	emu_ctx_uncharge(srq->ctx, srq->map_size);
	srq->rq = nr;
	srq->memfd = mfd;
	srq->map = map;
	srq->map_size = size;
	return 0;
}

int emu_srq_modify_ex(struct emu_ctx *c, const struct uroce_modify_srq_req *q,
		      struct uroce_create_srq_rep *r, int *memfd_out)
{
	struct emu_srq *srq = emu_ctx_get(c, q->handle, EMU_OBJ_SRQ);

	if (!srq || (q->attr_mask & ~(unsigned)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) || !q->attr_mask)
		return -EINVAL;
	uint32_t max_wr = srq->max_wr;
	bool grow = false;
	if (q->attr_mask & IBV_SRQ_MAX_WR) {
		/* shrinking below what is posted is refused; growing past
		 * the ring needs a new one (only with somewhere to send it) */
		int posted = emu_ring_pending(&srq->rq);
		if (q->attr.max_wr < 1 || q->attr.max_wr > EMU_MAX_SRQ_WR || posted < 0 ||
		    q->attr.max_wr < (uint32_t)posted)
			return -EINVAL;
		grow = q->attr.max_wr > srq->rq.entries;
		if (grow && !r)
			return -EINVAL;
		max_wr = q->attr.max_wr;
	}
	if (q->attr_mask & IBV_SRQ_LIMIT) {
		if (q->attr.srq_limit > max_wr)
			return -EINVAL;
	}
	if (grow) {
		int rc = emu_srq_regrow(srq, max_wr);
		if (rc)
			return rc;
		max_wr = srq->rq.entries; /* the ring really holds this many */
	}
	srq->max_wr = max_wr;
	if (q->attr_mask & IBV_SRQ_LIMIT)
		srq->srq_limit = q->attr.srq_limit;
	if (r && (q->attr_mask & IBV_SRQ_MAX_WR)) {
		memset(r, 0, sizeof(*r));
		r->handle = srq->handle;
		r->db_index = srq->db_index;
		r->max_wr = srq->max_wr;
		r->max_sge = srq->max_sge;
		r->entries = srq->rq.entries;
		r->stride = srq->rq.stride;
		r->map_size = srq->map_size;
		*memfd_out = srq->memfd; /* the same ring unless it grew */
	}
	return 0;
}

int emu_srq_modify(struct emu_ctx *c, const struct uroce_modify_srq_req *q)
{
	return emu_srq_modify_ex(c, q, NULL, NULL);
}

int emu_srq_query(struct emu_ctx *c, uint32_t handle, struct ibv_srq_attr *a)
{
	struct emu_srq *srq = emu_ctx_get(c, handle, EMU_OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->max_wr = srq->max_wr;
	a->max_sge = srq->max_sge;
	a->srq_limit = srq->srq_limit;
	return 0;
}

int emu_srq_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_srq *srq = emu_ctx_get(c, handle, EMU_OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (srq->refcnt)
		return -EBUSY;
	if (srq->xref)
		emu_xsrq_fini(srq);
	emu_db_free(c, srq->db_index);
	srq->pd->refcnt--;
	emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
	emu_ctx_uncharge(c, srq->map_size);
	emu_ctx_drop(c, handle);
	free(srq);
	return 0;
}
