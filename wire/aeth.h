/* SPDX-License-Identifier: MIT */
/**
 * @file aeth.h
 * @brief AETH syndrome encoding, IBTA RNR timer table, retransmit timeout.
 *
 * Syndrome byte: bit 7 reserved (0), bits 6-5 type, bits 4-0 value.
 * Type 00 = ACK (value = credit count code, 0x1F = no/unlimited credits),
 * 01 = RNR NAK (value = RNR timer code), 10 = reserved, 11 = NAK (value = code).
 */
#ifndef WIRE_AETH_H
#define WIRE_AETH_H

#include <stdbool.h>
#include <stdint.h>

/** Syndrome type, i.e. bits 6-5 of the syndrome, left in place. */
enum wire_aeth_type {
	WIRE_AETH_ACK      = 0x00,
	WIRE_AETH_RNR_NAK  = 0x20,
	WIRE_AETH_RESERVED = 0x40,
	WIRE_AETH_NAK      = 0x60,
};

#define WIRE_AETH_TYPE_MASK  0x60
#define WIRE_AETH_VALUE_MASK 0x1f
#define WIRE_AETH_CREDITS_INVALID 0x1f /**< "no credit information / unlimited" */

/** NAK codes (syndrome 0x60 | code). */
enum wire_nak_code {
	WIRE_NAK_PSN_SEQ_ERR      = 0, /**< PSN sequence error */
	WIRE_NAK_INVALID_REQ      = 1, /**< invalid request */
	WIRE_NAK_REM_ACCESS_ERR   = 2, /**< remote access error */
	WIRE_NAK_REM_OP_ERR       = 3, /**< remote operational error */
	WIRE_NAK_INVALID_RD_REQ   = 4, /**< invalid RD request */
};

/** Syndrome for an ACK with credit code @p credits (0..31). */
static inline uint8_t wire_aeth_ack(uint8_t credits)
{
	return (uint8_t)(WIRE_AETH_ACK | (credits & WIRE_AETH_VALUE_MASK));
}

/** Syndrome for an RNR NAK with RNR timer code @p timer (0..31). */
static inline uint8_t wire_aeth_rnr_nak(uint8_t timer)
{
	return (uint8_t)(WIRE_AETH_RNR_NAK | (timer & WIRE_AETH_VALUE_MASK));
}

/** Syndrome for a NAK with code @p code (enum wire_nak_code). */
static inline uint8_t wire_aeth_nak(uint8_t code)
{
	return (uint8_t)(WIRE_AETH_NAK | (code & WIRE_AETH_VALUE_MASK));
}

/** Type part of a syndrome (enum wire_aeth_type). */
static inline enum wire_aeth_type wire_aeth_type(uint8_t syndrome)
{
	return (enum wire_aeth_type)(syndrome & WIRE_AETH_TYPE_MASK);
}

/** Value part of a syndrome (credits, timer code or NAK code). */
static inline uint8_t wire_aeth_value(uint8_t syndrome)
{
	return syndrome & WIRE_AETH_VALUE_MASK;
}

/** True for syndromes a receiver should accept: bit 7 clear, type not reserved,
 *  and NAK codes 0..4. */
bool wire_aeth_syndrome_valid(uint8_t syndrome);

/** Human-readable syndrome, e.g. "ACK credits=31", "RNR NAK timer=14 (0.96 ms)",
 *  "NAK remote access error". Writes at most @p len bytes (NUL included);
 *  returns @p buf. */
char *wire_aeth_syndrome_str(uint8_t syndrome, char *buf, unsigned len);

/** Name of a NAK code ("PSN sequence error", ...), "reserved" if unknown. */
const char *wire_nak_code_str(uint8_t code);

/** Microseconds of RNR timer code @p code (IBTA table: 0 = 655360 us,
 *  1 = 10 us, ... 31 = 491520 us). Fractional entries (e.g. 0.02 ms steps of
 *  10 us) are exact in microseconds. @p code is masked to 5 bits. */
uint32_t wire_rnr_timer_us(uint8_t code);

/** Smallest RNR timer code whose delay is >= @p us (31 if none is). */
uint8_t wire_rnr_timer_code(uint32_t us);

/** Local ACK / retransmit timeout in nanoseconds: 4096 ns * 2^timeout.
 *  Returns 0 for timeout 0 (infinite); @p timeout is masked to 5 bits. */
uint64_t wire_retrans_timeout_ns(uint8_t timeout);

/** rnr_retry / retry_cnt value meaning "retry forever" for RNR. */
#define WIRE_RNR_RETRY_INFINITE 7

#endif /* WIRE_AETH_H */
