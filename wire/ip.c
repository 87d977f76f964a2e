/* SPDX-License-Identifier: MIT */
#include "ip.h"

#include "bytes.h"
#include "hdr.h"

static uint32_t sum16(uint32_t acc, const uint8_t *p, size_t len)
{
	while (len >= 2) {
		acc += wire_get_be16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		acc += (uint32_t)p[0] << 8;
	return acc;
}

static uint16_t fold(uint32_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)acc;
}

uint32_t wire_csum_add(uint32_t acc, const uint8_t *p, size_t len)
{
	return sum16(acc, p, len);
}

uint16_t wire_csum_fold(uint32_t acc)
{
	return (uint16_t)~fold(acc);
}

uint16_t wire_ipv4_csum(const uint8_t *hdr, size_t len)
{
	uint32_t acc = sum16(0, hdr, len < 10 ? len : 10);

	if (len > 12)
		acc = sum16(acc, hdr + 12, len - 12);
	return (uint16_t)~fold(acc);
}

bool wire_ipv4_csum_ok(const uint8_t *hdr, size_t len)
{
	return fold(sum16(0, hdr, len)) == 0xffff;
}

uint16_t wire_udp_csum(const uint8_t *l3, const uint8_t *udp, size_t udp_len)
{
	uint32_t acc;

	if ((l3[0] >> 4) == 6) {
		acc = sum16(0, l3 + 8, 32);
		acc += (uint32_t)(udp_len >> 16) + (uint32_t)(udp_len & 0xffff);
	} else {
		acc = sum16(0, l3 + 12, 8);
		acc += (uint32_t)udp_len;
	}
	acc += WIRE_IPPROTO_UDP;
	acc = sum16(acc, udp, 6);
	if (udp_len > 8)
		acc = sum16(acc, udp + 8, udp_len - 8);
	uint16_t c = (uint16_t)~fold(acc);
	/* 0 means "no checksum" in UDP, so a computed 0 is sent as 0xFFFF. */
	return c ? c : 0xffff;
}

uint16_t wire_udp_sport(uint32_t qpn)
{
	/* Multiplicative (golden-ratio) hash, top 14 bits: spreads consecutive
	 * QPNs over the port range so ECMP can spread them over paths. */
	uint32_t h = (qpn * 0x61c88647u) >> (32 - 14);

	return (uint16_t)(WIRE_UDP_SPORT_MIN + (h & 0x3fff));
}

uint16_t wire_udp_sport_flow_label(uint32_t flow_label)
{
	uint32_t fl = flow_label & 0xfffff;
	uint32_t lo = (fl & 0x3fff) ^ (fl >> 14);

	return (uint16_t)(WIRE_UDP_SPORT_MIN | (lo & 0x3fff));
}

uint16_t wire_udp_sport_pair(uint32_t lqpn, uint32_t rqpn)
{
	/* Product of both QPNs (symmetric), folded to a 20-bit flow label. */
	uint64_t v = (uint64_t)(lqpn & WIRE_QPN_MASK) * (rqpn & WIRE_QPN_MASK);

	v ^= v >> 20;
	v ^= v >> 40;
	return wire_udp_sport_flow_label((uint32_t)(v & 0xfffff));
}
