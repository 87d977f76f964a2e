/* SPDX-License-Identifier: MIT */
/* Address handles. RoCE has no LIDs: every AH is global. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

/* Member by member into a zeroed dst: a struct copy would carry the
 * application's padding bytes (uninitialised) into the daemon's socket. */
void urv_ah_attr_copy(struct ibv_ah_attr *dst, const struct ibv_ah_attr *src)
{
	dst->grh.dgid = src->grh.dgid;
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

struct ibv_ah *urv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct urv_context *c = to_uctx(pd->context);
	struct uroce_create_ah_req req;
	struct uroce_handle_msg rep;
	struct urv_ah *ah;
	int ret;

	if (!attr->is_global || attr->port_num != 1 ||
	    attr->grh.sgid_index >= c->info.gid_count) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	urv_ah_attr_copy(&req.attr, attr);
	ret = urv_ctl(c, UROCE_OP_CREATE_AH, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret) {
		free(ah);
		errno = -ret;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	ah->ibah.handle = rep.handle;
	ah->attr = *attr;
	return &ah->ibah;
}

int urv_destroy_ah(struct ibv_ah *ah)
{
	struct uroce_handle_msg req = { .handle = ah->handle };
	int ret;

	ret = urv_ctl(to_uctx(ah->context), UROCE_OP_DESTROY_AH, &req,
		      sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	free(ah);
	return 0;
}

/* For RoCEv2 over IPv4 the 40-byte GRH slot holds the IPv4 header in its
 * last 20 bytes; GIDs are then IPv4-mapped IPv6 addresses. */
static bool grh_is_ipv4(const struct ibv_grh *grh, uint32_t *saddr,
			uint32_t *daddr, uint8_t *tos, uint8_t *ttl)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	uint32_t sum = 0;
	int i;

	if (ip[0] != 0x45)
		return false;
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		return false;
	memcpy(saddr, ip + 12, 4);
	memcpy(daddr, ip + 16, 4);
	*tos = ip[1];
	*ttl = ip[8];
	return true;
}

static void v4_gid(union ibv_gid *g, uint32_t addr)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(&g->raw[12], &addr, 4);
}

int urv_init_ah_from_wc(struct ibv_context *ibctx, uint8_t port,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah)
{
	struct urv_context *c = to_uctx(ibctx);
	union ibv_gid sgid, dgid;
	uint32_t sa, da, i;
	uint8_t tos = 0, ttl = 0xff;
	uint32_t flow = 0;

	if (port != 1 || !(wc->wc_flags & IBV_WC_GRH) || !grh) {
		errno = EINVAL;
		return -1;
	}
	if (grh_is_ipv4(grh, &sa, &da, &tos, &ttl)) {
		v4_gid(&sgid, sa);
		v4_gid(&dgid, da);
	} else {
		uint32_t v = be32toh(grh->version_tclass_flow);

		sgid = grh->sgid;
		dgid = grh->dgid;
		tos = (uint8_t)(v >> 20);
		flow = v & 0xfffff;
		ttl = grh->hop_limit;
	}
	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	ah->port_num = port;
	ah->is_global = 1;
	ah->grh.dgid = sgid;
	ah->grh.flow_label = flow;
	ah->grh.traffic_class = tos;
	(void)ttl;
	ah->grh.hop_limit = 0xff;
	for (i = 0; i < c->info.gid_count; i++) {
		if (!memcmp(&c->info.gids[i], &dgid, sizeof(dgid)) &&
		    c->info.gid_type[i] == IBV_GID_TYPE_ROCE_V2) {
			ah->grh.sgid_index = (uint8_t)i;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}
