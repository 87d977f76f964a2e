/* SPDX-License-Identifier: MIT */
/**
 * @file mad.h
 * @brief IBTA management datagrams (MADs) and the Communication Manager
 *        class (0x07, version 2): byte-exact encode/decode of every field.
 *
 * A CM MAD is 256 bytes: a 24-byte common MAD header, then 232 bytes of
 * attribute data. Each attribute (REQ, REP, ...) is described by one table
 * of (field, byte offset, bit offset from the MSB, width) entries in mad.c,
 * following the IBTA's Byte[Bit] notation (vol. 1 ch. 12 tables 106-120;
 * the kernel's include/rdma/ibta_vol1_c12.h uses the same notation, with
 * offsets relative to the attribute data). Decoding reads nothing outside
 * the given buffer and names a reason for every malformed MAD. See
 * docs/wire.md "CM MADs".
 */
#ifndef WIRE_MAD_H
#define WIRE_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gid.h"

#define WIRE_MAD_LEN            256u  /**< every MAD on a UD QP1 is this long */
#define WIRE_MAD_HDR_LEN        24u   /**< common MAD header */
#define WIRE_MAD_DATA_LEN       (WIRE_MAD_LEN - WIRE_MAD_HDR_LEN)
#define WIRE_MAD_BASE_VERSION   1u
#define WIRE_MAD_CLASS_CM       0x07u
#define WIRE_MAD_CM_CLASS_VERSION 2u
#define WIRE_MAD_METHOD_SEND    0x03u /**< the only method CM attributes use */
#define WIRE_MAD_METHOD_RESP    0x80u /**< R bit of the method byte */

/* GSI (QP1) addressing of a MAD carried in a RoCEv2 UD SEND ONLY. */
#define WIRE_GSI_QPN            1u
#define WIRE_GSI_QKEY           0x80010000u
#define WIRE_GSI_PKEY           0xFFFFu

/** CM attribute IDs (IBTA vol. 1 table 104). */
enum wire_cm_attr {
	WIRE_CM_ATTR_CLASSPORTINFO = 0x0001,
	WIRE_CM_ATTR_REQ      = 0x0010,
	WIRE_CM_ATTR_MRA      = 0x0011,
	WIRE_CM_ATTR_REJ      = 0x0012,
	WIRE_CM_ATTR_REP      = 0x0013,
	WIRE_CM_ATTR_RTU      = 0x0014,
	WIRE_CM_ATTR_DREQ     = 0x0015,
	WIRE_CM_ATTR_DREP     = 0x0016,
	WIRE_CM_ATTR_SIDR_REQ = 0x0017,
	WIRE_CM_ATTR_SIDR_REP = 0x0018,
	WIRE_CM_ATTR_LAP      = 0x0019,
	WIRE_CM_ATTR_APR      = 0x001A,
};

/** The common MAD header (IBTA vol. 1 13.4.3). */
struct wire_mad_hdr {
	uint8_t  base_version;   /**< 1 */
	uint8_t  mgmt_class;     /**< 0x07 for CM */
	uint8_t  class_version;  /**< 2 for CM */
	uint8_t  method;         /**< R bit (0x80) | method */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;            /**< transaction ID */
	uint16_t attr_id;
	uint16_t resv;           /**< reserved, zero on send */
	uint32_t attr_mod;
};

/**
 * Fields of the CM attributes. One name per IBTA field; an attribute uses a
 * subset (wire_cm_has_field()). Integer fields come first and live in
 * wire_cm_msg.v[]; the byte-string fields follow WIRE_CM_F_NUM_INT.
 */
enum wire_cm_field {
	WIRE_CM_F_LOCAL_COMM_ID,      /**< also SIDR request ID */
	WIRE_CM_F_REMOTE_COMM_ID,
	/** 24-bit vendor ID of ECE (enhanced connection establishment) in
	 *  REQ, REP and SIDR_REP (REP and SIDR_REP split it over bytes the
	 *  older IBTA tables reserve; the codec joins the pieces). The ECE
	 *  options travel in the MAD header's attr_mod, as the kernel's
	 *  cm_format_mad_ece_hdr() puts them. */
	WIRE_CM_F_VENDOR_ID,
	WIRE_CM_F_SERVICE_ID,
	WIRE_CM_F_LOCAL_CA_GUID,
	WIRE_CM_F_LOCAL_QKEY,         /**< REQ/REP local Q_Key, SIDR_REP Q_Key */
	WIRE_CM_F_LOCAL_QPN,          /**< REQ/REP local QPN, SIDR_REP QPN */
	WIRE_CM_F_RESPONDER_RESOURCES,
	WIRE_CM_F_LOCAL_EECN,
	WIRE_CM_F_INITIATOR_DEPTH,
	WIRE_CM_F_REMOTE_EECN,
	WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT,
	WIRE_CM_F_TRANSPORT_TYPE,     /**< 0 RC, 1 UC, 2 RD, 3 extended */
	WIRE_CM_F_E2E_FLOW_CONTROL,
	WIRE_CM_F_STARTING_PSN,
	WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT,
	WIRE_CM_F_RETRY_COUNT,
	WIRE_CM_F_PKEY,               /**< REQ / SIDR_REQ partition key */
	WIRE_CM_F_PATH_MTU,           /**< IB MTU enum: 1 = 256 .. 5 = 4096 */
	WIRE_CM_F_RDC_EXISTS,
	WIRE_CM_F_RNR_RETRY_COUNT,
	WIRE_CM_F_MAX_CM_RETRIES,
	WIRE_CM_F_SRQ,
	WIRE_CM_F_EXT_TRANSPORT_TYPE,
	/* primary path (REQ) */
	WIRE_CM_F_PRI_LOCAL_LID,
	WIRE_CM_F_PRI_REMOTE_LID,
	WIRE_CM_F_PRI_FLOW_LABEL,
	WIRE_CM_F_PRI_PACKET_RATE,
	WIRE_CM_F_PRI_TRAFFIC_CLASS,
	WIRE_CM_F_PRI_HOP_LIMIT,
	WIRE_CM_F_PRI_SL,
	WIRE_CM_F_PRI_SUBNET_LOCAL,
	WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT,
	/* alternate path (REQ, LAP) */
	WIRE_CM_F_ALT_LOCAL_LID,
	WIRE_CM_F_ALT_REMOTE_LID,
	WIRE_CM_F_ALT_FLOW_LABEL,
	WIRE_CM_F_ALT_PACKET_RATE,
	WIRE_CM_F_ALT_TRAFFIC_CLASS,
	WIRE_CM_F_ALT_HOP_LIMIT,
	WIRE_CM_F_ALT_SL,
	WIRE_CM_F_ALT_SUBNET_LOCAL,
	WIRE_CM_F_ALT_LOCAL_ACK_TIMEOUT,
	WIRE_CM_F_SAP_SUPPORTED,
	/* MRA */
	WIRE_CM_F_MSG_MRAED,          /**< 0 REQ, 1 REP, 2 LAP */
	WIRE_CM_F_SERVICE_TIMEOUT,
	/* REJ */
	WIRE_CM_F_MSG_REJECTED,       /**< 0 REQ, 1 REP, 2 no message */
	WIRE_CM_F_REJ_INFO_LEN,       /**< ARI length, 0..72 */
	WIRE_CM_F_REJ_REASON,         /**< enum wire_cm_rej_reason */
	/* REP */
	WIRE_CM_F_TARGET_ACK_DELAY,
	WIRE_CM_F_FAILOVER_ACCEPTED,
	/* DREQ / LAP */
	WIRE_CM_F_REMOTE_QPN,         /**< DREQ / LAP remote QPN/EECN */
	/* SIDR_REP / APR */
	WIRE_CM_F_STATUS,             /**< SIDR_REP status / APR AP status */
	WIRE_CM_F_ADD_INFO_LEN,       /**< SIDR_REP / APR additional info length, 0..72 */
	WIRE_CM_F_NUM_INT,
	/* byte strings */
	WIRE_CM_F_PRI_LOCAL_GID = WIRE_CM_F_NUM_INT,
	WIRE_CM_F_PRI_REMOTE_GID,
	WIRE_CM_F_ALT_LOCAL_GID,
	WIRE_CM_F_ALT_REMOTE_GID,
	WIRE_CM_F_INFO,               /**< REJ ARI / SIDR_REP / APR additional info (72) */
	WIRE_CM_F_PRIVATE_DATA,
	WIRE_CM_F_NUM
};

#define WIRE_CM_INFO_LEN   72u
#define WIRE_CM_PDATA_MAX  224u  /**< the largest private data (RTU, DREP) */

/** Private data sizes (IBTA vol. 1 12.6). */
#define WIRE_CM_REQ_PDATA      92u
#define WIRE_CM_MRA_PDATA      222u
#define WIRE_CM_REJ_PDATA      148u
#define WIRE_CM_REP_PDATA      196u
#define WIRE_CM_RTU_PDATA      224u
#define WIRE_CM_DREQ_PDATA     220u
#define WIRE_CM_DREP_PDATA     224u
#define WIRE_CM_SIDR_REQ_PDATA 216u
#define WIRE_CM_SIDR_REP_PDATA 136u
#define WIRE_CM_LAP_PDATA      168u
#define WIRE_CM_APR_PDATA      148u

/** REJ reasons (IBTA vol. 1 table 109; the kernel's enum ib_cm_rej_reason). */
enum wire_cm_rej_reason {
	WIRE_CM_REJ_NO_QP = 1,
	WIRE_CM_REJ_NO_EEC = 2,
	WIRE_CM_REJ_NO_RESOURCES = 3,
	WIRE_CM_REJ_TIMEOUT = 4,
	WIRE_CM_REJ_UNSUPPORTED = 5,
	WIRE_CM_REJ_INVALID_COMM_ID = 6,
	WIRE_CM_REJ_INVALID_COMM_INSTANCE = 7,
	WIRE_CM_REJ_INVALID_SERVICE_ID = 8,
	WIRE_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	WIRE_CM_REJ_STALE_CONN = 10,
	WIRE_CM_REJ_RDC_NOT_EXIST = 11,
	WIRE_CM_REJ_INVALID_GID = 12,
	WIRE_CM_REJ_INVALID_LID = 13,
	WIRE_CM_REJ_INVALID_SL = 14,
	WIRE_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	WIRE_CM_REJ_INVALID_HOP_LIMIT = 16,
	WIRE_CM_REJ_INVALID_PACKET_RATE = 17,
	WIRE_CM_REJ_INVALID_ALT_GID = 18,
	WIRE_CM_REJ_INVALID_ALT_LID = 19,
	WIRE_CM_REJ_INVALID_ALT_SL = 20,
	WIRE_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	WIRE_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	WIRE_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	WIRE_CM_REJ_PORT_CM_REDIRECT = 24,
	WIRE_CM_REJ_PORT_REDIRECT = 25,
	WIRE_CM_REJ_INVALID_MTU = 26,
	WIRE_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	WIRE_CM_REJ_CONSUMER_DEFINED = 28,
	WIRE_CM_REJ_INVALID_RNR_RETRY = 29,
	WIRE_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	WIRE_CM_REJ_INVALID_CLASS_VERSION = 31,
	WIRE_CM_REJ_INVALID_FLOW_LABEL = 32,
	WIRE_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	WIRE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/** SIDR_REP status (IBTA vol. 1 table 121). */
enum wire_cm_sidr_status {
	WIRE_CM_SIDR_SUCCESS = 0,
	WIRE_CM_SIDR_UNSUPPORTED = 1,
	WIRE_CM_SIDR_REJECT = 2,
	WIRE_CM_SIDR_NO_QP = 3,
	WIRE_CM_SIDR_REDIRECT = 4,
	WIRE_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/** A decoded CM attribute. Only the fields of @c attr are meaningful;
 *  the others are zero after decode and ignored by encode. */
struct wire_cm_msg {
	uint16_t attr;                       /**< enum wire_cm_attr */
	uint64_t v[WIRE_CM_F_NUM_INT];       /**< integer fields */
	uint8_t  gid[4][16];                 /**< PRI_LOCAL, PRI_REMOTE, ALT_LOCAL, ALT_REMOTE */
	uint8_t  info[WIRE_CM_INFO_LEN];     /**< ARI / additional information */
	uint8_t  pdata[WIRE_CM_PDATA_MAX];   /**< private data (wire_cm_pdata_len() bytes) */
};

/** Why wire_mad_decode() rejected a MAD (WIRE_MAD_OK = accepted). */
enum wire_mad_reason {
	WIRE_MAD_OK = 0,
	WIRE_MAD_R_SHORT,          /**< fewer than 256 bytes */
	WIRE_MAD_R_LONG,           /**< more than 256 bytes */
	WIRE_MAD_R_BASE_VERSION,   /**< base version != 1 */
	WIRE_MAD_R_CLASS,          /**< management class is not CM (0x07) */
	WIRE_MAD_R_CLASS_VERSION,  /**< CM class version != 2 */
	WIRE_MAD_R_METHOD,         /**< method is not SEND for a CM attribute */
	WIRE_MAD_R_ATTR,           /**< unknown attribute ID (incl. ClassPortInfo) */
	WIRE_MAD_R_HDR_RESERVED,   /**< reserved header field non-zero (strict) */
	WIRE_MAD_R_RESERVED,       /**< reserved attribute bits non-zero (strict) */
	WIRE_MAD_R_INFO_LEN,       /**< ARI / additional info length > 72 */
	WIRE_MAD_R_QKEY,           /**< packet to QP1 whose DETH Q_Key is not 0x80010000 */
	WIRE_MAD_R_NUM
};

/** Decode flags. */
enum wire_mad_flag {
	/** Reject non-zero reserved bits. IBTA receivers ignore them, so the
	 *  daemon decodes leniently; tools and tests check strictly. */
	WIRE_MAD_STRICT = 1u << 0,
};

/** Short stable name of a reason ("ok", "short", "bad-attr", ...). */
const char *wire_mad_reason_str(enum wire_mad_reason r);

/** Name of a CM attribute ("REQ", ..., or NULL if unknown). */
const char *wire_cm_attr_name(uint16_t attr);

/** Name of a REJ reason ("consumer-defined", ..., or NULL if unknown). */
const char *wire_cm_rej_reason_str(uint16_t reason);

/** Name of a field ("local_comm_id", ...). */
const char *wire_cm_field_name(enum wire_cm_field f);

/** Width in bits of field @p f in attribute @p attr; 0 if the attribute
 *  has no such field (or the attribute is unknown). */
unsigned wire_cm_field_bits(uint16_t attr, enum wire_cm_field f);

/** True if @p attr carries field @p f. */
static inline bool wire_cm_has_field(uint16_t attr, enum wire_cm_field f)
{
	return wire_cm_field_bits(attr, f) != 0;
}

/** Private-data bytes of attribute @p attr (0 if unknown). */
unsigned wire_cm_pdata_len(uint16_t attr);

/** True if @p attr is one of the CM attributes this module knows (REQ..APR). */
bool wire_cm_attr_known(uint16_t attr);

/** Decode / encode the 24-byte common header. */
void wire_mad_hdr_decode(const uint8_t *p, struct wire_mad_hdr *h);
void wire_mad_hdr_encode(uint8_t *p, const struct wire_mad_hdr *h);

/** Decode a whole CM MAD of @p len bytes (must be exactly 256).
 *  @p hdr and @p msg are zeroed first and filled as far as decoding got.
 *  @return WIRE_MAD_OK or the first reason the MAD fails. */
enum wire_mad_reason wire_mad_decode(const uint8_t *mad, size_t len, unsigned flags,
				     struct wire_mad_hdr *hdr, struct wire_cm_msg *msg);

/** Encode a CM MAD into @p out (256 bytes): header as given (attr_id is
 *  taken from msg->attr), reserved bits zero, each field of msg->attr
 *  truncated to its width.
 *  @return 0, or -EINVAL for an unknown attribute. */
int wire_mad_encode(uint8_t out[WIRE_MAD_LEN], const struct wire_mad_hdr *hdr,
		    const struct wire_cm_msg *msg);

/** Initialise @p h as the kernel's CM sends: base version 1, class CM,
 *  class version 2, method SEND, the given attribute and transaction ID. */
void wire_mad_hdr_init_cm(struct wire_mad_hdr *h, uint16_t attr, uint64_t tid);

/* ---- rdma_cm addressing (the kernel's drivers/infiniband/core/cma.c) ---- */

/** rdma_cm port spaces (enum rdma_ucm_port_space). */
enum wire_rdma_ps {
	WIRE_RDMA_PS_IPOIB = 0x0002,
	WIRE_RDMA_PS_TCP   = 0x0106,
	WIRE_RDMA_PS_UDP   = 0x0111,
	WIRE_RDMA_PS_IB    = 0x013F,
};

#define WIRE_CMA_HDR_LEN  36u  /**< struct cma_hdr */
#define WIRE_CMA_VERSION  0u

/** The IP addressing header rdma_cm puts at the start of the private data
 *  of REQ and SIDR_REQ (not for RDMA_PS_IB). */
struct wire_cma_hdr {
	uint8_t  cma_version;  /**< 0 */
	uint8_t  ip_version;   /**< 4 or 6 (the high nibble of byte 1) */
	uint8_t  ip_resv;      /**< low nibble of byte 1 (zero on send) */
	uint16_t src_port;     /**< the active side's port */
	struct wire_gid src;   /**< IPv4 as IPv4-mapped GID (on the wire: 12 zero bytes + addr) */
	struct wire_gid dst;
};

/** Service ID rdma_cm uses for @p ps and @p port: ps << 16 | port. */
static inline uint64_t wire_cma_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/** Split a service ID into an rdma_cm port space and port.
 *  @return 0, or -EINVAL if it is not an rdma_cm IP service ID (upper 32
 *  bits not zero, or an unknown port space). */
int wire_cma_service_parse(uint64_t sid, uint16_t *ps, uint16_t *port);

/** Private data left to an application after the cma_hdr for @p attr in
 *  port space @p ps (REQ/SIDR_REQ lose 36 bytes except in RDMA_PS_IB). */
unsigned wire_cma_user_pdata_len(uint16_t attr, uint16_t ps);

/** Encode @p h into @p p (36 bytes). IPv4 addresses must be IPv4-mapped.
 *  @return 0 or -EINVAL (bad version, unmapped IPv4 address). */
int wire_cma_hdr_encode(uint8_t *p, const struct wire_cma_hdr *h);

/** Decode 36 bytes at @p p. IPv4 addresses come back IPv4-mapped.
 *  @return 0, or -EINVAL if cma_version != 0 or the IP version is neither
 *  4 nor 6 (or, for 4, the 12 pad bytes are not zero). */
int wire_cma_hdr_decode(const uint8_t *p, size_t len, struct wire_cma_hdr *h);

/* ---- CM MADs in RoCEv2 packets (gsi.c) ---- */

struct wire_pkt;

/** Describe a GSI packet carrying @p mad (256 bytes, not copied): after
 *  wire_pkt_init(d, version), sets UD SEND ONLY to QPN 1, P_Key 0xFFFF,
 *  DETH Q_Key 0x80010000 and source QPN 1, PSN @p psn, and the payload.
 *  The caller sets MACs and addresses, then calls wire_build(). */
void wire_gsi_pkt_init(struct wire_pkt *d, uint8_t version, const uint8_t *mad,
		       uint32_t psn);

/** True if a parsed packet is a UD SEND ONLY to QP1 (a MAD for the GSI). */
bool wire_pkt_is_gsi(const struct wire_pkt *p);

/** Decode the CM MAD of a parsed GSI packet (wire_pkt_is_gsi() true):
 *  checks the Q_Key, then wire_mad_decode() on the payload. */
enum wire_mad_reason wire_gsi_pkt_decode(const struct wire_pkt *p, unsigned flags,
					 struct wire_mad_hdr *hdr, struct wire_cm_msg *msg);

#endif /* WIRE_MAD_H */
