/* SPDX-License-Identifier: MIT */
/* CQ production and event delivery. The daemon is the only producer of a
 * CQ ring; the application consumes. The arm word is set by the shim with
 * atomic OR and cleared here with an exchange when the one event an arm
 * allows is sent (ibv_req_notify_cq(3)). */
#include <errno.h>
#include <unistd.h>

#include "emu.h"
#include "memcheck.h"

void emu_async_event(struct emu_ctx *c, uint64_t element, enum ibv_event_type type)
{
	struct uroce_async_event ev = { .element = element, .event_type = (uint32_t)type };

	if (!c || c->async_fd < 0)
		return;
	/* non-blocking pipe: a full pipe means the application stopped
	 * reading; losing the record beats stalling the engine */
	if (write(c->async_fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
		EMU_LOG(WARNING, "ctx pid %d: async event %u lost\n", (int)c->pid, (unsigned)type);
}

static void emu_cq_event(struct emu_cq *cq)
{
	struct uroce_comp_event ev = { .cq_handle = cq->user_handle };

	if (!cq->channel || cq->channel->wfd < 0)
		return;
	/* EAGAIN: the pipe is full of unread events, so the application will
	 * wake anyway; the record is redundant */
	if (write(cq->channel->wfd, &ev, sizeof(ev)) < 0 && errno != EAGAIN)
		EMU_LOG(DEBUG, "cq %u: event write: errno %d\n", cq->handle, errno);
}

uint32_t emu_cq_room(const struct emu_cq *cq)
{
	if (cq->error)
		return 0;
	uint32_t cons = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	uint32_t used = cq->prod - cons;
	return used >= cq->entries ? 0 : cq->entries - used;
}

int emu_cq_push(struct emu_cq *cq, const struct uroce_cqe *cqe)
{
	if (cq->error)
		return -ENOSPC;
	uint32_t cons = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	/* a cons beyond prod is garbage from the application: treat the
	 * ring as overrun rather than write over unread entries */
	if (cq->prod - cons >= cq->entries) {
		cq->error = true;
		__atomic_fetch_or(&cq->hdr->flags, UROCE_RING_F_ERROR, __ATOMIC_RELEASE);
		EMU_LOG(NOTICE, "cq %u (pid %d): overrun\n", cq->handle, (int)cq->ctx->pid);
		emu_async_event(cq->ctx, cq->user_handle, IBV_EVENT_CQ_ERR);
		return -ENOSPC;
	}
	/* the data a CQE announces must be in application memory first */
	emu_mem_flush();
	struct uroce_cqe *slot = &cq->slots[cq->prod & cq->mask];
	*slot = *cqe;
	slot->timestamp_ns = emu_now_ns();
	EMU_CHECK_DEFINED(slot, sizeof(*slot));
	cq->prod++;
	__atomic_store_n(&cq->hdr->prod, cq->prod, __ATOMIC_RELEASE);
	/* Store(prod) then Load(arm) must not reorder: the shim arms, then
	 * re-checks prod; one of the two sides sees the other. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t arm = __atomic_load_n(&cq->hdr->arm, __ATOMIC_RELAXED);
	if (!arm)
		return 0;
	bool fire = (arm & UROCE_ARM_NEXT) ||
		    ((arm & UROCE_ARM_SOLICITED) &&
		     (cqe->solicited || cqe->status != IBV_WC_SUCCESS));
	if (!fire)
		return 0;
	if (__atomic_exchange_n(&cq->hdr->arm, 0, __ATOMIC_ACQ_REL))
		emu_cq_event(cq);
	return 0;
}
