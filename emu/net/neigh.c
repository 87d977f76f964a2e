/* SPDX-License-Identifier: MIT */
/* Addressing on real ports: neighbour cache (ARP for IPv4-mapped GIDs,
 * neighbour discovery for IPv6), answers to ARP, NS and ICMP/ICMPv6 echo
 * for our own addresses, and address-vector resolution. On the loopback
 * port every frame returns to us, so the MAC is always our own. On a port
 * shared with the host the kernel answers and resolves: the cache is
 * filled from its table instead (kneigh.c). */
#include <errno.h>
#include <string.h>

#include "net.h"

#define EMU_NEIGH_REACHABLE_NS (300ull * 1000000000ull)
#define EMU_NEIGH_RETRY_NS     (1000000000ull)
#define EMU_NEIGH_TRIES        3
/* a shared port reads the kernel's table again this often while the
 * kernel resolves, for as long as the kernel's own 3 probes 1 s apart */
#define EMU_KNEIGH_RETRY_NS    (20ull * 1000000)
#define EMU_KNEIGH_TRIES       160

enum { EMU_NEIGH_FREE, EMU_NEIGH_INCOMPLETE, EMU_NEIGH_REACHABLE };

static const uint8_t emu_v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool gid_is_v4(const union ibv_gid *g)
{
	return !memcmp(g->raw, emu_v4map, 12);
}

static int emu_first_v4(const struct emu_dev *d)
{
	for (uint32_t i = 0; i < d->gid_count; i++)
		if (gid_is_v4(&d->gids[i]))
			return (int)i;
	return -1;
}

static int emu_first_v6(const struct emu_dev *d)
{
	for (uint32_t i = 0; i < d->gid_count; i++)
		if (!gid_is_v4(&d->gids[i]))
			return (int)i;
	return -1;
}

static void emu_arp_send(struct emu_dev *d, uint16_t oper, const uint8_t tha[6],
			 const uint8_t spa[4], const uint8_t tpa[4], const uint8_t dmac[6])
{
	uint8_t f[60] = { 0 };

	memcpy(f, dmac, 6);
	memcpy(f + 6, d->mac, 6);
	wire_put_be16(f + 12, WIRE_ETHERTYPE_ARP);
	wire_put_be16(f + 14, 1);
	wire_put_be16(f + 16, WIRE_ETHERTYPE_IPV4);
	f[18] = 6;
	f[19] = 4;
	wire_put_be16(f + 20, oper);
	memcpy(f + 22, d->mac, 6);
	memcpy(f + 28, spa, 4);
	memcpy(f + 32, tha, 6);
	memcpy(f + 38, tpa, 4);
	if (!emu_tx_frame(d, f, sizeof(f)))
		d->cnt.tx_arp++;
}

/* IPv6 + ICMPv6 frame: NS (135) to solicited-node multicast, NA (136). */
static void emu_nd_send(struct emu_dev *d, uint8_t type, const uint8_t src[16],
			const uint8_t dst[16], const uint8_t dmac[6], const uint8_t target[16],
			bool solicited)
{
	uint8_t f[14 + 40 + 32] = { 0 };
	uint8_t *ip = f + 14, *ic = ip + 40;

	memcpy(f, dmac, 6);
	memcpy(f + 6, d->mac, 6);
	wire_put_be16(f + 12, WIRE_ETHERTYPE_IPV6);
	ip[0] = 0x60;
	wire_put_be16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	ic[0] = type;
	if (type == 136)
		ic[4] = solicited ? 0x60 : 0x20; /* S, O flags */
	memcpy(ic + 8, target, 16);
	ic[24] = type == 135 ? 1 : 2; /* source / target link-layer address */
	ic[25] = 1;
	memcpy(ic + 26, d->mac, 6);
	uint32_t s = wire_csum_add(0, ip + 8, 32);
	s += 32 + 58;
	s = wire_csum_add(s, ic, 32);
	wire_put_be16(ic + 2, wire_csum_fold(s));
	if (!emu_tx_frame(d, f, sizeof(f)))
		d->cnt.tx_nd++;
}

static unsigned emu_neigh_tries(const struct emu_dev *d)
{
	return d->kneigh ? EMU_KNEIGH_TRIES : EMU_NEIGH_TRIES;
}

/* Shared port: one look into the kernel's table; a miss is asked again
 * from emu_neigh_poll, a peer it cannot reach fails at the next poll. */
static void emu_neigh_ask_kernel(struct emu_dev *d, struct emu_neigh *n)
{
	uint8_t mac[6];
	int rc = emu_kneigh_query(d, &n->ip, mac);

	if (rc == 0) {
		emu_neigh_update(d, &n->ip, mac);
		return;
	}
	n->tries = rc == -EAGAIN ? (uint8_t)(n->tries + 1) : EMU_KNEIGH_TRIES;
	n->next_try_ns = emu_now_ns() + (rc == -EAGAIN ? EMU_KNEIGH_RETRY_NS : 0);
	if (n->state == EMU_NEIGH_REACHABLE && rc != -EAGAIN)
		n->state = EMU_NEIGH_FREE; /* no longer reachable from this port */
}

static void emu_neigh_solicit(struct emu_dev *d, struct emu_neigh *n)
{
	if (d->kneigh) {
		emu_neigh_ask_kernel(d, n);
		return;
	}
	if (gid_is_v4(&n->ip)) {
		int g = emu_first_v4(d);
		static const uint8_t zero[6];
		if (g >= 0)
			emu_arp_send(d, 1, zero, d->gids[g].raw + 12, n->ip.raw + 12,
				     (const uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff });
	} else {
		int g = emu_first_v6(d);
		uint8_t snm[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff };
		memcpy(snm + 13, n->ip.raw + 13, 3);
		uint8_t mac[6] = { 0x33, 0x33, snm[12], snm[13], snm[14], snm[15] };
		if (g >= 0)
			emu_nd_send(d, 135, d->gids[g].raw, snm, mac, n->ip.raw, false);
	}
	n->tries++;
	n->next_try_ns = emu_now_ns() + EMU_NEIGH_RETRY_NS;
}

static struct emu_neigh *emu_neigh_find(struct emu_dev *d, const union ibv_gid *ip)
{
	for (unsigned i = 0; i < EMU_NEIGH_MAX; i++)
		if (d->neigh[i].state != EMU_NEIGH_FREE && !memcmp(d->neigh[i].ip.raw, ip->raw, 16))
			return &d->neigh[i];
	return NULL;
}

static struct emu_neigh *emu_neigh_slot(struct emu_dev *d)
{
	struct emu_neigh *old = &d->neigh[0];

	for (unsigned i = 0; i < EMU_NEIGH_MAX; i++) {
		if (d->neigh[i].state == EMU_NEIGH_FREE)
			return &d->neigh[i];
		if (d->neigh[i].expires_ns < old->expires_ns)
			old = &d->neigh[i];
	}
	return old; /* evict the entry closest to expiry */
}

void emu_neigh_update(struct emu_dev *d, const union ibv_gid *ip, const uint8_t mac[6])
{
	struct emu_neigh *n = emu_neigh_find(d, ip);

	if (!n) {
		n = emu_neigh_slot(d);
		memset(n, 0, sizeof(*n));
		n->ip = *ip;
	}
	memcpy(n->mac, mac, 6);
	n->state = EMU_NEIGH_REACHABLE;
	n->tries = 0;
	n->expires_ns = emu_now_ns() + EMU_NEIGH_REACHABLE_NS;
}

int emu_neigh_lookup(struct emu_dev *d, const union ibv_gid *ip, uint8_t mac[6])
{
	if (d->loopback || emu_gid_find(d, ip) >= 0) {
		memcpy(mac, d->mac, 6);
		return 0;
	}
	if (gid_is_v4(ip) && (ip->raw[12] & 0xf0) == 0xe0) {
		uint8_t m[6] = { 0x01, 0x00, 0x5e, ip->raw[13] & 0x7f, ip->raw[14], ip->raw[15] };
		memcpy(mac, m, 6);
		return 0;
	}
	if (ip->raw[0] == 0xff) {
		uint8_t m[6] = { 0x33, 0x33, ip->raw[12], ip->raw[13], ip->raw[14], ip->raw[15] };
		memcpy(mac, m, 6);
		return 0;
	}
	struct emu_neigh *n = emu_neigh_find(d, ip);
	if (n && n->state == EMU_NEIGH_REACHABLE) {
		memcpy(mac, n->mac, 6);
		/* keep using a stale entry while refreshing it */
		if (n->expires_ns < emu_now_ns() && n->next_try_ns < emu_now_ns())
			emu_neigh_solicit(d, n);
		return 0;
	}
	if (!n) {
		n = emu_neigh_slot(d);
		memset(n, 0, sizeof(*n));
		n->ip = *ip;
		n->state = EMU_NEIGH_INCOMPLETE;
		n->expires_ns = emu_now_ns() + EMU_NEIGH_RETRY_NS * (EMU_NEIGH_TRIES + 1);
		emu_neigh_solicit(d, n);
		/* the kernel's table (shared port) may know it at once */
		if (n->state == EMU_NEIGH_REACHABLE) {
			memcpy(mac, n->mac, 6);
			return 0;
		}
	}
	return -EAGAIN;
}

static void emu_arp_input(struct emu_dev *d, const uint8_t *f, uint32_t len)
{
	if (len < 42 || wire_get_be16(f + 14) != 1 || wire_get_be16(f + 16) != WIRE_ETHERTYPE_IPV4 ||
	    f[18] != 6 || f[19] != 4)
		return;
	d->cnt.rx_arp++;
	union ibv_gid spa = { 0 }, tpa = { 0 };
	memcpy(spa.raw, emu_v4map, 12);
	memcpy(spa.raw + 12, f + 28, 4);
	memcpy(tpa.raw, emu_v4map, 12);
	memcpy(tpa.raw + 12, f + 38, 4);
	bool for_us = emu_gid_find(d, &tpa) >= 0;
	/* learn from replies and from requests aimed at us (RFC 826 merge) */
	if (for_us || emu_neigh_find(d, &spa))
		emu_neigh_update(d, &spa, f + 22);
	if (wire_get_be16(f + 20) == 1 && for_us)
		emu_arp_send(d, 2, f + 22, f + 38, f + 28, f + 22);
}

static void emu_icmp4_input(struct emu_dev *d, const uint8_t *f, uint32_t len)
{
	const uint8_t *ip = f + 14;
	uint32_t ihl = (ip[0] & 0xf) * 4u;
	uint32_t tot = wire_get_be16(ip + 2);

	if (ihl < 20 || tot < ihl + 8 || 14 + tot > len || ip[9] != 1)
		return;
	const uint8_t *ic = ip + ihl;
	if (ic[0] != 8)
		return;
	union ibv_gid dst = { 0 };
	memcpy(dst.raw, emu_v4map, 12);
	memcpy(dst.raw + 12, ip + 16, 4);
	if (emu_gid_find(d, &dst) < 0)
		return;
	d->cnt.rx_icmp++;
	uint8_t out[1514];
	if (14 + tot > sizeof(out))
		return;
	memcpy(out, f, 14 + tot);
	memcpy(out, f + 6, 6);
	memcpy(out + 6, d->mac, 6);
	uint8_t *oip = out + 14, *oic = oip + ihl;
	memcpy(oip + 12, ip + 16, 4);
	memcpy(oip + 16, ip + 12, 4);
	oip[8] = 64;
	wire_put_be16(oip + 10, 0);
	wire_put_be16(oip + 10, wire_csum_fold(wire_csum_add(0, oip, ihl)));
	oic[0] = 0;
	wire_put_be16(oic + 2, 0);
	wire_put_be16(oic + 2, wire_csum_fold(wire_csum_add(0, oic, tot - ihl)));
	if (!emu_tx_frame(d, out, 14 + tot))
		d->cnt.tx_icmp++;
}

static void emu_icmp6_input(struct emu_dev *d, const uint8_t *f, uint32_t len)
{
	const uint8_t *ip = f + 14;
	uint32_t plen = wire_get_be16(ip + 4);

	if (ip[6] != 58 || plen < 8 || 14 + 40 + plen > len)
		return;
	const uint8_t *ic = ip + 40;
	union ibv_gid src, dst;
	memcpy(src.raw, ip + 8, 16);
	memcpy(dst.raw, ip + 24, 16);
	if (ic[0] == 135 && plen >= 24) { /* NS */
		union ibv_gid tgt;
		memcpy(tgt.raw, ic + 8, 16);
		if (emu_gid_find(d, &tgt) < 0)
			return;
		d->cnt.rx_nd++;
		if (plen >= 32 && ic[24] == 1)
			emu_neigh_update(d, &src, ic + 26);
		emu_nd_send(d, 136, tgt.raw, src.raw, f + 6, tgt.raw, true);
	} else if (ic[0] == 136 && plen >= 32 && ic[24] == 2) { /* NA */
		union ibv_gid tgt;
		memcpy(tgt.raw, ic + 8, 16);
		d->cnt.rx_nd++;
		if (emu_neigh_find(d, &tgt))
			emu_neigh_update(d, &tgt, ic + 26);
	} else if (ic[0] == 128 && emu_gid_find(d, &dst) >= 0) { /* echo request */
		uint8_t out[1514];
		if (14 + 40 + plen > sizeof(out))
			return;
		d->cnt.rx_icmp++;
		memcpy(out, f, 14 + 40 + plen);
		memcpy(out, f + 6, 6);
		memcpy(out + 6, d->mac, 6);
		uint8_t *oip = out + 14, *oic = oip + 40;
		memcpy(oip + 8, ip + 24, 16);
		memcpy(oip + 24, ip + 8, 16);
		oip[7] = 64;
		oic[0] = 129;
		wire_put_be16(oic + 2, 0);
		uint32_t s = wire_csum_add(0, oip + 8, 32);
		s += plen + 58;
		s = wire_csum_add(s, oic, plen);
		wire_put_be16(oic + 2, wire_csum_fold(s));
		if (!emu_tx_frame(d, out, 14 + 40 + plen))
			d->cnt.tx_icmp++;
	}
}

int emu_gid_find(const struct emu_dev *d, const union ibv_gid *gid)
{
	for (uint32_t i = 0; i < d->gid_count; i++)
		if (!memcmp(d->gids[i].raw, gid->raw, 16))
			return (int)i;
	return -1;
}

void emu_ip_l2_input(struct emu_dev *d, const uint8_t *f, uint32_t len)
{
	if (len < 14)
		goto drop;
	uint16_t et = wire_get_be16(f + 12);
	if (et == WIRE_ETHERTYPE_ARP) {
		emu_arp_input(d, f, len);
		return;
	}
	if (et == WIRE_ETHERTYPE_IPV4 && len >= 34) {
		emu_icmp4_input(d, f, len);
		return;
	}
	if (et == WIRE_ETHERTYPE_IPV6 && len >= 54) {
		emu_icmp6_input(d, f, len);
		return;
	}
drop:
	d->cnt.drops[EMU_DROP_NOT_ROCE]++;
}

int emu_av_resolve(struct emu_dev *d, const struct ibv_ah_attr *a, struct emu_av *av)
{
	memset(av, 0, sizeof(*av));
	/* RoCE carries every packet in IP: a GRH is mandatory */
	if (!a->is_global || a->port_num != 1 || a->grh.sgid_index >= d->gid_count)
		return -EINVAL;
	memcpy(av->dgid.raw, a->grh.dgid.raw, 16);
	av->sgid = d->gids[a->grh.sgid_index];
	av->sgid_index = a->grh.sgid_index;
	av->ipv6 = !gid_is_v4(&av->dgid);
	if (av->ipv6 == gid_is_v4(&av->sgid))
		return -EINVAL; /* IPv4 source with IPv6 destination or back */
	static const uint8_t zero[16];
	if (!memcmp(av->dgid.raw, zero, 16))
		return -EINVAL;
	av->hop_limit = a->grh.hop_limit ? a->grh.hop_limit : 64;
	av->traffic_class = a->grh.traffic_class;
	av->flow_label = a->grh.flow_label & 0xfffff;
	av->sl = a->sl;
	av->mac_valid = emu_neigh_lookup(d, &av->dgid, av->dmac) == 0;
	return 0;
}

bool emu_av_refresh(struct emu_dev *d, struct emu_av *av)
{
	if (!av->mac_valid)
		av->mac_valid = emu_neigh_lookup(d, &av->dgid, av->dmac) == 0;
	return av->mac_valid;
}

void emu_neigh_poll(struct emu_dev *d, uint64_t now)
{
	for (unsigned i = 0; i < EMU_NEIGH_MAX; i++) {
		struct emu_neigh *n = &d->neigh[i];
		if (n->state != EMU_NEIGH_INCOMPLETE || n->next_try_ns > now)
			continue;
		if (n->tries >= emu_neigh_tries(d)) {
			EMU_LOG_RL(INFO, "%s: neighbour resolution failed\n", d->name);
			n->state = EMU_NEIGH_FREE;
			continue;
		}
		emu_neigh_solicit(d, n);
	}
}

uint64_t emu_neigh_next_deadline(struct emu_dev *d)
{
	uint64_t t = UINT64_MAX;

	for (unsigned i = 0; i < EMU_NEIGH_MAX; i++)
		if (d->neigh[i].state == EMU_NEIGH_INCOMPLETE && d->neigh[i].next_try_ns < t)
			t = d->neigh[i].next_try_ns;
	return t;
}
