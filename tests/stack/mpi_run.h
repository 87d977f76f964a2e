/* SPDX-License-Identifier: MIT */
/* What the MPI checks share beyond the byte pattern (mpi_mem.c here,
 * tests/net/mpi_pairs.c): buffers allocated fresh for every message, as
 * MPI benchmarks do, and an all-reduce over every rank whose result is
 * checked element by element. */
#ifndef MPI_RUN_H
#define MPI_RUN_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_pat.h"

static inline void *fresh(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		MPI_Abort(MPI_COMM_WORLD, 3);
	return p;
}

/* MPI_SUM of every rank's 2 + rank pattern over bytes / 4 int32s; the
 * output starts as garbage. 1 when an element is wrong (said on stderr). */
static inline int allreduce(int rank, int nr, uint64_t seed, size_t bytes)
{
	size_t cnt = bytes / 4;
	int bad = 0;

	if (!cnt)
		return 0;
	int32_t *in = fresh(cnt * 4), *out = fresh(cnt * 4);
	memset(out, 0xee, cnt * 4);
	for (size_t i = 0; i < cnt; i++)
		in[i] = (int32_t)(pat(seed, bytes, 2 + rank, i) * 65537u);
	MPI_Allreduce(in, out, (int)cnt, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < cnt && !bad; i++) {
		uint32_t want = 0;

		for (int r = 0; r < nr; r++)
			want += pat(seed, bytes, 2 + r, i) * 65537u;
		if ((uint32_t)out[i] != want) {
			fprintf(stderr, "rank %d: allreduce %zu B: element %zu is %d, want %d\n",
				rank, bytes, i, out[i], (int32_t)want);
			bad = 1;
		}
	}
	free(in);
	free(out);
	return bad;
}

#endif /* MPI_RUN_H */
