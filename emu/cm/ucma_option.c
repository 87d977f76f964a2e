/* SPDX-License-Identifier: MIT */
/* rdma_ucm queries and options: QUERY_ROUTE, QUERY (ADDR, GID, PATH)
 * and SET_OPTION. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

static void ucma_user_path(const struct ucma_id *id, struct ib_user_path_rec *p)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, id->dgid.raw, 16);
	memcpy(p->sgid, id->sgid.raw, 16);
	p->reversible = 1;
	p->mtu = id->path_mtu;
	p->pkey = htons(0xffff);
	p->hop_limit = id->hop_limit;
	p->traffic_class = id->tclass;
	p->numb_path = 1;
	p->mtu_selector = 2;
	p->rate_selector = 2;
	p->rate = 3;
	p->packet_life_time_selector = 2;
	p->packet_life_time = UCMA_PKT_LIFETIME;
}

int ucma_cmd_query_route(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_query, q, sizeof(q));
	struct rdma_ucm_query_route_resp r;
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	ucma_copy_addr(&r.src_addr, sizeof(r.src_addr), &id->src);
	ucma_copy_addr(&r.dst_addr, sizeof(r.dst_addr), &id->dst);
	if (id->has_dev) {
		r.node_guid = k->u->d->node_guid;
		r.ibdev_index = UINT32_MAX; /* librdmacm then matches the GUID alone */
		r.port_num = 1;
		if (id->route) {
			r.num_paths = 1;
			ucma_user_path(id, &r.ib_route[0]);
		} else {
			union ibv_gid dg;
			ucma_gid(&id->dst, &dg);
			memcpy(r.ib_route[0].sgid, id->sgid.raw, 16);
			memcpy(r.ib_route[0].dgid, dg.raw, 16);
			r.ib_route[0].pkey = htons(0xffff);
		}
	}
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static uint64_t ucma_sid(const struct ucma_id *id, const struct sockaddr_storage *a)
{
	uint64_t sid = (uint64_t)id->ps << 16 | ucma_port(a);
	return htobe64(sid);
}

static void ucma_sib(const struct ucma_id *id, const union ibv_gid *g,
		     const struct sockaddr_storage *a, struct ucma_sib *s)
{
	memset(s, 0, sizeof(*s));
	s->sib_family = AF_IB;
	s->sib_pkey = htons(0xffff);
	memcpy(s->sib_addr, g->raw, 16);
	s->sib_sid = ucma_sid(id, a);
	s->sib_sid_mask = UINT64_MAX;
}

int ucma_cmd_query(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_query, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	switch (q.option) {
	case RDMA_USER_CM_QUERY_ADDR:
	case RDMA_USER_CM_QUERY_GID: {
		struct rdma_ucm_query_addr_resp r;
		if (k->out_len < sizeof(r))
			return -ENOSPC;
		memset(&r, 0, sizeof(r));
		r.ibdev_index = UINT32_MAX;
		if (id->has_dev) {
			r.node_guid = k->u->d->node_guid;
			r.port_num = 1;
			r.pkey = htons(0xffff);
		}
		if (q.option == RDMA_USER_CM_QUERY_ADDR) {
			r.src_size = (uint16_t)ucma_addr_size(&id->src);
			r.dst_size = (uint16_t)ucma_addr_size(&id->dst);
			memcpy(&r.src_addr, &id->src, r.src_size);
			memcpy(&r.dst_addr, &id->dst, r.dst_size);
		} else {
			struct ucma_sib s;
			union ibv_gid dg;
			ucma_gid(&id->dst, &dg);
			if (id->route)
				dg = id->dgid;
			ucma_sib(id, &id->sgid, &id->src, &s);
			memcpy(&r.src_addr, &s, sizeof(s));
			ucma_sib(id, &dg, &id->dst, &s);
			memcpy(&r.dst_addr, &s, sizeof(s));
			r.src_size = r.dst_size = sizeof(s);
		}
		ucma_out(k, &r, sizeof(r));
		return 0;
	}
	case RDMA_USER_CM_QUERY_PATH: {
		union {
			struct rdma_ucm_query_path_resp r;
			uint8_t b[sizeof(struct rdma_ucm_query_path_resp) + sizeof(struct ib_path_rec_data)];
		} m;
		if (k->out_len < sizeof(m.r))
			return -ENOSPC;
		memset(&m, 0, sizeof(m));
		m.r.num_paths = id->route ? 1 : 0;
		size_t n = sizeof(m.r);
		if (id->route && k->out_len - sizeof(m.r) > sizeof(struct ib_path_rec_data)) {
			/* the SA PathRecord, packed as ib_sa_pack_path */
			struct ib_path_rec_data *pd = &m.r.path_data[0];
			uint8_t *p = (uint8_t *)pd->path_rec;
			pd->flags = 1u << 0 | 1u << 2 | 1u << 1; /* GMP | PRIMARY | BIDIRECTIONAL */
			memcpy(p + 8, id->dgid.raw, 16);
			memcpy(p + 24, id->sgid.raw, 16);
			uint32_t flhop = htobe32(id->hop_limit);
			memcpy(p + 44, &flhop, 4);
			p[48] = id->tclass;
			p[49] = 0x80 | 1;               /* reversible, numb_path 1 */
			p[50] = 0xff;
			p[51] = 0xff;                   /* pkey */
			p[54] = (uint8_t)(2 << 6 | id->path_mtu);
			p[55] = 2 << 6 | 3;             /* rate */
			p[56] = 2 << 6 | UCMA_PKT_LIFETIME;
			n += sizeof(struct ib_path_rec_data);
		}
		ucma_out(k, &m, n);
		return 0;
	}
	default:
		return -ENOSYS;
	}
}

int ucma_cmd_set_option(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_set_option, q, sizeof(q));
	const uint8_t *val = k->in + sizeof(q);
	struct ucma_id *id;

	if (k->in_len - sizeof(q) < q.optlen)
		return -EFAULT; /* the value did not come with it */
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	if (q.level == RDMA_OPTION_IB) {
		if (q.optname != RDMA_OPTION_IB_PATH)
			return -ENOSYS;
		if (!q.optlen || q.optlen % sizeof(struct ib_path_rec_data))
			return -EINVAL;
		/* RoCE: the kernel resolves the route itself from the addresses */
		if (id->state != S_ADDR_RESOLVED)
			return -EINVAL;
		return ucma_resolve_route(k->u, id);
	}
	if (q.level != RDMA_OPTION_ID)
		return -ENOSYS;
	int v;
	switch (q.optname) {
	case RDMA_OPTION_ID_TOS:
		if (q.optlen != 1)
			return -EINVAL;
		id->tos = val[0];
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (q.optlen != sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(v));
		if ((v && id->state != S_LISTEN) || id->state == S_IDLE) {
			id->reuseaddr = v != 0;
			return 0;
		}
		return -EINVAL;
	case RDMA_OPTION_ID_AFONLY:
		if (q.optlen != sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(v));
		if (id->state != S_IDLE && id->state != S_ADDR_BOUND)
			return -EINVAL;
		id->afonly = v != 0;
		id->afonly_set = true;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (q.optlen != 1)
			return -EINVAL;
		if (id->qp_type != IBV_QPT_RC)
			return -EINVAL;
		id->timeout = val[0];
		id->timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}
