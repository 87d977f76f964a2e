/* SPDX-License-Identifier: MIT */
/* Transport internals shared by qp_modify.c, req.c, comp.c, resp.c and
 * xport_*.c. Not for the core. */
#ifndef EMU_XPORT_INT_H
#define EMU_XPORT_INT_H

#include <stddef.h>
#include <sys/uio.h>
#include "xport.h"
#include <uroce/flush.h>

/* A QP's transport state sits right after it, in one allocation (the
 * core's emu_qp_new, d->xops->qp_size): from the state back to the QP. */
#define XQP(x) ((struct emu_qp *)(x) - 1)
_Static_assert(_Alignof(struct emu_xport_qp) <= _Alignof(struct emu_qp),
	       "the transport state of a QP follows it unpadded");

/* Progress of a private send WQE copy. */
enum emu_swqe_state {
	EMU_SWQE_NEW,     /* fetched, no PSN yet */
	EMU_SWQE_PENDING, /* PSNs assigned, request packets (partly) sent */
	EMU_SWQE_SENT,    /* every request packet sent, waiting for ACK/response */
	EMU_SWQE_DONE,    /* result known (status); waits its turn to complete */
};

static inline struct uroce_send_wqe *xp_wqe(struct emu_qp *qp, uint32_t idx)
{
	return (struct uroce_send_wqe *)(qp->x->sq_copy +
					 (size_t)(idx & (qp->x->sq_entries - 1)) * qp->x->sq_stride);
}

static inline struct emu_xport_swqe *xp_swqe(struct emu_qp *qp, uint32_t idx)
{
	return &qp->x->swqe[idx & (qp->x->sq_entries - 1)];
}

static inline bool xp_is_rd_atomic(uint8_t opcode)
{
	return opcode == IBV_WR_RDMA_READ || opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* Where packet k of an n-packet message sits: picks FIRST/MIDDLE/LAST/
 * ONLY opcodes (requester and READ responses alike). */
enum xp_pos {
	XP_POS_MIDDLE = 0,
	XP_POS_FIRST = 1,
	XP_POS_LAST = 2,
	XP_POS_ONLY = 3, /* FIRST | LAST */
	XP_POS_N
};

static inline enum xp_pos xp_pos(uint32_t k, uint32_t n)
{
	return (enum xp_pos)((k == 0 ? XP_POS_FIRST : 0) | (k + 1 == n ? XP_POS_LAST : 0));
}

static inline uint32_t xp_mtu(const struct emu_qp *qp)
{
	if (qp->type == IBV_QPT_UD)
		return wire_mtu_to_bytes((enum wire_mtu)qp->dev->active_mtu);
	return wire_mtu_to_bytes((enum wire_mtu)qp->attr.path_mtu);
}

/* Count a received packet the transport drops, per QP and per device. */
static inline void xp_drop(struct emu_qp *qp, enum emu_xport_drop why)
{
	qp->x->cnt.rx_dropped++;
	qp->x->cnt.drops[why]++;
	qp->dev->x->xdrops[why]++;
}

/* tx.c */
/* Build a frame for qp to path with headers from d (bth, ext headers,
 * payload_len); the payload is taken from pay (or, if NULL, gathered by the
 * caller-supplied fill callback into the frame). 0 or -ENOBUFS/-EFAULT. */
typedef int (*xp_fill_fn)(struct emu_qp *qp, void *arg, uint8_t *dst, uint32_t len);
int xp_tx(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
	  const void *pay, xp_fill_fn fill, void *arg);
/* The same in two steps, so the payloads of several frames can be read
 * from the application with one system call: xp_tx_begin allocates the
 * frame and writes the headers (payload goes to f->pay, f->len bytes);
 * xp_tx_end adds pad and ICRC and queues it; xp_tx_abort drops it. */
struct xp_txf {
	struct emu_txbuf b;
	size_t hl;
	uint8_t *pay;
	uint32_t len;
	uint32_t psn;   /* caller's bookkeeping */
	/* zero-copy: the payload is these len bytes of a mapped MR piece
	 * (xp_txf_zc); NULL: it is copied to pay */
	const uint8_t *zc;
	struct emu_mrmap_hold *zh;
};
int xp_tx_begin(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
		struct xp_txf *f);
void xp_tx_end(struct emu_qp *qp, struct xp_txf *f);
void xp_tx_abort(struct emu_qp *qp, struct xp_txf *f);
/* Zero-copy TX of RC requests and READ responses (docs/performance.md):
 * point begun frame f at its source, [addr, addr + f->len) of mr,
 * when the port can send it from there (emu_tx_zc_ok) and one mapped
 * piece holds it; true then, false to copy as before. Pieces shorter than
 * XP_ZC_MIN are copied: two more mbufs cost more than their copy. UC and
 * UD complete a send when it is queued, so the application may rewrite
 * the buffer while the frame still points into it: they always copy. */
#define XP_ZC_MIN 512u
bool xp_txf_zc(struct emu_qp *qp, struct xp_txf *f, struct emu_mr *mr, uint64_t addr);
/* The same for [off, off + f->len) of an SGE list: one SGE must hold it;
 * lkeys checked as xp_sge_copyv does (epoch: the message's) */
bool xp_sge_zc(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge, uint32_t off,
	       uint64_t epoch, struct xp_txf *f);
/* xp_tx_end of a zero-copy frame: queued as header + the piece + pad and
 * ICRC; if the port cannot take it so, the piece is copied after all.
 * 0, or -EFAULT (the client's file shrank under the copy: f dropped). */
int xp_tx_end_zc(struct emu_qp *qp, struct xp_txf *f);
/* Frame f of a chunk whose payloads are in place: queued (xp_tx_end or
 * xp_tx_end_zc) while *rc is 0, dropped once it is not (a failed copy
 * before it, or its own zero-copy fallback). True when it was queued. */
bool xp_tx_finish(struct emu_qp *qp, struct xp_txf *f, int *rc);
void xp_pkt_init(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
		 uint8_t opcode, uint32_t dqpn, uint32_t psn);
void xp_path_from_av(struct emu_xport_path *p, const struct emu_av *av, uint32_t qpn);

/* stats.c: may viewer see qp (its uid's, or every QP for root and the
 * daemon's uid; NULL viewer: yes)? docs/security.md */
bool xp_qp_visible(const struct emu_ctx *viewer, const struct emu_qp *qp);
/* The counters UROCE_OP_QUERY_DROPS totals over a device's QPs (stats.c):
 * t += c; a QP's go into its device's totals before they are cleared
 * (RESET) or freed (destroy), so the totals cover every QP it had. */
static inline void xp_cnt_add(struct emu_xport_counters *t, const struct emu_xport_counters *c)
{
	t->out_of_seq += c->out_of_seq;
	t->resp_ignored += c->resp_ignored;
	t->dup_requests += c->dup_requests;
	t->rnr_naks_sent += c->rnr_naks_sent;
	t->rnr_naks_rcvd += c->rnr_naks_rcvd;
	t->seq_naks_sent += c->seq_naks_sent;
	t->seq_naks_rcvd += c->seq_naks_rcvd;
	t->retransmits += c->retransmits;
	t->timeouts += c->timeouts;
	t->probes += c->probes;
	t->retry_exceeded += c->retry_exceeded;
	t->rnr_retry_exceeded += c->rnr_retry_exceeded;
	t->tx_no_buf += c->tx_no_buf;
	t->tx_stalls += c->tx_stalls;
	t->acks_held += c->acks_held;
	t->acks_held_late += c->acks_held_late;
}

static inline void xp_cnt_retire(struct emu_qp *qp)
{
	if (qp->dev && qp->dev->x)
		xp_cnt_add(&qp->dev->x->gone, &qp->x->cnt);
}

/* cqe.c: push a CQE; on CQ overrun the QP gets QP_FATAL and goes to ERR.
 * While the device's RX burst is open (d->burst) the CQE waits in the
 * burst and enters its ring at the burst's end, after the burst's
 * deferred payload writes; otherwise at once. */
void xp_cq_push(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e);
/* The SQ's consumer index is now cons: published at once, or at the end
 * of the RX burst being worked through (before the burst's CQEs). */
void xp_sq_retire(struct emu_qp *qp, uint32_t cons);
/* Same, with e->inl_nseg segments and e->byte_len bytes in inl (abi.h). */
void xp_cq_push_inl(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
		    const struct uroce_cqe_inl *inl);
void xp_event(struct emu_qp *qp, enum ibv_event_type ev);
/* cqe.c: move to ERR (flushing) and raise ev (0 = none). */
void xp_qp_error(struct emu_qp *qp, int ev);
/* timer.c: the active list, QPs with timers or pending ACKs. */
void xp_act_add(struct emu_qp *qp);
void xp_act_del(struct emu_qp *qp);
/* The PD a receive WQE's lkeys belong to: an SRQ's own PD, which may
 * differ from the QP's (IBTA: an SRQ's receive WQEs are checked against
 * the SRQ's PD). */
static inline struct emu_pd *xp_recv_pd(const struct emu_qp *qp)
{
	return qp->srq ? qp->srq->pd : qp->pd;
}
/* Whose memory a receive WQE scatters into: an XRC SRQ may belong to
 * another process of the TGT QP's domain. */
static inline struct emu_ctx *xp_recv_ctx(const struct emu_qp *qp)
{
	return qp->srq ? qp->srq->ctx : qp->ctx;
}
/* RC and both halves of XRC: reliable, acknowledged, READ and atomics */
static inline bool xp_rc_like(const struct emu_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}
/* An opcode with the transport bits taken off (XRC's are RC's | 0xa0). */
static inline uint8_t xp_rc_op(uint8_t opcode)
{
	return wire_opcode_transport(opcode) == WIRE_TR_XRC ? opcode & 0x1f : opcode;
}

/* sge.c: gather/scatter between qp's application memory and a buffer, across SGEs
 * starting at byte off. Every piece is checked again, for every packet,
 * against its lkey (qp's PD; the receive WQE's: xp_recv_pd), bounds,
 * access) and must go through an MR no
 * newer than epoch (dev->mr_epoch when the message's keys were first
 * checked): after a deregistration or a reregistration nothing moves
 * through the old registration (-EACCES). 0 or -errno. */
int xp_sge_copy(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		uint32_t off, void *buf, uint32_t len, bool to_app, unsigned access,
		uint64_t epoch);
/* Same into/from several local buffers (one system call). */
int xp_sge_copyv(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		 uint32_t off, const struct iovec *lv, unsigned nl, bool to_app,
		 unsigned access, uint64_t epoch);
/* What a deferred write is for (its emu_mem_write_deferred tag): the kind
 * and the PSN of the packet it carries, so that a write failing at the end
 * of the burst fails that operation (emu_xport_mem_fault). */
#define XP_WB_WRITE 0u /* responder: RDMA WRITE payload */
#define XP_WB_RECV  1u /* responder: SEND payload into the receive WQE */
#define XP_WB_READ  2u /* requester: READ response into the WQE's buffer */
static inline uint64_t xp_wb_tag(unsigned kind, uint32_t psn)
{
	return (uint64_t)kind << 32 | psn;
}
/* Scatter len bytes at src into qp's own SGE list from byte off, as a
 * deferred write (emu_mem_write_deferred, with tag); checked as
 * xp_sge_copyv with IBV_ACCESS_LOCAL_WRITE. */
int xp_sge_write_deferred(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
			  uint32_t off, const void *src, uint32_t len, uint64_t epoch,
			  uint64_t tag);
/* Prepare len (<= UROCE_CQE_INL_DATA) bytes at src, for qp's own SGE list
 * from byte 0, to travel in the CQ ring instead of being placed: checked
 * as xp_sge_write_deferred, pieces and bytes into inl. Segments used, or
 * 0 when it does not fit (more than UROCE_CQE_INL_SEGS pieces) or a check
 * failed: the caller then places the data (and meets the error there). */
unsigned xp_sge_inline(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		       const void *src, uint32_t len, uint64_t epoch,
		       struct uroce_cqe_inl *inl);
/* cqe.c: the work completion opcode of a send WR opcode */
enum ibv_wc_opcode xp_wc_opcode(uint8_t wr_opcode);

/* xport.c: ECN CE -> CNP (rate-limited), CNP accounting */
void xp_ce_rx(struct emu_qp *qp, const struct wire_pkt *pkt);
void xp_cnp_rx(struct emu_qp *qp);

/* dcqcn.c: the reaction point. A CNP arrived (rate cut, alpha); catch up
 * its timers to now; a requester turn begins (catch up, burst bound);
 * may the next packet leave (0, or -EBUSY: pace_wait set, the engine
 * kicks the requester at pace_next); a requester packet of bytes left.
 * Only for QPs with xp_rp_active, except xp_rp_cnp; xp_rp_reset frees
 * the state (RESET, destroy). */
void xp_rp_cnp(struct emu_qp *qp, uint64_t now);
void xp_rp_advance(struct emu_qp *qp, uint64_t now);
void xp_rp_turn(struct emu_qp *qp, uint64_t now);
int xp_rp_pace(struct emu_qp *qp, uint64_t now);
void xp_rp_sent(struct emu_qp *qp, uint64_t bytes);
void xp_rp_reset(struct emu_qp *qp);
static inline bool xp_rp_active(const struct emu_xport_qp *x)
{
	return x->rp && x->rp->active;
}
/* the requester waits for the pacer: the engine kicks it at xp_rp_wake */
static inline bool xp_rp_waiting(const struct emu_xport_qp *x)
{
	return x->rp && x->rp->pace_wait;
}
/* When a waiting requester runs again: its next packet's time, or sooner
 * the next rate change (a packet held back at 1 Mb/s waits milliseconds;
 * a timer increase meanwhile shortens that) */
static inline uint64_t xp_rp_wake(const struct emu_dcqcn_rp *rp)
{
	uint64_t t = rp->pace_next;

	if (rp->inc_at < t)
		t = rp->inc_at;
	if (rp->cut_pending && rp->cut_at < t)
		t = rp->cut_at;
	return t;
}

/* timer.c: (re)start the retransmit timer: restart = after forward progress, else
 * only if it is not running. Never while an RNR wait is pending. The loss
 * probe (x->probe_at, a few round trips) is armed with it. */
void xp_retrans_start(struct emu_qp *qp, bool restart);
/* Round trips to the responder, as TCP times them (RFC 6298): one request
 * packet asking for an ACK at a time, never a retransmitted one (Karn), is
 * timed until an ACK or response covers it (xp_rtt_end, comp.c). */
static inline void xp_rtt_start(struct emu_xport_qp *x, uint32_t psn)
{
	if (x->rtt_at || wire_psn_before(psn, x->sq_psn_hw))
		return;
	x->rtt_psn = psn;
	x->rtt_at = emu_now_ns();
}
void xp_rtt_end(struct emu_xport_qp *x);
/* A probe went without progress: the next one after twice the wait. */
uint64_t xp_reissue_wait_ns(const struct emu_qp *qp);
void xp_probe_defer(struct emu_qp *qp);
void xp_probe_rearm(struct emu_qp *qp, uint64_t now);
/* cqe.c */
void xp_flush_sq(struct emu_qp *qp);
void xp_flush_rq(struct emu_qp *qp);

/* Go-back-N: move the requester's cursor (sq_req, sq_req_pkt, sq_psn) back
 * to psn inside an already numbered, unfinished WQE, or forward to
 * sq_psn_max (every numbered packet sent: what follows is new). The
 * completer decides where to, the requester sends from there when it runs
 * next. */
static inline void xp_sq_rewind(struct emu_qp *qp, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t idx;

	for (idx = x->sq_comp; idx != x->sq_fetch; idx++) {
		struct emu_xport_swqe *sw = xp_swqe(qp, idx);

		/* nothing after a failed WQE was ever numbered or sent */
		if (sw->state == EMU_SWQE_NEW ||
		    (sw->state == EMU_SWQE_DONE && sw->status != IBV_WC_SUCCESS))
			break;
		if (!sw->npkts || sw->state == EMU_SWQE_DONE)
			continue;
		if (wire_psn_in_window(psn, sw->first_psn, sw->npkts)) {
			x->sq_req = idx;
			x->sq_req_pkt = wire_psn_dist(sw->first_psn, psn);
			x->sq_psn = psn;
			return;
		}
	}
	if (psn == x->sq_psn_max && qp->type == IBV_QPT_RC) {
		x->sq_req = idx;
		x->sq_req_pkt = 0;
		x->sq_psn = psn;
	}
}

/* Bounded go-back-N after a retransmit timeout (x->gbn_bound): at most
 * XP_GBN_BURST packets beyond the last acknowledged PSN are resent; every
 * ACK that makes progress moves the bound and doubles the window, up to
 * XP_GBN_WIN_MAX, as TCP's slow start after a timeout does (comp.c), so a
 * lost tail of n packets takes ~log2(n/8) round trips. The peer may be
 * slow rather than the packets lost, and each duplicate costs it as much
 * as the original: resending a whole window (up to 4096 packets) to a
 * slow peer multiplies its backlog, its ACKs come later still and the
 * next timeouts spend retry_cnt (docs/transport.md, "Bounded go-back-N
 * after a timeout"). Half an AckReq interval: the originals asked for an
 * ACK every EMU_XPORT_ACK_EVERY packets from the same acknowledged PSN,
 * so an ACK for one of them lands past the bound and tells a slow peer
 * from a loss, while an ACK for the resent ones (the last asks for it)
 * lands on it. */
#define XP_GBN_BURST (EMU_XPORT_ACK_EVERY / 2)
#define XP_GBN_WIN_MAX 4096u /* the requester's own window (req.c) */
/* The send window of an RC requester (req_may_send): packets past
 * acked_psn that may be out. A retransmit timeout does not tell a loss
 * from a slow peer, whose ACKs wait behind everything queued before them:
 * with a full window of 4096 packets a peer slower than ~130 us a packet
 * answers after retry_cnt + 1 timeouts. So, as TCP (RFC 5681), the window
 * starts at XP_CWND_INIT and grows by what each ACK acknowledges (slow
 * start, doubling per round trip) up to ssthresh, then by one packet per
 * window acknowledged, up to XP_GBN_WIN_MAX; a timeout sets ssthresh to
 * half of what was out and the window to XP_CWND_MIN (comp.c). A slow
 * peer's backlog then stays near what it drains in one timeout. */
#define XP_CWND_INIT 64u
#define XP_CWND_MIN (2 * XP_GBN_BURST)
/* The largest window: what a receiving daemon's RX ring holds for one
 * QP with room for three more at full speed. A uroce port's RX ring holds
 * at least 2048 frames (port_param.c: af_xdp's fill ring, af_packet's
 * ring); a daemon descheduled for a few milliseconds on a shared machine
 * lets a sender fill it, and a window beyond it is lost there, not on
 * the wire (issue 22: 43 % of rc_bw's frames at a 4096-packet window).
 * ConnectX and rxe drain far faster; for them 512 packets (0.5-2 MB) are
 * more than a link's bandwidth-delay product. A loss halves the window
 * (comp.c), so more QPs into one receiver converge below its ring. */
#define XP_CWND_MAX 512u
/* emu_xport_poll: engine turns an expired retransmit/probe timer waits
 * while the port's RX still holds frames (bursts of 32: 256 turns read
 * 8192 frames, more than an af_xdp ring holds), so a flood from elsewhere
 * delays a timeout by that much at most */
#define XP_RX_HOLD_TURNS 256u
/* The packets all RC requesters of a device may have out together (past
 * their acked_psn; a READ's responses count as its packets): the per-QP
 * window keeps one QP below a receiver's RX ring, but not the sum over
 * QPs. 8 QPs x 128 WRITEs of 64 KB or x 16 READs (ib_write_bw -q 8 -t 128,
 * ib_read_bw -q 8 -o 16) kept 4096 frames queued in a 4096-frame af_packet
 * ring: a 45 ms standing queue under a 67 ms retransmit timeout, whose
 * spurious timeouts made the responder send READs again (2/3 of its
 * frames wasted); 32 QPs failed with RETRY_EXC_ERR; 16 QPs lost 3036
 * WRITE and 8131 READ frames at a 2048-frame ring in the link simulator
 * (xport_link_many_qps). One QP's largest window for the whole device:
 * what was loss-free for one QP is loss-free for many, and a single QP
 * is not slowed. Toward one peer or several alike: a receiver's ring does
 * not tell whose frames fill it, and a daemon on a shared host has one
 * ring. A QP with nothing out always sends its oldest packet (as its own
 * window allows), and a packet sent again is already counted, so a QP is
 * never held behind others and recovery is never held at all. */
#define XP_DEV_INFL_MAX XP_CWND_MAX
static inline uint32_t xp_cwnd(const struct emu_xport_qp *x)
{
	return x->cwnd ? x->cwnd : XP_CWND_INIT;
}

/* Count what qp has out in its device's total (after sq_psn_hw or
 * acked_psn moved, or the QP left RTS/SQD: then nothing). */
static inline void xp_infl_sync(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t n = 0;

	if (xp_rc_like(qp) &&
	    (qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_SQD)) {
		int32_t d = wire_psn_diff(x->sq_psn_hw, x->acked_psn);

		n = d > 0 ? (uint32_t)d : 0;
	}
	if (qp->dev && qp->dev->x)
		qp->dev->x->infl += n - x->infl; /* modulo 2^32: a drop is a subtraction */
	x->infl = n;
}

/* The QP goes (reset, destroy): take its packets out of the total. */
static inline void xp_infl_release(struct emu_qp *qp)
{
	if (qp->dev && qp->dev->x)
		qp->dev->x->infl -= qp->x->infl;
	qp->x->infl = 0;
}

/* May new packet psn (not one sent before) go, as far as the device's
 * total is concerned? (XP_DEV_INFL_MAX) */
static inline bool xp_infl_room(const struct emu_qp *qp, uint32_t psn)
{
	const struct emu_xport_qp *x = qp->x;

	return qp->dev->x->infl < XP_DEV_INFL_MAX || wire_psn_diff(psn, x->acked_psn) <= 0 ||
	       wire_psn_before(psn, x->sq_psn_hw);
}

/* x->gbn_bound: off, after a timeout (the bound moves with the ACKs), or
 * after an RNR wait (one packet asks whether the responder has a receive
 * WQE again; its ACK releases the rest, which the responder dropped). */
enum { XP_GBN_OFF, XP_GBN_TIMEOUT, XP_GBN_RNR };
/* x->rewound: not since the last progress; by a NAK, an implicit NAK or
 * an RNR wait (the same go-back-N is not repeated); by a timeout (a
 * sequence NAK for it spends no retry, but a READ response past a gap
 * still re-issues the READ at once, as before the timeout marked it). */
enum { XP_REWOUND_NO, XP_REWOUND_NAK, XP_REWOUND_TIMEOUT };

/* Is packet psn a retransmission the bound holds back? Only what was
 * sent before the bound began: new packets, and a later go-back-N past
 * that point, are not its business. */
static inline bool xp_gbn_held(const struct emu_xport_qp *x, uint32_t psn)
{
	return x->gbn_bound && wire_psn_before(psn, x->gbn_stop) &&
	       !wire_psn_before(psn, x->gbn_end);
}

/* The last packet the bound lets go: it asks for an ACK, which moves it. */
static inline bool xp_gbn_last(const struct emu_xport_qp *x, uint32_t psn)
{
	return x->gbn_bound && wire_psn_next(psn) == x->gbn_end &&
	       wire_psn_before(psn, x->gbn_stop);
}

/* xport.c: run what the requester and the completer scheduled for each
 * other (x->req_sched, x->comp_sched): the requester first, then the
 * completer, as rxe's tasks do. req.c and comp.c never call each other. */
void xp_run(struct emu_qp *qp);
/* Schedule the requester and run. */
void xp_req_kick(struct emu_qp *qp);

/* req.c */
void xp_req_progress(struct emu_qp *qp);
void xp_req_reset(struct emu_qp *qp);
/* comp.c */
void xp_comp_rx(struct emu_qp *qp, const struct wire_pkt *pkt);
void xp_comp_progress(struct emu_qp *qp);
/* A deferred write of qp failed (tag: xp_wb_tag): a READ's response makes
 * the head READ IBV_WC_LOC_PROT_ERR. true while comp_wqe is retiring the
 * head (it moves the QP to ERR itself, after). */
bool xp_comp_mem_fault(struct emu_qp *qp, uint64_t tag);
void xp_comp_timeout(struct emu_qp *qp, uint64_t now);
/* xrc.c: a request for XRC TGT QP qp names XRC SRQ srqn: serve it from that SRQ
 * (its PD, CQ, receive WQEs) if it is in qp's domain; false (qp unbound,
 * unless a message in progress still holds its SRQ) otherwise. */
bool xp_xrc_tgt_bind(struct emu_qp *qp, uint32_t srqn);

/* resp.c */
void xp_resp_rx(struct emu_qp *qp, const struct wire_pkt *pkt);
void xp_resp_send_ack(struct emu_qp *qp);
void xp_resp_reset(struct emu_qp *qp);
/* Forget the READ/atomic responses still to send (ERR, reset, destroy). */
void xp_resp_release(struct emu_qp *qp);
/* Send responses qp still owes, its share of room frames; the number sent. */
uint32_t xp_resp_poll(struct emu_qp *qp, uint32_t room);
/* A deferred write of qp failed (tag: xp_wb_tag): its receive completes
 * in error, and a NAK replaces what would acknowledge it. */
void xp_resp_mem_fault(struct emu_qp *qp, uint64_t tag);

#endif /* EMU_XPORT_INT_H */
