/* SPDX-License-Identifier: MIT */
/* Pad, MTU, GIDs, IPv4/UDP checksums, UDP source ports, byte helpers. */
#include <string.h>

#include "../include/check.h"
#include "wire.h"

int main(void)
{
	/* Pad */
	for (uint32_t len = 0; len < 64; len++) {
		CHECK((len + wire_pad(len)) % 4 == 0 && wire_pad(len) < 4, "pad %u", len);
	}
	CHECK_EQ(wire_pad(0), 0);
	CHECK_EQ(wire_pad(1), 3);
	CHECK_EQ(wire_pad(2), 2);
	CHECK_EQ(wire_pad(3), 1);
	CHECK_EQ(wire_pad(0xffffffffu), 1);

	/* MTU */
	CHECK_EQ(wire_mtu_to_bytes(WIRE_MTU_256), 256);
	CHECK_EQ(wire_mtu_to_bytes(WIRE_MTU_1024), 1024);
	CHECK_EQ(wire_mtu_to_bytes(WIRE_MTU_4096), 4096);
	CHECK_EQ(wire_mtu_to_bytes((enum wire_mtu)0), 0);
	CHECK_EQ(wire_mtu_to_bytes((enum wire_mtu)6), 0);
	CHECK_EQ(wire_mtu_from_bytes(2048), WIRE_MTU_2048);
	CHECK_EQ(wire_mtu_from_bytes(1500), 0);
	CHECK_EQ(wire_mtu_active(1500, false), WIRE_MTU_1024);
	CHECK_EQ(wire_mtu_active(1500, true), WIRE_MTU_1024);
	CHECK_EQ(wire_mtu_active(9000, false), WIRE_MTU_4096);
	CHECK_EQ(wire_mtu_active(4200, false), WIRE_MTU_4096);
	CHECK_EQ(wire_mtu_active(4159, false), WIRE_MTU_2048); /* 4096 + 64 - 1 */
	CHECK_EQ(wire_mtu_active(4160, false), WIRE_MTU_4096);
	CHECK_EQ(wire_mtu_active(4160, true), WIRE_MTU_2048);
	CHECK_EQ(wire_mtu_active(576, false), WIRE_MTU_512);
	CHECK_EQ(wire_mtu_active(300, false), 0);
	CHECK_EQ(wire_mtu_active(10, false), 0);
	CHECK(!strcmp(wire_mtu_str(WIRE_MTU_4096), "4096") && !strcmp(wire_mtu_str(0), "invalid"), "mtu str");

	/* GIDs */
	struct wire_gid g, g2;
	uint8_t ip4[4] = { 10, 77, 0, 11 }, out4[4];
	char s[WIRE_GID_STRLEN];
	wire_gid_from_ipv4(&g, ip4);
	CHECK(wire_gid_is_ipv4(&g) && !wire_gid_is_link_local(&g), "mapped");
	CHECK(g.raw[10] == 0xff && g.raw[11] == 0xff && g.raw[0] == 0, "mapped bytes");
	CHECK(wire_gid_to_ipv4(&g, out4) && !memcmp(out4, ip4, 4), "to ipv4");
	CHECK(wire_gid_str(&g, s, sizeof(s)) && !strcmp(s, "::ffff:10.77.0.11"), "%s", s);
	CHECK(wire_gid_str(&g, s, 5) == NULL, "short buffer");
	CHECK(wire_gid_parse(&g2, "10.77.0.11") && wire_gid_eq(&g, &g2), "parse v4");
	CHECK(wire_gid_parse(&g2, "::ffff:10.77.0.11") && wire_gid_eq(&g, &g2), "parse mapped");
	CHECK(!wire_gid_parse(&g2, "10.77.0.256") && !wire_gid_parse(&g2, "zz::1"), "bad text");
	uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x4d, 0x00, 0x0b };
	wire_gid_from_mac(&g, mac);
	CHECK(wire_gid_str(&g, s, sizeof(s)) && !strcmp(s, "fe80::5054:ff:fe4d:b"), "%s", s);
	CHECK(wire_gid_is_link_local(&g) && !wire_gid_is_ipv4(&g), "link local");
	CHECK(!wire_gid_to_ipv4(&g, out4), "not mapped");
	CHECK(wire_gid_parse(&g2, "2001:db8::1") && !wire_gid_is_ipv4(&g2) &&
	      g2.raw[0] == 0x20 && g2.raw[15] == 1, "parse v6");
	uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	wire_gid_from_ipv6(&g, v6);
	CHECK(wire_gid_eq(&g, &g2), "from ipv6");
	memset(&g, 0, sizeof(g));
	CHECK(wire_gid_is_zero(&g) && !wire_gid_is_zero(&g2), "zero gid");

	/* IPv4 checksum: header of the first ACK in ops_rc.pcap (checksum 0x8fb3). */
	uint8_t iph[20] = { 0x45, 0x00, 0x00, 0x30, 0x96, 0x59, 0x40, 0x00, 0x40, 0x11,
			    0x8f, 0xb3, 0x0a, 0x4d, 0x00, 0x0b, 0x0a, 0x4d, 0x00, 0x0c };
	CHECK_EQ(wire_ipv4_csum(iph, 20), 0x8fb3);
	CHECK(wire_ipv4_csum_ok(iph, 20), "csum ok");
	iph[4] ^= 1;
	CHECK(!wire_ipv4_csum_ok(iph, 20), "csum detects");
	iph[4] ^= 1;

	/* Running checksum (the daemon's ICMP/ICMPv6): RFC 1071 section 3's
	 * example words sum to 0xddf2, stored inverted; an odd tail byte is
	 * the high half of a word; the header above sums the same way. */
	static const uint8_t rfc[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	CHECK_EQ(wire_csum_fold(wire_csum_add(0, rfc, 8)), 0x220d);
	CHECK_EQ(wire_csum_fold(wire_csum_add(wire_csum_add(0, rfc, 4), rfc + 4, 4)), 0x220d);
	CHECK_EQ(wire_csum_add(0, rfc, 3), 0x0001u + 0xf200u);
	CHECK_EQ(wire_csum_fold(wire_csum_add(0, iph, 20)), 0);

	/* UDP checksum: verify by summing the datagram with the stored value. */
	uint8_t pkt[20 + 8 + 6] = { 0x45, 0, 0, 34, 0, 0, 0x40, 0, 64, 17, 0, 0,
				    192, 168, 0, 1, 192, 168, 0, 2,
				    0xc0, 0x00, 0x12, 0xb7, 0, 14, 0, 0, 1, 2, 3, 4, 5, 6 };
	uint16_t uc = wire_udp_csum(pkt, pkt + 20, 14);
	pkt[26] = (uint8_t)(uc >> 8);
	pkt[27] = (uint8_t)uc;
	uint32_t acc = 0xc0a8 + 0x0001 + 0xc0a8 + 0x0002 + 17 + 14;
	for (int i = 20; i < 34; i += 2)
		acc += (uint32_t)pkt[i] << 8 | pkt[i + 1];
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	CHECK_EQ(acc, 0xffff);

	/* UDP source ports seen in the genuine rxe captures. */
	CHECK_EQ(wire_udp_sport(0x11), 57236);            /* UD QP 0x11 */
	CHECK_EQ(wire_udp_sport(0x12), 63494);            /* UD QP 0x12 */
	CHECK_EQ(wire_udp_sport(0x01), 55410);            /* QP1 (RDMA-CM MADs) */
	CHECK_EQ(wire_udp_sport_pair(0x11, 0x11), 49441); /* RC/UC 0x11 <-> 0x11 */
	for (uint32_t q = 0; q < 5000; q += 3) {
		CHECK(wire_udp_sport(q) >= 0xc000, "sport range %u", q);
		CHECK(wire_udp_sport_pair(q, q + 7) >= 0xc000, "pair range %u", q);
		CHECK(wire_udp_sport_pair(q, q + 7) == wire_udp_sport_pair(q + 7, q), "symmetric");
	}
	CHECK_EQ(wire_udp_sport_flow_label(0), 0xc000);
	CHECK_EQ(wire_udp_sport_flow_label(0xfffff), 0xc000 | (0x3fff ^ 0x3f));

	/* Byte helpers */
	uint8_t b[8];
	wire_put_be64(b, 0x0102030405060708ull);
	CHECK(b[0] == 1 && b[7] == 8 && wire_get_be64(b) == 0x0102030405060708ull, "be64");
	wire_put_be24(b, 0xabcdef);
	CHECK(wire_get_be24(b) == 0xabcdef && b[0] == 0xab, "be24");
	wire_put_le32(b, 0x11223344);
	CHECK(b[0] == 0x44 && wire_get_le32(b) == 0x11223344, "le32");
	return t_done("test_misc");
}
