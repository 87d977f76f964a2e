/* SPDX-License-Identifier: MIT */
/**
 * @file uroce/abi.h
 * The ABI between uroced (the daemon) and liburoce.so (the verbs shim).
 *
 * Two channels connect them:
 *  - a control socket (AF_UNIX, SOCK_SEQPACKET) per device, carrying one
 *    request and one reply per verbs call that creates, changes or destroys
 *    an object; file descriptors travel with SCM_RIGHTS;
 *  - shared memory (memfd, mmap'ed by both) holding the lock-free rings of
 *    every SQ, RQ, SRQ and CQ, and a doorbell page per context.
 *
 * Numeric values of opcodes, statuses, flags, QP states and attribute masks
 * are those of <infiniband/verbs.h> (stable rdma-core ABI), so neither side
 * translates them. Structures that libibverbs defines as plain data
 * (ibv_device_attr, ibv_port_attr, ibv_qp_attr, ibv_ah_attr, ibv_srq_attr)
 * are carried as they are; both sides are built against the same headers.
 *
 * Trust: the daemon treats every byte written by the application (messages,
 * ring indices, WQEs) as hostile and validates it; the shim trusts the
 * daemon.
 *
 * Descriptors go daemon -> shim, except the ones HELLO carries (the
 * client's /proc/self/mem, which the daemon only reads and writes at
 * registered addresses and never waits on a client's say-so for, and its
 * /proc/self/maps, which it only asks): every memfd is sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) before
 * it is sent, and of every pipe the daemon reads or writes it keeps its own
 * end (O_NONBLOCK on a file description the shim never holds) and sends the
 * other, so nothing the shim does to its descriptors can block the daemon.
 *
 * Ring protocol: single producer / single consumer, free-running 32-bit
 * indices, entry i lives at slot (i & (entries - 1)). Producer writes the
 * entry, then stores prod with release; consumer loads prod with acquire,
 * reads entries, then stores cons with release. prod and cons live on
 * separate cache lines.
 */
#ifndef UROCE_ABI_H
#define UROCE_ABI_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* Bumped by one for every change a liburoce or uroced of another build
 * would misread: a struct, ring, flag or op meaning or layout, a new op
 * the shim relies on. HELLO is the one exchange that never changes:
 * struct uroce_hello_req, and abi_version first in the reply; a daemon of
 * another version refuses with -EPROTONOSUPPORT and its own abi_version as
 * the refusal's 4-byte body (docs/verbs.md, "ABI version").
 * 2: pipes made by the daemon, /proc/self/mem in HELLO;
 * 3: small receive payloads in the CQ ring (uroce_cqe_inl);
 * 4: UROCE_RING_F_KICK in the RQ header, the QP arena
 *    (UROCE_OP_CREATE_QP_ARENA) and the control mailbox (uroce_ctl_mbox);
 * 5: uroce_hello_rep.flags (UROCE_HELLO_F_PRIVILEGED), UROCE_OP_QUERY_LIMITS;
 * 6: registered memory pinned through the client's io_uring
 *    (UROCE_OP_MEM_CHANNEL, uroce_reg_mr_req.pin), UROCE_OP_UNMAP_MR gone,
 *    UROCE_OP_QUERY_MRS;
 * 7: UROCE_OP_QUERY_NIC and UROCE_OP_SET_MTU (new ops only: a daemon
 *    without them refuses them, uroce-ctl then shows no NIC) */
#define UROCE_ABI_VERSION 7

/** Environment variable naming the directory of the control sockets. */
#define UROCE_ENV_RUN_DIR "UROCE_RUN_DIR"
/** Default directory when UROCE_RUN_DIR and XDG_RUNTIME_DIR are unset:
 *  "/tmp/uroce-<euid>". */
#define UROCE_DEFAULT_RUN_DIR_FMT "/tmp/uroce-%u"
/** Subdirectory of $XDG_RUNTIME_DIR used when that is set (and absolute). */
#define UROCE_XDG_SUBDIR "uroce"
/** Suggested run directory of a system-wide daemon (root, several users);
 *  its clients set UROCE_RUN_DIR to it (docs/security.md). */
#define UROCE_SYSTEM_RUN_DIR "/run/uroce"

/**
 * The run directory, as the daemon, the shim and the tools all compute it:
 * $UROCE_RUN_DIR, else $XDG_RUNTIME_DIR/uroce (a directory only its user
 * can write), else /tmp/uroce-<euid>. 0 or -ENAMETOOLONG.
 * Whoever uses it checks ownership and permissions (docs/security.md).
 */
static inline int uroce_run_dir(char *buf, size_t len)
{
	const char *e = getenv(UROCE_ENV_RUN_DIR);
	const char *x = getenv("XDG_RUNTIME_DIR");
	int n;

	if (e && *e)
		n = snprintf(buf, len, "%s", e);
	else if (x && x[0] == '/')
		n = snprintf(buf, len, "%s/" UROCE_XDG_SUBDIR, x);
	else
		n = snprintf(buf, len, UROCE_DEFAULT_RUN_DIR_FMT, (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
/** Control socket of device NAME: "<run dir>/NAME.sock". */
#define UROCE_SOCK_SUFFIX ".sock"
/** sysfs-shaped tree of device NAME, written by its daemon:
 *  "<run dir>/" UROCE_SYSFS_CLASS "/NAME"; liburoce shows it as
 *  /sys/class/infiniband/NAME (docs/verbs.md, "System view"). */
#define UROCE_SYSFS_CLASS "class/infiniband"

#define UROCE_DEV_NAME_MAX 64
#define UROCE_MAX_GIDS 16
#define UROCE_MAX_MSG 4096 /**< largest control message, either way */
#define UROCE_CACHELINE 64

/** Vendor id reported: neither Mellanox (0x02c9) nor EFA, so perftest
 *  stays on the generic verbs paths. 0x1ace is unassigned by IEEE OUI use
 *  for RDMA vendors we know of. */
#define UROCE_VENDOR_ID 0x001ace
#define UROCE_VENDOR_PART_ID 0x0001

/* ------------------------------------------------------------------ */
/* Shared memory                                                      */
/* ------------------------------------------------------------------ */

/** Header of every ring; followed (at offset UROCE_RING_HDR_SIZE) by
 *  `entries` slots of `stride` bytes. entries and stride are powers of two.
 *  The daemon keeps its own copies of entries/stride: the copies here are
 *  for the shim. */
struct uroce_ring_hdr {
	_Alignas(UROCE_CACHELINE) uint32_t prod; /**< written by producer only */
	_Alignas(UROCE_CACHELINE) uint32_t cons; /**< written by consumer only */
	_Alignas(UROCE_CACHELINE) uint32_t entries;
	uint32_t stride;
	/** CQ only, written by the shim with atomic OR: UROCE_ARM_* bits.
	 *  The daemon clears it with an atomic exchange when it sends the
	 *  one completion event an arm allows. */
	uint32_t arm;
	/** Written by the daemon: UROCE_RING_F_* bits. */
	uint32_t flags;
};
#define UROCE_RING_HDR_SIZE 256

/** CQ arm bits (ibv_req_notify_cq): NEXT takes precedence over SOLICITED. */
#define UROCE_ARM_NEXT      0x1u
#define UROCE_ARM_SOLICITED 0x2u

/** Ring flags set by the daemon. */
#define UROCE_RING_F_ERROR  0x1u /**< CQ overrun (IBV_EVENT_CQ_ERR raised) or QP gone */
#define UROCE_RING_F_DEAD   0x2u /**< the daemon is shutting down */
/** RQ: receives posted now must ring the doorbell. Set (before it flushes)
 *  while the QP is in ERR, where the daemon completes posted receives with
 *  IBV_WC_WR_FLUSH_ERR; otherwise it takes receives when a message needs
 *  one, and posting them costs no doorbell. */
#define UROCE_RING_F_KICK   0x4u

/** Scatter/gather element, as ibv_sge. */
struct uroce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/**
 * Send queue entry. The slot is `stride` bytes: this 64-byte header, then
 * either num_sge uroce_sge or, with IBV_SEND_INLINE, inline_len bytes of
 * data copied at post time (the daemon then never reads application memory
 * for this WQE).
 *
 * Slot reuse: the daemon advances the SQ `cons` index when the WR has
 * completed (CQE written, or for an unsignaled WR, when a CQE would have
 * been written). So prod - cons counts outstanding WRs, bounded by the
 * ring size, exactly as max_send_wr bounds them.
 */
struct uroce_send_wqe {
	uint64_t wr_id;
	uint8_t opcode;      /**< enum ibv_wr_opcode */
	uint8_t num_sge;
	uint16_t send_flags; /**< enum ibv_send_flags */
	uint32_t inline_len;
	uint32_t imm_or_inv; /**< imm_data (network order, as posted) or invalidate_rkey */
	uint32_t xrc_srqn;   /**< XRC INI QP: the remote XRC SRQ (qp_type.xrc.remote_srqn) */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t rsvd;
		} rdma;
		/* IBV_WR_ATOMIC_WRITE: rdma.remote_addr and rdma.rkey,
		 * its 8 bytes in atomic.swap (no SGE) */
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t rsvd;
		} atomic;
		struct {
			uint32_t ah;          /**< AH handle from UROCE_OP_CREATE_AH */
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t rsvd;
		} ud;
		struct {                      /* UROCE_WR_OP_FLUSH (uroce/flush.h) */
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t length;      /**< RETH DMA length (level RANGE) */
			uint8_t type;         /**< placement type bits */
			uint8_t level;        /**< selectivity level */
			uint8_t rsvd[6];
		} flush;
		struct {
			uint32_t mw;          /**< MW handle */
			uint32_t rkey;        /**< new rkey for the window */
			uint64_t addr;
			uint64_t length;
			uint32_t mr_lkey;     /**< MR the window is bound to (lkey) */
			uint32_t access;      /**< mw_access_flags */
		} bind;
	};
};
#define UROCE_SEND_WQE_HDR 64
_Static_assert(sizeof(struct uroce_send_wqe) <= UROCE_SEND_WQE_HDR, "send wqe header");

/** Receive queue / SRQ entry: this header then num_sge uroce_sge. */
struct uroce_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
};
#define UROCE_RECV_WQE_HDR 16
_Static_assert(sizeof(struct uroce_recv_wqe) == UROCE_RECV_WQE_HDR, "recv wqe header");

/** Completion queue entry; field meanings are those of struct ibv_wc. */
struct uroce_cqe {
	uint64_t wr_id;
	uint32_t status;     /**< enum ibv_wc_status */
	uint32_t opcode;     /**< enum ibv_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_or_inv; /**< imm_data (network order) or invalidated_rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;   /**< enum ibv_wc_flags */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t solicited;   /**< the message carried the SE bit (for arm SOLICITED) */
	uint8_t inl_nseg;    /**< 0: any payload was placed by the daemon; n > 0: the
			      *  byte_len bytes are in the companion slot of this
			      *  index (uroce_cqe_inl), for the shim to scatter over
			      *  its seg[0..n) before it returns the completion */
	uint64_t timestamp_ns; /**< completion time, CLOCK_MONOTONIC, for ibv_cq_ex
				*  (0 unless the CQ was made with UROCE_CQ_F_TIMESTAMP) */
	uint64_t rsvd1;
};
#define UROCE_CQE_SIZE 64
_Static_assert(sizeof(struct uroce_cqe) == UROCE_CQE_SIZE, "cqe size");

/**
 * Small receive payloads travel in the CQ ring (docs/performance.md): a
 * successful SEND / SEND_WITH_IMM / SEND_WITH_INV receive of at most
 * UROCE_CQE_INL_PAYLOAD bytes (on UD, the 40-byte GRH area and the payload:
 * byte_len) whose receive SGEs the daemon has checked (lkey, LOCAL_WRITE,
 * length) and which land in at most UROCE_CQE_INL_SEGS pieces is not placed
 * by the daemon: it writes the bytes and the pieces (process addresses,
 * from the receive WQE) here, in the slot of the same index as the CQE,
 * before it publishes prod. The shim copies them into place when it polls
 * that CQE, before returning it, so no system call is spent on them.
 *
 * Ring memfd layout: header, `entries` CQEs, then `entries` of these.
 */
#define UROCE_CQE_INL_SEGS 4
#define UROCE_CQE_INL_PAYLOAD 64 /**< largest payload the daemon puts here */
#define UROCE_CQE_INL_DATA 128   /**< room: 40 (UD GRH) + UROCE_CQE_INL_PAYLOAD, rounded */
struct uroce_cqe_inl {
	struct {
		uint64_t addr;   /**< process virtual address */
		uint32_t len;
		uint32_t rsvd;
	} seg[UROCE_CQE_INL_SEGS];
	uint8_t data[UROCE_CQE_INL_DATA];
};
#define UROCE_CQE_INL_SIZE 192
_Static_assert(sizeof(struct uroce_cqe_inl) == UROCE_CQE_INL_SIZE, "cqe inline slot");
_Static_assert(40 + UROCE_CQE_INL_PAYLOAD <= UROCE_CQE_INL_DATA, "cqe inline room");
/** Offset of the companion slots in a CQ ring of `entries` slots. */
#define UROCE_CQ_INL_OFFSET(entries) \
	(UROCE_RING_HDR_SIZE + (uint64_t)(entries) * UROCE_CQE_SIZE)

/**
 * Doorbell page, one per context (memfd of UROCE_DB_PAGE_SIZE bytes).
 * After publishing SQ/RQ/SRQ entries the shim sets bit `db_index` (given
 * when the QP or SRQ was created) in `bits` and the bit (db_index / 64) in
 * `summary`, both with atomic OR (release); then, if `need_wakeup` is
 * non-zero (acquire, after a seq_cst fence), it writes 8 bytes (any value)
 * to the context's wake pipe (EAGAIN: the daemon is awake anyway). The daemon clears summary then bits with atomic exchange
 * before it reads the rings, so a post that races with a scan is seen on
 * the next one.
 */
#define UROCE_DB_MAX 32768u /**< QPs + SRQs per context */
/**
 * Control mailbox, in the doorbell page: a control request without
 * descriptors may travel here instead of on the socket, one at a time
 * per connection, with the socket's message format and sequence numbers
 * (docs/performance.md, "QP setup"). The shim writes the message (header
 * and body, at most UROCE_MBOX_MAX bytes) into req, its length into
 * req_len, then req_seq = the header's seq (release) and wakes a sleeping
 * daemon as for a doorbell. The daemon copies the request out before it
 * looks at it, serves it as a socket request, writes the reply into rep
 * and sets rep_seq = req_seq (release); FUTEX_WAKE on rep_seq if waiting
 * is non-zero (the shim sleeps in FUTEX_WAIT after a short spin). A reply
 * with descriptors or longer than UROCE_MBOX_MAX goes on the socket
 * instead; the mailbox's reply header then has len 0.
 */
#define UROCE_MBOX_MAX 512
struct uroce_ctl_mbox {
	_Alignas(UROCE_CACHELINE) uint32_t req_seq; /**< written by the shim */
	uint32_t req_len;
	_Alignas(UROCE_CACHELINE) uint32_t rep_seq; /**< written by the daemon */
	uint32_t waiting;                           /**< written by the shim */
	_Alignas(UROCE_CACHELINE) uint8_t req[UROCE_MBOX_MAX];
	_Alignas(UROCE_CACHELINE) uint8_t rep[UROCE_MBOX_MAX];
};

struct uroce_db_page {
	_Alignas(UROCE_CACHELINE) uint32_t need_wakeup; /**< written by the daemon */
	uint32_t daemon_pid;
	_Alignas(UROCE_CACHELINE) uint64_t summary[UROCE_DB_MAX / 64 / 64];
	_Alignas(UROCE_CACHELINE) uint64_t bits[UROCE_DB_MAX / 64];
	struct uroce_ctl_mbox mbox;
};
#define UROCE_DB_PAGE_SIZE 8192u
_Static_assert(sizeof(struct uroce_db_page) <= UROCE_DB_PAGE_SIZE, "doorbell page");

/* ------------------------------------------------------------------ */
/* Event records written by the daemon                                 */
/* ------------------------------------------------------------------ */

/** Completion channel fd (a pipe the daemon created; it holds the write
 *  end, the shim gets the read end): one record per completion event, as
 *  the kernel's. Records the pipe has no room for wait in the daemon (a
 *  bounded backlog, in order) until the reader makes room. */
struct uroce_comp_event {
	uint64_t cq_handle; /**< user_handle given at UROCE_OP_CREATE_CQ */
};

/** Async fd (a pipe the daemon created, write end held by the daemon,
 *  backlog as for completion channels). EOF means the daemon is gone: the
 *  shim reports IBV_EVENT_DEVICE_FATAL. */
struct uroce_async_event {
	uint64_t element;   /**< user_handle of the CQ/QP/SRQ, or the port number */
	uint32_t event_type; /**< enum ibv_event_type */
	uint32_t rsvd;
};

/* ------------------------------------------------------------------ */
/* Control messages                                                    */
/* ------------------------------------------------------------------ */

enum uroce_op {
	UROCE_OP_HELLO = 1,      /**< fds in: [0] /proc/self/mem opened O_RDWR by the
				  *  client: the only way the daemon reaches its memory;
				  *  HELLO without it is refused (-EINVAL, -EACCES if not
				  *  the peer's own); [1] (optional) /proc/self/maps
				  *  O_RDONLY: what the daemon may read or write there
				  *  (-EACCES if not the peer's own). fds out: see
				  *  uroce_hello_rep */
	UROCE_OP_QUERY_PORT,
	UROCE_OP_ALLOC_PD,
	UROCE_OP_DEALLOC_PD,
	UROCE_OP_REG_MR,
	UROCE_OP_REREG_MR,
	UROCE_OP_DEREG_MR,
	UROCE_OP_ALLOC_MW,
	UROCE_OP_DEALLOC_MW,
	UROCE_OP_CREATE_COMP_CHANNEL, /**< fds out: [0] the channel pipe's read end */
	UROCE_OP_DESTROY_COMP_CHANNEL,
	UROCE_OP_CREATE_CQ,      /**< fds out: ring memfd */
	UROCE_OP_RESIZE_CQ,      /**< fds out: new ring memfd */
	UROCE_OP_DESTROY_CQ,
	UROCE_OP_CREATE_SRQ,     /**< fds out: ring memfd */
	UROCE_OP_MODIFY_SRQ,
	UROCE_OP_QUERY_SRQ,
	UROCE_OP_DESTROY_SRQ,
	UROCE_OP_CREATE_QP,      /**< fds out: rings memfd */
	UROCE_OP_MODIFY_QP,
	UROCE_OP_QUERY_QP,
	UROCE_OP_DESTROY_QP,
	UROCE_OP_CREATE_AH,
	UROCE_OP_DESTROY_AH,
	UROCE_OP_ATTACH_MCAST,
	UROCE_OP_DETACH_MCAST,
	UROCE_OP_QUERY_STATS,    /**< counters of the device and its QPs (uroce-stat) */
	UROCE_OP_UCMA_OPEN,      /**< rdma_cm file: uroce_ucma_open_rep; fds out: [0] event pipe read end */
	UROCE_OP_UCMA_CMD,       /**< one rdma_ucm command: uroce_ucma_cmd_req, variable length */
	UROCE_OP_UCMA_CLOSE,     /**< uroce_handle_msg: the file handle */
	UROCE_OP_QUERY_CM_STATS, /**< the IB CM engine's counters: uroce_cm_stats_rep */
	/* uroce-ctl (docs/running.md); "admin" ops are refused (-EPERM) to
	 * every uid but root and the daemon's own (SO_PEERCRED at connect) */
	UROCE_OP_DEV_INFO,       /**< empty -> uroce_dev_info */
	UROCE_OP_QUERY_QPS,      /**< uroce_query_qps_req -> uroce_query_qps_rep */
	UROCE_OP_FAULT_GET,      /**< empty -> uroce_fault_info */
	UROCE_OP_FAULT_SET,      /**< admin: uroce_fault_set_req -> uroce_fault_info */
	UROCE_OP_FAULT_CLEAR,    /**< admin: empty -> uroce_fault_info (off now) */
	UROCE_OP_CAPTURE_START,  /**< admin: fds in: [0] a regular file open for
				  *  writing (the client opens it; the daemon never
				  *  opens a path a client names) -> empty */
	UROCE_OP_CAPTURE_STOP,   /**< admin: empty -> uroce_capture_rep */
	UROCE_OP_MAP_MR,         /**< uroce_map_mr_req; fds in: [0] the file behind the
				  *  piece (docs/verbs.md, "Daemon-mapped memory regions").
				  *  Any error leaves the piece on the /proc/<pid>/mem path */
	UROCE_OP_MEM_CHANNEL,    /**< uroce_mem_chan_req -> empty: the context's
				  *  io_uring, through which registrations are
				  *  pinned (docs/verbs.md, "Registered memory") */
	UROCE_OP_IMPORT,         /**< ibv_import_pd / ibv_import_mr: uroce_import_req */
	UROCE_OP_QUERY_CC,       /**< DCQCN of the device and its QPs (uroce-stat) */
	UROCE_OP_ALLOC_DM,       /**< ibv_alloc_dm: uroce_alloc_dm_req -> uroce_alloc_dm_rep;
				  *  fds out: [0] the device memory's memfd (sealed size) */
	UROCE_OP_FREE_DM,        /**< uroce_handle_msg; -EBUSY while an MR uses it */
	UROCE_OP_REG_DM_MR,      /**< ibv_reg_dm_mr: uroce_reg_dm_mr_req -> uroce_reg_mr_rep */
	/* XRC (docs/verbs.md, "XRC") */
	UROCE_OP_OPEN_XRCD,      /**< uroce_open_xrcd_req -> uroce_open_xrcd_rep; fds in:
				  *  [0] optional: the file naming a shared domain (the
				  *  daemon identifies it by dev/ino; no fd = private) */
	UROCE_OP_CLOSE_XRCD,     /**< uroce_handle_msg -> empty; -EBUSY while SRQs or
				  *  QPs made through this handle exist */
	UROCE_OP_CREATE_XSRQ,    /**< uroce_create_xsrq_req -> uroce_create_xsrq_rep;
				  *  fds out: [0] ring memfd (as UROCE_OP_CREATE_SRQ) */
	UROCE_OP_CREATE_XTGT,    /**< uroce_xrc_qp_req -> uroce_xrc_qp_rep: an XRC TGT
				  *  QP (no rings, no CQ; modify/query/destroy as any QP) */
	UROCE_OP_OPEN_QP,        /**< uroce_xrc_qp_req -> uroce_xrc_qp_rep: a handle on
				  *  the TGT QP qpn of the same XRC domain */
	UROCE_OP_CC_SET,         /**< admin: uroce_cc_set_req -> uroce_query_cc_rep */
	UROCE_OP_ADVISE_MR,      /**< ibv_advise_mr: uroce_advise_mr_req -> uroce_advise_mr_rep */
	UROCE_OP_CREATE_QP_ARENA, /**< uroce_create_qp_req -> uroce_create_qp_arena_rep;
				   *  the rings in the context's QP arena; fds out:
				   *  [0] with UROCE_ARENA_F_NEW only */
	UROCE_OP_QUERY_LIMITS,   /**< uroce_query_limits_req -> uroce_query_limits_rep */
	UROCE_OP_QUERY_MRS,      /**< uroce_query_mrs_req -> uroce_query_mrs_rep (uroce-ctl mrs) */
	UROCE_OP_QUERY_DROPS,    /**< uroce_query_drops_req -> uroce_query_drops_rep
				  *  (uroce-ctl counters: drops by reason, per port and QP) */
	UROCE_OP_QUERY_NIC,      /**< uroce_query_nic_req -> uroce_query_nic_rep: the
				  *  port's device (driver, link, queues, offloads) and
				  *  its statistics, one page of xstats per request */
	UROCE_OP_SET_MTU,        /**< admin: uroce_set_mtu_req -> uroce_dev_info */
	UROCE_OP_MAX
};

/** A connection the daemon's access rule refuses (SO_PEERCRED uid/gids)
 *  gets one message { op = UROCE_OP_HELLO, seq = 0, status = -EACCES }
 *  and is closed. */
#define UROCE_REFUSED_SEQ 0

/** Every message starts with this header. A reply echoes op and seq and
 *  carries status 0 or a negative errno; on error the reply body is empty.
 *  One request at a time: a client whose replies pile up unread (the
 *  daemon's send would block) is disconnected. */
struct uroce_msg_hdr {
	uint32_t op;
	uint32_t len;   /**< whole message, header included */
	uint32_t seq;
	int32_t status;
};

struct uroce_hello_req {
	uint32_t abi_version;
	uint32_t pid;
};
/** fds out: [0] doorbell page memfd, [1] wake pipe write end (O_NONBLOCK),
 *  [2] async event pipe read end. */
struct uroce_hello_rep {
	uint32_t abi_version;
	uint32_t daemon_pid;
	char dev_name[UROCE_DEV_NAME_MAX];
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;   /**< port 1; uroce devices have one port */
	uint32_t gid_count;
	uint32_t max_dm_size;              /**< largest ibv_alloc_dm this context may make */
	union ibv_gid gids[UROCE_MAX_GIDS];
	uint32_t gid_type[UROCE_MAX_GIDS]; /**< enum ibv_gid_type (IBV_GID_TYPE_ROCE_V2) */
	uint16_t pkeys[1];                 /**< P_Key table: 0xffff */
	uint8_t mac[6];
	uint64_t node_guid;                /**< network order */
	uint32_t flags;                    /**< UROCE_HELLO_F_* */
	uint32_t rsvd;
};
/** The context may use what the kernel reserves to CAP_NET_RAW: controlled
 *  Q_Keys (bit 31) and UD sends to QP0/QP1 (the client has CAP_NET_RAW, or
 *  its uid is a --privileged-uid of the daemon); without it those are
 *  EPERM (docs/security.md, "Privileged operations"). */
#define UROCE_HELLO_F_PRIVILEGED 1u
/** Controlled Q_Keys: bit 31 set (IBTA; the GSI's is 0x80010000). */
#define UROCE_QKEY_CONTROLLED 0x80000000u

struct uroce_query_port_req { uint32_t port_num; uint32_t rsvd; };
struct uroce_query_port_rep {
	struct ibv_port_attr port_attr;
	uint32_t gid_count;
	uint32_t rsvd;
	union ibv_gid gids[UROCE_MAX_GIDS];
	uint32_t gid_type[UROCE_MAX_GIDS];
};

/** Generic request/reply for destroy-style calls and for results that are
 *  just a handle. */
struct uroce_handle_msg { uint32_t handle; uint32_t rsvd; };

/** How the device reaches a registration's memory (docs/verbs.md,
 *  "Registered memory"): through the pages the client pinned into buffers
 *  [slot, slot + n) of its memory channel's io_uring, one buffer per GiB
 *  of the range (UROCE_PIN_RING), or, where the kernel cannot pin for it,
 *  at the address as the process maps it now, as an ODP registration is
 *  (UROCE_PIN_NONE, counted and shown; why: the errno that refused the
 *  pinning). ODP registrations follow the address by definition and
 *  ignore it. */
enum uroce_pin { UROCE_PIN_RING = 1, UROCE_PIN_NONE = 2 };
#define UROCE_PIN_BUF_SHIFT 30  /**< the kernel's limit on one io_uring buffer: 1 GiB */
struct uroce_reg_mr_req {
	uint32_t pd;
	uint32_t access;  /**< enum ibv_access_flags */
	uint64_t addr;    /**< process virtual address */
	uint64_t length;
	uint64_t iova;    /**< address the peer uses (ibv_reg_mr_iova2) */
	uint32_t pin;     /**< enum uroce_pin */
	uint32_t slot;    /**< UROCE_PIN_RING: its first buffer */
	int32_t why;      /**< UROCE_PIN_NONE: the errno that refused pinning */
	uint32_t rsvd;
};
struct uroce_reg_mr_rep { uint32_t handle; uint32_t lkey; uint32_t rkey; uint32_t rsvd; };

struct uroce_rereg_mr_req {
	uint32_t handle;
	uint32_t flags;   /**< enum ibv_rereg_mr_flags */
	uint32_t pd;
	uint32_t access;
	uint64_t addr;
	uint64_t length;
	uint64_t iova;
	uint32_t pin;     /**< as uroce_reg_mr_req, for the new translation */
	uint32_t slot;
	int32_t why;
	uint32_t rsvd;
};
/* reply: uroce_reg_mr_rep */

/** A piece [addr, addr + length) of a registered MR that the client has in
 *  a MAP_SHARED mapping of a tmpfs / hugetlbfs file: the descriptor of that
 *  file travels with the request, file_off is the file offset of addr. The
 *  daemon checks it against the client's own mapping before it maps it;
 *  a reregistration or deregistration drops it. */
struct uroce_map_mr_req {
	uint32_t handle;
	uint32_t rsvd;
	uint64_t addr;
	uint64_t length;
	uint64_t file_off;
};

/** UROCE_OP_MEM_CHANNEL: the io_uring the client made for its context
 *  (IORING_SETUP_R_DISABLED, a sparse buffer table of nbufs entries whose
 *  buffer 0 is one page at probe), as io_uring_setup described it. The
 *  daemon takes the ring from the process bound at HELLO (pidfd_getfd:
 *  io_uring descriptors cannot travel with SCM_RIGHTS), gives it its own
 *  pipe as fixed files 0 and 1, restricts it to IORING_OP_READ_FIXED /
 *  WRITE_FIXED on fixed files, with IORING_REGISTER_BUFFERS_UPDATE and
 *  IORING_REGISTER_SYNC_CANCEL as the only registrations, enables it and
 *  tries it on the probe page. */
struct uroce_mem_chan_req {
	int32_t ring_fd;      /**< its number in the client's descriptor table */
	uint32_t sq_entries, cq_entries;
	uint32_t nbufs;
	uint32_t sq_head, sq_tail, sq_mask, sq_array; /**< io_sqring_offsets */
	uint32_t cq_head, cq_tail, cq_mask, cq_cqes;  /**< io_cqring_offsets */
	uint64_t probe;
};

/** UROCE_OP_QUERY_MRS: the registrations the asking uid may see (its
 *  own; every one for root and the daemon's uid), handle order from
 *  start_handle of start_pid's context; next_* name where to go on. */
struct uroce_query_mrs_req { uint32_t start_pid; uint32_t start_handle; };
struct uroce_mr_info {
	uint32_t pid;         /**< owning process */
	uint32_t handle;
	uint64_t addr, length;
	uint32_t access;
	uint32_t lkey;
	uint32_t pin;         /**< enum uroce_pin; 0 for ODP and device memory */
	int32_t why;          /**< UROCE_PIN_NONE: the errno that refused pinning */
	uint32_t mapped;      /**< pieces the daemon maps (shared files, device memory) */
	uint32_t flags;       /**< UROCE_MRI_ODP, UROCE_MRI_DM */
	uint64_t pinned, unpinned, by_map; /**< payload pieces moved by each route */
};
#define UROCE_MRI_ODP 1u
#define UROCE_MRI_DM  2u
#define UROCE_MRS_PER_MSG 32
struct uroce_query_mrs_rep {
	uint32_t n;
	uint32_t next_pid;    /**< 0: no more */
	uint32_t next_handle;
	uint32_t rsvd;
	struct uroce_mr_info mrs[UROCE_MRS_PER_MSG];
};
_Static_assert(sizeof(struct uroce_query_mrs_rep) + 16 <= UROCE_MAX_MSG, "mrs reply");

/** UROCE_OP_IMPORT: a second ibv_context of the same connection
 *  (ibv_import_device on its control socket, in the process that opened
 *  it) names a PD or MR of the connection by handle; the daemon says
 *  whether that object exists (an MR: in that PD) and what an MR is. */
enum uroce_import_type { UROCE_IMPORT_PD = 1, UROCE_IMPORT_MR = 2,
			 UROCE_IMPORT_DM = 3 /**< length in the reply; fds out: [0] its memfd */ };
struct uroce_import_req {
	uint32_t type;    /**< enum uroce_import_type */
	uint32_t handle;
	uint32_t pd;      /**< UROCE_IMPORT_MR: the PD it is imported into */
	uint32_t rsvd;
};
struct uroce_import_rep {
	uint32_t lkey;
	uint32_t rkey;
	uint64_t length;
	uint64_t iova;
	uint32_t access;
	uint32_t rsvd;
};

/** Device memory (ibv_alloc_dm): daemon memory the shim maps; an MR over
 *  it (ibv_reg_dm_mr) is zero-based and reached by the daemon with memcpy. */
struct uroce_alloc_dm_req {
	uint64_t length;
	uint32_t log_align_req;
	uint32_t comp_mask;   /**< must be 0 */
};
struct uroce_alloc_dm_rep { uint32_t handle; uint32_t rsvd; uint64_t length; };
struct uroce_reg_dm_mr_req {
	uint32_t pd;
	uint32_t dm;          /**< handle from UROCE_OP_ALLOC_DM */
	uint64_t offset;      /**< into the device memory */
	uint64_t length;
	uint32_t access;      /**< enum ibv_access_flags, IBV_ACCESS_ZERO_BASED set */
	uint32_t rsvd;
};
/** UROCE_OP_ADVISE_MR: the daemon checks an ibv_advise_mr scatter list
 *  (at most UROCE_ADVISE_MAX_SGE entries a request; the shim splits longer
 *  lists) as mlx5 does and translates each entry to process addresses;
 *  the shim then faults the pages in itself (docs/verbs.md, "On-demand
 *  paging"). Status: -EINVAL (PD, flags, count), -EOPNOTSUPP (advice);
 *  an entry's own error comes in the reply. */
#define UROCE_ADVISE_MAX_SGE 64
struct uroce_advise_mr_req {
	uint32_t pd;
	uint32_t advice;  /**< enum ibv_advise_mr_advice */
	uint32_t flags;   /**< IBV_ADVISE_MR_FLAG_* */
	uint32_t num_sge; /**< 1 .. UROCE_ADVISE_MAX_SGE */
	struct uroce_sge sge[UROCE_ADVISE_MAX_SGE];
};
struct uroce_advise_mr_rep {
	uint32_t n_ok;    /**< entries [0, n_ok) passed; seg[] says where they are */
	int32_t err;      /**< 0, or the negative errno of entry n_ok */
	struct { uint64_t addr, len; } seg[UROCE_ADVISE_MAX_SGE]; /**< len 0: nothing to fault */
};
_Static_assert(sizeof(struct uroce_advise_mr_req) + 16 <= UROCE_MAX_MSG, "advise request");

struct uroce_alloc_mw_req { uint32_t pd; uint32_t type; /**< enum ibv_mw_type */ };
struct uroce_alloc_mw_rep { uint32_t handle; uint32_t rkey; };

struct uroce_create_cq_req {
	uint32_t cqe;          /**< requested minimum */
	int32_t channel;       /**< comp channel handle or -1 */
	uint64_t user_handle;  /**< returned in uroce_comp_event / async events */
	uint32_t comp_vector;
	uint32_t flags;        /**< UROCE_CQ_F_* */
};
/** The application reads completion timestamps (ibv_cq_ex with
 *  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP): only then does the daemon read
 *  the clock for this CQ's CQEs (uroce_cqe.timestamp_ns is 0 otherwise;
 *  nothing can read it then). A clock read (~110 ns here) was on the way
 *  of every receive completion. */
#define UROCE_CQ_F_TIMESTAMP 0x1u
/** fds out: [0] ring memfd (UROCE_RING_HDR_SIZE + entries * (UROCE_CQE_SIZE +
 *  UROCE_CQE_INL_SIZE), the companion slots at UROCE_CQ_INL_OFFSET). */
struct uroce_create_cq_rep {
	uint32_t handle;
	uint32_t entries;     /**< ring slots (power of two) */
	uint32_t cqe;         /**< capacity reported to the application */
	uint32_t rsvd;
	uint64_t map_size;
};
struct uroce_resize_cq_req { uint32_t handle; uint32_t cqe; };
/* reply: uroce_create_cq_rep, with a new memfd; the daemon copies the
 * unpolled CQEs into the new ring before replying and sets cons/prod so the
 * shim continues on the new ring. */

struct uroce_create_srq_req {
	uint32_t pd;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint64_t user_handle;
};
struct uroce_create_srq_rep {
	uint32_t handle;
	uint32_t db_index;
	uint32_t max_wr;      /**< actual */
	uint32_t max_sge;     /**< actual */
	uint32_t entries;
	uint32_t stride;
	uint64_t map_size;
};
struct uroce_modify_srq_req {
	uint32_t handle;
	uint32_t attr_mask;   /**< enum ibv_srq_attr_mask */
	struct ibv_srq_attr attr;
};
/* reply: empty; with IBV_SRQ_MAX_WR in attr_mask, a uroce_create_srq_rep
 * and fds out [0] the memfd of the ring in use. When max_wr exceeds the
 * ring's entries it is a new ring: the daemon copies the WQEs not yet
 * consumed into it (same db_index, same free-running prod/cons) so the shim
 * continues on it, as for UROCE_OP_RESIZE_CQ; otherwise the same ring.
 * max_wr below the WQEs outstanding is -EINVAL. */
/* query reply: struct ibv_srq_attr */

/** UROCE_OP_OPEN_XRCD. oflags as ibv_open_xrcd's: with a file, O_CREAT
 *  makes its domain if none exists yet (-EAGAIN without), O_EXCL refuses
 *  an existing one (-EINVAL); a file opened neither for reading nor at
 *  all (O_PATH) is -EACCES. */
struct uroce_open_xrcd_req { uint32_t oflags; uint32_t rsvd; };
struct uroce_open_xrcd_rep { uint32_t handle; uint32_t xrcdn; };

/** UROCE_OP_CREATE_XSRQ: an XRC SRQ of domain xrcd (a handle of the
 *  context), its receive completions on cq. */
struct uroce_create_xsrq_req {
	struct uroce_create_srq_req srq;
	uint32_t xrcd;
	uint32_t cq;
};
struct uroce_create_xsrq_rep {
	struct uroce_create_srq_rep srq;
	uint32_t srqn;        /**< ibv_get_srq_num: what INI QPs name in XRCETH */
	uint32_t rsvd;
};

/** UROCE_OP_CREATE_XTGT (qpn ignored) and UROCE_OP_OPEN_QP. */
struct uroce_xrc_qp_req {
	uint32_t xrcd;        /**< handle of the context's domain */
	uint32_t qpn;         /**< OPEN_QP: the TGT QP */
	uint64_t user_handle; /**< async events of the QP name it */
};
struct uroce_xrc_qp_rep { uint32_t handle; uint32_t qpn; };

struct uroce_create_qp_req {
	uint32_t pd;
	uint32_t send_cq;
	uint32_t recv_cq;
	int32_t srq;          /**< SRQ handle or -1 */
	uint32_t qp_type;     /**< enum ibv_qp_type: RC, UC, UD */
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	uint64_t user_handle;
};
/** fds out: [0] rings memfd: SQ ring at sq_offset, RQ ring at rq_offset
 *  (rq_entries = 0 when the QP uses an SRQ). */
struct uroce_create_qp_rep {
	uint32_t handle;
	uint32_t qpn;
	uint32_t db_index;
	uint32_t rsvd;
	struct ibv_qp_cap cap; /**< actual capabilities */
	uint32_t sq_entries, sq_stride;
	uint32_t rq_entries, rq_stride;
	uint64_t sq_offset, rq_offset;
	uint64_t map_size;
};

/**
 * UROCE_OP_CREATE_QP_ARENA: the same QP as UROCE_OP_CREATE_QP, its rings
 * carved from the context's QP arena: sealed memfds of UROCE_ARENA_CHUNK
 * bytes the daemon makes as they are needed (each charged whole to the
 * context's memory limit) and never gives back before the context ends,
 * so a client maps each one once instead of a memfd per QP. qp.sq_offset
 * and qp.rq_offset are offsets in chunk `chunk`, qp.map_size the ring
 * bytes there. UROCE_ARENA_F_NEW: the chunk's memfd comes with this reply
 * (chunk_size bytes to map); otherwise the client has it from an earlier
 * reply. Rings larger than UROCE_ARENA_MAX_RINGS get a memfd of their own
 * as with CREATE_QP: chunk = UROCE_ARENA_OWN, flags NEW, chunk_size =
 * qp.map_size, unmapped by the client when the QP is destroyed.
 */
#define UROCE_ARENA_CHUNK (1u << 20)
#define UROCE_ARENA_MAX_RINGS (256u << 10)
#define UROCE_ARENA_OWN 0xffffffffu
#define UROCE_ARENA_F_NEW 0x1u
struct uroce_create_qp_arena_rep {
	struct uroce_create_qp_rep qp;
	uint32_t chunk;
	uint32_t flags;
	uint64_t chunk_size;
};

struct uroce_modify_qp_req {
	uint32_t handle;
	uint32_t attr_mask;   /**< enum ibv_qp_attr_mask */
	struct ibv_qp_attr attr;
};
struct uroce_query_qp_req { uint32_t handle; uint32_t attr_mask; };
struct uroce_query_qp_rep {
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	uint32_t sq_sig_all;
	uint32_t rsvd;
};

struct uroce_create_ah_req {
	uint32_t pd;
	uint32_t rsvd;
	struct ibv_ah_attr attr;
};
/* reply: uroce_handle_msg */

struct uroce_mcast_req {
	uint32_t qp;
	uint16_t lid;
	uint16_t rsvd;
	union ibv_gid gid;
};

/** UROCE_OP_QUERY_STATS: one page of counters. A client asks with
 *  first_qpn = 0, then again from next_qpn until it is 0. Any context may
 *  ask: the port counters are the device's; the QP pages cover only the
 *  QPs of the asking uid (every QP for root and the daemon's own uid). Fields may be appended at the end of each struct; a reader uses
 *  the sizes the reply gives. */
struct uroce_query_stats_req {
	uint32_t first_qpn;
	uint32_t rsvd;
};
#define UROCE_STATS_DROP_MAX 16
#define UROCE_STATS_NAME_LEN 16
struct uroce_port_stats {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t rx_roce, rx_arp, rx_icmp, rx_nd, tx_arp, tx_icmp, tx_nd;
	uint64_t icrc_errors;      /**< RoCE frames with a bad ICRC */
	uint64_t hdr_errors;       /**< RoCE frames with a broken header */
	uint64_t tx_stalls;        /**< requester paused for TX space (no loss) */
	uint64_t fault_drop, fault_dup, fault_reorder, fault_corrupt, fault_delay;
	uint64_t drops[UROCE_STATS_DROP_MAX];   /**< by reason, names in drop_name */
	char drop_name[UROCE_STATS_DROP_MAX][UROCE_STATS_NAME_LEN];
	uint32_t ndrops;           /**< reasons used */
	uint32_t nqp;              /**< QPs on the device */
	uint32_t nctx;             /**< application contexts */
	uint32_t clients_refused;  /**< connections refused by the access rule */
	/* appended: readers find qps[] at port_stats_size, not sizeof */
	uint64_t evq_lost;         /**< event records lost: a reader fell behind the backlog */
	uint64_t cqe_inline;       /**< receives whose payload travelled in the CQ ring */
	uint64_t icrc_skipped;     /**< ICRC computations + checks the internal ring skipped */
	uint64_t mr_mapped;        /**< payload pieces placed/gathered by memcpy (mapped MR) */
	uint64_t mr_syscall;       /**< ... through /proc/<pid>/mem (ODP registrations) */
	uint64_t tx_zc;            /**< frames sent with their payload in a mapped MR, not copied */
	uint64_t tx_zc_bytes;      /**< ... those payload bytes */
	uint64_t rx_seg;           /**< multi-segment frames placed from their segments */
	uint64_t rx_lin;           /**< ... copied into one buffer first */
	uint64_t zc_unmap_deferred; /**< MR unmaps that waited for frames still in flight */
	uint64_t mr_pinned;        /**< payload pieces moved through pinned pages (io_uring) */
	uint64_t mr_unpinned;      /**< ... at the address, for registrations the kernel could not pin */
};
struct uroce_qp_stats {
	uint32_t qpn;
	uint32_t pid;              /**< owning process */
	uint32_t qp_type;          /**< enum ibv_qp_type */
	uint32_t qp_state;         /**< enum ibv_qp_state */
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retransmits, timeouts, dup_requests, out_of_seq;
	uint64_t seq_naks_sent, seq_naks_rcvd, rnr_naks_sent, rnr_naks_rcvd;
	uint64_t naks_sent, naks_rcvd, retry_exceeded, rnr_retry_exceeded;
	uint64_t rx_dropped, tx_no_buf, ce_rcvd, cnp_sent, cnp_rcvd;
};
#define UROCE_STATS_QP_PER_MSG 16
#define UROCE_STATS_XDROP_MAX 16
struct uroce_query_stats_rep {
	uint32_t port_stats_size;  /**< sizeof(struct uroce_port_stats) */
	uint32_t qp_stats_size;    /**< sizeof(struct uroce_qp_stats) */
	uint32_t nqps;             /**< entries in qps[] */
	uint32_t next_qpn;         /**< 0: no more QPs */
	struct uroce_port_stats port;
	struct uroce_qp_stats qps[UROCE_STATS_QP_PER_MSG];
	/* appended (after qps[], so no offset above moves): packets the
	 * port's transport dropped, by reason; 0 reasons from older daemons */
	uint32_t nxdrops;          /**< reasons used */
	uint32_t rsvd;
	uint64_t xdrops[UROCE_STATS_XDROP_MAX];
	char xdrop_name[UROCE_STATS_XDROP_MAX][UROCE_STATS_NAME_LEN];
	/* appended: the asking context's own mr_mapped / mr_syscall (0 from
	 * older daemons: a reply shorter than this struct) */
	uint64_t self_mr_mapped, self_mr_syscall;
	/* appended: its pinned / unpinned pieces (docs/verbs.md, "Registered memory") */
	uint64_t self_mr_pinned, self_mr_unpinned;
};
_Static_assert(sizeof(struct uroce_query_stats_rep) + 16 <= UROCE_MAX_MSG, "stats reply");

/** UROCE_OP_QUERY_DROPS: every loss and discard the device counted, by
 *  reason and where it happened, as named values (docs/running.md,
 *  "Counters"): first the port's (qpn 0: what the NIC or the kernel socket
 *  under the port missed — no room in its ring, no buffer to fill —, what
 *  the PMD failed to send, the interface's own drop counters, then the
 *  transport's discards and recoveries summed over every QP the device
 *  ever had), then each QP's the caller may see (QUERY_STATS' visibility)
 *  by reason. Names are stable; new ones may appear. Paged: ask with
 *  {0, 0}, then again with {next_qpn, next} while more is set. */
struct uroce_query_drops_req {
	uint32_t first_qpn;        /**< 0: the port's values first */
	uint32_t first;            /**< index within that QP's (or the port's) values */
};
#define UROCE_DROP_NAME_LEN 24
struct uroce_drop_val {
	uint32_t qpn;              /**< 0: the port's */
	uint32_t rsvd;
	uint64_t val;
	char name[UROCE_DROP_NAME_LEN]; /**< NUL-terminated */
};
#define UROCE_DROPS_PER_MSG 96
struct uroce_query_drops_rep {
	uint32_t n;                /**< entries in v[] */
	uint32_t more;             /**< 1: ask again from next_qpn / next */
	uint32_t next_qpn, next;
	struct uroce_drop_val v[UROCE_DROPS_PER_MSG];
};
_Static_assert(sizeof(struct uroce_query_drops_rep) + 16 <= UROCE_MAX_MSG, "drops reply");

/** UROCE_OP_QUERY_CM_STATS (no request body): the IB CM engine's counters
 *  (docs/cm.md) as named values, so that a reader shows what a newer
 *  daemon counts: totals always, per attribute, REJ reason and drop
 *  reason when not zero. -ENODEV: the device has no engine; daemons
 *  older than the op answer -EINVAL. */
#define UROCE_CM_STATS_MAX 100
struct uroce_cm_stats_rep {
	uint32_t n;                /**< entries used */
	uint32_t rsvd;
	uint64_t val[UROCE_CM_STATS_MAX];
	char name[UROCE_CM_STATS_MAX][UROCE_STATS_NAME_LEN];
};
_Static_assert(sizeof(struct uroce_cm_stats_rep) + 16 <= UROCE_MAX_MSG, "cm stats reply");

/* ------------------------------------------------------------------ */
/* uroce-ctl: device, QPs, run-time fault injection and capture        */
/* ------------------------------------------------------------------ */

/** UROCE_OP_DEV_INFO: what any connected client may know of the device. */
#define UROCE_DEV_F_LOOPBACK 0x1   /**< the port is the built-in loopback ring */
#define UROCE_DEV_F_CAPTURE  0x2   /**< a capture is running */
#define UROCE_DEV_F_FAULT    0x4   /**< fault injection is on */
struct uroce_dev_info {
	char name[UROCE_DEV_NAME_MAX];
	char port[128];            /**< the DPDK port as configured ("" = loopback ring) */
	uint8_t mac[6];
	uint16_t rsvd;
	uint32_t mtu;              /**< Ethernet MTU */
	uint32_t port_state;       /**< enum ibv_port_state */
	uint32_t active_mtu;       /**< enum ibv_mtu */
	uint32_t max_mtu;          /**< enum ibv_mtu */
	uint32_t gid_count;
	uint32_t flags;            /**< UROCE_DEV_F_* */
	uint32_t nctx, nqp;
	uint32_t daemon_pid, daemon_uid;
	uint64_t node_guid;        /**< network order */
	union ibv_gid gids[UROCE_MAX_GIDS];
	uint32_t gid_type[UROCE_MAX_GIDS]; /**< enum ibv_gid_type, as QUERY_PORT */
};

/** UROCE_OP_QUERY_QPS: transport state of QPs, paged as QUERY_STATS
 *  (first_qpn = 0, then next_qpn until 0) with the same visibility: the
 *  caller's uid's QPs, every QP for root and the daemon's uid. */
struct uroce_query_qps_req {
	uint32_t first_qpn;
	uint32_t rsvd;
};
struct uroce_qp_info {
	uint32_t qpn;
	uint32_t pid;              /**< owning process */
	uint32_t qp_type;          /**< enum ibv_qp_type */
	uint32_t qp_state;         /**< enum ibv_qp_state */
	uint32_t dest_qpn;         /**< RC/UC peer QPN (0 before RTR) */
	uint32_t path_mtu;         /**< enum ibv_mtu */
	uint32_t sq_psn;           /**< next PSN the requester sends */
	uint32_t acked_psn;        /**< every PSN before it is acknowledged */
	uint32_t rq_psn;           /**< PSN the responder expects next */
	uint32_t sq_outstanding;   /**< send WRs posted, not completed */
	uint32_t rq_posted;        /**< receive WRs posted, not consumed (0 with an SRQ) */
	uint32_t rd_atomic_out;    /**< READ / atomic requests in flight */
	uint32_t retry_cnt, retry_left;         /**< as set / left for the current PSN */
	uint32_t rnr_retry, rnr_left;
	union ibv_gid dgid;        /**< RC/UC peer address (0 before RTR) */
	union ibv_gid sgid;        /**< local GID of the path */
};
#define UROCE_QPS_PER_MSG 32
struct uroce_query_qps_rep {
	uint32_t info_size;        /**< sizeof(struct uroce_qp_info): readers step by it */
	uint32_t nqps;
	uint32_t next_qpn;         /**< 0: no more QPs */
	uint32_t rsvd;
	struct uroce_qp_info qps[UROCE_QPS_PER_MSG];
};
_Static_assert(sizeof(struct uroce_query_qps_rep) + 16 <= UROCE_MAX_MSG, "qps reply");

/** UROCE_OP_FAULT_SET: the daemon's --fault syntax
 *  ("drop=P,dup=P,reorder=P,corrupt=P,delay_us=N,seed=N,qp=N,opcode=N"),
 *  NUL-terminated; it replaces the whole configuration. */
#define UROCE_FAULT_SPEC_MAX 256
struct uroce_fault_set_req {
	char spec[UROCE_FAULT_SPEC_MAX];
};
#define UROCE_FAULT_ANY_OPCODE 0xffffffffu
struct uroce_fault_info {
	uint32_t active;           /**< 0: fault injection off */
	uint32_t delay_us;
	double drop, dup, reorder, corrupt; /**< probabilities per received frame */
	uint64_t seed;
	uint32_t qpn;              /**< only frames to this QPN (0 = every frame) */
	uint32_t opcode;           /**< only this BTH opcode (UROCE_FAULT_ANY_OPCODE = any) */
	/* the device's fault counters since it started */
	uint64_t n_drop, n_dup, n_reorder, n_corrupt, n_delay;
};

/** UROCE_OP_CAPTURE_STOP */
struct uroce_capture_rep {
	uint64_t frames;           /**< frames written by this capture */
	int32_t error;             /**< 0, or the first write error (negative errno) */
	uint32_t rsvd;
};

/* ---- the port's Ethernet device (docs/running.md "PCI NICs") ------- */
/** UROCE_OP_QUERY_NIC: what DPDK says of the device behind the port and
 *  what uroce asked of it, uroce's own counters of it (nic_val/nic_name:
 *  link transitions, offloaded checksums, VLAN tags), and the device's
 *  extended statistics (rte_eth_xstats) from index first on, one page per
 *  request: ask with first = 0, then again from next until it is 0. Any
 *  context may ask. Names are NUL-terminated (truncated when longer). */
#define UROCE_NIC_F_LINK_UP   0x1  /**< the link is up (the port is ACTIVE) */
#define UROCE_NIC_F_FULL      0x2  /**< full duplex */
#define UROCE_NIC_F_LSC_INTR  0x4  /**< link changes come as interrupts (else polled) */
#define UROCE_NIC_F_REAL      0x8  /**< a device with its own link (not a ring port) */
#define UROCE_NIC_F_VLAN      0x10 /**< frames are tagged with vlan_tci (--vlan) */
#define UROCE_NIC_NAME_LEN 48
#define UROCE_NIC_CNT_MAX 16
#define UROCE_NIC_XSTATS_PER_MSG 30
#define UROCE_NIC_OFFLOADS_LEN 192
struct uroce_query_nic_req {
	uint32_t first;            /**< first xstat of the page */
	uint32_t rsvd;
};
struct uroce_query_nic_rep {
	uint32_t flags;            /**< UROCE_NIC_F_* */
	uint32_t speed_mbps;       /**< link speed, 0 unknown */
	char driver[32];           /**< the PMD: net_virtio, net_e1000_em, net_ring ... */
	char device[64];           /**< its device: PCI address or vdev name */
	uint16_t rxq, txq;         /**< queues uroce uses */
	uint16_t max_rxq, max_txq; /**< queues the device has */
	uint32_t mtu, min_mtu, max_mtu; /**< Ethernet MTU now, and what the device takes */
	uint16_t vlan_tci;         /**< PCP | VID with UROCE_NIC_F_VLAN */
	uint16_t rsvd;
	/* RX/TX offloads by DPDK name (IPV4_CKSUM VLAN_STRIP ...), space-separated */
	char rx_offloads_capa[UROCE_NIC_OFFLOADS_LEN], tx_offloads_capa[UROCE_NIC_OFFLOADS_LEN];
	char rx_offloads[UROCE_NIC_OFFLOADS_LEN], tx_offloads[UROCE_NIC_OFFLOADS_LEN];
	uint32_t ncnt;             /**< uroce's counters of the device */
	uint32_t nxstats;          /**< xstats in this page */
	uint32_t xstats_total;     /**< xstats the device has */
	uint32_t next;             /**< index of the next page, 0: none */
	uint64_t cnt[UROCE_NIC_CNT_MAX];
	char cnt_name[UROCE_NIC_CNT_MAX][UROCE_STATS_NAME_LEN];
	uint64_t xval[UROCE_NIC_XSTATS_PER_MSG];
	char xname[UROCE_NIC_XSTATS_PER_MSG][UROCE_NIC_NAME_LEN];
};
_Static_assert(sizeof(struct uroce_query_nic_rep) + 16 <= UROCE_MAX_MSG, "nic reply");

/** UROCE_OP_SET_MTU: change the device's Ethernet MTU at run time (what
 *  --mtu gave at start). Refused, nothing changed: -EINVAL outside
 *  576..9216 or the device's range, -E2BIG above what the port's buffers
 *  were sized for at start (restart with a larger --mtu), -EBUSY while a
 *  connected QP's path MTU is above the new active MTU, or the device's
 *  own error. The reply is UROCE_OP_DEV_INFO's, with the new MTUs. */
struct uroce_set_mtu_req {
	uint32_t mtu;
	uint32_t rsvd;
};

/* ---- DCQCN (docs/dcqcn.md) ------------------------------------------ */
/** UROCE_OP_QUERY_CC: the device's congestion control settings and, one
 *  page at a time as UROCE_OP_QUERY_STATS (same request, same visibility),
 *  each QP's reaction point. Fields may be appended to each struct; a
 *  reader uses the sizes the reply gives. */
struct uroce_cc_dev {
	uint32_t ect, np, rp;      /**< 1 = on */
	uint32_t line_rate_mbps;   /**< where the reaction point starts and returns */
	/* mlx5's parameters, its names and units (Mb/s, us, 1/1024) */
	uint32_t min_time_between_cnps, cnp_dscp;
	uint32_t rpg_time_reset, rpg_byte_reset, rpg_threshold;
	uint32_t rpg_ai_rate, rpg_hai_rate, rpg_min_rate, rpg_min_dec_fac, rpg_gd;
	uint32_t rate_reduce_monitor_period, rate_to_set_on_first_cnp;
	uint32_t initial_alpha_value, dce_tcp_g, dce_tcp_rtt;
	uint32_t clamp_tgt_rate, clamp_tgt_rate_after_time_inc;
	uint32_t rsvd;
	/* what it did, every QP the device ever had */
	uint64_t ce_rcvd, cnp_sent, cnp_rcvd, rate_cuts;
};
struct uroce_cc_qp {
	uint32_t qpn;
	uint32_t stage;            /**< 0 line rate, 1 fast recovery, 2 additive, 3 hyper */
	uint32_t rate_mbps;        /**< current rate (line rate: not limited) */
	uint32_t target_mbps;
	uint32_t alpha;            /**< 1/1024 */
	uint32_t paced;            /**< 1: the requester is paced */
	uint64_t rate_cuts;
	uint64_t pacer_waits;      /**< requester turns that waited for the pacer */
};
#define UROCE_CC_QP_PER_MSG 48
struct uroce_query_cc_rep {
	uint32_t dev_size;         /**< sizeof(struct uroce_cc_dev) */
	uint32_t qp_size;          /**< sizeof(struct uroce_cc_qp) */
	uint32_t nqps;             /**< entries in qps[] */
	uint32_t next_qpn;         /**< 0: no more QPs */
	struct uroce_cc_dev dev;
	struct uroce_cc_qp qps[UROCE_CC_QP_PER_MSG];
};
_Static_assert(sizeof(struct uroce_query_cc_rep) + 16 <= UROCE_MAX_MSG, "cc reply");

/** UROCE_OP_CC_SET: change the device's DCQCN parameters at run time, in
 *  --dcqcn's syntax ("key=value,...", "on", "off"), NUL-terminated. Only
 *  the keys named change; all or none are applied. The reply is
 *  UROCE_OP_QUERY_CC's first page, with the new settings. */
#define UROCE_CC_SPEC_MAX 256
struct uroce_cc_set_req {
	char spec[UROCE_CC_SPEC_MAX];
};

/* ------------------------------------------------------------------ */
/* RDMA CM: the kernel's rdma_ucm device, emulated (docs/cm.md)        */
/** UROCE_OP_QUERY_LIMITS: the object limits (--limit per context,
 *  --uid-limit per uid; docs/security.md) with what the asking context and
 *  a uid hold now, one entry per kind of object under the name --limit
 *  takes ("ctx": the uid's contexts), and the device's IB CM table (ids of
 *  every user and every peer on the wire). uid UROCE_LIMITS_SELF (or the
 *  asker's own) for the asker's uid; another uid: root and the daemon's
 *  uid only (-EPERM). */
#define UROCE_LIMITS_SELF 0xFFFFFFFFu
#define UROCE_LIMITS_MAX 24
struct uroce_query_limits_req {
	uint32_t uid;
	uint32_t rsvd;
};
struct uroce_limit {
	char name[UROCE_STATS_NAME_LEN];
	uint32_t ctx_max, uid_max;   /**< the limits (0: none of the kind) */
	uint32_t ctx_used, uid_used; /**< held by the asking context / the uid */
};
struct uroce_query_limits_rep {
	uint32_t n;                  /**< entries used */
	uint32_t uid;
	uint64_t mem_ctx_max, mem_uid_max, mem_ctx_used, mem_uid_used;
	uint32_t cm_ids, cm_ids_used; /**< the device's IB CM id table */
	struct uroce_limit e[UROCE_LIMITS_MAX];
};
_Static_assert(sizeof(struct uroce_query_limits_rep) + 16 <= UROCE_MAX_MSG, "limits reply");

/* ------------------------------------------------------------------ */

/*
 * librdmacm write()s `struct rdma_ucm_cmd_hdr` + a command struct of
 * <rdma/rdma_user_cm.h> on the fd open("/dev/infiniband/rdma_cm") gave it.
 * The shim turns each open into UROCE_OP_UCMA_OPEN, each write into one
 * UROCE_OP_UCMA_CMD and the last close into UROCE_OP_UCMA_CLOSE; the daemon
 * implements the kernel's ucma with its semantics and errnos. Commands and
 * responses are the uAPI structs byte for byte (the daemon ignores their
 * `response` pointers: the shim copies the reply body to `response`).
 *
 * UROCE_OP_UCMA_OPEN (empty body) -> uroce_ucma_open_rep, fds out: [0] the
 *   read end of a pipe the daemon made (it keeps the O_NONBLOCK write end).
 *   One byte is written to the pipe per event queued on the file, so the
 *   fd is pollable; it is what open() returns, and its blocking mode is the
 *   application's (fcntl), as with the kernel's fd. Files per context are
 *   limited (-ENOMEM past the limit); ids per file too.
 * UROCE_OP_UCMA_CMD: uroce_ucma_cmd_req then `in` bytes -> status 0 and
 *   the response bytes (at most `out`; exactly what the kernel would copy
 *   to `response`, possibly none), or a negative errno and no body. The
 *   write() then returns its length, or -1 with that errno.
 *   - RDMA_USER_CM_CMD_SET_OPTION: the `optlen` bytes at `optval` follow
 *     the command struct (in = sizeof(struct rdma_ucm_set_option) + optlen).
 *   - RDMA_USER_CM_CMD_MIGRATE_ID: written on the destination file (as
 *     librdmacm does); its `fd` field (the id's current file) holds that
 *     file's handle instead: the shim rewrites it (a fd that is no uroce
 *     rdma_cm file is -EBADF in the shim, as the kernel's fdget fails).
 *     Id numbers do not change on migration.
 *   - RDMA_USER_CM_CMD_GET_EVENT: the shim first reads one byte from the
 *     pipe (blocking or not per the fd's flags; EAGAIN goes to librdmacm),
 *     then asks; the daemon returns the oldest event, or -EAGAIN when the
 *     byte was stale (the event's id was destroyed: its events are removed
 *     as the kernel removes them) and the shim reads the next byte.
 * UROCE_OP_UCMA_CLOSE (uroce_handle_msg) -> empty: every id of the file is
 *   destroyed as closing the kernel fd destroys them (connected ids send a
 *   DREQ, pending connection requests are rejected). A client that goes
 *   away gets the same for all its files.
 */
#define UROCE_UCMA_ABI_VERSION 4    /**< class/misc/rdma_cm/abi_version */
#define UROCE_UCMA_MAX_IN 1024      /**< command struct (+ SET_OPTION value) */
#define UROCE_UCMA_MAX_OUT 1024     /**< response bytes */

struct uroce_ucma_open_rep {
	uint32_t handle;   /**< file handle for UCMA_CMD / UCMA_CLOSE / MIGRATE_ID */
	uint32_t rsvd;
};

struct uroce_ucma_cmd_req {
	uint32_t file;     /**< handle from UROCE_OP_UCMA_OPEN */
	uint32_t cmd;      /**< rdma_ucm_cmd_hdr.cmd (RDMA_USER_CM_CMD_*) */
	uint32_t out;      /**< rdma_ucm_cmd_hdr.out: room at `response` */
	uint32_t in;       /**< bytes in data[] (<= UROCE_UCMA_MAX_IN) */
	uint8_t data[];    /**< the command struct as written after the header */
};
_Static_assert(sizeof(struct uroce_msg_hdr) + sizeof(struct uroce_ucma_cmd_req) +
	       UROCE_UCMA_MAX_IN <= UROCE_MAX_MSG, "ucma request");
_Static_assert(sizeof(struct uroce_msg_hdr) + UROCE_UCMA_MAX_OUT <= UROCE_MAX_MSG,
	       "ucma reply");

#endif /* UROCE_ABI_H */
