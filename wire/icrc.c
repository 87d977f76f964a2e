/* SPDX-License-Identifier: MIT */
#include "icrc.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "crc32_table.h"
#include "hdr.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WIRE_CRC_CLMUL 1
/* Frames are up to 4 KB of payload and the ICRC is computed twice per
 * frame (sent, received): table lookups at ~2 GB/s were the largest cost
 * of the daemon's bulk path; this runs at ~10 GB/s. */
/* Carry-less multiplication folding for the reflected CRC-32 (Ethernet
 * polynomial): 64 bytes per step in four lanes, then fold to one lane,
 * reduce 128 -> 64 -> 32 bits and finish with a Barrett reduction. The
 * constants are x^k mod P for the fold distances (bit-reflected, shifted
 * by one), and floor(x^64 / P) for Barrett. len >= 64, multiple of 16. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t wire_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll);
	const __m128i k34 = _mm_set_epi64x(0x0ccaa009ell, 0x1751997d0ll);
	const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124ll);
	const __m128i pu = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);
	const __m128i m32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x0 = _mm_loadu_si128((const __m128i *)p);
	__m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
	__m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
	__m128i t;

	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
#define FOLD(x, k, d) do { \
		t = _mm_clmulepi64_si128(x, k, 0x00); \
		x = _mm_clmulepi64_si128(x, k, 0x11); \
		x = _mm_xor_si128(_mm_xor_si128(x, t), d); \
	} while (0)
	while (len >= 64) {
		FOLD(x0, k12, _mm_loadu_si128((const __m128i *)p));
		FOLD(x1, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
		FOLD(x2, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
		FOLD(x3, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	FOLD(x0, k34, x1);
	FOLD(x0, k34, x2);
	FOLD(x0, k34, x3);
	while (len >= 16) {
		FOLD(x0, k34, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
#undef FOLD
	/* 128 -> 64 bits */
	t = _mm_clmulepi64_si128(x0, k34, 0x10);
	x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
	/* 64 -> 32 bits */
	t = _mm_srli_si128(x0, 4);
	x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, m32), k5, 0x00);
	x0 = _mm_xor_si128(x0, t);
	/* Barrett */
	t = _mm_clmulepi64_si128(_mm_and_si128(x0, m32), pu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, m32), pu, 0x00);
	x0 = _mm_xor_si128(x0, t);
	return (uint32_t)_mm_extract_epi32(x0, 1);
}

static bool wire_crc32_clmul_ok(void)
{
	static int ok = -1;

	if (ok < 0) {
		__builtin_cpu_init();
		ok = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	}
	return ok;
}
#endif

uint32_t wire_crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

#ifdef WIRE_CRC_CLMUL
	if (len >= 128 && wire_crc32_clmul_ok()) {
		size_t n = len & ~(size_t)15;

		crc = wire_crc32_clmul(crc, p, n);
		p += n;
		len -= n;
	}
#endif

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
