/* SPDX-License-Identifier: MIT */
/**
 * @file uroce/flush.h
 * IBTA 1.5 RDMA FLUSH for programs built against libibverbs 44 (Debian 12),
 * whose verbs.h predates it: the values newer rdma-core (>= 45) and Linux
 * 6.2+ define, and uroce_wr_flush(), which calls the wr_flush slot of the
 * struct ibv_qp_ex that uroce allocates in newer rdma-core's layout.
 *
 * A program built against newer rdma-core calls ibv_wr_flush() and uses
 * IBV_ACCESS_FLUSH_GLOBAL etc. directly: the values are the same. Usage:
 *
 *   mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
 *                   IBV_ACCESS_REMOTE_WRITE | UROCE_ACCESS_FLUSH_GLOBAL);
 *   attr.qp_access_flags |= UROCE_ACCESS_FLUSH_GLOBAL;   (responder QP)
 *   qpx = ibv_qp_to_qp_ex(qp);
 *   ibv_wr_start(qpx);
 *   qpx->wr_id = 7; qpx->wr_flags = IBV_SEND_SIGNALED;
 *   uroce_wr_flush(qpx, rkey, raddr, len, UROCE_FLUSH_GLOBAL, UROCE_FLUSH_RANGE);
 *   ibv_wr_complete(qpx);
 *   ... a completion with opcode UROCE_WC_FLUSH: every earlier WRITE of
 *   the QP to that range is placed (global) and, for a persistent flush,
 *   written back to the file the responder's MR maps (docs/verbs.md).
 *
 * Only for QPs of uroce devices: another provider's ibv_qp_ex of the old
 * layout has no wr_flush slot.
 */
#ifndef UROCE_FLUSH_H
#define UROCE_FLUSH_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/** MR and QP access flags (enum ibv_access_flags in rdma-core >= 45). */
#define UROCE_ACCESS_FLUSH_GLOBAL     (1u << 8)
#define UROCE_ACCESS_FLUSH_PERSISTENT (1u << 9)
#define UROCE_ACCESS_FLUSH (UROCE_ACCESS_FLUSH_GLOBAL | UROCE_ACCESS_FLUSH_PERSISTENT)

/** Placement types (enum ib_placement_type: IBV_FLUSH_GLOBAL/PERSISTENT). */
#define UROCE_FLUSH_GLOBAL     1u
#define UROCE_FLUSH_PERSISTENT 2u
/** Selectivity levels (enum ib_selectivity_level: IBV_FLUSH_RANGE/MR). */
#define UROCE_FLUSH_RANGE 0u
#define UROCE_FLUSH_MR    1u

/** IBV_WR_FLUSH, IBV_WC_FLUSH, IBV_QP_EX_WITH_FLUSH. */
#define UROCE_WR_OP_FLUSH 14
#define UROCE_WC_FLUSH    8
#define UROCE_QP_EX_WITH_FLUSH (1u << 11)

/** device_cap_flags_ex bits of ibv_query_device_ex (IBV_DEVICE_FLUSH_*). */
#define UROCE_DEVICE_FLUSH_GLOBAL     (1ULL << 38)
#define UROCE_DEVICE_FLUSH_PERSISTENT (1ULL << 39)

typedef void (*uroce_wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				  size_t len, uint8_t type, uint8_t level);

/** Newer rdma-core's struct ibv_qp_ex: libibverbs 44's, then wr_flush. */
struct uroce_qp_ex {
	struct ibv_qp_ex ex;
	uroce_wr_flush_fn wr_flush;
};
_Static_assert(offsetof(struct uroce_qp_ex, wr_flush) ==
	       offsetof(struct ibv_qp_ex, wr_atomic_write) + sizeof(void *),
	       "wr_flush follows wr_atomic_write, as in rdma-core >= 45");

/** ibv_wr_flush(): between ibv_wr_start() and ibv_wr_complete(). A bad
 *  type or level, or a length over 4 GiB, makes ibv_wr_complete() fail
 *  with EINVAL; a FLUSH the responder refuses completes in error
 *  (IBV_WC_REM_ACCESS_ERR without the MR's flag, IBV_WC_REM_INV_REQ_ERR
 *  without the QP's). */
static inline void uroce_wr_flush(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				  size_t len, uint8_t type, uint8_t level)
{
	((struct uroce_qp_ex *)(void *)qp)->wr_flush(qp, rkey, remote_addr, len, type, level);
}

#endif
