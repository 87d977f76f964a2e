/* SPDX-License-Identifier: MIT */
/* The transport's timers: the list of QPs with a timer running or an ACK
 * pending (d->x->act), which the engine's emu_xport_poll (xport.c)
 * walks, and the retransmit timer. */
#include "xport_int.h"

void xp_act_add(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_dev *d = qp->dev;

	if (x->on_act)
		return;
	x->on_act = 1;
	x->act_prev = NULL;
	x->act_next = d->x->act;
	if (d->x->act)
		d->x->act->act_prev = x;
	d->x->act = x;
}

void xp_act_del(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	if (!x->on_act)
		return;
	if (x->act_prev)
		x->act_prev->act_next = x->act_next;
	else
		qp->dev->x->act = x->act_next;
	if (x->act_next)
		x->act_next->act_prev = x->act_prev;
	x->act_next = x->act_prev = NULL;
	x->on_act = 0;
}

/* The loss probe: a packet lost again after the NAK that asked for it
 * again, or the last packets of a burst lost (nothing behind them makes
 * the responder NAK), would otherwise wait for the retransmit timeout,
 * local_ack_timeout: 67 ms at perftest's and qperf's 14, where a round
 * trip between two daemons takes tens of microseconds. As TCP's tail loss
 * probe (RFC 8985), once a few round trips pass without an ACK the oldest
 * unacknowledged packets go again (comp.c, xp_comp_timeout), spending no
 * retry; each probe without progress doubles the wait. Not before an RTT
 * is measured, never later than the retransmit timeout, and at least
 * XP_PTO_MIN_NS: a daemon on a shared machine is often descheduled for a
 * millisecond or more, and a probe then costs one duplicate each time
 * (comp.c sends one packet). Nor before twice the longest recent round
 * trip (max_rtt_ns, comp.c; that term at most a quarter of the
 * retransmit timeout, so that one very slow round trip does not leave the
 * loss to the timeout): where round trips spread (a peer daemon that
 * sleeps and waits for a core), 2 x SRTT + 4 x RTTVAR forgets a slow one
 * within a few samples and the next probed nothing lost: qperf rc_lat
 * over a veth probed in a median 1.9 % of its round trips without this,
 * about 0.4 % with it (docs/transport.md, "Recovery in round trips"). */
#define XP_PTO_MIN_NS 250000ull
static uint64_t xp_pto_ns(const struct emu_xport_qp *x, uint64_t rto)
{
	uint64_t p = 2 * (uint64_t)x->srtt_ns + 4 * (uint64_t)x->rttvar_ns;
	uint64_t m = 2 * (uint64_t)x->max_rtt_ns;

	if (m > rto / 4)
		m = rto / 4;
	if (p < m)
		p = m;
	if (p < XP_PTO_MIN_NS)
		p = XP_PTO_MIN_NS;
	return p << (x->probe_shift < 10 ? x->probe_shift : 10);
}

/* How long a re-issued READ may take to be answered before a response
 * past its gap asks again (comp.c, comp_implied_nak): the loss probe's
 * wait without its backoff. A lost re-issue is then found by the rest
 * of the old stream still arriving, not only by the retransmit timeout. */
uint64_t xp_reissue_wait_ns(const struct emu_qp *qp)
{
	uint64_t t = wire_retrans_timeout_ns(qp->attr.timeout);
	uint64_t p = 2 * (uint64_t)qp->x->srtt_ns + 4 * (uint64_t)qp->x->rttvar_ns;
	uint64_t m = 2 * (uint64_t)qp->x->max_rtt_ns;

	if (t && m > t / 4)
		m = t / 4;
	if (p < m)
		p = m;
	return p < XP_PTO_MIN_NS ? XP_PTO_MIN_NS : p;
}

void xp_retrans_start(struct emu_qp *qp, bool restart)
{
	struct emu_xport_qp *x = qp->x;
	uint64_t t = wire_retrans_timeout_ns(qp->attr.timeout), now;

	if (!t || x->rnr_at) {
		if (restart)
			x->retrans_at = x->probe_at = 0;
		return;
	}
	if (x->retrans_at && !restart)
		return;
	now = emu_now_ns();
	x->retrans_at = now + t;
	x->probe_at = 0;
	if (x->srtt_ns && xp_pto_ns(x, t) < t)
		x->probe_at = now + xp_pto_ns(x, t);
	x->probe_nobuf = x->cnt.tx_no_buf;
	xp_act_add(qp);
}

/* Responses keep coming, none of them progress (past a READ's gap while
 * its re-issue is on its way, or placed for a later READ): not the
 * silence the loss probe is for; it waits from now. */
void xp_probe_defer(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	if (!x->probe_at)
		return;
	x->probe_at = emu_now_ns() + xp_pto_ns(x, wire_retrans_timeout_ns(qp->attr.timeout));
	if (x->retrans_at && x->probe_at >= x->retrans_at)
		x->probe_at = 0;
}

void xp_probe_rearm(struct emu_qp *qp, uint64_t now)
{
	struct emu_xport_qp *x = qp->x;

	if (x->probe_shift < 255)
		x->probe_shift++;
	x->probe_at = now + xp_pto_ns(x, wire_retrans_timeout_ns(qp->attr.timeout));
	x->probe_nobuf = x->cnt.tx_no_buf;
	if (x->retrans_at && x->probe_at >= x->retrans_at)
		x->probe_at = 0;
}
