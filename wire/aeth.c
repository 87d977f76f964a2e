/* SPDX-License-Identifier: MIT */
#include "aeth.h"

#include <stdio.h>

/* IBTA RNR NAK timer field encoding, in microseconds. Code 0 is the longest
 * delay, not the shortest: the table wraps so that 0 still means "some
 * delay" (655.36 ms). */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t wire_rnr_timer_us(uint8_t code)
{
	return rnr_us[code & 0x1f];
}

uint8_t wire_rnr_timer_code(uint32_t us)
{
	/* Codes 1..31 increase monotonically; 0 (655.36 ms) is the only delay
	 * above 491.52 ms. */
	for (uint8_t c = 1; c < 32; c++)
		if (rnr_us[c] >= us)
			return c;
	return 0;
}

uint64_t wire_retrans_timeout_ns(uint8_t timeout)
{
	timeout &= 0x1f;
	if (timeout == 0)
		return 0;
	return 4096ull << timeout;
}

static const char *const nak_names[] = {
	"PSN sequence error",
	"invalid request",
	"remote access error",
	"remote operational error",
	"invalid RD request",
};

const char *wire_nak_code_str(uint8_t code)
{
	if (code < sizeof(nak_names) / sizeof(nak_names[0]))
		return nak_names[code];
	return "reserved";
}

bool wire_aeth_syndrome_valid(uint8_t syndrome)
{
	if (syndrome & 0x80)
		return false;
	switch (wire_aeth_type(syndrome)) {
	case WIRE_AETH_ACK:
	case WIRE_AETH_RNR_NAK:
		return true;
	case WIRE_AETH_NAK:
		return wire_aeth_value(syndrome) <= WIRE_NAK_INVALID_RD_REQ;
	default:
		return false;
	}
}

char *wire_aeth_syndrome_str(uint8_t syndrome, char *buf, unsigned len)
{
	uint8_t v = wire_aeth_value(syndrome);

	if (!buf || !len)
		return buf;
	if (syndrome & 0x80) {
		snprintf(buf, len, "reserved syndrome 0x%02x", syndrome);
		return buf;
	}
	switch (wire_aeth_type(syndrome)) {
	case WIRE_AETH_ACK:
		if (v == WIRE_AETH_CREDITS_INVALID)
			snprintf(buf, len, "ACK credits=invalid");
		else
			snprintf(buf, len, "ACK credits=%u", v);
		break;
	case WIRE_AETH_RNR_NAK: {
		uint32_t us = wire_rnr_timer_us(v);
		snprintf(buf, len, "RNR NAK timer=%u (%u.%02u ms)", v, us / 1000, (us % 1000) / 10);
		break;
	}
	case WIRE_AETH_NAK:
		snprintf(buf, len, "NAK %s", wire_nak_code_str(v));
		break;
	default:
		snprintf(buf, len, "reserved syndrome 0x%02x", syndrome);
		break;
	}
	return buf;
}
