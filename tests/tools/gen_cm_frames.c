/* SPDX-License-Identifier: MIT */
/*
 * gen_cm_frames OUT.pcap OUT.expect
 *
 * Builds, with wire/mad.c and wire/gsi.c, GSI frames (UD SEND ONLY to QP1)
 * carrying every CM attribute with random field values (fixed seed,
 * printed), over IPv4 and IPv6, and writes them with pcapw. OUT.expect gets
 * one line per frame with the tshark field names and the values tshark's
 * InfiniBand CM dissector must show (cm_tshark_check.py compares them).
 * tshark 4.0 dissects REQ, REP, RTU, REJ, DREQ and DREP field by field; for
 * MRA, SIDR_REQ/REP, LAP and APR it shows the MAD header only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcapw.h"
#include "wire.h"

#define SEED 0x5eedc0deu
#define VARIANTS 6

#define gen_fail(...) do { fprintf(stderr, "gen_cm_frames: FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define gen_check(c) do { if (!(c)) gen_fail("%s", #c); } while (0)

static uint64_t rng = SEED;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* tshark field of each CM field, per attribute tshark 4.0 dissects. */
struct tsf {
	uint16_t attr;
	uint8_t field;
	const char *name;
};

#define R(f, n) { WIRE_CM_ATTR_REQ, WIRE_CM_F_##f, "infiniband.cm.req" n }
#define P(f, n) { WIRE_CM_ATTR_REP, WIRE_CM_F_##f, "infiniband.cm.rep" n }
static const struct tsf tsf[] = {
	R(LOCAL_COMM_ID, ""), R(SERVICE_ID, ".serviceid"), R(LOCAL_CA_GUID, ".localcaguid"),
	R(LOCAL_QKEY, ".localqkey"), R(LOCAL_QPN, ".localqpn"),
	R(RESPONDER_RESOURCES, ".responderres"), R(LOCAL_EECN, ".localeecn"),
	R(INITIATOR_DEPTH, ".initdepth"), R(REMOTE_EECN, ".remoteeecn"),
	R(REMOTE_CM_RESP_TIMEOUT, ".remoteresptout"), R(TRANSPORT_TYPE, ".transpsvctype"),
	R(E2E_FLOW_CONTROL, ".e2eflowctrl"), R(STARTING_PSN, ".startpsn"),
	R(LOCAL_CM_RESP_TIMEOUT, ".localresptout"), R(RETRY_COUNT, ".retrcount"),
	R(PKEY, ".pkey"), R(PATH_MTU, ".pppmtu"), R(RDC_EXISTS, ".rdcexist"),
	R(RNR_RETRY_COUNT, ".rnrretrcount"), R(MAX_CM_RETRIES, ".maxcmretr"), R(SRQ, ".srq"),
	R(EXT_TRANSPORT_TYPE, ".ext_transport"),
	R(PRI_LOCAL_LID, ".prim_locallid"), R(PRI_REMOTE_LID, ".prim_remotelid"),
	R(PRI_LOCAL_GID, ".prim_localgid"), R(PRI_REMOTE_GID, ".prim_remotegid"),
	/* Not compared: tshark 4.0 reads the flow label word one byte late
	 * and the packet rate from byte 88 (in the genuine kernel capture it
	 * shows flow label 0x000ea / rate 0x0e for bytes 0e a9 60 00, whose
	 * flow label 0x0ea96 gives the data packets' UDP source port 0xea95,
	 * see tests/wire/test_mad_pcap.c). */
	R(PRI_TRAFFIC_CLASS, ".prim_tfcclass"), R(PRI_HOP_LIMIT, ".prim_hoplim"),
	R(PRI_SL, ".prim_sl"), R(PRI_SUBNET_LOCAL, ".prim_subnetlocal"),
	R(PRI_LOCAL_ACK_TIMEOUT, ".prim_localacktout"),
	R(ALT_LOCAL_LID, ".alt_locallid"), R(ALT_REMOTE_LID, ".alt_remotelid"),
	R(ALT_LOCAL_GID, ".alt_localgid"), R(ALT_REMOTE_GID, ".alt_remotegid"),
	R(ALT_TRAFFIC_CLASS, ".alt_tfcclass"), R(ALT_HOP_LIMIT, ".alt_hoplim"),
	R(ALT_SL, ".alt_sl"), R(ALT_SUBNET_LOCAL, ".alt_subnetlocal"),
	R(ALT_LOCAL_ACK_TIMEOUT, ".alt_localacktout"),
	P(LOCAL_COMM_ID, ""), P(REMOTE_COMM_ID, ".remotecommid"), P(LOCAL_QKEY, ".localqkey"),
	P(LOCAL_QPN, ".localqpn"), P(LOCAL_EECN, ".localeecn"), P(STARTING_PSN, ".startpsn"),
	P(RESPONDER_RESOURCES, ".respres"), P(INITIATOR_DEPTH, ".initdepth"),
	P(TARGET_ACK_DELAY, ".tgtackdelay"), P(FAILOVER_ACCEPTED, ".failoveracc"),
	P(E2E_FLOW_CONTROL, ".e2eflowctrl"), P(RNR_RETRY_COUNT, ".rnrretrcount"),
	P(SRQ, ".srq"), P(LOCAL_CA_GUID, ".localcaguid"), P(PRIVATE_DATA, ".private"),
	{ WIRE_CM_ATTR_RTU, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.rtu.localcommid" },
	{ WIRE_CM_ATTR_RTU, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.rtu.remotecommid" },
	{ WIRE_CM_ATTR_RTU, WIRE_CM_F_PRIVATE_DATA, "infiniband.cm.rtu.private" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.rej.localcommid" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.rej.remotecommid" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_MSG_REJECTED, "infiniband.cm.rej.msgrej" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_REJ_INFO_LEN, "infiniband.cm.rej.rejinfolen" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_REJ_REASON, "infiniband.cm.rej.reason" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_INFO, "infiniband.cm.rej.ari" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_PRIVATE_DATA, "infiniband.cm.rej.private" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.dreq.localcommid" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.dreq.remotecommid" },
	/* (sic) tshark files the DREQ remote QPN under cm.req */
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_REMOTE_QPN, "infiniband.cm.req.remoteqpneecn" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_PRIVATE_DATA, "infiniband.cm.dreq.private" },
	{ WIRE_CM_ATTR_DREP, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.drsp.localcommid" },
	{ WIRE_CM_ATTR_DREP, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.drsp.remotecommid" },
	{ WIRE_CM_ATTR_DREP, WIRE_CM_F_PRIVATE_DATA, "infiniband.cm.drsp.private" },
};

static const uint16_t attrs[] = {
	WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_MRA, WIRE_CM_ATTR_REJ, WIRE_CM_ATTR_REP,
	WIRE_CM_ATTR_RTU, WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP,
	WIRE_CM_ATTR_SIDR_REQ, WIRE_CM_ATTR_SIDR_REP, WIRE_CM_ATTR_LAP,
	WIRE_CM_ATTR_APR,
};

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static const uint8_t *bytes_field(const struct wire_cm_msg *m, unsigned f, size_t *n)
{
	*n = 16;
	switch (f) {
	case WIRE_CM_F_PRI_LOCAL_GID: return m->gid[0];
	case WIRE_CM_F_PRI_REMOTE_GID: return m->gid[1];
	case WIRE_CM_F_ALT_LOCAL_GID: return m->gid[2];
	case WIRE_CM_F_ALT_REMOTE_GID: return m->gid[3];
	case WIRE_CM_F_INFO: *n = WIRE_CM_INFO_LEN; return m->info;
	case WIRE_CM_F_PRIVATE_DATA: *n = wire_cm_pdata_len(m->attr); return m->pdata;
	default: return NULL;
	}
}

/* Random fields; a few kept where tshark would otherwise take another path. */
static void fill(struct wire_cm_msg *m, uint16_t attr, unsigned v, const struct wire_pkt *d)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	for (unsigned f = 0; f < WIRE_CM_F_NUM_INT; f++) {
		unsigned bits = wire_cm_field_bits(attr, f);

		if (bits)
			m->v[f] = rnd() & (bits >= 64 ? ~0ull : (1ull << bits) - 1);
	}
	m->v[WIRE_CM_F_REJ_INFO_LEN] %= WIRE_CM_INFO_LEN + 1;
	m->v[WIRE_CM_F_ADD_INFO_LEN] %= WIRE_CM_INFO_LEN + 1;
	for (unsigned i = 0; i < sizeof(m->gid); i++)
		m->gid[i / 16][i % 16] = (uint8_t)rnd();
	for (unsigned i = 0; i < sizeof(m->info); i++)
		m->info[i] = (uint8_t)rnd();
	for (unsigned i = 0; i < sizeof(m->pdata); i++)
		m->pdata[i] = (uint8_t)rnd();
	if (attr == WIRE_CM_ATTR_REQ) {
		/* the primary GIDs are real IPv6 addresses (tshark shows IPv4-mapped
		 * ones under other field names) */
		m->gid[0][0] = m->gid[1][0] = 0xfd;
		if (d->ip.version == 4) {
			/* on IPv4 tshark shows them as IPv4 addresses */
			memset(m->gid[0], 0, 10);
			memset(m->gid[1], 0, 10);
			m->gid[0][10] = m->gid[0][11] = m->gid[1][10] = m->gid[1][11] = 0xFF;
		}
		if (v % 2 == 0) {
			/* rdma_cm's IP service ID and cma_hdr (tshark's "IP CM") */
			struct wire_cma_hdr h = {
				.ip_version = d->ip.version, .src_port = (uint16_t)rnd(),
				.src = d->ip.src, .dst = d->ip.dst,
			};

			m->v[WIRE_CM_F_SERVICE_ID] = wire_cma_service_id(WIRE_RDMA_PS_TCP, (uint16_t)rnd());
			gen_check(wire_cma_hdr_encode(m->pdata, &h) == 0);
		} else {
			/* not an IP CM service ID: private data shown raw */
			m->v[WIRE_CM_F_SERVICE_ID] |= 1ull << 63;
		}
	}
}

static void emit(struct pcapw *w, FILE *exp, unsigned n, uint16_t attr, unsigned v)
{
	static uint8_t frame[1024];
	uint8_t mad[WIRE_MAD_LEN] = { 0 };
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
	struct wire_pkt d;
	size_t len;

	wire_gsi_pkt_init(&d, v % 3 == 2 ? 6 : 4, mad, (uint32_t)rnd());
	memcpy(d.smac, "\x02\x00\x00\x00\x00\x0c", 6);
	memcpy(d.dmac, "\x02\x00\x00\x00\x00\x0b", 6);
	if (d.ip.version == 6) {
		gen_check(wire_gid_parse(&d.ip.src, "fd00:77::12"));
		gen_check(wire_gid_parse(&d.ip.dst, "fd00:77::11"));
	} else {
		gen_check(wire_gid_parse(&d.ip.src, "10.77.0.12"));
		gen_check(wire_gid_parse(&d.ip.dst, "10.77.0.11"));
	}
	d.udp.sport = (uint16_t)(0xC000 | rnd());
	fill(&m, attr, v, &d);
	wire_mad_hdr_init_cm(&h, attr, rnd());
	h.attr_mod = (uint32_t)rnd();
	gen_check(wire_mad_encode(mad, &h, &m) == 0);
	/* a zero UDP checksum is illegal over IPv6 for tshark */
	gen_check(wire_build(&d, frame, sizeof(frame),
			     d.ip.version == 6 ? WIRE_BUILD_UDP_CSUM : 0, &len) == 0);
	gen_check(pcapw_write(w, frame, len, 1795305600000000000ull + n * 1000000ull) == 0);

	fprintf(exp, "frame=%u infiniband.mad.baseversion=1 infiniband.mad.mgmtclass=7 "
		"infiniband.mad.classversion=2 infiniband.mad.method=3 "
		"infiniband.mad.transactionid=0x%016" PRIx64 " infiniband.mad.attributeid=0x%04x "
		"infiniband.mad.attributemodifier=0x%08x", n, h.tid, attr, h.attr_mod);
	for (unsigned i = 0; i < sizeof(tsf) / sizeof(tsf[0]); i++) {
		const uint8_t *b;
		size_t bn;

		if (tsf[i].attr != attr)
			continue;
		b = bytes_field(&m, tsf[i].field, &bn);
		if (b && bn == 16 && d.ip.version == 4 &&
		    (tsf[i].field == WIRE_CM_F_PRI_LOCAL_GID ||
		     tsf[i].field == WIRE_CM_F_PRI_REMOTE_GID)) {
			fprintf(exp, " %s_ipv4=", tsf[i].name);
			hex(exp, b + 12, 4);
		} else if (b) {
			fprintf(exp, " %s=", tsf[i].name);
			hex(exp, b, bn);
		} else {
			fprintf(exp, " %s=0x%" PRIx64, tsf[i].name, m.v[tsf[i].field]);
		}
	}
	if (attr == WIRE_CM_ATTR_REQ && v % 2 == 0) {
		const char *ipv = d.ip.version == 4 ? "4" : "6";

		fprintf(exp, " infiniband.cm.req.ip_cm.ipv=%s infiniband.cm.req.ip_cm.sport=0x%02x%02x"
			" infiniband.cm.req.ip_cm.sip%s=", ipv, m.pdata[2], m.pdata[3], ipv);
		hex(exp, d.ip.version == 4 ? m.pdata + 16 : m.pdata + 4, d.ip.version == 4 ? 4 : 16);
		fprintf(exp, " infiniband.cm.req.ip_cm.dip%s=", ipv);
		hex(exp, d.ip.version == 4 ? m.pdata + 32 : m.pdata + 20, d.ip.version == 4 ? 4 : 16);
		fprintf(exp, " infiniband.cm.req.ip_cm.private=");
		hex(exp, m.pdata + WIRE_CMA_HDR_LEN, WIRE_CM_REQ_PDATA - WIRE_CMA_HDR_LEN);
	} else if (attr == WIRE_CM_ATTR_REQ) {
		fprintf(exp, " infiniband.cm.req.private=");
		hex(exp, m.pdata, WIRE_CM_REQ_PDATA);
	}
	fputc('\n', exp);
}

int main(int argc, char **argv)
{
	struct pcapw *w;
	unsigned n = 0;
	FILE *exp;

	if (argc != 3)
		gen_fail("usage: gen_cm_frames OUT.pcap OUT.expect");
	printf("gen_cm_frames: seed %#x\n", SEED);
	gen_check(pcapw_open(&w, argv[1], PCAPW_NSEC) == 0);
	exp = fopen(argv[2], "w");
	gen_check(exp != NULL);
	fprintf(exp, "# gen_cm_frames seed %#x\n", SEED);
	for (unsigned a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++)
		for (unsigned v = 0; v < VARIANTS; v++)
			emit(w, exp, ++n, attrs[a], v);
	gen_check(pcapw_close(w) == 0);
	gen_check(fclose(exp) == 0);
	return 0;
}
