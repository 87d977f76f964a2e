/* SPDX-License-Identifier: MIT */
/* Baseline: single-core memcpy bandwidth on cold buffers. Copies CHUNK-byte
 * pieces walking through two arenas much larger than the last-level cache,
 * so every source and destination line comes from DRAM, as a 64 KB RDMA
 * WRITE of a fresh buffer does.
 * usage: memcpy_bw [chunk_bytes] [arena_MiB]   prints "memcpy_gbps <GB/s>" */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t chunk = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	size_t arena = (argc > 2 ? strtoul(argv[2], NULL, 0) : 256) << 20;
	uint8_t *src = malloc(arena), *dst = malloc(arena);

	if (!src || !dst || chunk == 0 || chunk > arena)
		return 2;
	memset(src, 1, arena); /* fault every page in first */
	memset(dst, 2, arena);
	double best = 0;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now_s();
		size_t done = 0;
		for (size_t off = 0; off + chunk <= arena; off += chunk) {
			memcpy(dst + off, src + off, chunk);
			done += chunk;
		}
		double gbps = (double)done / (now_s() - t0) / 1e9;
		if (gbps > best)
			best = gbps;
	}
	printf("memcpy_gbps %.2f\n", best);
	return dst[arena / 2] == 1 ? 0 : 1;
}
