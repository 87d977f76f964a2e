/* SPDX-License-Identifier: MIT */
#include "gid.h"

#include <arpa/inet.h>
#include <string.h>

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

void wire_gid_from_ipv4(struct wire_gid *gid, const uint8_t ip4[4])
{
	memcpy(gid->raw, v4_prefix, sizeof(v4_prefix));
	memcpy(gid->raw + 12, ip4, 4);
}

void wire_gid_from_ipv6(struct wire_gid *gid, const uint8_t ip6[16])
{
	memcpy(gid->raw, ip6, 16);
}

bool wire_gid_is_ipv4(const struct wire_gid *gid)
{
	return memcmp(gid->raw, v4_prefix, sizeof(v4_prefix)) == 0;
}

bool wire_gid_to_ipv4(const struct wire_gid *gid, uint8_t ip4[4])
{
	if (!wire_gid_is_ipv4(gid))
		return false;
	memcpy(ip4, gid->raw + 12, 4);
	return true;
}

bool wire_gid_is_link_local(const struct wire_gid *gid)
{
	return gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80;
}

bool wire_gid_is_zero(const struct wire_gid *gid)
{
	static const uint8_t zero[16];

	return memcmp(gid->raw, zero, 16) == 0;
}

void wire_gid_from_mac(struct wire_gid *gid, const uint8_t mac[6])
{
	memset(gid->raw, 0, 16);
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	/* Modified EUI-64 (RFC 4291 appendix A): invert the universal/local
	 * bit and put ff:fe in the middle of the MAC. */
	gid->raw[8] = mac[0] ^ 0x02;
	gid->raw[9] = mac[1];
	gid->raw[10] = mac[2];
	gid->raw[11] = 0xff;
	gid->raw[12] = 0xfe;
	gid->raw[13] = mac[3];
	gid->raw[14] = mac[4];
	gid->raw[15] = mac[5];
}

bool wire_gid_eq(const struct wire_gid *a, const struct wire_gid *b)
{
	return memcmp(a->raw, b->raw, 16) == 0;
}

char *wire_gid_str(const struct wire_gid *gid, char *buf, size_t len)
{
	if (!buf || len > (size_t)0x7fffffff)
		return NULL;
	return inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len) ? buf : NULL;
}

bool wire_gid_parse(struct wire_gid *gid, const char *str)
{
	uint8_t a[16];

	if (!str)
		return false;
	if (inet_pton(AF_INET, str, a) == 1) {
		wire_gid_from_ipv4(gid, a);
		return true;
	}
	if (inet_pton(AF_INET6, str, a) == 1) {
		memcpy(gid->raw, a, 16);
		return true;
	}
	return false;
}
