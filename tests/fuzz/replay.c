/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay FILE... - run the fuzz entry point without libFuzzer.
 *
 * Each FILE is a pcap (every frame is one input) or, failing that, a raw
 * input such as a libFuzzer crash artifact. Every pcap frame is also fed in
 * deterministic variants: every prefix, and every single-bit flip of its
 * first 128 bytes; so gcc builds, which have no libFuzzer, still drive the
 * parser's reject paths and the rebuild properties.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_FLIP_BYTES 128

static uint8_t fuzz_buf[65536 + 64];
static uint64_t fuzz_runs;

static void fuzz_one(const uint8_t *d, size_t n)
{
	LLVMFuzzerTestOneInput(d, n);
	fuzz_runs++;
}

static void fuzz_variants(const uint8_t *d, size_t n)
{
	if (n > sizeof(fuzz_buf))
		n = sizeof(fuzz_buf);
	fuzz_one(d, n);
	/* Prefixes go into a buffer of exactly that size (malloc), so ASan
	 * catches a read one past the end. */
	for (size_t k = 0; k < n; k++) {
		uint8_t *c = malloc(k ? k : 1);

		if (!c) {
			perror("malloc");
			exit(2);
		}
		memcpy(c, d, k);
		fuzz_one(c, k);
		free(c);
	}
	memcpy(fuzz_buf, d, n);
	for (size_t i = 0; i < n && i < FUZZ_FLIP_BYTES; i++) {
		for (unsigned b = 0; b < 8; b++) {
			fuzz_buf[i] ^= (uint8_t)(1u << b);
			fuzz_one(fuzz_buf, n);
			fuzz_buf[i] ^= (uint8_t)(1u << b);
		}
	}
}

static int fuzz_raw(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = fread(fuzz_buf, 1, sizeof(fuzz_buf), f);
	fclose(f);
	fuzz_one(fuzz_buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t frames = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fuzz_replay FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char errbuf[PCAP_ERRBUF_SIZE];
		struct pcap_pkthdr *h;
		const u_char *data;
		pcap_t *p = pcap_open_offline(argv[i], errbuf);
		int rc;

		if (!p) {
			if (fuzz_raw(argv[i]))
				return 2;
			continue;
		}
		while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
			fuzz_variants(data, h->caplen);
			frames++;
		}
		if (rc != PCAP_ERROR_BREAK) {
			fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], pcap_geterr(p));
			pcap_close(p);
			return 2;
		}
		pcap_close(p);
	}
	printf("fuzz_replay: %" PRIu64 " frames, %" PRIu64 " inputs, no property violated\n",
	       frames, fuzz_runs);
	return 0;
}
