/* SPDX-License-Identifier: MIT */
/* The transport's per-QP and per-device state, as types: the transport's
 * own. The core allocates a QP's (d->xops->qp_size bytes right after the
 * QP: qp->x, one allocation, as rxe_verbs.h keeps rxe_qp's requester,
 * responder and completer state in the QP) and points to the device's
 * (d->x, made by emu_dev_init); it never looks inside (tests/arch). */
#ifndef EMU_XPORT_STATE_H
#define EMU_XPORT_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "emu_obj.h"

struct emu_ctx;
struct emu_recv_wqe;

/* Limits of the transport; the core reports them in ibv_device_attr. */
#define EMU_XPORT_MAX_RD_ATOMIC EMU_MAX_RD_ATOMIC /* max_qp_rd_atom (memory only when used: resources are sized at RTR) */
#define EMU_XPORT_ACK_EVERY     16   /* requester asks for an ACK at least this often */
#define EMU_XPORT_ACK_DELAY_NS  20000 /* responder ACK coalescing bound */
/* An ACK/NAK that found no TX buffer goes again ACK_DELAY later, this
 * often at most (resp.c, resp_ack_nobuf) */
#define EMU_XPORT_ACK_RETRIES   64
/* Longest a responder holds the ACK of a message that ended for its own
 * QP's next request (the reply of a ping-pong) to leave in one burst with
 * it (resp.c, resp_ack_hold), when enabled (emu_xport_ack_hold_set,
 * --ack-hold-us): off by default, docs/performance.md "One burst per hop"
 * says why. */
#define EMU_XPORT_ACK_HOLD_NS   60000
#define EMU_XPORT_MAX_MSG       (1u << 31) /* max_msg_sz: longer -> LOC_LEN_ERR */
/* Fewest ns between two CNPs one QP sends by default (ConnectX's default
 * min_time_between_cnps is 4 us; per device: emu_dcqcn_cfg). */
#define EMU_XPORT_CNP_INTERVAL_NS 4000

/* Responder states (rxe_resp.c style); names in emu_resp_state_name[]. */
enum emu_resp_state {
	EMU_RESP_NONE,             /* no state: "go on" inside a state function */
	EMU_RESP_GET_REQ,
	EMU_RESP_CHK_PSN,
	EMU_RESP_CHK_OP_SEQ,
	EMU_RESP_CHK_OP_VALID,
	EMU_RESP_CHK_RESOURCE,
	EMU_RESP_CHK_LENGTH,
	EMU_RESP_CHK_RKEY,
	EMU_RESP_EXECUTE,
	EMU_RESP_READ_REPLY,
	EMU_RESP_ATOMIC_REPLY,
	EMU_RESP_COMPLETE,
	EMU_RESP_ACKNOWLEDGE,
	EMU_RESP_CLEANUP,
	EMU_RESP_DUPLICATE_REQUEST,
	EMU_RESP_ERR_MALFORMED,
	EMU_RESP_ERR_PSN_OUT_OF_SEQ,
	EMU_RESP_ERR_MISSING_OPCODE_FIRST,
	EMU_RESP_ERR_MISSING_OPCODE_LAST_C,
	EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ,
	EMU_RESP_ERR_RNR,
	EMU_RESP_ERR_RKEY_VIOLATION,
	EMU_RESP_ERR_INVALIDATE_RKEY,
	EMU_RESP_ERR_LENGTH,
	EMU_RESP_ERR_REM_OP,       /* remote operational error class */
	EMU_RESP_ERR_REM_ACCESS,   /* remote access error class */
	EMU_RESP_DONE,
	EMU_RESP_EXIT,
	EMU_RESP_NSTATES
};

/* Completer states (rxe_comp.c style); names in emu_comp_state_name[]. */
enum emu_comp_state {
	EMU_COMP_GET_ACK,
	EMU_COMP_GET_WQE,
	EMU_COMP_COMP_WQE,
	EMU_COMP_CHECK_PSN,
	EMU_COMP_CHECK_ACK,
	EMU_COMP_READ,
	EMU_COMP_ATOMIC,
	EMU_COMP_WRITE_SEND,
	EMU_COMP_UPDATE_COMP,
	EMU_COMP_ERROR_RETRY,
	EMU_COMP_RNR_RETRY,
	EMU_COMP_ERROR,
	EMU_COMP_EXIT,
	EMU_COMP_DONE,
	EMU_COMP_NSTATES
};

/* Daemon-private copy of one posted send WQE plus its transport progress.
 * The slot copy (header + SGEs or inline data) lives in emu_xport_qp.sq_copy. */
struct emu_xport_swqe {
	uint32_t total_len;   /* validated sum of SGE lengths / inline_len */
	uint32_t first_psn;
	uint32_t last_psn;    /* PSN of the last request packet */
	uint32_t npkts;       /* request packets (1 for READ/atomic) */
	uint32_t resp_bytes;  /* READ: bytes placed so far */
	uint32_t resp_psn;    /* READ: next response PSN expected */
	uint8_t state;        /* enum emu_swqe_state (xport_int.h) */
	uint8_t status;       /* enum ibv_wc_status once decided */
	uint8_t signaled;
	uint8_t need_resp;    /* READ / atomic: completes on response, not ACK */
	uint8_t rd_res;       /* holds a responder resource (READ, atomics, IBTA 1.5
			       * ATOMIC WRITE and FLUSH): counted in max_rd_atomic */
	uint8_t rd_resent;    /* READ request sent more than once: its responses may
			       * start again, or go on, where it asked (comp_read_pos_ok) */
	uint64_t mr_epoch;    /* dev->mr_epoch when its local keys were checked */
};

/* What a responder resource (IBTA: one per READ, atomic, ATOMIC WRITE or
 * FLUSH, up to max_dest_rd_atomic) answers a duplicate with. */
enum emu_xport_res_kind {
	EMU_RES_READ,         /* READ responses from the range again */
	EMU_RES_ATOMIC,       /* the atomic ACK with the original value */
	EMU_RES_ZERO,         /* ATOMIC WRITE, FLUSH: READ Response Only, no payload */
};

/* Its responses are sent as the port has room for them (resp.c,
 * docs/transport.md "READ responses paced by transmit room"): pend says
 * some are still to go, from packet sent of the response message that
 * starts at rpsn (the original request, or a duplicate asking again from
 * the middle: its VA and length follow from rpsn). 48 bytes: 16 of them
 * per QP within its 2 KB (xport_qp_memory). */
struct emu_xport_res {
	uint8_t valid;
	uint8_t kind;         /* enum emu_xport_res_kind */
	uint8_t pend;         /* responses still to send (counted in rd_pend) */
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t rkey;
	uint32_t len;
	uint32_t rpsn;        /* first PSN of the response message being sent */
	uint32_t sent;        /* ... and its packets sent */
	uint32_t msn;         /* MSN of the request's message (the responses' AETH) */
	uint64_t va;          /* remote VA as requested */
	union {
		uint64_t orig;  /* atomic: value returned the first time */
		uint64_t epoch; /* READ: dev->mr_epoch when its key was checked */
	};
};

/* Resolved L2/L3 path of a connected QP (from attr.ah_attr at RTR). */
struct emu_xport_path {
	uint8_t dmac[6];
	uint8_t ipv6;
	uint8_t tclass;
	uint8_t hop_limit;
	uint8_t valid;
	uint16_t sport;       /* UDP source port, constant per QP */
	uint32_t flow_label;
	union ibv_gid sgid;
	union ibv_gid dgid;
};

/* Why the transport dropped a received packet: counted per QP
 * (emu_xport_counters.drops) and per device (emu_xport_dev.xdrops);
 * names in emu_xport_drop_name[], shown by uroce-stat. */
enum emu_xport_drop {
	EMU_XDROP_QP_STATE,     /* QP not in a state that takes the packet */
	EMU_XDROP_OPCODE,       /* opcode invalid or of another transport */
	EMU_XDROP_SRC,          /* RC/UC source is not the connected peer */
	EMU_XDROP_UD_INVALID,   /* UD: not a SEND, no DETH, or wrong Q_Key */
	EMU_XDROP_UD_NO_RECV,   /* UD: no receive posted */
	EMU_XDROP_UC_GAP,       /* UC: after a lost or failed packet, until FIRST/ONLY */
	EMU_XDROP_UC_INV_REQ,   /* UC: malformed or out-of-order request */
	EMU_XDROP_UC_NO_RECV,   /* UC: no receive posted (no RNR on UC) */
	EMU_XDROP_UC_RKEY,      /* UC: WRITE rkey violation */
	EMU_XDROP_ACK_PSN,      /* response for a PSN never sent */
	EMU_XDROP_ACK_SYNDROME, /* response with a reserved AETH syndrome: the head WQE fails */
	EMU_XDROP_BAD_RESP,     /* response that does not fit the outstanding request (opcode,
				 * length, AETH type): the head WQE fails IBV_WC_BAD_RESP_ERR */
	EMU_XDROP_RD_OVER,      /* READ/atomic while every responder resource still sends
				 * (a requester over max_dest_rd_atomic): it asks again */
	EMU_XDROP_NUM
};

struct emu_xport_counters {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retransmits;      /* packets sent again (timeout or NAK) */
	uint64_t timeouts;         /* retransmit timer expiries */
	uint64_t probes;           /* loss probes: no ACK within a few round trips */
	uint64_t dup_requests;     /* responder: duplicate request packets */
	uint64_t out_of_seq;       /* responder: packets past the expected PSN */
	uint64_t resp_ignored;     /* requester: responses past a gap while the
				    * re-issue for it is under way (comp.c) */
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t retry_exceeded, rnr_retry_exceeded;
	uint64_t naks_sent, naks_rcvd; /* non-sequence NAKs */
	uint64_t rx_dropped;       /* sum of drops[] */
	uint64_t tx_no_buf;        /* transmit buffer allocation failed */
	uint64_t tx_stalls;        /* requester paused: the port's TX backlog was full */
	uint64_t ce_rcvd;          /* packets that arrived ECN CE-marked */
	uint64_t cnp_sent;         /* CNPs sent for them (rate-limited) */
	uint64_t cnp_rcvd;         /* CNPs received (the reaction point's input) */
	uint64_t acks_held;        /* ACKs held for the QP's own next request */
	uint64_t acks_held_late;   /* ... of which left alone at the bound */
	/* received packets dropped, by reason: 32 bits to keep emu_qp within
	 * its memory budget (xport_qp_memory); rx_dropped is the 64-bit sum */
	uint32_t drops[EMU_XDROP_NUM];
};

/* DCQCN of a device (docs/dcqcn.md): what it marks and answers, and the
 * reaction point's parameters, with mlx5's names, units and defaults
 * (emu_dcqcn_defaults). Rates in Mb/s, times in us, alpha and g in
 * 1/1024. */
struct emu_dcqcn_cfg {
	uint8_t ect;                     /* data packets leave ECT(0) */
	uint8_t np;                      /* notification point: CNP on CE */
	uint8_t rp;                      /* reaction point: rate control on CNP */
	uint8_t clamp_tgt_rate;          /* every cut sets the target to the rate */
	uint8_t clamp_tgt_rate_after_time_inc; /* ... after a timer increase */
	uint32_t min_time_between_cnps;  /* np: us between two CNPs of a QP */
	uint32_t cnp_dscp;               /* np: DSCP of CNPs */
	uint32_t rpg_max_rate;           /* line rate (0 = the port's) */
	uint32_t rpg_time_reset;         /* us between timer increases */
	uint32_t rpg_byte_reset;         /* 64-byte units between byte increases */
	uint32_t rpg_threshold;          /* increase events before additive */
	uint32_t rpg_ai_rate;            /* additive increase step */
	uint32_t rpg_hai_rate;           /* hyper increase step */
	uint32_t rpg_min_rate;
	uint32_t rpg_min_dec_fac;        /* %: a cut keeps at least this much */
	uint32_t rpg_gd;                 /* cut = rate * alpha / 2^rpg_gd */
	uint32_t rate_reduce_monitor_period; /* us: at most one cut per period */
	uint32_t rate_to_set_on_first_cnp;   /* 0: the first CNP cuts as any */
	uint32_t initial_alpha_value;
	uint32_t dce_tcp_g;              /* alpha <- alpha * g (+ 1 - g on CNP) */
	uint32_t dce_tcp_rtt;            /* us: alpha update period */
};

/* Reaction point of one QP (transport/dcqcn.c): none (never paced) until
 * a CNP arrives, then its requester is paced to rc; back at the line rate
 * it stays paced there (recovered) and the next CNP starts afresh. Times
 * in the daemon's clock (ns), rates in kb/s. */
struct emu_dcqcn_rp {
	uint8_t active;            /* the requester is paced */
	uint8_t recovered;         /* ... at the line rate, no timer running */
	uint8_t cnp_alpha;         /* a CNP arrived in the current alpha period */
	uint8_t cut_pending;       /* a CNP waits for the monitor period to end */
	uint8_t pace_wait;         /* requester stopped by the pacer until pace_next */
	uint8_t rsvd[3];
	/* 1/2^20: mlx5's 10-bit alpha with 10 more bits, or truncation in
	 * alpha * g / 1024 every 1 us eats what a CNP every few us adds and
	 * alpha never rises above a few 1/1024 */
	uint32_t alpha;
	uint32_t t_stage, b_stage; /* increase events by timer / by bytes since the last cut */
	uint32_t pace_ps;          /* picoseconds after pace_next */
	uint64_t rc, rt;           /* current and target rate */
	uint64_t bytes;            /* sent since the last byte-counter event */
	uint64_t alpha_at;         /* end of the alpha period (UINT64_MAX: alpha is 0) */
	uint64_t inc_at;           /* next timer increase */
	uint64_t cut_at;           /* no cut before (last cut + monitor period) */
	uint64_t pace_next;        /* the next packet leaves no earlier */
	uint64_t cuts;             /* rate cuts (counter) */
	uint64_t paced;            /* requester waits for the pacer (counter) */
};

struct emu_xport_qp {
	/* requester */
	uint8_t *sq_copy;          /* sq_entries * sq_stride private slot copies */
	struct emu_xport_swqe *swqe;
	uint32_t sq_entries, sq_stride;
	uint32_t sq_fetch;         /* next ring index to copy */
	uint32_t sq_req;           /* WQE being transmitted */
	uint32_t sq_req_pkt;       /* packets of sq_req already sent */
	uint32_t sq_comp;          /* oldest WQE not completed (ring cons) */
	uint32_t sq_psn;           /* next PSN to assign / transmit */
	uint32_t sq_psn_max;       /* next PSN to assign to a new WQE */
	uint32_t sq_psn_hw;        /* past the highest PSN ever sent: below is a retransmission */
	uint32_t acked_psn;        /* everything before this PSN is acknowledged */
	uint32_t rnr_psn;          /* resume point after an RNR wait */
	uint32_t rewind_psn;       /* last go-back-N point, until progress */
	uint8_t rewound;           /* XP_REWOUND_*: how rewind_psn was reached */
	uint8_t gbn_bound;         /* XP_GBN_*: resend only PSNs before gbn_end */
	uint16_t gbn_win;          /* timeout: acked_psn + gbn_win = gbn_end */
	uint32_t gbn_end;
	uint32_t gbn_stop;         /* sq_psn_hw when it began: what it resends ends there */
	uint16_t rd_atomic_out;    /* READ/atomic outstanding (<= EMU_XPORT_MAX_RD_ATOMIC) */
	uint16_t pkts_since_ackreq; /* < EMU_XPORT_ACK_EVERY */
	uint8_t retry_left;
	uint8_t rnr_left;
	uint8_t req_stalled;       /* requester waits (fence, rd_atomic, RNR) */
	uint8_t sq_drain_evt;      /* SQD: event pending when drained */
	uint16_t cwnd;             /* send window, packets past acked_psn (0: initial) */
	uint16_t ssthresh;         /* slow start below it (0: the whole window) */
	uint32_t infl;             /* packets past acked_psn counted in the device's infl */
	uint32_t recover_psn;      /* a loss cut the window: no other cut before this is acked */
	uint8_t in_recovery;       /* ... until then */
	uint8_t probe_shift;       /* loss probes since the last progress (backoff) */
	uint32_t srtt_ns, rttvar_ns; /* round trip to the responder (RFC 6298), 0: none yet */
	uint32_t min_rtt_ns;       /* ... the shortest seen: nothing queued */
	uint32_t max_rtt_ns;       /* ... the longest recent one, decaying (timer.c) */
	uint32_t rtt_psn;          /* the packet being timed ... */
	uint8_t rewind_resent;     /* the packet rewind_psn names went again since */
	uint8_t rd_hold;           /* a READ re-issued for a gap: responses past it wait */
	uint8_t rd_hold_run;       /* ... responses taken in sequence since */
	uint32_t rd_hold_hi;       /* ... the highest response PSN seen since */
	uint64_t rd_hold_at;       /* ... when it was sent (emu_now_ns) */
	uint8_t rd_single;         /* the re-issue resends the head READ only ... */
	uint8_t rd_jump;           /* ... it went: the cursor goes back to rd_ret */
	uint8_t rd_seen_ok;        /* rd_seen_hi is set */
	uint32_t rd_ret;           /* where the cursor stood before the re-issue */
	uint32_t rd_seen_hi;       /* the highest READ response PSN seen */
	uint64_t rtt_at;           /* ... sent then (0: none) */
	uint64_t retrans_at;       /* 0 = disarmed */
	uint64_t probe_at;         /* loss probe (0 = disarmed) */
	uint64_t probe_nobuf;      /* cnt.tx_no_buf when the probe was armed */
	uint64_t rnr_at;

	/* completer */
	uint8_t req_sched;         /* completer -> requester: run it next (xp_run) */
	uint8_t comp_sched;        /* requester -> completer: WQEs decided locally */
	uint8_t comp_settling;     /* comp_wqe writes the head READ's data out */
	uint8_t fault_held;        /* meanwhile a deferred write failed: ERR after it */

	/* responder */
	uint8_t resp_state;
	uint8_t resp_opseq;        /* class of message in progress (0 none) */
	uint8_t nak_sent;          /* one PSN-sequence NAK per gap */
	uint8_t ack_pending;
	uint8_t ack_syndrome;
	uint8_t ack_pp;            /* ping-pong seen: ACKs wait for the reply (resp_ack_hold) */
	uint8_t rx_msg_end;        /* a message ended here since our last post */
	uint8_t ack_retry;         /* the pending ACK/NAK found no TX buffer this often (resp_ack_nobuf) */
	uint8_t comm_est_sent;
	uint8_t uc_drop;           /* UC: discard until next FIRST/ONLY */
	uint8_t wr_unsettled;      /* deferred writes since the last response or receive completion */
	uint8_t wr_failed;         /* one of them failed: no more ACKs */
	uint8_t on_act;           /* on the device's active list (act_next/prev) */
	uint8_t rd_pend;           /* responder resources with responses to send */
	/* a class B/C/D error found while READ/atomic responses of earlier
	 * requests still wait for room: its NAK and the QP's ERR wait behind
	 * them (resp_fatal); meanwhile requests are dropped */
	uint8_t fatal_held;
	uint8_t fatal_nak;         /* its NAK code */
	uint8_t fatal_wc;          /* the receive WQE's status (0: none) */
	int fatal_ev;              /* its async event */
	uint32_t fatal_psn;        /* the PSN its NAK names */
	uint32_t ack_psn;          /* PSN to acknowledge */
	uint64_t ack_hold_at;      /* the pending ACK is held until then (0: not held; ack_retry: a TX retry) */
	uint32_t oos_hi;           /* the last out-of-sequence PSN since nak_sent */
	uint32_t epsn;             /* expected PSN */
	uint32_t msn;
	uint32_t rwqe_valid;
	uint32_t rcv_off;          /* bytes placed in the current message */
	struct emu_recv_wqe *rwqe; /* receive WQE of the message in progress */
	uint32_t rwqe_len;         /* its validated total length */
	uint32_t wr_len;           /* WRITE: RETH DMA length of the message */
	struct emu_ctx *wr_owner;  /* WRITE: whose memory the rkey maps */
	uint64_t wr_va;            /* WRITE: next address (the rkey's iova space) */
	uint32_t wr_rkey;
	uint32_t wr_left;          /* WRITE: bytes still allowed by RETH DMA length */
	uint64_t wr_epoch;         /* WRITE: dev->mr_epoch at its first packet */
	uint64_t rwqe_epoch;       /* dev->mr_epoch when rwqe's keys were checked */
	struct emu_xport_res *res; /* res_n entries (max_dest_rd_atomic, at least 1) */
	uint32_t res_n, res_next;
	uint64_t cnp_last;         /* when the last CNP left (rate limit) */
	/* DCQCN reaction point, allocated at the QP's first CNP: most QPs
	 * never see one, and 16k QPs must fit ~2 KB each */
	struct emu_dcqcn_rp *rp;

	struct emu_xport_path path;
	struct emu_xport_counters cnt;

	/* device-wide list of QPs with armed timers or pending ACKs */
	struct emu_xport_qp *act_next, *act_prev;
};

/* A destroyed RC QP's responder, remembered for a while (TCP's TIME_WAIT):
 * an application that exits right after its last completion leaves a peer
 * whose final ACK may have been lost; a duplicate request for the dead QPN
 * is still acknowledged, so the peer completes instead of exhausting its
 * retries against a QP that no longer exists. */
#define EMU_XPORT_TOMB_MAX 64
#define EMU_XPORT_TOMB_NS  2000000000ull
struct emu_xport_tomb {
	uint32_t qpn;              /* 0 = free */
	uint32_t dest_qpn;
	uint32_t epsn;             /* everything before was received */
	uint32_t msn;
	uint64_t expires_ns;
	struct emu_xport_path path;
};

/* The transport's state of a device (d->x, emu_dev_init). */
struct emu_xport_dev {
	struct emu_xport_qp *act;  /* head of the active-QP list (timer.c) */
	struct emu_xport_tomb tomb[EMU_XPORT_TOMB_MAX];
	uint32_t tomb_next;
	struct emu_dcqcn_cfg dcqcn; /* congestion control (emu_dev_init: defaults) */
	struct {                    /* ... what it did, for every QP ever */
		uint64_t ce_rcvd, cnp_sent, cnp_rcvd, rate_cuts;
	} dcqcn_cnt;
	uint64_t xdrops[EMU_XDROP_NUM]; /* received packets dropped, by reason */
	uint32_t resp_npend;        /* QPs with rd_pend: they share the TX room */
	uint32_t infl;              /* packets in flight of all RC requesters (xp_infl_sync) */
	uint8_t rx_expect;          /* the last packet says more will follow (xport.c) */
	uint32_t ack_hold_ns;       /* EMU_XPORT_ACK_HOLD_NS or --ack-hold-us (0: never) */
	uint64_t hold_until;        /* end of the latest hold begun, 0 once it left (emu_xport_rx_expected) */
	uint32_t self_ack_turns;    /* consecutive polls that sent ACKs to our own QPs (xport.c) */
	/* the counters of QPs destroyed or reset, so that the device's totals
	 * (UROCE_OP_QUERY_DROPS) cover every QP it ever had: a benchmark's
	 * QPs are gone by the time anyone asks (xp_cnt_retire) */
	struct emu_xport_counters gone;
};

#endif /* EMU_XPORT_STATE_H */
