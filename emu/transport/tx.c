/* SPDX-License-Identifier: MIT */
/* Frames of a QP: the path from an address vector, headers, the payload
 * copied, gathered or (zero-copy) chained, pad and ICRC, onto the net
 * layer's emu_tx_* (the requester's, the responder's and the completer's
 * packets all leave through here). */
#include <errno.h>
#include <string.h>
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
	if (dev->x->dcqcn.ect) {
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
		qp->x->cnt.tx_no_buf++;
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

bool xp_txf_zc(struct emu_qp *qp, struct xp_txf *f, struct emu_mr *mr, uint64_t addr)
{
	struct emu_ctx *c = mr->ctx;

	if (f->len < XP_ZC_MIN || !xp_rc_like(qp) || !emu_tx_zc_ok(qp->dev) || !mr->nmaps ||
	    c->mem_stalled || (c->dead && !c->nh))
		return false;
	f->zc = emu_mrmap_find_held(mr, addr, f->len, &f->zh);
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
	qp->x->cnt.tx_pkts++;
	qp->x->cnt.tx_bytes += f->hl + f->len + tl;
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

	qp->x->cnt.tx_pkts++;
	qp->x->cnt.tx_bytes += f->hl + f->len + tl;
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
