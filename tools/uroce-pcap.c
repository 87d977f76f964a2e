/* SPDX-License-Identifier: MIT */
/*
 * uroce-pcap: decode and check RoCEv2 captures with the wire/ parser.
 *
 *   uroce-pcap decode FILE            one line per frame
 *   uroce-pcap check FILE...          summary; exit 0 only if every RoCEv2 frame is valid,
 *                                     every CM MAD (UD SEND to QP1) is well formed and
 *                                     every ATOMIC WRITE / FLUSH is one a responder executes
 *   uroce-pcap corrupt IN OUT ...     write a damaged copy (for tests)
 *
 * Exit status: 0 ok, 1 invalid RoCEv2 frames found (check), 2 usage, file or
 * format errors. Reads classic pcap and pcapng, µs or ns time stamps, link
 * types Ethernet, Linux cooked (SLL, SLL2) and raw IP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "pcapw.h"
#include "wire.h"

#define TOOL_EXIT_OK      0
#define TOOL_EXIT_INVALID 1
#define TOOL_EXIT_ERROR   2

/* Link-layer header lengths of the Linux cooked capture formats. */
#define TOOL_SLL_LEN  16
#define TOOL_SLL2_LEN 20

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif

static const char *tool_prog = "uroce-pcap";

static void tool_usage(FILE *f)
{
	fprintf(f,
		"usage: %s decode FILE\n"
		"       %s check FILE...\n"
		"       %s corrupt IN OUT [--packet N] [--flip OFF:BIT]... [--set OFF:VAL]...\n"
		"                  [--truncate LEN] [--fix-ipv4-csum] [--fix-icrc]\n",
		tool_prog, tool_prog, tool_prog);
}

static int tool_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	tool_usage(stderr);
	return TOOL_EXIT_ERROR;
}

/* ---- reading ---------------------------------------------------------- */

struct tool_in {
	const char *path;
	pcap_t *p;
	int dlt;
};

/* Open a capture and make sure we know its link type; on failure print one
 * line to stderr and return false. */
static bool tool_open(struct tool_in *in, const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	const char *msg = errbuf;
	size_t plen = strlen(path);

	in->path = path;
	/* Ask for ns: libpcap scales µs files up, so one code path handles both. */
	in->p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!in->p) {
		/* libpcap often starts the message with the path; don't say it twice */
		if (strncmp(msg, path, plen) == 0 && msg[plen] == ':')
			msg += plen + 1 + (msg[plen + 1] == ' ');
		fprintf(stderr, "%s: %s: cannot read capture: %s\n", tool_prog, path, msg);
		return false;
	}
	in->dlt = pcap_datalink(in->p);
	switch (in->dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_RAW:
		return true;
	default:
		fprintf(stderr, "%s: %s: unsupported link type %s (%d); "
			"need EN10MB, LINUX_SLL, LINUX_SLL2 or RAW\n", tool_prog, path,
			pcap_datalink_val_to_name(in->dlt) ? pcap_datalink_val_to_name(in->dlt) : "?",
			in->dlt);
		pcap_close(in->p);
		in->p = NULL;
		return false;
	}
}

/* Parse one captured frame of link type @dlt with wire_parse_ex() @flags.
 * Cooked and raw captures have no Ethernet header, so they go to
 * wire_parse_ip() from the IP header. *base receives the pointer that the
 * offsets in @pkt count from. */
static enum wire_reason tool_parse(int dlt, const uint8_t *data, size_t caplen, unsigned flags,
				   struct wire_pkt *pkt, uint16_t *ethertype,
				   const uint8_t **base)
{
	size_t off;
	uint16_t proto;

	*ethertype = 0;
	*base = data;
	switch (dlt) {
	case DLT_EN10MB: {
		enum wire_reason r = wire_parse_ex(data, caplen, flags, pkt);

		*ethertype = pkt->ethertype;
		return r;
	}
	case DLT_LINUX_SLL:
		off = TOOL_SLL_LEN;
		if (caplen < off) {
			memset(pkt, 0, sizeof(*pkt));
			return WIRE_R_TRUNC_ETH;
		}
		proto = wire_get_be16(data + 14);
		break;
	case DLT_LINUX_SLL2:
		off = TOOL_SLL2_LEN;
		if (caplen < off) {
			memset(pkt, 0, sizeof(*pkt));
			return WIRE_R_TRUNC_ETH;
		}
		proto = wire_get_be16(data);
		break;
	default: /* DLT_RAW */
		off = 0;
		proto = caplen && data[0] >> 4 == 6 ? WIRE_ETHERTYPE_IPV6 : WIRE_ETHERTYPE_IPV4;
		break;
	}
	*ethertype = proto;
	*base = data + off;
	if (proto != WIRE_ETHERTYPE_IPV4 && proto != WIRE_ETHERTYPE_IPV6) {
		memset(pkt, 0, sizeof(*pkt));
		return WIRE_R_NOT_IP;
	}
	return wire_parse_ip(data + off, caplen - off, flags, pkt);
}

/* ---- formatting ------------------------------------------------------- */

/* Fixed-size line buffer: decode never allocates per packet. */
struct tool_line {
	char buf[1024];
	size_t n;
};

__attribute__((format(printf, 2, 3)))
static void tool_put(struct tool_line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (l->n >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(l->buf + l->n, sizeof(l->buf) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += (size_t)k < sizeof(l->buf) - l->n ? (size_t)k : sizeof(l->buf) - 1 - l->n;
}

static void tool_addr(const struct wire_gid *g, char *buf, size_t len)
{
	uint8_t v4[4];

	if (wire_gid_to_ipv4(g, v4))
		inet_ntop(AF_INET, v4, buf, (socklen_t)len);
	else if (!wire_gid_str(g, buf, len))
		snprintf(buf, len, "?");
}

static const char *tool_ethertype_name(uint16_t et)
{
	switch (et) {
	case WIRE_ETHERTYPE_ARP: return "ARP";
	case 0x88cc: return "LLDP";
	case 0x8035: return "RARP";
	case 0x8915: return "RoCEv1";
	case WIRE_ETHERTYPE_IPV4: return "IPv4";
	case WIRE_ETHERTYPE_IPV6: return "IPv6";
	default: return "other";
	}
}

static void tool_aeth(struct tool_line *l, const struct wire_aeth *a)
{
	uint8_t v = wire_aeth_value(a->syndrome);

	switch (wire_aeth_type(a->syndrome)) {
	case WIRE_AETH_ACK:
		if (v == WIRE_AETH_CREDITS_INVALID)
			tool_put(l, " aeth=ACK credits=31 (none)");
		else
			tool_put(l, " aeth=ACK credits=%u", v);
		break;
	case WIRE_AETH_RNR_NAK:
		tool_put(l, " aeth=RNR-NAK timer=%u (%" PRIu32 " us)", v, wire_rnr_timer_us(v));
		break;
	case WIRE_AETH_NAK:
		tool_put(l, " aeth=NAK code=%u (%s)", v, wire_nak_code_str(v));
		break;
	default:
		tool_put(l, " aeth=reserved(0x%02x)", a->syndrome);
		break;
	}
	if (a->syndrome & 0x80)
		tool_put(l, " syndrome=0x%02x", a->syndrome);
	tool_put(l, " msn=%" PRIu32, a->msn);
}

/* Everything the parser decoded, as far as it got. */
/* FLUSH: placement type and selectivity level by name (reserved values
 * in hex); tool_rule says whether a responder executes it. */
static void tool_feth(struct tool_line *l, const struct wire_feth *f)
{
	static const char *const lvl[4] = { "range", "mr", "reserved2", "reserved3" };

	tool_put(l, " feth[type=%s%s%s", f->plt & WIRE_FLUSH_GLOBAL ? "global" : "",
		 (f->plt & WIRE_FLUSH_TYPES) == WIRE_FLUSH_TYPES ? "|" : "",
		 f->plt & WIRE_FLUSH_PERSISTENT ? "persistent" : "");
	if (f->plt & ~WIRE_FLUSH_TYPES || !f->plt)
		tool_put(l, "%s0x%x", f->plt & WIRE_FLUSH_TYPES ? "|" : "", f->plt & ~WIRE_FLUSH_TYPES);
	tool_put(l, " level=%s", lvl[f->sel & 3]);
	if (f->resv)
		tool_put(l, " resv=0x%07" PRIx32, f->resv);
	tool_put(l, "]");
}

static void tool_describe(struct tool_line *l, const struct wire_pkt *p, enum wire_reason r)
{
	const struct wire_bth *b = &p->bth;
	char src[WIRE_GID_STRLEN], dst[WIRE_GID_STRLEN];

	/* Too short or wrong version: there are no addresses to show. */
	if (r == WIRE_R_TRUNC_ETH || r == WIRE_R_TRUNC_IP || r == WIRE_R_IPV4_VERSION ||
	    r == WIRE_R_IPV6_VERSION)
		return;
	tool_addr(&p->ip.src, src, sizeof(src));
	tool_addr(&p->ip.dst, dst, sizeof(dst));
	if (!p->l4_off) /* no UDP header reached */
		tool_put(l, p->ip.version == 6 ? " [%s] > [%s]" : " %s > %s", src, dst);
	else if (p->ip.version == 6) /* brackets keep the port apart from the address */
		tool_put(l, " [%s]:%u > [%s]:%u", src, p->udp.sport, dst, p->udp.dport);
	else
		tool_put(l, " %s:%u > %s:%u", src, p->udp.sport, dst, p->udp.dport);
	if (p->vlan)
		tool_put(l, " vlan=%u", p->vlan_tci & 0xfff);
	/* CE marks drive DCQCN: worth seeing in a trace */
	if ((p->ip.tos & WIRE_ECN_MASK) == WIRE_ECN_CE)
		tool_put(l, " ECN-CE");
	if (!p->op) /* stopped before the BTH */
		return;
	tool_put(l, " %s", p->op->name ? p->op->name : "reserved");
	tool_put(l, " (0x%02x) qp=0x%06" PRIx32 " psn=%" PRIu32, b->opcode, b->dqpn, b->psn);
	if (b->ackreq)
		tool_put(l, " A");
	if (b->se)
		tool_put(l, " SE");
	if (b->mig)
		tool_put(l, " M");
	if (b->fecn)
		tool_put(l, " FECN");
	if (b->becn)
		tool_put(l, " BECN");
	if (b->pad)
		tool_put(l, " pad=%u", b->pad);
	if (b->pkey != WIRE_PKEY_DEFAULT)
		tool_put(l, " pkey=0x%04x", b->pkey);
	if (b->tver)
		tool_put(l, " tver=%u", b->tver);
	if (r != WIRE_OK && !wire_reason_is_transport(r))
		return; /* extension headers are not decoded yet or not trustworthy */
	if (p->hdrs & WIRE_HDR_FETH)
		tool_feth(l, &p->feth);
	if (p->hdrs & WIRE_HDR_RETH)
		tool_put(l, " reth[va=0x%" PRIx64 " rkey=0x%08" PRIx32 " len=%" PRIu32 "]",
			 p->reth.va, p->reth.rkey, p->reth.dma_len);
	if (p->hdrs & WIRE_HDR_AETH)
		tool_aeth(l, &p->aeth);
	if (p->hdrs & WIRE_HDR_ATOMICETH) {
		if (b->opcode == WIRE_OP_RC_FETCH_ADD)
			tool_put(l, " atomic[va=0x%" PRIx64 " rkey=0x%08" PRIx32 " add=0x%" PRIx64 "]",
				 p->atomiceth.va, p->atomiceth.rkey, p->atomiceth.swap_add);
		else
			tool_put(l, " atomic[va=0x%" PRIx64 " rkey=0x%08" PRIx32 " swap=0x%" PRIx64
				 " compare=0x%" PRIx64 "]", p->atomiceth.va, p->atomiceth.rkey,
				 p->atomiceth.swap_add, p->atomiceth.compare);
	}
	if (p->hdrs & WIRE_HDR_ATOMICACKETH)
		tool_put(l, " orig=0x%" PRIx64, p->atomicacketh.orig);
	if (p->hdrs & WIRE_HDR_XRCETH)
		tool_put(l, " xrceth[srqn=0x%06" PRIx32 "]", p->xrc_srqn);
	if (p->hdrs & WIRE_HDR_DETH)
		tool_put(l, " deth[qkey=0x%08" PRIx32 " srcqp=0x%06" PRIx32 "]",
			 p->deth.qkey, p->deth.sqpn);
	if (p->hdrs & WIRE_HDR_IMMDT)
		tool_put(l, " imm=0x%08" PRIx32, p->imm);
	if (p->hdrs & WIRE_HDR_IETH)
		tool_put(l, " inv_rkey=0x%08" PRIx32, p->ieth_rkey);
	if ((p->op->flags & WIRE_OPF_PAYLOAD) || p->payload_len)
		tool_put(l, " len=%" PRIu32, p->payload_len);
}

/* CM MAD of a valid packet to QP1, decoded strictly (reserved bits must be
 * zero, as the kernel sends them). With @p l, describe it. */
static enum wire_mad_reason tool_cm(const struct wire_pkt *p, struct tool_line *l)
{
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
	enum wire_mad_reason r = wire_gsi_pkt_decode(p, WIRE_MAD_STRICT, &h, &m);
	uint16_t ps, port;

	if (!l)
		return r;
	if (r != WIRE_MAD_OK) {
		tool_put(l, " MAD-INVALID %s", wire_mad_reason_str(r));
		return r;
	}
	tool_put(l, " CM %s tid=0x%016" PRIx64, wire_cm_attr_name(m.attr), h.tid);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_LOCAL_COMM_ID))
		tool_put(l, " lcid=0x%08" PRIx64, m.v[WIRE_CM_F_LOCAL_COMM_ID]);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_REMOTE_COMM_ID))
		tool_put(l, " rcid=0x%08" PRIx64, m.v[WIRE_CM_F_REMOTE_COMM_ID]);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_SERVICE_ID)) {
		tool_put(l, " sid=0x%016" PRIx64, m.v[WIRE_CM_F_SERVICE_ID]);
		if (!wire_cma_service_parse(m.v[WIRE_CM_F_SERVICE_ID], &ps, &port))
			tool_put(l, " (%s:%u)", ps == WIRE_RDMA_PS_TCP ? "TCP" :
				 ps == WIRE_RDMA_PS_UDP ? "UDP" : ps == WIRE_RDMA_PS_IB ? "IB" : "IPoIB",
				 port);
	}
	if (wire_cm_has_field(m.attr, WIRE_CM_F_LOCAL_QPN))
		tool_put(l, " qpn=0x%06" PRIx64, m.v[WIRE_CM_F_LOCAL_QPN]);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_STARTING_PSN))
		tool_put(l, " start_psn=%" PRIu64, m.v[WIRE_CM_F_STARTING_PSN]);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_LOCAL_QKEY) && m.attr != WIRE_CM_ATTR_REQ &&
	    m.attr != WIRE_CM_ATTR_REP)
		tool_put(l, " qkey=0x%08" PRIx64, m.v[WIRE_CM_F_LOCAL_QKEY]);
	if (wire_cm_has_field(m.attr, WIRE_CM_F_REMOTE_QPN))
		tool_put(l, " remote_qpn=0x%06" PRIx64, m.v[WIRE_CM_F_REMOTE_QPN]);
	if (m.attr == WIRE_CM_ATTR_REJ) {
		const char *n = wire_cm_rej_reason_str((uint16_t)m.v[WIRE_CM_F_REJ_REASON]);

		tool_put(l, " reason=%" PRIu64 " (%s)", m.v[WIRE_CM_F_REJ_REASON], n ? n : "unknown");
	}
	if (m.attr == WIRE_CM_ATTR_MRA)
		tool_put(l, " mraed=%" PRIu64 " timeout=%" PRIu64, m.v[WIRE_CM_F_MSG_MRAED],
			 m.v[WIRE_CM_F_SERVICE_TIMEOUT]);
	if (m.attr == WIRE_CM_ATTR_SIDR_REP || m.attr == WIRE_CM_ATTR_APR)
		tool_put(l, " status=%" PRIu64, m.v[WIRE_CM_F_STATUS]);
	/* ECE: vendor ID / options (the header's attribute modifier) */
	if (wire_cm_has_field(m.attr, WIRE_CM_F_VENDOR_ID) &&
	    (m.v[WIRE_CM_F_VENDOR_ID] || h.attr_mod))
		tool_put(l, " ece=0x%06" PRIx64 "/0x%08" PRIx32, m.v[WIRE_CM_F_VENDOR_ID],
			 h.attr_mod);
	return r;
}

/* ---- decode / check --------------------------------------------------- */

/* IBTA 1.5 requests that parse but no responder executes: an ATOMIC
 * WRITE that is not 8 bytes (payload and RETH length) to an 8-aligned
 * address, a FLUSH whose FETH has no type, a reserved type bit or a
 * reserved level (docs/transport.md). */
enum tool_rule { TOOL_RULE_OK, TOOL_RULE_AWRITE, TOOL_RULE_FLUSH, TOOL_RULE_NUM };

static const char *const tool_rule_desc[TOOL_RULE_NUM] = {
	[TOOL_RULE_AWRITE] = "atomic-write-not-8-aligned-bytes",
	[TOOL_RULE_FLUSH] = "flush-feth-not-executable",
};

static enum tool_rule tool_rule(const struct wire_pkt *p)
{
	if (p->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE &&
	    (p->payload_len != 8 || p->reth.dma_len != 8 || (p->reth.va & 7)))
		return TOOL_RULE_AWRITE;
	if (p->bth.opcode == WIRE_OP_RC_FLUSH && !wire_feth_valid(&p->feth))
		return TOOL_RULE_FLUSH;
	return TOOL_RULE_OK;
}

struct tool_stats {
	uint64_t packets, valid, invalid, non_roce, short_caps;
	uint64_t by_rule[TOOL_RULE_NUM], rule_first_at[TOOL_RULE_NUM];
	uint64_t by_reason[WIRE_R_NUM];
	uint64_t first_at[WIRE_R_NUM]; /* frame number of the first occurrence */
	uint64_t mads, mad_invalid;
	uint64_t by_mad_reason[WIRE_MAD_R_NUM];
	uint64_t mad_first_at[WIRE_MAD_R_NUM];
};

static void tool_count_mad(struct tool_stats *s, enum wire_mad_reason r, uint64_t frame)
{
	s->mads++;
	if (r == WIRE_MAD_OK || (unsigned)r >= WIRE_MAD_R_NUM)
		return;
	s->mad_invalid++;
	if (!s->by_mad_reason[r])
		s->mad_first_at[r] = frame;
	s->by_mad_reason[r]++;
}

static void tool_count(struct tool_stats *s, enum wire_reason r, uint64_t frame)
{
	s->packets++;
	if (r == WIRE_OK)
		s->valid++;
	else if (!wire_reason_is_roce(r))
		s->non_roce++;
	else
		s->invalid++;
	if ((unsigned)r < WIRE_R_NUM) {
		if (!s->by_reason[r])
			s->first_at[r] = frame;
		s->by_reason[r]++;
	}
}

static void tool_add(struct tool_stats *t, const struct tool_stats *s)
{
	t->packets += s->packets;
	t->valid += s->valid;
	t->invalid += s->invalid;
	t->non_roce += s->non_roce;
	t->short_caps += s->short_caps;
	for (unsigned i = 0; i < WIRE_R_NUM; i++) {
		if (s->by_reason[i] && !t->by_reason[i])
			t->first_at[i] = s->first_at[i];
		t->by_reason[i] += s->by_reason[i];
	}
	for (unsigned i = 1; i < TOOL_RULE_NUM; i++) {
		if (s->by_rule[i] && !t->by_rule[i])
			t->rule_first_at[i] = s->rule_first_at[i];
		t->by_rule[i] += s->by_rule[i];
	}
	t->mads += s->mads;
	t->mad_invalid += s->mad_invalid;
	for (unsigned i = 0; i < WIRE_MAD_R_NUM; i++) {
		if (s->by_mad_reason[i] && !t->by_mad_reason[i])
			t->mad_first_at[i] = s->mad_first_at[i];
		t->by_mad_reason[i] += s->by_mad_reason[i];
	}
}

/* Walk one file. With @print, write the decode line of every frame.
 * Returns false on a read error (already reported). */
static bool tool_walk(struct tool_in *in, bool print, struct tool_stats *st)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t frame = 0, t0 = 0;
	struct wire_pkt pkt;
	int rc;

	while ((rc = pcap_next_ex(in->p, &h, &data)) == 1) {
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
		uint16_t et;
		const uint8_t *base;
		enum wire_reason r = tool_parse(in->dlt, data, h->caplen, 0, &pkt, &et, &base);

		if (++frame == 1)
			t0 = ts;
		tool_count(st, r, frame);
		if (h->caplen < h->len)
			st->short_caps++;
		if (r == WIRE_OK && wire_pkt_is_gsi(&pkt))
			tool_count_mad(st, tool_cm(&pkt, NULL), frame);
		enum tool_rule rule = r == WIRE_OK ? tool_rule(&pkt) : TOOL_RULE_OK;
		if (rule != TOOL_RULE_OK && !st->by_rule[rule]++)
			st->rule_first_at[rule] = frame;
		if (!print)
			continue;

		struct tool_line l = { .n = 0 };
		uint64_t rel = ts >= t0 ? ts - t0 : 0;

		tool_put(&l, "%6" PRIu64 " %4" PRIu64 ".%06" PRIu64, frame,
			 rel / 1000000000u, rel % 1000000000u / 1000u);
		if (!wire_reason_is_roce(r)) {
			if (r == WIRE_R_NOT_IP)
				tool_put(&l, " non-RoCE %s ethertype=0x%04x", tool_ethertype_name(et), et);
			else if (r == WIRE_R_NOT_UDP)
				tool_put(&l, " non-RoCE IPv%u not UDP", pkt.ip.version);
			else
				tool_put(&l, " non-RoCE UDP port %u > %u", pkt.udp.sport, pkt.udp.dport);
		} else if (r == WIRE_R_ICRC) {
			/* The parser stops at a bad ICRC; parse again without it so
			 * the line still shows what the packet claims to be. */
			struct wire_pkt raw;
			enum wire_reason r2 = tool_parse(in->dlt, data, h->caplen, WIRE_PARSE_NO_ICRC,
							 &raw, &et, &base);
			uint32_t want = 0;

			tool_describe(&l, &raw, r2);
			if (!wire_icrc_calc(base + raw.l3_off, raw.icrc_off - raw.l3_off, &want))
				want = 0;
			tool_put(&l, " icrc=BAD (frame 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
				 raw.icrc, want);
			if (r2 != WIRE_OK)
				tool_put(&l, " also %s", wire_reason_str(r2));
			tool_put(&l, " INVALID %s (%s)", wire_reason_str(r), wire_reason_desc(r));
		} else {
			tool_describe(&l, &pkt, r);
			if (r == WIRE_OK && wire_pkt_is_gsi(&pkt))
				(void)tool_cm(&pkt, &l);
			if (rule != TOOL_RULE_OK)
				tool_put(&l, " NOT-EXECUTABLE %s", tool_rule_desc[rule]);
			if (r == WIRE_OK)
				tool_put(&l, " icrc=ok");
			else
				tool_put(&l, " INVALID %s (%s)", wire_reason_str(r), wire_reason_desc(r));
		}
		if (h->caplen < h->len)
			tool_put(&l, " [captured %u of %u bytes]", h->caplen, h->len);
		printf("%s\n", l.buf);
	}
	if (rc != PCAP_ERROR_BREAK) {
		fflush(stdout);
		fprintf(stderr, "%s: %s: read error after %" PRIu64 " frames: %s\n",
			tool_prog, in->path, frame, pcap_geterr(in->p));
		return false;
	}
	return true;
}

static void tool_summary(const char *label, const struct tool_stats *s)
{
	printf("%s: %" PRIu64 " packets, %" PRIu64 " RoCE valid, %" PRIu64 " RoCE invalid, %"
	       PRIu64 " non-RoCE skipped\n", label, s->packets, s->valid, s->invalid, s->non_roce);
	for (unsigned r = 1; r < WIRE_R_NUM; r++) {
		if (!s->by_reason[r] || !wire_reason_is_roce((enum wire_reason)r))
			continue;
		printf("  invalid %s: %" PRIu64 " (%s; first at frame %" PRIu64 ")\n",
		       wire_reason_str((enum wire_reason)r), s->by_reason[r],
		       wire_reason_desc((enum wire_reason)r), s->first_at[r]);
	}
	for (unsigned i = 1; i < TOOL_RULE_NUM; i++)
		if (s->by_rule[i])
			printf("  not executable %s: %" PRIu64 " (first at frame %" PRIu64 ")\n",
			       tool_rule_desc[i], s->by_rule[i], s->rule_first_at[i]);
	if (s->mads)
		printf("  CM MADs: %" PRIu64 " (%" PRIu64 " malformed)\n", s->mads, s->mad_invalid);
	for (unsigned r = 1; r < WIRE_MAD_R_NUM; r++)
		if (s->by_mad_reason[r])
			printf("  invalid MAD %s: %" PRIu64 " (first at frame %" PRIu64 ")\n",
			       wire_mad_reason_str((enum wire_mad_reason)r), s->by_mad_reason[r],
			       s->mad_first_at[r]);
	if (s->short_caps)
		printf("  note: %" PRIu64 " frames cut short by the capture's snaplen\n", s->short_caps);
}

static int tool_cmd_decode(int argc, char **argv)
{
	struct tool_stats st;
	struct tool_in in;
	bool ok;

	if (argc != 1)
		return tool_usage_error("decode takes exactly one FILE");
	memset(&st, 0, sizeof(st));
	if (!tool_open(&in, argv[0]))
		return TOOL_EXIT_ERROR;
	ok = tool_walk(&in, true, &st);
	pcap_close(in.p);
	printf("# %" PRIu64 " packets, %" PRIu64 " RoCE valid, %" PRIu64 " RoCE invalid, %" PRIu64
	       " non-RoCE\n", st.packets, st.valid, st.invalid, st.non_roce);
	return ok ? TOOL_EXIT_OK : TOOL_EXIT_ERROR;
}

static int tool_cmd_check(int argc, char **argv)
{
	struct tool_stats total;
	bool err = false;

	if (argc < 1)
		return tool_usage_error("check needs at least one FILE");
	memset(&total, 0, sizeof(total));
	for (int i = 0; i < argc; i++) {
		struct tool_stats st;
		struct tool_in in;

		memset(&st, 0, sizeof(st));
		if (!tool_open(&in, argv[i])) {
			err = true;
			continue;
		}
		if (!tool_walk(&in, false, &st))
			err = true;
		pcap_close(in.p);
		tool_summary(argv[i], &st);
		tool_add(&total, &st);
	}
	if (argc > 1)
		tool_summary("total", &total);
	if (err)
		return TOOL_EXIT_ERROR;
	bool rules = false;

	for (unsigned i = 1; i < TOOL_RULE_NUM; i++)
		rules |= total.by_rule[i] != 0;
	return total.invalid || total.mad_invalid || rules ? TOOL_EXIT_INVALID : TOOL_EXIT_OK;
}

/* ---- corrupt ---------------------------------------------------------- */

#define TOOL_MAX_EDITS 32

struct tool_edit {
	long off;      /* negative: from the end of the frame */
	unsigned val;  /* bit number (flip) or byte value (set) */
	bool flip;
};

static bool tool_num(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool tool_parse_edit(const char *arg, bool flip, struct tool_edit *e)
{
	char tmp[64];
	char *colon;
	long off, val;

	if (strlen(arg) >= sizeof(tmp))
		return false;
	strcpy(tmp, arg);
	colon = strchr(tmp, ':');
	if (!colon)
		return false;
	*colon = '\0';
	if (!tool_num(tmp, -65535, 65535, &off) ||
	    !tool_num(colon + 1, 0, flip ? 7 : 255, &val))
		return false;
	e->off = off;
	e->val = (unsigned)val;
	e->flip = flip;
	return true;
}

/* IP header offset of an Ethernet frame (after an optional VLAN tag). */
static size_t tool_l3_off(const uint8_t *f, size_t len)
{
	if (len >= WIRE_ETH_LEN + WIRE_VLAN_LEN && wire_get_be16(f + 12) == WIRE_ETHERTYPE_VLAN)
		return WIRE_ETH_LEN + WIRE_VLAN_LEN;
	return WIRE_ETH_LEN;
}

static void tool_fix_ipv4_csum(uint8_t *f, size_t len)
{
	size_t l3 = tool_l3_off(f, len), ihl;

	if (len < l3 + WIRE_IPV4_LEN || f[l3] >> 4 != 4)
		return;
	ihl = (size_t)(f[l3] & 0x0f) * 4;
	if (ihl < WIRE_IPV4_LEN || len < l3 + ihl)
		return;
	wire_put_be16(f + l3 + 10, wire_ipv4_csum(f + l3, ihl));
}

/* Recompute the ICRC at the end of the IP packet (per its length field). */
static void tool_fix_icrc(uint8_t *f, size_t len)
{
	size_t l3 = tool_l3_off(f, len), iplen;
	uint32_t icrc;

	if (len < l3 + WIRE_IPV6_LEN)
		return;
	if (f[l3] >> 4 == 4)
		iplen = wire_get_be16(f + l3 + 2);
	else
		iplen = WIRE_IPV6_LEN + (size_t)wire_get_be16(f + l3 + 4);
	if (iplen < WIRE_ICRC_LEN || l3 + iplen > len)
		return;
	if (wire_icrc_calc(f + l3, iplen - WIRE_ICRC_LEN, &icrc))
		wire_icrc_put(f + l3 + iplen - WIRE_ICRC_LEN, icrc);
}

static int tool_cmd_corrupt(int argc, char **argv)
{
	struct tool_edit edits[TOOL_MAX_EDITS];
	unsigned nedit = 0;
	long packet = 0, trunc = -1;
	bool fix_csum = false, fix_icrc = false;
	static uint8_t frame[PCAPW_SNAPLEN];
	struct tool_in in;
	struct pcapw *w;
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t n = 0, touched = 0;
	int rc, ret = TOOL_EXIT_OK;

	if (argc < 2)
		return tool_usage_error("corrupt needs IN and OUT");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--fix-ipv4-csum")) {
			fix_csum = true;
		} else if (!strcmp(a, "--fix-icrc")) {
			fix_icrc = true;
		} else if (!strcmp(a, "--packet") && v) {
			if (!tool_num(v, 1, LONG_MAX, &packet))
				return tool_usage_error("bad --packet %s", v);
			i++;
		} else if (!strcmp(a, "--truncate") && v) {
			if (!tool_num(v, 0, PCAPW_SNAPLEN, &trunc))
				return tool_usage_error("bad --truncate %s", v);
			i++;
		} else if ((!strcmp(a, "--flip") || !strcmp(a, "--set")) && v) {
			if (nedit == TOOL_MAX_EDITS)
				return tool_usage_error("too many edits");
			if (!tool_parse_edit(v, a[2] == 'f', &edits[nedit]))
				return tool_usage_error("bad %s %s (want OFF:%s)", a, v,
							a[2] == 'f' ? "BIT" : "VAL");
			nedit++;
			i++;
		} else {
			return tool_usage_error("unknown or incomplete option %s", a);
		}
	}
	if (!tool_open(&in, argv[0]))
		return TOOL_EXIT_ERROR;
	if (in.dlt != DLT_EN10MB) {
		fprintf(stderr, "%s: %s: corrupt supports Ethernet captures only\n", tool_prog, argv[0]);
		pcap_close(in.p);
		return TOOL_EXIT_ERROR;
	}
	rc = pcapw_open(&w, argv[1], PCAPW_NSEC);
	if (rc) {
		fprintf(stderr, "%s: %s: cannot write: %s\n", tool_prog, argv[1], strerror(-rc));
		pcap_close(in.p);
		return TOOL_EXIT_ERROR;
	}
	while ((rc = pcap_next_ex(in.p, &h, &data)) == 1) {
		size_t len = h->caplen > sizeof(frame) ? sizeof(frame) : h->caplen;
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;

		n++;
		memcpy(frame, data, len);
		if (packet == 0 || (uint64_t)packet == n) {
			touched++;
			for (unsigned e = 0; e < nedit; e++) {
				long o = edits[e].off < 0 ? (long)len + edits[e].off : edits[e].off;

				if (o < 0 || (size_t)o >= len) {
					fprintf(stderr, "%s: offset %ld is outside frame %" PRIu64
						" (%zu bytes)\n", tool_prog, edits[e].off, n, len);
					ret = TOOL_EXIT_ERROR;
					goto out;
				}
				if (edits[e].flip)
					frame[o] ^= (uint8_t)(1u << edits[e].val);
				else
					frame[o] = (uint8_t)edits[e].val;
			}
			if (fix_csum)
				tool_fix_ipv4_csum(frame, len);
			if (fix_icrc)
				tool_fix_icrc(frame, len);
			if (trunc >= 0 && (size_t)trunc < len)
				len = (size_t)trunc;
		}
		rc = pcapw_write(w, frame, len, ts);
		if (rc) {
			fprintf(stderr, "%s: %s: write error: %s\n", tool_prog, argv[1], strerror(-rc));
			ret = TOOL_EXIT_ERROR;
			goto out;
		}
	}
	if (rc != PCAP_ERROR_BREAK) {
		fprintf(stderr, "%s: %s: read error: %s\n", tool_prog, argv[0], pcap_geterr(in.p));
		ret = TOOL_EXIT_ERROR;
	} else if (packet && touched == 0) {
		fprintf(stderr, "%s: %s has no packet %ld\n", tool_prog, argv[0], packet);
		ret = TOOL_EXIT_ERROR;
	}
out:
	rc = pcapw_close(w);
	if (rc && ret == TOOL_EXIT_OK) {
		fprintf(stderr, "%s: %s: write error: %s\n", tool_prog, argv[1], strerror(-rc));
		ret = TOOL_EXIT_ERROR;
	}
	pcap_close(in.p);
	return ret;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		return tool_usage_error("missing command");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		tool_usage(stdout);
		return TOOL_EXIT_OK;
	}
	if (!strcmp(cmd, "decode"))
		return tool_cmd_decode(argc - 2, argv + 2);
	if (!strcmp(cmd, "check"))
		return tool_cmd_check(argc - 2, argv + 2);
	if (!strcmp(cmd, "corrupt"))
		return tool_cmd_corrupt(argc - 2, argv + 2);
	return tool_usage_error("unknown command '%s'", cmd);
}
