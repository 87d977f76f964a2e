/* SPDX-License-Identifier: MIT */
/**
 * @file ibcm.h
 * @brief The IB CM protocol engine of a uroce device: QP1 (GSI) and the
 *        Linux kernel's ib_cm state machine (drivers/infiniband/core/cm.c),
 *        with an API that mirrors include/rdma/ib_cm.h under an emu_ibcm_
 *        prefix.
 *
 * One engine per device (emu_ibcm_attach()). It owns QP1: RoCEv2 packets
 * to destination QPN 1 reach emu_ibcm_rx() through the device's GSI hook
 * (emu/rx.c), MADs leave as UD SEND ONLY packets from source QPN 1 through
 * the device's normal tx path. Timers (MAD retransmission on the CM
 * response timeout, TIMEWAIT) run from emu_ibcm_poll(), called with the
 * device's port timers (emu_port_poll). Everything runs on the engine
 * thread: no locks.
 *
 * Ids live in a table allocated once per device (bounded: a REQ flood
 * cannot exhaust memory); local communication IDs are random, unique and
 * never reused before the id's TIMEWAIT has ended. What a peer can make
 * the engine hold is bounded in time and per source (ibcm.c's head).
 *
 * Event handlers: the engine calls id->handler(id, event). A non-zero
 * return asks the engine to destroy the id after the call (as the
 * kernel's ib_cm does). For REQ_RECEIVED and SIDR_REQ_RECEIVED the id
 * passed is a new id created for the connection, carrying the listener's
 * handler and context; the handler may change id->context. A handler may
 * call any emu_ibcm_send_* on the id it is given, and may destroy other
 * ids, but must not destroy the id it is called for (return non-zero).
 *
 * See docs/cm.md "The IB CM protocol engine".
 */
#ifndef EMU_CM_IBCM_H
#define EMU_CM_IBCM_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "xport.h" /* the layers below: core, net, transport */
#include "mad.h"

struct emu_ibcm;
struct emu_ibcm_id;
struct emu_ibcm_event;

/** Connection states (the kernel's enum ib_cm_state). */
enum emu_ibcm_state {
	EMU_IBCM_IDLE,
	EMU_IBCM_LISTEN,
	EMU_IBCM_REQ_SENT,
	EMU_IBCM_REQ_RCVD,
	EMU_IBCM_MRA_REQ_SENT,
	EMU_IBCM_MRA_REQ_RCVD,
	EMU_IBCM_REP_SENT,
	EMU_IBCM_REP_RCVD,
	EMU_IBCM_MRA_REP_SENT,
	EMU_IBCM_MRA_REP_RCVD,
	EMU_IBCM_ESTABLISHED,
	EMU_IBCM_DREQ_SENT,
	EMU_IBCM_DREQ_RCVD,
	EMU_IBCM_TIMEWAIT,
	EMU_IBCM_SIDR_REQ_SENT,
	EMU_IBCM_SIDR_REQ_RCVD,
	EMU_IBCM_STATE_NUM
};

/** Name of a state ("IDLE", "REQ_SENT", ...), for tracing. */
const char *emu_ibcm_state_name(enum emu_ibcm_state s);

/** Event types (the kernel's enum ib_cm_event_type, without LAP/APR). */
enum emu_ibcm_event_type {
	EMU_IBCM_REQ_ERROR,          /**< REQ not answered after max_cm_retries; on a
				      *   passive id: the request was not answered
				      *   within IBCM_HALF_OPEN_MS (REJ timeout sent) */
	EMU_IBCM_REQ_RECEIVED,
	EMU_IBCM_REP_ERROR,          /**< REP not answered (no RTU, REJ) */
	EMU_IBCM_REP_RECEIVED,
	EMU_IBCM_RTU_RECEIVED,
	EMU_IBCM_USER_ESTABLISHED,   /**< emu_ibcm_notify(): data arrived before the RTU */
	EMU_IBCM_DREQ_ERROR,         /**< DREQ not answered; the id is in TIMEWAIT */
	EMU_IBCM_DREQ_RECEIVED,
	EMU_IBCM_DREP_RECEIVED,
	EMU_IBCM_TIMEWAIT_EXIT,
	EMU_IBCM_MRA_RECEIVED,
	EMU_IBCM_REJ_RECEIVED,
	EMU_IBCM_SIDR_REQ_ERROR,     /**< SIDR_REQ not answered; on a passive id:
				      *   not answered within IBCM_HALF_OPEN_MS */
	EMU_IBCM_SIDR_REQ_RECEIVED,
	EMU_IBCM_SIDR_REP_RECEIVED,
	EMU_IBCM_EVENT_NUM
};

/** Name of an event type ("REQ_RECEIVED", ...). */
const char *emu_ibcm_event_name(enum emu_ibcm_event_type t);

/**
 * A path as RoCE needs it: the IP (GID) addresses and header fields of
 * the packets, no LIDs. On send, sgid must be in the device's GID table
 * (IPv4-mapped for IPv4; sgid and dgid of the same family). dmac is used
 * when dmac_valid, otherwise the device's neighbour table resolves dgid
 * (a MAD sent while the neighbour is unresolved is retried on its
 * retransmission timer). In events, the path is the one the REQ carries
 * (its primary path fields, from the sender's point of view reversed so
 * that sgid is always the local GID) with the MACs and IP header values
 * of the packet that brought it.
 */
struct emu_ibcm_path {
	union ibv_gid sgid;          /**< local GID */
	union ibv_gid dgid;          /**< remote GID */
	uint8_t  smac[6];            /**< local MAC (events; ignored on send) */
	uint8_t  dmac[6];            /**< remote MAC */
	bool     dmac_valid;
	uint8_t  traffic_class;      /**< IP TOS / traffic class */
	uint8_t  hop_limit;          /**< IP TTL / hop limit; 0 = 64 */
	uint32_t flow_label;         /**< IPv6 flow label (20 bits) */
	uint8_t  sl;
	enum ibv_mtu mtu;            /**< path MTU (IBV_MTU_256 .. IBV_MTU_4096) */
	uint8_t  port;               /**< port number, 1 */
	uint8_t  packet_life_time;   /**< IBA time exponent; rdma_cm on RoCE: 18 */
	uint8_t  rate;               /**< IBA static rate, 0 = port rate */
};

/** ECE (enhanced connection establishment, the kernel's struct
 *  rdma_ucm_ece): REQ, REP and SIDR_REP carry the 24-bit vendor ID in
 *  their vendor ID field and the options in the MAD header's attribute
 *  modifier (cm_format_mad_ece_hdr); zero = none. */
struct emu_ibcm_ece {
	uint32_t vendor_id;
	uint32_t attr_mod;
};

/** Event handler: see the file comment. Non-zero return destroys the id. */
typedef int (*emu_ibcm_handler)(struct emu_ibcm_id *id, const struct emu_ibcm_event *ev);

/** A CM id (the kernel's struct ib_cm_id). Fields are read-only to the
 *  consumer except context. */
struct emu_ibcm_id {
	emu_ibcm_handler handler;
	void *context;
	struct emu_ibcm *cm;         /**< the engine (device) it belongs to */
	uint64_t service_id;         /**< network order is not used: host order */
	uint64_t service_mask;
	enum emu_ibcm_state state;
	uint32_t local_id;           /**< local communication ID (host order) */
	uint32_t remote_id;          /**< remote communication ID */
	uint32_t remote_cm_qpn;      /**< always 1 */
};

/** Parameters of emu_ibcm_send_req() (the kernel's ib_cm_req_param). */
struct emu_ibcm_req_param {
	struct emu_ibcm_path primary_path;
	uint64_t service_id;
	uint32_t qp_num;
	enum ibv_qp_type qp_type;    /**< IBV_QPT_RC or IBV_QPT_UC */
	uint32_t starting_psn;
	const void *private_data;
	uint8_t  private_data_len;   /**< <= WIRE_CM_REQ_PDATA (92) */
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	uint8_t  remote_cm_response_timeout; /**< IBA time exponent (5 bits) */
	bool     flow_control;
	uint8_t  local_cm_response_timeout;  /**< IBA time exponent (5 bits) */
	uint8_t  retry_count;        /**< 3 bits */
	uint8_t  rnr_retry_count;    /**< 3 bits */
	uint8_t  max_cm_retries;     /**< 4 bits; rdma_cm uses 15 */
	bool     srq;
	struct emu_ibcm_ece ece;
};

/** Parameters of emu_ibcm_send_rep() (ib_cm_rep_param). */
struct emu_ibcm_rep_param {
	uint32_t qp_num;
	uint32_t starting_psn;
	const void *private_data;
	uint8_t  private_data_len;   /**< <= WIRE_CM_REP_PDATA (196) */
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	bool     failover_accepted;
	bool     flow_control;
	uint8_t  rnr_retry_count;
	bool     srq;
	struct emu_ibcm_ece ece;
};

/** Parameters of emu_ibcm_send_sidr_req() (ib_cm_sidr_req_param). */
struct emu_ibcm_sidr_req_param {
	struct emu_ibcm_path path;
	uint64_t service_id;
	uint32_t timeout_ms;         /**< per try */
	const void *private_data;
	uint8_t  private_data_len;   /**< <= WIRE_CM_SIDR_REQ_PDATA (216) */
	uint8_t  max_cm_retries;
};

/** Parameters of emu_ibcm_send_sidr_rep() (ib_cm_sidr_rep_param). */
struct emu_ibcm_sidr_rep_param {
	uint32_t qp_num;
	uint32_t qkey;
	enum wire_cm_sidr_status status;
	const void *info;
	uint8_t  info_length;        /**< <= 72 */
	const void *private_data;
	uint8_t  private_data_len;   /**< <= WIRE_CM_SIDR_REP_PDATA (136) */
	struct emu_ibcm_ece ece;
};

/** REQ_RECEIVED (ib_cm_req_event_param). */
struct emu_ibcm_req_event_param {
	struct emu_ibcm_id *listen_id;
	uint8_t  port;
	struct emu_ibcm_path primary_path;
	uint64_t service_id;
	uint64_t remote_ca_guid;     /**< host order */
	uint32_t remote_qkey;
	uint32_t remote_qpn;
	enum ibv_qp_type qp_type;
	uint32_t starting_psn;
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	uint8_t  local_cm_response_timeout;
	bool     flow_control;
	uint8_t  remote_cm_response_timeout;
	uint8_t  retry_count;
	uint8_t  rnr_retry_count;
	bool     srq;
	uint8_t  local_ack_timeout;  /**< the REQ's primary local ACK timeout */
	struct emu_ibcm_ece ece;
};

/** REP_RECEIVED (ib_cm_rep_event_param). */
struct emu_ibcm_rep_event_param {
	uint64_t remote_ca_guid;
	uint32_t remote_qkey;
	uint32_t remote_qpn;
	uint32_t starting_psn;
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	uint8_t  target_ack_delay;
	bool     failover_accepted;
	bool     flow_control;
	uint8_t  rnr_retry_count;
	bool     srq;
	struct emu_ibcm_ece ece;
};

/** REJ_RECEIVED (ib_cm_rej_event_param). */
struct emu_ibcm_rej_event_param {
	enum wire_cm_rej_reason reason;
	const uint8_t *ari;          /**< additional reject information */
	uint8_t  ari_length;
};

/** MRA_RECEIVED (ib_cm_mra_event_param). */
struct emu_ibcm_mra_event_param {
	uint8_t  service_timeout;
};

/** SIDR_REQ_RECEIVED (ib_cm_sidr_req_event_param). */
struct emu_ibcm_sidr_req_event_param {
	struct emu_ibcm_id *listen_id;
	uint64_t service_id;
	uint16_t pkey;
	uint8_t  port;
	struct emu_ibcm_path path;   /**< where the request came from */
};

/** SIDR_REP_RECEIVED (ib_cm_sidr_rep_event_param). */
struct emu_ibcm_sidr_rep_event_param {
	enum wire_cm_sidr_status status;
	uint32_t qkey;
	uint32_t qpn;
	const uint8_t *info;
	uint8_t  info_len;
};

/** An event (ib_cm_event). Pointers are valid during the handler call. */
struct emu_ibcm_event {
	enum emu_ibcm_event_type event;
	union {
		struct emu_ibcm_req_event_param req_rcvd;
		struct emu_ibcm_rep_event_param rep_rcvd;
		struct emu_ibcm_rej_event_param rej_rcvd;
		struct emu_ibcm_mra_event_param mra_rcvd;
		struct emu_ibcm_sidr_req_event_param sidr_req_rcvd;
		struct emu_ibcm_sidr_rep_event_param sidr_rep_rcvd;
		/** REQ/REP/DREQ/SIDR_REQ_ERROR: why (-ETIMEDOUT) */
		int send_status;
	} param;
	const uint8_t *private_data; /**< the message's whole private data field */
	uint8_t private_data_len;    /**< its size for the attribute (0: none) */
};

/** Counters of an engine (also in docs/cm.md). Drops by reason. */
enum emu_ibcm_drop {
	EMU_IBCM_DROP_MALFORMED,     /**< wire_gsi_pkt_decode() failed (see mad_reason[]) */
	EMU_IBCM_DROP_UNKNOWN_ID,    /**< REP/RTU/MRA/REJ/DREP/SIDR_REP for no id (no answer) */
	EMU_IBCM_DROP_BAD_STATE,     /**< message not valid in the id's state */
	EMU_IBCM_DROP_DUPLICATE,     /**< duplicate, answered or ignored */
	EMU_IBCM_DROP_BAD_SRC,       /**< source GID not the id's peer, or not to our GID */
	EMU_IBCM_DROP_UNSUPPORTED,   /**< LAP / APR (no alternate paths on RoCE) */
	EMU_IBCM_DROP_NOT_QP1,       /**< not from source QP 1: no CM sent it */
	EMU_IBCM_DROP_PATH_SRC,      /**< a REQ whose path GIDs are not the packet's addresses */
	EMU_IBCM_DROP_OWN_GUID,      /**< our CA GUID from an address that is not ours */
	EMU_IBCM_DROP_RATE,          /**< REQ / SIDR_REQ over its source's rate (unanswered) */
	EMU_IBCM_DROP_NUM
};

/** Counter slots: attribute IDs 0x10..0x1f (REQ .. APR) by ID - 0x10, and
 *  REJ reasons 0..35 (IBTA vol. 1 table 112; larger ones count in 0). */
#define EMU_IBCM_ATTR_SLOTS 16
#define EMU_IBCM_REJ_REASONS 36

struct emu_ibcm_counters {
	uint64_t rx_mads, tx_mads;
	uint64_t retransmits;        /**< MADs resent on their timeout */
	uint64_t timeouts;           /**< sends that ran out of retries */
	uint64_t dup_answered;       /**< duplicates answered (REP/RTU/MRA/DREP/REJ resent) */
	uint64_t rej_no_listener;    /**< REJ invalid service ID sent */
	uint64_t rej_no_resources;   /**< REQ/SIDR_REQ refused: id table or backlog full */
	uint64_t rej_src_busy;       /**< ... refused: its source holds its budget of slots */
	uint64_t rej_src_table;      /**< ... refused: no room to track one more source */
	uint64_t half_open_reclaimed; /**< passive connections not up within IBCM_HALF_OPEN_MS */
	uint64_t rej_stale;          /**< REJ stale connection sent */
	uint64_t drep_unknown;       /**< DREP sent for a DREQ to no id */
	uint64_t tx_fail;            /**< MAD not sent (no buffer, no neighbour, build) */
	uint64_t loss_rx, loss_tx;   /**< MADs the configured loss dropped (cfg.loss) */
	uint64_t drops[EMU_IBCM_DROP_NUM];
	uint64_t mad_reason[WIRE_MAD_R_NUM]; /**< malformed MADs by decode reason */
	uint64_t rx_attr[EMU_IBCM_ATTR_SLOTS]; /**< well-formed MADs received, by attribute */
	uint64_t tx_attr[EMU_IBCM_ATTR_SLOTS]; /**< MADs sent (resends too), by attribute */
	uint64_t rej_rx[EMU_IBCM_REJ_REASONS]; /**< REJs received, by reason */
	uint64_t rej_tx[EMU_IBCM_REJ_REASONS]; /**< REJs sent, by reason */
};

struct uroce_cm_stats_rep;
/** The engine's counters of @p d as named values (UROCE_OP_QUERY_CM_STATS,
 *  uroce-stat; ibcm_stats.c): 0, or -ENODEV when no engine is attached. */
int emu_ibcm_stats_fill(struct emu_dev *d, struct uroce_cm_stats_rep *r);

/** Name of a drop reason ("malformed", "unknown-id", ...). */
const char *emu_ibcm_drop_name(enum emu_ibcm_drop r);

/** Engine configuration (emu_ibcm_attach(); NULL = defaults). */
struct emu_ibcm_cfg {
	uint32_t max_ids;            /**< id table size; 0 = 4096 (the most) */
	uint32_t default_backlog;    /**< listener backlog when listen() gives 0; 0 = 128 */
	uint64_t seed;               /**< comm ID randomness; 0 = getrandom() */
	/** fault injection: this fraction (0..1) of the MADs received and of
	 *  those sent is lost (counted loss_rx / loss_tx), so that both sides'
	 *  retransmissions and duplicate handling run; a lost send is left to
	 *  its retransmission timer as a MAD lost on the wire would be */
	double loss;
	uint64_t loss_seed;          /**< the loss's PRNG seed (reproducible runs) */
	/** trace of every state change (tests); NULL = none */
	void (*trace)(struct emu_ibcm_id *id, enum emu_ibcm_state from,
		      enum emu_ibcm_state to, const char *why);
};

/* ---- engine ---- */

/** Create the engine of @p d and hook it to the device's QP1 (d->gsi).
 *  @return 0, -EBUSY (already attached) or -ENOMEM. */
int emu_ibcm_attach(struct emu_dev *d, const struct emu_ibcm_cfg *cfg);

/** Destroy every id as emu_ibcm_destroy_id() does, so peers get DREQ /
 *  REJ / DREP (no events are delivered), flush the port, free the engine
 *  and unhook QP1. Every emu_ibcm_id pointer is invalid afterwards. No-op
 *  if none is attached. */
void emu_ibcm_detach(struct emu_dev *d);

/** The engine of @p d, or NULL. */
struct emu_ibcm *emu_ibcm_get(struct emu_dev *d);

/** The device of an engine. */
struct emu_dev *emu_ibcm_dev(struct emu_ibcm *cm);

/** Counters of the engine. */
const struct emu_ibcm_counters *emu_ibcm_counters(struct emu_ibcm *cm);

/** Log the engine's counters (the daemon's SIGUSR1 dump); nothing if
 *  no engine or nothing counted. */
void emu_ibcm_dump(struct emu_dev *d);

/** Ids in use, including those waiting out TIMEWAIT after destroy. */
uint32_t emu_ibcm_ids_in_use(struct emu_ibcm *cm);
/** The size of the id table (uroce-ctl limits). */
uint32_t emu_ibcm_ids_max(struct emu_ibcm *cm);
/** Services listened on (one per port space and port, however many
 *  rdma_cm ids share it): a REQ to any other is rejected with reason 8.
 *  Scans the table: for the control path only. */
uint32_t emu_ibcm_listeners(struct emu_ibcm *cm);

/** A packet to QPN 1 (wire_pkt_is_gsi()). Malformed MADs are counted. */
void emu_ibcm_rx(struct emu_dev *d, const struct wire_pkt *pkt);

/** Retransmissions and TIMEWAIT expiry due at @p now_ns. */
void emu_ibcm_poll(struct emu_dev *d, uint64_t now_ns);

/** Earliest timer of the engine (UINT64_MAX: none). */
uint64_t emu_ibcm_next_deadline(struct emu_dev *d);

/* ---- ids (ib_create_cm_id ...) ---- */

/** A new id in IDLE. NULL + errno ENOMEM when the id table is full. */
struct emu_ibcm_id *emu_ibcm_create_id(struct emu_ibcm *cm, emu_ibcm_handler handler,
				       void *context);

/**
 * Destroy an id as the kernel's ib_destroy_cm_id does: a pending REQ is
 * rejected (REJ timeout), a received one rejected (consumer defined), an
 * established connection sends DREQ, a received DREQ is answered with
 * DREP; the id's comm ID then waits out TIMEWAIT invisibly (answering a
 * late DREQ with DREP) before it can be reused. No event is delivered
 * after this call.
 */
void emu_ibcm_destroy_id(struct emu_ibcm_id *id);

/** Listen on @p service_id under @p service_mask (0 = exact match) with
 *  @p backlog (0 = default) connections not yet established.
 *  @return 0, -EINVAL (id not IDLE), -EBUSY (an overlapping listener). */
int emu_ibcm_listen(struct emu_ibcm_id *id, uint64_t service_id, uint64_t service_mask,
		    uint32_t backlog);

/* ---- messages (ib_send_cm_*) ----
 * Each returns 0, -EINVAL if the id's state does not allow the message
 * (nothing sent, state unchanged) or a parameter is out of range
 * (private data too long), or -ENOBUFS if the MAD could not be built. A
 * MAD that could not be transmitted right now but has a retransmission
 * timer is not an error: the timer resends it. */

int emu_ibcm_send_req(struct emu_ibcm_id *id, const struct emu_ibcm_req_param *p);
int emu_ibcm_send_rep(struct emu_ibcm_id *id, const struct emu_ibcm_rep_param *p);
int emu_ibcm_send_rtu(struct emu_ibcm_id *id, const void *pdata, uint8_t len);
int emu_ibcm_send_dreq(struct emu_ibcm_id *id, const void *pdata, uint8_t len);
int emu_ibcm_send_drep(struct emu_ibcm_id *id, const void *pdata, uint8_t len);
int emu_ibcm_send_rej(struct emu_ibcm_id *id, enum wire_cm_rej_reason reason,
		      const void *ari, uint8_t ari_len, const void *pdata, uint8_t len);
/** MRA for the REQ (REQ_RCVD) or the REP (REP_RCVD) being processed,
 *  announcing @p service_timeout (IBA time exponent). */
int emu_ibcm_send_mra(struct emu_ibcm_id *id, uint8_t service_timeout, const void *pdata,
		      uint8_t len);
int emu_ibcm_send_sidr_req(struct emu_ibcm_id *id, const struct emu_ibcm_sidr_req_param *p);
int emu_ibcm_send_sidr_rep(struct emu_ibcm_id *id, const struct emu_ibcm_sidr_rep_param *p);

/** ib_cm_notify(): IBV_EVENT_COMM_EST on the QP moves REP_SENT /
 *  MRA_REP_RCVD to ESTABLISHED (a lost RTU) and delivers USER_ESTABLISHED.
 *  Unlike the kernel (which queues it), the handler runs before this call
 *  returns: a caller must not use the id afterwards if its handler may
 *  return non-zero for that event. 0 also when already ESTABLISHED. */
int emu_ibcm_notify(struct emu_ibcm_id *id, enum ibv_event_type ev);

/** The path the id's MADs use (for rdma_cm's INIT_QP_ATTR). -EINVAL in
 *  IDLE / LISTEN. */
int emu_ibcm_get_path(const struct emu_ibcm_id *id, struct emu_ibcm_path *out);

/* ---- timing helpers (the kernel's cm_convert_to_ms) ---- */

/** Milliseconds of an IBA time exponent (4.096 us * 2^t), as the kernel
 *  rounds it: 1 << max(t - 8, 0). */
static inline uint32_t emu_ibcm_time_ms(uint8_t iba_time)
{
	return 1u << (iba_time > 8 ? (iba_time > 31 ? 23 : iba_time - 8) : 0);
}

#endif /* EMU_CM_IBCM_H */
