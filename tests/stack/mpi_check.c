/* SPDX-License-Identifier: MIT */
/* Two-rank MPI check for the stack suite: a ping-pong and an all-reduce
 * over every size from 1 B to 4 MiB (powers of two and odd sizes between),
 * every byte checked. The pattern is derived from a seed given on the
 * command line (printed), the size and the direction, so a byte delivered
 * to the wrong place or from the wrong message is caught.
 *   mpi_check SEED      exit 0 when every rank saw every byte right */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_pat.h"

#define MAX_BYTES (4u << 20)

static int pingpong(int rank, uint64_t seed, uint8_t *sb, uint8_t *rb, size_t n)
{
	int peer = 1 - rank, bad = 0;
	long at;

	for (int iter = 0; iter < 2; iter++) {
		memset(rb, 0, n);
		if (rank == 0) {
			fill(sb, n, seed + (uint64_t)iter, 0);
			MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(rb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			at = check(rb, n, seed + (uint64_t)iter, 1);
		} else {
			MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			at = check(rb, n, seed + (uint64_t)iter, 0);
			fill(sb, n, seed + (uint64_t)iter, 1);
			MPI_Send(sb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
		if (at >= 0) {
			fprintf(stderr, "rank %d: ping-pong %zu B: byte %ld wrong\n", rank, n, at);
			bad = 1;
		}
	}
	return bad;
}

/* sum of both ranks' int32 vectors: element i of rank r is pat-derived */
static int allreduce(int rank, uint64_t seed, int32_t *in, int32_t *out, size_t bytes)
{
	size_t cnt = bytes / 4;

	if (!cnt)
		return 0;
	for (size_t i = 0; i < cnt; i++)
		in[i] = (int32_t)(pat(seed, bytes, 2 + rank, i) * 65537u);
	MPI_Allreduce(in, out, (int)cnt, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < cnt; i++) {
		int32_t want = (int32_t)(pat(seed, bytes, 2, i) * 65537u) +
			       (int32_t)(pat(seed, bytes, 3, i) * 65537u);
		if (out[i] != want) {
			fprintf(stderr, "rank %d: allreduce %zu B: element %zu is %d, want %d\n",
				rank, bytes, i, out[i], want);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	int rank, nranks, bad = 0, any = 0, sizes = 0;
	uint8_t *sb, *rb;

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
	sb = malloc(MAX_BYTES);
	rb = malloc(MAX_BYTES);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 3);
	for (size_t n = 1; n <= MAX_BYTES; n *= 2) {
		size_t odd = n * 3 / 2 + 1;   /* between two powers of two */

		bad |= pingpong(rank, seed, sb, rb, n);
		bad |= allreduce(rank, seed, (int32_t *)sb, (int32_t *)rb, n);
		sizes++;
		if (odd < MAX_BYTES) {
			bad |= pingpong(rank, seed, sb, rb, odd);
			bad |= allreduce(rank, seed, (int32_t *)sb, (int32_t *)rb, odd & ~(size_t)3);
			sizes++;
		}
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("%d sizes 1 B .. %u B: %s\n", sizes, MAX_BYTES, any ? "FAILED" : "ok");
	free(sb);
	free(rb);
	MPI_Finalize();
	return any ? 1 : 0;
}
