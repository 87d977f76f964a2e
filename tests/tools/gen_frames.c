/* SPDX-License-Identifier: MIT */
/*
 * gen_frames OUT.pcap OUT.expect
 *
 * Builds, with wire/, frames for every opcode in the opcode table (RC, UC,
 * UD, CNP) over IPv4 and IPv6, with several payload sizes (0, pads 1..3,
 * multi-word, MTU-sized) and every extension header variant, and writes
 * them with pcapw. OUT.expect gets one line per frame with the values an
 * independent decoder must find (tshark field names; see interop_check.py).
 * Each frame is also re-parsed with wire_parse() and must come back equal.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcapw.h"
#include "wire.h"

#define tool_fail(...) do { fprintf(stderr, "gen_frames: FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define tool_check(c) do { if (!(c)) tool_fail("%s", #c); } while (0)

static uint8_t tool_payload[4096];
static uint8_t tool_frame[8192];

struct tool_gen {
	struct pcapw *w;
	FILE *exp;
	unsigned n;
	uint64_t ts;
};

/* AETH syndromes to cycle through: ACK with credits, unlimited, RNR NAK, every NAK code. */
static const uint8_t tool_syndromes[] = {
	0x1f, 0x00, 0x0a, 0x20 | 1, 0x20 | 14, 0x20 | 0, 0x60, 0x61, 0x62, 0x63, 0x64,
};

static void tool_emit(struct tool_gen *g, const struct wire_pkt *d, unsigned flags)
{
	const struct wire_opcode_info *op = wire_opcode_info(d->bth.opcode);
	struct wire_pkt p;
	size_t len = 0;
	enum wire_reason r;
	int rc;

	rc = wire_build(d, tool_frame, sizeof(tool_frame), flags, &len);
	if (rc)
		tool_fail("wire_build opcode 0x%02x v%u len %u: %d", d->bth.opcode,
			  d->ip.version, d->payload_len, rc);
	tool_check(len == wire_frame_len(d));

	/* Round trip through our own parser first: a frame wire/ builds must
	 * be one wire/ accepts, with every field intact. */
	r = wire_parse(tool_frame, len, &p);
	if (r != WIRE_OK)
		tool_fail("frame %u (opcode 0x%02x): wire_parse: %s", g->n + 1, d->bth.opcode,
			  wire_reason_str(r));
	tool_check(p.bth.opcode == d->bth.opcode && p.bth.dqpn == d->bth.dqpn);
	tool_check(p.bth.psn == d->bth.psn && p.bth.pad == wire_pad(d->payload_len));
	tool_check(p.payload_len == d->payload_len);
	tool_check(!d->payload_len || !memcmp(p.payload, d->payload, d->payload_len));
	tool_check(p.icrc_ok);
	tool_check(!(op->hdrs & WIRE_HDR_FETH) ||
		   (p.feth.plt == d->feth.plt && p.feth.sel == d->feth.sel && !p.feth.resv));

	rc = pcapw_write(g->w, tool_frame, len, g->ts);
	if (rc)
		tool_fail("pcapw_write: %s", strerror(-rc));
	g->ts += 1000;
	g->n++;

	/* Expected decode. Numbers in hex or decimal; byte fields as bare hex. */
	FILE *f = g->exp;
	const uint8_t *icrc = tool_frame + p.icrc_off;

	fprintf(f, "frame=%u ip=%u icrc=%02x%02x%02x%02x", g->n, d->ip.version,
		icrc[0], icrc[1], icrc[2], icrc[3]);
	fprintf(f, " infiniband.bth.opcode=%u infiniband.bth.destqp=0x%06" PRIx32
		" infiniband.bth.psn=%" PRIu32 " infiniband.bth.padcnt=%u"
		" infiniband.bth.se=%u infiniband.bth.a=%u infiniband.bth.m=%u"
		" infiniband.bth.p_key=%u infiniband.bth.tver=0",
		d->bth.opcode, d->bth.dqpn, d->bth.psn, wire_pad(d->payload_len),
		d->bth.se, d->bth.ackreq, d->bth.mig, d->bth.pkey);
	/* tshark shows the ICRC bytes read big-endian */
	fprintf(f, " infiniband.invariant.crc=0x%02x%02x%02x%02x",
		icrc[0], icrc[1], icrc[2], icrc[3]);
	fprintf(f, " udp.srcport=%u udp.dstport=%u", d->udp.sport, d->udp.dport);
	if (d->vlan)
		fprintf(f, " vlan.id=%u", d->vlan_tci & 0xfff);
	if (d->ip.version == 4)
		fprintf(f, " ip.dsfield.ecn=%u ip.ttl=%u ip.id=0x%04x ip.flags.df=%u",
			d->ip.tos & 3, d->ip.ttl, d->ip.id, d->ip.df);
	else
		fprintf(f, " ipv6.tclass.ecn=%u ipv6.hlim=%u ipv6.flow=0x%05" PRIx32,
			d->ip.tos & 3, d->ip.ttl, d->ip.flow_label);
	if (op->hdrs & WIRE_HDR_RETH)
		fprintf(f, " infiniband.reth.va=0x%" PRIx64 " infiniband.reth.r_key=0x%" PRIx32
			" infiniband.reth.dmalen=%" PRIu32, d->reth.va, d->reth.rkey, d->reth.dma_len);
	if (op->hdrs & WIRE_HDR_ATOMICETH)
		fprintf(f, " infiniband.reth.va=0x%" PRIx64 " infiniband.reth.r_key=0x%" PRIx32
			" infiniband.atomiceth.swapdt=0x%" PRIx64 " infiniband.atomiceth.cmpdt=0x%" PRIx64,
			d->atomiceth.va, d->atomiceth.rkey, d->atomiceth.swap_add,
			d->atomiceth.compare);
	if (op->hdrs & WIRE_HDR_AETH)
		fprintf(f, " infiniband.aeth.syndrome=0x%02x infiniband.aeth.msn=%" PRIu32,
			d->aeth.syndrome, d->aeth.msn);
	if (op->hdrs & WIRE_HDR_ATOMICACKETH)
		fprintf(f, " infiniband.atomicacketh.origremdt=0x%" PRIx64, d->atomicacketh.orig);
	if (op->hdrs & WIRE_HDR_DETH)
		fprintf(f, " infiniband.deth.q_key=0x%" PRIx32 " infiniband.deth.srcqp=0x%" PRIx32,
			d->deth.qkey, d->deth.sqpn);
	if (op->hdrs & WIRE_HDR_IMMDT)
		fprintf(f, " infiniband.immdt=%08" PRIx32, d->imm);
	if (op->hdrs & WIRE_HDR_IETH)
		fprintf(f, " infiniband.ieth=%08" PRIx32, d->ieth_rkey);
	/* tshark's Info column name; spaces as '_' to keep the format one token per key */
	fprintf(f, " info=");
	for (const char *c = op->tshark; *c; c++)
		fputc(*c == ' ' ? '_' : *c, f);
	fputc('\n', f);
}

/* Payload sizes worth covering for an opcode. */
static unsigned tool_sizes(const struct wire_opcode_info *op, uint32_t *out)
{
	static const uint32_t last[] = { 0, 1, 2, 3, 4, 61, 1024 };
	static const uint32_t mid[] = { 4, 256, 1024 };
	unsigned n = 0;

	if (!(op->flags & WIRE_OPF_PAYLOAD)) {
		out[n++] = 0;
	} else if (op == wire_opcode_info(WIRE_OP_RC_ATOMIC_WRITE)) {
		out[n++] = 8; /* what a responder executes (uroce-pcap check) */
	} else if (op->flags & WIRE_OPF_PAYLOAD_REQUIRED) {
		/* FIRST/MIDDLE: whole MTU chunks, never padded */
		for (unsigned i = 0; i < sizeof(mid) / sizeof(mid[0]); i++)
			out[n++] = mid[i];
	} else {
		for (unsigned i = 0; i < sizeof(last) / sizeof(last[0]); i++)
			out[n++] = last[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	struct tool_gen g = { .ts = 1763800000ull * 1000000000ull };
	unsigned variant = 0;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: gen_frames OUT.pcap OUT.expect\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(tool_payload); i++)
		tool_payload[i] = (uint8_t)(i * 31 + 7);
	rc = pcapw_open(&g.w, argv[1], PCAPW_NSEC);
	if (rc)
		tool_fail("pcapw_open %s: %s", argv[1], strerror(-rc));
	g.exp = fopen(argv[2], "w");
	if (!g.exp)
		tool_fail("%s: %s", argv[2], strerror(errno));
	fprintf(g.exp, "# generated by gen_frames: expected decode of %s\n", argv[1]);

	for (unsigned ver = 4; ver <= 6; ver += 2) {
		for (unsigned opc = 0; opc < 256; opc++) {
			const struct wire_opcode_info *op = wire_opcode_info((uint8_t)opc);
			uint32_t sizes[8];
			unsigned ns;

			if (!(op->flags & WIRE_OPF_VALID))
				continue;
			ns = tool_sizes(op, sizes);
			for (unsigned s = 0; s < ns; s++, variant++) {
				struct wire_pkt d;
				unsigned flags = 0;
				static const uint8_t v4a[4] = { 10, 77, 0, 12 }, v4b[4] = { 10, 77, 0, 11 };

				wire_pkt_init(&d, (uint8_t)ver);
				memcpy(d.smac, "\x02\x00\x00\x00\x00\x0c", 6);
				memcpy(d.dmac, "\x02\x00\x00\x00\x00\x0b", 6);
				if (ver == 4) {
					wire_gid_from_ipv4(&d.ip.src, v4a);
					wire_gid_from_ipv4(&d.ip.dst, v4b);
					d.ip.id = (uint16_t)(0x1000 + variant);
				} else {
					tool_check(wire_gid_parse(&d.ip.src, "fd00:77::12"));
					tool_check(wire_gid_parse(&d.ip.dst, "fe80::5054:ff:fe4d:b"));
					d.ip.flow_label = (variant * 0x1357u) & 0xfffff;
				}
				/* ECN: mostly ECT(0) as RoCE sends, sometimes CE */
				d.ip.tos = (uint8_t)((variant % 5 == 0) ? WIRE_ECN_CE : WIRE_ECN_ECT0);
				if (variant % 7 == 3) {
					d.vlan = true;
					d.vlan_tci = (uint16_t)(0x2000 | (100 + variant % 50));
				}
				d.bth.opcode = (uint8_t)opc;
				d.bth.dqpn = opc == WIRE_OP_CNP ? 0x000011 : (0x11 + variant * 0x10001u) & 0xffffff;
				/* PSNs near the 24-bit wrap too */
				d.bth.psn = opc == WIRE_OP_CNP ? 0 : (0xfffffau + variant * 3) & 0xffffff;
				d.bth.ackreq = (op->flags & WIRE_OPF_REQ) && (op->flags & WIRE_OPF_LAST);
				d.bth.se = (op->flags & WIRE_OPF_COMP) && (variant & 1);
				d.bth.mig = variant % 3 == 0 && opc != WIRE_OP_CNP;
				if (opc == WIRE_OP_CNP) {
					d.bth.becn = true;
					d.bth.pkey = WIRE_PKEY_DEFAULT;
				} else {
					d.bth.pkey = variant % 4 == 1 ? 0x8001 : WIRE_PKEY_DEFAULT;
					d.bth.fecn = variant % 11 == 4;
				}
				d.udp.sport = wire_udp_sport(d.bth.dqpn);
				d.reth.va = 0x00007f0012340000ull + variant * 0x1000u;
				d.reth.rkey = 0x1234u + variant;
				d.reth.dma_len = sizes[s] * 3;
				d.aeth.syndrome = tool_syndromes[variant % sizeof(tool_syndromes)];
				d.aeth.msn = (0xfffffeu + variant) & 0xffffff;
				d.atomiceth.va = 0x00007f00abcd0000ull + variant * 8;
				d.atomiceth.rkey = 0x5678u + variant;
				d.atomiceth.swap_add = 0x1122334455667788ull ^ variant;
				d.atomiceth.compare = opc == WIRE_OP_RC_FETCH_ADD ? 0 : 0x8877665544332211ull;
				d.atomicacketh.orig = 0xdeadbeef00000000ull | variant;
				d.deth.qkey = variant & 1 ? 0x11111111u : 0x80010000u;
				d.deth.sqpn = (0x12 + variant) & 0xffffff;
				d.imm = 0xcafe0000u | variant;
				d.ieth_rkey = 0x00abc000u | variant;
				d.feth.plt = (uint8_t)(1 + (variant + ver) % 3);
				d.feth.sel = (uint8_t)(ver == 4);
				if (opc == WIRE_OP_RC_FLUSH)
					d.reth.dma_len = 0x10000u + variant;
				if (opc == WIRE_OP_RC_ATOMIC_WRITE)
					d.reth.dma_len = 8;
				d.xrc_srqn = (0x00c000u + variant) & 0xffffff;
				d.payload = tool_payload;
				d.payload_len = sizes[s];
				/* IPv6 needs a UDP checksum (RFC 8200); IPv4 sends 0 like
				 * rxe, except every third frame so tshark can verify ours. */
				if (ver == 6 || variant % 3 == 1)
					flags |= WIRE_BUILD_UDP_CSUM;
				tool_emit(&g, &d, flags);
			}
		}
	}
	if (fclose(g.exp) != 0)
		tool_fail("%s: %s", argv[2], strerror(errno));
	rc = pcapw_close(g.w);
	if (rc)
		tool_fail("pcapw_close: %s", strerror(-rc));
	printf("gen_frames: %u frames\n", g.n);
	return 0;
}
