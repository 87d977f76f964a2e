/* SPDX-License-Identifier: MIT */
/* CM MADs: one table of field locations per attribute; a generic MSB-first
 * bit-field reader/writer does the rest. Offsets are relative to the
 * attribute data (MAD byte 24), bit offsets count from the MSB of the byte,
 * exactly as the IBTA tables (and the kernel's ibta_vol1_c12.h) write them.
 * A field may be split over several locations (the vendor ID of REP and
 * SIDR_REP fills reserved bytes between other fields): its pieces are
 * listed most significant first and joined into one value. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "bytes.h"
#include "mad.h"

struct cm_loc {
	uint8_t  field;  /* enum wire_cm_field */
	uint8_t  byte;   /* offset into the attribute data */
	uint8_t  bit;    /* first bit, 0 = MSB of the byte */
	uint16_t bits;   /* width; byte strings: multiple of 8 with bit 0 */
};

struct cm_layout {
	uint16_t attr;
	const char *name;
	uint8_t pdata_off;      /* private data runs to the end of the data */
	const struct cm_loc *locs;
	unsigned nlocs;
};

#define F(f) WIRE_CM_F_##f

/* Table 106 REQ */
static const struct cm_loc req_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(VENDOR_ID), 5, 0, 24 },
	{ F(SERVICE_ID), 8, 0, 64 },
	{ F(LOCAL_CA_GUID), 16, 0, 64 },
	{ F(LOCAL_QKEY), 28, 0, 32 },
	{ F(LOCAL_QPN), 32, 0, 24 },
	{ F(RESPONDER_RESOURCES), 35, 0, 8 },
	{ F(LOCAL_EECN), 36, 0, 24 },
	{ F(INITIATOR_DEPTH), 39, 0, 8 },
	{ F(REMOTE_EECN), 40, 0, 24 },
	{ F(REMOTE_CM_RESP_TIMEOUT), 43, 0, 5 },
	{ F(TRANSPORT_TYPE), 43, 5, 2 },
	{ F(E2E_FLOW_CONTROL), 43, 7, 1 },
	{ F(STARTING_PSN), 44, 0, 24 },
	{ F(LOCAL_CM_RESP_TIMEOUT), 47, 0, 5 },
	{ F(RETRY_COUNT), 47, 5, 3 },
	{ F(PKEY), 48, 0, 16 },
	{ F(PATH_MTU), 50, 0, 4 },
	{ F(RDC_EXISTS), 50, 4, 1 },
	{ F(RNR_RETRY_COUNT), 50, 5, 3 },
	{ F(MAX_CM_RETRIES), 51, 0, 4 },
	{ F(SRQ), 51, 4, 1 },
	{ F(EXT_TRANSPORT_TYPE), 51, 5, 3 },
	{ F(PRI_LOCAL_LID), 52, 0, 16 },
	{ F(PRI_REMOTE_LID), 54, 0, 16 },
	{ F(PRI_LOCAL_GID), 56, 0, 128 },
	{ F(PRI_REMOTE_GID), 72, 0, 128 },
	{ F(PRI_FLOW_LABEL), 88, 0, 20 },
	{ F(PRI_PACKET_RATE), 91, 2, 6 },
	{ F(PRI_TRAFFIC_CLASS), 92, 0, 8 },
	{ F(PRI_HOP_LIMIT), 93, 0, 8 },
	{ F(PRI_SL), 94, 0, 4 },
	{ F(PRI_SUBNET_LOCAL), 94, 4, 1 },
	{ F(PRI_LOCAL_ACK_TIMEOUT), 95, 0, 5 },
	{ F(ALT_LOCAL_LID), 96, 0, 16 },
	{ F(ALT_REMOTE_LID), 98, 0, 16 },
	{ F(ALT_LOCAL_GID), 100, 0, 128 },
	{ F(ALT_REMOTE_GID), 116, 0, 128 },
	{ F(ALT_FLOW_LABEL), 132, 0, 20 },
	{ F(ALT_PACKET_RATE), 135, 2, 6 },
	{ F(ALT_TRAFFIC_CLASS), 136, 0, 8 },
	{ F(ALT_HOP_LIMIT), 137, 0, 8 },
	{ F(ALT_SL), 138, 0, 4 },
	{ F(ALT_SUBNET_LOCAL), 138, 4, 1 },
	{ F(ALT_LOCAL_ACK_TIMEOUT), 139, 0, 5 },
	{ F(SAP_SUPPORTED), 139, 5, 1 },
};

/* Table 107 MRA */
static const struct cm_loc mra_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(MSG_MRAED), 8, 0, 2 },
	{ F(SERVICE_TIMEOUT), 9, 0, 5 },
};

/* Table 108 REJ */
static const struct cm_loc rej_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(MSG_REJECTED), 8, 0, 2 },
	{ F(REJ_INFO_LEN), 9, 0, 7 },
	{ F(REJ_REASON), 10, 0, 16 },
	{ F(INFO), 12, 0, 576 },
};

/* Table 110 REP */
static const struct cm_loc rep_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(LOCAL_QKEY), 8, 0, 32 },
	{ F(LOCAL_QPN), 12, 0, 24 },
	{ F(VENDOR_ID), 15, 0, 8 },   /* bits 23:16 (ECE) */
	{ F(LOCAL_EECN), 16, 0, 24 },
	{ F(VENDOR_ID), 19, 0, 8 },   /* bits 15:8 */
	{ F(STARTING_PSN), 20, 0, 24 },
	{ F(VENDOR_ID), 23, 0, 8 },   /* bits 7:0 */
	{ F(RESPONDER_RESOURCES), 24, 0, 8 },
	{ F(INITIATOR_DEPTH), 25, 0, 8 },
	{ F(TARGET_ACK_DELAY), 26, 0, 5 },
	{ F(FAILOVER_ACCEPTED), 26, 5, 2 },
	{ F(E2E_FLOW_CONTROL), 26, 7, 1 },
	{ F(RNR_RETRY_COUNT), 27, 0, 3 },
	{ F(SRQ), 27, 3, 1 },
	{ F(LOCAL_CA_GUID), 28, 0, 64 },
};

/* Tables 111 RTU and 113 DREP: the comm IDs only */
static const struct cm_loc ids_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
};

/* Table 112 DREQ */
static const struct cm_loc dreq_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(REMOTE_QPN), 8, 0, 24 },
};

/* Table 115 LAP */
static const struct cm_loc lap_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(REMOTE_QPN), 12, 0, 24 },
	{ F(REMOTE_CM_RESP_TIMEOUT), 15, 0, 5 },
	{ F(ALT_LOCAL_LID), 20, 0, 16 },
	{ F(ALT_REMOTE_LID), 22, 0, 16 },
	{ F(ALT_LOCAL_GID), 24, 0, 128 },
	{ F(ALT_REMOTE_GID), 40, 0, 128 },
	{ F(ALT_FLOW_LABEL), 56, 0, 20 },
	{ F(ALT_TRAFFIC_CLASS), 59, 0, 8 },
	{ F(ALT_HOP_LIMIT), 60, 0, 8 },
	{ F(ALT_PACKET_RATE), 61, 2, 6 },
	{ F(ALT_SL), 62, 0, 4 },
	{ F(ALT_SUBNET_LOCAL), 62, 4, 1 },
	{ F(ALT_LOCAL_ACK_TIMEOUT), 63, 0, 5 },
};

/* Table 116 APR */
static const struct cm_loc apr_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(REMOTE_COMM_ID), 4, 0, 32 },
	{ F(ADD_INFO_LEN), 8, 0, 8 },
	{ F(STATUS), 9, 0, 8 },
	{ F(INFO), 12, 0, 576 },
};

/* Table 119 SIDR_REQ */
static const struct cm_loc sidr_req_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(PKEY), 4, 0, 16 },
	{ F(SERVICE_ID), 8, 0, 64 },
};

/* Table 120 SIDR_REP */
static const struct cm_loc sidr_rep_locs[] = {
	{ F(LOCAL_COMM_ID), 0, 0, 32 },
	{ F(STATUS), 4, 0, 8 },
	{ F(ADD_INFO_LEN), 5, 0, 8 },
	{ F(VENDOR_ID), 6, 0, 16 },   /* bits 23:8 (ECE) */
	{ F(LOCAL_QPN), 8, 0, 24 },
	{ F(VENDOR_ID), 11, 0, 8 },   /* bits 7:0 */
	{ F(SERVICE_ID), 12, 0, 64 },
	{ F(LOCAL_QKEY), 20, 0, 32 },
	{ F(INFO), 24, 0, 576 },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define L(id, nm, off, t) { WIRE_CM_ATTR_##id, nm, off, t, N(t) }

static const struct cm_layout layouts[] = {
	L(REQ, "REQ", 140, req_locs),
	L(MRA, "MRA", 10, mra_locs),
	L(REJ, "REJ", 84, rej_locs),
	L(REP, "REP", 36, rep_locs),
	L(RTU, "RTU", 8, ids_locs),
	L(DREQ, "DREQ", 12, dreq_locs),
	L(DREP, "DREP", 8, ids_locs),
	L(SIDR_REQ, "SIDR_REQ", 16, sidr_req_locs),
	L(SIDR_REP, "SIDR_REP", 96, sidr_rep_locs),
	L(LAP, "LAP", 64, lap_locs),
	L(APR, "APR", 84, apr_locs),
};

static const struct cm_layout *layout_of(uint16_t attr)
{
	for (unsigned i = 0; i < N(layouts); i++)
		if (layouts[i].attr == attr)
			return &layouts[i];
	return NULL;
}

bool wire_cm_attr_known(uint16_t attr)
{
	return layout_of(attr) != NULL;
}

const char *wire_cm_attr_name(uint16_t attr)
{
	const struct cm_layout *l = layout_of(attr);

	return l ? l->name : NULL;
}

unsigned wire_cm_pdata_len(uint16_t attr)
{
	const struct cm_layout *l = layout_of(attr);

	return l ? WIRE_MAD_DATA_LEN - l->pdata_off : 0;
}

unsigned wire_cm_field_bits(uint16_t attr, enum wire_cm_field f)
{
	const struct cm_layout *l = layout_of(attr);

	if (!l)
		return 0;
	if (f == WIRE_CM_F_PRIVATE_DATA)
		return (WIRE_MAD_DATA_LEN - l->pdata_off) * 8u;
	unsigned bits = 0;
	for (unsigned i = 0; i < l->nlocs; i++)
		if (l->locs[i].field == f)
			bits += l->locs[i].bits;
	return bits;
}

static const char *const field_names[WIRE_CM_F_NUM] = {
	[F(LOCAL_COMM_ID)] = "local_comm_id",
	[F(REMOTE_COMM_ID)] = "remote_comm_id",
	[F(VENDOR_ID)] = "vendor_id",
	[F(SERVICE_ID)] = "service_id",
	[F(LOCAL_CA_GUID)] = "local_ca_guid",
	[F(LOCAL_QKEY)] = "local_qkey",
	[F(LOCAL_QPN)] = "local_qpn",
	[F(RESPONDER_RESOURCES)] = "responder_resources",
	[F(LOCAL_EECN)] = "local_eecn",
	[F(INITIATOR_DEPTH)] = "initiator_depth",
	[F(REMOTE_EECN)] = "remote_eecn",
	[F(REMOTE_CM_RESP_TIMEOUT)] = "remote_cm_resp_timeout",
	[F(TRANSPORT_TYPE)] = "transport_type",
	[F(E2E_FLOW_CONTROL)] = "e2e_flow_control",
	[F(STARTING_PSN)] = "starting_psn",
	[F(LOCAL_CM_RESP_TIMEOUT)] = "local_cm_resp_timeout",
	[F(RETRY_COUNT)] = "retry_count",
	[F(PKEY)] = "pkey",
	[F(PATH_MTU)] = "path_mtu",
	[F(RDC_EXISTS)] = "rdc_exists",
	[F(RNR_RETRY_COUNT)] = "rnr_retry_count",
	[F(MAX_CM_RETRIES)] = "max_cm_retries",
	[F(SRQ)] = "srq",
	[F(EXT_TRANSPORT_TYPE)] = "ext_transport_type",
	[F(PRI_LOCAL_LID)] = "pri_local_lid",
	[F(PRI_REMOTE_LID)] = "pri_remote_lid",
	[F(PRI_FLOW_LABEL)] = "pri_flow_label",
	[F(PRI_PACKET_RATE)] = "pri_packet_rate",
	[F(PRI_TRAFFIC_CLASS)] = "pri_traffic_class",
	[F(PRI_HOP_LIMIT)] = "pri_hop_limit",
	[F(PRI_SL)] = "pri_sl",
	[F(PRI_SUBNET_LOCAL)] = "pri_subnet_local",
	[F(PRI_LOCAL_ACK_TIMEOUT)] = "pri_local_ack_timeout",
	[F(ALT_LOCAL_LID)] = "alt_local_lid",
	[F(ALT_REMOTE_LID)] = "alt_remote_lid",
	[F(ALT_FLOW_LABEL)] = "alt_flow_label",
	[F(ALT_PACKET_RATE)] = "alt_packet_rate",
	[F(ALT_TRAFFIC_CLASS)] = "alt_traffic_class",
	[F(ALT_HOP_LIMIT)] = "alt_hop_limit",
	[F(ALT_SL)] = "alt_sl",
	[F(ALT_SUBNET_LOCAL)] = "alt_subnet_local",
	[F(ALT_LOCAL_ACK_TIMEOUT)] = "alt_local_ack_timeout",
	[F(SAP_SUPPORTED)] = "sap_supported",
	[F(MSG_MRAED)] = "msg_mraed",
	[F(SERVICE_TIMEOUT)] = "service_timeout",
	[F(MSG_REJECTED)] = "msg_rejected",
	[F(REJ_INFO_LEN)] = "rej_info_len",
	[F(REJ_REASON)] = "rej_reason",
	[F(TARGET_ACK_DELAY)] = "target_ack_delay",
	[F(FAILOVER_ACCEPTED)] = "failover_accepted",
	[F(REMOTE_QPN)] = "remote_qpn",
	[F(STATUS)] = "status",
	[F(ADD_INFO_LEN)] = "add_info_len",
	[F(PRI_LOCAL_GID)] = "pri_local_gid",
	[F(PRI_REMOTE_GID)] = "pri_remote_gid",
	[F(ALT_LOCAL_GID)] = "alt_local_gid",
	[F(ALT_REMOTE_GID)] = "alt_remote_gid",
	[F(INFO)] = "info",
	[F(PRIVATE_DATA)] = "private_data",
};

const char *wire_cm_field_name(enum wire_cm_field f)
{
	if ((unsigned)f >= WIRE_CM_F_NUM || !field_names[f])
		return "?";
	return field_names[f];
}

static const char *const rej_names[] = {
	[1] = "no-qp", [2] = "no-eec", [3] = "no-resources", [4] = "timeout",
	[5] = "unsupported", [6] = "invalid-comm-id", [7] = "invalid-comm-instance",
	[8] = "invalid-service-id", [9] = "invalid-transport-type",
	[10] = "stale-conn", [11] = "rdc-not-exist", [12] = "invalid-gid",
	[13] = "invalid-lid", [14] = "invalid-sl", [15] = "invalid-traffic-class",
	[16] = "invalid-hop-limit", [17] = "invalid-packet-rate",
	[18] = "invalid-alt-gid", [19] = "invalid-alt-lid", [20] = "invalid-alt-sl",
	[21] = "invalid-alt-traffic-class", [22] = "invalid-alt-hop-limit",
	[23] = "invalid-alt-packet-rate", [24] = "port-cm-redirect",
	[25] = "port-redirect", [26] = "invalid-mtu",
	[27] = "insufficient-resp-resources", [28] = "consumer-defined",
	[29] = "invalid-rnr-retry", [30] = "duplicate-local-comm-id",
	[31] = "invalid-class-version", [32] = "invalid-flow-label",
	[33] = "invalid-alt-flow-label", [35] = "vendor-option-not-supported",
};

const char *wire_cm_rej_reason_str(uint16_t reason)
{
	return reason < N(rej_names) ? rej_names[reason] : NULL;
}

static const char *const reason_names[WIRE_MAD_R_NUM] = {
	[WIRE_MAD_OK] = "ok",
	[WIRE_MAD_R_SHORT] = "short",
	[WIRE_MAD_R_LONG] = "long",
	[WIRE_MAD_R_BASE_VERSION] = "bad-base-version",
	[WIRE_MAD_R_CLASS] = "not-cm-class",
	[WIRE_MAD_R_CLASS_VERSION] = "bad-class-version",
	[WIRE_MAD_R_METHOD] = "bad-method",
	[WIRE_MAD_R_ATTR] = "bad-attr",
	[WIRE_MAD_R_HDR_RESERVED] = "hdr-reserved",
	[WIRE_MAD_R_RESERVED] = "reserved-bits",
	[WIRE_MAD_R_INFO_LEN] = "bad-info-len",
	[WIRE_MAD_R_QKEY] = "bad-qkey",
};

const char *wire_mad_reason_str(enum wire_mad_reason r)
{
	return (unsigned)r < WIRE_MAD_R_NUM ? reason_names[r] : "?";
}

/* ---- bit fields, MSB first ---- */

static uint64_t bits_get(const uint8_t *d, unsigned pos, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned b = pos + i;

		v = v << 1 | ((d[b / 8] >> (7 - b % 8)) & 1u);
	}
	return v;
}

static void bits_put(uint8_t *d, unsigned pos, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned b = pos + i;
		uint8_t m = (uint8_t)(1u << (7 - b % 8));

		if ((v >> (n - 1 - i)) & 1u)
			d[b / 8] |= m;
		else
			d[b / 8] &= (uint8_t)~m;
	}
}

/* Set @p n bits from @p pos (any width: GIDs and ARI are wider than 64). */
static void bits_set(uint8_t *d, unsigned pos, unsigned n)
{
	for (unsigned b = pos; b < pos + n; b++)
		d[b / 8] |= (uint8_t)(1u << (7 - b % 8));
}

/* Offset of a byte-string field's storage in struct wire_cm_msg. */
static size_t bytes_off(unsigned f)
{
	switch (f) {
	case F(PRI_LOCAL_GID): return offsetof(struct wire_cm_msg, gid[0]);
	case F(PRI_REMOTE_GID): return offsetof(struct wire_cm_msg, gid[1]);
	case F(ALT_LOCAL_GID): return offsetof(struct wire_cm_msg, gid[2]);
	case F(ALT_REMOTE_GID): return offsetof(struct wire_cm_msg, gid[3]);
	default: return offsetof(struct wire_cm_msg, info);
	}
}

/* Mark the bits a layout defines (private data included) in @p mask. */
static void layout_mask(const struct cm_layout *l, uint8_t mask[WIRE_MAD_DATA_LEN])
{
	memset(mask, 0, WIRE_MAD_DATA_LEN);
	for (unsigned i = 0; i < l->nlocs; i++)
		bits_set(mask, l->locs[i].byte * 8u + l->locs[i].bit, l->locs[i].bits);
	memset(mask + l->pdata_off, 0xFF, WIRE_MAD_DATA_LEN - l->pdata_off);
}

/* Bits of the pieces of location i's field that follow it: how far its
 * piece of the value is shifted. */
static unsigned loc_shift(const struct cm_layout *l, unsigned i)
{
	unsigned sh = 0;

	for (unsigned j = i + 1; j < l->nlocs; j++)
		if (l->locs[j].field == l->locs[i].field)
			sh += l->locs[j].bits;
	return sh;
}

/* bits_put() takes at most 64 bits of value; wider fields are byte strings. */
static void loc_put(uint8_t *d, const struct cm_layout *l, unsigned i,
		    const struct wire_cm_msg *msg)
{
	const struct cm_loc *c = &l->locs[i];

	if (c->field >= WIRE_CM_F_NUM_INT) {
		memcpy(d + c->byte, (const uint8_t *)msg + bytes_off(c->field), c->bits / 8u);
		return;
	}
	bits_put(d, c->byte * 8u + c->bit, c->bits, msg->v[c->field] >> loc_shift(l, i));
}

/* msg starts zeroed: the pieces of a split field accumulate in order */
static void loc_get(const uint8_t *d, const struct cm_loc *c, struct wire_cm_msg *msg)
{
	if (c->field >= WIRE_CM_F_NUM_INT) {
		memcpy((uint8_t *)msg + bytes_off(c->field), d + c->byte, c->bits / 8u);
		return;
	}
	uint64_t hi = c->bits < 64 ? msg->v[c->field] << c->bits : 0;

	msg->v[c->field] = hi | bits_get(d, c->byte * 8u + c->bit, c->bits);
}

/* ---- header ---- */

void wire_mad_hdr_decode(const uint8_t *p, struct wire_mad_hdr *h)
{
	h->base_version = p[0];
	h->mgmt_class = p[1];
	h->class_version = p[2];
	h->method = p[3];
	h->status = wire_get_be16(p + 4);
	h->class_specific = wire_get_be16(p + 6);
	h->tid = wire_get_be64(p + 8);
	h->attr_id = wire_get_be16(p + 16);
	h->resv = wire_get_be16(p + 18);
	h->attr_mod = wire_get_be32(p + 20);
}

void wire_mad_hdr_encode(uint8_t *p, const struct wire_mad_hdr *h)
{
	p[0] = h->base_version;
	p[1] = h->mgmt_class;
	p[2] = h->class_version;
	p[3] = h->method;
	wire_put_be16(p + 4, h->status);
	wire_put_be16(p + 6, h->class_specific);
	wire_put_be64(p + 8, h->tid);
	wire_put_be16(p + 16, h->attr_id);
	wire_put_be16(p + 18, h->resv);
	wire_put_be32(p + 20, h->attr_mod);
}

void wire_mad_hdr_init_cm(struct wire_mad_hdr *h, uint16_t attr, uint64_t tid)
{
	memset(h, 0, sizeof(*h));
	h->base_version = WIRE_MAD_BASE_VERSION;
	h->mgmt_class = WIRE_MAD_CLASS_CM;
	h->class_version = WIRE_MAD_CM_CLASS_VERSION;
	h->method = WIRE_MAD_METHOD_SEND;
	h->attr_id = attr;
	h->tid = tid;
}

/* ---- whole MAD ---- */

static enum wire_mad_reason check_hdr(const struct wire_mad_hdr *h, unsigned flags)
{
	if (h->base_version != WIRE_MAD_BASE_VERSION)
		return WIRE_MAD_R_BASE_VERSION;
	if (h->mgmt_class != WIRE_MAD_CLASS_CM)
		return WIRE_MAD_R_CLASS;
	if (h->class_version != WIRE_MAD_CM_CLASS_VERSION)
		return WIRE_MAD_R_CLASS_VERSION;
	if (!wire_cm_attr_known(h->attr_id))
		return WIRE_MAD_R_ATTR;
	if (h->method != WIRE_MAD_METHOD_SEND)
		return WIRE_MAD_R_METHOD;
	if ((flags & WIRE_MAD_STRICT) && h->resv)
		return WIRE_MAD_R_HDR_RESERVED;
	return WIRE_MAD_OK;
}

static bool reserved_clear(const struct cm_layout *l, const uint8_t *d)
{
	uint8_t mask[WIRE_MAD_DATA_LEN];

	layout_mask(l, mask);
	for (unsigned i = 0; i < WIRE_MAD_DATA_LEN; i++)
		if (d[i] & (uint8_t)~mask[i])
			return false;
	return true;
}

enum wire_mad_reason wire_mad_decode(const uint8_t *mad, size_t len, unsigned flags,
				     struct wire_mad_hdr *hdr, struct wire_cm_msg *msg)
{
	const struct cm_layout *l;
	const uint8_t *d = mad + WIRE_MAD_HDR_LEN;
	enum wire_mad_reason r;

	memset(hdr, 0, sizeof(*hdr));
	memset(msg, 0, sizeof(*msg));
	if (len < WIRE_MAD_HDR_LEN)
		return WIRE_MAD_R_SHORT;
	wire_mad_hdr_decode(mad, hdr);
	if (len < WIRE_MAD_LEN)
		return WIRE_MAD_R_SHORT;
	if (len > WIRE_MAD_LEN)
		return WIRE_MAD_R_LONG;
	r = check_hdr(hdr, flags);
	if (r != WIRE_MAD_OK)
		return r;
	l = layout_of(hdr->attr_id);
	msg->attr = l->attr;
	for (unsigned i = 0; i < l->nlocs; i++)
		loc_get(d, &l->locs[i], msg);
	memcpy(msg->pdata, d + l->pdata_off, WIRE_MAD_DATA_LEN - l->pdata_off);
	if ((flags & WIRE_MAD_STRICT) && !reserved_clear(l, d))
		return WIRE_MAD_R_RESERVED;
	if (msg->v[F(REJ_INFO_LEN)] > WIRE_CM_INFO_LEN ||
	    msg->v[F(ADD_INFO_LEN)] > WIRE_CM_INFO_LEN)
		return WIRE_MAD_R_INFO_LEN;
	return WIRE_MAD_OK;
}

int wire_mad_encode(uint8_t out[WIRE_MAD_LEN], const struct wire_mad_hdr *hdr,
		    const struct wire_cm_msg *msg)
{
	const struct cm_layout *l = layout_of(msg->attr);
	struct wire_mad_hdr h = *hdr;
	uint8_t *d = out + WIRE_MAD_HDR_LEN;

	if (!l)
		return -EINVAL;
	h.attr_id = msg->attr;
	memset(out, 0, WIRE_MAD_LEN);
	wire_mad_hdr_encode(out, &h);
	for (unsigned i = 0; i < l->nlocs; i++)
		loc_put(d, l, i, msg);
	memcpy(d + l->pdata_off, msg->pdata, WIRE_MAD_DATA_LEN - l->pdata_off);
	return 0;
}

/* ---- rdma_cm addressing ---- */

int wire_cma_service_parse(uint64_t sid, uint16_t *ps, uint16_t *port)
{
	uint16_t s = (uint16_t)(sid >> 16);

	if (sid >> 32)
		return -EINVAL;
	if (s != WIRE_RDMA_PS_IPOIB && s != WIRE_RDMA_PS_TCP &&
	    s != WIRE_RDMA_PS_UDP && s != WIRE_RDMA_PS_IB)
		return -EINVAL;
	*ps = s;
	*port = (uint16_t)sid;
	return 0;
}

unsigned wire_cma_user_pdata_len(uint16_t attr, uint16_t ps)
{
	unsigned n = wire_cm_pdata_len(attr);

	if ((attr == WIRE_CM_ATTR_REQ || attr == WIRE_CM_ATTR_SIDR_REQ) &&
	    ps != WIRE_RDMA_PS_IB)
		n -= WIRE_CMA_HDR_LEN;
	return n;
}

/* cma_hdr carries IPv4 as 12 zero bytes + the address (union cma_ip_addr). */
static int cma_addr_put(uint8_t *p, uint8_t ver, const struct wire_gid *g)
{
	uint8_t ip4[4];

	if (ver == 6) {
		memcpy(p, g->raw, 16);
		return 0;
	}
	if (!wire_gid_to_ipv4(g, ip4))
		return -EINVAL;
	memset(p, 0, 12);
	memcpy(p + 12, ip4, 4);
	return 0;
}

static int cma_addr_get(const uint8_t *p, uint8_t ver, struct wire_gid *g)
{
	static const uint8_t zero[12];

	if (ver == 6) {
		wire_gid_from_ipv6(g, p);
		return 0;
	}
	if (memcmp(p, zero, 12) != 0)
		return -EINVAL;
	wire_gid_from_ipv4(g, p + 12);
	return 0;
}

int wire_cma_hdr_encode(uint8_t *p, const struct wire_cma_hdr *h)
{
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	p[0] = h->cma_version;
	p[1] = (uint8_t)(h->ip_version << 4 | (h->ip_resv & 0xF));
	wire_put_be16(p + 2, h->src_port);
	if (cma_addr_put(p + 4, h->ip_version, &h->src) ||
	    cma_addr_put(p + 20, h->ip_version, &h->dst))
		return -EINVAL;
	return 0;
}

int wire_cma_hdr_decode(const uint8_t *p, size_t len, struct wire_cma_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (len < WIRE_CMA_HDR_LEN)
		return -EINVAL;
	h->cma_version = p[0];
	h->ip_version = p[1] >> 4;
	h->ip_resv = p[1] & 0xF;
	h->src_port = wire_get_be16(p + 2);
	if (h->cma_version != WIRE_CMA_VERSION ||
	    (h->ip_version != 4 && h->ip_version != 6))
		return -EINVAL;
	if (cma_addr_get(p + 4, h->ip_version, &h->src) ||
	    cma_addr_get(p + 20, h->ip_version, &h->dst))
		return -EINVAL;
	return 0;
}
