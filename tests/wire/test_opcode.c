/* SPDX-License-Identifier: MIT */
/* Opcode table invariants. */
#include <string.h>

#include "../include/check.h"
#include "wire.h"

static const uint8_t defined[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d,
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,
	0x64, 0x65, 0x81,
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab,
	0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb6, 0xb7,
};

static unsigned hlen(uint16_t bit)
{
	switch (bit) {
	case WIRE_HDR_BTH: return WIRE_BTH_LEN;
	case WIRE_HDR_RETH: return WIRE_RETH_LEN;
	case WIRE_HDR_AETH: return WIRE_AETH_LEN;
	case WIRE_HDR_ATOMICETH: return WIRE_ATOMICETH_LEN;
	case WIRE_HDR_ATOMICACKETH: return WIRE_ATOMICACKETH_LEN;
	case WIRE_HDR_DETH: return WIRE_DETH_LEN;
	case WIRE_HDR_IMMDT: return WIRE_IMMDT_LEN;
	case WIRE_HDR_IETH: return WIRE_IETH_LEN;
	case WIRE_HDR_CNP: return WIRE_CNP_RESV_LEN;
	case WIRE_HDR_FETH: return WIRE_FETH_LEN;
	case WIRE_HDR_XRCETH: return WIRE_XRCETH_LEN;
	}
	return 0;
}

int main(void)
{
	bool is_def[256] = { false };
	unsigned nvalid = 0;

	for (size_t i = 0; i < sizeof(defined); i++)
		is_def[defined[i]] = true;

	for (unsigned opc = 0; opc < 256; opc++) {
		const struct wire_opcode_info *op = wire_opcode_info((uint8_t)opc);
		uint32_t f = op->flags;

		CHECK(op == &wire_opcode_table[opc], "table pointer");
		CHECK(wire_opcode_valid((uint8_t)opc) == is_def[opc], "opcode 0x%02x validity", opc);
		if (!is_def[opc]) {
			CHECK(op->name == NULL && op->flags == 0 && op->hdrs == 0 && op->hdr_len == 0,
			      "undefined 0x%02x is empty", opc);
			CHECK(!strcmp(wire_opcode_name((uint8_t)opc), "reserved"), "reserved name");
			continue;
		}
		nvalid++;
		CHECK(op->name && op->tshark, "0x%02x names", opc);
		CHECK(!strcmp(wire_opcode_name((uint8_t)opc), op->name), "name lookup");
		static const char *const pfx[8] = { "RC ", "UC ", "RD ", "UD ", "CNP", "XRC" };
		CHECK(!strncmp(op->name, pfx[opc >> 5], 3), "0x%02x prefix %s", opc, op->name);

		/* Exactly one place in a message. */
		unsigned pos = f & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE | WIRE_OPF_LAST);
		CHECK(pos == WIRE_OPF_FIRST || pos == WIRE_OPF_MIDDLE || pos == WIRE_OPF_LAST ||
		      pos == WIRE_OPF_ONLY, "0x%02x position %x", opc, pos);
		CHECK(((pos == WIRE_OPF_ONLY) == (strstr(op->name, "Only") != NULL)) ||
		      opc == 0x0c || opc == 0x11 || opc == 0x12 || opc == 0x13 || opc == 0x14 ||
		      opc == 0x1c || opc == 0x1d || opc == 0x81 ||
		      (opc >= 0xac && opc <= 0xb4 && opc != 0xb0),
		      "0x%02x only vs name", opc);
		CHECK((pos == WIRE_OPF_FIRST) == (strstr(op->name, "First") != NULL), "first name");
		CHECK((pos == WIRE_OPF_MIDDLE) == (strstr(op->name, "Middle") != NULL), "middle name");
		CHECK((pos == WIRE_OPF_LAST) == (strstr(op->name, "Last") != NULL), "last name");

		/* Requests vs responses. */
		if (opc == WIRE_OP_CNP)
			CHECK(!(f & (WIRE_OPF_REQ | WIRE_OPF_RESP)), "cnp neither");
		else
			CHECK(!!(f & WIRE_OPF_REQ) != !!(f & WIRE_OPF_RESP), "0x%02x req xor resp", opc);

		/* Payload rules: first/middle packets are full MTU, so non-empty. */
		if (pos == WIRE_OPF_FIRST || pos == WIRE_OPF_MIDDLE)
			CHECK(f & WIRE_OPF_PAYLOAD_REQUIRED, "0x%02x first/middle requires payload", opc);
		if (f & WIRE_OPF_PAYLOAD_REQUIRED)
			CHECK(f & WIRE_OPF_PAYLOAD, "required implies payload");
		bool has_pl = op->cls == WIRE_OPC_SEND || op->cls == WIRE_OPC_WRITE ||
			      op->cls == WIRE_OPC_READ_RESP;
		CHECK(!!(f & WIRE_OPF_PAYLOAD) == has_pl, "0x%02x payload by class", opc);

		/* Header flags agree with headers. */
		CHECK(!!(f & WIRE_OPF_IMM) == !!(op->hdrs & WIRE_HDR_IMMDT), "imm");
		CHECK(!!(f & WIRE_OPF_IMM) == (strstr(op->name, "Immediate") != NULL), "imm name");
		CHECK(!!(f & WIRE_OPF_INV) == !!(op->hdrs & WIRE_HDR_IETH), "inv");
		CHECK(!!(f & WIRE_OPF_INV) == (strstr(op->name, "Invalidate") != NULL), "inv name");
		CHECK(op->hdrs & WIRE_HDR_BTH, "bth");
		CHECK(!!(op->hdrs & WIRE_HDR_DETH) == ((opc & 0xe0) == WIRE_TR_UD), "deth iff UD");
		if (op->cls == WIRE_OPC_WRITE)
			CHECK(!!(op->hdrs & WIRE_HDR_RETH) == !!(f & WIRE_OPF_FIRST), "write reth");
		/* XRC: every request, and only requests, carry an XRCETH */
		uint16_t x = (opc & 0xe0) == WIRE_TR_XRC && (f & WIRE_OPF_REQ) ? WIRE_HDR_XRCETH : 0;
		CHECK((op->hdrs & WIRE_HDR_XRCETH) == x, "0x%02x xrceth iff XRC request", opc);
		if (op->cls == WIRE_OPC_READ)
			CHECK(op->hdrs == (WIRE_HDR_BTH | x | WIRE_HDR_RETH), "read req");
		if (op->cls == WIRE_OPC_READ_RESP)
			CHECK(!!(op->hdrs & WIRE_HDR_AETH) == (pos != WIRE_OPF_MIDDLE), "read resp aeth");
		if (op->cls == WIRE_OPC_ACK)
			CHECK(op->hdrs == (WIRE_HDR_BTH | WIRE_HDR_AETH), "ack");
		if (op->cls == WIRE_OPC_ATOMIC_ACK)
			CHECK(op->hdrs == (WIRE_HDR_BTH | WIRE_HDR_AETH | WIRE_HDR_ATOMICACKETH), "aack");
		if (op->cls == WIRE_OPC_ATOMIC)
			CHECK(op->hdrs == (WIRE_HDR_BTH | x | WIRE_HDR_ATOMICETH), "atomic");
		CHECK(!!(op->hdrs & WIRE_HDR_FETH) == (op->cls == WIRE_OPC_FLUSH), "feth iff flush");
		if (op->cls == WIRE_OPC_SEND)
			CHECK(f & WIRE_OPF_RECV, "send needs a receive WQE");
		if (f & WIRE_OPF_COMP)
			CHECK((f & WIRE_OPF_LAST) && (f & WIRE_OPF_RECV), "comp at message end");

		/* Offsets: headers are contiguous after the BTH in IBTA order. */
		static const uint16_t order[] = {
			WIRE_HDR_XRCETH, WIRE_HDR_FETH, WIRE_HDR_DETH, WIRE_HDR_RETH, WIRE_HDR_ATOMICETH,
			WIRE_HDR_AETH,
			WIRE_HDR_ATOMICACKETH, WIRE_HDR_IMMDT, WIRE_HDR_IETH, WIRE_HDR_CNP,
		};
		static const int idx[] = {
			WIRE_HI_XRCETH, WIRE_HI_FETH, WIRE_HI_DETH, WIRE_HI_RETH, WIRE_HI_ATOMICETH,
			WIRE_HI_AETH,
			WIRE_HI_ATOMICACKETH, WIRE_HI_IMMDT, WIRE_HI_IETH, WIRE_HI_CNP,
		};
		unsigned at = WIRE_BTH_LEN;
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
			if (op->hdrs & order[k]) {
				CHECK(op->off[idx[k]] == at, "0x%02x hdr %zu at %u not %u", opc, k,
				      op->off[idx[k]], at);
				at += hlen(order[k]);
			} else {
				CHECK(op->off[idx[k]] == 0, "absent header offset 0");
			}
		}
		CHECK(op->hdr_len == at && op->off[WIRE_HI_PAYLOAD] == at, "0x%02x hdr_len", opc);
	}
	CHECK_EQ(nvalid, sizeof(defined));

	/* RC and UC SEND/WRITE families match apart from the transport bits. */
	for (unsigned k = 0; k < 12; k++) {
		const struct wire_opcode_info *rc = wire_opcode_info((uint8_t)k);
		const struct wire_opcode_info *uc = wire_opcode_info((uint8_t)(0x20 | k));
		CHECK(rc->flags == uc->flags && rc->hdrs == uc->hdrs && rc->cls == uc->cls &&
		      !strcmp(rc->name + 2, uc->name + 2), "rc/uc 0x%02x", k);
	}

	/* XRC is RC plus the XRCETH on requests: same flags, classes, names */
	for (unsigned k = 0; k < 0x18; k++) {
		const struct wire_opcode_info *rc = wire_opcode_info((uint8_t)k);
		const struct wire_opcode_info *xrc = wire_opcode_info((uint8_t)(WIRE_TR_XRC | k));
		uint16_t x = (rc->flags & WIRE_OPF_REQ) ? WIRE_HDR_XRCETH : 0;

		CHECK(rc->flags == xrc->flags && (rc->hdrs | x) == xrc->hdrs && rc->cls == xrc->cls &&
		      (!rc->name || !strcmp(rc->name + 2, xrc->name + 3)) &&
		      (!rc->flags || rc->hdr_len + (x ? WIRE_XRCETH_LEN : 0) == xrc->hdr_len),
		      "rc/xrc 0x%02x", k);
	}
	/* the XRCETH right after the BTH, before RETH / AtomicETH / ImmDt / IETH */
	CHECK_EQ(wire_opcode_info(WIRE_OP_XRC_WRITE_ONLY)->off[WIRE_HI_XRCETH], 12);
	CHECK_EQ(wire_opcode_info(WIRE_OP_XRC_WRITE_ONLY)->off[WIRE_HI_RETH], 16);
	CHECK_EQ(wire_opcode_info(WIRE_OP_XRC_CMP_SWAP)->off[WIRE_HI_ATOMICETH], 16);
	CHECK_EQ(wire_opcode_info(WIRE_OP_XRC_SEND_ONLY_INV)->off[WIRE_HI_IETH], 16);
	CHECK_EQ(wire_opcode_info(WIRE_OP_XRC_ACK)->off[WIRE_HI_XRCETH], 0);
	CHECK(!strcmp(wire_opcode_name(0xa4), "XRC SEND Only"), "0xa4");
	CHECK(!strcmp(wire_opcode_name(0xbd), "reserved"), "no XRC ATOMIC WRITE");

	/* Names as IBTA / the brief print them. */
	CHECK(!strcmp(wire_opcode_name(0x04), "RC SEND Only"), "0x04");
	CHECK(!strcmp(wire_opcode_name(0x0d), "RC RDMA READ Response First"), "0x0d");
	CHECK(!strcmp(wire_opcode_name(0x11), "RC Acknowledge"), "0x11");
	CHECK(!strcmp(wire_opcode_name(0x65), "UD SEND Only with Immediate"), "0x65");
	CHECK(!strcmp(wire_opcode_name(0x81), "CNP"), "0x81");
	CHECK(!strcmp(wire_opcode_name(0x15), "reserved"), "0x15");
	CHECK(!strcmp(wire_opcode_name(0x40), "reserved"), "RD unsupported");
	CHECK_EQ(wire_opcode_info(0x81)->hdr_len, 28);
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_WRITE_ONLY_IMM)->hdr_len, 32);
	CHECK_EQ(wire_opcode_info(WIRE_OP_UD_SEND_ONLY_IMM)->off[WIRE_HI_IMMDT], 20);
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_ATOMIC_ACK)->off[WIRE_HI_ATOMICACKETH], 16);
	/* IBTA 1.5 ATOMIC WRITE: an RC request, RETH then its 8 bytes */
	CHECK(!strcmp(wire_opcode_name(0x1d), "RC RDMA ATOMIC WRITE"), "0x1d");
	CHECK(wire_opcode_info(WIRE_OP_RC_ATOMIC_WRITE)->hdrs == (WIRE_HDR_BTH | WIRE_HDR_RETH) &&
	      wire_opcode_info(WIRE_OP_RC_ATOMIC_WRITE)->cls == WIRE_OPC_WRITE &&
	      (wire_opcode_info(WIRE_OP_RC_ATOMIC_WRITE)->flags & WIRE_OPF_REQ), "0x1d shape");
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_ATOMIC_WRITE)->hdr_len, 28);
	/* IBTA 1.5 FLUSH: BTH, FETH, RETH as rxe lays them out; no payload */
	CHECK(!strcmp(wire_opcode_name(0x1c), "RC RDMA FLUSH"), "0x1c");
	CHECK(wire_opcode_info(WIRE_OP_RC_FLUSH)->hdrs ==
	      (WIRE_HDR_BTH | WIRE_HDR_FETH | WIRE_HDR_RETH) &&
	      wire_opcode_info(WIRE_OP_RC_FLUSH)->cls == WIRE_OPC_FLUSH &&
	      (wire_opcode_info(WIRE_OP_RC_FLUSH)->flags & WIRE_OPF_REQ) &&
	      !(wire_opcode_info(WIRE_OP_RC_FLUSH)->flags & WIRE_OPF_PAYLOAD), "0x1c shape");
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_FLUSH)->off[WIRE_HI_FETH], 12);
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_FLUSH)->off[WIRE_HI_RETH], 16);
	CHECK_EQ(wire_opcode_info(WIRE_OP_RC_FLUSH)->hdr_len, 32);
	CHECK(!strcmp(wire_op_class_str(WIRE_OPC_FLUSH), "flush"), "flush class name");
	CHECK_EQ(wire_opcode_transport(0x65), WIRE_TR_UD);
	CHECK(!strcmp(wire_op_class_str(WIRE_OPC_READ_RESP), "read-resp") &&
	      !strcmp(wire_op_class_str(200), "invalid"), "class names");
	return t_done("test_opcode");
}
