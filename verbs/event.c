/* SPDX-License-Identifier: MIT */
/* Completion channels and async events: the kernel's record formats on
 * pipes the daemon creates and whose write ends only it holds, so a dead
 * daemon reads as EOF instead of a hang, and nothing we do to our read
 * ends can make the daemon's writes block. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

struct ibv_comp_channel *urv_create_comp_channel(struct ibv_context *ibctx)
{
	struct uroce_handle_msg rep;
	struct urv_channel *ch;
	int rfd = -1, ret;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	/* the daemon makes the pipe and keeps its write end: we get the
	 * read end (blocking, as the kernel's channel fd) */
	ret = urv_ctl(to_uctx(ibctx), UROCE_OP_CREATE_COMP_CHANNEL, NULL, 0,
		      &rep, sizeof(rep), NULL, 0, &rfd, 1);
	if (ret) {
		free(ch);
		errno = -ret;
		return NULL;
	}
	ch->ch.context = ibctx;
	ch->ch.fd = rfd;
	ch->ch.refcnt = 0;
	ch->handle = rep.handle;
	return &ch->ch;
}

int urv_destroy_comp_channel(struct ibv_comp_channel *ibch)
{
	struct urv_channel *ch = to_uch(ibch);
	struct uroce_handle_msg req = { .handle = ch->handle };
	int ret;

	pthread_mutex_lock(&ibch->context->mutex);
	if (ibch->refcnt) {
		pthread_mutex_unlock(&ibch->context->mutex);
		return EBUSY;
	}
	pthread_mutex_unlock(&ibch->context->mutex);
	ret = urv_ctl(to_uctx(ibch->context), UROCE_OP_DESTROY_COMP_CHANNEL,
		      &req, sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	close(ibch->fd);
	free(ch);
	return 0;
}

/* Reads exactly one record; 1 = got it, 0 = EOF, -1 = error (errno). */
static int read_record(int fd, void *rec, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)rec + got, len - got);

		if (n < 0) {
			/* a partial record under O_NONBLOCK: the rest is a
			 * write of the same size already in the pipe */
			/* mid-record: finish it; before any byte a signal
			 * ends the call with EINTR as the kernel's read does
			 * (pipe reads restart by themselves under SA_RESTART),
			 * so a program's alarm can stop a blocked wait */
			if (got && (errno == EINTR || errno == EAGAIN))
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		got += (size_t)n;
	}
	return 1;
}

int urv_get_cq_event(struct ibv_comp_channel *ibch, struct ibv_cq **cq,
		     void **cq_context)
{
	struct uroce_comp_event ev;
	struct urv_obj *o;
	struct urv_cq *c;
	int r;

	for (;;) {
		r = read_record(ibch->fd, &ev, sizeof(ev));
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EIO;    /* daemon gone */
			return -1;
		}
		urv_registry_lock();
		o = urv_obj_lookup(ev.cq_handle, URV_OBJ_CQ);
		c = o ? urv_container_of(o, struct urv_cq, obj) : NULL;
		if (c && c->ex.channel == ibch) {
			c->comp_got++;
			*cq = (struct ibv_cq *)&c->ex;
			*cq_context = c->ex.cq_context;
			urv_registry_unlock();
			return 0;
		}
		/* the CQ was destroyed after the record was written */
		urv_registry_unlock();
	}
}

void urv_ack_cq_events(struct ibv_cq *cq, unsigned n)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

enum urv_obj_type urv_event_obj(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return URV_OBJ_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return URV_OBJ_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return URV_OBJ_SRQ;
	default:
		return 0;
	}
}

static bool fill_element(struct ibv_async_event *ev,
			 const struct uroce_async_event *rec)
{
	enum urv_obj_type type = urv_event_obj((enum ibv_event_type)rec->event_type);
	struct urv_obj *o;

	if (!type) {
		ev->element.port_num = rec->event_type == IBV_EVENT_DEVICE_FATAL ? 0 :
				       (int)rec->element;
		return true;
	}
	o = urv_obj_lookup(rec->element, type);
	if (!o)
		return false;
	o->events_got++;
	if (type == URV_OBJ_CQ)
		ev->element.cq = (struct ibv_cq *)&urv_container_of(o, struct urv_cq, obj)->ex;
	else if (type == URV_OBJ_QP)
		ev->element.qp = &urv_container_of(o, struct urv_qp, obj)->ex.qp_base;
	else
		ev->element.srq = &urv_container_of(o, struct urv_srq, obj)->ibsrq;
	return true;
}

int urv_get_async_event(struct ibv_context *ibctx, struct ibv_async_event *ev)
{
	struct urv_context *c = to_uctx(ibctx);
	struct uroce_async_event rec;
	int r;

	for (;;) {
		r = read_record(ibctx->async_fd, &rec, sizeof(rec));
		if (r < 0)
			return -1;
		if (r == 0) {
			bool first;

			pthread_mutex_lock(&c->async_lock);
			first = !c->fatal_reported;
			c->fatal_reported = true;
			pthread_mutex_unlock(&c->async_lock);
			if (!first) {
				errno = EIO;
				return -1;
			}
			memset(ev, 0, sizeof(*ev));
			ev->event_type = IBV_EVENT_DEVICE_FATAL;
			return 0;
		}
		memset(ev, 0, sizeof(*ev));
		ev->event_type = (enum ibv_event_type)rec.event_type;
		urv_registry_lock();
		r = fill_element(ev, &rec);
		urv_registry_unlock();
		if (r)
			return 0;
	}
}

void urv_ack_async_event(struct ibv_async_event *ev)
{
	pthread_mutex_t *m = NULL;
	pthread_cond_t *cv = NULL;
	uint32_t *cnt = NULL;

	switch (urv_event_obj(ev->event_type)) {
	case URV_OBJ_CQ:
		m = &ev->element.cq->mutex;
		cv = &ev->element.cq->cond;
		cnt = &ev->element.cq->async_events_completed;
		break;
	case URV_OBJ_QP:
		m = &ev->element.qp->mutex;
		cv = &ev->element.qp->cond;
		cnt = &ev->element.qp->events_completed;
		break;
	case URV_OBJ_SRQ:
		m = &ev->element.srq->mutex;
		cv = &ev->element.srq->cond;
		cnt = &ev->element.srq->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(m);
	++*cnt;
	pthread_cond_signal(cv);
	pthread_mutex_unlock(m);
}
