/* SPDX-License-Identifier: MIT */
/* IBTA 1.5 RDMA FLUSH (opcode 0x1C) byte for byte: the frame rxe (Linux
 * 6.2+) sends — BTH, FETH (placement type bits 3-0, selectivity level
 * bits 5-4), RETH, no payload — built by wire_build and taken apart by
 * wire_parse; the FETH's reserved bits survive a round trip; a FLUSH that
 * is short or carries payload is refused. */
#include <errno.h>
#include <string.h>

#include "../include/check.h"
#include "wire.h"

/* 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 FETH + 16 RETH, then the ICRC.
 * Written out by hand from the IBTA/rxe layout, not from wire/. */
static const uint8_t want_hdr[74] = {
	/* Ethernet */
	0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x08, 0x00,
	/* IPv4: len 20+8+12+4+16+4 = 64, id 0x0102, DF, TTL 64, UDP */
	0x45, 0x02, 0x00, 0x40, 0x01, 0x02, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,
	10, 0, 0, 1, 10, 0, 0, 2,
	/* UDP: sport 0xc123, dport 4791, len 44, csum 0 */
	0xc1, 0x23, 0x12, 0xb7, 0x00, 0x2c, 0x00, 0x00,
	/* BTH: opcode 0x1c, no SE/M, pad 0, tver 0, pkey ffff, dqpn 0x000123,
	 * AckReq, PSN 0x00abcd */
	0x1c, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xab, 0xcd,
	/* FETH: level 1 (whole MR) << 4 | type 3 (global | persistent) */
	0x00, 0x00, 0x00, 0x13,
	/* RETH: va, rkey, length */
	0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x50, 0x00, 0x00, 0x00, 0x56, 0x78,
	0x00, 0x01, 0x00, 0x00,
};

static void fill(struct wire_pkt *d)
{
	static const uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 0, 0, 2 };

	wire_pkt_init(d, 4);
	memcpy(d->dmac, "\x02\x00\x00\x00\x00\x0b", 6);
	memcpy(d->smac, "\x02\x00\x00\x00\x00\x0c", 6);
	wire_gid_from_ipv4(&d->ip.src, a);
	wire_gid_from_ipv4(&d->ip.dst, b);
	d->ip.id = 0x0102;
	d->ip.tos = WIRE_ECN_ECT0;
	d->udp.sport = 0xc123;
	d->bth.opcode = WIRE_OP_RC_FLUSH;
	d->bth.dqpn = 0x123;
	d->bth.ackreq = true;
	d->bth.psn = 0xabcd;
	d->feth.plt = WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT;
	d->feth.sel = WIRE_FLUSH_MR;
	d->reth.va = 0x00007f0012345000ull;
	d->reth.rkey = 0x5678;
	d->reth.dma_len = 0x10000;
}

int main(void)
{
	uint8_t buf[256];
	struct wire_pkt d, p;
	size_t len = 0;

	fill(&d);
	CHECK_EQ(wire_build(&d, buf, sizeof(buf), 0, &len), 0);
	CHECK_EQ(len, sizeof(want_hdr) + WIRE_ICRC_LEN);
	/* the IPv4 checksum is the only header field not written out above */
	buf[24] = buf[25] = 0;
	CHECK(!memcmp(buf, want_hdr, sizeof(want_hdr)), "FLUSH headers byte for byte");
	CHECK_EQ(wire_build(&d, buf, sizeof(buf), 0, &len), 0);

	CHECK_EQ(wire_parse(buf, len, &p), WIRE_OK);
	CHECK(p.icrc_ok, "icrc");
	CHECK(p.hdrs == (WIRE_HDR_BTH | WIRE_HDR_FETH | WIRE_HDR_RETH), "hdrs %x", p.hdrs);
	CHECK_EQ(p.feth.plt, 3);
	CHECK_EQ(p.feth.sel, WIRE_FLUSH_MR);
	CHECK_EQ(p.feth.resv, 0);
	CHECK(p.reth.va == d.reth.va && p.reth.rkey == 0x5678 && p.reth.dma_len == 0x10000, "reth");
	CHECK_EQ(p.payload_len, 0);
	CHECK_EQ(p.payload_off, p.bth_off + 32);

	/* reserved FETH bits are kept: decode + encode gives the same bytes */
	static const uint8_t raw[4] = { 0xde, 0xad, 0xbe, 0xe1 };
	struct wire_feth f;
	uint8_t out[4];

	wire_feth_decode(raw, &f);
	CHECK(f.plt == 1 && f.sel == 2 && f.resv == 0xdeadbee1u >> 6, "feth decode");
	CHECK(!wire_feth_valid(&f), "level 2 is reserved");
	wire_feth_encode(out, &f);
	CHECK(!memcmp(raw, out, 4), "feth round trip");
	f.sel = WIRE_FLUSH_RANGE;
	CHECK(wire_feth_valid(&f), "type global, range");
	f.plt = 0;
	CHECK(!wire_feth_valid(&f), "no placement type");
	f.plt = 4;
	CHECK(!wire_feth_valid(&f), "reserved placement type bit");

	/* a rebuilt parse is the same frame (reserved FETH bits included) */
	d.feth.resv = 0x2aaaaaa;
	CHECK_EQ(wire_build(&d, buf, sizeof(buf), 0, &len), 0);
	CHECK_EQ(wire_parse(buf, len, &p), WIRE_OK);
	uint8_t again[256];
	size_t len2 = 0;
	CHECK_EQ(wire_build(&p, again, sizeof(again), WIRE_BUILD_KEEP_IPV4_CSUM, &len2), 0);
	CHECK(len2 == len && !memcmp(buf, again, len), "rebuild");

	/* no payload on a FLUSH, from either side */
	d.payload = buf;
	d.payload_len = 4;
	CHECK_EQ(wire_build(&d, again, sizeof(again), 0, &len2), -EINVAL);
	d.payload_len = 0;
	/* a FLUSH cut inside its RETH: headers longer than the datagram */
	d.bth.opcode = WIRE_OP_RC_READ_REQ; /* BTH + RETH: 4 bytes short of a FLUSH */
	CHECK_EQ(wire_build(&d, buf, sizeof(buf), 0, &len), 0);
	buf[WIRE_ETH_LEN + WIRE_IPV4_LEN + WIRE_UDP_LEN] = WIRE_OP_RC_FLUSH;
	CHECK_EQ(wire_parse_ex(buf, len, WIRE_PARSE_NO_ICRC, &p), WIRE_R_TRUNC_EXT);
	/* a WRITE Only with 8 bytes of payload read as a FLUSH: 4 bytes
	 * beyond its RETH */
	d.bth.opcode = WIRE_OP_RC_WRITE_ONLY;
	d.payload = (const uint8_t *)"abcdefgh";
	d.payload_len = 8;
	CHECK_EQ(wire_build(&d, buf, sizeof(buf), 0, &len), 0);
	buf[WIRE_ETH_LEN + WIRE_IPV4_LEN + WIRE_UDP_LEN] = WIRE_OP_RC_FLUSH;
	CHECK_EQ(wire_parse_ex(buf, len, WIRE_PARSE_NO_ICRC, &p), WIRE_R_PAYLOAD_UNEXPECTED);
	return t_done("wire-flush");
}
