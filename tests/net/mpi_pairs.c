/* SPDX-License-Identifier: MIT */
/* N-rank MPI check for the multi-host rig (issue 22, tests/net/fourhost.py):
 * for every size, a ping-pong between every pair of ranks (round-robin
 * rounds: all pairs of a round at once, so every daemon carries traffic
 * to several peers together), then an all-reduce; the buffers are
 * allocated fresh for every message and freed after it, the receive
 * buffer filled with garbage first, every byte checked. The pattern
 * depends on the seed, the size and the (sender, receiver) pair, so a
 * byte from the wrong peer or the wrong message is caught.
 *   mpi_pairs SEED [MAX]   exit 0 when every rank saw every byte right */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stack/mpi_run.h"

#define MAX_RANKS 8

/* the direction of a message from src to dst: away from the all-reduce's
 * 2 + rank */
static int pdir(int src, int dst)
{
	return 64 + src * MAX_RANKS + dst;
}

/* one exchange with peer: the lower rank sends first */
static int pingpong(int rank, int peer, uint64_t seed, size_t n)
{
	uint8_t *sb = fresh(n), *rb = fresh(n);
	long at;

	memset(rb, 0xee, n);
	fill(sb, n, seed, pdir(rank, peer));
	if (rank < peer) {
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
	}
	at = check(rb, n, seed, pdir(peer, rank));
	if (at >= 0)
		fprintf(stderr, "rank %d: ping-pong with %d, %zu B: byte %ld wrong\n", rank, peer,
			n, at);
	free(sb);
	free(rb);
	return at >= 0;
}

/* round r of the circle method: rank nr-1 stays, the others rotate; with
 * an odd count the stayer is a bye (-1) */
static int partner(int rank, int r, int nr)
{
	int m = nr % 2 ? nr + 1 : nr, p;

	if (rank == m - 1)
		p = r;
	else if (rank == r)
		p = m - 1;
	else
		p = ((2 * r - rank) % (m - 1) + (m - 1)) % (m - 1);
	return p >= nr ? -1 : p;
}

static int one_size(int rank, int nr, uint64_t seed, size_t n, int *pairs)
{
	int bad = 0, m = nr % 2 ? nr + 1 : nr;

	for (int r = 0; r < m - 1; r++) {
		int p = partner(rank, r, nr);

		if (p >= 0) {
			bad |= pingpong(rank, p, seed, n);
			(*pairs)++;
		}
	}
	bad |= allreduce(rank, nr, seed, n);
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : 1u << 20;
	int rank, nr, bad = 0, any = 0, sizes = 0, pairs = 0, allpairs = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nr);
	if (nr < 2 || nr > MAX_RANKS) {
		if (!rank)
			fprintf(stderr, "needs 2..%d ranks\n", MAX_RANKS);
		MPI_Finalize();
		return 2;
	}
	if (!rank)
		printf("seed %llu, %d ranks\n", (unsigned long long)seed, nr);
	for (size_t n = 1; n <= max; n *= 4) {
		size_t odd = n * 3 / 2 + 1; /* between two steps */

		bad |= one_size(rank, nr, seed + n, n, &pairs);
		sizes++;
		if (odd < max && n > 1) {
			bad |= one_size(rank, nr, seed + odd, odd, &pairs);
			sizes++;
		}
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(&pairs, &allpairs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	/* every pair once per size, counted by both of its ranks */
	if (allpairs != sizes * nr * (nr - 1))
		any = 1;
	if (!rank)
		printf("%d ranks, %d sizes 1 B .. %zu B, %d pair exchanges, fresh buffers: %s\n",
		       nr, sizes, max, allpairs / 2, any ? "FAILED" : "ok");
	MPI_Finalize();
	return any ? 1 : 0;
}
