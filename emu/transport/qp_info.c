/* SPDX-License-Identifier: MIT */
/* The transport state of QPs for the outside (UROCE_OP_QUERY_QPS, uroce-ctl
 * qps): PSNs, outstanding work, retries and the peer, one page at a time,
 * with the visibility of the counters (stats.c). Read-only: a snapshot
 * taken on the engine thread between packets. */
#include <string.h>

#include "xport_int.h"

/* Application-written producer indexes may be anything: what is shown is
 * clamped to what the ring can hold. */
static uint32_t qp_info_clamp(int64_t n, uint32_t entries)
{
	return n < 0 ? 0 : n > entries ? entries : (uint32_t)n;
}

static void qp_info_one(const struct emu_qp *qp, struct uroce_qp_info *s)
{
	const struct emu_xport_qp *x = qp->x;

	s->qpn = qp->qpn;
	s->pid = qp->ctx ? (uint32_t)qp->ctx->pid : 0;
	s->qp_type = qp->type;
	s->qp_state = qp->attr.qp_state;
	s->path_mtu = qp->attr.path_mtu;
	s->sq_psn = x->sq_psn;
	s->acked_psn = x->acked_psn;
	s->rq_psn = x->epsn;
	s->sq_outstanding = qp_info_clamp((int64_t)(uint32_t)(emu_ring_prod(&qp->sq) -
							      x->sq_comp), qp->sq.entries);
	if (qp->rq.entries)
		s->rq_posted = qp_info_clamp(emu_ring_pending(&qp->rq), qp->rq.entries);
	s->rd_atomic_out = x->rd_atomic_out;
	s->retry_cnt = qp->attr.retry_cnt;
	s->retry_left = x->retry_left;
	s->rnr_retry = qp->attr.rnr_retry;
	s->rnr_left = x->rnr_left;
	if (qp->type != IBV_QPT_UD && x->path.valid) {
		s->dest_qpn = qp->attr.dest_qp_num;
		s->dgid = x->path.dgid;
		s->sgid = x->path.sgid;
	}
}

void emu_qp_info_fill(struct emu_dev *d, const struct emu_ctx *viewer, uint32_t first_qpn,
		      struct uroce_query_qps_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->info_size = sizeof(r->qps[0]);
	if (!d->qpn)
		return;
	for (uint32_t q = first_qpn < EMU_QPN_FIRST ? EMU_QPN_FIRST : first_qpn;
	     q < EMU_QPN_TABLE; q++) {
		const struct emu_qp *qp = d->qpn[q];

		if (!qp || !xp_qp_visible(viewer, qp))
			continue;
		if (r->nqps == UROCE_QPS_PER_MSG) {
			r->next_qpn = q;
			return;
		}
		qp_info_one(qp, &r->qps[r->nqps++]);
	}
}
