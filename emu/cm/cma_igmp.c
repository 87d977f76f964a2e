/* SPDX-License-Identifier: MIT */
/* Multicast membership reports for rdma_cm joins on RoCE: the kernel's
 * cma_igmp_send() makes the netdev join the group (ip_mc_inc_group), so a
 * snooping switch forwards the group's traffic to the port. uroce has no
 * netdev: the daemon sends the report itself, IGMPv2 (RFC 2236) for IPv4
 * groups and MLDv1 (RFC 2710) for IPv6 ones, and the leave when the last
 * member goes. */
#include <errno.h>
#include <string.h>

#include "ucma.h"

static uint16_t igmp_csum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IGMPv2 report (0x16) to the group, or leave (0x17) to 224.0.0.2; IP
 * with the Router Alert option and TTL 1, as the RFC asks */
static int cma_igmp4(struct emu_dev *d, const uint8_t grp[4], const uint8_t src[4], bool join)
{
	uint8_t f[14 + 24 + 8];
	static const uint8_t all_routers[4] = { 224, 0, 0, 2 };
	const uint8_t *dst = join ? grp : all_routers;
	uint8_t *ip = f + 14, *ig = f + 38;

	memset(f, 0, sizeof(f));
	f[0] = 0x01;
	f[1] = 0x00;
	f[2] = 0x5e;
	f[3] = dst[1] & 0x7f;
	f[4] = dst[2];
	f[5] = dst[3];
	memcpy(f + 6, d->mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x46;                 /* IPv4, 6 words: Router Alert */
	ip[1] = 0xc0;                 /* internetwork control, as Linux sends */
	put16(ip + 2, 24 + 8);
	put16(ip + 4, d->ip_id++);
	put16(ip + 6, 0x4000);        /* DF */
	ip[8] = 1;                    /* TTL */
	ip[9] = 2;                    /* IGMP */
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	ip[20] = 0x94;                /* Router Alert, length 4, value 0 */
	ip[21] = 0x04;
	put16(ip + 10, igmp_csum(ip, 24, 0));
	ig[0] = join ? 0x16 : 0x17;
	memcpy(ig + 4, grp, 4);
	put16(ig + 2, igmp_csum(ig, 8, 0));
	return emu_tx_frame(d, f, sizeof(f));
}

/* MLDv1 report (131) to the group, or done (132) to ff02::2; hop limit 1
 * and a Hop-by-Hop Router Alert */
static int cma_mld6(struct emu_dev *d, const uint8_t grp[16], const uint8_t src[16], bool join)
{
	uint8_t f[14 + 40 + 8 + 24];
	static const uint8_t all_routers[16] = { 0xff, 0x02, [15] = 2 };
	const uint8_t *dst = join ? grp : all_routers;
	uint8_t *ip = f + 14, *hbh = f + 54, *m = f + 62;

	memset(f, 0, sizeof(f));
	f[0] = 0x33;
	f[1] = 0x33;
	memcpy(f + 2, dst + 12, 4);
	memcpy(f + 6, d->mac, 6);
	put16(f + 12, 0x86dd);
	ip[0] = 0x60;
	put16(ip + 4, 8 + 24);
	ip[6] = 0;                    /* next: Hop-by-Hop options */
	ip[7] = 1;                    /* hop limit */
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	hbh[0] = 58;                  /* next: ICMPv6 */
	hbh[1] = 0;
	hbh[2] = 5;                   /* Router Alert, 2 bytes: MLD (0) */
	hbh[3] = 2;
	hbh[6] = 1;                   /* PadN, 0 bytes */
	m[0] = join ? 131 : 132;
	memcpy(m + 8, grp, 16);
	/* ICMPv6 checksum over the pseudo-header (addresses, length, 58) */
	uint32_t sum = 0;
	for (int i = 0; i < 32; i += 2)
		sum += (uint32_t)ip[8 + i] << 8 | ip[9 + i];
	sum += 24 + 58;
	put16(m + 2, igmp_csum(m, 24, sum));
	return emu_tx_frame(d, f, sizeof(f));
}

int emu_cma_mcast_report(struct emu_dev *d, const union ibv_gid *group,
			 const union ibv_gid *src, bool join)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	bool g4 = !memcmp(group->raw, v4, 12);

	if (g4 != !memcmp(src->raw, v4, 12))
		return -EINVAL; /* no source address of the group's family */
	return g4 ? cma_igmp4(d, group->raw + 12, src->raw + 12, join) :
		    cma_mld6(d, group->raw, src->raw, join);
}
