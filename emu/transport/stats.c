/* SPDX-License-Identifier: MIT */
/* Counters for the outside (UROCE_OP_QUERY_STATS, uroce-ctl counters): the
 * port's and, one page at a time, every QP's. The daemon-internal counter
 * structs may change; the ABI records are filled field by field. */
#include <string.h>

#include "xport_int.h"

/* Another user's QPs are not the viewer's business: their QPNs, pids and
 * traffic would tell it who talks to whom (docs/security.md). */
bool xp_qp_visible(const struct emu_ctx *viewer, const struct emu_qp *qp)
{
	return !viewer || viewer->see_all || (qp->ctx && qp->ctx->uid == viewer->uid);
}

void emu_stats_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		    struct uroce_query_stats_rep *r)
{
	const struct emu_port_counters *c = &d->cnt;
	struct uroce_port_stats *p = &r->port;

	memset(r, 0, sizeof(*r));
	r->port_stats_size = sizeof(r->port);
	r->qp_stats_size = sizeof(r->qps[0]);
	p->tx_pkts = c->tx_pkts;
	p->tx_bytes = c->tx_bytes;
	p->rx_pkts = c->rx_pkts;
	p->rx_bytes = c->rx_bytes;
	p->rx_roce = c->rx_roce;
	p->rx_arp = c->rx_arp;
	p->rx_icmp = c->rx_icmp;
	p->rx_nd = c->rx_nd;
	p->tx_arp = c->tx_arp;
	p->tx_icmp = c->tx_icmp;
	p->tx_nd = c->tx_nd;
	p->icrc_errors = c->icrc_errors;
	p->hdr_errors = c->hdr_errors;
	p->tx_stalls = c->tx_stalls;
	p->fault_drop = c->fault_drop;
	p->fault_dup = c->fault_dup;
	p->fault_reorder = c->fault_reorder;
	p->fault_corrupt = c->fault_corrupt;
	p->fault_delay = c->fault_delay;
	_Static_assert(EMU_DROP_NUM <= UROCE_STATS_DROP_MAX, "drop reasons");
	p->ndrops = EMU_DROP_NUM;
	for (unsigned i = 0; i < EMU_DROP_NUM; i++) {
		p->drops[i] = c->drops[i];
		strncpy(p->drop_name[i], emu_drop_name[i], UROCE_STATS_NAME_LEN - 1);
	}
	_Static_assert(EMU_XDROP_NUM <= UROCE_STATS_XDROP_MAX, "transport drop reasons");
	r->nxdrops = EMU_XDROP_NUM;
	for (unsigned i = 0; i < EMU_XDROP_NUM; i++) {
		r->xdrops[i] = c->xdrops[i];
		strncpy(r->xdrop_name[i], emu_xport_drop_name[i], UROCE_STATS_NAME_LEN - 1);
	}
	p->nqp = d->nqp;
	p->nctx = d->nctx;
	p->clients_refused = (uint32_t)c->clients_refused;
	p->evq_lost = c->evq_lost;
	p->cqe_inline = c->cqe_inline;
	p->icrc_skipped = c->icrc_skipped;
	p->mr_mapped = c->mr_mapped;
	p->mr_syscall = c->mr_syscall;
	if (viewer) {
		r->self_mr_mapped = viewer->mr_mapped;
		r->self_mr_syscall = viewer->mr_syscall;
	}

	if (!d->qpn)
		return;
	uint32_t q = first_qpn < EMU_QPN_FIRST ? EMU_QPN_FIRST : first_qpn;
	for (; q < EMU_QPN_TABLE; q++) {
		const struct emu_qp *qp = d->qpn[q];
		if (!qp || !xp_qp_visible(viewer, qp))
			continue;
		if (r->nqps == UROCE_STATS_QP_PER_MSG) {
			r->next_qpn = q;
			return;
		}
		struct emu_xport_counters x;
		struct uroce_qp_stats *s = &r->qps[r->nqps++];

		emu_xport_qp_counters(qp, &x);
		s->qpn = qp->qpn;
		s->pid = qp->ctx ? (uint32_t)qp->ctx->pid : 0;
		s->qp_type = qp->type;
		s->qp_state = qp->attr.qp_state;
		s->tx_pkts = x.tx_pkts;
		s->tx_bytes = x.tx_bytes;
		s->rx_pkts = x.rx_pkts;
		s->rx_bytes = x.rx_bytes;
		s->retransmits = x.retransmits;
		s->timeouts = x.timeouts;
		s->dup_requests = x.dup_requests;
		s->out_of_seq = x.out_of_seq;
		s->seq_naks_sent = x.seq_naks_sent;
		s->seq_naks_rcvd = x.seq_naks_rcvd;
		s->rnr_naks_sent = x.rnr_naks_sent;
		s->rnr_naks_rcvd = x.rnr_naks_rcvd;
		s->naks_sent = x.naks_sent;
		s->naks_rcvd = x.naks_rcvd;
		s->retry_exceeded = x.retry_exceeded;
		s->rnr_retry_exceeded = x.rnr_retry_exceeded;
		s->rx_dropped = x.rx_dropped;
		s->tx_no_buf = x.tx_no_buf;
		s->ce_rcvd = x.ce_rcvd;
		s->cnp_sent = x.cnp_sent;
		s->cnp_rcvd = x.cnp_rcvd;
	}
}
