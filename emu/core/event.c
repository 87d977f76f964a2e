/* SPDX-License-Identifier: MIT */
/* Event records on the daemon's pipes: completion channels (their
 * objects, ibv_create_comp_channel) and the async fd, each a pipe whose
 * write end only the daemon holds, with a bounded backlog per pipe for
 * records a full pipe cannot take. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_cq.h"
#include "emu_int.h"

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

int emu_channel_create(struct emu_ctx *c, int wfd, uint32_t *handle)
{
	struct emu_channel *ch;

	if (wfd < 0)
		return -EINVAL;
	if (emu_ctx_quota(c, EMU_OBJ_CHANNEL)) {
		close(wfd);
		return -ENOMEM;
	}
	/* the daemon made wfd (emu_evq_pipe); tests may pass their own */
	int fl = fcntl(wfd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY ||
	    fcntl(wfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(wfd);
		return -EINVAL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		close(wfd);
		return -ENOMEM;
	}
	ch->ctx = c;
	ch->wfd = wfd;
	int rc = emu_ctx_put(c, EMU_OBJ_CHANNEL, ch, &ch->handle);
	if (rc) {
		close(wfd);
		free(ch);
		return rc;
	}
	*handle = ch->handle;
	return 0;
}

int emu_channel_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_channel *ch = emu_ctx_get(c, handle, EMU_OBJ_CHANNEL);

	if (!ch)
		return -EINVAL;
	if (ch->refcnt)
		return -EBUSY;
	emu_evq_drop(c->dev, &ch->q);
	close(ch->wfd);
	emu_ctx_drop(c, handle);
	free(ch);
	return 0;
}
