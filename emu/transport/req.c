/* SPDX-License-Identifier: MIT */
/* Requester: turns send WQEs (private copies of the SQ ring) into request
 * packets. PSNs are assigned once per WQE; go-back-N rewinds (sq_req,
 * sq_req_pkt, sq_psn) to a PSN inside an already numbered WQE and sends
 * from there again. Completion is the completer's job (comp.c). */
#include <errno.h>
#include <string.h>
#include "xport_int.h"

/* Largest burst of packets one call sends, and the most unacknowledged
 * PSNs: keeps one QP from monopolising the TX ring. */
#define REQ_BURST  256u
/* Frames whose payloads one process_vm_readv gathers (32 x 4 KB). */
#define REQ_CHUNK  32u

/* One requester turn: packets it may still send, and for a rate-limited
 * QP (DCQCN) the clock, read once per turn. */
struct req_turn {
	unsigned budget;
	bool paced;
	uint64_t now;
};

/* A request packet of bytes left (tx_bytes moved since before): the
 * pacer and the byte counter of a rate-limited QP count it. */
static inline void req_paced(struct emu_qp *qp, const struct req_turn *t, uint64_t before)
{
	if (t->paced)
		xp_rp_sent(qp, qp->x->cnt.tx_bytes - before);
}

static unsigned req_access(uint8_t op)
{
	return xp_is_rd_atomic(op) ? IBV_ACCESS_LOCAL_WRITE : 0;
}

/* Validate a fresh copy: lengths, local keys, alignment. Sets sw. */
static void req_validate(struct emu_qp *qp, const struct uroce_send_wqe *w,
			 struct emu_xport_swqe *sw)
{
	uint64_t total = 0;
	uint32_t mtu = xp_mtu(qp);
	unsigned i;

	sw->need_resp = xp_rc_like(qp) && xp_is_rd_atomic(w->opcode);
	/* IBTA 1.5: ATOMIC WRITE and FLUSH take a responder resource too */
	sw->rd_res = sw->need_resp || (xp_rc_like(qp) && (w->opcode == IBV_WR_ATOMIC_WRITE ||
							   w->opcode == UROCE_WR_OP_FLUSH));
	if (w->opcode == IBV_WR_LOCAL_INV || w->opcode == IBV_WR_BIND_MW) {
		sw->npkts = 0;
		return;
	}
	if ((w->send_flags & IBV_SEND_INLINE) && !xp_is_rd_atomic(w->opcode)) {
		total = w->inline_len;
	} else {
		const struct uroce_sge *sge = emu_wqe_sges(w);

		/* the length limit first: a message over max_msg_sz is a
		 * length error whatever its keys say */
		for (i = 0; i < w->num_sge; i++)
			total += sge[i].length;
		if (total > EMU_XPORT_MAX_MSG) {
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_LEN_ERR;
			return;
		}
		for (i = 0; i < w->num_sge; i++) {
			int err = 0;

			if (!sge[i].length)
				continue;
			if (!emu_mr_check_lkey(qp->pd, sge[i].lkey, sge[i].addr, sge[i].length,
					       req_access(w->opcode), &err)) {
				sw->state = EMU_SWQE_DONE;
				sw->status = IBV_WC_LOC_PROT_ERR;
				return;
			}
		}
	}
	if (total > EMU_XPORT_MAX_MSG) {
		sw->state = EMU_SWQE_DONE;
		sw->status = IBV_WC_LOC_LEN_ERR;
		return;
	}
	sw->total_len = (uint32_t)total;
	switch (w->opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* The original value lands in the first 8 bytes of the SGE list. */
		if ((w->atomic.remote_addr & 7) || total < 8) {
			sw->state = EMU_SWQE_DONE;
			sw->status = total < 8 ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_QP_OP_ERR;
			return;
		}
		sw->total_len = 8;
		sw->npkts = 1;
		return;
	case UROCE_WR_OP_FLUSH:
		/* one packet, no payload; type and level as the shim checked
		 * them (the ring is application memory: again here) */
		if (w->num_sge || (w->send_flags & IBV_SEND_INLINE) || !w->flush.type ||
		    (w->flush.type & ~(unsigned)WIRE_FLUSH_TYPES) || w->flush.level > WIRE_FLUSH_MR) {
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_QP_OP_ERR;
			return;
		}
		sw->total_len = 0;
		sw->npkts = 1;
		return;
	case IBV_WR_ATOMIC_WRITE:
		/* its 8 bytes are in the WQE (atomic.swap), never an SGE */
		if ((w->rdma.remote_addr & 7) || w->num_sge || (w->send_flags & IBV_SEND_INLINE)) {
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_QP_OP_ERR;
			return;
		}
		sw->total_len = 8;
		sw->npkts = 1;
		return;
	default:
		break;
	}
	if (qp->type == IBV_QPT_UD && total > mtu) {
		sw->state = EMU_SWQE_DONE;
		sw->status = IBV_WC_LOC_LEN_ERR;
		return;
	}
	sw->npkts = total ? (uint32_t)((total + mtu - 1) / mtu) : 1;
}

/* A UD send to QP0 or QP1 speaks for the host (subnet management, the
 * CM): only a privileged client may (docs/security.md, "Privileged
 * operations"); the shim refuses it with EPERM, the ring is checked again
 * here because it is application memory. */
static bool req_qp01_denied(const struct emu_qp *qp, const struct uroce_send_wqe *w)
{
	return qp->type == IBV_QPT_UD && w->ud.remote_qpn <= 1 && w->opcode != IBV_WR_LOCAL_INV &&
	       w->opcode != IBV_WR_BIND_MW && !(qp->ctx && qp->ctx->privileged);
}

static void req_fetch(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t prod = emu_ring_prod(&qp->sq);

	if (prod - x->sq_comp > x->sq_entries) {
		/* An impossible producer index: the application broke the ring. */
		xp_qp_error(qp, IBV_EVENT_QP_FATAL);
		return;
	}
	/* prod behind sq_fetch (the application moved it back) would make
	 * "until sq_fetch == prod" run 2^32 times: count instead */
	uint32_t n = prod - x->sq_fetch;
	if (n > prod - x->sq_comp)
		n = 0;
	for (; n; n--) {
		struct uroce_send_wqe *w = xp_wqe(qp, x->sq_fetch);
		struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_fetch);

		memset(sw, 0, sizeof(*sw));
		sw->mr_epoch = qp->dev->mr_epoch; /* its keys are checked now */
		if (emu_sq_copy(qp, x->sq_fetch, w) < 0 || req_qp01_denied(qp, w)) {
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_QP_OP_ERR;
		} else {
			req_validate(qp, w, sw);
		}
		sw->signaled = qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED) ||
			       sw->status != IBV_WC_SUCCESS;
		x->sq_fetch++;
	}
}

/* Wire opcode of packet pos of a message of WR opcode wr_op. */
static uint8_t req_opcode(struct emu_qp *qp, uint8_t wr_op, enum xp_pos pos)
{
	/* RC opcodes; UC's are the same | WIRE_TR_UC */
	static const uint8_t send[2][XP_POS_N] = {
		{ WIRE_OP_RC_SEND_MIDDLE, WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_SEND_LAST,
		  WIRE_OP_RC_SEND_ONLY },
		{ WIRE_OP_RC_SEND_MIDDLE, WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_SEND_LAST_IMM,
		  WIRE_OP_RC_SEND_ONLY_IMM },
	};
	static const uint8_t write[2][XP_POS_N] = {
		{ WIRE_OP_RC_WRITE_MIDDLE, WIRE_OP_RC_WRITE_FIRST, WIRE_OP_RC_WRITE_LAST,
		  WIRE_OP_RC_WRITE_ONLY },
		{ WIRE_OP_RC_WRITE_MIDDLE, WIRE_OP_RC_WRITE_FIRST, WIRE_OP_RC_WRITE_LAST_IMM,
		  WIRE_OP_RC_WRITE_ONLY_IMM },
	};
	static const uint8_t send_inv[XP_POS_N] = {
		WIRE_OP_RC_SEND_MIDDLE, WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_SEND_LAST_INV,
		WIRE_OP_RC_SEND_ONLY_INV,
	};
	uint8_t base = qp->type == IBV_QPT_UC ? WIRE_TR_UC : WIRE_TR_RC;
	bool imm = wr_op == IBV_WR_SEND_WITH_IMM || wr_op == IBV_WR_RDMA_WRITE_WITH_IMM;

	if (qp->type == IBV_QPT_UD)
		return imm ? WIRE_OP_UD_SEND_ONLY_IMM : WIRE_OP_UD_SEND_ONLY;
	switch (wr_op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return base | write[imm][pos];
	case IBV_WR_SEND_WITH_INV:
		return send_inv[pos];
	case IBV_WR_ATOMIC_WRITE:
		return WIRE_OP_RC_ATOMIC_WRITE;
	case UROCE_WR_OP_FLUSH:
		return WIRE_OP_RC_FLUSH;
	default:
		return base | send[imm][pos];
	}
}

/* Request packet psn went out: advance, and count it if it was sent before. */
static inline void req_sent(struct emu_qp *qp, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;

	if (xp_rc_like(qp)) {
		if (wire_psn_before(psn, x->sq_psn_hw))
			x->cnt.retransmits++;
		else
			x->sq_psn_hw = wire_psn_next(psn);
		if (psn == x->rewind_psn)
			x->rewind_resent = 1;
		xp_infl_sync(qp);
	}
	x->sq_psn = wire_psn_next(psn);
}

/* Fill the payloads of nf begun frames of w (consecutive, starting at
 * byte off) with one read of application memory, then send them and
 * account them as transmitted. -EFAULT drops them all. */
static int req_gather_chunk(struct emu_qp *qp, const struct uroce_send_wqe *w,
			    struct xp_txf *fr, unsigned *nf, uint32_t off, struct req_turn *t)
{
	struct emu_xport_qp *x = qp->x;
	struct iovec lv[REQ_CHUNK];
	unsigned n = *nf, i;

	uint64_t epoch = xp_swqe(qp, x->sq_req)->mr_epoch;
	unsigned nz = 0;
	int rc = 0;

	*nf = 0;
	if (!n || n > REQ_CHUNK)
		return 0;
	for (i = 0; i < n; i++) {
		lv[i].iov_base = fr[i].pay;
		lv[i].iov_len = fr[i].len;
		nz += fr[i].zc != NULL;
	}
	if (!nz) {
		rc = xp_sge_copyv(qp, emu_wqe_sges(w), w->num_sge, off, lv, n, false, 0, epoch);
	} else {
		/* zero-copy frames need nothing; the others (short, or across
		 * SGEs) are copied one by one */
		for (i = 0; i < n && !rc; off += fr[i++].len)
			if (!fr[i].zc)
				rc = xp_sge_copy(qp, emu_wqe_sges(w), w->num_sge, off, fr[i].pay,
						 fr[i].len, false, 0, epoch);
	}
	for (i = 0; i < n; i++) {
		if (!xp_tx_finish(qp, &fr[i], &rc)) /* paced when begun (req_send_data) */
			continue;
		t->budget--;
		x->sq_req_pkt++;
		req_sent(qp, fr[i].psn);
	}
	return rc ? -EFAULT : 0;
}

/* UD: the AH of the WQE gives the path. */
static int req_ud_path(struct emu_qp *qp, const struct uroce_send_wqe *w,
		       struct emu_xport_path *p)
{
	struct emu_ah *ah = qp->ctx ? emu_ctx_get(qp->ctx, w->ud.ah, EMU_OBJ_AH) : NULL;

	if (!ah)
		return -EINVAL;
	if (!ah->av.mac_valid && !emu_av_refresh(qp->dev, &ah->av))
		return -EAGAIN;
	xp_path_from_av(p, &ah->av, qp->qpn);
	return 0;
}

/* READ or atomic request: one packet from the WQE (resent from packet
 * sq_req_pkt of a READ re-issued in the middle). */
static int req_send_rd_atomic(struct emu_qp *qp, const struct emu_xport_path *path,
			      const struct uroce_send_wqe *w, struct emu_xport_swqe *sw,
			      struct req_turn *t)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t k = x->sq_req_pkt, mtu = xp_mtu(qp);
	uint64_t before = x->cnt.tx_bytes;
	struct wire_pkt d;
	int r;

	if (emu_tx_congested(qp->dev)) {
		x->cnt.tx_stalls++;
		return -ENOBUFS;
	}
	if (t->paced && xp_rp_pace(qp, t->now))
		return -EBUSY;
	uint32_t psn = wire_psn_add(sw->first_psn, k);

	/* a READ takes the PSNs of its responses: the window bounds them as
	 * it bounds the packets of a WRITE (the oldest one always goes) */
	if (wire_psn_diff(psn, x->acked_psn) >= (int32_t)xp_cwnd(x))
		return -EBUSY; /* the window: see req_may_send */
	if (!xp_infl_room(qp, psn))
		return -EAGAIN;

	if (w->opcode == IBV_WR_RDMA_READ) {
		/* asked again (from the middle, or after an RNR NAK or a
		 * timeout): the responder may answer from where it stood */
		sw->rd_resent |= k != 0 || wire_psn_before(sw->last_psn, x->sq_psn_hw);
		xp_pkt_init(qp, path, &d, WIRE_OP_RC_READ_REQ, qp->attr.dest_qp_num, psn);
		d.reth.va = w->rdma.remote_addr + (uint64_t)k * mtu;
		d.reth.rkey = w->rdma.rkey;
		d.reth.dma_len = sw->total_len - k * mtu;
		if (sw->total_len < k * mtu)
			d.reth.dma_len = 0;
	} else {
		xp_pkt_init(qp, path, &d,
			    w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? WIRE_OP_RC_CMP_SWAP
								    : WIRE_OP_RC_FETCH_ADD,
			    qp->attr.dest_qp_num, psn);
		d.atomiceth.va = w->atomic.remote_addr;
		d.atomiceth.rkey = w->atomic.rkey;
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			d.atomiceth.compare = w->atomic.compare_add;
			d.atomiceth.swap_add = w->atomic.swap;
		} else {
			d.atomiceth.swap_add = w->atomic.compare_add;
		}
	}
	d.xrc_srqn = w->xrc_srqn; /* sent by XRC INI QPs only (the opcode's XRCETH) */
	d.bth.ackreq = true;
	xp_rtt_start(x, psn);
	r = xp_tx(qp, path, &d, NULL, NULL, NULL);
	if (r)
		return r;
	req_paced(qp, t, before);
	t->budget--;
	x->pkts_since_ackreq = 0;
	x->sq_req_pkt = sw->npkts;
	if (x->rd_single && psn == x->rewind_psn) {
		/* the head READ re-issued alone (comp.c, comp_implied_nak):
		 * then on from where the cursor stood */
		x->rd_single = 0;
		x->rd_jump = 1;
	}
	req_sent(qp, sw->last_psn);
	return 0;
}

/* May data packet psn go now (queued begun before it in this chunk)? 0,
 * or -EAGAIN/-ENOBUFS to stop here (the engine tries again: next turn,
 * or within 10 us when asleep), or -EBUSY when the QP's own window is
 * full, bounded go-back-N holds it until an ACK moves the bound or the
 * pacer says wait. A full window is not a stall: the packets it has out
 * are what holds it, and their ACK runs the requester (comp.c, every
 * response sets req_sched), their loss a timer. Polled as a stall, a
 * sender whose window was full woke every ~10-30 us while it slept for
 * the ACK (docs/performance.md, "Sender wake-ups (wave 7)"). The
 * device's bound (xp_infl_room) stays a stall: other QPs' ACKs free it. */
static int req_may_send(struct emu_qp *qp, uint32_t psn, const struct req_turn *t,
			unsigned queued)
{
	if (t->budget <= queued)
		return -EAGAIN;
	if (emu_tx_congested(qp->dev)) {
		qp->x->cnt.tx_stalls++;
		return -ENOBUFS; /* resumed by emu_xport_poll once the port drains */
	}
	if (xp_rc_like(qp) && wire_psn_diff(psn, qp->x->acked_psn) >= (int32_t)xp_cwnd(qp->x))
		return -EBUSY;
	if (xp_rc_like(qp) && !xp_infl_room(qp, psn))
		return -EAGAIN;
	if (xp_gbn_held(qp->x, psn))
		return -EBUSY;
	if (t->paced && xp_rp_pace(qp, t->now))
		return -EBUSY;
	return 0;
}

/* Convert: the headers of data packet k (SEND/WRITE, any transport). */
static void req_build(struct emu_qp *qp, const struct emu_xport_path *path,
		      const struct uroce_send_wqe *w, const struct emu_xport_swqe *sw,
		      uint32_t k, uint32_t psn, struct wire_pkt *d)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t mtu = xp_mtu(qp), off = k * mtu;
	enum xp_pos pos = xp_pos(k, sw->npkts);
	bool first = pos & XP_POS_FIRST, last = pos & XP_POS_LAST;
	uint32_t dqpn = qp->type == IBV_QPT_UD ? w->ud.remote_qpn : qp->attr.dest_qp_num;

	xp_pkt_init(qp, path, d, req_opcode(qp, w->opcode, pos), dqpn, psn);
	d->xrc_srqn = w->xrc_srqn; /* sent by XRC INI QPs only (the opcode's XRCETH) */
	d->payload_len = sw->total_len - off < mtu ? sw->total_len - off : mtu;
	if (first && (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		      w->opcode == IBV_WR_ATOMIC_WRITE)) {
		d->reth.va = w->rdma.remote_addr;
		d->reth.rkey = w->rdma.rkey;
		d->reth.dma_len = sw->total_len;
	}
	if (w->opcode == UROCE_WR_OP_FLUSH) {
		d->reth.va = w->flush.remote_addr;
		d->reth.rkey = w->flush.rkey;
		d->reth.dma_len = w->flush.length;
		d->feth.plt = w->flush.type;
		d->feth.sel = w->flush.level;
	}
	if (last) {
		if (w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			d->imm = be32toh(w->imm_or_inv);
		if (w->opcode == IBV_WR_SEND_WITH_INV)
			d->ieth_rkey = w->imm_or_inv;
		/* a FLUSH reaches no receive queue: SE 0, as rxe sends it */
		d->bth.se = (w->send_flags & IBV_SEND_SOLICITED) && w->opcode != UROCE_WR_OP_FLUSH;
	}
	if (qp->type == IBV_QPT_UD) {
		d->deth.qkey = (w->ud.remote_qkey & 0x80000000u) ? qp->attr.qkey
								 : w->ud.remote_qkey;
		d->deth.sqpn = qp->qpn;
	}
	/* AckReq also on the last packet the device's bound lets out
	 * (xp_infl_room): the responder ACKs only what asks for it, and a QP
	 * held mid-message behind other QPs' packets would otherwise wait
	 * for its probe (32 QPs of ib_write_bw: 700 timeouts in 4 s) */
	if (xp_rc_like(qp) && (last || ++x->pkts_since_ackreq >= EMU_XPORT_ACK_EVERY ||
				       xp_gbn_last(x, psn) ||
				       qp->dev->x->infl + 1 >= XP_DEV_INFL_MAX)) {
		d->bth.ackreq = true;
		x->pkts_since_ackreq = 0;
		xp_rtt_start(x, psn);
	}
}

/* SEND/WRITE data packets sq_req_pkt.. of the WQE: inline data goes out
 * packet by packet, SGE data is gathered REQ_CHUNK frames per read. */
static int req_send_data(struct emu_qp *qp, const struct emu_xport_path *path,
			 const struct uroce_send_wqe *w, struct emu_xport_swqe *sw,
			 struct req_turn *t)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t mtu = xp_mtu(qp);
	/* ATOMIC WRITE: the 8 bytes the WQE carries */
	const uint8_t *inl = w->opcode == IBV_WR_ATOMIC_WRITE ? (const uint8_t *)&w->atomic.swap
							       : emu_wqe_inline(w);
	bool gather = !(w->send_flags & IBV_SEND_INLINE) && w->opcode != IBV_WR_ATOMIC_WRITE &&
		      w->opcode != UROCE_WR_OP_FLUSH;
	struct xp_txf fr[REQ_CHUNK];
	unsigned nf = 0;
	uint32_t chunk_off = 0;
	struct wire_pkt d;
	int r = 0;

	while (x->sq_req_pkt + nf < sw->npkts) {
		uint32_t k = x->sq_req_pkt + nf, off = k * mtu;
		uint32_t psn = qp->type == IBV_QPT_UD ? x->sq_psn : wire_psn_add(sw->first_psn, k);

		r = req_may_send(qp, psn, t, nf);
		if (r)
			break;
		req_build(qp, path, w, sw, k, psn, &d);
		if (!gather) {
			uint64_t before = x->cnt.tx_bytes;

			r = xp_tx(qp, path, &d, inl + off, NULL, NULL);
			if (r)
				break;
			req_paced(qp, t, before);
			t->budget--;
			x->sq_req_pkt = k + 1;
			req_sent(qp, psn);
			continue;
		}
		r = xp_tx_begin(qp, path, &d, &fr[nf]);
		if (r)
			break;
		(void)xp_sge_zc(qp, emu_wqe_sges(w), w->num_sge, off, sw->mr_epoch, &fr[nf]);
		/* charged now, so a paced chunk ends where the pacer says */
		if (t->paced)
			xp_rp_sent(qp, fr[nf].hl + fr[nf].len + wire_pad(fr[nf].len) +
					       WIRE_ICRC_LEN);
		if (!nf)
			chunk_off = off;
		fr[nf++].psn = psn;
		if (nf == REQ_CHUNK) {
			r = req_gather_chunk(qp, w, fr, &nf, chunk_off, t);
			if (r)
				return r;
		}
	}
	if (nf) {
		int r2 = req_gather_chunk(qp, w, fr, &nf, chunk_off, t);

		if (r2)
			return r2;
	}
	return r;
}

/* Send packets sq_req_pkt.. of the WQE at sq_req. 0 when all are out,
 * -ENOBUFS to try again later, -EFAULT/-EINVAL for a local error,
 * -EAGAIN when the budget ran out, -EBUSY while bounded go-back-N waits
 * for an ACK or the pacer says wait. */
static int req_send_wqe(struct emu_qp *qp, struct uroce_send_wqe *w,
			struct emu_xport_swqe *sw, struct req_turn *t)
{
	struct emu_xport_path udp_path;
	const struct emu_xport_path *path = &qp->x->path;
	int r;

	if (qp->type == IBV_QPT_UD) {
		r = req_ud_path(qp, w, &udp_path);
		if (r)
			return r == -EAGAIN ? -ENOBUFS : r;
		path = &udp_path;
	}
	if (xp_is_rd_atomic(w->opcode))
		return req_send_rd_atomic(qp, path, w, sw, t);
	return req_send_data(qp, path, w, sw, t);
}

/* Local operations run when they reach the head of transmission. */
static void req_local_op(struct emu_qp *qp, const struct uroce_send_wqe *w,
			 struct emu_xport_swqe *sw)
{
	uint32_t rkey;

	if (w->opcode == IBV_WR_LOCAL_INV) {
		sw->status = emu_key_invalidate(qp->pd, w->imm_or_inv) ? IBV_WC_LOC_QP_OP_ERR
								       : IBV_WC_SUCCESS;
	} else {
		sw->status = emu_mw_bind(qp, w->bind.mw, w->bind.rkey, w->bind.mr_lkey,
					 w->bind.addr, w->bind.length, w->bind.access, &rkey)
				     ? IBV_WC_MW_BIND_ERR
				     : IBV_WC_SUCCESS;
	}
	if (sw->status != IBV_WC_SUCCESS)
		sw->signaled = 1;
	sw->state = EMU_SWQE_DONE;
}

/* A NEW WQE reaches the head of transmission: number its PSNs. 1 to send
 * it, 0 when it was a local operation (decided now), -1 to wait (SQD,
 * fence, READ/atomic limit). */
static int req_start(struct emu_qp *qp, const struct uroce_send_wqe *w,
		     struct emu_xport_swqe *sw)
{
	struct emu_xport_qp *x = qp->x;

	if (qp->attr.qp_state == IBV_QPS_SQD)
		return -1;
	if ((w->send_flags & IBV_SEND_FENCE) && x->rd_atomic_out)
		return -1;
	if (w->opcode == IBV_WR_LOCAL_INV || w->opcode == IBV_WR_BIND_MW) {
		req_local_op(qp, w, sw);
		return 0;
	}
	if (sw->rd_res) {
		uint32_t lim = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

		if (x->rd_atomic_out >= lim)
			return -1;
		x->rd_atomic_out++;
	}
	sw->first_psn = x->sq_psn_max;
	sw->last_psn = wire_psn_add(sw->first_psn, sw->npkts - 1);
	sw->resp_psn = sw->first_psn;
	if (qp->type != IBV_QPT_UD)
		x->sq_psn_max = wire_psn_add(x->sq_psn_max, sw->npkts);
	sw->state = EMU_SWQE_PENDING;
	x->sq_req_pkt = 0;
	return 1;
}

/* Every packet of the WQE at sq_req is out: UC/UD are done, RC waits for
 * its ACK or response. */
static void req_wqe_out(struct emu_qp *qp, struct emu_xport_swqe *sw)
{
	struct emu_xport_qp *x = qp->x;

	if (qp->type == IBV_QPT_UD) {
		/* UD completes once on the wire; the PSN only orders. */
		x->sq_psn = wire_psn_next(x->sq_psn);
		x->sq_psn_max = x->sq_psn;
		sw->state = EMU_SWQE_DONE;
	} else if (qp->type == IBV_QPT_UC) {
		sw->state = EMU_SWQE_DONE;
	} else {
		sw->state = EMU_SWQE_SENT;
	}
	x->sq_req++;
	x->sq_req_pkt = 0;
}

void xp_req_progress(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	enum ibv_qp_state st = qp->attr.qp_state;
	struct req_turn t = { .budget = REQ_BURST, .paced = xp_rp_active(x) };

	if (x->rp)
		x->rp->pace_wait = 0; /* set again below if the pacer still says wait */
	if (!x->sq_copy || (st != IBV_QPS_RTS && st != IBV_QPS_SQD))
		return;
	req_fetch(qp);
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	x->req_stalled = 0;
	if (t.paced) {
		/* the only clock read of a turn, and none for a QP that
		 * never saw a CNP */
		t.now = emu_now_ns();
		xp_rp_turn(qp, t.now);
		t.paced = xp_rp_active(x); /* may have recovered to line rate */
	}
	/* each WQE takes at most two turns (a local op: decide, then pass):
	 * the guard bounds the loop even if a nested error flush moved the
	 * indices under it */
	for (uint32_t guard = 2 * (x->sq_fetch - x->sq_req) + 1;
	     guard && x->sq_req != x->sq_fetch && !x->rnr_at; guard--) {
		struct uroce_send_wqe *w = xp_wqe(qp, x->sq_req);
		struct emu_xport_swqe *sw = xp_swqe(qp, x->sq_req);
		int r;

		if (sw->state == EMU_SWQE_DONE) {
			if (sw->status != IBV_WC_SUCCESS)
				break; /* nothing after a failed WQE goes out */
			x->sq_req++;
			x->sq_req_pkt = 0;
			continue;
		}
		if (sw->state == EMU_SWQE_NEW) {
			r = req_start(qp, w, sw);
			if (r < 0)
				break;
			if (!r)
				continue;
		}
		r = req_send_wqe(qp, w, sw, &t);
		if (r == -EBUSY) {
			/* the pacer: emu_xport_poll kicks it at xp_rp_wake; a
			 * go-back-N bound: the ACK that moves it schedules us */
			if (t.paced)
				xp_act_add(qp);
			break;
		}
		if (r == -ENOBUFS || r == -EAGAIN) {
			x->req_stalled = 1;
			xp_act_add(qp);
			break;
		}
		if (r) {
			sw->state = EMU_SWQE_DONE;
			sw->status = IBV_WC_LOC_PROT_ERR;
			sw->signaled = 1;
			break;
		}
		req_wqe_out(qp, sw);
		if (x->rd_jump) {
			x->rd_jump = 0;
			xp_sq_rewind(qp, x->rd_ret);
		}
	}
	/* any packet out, also of a message the budget, the window or the
	 * pacer cut short: the timer covers the oldest unacknowledged packet
	 * from the moment it is sent, not from the end of its message */
	if (t.budget != REQ_BURST && xp_rc_like(qp))
		xp_retrans_start(qp, false);
	/* local operations, failed WQEs and UC/UD sends are already decided:
	 * xp_run runs the completer next */
	x->comp_sched = 1;
}

void xp_req_reset(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	x->retrans_at = 0;
	x->probe_at = 0;
	x->probe_shift = 0;
	x->rtt_at = 0;
	x->srtt_ns = x->rttvar_ns = 0;
	x->max_rtt_ns = 0;
	x->rnr_at = 0;
	x->gbn_bound = XP_GBN_OFF;
	x->cwnd = 0;
	x->ssthresh = 0;
	xp_infl_release(qp);
	x->in_recovery = 0;
	x->rd_atomic_out = 0;
	x->pkts_since_ackreq = 0;
	x->req_stalled = 0;
	if (x->rp)
		x->rp->pace_wait = 0;
}
