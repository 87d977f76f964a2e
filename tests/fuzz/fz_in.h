/* SPDX-License-Identifier: MIT */
/* The fuzzers' reader of their input: little-endian integers taken from
 * the front, zeros once it is used up (so every input is a whole script). */
#ifndef FZ_IN_H
#define FZ_IN_H

#include <stddef.h>
#include <stdint.h>

struct fz_in {
	const uint8_t *d;
	size_t n, pos;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
	return in->pos < in->n ? in->d[in->pos++] : 0;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	return (uint16_t)(fz_u8(in) | fz_u8(in) << 8);
}

static inline uint32_t fz_u32(struct fz_in *in)
{
	return (uint32_t)fz_u16(in) | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	return (uint64_t)fz_u32(in) | (uint64_t)fz_u32(in) << 32;
}

#endif
