/* SPDX-License-Identifier: MIT */
/* uroced core: the device and its port, the driver tier. struct emu_dev
 * with the tables of what the layers above plug in, as a DPDK driver
 * fills its dev_ops: the port's packet I/O (struct emu_port_ops, the
 * daemon's), the transport's QP operations (struct emu_xport_ops, d->xops,
 * installed by emu_dev_init) and QP1's CM engine (struct emu_gsi_ops); the
 * port counters, neighbours, multicast groups, key table. */
#ifndef EMU_DEV_H
#define EMU_DEV_H

#include <string.h>

#include "emu_obj.h"
#include "wire.h"

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
	/* optional: frames the port can take now without running out of
	 * buffers, less a reserve of its own for ACKs, NAKs and requests
	 * (emu_tx_room); none: as many as asked */
	uint32_t (*tx_room)(struct emu_dev *d);
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
	EMU_DROP_MARTIAN,     /* from the wire with one of our addresses as its source */
	EMU_DROP_PKEY,        /* BTH P_Key not in the port's table (IBTA 9.6: silently dropped) */
	EMU_DROP_LINK_DOWN,   /* sent while the port's link was down (daemon/port_nic.c) */
	EMU_DROP_VLAN,        /* received untagged or on another VLAN than --vlan's */
	EMU_DROP_NUM
};

struct emu_port_counters {
	uint64_t tx_pkts, tx_bytes;
	uint64_t rx_pkts, rx_bytes;
	uint64_t rx_roce, rx_arp, rx_icmp, rx_nd;
	uint64_t tx_arp, tx_icmp, tx_nd;
	uint64_t drops[EMU_DROP_NUM];
	uint64_t rx_reason[WIRE_R_NUM]; /* wire_parse rejections */
	uint64_t icrc_errors;
	uint64_t hdr_errors;
	uint64_t fault_drop, fault_dup, fault_reorder, fault_corrupt, fault_delay;
	/* where each corrupted frame went (net/fault.c; in the log, not the
	 * stats ABI): ICRC error, header error, no longer RoCE / ours, passed
	 * with the flip in an ICRC-masked field, passed with a covered byte
	 * flipped (a miss), not followed (duplicated or held) */
	uint64_t fault_corrupt_icrc, fault_corrupt_hdr, fault_corrupt_other;
	uint64_t fault_corrupt_masked, fault_corrupt_passed, fault_corrupt_unseen;
	/* the engine's sleeps, and those bounded by RX polling rather than a
	 * timer (daemon/engine.c; in the log, not the stats ABI) */
	uint64_t idle_sleeps, idle_sleeps_rx_poll;
	uint64_t tx_stalls;   /* requester paused: port TX backlog full */
	uint64_t clients_refused; /* connections the access rule refused */
	uint64_t evq_lost;    /* event-pipe records dropped past the backlog (cq.c) */
	uint64_t cqe_inline;  /* receives whose payload went in the CQ ring */
	uint64_t icrc_skipped; /* frames whose ICRC work the internal ring skipped */
	uint64_t mr_mapped;   /* payload pieces moved by memcpy through a mapped MR */
	uint64_t mr_syscall;  /* ... through the client's /proc/<pid>/mem (ODP) */
	uint64_t mr_pinned;   /* ... through pages the client pinned (pin.c) */
	uint64_t mr_unpinned; /* ... at the address, process_vm_* (unpinned MRs) */
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
	/* bytes of the transport's state of a QP (qp->x, allocated with it),
	 * and of daemon memory it keeps per SQ entry besides the WQE's copy
	 * (charged to the context as queue memory) */
	size_t qp_size;
	size_t swqe_size;
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
	/* the XRC SRQ a TGT QP serves from goes (emu_xsrq_fini, after it set
	 * the QP's srq, pd and recv_cq to NULL): forget the message in
	 * progress */
	void (*xrc_tgt_unbind)(struct emu_qp *qp);
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
	bool rx_self;                 /* the frame being received is one we sent
				       * (the port's self loop): our own addresses
				       * as its source are no forgery */
	/* The port never leaves the daemon (loopback ring, link:NAME) and no
	 * capture or fault injection needs a valid ICRC: frames are sent with
	 * ICRC 0 and received unverified (set by the daemon, emu_icrc_plan) */
	bool icrc_tx_skip, icrc_rx_skip;
	/* the frame being received: the device checked its IPv4 header
	 * checksum and found it good (RX checksum offload, set by the port
	 * per frame): the parser skips that check */
	bool rx_l3_csum_ok;
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
	/* consecutive engine turns whose RX poll left frames waiting in the
	 * port (a full burst, or our own frames still in the self ring); the
	 * transport holds expired retransmit timers while it is set */
	uint32_t rx_more;
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

	/* the transport's state of the device (its own type: active QPs,
	 * responders of destroyed QPs, congestion control, drop counters),
	 * allocated by emu_dev_init; the core never looks inside */
	struct emu_xport_dev *x;
	/* XRC (xrcd.c): domains, and XRC SRQs by number (EMU_SRQN_TABLE
	 * entries, allocated with the first) */
	struct emu_xrcd *xrcds;
	uint32_t next_xrcdn;
	struct emu_srq **srqn;
	uint32_t next_srqn;
	/* QP1: the CM engine (struct emu_gsi_ops above) */
	const struct emu_gsi_ops *gsi;
	void *gsi_priv;
	/* the engine thread's: the RX burst open now (emu_rx_burst_begin,
	 * NULL between bursts) and the guard of its memory accesses */
	struct emu_burst *burst;
	struct emu_mem_guard *guard;
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

/* The XRC SRQ of number srqn on d, or NULL. */
static inline struct emu_srq *emu_xrc_srq_find(const struct emu_dev *d, uint32_t srqn)
{
	return d->srqn && srqn < EMU_SRQN_TABLE ? d->srqn[srqn] : NULL;
}

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

/* Fill a HELLO reply from the device. */
void emu_dev_hello(const struct emu_dev *d, struct uroce_hello_rep *r);

/* Doorbells: scan c's doorbell page and kick the rings that were rung. */
void emu_ctx_doorbells(struct emu_ctx *c);

#endif /* EMU_DEV_H */
