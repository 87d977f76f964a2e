/* SPDX-License-Identifier: MIT */
/* Port spaces and binding (cma_get_port, cma_check_port,
 * rdma_bind_addr): BIND_IP and BIND. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

int ucma_check_port(struct ucma_dev *u, struct ucma_id *id, uint16_t port, bool reuse)
{
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *cur = u->ids[i];
		if (!cur || cur == id || !cur->bound || cur->ps != id->ps || ucma_port(&cur->src) != port)
			continue;
		if (reuse && cur->reuseaddr)
			continue;
		if (id->afonly && cur->afonly && id->src.ss_family != cur->src.ss_family)
			continue;
		if (ucma_any(&id->src) || ucma_any(&cur->src))
			return -EADDRNOTAVAIL;
		if (ucma_same_addr(&id->src, &cur->src))
			return -EADDRINUSE;
	}
	return 0;
}

static bool ucma_port_free(struct ucma_dev *u, uint16_t ps, uint16_t port)
{
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *cur = u->ids[i];
		if (cur && cur->bound && cur->ps == ps && ucma_port(&cur->src) == port)
			return false;
	}
	return true;
}

static int ucma_get_port(struct ucma_dev *u, struct ucma_id *id, uid_t uid)
{
	uint16_t port = ucma_port(&id->src);

	if (!port) {
		uint32_t range = UCMA_EPHEMERAL_HI - UCMA_EPHEMERAL_LO + 1;
		uint32_t start = ucma_rand(u) % range;
		for (uint32_t k = 0; k < range; k++) {
			uint16_t p = (uint16_t)(UCMA_EPHEMERAL_LO + (start + k) % range);
			if (ucma_port_free(u, id->ps, p)) {
				ucma_set_port(&id->src, p);
				id->bound = true;
				return 0;
			}
		}
		return -EADDRNOTAVAIL;
	}
	if (port < 1024 && uid != 0)
		return -EACCES;
	int rc = ucma_check_port(u, id, port, id->reuseaddr);
	if (!rc)
		id->bound = true;
	return rc;
}

/* rdma_bind_addr */
int ucma_bind(struct ucma_dev *u, struct ucma_id *id, const struct sockaddr_storage *a)
{
	socklen_t sz = ucma_addr_size(a);

	if (a->ss_family != AF_INET && a->ss_family != AF_INET6)
		return -EAFNOSUPPORT; /* AF_IB: docs/cm.md (librdmacm then uses IP commands) */
	if (id->state != S_IDLE)
		return -EINVAL;
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !s6->sin6_scope_id)
			return -EINVAL;
	}
	struct sockaddr_storage save = id->src;
	memset(&id->src, 0, sizeof(id->src));
	memcpy(&id->src, a, sz);
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)&id->src)->sin6_scope_id = 0;
	if (!ucma_any(a)) {
		int i = ucma_local_index(u->d, a);
		if (i < 0) {
			id->src = save;
			return -EADDRNOTAVAIL;
		}
		id->sgid_index = (uint8_t)i;
		id->sgid = u->d->gids[i];
		id->has_dev = true;
	}
	if (!id->afonly_set)
		id->afonly = a->ss_family == AF_INET;
	memset(&id->dst, 0, sizeof(id->dst));
	id->dst.ss_family = a->ss_family;
	int rc = ucma_get_port(u, id, id->file->ctx->uid);
	if (rc) {
		id->src = save;
		id->has_dev = false;
		return rc;
	}
	id->state = S_ADDR_BOUND;
	return 0;
}

int ucma_cmd_bind_ip(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_bind_ip, q, sizeof(q));
	struct sockaddr_storage a;
	struct ucma_id *id;

	if (!ucma_in6_size(&q.addr))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(q.addr));
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_bind(k->u, id, &a);
}

int ucma_cmd_bind(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_bind, q, sizeof(q));
	struct sockaddr_storage a;
	struct ucma_id *id;

	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(a));
	if (q.reserved || !q.addr_size || q.addr_size != ucma_addr_size(&a))
		return -EINVAL;
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_bind(k->u, id, &a);
}
