/* SPDX-License-Identifier: MIT */
/* Genuine-capture test. For every frame of one pcap (argv[1]):
 *  - every RoCE frame parses with a valid ICRC;
 *  - rebuilding it from the parsed fields and payload gives the same bytes;
 *  - flipping any single bit the ICRC covers is detected: unmasked bits make
 *    the frame invalid (bad ICRC where nothing earlier catches it), masked
 *    bits (IPv4 TOS/TTL/checksum, IPv6 TC/flow label/hop limit, UDP
 *    checksum, BTH byte 4) leave the ICRC valid.
 * Flipping every bit of every payload is slow under ASan, so headers, pad and
 * ICRC are flipped in every packet and payload bits in a sample. */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/check.h"
#include "wire.h"

#define FULL_FLIP_PACKETS 6 /* per file, plus first of each opcode */

static uint8_t frame[70000];

static enum wire_reason parse(size_t len, unsigned flags, struct wire_pkt *p)
{
	return wire_parse_ex(frame, len, flags, p);
}

/* Role of byte o (relative to the IP header) for the ICRC. */
enum role { R_UNMASKED, R_MASKED_IPSUM, R_MASKED };

static enum role role_of(const struct wire_pkt *p, size_t o, int bit)
{
	size_t iphl = p->l4_off - p->l3_off;

	if (p->ip.version == 4) {
		if (o == 1 || o == 8 || o == 10 || o == 11)
			return R_MASKED_IPSUM;
	} else {
		/* Version nibble is bits 7..4 of byte 0; TC + flow label follow. */
		if ((o == 0 && bit < 4) || o == 1 || o == 2 || o == 3 || o == 7)
			return R_MASKED;
	}
	if (o == iphl + 6 || o == iphl + 7)
		return R_MASKED;
	if (o == iphl + WIRE_UDP_LEN + 4)
		return R_MASKED;
	return R_UNMASKED;
}

static void flip_check(const struct wire_pkt *orig, size_t len, size_t o_abs, int bit,
		       const char *file, unsigned idx)
{
	struct wire_pkt q;
	size_t o = o_abs - orig->l3_off;
	enum role role = role_of(orig, o, bit);
	enum wire_reason r;

	frame[o_abs] ^= (uint8_t)(1u << bit);
	r = parse(len, 0, &q);
	switch (role) {
	case R_MASKED_IPSUM:
		CHECK(r == WIRE_R_IPV4_CSUM, "%s #%u off %zu bit %d: %s", file, idx, o, bit,
		      wire_reason_str(r));
		r = parse(len, WIRE_PARSE_NO_IPV4_CSUM, &q);
		CHECK(r == WIRE_OK && q.icrc_ok, "%s #%u off %zu bit %d (masked, no ipsum): %s",
		      file, idx, o, bit, wire_reason_str(r));
		break;
	case R_MASKED:
		CHECK(r == WIRE_OK && q.icrc_ok, "%s #%u off %zu bit %d (masked): %s", file, idx,
		      o, bit, wire_reason_str(r));
		break;
	case R_UNMASKED: {
		CHECK(r != WIRE_OK, "%s #%u off %zu bit %d accepted", file, idx, o, bit);
		/* Bits past the UDP length field reach the ICRC check (the UDP
		 * destination port excepted: it makes the frame "not RoCE").
		 * Skipping the IPv4 checksum, so must the IPv4 ID and addresses. */
		size_t iphl = orig->l4_off - orig->l3_off;
		bool icrc_only = o >= iphl + 8 || o < iphl + 2;
		if (orig->ip.version == 4 && o < iphl)
			icrc_only = (o >= 4 && o < 6) || o >= 12;
		if (orig->ip.version == 6 && o < iphl)
			icrc_only = o >= 8;
		if (icrc_only) {
			r = parse(len, WIRE_PARSE_NO_IPV4_CSUM, &q);
			CHECK(r == WIRE_R_ICRC, "%s #%u off %zu bit %d: %s, want bad-icrc", file,
			      idx, o, bit, wire_reason_str(r));
		}
		break;
	}
	}
	frame[o_abs] ^= (uint8_t)(1u << bit);
}

int main(int argc, char **argv)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned idx = 0, roce = 0, other = 0, full = 0;
	uint8_t seen_op[256] = { 0 };
	pcap_t *pc;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE.pcap\n", argv[0]);
		return T_FAIL;
	}
	pc = pcap_open_offline(argv[1], errbuf);
	if (!pc) {
		fprintf(stderr, "%s\n", errbuf);
		return T_FAIL;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "%s: not Ethernet\n", argv[1]);
		pcap_close(pc);
		return T_SKIP;
	}
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		struct wire_pkt p, d;
		enum wire_reason r;
		uint8_t out[sizeof(frame)];
		size_t n = 0;

		idx++;
		CHECK(h->caplen == h->len && h->caplen <= sizeof(frame),
		      "#%u truncated capture %u/%u", idx, h->caplen, h->len);
		if (h->caplen > sizeof(frame))
			continue;
		memcpy(frame, data, h->caplen);
		r = parse(h->caplen, 0, &p);
		if (!wire_reason_is_roce(r)) {
			other++;
			continue;
		}
		roce++;
		CHECK(r == WIRE_OK, "%s #%u: %s", argv[1], idx, wire_reason_str(r));
		if (r != WIRE_OK)
			continue;
		CHECK(p.icrc_ok, "#%u icrc", idx);

		/* Rebuild from the parsed description. */
		d = p;
		CHECK(wire_build(&d, out, sizeof(out), 0, &n) == 0, "#%u build", idx);
		CHECK(n == p.frame_len, "#%u rebuilt length %zu vs %u", idx, n, p.frame_len);
		CHECK(n == p.frame_len && memcmp(out, frame, n) == 0, "#%u rebuilt bytes differ", idx);
		CHECK_EQ(wire_frame_len(&d), p.frame_len);

		/* Headers only + incremental ICRC over two payload fragments. */
		size_t hl = 0;
		CHECK(wire_build_headers(&d, out, sizeof(out), 0, &hl) == 0, "#%u headers", idx);
		CHECK(hl == p.payload_off && memcmp(out, frame, hl) == 0, "#%u header bytes", idx);
		struct wire_iov iov[2] = {
			{ p.payload, p.payload_len / 3 },
			{ p.payload + p.payload_len / 3, p.payload_len - p.payload_len / 3 },
		};
		uint8_t trailer[8];
		size_t tl = wire_finish_icrc(out, hl, iov, 2, trailer);
		CHECK(tl == (size_t)p.bth.pad + 4 &&
		      memcmp(trailer, frame + p.payload_off + p.payload_len, tl) == 0,
		      "#%u finish_icrc", idx);

		/* Single-bit flips. */
		bool all = idx <= FULL_FLIP_PACKETS || !seen_op[p.bth.opcode];
		seen_op[p.bth.opcode] = 1;
		full += all;
		for (size_t o = p.l3_off; o < p.frame_len; o++) {
			bool in_payload = o >= p.payload_off && o < p.payload_off + p.payload_len;
			/* Sampled packets: first and last 8 payload bytes only. */
			if (in_payload && !all && o >= p.payload_off + 8 &&
			    o + 8 < p.payload_off + p.payload_len)
				continue;
			for (int b = 0; b < 8; b++)
				flip_check(&p, h->caplen, o, b, argv[1], idx);
		}
		/* Every truncation is rejected, and (in an exact-size heap copy,
		 * so ASan sees it) never read past. */
		for (size_t cut = 0; all && cut < p.frame_len; cut++) {
			uint8_t *c = malloc(cut ? cut : 1);
			if (!c)
				break;
			memcpy(c, frame, cut);
			CHECK(wire_parse(c, cut, &d) != WIRE_OK, "#%u cut at %zu accepted", idx, cut);
			free(c);
		}
		/* Trailing Ethernet padding is not part of the packet. */
		for (size_t o = p.frame_len; o < h->caplen; o++) {
			frame[o] ^= 0xff;
			CHECK(parse(h->caplen, 0, &d) == WIRE_OK, "#%u trailer", idx);
			frame[o] ^= 0xff;
		}
	}
	CHECK(rc == PCAP_ERROR_BREAK, "%s: read error: %s", argv[1], pcap_geterr(pc));
	pcap_close(pc);
	CHECK(roce > 0, "%s: no RoCE frames", argv[1]);
	printf("%s: %u frames, %u RoCE, %u other, %u fully bit-flipped\n", argv[1], idx, roce,
	       other, full);
	return t_done("test_pcap");
}
