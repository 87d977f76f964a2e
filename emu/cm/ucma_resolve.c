/* SPDX-License-Identifier: MIT */
/* Address and route resolution (rdma_resolve_addr, cma_resolve_iboe_route):
 * RESOLVE_IP, RESOLVE_ADDR, RESOLVE_ROUTE and the neighbour wait. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

void ucma_addr_done(struct ucma_dev *u, struct ucma_id *id, int status)
{
	ucma_timer(u, id, 0);
	if (status) {
		id->state = S_ADDR_BOUND;
		ucma_event(u, id, RDMA_CM_EVENT_ADDR_ERROR, status);
		return;
	}
	id->state = S_ADDR_RESOLVED;
	ucma_event(u, id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

/* the source of an id whose destination is known: its own bound address,
 * or the device's address for that destination */
static int ucma_pick_src(struct ucma_dev *u, struct ucma_id *id, int local_dst)
{
	if (id->has_dev)
		return 0;
	int i = local_dst >= 0 ? local_dst : ucma_src_index(u->d, id->dst.ss_family);
	if (i < 0)
		return -ENETUNREACH;
	if (local_dst >= 0 && ucma_is_loop(&id->dst)) {
		/* 127.0.0.1 / ::1 talk to themselves from the same address */
		uint16_t p = ucma_port(&id->src);
		memcpy(&id->src, &id->dst, sizeof(id->src));
		ucma_set_port(&id->src, p);
	} else {
		ucma_gid_to_addr(&u->d->gids[i], id->dst.ss_family, &id->src);
	}
	id->sgid_index = (uint8_t)i;
	id->sgid = u->d->gids[i];
	id->has_dev = true;
	return 0;
}

/* 0: resolved now, 1: pending (neighbour), <0: error status */
int ucma_addr_try(struct ucma_dev *u, struct ucma_id *id)
{
	int li = ucma_local_index(u->d, &id->dst);

	if (li >= 0 || ucma_is_mcast(&id->dst))
		return ucma_pick_src(u, id, li);
	/* on the loopback port every frame comes back to us: an address
	 * that is not ours has nobody to answer for it */
	if (u->d->loopback)
		return 1;
	union ibv_gid g;
	uint8_t mac[6];
	ucma_gid(&id->dst, &g);
	if (emu_neigh_lookup(u->d, &g, mac) == 0)
		return ucma_pick_src(u, id, -1);
	return 1;
}

static int ucma_resolve_addr(struct ucma_dev *u, struct ucma_id *id,
			     const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
			     uint32_t timeout_ms)
{
	int rc;

	if (dst->ss_family != AF_INET && dst->ss_family != AF_INET6)
		return dst->ss_family == AF_IB ? -EAFNOSUPPORT : -EINVAL;
	if (id->state == S_IDLE) {
		struct sockaddr_storage s;
		memset(&s, 0, sizeof(s));
		if (src && src->ss_family)
			memcpy(&s, src, ucma_addr_size(src));
		else
			s.ss_family = dst->ss_family;
		if (s.ss_family == AF_INET6 && dst->ss_family == AF_INET6)
			((struct sockaddr_in6 *)&s)->sin6_scope_id =
				((const struct sockaddr_in6 *)dst)->sin6_scope_id;
		rc = ucma_bind(u, id, &s);
		if (rc)
			return rc;
	}
	if (id->src.ss_family != dst->ss_family)
		return -EINVAL;
	if (id->state != S_ADDR_BOUND)
		return -EINVAL;
	memcpy(&id->dst, dst, ucma_addr_size(dst));
	id->state = S_ADDR_QUERY;
	if (ucma_any(&id->dst)) {
		/* cma_resolve_loopback: the destination is our own source */
		int i = id->has_dev ? id->sgid_index : ucma_src_index(u->d, id->dst.ss_family);
		if (i < 0)
			i = 0;
		if (!id->has_dev) {
			ucma_gid_to_addr(&u->d->gids[i], id->dst.ss_family, &id->src);
			id->sgid_index = (uint8_t)i;
			id->sgid = u->d->gids[i];
			id->has_dev = true;
		}
		uint16_t p = ucma_port(&id->dst);
		memcpy(&id->dst, &id->src, sizeof(id->dst));
		ucma_set_port(&id->dst, p);
		ucma_addr_done(u, id, 0);
		return 0;
	}
	rc = ucma_addr_try(u, id);
	if (rc <= 0) {
		ucma_addr_done(u, id, rc);
		return 0;
	}
	ucma_timer(u, id, emu_now_ns() + (uint64_t)(timeout_ms ? timeout_ms : 1) * 1000000ull);
	return 0;
}

static void ucma_path_init(struct ucma_dev *u, struct ucma_id *id)
{
	ucma_gid(&id->dst, &id->dgid);
	if (ucma_is_loop(&id->dst) || ucma_any(&id->dst))
		id->dgid = id->sgid; /* loopback: our own GID */
	id->path_mtu = (uint8_t)u->d->active_mtu;
	id->tclass = id->tos;
	id->hop_limit = UCMA_HOP_LIMIT;
	id->route = true;
}

int ucma_resolve_route(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->state != S_ADDR_RESOLVED)
		return -EINVAL;
	ucma_path_init(u, id);
	id->state = S_ROUTE_RESOLVED;
	ucma_event(u, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

int ucma_cmd_resolve_ip(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_ip, q, sizeof(q));
	struct sockaddr_storage s, d;
	struct ucma_id *id;

	if ((q.src_addr.sin6_family && !ucma_in6_size(&q.src_addr)) || !ucma_in6_size(&q.dst_addr))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	memcpy(&s, &q.src_addr, sizeof(q.src_addr));
	memcpy(&d, &q.dst_addr, sizeof(q.dst_addr));
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_resolve_addr(k->u, id, &s, &d, q.timeout_ms);
}

int ucma_cmd_resolve_addr(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_addr, q, sizeof(q));
	struct sockaddr_storage s, d;
	struct ucma_id *id;

	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	memcpy(&s, &q.src_addr, sizeof(s));
	memcpy(&d, &q.dst_addr, sizeof(d));
	if (q.reserved || (q.src_size && q.src_size != ucma_addr_size(&s)) || !q.dst_size ||
	    q.dst_size != ucma_addr_size(&d))
		return -EINVAL;
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_resolve_addr(k->u, id, q.src_size ? &s : NULL, &d, q.timeout_ms);
}

int ucma_cmd_resolve_route(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_route, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);
	return rc ? rc : ucma_resolve_route(k->u, id);
}
