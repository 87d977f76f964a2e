/* SPDX-License-Identifier: MIT */
/**
 * @file opcode.h
 * @brief The 256-entry BTH opcode table (RC, UC, UD, CNP, XRC).
 *
 * Opcode = transport (bits 7-5) | operation (bits 4-0). For each defined
 * opcode the table gives the extension headers present and their offsets
 * from the start of the BTH, the packet's place in a message, whether it
 * carries payload, immediate data or an invalidate key, and what kind of work
 * the receiver has to do. RD (0x40-0x5F) is not supported and reads as
 * undefined, like every reserved opcode.
 */
#ifndef WIRE_OPCODE_H
#define WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/** Defined opcodes. */
enum wire_opcode {
	WIRE_OP_RC_SEND_FIRST            = 0x00,
	WIRE_OP_RC_SEND_MIDDLE           = 0x01,
	WIRE_OP_RC_SEND_LAST             = 0x02,
	WIRE_OP_RC_SEND_LAST_IMM         = 0x03,
	WIRE_OP_RC_SEND_ONLY             = 0x04,
	WIRE_OP_RC_SEND_ONLY_IMM         = 0x05,
	WIRE_OP_RC_WRITE_FIRST           = 0x06,
	WIRE_OP_RC_WRITE_MIDDLE          = 0x07,
	WIRE_OP_RC_WRITE_LAST            = 0x08,
	WIRE_OP_RC_WRITE_LAST_IMM        = 0x09,
	WIRE_OP_RC_WRITE_ONLY            = 0x0a,
	WIRE_OP_RC_WRITE_ONLY_IMM        = 0x0b,
	WIRE_OP_RC_READ_REQ              = 0x0c,
	WIRE_OP_RC_READ_RESP_FIRST       = 0x0d,
	WIRE_OP_RC_READ_RESP_MIDDLE      = 0x0e,
	WIRE_OP_RC_READ_RESP_LAST        = 0x0f,
	WIRE_OP_RC_READ_RESP_ONLY        = 0x10,
	WIRE_OP_RC_ACK                   = 0x11,
	WIRE_OP_RC_ATOMIC_ACK            = 0x12,
	WIRE_OP_RC_CMP_SWAP              = 0x13,
	WIRE_OP_RC_FETCH_ADD             = 0x14,
	WIRE_OP_RC_SEND_LAST_INV         = 0x16,
	WIRE_OP_RC_SEND_ONLY_INV         = 0x17,
	WIRE_OP_RC_FLUSH                 = 0x1c, /**< IBTA 1.5: FETH + RETH (feth.h) */
	WIRE_OP_RC_ATOMIC_WRITE          = 0x1d, /**< IBTA 1.5: RETH + 8 bytes */

	WIRE_OP_UC_SEND_FIRST            = 0x20,
	WIRE_OP_UC_SEND_MIDDLE           = 0x21,
	WIRE_OP_UC_SEND_LAST             = 0x22,
	WIRE_OP_UC_SEND_LAST_IMM         = 0x23,
	WIRE_OP_UC_SEND_ONLY             = 0x24,
	WIRE_OP_UC_SEND_ONLY_IMM         = 0x25,
	WIRE_OP_UC_WRITE_FIRST           = 0x26,
	WIRE_OP_UC_WRITE_MIDDLE          = 0x27,
	WIRE_OP_UC_WRITE_LAST            = 0x28,
	WIRE_OP_UC_WRITE_LAST_IMM        = 0x29,
	WIRE_OP_UC_WRITE_ONLY            = 0x2a,
	WIRE_OP_UC_WRITE_ONLY_IMM        = 0x2b,

	WIRE_OP_UD_SEND_ONLY             = 0x64,
	WIRE_OP_UD_SEND_ONLY_IMM         = 0x65,

	WIRE_OP_CNP                      = 0x81,

	/* XRC (IBTA annex A14): the RC operations | WIRE_TR_XRC; every
	 * request carries an XRCETH naming the target's XRC SRQ */
	WIRE_OP_XRC_SEND_FIRST           = 0xa0,
	WIRE_OP_XRC_SEND_ONLY            = 0xa4,
	WIRE_OP_XRC_WRITE_ONLY           = 0xaa,
	WIRE_OP_XRC_READ_REQ             = 0xac,
	WIRE_OP_XRC_ACK                  = 0xb1,
	WIRE_OP_XRC_ATOMIC_ACK           = 0xb2,
	WIRE_OP_XRC_CMP_SWAP             = 0xb3,
	WIRE_OP_XRC_FETCH_ADD            = 0xb4,
	WIRE_OP_XRC_SEND_ONLY_INV        = 0xb7,
};

/** Transport of an opcode (bits 7-5). */
enum wire_transport {
	WIRE_TR_RC  = 0x00,
	WIRE_TR_UC  = 0x20,
	WIRE_TR_RD  = 0x40,
	WIRE_TR_UD  = 0x60,
	WIRE_TR_CNP = 0x80,
	WIRE_TR_XRC = 0xa0,
};

/** Header presence bits (wire_opcode_info::hdrs, wire_pkt::hdrs). */
enum wire_hdr_bit {
	WIRE_HDR_BTH          = 1u << 0,
	WIRE_HDR_RETH         = 1u << 1,
	WIRE_HDR_AETH         = 1u << 2,
	WIRE_HDR_ATOMICETH    = 1u << 3,
	WIRE_HDR_ATOMICACKETH = 1u << 4,
	WIRE_HDR_DETH         = 1u << 5,
	WIRE_HDR_IMMDT        = 1u << 6,
	WIRE_HDR_IETH         = 1u << 7,
	WIRE_HDR_CNP          = 1u << 8, /**< the 16 reserved bytes of a CNP */
	WIRE_HDR_FETH         = 1u << 9, /**< FLUSH extended transport header */
	WIRE_HDR_XRCETH       = 1u << 10, /**< XRC requests: reserved 8 | XRC SRQ number 24 */
};

/** Index of each header in wire_opcode_info::off[]. */
enum wire_hdr_idx {
	WIRE_HI_BTH, WIRE_HI_RETH, WIRE_HI_AETH, WIRE_HI_ATOMICETH,
	WIRE_HI_ATOMICACKETH, WIRE_HI_DETH, WIRE_HI_IMMDT, WIRE_HI_IETH,
	WIRE_HI_CNP, WIRE_HI_FETH, WIRE_HI_XRCETH, WIRE_HI_PAYLOAD, WIRE_HI_NUM
};

/** Property flags (wire_opcode_info::flags). */
enum wire_op_flag {
	WIRE_OPF_VALID    = 1u << 0,  /**< defined, supported opcode */
	WIRE_OPF_FIRST    = 1u << 1,  /**< first packet of a message (also set for ONLY) */
	WIRE_OPF_MIDDLE   = 1u << 2,
	WIRE_OPF_LAST     = 1u << 3,  /**< last packet of a message (also set for ONLY) */
	WIRE_OPF_PAYLOAD  = 1u << 4,  /**< may carry payload */
	WIRE_OPF_PAYLOAD_REQUIRED = 1u << 5, /**< payload must be non-empty (FIRST/MIDDLE) */
	WIRE_OPF_IMM      = 1u << 6,  /**< carries ImmDt */
	WIRE_OPF_INV      = 1u << 7,  /**< carries IETH (send with invalidate) */
	WIRE_OPF_REQ      = 1u << 8,  /**< request (sent by a requester) */
	WIRE_OPF_RESP     = 1u << 9,  /**< response (sent by a responder) */
	WIRE_OPF_COMP     = 1u << 10, /**< consumes a receive WQE at the responder (message end with SEND/IMM) */
	WIRE_OPF_RECV     = 1u << 11, /**< needs a receive WQE (any SEND, WRITE with imm last/only) */
	WIRE_OPF_ONLY     = WIRE_OPF_FIRST | WIRE_OPF_LAST,
};

/** What the receiver of the packet has to do. */
enum wire_op_class {
	WIRE_OPC_NONE = 0,   /**< undefined opcode */
	WIRE_OPC_SEND,       /**< SEND: place payload in a receive WQE */
	WIRE_OPC_WRITE,      /**< RDMA WRITE: place payload at RETH/continuing VA */
	WIRE_OPC_READ,       /**< RDMA READ request: answer with READ responses */
	WIRE_OPC_ATOMIC,     /**< CmpSwap / FetchAdd request: answer with ATOMIC ACK */
	WIRE_OPC_READ_RESP,  /**< RDMA READ response (requester side, completer) */
	WIRE_OPC_ACK,        /**< Acknowledge (completer) */
	WIRE_OPC_ATOMIC_ACK, /**< ATOMIC Acknowledge (completer) */
	WIRE_OPC_CNP,        /**< congestion notification (rate limiter) */
	WIRE_OPC_FLUSH,      /**< RDMA FLUSH request: answer with a zero-length READ response */
};

/** One opcode table entry. Offsets are from the first byte of the BTH. */
struct wire_opcode_info {
	const char *name;     /**< IBTA name ("RC SEND Only"); NULL if undefined */
	const char *tshark;   /**< tshark 4.0 Info-column name ("RC Send Only"); NULL if undefined */
	uint32_t flags;       /**< enum wire_op_flag bits */
	uint16_t hdrs;        /**< enum wire_hdr_bit bits, BTH included */
	uint8_t  hdr_len;     /**< BTH + extension headers, bytes (= off[WIRE_HI_PAYLOAD]) */
	uint8_t  cls;         /**< enum wire_op_class */
	uint8_t  off[WIRE_HI_NUM]; /**< offset of each present header; 0 if absent (BTH is 0 too) */
};

/** Table entry for @p opcode (never NULL; undefined opcodes have flags 0). */
const struct wire_opcode_info *wire_opcode_info(uint8_t opcode);

/** The whole table, indexed by opcode. */
extern const struct wire_opcode_info wire_opcode_table[256];

/** True if @p opcode is defined and supported. */
static inline bool wire_opcode_valid(uint8_t opcode)
{
	return (wire_opcode_info(opcode)->flags & WIRE_OPF_VALID) != 0;
}

/** IBTA name of @p opcode, or "reserved" for undefined opcodes. */
const char *wire_opcode_name(uint8_t opcode);

/** Transport bits of an opcode (enum wire_transport). */
static inline uint8_t wire_opcode_transport(uint8_t opcode)
{
	return opcode & 0xe0;
}

/** Name of an op class ("send", "write", ...). */
const char *wire_op_class_str(uint8_t cls);

#endif /* WIRE_OPCODE_H */
