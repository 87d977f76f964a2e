/* SPDX-License-Identifier: MIT */
/* Frame parser. Checks run in this order on purpose:
 *  1. just enough of L2/L3/L4 to decide whether the frame is RoCEv2 at all
 *     (other traffic gets a "not RoCE" reason, never a "malformed" one);
 *  2. IP/UDP well-formedness;
 *  3. the ICRC, as soon as its position is known (it sits at the end of the
 *     UDP payload whatever the opcode), so a corrupted opcode or pad shows up
 *     as an ICRC error rather than as a confusing semantic error;
 *  4. transport semantics (version, opcode, header lengths, pad, payload). */
#include "pkt.h"

#include <string.h>

#include "bytes.h"
#include "icrc.h"
#include "ip.h"

static bool ipv6_is_ext(uint8_t nh)
{
	switch (nh) {
	case 0:   /* hop-by-hop */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimental */
	case 254:
		return true;
	default:
		return false;
	}
}

/* Walk an IPv6 extension header chain only to classify the packet: a chain
 * that ends in UDP to 4791 is broken RoCE, anything else is other traffic. */
static enum wire_reason ipv6_ext_reason(const uint8_t *l3, size_t avail, uint8_t nh)
{
	size_t pos = WIRE_IPV6_LEN;

	for (int hops = 0; hops < 16 && ipv6_is_ext(nh); hops++) {
		size_t hl;

		if (nh == 50 || pos + 8 > avail)
			return WIRE_R_NOT_UDP;
		if (nh == 44)
			hl = 8;
		else if (nh == 51)
			hl = ((size_t)l3[pos + 1] + 2) * 4;
		else
			hl = ((size_t)l3[pos + 1] + 1) * 8;
		nh = l3[pos];
		pos += hl;
	}
	if (nh != WIRE_IPPROTO_UDP)
		return WIRE_R_NOT_UDP;
	if (pos + WIRE_UDP_LEN > avail || wire_get_be16(l3 + pos + 2) != WIRE_ROCE_UDP_PORT)
		return WIRE_R_NOT_ROCE_PORT;
	return WIRE_R_IPV6_EXT_HDR;
}

/* The UDP header at l4_off (relative to the frame): RoCEv2 or not. */
static enum wire_reason parse_udp_hdr(const uint8_t *udp, size_t l4_off,
				      struct wire_pkt *p)
{
	p->l4_off = (uint32_t)l4_off;
	p->udp.sport = wire_get_be16(udp);
	p->udp.dport = wire_get_be16(udp + 2);
	p->udp.len = wire_get_be16(udp + 4);
	p->udp.csum = wire_get_be16(udp + 6);
	if (p->udp.dport != WIRE_ROCE_UDP_PORT)
		return WIRE_R_NOT_ROCE_PORT;
	return WIRE_OK;
}

/* IPv4 header and UDP header; *iphl and *ip_end are relative to l3. */
static enum wire_reason parse_ipv4(const uint8_t *l3, size_t avail, size_t off,
				   unsigned flags, struct wire_pkt *p,
				   size_t *iphl_out, size_t *ip_end)
{
	enum wire_reason r;
	size_t iphl;

	if (avail < WIRE_IPV4_LEN)
		return WIRE_R_TRUNC_IP;
	p->ip.version = l3[0] >> 4;
	if (p->ip.version != 4)
		return WIRE_R_IPV4_VERSION;
	iphl = (size_t)(l3[0] & 0x0f) * 4;
	p->ip.tos = l3[1];
	p->ip.total_len = wire_get_be16(l3 + 2);
	p->ip.id = wire_get_be16(l3 + 4);
	uint16_t fl = wire_get_be16(l3 + 6);
	p->ip.evil = (fl & 0x8000) != 0;
	p->ip.df = (fl & 0x4000) != 0;
	p->ip.ttl = l3[8];
	p->ip.csum = wire_get_be16(l3 + 10);
	wire_gid_from_ipv4(&p->ip.src, l3 + 12);
	wire_gid_from_ipv4(&p->ip.dst, l3 + 16);
	if (iphl < WIRE_IPV4_LEN)
		return WIRE_R_IPV4_IHL;
	if (l3[9] != WIRE_IPPROTO_UDP)
		return WIRE_R_NOT_UDP;
	/* A non-first fragment has no UDP header to look at. */
	if (fl & 0x1fff)
		return WIRE_R_IPV4_FRAGMENT;
	if (avail < iphl)
		return WIRE_R_TRUNC_IP;
	if (avail < iphl + WIRE_UDP_LEN)
		return WIRE_R_TRUNC_UDP;
	r = parse_udp_hdr(l3 + iphl, off + iphl, p);
	if (r != WIRE_OK)
		return r;
	if (iphl != WIRE_IPV4_LEN)
		return WIRE_R_IPV4_OPTIONS;
	if (!(flags & WIRE_PARSE_NO_IPV4_CSUM) && !wire_ipv4_csum_ok(l3, iphl))
		return WIRE_R_IPV4_CSUM;
	if (fl & 0x2000)
		return WIRE_R_IPV4_FRAGMENT;
	if (p->ip.total_len < iphl + WIRE_UDP_LEN || p->ip.total_len > avail)
		return WIRE_R_IP_LEN;
	*iphl_out = iphl;
	*ip_end = p->ip.total_len;
	return WIRE_OK;
}

/* IPv6 header (no extension headers for RoCEv2) and UDP header. */
static enum wire_reason parse_ipv6(const uint8_t *l3, size_t avail, size_t off,
				   struct wire_pkt *p, size_t *iphl, size_t *ip_end, size_t ext_avail)
{
	enum wire_reason r;

	if (avail < WIRE_IPV6_LEN)
		return WIRE_R_TRUNC_IP;
	p->ip.version = l3[0] >> 4;
	if (p->ip.version != 6)
		return WIRE_R_IPV6_VERSION;
	uint32_t w = wire_get_be32(l3);
	p->ip.tos = (uint8_t)(w >> 20);
	p->ip.flow_label = w & 0xfffff;
	p->ip.total_len = wire_get_be16(l3 + 4);
	p->ip.ttl = l3[7];
	wire_gid_from_ipv6(&p->ip.src, l3 + 8);
	wire_gid_from_ipv6(&p->ip.dst, l3 + 24);
	if (l3[6] != WIRE_IPPROTO_UDP) {
		if (ipv6_is_ext(l3[6]))
			return ipv6_ext_reason(l3, ext_avail, l3[6]);
		return WIRE_R_NOT_UDP;
	}
	if (avail < WIRE_IPV6_LEN + WIRE_UDP_LEN)
		return WIRE_R_TRUNC_UDP;
	r = parse_udp_hdr(l3 + WIRE_IPV6_LEN, off + WIRE_IPV6_LEN, p);
	if (r != WIRE_OK)
		return r;
	if (p->ip.total_len < WIRE_UDP_LEN || (size_t)WIRE_IPV6_LEN + p->ip.total_len > avail)
		return WIRE_R_IP_LEN;
	*iphl = WIRE_IPV6_LEN;
	*ip_end = (size_t)WIRE_IPV6_LEN + p->ip.total_len;
	return WIRE_OK;
}

/* Extension headers the opcode carries, decoded into p. */
static void parse_ext_hdrs(const uint8_t *bth, const struct wire_opcode_info *op,
			   struct wire_pkt *p)
{
	p->hdrs = op->hdrs;
	if (op->hdrs & WIRE_HDR_RETH)
		wire_reth_decode(bth + op->off[WIRE_HI_RETH], &p->reth);
	if (op->hdrs & WIRE_HDR_AETH)
		wire_aeth_decode(bth + op->off[WIRE_HI_AETH], &p->aeth);
	if (op->hdrs & WIRE_HDR_ATOMICETH)
		wire_atomiceth_decode(bth + op->off[WIRE_HI_ATOMICETH], &p->atomiceth);
	if (op->hdrs & WIRE_HDR_ATOMICACKETH)
		wire_atomicacketh_decode(bth + op->off[WIRE_HI_ATOMICACKETH], &p->atomicacketh);
	if (op->hdrs & WIRE_HDR_XRCETH) {
		uint32_t x = wire_get_be32(bth + op->off[WIRE_HI_XRCETH]);

		p->xrc_srqn = x & WIRE_QPN_MASK;
		p->xrceth_resv = (uint8_t)(x >> 24);
	}
	if (op->hdrs & WIRE_HDR_DETH)
		wire_deth_decode(bth + op->off[WIRE_HI_DETH], &p->deth);
	if (op->hdrs & WIRE_HDR_IMMDT)
		p->imm = wire_get_be32(bth + op->off[WIRE_HI_IMMDT]);
	if (op->hdrs & WIRE_HDR_IETH)
		p->ieth_rkey = wire_get_be32(bth + op->off[WIRE_HI_IETH]);
	if (op->hdrs & WIRE_HDR_CNP)
		memcpy(p->cnp_resv, bth + op->off[WIRE_HI_CNP], WIRE_CNP_RESV_LEN);
	if (op->hdrs & WIRE_HDR_FETH)
		wire_feth_decode(bth + op->off[WIRE_HI_FETH], &p->feth);
}

/* Payload and pad; body = payload + pad bytes after the headers. The
 * length faults found here (bad-pad, payload-unexpected, payload-missing)
 * leave the packet whole: every header decoded, payload_len what the pad
 * count makes of the body (0 when the pad is longer), and the reason in
 * len_reason. They are the transport's to judge (IBTA 9.7.5: a length
 * that does not fit the opcode is an invalid request at a responder, a
 * bad response at a requester), not header errors: the packet names its
 * QP and carries a good ICRC. */
static enum wire_reason parse_payload_len(const uint8_t *base, size_t body,
					  const struct wire_opcode_info *op,
					  struct wire_pkt *p, bool pad_here)
{
	uint8_t pad = p->bth.pad;

	p->payload_off = p->bth_off + op->hdr_len;
	p->payload = base + p->payload_off;
	if (pad <= body) {
		p->payload_len = (uint32_t)(body - pad);
		if (pad_here)
			memcpy(p->pad_bytes, p->payload + p->payload_len, pad);
	}
	if (!(op->flags & WIRE_OPF_PAYLOAD)) {
		if (body)
			return WIRE_R_PAYLOAD_UNEXPECTED;
		return pad ? WIRE_R_PAD : WIRE_OK;
	}
	if (pad > body)
		return WIRE_R_PAD;
	/* Only the last packet of a message may be padded: every other packet
	 * carries exactly one path MTU, a multiple of 4. */
	if (pad && !(op->flags & WIRE_OPF_LAST))
		return WIRE_R_PAD;
	/* The pad count is exactly what aligns the payload to 4 bytes (IBA
	 * 9.2.3; rxe and wire_build() send nothing else). A first/middle packet
	 * of any length not a multiple of 4, or a last packet whose pad does not
	 * align it, is not a packet any sender builds: accepting it would let a
	 * frame through that no rebuild reproduces. */
	if (pad != wire_pad(p->payload_len))
		return WIRE_R_PAD;
	if ((op->flags & WIRE_OPF_PAYLOAD_REQUIRED) && p->payload_len == 0)
		return WIRE_R_PAYLOAD_MISSING;
	return WIRE_OK;
}

static enum wire_reason parse_payload(const uint8_t *base, size_t body,
				      const struct wire_opcode_info *op,
				      struct wire_pkt *p, bool pad_here)
{
	enum wire_reason r = parse_payload_len(base, body, op, p, pad_here);

	p->len_reason = (uint8_t)r;
	return r;
}

/* The UDP payload of a RoCEv2 datagram: UDP length and checksum, BTH,
 * ICRC, then transport semantics (steps 2-4 of the order above). */
static enum wire_reason parse_roce(const uint8_t *base, size_t len, size_t off,
				   size_t iphl, size_t ip_end, unsigned flags,
				   struct wire_pkt *p)
{
	const uint8_t *l3 = base + off;
	const uint8_t *udp = l3 + iphl;
	size_t udp_len = ip_end - iphl;

	if (p->udp.len != udp_len)
		return WIRE_R_UDP_LEN;
	if ((flags & WIRE_PARSE_UDP_CSUM) && !(flags & WIRE_PARSE_HDRS_ONLY) && p->udp.csum != 0) {
		/* Summing the whole datagram, checksum field included, gives
		 * all-ones for a correct checksum; recompute instead so the
		 * same helper serves the builder. */
		if (wire_udp_csum(l3, udp, udp_len) != p->udp.csum)
			return WIRE_R_UDP_CSUM;
	}

	size_t tlen = udp_len - WIRE_UDP_LEN; /* BTH .. ICRC */
	const uint8_t *bth = udp + WIRE_UDP_LEN;

	p->bth_off = p->l4_off + WIRE_UDP_LEN;
	p->frame_len = (uint32_t)(off + ip_end);
	p->trailer_len = (uint32_t)(len - p->frame_len);
	if (tlen < WIRE_BTH_LEN + WIRE_ICRC_LEN)
		return WIRE_R_TRUNC_BTH;
	wire_bth_decode(bth, &p->bth);
	p->op = wire_opcode_info(p->bth.opcode);
	p->icrc_off = p->frame_len - WIRE_ICRC_LEN;
	if (flags & WIRE_PARSE_HDRS_ONLY)
		flags |= WIRE_PARSE_NO_ICRC; /* the ICRC is not here */
	else
		p->icrc = wire_icrc_get(base + p->icrc_off);
	if (!(flags & WIRE_PARSE_NO_ICRC)) {
		uint32_t v = 0;

		p->icrc_ok = wire_icrc_calc(l3, ip_end - WIRE_ICRC_LEN, &v) && v == p->icrc;
		if (!p->icrc_ok)
			return WIRE_R_ICRC;
	}
	if (p->bth.tver != WIRE_BTH_TVER)
		return WIRE_R_BTH_TVER;

	const struct wire_opcode_info *op = p->op;

	if (!(op->flags & WIRE_OPF_VALID))
		return WIRE_R_OPCODE;
	if (tlen < (size_t)op->hdr_len + WIRE_ICRC_LEN)
		return WIRE_R_TRUNC_EXT;
	parse_ext_hdrs(bth, op, p);
	return parse_payload(base, tlen - op->hdr_len - WIRE_ICRC_LEN, op, p,
			     !(flags & WIRE_PARSE_HDRS_ONLY));
}

/* Parse from the IP header at base + off; avail = len - off. On return the
 * offsets in p are relative to base. */
static enum wire_reason parse_l3(const uint8_t *base, size_t len, size_t off,
				 int want_version, unsigned flags, struct wire_pkt *p)
{
	const uint8_t *l3 = base + off;
	size_t avail = len - off;
	size_t iphl = 0, ip_end = 0; /* relative to l3 */
	enum wire_reason r;

	p->l3_off = (uint32_t)off;
	if (avail < 1)
		return WIRE_R_TRUNC_IP;
	if (want_version == 0) {
		want_version = l3[0] >> 4;
		if (want_version != 4 && want_version != 6)
			return WIRE_R_NOT_IP;
		p->ethertype = want_version == 4 ? WIRE_ETHERTYPE_IPV4 : WIRE_ETHERTYPE_IPV6;
	}
	if (want_version == 4)
		r = parse_ipv4(l3, avail, off, flags, p, &iphl, &ip_end);
	else
		/* headers only: the walk of a chain (other traffic) stays
		 * within what may be read */
		r = parse_ipv6(l3, avail, off, p, &iphl, &ip_end,
			       (flags & WIRE_PARSE_HDRS_ONLY) && avail > WIRE_HDRS_MAX - off
				       ? WIRE_HDRS_MAX - off : avail);
	if (r != WIRE_OK)
		return r;
	/* From here on the packet is RoCEv2. */
	return parse_roce(base, len, off, iphl, ip_end, flags, p);
}

enum wire_reason wire_parse_ex(const uint8_t *frame, size_t len, unsigned flags,
			       struct wire_pkt *p)
{
	size_t off = WIRE_ETH_LEN;

	memset(p, 0, sizeof(*p));
	if (!frame || len < WIRE_ETH_LEN)
		return WIRE_R_TRUNC_ETH;
	memcpy(p->dmac, frame, 6);
	memcpy(p->smac, frame + 6, 6);
	p->ethertype = wire_get_be16(frame + 12);
	if (p->ethertype == WIRE_ETHERTYPE_VLAN) {
		if (len < WIRE_ETH_LEN + WIRE_VLAN_LEN)
			return WIRE_R_TRUNC_ETH;
		p->vlan = true;
		p->vlan_tci = wire_get_be16(frame + 14);
		p->ethertype = wire_get_be16(frame + 16);
		off += WIRE_VLAN_LEN;
	}
	switch (p->ethertype) {
	case WIRE_ETHERTYPE_IPV4:
		return parse_l3(frame, len, off, 4, flags, p);
	case WIRE_ETHERTYPE_IPV6:
		return parse_l3(frame, len, off, 6, flags, p);
	default:
		return WIRE_R_NOT_IP;
	}
}

enum wire_reason wire_parse(const uint8_t *frame, size_t len, struct wire_pkt *out)
{
	return wire_parse_ex(frame, len, 0, out);
}

enum wire_reason wire_parse_ip(const uint8_t *l3, size_t len, unsigned flags,
			       struct wire_pkt *p)
{
	memset(p, 0, sizeof(*p));
	if (!l3)
		return WIRE_R_TRUNC_IP;
	return parse_l3(l3, len, 0, 0, flags, p);
}
