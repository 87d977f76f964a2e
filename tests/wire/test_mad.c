/* SPDX-License-Identifier: MIT */
/* CM MADs (wire/mad.c): random round trips of every attribute, layout
 * consistency, known answers written from the IBTA tables by hand, every
 * truncation and every reject reason, rdma_cm service IDs and cma_hdr, and
 * the GSI packet helper through wire_build()/wire_parse(). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/check.h"
#include "wire.h"

#define SEED 0x9c3d5a17u
#define ROUNDS 300

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic across libcs */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static const uint16_t attrs[] = {
	WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_MRA, WIRE_CM_ATTR_REJ, WIRE_CM_ATTR_REP,
	WIRE_CM_ATTR_RTU, WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP,
	WIRE_CM_ATTR_SIDR_REQ, WIRE_CM_ATTR_SIDR_REP, WIRE_CM_ATTR_LAP,
	WIRE_CM_ATTR_APR,
};
#define NATTRS (sizeof(attrs) / sizeof(attrs[0]))

static uint64_t width_mask(unsigned bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static unsigned popcount_buf(const uint8_t *p, size_t n)
{
	unsigned c = 0;

	for (size_t i = 0; i < n; i++)
		c += (unsigned)__builtin_popcount(p[i]);
	return c;
}

/* A random message with every field of @p attr filled within its width. */
static void random_msg(uint16_t attr, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	for (unsigned f = 0; f < WIRE_CM_F_NUM_INT; f++) {
		unsigned bits = wire_cm_field_bits(attr, f);

		if (bits)
			m->v[f] = rnd() & width_mask(bits);
	}
	if (wire_cm_has_field(attr, WIRE_CM_F_REJ_INFO_LEN))
		m->v[WIRE_CM_F_REJ_INFO_LEN] = rnd() % (WIRE_CM_INFO_LEN + 1);
	if (wire_cm_has_field(attr, WIRE_CM_F_ADD_INFO_LEN))
		m->v[WIRE_CM_F_ADD_INFO_LEN] = rnd() % (WIRE_CM_INFO_LEN + 1);
	for (unsigned g = 0; g < 4; g++)
		if (wire_cm_has_field(attr, WIRE_CM_F_PRI_LOCAL_GID + g))
			rnd_bytes(m->gid[g], 16);
	if (wire_cm_has_field(attr, WIRE_CM_F_INFO))
		rnd_bytes(m->info, sizeof(m->info));
	rnd_bytes(m->pdata, wire_cm_pdata_len(attr));
}

static void test_roundtrip(void)
{
	uint8_t mad[WIRE_MAD_LEN], again[WIRE_MAD_LEN];
	struct wire_mad_hdr h, hd;
	struct wire_cm_msg m, d;

	for (unsigned a = 0; a < NATTRS; a++) {
		for (unsigned i = 0; i < ROUNDS; i++) {
			random_msg(attrs[a], &m);
			wire_mad_hdr_init_cm(&h, attrs[a], rnd());
			h.status = (uint16_t)rnd();
			h.class_specific = (uint16_t)rnd();
			h.attr_mod = (uint32_t)rnd();
			CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
			CHECK_EQ(wire_mad_decode(mad, sizeof(mad), WIRE_MAD_STRICT, &hd, &d),
				 WIRE_MAD_OK);
			CHECK(memcmp(&h, &hd, sizeof(h)) == 0, "%s header", wire_cm_attr_name(attrs[a]));
			CHECK_EQ(d.attr, attrs[a]);
			for (unsigned f = 0; f < WIRE_CM_F_NUM_INT; f++)
				CHECK(d.v[f] == m.v[f], "%s %s: %llx != %llx",
				      wire_cm_attr_name(attrs[a]), wire_cm_field_name(f),
				      (unsigned long long)d.v[f], (unsigned long long)m.v[f]);
			CHECK(memcmp(d.gid, m.gid, sizeof(m.gid)) == 0, "gids");
			CHECK(memcmp(d.info, m.info, sizeof(m.info)) == 0, "info");
			CHECK(memcmp(d.pdata, m.pdata, sizeof(m.pdata)) == 0, "pdata");
			CHECK_EQ(wire_mad_encode(again, &hd, &d), 0);
			CHECK(memcmp(mad, again, sizeof(mad)) == 0, "re-encode");
		}
	}
}

/* All fields of an attribute are disjoint and inside the 232 data bytes:
 * decoding all-ones and re-encoding sets exactly sum(widths) bits. */
static void test_layout(void)
{
	static const unsigned pdata[NATTRS] = {
		WIRE_CM_REQ_PDATA, WIRE_CM_MRA_PDATA, WIRE_CM_REJ_PDATA,
		WIRE_CM_REP_PDATA, WIRE_CM_RTU_PDATA, WIRE_CM_DREQ_PDATA,
		WIRE_CM_DREP_PDATA, WIRE_CM_SIDR_REQ_PDATA, WIRE_CM_SIDR_REP_PDATA,
		WIRE_CM_LAP_PDATA, WIRE_CM_APR_PDATA,
	};
	uint8_t mad[WIRE_MAD_LEN], out[WIRE_MAD_LEN];
	struct wire_mad_hdr h;
	struct wire_cm_msg m;

	for (unsigned a = 0; a < NATTRS; a++) {
		unsigned sum = 0;

		CHECK_EQ(wire_cm_pdata_len(attrs[a]), pdata[a]);
		for (unsigned f = 0; f < WIRE_CM_F_NUM; f++)
			sum += wire_cm_field_bits(attrs[a], f);
		wire_mad_hdr_init_cm(&h, attrs[a], 0);
		memset(mad, 0xFF, sizeof(mad));
		wire_mad_hdr_encode(mad, &h);
		/* lenient: the info lengths read as 0x7F/0xFF are rejected but
		 * the fields are filled all the same */
		(void)wire_mad_decode(mad, sizeof(mad), 0, &h, &m);
		CHECK_EQ(wire_mad_encode(out, &h, &m), 0);
		CHECK(popcount_buf(out + WIRE_MAD_HDR_LEN, WIRE_MAD_DATA_LEN) == sum,
		      "%s: %u bits set, fields cover %u", wire_cm_attr_name(attrs[a]),
		      popcount_buf(out + WIRE_MAD_HDR_LEN, WIRE_MAD_DATA_LEN), sum);
		/* the private data ends the attribute */
		for (unsigned i = WIRE_MAD_LEN - pdata[a]; i < WIRE_MAD_LEN; i++)
			CHECK(out[i] == 0xFF, "%s pdata byte %u", wire_cm_attr_name(attrs[a]), i);
	}
	CHECK_EQ(wire_cm_pdata_len(0x0001), 0);
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_RTU, WIRE_CM_F_LOCAL_QPN), 0);
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_LOCAL_GID), 128);
}

/* Known answers: bytes written from IBTA tables 106/108/110/120 by hand. */
static void test_known(void)
{
	uint8_t mad[WIRE_MAD_LEN];
	const uint8_t *d = mad + WIRE_MAD_HDR_LEN;
	struct wire_mad_hdr h;
	struct wire_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REQ;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x11223344;
	m.v[WIRE_CM_F_SERVICE_ID] = 0x0000000001064853ull;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0xABCDEF;
	m.v[WIRE_CM_F_RESPONDER_RESOURCES] = 0x10;
	m.v[WIRE_CM_F_INITIATOR_DEPTH] = 0x20;
	m.v[WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT] = 20;  /* 10100 */
	m.v[WIRE_CM_F_TRANSPORT_TYPE] = 1;           /* 01 */
	m.v[WIRE_CM_F_E2E_FLOW_CONTROL] = 1;
	m.v[WIRE_CM_F_STARTING_PSN] = 0x123456;
	m.v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT] = 0x13;
	m.v[WIRE_CM_F_RETRY_COUNT] = 7;
	m.v[WIRE_CM_F_PKEY] = 0xFFFF;
	m.v[WIRE_CM_F_PATH_MTU] = 3;
	m.v[WIRE_CM_F_RNR_RETRY_COUNT] = 6;
	m.v[WIRE_CM_F_MAX_CM_RETRIES] = 15;
	m.v[WIRE_CM_F_SRQ] = 1;
	m.v[WIRE_CM_F_PRI_FLOW_LABEL] = 0xABCDE;
	m.v[WIRE_CM_F_PRI_PACKET_RATE] = 0x3F;
	m.v[WIRE_CM_F_PRI_SL] = 0x5;
	m.v[WIRE_CM_F_PRI_SUBNET_LOCAL] = 1;
	m.v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT] = 0x13;
	m.v[WIRE_CM_F_SAP_SUPPORTED] = 1;
	m.gid[0][15] = 0x77;
	m.pdata[0] = 0xAA;
	wire_mad_hdr_init_cm(&h, 0, 0x0102030405060708ull);
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	CHECK(mad[0] == 1 && mad[1] == 7 && mad[2] == 2 && mad[3] == 3, "mad hdr");
	CHECK(mad[8] == 1 && mad[15] == 8, "tid");
	CHECK(mad[16] == 0 && mad[17] == 0x10, "attr id");
	CHECK(d[0] == 0x11 && d[3] == 0x44, "comm id");
	CHECK(d[13] == 0x06 && d[14] == 0x48 && d[15] == 0x53, "service id");
	CHECK(d[32] == 0xAB && d[33] == 0xCD && d[34] == 0xEF && d[35] == 0x10, "qpn/rr");
	CHECK_EQ(d[39], 0x20);
	CHECK_EQ(d[43], 0xA3);  /* 10100 01 1 */
	CHECK(d[44] == 0x12 && d[46] == 0x56, "psn");
	CHECK_EQ(d[47], 0x9F);  /* 10011 111 */
	CHECK(d[48] == 0xFF && d[49] == 0xFF, "pkey");
	CHECK_EQ(d[50], 0x36);  /* 0011 0 110 */
	CHECK_EQ(d[51], 0xF8);  /* 1111 1 000 */
	CHECK_EQ(d[56 + 15], 0x77);
	CHECK(d[88] == 0xAB && d[89] == 0xCD && d[90] == 0xE0, "flow label");
	CHECK_EQ(d[91], 0x3F);
	CHECK_EQ(d[94], 0x58);  /* 0101 1 000 */
	CHECK_EQ(d[95], 0x98);  /* 10011 000 */
	CHECK_EQ(d[139], 0x04); /* 00000 1 00 */
	CHECK_EQ(d[140], 0xAA);

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REJ;
	m.v[WIRE_CM_F_MSG_REJECTED] = 2;
	m.v[WIRE_CM_F_REJ_INFO_LEN] = 72;
	m.v[WIRE_CM_F_REJ_REASON] = WIRE_CM_REJ_CONSUMER_DEFINED;
	m.info[71] = 0x5A;
	m.pdata[0] = 0xBB;
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	CHECK_EQ(d[8], 0x80);
	CHECK_EQ(d[9], 72 << 1);
	CHECK(d[10] == 0 && d[11] == 28, "reason");
	CHECK_EQ(d[12 + 71], 0x5A);
	CHECK_EQ(d[84], 0xBB);

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REP;
	m.v[WIRE_CM_F_TARGET_ACK_DELAY] = 0x1F;
	m.v[WIRE_CM_F_FAILOVER_ACCEPTED] = 2;
	m.v[WIRE_CM_F_RNR_RETRY_COUNT] = 7;
	m.v[WIRE_CM_F_SRQ] = 1;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = 0x0102030405060708ull;
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	CHECK_EQ(d[26], 0xFC);  /* 11111 10 0 */
	CHECK_EQ(d[27], 0xF0);  /* 111 1 0000 */
	CHECK(d[28] == 1 && d[35] == 8, "ca guid");
	CHECK_EQ(d[36 - 1], 8);

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_SIDR_REP;
	m.v[WIRE_CM_F_STATUS] = WIRE_CM_SIDR_NO_QP;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0x000102;
	m.v[WIRE_CM_F_SERVICE_ID] = wire_cma_service_id(WIRE_RDMA_PS_UDP, 7174);
	m.v[WIRE_CM_F_LOCAL_QKEY] = 0x01234567;
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	CHECK_EQ(d[4], 3);
	CHECK(d[9] == 1 && d[10] == 2, "sidr qpn");
	CHECK(d[16] == 0x01 && d[17] == 0x11 && d[18] == 0x1C && d[19] == 0x06, "sidr sid");
	CHECK(d[20] == 0x01 && d[23] == 0x67, "sidr qkey");

	CHECK_EQ(wire_mad_encode(mad, &h, &(struct wire_cm_msg){ .attr = 0x0001 }), -EINVAL);
}

/* One MAD against the image it must be, byte for byte: every byte zero
 * but the (offset, value) pairs listed (offsets into the whole MAD). */
static void check_image(const uint8_t *mad, const uint16_t (*set)[2], unsigned n,
			const char *what)
{
	uint8_t want[WIRE_MAD_LEN] = { 0 };

	for (unsigned i = 0; i < n; i++)
		want[set[i][0]] = (uint8_t)set[i][1];
	for (unsigned i = 0; i < WIRE_MAD_LEN; i++)
		CHECK(mad[i] == want[i], "%s byte %u: %02x, want %02x", what, i, mad[i], want[i]);
}

/* m (attribute m->attr) encoded with tid and attr_mod is exactly the
 * image set; it decodes back strictly into *hd, *d */
static void ece_round_trip(uint8_t *mad, const struct wire_cm_msg *m, uint64_t tid,
			   uint32_t attr_mod, const uint16_t (*set)[2], unsigned n,
			   const char *what, struct wire_mad_hdr *hd, struct wire_cm_msg *d)
{
	struct wire_mad_hdr h;

	wire_mad_hdr_init_cm(&h, m->attr, tid);
	h.attr_mod = attr_mod;
	CHECK_EQ(wire_mad_encode(mad, &h, m), 0);
	check_image(mad, set, n, what);
	CHECK_EQ(wire_mad_decode(mad, WIRE_MAD_LEN, WIRE_MAD_STRICT, hd, d), WIRE_MAD_OK);
}

#define IMAGE(a) (a), (unsigned)(sizeof(a) / sizeof((a)[0]))

/* ECE as the kernel puts it on the wire (cm_format_req/rep/sidr_rep and
 * cm_format_mad_ece_hdr): the vendor ID in REQ bytes 5..7, in REP bytes
 * 15, 19, 23 (high, middle, low) and in SIDR_REP bytes 6..7 and 11, the
 * options in the header's attribute modifier; decoding joins them back. */
static void test_ece(void)
{
	static const uint16_t req[][2] = {
		{ 0, 1 }, { 1, 7 }, { 2, 2 }, { 3, 3 }, { 15, 0x42 }, { 17, 0x10 },
		{ 20, 0xDE }, { 21, 0xAD }, { 22, 0xBE }, { 23, 0xEF },
		{ 24 + 0, 0x11 }, { 24 + 3, 0x44 },
		{ 24 + 5, 0x00 }, { 24 + 6, 0x1A }, { 24 + 7, 0xCE },
		{ 24 + 32, 0x00 }, { 24 + 33, 0x00 }, { 24 + 34, 0x99 },
	};
	static const uint16_t rep[][2] = {
		{ 0, 1 }, { 1, 7 }, { 2, 2 }, { 3, 3 }, { 15, 0x43 }, { 17, 0x13 },
		{ 23, 0x05 },
		{ 24 + 12, 0x12 }, { 24 + 13, 0x34 }, { 24 + 14, 0x56 }, { 24 + 15, 0xAB },
		{ 24 + 19, 0xCD },
		{ 24 + 20, 0x65 }, { 24 + 21, 0x43 }, { 24 + 22, 0x21 }, { 24 + 23, 0xEF },
	};
	static const uint16_t sidr_rep[][2] = {
		{ 0, 1 }, { 1, 7 }, { 2, 2 }, { 3, 3 }, { 15, 0x44 }, { 17, 0x18 },
		{ 20, 0x80 },
		{ 24 + 6, 0x12 }, { 24 + 7, 0x34 }, { 24 + 10, 0x07 }, { 24 + 11, 0x56 },
	};
	uint8_t mad[WIRE_MAD_LEN];
	struct wire_mad_hdr hd;
	struct wire_cm_msg m, d;

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REQ;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x11000044;
	m.v[WIRE_CM_F_VENDOR_ID] = 0x001ACE;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0x99;
	ece_round_trip(mad, &m, 0x42, 0xDEADBEEF, IMAGE(req), "REQ", &hd, &d);
	CHECK_EQ(d.v[WIRE_CM_F_VENDOR_ID], 0x001ACE);
	CHECK_EQ(hd.attr_mod, 0xDEADBEEF);

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REP;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0x123456;
	m.v[WIRE_CM_F_STARTING_PSN] = 0x654321;
	m.v[WIRE_CM_F_VENDOR_ID] = 0xFFABCDEF; /* 24 bits go */
	ece_round_trip(mad, &m, 0x43, 5, IMAGE(rep), "REP", &hd, &d);
	CHECK_EQ(d.v[WIRE_CM_F_VENDOR_ID], 0xABCDEF);
	CHECK_EQ(d.v[WIRE_CM_F_LOCAL_QPN], 0x123456);
	CHECK_EQ(d.v[WIRE_CM_F_STARTING_PSN], 0x654321);
	CHECK_EQ(hd.attr_mod, 5);
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_REP, WIRE_CM_F_VENDOR_ID), 24);
	/* a REP from a peer without ECE: all three bytes zero, vendor ID 0 */
	mad[24 + 15] = mad[24 + 19] = mad[24 + 23] = 0;
	CHECK_EQ(wire_mad_decode(mad, sizeof(mad), WIRE_MAD_STRICT, &hd, &d), WIRE_MAD_OK);
	CHECK_EQ(d.v[WIRE_CM_F_VENDOR_ID], 0);

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_SIDR_REP;
	m.v[WIRE_CM_F_LOCAL_QPN] = 7;
	m.v[WIRE_CM_F_VENDOR_ID] = 0x123456;
	ece_round_trip(mad, &m, 0x44, 0x80000000, IMAGE(sidr_rep), "SIDR_REP", &hd, &d);
	CHECK_EQ(d.v[WIRE_CM_F_VENDOR_ID], 0x123456);
	CHECK_EQ(d.v[WIRE_CM_F_LOCAL_QPN], 7);
	/* nothing else carries ECE: no vendor ID in REJ, RTU, DREQ */
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_REJ, WIRE_CM_F_VENDOR_ID), 0);
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_RTU, WIRE_CM_F_VENDOR_ID), 0);
	CHECK_EQ(wire_cm_field_bits(WIRE_CM_ATTR_SIDR_REQ, WIRE_CM_F_VENDOR_ID), 0);
}

static void base_mad(uint8_t *mad, uint16_t attr)
{
	struct wire_mad_hdr h;
	struct wire_cm_msg m;

	random_msg(attr, &m);
	wire_mad_hdr_init_cm(&h, attr, rnd());
	(void)wire_mad_encode(mad, &h, &m);
}

static enum wire_mad_reason dec(const uint8_t *mad, size_t len, unsigned flags)
{
	struct wire_mad_hdr h;
	struct wire_cm_msg m;

	return wire_mad_decode(mad, len, flags, &h, &m);
}

static void test_reasons(void)
{
	uint8_t mad[WIRE_MAD_LEN + 1], mask[WIRE_MAD_LEN];
	struct wire_mad_hdr h;
	struct wire_cm_msg m;

	for (unsigned a = 0; a < NATTRS; a++) {
		base_mad(mad, attrs[a]);
		mad[WIRE_MAD_LEN] = 0;
		for (size_t len = 0; len < WIRE_MAD_LEN; len++)
			CHECK(dec(mad, len, 0) == WIRE_MAD_R_SHORT, "%s len %zu",
			      wire_cm_attr_name(attrs[a]), len);
		CHECK_EQ(dec(mad, WIRE_MAD_LEN + 1, 0), WIRE_MAD_R_LONG);
		CHECK_EQ(dec(mad, WIRE_MAD_LEN, WIRE_MAD_STRICT), WIRE_MAD_OK);

		/* the bits the layout owns, from an all-ones decode */
		memset(mad + WIRE_MAD_HDR_LEN, 0xFF, WIRE_MAD_DATA_LEN);
		(void)wire_mad_decode(mad, WIRE_MAD_LEN, 0, &h, &m);
		(void)wire_mad_encode(mask, &h, &m);
		/* every reserved bit: rejected strictly, ignored leniently */
		base_mad(mad, attrs[a]);
		for (unsigned i = WIRE_MAD_HDR_LEN; i < WIRE_MAD_LEN; i++) {
			for (unsigned b = 0; b < 8; b++) {
				uint8_t bit = (uint8_t)(1u << b);

				if (mask[i] & bit)
					continue;
				mad[i] ^= bit;
				CHECK(dec(mad, WIRE_MAD_LEN, WIRE_MAD_STRICT) == WIRE_MAD_R_RESERVED,
				      "%s byte %u bit %u", wire_cm_attr_name(attrs[a]), i, b);
				CHECK(dec(mad, WIRE_MAD_LEN, 0) == WIRE_MAD_OK,
				      "%s lenient byte %u bit %u", wire_cm_attr_name(attrs[a]), i, b);
				mad[i] ^= bit;
			}
		}
	}

	base_mad(mad, WIRE_CM_ATTR_REQ);
	mad[0] = 2;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_BASE_VERSION);
	base_mad(mad, WIRE_CM_ATTR_REQ);
	mad[1] = 0x03; /* SA */
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_CLASS);
	base_mad(mad, WIRE_CM_ATTR_REQ);
	mad[2] = 1;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_CLASS_VERSION);
	for (unsigned meth = 0; meth < 256; meth++) {
		base_mad(mad, WIRE_CM_ATTR_REP);
		mad[3] = (uint8_t)meth;
		CHECK(dec(mad, WIRE_MAD_LEN, 0) ==
		      (meth == WIRE_MAD_METHOD_SEND ? WIRE_MAD_OK : WIRE_MAD_R_METHOD),
		      "method %#x", meth);
	}
	for (unsigned attr = 0; attr < 0x10000; attr += 7) {
		base_mad(mad, WIRE_CM_ATTR_RTU);
		wire_put_be16(mad + 16, (uint16_t)attr);
		CHECK(dec(mad, WIRE_MAD_LEN, 0) ==
		      (wire_cm_attr_known((uint16_t)attr) ? WIRE_MAD_OK : WIRE_MAD_R_ATTR),
		      "attr %#x", attr);
	}
	base_mad(mad, WIRE_CM_ATTR_RTU);
	wire_put_be16(mad + 16, WIRE_CM_ATTR_CLASSPORTINFO);
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_ATTR);
	base_mad(mad, WIRE_CM_ATTR_DREQ);
	mad[19] = 1;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, WIRE_MAD_STRICT), WIRE_MAD_R_HDR_RESERVED);
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_OK);
	base_mad(mad, WIRE_CM_ATTR_REJ);
	mad[WIRE_MAD_HDR_LEN + 9] = 73 << 1;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_INFO_LEN);
	mad[WIRE_MAD_HDR_LEN + 9] = 72 << 1;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_OK);
	base_mad(mad, WIRE_CM_ATTR_SIDR_REP);
	mad[WIRE_MAD_HDR_LEN + 5] = 73;
	CHECK_EQ(dec(mad, WIRE_MAD_LEN, 0), WIRE_MAD_R_INFO_LEN);

	for (unsigned r = 0; r < WIRE_MAD_R_NUM; r++)
		CHECK(strcmp(wire_mad_reason_str(r), "?") != 0, "reason %u has a name", r);
	CHECK(strcmp(wire_cm_rej_reason_str(28), "consumer-defined") == 0, "rej 28");
	CHECK(wire_cm_rej_reason_str(34) == NULL && wire_cm_rej_reason_str(999) == NULL, "rej ?");
}

static void test_cma(void)
{
	struct wire_cma_hdr h, d;
	uint8_t buf[WIRE_CMA_HDR_LEN];
	uint16_t ps, port;

	CHECK_EQ(wire_cma_service_id(WIRE_RDMA_PS_TCP, 18515), 0x0000000001064853ull);
	CHECK_EQ(wire_cma_service_id(WIRE_RDMA_PS_UDP, 1), 0x0000000001110001ull);
	CHECK_EQ(wire_cma_service_id(WIRE_RDMA_PS_IB, 0xFFFF), 0x00000000013FFFFFull);
	CHECK_EQ(wire_cma_service_parse(0x0000000001064853ull, &ps, &port), 0);
	CHECK(ps == WIRE_RDMA_PS_TCP && port == 18515, "parse tcp");
	CHECK_EQ(wire_cma_service_parse(0x0000000101064853ull, &ps, &port), -EINVAL);
	CHECK_EQ(wire_cma_service_parse(0x0000000001074853ull, &ps, &port), -EINVAL);

	CHECK_EQ(wire_cma_user_pdata_len(WIRE_CM_ATTR_REQ, WIRE_RDMA_PS_TCP), 56);
	CHECK_EQ(wire_cma_user_pdata_len(WIRE_CM_ATTR_REQ, WIRE_RDMA_PS_IB), 92);
	CHECK_EQ(wire_cma_user_pdata_len(WIRE_CM_ATTR_SIDR_REQ, WIRE_RDMA_PS_UDP), 180);
	CHECK_EQ(wire_cma_user_pdata_len(WIRE_CM_ATTR_REP, WIRE_RDMA_PS_TCP), 196);
	CHECK_EQ(wire_cma_user_pdata_len(WIRE_CM_ATTR_REJ, WIRE_RDMA_PS_TCP), 148);

	memset(&h, 0, sizeof(h));
	h.ip_version = 4;
	h.src_port = 0x895D;
	CHECK(wire_gid_parse(&h.src, "10.77.0.12") && wire_gid_parse(&h.dst, "10.77.0.11"), "gid");
	CHECK_EQ(wire_cma_hdr_encode(buf, &h), 0);
	CHECK(buf[0] == 0 && buf[1] == 0x40 && buf[2] == 0x89 && buf[3] == 0x5D, "cma v4 head");
	for (unsigned i = 4; i < 16; i++)
		CHECK_EQ(buf[i], 0);
	CHECK(buf[16] == 10 && buf[19] == 12 && buf[32] == 10 && buf[35] == 11, "cma v4 addrs");
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf), &d), 0);
	CHECK(memcmp(&h, &d, sizeof(h)) == 0, "cma v4 round trip");
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf) - 1, &d), -EINVAL);
	buf[4] = 1;  /* pad must be zero */
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf), &d), -EINVAL);

	h.ip_version = 6;
	CHECK(wire_gid_parse(&h.src, "fd00::1") && wire_gid_parse(&h.dst, "fe80::2"), "gid6");
	CHECK_EQ(wire_cma_hdr_encode(buf, &h), 0);
	CHECK(buf[1] == 0x60 && buf[4] == 0xFD && buf[35] == 2, "cma v6");
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf), &d), 0);
	CHECK(memcmp(&h, &d, sizeof(h)) == 0, "cma v6 round trip");
	buf[0] = 1;
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf), &d), -EINVAL);
	buf[0] = 0;
	buf[1] = 0x50;
	CHECK_EQ(wire_cma_hdr_decode(buf, sizeof(buf), &d), -EINVAL);
	h.ip_version = 4;  /* an IPv6 address cannot go in an IPv4 header */
	CHECK_EQ(wire_cma_hdr_encode(buf, &h), -EINVAL);
	h.ip_version = 5;
	CHECK_EQ(wire_cma_hdr_encode(buf, &h), -EINVAL);
}

static void test_gsi_pkt(void)
{
	uint8_t mad[WIRE_MAD_LEN], frame[512];
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
	struct wire_pkt d, p;
	size_t len;

	for (uint8_t ver = 4; ver <= 6; ver += 2) {
		base_mad(mad, WIRE_CM_ATTR_REQ);
		wire_gsi_pkt_init(&d, ver, mad, 0x1234567);
		CHECK(wire_gid_parse(&d.ip.src, ver == 4 ? "10.0.0.1" : "fd00::1"), "src");
		CHECK(wire_gid_parse(&d.ip.dst, ver == 4 ? "10.0.0.2" : "fd00::2"), "dst");
		CHECK_EQ(wire_build(&d, frame, sizeof(frame), 0, &len), 0);
		CHECK_EQ(wire_parse(frame, len, &p), WIRE_OK);
		CHECK(wire_pkt_is_gsi(&p), "is gsi");
		CHECK(p.bth.pkey == 0xFFFF && p.deth.qkey == 0x80010000u && p.deth.sqpn == 1 &&
		      p.bth.psn == 0x234567 && p.payload_len == 256, "gsi fields");
		CHECK_EQ(wire_gsi_pkt_decode(&p, WIRE_MAD_STRICT, &h, &m), WIRE_MAD_OK);
		CHECK_EQ(m.attr, WIRE_CM_ATTR_REQ);
		p.deth.qkey = 0x80010001u;
		CHECK_EQ(wire_gsi_pkt_decode(&p, 0, &h, &m), WIRE_MAD_R_QKEY);
		p.bth.dqpn = 2;
		CHECK(!wire_pkt_is_gsi(&p), "qpn 2 is not gsi");
		p.payload_len = 255;
		CHECK_EQ(wire_gsi_pkt_decode(&p, 0, &h, &m), WIRE_MAD_R_SHORT);
	}
}

int main(void)
{
	rng_state = SEED;
	printf("test_mad: seed %#x\n", SEED);
	test_roundtrip();
	test_layout();
	test_known();
	test_ece();
	test_reasons();
	test_cma();
	test_gsi_pkt();
	return t_done("wire-mad");
}
