/* SPDX-License-Identifier: MIT */
/* rdma_cm multicast: JOIN_IP_MCAST, JOIN_MCAST, LEAVE_MCAST, and the
 * port's membership reports with its first and last member: the kernel's
 * cma_igmp_send() makes the netdev join the group (ip_mc_inc_group), so a
 * snooping switch forwards the group's traffic to the port; uroce has no
 * netdev, so the daemon sends the IGMPv2 / MLDv1 report itself (built by
 * wire/mcast.c), and the leave when the last member goes. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

/* another full member of mc's group on this device */
static bool ucma_mc_shared(const struct ucma_dev *u, const struct ucma_mc *mc)
{
	for (uint32_t i = 0; i < u->nmcs; i++) {
		const struct ucma_mc *o = u->mcs[i];
		if (o && o != mc && !o->send_only && !memcmp(o->mgid.raw, mc->mgid.raw, 16))
			return true;
	}
	return false;
}

/* an IGMPv2 (IPv4 group) or MLDv1 (IPv6 group) report or leave from
 * GID src: 0 or -errno */
static int ucma_mc_send(struct emu_dev *d, const union ibv_gid *group, const union ibv_gid *src,
			bool join)
{
	struct wire_gid g, s;
	struct emu_txbuf b;

	memcpy(g.raw, group->raw, 16);
	memcpy(s.raw, src->raw, 16);
	int rc = emu_tx_alloc(d, &b);
	if (rc)
		return rc;
	size_t len = wire_mcast_report(b.data, b.cap, d->mac, d->ip_id, &g, &s, join);
	if (!len) {
		emu_tx_free(d, &b);
		return -EINVAL;
	}
	d->ip_id++;
	emu_tx_send(d, &b, (uint32_t)len);
	return 0;
}

/* the port joins the group with its first member and leaves it with the
 * last, as ip_mc_inc_group/ip_mc_dec_group count a netdev's members */
static void ucma_mc_report(struct ucma_dev *u, struct ucma_mc *mc, bool join)
{
	if (mc->send_only || ucma_mc_shared(u, mc))
		return;
	const struct ucma_id *id = mc->id;
	sa_family_t fam = ucma_gid_v4(&mc->mgid) ? AF_INET : AF_INET6;
	int i = -1;
	if (fam == AF_INET && ucma_gid_v4(&id->sgid))
		i = id->sgid_index;
	else if (fam == AF_INET)
		i = ucma_src_index(u->d, AF_INET);
	else
		i = 0; /* MLD: the link-local address (RFC 2710) */
	if (i < 0 || (uint32_t)i >= u->d->gid_count ||
	    ucma_mc_send(u->d, &mc->mgid, &u->d->gids[i], join))
		EMU_LOG_RL(INFO, "%s: no %s report for a multicast group\n", u->d->name,
			   fam == AF_INET ? "IGMP" : "MLD");
}

void ucma_mc_free(struct ucma_dev *u, struct ucma_mc *mc)
{
	if (mc->handle < u->nmcs && u->mcs[mc->handle] == mc)
		u->mcs[mc->handle] = NULL;
	ucma_mc_report(u, mc, false);
	((struct ucma_ctx *)mc->id->file->ctx->ucma)->nmcs--;
	free(mc);
}

static int ucma_mc_alloc(struct ucma_dev *u, struct ucma_mc *mc)
{
	for (uint32_t i = 0; i < u->nmcs; i++)
		if (!u->mcs[i]) {
			u->mcs[i] = mc;
			mc->handle = i;
			return 0;
		}
	uint32_t old = u->nmcs;
	struct ucma_mc **t = ucma_grow(u->mcs, &u->nmcs, 16, sizeof(*t));
	if (!t)
		return -ENOMEM;
	u->mcs = t;
	mc->handle = old;
	t[old] = mc;
	return 0;
}

/* the RoCE MGID of an IP multicast address (cma_iboe_set_mgid, RoCEv2) */
static void ucma_mgid(const struct sockaddr_storage *a, union ibv_gid *g)
{
	ucma_gid(a, g);
}

static int ucma_join(struct ucma_call *k, uint32_t h, uint64_t uid,
		     const struct sockaddr_storage *a, uint16_t flags)
{
	struct rdma_ucm_create_id_resp r = { 0 };
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	if (flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return -EINVAL;
	int rc = ucma_get_dev(k, h, &id);
	if (rc)
		return rc;
	if (id->state != S_ADDR_BOUND && id->state != S_ADDR_RESOLVED)
		return -EINVAL;
	if (id->qp_type != IBV_QPT_UD || !ucma_is_mcast(a))
		return -EINVAL;
	struct ucma_ctx *x = id->file->ctx->ucma;
	if (x->nmcs >= EMU_UCMA_MAX_MCS)
		return -ENOMEM;
	struct ucma_mc *mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	if (ucma_mc_alloc(k->u, mc)) {
		free(mc);
		return -ENOMEM;
	}
	x->nmcs++;
	mc->id = id;
	mc->uid = uid;
	memcpy(&mc->addr, a, ucma_addr_size(a));
	ucma_mgid(a, &mc->mgid);
	mc->send_only = flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	ucma_mc_report(k->u, mc, true);
	mc->next = id->mcs;
	id->mcs = mc;
	struct ucma_ev *e = ucma_ev_new(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (e) {
		e->mc = mc;
		e->resp.uid = mc->uid;
		e->resp.id = mc->handle;
		struct rdma_ucm_ud_param *ud = &e->resp.param.ud;
		ud->qp_num = 0xffffff;
		ud->qkey = UCMA_UDP_QKEY;
		memcpy(ud->ah_attr.grh.dgid, mc->mgid.raw, 16);
		ud->ah_attr.grh.sgid_index = id->sgid_index;
		ud->ah_attr.grh.hop_limit = UCMA_HOP_LIMIT;
		ud->ah_attr.grh.traffic_class = id->tos;
		ud->ah_attr.is_global = 1;
		ud->ah_attr.port_num = 1;
		ucma_ev_post(k->u, e);
	}
	r.id = mc->handle;
	ucma_out(k, &r, sizeof(r));
	return 0;
}

int ucma_cmd_join_ip_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_join_ip_mcast, q, sizeof(q));
	struct sockaddr_storage a;

	if (!ucma_in6_size(&q.addr))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(q.addr));
	return ucma_join(k, q.id, q.uid, &a, RDMA_MC_JOIN_FLAG_FULLMEMBER);
}

int ucma_cmd_join_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_join_mcast, q, sizeof(q));
	struct sockaddr_storage a;

	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(a));
	if (!q.addr_size || q.addr_size != ucma_addr_size(&a))
		return -EINVAL;
	return ucma_join(k, q.id, q.uid, &a, q.join_flags);
}

int ucma_cmd_leave_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_destroy_id, q, sizeof(q));
	struct rdma_ucm_destroy_id_resp r = { 0 };
	struct ucma_dev *u = k->u;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	struct ucma_mc *mc = q.id < u->nmcs ? u->mcs[q.id] : NULL;
	if (!mc)
		return -ENOENT;
	if (mc->id->file != k->f)
		return -EINVAL;
	r.events_reported = mc->events_reported;
	for (struct ucma_mc **pp = &mc->id->mcs; *pp; pp = &(*pp)->next)
		if (*pp == mc) {
			*pp = mc->next;
			break;
		}
	ucma_ev_free(ucma_ev_take(k->f, NULL, NULL, mc));
	ucma_mc_free(u, mc);
	ucma_out(k, &r, sizeof(r));
	return 0;
}
