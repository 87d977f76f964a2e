/* SPDX-License-Identifier: MIT */
#include "pkt.h"

#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "icrc.h"
#include "ip.h"

void wire_pkt_init(struct wire_pkt *d, uint8_t version)
{
	memset(d, 0, sizeof(*d));
	d->ip.version = version;
	d->ethertype = version == 6 ? WIRE_ETHERTYPE_IPV6 : WIRE_ETHERTYPE_IPV4;
	d->ip.ttl = 64;
	d->ip.df = version != 6;
	d->udp.sport = WIRE_UDP_SPORT_MIN;
	d->udp.dport = WIRE_ROCE_UDP_PORT;
	d->bth.pkey = WIRE_PKEY_DEFAULT;
}

static size_t l2_len(const struct wire_pkt *d)
{
	return WIRE_ETH_LEN + (d->vlan ? WIRE_VLAN_LEN : 0);
}

static size_t l3_len(const struct wire_pkt *d)
{
	return d->ip.version == 6 ? WIRE_IPV6_LEN : WIRE_IPV4_LEN;
}

static uint8_t pad_of(const struct wire_pkt *d, unsigned flags)
{
	return (flags & WIRE_BUILD_KEEP_PAD) ? (d->bth.pad & 3) : wire_pad(d->payload_len);
}

size_t wire_hdr_len(const struct wire_pkt *d)
{
	return l2_len(d) + l3_len(d) + WIRE_UDP_LEN + wire_opcode_info(d->bth.opcode)->hdr_len;
}

size_t wire_frame_len(const struct wire_pkt *d)
{
	return wire_hdr_len(d) + d->payload_len + wire_pad(d->payload_len) + WIRE_ICRC_LEN;
}

/* Validate: a packet this builder can encode; *udp_len is the UDP length. */
static int build_check(const struct wire_pkt *d, const struct wire_opcode_info *op,
		       uint8_t pad, unsigned flags, size_t *udp_len)
{
	if (!(op->flags & WIRE_OPF_VALID) || (d->ip.version != 4 && d->ip.version != 6))
		return -EINVAL;
	if ((d->payload_len || pad) && !(op->flags & WIRE_OPF_PAYLOAD) &&
	    !(flags & WIRE_BUILD_KEEP_PAD))
		return -EINVAL;
	if (d->ip.version == 4 && (!wire_gid_is_ipv4(&d->ip.src) || !wire_gid_is_ipv4(&d->ip.dst)))
		return -EINVAL;
	*udp_len = WIRE_UDP_LEN + op->hdr_len + (size_t)d->payload_len + pad + WIRE_ICRC_LEN;
	if (*udp_len + (d->ip.version == 4 ? WIRE_IPV4_LEN : 0) > 0xffff)
		return -EINVAL;
	return 0;
}

/* Ethernet (and VLAN) header; returns the L3 position. */
static uint8_t *build_l2(const struct wire_pkt *d, uint8_t *p)
{
	memcpy(p, d->dmac, 6);
	memcpy(p + 6, d->smac, 6);
	p += 12;
	if (d->vlan) {
		wire_put_be16(p, WIRE_ETHERTYPE_VLAN);
		wire_put_be16(p + 2, d->vlan_tci);
		p += 4;
	}
	wire_put_be16(p, d->ip.version == 6 ? WIRE_ETHERTYPE_IPV6 : WIRE_ETHERTYPE_IPV4);
	return p + 2;
}

static uint8_t *build_ipv4(const struct wire_pkt *d, uint8_t *p, size_t udp_len,
			   unsigned flags)
{
	uint16_t total = (flags & WIRE_BUILD_KEEP_LEN) ? d->ip.total_len
						       : (uint16_t)(WIRE_IPV4_LEN + udp_len);
	p[0] = 0x45;
	p[1] = d->ip.tos;
	wire_put_be16(p + 2, total);
	wire_put_be16(p + 4, d->ip.id);
	wire_put_be16(p + 6, (uint16_t)((d->ip.evil ? 0x8000 : 0) | (d->ip.df ? 0x4000 : 0)));
	p[8] = d->ip.ttl;
	p[9] = WIRE_IPPROTO_UDP;
	memcpy(p + 12, d->ip.src.raw + 12, 4);
	memcpy(p + 16, d->ip.dst.raw + 12, 4);
	wire_put_be16(p + 10, (flags & WIRE_BUILD_KEEP_IPV4_CSUM) ? d->ip.csum
								  : wire_ipv4_csum(p, WIRE_IPV4_LEN));
	return p + WIRE_IPV4_LEN;
}

static uint8_t *build_ipv6(const struct wire_pkt *d, uint8_t *p, size_t udp_len,
			   unsigned flags)
{
	uint16_t plen = (flags & WIRE_BUILD_KEEP_LEN) ? d->ip.total_len : (uint16_t)udp_len;

	wire_put_be32(p, 6u << 28 | (uint32_t)d->ip.tos << 20 | (d->ip.flow_label & 0xfffff));
	wire_put_be16(p + 4, plen);
	p[6] = WIRE_IPPROTO_UDP;
	p[7] = d->ip.ttl;
	memcpy(p + 8, d->ip.src.raw, 16);
	memcpy(p + 24, d->ip.dst.raw, 16);
	return p + WIRE_IPV6_LEN;
}

static uint8_t *build_udp(const struct wire_pkt *d, uint8_t *p, size_t udp_len,
			  unsigned flags)
{
	wire_put_be16(p, d->udp.sport);
	wire_put_be16(p + 2, d->udp.dport);
	wire_put_be16(p + 4, (flags & WIRE_BUILD_KEEP_LEN) ? d->udp.len : (uint16_t)udp_len);
	/* A real UDP checksum covers the payload, so wire_build() fills it in
	 * at the end; here it is 0 ("none") until then. */
	wire_put_be16(p + 6, (flags & WIRE_BUILD_UDP_CSUM) ? 0 : d->udp.csum);
	return p + WIRE_UDP_LEN;
}

/* BTH and the extension headers the opcode carries. */
static void build_transport(const struct wire_pkt *d, const struct wire_opcode_info *op,
			    uint8_t pad, uint8_t *p)
{
	struct wire_bth bth = d->bth;

	bth.pad = pad;
	wire_bth_encode(p, &bth);
	if (op->hdrs & WIRE_HDR_RETH)
		wire_reth_encode(p + op->off[WIRE_HI_RETH], &d->reth);
	if (op->hdrs & WIRE_HDR_AETH)
		wire_aeth_encode(p + op->off[WIRE_HI_AETH], &d->aeth);
	if (op->hdrs & WIRE_HDR_ATOMICETH)
		wire_atomiceth_encode(p + op->off[WIRE_HI_ATOMICETH], &d->atomiceth);
	if (op->hdrs & WIRE_HDR_ATOMICACKETH)
		wire_atomicacketh_encode(p + op->off[WIRE_HI_ATOMICACKETH], &d->atomicacketh);
	if (op->hdrs & WIRE_HDR_XRCETH)
		wire_put_be32(p + op->off[WIRE_HI_XRCETH],
			      (uint32_t)d->xrceth_resv << 24 | (d->xrc_srqn & WIRE_QPN_MASK));
	if (op->hdrs & WIRE_HDR_DETH)
		wire_deth_encode(p + op->off[WIRE_HI_DETH], &d->deth);
	if (op->hdrs & WIRE_HDR_IMMDT)
		wire_put_be32(p + op->off[WIRE_HI_IMMDT], d->imm);
	if (op->hdrs & WIRE_HDR_IETH)
		wire_put_be32(p + op->off[WIRE_HI_IETH], d->ieth_rkey);
	if (op->hdrs & WIRE_HDR_CNP)
		memcpy(p + op->off[WIRE_HI_CNP], d->cnp_resv, WIRE_CNP_RESV_LEN);
	if (op->hdrs & WIRE_HDR_FETH)
		wire_feth_encode(p + op->off[WIRE_HI_FETH], &d->feth);
}

/* validate -> L2 -> L3 -> UDP -> transport headers. */
int wire_build_headers(const struct wire_pkt *d, uint8_t *buf, size_t cap,
		       unsigned flags, size_t *hdr_len)
{
	const struct wire_opcode_info *op = wire_opcode_info(d->bth.opcode);
	uint8_t pad = pad_of(d, flags);
	size_t hl, udp_len;
	uint8_t *p;
	int ret = build_check(d, op, pad, flags, &udp_len);

	if (ret)
		return ret;
	hl = wire_hdr_len(d);
	if (!buf || cap < hl)
		return -ENOSPC;
	p = build_l2(d, buf);
	if (d->ip.version == 4)
		p = build_ipv4(d, p, udp_len, flags);
	else
		p = build_ipv6(d, p, udp_len, flags);
	p = build_udp(d, p, udp_len, flags);
	build_transport(d, op, pad, p);
	if (hdr_len)
		*hdr_len = hl;
	return 0;
}

int wire_build(const struct wire_pkt *d, uint8_t *buf, size_t cap, unsigned flags,
	       size_t *frame_len)
{
	uint8_t pad = pad_of(d, flags);
	size_t hl, total;
	int rc;

	rc = wire_build_headers(d, buf, cap, flags, &hl);
	if (rc)
		return rc;
	total = hl + d->payload_len + pad + WIRE_ICRC_LEN;
	if (cap < total)
		return -ENOSPC;
	if (d->payload_len) {
		if (!d->payload)
			return -EINVAL;
		memcpy(buf + hl, d->payload, d->payload_len);
	}

	uint8_t *padp = buf + hl + d->payload_len;
	if (flags & WIRE_BUILD_KEEP_PAD)
		memcpy(padp, d->pad_bytes, pad);
	else
		memset(padp, 0, pad);

	size_t l3off = l2_len(d);
	uint8_t *l3 = buf + l3off;
	size_t icrc_off = total - WIRE_ICRC_LEN;
	uint32_t icrc = d->icrc;

	if (!(flags & WIRE_BUILD_KEEP_ICRC) && !wire_icrc_calc(l3, icrc_off - l3off, &icrc))
		return -EINVAL;
	wire_icrc_put(buf + icrc_off, icrc);

	if (flags & WIRE_BUILD_UDP_CSUM) {
		uint8_t *udp = l3 + l3_len(d);
		size_t udp_len = total - l3off - l3_len(d);
		wire_put_be16(udp + 6, wire_udp_csum(l3, udp, udp_len));
	}
	if (frame_len)
		*frame_len = total;
	return 0;
}

size_t wire_finish_icrc(const uint8_t *hdr, size_t hdr_len,
			const struct wire_iov *iov, unsigned iovcnt, uint8_t *trailer)
{
	static const uint8_t zeros[3];
	size_t l3off = WIRE_ETH_LEN, bth;
	uint16_t et;
	uint32_t s;

	if (!hdr || !trailer || hdr_len < WIRE_ETH_LEN)
		return 0;
	et = wire_get_be16(hdr + 12);
	if (et == WIRE_ETHERTYPE_VLAN) {
		if (hdr_len < WIRE_ETH_LEN + WIRE_VLAN_LEN)
			return 0;
		et = wire_get_be16(hdr + 16);
		l3off += WIRE_VLAN_LEN;
	}
	if (hdr_len <= l3off)
		return 0;
	if (et == WIRE_ETHERTYPE_IPV4 && (hdr[l3off] >> 4) == 4)
		bth = l3off + (size_t)(hdr[l3off] & 0x0f) * 4 + WIRE_UDP_LEN;
	else if (et == WIRE_ETHERTYPE_IPV6 && (hdr[l3off] >> 4) == 6)
		bth = l3off + WIRE_IPV6_LEN + WIRE_UDP_LEN;
	else
		return 0;
	if (hdr_len < bth + WIRE_BTH_LEN)
		return 0;
	if (!wire_icrc_headers(hdr + l3off, hdr_len - l3off, &s))
		return 0;
	for (unsigned i = 0; i < iovcnt; i++)
		if (iov[i].len)
			s = wire_icrc_update(s, iov[i].base, iov[i].len);

	uint8_t pad = (hdr[bth + 1] >> 4) & 3;
	s = wire_icrc_update(s, zeros, pad);
	memset(trailer, 0, pad);
	wire_icrc_put(trailer + pad, wire_icrc_final(s));
	return (size_t)pad + WIRE_ICRC_LEN;
}
