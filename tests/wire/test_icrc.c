/* SPDX-License-Identifier: MIT */
/* CRC-32 / ICRC known values, masking, incremental use, and throughput. */
#include <string.h>
#include <time.h>

#include "../include/check.h"
#include "wire.h"

/* Bit-at-a-time reference CRC, independent of the table code. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ ((crc & 1) ? 0xedb88320u : 0);
	}
	return crc;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* The first RC Acknowledge in ops_rc.pcap (10.77.0.11 -> .12, QP 0x11). */
static const uint8_t ack_frame[62] = {
	0x52, 0x54, 0x00, 0x4d, 0x00, 0x0c, 0x52, 0x54, 0x00, 0x4d, 0x00, 0x0b, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x30, 0x96, 0x59, 0x40, 0x00, 0x40, 0x11, 0x8f, 0xb3, 0x0a, 0x4d,
	0x00, 0x0b, 0x0a, 0x4d, 0x00, 0x0c, 0xc1, 0x21, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00,
	0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x2f, 0x23, 0xbb, 0x1f, 0x00,
	0x00, 0x01, 0xdd, 0x13, 0xdb, 0x3b,
};

int main(void)
{
	static uint8_t buf[1 << 16];
	uint32_t v;

	/* The standard check value of CRC-32. */
	CHECK_EQ(wire_crc32(0, "123456789", 9), 0xcbf43926u);
	CHECK_EQ(wire_crc32(0, "", 0), 0);
	CHECK_EQ(wire_crc32(wire_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int t = 0; t < 300; t++) {
		size_t off = rnd() % 64, n = rnd() % 3000;
		CHECK(wire_crc32_update(0xffffffffu, buf + off, n) == ref_crc(0xffffffffu, buf + off, n),
		      "table vs bitwise, off %zu len %zu", off, n);
	}

	/* Known ICRC of a genuine rxe frame: stored LSB first (dd 13 db 3b). */
	const uint8_t *l3 = ack_frame + 14;
	CHECK(wire_icrc_calc(l3, 44, &v), "calc");
	CHECK_EQ(v, 0x3bdb13ddu);
	CHECK_EQ(wire_icrc_get(ack_frame + 58), 0x3bdb13ddu);
	CHECK(wire_icrc_check(l3, 48), "check");

	/* The same value computed by hand: mask, prefix 8 x 0xFF, zlib CRC. */
	uint8_t m[8 + 44];
	memset(m, 0xff, 8);
	memcpy(m + 8, l3, 44);
	m[8 + 1] = 0xff;                /* TOS */
	m[8 + 8] = 0xff;                /* TTL */
	m[8 + 10] = m[8 + 11] = 0xff;   /* IP checksum */
	m[8 + 26] = m[8 + 27] = 0xff;   /* UDP checksum */
	m[8 + 32] = 0xff;               /* BTH byte 4 */
	CHECK_EQ(~ref_crc(0xffffffffu, m, sizeof(m)), 0x3bdb13ddu);

	/* Masked fields do not change the ICRC; unmasked ones do. */
	uint8_t f[62];
	memcpy(f, ack_frame, sizeof(f));
	f[14 + 1] = 0x03; f[14 + 8] = 1; f[14 + 10] = 0; f[14 + 26] = 0x12; f[14 + 32] = 0xc0;
	CHECK(wire_icrc_check(f + 14, 48), "masked fields ignored");
	f[14 + 4] ^= 1; /* IP ID */
	CHECK(!wire_icrc_check(f + 14, 48), "IP ID covered");

	/* Incremental = one-shot, for any split. */
	uint8_t pkt[14 + 20 + 8 + 12 + 1000 + 4];
	memcpy(pkt, ack_frame, 14 + 20 + 8 + 12);
	for (size_t i = 54; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)rnd();
	uint32_t whole, s;
	CHECK(wire_icrc_calc(pkt + 14, sizeof(pkt) - 14 - 4, &whole), "whole");
	for (size_t split = 40; split < sizeof(pkt) - 18; split += 37) {
		CHECK(wire_icrc_headers(pkt + 14, split, &s), "headers %zu", split);
		s = wire_icrc_update(s, pkt + 14 + split, sizeof(pkt) - 18 - split);
		CHECK(wire_icrc_final(s) == whole, "split %zu", split);
	}
	/* Errors: too short for IP+UDP+BTH, bad version, IHL < 5. */
	CHECK(!wire_icrc_headers(pkt + 14, 39, &s), "short v4");
	uint8_t bad[64] = { 0x55 };
	CHECK(!wire_icrc_headers(bad, sizeof(bad), &s), "version 5");
	bad[0] = 0x44;
	CHECK(!wire_icrc_headers(bad, sizeof(bad), &s), "ihl 4");
	bad[0] = 0x60;
	CHECK(wire_icrc_headers(bad, 60, &s) && !wire_icrc_headers(bad, 59, &s), "v6 length");
	CHECK(!wire_icrc_check(bad, 3), "check too short");

	/* IPv6 masks: traffic class, flow label, hop limit. */
	uint8_t v6[40 + 8 + 12 + 4];
	for (size_t i = 0; i < sizeof(v6); i++)
		v6[i] = (uint8_t)rnd();
	v6[0] = 0x60;
	uint32_t a, b;
	CHECK(wire_icrc_calc(v6, 60, &a), "v6");
	v6[0] = 0x6f; v6[1] ^= 0xff; v6[2] ^= 0x5a; v6[3] ^= 0x01; v6[7] ^= 0x40;
	v6[40 + 6] ^= 0xff; v6[48 + 4] ^= 0xc0;
	CHECK(wire_icrc_calc(v6, 60, &b) && a == b, "v6 masks");
	v6[4] ^= 1; /* payload length is covered */
	CHECK(wire_icrc_calc(v6, 60, &b) && a != b, "v6 payload length covered");

	uint8_t le[4];
	wire_icrc_put(le, 0x11223344);
	CHECK(le[0] == 0x44 && le[3] == 0x11, "ICRC stored LSB first");

	/* Throughput (informational). */
	struct timespec t0, t1;
	size_t total = 0;
	double secs;
	uint32_t acc = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 256; i++) {
			acc ^= wire_crc32_update(acc, buf, 4096);
			total += 4096;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (secs < 0.2);
	printf("crc32 throughput: %.2f GB/s (4 KiB buffers, acc %08x)\n", (double)total / secs / 1e9, acc);

	total = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 4096; i++) {
			acc ^= wire_icrc_check(ack_frame + 14, 48);
			total++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (secs < 0.2);
	printf("ICRC check of a 62-byte ACK: %.1f ns\n", secs * 1e9 / (double)total);
	return t_done("test_icrc");
}
