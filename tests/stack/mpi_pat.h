/* SPDX-License-Identifier: MIT */
/* The byte pattern of the MPI checks (mpi_check.c, mpi_mem.c): derived
 * from the run's seed, the message size, the direction and the offset, so
 * a byte delivered to the wrong place or from the wrong message (an older
 * buffer's, say) is caught. */
#ifndef MPI_PAT_H
#define MPI_PAT_H

#include <stddef.h>
#include <stdint.h>

static inline uint8_t pat(uint64_t seed, size_t size, int dir, size_t i)
{
	uint64_t x = seed ^ (size * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)dir << 56) ^ i;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint8_t)x;
}

static inline void fill(uint8_t *b, size_t n, uint64_t seed, int dir)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(seed, n, dir, i);
}

/* the first wrong offset, or -1 */
static inline long check(const uint8_t *b, size_t n, uint64_t seed, int dir)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, n, dir, i))
			return (long)i;
	return -1;
}

#endif /* MPI_PAT_H */
