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
	d->ip.ttl = path->hop_limit;
	if (path->ipv6)
		d->ip.flow_label = path->flow_label;
	else
		d->ip.id = dev->ip_id++;
	d->udp.sport = path->sport;
	d->bth.opcode = opcode;
	d->bth.dqpn = dqpn & WIRE_QPN_MASK;
	d->bth.psn = psn & WIRE_PSN_MASK;
	d->bth.pkey = WIRE_PKEY_DEFAULT;
}

int xp_tx(struct emu_qp *qp, const struct emu_xport_path *path, struct wire_pkt *d,
	  const void *pay, xp_fill_fn fill, void *arg)
{
	struct emu_dev *dev = qp->dev;
	struct emu_txbuf b;
	size_t hl, tl;
	uint8_t *p;
	struct wire_iov iov;

	if (!path->valid) {
		/* connected QP whose neighbour was unresolved at RTR */
		struct emu_xport_path *pp = (struct emu_xport_path *)path;

		if (emu_neigh_lookup(dev, &pp->dgid, pp->dmac))
			return -ENOBUFS;
		pp->valid = 1;
		memcpy(d->dmac, pp->dmac, 6);
	}
	if (emu_tx_alloc(dev, &b)) {
		qp->x.cnt.tx_no_buf++;
		return -ENOBUFS;
	}
	if (wire_build_headers(d, b.data, b.cap, 0, &hl) ||
	    hl + d->payload_len + 3 + WIRE_ICRC_LEN > b.cap) {
		emu_tx_free(dev, &b);
		return -EINVAL;
	}
	p = b.data + hl;
	if (d->payload_len) {
		if (pay)
			memcpy(p, pay, d->payload_len);
		else if (fill(qp, arg, p, d->payload_len)) {
			emu_tx_free(dev, &b);
			return -EFAULT;
		}
	}
	iov.base = p;
	iov.len = d->payload_len;
	tl = wire_finish_icrc(b.data, hl, &iov, 1, p + d->payload_len);
	qp->x.cnt.tx_pkts++;
	qp->x.cnt.tx_bytes += hl + d->payload_len + tl;
	emu_tx_send(dev, &b, (uint32_t)(hl + d->payload_len + tl));
	return 0;
}

void xp_event(struct emu_qp *qp, enum ibv_event_type ev)
{
	if (qp->ctx)
		emu_async_event(qp->ctx, qp->user_handle, ev);
}

void xp_cq_push(struct emu_qp *qp, struct emu_cq *cq, struct uroce_cqe *e)
{
	if (!cq)
		return;
	e->qp_num = qp->qpn;
	if (emu_cq_push(cq, e) == -ENOSPC && qp->attr.qp_state != IBV_QPS_ERR) {
		/* The CQ is dead (CQ_ERR raised by the core); a QP that can no
		 * longer report completions is in a fatal state. */
		xp_qp_error(qp, IBV_EVENT_QP_FATAL);
	}
}

void xp_qp_error(struct emu_qp *qp, int ev)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	EMU_LOG(DEBUG, "qp %u -> ERR (event %d)", qp->qpn, ev);
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

int xp_sge_copy(struct emu_ctx *c, const struct uroce_sge *sge, unsigned nsge,
		uint32_t off, void *buf, uint32_t len, bool to_app)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	struct iovec lv;
	unsigned n = 0, i;
	uint32_t left = len;

	if (!len)
		return 0;
	for (i = 0; i < nsge && left; i++) {
		uint32_t l = sge[i].length;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > left)
			l = left;
		rv[n].addr = sge[i].addr + off;
		rv[n].len = l;
		n++;
		left -= l;
		off = 0;
	}
	if (left)
		return -EMSGSIZE;
	lv.iov_base = buf;
	lv.iov_len = len;
	return to_app ? emu_mem_writev(c, &lv, 1, rv, n) : emu_mem_readv(c, &lv, 1, rv, n);
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
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}
