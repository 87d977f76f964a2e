/* SPDX-License-Identifier: MIT */
/* Completion queues: the objects (create, resize, destroy, with their
 * ring memory) and CQE production. The daemon is the only producer of a
 * CQ ring; the application consumes. The arm word is set by the shim with
 * atomic OR and cleared here with an exchange when the one event an arm
 * allows is sent (ibv_req_notify_cq(3)). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"
#include "emu_cq.h"
#include "emu_int.h"
#include "memcheck.h"

static int emu_cq_ring_new(struct emu_cq *cq, uint32_t cqe)
{
	uint32_t entries = pow2_at_least(cqe < 2 ? 2 : cqe);
	/* every CQE slot has its companion slot for small payloads */
	size_t size = emu_ring_bytes(entries, UROCE_CQE_SIZE + UROCE_CQE_INL_SIZE);
	void *map;
	int fd;
	int rc = emu_shm_create("uroce-cq", size, &fd, &map);

	if (rc)
		return rc;
	cq->memfd = fd;
	cq->map = map;
	cq->map_size = size;
	cq->hdr = map;
	cq->slots = (struct uroce_cqe *)((uint8_t *)map + UROCE_RING_HDR_SIZE);
	cq->inl = (struct uroce_cqe_inl *)((uint8_t *)map + UROCE_CQ_INL_OFFSET(entries));
	cq->entries = entries;
	cq->mask = entries - 1;
	cq->cqe = entries;
	cq->hdr->entries = entries;
	cq->hdr->stride = UROCE_CQE_SIZE;
	return 0;
}

static void emu_cq_rep(const struct emu_cq *cq, struct uroce_create_cq_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->handle = cq->handle;
	r->entries = cq->entries;
	r->cqe = cq->cqe;
	r->map_size = cq->map_size;
}

int emu_cq_create(struct emu_ctx *c, const struct uroce_create_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out)
{
	struct emu_channel *ch = NULL;

	if (q->cqe < 1 || q->cqe >= EMU_MAX_CQE)
		return -EINVAL;
	if (q->channel != -1) {
		ch = emu_ctx_get(c, (uint32_t)q->channel, EMU_OBJ_CHANNEL);
		if (!ch)
			return -EINVAL;
	}
	if (q->comp_vector != 0)
		return -EINVAL; /* num_comp_vectors is 1 */
	if (q->flags & ~UROCE_CQ_F_TIMESTAMP)
		return -EINVAL;
	if (c->nobj[EMU_OBJ_CQ] >= EMU_MAX_CQ || emu_ctx_quota(c, EMU_OBJ_CQ))
		return -ENOMEM;
	struct emu_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ctx = c;
	cq->user_handle = q->user_handle;
	cq->channel = ch;
	cq->want_ts = q->flags & UROCE_CQ_F_TIMESTAMP;
	int rc = emu_cq_ring_new(cq, q->cqe);
	if (rc) {
		free(cq);
		return rc;
	}
	rc = emu_ctx_charge(c, cq->map_size);
	if (!rc) {
		rc = emu_ctx_put(c, EMU_OBJ_CQ, cq, &cq->handle);
		if (rc)
			emu_ctx_uncharge(c, cq->map_size);
	}
	if (rc) {
		emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
		free(cq);
		return rc;
	}
	if (ch)
		ch->refcnt++;
	emu_cq_rep(cq, r);
	*memfd_out = cq->memfd;
	return 0;
}

int emu_cq_resize(struct emu_ctx *c, const struct uroce_resize_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out)
{
	struct emu_cq *cq = emu_ctx_get(c, q->handle, EMU_OBJ_CQ);

	if (!cq || q->cqe < 1 || q->cqe >= EMU_MAX_CQE)
		return -EINVAL;
	uint32_t cons = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	uint32_t used = cq->prod - cons;
	if (used > cq->entries || q->cqe < used)
		return -EINVAL;
	struct emu_cq nq = *cq;
	int rc = emu_cq_ring_new(&nq, q->cqe);
	if (rc)
		return rc;
	/* charge the new ring while the old one is still held (both exist
	 * during the copy) */
	rc = emu_ctx_charge(c, nq.map_size);
	if (rc) {
		emu_shm_destroy(nq.memfd, nq.map, nq.map_size);
		return rc;
	}
	emu_ctx_uncharge(c, cq->map_size);
	/* keep the free-running indices: the shim continues at cons */
	for (uint32_t k = 0, i = cons; k < used; k++, i++) { /* used <= both sizes */
		nq.slots[i & nq.mask] = cq->slots[i & cq->mask];
		nq.inl[i & nq.mask] = cq->inl[i & cq->mask];
	}
	nq.hdr->cons = cons;
	nq.cons_seen = cons;
	nq.hdr->prod = cq->prod;
	nq.hdr->arm = __atomic_load_n(&cq->hdr->arm, __ATOMIC_ACQUIRE);
	nq.hdr->flags = cq->hdr->flags;
	emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
	*cq = nq;
	emu_cq_rep(cq, r);
	*memfd_out = cq->memfd;
	return 0;
}

int emu_cq_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_cq *cq = emu_ctx_get(c, handle, EMU_OBJ_CQ);

	if (!cq)
		return -EINVAL;
	if (cq->refcnt)
		return -EBUSY;
	if (cq->channel)
		cq->channel->refcnt--;
	emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
	emu_ctx_uncharge(c, cq->map_size);
	emu_ctx_drop(c, handle);
	free(cq);
	return 0;
}

static void emu_cq_event(struct emu_cq *cq)
{
	struct uroce_comp_event ev = { .cq_handle = cq->user_handle };

	if (!cq->channel || cq->channel->wfd < 0)
		return;
	emu_evq_put(cq->ctx->dev, &cq->channel->q, cq->channel->wfd, &ev, sizeof(ev));
}

uint32_t emu_cq_room(const struct emu_cq *cq)
{
	if (cq->error)
		return 0;
	uint32_t cons = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	uint32_t used = cq->prod - cons;
	return used >= cq->entries ? 0 : cq->entries - used;
}

int emu_cq_put(struct emu_cq *cq, const struct uroce_cqe *cqe,
	       const struct uroce_cqe_inl *inl, uint64_t ts)
{
	if (cq->error)
		return -ENOSPC;
	/* the shim's cons is read only when the last value seen says full:
	 * a busy-polling application keeps that line to itself. A cons
	 * beyond prod is garbage from the application: treat the ring as
	 * overrun rather than write over unread entries */
	if (cq->prod - cq->cons_seen >= cq->entries)
		cq->cons_seen = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	if (cq->prod - cq->cons_seen >= cq->entries) {
		emu_cq_publish(cq); /* what was written before still counts */
		cq->error = true;
		__atomic_fetch_or(&cq->hdr->flags, UROCE_RING_F_ERROR, __ATOMIC_RELEASE);
		EMU_LOG_RL(NOTICE, "cq %u (pid %d): overrun\n", cq->handle, (int)cq->ctx->pid);
		emu_async_event(cq->ctx, cq->user_handle, IBV_EVENT_CQ_ERR);
		return -ENOSPC;
	}
	/* the data a CQE announces must be in application memory first */
	emu_mem_flush(cq->ctx->dev);
	uint32_t i = cq->prod & cq->mask;
	struct uroce_cqe *slot = &cq->slots[i];
	*slot = *cqe;
	slot->timestamp_ns = ts;
	if (inl && cqe->inl_nseg) {
		struct uroce_cqe_inl *d = &cq->inl[i];
		uint32_t n = cqe->inl_nseg, len = cqe->byte_len;

		/* only what the shim reads: the used segments and bytes */
		memcpy(d->seg, inl->seg, n * sizeof(d->seg[0]));
		memcpy(d->data, inl->data, len);
		EMU_CHECK_DEFINED(d->data, len);
		cq->ctx->dev->cnt.cqe_inline++;
	} else {
		slot->inl_nseg = 0;
	}
	EMU_CHECK_DEFINED(slot, sizeof(*slot));
	cq->prod++;
	if (cqe->solicited || cqe->status != IBV_WC_SUCCESS)
		cq->pend_sol = true;
	return 0;
}

void emu_cq_publish(struct emu_cq *cq)
{
	if (cq->pub == cq->prod)
		return;
	bool sol = cq->pend_sol;

	cq->pub = cq->prod;
	cq->pend_sol = false;
	__atomic_store_n(&cq->hdr->prod, cq->prod, __ATOMIC_RELEASE);
	/* Store(prod) then Load(arm) must not reorder: the shim arms, then
	 * re-checks prod; one of the two sides sees the other. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t arm = __atomic_load_n(&cq->hdr->arm, __ATOMIC_RELAXED);
	if (!arm)
		return;
	bool fire = (arm & UROCE_ARM_NEXT) || ((arm & UROCE_ARM_SOLICITED) && sol);
	if (!fire)
		return;
	if (__atomic_exchange_n(&cq->hdr->arm, 0, __ATOMIC_ACQ_REL))
		emu_cq_event(cq);
}

uint64_t emu_cq_stamp(const struct emu_cq *cq, uint64_t *now)
{
	if (!cq->want_ts)
		return 0;
	if (!*now)
		*now = emu_now_ns();
	return *now;
}

int emu_cq_push(struct emu_cq *cq, const struct uroce_cqe *cqe)
{
	uint64_t now = 0;
	int rc = emu_cq_put(cq, cqe, NULL, emu_cq_stamp(cq, &now));

	if (!rc)
		emu_cq_publish(cq);
	return rc;
}
