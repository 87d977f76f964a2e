/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay [-seed=N] [-gen=N] [-variants=0|1] PATH... - run a fuzz entry
 * point without libFuzzer (the gcc build's verdict for every fuzz target).
 *
 * Each PATH is a directory (every regular file in it is one input, in name
 * order), a classic pcap file (every frame is one input) or any other file
 * (one raw input, such as a libFuzzer crash artifact). Every input is run
 * as is and, with -variants=1 (the default), in deterministic variants:
 * every prefix of its first 256 bytes, and every single-bit flip of its
 * first 128 bytes. Then -gen=N more inputs are generated from the inputs
 * with a PRNG seeded by -seed (byte sets, flips, inserts, deletes, splices,
 * truncations): the same seed gives the same inputs, so a failure
 * reproduces, and the seed is printed. With FUZZ_REPLAY_LAST=PATH set,
 * every input is written to PATH before it runs: after a failure, PATH
 * holds the input that failed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (65536 + 64)
#define FUZZ_FLIP_BYTES 128
#define FUZZ_PREFIX_BYTES 256
#define FUZZ_POOL_MAX 65536

struct fuzz_input {
	uint8_t *d;
	size_t n;
};

static struct fuzz_input *fuzz_pool;
static size_t fuzz_npool;
static uint64_t fuzz_runs;
static int fuzz_variants_on = 1;

/* Inputs go into a malloc'd buffer of exactly their size so that ASan
 * catches a read one past the end. */
static const char *fuzz_last; /* FUZZ_REPLAY_LAST=PATH: each input is saved there first */

static void fuzz_one(const uint8_t *d, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (fuzz_last) {
		FILE *f = fopen(fuzz_last, "wb");

		if (f) {
			fwrite(d, 1, n, f);
			fclose(f);
		}
	}

	if (!c) {
		perror("malloc");
		exit(2);
	}
	memcpy(c, d, n);
	LLVMFuzzerTestOneInput(c, n);
	free(c);
	fuzz_runs++;
}

static void fuzz_variants(const uint8_t *d, size_t n)
{
	static uint8_t buf[FUZZ_MAX_INPUT];

	fuzz_one(d, n);
	if (!fuzz_variants_on)
		return;
	for (size_t k = 0; k < n && k < FUZZ_PREFIX_BYTES; k++)
		fuzz_one(d, k);
	memcpy(buf, d, n);
	for (size_t i = 0; i < n && i < FUZZ_FLIP_BYTES; i++) {
		for (unsigned b = 0; b < 8; b++) {
			buf[i] ^= (uint8_t)(1u << b);
			fuzz_one(buf, n);
			buf[i] ^= (uint8_t)(1u << b);
		}
	}
}

static void fuzz_keep(const uint8_t *d, size_t n)
{
	if (n > FUZZ_MAX_INPUT)
		n = FUZZ_MAX_INPUT;
	fuzz_variants(d, n);
	if (fuzz_npool >= FUZZ_POOL_MAX)
		return;
	if (!fuzz_pool && !(fuzz_pool = calloc(FUZZ_POOL_MAX, sizeof(*fuzz_pool)))) {
		perror("calloc");
		exit(2);
	}
	fuzz_pool[fuzz_npool].d = malloc(n ? n : 1);
	if (!fuzz_pool[fuzz_npool].d) {
		perror("malloc");
		exit(2);
	}
	memcpy(fuzz_pool[fuzz_npool].d, d, n);
	fuzz_pool[fuzz_npool++].n = n;
}

static uint8_t *fuzz_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	size_t cap = 0, len = 0, r;

	if (!f) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		if (len == cap) {
			uint8_t *nb = realloc(b, cap = cap ? cap * 2 : 65536);

			if (!nb) {
				free(b);
				fclose(f);
				return NULL;
			}
			b = nb;
		}
		r = fread(b + len, 1, cap - len, f);
		len += r;
	} while (r);
	fclose(f);
	*n = len;
	return b;
}

static uint32_t fuzz_get32(const uint8_t *p, int be)
{
	return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		  : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A classic pcap file (any byte order, µs or ns): every record is an input.
 * Returns false if the file is not one. */
static int fuzz_pcap(const uint8_t *b, size_t n)
{
	static const uint8_t le[][4] = { { 0xd4, 0xc3, 0xb2, 0xa1 }, { 0x4d, 0x3c, 0xb2, 0xa1 } };
	static const uint8_t be[][4] = { { 0xa1, 0xb2, 0xc3, 0xd4 }, { 0xa1, 0xb2, 0x3c, 0x4d } };
	int big;
	size_t off = 24;

	if (n < 24)
		return 0;
	if (!memcmp(b, le[0], 4) || !memcmp(b, le[1], 4))
		big = 0;
	else if (!memcmp(b, be[0], 4) || !memcmp(b, be[1], 4))
		big = 1;
	else
		return 0;
	while (off + 16 <= n) {
		size_t cl = fuzz_get32(b + off + 8, big);

		off += 16;
		if (cl > n - off)
			cl = n - off;
		fuzz_keep(b + off, cl);
		off += cl;
	}
	return 1;
}

static int fuzz_file(const char *path)
{
	size_t n = 0;
	uint8_t *b = fuzz_slurp(path, &n);

	if (!b)
		return -1;
	if (!fuzz_pcap(b, n))
		fuzz_keep(b, n);
	free(b);
	return 0;
}

static int fuzz_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int fuzz_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t nn = 0, cap = 0;
	int rc = 0;

	if (!d) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (nn == cap) {
			char **nb = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names));

			if (!nb)
				exit(2);
			names = nb;
		}
		if (asprintf(&names[nn++], "%s/%s", path, e->d_name) < 0)
			exit(2);
	}
	closedir(d);
	if (nn) /* qsort's array may not be NULL, even for no element */
		qsort(names, nn, sizeof(*names), fuzz_cmp);
	for (size_t i = 0; i < nn; i++) {
		struct stat st;

		if (!rc && !stat(names[i], &st) && S_ISREG(st.st_mode))
			rc = fuzz_file(names[i]);
		free(names[i]);
	}
	free(names);
	return rc;
}

static uint64_t fuzz_rng(uint64_t *s)
{
	/* splitmix64: tiny, and good enough to pick mutations. */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One generated input: a pool entry with 1..8 random mutations. */
static void fuzz_generate(uint64_t *s)
{
	static uint8_t buf[FUZZ_MAX_INPUT];
	const struct fuzz_input *in = &fuzz_pool[fuzz_rng(s) % fuzz_npool];
	size_t n = in->n;
	unsigned muts = 1 + (unsigned)(fuzz_rng(s) % 8);

	memcpy(buf, in->d, n);
	for (unsigned m = 0; m < muts; m++) {
		uint64_t r = fuzz_rng(s);
		size_t pos = n ? (size_t)(fuzz_rng(s) % n) : 0;

		switch (r % 7) {
		case 0: /* bit flip */
			if (n)
				buf[pos] ^= (uint8_t)(1u << (r >> 8) % 8);
			break;
		case 1: /* interesting byte */
			if (n) {
				static const uint8_t v[] = { 0, 1, 2, 3, 4, 7, 8, 0x10, 0x3f, 0x40,
							     0x7f, 0x80, 0xfe, 0xff };
				buf[pos] = v[(r >> 8) % sizeof(v)];
			}
			break;
		case 2: /* random byte */
			if (n)
				buf[pos] = (uint8_t)(r >> 8);
			break;
		case 3: /* truncate */
			n = pos;
			break;
		case 4: /* delete a run */
			if (n) {
				size_t k = 1 + (size_t)((r >> 8) % 16);

				if (k > n - pos)
					k = n - pos;
				memmove(buf + pos, buf + pos + k, n - pos - k);
				n -= k;
			}
			break;
		case 5: /* insert random bytes */
			if (n + 16 <= sizeof(buf)) {
				size_t k = 1 + (size_t)((r >> 8) % 16);

				memmove(buf + pos + k, buf + pos, n - pos);
				for (size_t i = 0; i < k; i++)
					buf[pos + i] = (uint8_t)fuzz_rng(s);
				n += k;
			}
			break;
		default: { /* splice: a run of another input over this one */
			const struct fuzz_input *o = &fuzz_pool[fuzz_rng(s) % fuzz_npool];
			size_t k, from;

			if (!o->n || !n)
				break;
			from = (size_t)(fuzz_rng(s) % o->n);
			k = 1 + (size_t)((r >> 8) % 64);
			if (k > o->n - from)
				k = o->n - from;
			if (k > n - pos)
				k = n - pos;
			memcpy(buf + pos, o->d + from, k);
			break;
		}
		}
	}
	fuzz_one(buf, n);
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, gen = 0, st;
	size_t paths = 0;

	fuzz_last = getenv("FUZZ_REPLAY_LAST");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		struct stat sb;

		if (!strncmp(a, "-seed=", 6)) {
			seed = strtoull(a + 6, NULL, 0);
			continue;
		}
		if (!strncmp(a, "-gen=", 5)) {
			gen = strtoull(a + 5, NULL, 0);
			continue;
		}
		if (!strncmp(a, "-variants=", 10)) {
			fuzz_variants_on = atoi(a + 10);
			continue;
		}
		paths++;
		if (stat(a, &sb)) {
			fprintf(stderr, "fuzz_replay: %s: %s\n", a, strerror(errno));
			return 2;
		}
		if ((S_ISDIR(sb.st_mode) ? fuzz_dir(a) : fuzz_file(a)) < 0)
			return 2;
	}
	if (!paths) {
		fprintf(stderr, "usage: %s [-seed=N] [-gen=N] [-variants=0|1] DIR|PCAP|FILE...\n",
			argv[0]);
		return 2;
	}
	printf("fuzz_replay: %zu inputs read; generating %" PRIu64 " with seed %" PRIu64 "\n",
	       fuzz_npool, gen, seed);
	fflush(stdout);
	st = seed;
	for (uint64_t i = 0; i < gen && fuzz_npool; i++)
		fuzz_generate(&st);
	/* an empty corpus (a wrong path, files lost) replays nothing: that is
	 * no verdict, not a pass */
	int rc = fuzz_npool && fuzz_runs ? 0 : 1;
	if (rc)
		fprintf(stderr, "fuzz_replay: FAIL: %zu inputs, %" PRIu64 " runs: nothing to replay\n",
			fuzz_npool, fuzz_runs);
	else
		printf("fuzz_replay: %" PRIu64 " runs, no property violated\n", fuzz_runs);
	for (size_t i = 0; i < fuzz_npool; i++)
		free(fuzz_pool[i].d);
	free(fuzz_pool);
	return rc;
}
