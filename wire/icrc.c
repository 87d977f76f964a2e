/* SPDX-License-Identifier: MIT */
#include "icrc.h"

#include <string.h>

#include "bytes.h"
#include "crc32_table.h"
#include "hdr.h"

uint32_t wire_crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* Slicing-by-8: eight table lookups retire eight bytes per step. The
	 * loads are byte-wise, so any alignment works and no prologue is
	 * needed. */
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		crc = wire_crc32_tab[7][lo & 0xff] ^
		      wire_crc32_tab[6][(lo >> 8) & 0xff] ^
		      wire_crc32_tab[5][(lo >> 16) & 0xff] ^
		      wire_crc32_tab[4][lo >> 24] ^
		      wire_crc32_tab[3][p[4]] ^
		      wire_crc32_tab[2][p[5]] ^
		      wire_crc32_tab[1][p[6]] ^
		      wire_crc32_tab[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ wire_crc32_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

uint32_t wire_crc32(uint32_t prev, const void *buf, size_t len)
{
	return ~wire_crc32_update(~prev, buf, len);
}

uint32_t wire_icrc_init(void)
{
	/* The 8 bytes of 0xFF stand for the LRH, absent in RoCEv2, so that the
	 * same ICRC is valid on InfiniBand and RoCE. */
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	return wire_crc32_update(0xffffffffu, lrh, sizeof(lrh));
}

uint32_t wire_icrc_update(uint32_t state, const void *buf, size_t len)
{
	return wire_crc32_update(state, buf, len);
}

bool wire_icrc_headers(const uint8_t *l3, size_t len, uint32_t *state)
{
	/* Largest masked prefix: IPv4 with 40 bytes of options + UDP + BTH. */
	uint8_t m[60 + WIRE_UDP_LEN + WIRE_BTH_LEN];
	size_t iplen, n;

	if (len < 1)
		return false;
	switch (l3[0] >> 4) {
	case 4:
		iplen = (size_t)(l3[0] & 0x0f) * 4;
		if (iplen < WIRE_IPV4_LEN)
			return false;
		break;
	case 6:
		iplen = WIRE_IPV6_LEN;
		break;
	default:
		return false;
	}
	n = iplen + WIRE_UDP_LEN + WIRE_BTH_LEN;
	if (len < n)
		return false;
	memcpy(m, l3, n);
	/* Fields routers may rewrite in flight are replaced by ones. */
	if ((l3[0] >> 4) == 6) {
		m[0] |= 0x0f;              /* traffic class, high nibble */
		m[1] = 0xff;               /* traffic class low + flow label */
		m[2] = 0xff;
		m[3] = 0xff;
		m[7] = 0xff;               /* hop limit */
	} else {
		m[1] = 0xff;               /* TOS (DSCP + ECN) */
		m[8] = 0xff;               /* TTL */
		m[10] = 0xff;              /* header checksum */
		m[11] = 0xff;
	}
	m[iplen + 6] = 0xff;               /* UDP checksum */
	m[iplen + 7] = 0xff;
	m[iplen + WIRE_UDP_LEN + 4] = 0xff; /* BTH FECN, BECN, reserved */

	uint32_t s = wire_icrc_init();
	s = wire_crc32_update(s, m, n);
	*state = wire_crc32_update(s, l3 + n, len - n);
	return true;
}

bool wire_icrc_calc(const uint8_t *l3, size_t len, uint32_t *icrc)
{
	uint32_t s;

	if (!wire_icrc_headers(l3, len, &s))
		return false;
	*icrc = wire_icrc_final(s);
	return true;
}

uint32_t wire_icrc_get(const uint8_t *p)
{
	return wire_get_le32(p);
}

void wire_icrc_put(uint8_t *p, uint32_t icrc)
{
	wire_put_le32(p, icrc);
}

bool wire_icrc_check(const uint8_t *l3, size_t len)
{
	uint32_t v;

	if (len < WIRE_ICRC_LEN || !wire_icrc_calc(l3, len - WIRE_ICRC_LEN, &v))
		return false;
	return v == wire_icrc_get(l3 + len - WIRE_ICRC_LEN);
}
