/* SPDX-License-Identifier: MIT */
/* Counters for the outside (UROCE_OP_QUERY_STATS, uroce-ctl counters): the
 * port's and, one page at a time, every QP's. The daemon-internal counter
 * structs may change; the ABI records are filled field by field. */
#include <stdio.h>
#include <string.h>

#include "xport_int.h"

/* Another user's QPs are not the viewer's business: their QPNs, pids and
 * traffic would tell it who talks to whom (docs/security.md). */
bool xp_qp_visible(const struct emu_ctx *viewer, const struct emu_qp *qp)
{
	return !viewer || viewer->see_all || (qp->ctx && qp->ctx->uid == viewer->uid);
}

/* The first QP at or after *q (from EMU_QPN_FIRST) the viewer may see,
 * *q at its QPN; NULL past the table. Pages of QPs start from here. */
static const struct emu_qp *emu_stats_next(const struct emu_dev *d, const struct emu_ctx *viewer,
					   uint32_t *q)
{
	if (!d->qpn)
		return NULL;
	if (*q < EMU_QPN_FIRST)
		*q = EMU_QPN_FIRST;
	for (; *q < EMU_QPN_TABLE; (*q)++)
		if (d->qpn[*q] && xp_qp_visible(viewer, d->qpn[*q]))
			return d->qpn[*q];
	return NULL;
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
		r->xdrops[i] = d->x->xdrops[i];
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
	p->tx_zc = c->tx_zc;
	p->tx_zc_bytes = c->tx_zc_bytes;
	p->rx_seg = c->rx_seg;
	p->rx_lin = c->rx_lin;
	p->zc_unmap_deferred = c->zc_unmap_deferred;
	p->mr_pinned = c->mr_pinned;
	p->mr_unpinned = c->mr_unpinned;
	if (viewer) {
		r->self_mr_mapped = viewer->mr_mapped;
		r->self_mr_syscall = viewer->mr_syscall;
		r->self_mr_pinned = viewer->mr_pinned;
		r->self_mr_unpinned = viewer->mr_unpinned;
	}

	uint32_t q = first_qpn;
	for (const struct emu_qp *qp; (qp = emu_stats_next(d, viewer, &q)); q++) {
		if (r->nqps == UROCE_STATS_QP_PER_MSG) {
			r->next_qpn = q;
			return;
		}
		struct emu_xport_counters x;
		struct uroce_qp_stats *s = &r->qps[r->nqps++];

		x = qp->x->cnt;
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

static void emu_cc_dev_fill(const struct emu_dcqcn_cfg *c, struct uroce_cc_dev *o)
{
	o->ect = c->ect;
	o->np = c->np;
	o->rp = c->rp;
	o->line_rate_mbps = emu_dcqcn_line_mbps(c);
	o->min_time_between_cnps = c->min_time_between_cnps;
	o->cnp_dscp = c->cnp_dscp;
	o->rpg_time_reset = c->rpg_time_reset;
	o->rpg_byte_reset = c->rpg_byte_reset;
	o->rpg_threshold = c->rpg_threshold;
	o->rpg_ai_rate = c->rpg_ai_rate;
	o->rpg_hai_rate = c->rpg_hai_rate;
	o->rpg_min_rate = c->rpg_min_rate;
	o->rpg_min_dec_fac = c->rpg_min_dec_fac;
	o->rpg_gd = c->rpg_gd;
	o->rate_reduce_monitor_period = c->rate_reduce_monitor_period;
	o->rate_to_set_on_first_cnp = c->rate_to_set_on_first_cnp;
	o->initial_alpha_value = c->initial_alpha_value;
	o->dce_tcp_g = c->dce_tcp_g;
	o->dce_tcp_rtt = c->dce_tcp_rtt;
	o->clamp_tgt_rate = c->clamp_tgt_rate;
	o->clamp_tgt_rate_after_time_inc = c->clamp_tgt_rate_after_time_inc;
}

void emu_cc_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		 struct uroce_query_cc_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->dev_size = sizeof(r->dev);
	r->qp_size = sizeof(r->qps[0]);
	emu_cc_dev_fill(&d->x->dcqcn, &r->dev);
	r->dev.ce_rcvd = d->x->dcqcn_cnt.ce_rcvd;
	r->dev.cnp_sent = d->x->dcqcn_cnt.cnp_sent;
	r->dev.cnp_rcvd = d->x->dcqcn_cnt.cnp_rcvd;
	r->dev.rate_cuts = d->x->dcqcn_cnt.rate_cuts;
	uint32_t q = first_qpn;
	for (const struct emu_qp *qp; (qp = emu_stats_next(d, viewer, &q)); q++) {
		if (r->nqps == UROCE_CC_QP_PER_MSG) {
			r->next_qpn = q;
			return;
		}
		struct uroce_cc_qp *s = &r->qps[r->nqps++];
		const struct emu_dcqcn_rp *rp = qp->x->rp;

		s->qpn = qp->qpn;
		s->stage = emu_dcqcn_stage(qp);
		s->rate_mbps = (uint32_t)(emu_dcqcn_rate_kbps(qp) / 1000);
		s->target_mbps = rp && rp->active ? (uint32_t)(rp->rt / 1000) : s->rate_mbps;
		s->alpha = rp ? rp->alpha >> 10 : 0;
		s->paced = rp && rp->active;
		s->rate_cuts = rp ? rp->cuts : 0;
		s->pacer_waits = rp ? rp->paced : 0;
	}
}

/* ---- UROCE_OP_QUERY_DROPS ---- */

/* A QP's discards by reason: the requests the responder did not take
 * (past a gap, repeated, no receive WQE), the frames the requester could
 * not build (no mbuf) or held back (the port's TX backlog full). The
 * port's totals of them over every QP add what recovered the losses. */
#define XP_QP_NAMED 16
static unsigned xp_qp_named(const struct emu_xport_counters *c, struct emu_named *v, bool totals)
{
	unsigned n = 0;

	v[n++] = (struct emu_named){ "out-of-seq", c->out_of_seq };
	v[n++] = (struct emu_named){ "duplicate", c->dup_requests };
	v[n++] = (struct emu_named){ "rnr-discard", c->rnr_naks_sent };
	v[n++] = (struct emu_named){ "resp-ignored", c->resp_ignored };
	v[n++] = (struct emu_named){ "tx-nobuf", c->tx_no_buf };
	v[n++] = (struct emu_named){ "tx-stalls", c->tx_stalls };
	if (!totals)
		return n;
	v[n++] = (struct emu_named){ "retransmits", c->retransmits };
	v[n++] = (struct emu_named){ "timeouts", c->timeouts };
	v[n++] = (struct emu_named){ "probes", c->probes };
	v[n++] = (struct emu_named){ "seq-naks-sent", c->seq_naks_sent };
	v[n++] = (struct emu_named){ "seq-naks-rcvd", c->seq_naks_rcvd };
	v[n++] = (struct emu_named){ "rnr-naks-rcvd", c->rnr_naks_rcvd };
	v[n++] = (struct emu_named){ "retry-exceeded", c->retry_exceeded };
	v[n++] = (struct emu_named){ "rnr-retry-exceeded", c->rnr_retry_exceeded };
	/* not drops: when ACKs left (resp_ack_hold), for bench/link_prof.py */
	v[n++] = (struct emu_named){ "acks-held", c->acks_held };
	v[n++] = (struct emu_named){ "acks-held-late", c->acks_held_late };
	return n;
}

/* Append v[from..n) of QP qpn to the reply, "prefix" before each name;
 * false when the page filled (r->next* say where to go on). */
static bool xp_drops_put(struct uroce_query_drops_rep *r, uint32_t qpn, const char *prefix,
			 const struct emu_named *v, unsigned n, unsigned from)
{
	for (unsigned i = from; i < n; i++) {
		if (r->n == UROCE_DROPS_PER_MSG) {
			r->more = 1;
			r->next_qpn = qpn;
			r->next = i;
			return false;
		}
		struct uroce_drop_val *e = &r->v[r->n++];
		e->qpn = qpn;
		e->val = v[i].val;
		snprintf(e->name, sizeof(e->name), "%s%s", prefix, v[i].name);
	}
	return true;
}

void emu_drops_fill(struct emu_dev *d, const struct emu_ctx *viewer,
		    const struct emu_named *link, unsigned nlink,
		    const struct uroce_query_drops_req *q, struct uroce_query_drops_rep *r)
{
	struct emu_named v[XP_QP_NAMED + EMU_XDROP_NUM];
	uint32_t from = q->first;

	memset(r, 0, sizeof(*r));
	if (!q->first_qpn) {
		/* the port: the link's, then the QPs' totals (gone + live) */
		struct emu_xport_counters t = d->x->gone;
		for (uint32_t i = EMU_QPN_FIRST; d->qpn && i < EMU_QPN_TABLE; i++)
			if (d->qpn[i])
				xp_cnt_add(&t, &d->qpn[i]->x->cnt);
		unsigned nq = xp_qp_named(&t, v, true);
		if (from < nlink && !xp_drops_put(r, 0, "link.", link, nlink, from))
			return;
		if (!xp_drops_put(r, 0, "qps.", v, nq, from > nlink ? from - nlink : 0)) {
			r->next += nlink;
			return;
		}
		from = 0;
	}
	uint32_t qn = q->first_qpn;
	for (const struct emu_qp *qp; (qp = emu_stats_next(d, viewer, &qn)); qn++, from = 0) {
		const struct emu_xport_counters *c = &qp->x->cnt;
		unsigned n = xp_qp_named(c, v, false);
		for (unsigned i = 0; i < EMU_XDROP_NUM; i++)
			v[n++] = (struct emu_named){ emu_xport_drop_name[i], c->drops[i] };
		if (!xp_drops_put(r, qp->qpn, "", v, n, from))
			return;
	}
}
