/* SPDX-License-Identifier: MIT */
/* AETH syndromes, the IBTA RNR timer table and the retransmit timeout. */
#include <string.h>

#include "../include/check.h"
#include "wire.h"

int main(void)
{
	/* IBTA RNR NAK timer encoding, in milliseconds x 100 to stay exact. */
	static const uint32_t ms100[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768, 49152,
	};
	char buf[64];

	for (unsigned c = 0; c < 32; c++)
		CHECK(wire_rnr_timer_us((uint8_t)c) == ms100[c] * 10, "code %u: %u us", c,
		      wire_rnr_timer_us((uint8_t)c));
	CHECK_EQ(wire_rnr_timer_us(0), 655360);
	CHECK_EQ(wire_rnr_timer_us(14), 1280);
	CHECK_EQ(wire_rnr_timer_us(31), 491520);
	CHECK_EQ(wire_rnr_timer_us(32 + 1), 10); /* masked to 5 bits */
	CHECK_EQ(wire_rnr_timer_code(10), 1);
	CHECK_EQ(wire_rnr_timer_code(11), 2);
	CHECK_EQ(wire_rnr_timer_code(1280), 14);
	CHECK_EQ(wire_rnr_timer_code(491520), 31);
	CHECK_EQ(wire_rnr_timer_code(491521), 0);
	CHECK_EQ(wire_rnr_timer_code(0), 1);
	for (unsigned c = 1; c < 32; c++)
		CHECK_EQ(wire_rnr_timer_code(wire_rnr_timer_us((uint8_t)c)), c);

	/* Syndromes. */
	CHECK_EQ(wire_aeth_ack(0x1f), 0x1f);
	CHECK_EQ(wire_aeth_ack(3), 0x03);
	CHECK_EQ(wire_aeth_rnr_nak(14), 0x2e);
	CHECK_EQ(wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR), 0x60);
	CHECK_EQ(wire_aeth_nak(WIRE_NAK_INVALID_REQ), 0x61);
	CHECK_EQ(wire_aeth_nak(WIRE_NAK_REM_ACCESS_ERR), 0x62);
	CHECK_EQ(wire_aeth_nak(WIRE_NAK_REM_OP_ERR), 0x63);
	CHECK_EQ(wire_aeth_nak(WIRE_NAK_INVALID_RD_REQ), 0x64);
	CHECK_EQ(wire_aeth_type(0x39), WIRE_AETH_RNR_NAK); /* 57: rxe RNR NAK in ops_rnr_nak */
	CHECK_EQ(wire_aeth_value(0x39), 25);
	CHECK_EQ(wire_aeth_type(0x63), WIRE_AETH_NAK);
	CHECK_EQ(wire_aeth_type(0x1f), WIRE_AETH_ACK);
	CHECK(wire_aeth_syndrome_valid(0x1f) && wire_aeth_syndrome_valid(0x20) &&
	      wire_aeth_syndrome_valid(0x64), "valid syndromes");
	CHECK(!wire_aeth_syndrome_valid(0x65) && !wire_aeth_syndrome_valid(0x40) &&
	      !wire_aeth_syndrome_valid(0x80), "invalid syndromes");
	CHECK(!strcmp(wire_aeth_syndrome_str(0x1f, buf, sizeof(buf)), "ACK credits=invalid"), "%s", buf);
	CHECK(!strcmp(wire_aeth_syndrome_str(0x05, buf, sizeof(buf)), "ACK credits=5"), "%s", buf);
	CHECK(!strcmp(wire_aeth_syndrome_str(0x2e, buf, sizeof(buf)), "RNR NAK timer=14 (1.28 ms)"), "%s", buf);
	CHECK(!strcmp(wire_aeth_syndrome_str(0x20, buf, sizeof(buf)), "RNR NAK timer=0 (655.36 ms)"), "%s", buf);
	CHECK(!strcmp(wire_aeth_syndrome_str(0x62, buf, sizeof(buf)), "NAK remote access error"), "%s", buf);
	CHECK(!strcmp(wire_aeth_syndrome_str(0x63, buf, 4), "NAK"), "truncated: %s", buf);
	CHECK(!strcmp(wire_nak_code_str(9), "reserved"), "reserved nak");

	/* AETH encode/decode. */
	uint8_t b[4];
	struct wire_aeth a = { .syndrome = 0x63, .msn = 0xabcdef }, a2;
	wire_aeth_encode(b, &a);
	CHECK(b[0] == 0x63 && b[1] == 0xab && b[2] == 0xcd && b[3] == 0xef, "aeth bytes");
	wire_aeth_decode(b, &a2);
	CHECK(a2.syndrome == 0x63 && a2.msn == 0xabcdef, "aeth decode");

	/* Local ACK timeout: 4.096 us * 2^t; 0 = infinite. */
	CHECK_EQ(wire_retrans_timeout_ns(0), 0);
	CHECK_EQ(wire_retrans_timeout_ns(1), 8192);
	CHECK_EQ(wire_retrans_timeout_ns(14), 67108864ull); /* 67.1 ms, a common default */
	CHECK_EQ(wire_retrans_timeout_ns(31), 4096ull << 31);
	return t_done("test_aeth");
}
