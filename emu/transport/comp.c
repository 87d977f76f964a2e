/* SPDX-License-Identifier: MIT */
/* Completer: ACKs, NAKs, READ responses and atomic ACKs retire send WQEs
 * strictly in order; retransmit and RNR timers; flushing to ERR. Written as
 * an explicit state machine (rxe_comp.c style) so traces name each step. */
#include <errno.h>
#include <string.h>
#include "xport_int.h"

const char *const emu_comp_state_name[EMU_COMP_NSTATES] = {
	[EMU_COMP_GET_ACK] = "GET ACK",
	[EMU_COMP_GET_WQE] = "GET WQE",
	[EMU_COMP_COMP_WQE] = "COMP WQE",
	[EMU_COMP_CHECK_PSN] = "CHECK PSN",
	[EMU_COMP_CHECK_ACK] = "CHECK ACK",
	[EMU_COMP_READ] = "READ",
	[EMU_COMP_ATOMIC] = "ATOMIC",
	[EMU_COMP_WRITE_SEND] = "WRITE/SEND",
	[EMU_COMP_UPDATE_COMP] = "UPDATE COMP",
	[EMU_COMP_ERROR_RETRY] = "ERROR RETRY",
	[EMU_COMP_RNR_RETRY] = "RNR RETRY",
	[EMU_COMP_ERROR] = "ERROR",
	[EMU_COMP_EXIT] = "EXIT",
	[EMU_COMP_DONE] = "DONE",
};

static bool comp_outstanding(const struct emu_qp *qp)
{
	const struct emu_xport_qp *x = qp->x;

	return x->sq_comp != x->sq_req || x->sq_req_pkt;
}

/* Restart the retransmit timer after forward progress (or stop it). */
static void comp_rearm(struct emu_qp *qp)
{
	if (comp_outstanding(qp))
		xp_retrans_start(qp, true);
	else
		qp->x->retrans_at = qp->x->probe_at = 0;
}

/* Bounded go-back-N, and an ACK made progress. After an RNR wait it
 * acknowledges the probe: the responder has receive WQEs again, the rest
 * goes at once. After a timeout: if the responder took a packet sent
 * before the timeout and not resent since, the timeout was spurious (the
 * peer was slow, the packets queued, as F-RTO, RFC 5682, concludes for
 * TCP): the rest are in flight too, so the requester continues after the
 * highest PSN it ever sent. Otherwise the responder is still taking the
 * resent packets: the bound moves on, its window doubled. */
static void comp_gbn_progress(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	if (x->gbn_bound == XP_GBN_OFF)
		return;
	if (x->gbn_bound == XP_GBN_RNR || !wire_psn_before(x->acked_psn, x->gbn_stop)) {
		/* nothing is held back any more: all that was outstanding
		 * when it began is acknowledged */
		x->gbn_bound = XP_GBN_OFF;
	} else if (wire_psn_after(x->acked_psn, x->sq_psn)) {
		x->gbn_bound = XP_GBN_OFF;
		xp_sq_rewind(qp, x->sq_psn_hw);
	} else {
		if (x->gbn_win < XP_GBN_WIN_MAX)
			x->gbn_win *= 2;
		x->gbn_end = wire_psn_add(x->acked_psn, x->gbn_win);
	}
}

/* A response acknowledged n more packets: the send window grows by n
 * below ssthresh (slow start), by one packet above it (an ACK comes
 * every EMU_XPORT_ACK_EVERY packets: about a sixteenth of the window per
 * round trip) (xport_int.h, xp_cwnd). */
static void comp_cwnd_grow(struct emu_xport_qp *x, int32_t n)
{
	uint32_t w = xp_cwnd(x), th = x->ssthresh ? x->ssthresh : XP_CWND_MAX;

	if (n <= 0 || n > (int32_t)XP_GBN_WIN_MAX)
		return;
	w += w < th ? (uint32_t)n : 1;
	x->cwnd = (uint16_t)(w < XP_CWND_MAX ? w : XP_CWND_MAX);
}

/* The window from the round trips (TCP Vegas): packets queued anywhere
 * between the requester and the responder's engine (its TX backlog, the
 * wire, the receiver's RX ring) are the window times the part of the
 * round trip the shortest one did not need. Above XP_QUEUE_MAX of them
 * the window shrinks by half the excess and leaves slow start: a queue
 * buys no bandwidth, only a larger go-back-N after each loss and a fuller
 * RX ring at the receiver (docs/transport.md, "Send window"). */
#define XP_QUEUE_MAX 64u
static void comp_cwnd_delay(struct emu_xport_qp *x, uint32_t rtt)
{
	uint32_t w = xp_cwnd(x);

	if (!x->min_rtt_ns || rtt < x->min_rtt_ns)
		x->min_rtt_ns = rtt;
	if (!rtt)
		return;
	uint64_t q = (uint64_t)w * (rtt - x->min_rtt_ns) / rtt;
	if (q <= XP_QUEUE_MAX)
		return;
	uint64_t nw = w - (q - XP_QUEUE_MAX) / 2;
	x->cwnd = (uint16_t)(nw < XP_CWND_MIN ? XP_CWND_MIN : nw);
	x->ssthresh = x->cwnd;
}

void xp_rtt_end(struct emu_xport_qp *x)
{
	uint64_t now = emu_now_ns(), m = now - x->rtt_at;
	uint32_t r = m > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)m;

	x->rtt_at = 0;
	comp_cwnd_delay(x, r);
	/* the longest recent round trip, forgetting 1/64 per sample (the
	 * loss probe's floor, timer.c) */
	x->max_rtt_ns -= x->max_rtt_ns / 64;
	if (r > x->max_rtt_ns)
		x->max_rtt_ns = r;
	if (!x->srtt_ns) {
		x->srtt_ns = r;
		x->rttvar_ns = r / 2;
		return;
	}
	uint32_t d = r > x->srtt_ns ? r - x->srtt_ns : x->srtt_ns - r;
	x->rttvar_ns = x->rttvar_ns - x->rttvar_ns / 4 + d / 4;
	x->srtt_ns = x->srtt_ns - x->srtt_ns / 8 + r / 8;
}

/* A loss the responder told us of (a sequence NAK, a READ response past a
 * gap): the window goes to 0.7 of itself (CUBIC's factor, RFC 9438), once
 * per window of packets (TCP's fast recovery, RFC 6582: no second cut
 * until everything sent before this one is acknowledged), so several QPs
 * into one receiver settle where its ring holds their windows. Halving
 * as Reno does cost a third of the goodput at 1 % random loss in
 * xport_link_loss (0.23 against 0.28 of (1 - loss) x loss-free) for no
 * fewer ring drops in xport_link_no_ring_loss; the round-trip signal
 * (comp_cwnd_delay) keeps the queue short without loss. */
static void comp_cwnd_loss(struct emu_xport_qp *x)
{
	uint32_t cut = xp_cwnd(x) * 7 / 10;

	if (x->in_recovery && wire_psn_before(x->acked_psn, x->recover_psn))
		return;
	x->in_recovery = 1;
	x->recover_psn = x->sq_psn_hw;
	x->ssthresh = (uint16_t)(cut < XP_CWND_MIN ? XP_CWND_MIN : cut);
	x->cwnd = x->ssthresh;
}

/* A retransmit timeout: half of what was out is the new threshold, the
 * window starts again small. */
static void comp_cwnd_cut(struct emu_xport_qp *x)
{
	uint32_t out = (uint32_t)wire_psn_diff(x->sq_psn_hw, x->acked_psn) / 2;

	x->ssthresh = (uint16_t)(out < XP_CWND_MIN ? XP_CWND_MIN :
				 out > XP_CWND_MAX ? XP_CWND_MAX : out);
	x->cwnd = XP_CWND_MIN;
	x->in_recovery = 1;
	x->recover_psn = x->sq_psn_hw;
}

static void comp_progress_made(struct emu_qp *qp)
{
	comp_gbn_progress(qp);
	if (qp->x->in_recovery && !wire_psn_before(qp->x->acked_psn, qp->x->recover_psn))
		qp->x->in_recovery = 0;
	qp->x->probe_shift = 0;
	qp->x->rewound = XP_REWOUND_NO;
	qp->x->retry_left = qp->attr.retry_cnt;
	qp->x->rnr_left = qp->attr.rnr_retry;
	comp_rearm(qp);
}

/* A READ completes only once its data is in place: when a response of
 * the QP is still a deferred write (emu_mem_write_deferred), write it out
 * first; one that fails makes the READ IBV_WC_LOC_PROT_ERR
 * (xp_comp_mem_fault) and the QP goes to ERR once it is retired. */
static bool comp_settle_read(struct emu_qp *qp, struct emu_xport_swqe *sw)
{
	struct emu_xport_qp *x = qp->x;
	bool fault;

	if (!sw->need_resp || sw->status != IBV_WC_SUCCESS || !emu_mem_pending(qp))
		return false;
	x->comp_settling = 1;
	emu_mem_flush(qp->dev);
	x->comp_settling = 0;
	fault = x->fault_held;
	x->fault_held = 0;
	return fault;
}

/* A READ that becomes the head with responses placed before
 * (comp_read_later): they acknowledge its PSNs up to the first missing
 * one, as they would have at the head (the window counts from there). */
static void comp_head_acked(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	const struct emu_xport_swqe *sw;

	if (x->sq_comp == x->sq_fetch)
		return;
	sw = xp_swqe(qp, x->sq_comp);
	if (sw->state != EMU_SWQE_NEW && sw->need_resp &&
	    wire_psn_after(sw->resp_psn, x->acked_psn) &&
	    !wire_psn_before(x->acked_psn, sw->first_psn))
		x->acked_psn = sw->resp_psn;
}

/* Post the CQE of the head WQE (if due) and retire it. */
static void comp_wqe(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct uroce_send_wqe *w = xp_wqe(qp, x->sq_comp);
	struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_comp);
	bool fault = comp_settle_read(qp, sw);
	uint8_t status = sw->status;
	bool cqe = sw->signaled || status != IBV_WC_SUCCESS;
	struct uroce_cqe e;

	if (cqe) {
		memset(&e, 0, sizeof(e));
		e.wr_id = w->wr_id;
		e.status = status;
		e.opcode = xp_wc_opcode(w->opcode);
		e.byte_len = sw->total_len;
	}
	if (sw->rd_res && sw->state != EMU_SWQE_NEW && x->rd_atomic_out)
		x->rd_atomic_out--;
	/* a READ whose responses all came before it was the head
	 * (comp_read_later) is acknowledged by them */
	if (sw->need_resp && status == IBV_WC_SUCCESS && sw->state == EMU_SWQE_DONE &&
	    wire_psn_before(x->acked_psn, wire_psn_next(sw->last_psn)) &&
	    !wire_psn_before(x->acked_psn, sw->first_psn))
		x->acked_psn = wire_psn_next(sw->last_psn);
	x->sq_comp++;
	comp_head_acked(qp);
	if ((int32_t)(x->sq_req - x->sq_comp) < 0) {
		/* the head passed the transmit cursor (local ops, flush; a
		 * READ whose re-issue had not gone yet completed by a late
		 * response: on from where the cursor stood before it) */
		x->sq_req = x->sq_comp;
		x->sq_req_pkt = 0;
		if (x->rd_single && status == IBV_WC_SUCCESS)
			xp_sq_rewind(qp, x->rd_ret);
		x->rd_single = 0;
	}
	/* free the slot before the CQE is visible: an application that polls
	 * the completion may post into that slot at once (max_send_wr); in an
	 * RX burst (qp->dev->burst) both wait for its end, the index first,
	 * after the burst's deferred payload writes (cqe.c) */
	xp_sq_retire(qp, x->sq_comp);
	if (cqe)
		xp_cq_push(qp, qp->send_cq, &e); /* overrun: QP to ERR, the rest flushed */
	if (fault)
		xp_qp_error(qp, IBV_EVENT_QP_ACCESS_ERR);
	if (status != IBV_WC_SUCCESS && qp->attr.qp_state != IBV_QPS_ERR) {
		if (xp_rc_like(qp)) {
			xp_qp_error(qp, 0);
		} else {
			/* UC/UD send errors stop the send queue only (SQE). */
			qp->attr.qp_state = IBV_QPS_SQE;
			qp->attr.cur_qp_state = IBV_QPS_SQE;
			xp_flush_sq(qp);
		}
	}
}

static void comp_check_drained(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	if (qp->attr.qp_state == IBV_QPS_SQD && x->sq_drain_evt && !comp_outstanding(qp)) {
		uint32_t idx;

		for (idx = x->sq_comp; idx != x->sq_fetch; idx++)
			if (xp_swqe(qp, idx)->state != EMU_SWQE_NEW)
				return;
		x->sq_drain_evt = 0;
		xp_event(qp, IBV_EVENT_SQ_DRAINED);
	}
}

/* Retire every WQE at the head whose result is known. */
void xp_comp_progress(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	while (x->sq_comp != x->sq_fetch && qp->attr.qp_state != IBV_QPS_ERR) {
		struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_comp);

		if (sw->state != EMU_SWQE_DONE)
			break;
		comp_wqe(qp);
		if (qp->attr.qp_state == IBV_QPS_SQE)
			break;
	}
	comp_check_drained(qp);
}

static void comp_fail_head(struct emu_qp *qp, uint8_t status)
{
	struct emu_xport_swqe *sw = xp_swqe(qp, qp->x->sq_comp);

	sw->state = EMU_SWQE_DONE;
	sw->status = status;
	qp->x->retrans_at = 0;
	qp->x->probe_at = 0;
	qp->x->rnr_at = 0;
	comp_wqe(qp);
}

/* The READ WQE whose responses take PSN psn (placed at the head, or for
 * a later READ by comp_read_later), or NULL. */
static struct emu_xport_swqe *comp_read_of(struct emu_qp *qp, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t n = 0;

	for (uint32_t idx = x->sq_comp; idx != x->sq_fetch && n++ <= EMU_XPORT_MAX_RD_ATOMIC;
	     idx++) {
		struct emu_xport_swqe *sw = xp_swqe(qp, idx);

		if (sw->state == EMU_SWQE_NEW || !sw->need_resp)
			return NULL;
		if (wire_psn_in_window(psn, sw->first_psn, sw->npkts))
			return sw;
	}
	return NULL;
}

bool xp_comp_mem_fault(struct emu_qp *qp, uint64_t tag)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_swqe *sw = (unsigned)(tag >> 32) == XP_WB_READ ?
					    comp_read_of(qp, (uint32_t)tag & WIRE_PSN_MASK) : NULL;
	bool read = sw != NULL, head = read && sw == xp_swqe(qp, x->sq_comp);

	if (read) {
		sw->state = EMU_SWQE_DONE;
		sw->status = IBV_WC_LOC_PROT_ERR;
	}
	if (x->comp_settling) {
		/* comp_wqe is retiring the head: it fails the READ, or moves
		 * the QP to ERR for another write of the QP, after */
		x->fault_held |= !read;
		return true;
	}
	if (head)
		comp_fail_head(qp, IBV_WC_LOC_PROT_ERR);
	return false;
}

static uint8_t comp_nak_status(uint8_t code)
{
	switch (code) {
	case WIRE_NAK_INVALID_REQ:
		return IBV_WC_REM_INV_REQ_ERR;
	case WIRE_NAK_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	default:
		return IBV_WC_REM_OP_ERR;
	}
}

/* Go back to psn (a lost response or NAK) unless we already did; true
 * when it did. An explicit NAK (nak) for the PSN already gone back to,
 * after it was resent, is the responder's next round (resp_err_seq): the
 * resent packet was lost too, and it goes again. */
static bool comp_rewind(struct emu_qp *qp, uint32_t psn, bool nak)
{
	/* Every duplicate ACK of a go-back-N burst would rewind again and
	 * multiply the burst: one rewind per PSN until something progresses. */
	if (qp->x->rewound == XP_REWOUND_NAK && qp->x->rewind_psn == psn &&
	    !(nak && qp->x->rewind_resent))
		return false;
	if (!wire_psn_before(psn, qp->x->sq_psn))
		return false;
	qp->x->rewound = XP_REWOUND_NAK;
	qp->x->rewind_psn = psn;
	qp->x->rewind_resent = 0;
	qp->x->rd_single = qp->x->rd_jump = 0; /* everything from psn goes again */
	xp_sq_rewind(qp, psn);
	qp->x->req_stalled = 1;
	comp_cwnd_loss(qp->x);
	return true;
}

/* Responses within XP_RD_REORDER of the highest one seen are taken for
 * the stream that was already on its way (reordered or duplicated), not
 * for a gap in the answer to a re-issue (comp_implied_nak). */
#define XP_RD_REORDER 3

/* A response (or ACK) at psn past the head READ's missing one, from: an
 * implied NAK (IBTA 9.7.5.2, C7). The READ is re-issued from there once
 * per gap, no retry spent. Until that re-issue is answered, what arrives
 * past the gap is mostly the rest of what the responder was already
 * sending (the old READ streams, each re-issue answered with the whole
 * rest of the READ and of every READ resent behind it): each of those
 * re-issuing again made the responder send it all again, and the loss
 * multiplied itself (read_bw against rxe at 5 % loss: 6219 READ requests
 * for 50 READs). So after a re-issue (x->rd_hold) a response is ignored
 * (counted resp-ignored) while it continues that stream - it is beyond,
 * or within XP_RD_REORDER of, the highest response seen since - and
 * re-issues only when it is well behind it: a stream that began after
 * (the answer to the re-issue) has a gap of its own. The hold ends once
 * the answer is flowing (XP_RD_REORDER responses taken in sequence, or
 * everything seen since acknowledged: comp_rd_taken) or a timer resends
 * (comp_go_back): as kernel rxe's completer (comp.started_retry), which
 * however waits for the timeout when the answer has a gap. A re-issue
 * not answered within a loss probe's wait (xp_reissue_wait_ns) was
 * lost or the responder is slow: the next response past the gap asks
 * once more, so a lost re-issue does not wait for the retransmit
 * timeout while the old stream still arrives. */
static bool comp_later_reads(struct emu_qp *qp, uint32_t end);

static void comp_implied_nak(struct emu_qp *qp, uint32_t from, uint32_t psn, bool placed)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t ret = x->sq_psn;

	if (x->rd_hold && emu_now_ns() - x->rd_hold_at >= xp_reissue_wait_ns(qp)) {
		x->rd_hold = 0;
		if (x->rewound == XP_REWOUND_NAK && x->rewind_psn == from)
			x->rewound = XP_REWOUND_NO; /* the same gap asks again */
	}
	if (x->rd_hold) {
		bool behind = wire_psn_diff(x->rd_hold_hi, psn) >= XP_RD_REORDER;

		if (wire_psn_after(psn, x->rd_hold_hi))
			x->rd_hold_hi = psn;
		x->rd_hold_run = 0;
		if (!behind) {
			x->cnt.resp_ignored += !placed;
			xp_probe_defer(qp);
			return;
		}
		/* a stream that began after the re-issue lacks the same
		 * response: the answer's first one (or the re-issue) was lost
		 * too, and the gap asks again at once */
		if (x->rewound == XP_REWOUND_NAK && x->rewind_psn == from)
			x->rewound = XP_REWOUND_NO;
	}
	if (!comp_rewind(qp, from, false)) {
		x->cnt.resp_ignored += !placed;
		return;
	}
	x->rd_hold = 1;
	x->rd_hold_run = 0;
	x->rd_hold_hi = psn;
	x->rd_hold_at = emu_now_ns();
	/* Only the head READ goes again when everything sent after it is
	 * READs: their responses are placed as they come (comp_read_later),
	 * and resent they would each be answered again in full - at 5 % loss
	 * each round resent up to max_rd_atomic READs and the responder sent
	 * 27 times what was read (readloss_interop). The requester then goes
	 * on from where it stood (req.c, x->rd_jump). */
	x->rd_single = wire_psn_after(ret, xp_swqe(qp, x->sq_comp)->last_psn) &&
		       comp_later_reads(qp, ret);
	x->rd_ret = ret;
}

/* A READ response taken in sequence: the answer to a re-issue flows. */
static void comp_rd_taken(struct emu_xport_qp *x, uint32_t psn)
{
	if (x->rd_hold && (++x->rd_hold_run >= XP_RD_REORDER ||
			   !wire_psn_before(psn, x->rd_hold_hi)))
		x->rd_hold = 0;
}

/* The opcode the k-th response of a READ of sw->npkts packets must carry:
 * FIRST..MIDDLE..LAST, or ONLY. A READ whose request went more than once
 * (rd_resent: re-issued from the middle, or again after an RNR NAK or a
 * timeout) may be answered from where it was asked as a new message
 * (FIRST/ONLY: uroce's responder) or as the rest of the one the responder
 * had begun (MIDDLE/LAST: rxe's read_reply, which after an RNR NAK of a
 * READ even starts its first response as a MIDDLE), so both are taken
 * there; only the position of the end (LAST/ONLY) and every length stay
 * exact. */
static bool comp_read_pos_ok(const struct emu_xport_swqe *sw, uint32_t k, uint8_t op)
{
	bool first = op == WIRE_OP_RC_READ_RESP_FIRST || op == WIRE_OP_RC_READ_RESP_ONLY;

	if (k + 1 == sw->npkts)
		return op == WIRE_OP_RC_READ_RESP_LAST ? k > 0 || sw->rd_resent :
		       op == WIRE_OP_RC_READ_RESP_ONLY && (!k || sw->rd_resent);
	if (op != WIRE_OP_RC_READ_RESP_FIRST && op != WIRE_OP_RC_READ_RESP_MIDDLE)
		return false;
	return sw->rd_resent || first == !k;
}

/* Place READ response pkt, the next one READ WQE idx (sw) waits for:
 * 0 placed (sw DONE with its last), -EBADMSG not the response it waits
 * for (opcode, length), -EFAULT its memory cannot take it. */
static int comp_read_place(struct emu_qp *qp, uint32_t idx, struct emu_xport_swqe *sw,
			   const struct wire_pkt *pkt)
{
	struct uroce_send_wqe *w = xp_wqe(qp, idx);
	uint32_t psn = pkt->bth.psn, mtu = xp_mtu(qp);
	uint32_t k = wire_psn_dist(sw->first_psn, psn);
	uint32_t off = k * mtu;
	uint32_t want = sw->total_len - off < mtu ? sw->total_len - off : mtu;

	if (!comp_read_pos_ok(sw, k, xp_rc_op(pkt->bth.opcode)) || pkt->payload_len != want)
		return -EBADMSG;
	if (xp_sge_write_deferred(qp, emu_wqe_sges(w), w->num_sge, off, pkt->payload, want,
				  sw->mr_epoch, xp_wb_tag(XP_WB_READ, psn)))
		return -EFAULT;
	sw->resp_psn = wire_psn_next(psn);
	sw->resp_bytes += want;
	if (k + 1 == sw->npkts) {
		sw->state = EMU_SWQE_DONE;
		sw->status = IBV_WC_SUCCESS;
	}
	return 0;
}

static void comp_read_resp(struct emu_qp *qp, struct emu_xport_swqe *sw,
			   const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t psn = pkt->bth.psn;
	int r;

	if (psn != sw->resp_psn) {
		if (wire_psn_after(psn, sw->resp_psn))
			comp_implied_nak(qp, sw->resp_psn, psn, false); /* a response was lost */
		return;
	}
	r = comp_read_place(qp, x->sq_comp, sw, pkt);
	if (r == -EBADMSG) {
		/* not the response this READ is waiting for: a bad response
		 * (IBTA 9.7.5.2; mlx5 CQE syndrome "bad response"), not a loss
		 * to wait out with retries */
		xp_drop(qp, EMU_XDROP_BAD_RESP);
		comp_fail_head(qp, IBV_WC_BAD_RESP_ERR);
		return;
	}
	if (r) {
		comp_fail_head(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	x->acked_psn = sw->resp_psn;
	comp_rd_taken(x, psn);
	comp_progress_made(qp);
}

/* Is every WQE after the head that begins before end a READ whose
 * request went out? Then a re-issue of the head need not resend them:
 * their responses are placed as they come (comp_read_later). */
static bool comp_later_reads(struct emu_qp *qp, uint32_t end)
{
	const struct emu_xport_qp *x = qp->x;
	uint32_t n = 0;

	for (uint32_t idx = x->sq_comp + 1; idx != x->sq_fetch; idx++) {
		const struct emu_xport_swqe *sw = xp_swqe(qp, idx);

		if (sw->state == EMU_SWQE_NEW || !wire_psn_before(sw->first_psn, end))
			return true;
		if (++n > EMU_XPORT_MAX_RD_ATOMIC || !sw->need_resp ||
		    xp_wqe(qp, idx)->opcode != IBV_WR_RDMA_READ ||
		    (sw->state == EMU_SWQE_DONE && sw->status != IBV_WC_SUCCESS) ||
		    !wire_psn_before(sw->last_psn, x->sq_psn_hw))
			return false;
	}
	return true;
}

/* A READ response past the head READ: the responder is done with the
 * head (it answers in PSN order), whose missing responses were lost. The
 * response may still be the next one a later READ waits for: placed
 * there, as long as only READs stand between (a SEND or WRITE between
 * would be acknowledged by it out of order), so that re-issuing the
 * head does not make the responder send the later READs again
 * (comp_implied_nak). One that does not fit is left to the checks it
 * meets as the head. true: placed. */
static bool comp_read_later(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t psn = pkt->bth.psn;
	uint32_t n = 0;

	for (uint32_t idx = x->sq_comp + 1; idx != x->sq_fetch; idx++) {
		struct emu_xport_swqe *sw = xp_swqe(qp, idx);

		if (++n > EMU_XPORT_MAX_RD_ATOMIC || sw->state == EMU_SWQE_NEW || !sw->need_resp ||
		    xp_wqe(qp, idx)->opcode != IBV_WR_RDMA_READ)
			return false;
		if (!wire_psn_in_window(psn, sw->first_psn, sw->npkts))
			continue;
		if (sw->state == EMU_SWQE_DONE || psn != sw->resp_psn)
			return false;
		int r = comp_read_place(qp, idx, sw, pkt);

		if (r == -EFAULT) {
			/* failed when it is retired, in order (comp_wqe) */
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_PROT_ERR;
		}
		return !r;
	}
	return false;
}

static void comp_atomic_ack(struct emu_qp *qp, struct emu_xport_swqe *sw,
			    const struct wire_pkt *pkt)
{
	struct uroce_send_wqe *w = xp_wqe(qp, qp->x->sq_comp);
	uint64_t orig = pkt->atomicacketh.orig;

	if (pkt->bth.psn != sw->first_psn || sw->state == EMU_SWQE_DONE)
		return;
	if (xp_sge_copy(qp, emu_wqe_sges(w), w->num_sge, 0, &orig, 8, true,
			IBV_ACCESS_LOCAL_WRITE, sw->mr_epoch)) {
		comp_fail_head(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	sw->state = EMU_SWQE_DONE;
	sw->status = IBV_WC_SUCCESS;
	qp->x->acked_psn = wire_psn_next(pkt->bth.psn);
	comp_progress_made(qp);
}

/* ---- the state machine: one function per state, each returns the next;
 * xp_comp_rx's loop dispatches (and traces at debug level). ---- */

struct comp_ctx {
	struct emu_qp *qp;
	const struct wire_pkt *pkt;
	uint32_t psn;
	uint8_t cls;                /* enum wire_opc_class */
	uint8_t syn;                /* AETH syndrome (0 without AETH) */
	bool is_ack;
	enum wire_aeth_type type;
	struct emu_xport_swqe *sw;  /* head WQE */
	bool progress;              /* forward progress: renew retries, rearm */
	bool placed;                /* a READ response placed for a later READ */
	uint8_t status;             /* the head fails with it (comp_error); 0: by NAK code */
	uint8_t bad;                /* a malformed response: its status (0 none) */
	uint8_t bad_why;            /* ... and the drop reason it counts */
};

typedef enum emu_comp_state (*comp_state_fn)(struct comp_ctx *c);

/* What a response that cannot be taken as it is does to the head WQE
 * once it is known not to be stale (comp_check_psn): its length does not
 * fit its opcode (the parser's len_reason) or its AETH type is reserved:
 * a bad response (IBTA 9.7.5.2; mlx5: IBV_WC_BAD_RESP_ERR); a NAK with a
 * reserved code: a remote operational error, as rxe's check_ack says for
 * an "unexpected nak". Bit 7 of the syndrome is reserved and ignored. */
static enum emu_comp_state comp_judge(struct comp_ctx *c, const struct wire_pkt *pkt)
{
	if (pkt->len_reason != WIRE_OK) {
		c->bad = IBV_WC_BAD_RESP_ERR;
		c->bad_why = EMU_XDROP_BAD_RESP;
	} else if ((pkt->hdrs & WIRE_HDR_AETH) && !wire_aeth_syndrome_valid(c->syn)) {
		c->bad = c->type == WIRE_AETH_NAK ? IBV_WC_REM_OP_ERR : IBV_WC_BAD_RESP_ERR;
		c->bad_why = EMU_XDROP_ACK_SYNDROME;
	}
	return EMU_COMP_GET_WQE;
}

static enum emu_comp_state comp_get_ack(struct comp_ctx *c)
{
	struct emu_qp *qp = c->qp;
	const struct wire_pkt *pkt = c->pkt;

	enum emu_xport_drop why;

	if (!xp_rc_like(qp) ||
	    (qp->attr.qp_state != IBV_QPS_RTS && qp->attr.qp_state != IBV_QPS_SQD))
		why = EMU_XDROP_QP_STATE;
	else if (!wire_psn_before(c->psn, qp->x->sq_psn_hw))
		why = EMU_XDROP_ACK_PSN; /* a ghost: no request ever took this PSN */
	else
		return comp_judge(c, pkt);
	xp_drop(qp, why);
	return EMU_COMP_EXIT;
}

static enum emu_comp_state comp_get_wqe(struct comp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;

	if (x->sq_comp == x->sq_fetch)
		return EMU_COMP_EXIT;
	c->sw = xp_swqe(c->qp, x->sq_comp);
	if (c->sw->state == EMU_SWQE_NEW)
		return EMU_COMP_EXIT;
	return c->sw->state == EMU_SWQE_DONE ? EMU_COMP_COMP_WQE : EMU_COMP_CHECK_PSN;
}

/* IBTA 1.5 answers a FLUSH or an ATOMIC WRITE with a READ Response Only
 * of no payload; rxe (Linux 6.2+) answers both so. For a head that waits
 * for no response data it is an ACK of its PSN, read as one. */
static void comp_zero_read_ack(struct comp_ctx *c)
{
	if (xp_rc_op(c->pkt->bth.opcode) == WIRE_OP_RC_READ_RESP_ONLY && !c->pkt->payload_len &&
	    c->sw->rd_res && !c->sw->need_resp && c->type == WIRE_AETH_ACK) {
		c->cls = WIRE_OPC_ACK;
		c->is_ack = true;
	}
}

/* A response for a PSN already acknowledged: a duplicate, ignored. */
static bool comp_stale(const struct comp_ctx *c)
{
	return wire_psn_before(c->psn, c->qp->x->acked_psn);
}

/* The head WQE fails with status: the response was not one it can take. */
static enum emu_comp_state comp_bad_resp(struct comp_ctx *c, uint8_t status, uint8_t why)
{
	xp_drop(c->qp, (enum emu_xport_drop)why);
	c->status = status;
	return EMU_COMP_ERROR;
}

static enum emu_comp_state comp_check_psn(struct comp_ctx *c)
{
	struct emu_xport_swqe *sw = c->sw;

	if (c->bad) {
		if (comp_stale(c))
			return EMU_COMP_EXIT;
		/* past the head: it answers a later WQE. A head that waits
		 * for no response is acknowledged by it as by any response
		 * (the loop comes back here for the next head); one that
		 * waits for its READ/atomic data keeps waiting */
		if (!wire_psn_before(sw->last_psn, c->psn))
			return comp_bad_resp(c, c->bad, c->bad_why);
		if (sw->need_resp)
			return EMU_COMP_EXIT;
	}
	comp_zero_read_ack(c);

	/* WQEs wholly before the packet's PSN are implicitly acknowledged (a
	 * plain ACK also covers its own PSN). */
	if (wire_psn_before(sw->last_psn, c->psn) ||
	    (c->is_ack && c->type == WIRE_AETH_ACK && sw->last_psn == c->psn)) {
		if (sw->need_resp) {
			/* the responder is past a READ/atomic whose response
			 * we never saw */
			if (c->cls == WIRE_OPC_READ_RESP && !c->bad)
				c->placed = comp_read_later(c->qp, c->pkt);
			return EMU_COMP_ERROR_RETRY;
		}
		sw->state = EMU_SWQE_DONE;
		sw->status = IBV_WC_SUCCESS;
		c->qp->x->acked_psn = wire_psn_next(sw->last_psn);
		c->progress = true;
		return EMU_COMP_COMP_WQE;
	}
	if (wire_psn_before(c->psn, sw->first_psn) && !c->is_ack)
		return EMU_COMP_EXIT; /* stale response */
	return EMU_COMP_CHECK_ACK;
}

static enum emu_comp_state comp_comp_wqe(struct comp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;

	/* a head that failed on the way here was retired, the QP flushed */
	if (x->sq_comp == x->sq_fetch || c->qp->attr.qp_state == IBV_QPS_ERR)
		return EMU_COMP_DONE;
	comp_wqe(c->qp);
	return c->qp->attr.qp_state == IBV_QPS_ERR ? EMU_COMP_DONE : EMU_COMP_GET_WQE;
}

static enum emu_comp_state comp_check_ack(struct comp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	bool read = xp_wqe(c->qp, x->sq_comp)->opcode == IBV_WR_RDMA_READ;
	bool data = c->cls == WIRE_OPC_READ_RESP || c->cls == WIRE_OPC_ATOMIC_ACK;

	/* IBTA 9.7.5.2: READ data only for a READ, an atomic's result only
	 * for an atomic, and either with an ACK syndrome (an error comes as
	 * an Acknowledge NAK); anything else is a bad response - once it is
	 * not a duplicate of something already taken */
	if (data && comp_stale(c))
		return EMU_COMP_EXIT;
	if (data && (!c->sw->need_resp || read != (c->cls == WIRE_OPC_READ_RESP) ||
		     ((c->pkt->hdrs & WIRE_HDR_AETH) && c->type != WIRE_AETH_ACK)))
		return comp_bad_resp(c, IBV_WC_BAD_RESP_ERR, EMU_XDROP_BAD_RESP);
	if (c->cls == WIRE_OPC_READ_RESP)
		return EMU_COMP_READ;
	if (c->cls == WIRE_OPC_ATOMIC_ACK)
		return EMU_COMP_ATOMIC;
	if (c->type == WIRE_AETH_ACK)
		return EMU_COMP_WRITE_SEND;
	if (c->type == WIRE_AETH_RNR_NAK)
		return EMU_COMP_RNR_RETRY;
	if (wire_aeth_value(c->syn) == WIRE_NAK_PSN_SEQ_ERR) {
		x->cnt.seq_naks_rcvd++;
		return EMU_COMP_ERROR_RETRY;
	}
	x->cnt.naks_rcvd++;
	return EMU_COMP_ERROR;
}

static enum emu_comp_state comp_read(struct comp_ctx *c)
{
	/* response data placed is forward progress: it renews the retry
	 * budget as an ACK does, or a long READ on a lossy link would run out
	 * of retries over its lifetime */
	uint32_t before = c->sw->resp_bytes;

	comp_read_resp(c->qp, c->sw, c->pkt);
	if (c->qp->attr.qp_state == IBV_QPS_ERR)
		return EMU_COMP_DONE; /* the READ failed (bad response, placement) */
	if (c->sw->resp_bytes != before || c->sw->state == EMU_SWQE_DONE)
		c->progress = true;
	return EMU_COMP_UPDATE_COMP;
}

static enum emu_comp_state comp_atomic(struct comp_ctx *c)
{
	comp_atomic_ack(c->qp, c->sw, c->pkt);
	if (c->qp->attr.qp_state == IBV_QPS_ERR)
		return EMU_COMP_DONE;
	if (c->sw->state == EMU_SWQE_DONE)
		c->progress = true;
	return EMU_COMP_UPDATE_COMP;
}

static enum emu_comp_state comp_write_send(struct comp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	uint32_t next = wire_psn_next(c->psn);

	/* ACK inside a multi-packet message: partial progress */
	if (wire_psn_after(next, x->acked_psn) || next == x->acked_psn) {
		if (next != x->acked_psn)
			c->progress = true;
		x->acked_psn = next;
	}
	return EMU_COMP_UPDATE_COMP;
}

static enum emu_comp_state comp_update_comp(struct comp_ctx *c)
{
	return c->sw && c->sw->state == EMU_SWQE_DONE ? EMU_COMP_COMP_WQE : EMU_COMP_DONE;
}

/* An explicit sequence NAK back to from: spend a retry unless it is stale
 * or a consequence of a go-back-N already under way. */
static enum emu_comp_state comp_nak_retry(struct comp_ctx *c, uint32_t from)
{
	struct emu_xport_qp *x = c->qp->x;

	if (!wire_psn_before(from, x->sq_psn) || wire_psn_before(from, x->acked_psn))
		return EMU_COMP_DONE; /* stale (reordered) NAK */
	/* We already went back to this PSN (an RNR NAK, or an earlier NAK)
	 * and nothing progressed since: this NAK was triggered by packets
	 * sent before that, e.g. the pipeline behind an RNR'd SEND at a
	 * responder that NAKs the gap too (rxe). Spending a retry here would
	 * turn a slow receiver into RETRY_EXC_ERR. Unless that packet went
	 * again since a NAK: then the NAK is for the resent one, lost too. */
	if (x->rewound && x->rewind_psn == from &&
	    !(x->rewound == XP_REWOUND_NAK && x->rewind_resent))
		return EMU_COMP_DONE;
	if (!c->sw->need_resp && wire_psn_after(from, x->acked_psn)) {
		/* a sequence NAK acknowledges every PSN before it: within a
		 * long message that is progress, and each go-back-N round
		 * must not spend the retry budget */
		x->acked_psn = from;
		c->progress = true;
	}
	if (!x->retry_left) {
		x->cnt.retry_exceeded++;
		comp_fail_head(c->qp, IBV_WC_RETRY_EXC_ERR);
		return EMU_COMP_DONE;
	}
	x->retry_left--;
	comp_rewind(c->qp, from, true);
	comp_rearm(c->qp);
	return EMU_COMP_DONE;
}

static enum emu_comp_state comp_error_retry(struct comp_ctx *c)
{
	struct emu_xport_swqe *sw = c->sw;
	uint32_t from = sw->need_resp ? sw->resp_psn : c->psn;

	if (!sw->need_resp && wire_psn_before(from, sw->first_psn))
		from = sw->first_psn;
	if (!c->is_ack || c->type != WIRE_AETH_NAK) {
		/* implicit NAK: rewind without spending a retry */
		if (sw->need_resp)
			comp_implied_nak(c->qp, from, c->psn, c->placed);
		else
			comp_rewind(c->qp, from, false);
		return EMU_COMP_DONE;
	}
	return comp_nak_retry(c, from);
}

static enum emu_comp_state comp_rnr_retry(struct comp_ctx *c)
{
	struct emu_qp *qp = c->qp;
	struct emu_xport_qp *x = qp->x;
	uint64_t wait;

	x->cnt.rnr_naks_rcvd++;
	if (qp->attr.rnr_retry != WIRE_RNR_RETRY_INFINITE) {
		if (!x->rnr_left) {
			x->cnt.rnr_retry_exceeded++;
			comp_fail_head(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			return EMU_COMP_DONE;
		}
		x->rnr_left--;
	}
	wait = (uint64_t)wire_rnr_timer_us(wire_aeth_value(c->syn)) * 1000u;
	x->rnr_psn = wire_psn_before(c->psn, c->sw->first_psn) ? c->sw->first_psn : c->psn;
	/* everything after rnr_psn is un-acked and goes again when the timer
	 * fires: a sequence NAK for rnr_psn until then (or until progress) is
	 * a consequence, not a loss */
	x->rewound = XP_REWOUND_NAK;
	x->rewind_psn = x->rnr_psn;
	/* what the responder NAKs behind the RNR'd PSN (rxe NAKs the gap)
	 * left before it went again: no new loss (comp_nak_retry) */
	x->rewind_resent = 0;
	x->rnr_at = emu_now_ns() + (wait ? wait : 1);
	x->retrans_at = x->probe_at = 0;
	xp_act_add(qp);
	return EMU_COMP_DONE;
}

static enum emu_comp_state comp_error(struct comp_ctx *c)
{
	comp_fail_head(c->qp, c->status ? c->status : comp_nak_status(wire_aeth_value(c->syn)));
	return EMU_COMP_DONE;
}

static const comp_state_fn comp_state_fns[EMU_COMP_NSTATES] = {
	[EMU_COMP_GET_ACK] = comp_get_ack,
	[EMU_COMP_GET_WQE] = comp_get_wqe,
	[EMU_COMP_CHECK_PSN] = comp_check_psn,
	[EMU_COMP_COMP_WQE] = comp_comp_wqe,
	[EMU_COMP_CHECK_ACK] = comp_check_ack,
	[EMU_COMP_READ] = comp_read,
	[EMU_COMP_ATOMIC] = comp_atomic,
	[EMU_COMP_WRITE_SEND] = comp_write_send,
	[EMU_COMP_UPDATE_COMP] = comp_update_comp,
	[EMU_COMP_ERROR_RETRY] = comp_error_retry,
	[EMU_COMP_RNR_RETRY] = comp_rnr_retry,
	[EMU_COMP_ERROR] = comp_error,
};

/* The head moved on to a READ some of whose responses already came
 * (comp_read_later) and one is missing while a later one was seen: it
 * was lost, and the READ is re-issued from there at once (the answer to
 * the re-issue of the one before flows: no hold of its own applies). */
static void comp_head_gap(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_swqe *sw;

	if (x->sq_comp == x->sq_fetch || qp->attr.qp_state != IBV_QPS_RTS)
		return;
	sw = xp_swqe(qp, x->sq_comp);
	if (sw->state == EMU_SWQE_NEW || sw->state == EMU_SWQE_DONE || !sw->need_resp ||
	    xp_wqe(qp, x->sq_comp)->opcode != IBV_WR_RDMA_READ ||
	    !x->rd_seen_ok || !wire_psn_after(x->rd_seen_hi, sw->resp_psn) ||
	    !wire_psn_before(sw->last_psn, x->sq_psn_hw))
		return;
	x->rd_hold = 0;
	comp_implied_nak(qp, sw->resp_psn, x->rd_seen_hi, true);
}

/* A response packet (ACK, READ response, atomic ACK) for an RC QP. */
void xp_comp_rx(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	enum emu_comp_state st = EMU_COMP_GET_ACK;
	struct comp_ctx c;
	bool trace = emu_log_enabled(EMU_LOG_LVL_DEBUG);
	uint32_t acked = x->acked_psn, head = x->sq_comp;

	memset(&c, 0, sizeof(c));
	c.qp = qp;
	c.pkt = pkt;
	c.psn = pkt->bth.psn;
	c.cls = pkt->op->cls;
	/* bit 7 of the syndrome is reserved: ignored, as IBTA has receivers
	 * ignore reserved bits (rxe reads the type the same way) */
	c.syn = (pkt->hdrs & WIRE_HDR_AETH) ? pkt->aeth.syndrome & 0x7f : 0;
	c.is_ack = c.cls == WIRE_OPC_ACK;
	c.type = wire_aeth_type(c.syn);
	if (c.cls == WIRE_OPC_READ_RESP && st == EMU_COMP_GET_ACK &&
	    (!x->rd_seen_ok || wire_psn_after(c.psn, x->rd_seen_hi)) &&
	    wire_psn_before(c.psn, x->sq_psn_hw)) {
		x->rd_seen_hi = c.psn;
		x->rd_seen_ok = 1;
	}
	while (st != EMU_COMP_EXIT && st != EMU_COMP_DONE) {
		if (trace)
			EMU_LOG(DEBUG, "qp %u psn %u comp %s\n", qp->qpn, c.psn,
				emu_comp_state_name[st]);
		st = comp_state_fns[st] ? comp_state_fns[st](&c) : EMU_COMP_DONE;
	}
	if (x->sq_comp != head)
		comp_head_gap(qp);
	if (x->rtt_at && wire_psn_after(x->acked_psn, x->rtt_psn))
		xp_rtt_end(x);
	if (c.progress && qp->attr.qp_state != IBV_QPS_ERR)
		comp_progress_made(qp);
	comp_cwnd_grow(x, wire_psn_diff(x->acked_psn, acked));
	xp_infl_sync(qp);
	if (qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_SQD) {
		if (!comp_outstanding(qp))
			x->retrans_at = x->probe_at = 0;
		x->req_sched = 1; /* xp_run runs the requester next */
		comp_check_drained(qp);
	}
}

/* Go back to the oldest unacknowledged packet of the head WQE sw, and
 * resend at most XP_GBN_BURST packets until an ACK moves the bound
 * (docs/transport.md, "Bounded go-back-N after a timeout"); a sequence
 * NAK for that PSN, sent for packets that left before, is no new loss. */
static void comp_go_back(struct emu_qp *qp, const struct emu_xport_swqe *sw, uint16_t burst)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t from = sw->need_resp ? sw->resp_psn : sw->first_psn;

	if (!sw->need_resp && wire_psn_in_window(x->acked_psn, sw->first_psn, sw->npkts))
		from = x->acked_psn;
	xp_sq_rewind(qp, from);
	x->rewound = XP_REWOUND_TIMEOUT;
	x->rewind_psn = from;
	x->gbn_bound = XP_GBN_TIMEOUT;
	x->gbn_win = burst;
	x->gbn_end = wire_psn_add(from, burst);
	x->gbn_stop = x->sq_psn_hw;
	x->rd_hold = 0; /* what answers this resend may re-issue again */
	x->rd_single = x->rd_jump = 0;
	x->rtt_at = 0; /* what is resent is not timed (Karn) */
	x->req_sched = 1;
}

/* The loss probe (timer.c): no ACK for a few round trips, the retransmit
 * timeout not yet due. The oldest packet goes again (one: the bound then
 * doubles with each ACK, as after a timeout), no retry is spent and the
 * window stays: it is a loss no NAK reported (the last packets of a
 * burst, a resent packet lost again), whose NAK, if one follows, cuts the
 * window, or as likely on a shared machine a peer descheduled for a
 * while, which F-RTO in comp_gbn_progress then finds. */
static void comp_probe(struct emu_qp *qp, uint64_t now)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_swqe *sw;

	x->probe_at = 0;
	if (!comp_outstanding(qp) || x->sq_comp == x->sq_fetch || x->rnr_at)
		return;
	/* The QP met no transmit buffer since the probe was armed: the
	 * silence is our own back-pressure (drop.tx-nobuf), not a loss on
	 * the wire, and a probe would only add a duplicate. Wait again. */
	if (x->cnt.tx_no_buf != x->probe_nobuf) {
		x->probe_nobuf = x->cnt.tx_no_buf;
		x->probe_at = now + (x->retrans_at > now ? (x->retrans_at - now) / 2 : 0);
		if (x->probe_at <= now || (x->retrans_at && x->probe_at >= x->retrans_at))
			x->probe_at = 0;
		return;
	}
	sw = xp_swqe(qp, x->sq_comp);
	if (sw->state == EMU_SWQE_DONE || sw->state == EMU_SWQE_NEW)
		return;
	/* A READ of more than one response is not probed: asked again, the
	 * responder sends the whole rest of it again, and a READ that is only
	 * slow (thousands of responses built at once on a loaded host) would
	 * be asked again at every probe until the mbufs run out (32 MiB
	 * ib_read_bw failed with RETRY_EXC on af_packet); its loss is
	 * found by the gap in its responses or the retransmit timeout -
	 * unless its responses had begun: a responder sends a READ's
	 * responses back to back, and silence after some of them is the
	 * rest lost (the last response of a re-issue's answer: with only the
	 * head READ re-issued, no later READ's responses follow to show the
	 * gap; readloss_interop timed out 13 times without this). */
	if (sw->need_resp && sw->total_len > xp_mtu(qp) && !sw->resp_bytes)
		return;
	x->cnt.probes++;
	comp_go_back(qp, sw, 1);
	xp_probe_rearm(qp, now);
}

/* Retransmit, probe and RNR timers of one QP. */
void xp_comp_timeout(struct emu_qp *qp, uint64_t now)
{
	struct emu_xport_qp *x = qp->x;

	if (x->probe_at && now >= x->probe_at && !(x->retrans_at && now >= x->retrans_at))
		comp_probe(qp, now);

	if (x->rnr_at && now >= x->rnr_at) {
		x->rnr_at = 0;
		/* the responder dropped everything after the RNR'd PSN and
		 * may still have no receive WQE: one packet asks first, not
		 * the whole pipeline behind it (a receiver that keeps running
		 * dry would take and drop it every round) */
		x->gbn_bound = XP_GBN_RNR;
		x->gbn_end = wire_psn_next(x->rnr_psn);
		x->gbn_stop = x->sq_psn_hw;
		xp_sq_rewind(qp, x->rnr_psn);
		comp_rearm(qp);
		x->req_sched = 1;
	}
	if (x->retrans_at && now >= x->retrans_at) {
		struct emu_xport_swqe *sw;

		x->retrans_at = 0;
		if (!comp_outstanding(qp) || x->sq_comp == x->sq_fetch)
			return;
		x->cnt.timeouts++;
		sw = xp_swqe(qp, x->sq_comp);
		if (sw->state == EMU_SWQE_DONE) {
			xp_comp_progress(qp);
			return;
		}
		if (!x->retry_left) {
			x->cnt.retry_exceeded++;
			comp_fail_head(qp, IBV_WC_RETRY_EXC_ERR);
			return;
		}
		x->retry_left--;
		comp_cwnd_cut(x);
		comp_go_back(qp, sw, XP_GBN_BURST);
		comp_rearm(qp);
	}
}
