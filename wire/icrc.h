/* SPDX-License-Identifier: MIT */
/**
 * @file icrc.h
 * @brief RoCEv2 Invariant CRC (IBTA Annex A17) and the raw CRC-32 under it.
 *
 * The ICRC is the reflected CRC-32 (polynomial 0xEDB88320, init ~0, final
 * xor ~0: the zlib/Ethernet CRC) over
 *   8 bytes of 0xFF (stands for the LRH, which RoCEv2 does not have),
 *   the IP header, the UDP header, the BTH, the extension headers, the payload
 *   and the pad,
 * where the fields a router may change in flight are replaced by all-ones:
 *   IPv4: TOS, TTL, header checksum;  IPv6: traffic class, flow label, hop limit;
 *   UDP checksum;  BTH byte 4 (FECN, BECN, reserved).
 * The 32-bit result is stored on the wire least-significant byte first.
 *
 * Incremental use (headers in one buffer, payload fragments elsewhere):
 * @code
 *   uint32_t s;
 *   wire_icrc_headers(l3, l3_hdr_len, &s);             // IP..ext, masked
 *   s = wire_icrc_update(s, frag1, n1);
 *   s = wire_icrc_update(s, frag2, n2);                // + pad bytes
 *   wire_icrc_put(trailer, wire_icrc_final(s));
 * @endcode
 */
#ifndef WIRE_ICRC_H
#define WIRE_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Raw reflected CRC-32 update. @p crc is the running register (start with
 *  0xFFFFFFFF, finish with ~crc); equals zlib's crc32() with those
 *  conventions. Table-driven, slicing-by-8. */
uint32_t wire_crc32_update(uint32_t crc, const void *buf, size_t len);

/** zlib-compatible convenience: crc32(prev, buf, len) with prev = 0 for a new CRC. */
uint32_t wire_crc32(uint32_t prev, const void *buf, size_t len);

/** Running ICRC state after the masked 8-byte LRH stand-in. */
uint32_t wire_icrc_init(void);

/** Feed @p len unmasked bytes (extension headers, payload, pad). */
uint32_t wire_icrc_update(uint32_t state, const void *buf, size_t len);

/** Turn a running state into the ICRC value (to be stored with wire_icrc_put()). */
static inline uint32_t wire_icrc_final(uint32_t state)
{
	return ~state;
}

/** Start an ICRC over the first @p len bytes at @p l3 (IP header first; IPv4
 *  or IPv6 taken from the version nibble), applying the IP, UDP and BTH masks.
 *  @p len must cover at least IP + UDP + BTH (IPv4 options included per IHL);
 *  bytes past the BTH are fed unmasked, so @p len may also include extension
 *  headers and payload. On success stores the running state (for
 *  wire_icrc_update()) in @p state and returns true; returns false if @p len
 *  is too short or the version is neither 4 nor 6. */
bool wire_icrc_headers(const uint8_t *l3, size_t len, uint32_t *state);

/** One-shot ICRC of a RoCEv2 packet whose IP header is at @p l3, over the
 *  @p len bytes that precede the ICRC field (IP header .. pad). Stores the
 *  ICRC in @p icrc; false on the same errors as wire_icrc_headers(). */
bool wire_icrc_calc(const uint8_t *l3, size_t len, uint32_t *icrc);

/** Read the ICRC stored at @p p (little-endian). */
uint32_t wire_icrc_get(const uint8_t *p);

/** Store @p icrc at @p p (little-endian). */
void wire_icrc_put(uint8_t *p, uint32_t icrc);

/** Verify the ICRC of a RoCEv2 packet at @p l3 spanning @p len bytes
 *  (IP header .. ICRC inclusive). */
bool wire_icrc_check(const uint8_t *l3, size_t len);

#endif /* WIRE_ICRC_H */
