/* SPDX-License-Identifier: MIT */
/* CQ production and event delivery. The daemon is the only producer of a
 * CQ ring; the application consumes. The arm word is set by the shim with
 * atomic OR and cleared here with an exchange when the one event an arm
 * allows is sent (ibv_req_notify_cq(3)). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"
#include "memcheck.h"

int emu_evq_pipe(int *rfd, int *wfd)
{
	int p[2];

	/* O_NONBLOCK is a flag of the file description: on our write end,
	 * which never leaves the daemon, the application cannot clear it */
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int fl = fcntl(p[1], F_GETFL);
	if (fl < 0 || fcntl(p[1], F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	*rfd = p[0];
	*wfd = p[1];
	return 0;
}

static void emu_evq_lost(struct emu_dev *d, struct emu_evq *q, uint64_t now)
{
	q->lost++;
	d->cnt.evq_lost++; /* the log is rate-limited; this count is not */
	if (now - q->log_ns > 1000000000ull || !q->log_ns) {
		q->log_ns = now;
		EMU_LOG(WARNING, "event pipe %d: reader not keeping up, %lu record(s) lost\n",
			q->fd, (unsigned long)q->lost);
	}
}

/* 1: written, 0: no room, -1: the reader is gone (or fd is broken) */
static int emu_evq_write(int fd, const void *rec, uint32_t len)
{
	ssize_t n = write(fd, rec, len); /* len <= PIPE_BUF: all or nothing */

	if (n == (ssize_t)len)
		return 1;
	return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

static void emu_evq_unlink(struct emu_dev *d, struct emu_evq *q)
{
	for (struct emu_evq **pp = &d->evq_pend; *pp; pp = &(*pp)->pend_next) {
		if (*pp == q) {
			*pp = q->pend_next;
			break;
		}
	}
	q->pend_next = NULL;
	q->pending = false;
}

void emu_evq_put(struct emu_dev *d, struct emu_evq *q, int fd, const void *rec, uint32_t len)
{
	if (fd < 0 || len > EMU_EVQ_REC_MAX)
		return;
	if (q->n == 0) {
		int r = emu_evq_write(fd, rec, len);
		if (r > 0)
			return;
		if (r < 0) { /* EPIPE: nobody will ever read it */
			q->fd = fd;
			emu_evq_lost(d, q, emu_now_ns());
			return;
		}
	}
	/* behind a backlog: queue, so records stay in order */
	if (!q->buf)
		q->buf = malloc((size_t)EMU_EVQ_BACKLOG * EMU_EVQ_REC_MAX);
	q->fd = fd;
	q->rec = len;
	if (!q->buf || q->n == EMU_EVQ_BACKLOG) {
		emu_evq_lost(d, q, emu_now_ns());
		return;
	}
	memcpy(q->buf + (size_t)((q->head + q->n) % EMU_EVQ_BACKLOG) * EMU_EVQ_REC_MAX, rec, len);
	q->n++;
	if (!q->pending) {
		q->pending = true;
		q->pend_next = d->evq_pend;
		d->evq_pend = q;
	}
}

void emu_evq_flush(struct emu_dev *d, uint64_t now)
{
	struct emu_evq *q = d->evq_pend, *next;

	for (; q; q = next) {
		next = q->pend_next;
		while (q->n) {
			int r = emu_evq_write(q->fd, q->buf + (size_t)q->head * EMU_EVQ_REC_MAX, q->rec);
			if (r == 0)
				break;
			if (r < 0)
				emu_evq_lost(d, q, now);
			q->head = (q->head + 1) % EMU_EVQ_BACKLOG;
			q->n--;
		}
		if (!q->n)
			emu_evq_unlink(d, q);
	}
}

void emu_evq_drop(struct emu_dev *d, struct emu_evq *q)
{
	if (q->pending)
		emu_evq_unlink(d, q);
	free(q->buf);
	q->buf = NULL;
	q->n = q->head = 0;
}

void emu_async_event(struct emu_ctx *c, uint64_t element, enum ibv_event_type type)
{
	struct uroce_async_event ev = { .element = element, .event_type = (uint32_t)type };

	if (!c || c->async_fd < 0)
		return;
	emu_evq_put(c->dev, &c->async_q, c->async_fd, &ev, sizeof(ev));
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
