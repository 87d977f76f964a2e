/* SPDX-License-Identifier: MIT */
/**
 * @file psn.h
 * @brief 24-bit PSN and MSN arithmetic.
 *
 * PSNs and MSNs live in a 24-bit circular space. Shifting the 32-bit
 * difference left by 8 moves bit 23 into the sign bit, so the signed result
 * orders any two values less than 2^23 apart correctly across the wrap.
 */
#ifndef WIRE_PSN_H
#define WIRE_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define WIRE_PSN_MASK 0x00ffffffu /**< PSN / MSN / QPN field mask. */
#define WIRE_PSN_HALF 0x00800000u /**< Half of the PSN space (2^23). */

/** Signed circular difference a - b: <0 if a is before b, 0 if equal, >0 if after. */
static inline int32_t wire_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/** True if @p a comes strictly before @p b in the circular space. */
static inline bool wire_psn_before(uint32_t a, uint32_t b)
{
	return wire_psn_cmp(a, b) < 0;
}

/** True if @p a comes strictly after @p b. */
static inline bool wire_psn_after(uint32_t a, uint32_t b)
{
	return wire_psn_cmp(a, b) > 0;
}

/** @p psn advanced by @p n (n may wrap), masked to 24 bits. */
static inline uint32_t wire_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & WIRE_PSN_MASK;
}

/** @p psn + 1, masked to 24 bits. */
static inline uint32_t wire_psn_next(uint32_t psn)
{
	return (psn + 1) & WIRE_PSN_MASK;
}

/** Forward distance from @p from to @p to (0 .. 2^24-1), i.e. how many
 *  increments turn @p from into @p to. */
static inline uint32_t wire_psn_dist(uint32_t from, uint32_t to)
{
	return (to - from) & WIRE_PSN_MASK;
}

/** Signed distance to - from in -2^23 .. 2^23-1. */
static inline int32_t wire_psn_diff(uint32_t to, uint32_t from)
{
	return wire_psn_cmp(to, from) >> 8;
}

/** True if @p psn lies in the half-open window [first, first + count). */
static inline bool wire_psn_in_window(uint32_t psn, uint32_t first, uint32_t count)
{
	return wire_psn_dist(first, psn) < count;
}

/** MSN is also 24 bits and uses the same arithmetic. */
#define wire_msn_cmp  wire_psn_cmp
#define wire_msn_add  wire_psn_add
#define wire_msn_next wire_psn_next

#endif /* WIRE_PSN_H */
