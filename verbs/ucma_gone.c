/* SPDX-License-Identifier: MIT */
/* DEVICE_REMOVAL when the daemon goes away. The kernel reports
 * RDMA_CM_EVENT_DEVICE_REMOVAL for every id on a device that goes
 * (cma_process_remove), then closes them: later commands naming them fail
 * with ENXIO, DESTROY_ID still works. A daemon that stops (SIGTERM, crash)
 * cannot send those events, so the shim keeps what it needs from the
 * commands it forwards (the ids of each file, their contexts and event
 * counts) and makes the events itself, as the kernel's struct
 * rdma_ucm_event_resp carries them. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ucma_gone.h"

#ifndef RDMA_CM_EVENT_DEVICE_REMOVAL_VALUE
#define RDMA_CM_EVENT_DEVICE_REMOVAL_VALUE 11 /* enum rdma_cm_event_type */
#endif
#define EV_CONNECT_REQUEST 4
#define EV_MULTICAST_JOIN 12
#define EV_MULTICAST_ERROR 13
/* a DEVICE_REMOVAL whose id was destroyed before it was fetched */
#define EV_DROPPED 0xffffffffu

/* the command struct from in (zero-padded when short) */
#define IN(type, var) \
	type var; \
	memset(&var, 0, sizeof(var)); \
	memcpy(&var, in, in_len < sizeof(var) ? in_len : sizeof(var))

static struct urv_cm_id *id_find(struct urv_cm_track *t, uint32_t handle)
{
	for (uint32_t i = 0; i < t->nids; i++)
		if (t->ids[i].handle == handle)
			return &t->ids[i];
	return NULL;
}

static struct urv_cm_id *id_by_uid(struct urv_cm_track *t, uint64_t uid)
{
	for (uint32_t i = 0; uid && i < t->nids; i++)
		if (t->ids[i].uid == uid)
			return &t->ids[i];
	return NULL;
}

/* growth by doubling; a failure only loses this id's DEVICE_REMOVAL */
static bool room(void **tab, uint32_t n, uint32_t *cap, size_t elem)
{
	if (n < *cap)
		return true;
	uint32_t nc = *cap ? *cap * 2 : 16;
	void *p = realloc(*tab, (size_t)nc * elem);
	if (!p)
		return false;
	*tab = p;
	*cap = nc;
	return true;
}

static struct urv_cm_id *id_add(struct urv_cm_track *t, uint32_t handle, uint64_t uid)
{
	if (!room((void **)&t->ids, t->nids, &t->cap, sizeof(*t->ids)))
		return NULL;
	struct urv_cm_id *id = &t->ids[t->nids++];
	memset(id, 0, sizeof(*id));
	id->handle = handle;
	id->uid = uid;
	return id;
}

static void id_del(struct urv_cm_track *t, uint32_t handle)
{
	struct urv_cm_id *id = id_find(t, handle);

	if (id)
		*id = t->ids[--t->nids];
	for (uint32_t i = 0; i < t->nmcs;)
		if (t->mcs[i].id == handle)
			t->mcs[i] = t->mcs[--t->nmcs];
		else
			i++;
}

static void mc_add(struct urv_cm_track *t, uint32_t handle, uint64_t uid, uint32_t id)
{
	if (!room((void **)&t->mcs, t->nmcs, &t->mcap, sizeof(*t->mcs)))
		return;
	t->mcs[t->nmcs++] = (struct urv_cm_mc){ .handle = handle, .uid = uid, .id = id };
}

static void mc_del(struct urv_cm_track *t, uint32_t handle)
{
	for (uint32_t i = 0; i < t->nmcs; i++)
		if (t->mcs[i].handle == handle) {
			t->mcs[i] = t->mcs[--t->nmcs];
			return;
		}
}

/* a wildcard address binds to no device (the kernel's cma_dev stays NULL) */
bool urv_cm_addr_any(const void *sa)
{
	sa_family_t fam;
	static const uint8_t z[16];

	memcpy(&fam, sa, sizeof(fam));
	if (fam == AF_INET) {
		struct sockaddr_in a;
		memcpy(&a, sa, sizeof(a));
		return a.sin_addr.s_addr == 0;
	}
	if (fam == AF_INET6) {
		struct sockaddr_in6 a;
		memcpy(&a, sa, sizeof(a));
		return !memcmp(&a.sin6_addr, z, 16);
	}
	return true;
}

static void set_dev(struct urv_cm_track *t, uint32_t handle)
{
	struct urv_cm_id *id = id_find(t, handle);

	if (id)
		id->dev = true;
}

/* SET_OPTION succeeded: the id options a listener's copies take (the
 * value follows the struct: ucma_write appends it) */
static void track_option(struct urv_cm_track *t, const uint8_t *in, uint32_t in_len)
{
	struct rdma_ucm_set_option o;
	struct urv_cm_id *id;
	uint8_t v[sizeof(int)] = { 0 };

	if (in_len < sizeof(o))
		return;
	memcpy(&o, in, sizeof(o));
	id = id_find(t, o.id);
	if (!id || o.level != RDMA_OPTION_ID || !o.optlen)
		return;
	memcpy(v, in + sizeof(o), in_len - sizeof(o) < sizeof(v) ? in_len - sizeof(o) : sizeof(v));
	int iv;
	memcpy(&iv, v, sizeof(iv));
	switch (o.optname) {
	case RDMA_OPTION_ID_TOS:
		id->tos_set = true;
		id->tos = v[0];
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		id->reuse_set = true;
		id->reuseaddr = iv != 0;
		break;
	case RDMA_OPTION_ID_AFONLY:
		id->afonly_set = true;
		id->afonly = iv != 0;
		break;
	default:
		break;
	}
}

/* which id an event counts on (the kernel's events_reported): a request
 * on its listener, a multicast event on the id that joined */
static void track_event(struct urv_cm_track *t, const struct rdma_ucm_event_resp *r)
{
	struct urv_cm_id *id = NULL;

	if (r->event == EV_CONNECT_REQUEST) {
		struct urv_cm_id *n = id_add(t, r->id, 0);
		if (n)
			n->dev = true;
		id = id_by_uid(t, r->uid); /* after the add: the table may move */
	} else if (r->event == EV_MULTICAST_JOIN || r->event == EV_MULTICAST_ERROR) {
		for (uint32_t i = 0; i < t->nmcs; i++)
			if (t->mcs[i].uid == r->uid)
				id = id_find(t, t->mcs[i].id);
	} else {
		id = id_find(t, r->id);
	}
	if (id)
		id->events++;
}

static void track_bind(struct urv_cm_track *t, uint32_t cmd, const uint8_t *in, uint32_t in_len)
{
	if (cmd == RDMA_USER_CM_CMD_BIND_IP) {
		IN(struct rdma_ucm_bind_ip, q);
		if (!urv_cm_addr_any(&q.addr))
			set_dev(t, q.id);
	} else {
		IN(struct rdma_ucm_bind, q);
		if (!urv_cm_addr_any(&q.addr))
			set_dev(t, q.id);
	}
}

void urv_cm_track_cmd(struct urv_cm_track *t, uint32_t cmd, const uint8_t *in, uint32_t in_len,
		      const uint8_t *rep, size_t rep_len)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID: {
		IN(struct rdma_ucm_create_id, q);
		struct rdma_ucm_create_id_resp r;
		if (rep_len < sizeof(r))
			return;
		memcpy(&r, rep, sizeof(r));
		struct urv_cm_id *id = id_add(t, r.id, q.uid);
		if (id) {
			id->ps = q.ps;
			id->qp_type = q.qp_type;
		}
		return;
	}
	case RDMA_USER_CM_CMD_DESTROY_ID: {
		IN(struct rdma_ucm_destroy_id, q);
		id_del(t, q.id);
		return;
	}
	case RDMA_USER_CM_CMD_BIND_IP:
	case RDMA_USER_CM_CMD_BIND:
		track_bind(t, cmd, in, in_len);
		return;
	case RDMA_USER_CM_CMD_RESOLVE_IP: {
		IN(struct rdma_ucm_resolve_ip, q);
		set_dev(t, q.id);
		return;
	}
	case RDMA_USER_CM_CMD_RESOLVE_ADDR: {
		IN(struct rdma_ucm_resolve_addr, q);
		set_dev(t, q.id);
		return;
	}
	case RDMA_USER_CM_CMD_LISTEN: {
		/* a wildcard listener listens on every device (the kernel's
		 * per-device listeners report the removal to it) */
		IN(struct rdma_ucm_listen, q);
		set_dev(t, q.id);
		return;
	}
	case RDMA_USER_CM_CMD_ACCEPT: {
		IN(struct rdma_ucm_accept, q);
		struct urv_cm_id *id = id_find(t, q.id);
		if (id && q.conn_param.valid)
			id->uid = q.uid; /* as ucma_accept gives the context */
		return;
	}
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
	case RDMA_USER_CM_CMD_JOIN_MCAST: {
		/* both start with response, uid; the id is after the address */
		IN(struct rdma_ucm_join_mcast, q);
		struct rdma_ucm_create_id_resp r;
		uint32_t id = q.id;
		if (cmd == RDMA_USER_CM_CMD_JOIN_IP_MCAST) {
			IN(struct rdma_ucm_join_ip_mcast, j);
			id = j.id;
		}
		if (rep_len < sizeof(r))
			return;
		memcpy(&r, rep, sizeof(r));
		mc_add(t, r.id, q.uid, id);
		return;
	}
	case RDMA_USER_CM_CMD_LEAVE_MCAST: {
		IN(struct rdma_ucm_destroy_id, q);
		mc_del(t, q.id);
		return;
	}
	case RDMA_USER_CM_CMD_SET_OPTION:
		track_option(t, in, in_len);
		return;
	case RDMA_USER_CM_CMD_GET_EVENT: {
		struct rdma_ucm_event_resp r;
		memset(&r, 0, sizeof(r));
		memcpy(&r, rep, rep_len < sizeof(r) ? rep_len : sizeof(r));
		track_event(t, &r);
		return;
	}
	default:
		return;
	}
}

void urv_cm_track_move(struct urv_cm_track *src, struct urv_cm_track *dst, uint32_t handle)
{
	struct urv_cm_id *id = src == dst ? NULL : id_find(src, handle);

	if (!id)
		return;
	struct urv_cm_id copy = *id;
	for (uint32_t i = 0; i < src->nmcs;)
		if (src->mcs[i].id == handle) {
			mc_add(dst, src->mcs[i].handle, src->mcs[i].uid, handle);
			src->mcs[i] = src->mcs[--src->nmcs];
		} else {
			i++;
		}
	*id = src->ids[--src->nids];
	struct urv_cm_id *n = id_add(dst, copy.handle, copy.uid);
	if (n)
		*n = copy;
}

uint32_t urv_cm_track_gone(struct urv_cm_track *t)
{
	uint32_t n = 0;

	t->dead = true;
	t->gone = calloc(t->nids ? t->nids : 1, sizeof(*t->gone));
	if (!t->gone)
		return 0;
	/* ucma_event_handler drops the events of a request not accepted yet */
	for (uint32_t i = 0; i < t->nids; i++) {
		const struct urv_cm_id *id = &t->ids[i];
		if (!id->dev || !id->uid)
			continue;
		struct rdma_ucm_event_resp *r = &t->gone[n++];
		r->uid = id->uid;
		r->id = id->handle;
		r->event = RDMA_CM_EVENT_DEVICE_REMOVAL_VALUE;
	}
	t->ngone = n;
	return n;
}

struct urv_cm_id *urv_cm_track_id(struct urv_cm_track *t, uint32_t handle)
{
	return id_find(t, handle);
}

long urv_cm_id_offset(uint32_t cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST: return offsetof(struct rdma_ucm_destroy_id, id);
	case RDMA_USER_CM_CMD_BIND_IP: return offsetof(struct rdma_ucm_bind_ip, id);
	case RDMA_USER_CM_CMD_BIND: return offsetof(struct rdma_ucm_bind, id);
	case RDMA_USER_CM_CMD_RESOLVE_IP: return offsetof(struct rdma_ucm_resolve_ip, id);
	case RDMA_USER_CM_CMD_RESOLVE_ADDR: return offsetof(struct rdma_ucm_resolve_addr, id);
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE: return offsetof(struct rdma_ucm_resolve_route, id);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY: return offsetof(struct rdma_ucm_query, id);
	case RDMA_USER_CM_CMD_CONNECT: return offsetof(struct rdma_ucm_connect, id);
	case RDMA_USER_CM_CMD_LISTEN: return offsetof(struct rdma_ucm_listen, id);
	case RDMA_USER_CM_CMD_ACCEPT: return offsetof(struct rdma_ucm_accept, id);
	case RDMA_USER_CM_CMD_REJECT: return offsetof(struct rdma_ucm_reject, id);
	case RDMA_USER_CM_CMD_DISCONNECT: return offsetof(struct rdma_ucm_disconnect, id);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR: return offsetof(struct rdma_ucm_init_qp_attr, id);
	case RDMA_USER_CM_CMD_NOTIFY: return offsetof(struct rdma_ucm_notify, id);
	case RDMA_USER_CM_CMD_SET_OPTION: return offsetof(struct rdma_ucm_set_option, id);
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST: return offsetof(struct rdma_ucm_join_ip_mcast, id);
	case RDMA_USER_CM_CMD_JOIN_MCAST: return offsetof(struct rdma_ucm_join_mcast, id);
	case RDMA_USER_CM_CMD_MIGRATE_ID: return offsetof(struct rdma_ucm_migrate_id, id);
	default: return -1;
	}
}

int urv_cm_track_dead_cmd(struct urv_cm_track *t, uint32_t cmd, const uint8_t *in,
			  uint32_t in_len, uint8_t *rep, size_t *rep_len)
{
	*rep_len = 0;
	if (cmd == RDMA_USER_CM_CMD_GET_EVENT) {
		if (t->next >= t->ngone)
			return -EAGAIN;
		const struct rdma_ucm_event_resp *r = &t->gone[t->next++];
		if (r->event == EV_DROPPED)
			return -EAGAIN; /* its pipe byte is consumed: wait for the next */
		memcpy(rep, r, sizeof(*r));
		*rep_len = sizeof(*r);
		track_event(t, r);
		return 0;
	}
	if (cmd == RDMA_USER_CM_CMD_DESTROY_ID || cmd == RDMA_USER_CM_CMD_LEAVE_MCAST) {
		IN(struct rdma_ucm_destroy_id, q);
		struct rdma_ucm_destroy_id_resp r = { 0 };
		if (cmd == RDMA_USER_CM_CMD_DESTROY_ID) {
			struct urv_cm_id *id = id_find(t, q.id);
			if (!id)
				return -ENOENT;
			r.events_reported = id->events;
			id_del(t, q.id);
			/* its DEVICE_REMOVAL goes with it, as the kernel's
			 * ucma_destroy_id frees the id's queued events:
			 * librdmacm would hand it out for the freed id */
			for (uint32_t k = t->next; k < t->ngone; k++)
				if (t->gone[k].id == q.id)
					t->gone[k].event = EV_DROPPED;
		} else {
			mc_del(t, q.id);
		}
		memcpy(rep, &r, sizeof(r));
		*rep_len = sizeof(r);
		return 0;
	}
	long off = urv_cm_id_offset(cmd);
	uint32_t h;
	if (off >= 0 && in_len >= (uint32_t)off + sizeof(h)) {
		memcpy(&h, in + off, sizeof(h));
		if (id_find(t, h))
			return -ENXIO; /* closed by the removal (ucma_get_ctx) */
	}
	return -ENODEV;
}

void urv_cm_track_free(struct urv_cm_track *t)
{
	free(t->ids);
	free(t->mcs);
	free(t->gone);
	memset(t, 0, sizeof(*t));
}
