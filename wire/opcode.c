/* SPDX-License-Identifier: MIT */
/* The opcode table. Header order inside a packet is fixed by IBTA
 * (BTH, XRCETH or FETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH;
 * XRCETH is annex A14's and never meets a DETH or FETH), so every
 * offset is a constant expression of the header mask and the table needs no
 * run-time initialisation. */
#include "opcode.h"
#include "feth.h"
#include "hdr.h"

#define H(x) WIRE_HDR_##x
#define HAS(m, x) (((m) & H(x)) ? 1 : 0)

#define O_XRC(m)    WIRE_BTH_LEN
#define O_FETH(m)   (O_XRC(m) + HAS(m, XRCETH) * WIRE_XRCETH_LEN)
#define O_DETH(m)   (O_FETH(m) + HAS(m, FETH) * WIRE_FETH_LEN)
#define O_RETH(m)   (O_DETH(m) + HAS(m, DETH) * WIRE_DETH_LEN)
#define O_ATOM(m)   (O_RETH(m) + HAS(m, RETH) * WIRE_RETH_LEN)
#define O_AETH(m)   (O_ATOM(m) + HAS(m, ATOMICETH) * WIRE_ATOMICETH_LEN)
#define O_AACK(m)   (O_AETH(m) + HAS(m, AETH) * WIRE_AETH_LEN)
#define O_IMM(m)    (O_AACK(m) + HAS(m, ATOMICACKETH) * WIRE_ATOMICACKETH_LEN)
#define O_IETH(m)   (O_IMM(m) + HAS(m, IMMDT) * WIRE_IMMDT_LEN)
#define O_CNP(m)    (O_IETH(m) + HAS(m, IETH) * WIRE_IETH_LEN)
#define O_END(m)    (O_CNP(m) + HAS(m, CNP) * WIRE_CNP_RESV_LEN)

#define OFF(m, x, o) (HAS(m, x) ? (o) : 0)

#define F(x) WIRE_OPF_##x

#define ENTRY(code, nm, ts, fl, m, c)                                        \
	[code] = {                                                           \
		.name = nm, .tshark = ts,                                    \
		.flags = F(VALID) | (fl), .hdrs = H(BTH) | (m),              \
		.hdr_len = O_END(H(BTH) | (m)), .cls = WIRE_OPC_##c,        \
		.off = {                                                     \
			[WIRE_HI_BTH] = 0,                                   \
			[WIRE_HI_RETH] = OFF(m, RETH, O_RETH(m)),            \
			[WIRE_HI_AETH] = OFF(m, AETH, O_AETH(m)),            \
			[WIRE_HI_ATOMICETH] = OFF(m, ATOMICETH, O_ATOM(m)),  \
			[WIRE_HI_ATOMICACKETH] = OFF(m, ATOMICACKETH, O_AACK(m)), \
			[WIRE_HI_DETH] = OFF(m, DETH, O_DETH(m)),            \
			[WIRE_HI_IMMDT] = OFF(m, IMMDT, O_IMM(m)),           \
			[WIRE_HI_IETH] = OFF(m, IETH, O_IETH(m)),            \
			[WIRE_HI_CNP] = OFF(m, CNP, O_CNP(m)),               \
			[WIRE_HI_FETH] = OFF(m, FETH, O_FETH(m)),            \
			[WIRE_HI_XRCETH] = OFF(m, XRCETH, O_XRC(m)),         \
			[WIRE_HI_PAYLOAD] = O_END(H(BTH) | (m)),             \
		},                                                           \
	}

/* Flag groups. A packet that needs a receive WQE (RECV) is every SEND and
 * the last packet of a WRITE with immediate; COMP marks the packet that
 * completes that receive WQE. */
#define PL   F(PAYLOAD)
#define PLR  (F(PAYLOAD) | F(PAYLOAD_REQUIRED))
#define RQ   F(REQ)
#define RS   F(RESP)
#define FIRST  F(FIRST)
#define MIDDLE F(MIDDLE)
#define LAST   F(LAST)
#define ONLY   (F(FIRST) | F(LAST))
#define SEND_FL(pos) (RQ | F(RECV) | (pos))

/* tshark 4.0's Info-column names by transport: it lists the XRC opcodes
 * but dissects none of them ("Unknown OpCode", nothing after the BTH) */
#define TS_RC(s)  "RC" s
#define TS_UC(s)  "UC" s
#define TS_XRC(s) "Unknown OpCode"

/* Send and write families are identical for RC, UC and XRC apart from the
 * transport bits and XRC's XRCETH (X: the headers every request of the
 * transport adds), so generate all three from one list. */
#define SEND_WRITE_FAMILY(tr, T, TT, X)                                                   \
	ENTRY(tr | 0x00, T " SEND First", TT(" Send First"), SEND_FL(FIRST) | PLR, X, SEND),  \
	ENTRY(tr | 0x01, T " SEND Middle", TT(" Send Middle"), SEND_FL(MIDDLE) | PLR, X, SEND), \
	ENTRY(tr | 0x02, T " SEND Last", TT(" Send Last"), SEND_FL(LAST) | F(COMP) | PL, X, SEND), \
	ENTRY(tr | 0x03, T " SEND Last with Immediate", TT(" Send Last Immediate"),     \
	      SEND_FL(LAST) | F(COMP) | F(IMM) | PL, (X) | H(IMMDT), SEND),                   \
	ENTRY(tr | 0x04, T " SEND Only", TT(" Send Only"), SEND_FL(ONLY) | F(COMP) | PL, X, SEND), \
	ENTRY(tr | 0x05, T " SEND Only with Immediate", TT(" Send Only Immediate"),     \
	      SEND_FL(ONLY) | F(COMP) | F(IMM) | PL, (X) | H(IMMDT), SEND),                   \
	ENTRY(tr | 0x06, T " RDMA WRITE First", TT(" RDMA Write First"), RQ | FIRST | PLR, (X) | H(RETH), WRITE), \
	ENTRY(tr | 0x07, T " RDMA WRITE Middle", TT(" RDMA Write Middle"), RQ | MIDDLE | PLR, X, WRITE), \
	ENTRY(tr | 0x08, T " RDMA WRITE Last", TT(" RDMA Write Last"), RQ | LAST | PL, X, WRITE), \
	ENTRY(tr | 0x09, T " RDMA WRITE Last with Immediate", TT(" RDMA Write Last Immediate"), \
	      RQ | LAST | F(RECV) | F(COMP) | F(IMM) | PL, (X) | H(IMMDT), WRITE),            \
	ENTRY(tr | 0x0a, T " RDMA WRITE Only", TT(" RDMA Write Only"), RQ | ONLY | PL, (X) | H(RETH), WRITE), \
	ENTRY(tr | 0x0b, T " RDMA WRITE Only with Immediate", TT(" RDMA Write Only Immediate"), \
	      RQ | ONLY | F(RECV) | F(COMP) | F(IMM) | PL, (X) | H(RETH) | H(IMMDT), WRITE)

/* READ, the responses, atomics and SEND with invalidate: RC and XRC. */
#define READ_ATOMIC_FAMILY(tr, T, TT, X)                                                 \
	ENTRY(tr | 0x0c, T " RDMA READ Request", TT(" RDMA Read Request"), RQ | ONLY,     \
	      (X) | H(RETH), READ),                                                      \
	ENTRY(tr | 0x0d, T " RDMA READ Response First", TT(" RDMA Read Response First"),  \
	      RS | FIRST | PLR, H(AETH), READ_RESP),                                     \
	ENTRY(tr | 0x0e, T " RDMA READ Response Middle", TT(" RDMA Read Response Middle"), \
	      RS | MIDDLE | PLR, 0, READ_RESP),                                          \
	ENTRY(tr | 0x0f, T " RDMA READ Response Last", TT(" RDMA Read Response Last"),    \
	      RS | LAST | PL, H(AETH), READ_RESP),                                       \
	ENTRY(tr | 0x10, T " RDMA READ Response Only", TT(" RDMA Read Response Only"),    \
	      RS | ONLY | PL, H(AETH), READ_RESP),                                       \
	ENTRY(tr | 0x11, T " Acknowledge", TT(" Acknowledge"), RS | ONLY, H(AETH), ACK),  \
	ENTRY(tr | 0x12, T " ATOMIC Acknowledge", TT(" Atomic Acknowledge"), RS | ONLY,   \
	      H(AETH) | H(ATOMICACKETH), ATOMIC_ACK),                                    \
	ENTRY(tr | 0x13, T " CmpSwap", TT(" Compare Swap"), RQ | ONLY,                    \
	      (X) | H(ATOMICETH), ATOMIC),                                               \
	ENTRY(tr | 0x14, T " FetchAdd", TT(" Fetch Add"), RQ | ONLY,                      \
	      (X) | H(ATOMICETH), ATOMIC),                                               \
	ENTRY(tr | 0x16, T " SEND Last with Invalidate", TT(" Send Last Invalidate"),    \
	      SEND_FL(LAST) | F(COMP) | F(INV) | PL, (X) | H(IETH), SEND),               \
	ENTRY(tr | 0x17, T " SEND Only with Invalidate", TT(" Send Only Invalidate"),    \
	      SEND_FL(ONLY) | F(COMP) | F(INV) | PL, (X) | H(IETH), SEND)

const struct wire_opcode_info wire_opcode_table[256] = {
	SEND_WRITE_FAMILY(WIRE_TR_RC, "RC", TS_RC, 0),
	READ_ATOMIC_FAMILY(WIRE_TR_RC, "RC", TS_RC, 0),
	/* IBTA 1.5 RDMA FLUSH (rxe since Linux 6.2): no payload; answered
	 * by a zero-length READ Response Only */
	ENTRY(0x1c, "RC RDMA FLUSH", "Unknown OpCode" /* tshark 4.0 has no name for it */,
	      RQ | ONLY, H(FETH) | H(RETH), FLUSH),
	/* IBTA 1.5 RDMA ATOMIC WRITE (rxe since Linux 6.2): placed as a
	 * WRITE of exactly 8 aligned bytes, acknowledged by an RC ACK */
	ENTRY(0x1d, "RC RDMA ATOMIC WRITE", "Unknown OpCode" /* tshark 4.0 has no name for it */,
	      RQ | ONLY | PL, H(RETH), WRITE),

	SEND_WRITE_FAMILY(WIRE_TR_UC, "UC", TS_UC, 0),

	ENTRY(0x64, "UD SEND Only", "UD Send Only", SEND_FL(ONLY) | F(COMP) | PL, H(DETH), SEND),
	ENTRY(0x65, "UD SEND Only with Immediate", "UD Send Only Immediate",
	      SEND_FL(ONLY) | F(COMP) | F(IMM) | PL, H(DETH) | H(IMMDT), SEND),

	/* A CNP is neither request nor response: it is addressed to the
	 * sender's QP and only throttles it. */
	ENTRY(0x81, "CNP", "Unknown OpCode" /* tshark 4.0 has no name for it */,
	      ONLY, H(CNP), CNP),

	/* XRC (annex A14): RC's operations; requests carry an XRCETH,
	 * responses are RC's (no XRCETH) */
	SEND_WRITE_FAMILY(WIRE_TR_XRC, "XRC", TS_XRC, H(XRCETH)),
	READ_ATOMIC_FAMILY(WIRE_TR_XRC, "XRC", TS_XRC, H(XRCETH)),
};

const struct wire_opcode_info *wire_opcode_info(uint8_t opcode)
{
	return &wire_opcode_table[opcode];
}

const char *wire_opcode_name(uint8_t opcode)
{
	const char *n = wire_opcode_table[opcode].name;

	return n ? n : "reserved";
}

const char *wire_op_class_str(uint8_t cls)
{
	static const char *const names[] = {
		[WIRE_OPC_NONE] = "none",
		[WIRE_OPC_SEND] = "send",
		[WIRE_OPC_WRITE] = "write",
		[WIRE_OPC_READ] = "read",
		[WIRE_OPC_ATOMIC] = "atomic",
		[WIRE_OPC_READ_RESP] = "read-resp",
		[WIRE_OPC_ACK] = "ack",
		[WIRE_OPC_ATOMIC_ACK] = "atomic-ack",
		[WIRE_OPC_CNP] = "cnp",
		[WIRE_OPC_FLUSH] = "flush",
	};

	if (cls >= sizeof(names) / sizeof(names[0]))
		return "invalid";
	return names[cls];
}
