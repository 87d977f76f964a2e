/* SPDX-License-Identifier: MIT */
/* Baseline: round trip through two shared-memory SPSC rings between two
 * processes, both spinning, pinned to different cores. This is the floor
 * of any cross-process hand-off (the shim <-> daemon path uses the same
 * kind of ring), so uroce latencies are quoted as multiples of it.
 * usage: ring_rtt [iterations] [cpu_a] [cpu_b]   prints "ring_rtt_ns <avg> <p50> <p99>" */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 64u

struct ring {
	_Alignas(64) uint32_t prod;
	_Alignas(64) uint32_t cons;
	_Alignas(64) uint64_t slot[SLOTS];
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	(void)sched_setaffinity(0, sizeof(s), &s);
}

static void put(struct ring *r, uint64_t v)
{
	uint32_t p = r->prod;

	while (p - __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE) >= SLOTS)
		;
	r->slot[p % SLOTS] = v;
	__atomic_store_n(&r->prod, p + 1, __ATOMIC_RELEASE);
}

static uint64_t get(struct ring *r)
{
	uint32_t c = r->cons;
	uint64_t v;

	while (__atomic_load_n(&r->prod, __ATOMIC_ACQUIRE) == c)
		;
	v = r->slot[c % SLOTS];
	__atomic_store_n(&r->cons, c + 1, __ATOMIC_RELEASE);
	return v;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int ca = argc > 2 ? atoi(argv[2]) : 1, cb = argc > 3 ? atoi(argv[3]) : 0;
	struct ring *r = mmap(NULL, 2 * sizeof(struct ring), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED || n < 100)
		return 2;
	memset(r, 0, 2 * sizeof(*r));
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		pin(cb);
		for (long i = 0; i < n + 1000; i++)
			put(&r[1], get(&r[0]));
		_exit(0);
	}
	pin(ca);
	uint64_t *lat = malloc((size_t)n * sizeof(*lat));
	if (!lat)
		return 2;
	for (int i = 0; i < 1000; i++) { /* warm up */
		put(&r[0], (uint64_t)i);
		(void)get(&r[1]);
	}
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint64_t a = now_ns();
		put(&r[0], (uint64_t)i);
		(void)get(&r[1]);
		lat[i] = now_ns() - a;
	}
	uint64_t tot = now_ns() - t0;
	waitpid(pid, NULL, 0);
	qsort(lat, (size_t)n, sizeof(*lat), cmp64);
	printf("ring_rtt_ns avg %.1f p50 %lu p99 %lu\n", (double)tot / (double)n,
	       (unsigned long)lat[n / 2], (unsigned long)lat[n * 99 / 100]);
	return 0;
}
