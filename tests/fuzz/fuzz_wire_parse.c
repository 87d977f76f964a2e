/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wire/ frame parser.
 *
 * Any input: wire_parse(), wire_parse_ex() with every flag and wire_parse_ip()
 * (and WIRE_PARSE_HDRS_ONLY on the first WIRE_HDRS_MAX bytes alone)
 * must return a known reason without reading outside the input (ASan) or
 * invoking undefined behaviour (UBSan). For an accepted frame:
 *   - rebuilding it with every KEEP flag gives back the same bytes;
 *   - rebuilding it from scratch (lengths, checksum, pad, ICRC recomputed)
 *     gives a frame that parses as WIRE_OK with the same fields;
 *   - wire_build_headers() + wire_finish_icrc() (the daemon's scatter path)
 *     gives the same bytes as wire_build().
 * A frame with a length fault (wire_reason_is_transport(): bad-pad,
 * payload-unexpected, payload-missing) is whole for the transport that
 * judges it: every header is decoded, the ICRC was verified, len_reason
 * says the fault, payload_len is what the pad count leaves of the body and
 * lies inside the frame, and the relaxed parses report the same fault.
 * CM MADs (wire/mad.c): the input itself and the payload of every accepted
 * packet to QP1 are decoded leniently and strictly; the reason is known, a
 * decoded MAD re-encodes to a MAD that decodes to the same fields, and a
 * strictly accepted MAD re-encodes byte for byte; cma_hdr decode likewise.
 * A violated property is a bug in wire/, reported with __builtin_trap() so
 * libFuzzer saves the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Frames up to the largest IPv4 packet plus L2 headers. */
#define FUZZ_CAP (65535 + 64)

static uint8_t fuzz_a[FUZZ_CAP], fuzz_b[FUZZ_CAP];

#define fuzz_assert(c) do { if (!(c)) { \
	fprintf(stderr, "fuzz_wire_parse: property failed: %s (line %d)\n", #c, __LINE__); \
	__builtin_trap(); } } while (0)

/* Every decoded field that a rebuild from scratch must reproduce (checksums,
 * lengths "as found", ICRC and pad contents may legitimately differ). */
static void fuzz_same_fields(const struct wire_pkt *x, const struct wire_pkt *y)
{
	fuzz_assert(!memcmp(x->dmac, y->dmac, 6) && !memcmp(x->smac, y->smac, 6));
	fuzz_assert(x->vlan == y->vlan && x->vlan_tci == y->vlan_tci);
	fuzz_assert(x->ethertype == y->ethertype);
	fuzz_assert(x->ip.version == y->ip.version);
	fuzz_assert(wire_gid_eq(&x->ip.src, &y->ip.src) && wire_gid_eq(&x->ip.dst, &y->ip.dst));
	fuzz_assert(x->ip.tos == y->ip.tos && x->ip.ttl == y->ip.ttl && x->ip.id == y->ip.id);
	fuzz_assert(x->ip.df == y->ip.df && x->ip.evil == y->ip.evil);
	fuzz_assert(x->ip.flow_label == y->ip.flow_label && x->ip.total_len == y->ip.total_len);
	fuzz_assert(x->udp.sport == y->udp.sport && x->udp.dport == y->udp.dport);
	fuzz_assert(x->udp.len == y->udp.len && x->udp.csum == y->udp.csum);
	fuzz_assert(x->bth.opcode == y->bth.opcode && x->bth.se == y->bth.se &&
		    x->bth.mig == y->bth.mig && x->bth.pad == y->bth.pad &&
		    x->bth.tver == y->bth.tver && x->bth.pkey == y->bth.pkey);
	fuzz_assert(x->bth.fecn == y->bth.fecn && x->bth.becn == y->bth.becn &&
		    x->bth.resv6 == y->bth.resv6 && x->bth.dqpn == y->bth.dqpn);
	fuzz_assert(x->bth.ackreq == y->bth.ackreq && x->bth.resv7 == y->bth.resv7 &&
		    x->bth.psn == y->bth.psn);
	fuzz_assert(x->op == y->op && x->hdrs == y->hdrs);
	fuzz_assert(x->reth.va == y->reth.va && x->reth.rkey == y->reth.rkey &&
		    x->reth.dma_len == y->reth.dma_len);
	fuzz_assert(x->aeth.syndrome == y->aeth.syndrome && x->aeth.msn == y->aeth.msn);
	fuzz_assert(x->atomiceth.va == y->atomiceth.va && x->atomiceth.rkey == y->atomiceth.rkey &&
		    x->atomiceth.swap_add == y->atomiceth.swap_add &&
		    x->atomiceth.compare == y->atomiceth.compare);
	fuzz_assert(x->atomicacketh.orig == y->atomicacketh.orig);
	fuzz_assert(x->deth.qkey == y->deth.qkey && x->deth.resv8 == y->deth.resv8 &&
		    x->deth.sqpn == y->deth.sqpn);
	fuzz_assert(x->imm == y->imm && x->ieth_rkey == y->ieth_rkey);
	fuzz_assert(x->xrc_srqn == y->xrc_srqn && x->xrceth_resv == y->xrceth_resv);
	fuzz_assert(!memcmp(x->cnp_resv, y->cnp_resv, sizeof(x->cnp_resv)));
	fuzz_assert(x->feth.plt == y->feth.plt && x->feth.sel == y->feth.sel &&
		    x->feth.resv == y->feth.resv);
	fuzz_assert(x->payload_len == y->payload_len);
	fuzz_assert(!x->payload_len || !memcmp(x->payload, y->payload, x->payload_len));
	fuzz_assert(x->l3_off == y->l3_off && x->l4_off == y->l4_off && x->bth_off == y->bth_off);
	fuzz_assert(x->payload_off == y->payload_off && x->icrc_off == y->icrc_off);
	fuzz_assert(x->frame_len == y->frame_len);
}

static void fuzz_mad(const uint8_t *mad, size_t len)
{
	static const unsigned flags[] = { 0, WIRE_MAD_STRICT };
	struct wire_mad_hdr h, h2;
	struct wire_cm_msg m, m2;
	struct wire_cma_hdr c;
	uint8_t out[WIRE_MAD_LEN], again[WIRE_MAD_LEN];

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		enum wire_mad_reason r = wire_mad_decode(mad, len, flags[i], &h, &m);

		fuzz_assert((unsigned)r < WIRE_MAD_R_NUM);
		fuzz_assert(strcmp(wire_mad_reason_str(r), "?") != 0);
		if (r != WIRE_MAD_OK)
			continue;
		fuzz_assert(len == WIRE_MAD_LEN && wire_cm_attr_known(m.attr));
		fuzz_assert(wire_cm_attr_name(m.attr) != NULL);
		fuzz_assert(wire_mad_encode(out, &h, &m) == 0);
		if (flags[i] & WIRE_MAD_STRICT)
			fuzz_assert(!memcmp(out, mad, WIRE_MAD_LEN));
		fuzz_assert(wire_mad_decode(out, sizeof(out), WIRE_MAD_STRICT, &h2, &m2) ==
			    (h.resv ? WIRE_MAD_R_HDR_RESERVED : WIRE_MAD_OK));
		if (h.resv) {
			/* a reserved header field is kept; without it the rest is strict */
			h.resv = 0;
			fuzz_assert(wire_mad_encode(out, &h, &m) == 0);
			fuzz_assert(wire_mad_decode(out, sizeof(out), WIRE_MAD_STRICT, &h2, &m2) ==
				    WIRE_MAD_OK);
		}
		fuzz_assert(!memcmp(&h, &h2, sizeof(h)) && !memcmp(&m, &m2, sizeof(m)));
		fuzz_assert(wire_mad_encode(again, &h2, &m2) == 0 && !memcmp(out, again, sizeof(out)));
		if (m.attr == WIRE_CM_ATTR_REQ || m.attr == WIRE_CM_ATTR_SIDR_REQ) {
			uint8_t ch[WIRE_CMA_HDR_LEN];

			if (!wire_cma_hdr_decode(m.pdata, wire_cm_pdata_len(m.attr), &c)) {
				fuzz_assert(wire_cma_hdr_encode(ch, &c) == 0);
				fuzz_assert(!memcmp(ch, m.pdata, sizeof(ch)));
			}
		}
	}
}

static void fuzz_accepted(const uint8_t *data, size_t size, const struct wire_pkt *p)
{
	const unsigned keep = WIRE_BUILD_KEEP_IPV4_CSUM | WIRE_BUILD_KEEP_LEN |
			      WIRE_BUILD_KEEP_PAD | WIRE_BUILD_KEEP_ICRC;
	struct wire_pkt q;
	size_t len = 0, hl = 0, tl;
	struct wire_iov iov;
	int rc;

	/* Parser invariants. */
	fuzz_assert(p->op && (p->op->flags & WIRE_OPF_VALID));
	fuzz_assert(p->icrc_ok);
	fuzz_assert(p->frame_len <= size && p->frame_len + p->trailer_len == size);
	fuzz_assert(p->icrc_off + WIRE_ICRC_LEN == p->frame_len);
	fuzz_assert(p->payload_off + p->payload_len + p->bth.pad + WIRE_ICRC_LEN == p->frame_len);
	fuzz_assert(p->bth.psn <= WIRE_PSN_MASK && p->bth.dqpn <= WIRE_QPN_MASK);
	fuzz_assert(wire_reason_is_roce(WIRE_OK));

	/* Byte-exact rebuild. */
	rc = wire_build(p, fuzz_a, sizeof(fuzz_a), keep, &len);
	fuzz_assert(rc == 0);
	fuzz_assert(len == p->frame_len && !memcmp(fuzz_a, data, len));

	/* Rebuild from scratch: must be valid and decode to the same fields. */
	rc = wire_build(p, fuzz_a, sizeof(fuzz_a), 0, &len);
	fuzz_assert(rc == 0 && len == p->frame_len && len == wire_frame_len(p));
	fuzz_assert(wire_parse(fuzz_a, len, &q) == WIRE_OK);
	fuzz_same_fields(p, &q);

	/* Scatter path: headers, then pad + ICRC over the payload fragment. */
	rc = wire_build_headers(p, fuzz_b, sizeof(fuzz_b), 0, &hl);
	fuzz_assert(rc == 0 && hl == wire_hdr_len(p) && !memcmp(fuzz_b, fuzz_a, hl));
	memcpy(fuzz_b + hl, p->payload, p->payload_len);
	iov.base = p->payload;
	iov.len = p->payload_len;
	tl = wire_finish_icrc(fuzz_b, hl, &iov, 1, fuzz_b + hl + p->payload_len);
	fuzz_assert(tl == (size_t)p->bth.pad + WIRE_ICRC_LEN);
	fuzz_assert(hl + p->payload_len + tl == len && !memcmp(fuzz_b, fuzz_a, len));

	/* A UDP checksum we compute must verify. */
	rc = wire_build(p, fuzz_a, sizeof(fuzz_a), WIRE_BUILD_UDP_CSUM, &len);
	fuzz_assert(rc == 0);
	fuzz_assert(wire_parse_ex(fuzz_a, len, WIRE_PARSE_UDP_CSUM, &q) == WIRE_OK);
}

/* A length fault: the packet is whole, its fault recorded (the transport
 * reads len_reason and payload_len, never past the frame). */
static void fuzz_len_fault(const uint8_t *data, size_t size, const struct wire_pkt *p,
			   enum wire_reason r)
{
	size_t body;

	fuzz_assert(wire_reason_is_roce(r));
	fuzz_assert(p->len_reason == r);
	fuzz_assert(p->op && (p->op->flags & WIRE_OPF_VALID) && p->icrc_ok);
	fuzz_assert(p->frame_len <= size && p->frame_len + p->trailer_len == size);
	fuzz_assert(p->payload_off == p->bth_off + p->op->hdr_len);
	fuzz_assert(p->payload == data + p->payload_off);
	body = p->frame_len - WIRE_ICRC_LEN - p->payload_off;
	fuzz_assert(p->payload_len == (p->bth.pad <= body ? body - p->bth.pad : 0));
	fuzz_assert(p->payload_off + p->payload_len + WIRE_ICRC_LEN <= p->frame_len);
	if (r == WIRE_R_PAYLOAD_MISSING)
		fuzz_assert(!p->payload_len && (p->op->flags & WIRE_OPF_PAYLOAD_REQUIRED));
	if (r == WIRE_R_PAYLOAD_UNEXPECTED)
		fuzz_assert(body && !(p->op->flags & WIRE_OPF_PAYLOAD));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned flag_sets[] = {
		WIRE_PARSE_NO_ICRC, WIRE_PARSE_NO_IPV4_CSUM, WIRE_PARSE_UDP_CSUM,
		WIRE_PARSE_NO_ICRC | WIRE_PARSE_NO_IPV4_CSUM | WIRE_PARSE_UDP_CSUM,
	};
	struct wire_pkt p, q;
	enum wire_reason r, r2;
	char buf[64];

	if (size > FUZZ_CAP)
		return -1; /* keep the input out of the corpus */

	r = wire_parse(data, size, &p);
	fuzz_assert((unsigned)r < WIRE_R_NUM);
	fuzz_assert(strcmp(wire_reason_str(r), "unknown") != 0);
	fuzz_assert(wire_reason_desc(r) != NULL);
	if (r == WIRE_OK)
		fuzz_accepted(data, size, &p);
	fuzz_assert(wire_reason_is_transport(r) ? p.len_reason == r : p.len_reason == WIRE_OK);
	if (wire_reason_is_transport(r))
		fuzz_len_fault(data, size, &p, r);
	if (r == WIRE_OK && wire_pkt_is_gsi(&p))
		fuzz_mad(p.payload, p.payload_len);
	fuzz_mad(data, size);

	/* Relaxed parses only skip checks: they accept whatever full checking does. */
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		r2 = wire_parse_ex(data, size, flag_sets[i], &q);
		fuzz_assert((unsigned)r2 < WIRE_R_NUM);
		if ((r == WIRE_OK || wire_reason_is_transport(r)) &&
		    !(flag_sets[i] & WIRE_PARSE_UDP_CSUM))
			fuzz_assert(r2 == r && q.len_reason == r && q.payload_len == p.payload_len);
	}

	/* Headers alone (zero-copy RX): the first WIRE_HDRS_MAX bytes in a
	 * block of exactly that size, the whole length given; nothing past
	 * the block is read, and a frame the full parse accepts parses the
	 * same from its headers. */
	static uint8_t hdrs[WIRE_HDRS_MAX];
	memset(hdrs, 0, sizeof(hdrs));
	memcpy(hdrs, data, size < sizeof(hdrs) ? size : sizeof(hdrs));
	r2 = wire_parse_ex(hdrs, size, WIRE_PARSE_HDRS_ONLY, &q);
	fuzz_assert((unsigned)r2 < WIRE_R_NUM);
	if (wire_parse_ex(data, size, WIRE_PARSE_NO_ICRC, &p) == WIRE_OK)
		fuzz_assert(r2 == WIRE_OK && q.payload_off == p.payload_off &&
			    q.payload_len == p.payload_len && q.bth.psn == p.bth.psn &&
			    q.frame_len == p.frame_len);

	/* The same bytes as a cooked/raw capture starting at the IP header. */
	r2 = wire_parse_ip(data, size, 0, &q);
	fuzz_assert((unsigned)r2 < WIRE_R_NUM);

	/* Formatting helpers take any byte. */
	if (size) {
		wire_aeth_syndrome_str(data[0], buf, sizeof(buf));
		fuzz_assert(memchr(buf, '\0', sizeof(buf)) != NULL);
		(void)wire_opcode_name(data[0]);
		(void)wire_nak_code_str(data[0]);
		(void)wire_rnr_timer_us(data[0]);
		(void)wire_retrans_timeout_ns(data[0]);
	}
	return 0;
}
