/* SPDX-License-Identifier: MIT */
/**
 * @file bytes.h
 * @brief Unaligned big/little-endian loads and stores.
 *
 * Frames sit at arbitrary offsets in mbufs and pcap buffers, so every
 * multi-byte field is accessed byte-wise (compilers fold these into a single
 * load + bswap); no pointer casts, no alignment assumptions.
 */
#ifndef WIRE_BYTES_H
#define WIRE_BYTES_H

#include <stdint.h>
#include <string.h>

/** Read a big-endian 16-bit value. */
static inline uint16_t wire_get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

/** Read a big-endian 24-bit value (QPN, PSN, MSN). */
static inline uint32_t wire_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/** Read a big-endian 32-bit value. */
static inline uint32_t wire_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/** Read a big-endian 64-bit value. */
static inline uint64_t wire_get_be64(const uint8_t *p)
{
	return (uint64_t)wire_get_be32(p) << 32 | wire_get_be32(p + 4);
}

/** Read a little-endian 32-bit value (the ICRC is stored this way). */
static inline uint32_t wire_get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

/** Write a big-endian 16-bit value. */
static inline void wire_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/** Write the low 24 bits of @p v big-endian. */
static inline void wire_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/** Write a big-endian 32-bit value. */
static inline void wire_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/** Write a big-endian 64-bit value. */
static inline void wire_put_be64(uint8_t *p, uint64_t v)
{
	wire_put_be32(p, (uint32_t)(v >> 32));
	wire_put_be32(p + 4, (uint32_t)v);
}

/** Write a little-endian 32-bit value. */
static inline void wire_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif /* WIRE_BYTES_H */
