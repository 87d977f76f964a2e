/* SPDX-License-Identifier: MIT */
/* Transport (RC/UC/UD requester, responder, completer): the public header
 * of emu/transport/ for the layers above it (the daemon, cm). Includes the
 * net layer's header (net.h) and the core's headers the transport builds
 * on. The transport's state of a QP and of a device is its own
 * (xport_state.h): the core allocates and points to it (qp->x, d->x) and
 * reaches the transport only through the struct emu_xport_ops that
 * emu_dev_init installs (d->xops). Single-threaded per device (one engine
 * thread owns a device and all its QPs), so nothing here is locked. */
#ifndef EMU_XPORT_H
#define EMU_XPORT_H

#include "net.h"
#include "emu_burst.h"
#include "emu_cq.h"
#include "emu_keys.h"
#include "emu_ring.h"
#include "xport_state.h"

extern const char *const emu_resp_state_name[EMU_RESP_NSTATES];
extern const char *const emu_comp_state_name[EMU_COMP_NSTATES];
extern const char *const emu_xport_drop_name[EMU_XDROP_NUM];
/* rx.c: the port's drop reasons (enum emu_drop) by name */
extern const char *const emu_drop_name[EMU_DROP_NUM];

/* A device, whole: the core's tables (emu_dev_core_init) with the
 * transport's operations installed (d->xops). gids/ngid: GID table
 * (RoCE v2); NULL/0 = fe80:: from mac only. 0 or -EINVAL/-ENOMEM. */
int emu_dev_init(struct emu_dev *d, const char *name, const uint8_t mac[6],
		 uint32_t eth_mtu, const union ibv_gid *gids, uint32_t ngid);
/* Destroys every context, frees the tables and the fault injector. */
void emu_dev_fini(struct emu_dev *d);

/* Entry of every received frame (after fault injection, if any):
 * ARP/ND/ICMP, RoCE parse with drop counting, QP lookup (multicast fan-out),
 * emu_xport_rx(). */
void emu_port_rx_frame(struct emu_dev *d, const uint8_t *frame, uint32_t len);
/* Same, without fault injection (what the fault layer delivers to). */
void emu_port_rx_deliver(struct emu_dev *d, const uint8_t *frame, uint32_t len);
/* A frame in the three pieces zero-copy TX sends (headers, payload, pad +
 * ICRC), received on the internal ring: parsed from its headers and
 * delivered with the payload where it is (the responder places it with
 * one copy, straight from the sender's mapping). false, with nothing
 * counted, when it is not that layout or when a capture, fault injection
 * or ICRC check needs the frame in one piece: the caller linearises it. */
bool emu_port_rx_split(struct emu_dev *d, const uint8_t *hdr, uint32_t hl, const uint8_t *pay,
		       uint32_t plen, const uint8_t *tail, uint32_t tl);

/* Fault injection changed at run time (uroce-ctl): a new configuration
 * (0 or -ENOMEM), or off, the frames it held delivered first. */
int emu_dev_fault_set(struct emu_dev *d, const struct emu_fault_cfg *cfg);
void emu_dev_fault_clear(struct emu_dev *d);

/* rx.c: the port's timers (neighbour retries, QP1's CM engine, frames
 * fault injection held back, which re-enter the receive path). */
void emu_port_poll(struct emu_dev *d, uint64_t now_ns);
uint64_t emu_port_next_deadline(struct emu_dev *d);

/* stats.c: counters of d and of its QPs from first_qpn on (one page). */
/* viewer: only its uid's QPs unless see_all (NULL: every QP) */
void emu_stats_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		    struct uroce_query_stats_rep *r);
/* One named value of UROCE_OP_QUERY_DROPS (the daemon's port-level ones:
 * what the PMD and the kernel socket under the port counted). */
struct emu_named {
	const char *name;
	uint64_t val;
};
/* stats.c: drops and discards by reason (UROCE_OP_QUERY_DROPS, one page
 * from q's position): link[] (nlink, the daemon's port-level values) and
 * the transport's totals under qpn 0, then every QP viewer may see. */
void emu_drops_fill(struct emu_dev *d, const struct emu_ctx *viewer,
		    const struct emu_named *link, unsigned nlink,
		    const struct uroce_query_drops_req *q, struct uroce_query_drops_rep *r);
/* qp_info.c: transport state of d's QPs from first_qpn on (one page), the
 * same visibility as emu_stats_fill. */
void emu_qp_info_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		      struct uroce_query_qps_rep *r);
/* The same for DCQCN: the device's settings, its QPs' reaction points. */
void emu_cc_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		 struct uroce_query_cc_rep *r);


void emu_xport_qp_init(struct emu_qp *qp);
void emu_xport_qp_fini(struct emu_qp *qp);

/* Full ibv_modify_qp state machine: 0 or -EINVAL (bad transition, mask or
 * value), -ENOMEM. */
int emu_qp_modify(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask);
/* Fills every field of attr, as ibv_query_qp. */
int emu_qp_query(struct emu_qp *qp, struct ibv_qp_attr *attr, int mask);

void emu_xport_sq_kick(struct emu_qp *qp);
void emu_xport_rq_kick(struct emu_qp *qp);
void emu_xport_srq_kick(struct emu_srq *srq);

/* A parsed, ICRC-checked RoCE packet for qp (NULL: unknown QPN). */
void emu_xport_rx(struct emu_dev *d, struct emu_qp *qp, const struct wire_pkt *pkt);

/* Timers and deferred transmit work; next_deadline is UINT64_MAX when idle. */
void emu_xport_poll(struct emu_dev *d, uint64_t now_ns);
uint64_t emu_xport_next_deadline(struct emu_dev *d);
/* How long a responder may hold the ACK of a message for its QP's reply
 * (EMU_XPORT_ACK_HOLD_NS by default; 0: ACKs leave at the turn's end). */
void emu_xport_ack_hold_set(struct emu_dev *d, uint32_t ns);
/* The last RC/UC packet received announces more (emu_xport_rx_expected, xport.c). */
bool emu_xport_rx_expected(const struct emu_dev *d);

/* cqe.c: an RX burst (struct emu_burst, core/emu_burst.h). The engine thread
 * passes its own burst object to begin, which attaches it to d; until
 * end, payload writes into one process are deferred (emu_mem_batch) and
 * the CQEs d produces are held back, to go out together, writes first,
 * at end, which must come before the frames' buffers are released.
 * Outside a burst everything is immediate. adopt: a thread taking d over
 * from an abandoned one (emu_mem_guard) pushes the CQEs that one's burst
 * held, except those of skip. */
void emu_rx_burst_begin(struct emu_dev *d, struct emu_burst *b);
void emu_rx_burst_end(struct emu_dev *d);
void emu_rx_burst_adopt(struct emu_dev *d, struct emu_ctx *skip);
/* cqe.c: after a takeover, every later access to c's memory fails at
 * once (c->mem_stalled), and its QPs go to the error state with
 * IBV_EVENT_QP_FATAL. */
void emu_xport_quarantine(struct emu_ctx *c);

/* xrc.c: the XRC SRQ TGT QP qp served its request from went (d->xops):
 * forget the message in progress. */
void emu_xport_xrc_tgt_unbind(struct emu_qp *qp);

/* A deferred write into the application memory qp placed failed (the
 * application unmapped registered memory): what it was for (tag,
 * xp_wb_tag) completes in error, then the QP goes to ERR. */
void emu_xport_mem_fault(struct emu_qp *qp, uint64_t tag);

/* Complete all outstanding and later WRs with IBV_WC_WR_FLUSH_ERR, in order. */
void emu_xport_flush(struct emu_qp *qp);

/* dcqcn.c: congestion control (docs/dcqcn.md). emu_dev_init sets the
 * defaults into d->x->dcqcn; the daemon changes them before traffic (options)
 * or while it runs (emu_dcqcn_set). */
enum emu_dcqcn_stage {
	EMU_DCQCN_LINE_RATE,     /* not rate-limited (no CNP, or recovered) */
	EMU_DCQCN_FAST_RECOVERY, /* rc halves its distance to rt */
	EMU_DCQCN_ADDITIVE,      /* ... and rt grows by rpg_ai_rate */
	EMU_DCQCN_HYPER,         /* ... and rt grows by rpg_hai_rate */
	EMU_DCQCN_NSTAGES
};
extern const char *const emu_dcqcn_stage_name[EMU_DCQCN_NSTAGES];
void emu_dcqcn_defaults(struct emu_dcqcn_cfg *c);
/* "on", "off" (ECT, NP and RP together) or key=value,... with the keys
 * ect, np, rp (on/off) and every field of struct emu_dcqcn_cfg by name.
 * 0, or -EINVAL with the offending item in err. */
int emu_dcqcn_parse(struct emu_dcqcn_cfg *c, const char *spec, char *err, size_t errlen);
/* Change a running device's parameters (uroce-ctl cc set): spec as
 * emu_dcqcn_parse's, applied over the current ones, all or nothing; QPs
 * being paced follow at once (rp=off or a lower line rate releases them
 * to the line rate). 0, or -EINVAL with the offending item in err. */
int emu_dcqcn_set(struct emu_dev *d, const char *spec, char *err, size_t errlen);
/* The line rate the reaction point starts from and returns to (Mb/s). */
uint32_t emu_dcqcn_line_mbps(const struct emu_dcqcn_cfg *c);
/* The reaction point of qp: stage and current rate (line rate when idle). */
enum emu_dcqcn_stage emu_dcqcn_stage(const struct emu_qp *qp);
uint64_t emu_dcqcn_rate_kbps(const struct emu_qp *qp);

/* Snapshot of qp's transport counters (for the core's stats/control side).
 * Counters start at zero when the QP is created or moved to RESET. */
void emu_xport_qp_counters(const struct emu_qp *qp, struct emu_xport_counters *out);

#endif /* EMU_XPORT_H */
