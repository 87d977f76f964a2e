/* SPDX-License-Identifier: MIT */
#include "mcast.h"

#include <string.h>

#include "bytes.h"
#include "hdr.h"
#include "ip.h"

#define IPPROTO_IGMP_ 2
#define IPPROTO_HOPOPTS_ 0
#define IPPROTO_ICMPV6_ 58

static void mcast_eth(uint8_t *f, const uint8_t smac[6], const uint8_t *dst, bool v4)
{
	if (v4) {
		/* 01:00:5e + the low 23 bits of the group (RFC 1112) */
		f[0] = 0x01;
		f[1] = 0x00;
		f[2] = 0x5e;
		f[3] = dst[1] & 0x7f;
		f[4] = dst[2];
		f[5] = dst[3];
	} else {
		/* 33:33 + the low 32 bits (RFC 2464) */
		f[0] = 0x33;
		f[1] = 0x33;
		memcpy(f + 2, dst + 12, 4);
	}
	memcpy(f + 6, smac, 6);
	wire_put_be16(f + 12, v4 ? WIRE_ETHERTYPE_IPV4 : WIRE_ETHERTYPE_IPV6);
}

/* IGMPv2 report to the group, or leave to all-routers */
static size_t mcast_igmp(uint8_t *f, const uint8_t smac[6], uint16_t ip_id,
			 const uint8_t grp[4], const uint8_t src[4], bool join)
{
	static const uint8_t all_routers[4] = { 224, 0, 0, 2 };
	const uint8_t *dst = join ? grp : all_routers;
	uint8_t *ip = f + WIRE_ETH_LEN, *ig = ip + 24;

	memset(f, 0, WIRE_IGMP_FRAME_LEN);
	mcast_eth(f, smac, dst, true);
	ip[0] = 0x46;                 /* IPv4, 6 words: the Router Alert option */
	ip[1] = 0xc0;                 /* internetwork control, as Linux sends */
	wire_put_be16(ip + 2, 24 + 8);
	wire_put_be16(ip + 4, ip_id);
	wire_put_be16(ip + 6, 0x4000); /* DF */
	ip[8] = 1;                    /* TTL */
	ip[9] = IPPROTO_IGMP_;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	ip[20] = 0x94;                /* Router Alert (RFC 2113), length 4, value 0 */
	ip[21] = 0x04;
	wire_put_be16(ip + 10, wire_ipv4_csum(ip, 24));
	ig[0] = join ? WIRE_IGMP_REPORT_V2 : WIRE_IGMP_LEAVE;
	memcpy(ig + 4, grp, 4);
	wire_put_be16(ig + 2, wire_csum_fold(wire_csum_add(0, ig, 8)));
	return WIRE_IGMP_FRAME_LEN;
}

/* MLDv1 report to the group, or done to all-routers */
static size_t mcast_mld(uint8_t *f, const uint8_t smac[6], const uint8_t grp[16],
			const uint8_t src[16], bool join)
{
	static const uint8_t all_routers[16] = { 0xff, 0x02, [15] = 2 };
	const uint8_t *dst = join ? grp : all_routers;
	uint8_t *ip = f + WIRE_ETH_LEN, *hbh = ip + WIRE_IPV6_LEN, *m = hbh + 8;

	memset(f, 0, WIRE_MLD_FRAME_LEN);
	mcast_eth(f, smac, dst, false);
	ip[0] = 0x60;
	wire_put_be16(ip + 4, 8 + 24);
	ip[6] = IPPROTO_HOPOPTS_;
	ip[7] = 1;                    /* hop limit */
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	hbh[0] = IPPROTO_ICMPV6_;
	hbh[1] = 0;                   /* 8 bytes */
	hbh[2] = 5;                   /* Router Alert (RFC 2711), 2 bytes: MLD (0) */
	hbh[3] = 2;
	hbh[6] = 1;                   /* PadN, 0 bytes */
	m[0] = join ? WIRE_MLD_REPORT : WIRE_MLD_DONE;
	memcpy(m + 8, grp, 16);
	/* ICMPv6 checksum over the pseudo-header: addresses, length, 58 */
	uint32_t s = wire_csum_add(0, ip + 8, 32);
	s += 24 + IPPROTO_ICMPV6_;
	wire_put_be16(m + 2, wire_csum_fold(wire_csum_add(s, m, 24)));
	return WIRE_MLD_FRAME_LEN;
}

size_t wire_mcast_report(uint8_t *buf, size_t cap, const uint8_t smac[6], uint16_t ip_id,
			 const struct wire_gid *grp, const struct wire_gid *src, bool join)
{
	bool v4 = wire_gid_is_ipv4(grp);

	if (v4 != wire_gid_is_ipv4(src))
		return 0; /* no source address of the group's family */
	if (cap < (v4 ? WIRE_IGMP_FRAME_LEN : WIRE_MLD_FRAME_LEN))
		return 0;
	return v4 ? mcast_igmp(buf, smac, ip_id, grp->raw + 12, src->raw + 12, join) :
		    mcast_mld(buf, smac, grp->raw, src->raw, join);
}
