/* SPDX-License-Identifier: MIT */
/* Transport helpers: frame building, CQEs, QP errors, SGE copies, the
 * active-QP list. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include "xport_int.h"

void xp_path_from_av(struct emu_xport_path *p, const struct emu_av *av, uint32_t qpn)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dmac, av->dmac, 6);
	p->ipv6 = av->ipv6;
	p->tclass = av->traffic_class;
	p->hop_limit = av->hop_limit ? av->hop_limit : 64;
	p->flow_label = av->flow_label;
	p->sgid = av->sgid;
	p->dgid = av->dgid;
	p->sport = wire_udp_sport(qpn);
	p->valid = av->mac_valid;
}

void xp_pkt_init(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
		 uint8_t opcode, uint32_t dqpn, uint32_t psn)
{
	struct emu_dev *dev = qp->dev;

	wire_pkt_init(d, path->ipv6 ? 6 : 4);
	memcpy(d->dmac, path->dmac, 6);
	memcpy(d->smac, dev->mac, 6);
	memcpy(d->ip.src.raw, path->sgid.raw, 16);
	memcpy(d->ip.dst.raw, path->dgid.raw, 16);
	d->ip.tos = path->tclass;
	/* DCQCN: the daemon owns the ECN bits. Data packets are ECN-capable,
	 * as ConnectX's with congestion control on; ACKs and CNPs (xp_ce_rx)
	 * are not: a CE mark on them would slow nothing down */
	if (dev->dcqcn.ect) {
		bool data = xp_rc_op(opcode) != WIRE_OP_RC_ACK &&
			    xp_rc_op(opcode) != WIRE_OP_RC_ATOMIC_ACK &&
			    opcode != WIRE_OP_CNP;

		d->ip.tos = (uint8_t)((path->tclass & ~WIRE_ECN_MASK) |
				      (data ? WIRE_ECN_ECT0 : WIRE_ECN_NOT_ECT));
	}
	d->ip.ttl = path->hop_limit;
	if (path->ipv6)
		d->ip.flow_label = path->flow_label;
	else
		d->ip.id = dev->ip_id++;
	d->udp.sport = path->sport;
	/* XRC QPs speak RC's operations under XRC's transport bits */
	if ((qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV) &&
	    wire_opcode_transport(opcode) == WIRE_TR_RC)
		opcode |= WIRE_TR_XRC;
	d->bth.opcode = opcode;
	d->bth.dqpn = dqpn & WIRE_QPN_MASK;
	d->bth.psn = psn & WIRE_PSN_MASK;
	d->bth.pkey = WIRE_PKEY_DEFAULT;
}

int xp_tx_begin(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
		struct xp_txf *f)
{
	struct emu_dev *dev = qp->dev;

	if (!path->valid) {
		/* connected QP whose neighbour was unresolved at RTR */
		struct emu_xport_path *pp = (struct emu_xport_path *)path;

		if (emu_neigh_lookup(dev, &pp->dgid, pp->dmac))
			return -ENOBUFS;
		pp->valid = 1;
		memcpy(d->dmac, pp->dmac, 6);
	}
	if (emu_tx_alloc_len(dev, &f->b, (uint32_t)wire_hdr_len(d) + d->payload_len + 3 +
					 WIRE_ICRC_LEN)) {
		qp->x.cnt.tx_no_buf++;
		return -ENOBUFS;
	}
	if (wire_build_headers(d, f->b.data, f->b.cap, 0, &f->hl) ||
	    f->hl + d->payload_len + 3 + WIRE_ICRC_LEN > f->b.cap) {
		emu_tx_free(dev, &f->b);
		return -EINVAL;
	}
	f->pay = f->b.data + f->hl;
	f->len = d->payload_len;
	f->zc = NULL;
	return 0;
}

bool xp_txf_zc(struct emu_qp *qp, struct xp_txf *f, struct emu_ctx *c, uint64_t addr)
{
	if (f->len < XP_ZC_MIN || !xp_rc_like(qp) || !emu_tx_zc_ok(qp->dev) || !c->nmaps ||
	    c->mem_stalled || (c->dead && !c->nh))
		return false;
	f->zc = emu_mrmap_find_held(c, addr, f->len, &f->zh);
	return f->zc != NULL;
}

int xp_tx_end_zc(struct emu_qp *qp, struct xp_txf *f)
{
	/* pad and ICRC as xp_tx_end sends them on the internal ring */
	static const uint8_t trailer[8];
	uint32_t tl = wire_pad(f->len) + WIRE_ICRC_LEN;

	if (!qp->dev->icrc_tx_skip ||
	    emu_tx_send_ext(qp->dev, &f->b, (uint32_t)f->hl, f->zc, f->len, f->zh, trailer, tl)) {
		/* no mbufs to chain, or a capture or fault injection began
		 * and wants the ICRC over it: the copy after all */
		if (emu_mrmap_copy(f->pay, f->zc, f->len)) {
			xp_tx_abort(qp, f);
			return -EFAULT;
		}
		f->zc = NULL;
		xp_tx_end(qp, f);
		return 0;
	}
	qp->dev->cnt.icrc_skipped++;
	qp->x.cnt.tx_pkts++;
	qp->x.cnt.tx_bytes += f->hl + f->len + tl;
	return 0;
}

void xp_tx_end(struct emu_qp *qp, struct xp_txf *f)
{
	struct wire_iov iov = { f->pay, f->len };
	size_t tl;

	if (qp->dev->icrc_tx_skip) {
		/* the frame never leaves our memory: pad (as the BTH counts it,
		 * wire_build_headers) and a zero ICRC nobody checks */
		tl = (size_t)wire_pad(f->len) + WIRE_ICRC_LEN;
		memset(f->pay + f->len, 0, tl);
		qp->dev->cnt.icrc_skipped++;
	} else {
		tl = wire_finish_icrc(f->b.data, f->hl, &iov, 1, f->pay + f->len);
	}

	qp->x.cnt.tx_pkts++;
	qp->x.cnt.tx_bytes += f->hl + f->len + tl;
	emu_tx_send(qp->dev, &f->b, (uint32_t)(f->hl + f->len + tl));
}

void xp_tx_abort(struct emu_qp *qp, struct xp_txf *f)
{
	emu_tx_free(qp->dev, &f->b);
}

bool xp_tx_finish(struct emu_qp *qp, struct xp_txf *f, int *rc)
{
	if (!*rc && f->zc)
		*rc = xp_tx_end_zc(qp, f);
	else if (!*rc)
		xp_tx_end(qp, f);
	else
		xp_tx_abort(qp, f);
	return !*rc;
}

int xp_tx(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
	  const void *pay, xp_fill_fn fill, void *arg)
{
	struct xp_txf f;
	int r = xp_tx_begin(qp, path, d, &f);

	if (r)
		return r;
	if (f.len) {
		if (pay)
			memcpy(f.pay, pay, f.len);
		else if (fill(qp, arg, f.pay, f.len)) {
			xp_tx_abort(qp, &f);
			return -EFAULT;
		}
	}
	xp_tx_end(qp, &f);
	return 0;
}

void xp_event(struct emu_qp *qp, enum ibv_event_type ev)
{
	if (qp->ctx)
		emu_async_event(qp->ctx, qp->user_handle, ev);
}

/* CQEs produced while an RX burst is worked through wait here and enter
 * their rings at the end of the burst, right after the deferred payload
 * writes (emu_mem_batch): a burst of SENDs then costs one process_vm_writev
 * instead of one per message, as each CQE would otherwise flush. */
#define XP_CQE_BATCH 64
static __thread struct { /* per worker thread */
	bool on;
	unsigned n;
	struct {
		struct emu_qp *qp;
		struct emu_cq *cq;
		struct uroce_cqe e;
		struct uroce_cqe_inl inl; /* used when e.inl_nseg */
	} q[XP_CQE_BATCH];
	unsigned nsq;
	struct emu_qp *sq[XP_CQE_BATCH]; /* SQs whose cons moved in the burst */
} xp_cqb;

/* SQ consumer indices moved during a burst are published once, at its
 * end, before its CQEs: a slot is still free before its CQE is seen. */
static void xp_sq_sync(__typeof__(xp_cqb) *b, const struct emu_ctx *skip)
{
	for (unsigned i = 0; i < b->nsq && i < XP_CQE_BATCH; i++)
		if (b->sq[i]->ctx != skip)
			emu_ring_sync(&b->sq[i]->sq);
	b->nsq = 0;
}

void xp_sq_retire(struct emu_qp *qp, uint32_t cons)
{
	unsigned k;

	if (!xp_cqb.on) {
		emu_ring_publish(&qp->sq, cons);
		return;
	}
	qp->sq.cons = cons;
	for (k = 0; k < xp_cqb.nsq && xp_cqb.sq[k] != qp; k++)
		;
	if (k < xp_cqb.nsq)
		return;
	if (xp_cqb.nsq == XP_CQE_BATCH)
		emu_ring_sync(&qp->sq); /* a burst over many QPs: at once */
	else
		xp_cqb.sq[xp_cqb.nsq++] = qp;
}

/* Write a CQE without publishing it (emu_cq_put). */
static void xp_cq_put(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
		      const struct uroce_cqe_inl *inl, uint64_t ts)
{
	e->qp_num = qp->qpn;
	if (emu_cq_put(cq, e, inl, ts) == -ENOSPC && qp->attr.qp_state != IBV_QPS_ERR) {
		/* The CQ is dead (CQ_ERR raised by the core); a QP that can no
		 * longer report completions is in a fatal state. */
		xp_qp_error(qp, IBV_EVENT_QP_FATAL);
	}
}

static void xp_cq_push_now(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
			   const struct uroce_cqe_inl *inl)
{
	uint64_t now = 0;

	xp_cq_put(qp, cq, e, inl, emu_cq_stamp(cq, &now));
	emu_cq_publish(cq);
}

/* The held-back CQEs enter their rings with at most one clock read for
 * all of them (none unless a CQ wants timestamps) and one producer-index
 * store (and arm check) per ring. */
static void xp_cqb_drain(void)
{
	struct emu_cq *touched[XP_CQE_BATCH];
	unsigned nt = 0;
	bool on = xp_cqb.on;

	xp_sq_sync(&xp_cqb, NULL);
	if (!xp_cqb.n)
		return;
	emu_mem_flush(); /* the data the CQEs announce goes first */
	xp_cqb.on = false; /* an overrun flushes a QP: those CQEs go directly */
	uint64_t now = 0;
	for (unsigned i = 0; i < xp_cqb.n; i++) {
		struct emu_cq *cq = xp_cqb.q[i].cq;
		unsigned k;

		xp_cq_put(xp_cqb.q[i].qp, cq, &xp_cqb.q[i].e, &xp_cqb.q[i].inl,
			  emu_cq_stamp(cq, &now));
		for (k = 0; k < nt && touched[k] != cq; k++)
			;
		if (k == nt)
			touched[nt++] = cq;
	}
	for (unsigned k = 0; k < nt; k++)
		emu_cq_publish(touched[k]);
	xp_cqb.n = 0;
	xp_cqb.on = on;
}

void xp_cq_push_inl(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e,
		    const struct uroce_cqe_inl *inl)
{
	if (!cq)
		return;
	if (!inl)
		e->inl_nseg = 0;
	if (xp_cqb.on) {
		if (xp_cqb.n == XP_CQE_BATCH)
			xp_cqb_drain();
		xp_cqb.q[xp_cqb.n].qp = qp;
		xp_cqb.q[xp_cqb.n].cq = cq;
		xp_cqb.q[xp_cqb.n].e = *e;
		if (e->inl_nseg) {
			memcpy(xp_cqb.q[xp_cqb.n].inl.seg, inl->seg,
			       e->inl_nseg * sizeof(inl->seg[0]));
			memcpy(xp_cqb.q[xp_cqb.n].inl.data, inl->data, e->byte_len);
		}
		xp_cqb.n++;
		return;
	}
	emu_mem_flush(); /* the data a CQE announces must be in place first */
	xp_cq_push_now(qp, cq, e, inl);
}

void xp_cq_push(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e)
{
	xp_cq_push_inl(qp, cq, e, NULL);
}

void *emu_xport_cqb_self(void)
{
	return &xp_cqb;
}

/* The CQEs another (abandoned) engine thread was holding back when it
 * blocked: those of every other client enter their rings now (their data
 * was written before the blocked client's, emu_mem_write_deferred keeps
 * one process at a time); the blocked client's are dropped with its QPs. */
void emu_xport_cqb_adopt(void *cqb, struct emu_ctx *skip)
{
	__typeof__(xp_cqb) *o = cqb;
	unsigned n = o->n < XP_CQE_BATCH ? o->n : XP_CQE_BATCH;

	xp_sq_sync(o, skip);
	for (unsigned i = 0; i < n; i++)
		if (o->q[i].qp->ctx != skip)
			xp_cq_push_inl(o->q[i].qp, o->q[i].cq, &o->q[i].e, &o->q[i].inl);
	o->n = 0;
}

void emu_mem_quarantine(struct emu_ctx *c)
{
	c->mem_stalled = true;
	for (uint32_t i = 0; i < c->nh; i++)
		if (c->h[i].type == EMU_OBJ_QP)
			xp_qp_error(c->h[i].obj, IBV_EVENT_QP_FATAL);
}

void emu_xport_rx_batch(struct emu_dev *d, bool on)
{
	(void)d;
	if (on) {
		emu_mem_batch(true);
		xp_cqb.on = true;
		return;
	}
	emu_mem_batch(false);
	xp_cqb_drain();
	xp_cqb.on = false;
}

void xp_qp_error(struct emu_qp *qp, int ev)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	EMU_LOG_RL(DEBUG, "qp %u -> ERR (event %d)\n", qp->qpn, ev);
	qp->attr.qp_state = IBV_QPS_ERR;
	qp->attr.cur_qp_state = IBV_QPS_ERR;
	if (ev)
		xp_event(qp, (enum ibv_event_type)ev);
	emu_xport_flush(qp);
	if (qp->srq)
		xp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

void xp_act_add(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
	struct emu_dev *d = qp->dev;

	if (x->on_act)
		return;
	x->on_act = 1;
	x->act_prev = NULL;
	x->act_next = d->xport_act;
	if (d->xport_act)
		d->xport_act->act_prev = x;
	d->xport_act = x;
}

void xp_act_del(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;

	if (!x->on_act)
		return;
	if (x->act_prev)
		x->act_prev->act_next = x->act_next;
	else
		qp->dev->xport_act = x->act_next;
	if (x->act_next)
		x->act_next->act_prev = x->act_prev;
	x->act_next = x->act_prev = NULL;
	x->on_act = 0;
}

/* Whose memory an SGE list is in: the responder's receive WQE may be an
 * XRC SRQ's, of another process of the TGT QP's domain. */
static struct emu_ctx *xp_sge_owner(const struct emu_qp *qp, const struct uroce_sge *sge)
{
	return qp->x.rwqe && sge == qp->x.rwqe->sge ? xp_recv_ctx(qp) : qp->ctx;
}

/* Remote ranges of [off, off + len) of an SGE list, each piece checked
 * (see xp_sge_copyv). n ranges or -errno; *odp (if given) tells whether
 * one of them is in an on-demand-paging MR. */
static int xp_sge_ranges(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
			 uint32_t off, uint64_t len, unsigned access, uint64_t epoch,
			 struct emu_rvec *rv, bool *odp)
{
	unsigned n = 0, i;
	uint64_t left = len;
	/* the responder scatters through the receive WQE it took */
	struct emu_pd *pd = qp->x.rwqe && sge == qp->x.rwqe->sge ? xp_recv_pd(qp) : qp->pd;

	for (i = 0; i < nsge && left && n < EMU_MAX_SGE; i++) {
		uint32_t l = sge[i].length;
		int err = 0;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > left)
			l = (uint32_t)left;
		rv[n].addr = sge[i].addr + off;
		rv[n].len = l;
		struct emu_mr *mr = emu_mr_check_lkey(pd, sge[i].lkey, rv[n].addr, l,
						      access, &err);
		if (!mr || mr->gen > epoch)
			return -EACCES;
		rv[n].addr = mr->addr + (rv[n].addr - emu_mr_lbase(mr)); /* DM: its piece */
		if (odp && (mr->access & IBV_ACCESS_ON_DEMAND))
			*odp = true;
		/* ODP memory: only where the process maps it readable, or
		 * writable for a placement (xp_sge_inline, which asks for odp,
		 * places nothing there itself) */
		else if (emu_mr_odp_access(mr, rv[n].addr, l, access & IBV_ACCESS_LOCAL_WRITE))
			return -EFAULT;
		n++;
		left -= l;
		off = 0;
	}
	if (left)
		return -EMSGSIZE;
	return (int)n;
}

int xp_sge_copyv(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		 uint32_t off, const struct iovec *lv, unsigned nl, bool to_app,
		 unsigned access, uint64_t epoch)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	uint64_t len = 0;
	int n;

	for (unsigned i = 0; i < nl; i++)
		len += lv[i].iov_len;
	if (!len)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, off, len, access, epoch, rv, NULL);
	if (n < 0)
		return n;
	return to_app ? emu_mem_writev(xp_sge_owner(qp, sge), lv, nl, rv, (unsigned)n)
		      : emu_mem_readv(xp_sge_owner(qp, sge), lv, nl, rv, (unsigned)n);
}

bool xp_sge_zc(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge, uint32_t off,
	       uint64_t epoch, struct xp_txf *f)
{
	struct emu_rvec rv[EMU_MAX_SGE];

	if (f->len < XP_ZC_MIN || !emu_tx_zc_ok(qp->dev))
		return false;
	/* a failing check is the copy's to report, as before */
	if (xp_sge_ranges(qp, sge, nsge, off, f->len, 0, epoch, rv, NULL) != 1)
		return false;
	return xp_txf_zc(qp, f, xp_sge_owner(qp, sge), rv[0].addr);
}

int xp_sge_write_deferred(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
			  uint32_t off, const void *src, uint32_t len, uint64_t epoch,
			  uint64_t tag)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	int n;

	if (!len)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, off, len, IBV_ACCESS_LOCAL_WRITE, epoch, rv, NULL);
	if (n < 0)
		return n;
	return emu_mem_write_deferred(qp, xp_sge_owner(qp, sge), rv, (unsigned)n, src, len, tag);
}

unsigned xp_sge_inline(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		       const void *src, uint32_t len, uint64_t epoch,
		       struct uroce_cqe_inl *inl)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	bool odp = false;
	int n;

	if (!len || len > UROCE_CQE_INL_DATA)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, 0, len, IBV_ACCESS_LOCAL_WRITE, epoch, rv, &odp);
	/* ODP memory may be unmapped by the time the shim would copy the
	 * bytes in: the daemon places them and a missing page is an error
	 * completion, not a SIGSEGV in the application */
	if (n <= 0 || n > UROCE_CQE_INL_SEGS || odp)
		return 0;
	for (int i = 0; i < n; i++)
		if (rv[i].addr >= EMU_DM_VA_BASE)
			return 0; /* device memory: the shim has no address to copy to */
	for (int i = 0; i < n; i++) {
		inl->seg[i].addr = rv[i].addr;
		inl->seg[i].len = (uint32_t)rv[i].len;
		inl->seg[i].rsvd = 0;
	}
	memcpy(inl->data, src, len);
	return (unsigned)n;
}

int xp_sge_copy(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		uint32_t off, void *buf, uint32_t len, bool to_app, unsigned access,
		uint64_t epoch)
{
	struct iovec lv = { buf, len };

	return xp_sge_copyv(qp, sge, nsge, off, &lv, 1, to_app, access, epoch);
}

enum ibv_wc_opcode xp_wc_opcode(uint8_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case UROCE_WR_OP_FLUSH:
		return (enum ibv_wc_opcode)UROCE_WC_FLUSH;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

/* ---- flushing (the completer retires, xp_qp_error flushes: both here so
 * neither depends on the other) ---- */

static void flush_cqe(struct emu_qp *qp, struct emu_cq *cq, uint64_t wr_id, uint32_t opcode)
{
	struct uroce_cqe e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = IBV_WC_WR_FLUSH_ERR;
	e.opcode = opcode;
	xp_cq_push(qp, cq, &e);
}

void xp_flush_sq(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
	uint32_t prod;

	if (!x->sq_copy)
		return;
	prod = emu_ring_prod(&qp->sq);
	if (prod - x->sq_comp > x->sq_entries)
		prod = x->sq_fetch; /* garbage index: flush what we know */
	uint32_t n = prod - x->sq_fetch;
	if (n > prod - x->sq_comp)
		n = 0; /* prod moved back behind what we fetched */
	for (; n; n--) {
		struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_fetch);

		memset(sw, 0, sizeof(*sw));
		if (emu_sq_copy(qp, x->sq_fetch, xp_wqe(qp, x->sq_fetch)) < 0)
			memset(xp_wqe(qp, x->sq_fetch), 0, UROCE_SEND_WQE_HDR);
		x->sq_fetch++;
	}
	/* Pushing a CQE can overrun the CQ, which errors the QP and flushes
	 * it again from inside flush_cqe: the head moves before the push so
	 * the nested flush never sees this WQE, and the count bounds the loop
	 * whatever the nested call did to the indices. */
	for (uint32_t left = x->sq_fetch - x->sq_comp; left && x->sq_comp != x->sq_fetch; left--) {
		const struct uroce_send_wqe *w = xp_wqe(qp, x->sq_comp);
		uint64_t wr_id = w->wr_id;
		uint32_t op = xp_wc_opcode(w->opcode);

		x->sq_comp++;
		flush_cqe(qp, qp->send_cq, wr_id, op);
	}
	x->sq_req = x->sq_comp;
	x->sq_req_pkt = 0;
	x->rd_atomic_out = 0;
	x->retrans_at = 0;
	x->rnr_at = 0;
	/* a requester stalled (a go-back-N, TX full) when its QP failed: the
	 * poll loop would kick it every 10 us for as long as the QP lives */
	x->req_stalled = 0;
	emu_ring_publish(&qp->sq, x->sq_comp);
}

void xp_flush_rq(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
	struct emu_recv_wqe *r = x->rwqe;

	/* from now on receives posted to this QP ring the doorbell, so
	 * they are flushed too; the fence pairs with post_recv's (verbs/post.c) */
	if (!qp->srq && qp->rq.hdr && qp->attr.qp_state == IBV_QPS_ERR) {
		__atomic_fetch_or(&qp->rq.hdr->flags, UROCE_RING_F_KICK, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	if (!r)
		return;
	if (x->rwqe_valid) {
		x->rwqe_valid = 0;
		flush_cqe(qp, qp->recv_cq, r->wr_id, IBV_WC_RECV);
	}
	if (qp->srq)
		return; /* SRQ WQEs belong to the SRQ, not to this QP */
	/* each take consumes one slot, so the ring size bounds the loop even
	 * if a nested flush (CQ overrun) or the application moves indices */
	for (uint32_t left = qp->rq.entries + 1; left; left--) {
		int n = emu_recv_take(qp, r);

		if (n == 0)
			break;
		flush_cqe(qp, qp->recv_cq, n > 0 ? r->wr_id : 0, IBV_WC_RECV);
	}
}

void emu_xport_flush(struct emu_qp *qp)
{
	xp_flush_sq(qp);
	xp_flush_rq(qp);
}

void xp_retrans_start(struct emu_qp *qp, bool restart)
{
	struct emu_xport_qp *x = &qp->x;
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
