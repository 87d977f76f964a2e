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

void xp_retrans_start(struct emu_qp *qp, bool restart)
{
	struct emu_xport_qp *x = qp->x;
	uint64_t t = wire_retrans_timeout_ns(qp->attr.timeout);

	if (!t || x->rnr_at) {
		if (restart)
			x->retrans_at = 0;
		return;
	}
	if (x->retrans_at && !restart)
		return;
	x->retrans_at = emu_now_ns() + t;
	xp_act_add(qp);
}
