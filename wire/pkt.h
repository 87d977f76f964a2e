/* SPDX-License-Identifier: MIT */
/**
 * @file pkt.h
 * @brief Whole-frame parser and builder for RoCEv2 over Ethernet.
 *
 * struct wire_pkt is both the parser's output and the builder's input, so a
 * parsed frame can be rebuilt byte for byte. Neither side allocates; the
 * parser never reads outside [frame, frame + len) and keeps a pointer to the
 * payload inside the caller's frame.
 */
#ifndef WIRE_PKT_H
#define WIRE_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "feth.h"
#include "gid.h"
#include "hdr.h"
#include "opcode.h"

/** Why wire_parse() rejected a frame (WIRE_OK = accepted). Use
 *  wire_reason_str() for a name and wire_reason_is_roce() to tell "not a
 *  RoCEv2 packet at all" (skip it) from "a broken RoCEv2 packet" (count it). */
enum wire_reason {
	WIRE_OK = 0,
	/* not RoCE: other traffic, skipped silently by receivers */
	WIRE_R_NOT_IP,          /**< EtherType is neither IPv4 nor IPv6 (ARP, LLDP, ...) */
	WIRE_R_NOT_UDP,         /**< IP protocol / final IPv6 next header is not UDP */
	WIRE_R_NOT_ROCE_PORT,   /**< UDP destination port is not 4791 */
	/* truncated */
	WIRE_R_TRUNC_ETH,       /**< shorter than the Ethernet (+ VLAN) header */
	WIRE_R_TRUNC_IP,        /**< shorter than the IP header */
	WIRE_R_TRUNC_UDP,       /**< shorter than the UDP header */
	WIRE_R_TRUNC_BTH,       /**< UDP payload shorter than BTH + ICRC */
	WIRE_R_TRUNC_EXT,       /**< UDP payload shorter than the opcode's headers + ICRC */
	/* malformed IP / UDP */
	WIRE_R_IPV4_VERSION,    /**< EtherType IPv4 but version nibble != 4 */
	WIRE_R_IPV4_IHL,        /**< IPv4 IHL < 5 */
	WIRE_R_IPV4_OPTIONS,    /**< IPv4 options present (RoCEv2 sends none) */
	WIRE_R_IPV4_CSUM,       /**< bad IPv4 header checksum */
	WIRE_R_IPV4_FRAGMENT,   /**< IPv4 fragment (MF set or offset != 0) */
	WIRE_R_IP_LEN,          /**< IP total / payload length disagrees with the frame */
	WIRE_R_IPV6_VERSION,    /**< EtherType IPv6 but version nibble != 6 */
	WIRE_R_IPV6_EXT_HDR,    /**< IPv6 extension header(s) before UDP 4791 */
	WIRE_R_UDP_LEN,         /**< UDP length disagrees with the IP length */
	WIRE_R_UDP_CSUM,        /**< bad non-zero UDP checksum (only with WIRE_PARSE_UDP_CSUM) */
	/* malformed transport */
	WIRE_R_BTH_TVER,        /**< BTH transport version != 0 */
	WIRE_R_OPCODE,          /**< reserved / unsupported opcode (RD, ...) */
	/* length faults of a whole packet: the transport's to judge
	 * (wire_reason_is_transport(); the packet is decoded, len_reason) */
	WIRE_R_PAD,             /**< pad on a FIRST/MIDDLE packet or an opcode without payload,
	                             payload shorter than the pad, or payload + pad not a
	                             multiple of 4 */
	WIRE_R_PAYLOAD_UNEXPECTED, /**< payload on an opcode that carries none */
	WIRE_R_PAYLOAD_MISSING, /**< empty payload on a FIRST/MIDDLE packet */
	WIRE_R_ICRC,            /**< ICRC mismatch */
	WIRE_R_NUM
};

/** Short name of a reason ("ok", "not-ip", "bad-icrc", ...). Stable: tools print it. */
const char *wire_reason_str(enum wire_reason r);

/** One-line description of a reason. */
const char *wire_reason_desc(enum wire_reason r);

/** True if the frame was recognised as RoCEv2 (UDP to port 4791 or deeper),
 *  i.e. for WIRE_OK and every reason except NOT_IP / NOT_UDP / NOT_ROCE_PORT. */
bool wire_reason_is_roce(enum wire_reason r);

/** True for the length faults of an otherwise whole RoCEv2 packet (bad-pad,
 *  payload-unexpected, payload-missing): every header is decoded and the
 *  ICRC verified, so the packet belongs to the QP it names, and that QP's
 *  transport decides what it means (IBTA 9.7.5: NAK invalid request at a
 *  responder, bad response at a requester, a silent drop on UC/UD). Every
 *  other reason is a header error: the packet is dropped and counted. */
bool wire_reason_is_transport(enum wire_reason r);

/** Parse flags (wire_parse_ex()). 0 = full checking. */
enum wire_parse_flag {
	WIRE_PARSE_NO_ICRC      = 1u << 0, /**< skip ICRC verification (icrc_ok stays false) */
	WIRE_PARSE_NO_IPV4_CSUM = 1u << 1, /**< skip the IPv4 header checksum (offloaded) */
	WIRE_PARSE_UDP_CSUM     = 1u << 2, /**< verify a non-zero UDP checksum */
	/** The frame is in pieces: @p frame holds every header (and at least
	 *  WIRE_HDRS_MAX readable bytes), @p len is the whole frame's length;
	 *  payload, pad and ICRC are elsewhere and not read (implies NO_ICRC,
	 *  no UDP checksum): payload points where a contiguous frame's would
	 *  start, pad_bytes and icrc are left 0 for the caller to fill. A
	 *  frame it rejects may get another reason than the full parse gives
	 *  (an IPv6 extension chain is walked only within WIRE_HDRS_MAX). */
	WIRE_PARSE_HDRS_ONLY    = 1u << 3,
};
/** Bytes from a frame's start that hold every header of any RoCEv2 frame
 *  (Ethernet with VLAN, IPv4 with options or IPv6, UDP, BTH and the
 *  longest extension headers): what WIRE_PARSE_HDRS_ONLY may read. */
#define WIRE_HDRS_MAX 160u

/** Build flags (wire_build()). 0 = compute everything. The KEEP flags exist so
 *  tests and fuzzers can produce deliberately wrong frames. */
enum wire_build_flag {
	WIRE_BUILD_UDP_CSUM       = 1u << 0, /**< compute a real UDP checksum instead of using udp.csum */
	WIRE_BUILD_KEEP_IPV4_CSUM = 1u << 1, /**< write ip.csum as given */
	WIRE_BUILD_KEEP_LEN       = 1u << 2, /**< write ip.total_len / ip.payload_len / udp.len as given */
	WIRE_BUILD_KEEP_PAD       = 1u << 3, /**< use bth.pad as given (pad bytes = pad_bytes[]) */
	WIRE_BUILD_KEEP_ICRC      = 1u << 4, /**< write icrc as given */
};

/** A RoCEv2 frame, decoded. Parser output and builder input. */
struct wire_pkt {
	/* L2 */
	uint8_t  dmac[6];
	uint8_t  smac[6];
	bool     vlan;          /**< an 802.1Q tag is present */
	uint16_t vlan_tci;      /**< PCP(3) | DEI(1) | VID(12) */
	uint16_t ethertype;     /**< inner EtherType: WIRE_ETHERTYPE_IPV4 or _IPV6 */

	/* L3 */
	struct {
		uint8_t  version;    /**< 4 or 6 */
		struct wire_gid src; /**< IPv4 as IPv4-mapped GID */
		struct wire_gid dst;
		uint8_t  tos;        /**< IPv4 TOS / IPv6 traffic class: DSCP << 2 | ECN */
		uint8_t  ttl;        /**< IPv4 TTL / IPv6 hop limit */
		uint16_t id;         /**< IPv4 identification */
		bool     df;         /**< IPv4 don't-fragment */
		bool     evil;       /**< IPv4 reserved flag bit (kept for byte-exact rebuild) */
		uint32_t flow_label; /**< IPv6 flow label, 20 bits */
		uint16_t csum;       /**< IPv4 header checksum as found / to keep */
		uint16_t total_len;  /**< IPv4 total length or IPv6 payload length, as found */
	} ip;

	/* L4 */
	struct {
		uint16_t sport;
		uint16_t dport;      /**< 4791 */
		uint16_t len;        /**< as found */
		uint16_t csum;       /**< as found / to send (rxe sends 0) */
	} udp;

	/* transport */
	struct wire_bth bth;
	const struct wire_opcode_info *op; /**< table entry of bth.opcode (parser output) */
	uint16_t hdrs;                     /**< enum wire_hdr_bit: headers present */
	struct wire_reth reth;
	struct wire_aeth aeth;
	struct wire_atomiceth atomiceth;
	struct wire_atomicacketh atomicacketh;
	struct wire_deth deth;
	uint32_t imm;                      /**< ImmDt as a big-endian number (verbs imm_data is
	                                        htobe32(imm)) */
	uint32_t ieth_rkey;                /**< IETH: R_Key to invalidate */
	uint32_t xrc_srqn;                 /**< XRCETH: the target's XRC SRQ number (24 bits) */
	uint8_t  xrceth_resv;              /**< XRCETH: its reserved byte as found (zero on send) */
	uint8_t  cnp_resv[WIRE_CNP_RESV_LEN]; /**< CNP reserved bytes (zero on send) */
	struct wire_feth feth;             /**< FLUSH: placement type and level */

	/* payload */
	const uint8_t *payload;  /**< into the frame (parser) / source bytes (builder) */
	uint32_t payload_len;    /**< without pad */
	uint8_t  pad_bytes[3];   /**< pad contents as found (zero on send) */
	uint8_t  len_reason;     /**< parser: WIRE_OK, or the length fault it returned
	                              (wire_reason_is_transport()); builder: ignored */
	uint32_t icrc;           /**< ICRC as found / to keep */
	bool     icrc_ok;        /**< parser: ICRC verified */

	/* layout (parser output; frame offsets) */
	uint32_t l3_off;         /**< IP header */
	uint32_t l4_off;         /**< UDP header */
	uint32_t bth_off;        /**< BTH */
	uint32_t payload_off;    /**< payload (after extension headers) */
	uint32_t icrc_off;       /**< ICRC */
	uint32_t frame_len;      /**< bytes used: up to and including the ICRC */
	uint32_t trailer_len;    /**< trailing bytes ignored (Ethernet padding, FCS) */
};

/** Parse an Ethernet frame with full checking (wire_parse_ex(frame, len, 0, out)).
 *  @return WIRE_OK or the first reason the frame fails. @p out is filled as
 *  far as parsing got (zeroed first). */
enum wire_reason wire_parse(const uint8_t *frame, size_t len, struct wire_pkt *out);

/** Parse with enum wire_parse_flag @p flags. */
enum wire_reason wire_parse_ex(const uint8_t *frame, size_t len, unsigned flags,
			       struct wire_pkt *out);

/** Parse a packet that starts at the IP header (raw socket / AF_PACKET
 *  cooked capture). L2 fields of @p out are zero, offsets count from @p l3. */
enum wire_reason wire_parse_ip(const uint8_t *l3, size_t len, unsigned flags,
			       struct wire_pkt *out);

/** Initialise a description with the values rdma_rxe uses: dport 4791,
 *  sport 0xC000, IPv4, TTL 64, DF, P_Key 0xFFFF, everything else zero.
 *  The caller then sets addresses, opcode, QPN, PSN and headers. */
void wire_pkt_init(struct wire_pkt *d, uint8_t version);

/** Length of the frame wire_build() would produce for @p d (payload included). */
size_t wire_frame_len(const struct wire_pkt *d);

/** Length of the headers (Ethernet .. last extension header) for @p d. */
size_t wire_hdr_len(const struct wire_pkt *d);

/** Build a complete frame: Ethernet [802.1Q] IPv4/IPv6, UDP, BTH, the
 *  extension headers of bth.opcode (ignores d->hdrs), payload, pad, ICRC.
 *  Computes lengths, IPv4 checksum, pad and ICRC unless told to keep them.
 *  L3 version is d->ip.version. IPv4 addresses come from IPv4-mapped GIDs.
 *  @return 0, -EINVAL (undefined opcode, bad version, IPv4 address not
 *  mapped, payload on an opcode without any, total too long) or -ENOSPC. */
int wire_build(const struct wire_pkt *d, uint8_t *buf, size_t cap, unsigned flags,
	       size_t *frame_len);

/** Build only the headers (Ethernet .. last extension header) for a packet
 *  that will carry d->payload_len payload bytes (d->payload is not read).
 *  Lengths and IPv4 checksum are final; the ICRC is not. Append payload,
 *  pad and ICRC yourself, e.g. with wire_finish_icrc().
 *  @return 0, -EINVAL or -ENOSPC; *hdr_len = bytes written. */
int wire_build_headers(const struct wire_pkt *d, uint8_t *buf, size_t cap,
		       unsigned flags, size_t *hdr_len);

/** A payload fragment for wire_finish_icrc(). */
struct wire_iov {
	const void *base;
	size_t len;
};

/** Finish a packet whose headers (from wire_build_headers()) are at @p hdr
 *  (@p hdr_len bytes, Ethernet first) and whose payload is the @p iovcnt
 *  fragments @p iov: writes the pad bytes (zeros, count from BTH) and the
 *  ICRC to @p trailer (room for 3 + 4 bytes).
 *  @return bytes written to @p trailer (pad + 4), or 0 if the headers are
 *  not a RoCEv2 header block. */
size_t wire_finish_icrc(const uint8_t *hdr, size_t hdr_len,
			const struct wire_iov *iov, unsigned iovcnt, uint8_t *trailer);

#endif /* WIRE_PKT_H */
