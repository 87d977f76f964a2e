/* SPDX-License-Identifier: MIT */
/* Transport entry points called by the core: QP setup, doorbells, packet
 * dispatch, timers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xport_int.h"

/* Allocate the private queues; idempotent. 0 or -ENOMEM. */
int xp_qp_alloc(struct emu_qp *qp);
int xp_qp_alloc(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
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
		x->rwqe = calloc(1, sizeof(*x->rwqe));
		if (!x->rwqe)
			return -ENOMEM;
	}
	if (!x->res && qp->type == IBV_QPT_RC) {
		x->res = calloc(EMU_XPORT_MAX_RD_ATOMIC, sizeof(*x->res));
		if (!x->res)
			return -ENOMEM;
	}
	return 0;
}

void emu_xport_qp_init(struct emu_qp *qp)
{
	memset(&qp->x, 0, sizeof(qp->x));
	/* failure is reported again by emu_qp_modify (RESET -> INIT) */
	(void)xp_qp_alloc(qp);
}

void emu_xport_qp_fini(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;

	xp_act_del(qp);
	free(x->sq_copy);
	free(x->swqe);
	free(x->rwqe);
	free(x->res);
	memset(x, 0, sizeof(*x));
}

void emu_xport_sq_kick(struct emu_qp *qp)
{
	switch (qp->attr.qp_state) {
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		xp_req_progress(qp);
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

void emu_xport_rx(struct emu_dev *d, struct emu_qp *qp, const struct wire_pkt *pkt)
{
	uint8_t tr;
	bool ok;

	if (!qp)
		return; /* counted by the core (EMU_DROP_UNKNOWN_QP) */
	tr = wire_opcode_transport(pkt->bth.opcode);
	ok = (tr == WIRE_TR_RC && qp->type == IBV_QPT_RC) ||
	     (tr == WIRE_TR_UC && qp->type == IBV_QPT_UC) ||
	     (tr == WIRE_TR_UD && qp->type == IBV_QPT_UD);
	if (!ok || !pkt->op || !(pkt->op->flags & WIRE_OPF_VALID)) {
		qp->x.cnt.rx_dropped++;
		return;
	}
	qp->x.cnt.rx_pkts++;
	qp->x.cnt.rx_bytes += pkt->frame_len;
	if (pkt->op->flags & WIRE_OPF_RESP)
		xp_comp_rx(qp, pkt);
	else
		xp_resp_rx(qp, pkt);
	emu_tx_flush(d);
}

static bool xp_qp_idle(const struct emu_xport_qp *x)
{
	return !x->ack_pending && !x->retrans_at && !x->rnr_at && !x->req_stalled;
}

void emu_xport_poll(struct emu_dev *d, uint64_t now_ns)
{
	struct emu_xport_qp *x = d->xport_act, *next;
	bool any = false;

	for (; x; x = next) {
		struct emu_qp *qp = XQP(x);

		next = x->act_next;
		if (x->ack_pending && now_ns >= x->ack_at) {
			xp_resp_send_ack(qp);
			any = true;
		}
		if ((x->retrans_at && now_ns >= x->retrans_at) || (x->rnr_at && now_ns >= x->rnr_at)) {
			xp_comp_timeout(qp, now_ns);
			any = true;
		}
		if (x->req_stalled && !x->rnr_at) {
			xp_req_progress(qp);
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

	for (x = d->xport_act; x; x = x->act_next) {
		if (x->ack_pending && x->ack_at < t)
			t = x->ack_at;
		if (x->retrans_at && x->retrans_at < t)
			t = x->retrans_at;
		if (x->rnr_at && x->rnr_at < t)
			t = x->rnr_at;
		/* out of TX buffers or neighbour pending: retry soon, don't spin */
		if (x->req_stalled && !x->rnr_at) {
			uint64_t soon = emu_now_ns() + 10000;

			if (soon < t)
				t = soon;
		}
	}
	return t;
}
