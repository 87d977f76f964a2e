/* SPDX-License-Identifier: MIT */
/**
 * @file uroce/wr.h
 * The one table of send work-request opcodes: which QP type may post which
 * opcode, and what each opcode carries. The shim (verbs/post.c) checks a
 * WR against it before writing the WQE, the daemon (emu_sq_copy) checks
 * the WQE against it again when it fetches it (the application may have
 * written the ring itself), so the two sides cannot disagree.
 *
 * QP types follow the BTH opcode table of IBTA Vol. 1 chapter 9: RC has
 * every opcode; UC has SEND, SEND with immediate, RDMA WRITE and RDMA WRITE
 * with immediate on the wire (no SEND with invalidate, no READ, no atomics)
 * plus the local LOCAL_INV and BIND_MW (type 2 windows are bound through
 * the send queue of any connected QP); UD has SEND and SEND with immediate;
 * an XRC INI QP (IBV_QPT_XRC_SEND) has RC's but ATOMIC WRITE.
 * A WR outside the table is refused by ibv_post_send with EINVAL and
 * *bad_wr set, as rdma-core's providers do.
 */
#ifndef UROCE_WR_H
#define UROCE_WR_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <uroce/flush.h>

/** Send flags a WR may carry; anything else is refused. */
#define UROCE_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
			  IBV_SEND_SOLICITED | IBV_SEND_INLINE | \
			  IBV_SEND_IP_CSUM)

/** QP type bits of uroce_wr_info.qpt. */
#define UROCE_QPT_BIT(t) (1u << (t))
#define UROCE_QPT_RC UROCE_QPT_BIT(IBV_QPT_RC)
#define UROCE_QPT_UC UROCE_QPT_BIT(IBV_QPT_UC)
#define UROCE_QPT_UD UROCE_QPT_BIT(IBV_QPT_UD)
/* XRC INI QPs send what RC sends, but ATOMIC WRITE (IBTA 1.5 defines
 * it for RC only) */
#define UROCE_QPT_XRC UROCE_QPT_BIT(IBV_QPT_XRC_SEND)
#define UROCE_QPT_RCX (UROCE_QPT_RC | UROCE_QPT_XRC)

/** What a WR of an opcode carries (uroce_wr_info.needs). */
enum uroce_wr_need {
	UROCE_WR_REMOTE = 1u << 0,  /**< wr.rdma remote_addr + rkey */
	UROCE_WR_ATOMIC = 1u << 1,  /**< wr.atomic: 8-aligned, one SGE >= 8 */
	UROCE_WR_IMM    = 1u << 2,  /**< imm_data */
	UROCE_WR_INV    = 1u << 3,  /**< invalidate_rkey */
	UROCE_WR_INLINE = 1u << 4,  /**< IBV_SEND_INLINE allowed (payload out) */
	UROCE_WR_BIND   = 1u << 5,  /**< bind_mw */
	UROCE_WR_LOCAL  = 1u << 6,  /**< no packet: acts on local keys only */
	UROCE_WR_AWRITE = 1u << 7,  /**< ATOMIC WRITE: its 8 bytes travel in the WQE
				     *  (atomic.swap), remote address 8-aligned */
};
/* IBTA 1.5 FLUSH: ibv_qp_ex only (ibv_send_wr has no field for it);
 * needs 0, operands in the WQE's flush member (uroce/flush.h) */

struct uroce_wr_info {
	uint16_t qpt;   /**< UROCE_QPT_* allowed to post it */
	uint8_t needs;  /**< enum uroce_wr_need */
};

static const struct uroce_wr_info uroce_wr_table[] = {
	[IBV_WR_RDMA_WRITE] = { UROCE_QPT_RCX | UROCE_QPT_UC,
				UROCE_WR_REMOTE | UROCE_WR_INLINE },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { UROCE_QPT_RCX | UROCE_QPT_UC,
				UROCE_WR_REMOTE | UROCE_WR_IMM | UROCE_WR_INLINE },
	[IBV_WR_SEND] = { UROCE_QPT_RCX | UROCE_QPT_UC | UROCE_QPT_UD,
				UROCE_WR_INLINE },
	[IBV_WR_SEND_WITH_IMM] = { UROCE_QPT_RCX | UROCE_QPT_UC | UROCE_QPT_UD,
				UROCE_WR_IMM | UROCE_WR_INLINE },
	[IBV_WR_RDMA_READ] = { UROCE_QPT_RCX, UROCE_WR_REMOTE },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { UROCE_QPT_RCX, UROCE_WR_ATOMIC },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { UROCE_QPT_RCX, UROCE_WR_ATOMIC },
	[IBV_WR_LOCAL_INV] = { UROCE_QPT_RCX | UROCE_QPT_UC,
				UROCE_WR_INV | UROCE_WR_LOCAL },
	[IBV_WR_BIND_MW] = { UROCE_QPT_RCX | UROCE_QPT_UC,
				UROCE_WR_BIND | UROCE_WR_LOCAL },
	[IBV_WR_SEND_WITH_INV] = { UROCE_QPT_RCX, UROCE_WR_INV | UROCE_WR_INLINE },
	[IBV_WR_ATOMIC_WRITE] = { UROCE_QPT_RC, UROCE_WR_REMOTE | UROCE_WR_AWRITE },
	[UROCE_WR_OP_FLUSH] = { UROCE_QPT_RC, 0 },
};

#define UROCE_WR_NOPS (sizeof(uroce_wr_table) / sizeof(uroce_wr_table[0]))

/** The table entry of op, or NULL for an opcode uroce does not implement. */
static inline const struct uroce_wr_info *uroce_wr_info(unsigned op)
{
	if (op >= UROCE_WR_NOPS || !uroce_wr_table[op].qpt)
		return NULL;
	return &uroce_wr_table[op];
}

/** May a QP of type qpt post opcode op with send_flags? */
static inline bool uroce_wr_allowed(unsigned qpt, unsigned op, unsigned flags)
{
	const struct uroce_wr_info *i = uroce_wr_info(op);

	if (!i || qpt >= 16 || !(i->qpt & UROCE_QPT_BIT(qpt)))
		return false;
	if (flags & ~(unsigned)UROCE_SEND_FLAGS)
		return false;
	return !(flags & IBV_SEND_INLINE) || (i->needs & UROCE_WR_INLINE);
}

#endif
