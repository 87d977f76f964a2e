/* SPDX-License-Identifier: MIT */
/* Builder -> parser -> builder round trip for every opcode in the table,
 * IPv4 and IPv6, with and without VLAN, payload lengths covering all pads. */
#include <errno.h>
#include <string.h>

#include "../include/check.h"
#include "wire.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_desc(struct wire_pkt *d, uint8_t opc, int v, bool vlan)
{
	uint8_t a4[4] = { 10, 0, (uint8_t)rnd64(), 1 }, b4[4] = { 10, 0, 0, (uint8_t)rnd64() };

	wire_pkt_init(d, (uint8_t)v);
	for (int i = 0; i < 6; i++) {
		d->dmac[i] = (uint8_t)rnd64();
		d->smac[i] = (uint8_t)rnd64();
	}
	d->vlan = vlan;
	d->vlan_tci = (uint16_t)rnd64();
	if (v == 4) {
		wire_gid_from_ipv4(&d->ip.src, a4);
		wire_gid_from_ipv4(&d->ip.dst, b4);
		d->ip.id = (uint16_t)rnd64();
		d->ip.df = rnd64() & 1;
	} else {
		for (int i = 0; i < 16; i++) {
			d->ip.src.raw[i] = (uint8_t)rnd64();
			d->ip.dst.raw[i] = (uint8_t)rnd64();
		}
		d->ip.src.raw[0] = 0x20; /* not IPv4-mapped */
		d->ip.dst.raw[0] = 0xfe;
		d->ip.flow_label = (uint32_t)rnd64() & 0xfffff;
	}
	d->ip.tos = (uint8_t)rnd64();
	d->ip.ttl = (uint8_t)rnd64();
	d->udp.sport = wire_udp_sport((uint32_t)rnd64());
	d->bth.opcode = opc;
	d->bth.se = rnd64() & 1;
	d->bth.mig = rnd64() & 1;
	d->bth.pkey = (uint16_t)rnd64();
	d->bth.fecn = rnd64() & 1;
	d->bth.becn = rnd64() & 1;
	d->bth.dqpn = (uint32_t)rnd64() & WIRE_QPN_MASK;
	d->bth.ackreq = rnd64() & 1;
	d->bth.psn = (uint32_t)rnd64() & WIRE_PSN_MASK;
	d->reth.va = rnd64();
	d->reth.rkey = (uint32_t)rnd64();
	d->reth.dma_len = (uint32_t)rnd64();
	d->aeth.syndrome = (uint8_t)rnd64();
	d->aeth.msn = (uint32_t)rnd64() & WIRE_PSN_MASK;
	d->atomiceth.va = rnd64();
	d->atomiceth.rkey = (uint32_t)rnd64();
	d->atomiceth.swap_add = rnd64();
	d->atomiceth.compare = rnd64();
	d->atomicacketh.orig = rnd64();
	d->deth.qkey = (uint32_t)rnd64();
	d->deth.sqpn = (uint32_t)rnd64() & WIRE_QPN_MASK;
	d->imm = (uint32_t)rnd64();
	d->ieth_rkey = (uint32_t)rnd64();
	if (opc == WIRE_OP_CNP) {
		d->bth.becn = true;
		d->bth.pkey = 0xffff;
		d->bth.psn = 0;
	}
}

/* Fields of the description that the parser must give back. */
static void compare(const struct wire_pkt *d, const struct wire_pkt *p, const char *ctx)
{
	const struct wire_opcode_info *op = wire_opcode_info(d->bth.opcode);

	CHECK(!memcmp(d->dmac, p->dmac, 6) && !memcmp(d->smac, p->smac, 6), "%s macs", ctx);
	CHECK(d->vlan == p->vlan && (!d->vlan || d->vlan_tci == p->vlan_tci), "%s vlan", ctx);
	CHECK(p->ip.version == d->ip.version, "%s version", ctx);
	CHECK(wire_gid_eq(&d->ip.src, &p->ip.src) && wire_gid_eq(&d->ip.dst, &p->ip.dst), "%s addrs", ctx);
	CHECK(d->ip.tos == p->ip.tos && d->ip.ttl == p->ip.ttl, "%s tos/ttl", ctx);
	if (d->ip.version == 4)
		CHECK(d->ip.id == p->ip.id && d->ip.df == p->ip.df, "%s id/df", ctx);
	else
		CHECK(d->ip.flow_label == p->ip.flow_label, "%s flow label", ctx);
	CHECK(d->udp.sport == p->udp.sport && p->udp.dport == 4791 && p->udp.csum == d->udp.csum,
	      "%s udp", ctx);
	CHECK(d->bth.opcode == p->bth.opcode && d->bth.se == p->bth.se && d->bth.mig == p->bth.mig &&
	      d->bth.pkey == p->bth.pkey && d->bth.fecn == p->bth.fecn &&
	      d->bth.becn == p->bth.becn && d->bth.dqpn == p->bth.dqpn &&
	      d->bth.ackreq == p->bth.ackreq && d->bth.psn == p->bth.psn && p->bth.tver == 0,
	      "%s bth", ctx);
	CHECK(p->bth.pad == wire_pad(d->payload_len), "%s pad", ctx);
	CHECK(p->op == op && p->hdrs == op->hdrs, "%s hdrs", ctx);
	if (op->hdrs & WIRE_HDR_RETH)
		CHECK(!memcmp(&d->reth, &p->reth, sizeof(d->reth)), "%s reth", ctx);
	if (op->hdrs & WIRE_HDR_AETH)
		CHECK(d->aeth.syndrome == p->aeth.syndrome && d->aeth.msn == p->aeth.msn, "%s aeth", ctx);
	if (op->hdrs & WIRE_HDR_ATOMICETH)
		CHECK(d->atomiceth.va == p->atomiceth.va && d->atomiceth.rkey == p->atomiceth.rkey &&
		      d->atomiceth.swap_add == p->atomiceth.swap_add &&
		      d->atomiceth.compare == p->atomiceth.compare, "%s atomiceth", ctx);
	if (op->hdrs & WIRE_HDR_ATOMICACKETH)
		CHECK(d->atomicacketh.orig == p->atomicacketh.orig, "%s atomicacketh", ctx);
	if (op->hdrs & WIRE_HDR_DETH)
		CHECK(d->deth.qkey == p->deth.qkey && d->deth.sqpn == p->deth.sqpn, "%s deth", ctx);
	if (op->hdrs & WIRE_HDR_IMMDT)
		CHECK(d->imm == p->imm, "%s imm", ctx);
	if (op->hdrs & WIRE_HDR_IETH)
		CHECK(d->ieth_rkey == p->ieth_rkey, "%s ieth", ctx);
	CHECK(p->payload_len == d->payload_len &&
	      (!d->payload_len || !memcmp(p->payload, d->payload, d->payload_len)), "%s payload", ctx);
	CHECK(p->icrc_ok, "%s icrc", ctx);
	CHECK(p->l3_off == (d->vlan ? 18u : 14u) && p->l4_off == p->l3_off + (d->ip.version == 4 ? 20u : 40u) &&
	      p->bth_off == p->l4_off + 8 && p->payload_off == p->bth_off + op->hdr_len &&
	      p->icrc_off == p->payload_off + p->payload_len + p->bth.pad &&
	      p->frame_len == p->icrc_off + 4 && p->trailer_len == 0, "%s offsets", ctx);
}

int main(void)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 64, 255, 1024, 4096 };
	static uint8_t payload[4096], buf[8192], buf2[8192], hdr[256];
	unsigned built = 0;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)rnd64();

	for (unsigned opc = 0; opc < 256; opc++) {
		const struct wire_opcode_info *op = wire_opcode_info((uint8_t)opc);
		struct wire_pkt d, p, q;
		size_t n, n2, hl;
		char ctx[96];

		if (!(op->flags & WIRE_OPF_VALID)) {
			wire_pkt_init(&d, 4);
			d.bth.opcode = (uint8_t)opc;
			CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "undefined 0x%02x", opc);
			continue;
		}
		for (int v = 4; v <= 6; v += 2) {
			for (int vlan = 0; vlan < 2; vlan++) {
				for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
					uint32_t len = lens[li];

					if (!(op->flags & WIRE_OPF_PAYLOAD) && len)
						continue;
					if ((op->flags & WIRE_OPF_PAYLOAD_REQUIRED) && !len)
						continue;
					/* First/middle packets are a whole MTU: no pad. */
					if (!(op->flags & WIRE_OPF_LAST) && wire_pad(len))
						continue;
					snprintf(ctx, sizeof(ctx), "%s v%d vlan%d len%u", op->name, v, vlan, len);
					random_desc(&d, (uint8_t)opc, v, vlan);
					d.payload = payload;
					d.payload_len = len;
					CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == 0, "%s build", ctx);
					CHECK(n == wire_frame_len(&d), "%s frame_len", ctx);
					enum wire_reason r = wire_parse(buf, n, &p);
					CHECK(r == WIRE_OK, "%s parse: %s", ctx, wire_reason_str(r));
					if (r != WIRE_OK)
						continue;
					compare(&d, &p, ctx);
					/* parse -> build reproduces the bytes. */
					q = p;
					CHECK(wire_build(&q, buf2, sizeof(buf2), 0, &n2) == 0 && n2 == n &&
					      !memcmp(buf, buf2, n), "%s rebuild", ctx);
					/* headers + incremental ICRC give the same frame. */
					CHECK(wire_build_headers(&d, hdr, sizeof(hdr), 0, &hl) == 0 &&
					      hl == wire_hdr_len(&d) && hl == p.payload_off &&
					      !memcmp(hdr, buf, hl), "%s headers", ctx);
					struct wire_iov iov[3] = {
						{ payload, len / 2 }, { payload + len / 2, 0 },
						{ payload + len / 2, len - len / 2 },
					};
					uint8_t tr[8];
					size_t tl = wire_finish_icrc(hdr, hl, iov, 3, tr);
					CHECK(tl == (size_t)p.bth.pad + 4 && !memcmp(tr, buf + hl + len, tl),
					      "%s finish_icrc", ctx);
					/* Headers alone (zero-copy RX: payload, pad and ICRC in
					 * other segments): nothing past WIRE_HDRS_MAX is read (a
					 * heap block of exactly that size: ASan sees overreads) */
					uint8_t *hb = malloc(WIRE_HDRS_MAX);
					CHECK(hb && hl <= WIRE_HDRS_MAX, "%s hdrs max", ctx);
					if (hb) {
						memset(hb, 0xee, WIRE_HDRS_MAX);
						memcpy(hb, buf, hl);
						r = wire_parse_ex(hb, n, WIRE_PARSE_HDRS_ONLY, &q);
						CHECK(r == WIRE_OK && q.payload_off == hl && q.payload_len == len &&
						      q.frame_len == n && q.trailer_len == 0 &&
						      q.bth.pad == p.bth.pad && q.bth.psn == p.bth.psn &&
						      q.hdrs == p.hdrs && q.icrc == 0 && !q.icrc_ok &&
						      !memcmp(&q.reth, &p.reth, sizeof(q.reth)) &&
						      q.imm == p.imm && q.deth.qkey == p.deth.qkey,
						      "%s hdrs only: %s", ctx, wire_reason_str(r));
						free(hb);
					}
					/* Ethernet padding / FCS after the packet is ignored. */
					memset(buf + n, 0xa5, 8);
					r = wire_parse(buf, n + 8, &p);
					CHECK(r == WIRE_OK && p.trailer_len == 8 && p.frame_len == n, "%s trailer", ctx);
					/* Real UDP checksum option. */
					CHECK(wire_build(&d, buf2, sizeof(buf2), WIRE_BUILD_UDP_CSUM, &n2) == 0, "%s ucsum", ctx);
					r = wire_parse_ex(buf2, n2, WIRE_PARSE_UDP_CSUM, &q);
					CHECK(r == WIRE_OK && q.udp.csum != 0, "%s udp csum: %s", ctx, wire_reason_str(r));
					/* No room. */
					CHECK(wire_build(&d, buf2, n - 1, 0, &n2) == -ENOSPC, "%s enospc", ctx);
					CHECK(wire_build_headers(&d, buf2, hl - 1, 0, &n2) == -ENOSPC, "%s hdr enospc", ctx);
					/* Parse from the IP header. */
					r = wire_parse_ip(buf + p.l3_off, n - p.l3_off, 0, &q);
					CHECK(r == WIRE_OK && q.l3_off == 0 && q.payload_len == len &&
					      q.bth.psn == d.bth.psn, "%s parse_ip: %s", ctx, wire_reason_str(r));
					built++;
				}
			}
		}
	}
	/* Builder argument errors. */
	struct wire_pkt d;
	size_t n;
	wire_pkt_init(&d, 4);
	d.bth.opcode = WIRE_OP_RC_ACK;
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "IPv4 needs mapped GIDs");
	uint8_t a[4] = { 1, 2, 3, 4 };
	wire_gid_from_ipv4(&d.ip.src, a);
	wire_gid_from_ipv4(&d.ip.dst, a);
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == 0 && n == 62, "ACK is 62 bytes");
	d.payload = payload;
	d.payload_len = 4;
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "payload on ACK");
	d.bth.opcode = WIRE_OP_RC_SEND_ONLY;
	d.payload = NULL;
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "NULL payload");
	d.ip.version = 5;
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "version 5");
	d.ip.version = 4;
	d.payload = payload;
	d.payload_len = 70000;
	CHECK(wire_build(&d, buf, sizeof(buf), 0, &n) == -EINVAL, "too long");
	CHECK(wire_finish_icrc(buf, 10, NULL, 0, buf2) == 0, "finish_icrc short");
	printf("%u frames built and parsed\n", built);
	return t_done("test_roundtrip");
}
