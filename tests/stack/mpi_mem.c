/* SPDX-License-Identifier: MIT */
/* Two-rank MPI check of registered memory (issue 19): a ping-pong and an
 * all-reduce whose buffers are allocated fresh for every size and freed
 * after it, as MPI benchmarks do, from 1 B up to MAX (64 MiB by default):
 * powers of four and odd sizes between, every byte checked. An allocator
 * that hands the same addresses out again, and UCX's registration cache
 * keeping registrations of freed buffers, meet here: before issue 19 the
 * receive buffer of the 1 MiB step held the old buffer's bytes.
 *   mpi_mem SEED [MAX]     exit 0 when every rank saw every byte right */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_run.h"

/* the receive buffer is filled with garbage first: what was there before
 * must be overwritten, byte for byte */
static int pingpong(int rank, uint64_t seed, size_t n)
{
	uint8_t *sb = fresh(n), *rb = fresh(n);
	int peer = 1 - rank, bad = 0;
	long at;

	memset(rb, 0xee, n);
	if (rank == 0) {
		fill(sb, n, seed, 0);
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		at = check(rb, n, seed, 1);
	} else {
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		at = check(rb, n, seed, 0);
		fill(sb, n, seed, 1);
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
	}
	if (at >= 0) {
		fprintf(stderr, "rank %d: ping-pong %zu B: byte %ld of %zu wrong\n", rank, n, at, n);
		bad = 1;
	}
	free(sb);
	free(rb);
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : 64u << 20;
	int rank, nranks, bad = 0, any = 0, sizes = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (!rank)
			fprintf(stderr, "needs exactly 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	if (!rank)
		printf("seed %llu\n", (unsigned long long)seed);
	for (size_t n = 1; n <= max; n *= 4) {
		size_t odd = n * 3 / 2 + 1; /* between two steps */

		bad |= pingpong(rank, seed + n, n);
		bad |= allreduce(rank, 2, seed + n, n);
		sizes++;
		if (odd < max && n > 1) {
			bad |= pingpong(rank, seed + odd, odd);
			bad |= allreduce(rank, 2, seed + odd, odd & ~(size_t)3);
			sizes++;
		}
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("%d sizes 1 B .. %zu B, fresh buffers: %s\n", sizes, max,
		       any ? "FAILED" : "ok");
	MPI_Finalize();
	return any ? 1 : 0;
}
