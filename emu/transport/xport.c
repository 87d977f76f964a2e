/* SPDX-License-Identifier: MIT */
/* Transport entry points called by the core: QP setup, doorbells, packet
 * dispatch, the poll of the timers (timer.c keeps the list). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "xport_int.h"

/* Allocate the private queues; idempotent. 0 or -ENOMEM. */
int xp_qp_alloc(struct emu_qp *qp);
int xp_qp_alloc(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t entries = qp->sq.entries, stride = qp->sq.stride;

	if (stride < UROCE_SEND_WQE_HDR)
		stride = UROCE_SEND_WQE_HDR;
	if (!x->sq_copy && entries) {
		x->sq_copy = calloc(entries, stride);
		x->swqe = calloc(entries, sizeof(*x->swqe));
		if (!x->sq_copy || !x->swqe) {
			free(x->sq_copy);
			free(x->swqe);
			x->sq_copy = NULL;
			x->swqe = NULL;
			return -ENOMEM;
		}
		x->sq_entries = entries;
		x->sq_stride = stride;
	}
	if (!x->rwqe) {
		/* room for the SGEs this QP's receives can have, not
		 * EMU_MAX_SGE: 16k QPs must fit in ~2 KB of daemon memory
		 * each (emu_recv_take never writes past max_sge) */
		uint32_t n = qp->srq ? qp->srq->max_sge : qp->cap.max_recv_sge;

		if (qp->type == IBV_QPT_XRC_RECV)
			n = EMU_MAX_SGE; /* whichever XRC SRQ a request names */

		if (n < 1)
			n = 1;
		if (n > EMU_MAX_SGE)
			n = EMU_MAX_SGE;
		x->rwqe = calloc(1, offsetof(struct emu_recv_wqe, sge) + n * sizeof(struct uroce_sge));
		if (!x->rwqe)
			return -ENOMEM;
	}
	/* responder resources are sized at RTR (max_dest_rd_atomic) */
	return 0;
}

void emu_xport_qp_init(struct emu_qp *qp)
{
	memset(qp->x, 0, sizeof(*qp->x));
	/* failure is reported again by emu_qp_modify (RESET -> INIT) */
	(void)xp_qp_alloc(qp);
}

static void xp_tomb_add(struct emu_qp *qp)
{
	struct emu_dev *d = qp->dev;
	struct emu_xport_tomb *t;

	if (!d || qp->type != IBV_QPT_RC || !qp->x->path.valid ||
	    qp->attr.qp_state == IBV_QPS_RESET || qp->attr.qp_state == IBV_QPS_INIT)
		return;
	t = &d->x->tomb[d->x->tomb_next++ % EMU_XPORT_TOMB_MAX];
	t->qpn = qp->qpn;
	t->dest_qpn = qp->attr.dest_qp_num;
	t->epsn = qp->x->epsn;
	t->msn = qp->x->msn;
	t->path = qp->x->path;
	t->expires_ns = emu_now_ns() + EMU_XPORT_TOMB_NS;
}

/* A request for a QPN nobody owns: acknowledge it if it repeats what a
 * recently destroyed QP had already received. */
static void xp_tomb_rx(struct emu_dev *d, const struct wire_pkt *pkt)
{
	uint32_t qpn = pkt->bth.dqpn;

	if (wire_opcode_transport(pkt->bth.opcode) != WIRE_TR_RC || !pkt->op ||
	    (pkt->op->flags & WIRE_OPF_RESP))
		return;
	for (unsigned i = 0; i < EMU_XPORT_TOMB_MAX; i++) {
		struct emu_xport_tomb *t = &d->x->tomb[i];

		if (!t->qpn || t->qpn != qpn)
			continue;
		if (emu_now_ns() > t->expires_ns) {
			t->qpn = 0;
			return;
		}
		/* the live QP's source check (xp_src_ok): a forged duplicate
		 * must not make us ACK the real peer */
		if (memcmp(pkt->ip.src.raw, t->path.dgid.raw, 16)) {
			d->cnt.drops[EMU_DROP_SRC_MISMATCH]++;
			d->x->xdrops[EMU_XDROP_SRC]++;
			return;
		}
		if (!wire_psn_before(pkt->bth.psn, t->epsn))
			return; /* new work for a dead QP: nothing to say */
		/* only the shell's dev, path and counters are used to build;
		 * its transport state follows it, as in every QP */
		struct {
			struct emu_qp qp;
			struct emu_xport_qp x;
		} shell;
		struct wire_pkt ack;

		memset(&shell, 0, sizeof(shell));
		shell.qp.x = &shell.x;
		shell.qp.dev = d;
		shell.qp.type = IBV_QPT_RC;
		shell.qp.qpn = qpn;
		shell.qp.attr.dest_qp_num = t->dest_qpn;
		xp_pkt_init(&shell.qp, &t->path, &ack, WIRE_OP_RC_ACK, t->dest_qpn,
			    wire_psn_add(t->epsn, WIRE_PSN_MASK)); /* epsn - 1 */
		ack.aeth.syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
		ack.aeth.msn = t->msn & WIRE_PSN_MASK;
		(void)xp_tx(&shell.qp, &t->path, &ack, NULL, NULL, NULL);
		return;
	}
}

void emu_xport_qp_fini(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	/* An ACK still owed (held for a reply that will not come now, or
	 * coalesced and not yet flushed) leaves before the QP does:
	 * otherwise the peer learns of it only through its loss probe and
	 * our tomb's answer (net_link_drops with --ack-hold-us 60: the last
	 * message's ACK, held when the program destroyed its QP). One behind
	 * READ responses goes with them, and they are given up here. */
	if (x->ack_pending && !x->rd_pend && qp->attr.qp_state >= IBV_QPS_RTR &&
	    x->path.valid) {
		xp_resp_send_ack(qp);
		emu_tx_flush(qp->dev);
	}
	xp_tomb_add(qp);
	xp_cnt_retire(qp);
	xp_act_del(qp);
	xp_resp_release(qp);
	xp_infl_release(qp);
	free(x->sq_copy);
	free(x->swqe);
	free(x->rwqe);
	free(x->res);
	xp_rp_reset(qp);
	memset(x, 0, sizeof(*x));
}

void xp_run(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	/* the completer schedules nothing for the requester from
	 * xp_comp_progress, so one pass each settles it */
	if (x->req_sched) {
		x->req_sched = 0;
		xp_req_progress(qp);
	}
	if (x->comp_sched) {
		x->comp_sched = 0;
		xp_comp_progress(qp);
	}
}

void xp_req_kick(struct emu_qp *qp)
{
	qp->x->req_sched = 1;
	xp_run(qp);
}

void emu_xport_sq_kick(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	/* the application's post after a message ended here: the reply of a
	 * ping-pong; an ACK held for it goes first, in the same TX burst.
	 * First: the request may take every TX buffer there is (a 1 MB reply
	 * through 64 mbufs, net_link_drops), and an ACK that finds none is
	 * lost (the peer's probe resends); the order made no difference to
	 * the latency measured (docs/performance.md, "One burst per hop") */
	if (x->rx_msg_end) {
		x->rx_msg_end = 0;
		x->ack_pp = 1;
	}
	if (x->ack_pending && x->ack_hold_at)
		xp_resp_send_ack(qp);
	switch (qp->attr.qp_state) {
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		xp_req_kick(qp);
		break;
	case IBV_QPS_ERR:
	case IBV_QPS_SQE:
		xp_flush_sq(qp);
		break;
	default:
		break; /* WRs posted before RTS wait for it */
	}
	emu_tx_flush(qp->dev);
}

void emu_xport_rq_kick(struct emu_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		xp_flush_rq(qp);
}

void emu_xport_srq_kick(struct emu_srq *srq)
{
	/* Receivers take SRQ WQEs on demand; an RNR-NAKed requester retries
	 * on its own timer. */
	(void)srq;
}

/* Congestion notification (RoCEv2 Annex A17.9): the notification-point half
 * of DCQCN. A CE-marked packet makes its receiver send a CNP to the sending
 * QP, at most one per min_time_between_cnps per QP; a received CNP is
 * counted and goes to the reaction point (dcqcn.c). */
/* Where a CNP for pkt goes: connected QPs answer their peer; UD answers
 * the datagram's source (reversed addresses). */
static bool cnp_path(struct emu_qp *qp, const struct wire_pkt *pkt,
		     struct emu_xport_path *p, uint32_t *dqpn)
{
	if (qp->type != IBV_QPT_UD) {
		*p = qp->x->path; /* set at RTR, which the caller checked */
		*dqpn = qp->attr.dest_qp_num;
		return true;
	}
	if (!(pkt->hdrs & WIRE_HDR_DETH))
		return false;
	memset(p, 0, sizeof(*p));
	memcpy(p->dmac, pkt->smac, 6);
	memcpy(p->sgid.raw, pkt->ip.dst.raw, 16);
	memcpy(p->dgid.raw, pkt->ip.src.raw, 16);
	p->ipv6 = pkt->ip.version == 6;
	p->hop_limit = 64;
	p->sport = wire_udp_sport(qp->qpn);
	p->valid = 1;
	*dqpn = pkt->deth.sqpn;
	return true;
}

void xp_cnp_rx(struct emu_qp *qp)
{
	qp->x->cnt.cnp_rcvd++;
	qp->dev->x->dcqcn_cnt.cnp_rcvd++;
	if (qp->dev->x->dcqcn.rp && qp->attr.qp_state >= IBV_QPS_RTS &&
	    qp->attr.qp_state != IBV_QPS_ERR)
		xp_rp_cnp(qp, emu_now_ns());
}

void xp_ce_rx(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_path path;
	struct wire_pkt d;
	uint32_t dqpn;
	uint64_t now;

	x->cnt.ce_rcvd++;
	qp->dev->x->dcqcn_cnt.ce_rcvd++;
	if (!qp->dev->x->dcqcn.np || qp->attr.qp_state < IBV_QPS_RTR ||
	    qp->attr.qp_state == IBV_QPS_ERR)
		return;
	now = emu_now_ns();
	if (x->cnt.cnp_sent &&
	    now - x->cnp_last < (uint64_t)qp->dev->x->dcqcn.min_time_between_cnps * 1000)
		return;
	if (!cnp_path(qp, pkt, &path, &dqpn))
		return;
	xp_pkt_init(qp, &path, &d, WIRE_OP_CNP, dqpn, 0);
	d.bth.becn = true;
	/* ConnectX's cnp_dscp; the CNP must not itself be marked
	 * ECN-capable and echo forever */
	d.ip.tos = (uint8_t)(qp->dev->x->dcqcn.cnp_dscp << 2);
	if (xp_tx(qp, &path, &d, NULL, NULL, NULL))
		return;
	x->cnp_last = now;
	x->cnt.cnp_sent++;
	qp->dev->x->dcqcn_cnt.cnp_sent++;
}

/* A connected QP takes packets only from its peer: the source IP must be
 * the path's destination GID (IPv4 both as IPv4-mapped GIDs), as rxe's
 * check_addr. The UDP source port varies per sender flow and is not used.
 * Before RTR there is no path; the state checks drop those packets. */
static bool xp_src_ok(const struct emu_qp *qp, const struct wire_pkt *pkt)
{
	if (qp->attr.qp_state < IBV_QPS_RTR)
		return true;
	return !memcmp(pkt->ip.src.raw, qp->x->path.dgid.raw, 16);
}

const char *const emu_xport_drop_name[EMU_XDROP_NUM] = {
	[EMU_XDROP_QP_STATE] = "qp-state",
	[EMU_XDROP_OPCODE] = "bad-opcode",
	[EMU_XDROP_SRC] = "src-mismatch",
	[EMU_XDROP_UD_INVALID] = "ud-invalid",
	[EMU_XDROP_UD_NO_RECV] = "ud-no-recv",
	[EMU_XDROP_UC_GAP] = "uc-gap",
	[EMU_XDROP_UC_INV_REQ] = "uc-inv-req",
	[EMU_XDROP_UC_NO_RECV] = "uc-no-recv",
	[EMU_XDROP_UC_RKEY] = "uc-rkey",
	[EMU_XDROP_ACK_PSN] = "ack-psn",
	[EMU_XDROP_ACK_SYNDROME] = "ack-syndrome",
	[EMU_XDROP_BAD_RESP] = "bad-resp",
	[EMU_XDROP_RD_OVER] = "rd-atomic-over",
};

void emu_xport_rx(struct emu_dev *d, struct emu_qp *qp, const struct wire_pkt *pkt)
{
	uint8_t tr;
	bool ok;

	if (!qp) {
		/* counted by the core (EMU_DROP_UNKNOWN_QP) */
		xp_tomb_rx(d, pkt);
		return;
	}
	tr = wire_opcode_transport(pkt->bth.opcode);
	if (tr == WIRE_TR_CNP && pkt->bth.opcode == WIRE_OP_CNP) {
		/* a CNP slows the QP down: only its peer may send one (UD
		 * talks to anyone, and anyone may answer) */
		if (qp->type != IBV_QPT_UD && !xp_src_ok(qp, pkt)) {
			d->cnt.drops[EMU_DROP_SRC_MISMATCH]++;
			xp_drop(qp, EMU_XDROP_SRC);
			return;
		}
		xp_cnp_rx(qp);
		return;
	}
	ok = (tr == WIRE_TR_RC && qp->type == IBV_QPT_RC) ||
	     (tr == WIRE_TR_UC && qp->type == IBV_QPT_UC) ||
	     (tr == WIRE_TR_UD && qp->type == IBV_QPT_UD) ||
	     /* XRC: an INI QP only sends requests, a TGT QP only answers */
	     (tr == WIRE_TR_XRC && pkt->op && (pkt->op->flags & WIRE_OPF_RESP) &&
	      qp->type == IBV_QPT_XRC_SEND) ||
	     (tr == WIRE_TR_XRC && pkt->op && (pkt->op->flags & WIRE_OPF_REQ) &&
	      qp->type == IBV_QPT_XRC_RECV);
	if (!ok || !pkt->op || !(pkt->op->flags & WIRE_OPF_VALID)) {
		xp_drop(qp, EMU_XDROP_OPCODE);
		return;
	}
	if (tr != WIRE_TR_UD && !xp_src_ok(qp, pkt)) {
		d->cnt.drops[EMU_DROP_SRC_MISMATCH]++;
		xp_drop(qp, EMU_XDROP_SRC);
		return;
	}
	qp->x->cnt.rx_pkts++;
	qp->x->cnt.rx_bytes += pkt->frame_len;
	if (__builtin_expect((pkt->ip.tos & WIRE_ECN_MASK) == WIRE_ECN_CE, 0))
		xp_ce_rx(qp, pkt);
	if (pkt->op->flags & WIRE_OPF_RESP) {
		xp_comp_rx(qp, pkt);
		xp_run(qp);
		d->x->rx_expect = qp->x->acked_psn != qp->x->sq_psn_hw;
	} else {
		xp_resp_rx(qp, pkt);
		d->x->rx_expect = !(pkt->op->flags & WIRE_OPF_LAST);
	}
	emu_tx_flush(d);
}

/* Whether the last packet received says that more will follow without
 * any application's doing: a request that is not its message's last
 * packet, or a response that leaves packets of its QP unacknowledged.
 * The engine spins after RX only then (engine.c): a ping-pong's next
 * frame waits for an application on the other host, and spinning for
 * it on a shared machine only takes the core that application needs. */
bool emu_xport_rx_expected(const struct emu_dev *d)
{
	/* also while an ACK waits for its QP's reply (resp_ack_hold): that
	 * reply is our own application's post, due within the hold */
	return d->x->rx_expect || (d->x->hold_until && emu_now_ns() < d->x->hold_until);
}

/* When the pending ACK of x is due: 0 at once, or the end of its hold
 * (resp.c, resp_ack_hold); a QP in ERR sends it at once. */
static uint64_t xp_ack_due(const struct emu_xport_qp *x)
{
	return x->ack_hold_at && XQP(x)->attr.qp_state != IBV_QPS_ERR ? x->ack_hold_at : 0;
}

void emu_xport_ack_hold_set(struct emu_dev *d, uint32_t ns)
{
	d->x->ack_hold_ns = ns;
}

static bool xp_qp_idle(const struct emu_xport_qp *x)
{
	return !x->ack_pending && !x->retrans_at && !x->probe_at && !x->rnr_at && !x->req_stalled &&
	       !xp_rp_waiting(x) && !x->rd_pend;
}

/* A frame of qp's comes back to this device: the loopback ring, or the
 * port's self ring (two QPs of one device, the peer's MAC is ours). */
static bool xp_to_self(const struct emu_qp *qp)
{
	return qp->dev->loopback || !memcmp(qp->x->path.dmac, qp->dev->mac, 6);
}

/* The ACKs due now, of every QP, before any QP's timers: a coalesced ACK
 * at the first poll after its burst, one held for the reply at the end of
 * its hold (one that waited in vain ends the QP's ping-pong,
 * resp_ack_hold), one that found no TX buffer again (resp_ack_nobuf).
 * All first because on a device whose frames come back to itself the ACK
 * one QP owes is what another QP's expired timer waits for, and after the
 * engine was off its core both fall due in the same poll: sent after the
 * timer, the ACK came one probe too late (net_link_drops with
 * --ack-hold-us 60: the engine off its core 2.4 ms while two busy-polling
 * ibv_rc_pingpong took both cores, a probe in 4 of 5 runs). Returns
 * whether one went to our own device: it arrives with the next RX burst,
 * and the caller's expired timers wait for that. */
static bool xp_poll_acks(struct emu_dev *d, uint64_t now_ns, bool *any)
{
	bool self = false;

	/* (next first: sending may take a QP off the list, as in emu_xport_poll) */
	for (struct emu_xport_qp *x = d->x->act, *next; x; x = next) {
		struct emu_qp *qp = XQP(x);

		next = x->act_next;
		if (!x->ack_pending || now_ns < xp_ack_due(x))
			continue;
		if (x->ack_hold_at && !x->rd_pend && !x->ack_retry) {
			x->ack_pp = 0;
			x->cnt.acks_held_late++;
		}
		xp_resp_send_ack(qp);
		*any = true;
		self = self || xp_to_self(qp);
	}
	return self;
}

void emu_xport_poll(struct emu_dev *d, uint64_t now_ns)
{
	struct emu_xport_qp *x, *next;
	/* READ responses waiting for transmit room share what there is now */
	uint32_t room = d->x->resp_npend ? emu_tx_room(d) : 0;
	bool any = false;
	bool self = xp_poll_acks(d, now_ns, &any);
	/* Frames still waiting in the port's RX (d->rx_more), or ACKs just
	 * sent to our own QPs: an expired retransmit or probe timer waits
	 * for them, at most XP_RX_HOLD_TURNS turns each. After the engine was
	 * off its core for longer than the timeout (a loaded machine), the
	 * ACKs the timer waits for are likely among them: firing first costs
	 * a spurious go-back-N or probe. */
	d->x->self_ack_turns = self ? d->x->self_ack_turns + 1 : 0;
	bool hold = (d->rx_more && d->rx_more <= XP_RX_HOLD_TURNS) ||
		    (self && d->x->self_ack_turns <= XP_RX_HOLD_TURNS);

	for (x = d->x->act; x; x = next) {
		struct emu_qp *qp = XQP(x);

		next = x->act_next;
		/* a QP gone to ERR sends no more responses (xp_qp_error is
		 * below the responder: its pending ones are dropped here, at
		 * the first turn after) */
		if (x->rd_pend && qp->attr.qp_state == IBV_QPS_ERR)
			xp_resp_release(qp);
		else if (x->rd_pend && room && xp_resp_poll(qp, room))
			any = true;
		if ((!hold && x->retrans_at && now_ns >= x->retrans_at) ||
		    (x->rnr_at && now_ns >= x->rnr_at) ||
		    (!hold && x->probe_at && now_ns >= x->probe_at)) {
			xp_comp_timeout(qp, now_ns);
			xp_run(qp);
			any = true;
		}
		if ((x->req_stalled && !x->rnr_at) ||
		    (xp_rp_waiting(x) && now_ns >= xp_rp_wake(x->rp))) {
			xp_req_kick(qp);
			any = true;
		}
		if (xp_qp_idle(x))
			xp_act_del(qp);
	}
	if (any)
		emu_tx_flush(d);
}

uint64_t emu_xport_next_deadline(struct emu_dev *d)
{
	const struct emu_xport_qp *x;
	uint64_t t = UINT64_MAX;

	for (x = d->x->act; x; x = x->act_next) {
		/* (an ACK held behind READ responses goes with them) */
		if (x->ack_pending && !x->rd_pend && xp_ack_due(x) < t)
			t = xp_ack_due(x);
		if (x->retrans_at && x->retrans_at < t)
			t = x->retrans_at;
		if (x->probe_at && x->probe_at < t)
			t = x->probe_at;
		if (x->rnr_at && x->rnr_at < t)
			t = x->rnr_at;
		if (xp_rp_waiting(x) && xp_rp_wake(x->rp) < t)
			t = xp_rp_wake(x->rp);
		/* out of TX buffers or neighbour pending, READ responses
		 * waiting for room: retry soon, don't spin */
		if ((x->req_stalled && !x->rnr_at) || x->rd_pend) {
			uint64_t soon = emu_now_ns() + 10000;

			if (soon < t)
				t = soon;
		}
	}
	return t;
}

void emu_xport_qp_counters(const struct emu_qp *qp, struct emu_xport_counters *out)
{
	*out = qp->x->cnt;
}

void emu_xport_mem_fault(struct emu_qp *qp, uint64_t tag)
{
	EMU_LOG_RL(WARNING, "qp %u: registered memory of pid %d is gone\n", qp->qpn,
		qp->ctx ? (int)qp->ctx->pid : -1);
	xp_resp_mem_fault(qp, tag);
	if (!xp_comp_mem_fault(qp, tag))
		xp_qp_error(qp, IBV_EVENT_QP_ACCESS_ERR);
}
