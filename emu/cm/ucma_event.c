/* SPDX-License-Identifier: MIT */
/* rdma_ucm files, ids and events: the per-device state, id handles,
 * the event queue of a file and its pipe, CREATE_ID, GET_EVENT and
 * MIGRATE_ID (the kernel's ucma.c). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

uint32_t ucma_rand(struct ucma_dev *u)
{
	u->rnd ^= u->rnd << 13;
	u->rnd ^= u->rnd >> 7;
	u->rnd ^= u->rnd << 17;
	return (uint32_t)(u->rnd >> 11);
}

struct ucma_dev *ucma_dev(struct emu_dev *d, bool create)
{
	struct ucma_dev *u = d->ucma;

	if (u || !create)
		return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->d = d;
	u->next_file = 1;
	u->rnd = emu_now_ns() ^ (uintptr_t)u ^ 0x9e3779b97f4a7c15ull;
	if (!u->rnd)
		u->rnd = 1;
	d->ucma = u;
	return u;
}

struct ucma_file *ucma_file_get(struct ucma_dev *u, struct emu_ctx *c, uint32_t h)
{
	for (struct ucma_file *f = u ? u->files : NULL; f; f = f->next)
		if (f->handle == h && f->ctx == c)
			return f;
	return NULL;
}

/* the context's counters (allocated at its first file) */
struct ucma_ctx *ucma_cx(struct emu_ctx *c)
{
	if (!c->ucma)
		c->ucma = calloc(1, sizeof(struct ucma_ctx));
	return c->ucma;
}

static void ucma_nev(struct ucma_file *f, int d)
{
	struct ucma_ctx *x = f->ctx->ucma;

	f->nev += (uint32_t)d;
	if (x)
		x->nev += (uint32_t)d;
}

bool ucma_ev_room(const struct ucma_file *f)
{
	const struct ucma_ctx *x = f->ctx->ucma;

	return !x || x->nev < EMU_UCMA_MAX_EVENTS;
}

/* a handle table (ids, multicast joins) doubled, the new slots empty;
 * *n becomes the new size. NULL when out of memory (tab unchanged). */
void *ucma_grow(void *tab, uint32_t *n, uint32_t first, size_t elem)
{
	uint32_t nn = *n ? *n * 2 : first;
	uint8_t *t = realloc(tab, (size_t)nn * elem);

	if (!t)
		return NULL;
	memset(t + (size_t)*n * elem, 0, (size_t)(nn - *n) * elem);
	*n = nn;
	return t;
}

static int ucma_handle_alloc(struct ucma_dev *u, struct ucma_id *id)
{
	for (uint32_t k = 0; k < u->nids; k++) {
		uint32_t i = (u->hint + k) % u->nids;
		if (!u->ids[i]) {
			u->ids[i] = id;
			id->handle = i;
			u->hint = i + 1;
			return 0;
		}
	}
	uint32_t old = u->nids;
	struct ucma_id **t = ucma_grow(u->ids, &u->nids, 64, sizeof(*t));
	if (!t)
		return -ENOMEM;
	u->ids = t;
	id->handle = old;
	t[old] = id;
	u->hint = old + 1;
	return 0;
}

struct ucma_id *ucma_id_new(struct ucma_dev *u, struct ucma_file *f, uint16_t ps,
			    uint8_t qp_type, int *err)
{
	/* charged to the context and its uid (--limit cm_id=) */
	if ((*err = emu_ctx_obj_add(f->ctx, EMU_OBJ_CM_ID)))
		return NULL;
	struct ucma_id *id = calloc(1, sizeof(*id));
	if (!id) {
		emu_ctx_obj_del(f->ctx, EMU_OBJ_CM_ID);
		*err = -ENOMEM;
		return NULL;
	}
	if ((*err = ucma_handle_alloc(u, id))) {
		emu_ctx_obj_del(f->ctx, EMU_OBJ_CM_ID);
		free(id);
		return NULL;
	}
	id->file = f;
	id->ps = ps;
	id->qp_type = qp_type;
	id->state = S_IDLE;
	id->seq_num = ucma_rand(u) & 0xffffff;
	id->hop_limit = UCMA_HOP_LIMIT;
	return id;
}

/* id leaves its handle (if it still has it) and its context's count */
void ucma_id_free(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->handle < u->nids && u->ids[id->handle] == id)
		u->ids[id->handle] = NULL;
	emu_ctx_obj_del(id->file->ctx, EMU_OBJ_CM_ID);
	free(id);
}

/* the kernel's _ucma_find_context: -ENOENT unknown, -EINVAL another file's */
static struct ucma_id *ucma_id_get(struct ucma_dev *u, struct ucma_file *f, uint32_t h, int *err)
{
	struct ucma_id *id = h < u->nids ? u->ids[h] : NULL;

	if (!id || id->hidden) {
		*err = -ENOENT;
		return NULL;
	}
	if (id->file != f) {
		*err = -EINVAL;
		return NULL;
	}
	return id;
}

static void ucma_wake(struct ucma_dev *u, struct ucma_file *f)
{
	static const uint8_t b = 1;

	emu_evq_put(u->d, &f->q, f->wfd, &b, 1);
}

struct ucma_ev *ucma_ev_new(struct ucma_id *id, uint32_t event, int32_t status)
{
	struct ucma_file *f = id->file;

	/* ucma_event_handler: events of an id the application has not given
	 * its context yet (a request not accepted) are dropped */
	if (!id->uid && event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return NULL;

	if (!ucma_ev_room(f)) {
		EMU_LOG_RL(WARNING, "pid %d: rdma_cm: %u events unread, dropping one\n",
			   (int)f->ctx->pid, EMU_UCMA_MAX_EVENTS);
		return NULL;
	}
	struct ucma_ev *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->id = id;
	e->resp.uid = id->uid;
	e->resp.id = id->handle;
	e->resp.event = event;
	e->resp.status = (uint32_t)status;
	return e;
}

void ucma_ev_post(struct ucma_dev *u, struct ucma_ev *e)
{
	struct ucma_file *f = e->id->file;

	e->next = NULL;
	*f->tail = e;
	f->tail = &e->next;
	ucma_nev(f, 1);
	ucma_wake(u, f);
}

void ucma_event(struct ucma_dev *u, struct ucma_id *id, uint32_t event, int32_t status)
{
	struct ucma_ev *e = ucma_ev_new(id, event, status);
	if (e)
		ucma_ev_post(u, e);
}

/* an event carrying the IB CM's private data, as ucma copies it: the
 * whole private data field of the MAD (IB does not carry its length) */
void ucma_event_pdata(struct ucma_dev *u, struct ucma_id *id, uint32_t event,
		      int32_t status, const uint8_t *pd, unsigned plen, unsigned field)
{
	struct ucma_ev *e = ucma_ev_new(id, event, status);
	if (!e)
		return;
	if (id->qp_type == IBV_QPT_UD) {
		if (plen)
			memcpy(e->resp.param.ud.private_data, pd, plen);
		e->resp.param.ud.private_data_len = (uint8_t)field;
	} else {
		if (plen)
			memcpy(e->resp.param.conn.private_data, pd, plen);
		e->resp.param.conn.private_data_len = (uint8_t)field;
	}
	ucma_ev_post(u, e);
}

/* unlink f's queued events of id, announcing conn, or of mc (a NULL
 * matches nothing); they come back in queue order */
struct ucma_ev *ucma_ev_take(struct ucma_file *f, const struct ucma_id *id,
			     const struct ucma_id *conn, const struct ucma_mc *mc)
{
	struct ucma_ev **pp = &f->head, *taken = NULL, **tt = &taken;

	f->tail = &f->head;
	while (*pp) {
		struct ucma_ev *e = *pp;
		if ((id && e->id == id) || (conn && e->conn == conn) || (mc && e->mc == mc)) {
			*pp = e->next;
			ucma_nev(f, -1);
			e->next = NULL;
			*tt = e;
			tt = &e->next;
			continue;
		}
		f->tail = &e->next;
		pp = &e->next;
	}
	return taken;
}

void ucma_ev_free(struct ucma_ev *e)
{
	while (e) {
		struct ucma_ev *next = e->next;
		free(e);
		e = next;
	}
}

void ucma_timer(struct ucma_dev *u, struct ucma_id *id, uint64_t deadline)
{
	if (!id->deadline && deadline)
		u->timers++;
	else if (id->deadline && !deadline)
		u->timers--;
	id->deadline = deadline;
	if (deadline && deadline < u->next_ns)
		u->next_ns = deadline;
	if (id->state == S_ADDR_QUERY)
		u->next_ns = 0; /* neighbour answers are looked for at once */
}

void ucma_out(struct ucma_call *k, const void *p, size_t n)
{
	if (n > k->out_len)
		n = k->out_len;
	memcpy(k->out, p, n);
	*k->olen = n;
}

int ucma_get(struct ucma_call *k, uint32_t h, struct ucma_id **id)
{
	int err = 0;
	*id = ucma_id_get(k->u, k->f, h, &err);
	return err;
}

/* ucma_get_ctx_dev: the id must be bound to the device */
int ucma_get_dev(struct ucma_call *k, uint32_t h, struct ucma_id **id)
{
	int rc = ucma_get(k, h, id);
	if (!rc && !(*id)->has_dev)
		rc = -EINVAL;
	return rc;
}

int ucma_cmd_create_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_create_id, q, sizeof(q));
	struct rdma_ucm_create_id_resp r = { 0 };
	uint8_t qpt;
	int err = 0;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	switch (q.ps) {
	case RDMA_PS_TCP: qpt = IBV_QPT_RC; break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB: qpt = IBV_QPT_UD; break;
	case RDMA_PS_IB: qpt = q.qp_type; break;
	default: return -EINVAL;
	}
	if (qpt != IBV_QPT_RC && qpt != IBV_QPT_UC && qpt != IBV_QPT_UD)
		return -EINVAL;
	struct ucma_id *id = ucma_id_new(k->u, k->f, q.ps, qpt, &err);
	if (!id)
		return err;
	id->uid = q.uid;
	r.id = id->handle;
	ucma_out(k, &r, sizeof(r));
	return 0;
}

int ucma_cmd_get_event(struct ucma_call *k)
{
	struct ucma_file *f = k->f;
	struct rdma_ucm_event_resp r;

	if (k->out_len < sizeof(r) - sizeof(r.reserved) - sizeof(r.ece))
		return -ENOSPC;
	struct ucma_ev *e = f->head;
	if (!e)
		return -EAGAIN; /* the shim's byte was for an event since removed */
	f->head = e->next;
	if (!f->head)
		f->tail = &f->head;
	ucma_nev(f, -1);
	r = e->resp;
	if (e->conn) {
		struct ucma_id *n = e->conn;
		n->hidden = false;
		if (n->listen) {
			n->listen->pending--;
			n->listen = NULL;
		}
	}
	if (e->mc)
		e->mc->events_reported++;
	e->id->events_reported++;
	free(e);
	ucma_out(k, &r, sizeof(r));
	return 0;
}

int ucma_cmd_migrate_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_migrate_id, q, sizeof(q));
	struct rdma_ucm_migrate_resp r = { 0 };
	struct ucma_dev *u = k->u;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	struct ucma_file *cur = ucma_file_get(u, k->f->ctx, q.fd);
	if (!cur)
		return -ENOENT;
	int err = 0;
	struct ucma_id *id = ucma_id_get(u, cur, q.id, &err);
	if (!id)
		return err;
	r.events_reported = id->events_reported;
	if (cur != k->f) {
		/* the id and its queued events move; the old pipe keeps stale
		 * bytes (GET_EVENT answers -EAGAIN), the new one gets one per
		 * event moved */
		struct ucma_ev *moved = ucma_ev_take(cur, id, NULL, NULL);
		id->file = k->f;
		while (moved) {
			struct ucma_ev *e = moved;
			moved = e->next;
			ucma_ev_post(u, e);
		}
	}
	ucma_out(k, &r, sizeof(r));
	return 0;
}
