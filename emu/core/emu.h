/* SPDX-License-Identifier: MIT */
/* uroced core (emu/core/), the lowest layer of the daemon: device, context
 * and verbs objects, and the services the layers above use (application
 * memory, key checks, CQ production, events, shared rings, the port's
 * packet I/O ops, clock, log). The core's public header; it reaches the
 * layers above only through struct emu_xport_ops (d->xops).
 *
 * One engine thread per device owns everything of that device, so nothing
 * is locked. Nothing in this header needs DPDK: transport tests link the
 * daemon's libraries (emu_dep) with a simulated wire. */
#ifndef EMU_EMU_H
#define EMU_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <infiniband/verbs.h>

#include <uroce/abi.h>
#include "wire.h"
#include "xport_state.h"

/* ------------------------------------------------------------------ */
/* Limits (reported in ibv_device_attr; the control server enforces)   */
/* ------------------------------------------------------------------ */
#define EMU_MAX_QP        16384
#define EMU_MAX_QP_WR     16384
#define EMU_MAX_SGE       32
#define EMU_MAX_INLINE    512
#define EMU_MAX_CQ        16384
#define EMU_MAX_CQE       (1u << 19)  /* 512K - 1 reported: with its 256 B
                                        * (CQE + small-payload slot) that
                                        * ring fits the default 256 MB
                                        * per-context queue memory */
#define EMU_MAX_MR        65536
#define EMU_MAX_PD        65536
#define EMU_MAX_MW        65536
#define EMU_MAX_AH        65536
#define EMU_MAX_SRQ       8192
#define EMU_MAX_SRQ_WR    16384
#define EMU_MAX_SRQ_SGE   32
#define EMU_MAX_DM        4096
/* ibv_alloc_dm's largest allocation (max_dm_size), less when the
 * context's memory limit is lower: it is daemon memory, charged as
 * queue memory is (--limit mem=) */
#define EMU_DM_MAX_SIZE   (256u << 10)
#define EMU_MAX_MCAST_GRP 256
#define EMU_MAX_MCAST_ATT 64     /* QPs per group */
#define EMU_MAX_MR_SIZE   (1ull << 40)
#define EMU_SQ_STRIDE_MAX 1024u  /* 64 B header + 32 SGEs or 512 B inline -> 1024 */
#define EMU_QPN_FIRST     0x11u
#define EMU_QPN_TABLE     65536u /* QPNs live in [EMU_QPN_FIRST, EMU_QPN_TABLE) */

/* ------------------------------------------------------------------ */
/* Log and clock                                                       */
/* ------------------------------------------------------------------ */
/* Levels are rte_log's (RTE_LOG_ERR ... RTE_LOG_DEBUG). */
#define EMU_LOG_LVL_ERR     4u
#define EMU_LOG_LVL_WARNING 5u
#define EMU_LOG_LVL_NOTICE  6u
#define EMU_LOG_LVL_INFO    7u
#define EMU_LOG_LVL_DEBUG   8u
void emu_log(uint32_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool emu_log_enabled(uint32_t level);

/* Rate-limited logging for anything a client or the wire can trigger: at
 * most EMU_LOG_RL_BURST lines per call site (and thread) per second; the
 * number suppressed is logged with the next line that passes. */
#define EMU_LOG_RL_BURST 10u
#define EMU_LOG_RL_WINDOW_NS 1000000000ull
struct emu_log_rl {
	uint64_t start_ns;
	uint32_t n;
	uint64_t suppressed;
};
void emu_log_rl(struct emu_log_rl *rl, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* lines suppressed by every limiter since start (for the stats dump) */
uint64_t emu_log_suppressed(void);
#define EMU_LOG_RL(lvl, ...) do { \
		static __thread struct emu_log_rl emu_rl_; \
		emu_log_rl(&emu_rl_, EMU_LOG_LVL_##lvl, __VA_ARGS__); \
	} while (0)
/* EMU_LOG(ERR|WARNING|NOTICE|INFO|DEBUG, "fmt", ...) */
#define EMU_LOG(lvl, ...) emu_log(EMU_LOG_LVL_##lvl, __VA_ARGS__)

/* CLOCK_MONOTONIC in ns, or the test's virtual clock after emu_clock_set(). */
uint64_t emu_now_ns(void);
/* NULL restores CLOCK_MONOTONIC. */
void emu_clock_set(uint64_t (*fn)(void));

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */
struct emu_dev;
struct emu_ctx;
struct emu_fault;
struct emu_kneigh;

enum emu_obj_type {
	EMU_OBJ_NONE = 0,
	EMU_OBJ_PD,
	EMU_OBJ_MR,
	EMU_OBJ_MW,
	EMU_OBJ_CHANNEL,
	EMU_OBJ_CQ,
	EMU_OBJ_SRQ,
	EMU_OBJ_QP,
	EMU_OBJ_AH,
	EMU_OBJ_DM,
	EMU_OBJ_XRCD,       /* a context's handle on an XRC domain (xrcd.c) */
	EMU_OBJ_XQP,        /* a handle from ibv_open_qp on an XRC TGT QP */
	EMU_OBJ_NTYPES
};

/* Daemon-private view of one shared ring. entries/mask/stride are the
 * daemon's copies (the header's copies are the application's to scribble
 * on). */
struct emu_ring {
	struct uroce_ring_hdr *hdr;
	uint8_t *slots;
	uint32_t entries;
	uint32_t mask;
	uint32_t stride;
	uint32_t cons;      /* our consumer index (SQ/RQ/SRQ), last published */
	/* the producer index as last read (RQ/SRQ): while it says entries are
	 * there, taking one reads no line the application writes to but the
	 * WQE itself (docs/performance.md, "Round trips") */
	uint32_t prod_seen;
	bool broken;        /* producer index seen impossible (emu_recv_take) */
};

struct emu_pd {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint32_t refcnt;    /* MRs, MWs, SRQs, QPs, AHs */
};

struct emu_mr {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	uint64_t addr;      /* process virtual address */
	uint64_t length;
	uint64_t iova;      /* address the peer uses */
	unsigned access;    /* enum ibv_access_flags */
	uint32_t lkey, rkey;
	uint32_t mw_bound;  /* windows bound to it: dereg = -EBUSY */
	uint64_t gen;       /* dev->mr_epoch when registered or last reregistered */
	uint32_t nmaps;     /* its pieces in ctx->maps (mrmap.c) */
	struct emu_dm *dm;  /* ibv_reg_dm_mr: the device memory it covers */
};

/* Device memory (dm.c): a sealed memfd the daemon maps and the shim maps
 * too. It has no address in the client's process, so each one gets a
 * range of addresses no process can have (the kernel half), and an MR
 * over it is a daemon-mapped piece at those addresses (mrmap.c): every
 * placement and gather is a memcpy, and an address that misses the piece
 * can only fail. */
#define EMU_DM_VA_BASE  0xffff800000000000ull
#define EMU_DM_VA_SHIFT 24 /* per handle: above EMU_DM_MAX_SIZE */
struct emu_dm {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint64_t length;    /* as allocated (ibv_alloc_dm_attr.length) */
	size_t size;        /* of the memfd: whole pages, charged to ctx */
	int memfd;
	uint8_t *map;
	uint64_t va;        /* the address its byte 0 has in MRs over it */
	uint32_t mrs;       /* MRs over it: free = -EBUSY */
};

/* The address local SGEs give byte 0 of mr: its process address, or for
 * device memory (zero-based, nothing to point at) its iova */
static inline uint64_t emu_mr_lbase(const struct emu_mr *mr)
{
	return mr->dm ? mr->iova : mr->addr;
}

/* A piece of an MR mapped into the daemon (mrmap.c): client addresses
 * [addr, addr + len) are base[0 .. len) here. */
struct emu_mrmap_hold;
struct emu_mrmap {
	uint64_t addr, len;
	uint8_t *base;
	/* the mapping (what to munmap, and the references on it: frames
	 * sent zero-copy point into it); NULL for device memory */
	struct emu_mrmap_hold *hold;
	struct emu_mr *mr;
	bool writable;
};

enum emu_mw_state { EMU_MW_FREE, EMU_MW_VALID };

struct emu_mw {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	enum ibv_mw_type type;
	enum emu_mw_state state;
	uint32_t rkey;      /* index << 8 | key byte (type 2: chosen at bind) */
	struct emu_mr *mr;  /* bound MR */
	struct emu_qp *qp;  /* type 2: the QP it was bound through */
	uint64_t va;        /* window start, in the MR's iova space */
	uint64_t length;
	unsigned access;
};

/* Records waiting for room in an event pipe (emu_evq_put). The pipe is
 * the daemon's own (the application holds only the read end), so a write
 * never blocks; a reader that falls behind gets up to EMU_EVQ_BACKLOG
 * records kept in order, beyond that they are counted and logged. */
#define EMU_EVQ_BACKLOG 256u
#define EMU_EVQ_REC_MAX 16u
struct emu_evq {
	int fd;                   /* the write end the backlog is for */
	uint32_t rec;             /* record size */
	uint32_t head, n;         /* backlog ring, in records */
	uint8_t *buf;             /* EMU_EVQ_BACKLOG records, allocated at first use */
	uint64_t lost;            /* records dropped: backlog full or reader gone */
	uint64_t log_ns;          /* last "lost" log line (rate limit) */
	struct emu_evq *pend_next; /* dev->evq_pend while n > 0 */
	bool pending;
};

struct emu_channel {
	struct emu_ctx *ctx;
	uint32_t handle;
	int wfd;            /* write end of the daemon's pipe (O_NONBLOCK, ours alone) */
	struct emu_evq q;
	uint32_t refcnt;    /* CQs */
};

struct emu_cq {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint64_t user_handle;
	struct emu_channel *channel;
	struct uroce_ring_hdr *hdr;
	struct uroce_cqe *slots;
	struct uroce_cqe_inl *inl; /* companion slots: small payloads (abi.h) */
	uint32_t entries, mask;
	uint32_t prod;      /* daemon-private producer index */
	uint32_t pub;       /* prod as last published to the ring */
	uint32_t cons_seen; /* the shim's cons as last read: re-read only when
			     * the ring looks full, so a put does not pull the
			     * line the poller writes */
	bool pend_sol;      /* an unpublished CQE may fire a SOLICITED arm */
	uint32_t cqe;       /* capacity reported */
	bool error;         /* overrun: CQ_ERR raised, no more CQEs */
	bool want_ts;       /* UROCE_CQ_F_TIMESTAMP: CQEs carry the time */
	uint32_t refcnt;    /* QPs using it */
	int memfd;
	void *map;
	size_t map_size;
};

/* XRC domains (xrcd.c, docs/verbs.md "XRC"). A domain is the device's:
 * processes opening the same file share one (the file identified by the
 * dev/ino of a descriptor the client passed, never by a path), no file
 * makes a private one. Each ibv_open_xrcd is a handle of its context
 * (emu_xrcd_ref) counting what was made through it. */
struct emu_xrcd {
	struct emu_xrcd *next;    /* dev->xrcds */
	uint32_t num;             /* xrcdn, unique on the device */
	bool by_file;
	dev_t fdev;
	ino_t fino;
	uint32_t refs;            /* handles, in every context */
};

struct emu_xrcd_ref {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_xrcd *x;
	uint32_t users;           /* XRC SRQs, TGT QPs, opened QPs: close is -EBUSY */
};

/* ibv_open_qp: names its TGT QP by number and domain, looked up at each
 * use, so a TGT QP destroyed meanwhile leaves nothing dangling */
struct emu_xqp {
	struct emu_xrcd_ref *ref;
	uint32_t handle;
	uint32_t qpn;
	uint64_t user_handle;
};

struct emu_srq {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	uint64_t user_handle;
	uint32_t db_index;
	struct emu_ring rq;
	uint32_t max_wr, max_sge;
	uint32_t srq_limit; /* 0 = not armed */
	bool error;
	uint32_t refcnt;    /* QPs */
	/* XRC SRQ: its domain, the CQ of its receive completions, its number
	 * on the device (the XRCETH's); NULL / 0 for a basic SRQ */
	struct emu_xrcd_ref *xref;
	struct emu_cq *cq;
	uint32_t srqn;
	int memfd;
	void *map;
	size_t map_size;
};

/* A resolved address vector: everything needed to address a packet. */
struct emu_av {
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint8_t dmac[6];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t ipv6;       /* 0: IPv4 (dgid IPv4-mapped), 1: IPv6 */
	uint8_t mac_valid;  /* 0: neighbour unresolved (emu_av_refresh) */
	uint32_t flow_label;
};

struct emu_ah {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	struct ibv_ah_attr attr;
	struct emu_av av;
};

struct emu_qp {
	struct emu_dev *dev;
	struct emu_ctx *ctx;
	uint32_t handle;
	enum ibv_qp_type type;
	struct emu_pd *pd;
	struct emu_cq *send_cq, *recv_cq;
	struct emu_srq *srq;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct ibv_qp_attr attr;  /* as last set (the transport keeps it current) */
	uint32_t qpn;
	uint32_t db_index;        /* beside qpn: no padding (test_robust qp_memory) */
	uint64_t user_handle;
	struct emu_ring sq, rq;   /* rq.entries == 0 with an SRQ */
	uint32_t mcast_groups;    /* groups attached (UD) */
	int memfd;                /* -1: the rings are in the context's arena, at map */
	void *map;
	size_t map_size;
	uint64_t charged;         /* daemon memory charged to ctx (limits) */
	/* XRC TGT QP (IBV_QPT_XRC_RECV): its domain; it owns no PD, CQ or
	 * SRQ: pd, recv_cq and srq are those of the XRC SRQ the request
	 * being served names (emu_xrc_tgt_bind), NULL between */
	struct emu_xrcd_ref *xref;
	struct emu_xport_qp x;
};

/* ------------------------------------------------------------------ */
/* Context: one application connection                                 */
/* ------------------------------------------------------------------ */
struct emu_handle_slot {
	uint8_t type;   /* enum emu_obj_type, EMU_OBJ_NONE = free */
	void *obj;
};

struct emu_db_slot {
	uint8_t type;   /* EMU_OBJ_QP / EMU_OBJ_SRQ / NONE */
	void *obj;
};

struct emu_ctx {
	struct emu_dev *dev;
	struct emu_ctx *next, *prev;  /* dev->ctxs */
	pid_t pid;
	uid_t uid;                    /* SO_PEERCRED at connect */
	bool see_all;                 /* root or the daemon's uid: all QPs in stats */
	int mem_fd;                   /* the client's /proc/<pid>/mem, -1 = none (tests) */
	int maps_fd;                  /* its /proc/<pid>/maps (vma.c), -1 = not open */
	int sock;                     /* control socket, -1 = none (tests) */
	int wake_fd;                  /* eventfd the shim kicks */
	int async_fd;                 /* async pipe write end, -1 = none */
	struct emu_evq async_q;
	int db_memfd;
	struct uroce_db_page *db;     /* NULL in tests without doorbells */
	struct emu_handle_slot *h;
	uint32_t nh, h_free_hint;
	struct emu_db_slot *dbs;      /* db_index -> QP/SRQ */
	uint32_t ndbs, db_free_hint;  /* no free slot below the hint */
	void *priv;                   /* control server state */
	void *ucma;                   /* rdma_cm state (emu/cm/ucma.c) */
	bool hello_done;
	bool dead;                    /* disconnected, being torn down */
	bool mem_stalled;             /* an access to its memory blocked: quarantined */
	bool ctl_busy;                /* a request is being executed: ctl_op/ctl_seq */
	uint32_t ctl_op, ctl_seq;
	uint32_t nobj[EMU_OBJ_NTYPES];
	int32_t uid_slot;             /* dev->uids index, -1 = not accounted (tests) */
	uint64_t mem;                 /* daemon memory charged (queues), bytes */
	struct emu_mrmap *maps;       /* mapped MR pieces, sorted by addr (mrmap.c) */
	uint32_t nmaps, capmaps;
	uint64_t mr_mapped, mr_syscall; /* payload pieces by path (mem.c) */
	struct emu_arena *arena;      /* QP rings (arena.c), NULL until the first */
};

/* Resource limits (docs/running.md, --limit/--uid-limit): objects one
 * context, and all contexts of one uid on a device, may hold. Index
 * EMU_OBJ_NONE of the per-uid table is the number of contexts. */
extern uint32_t emu_lim_ctx[EMU_OBJ_NTYPES];
extern uint32_t emu_lim_uid[EMU_OBJ_NTYPES];
/* "qp=100" etc.; 0 or -EINVAL */
int emu_limit_set(const char *spec, bool per_uid);
/* 0 if c may create one more object of type, else -ENOMEM */
int emu_ctx_quota(const struct emu_ctx *c, enum emu_obj_type type);
/* daemon memory (queue rings, private copies) charged to c and its uid:
 * 0, or -ENOMEM past --limit mem= / --uid-limit mem= */
extern uint64_t emu_lim_ctx_mem, emu_lim_uid_mem;
int emu_ctx_charge(struct emu_ctx *c, uint64_t bytes);
void emu_ctx_uncharge(struct emu_ctx *c, uint64_t bytes);
/* account c to uid: 0, or -EAGAIN when the uid has its maximum of contexts */
int emu_ctx_set_uid(struct emu_ctx *c, uint32_t uid);

struct emu_uid_use {
	uint32_t uid;
	uint32_t nobj[EMU_OBJ_NTYPES]; /* [EMU_OBJ_NONE]: contexts; 0 there = free slot */
	uint64_t mem;
};

/* ------------------------------------------------------------------ */
/* Device and port                                                     */
/* ------------------------------------------------------------------ */
struct emu_txbuf {
	uint8_t *data;
	uint32_t cap;
	void *priv;
};

/* Packet I/O of a port. tx_alloc gives a buffer of at least the Ethernet
 * MTU + headers (0 or -ENOBUFS); tx_send queues it (ownership passes);
 * tx_free returns an unused one; tx_flush pushes queued frames out.
 * tx_send_ext (optional, ports that chain buffers: d->tx_zc) queues a
 * frame of b's first hl bytes, then len bytes at ext inside the mapping
 * h (a reference taken until the port frees the frame, emu_mrmap_get),
 * then tl trailer bytes; 0, or -ENOBUFS with nothing queued and b still
 * the caller's. */
struct emu_mrmap_hold;
struct emu_port_ops {
	int (*tx_alloc)(struct emu_dev *d, struct emu_txbuf *b);
	void (*tx_send)(struct emu_dev *d, struct emu_txbuf *b, uint32_t len);
	void (*tx_free)(struct emu_dev *d, struct emu_txbuf *b);
	void (*tx_flush)(struct emu_dev *d);
	int (*tx_send_ext)(struct emu_dev *d, struct emu_txbuf *b, uint32_t hl,
			   const uint8_t *ext, uint32_t len, struct emu_mrmap_hold *h,
			   const uint8_t *trailer, uint32_t tl);
	/* optional: a buffer of at least EMU_TX_SMALL bytes (ACKs, small
	 * messages, the headers of a zero-copy frame); 0 or -ENOBUFS */
	int (*tx_alloc_small)(struct emu_dev *d, struct emu_txbuf *b);
};
#define EMU_TX_SMALL 256u

/* QP1 (GSI) of a device: packets to QPN 1 and the timers of the CM
 * engine (emu/cm/ibcm.c), which sets these; NULL = QP1 packets are
 * dropped as an unknown QP. */
struct wire_pkt;
struct emu_gsi_ops {
	void (*rx)(struct emu_dev *d, const struct wire_pkt *pkt);
	void (*poll)(struct emu_dev *d, uint64_t now_ns);
	uint64_t (*next_deadline)(struct emu_dev *d);
};

enum emu_drop {
	EMU_DROP_NOT_ROCE,    /* not ours: neither RoCE nor ARP/ND/ICMP we answer */
	EMU_DROP_PARSE,       /* a broken RoCE frame (see rx_reason[]) */
	EMU_DROP_ICRC,
	EMU_DROP_NOT_OUR_MAC,
	EMU_DROP_NOT_OUR_IP,
	EMU_DROP_UNKNOWN_QP,
	EMU_DROP_MCAST,       /* multicast to a group nobody joined */
	EMU_DROP_TX_NOBUF,
	EMU_DROP_FAULT,       /* injected */
	EMU_DROP_SRC_MISMATCH, /* RC/UC source IP is not the QP's connected peer */
	EMU_DROP_GSI_MAD,     /* a MAD to QP1 the CM engine dropped (its counters say why) */
	EMU_DROP_NUM
};

struct emu_port_counters {
	uint64_t tx_pkts, tx_bytes;
	uint64_t rx_pkts, rx_bytes;
	uint64_t rx_roce, rx_arp, rx_icmp, rx_nd;
	uint64_t tx_arp, tx_icmp, tx_nd;
	uint64_t drops[EMU_DROP_NUM];
	uint64_t xdrops[EMU_XDROP_NUM]; /* the transport's, by reason (xport.h) */
	uint64_t rx_reason[WIRE_R_NUM]; /* wire_parse rejections */
	uint64_t icrc_errors;
	uint64_t hdr_errors;
	uint64_t fault_drop, fault_dup, fault_reorder, fault_corrupt, fault_delay;
	uint64_t tx_stalls;   /* requester paused: port TX backlog full */
	uint64_t clients_refused; /* connections the access rule refused */
	uint64_t evq_lost;    /* event-pipe records dropped past the backlog (cq.c) */
	uint64_t cqe_inline;  /* receives whose payload went in the CQ ring */
	uint64_t icrc_skipped; /* frames whose ICRC work the internal ring skipped */
	uint64_t mr_mapped;   /* payload pieces moved by memcpy through a mapped MR */
	uint64_t mr_syscall;  /* ... through the client's /proc/<pid>/mem */
	uint64_t tx_zc, tx_zc_bytes; /* frames whose payload went out of a mapped MR
				      * without a copy, and those payload bytes */
	uint64_t rx_seg;      /* multi-segment frames placed from their segments */
	uint64_t rx_lin;      /* ... copied into one buffer first (capture, faults, odd layouts) */
	uint64_t zc_unmap_deferred; /* MR unmaps that waited for frames in flight */
};

/* What the core asks of the layers above it, per device: the transport's
 * emu_dev_init installs its table in d->xops (as a DPDK driver installs
 * its dev_ops), so the core names no function of a higher layer. One
 * indirect call per QP operation or doorbell; none per packet (received
 * frames enter at the transport, which calls down). */
struct emu_av;
struct emu_xport_ops {
	/* per-QP transport state: set up at create, released at destroy */
	void (*qp_init)(struct emu_qp *qp);
	void (*qp_fini)(struct emu_qp *qp);
	/* ibv_modify_qp / ibv_query_qp: 0 or -errno */
	int (*qp_modify)(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask);
	int (*qp_query)(struct emu_qp *qp, struct ibv_qp_attr *attr, int mask);
	/* a doorbell rang for the SQ / RQ of qp, or for an SRQ */
	void (*sq_kick)(struct emu_qp *qp);
	void (*rq_kick)(struct emu_qp *qp);
	void (*srq_kick)(struct emu_srq *srq);
	/* a deferred write into memory qp placed failed (emu_mem_flush);
	 * tag: what the transport gave emu_mem_write_deferred */
	void (*mem_fault)(struct emu_qp *qp, uint64_t tag);
	/* resolve an address vector (ibv_create_ah; the net layer's) */
	int (*av_resolve)(struct emu_dev *d, const struct ibv_ah_attr *a, struct emu_av *av);
};

#define EMU_NEIGH_MAX 64
struct emu_neigh {
	union ibv_gid ip;
	uint8_t mac[6];
	uint8_t state;      /* 0 free, 1 incomplete, 2 reachable */
	uint8_t tries;
	uint64_t expires_ns;
	uint64_t next_try_ns;
};

struct emu_mcast {
	union ibv_gid gid;
	uint32_t nqp;
	struct emu_qp *qp[EMU_MAX_MCAST_ATT];
};

/* Key table entry: keys are index << 8 | variant; a freed index bumps its
 * variant so a stale key never matches. */
struct emu_key_slot {
	uint8_t type;       /* EMU_OBJ_MR / EMU_OBJ_MW / NONE */
	uint8_t variant;
	void *obj;
};

struct emu_dev {
	char name[UROCE_DEV_NAME_MAX];
	uint8_t mac[6];
	uint32_t gid_count;
	union ibv_gid gids[UROCE_MAX_GIDS];
	enum ibv_mtu active_mtu;
	enum ibv_port_state port_state;
	uint64_t node_guid;           /* network order */
	bool loopback;                /* every frame comes back to us */
	/* The port never leaves the daemon (loopback ring, link:NAME) and no
	 * capture or fault injection needs a valid ICRC: frames are sent with
	 * ICRC 0 and received unverified (set by the daemon, emu_icrc_plan) */
	bool icrc_tx_skip, icrc_rx_skip;
	/* the port sends payload pieces of mapped MRs as buffers of their
	 * own (ops->tx_send_ext); used while icrc_tx_skip holds */
	bool tx_zc;
	struct emu_evq *evq_pend;     /* event pipes with a backlog */
	uint16_t ip_id;               /* next IPv4 identification */
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;

	const struct emu_port_ops *ops;
	const struct emu_xport_ops *xops; /* the transport's (emu_dev_init) */
	void *port_priv;
	uint32_t tx_backlog;          /* frames queued, not yet taken by the NIC */
	struct emu_fault *fault;      /* RX fault injection, NULL = none */
	/* capture hook: every frame sent (tx = true) or received */
	void (*capture)(struct emu_dev *d, const uint8_t *frame, uint32_t len, bool tx);
	void *capture_priv;
	/* frames that are not RoCE (ARP, ICMP, ND); NULL = built-in handler */
	void (*l2_hook)(struct emu_dev *d, const uint8_t *frame, uint32_t len);
	struct emu_port_counters cnt;

	struct emu_qp **qpn;          /* EMU_QPN_TABLE entries */
	uint32_t next_qpn;
	uint32_t nqp;
	struct emu_key_slot *keys;
	uint32_t nkeys, key_hint;
	/* bumped by every MR registration and reregistration: a message
	 * remembers it when it starts and places data only through MRs no
	 * newer than that (xp_sge_copyv, the responder's WRITE), so nothing
	 * lands through a translation that changed mid-message */
	uint64_t mr_epoch;
	uint32_t nmrmaps;   /* daemon-mapped MR pieces of all contexts (mrmap.c) */
	struct emu_mcast *mcast;      /* EMU_MAX_MCAST_GRP entries */
	struct emu_neigh neigh[EMU_NEIGH_MAX];
	/* set: the port is shared with the host, whose kernel resolves
	 * neighbours (net/kneigh.c); NULL: our own ARP/ND (net/neigh.c) */
	struct emu_kneigh *kneigh;

	struct emu_ctx *ctxs;         /* list of contexts */
	struct emu_uid_use *uids;     /* per-uid usage (limits) */
	void *ucma;                   /* rdma_cm files and ids (emu/cm/ucma.c) */
	uint32_t nuids;
	struct emu_ctx *zombies;      /* destroyed, freed once no QP exists */
	uint32_t nctx;

	/* transport-owned device state */
	struct emu_xport_qp *xport_act; /* head of the transport's active-QP list */
	struct emu_xport_tomb xport_tomb[EMU_XPORT_TOMB_MAX];
	uint32_t xport_tomb_next;
	struct emu_dcqcn_cfg dcqcn;   /* congestion control (emu_dev_init: defaults) */
	struct {                      /* ... what it did, for every QP ever */
		uint64_t ce_rcvd, cnp_sent, cnp_rcvd, rate_cuts;
	} dcqcn_cnt;
	/* XRC (xrcd.c): domains, and XRC SRQs by number (EMU_SRQN_TABLE
	 * entries, allocated with the first) */
	struct emu_xrcd *xrcds;
	uint32_t next_xrcdn;
	struct emu_srq **srqn;
	uint32_t next_srqn;
	/* QP1: the CM engine (struct emu_gsi_ops above) */
	const struct emu_gsi_ops *gsi;
	void *gsi_priv;
};

/* The core's half of a device (tables, addresses, attributes); the
 * transport's emu_dev_init (xport.h) calls it and installs d->xops. */
int emu_dev_core_init(struct emu_dev *d, const char *name, const uint8_t mac[6],
		      uint32_t eth_mtu, const union ibv_gid *gids, uint32_t ngid);
/* Destroys every context and frees the tables (d->xops still needed). */
void emu_dev_core_fini(struct emu_dev *d);

static inline struct emu_qp *emu_qp_lookup(struct emu_dev *d, uint32_t qpn)
{
	return qpn < EMU_QPN_TABLE ? d->qpn[qpn] : NULL;
}

/* ------------------------------------------------------------------ */
/* Application memory                                                  */
/* ------------------------------------------------------------------ */
/* preadv/pwritev on c->mem_fd (or memcpy when there is none and c->pid is
 * our own pid, as in tests). 0 or -errno (-EFAULT for a short transfer). */
int emu_mem_read(struct emu_ctx *c, void *dst, uint64_t addr, size_t len);
/* Bind c to its process's memory: fd must be a read-write /proc/<pid>/mem
 * of c->pid itself (the client opens /proc/self/mem), maps_fd (-1: none)
 * a read-only /proc/<pid>/maps of it (vma.c). On success c owns both; 0,
 * -EINVAL (no fd), -EACCES (not the peer's own) or -ESRCH (a peer in a pid
 * namespace the daemon cannot see: another container). */
int emu_mem_attach(struct emu_ctx *c, int fd, int maps_fd);
int emu_mem_write(struct emu_ctx *c, uint64_t addr, const void *src, size_t len);
/* vma.c: open c's /proc/<pid>/maps (0 or -errno); is all of [addr, addr +
 * len) mapped by c's process with read (write: write) permission? 0, else
 * -EFAULT. /proc/<pid>/mem reaches pages even where they are not
 * (FOLL_FORCE). A client whose maps we do not have is not asked (it gave
 * none and we may not open it: only its own memory is at stake). */
int emu_vma_attach(struct emu_ctx *c);
int emu_vma_allowed(struct emu_ctx *c, uint64_t addr, uint64_t len, bool write);
/* the same from maps text read with pread from fd (kernels before 6.11) */
int emu_vma_scan(int fd, uint64_t addr, uint64_t len, bool write);
/* may the daemon read (write) [proc, proc + len) of mr's process? Always
 * for an MR that is not ODP (checked at registration, as pinning does);
 * for an ODP one only where the process maps it so now. 0 or -EFAULT. */
int emu_mr_odp_access(const struct emu_mr *mr, uint64_t proc, uint64_t len, bool write);
/* Batched: local iovecs against remote ranges {addr,len}. */
struct emu_rvec { uint64_t addr; uint64_t len; };
int emu_mem_readv(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		  const struct emu_rvec *remote, unsigned nremote);
int emu_mem_writev(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		   const struct emu_rvec *remote, unsigned nremote);
/* Daemon-mapped MRs (mrmap.c, docs/security.md): map a piece of an MR
 * from the file descriptor the client sent after checking it against the
 * client's own mapping; 0 or -errno (the piece then stays on the
 * /proc/<pid>/mem path). emu_mr_unmap drops every piece of mr. */
int emu_mr_map(struct emu_ctx *c, const struct uroce_map_mr_req *q, int fd);
void emu_mr_unmap(struct emu_mr *mr);
int emu_mr_unmap_handle(struct emu_ctx *c, uint32_t handle);
/* mr over device memory: its one piece is the DM's own mapping */
int emu_mr_map_dm(struct emu_mr *mr, uint8_t *base);
/* the daemon address of client [addr, addr + len) if one mapped piece of
 * c holds it (and may be written, if write), else NULL */
uint8_t *emu_mrmap_find(const struct emu_ctx *c, uint64_t addr, uint64_t len, bool write);
/* Write back what the daemon's mappings of c hold of client [addr, addr +
 * len) to the files behind them (msync MS_SYNC): a persistent FLUSH.
 * Memory it does not map has no file of its own to write back. 0 or -errno. */
int emu_mrmap_persist(const struct emu_ctx *c, uint64_t addr, uint64_t len);
/* Zero-copy TX (docs/performance.md): the daemon address of client
 * [addr, addr + len) of c if one mapped piece of a file (not device
 * memory) holds it, and *h the mapping it lies in; else NULL. A frame that
 * points into it takes a reference (emu_mrmap_get) and drops it when the
 * port has let go of it (emu_mrmap_put, from any thread): the mapping is
 * unmapped at the last put, so a deregistration or a client's exit waits
 * for the frames in flight without blocking anything. */
const uint8_t *emu_mrmap_find_held(const struct emu_ctx *c, uint64_t addr, uint64_t len,
				   struct emu_mrmap_hold **h);
void emu_mrmap_get(struct emu_mrmap_hold *h);
void emu_mrmap_put(struct emu_mrmap_hold *h);
/* memcpy that turns a SIGBUS (a client shrank a mapped file) into -EFAULT */
int emu_mrmap_copy(void *dst, const void *src, size_t n);
/* Stall guard (mem.c, docs/security.md): an engine thread publishes each
 * access to application memory in its guard: token != 0 while a system
 * call is under way, ctx whose memory it is. A watchdog that sees the same
 * token for too long claims it (emu_mem_guard_abandon); the thread then
 * exits the moment its call returns, touching nothing, and a fresh engine
 * thread takes the device over (emu_mem_quarantine for ctx). */
#define EMU_MEM_ABANDONED UINT64_MAX
struct emu_mem_guard {
	uint64_t token;               /* atomic; 0 = not in an access */
	struct emu_ctx *ctx;          /* atomic */
	pid_t tid;                    /* the engine thread */
	void *cqb;                    /* its held-back CQEs (emu_xport_cqb_self) */
	struct emu_mem_guard *next;   /* abandoned guards (never freed) */
};
/* The calling thread publishes its accesses in g (NULL: none, tests). */
void emu_mem_guard_set(struct emu_mem_guard *g);
/* Watchdog: claim g's access token; true if the thread is now abandoned. */
bool emu_mem_guard_abandon(struct emu_mem_guard *g, uint64_t token);
/* After a takeover: every later access to c's memory fails at once, and
 * its QPs go to the error state with IBV_EVENT_QP_FATAL. */
void emu_mem_quarantine(struct emu_ctx *c);

/* Batched writes across packets (mem.c): between emu_mem_batch(true) and
 * emu_mem_batch(false) (the engine brackets each RX burst with them),
 * emu_mem_write_deferred only records the write; src must stay valid until
 * the batch ends. emu_mem_flush writes the record out: every other memory
 * access does it first, and so must anything that makes the data visible
 * (a CQE). A failed deferred write calls emu_xport_mem_fault(qp, tag), tag
 * being the caller's word for what the write was. Outside a batch the
 * write is immediate (0 or -errno). */
void emu_mem_batch(bool on);
void emu_mem_flush(void);
/* has qp a deferred write not written yet? (no system call) */
bool emu_mem_pending(const struct emu_qp *qp);
int emu_mem_write_deferred(struct emu_qp *qp, struct emu_ctx *c, const struct emu_rvec *r,
			   unsigned nr, const void *src, uint32_t len, uint64_t tag);

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */
/* access_needed: IBV_ACCESS_* bits; 0 = local read (always allowed).
 * On failure returns NULL and *err = -EINVAL (no such key / wrong PD /
 * invalid window), -EACCES (access), -ERANGE (bounds). */
struct emu_mr *emu_mr_check_lkey(struct emu_pd *pd, uint32_t lkey, uint64_t addr,
				 uint64_t len, unsigned access_needed, int *err);
/* Remote access through an MR rkey or a bound MW: PD of qp, bounds
 * (overflow-safe), access. *proc_addr = process address of va, *owner =
 * context whose memory it is. Returns the MR (for a window, the MR it is
 * bound to) or NULL with *err as above, or -EFAULT for ODP memory the
 * process does not map with the permission the access needs. */
struct emu_mr *emu_mr_check_rkey(struct emu_qp *qp, uint32_t rkey, uint64_t va,
				 uint64_t len, unsigned access_needed,
				 uint64_t *proc_addr, struct emu_ctx **owner, int *err);
/* The whole range rkey names for the peer (an MR's iova and length, a
 * valid window's), for an operation on "the region" (FLUSH level MR); the
 * key is then checked by emu_mr_check_rkey like any other. 0 or -EINVAL. */
int emu_rkey_extent(struct emu_qp *qp, uint32_t rkey, uint64_t *va, uint64_t *len);
/* Bind a window (BIND_MW WQE or ibv_bind_mw): mw_handle in qp's context,
 * new_rkey (type 2: the application's key byte; type 1: ignored, the
 * daemon bumps the key byte), MR by lkey, range within the MR's iova
 * space, length 0 = unbind. Returns 0 (and *rkey_out) or -EINVAL/-EACCES. */
int emu_mw_bind(struct emu_qp *qp, uint32_t mw_handle, uint32_t new_rkey,
		uint32_t mr_lkey, uint64_t addr, uint64_t length, unsigned access,
		uint32_t *rkey_out);
/* LOCAL_INV / SEND_WITH_INV: invalidate a type 2 window of pd. 0 or
 * -EINVAL (no such valid window in pd, type 1, or an MR key). */
int emu_key_invalidate(struct emu_pd *pd, uint32_t rkey);

/* ------------------------------------------------------------------ */
/* Completion queues and events                                        */
/* ------------------------------------------------------------------ */
/* Append a CQE (the caller fills everything but timestamp_ns). Handles
 * overrun (-ENOSPC: CQ_ERR raised, CQ dead) and the arm state. */
int emu_cq_push(struct emu_cq *cq, const struct uroce_cqe *cqe);
/* The timestamp for a CQE of cq: 0 unless it wants them; *now is the
 * clock as read for this batch (0: not yet; read here on first need). */
uint64_t emu_cq_stamp(const struct emu_cq *cq, uint64_t *now);
/* emu_cq_push in two steps, so a burst publishes each ring once: write the
 * CQE (stamped ts) and, when inl, its companion slot (the used segments and
 * cqe->byte_len bytes), without making them visible; then publish: prod
 * and the arm check, for everything written since the last publish. */
int emu_cq_put(struct emu_cq *cq, const struct uroce_cqe *cqe,
	       const struct uroce_cqe_inl *inl, uint64_t ts);
void emu_cq_publish(struct emu_cq *cq);
/* Free slots left (entries - (prod - cons)); 0 when in error. */
uint32_t emu_cq_room(const struct emu_cq *cq);
/* Write one async record (kept in the context's backlog if the pipe is full). */
void emu_async_event(struct emu_ctx *c, uint64_t element, enum ibv_event_type type);
/* Send one record of rec bytes to the event pipe fd, or queue it behind
 * the ones already waiting. Never blocks. */
void emu_evq_put(struct emu_dev *d, struct emu_evq *q, int fd, const void *rec, uint32_t len);
/* Write what the readers made room for; call while d->evq_pend != NULL. */
void emu_evq_flush(struct emu_dev *d, uint64_t now);
/* Forget q's backlog (its pipe is being closed). */
void emu_evq_drop(struct emu_dev *d, struct emu_evq *q);
/* A pipe for events the daemon writes: *wfd (O_NONBLOCK, kept by the
 * daemon) and *rfd (blocking, for the application). 0 or -errno. */
int emu_evq_pipe(int *rfd, int *wfd);

/* ------------------------------------------------------------------ */
/* Shared rings                                                        */
/* ------------------------------------------------------------------ */
/* Producer index (acquire) minus r->cons, or -EINVAL when the application
 * wrote an impossible index (more than entries outstanding). */
int emu_ring_pending(const struct emu_ring *r);
/* Producer index as loaded with acquire (for consumers that keep their own
 * cursor, like the transport's sq_fetch). */
uint32_t emu_ring_prod(const struct emu_ring *r);
static inline uint8_t *emu_ring_slot(const struct emu_ring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->stride;
}
/* Publish r->cons = cons with release. */
void emu_ring_publish(struct emu_ring *r, uint32_t cons);
/* Publish r->cons as it stands (advanced privately before, e.g. for a
 * whole RX burst: one store per ring instead of one per WQE). */
void emu_ring_sync(struct emu_ring *r);

/* Copy send WQE idx of qp's SQ into dst (room for sq.stride bytes, at most
 * EMU_SQ_STRIDE_MAX) and validate the copy: opcode valid for the QP type,
 * num_sge <= cap.max_send_sge, inline_len <= min(max_inline, slot room),
 * flags known. Returns bytes copied or -EINVAL. The transport reads only
 * the copy afterwards. */
int emu_sq_copy(struct emu_qp *qp, uint32_t idx, void *dst);
static inline const struct uroce_sge *emu_wqe_sges(const void *wqe)
{
	return (const struct uroce_sge *)((const uint8_t *)wqe + UROCE_SEND_WQE_HDR);
}
static inline const uint8_t *emu_wqe_inline(const void *wqe)
{
	return (const uint8_t *)wqe + UROCE_SEND_WQE_HDR;
}

/* A receive WQE in daemon memory: header then sge[num_sge]. */
struct emu_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
	struct uroce_sge sge[EMU_MAX_SGE];
};
/* Take the oldest receive WQE of qp (its RQ or its SRQ) into out and
 * publish the slot free. 1 = got one, 0 = empty, -EINVAL = garbage: either
 * a bad WQE (consumed; complete it in error) or an impossible producer
 * index (nothing consumed; reported once, then the ring reads as empty
 * until the index is sane again, so drain loops "until 0" terminate). For an SRQ this raises SRQ_LIMIT_REACHED when the posted count
 * drops below an armed limit. */
int emu_recv_take(struct emu_qp *qp, struct emu_recv_wqe *out);
/* Same without consuming (peek at what the next message would use). */
int emu_recv_peek(struct emu_qp *qp, struct emu_recv_wqe *out);

/* ------------------------------------------------------------------ */
/* Contexts and objects (emu/ctx.c, emu/objs.c): used by the control   */
/* server and by tests that drive the core without a socket.           */
/* ------------------------------------------------------------------ */
struct emu_ctx *emu_ctx_new(struct emu_dev *d, pid_t pid, int sock);
/* Destroy every object of c (QPs first), close its fds and unlink it. The
 * struct itself lingers as a dead zombie (emu_mem_* fail with -EFAULT)
 * until the device has no QP, so transport state pointing at it stays
 * safe. */
void emu_ctx_destroy(struct emu_ctx *c);
void emu_ctx_reap(struct emu_dev *d);
/* Object of type in c by handle, or NULL. */
void *emu_ctx_get(struct emu_ctx *c, uint32_t handle, enum emu_obj_type type);
/* Shared memory for a client (rings, the doorbell page): a sealed-size
 * memfd of size bytes, mapped shared; 0 or -errno. */
int emu_shm_create(const char *name, size_t size, int *fd, void **map);
void emu_shm_destroy(int fd, void *map, size_t size);

/* The context's QP ring arena (arena.c). A piece: chunk index, offset and
 * address there, and new_fd >= 0 when the chunk was made for it (the
 * caller sends it to the client and closes it). */
struct emu_arena;
struct emu_arena_piece {
	uint32_t chunk;
	uint64_t off;
	void *map;
	int new_fd;
};
/* size bytes (<= UROCE_ARENA_MAX_RINGS), zeroed: 0, -EINVAL, or -ENOMEM
 * when a new chunk would pass c's memory limit */
int emu_arena_alloc(struct emu_ctx *c, size_t size, struct emu_arena_piece *p);
/* the piece at at (size bytes) back to c's arena */
void emu_arena_free(struct emu_ctx *c, void *at, size_t size);
/* every chunk unmapped and uncharged (the context's QPs are gone) */
void emu_arena_fini(struct emu_ctx *c);

/* Object operations; each returns 0 or -errno and fills a reply. */
int emu_pd_alloc(struct emu_ctx *c, uint32_t *handle);
int emu_pd_dealloc(struct emu_ctx *c, uint32_t handle);
int emu_mr_reg(struct emu_ctx *c, const struct uroce_reg_mr_req *q, struct uroce_reg_mr_rep *r);
int emu_mr_rereg(struct emu_ctx *c, const struct uroce_rereg_mr_req *q, struct uroce_reg_mr_rep *r);
int emu_mr_dereg(struct emu_ctx *c, uint32_t handle);
/* odp.c: an implicit ODP registration (the whole address space)? */
bool emu_mr_implicit(uint64_t addr, uint64_t len, unsigned access);
/* ibv_advise_mr: check the list and say where its entries are */
int emu_mr_advise(struct emu_ctx *c, const struct uroce_advise_mr_req *q,
		  struct uroce_advise_mr_rep *r);
int emu_obj_import(struct emu_ctx *c, const struct uroce_import_req *q,
		   struct uroce_import_rep *r);
/* Device memory (dm.c; its MRs: objs.c). *memfd_out: still owned by the
 * DM (send it). */
int emu_dm_alloc(struct emu_ctx *c, const struct uroce_alloc_dm_req *q,
		 struct uroce_alloc_dm_rep *r, int *memfd_out);
int emu_dm_free(struct emu_ctx *c, uint32_t handle);
int emu_dm_reg_mr(struct emu_ctx *c, const struct uroce_reg_dm_mr_req *q,
		  struct uroce_reg_mr_rep *r);
int emu_dm_import(struct emu_ctx *c, uint32_t handle, uint64_t *length, int *memfd_out);
/* largest allocation the limits allow (ibv_query_device_ex max_dm_size;
 * ctx.c, with the limits) */
uint32_t emu_dm_max_size(void);
int emu_mw_alloc(struct emu_ctx *c, const struct uroce_alloc_mw_req *q, struct uroce_alloc_mw_rep *r);
int emu_mw_dealloc(struct emu_ctx *c, uint32_t handle);
int emu_channel_create(struct emu_ctx *c, int wfd, uint32_t *handle); /* takes wfd */
int emu_channel_destroy(struct emu_ctx *c, uint32_t handle);
/* *memfd_out: the ring memfd, still owned by the CQ (send it, don't close) */
int emu_cq_create(struct emu_ctx *c, const struct uroce_create_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out);
int emu_cq_resize(struct emu_ctx *c, const struct uroce_resize_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out);
int emu_cq_destroy(struct emu_ctx *c, uint32_t handle);
int emu_srq_create(struct emu_ctx *c, const struct uroce_create_srq_req *q,
		   struct uroce_create_srq_rep *r, int *memfd_out);
int emu_srq_modify(struct emu_ctx *c, const struct uroce_modify_srq_req *q);
/* With r and IBV_SRQ_MAX_WR: beyond the ring, the SRQ moves to a new one;
 * r and *memfd_out describe the ring in use either way. */
int emu_srq_modify_ex(struct emu_ctx *c, const struct uroce_modify_srq_req *q,
		      struct uroce_create_srq_rep *r, int *memfd_out);
int emu_srq_query(struct emu_ctx *c, uint32_t handle, struct ibv_srq_attr *a);
int emu_srq_destroy(struct emu_ctx *c, uint32_t handle);
int emu_qp_create(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		  struct uroce_create_qp_rep *r, int *memfd_out);
/* The rings in c's arena, or (larger than UROCE_ARENA_MAX_RINGS) a memfd
 * of their own; *fd_out: a descriptor to send with the reply or -1, and
 * *fd_close whether the caller closes it after sending (an arena chunk's)
 * or it stays the QP's (its own memfd). */
int emu_qp_create_arena(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct uroce_create_qp_arena_rep *r, int *fd_out, bool *fd_close);
int emu_qp_modify_op(struct emu_ctx *c, const struct uroce_modify_qp_req *q);
int emu_qp_query_op(struct emu_ctx *c, const struct uroce_query_qp_req *q,
		    struct uroce_query_qp_rep *r);
int emu_qp_destroy(struct emu_ctx *c, uint32_t handle);
int emu_ah_create(struct emu_ctx *c, const struct uroce_create_ah_req *q, uint32_t *handle);
int emu_ah_destroy(struct emu_ctx *c, uint32_t handle);
int emu_mcast_op(struct emu_ctx *c, const struct uroce_mcast_req *q, bool attach);

/* XRC (xrcd.c). fd: the file naming a shared domain, or -1. */
#define EMU_SRQN_TABLE 65536u
int emu_xrcd_open(struct emu_ctx *c, const struct uroce_open_xrcd_req *q, int fd,
		  struct uroce_open_xrcd_rep *r);
int emu_xrcd_close(struct emu_ctx *c, uint32_t handle);
int emu_xsrq_create(struct emu_ctx *c, const struct uroce_create_xsrq_req *q,
		    struct uroce_create_xsrq_rep *r, int *memfd_out);
int emu_xrc_tgt_create(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		       struct uroce_xrc_qp_rep *r);
int emu_xrc_qp_open(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		    struct uroce_xrc_qp_rep *r);
/* the QP a QP handle or an opened-QP handle of c names, or NULL */
struct emu_qp *emu_qp_of_handle(struct emu_ctx *c, uint32_t handle);
/* The XRC SRQ of number srqn on d, or NULL. */
static inline struct emu_srq *emu_xrc_srq_find(const struct emu_dev *d, uint32_t srqn)
{
	return d->srqn && srqn < EMU_SRQN_TABLE ? d->srqn[srqn] : NULL;
}
/* A request for XRC TGT QP qp names XRC SRQ srqn: serve it from that SRQ
 * (its PD, CQ, receive WQEs) if it is in qp's domain; false (qp unbound,
 * unless a message in progress still holds its SRQ) otherwise. */
bool emu_xrc_tgt_bind(struct emu_qp *qp, uint32_t srqn);

/* Multicast group membership for UD QPs. */
int emu_mcast_attach(struct emu_qp *qp, const union ibv_gid *gid);
int emu_mcast_detach(struct emu_qp *qp, const union ibv_gid *gid);

static inline bool emu_gid_is_mcast(const union ibv_gid *g)
{
	/* IPv4-mapped 224.0.0.0/4 */
	static const uint8_t v4m[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (g->raw[0] == 0xff)
		return true;
	return !memcmp(g->raw, v4m, 12) && (g->raw[12] & 0xf0) == 0xe0;
}
/* The group of gid on d, or NULL (the receive path's fan-out). */
struct emu_mcast *emu_mcast_find(struct emu_dev *d, const union ibv_gid *gid);
/* Leave every group (QP destroy). */
void emu_mcast_detach_all(struct emu_qp *qp);

/* Fill a HELLO reply from the device. */
void emu_dev_hello(const struct emu_dev *d, struct uroce_hello_rep *r);

/* Doorbells: scan c's doorbell page and kick the rings that were rung. */
void emu_ctx_doorbells(struct emu_ctx *c);

#endif /* EMU_EMU_H */
