/* SPDX-License-Identifier: MIT */
/* Responder: request packets (RC, UC, UD) to placed data, receive
 * completions, ACKs/NAKs, READ responses and atomic ACKs. An explicit state
 * machine in the style of rxe_resp.c; emu_resp_state_name[] traces it.
 *
 * A SEND longer than the posted receive buffer is NAKed "remote operational
 * error" (as rdma_rxe and ConnectX do; IBTA would say invalid request) and
 * the receive completes with IBV_WC_LOC_LEN_ERR. */
#include <errno.h>
#include <string.h>
#include "xport_int.h"

const char *const emu_resp_state_name[EMU_RESP_NSTATES] = {
	[EMU_RESP_NONE] = "NONE",
	[EMU_RESP_GET_REQ] = "GET_REQ",
	[EMU_RESP_CHK_PSN] = "CHK_PSN",
	[EMU_RESP_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[EMU_RESP_CHK_OP_VALID] = "CHK_OP_VALID",
	[EMU_RESP_CHK_RESOURCE] = "CHK_RESOURCE",
	[EMU_RESP_CHK_LENGTH] = "CHK_LENGTH",
	[EMU_RESP_CHK_RKEY] = "CHK_RKEY",
	[EMU_RESP_EXECUTE] = "EXECUTE",
	[EMU_RESP_READ_REPLY] = "READ_REPLY",
	[EMU_RESP_ATOMIC_REPLY] = "ATOMIC_REPLY",
	[EMU_RESP_COMPLETE] = "COMPLETE",
	[EMU_RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[EMU_RESP_CLEANUP] = "CLEANUP",
	[EMU_RESP_DUPLICATE_REQUEST] = "DUPLICATE_REQUEST",
	[EMU_RESP_ERR_MALFORMED] = "ERR_MALFORMED",
	[EMU_RESP_ERR_PSN_OUT_OF_SEQ] = "ERR_PSN_OUT_OF_SEQ",
	[EMU_RESP_ERR_MISSING_OPCODE_FIRST] = "ERR_MISSING_OPCODE_FIRST",
	[EMU_RESP_ERR_MISSING_OPCODE_LAST_C] = "ERR_MISSING_OPCODE_LAST_C",
	[EMU_RESP_ERR_MISSING_OPCODE_LAST_D1E] = "ERR_MISSING_OPCODE_LAST_D1E",
	[EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ] = "ERR_TOO_MANY_RDMA_ATM_REQ",
	[EMU_RESP_ERR_RNR] = "ERR_RNR",
	[EMU_RESP_ERR_RKEY_VIOLATION] = "ERR_RKEY_VIOLATION",
	[EMU_RESP_ERR_INVALIDATE_RKEY] = "ERR_INVALIDATE_RKEY",
	[EMU_RESP_ERR_LENGTH] = "ERR_LENGTH",
	[EMU_RESP_ERR_CQ_OVERFLOW] = "ERR_CQ_OVERFLOW",
	[EMU_RESP_ERROR] = "ERROR",
	[EMU_RESP_DONE] = "DONE",
	[EMU_RESP_EXIT] = "EXIT",
};

/* Immediately send an ACK/NAK with syndrome syn for psn. */
static void resp_ack(struct emu_qp *qp, uint8_t syn, uint32_t psn)
{
	struct wire_pkt d;

	/* a pending coalesced ACK goes out before a NAK for a later PSN */
	if (qp->x.ack_pending && wire_aeth_type(syn) != WIRE_AETH_ACK)
		xp_resp_send_ack(qp);
	xp_pkt_init(qp, &qp->x.path, &d, WIRE_OP_RC_ACK, qp->attr.dest_qp_num, psn);
	d.aeth.syndrome = syn;
	d.aeth.msn = qp->x.msn & WIRE_PSN_MASK;
	xp_tx(qp, &qp->x.path, &d, NULL, NULL, NULL);
}

/* Coalesced ACK flushed by emu_xport_poll (bounded by one engine turn). */
static void resp_ack_later(struct emu_qp *qp, uint32_t psn)
{
	struct emu_xport_qp *x = &qp->x;

	x->ack_pending = 1;
	x->ack_psn = psn;
	x->ack_syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
	if (!x->ack_at)
		x->ack_at = emu_now_ns();
	xp_act_add(qp);
}

void xp_resp_send_ack(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;

	if (!x->ack_pending)
		return;
	x->ack_pending = 0;
	x->ack_at = 0;
	resp_ack(qp, x->ack_syndrome, x->ack_psn);
}

/* A RoCE UD receive completion tells in wc.sl which network header fills
 * the first 40 bytes, as ConnectX does (mlx5: the CQE's l3_hdr_type):
 * IPv4 (its header in bytes 20..39) or IPv6. UCX's ud_verbs reads it to
 * find the sender's GID and drops the datagram when it does not match. */
#define RESP_UD_SL_IPV6 1
#define RESP_UD_SL_IPV4 2

static void recv_cqe_sl(struct emu_qp *qp, uint8_t status, uint32_t opcode, uint32_t len,
			uint32_t flags, uint32_t imm_or_inv, uint32_t src_qp, bool se,
			uint8_t sl)
{
	struct uroce_cqe e;

	memset(&e, 0, sizeof(e));
	e.sl = sl;
	e.wr_id = qp->x.rwqe->wr_id;
	e.status = status;
	e.opcode = opcode;
	e.byte_len = len;
	e.wc_flags = flags;
	e.imm_or_inv = imm_or_inv;
	e.src_qp = src_qp;
	e.solicited = se;
	qp->x.rwqe_valid = 0;
	xp_cq_push(qp, qp->recv_cq, &e);
}

static void recv_cqe(struct emu_qp *qp, uint8_t status, uint32_t opcode, uint32_t len,
		     uint32_t flags, uint32_t imm_or_inv, uint32_t src_qp, bool se)
{
	recv_cqe_sl(qp, status, opcode, len, flags, imm_or_inv, src_qp, se, 0);
}

/* Take a receive WQE and validate its SGEs. 1 ok, 0 none, <0 bad WQE
 * (completed in error already). */
static int resp_get_rwqe(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
	struct emu_pd *pd = qp->srq ? qp->srq->pd : qp->pd;
	uint64_t total = 0;
	unsigned i;
	int n;

	if (x->rwqe_valid)
		return 1;
	n = emu_recv_take(qp, x->rwqe);
	if (n <= 0) {
		if (n < 0) {
			x->rwqe_valid = 1;
			recv_cqe(qp, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RECV, 0, 0, 0, 0, false);
		}
		return n;
	}
	x->rwqe_valid = 1;
	for (i = 0; i < x->rwqe->num_sge && i < EMU_MAX_SGE; i++) {
		const struct uroce_sge *s = &x->rwqe->sge[i];
		int err = 0;

		total += s->length;
		if (s->length &&
		    !emu_mr_check_lkey(pd, s->lkey, s->addr, s->length, IBV_ACCESS_LOCAL_WRITE, &err)) {
			recv_cqe(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, 0, false);
			return -EACCES;
		}
	}
	x->rwqe_len = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	x->rwqe_epoch = qp->dev->mr_epoch;
	x->rcv_off = 0;
	return 1;
}

#define RESP_CHUNK 32u /* READ response frames filled by one process_vm_readv */

/* Fill n begun READ response frames from [proc, ...) with one read, send
 * them. false when the memory could not be read (frames dropped). */
static bool resp_read_chunk(struct emu_qp *qp, struct emu_ctx *owner, uint64_t proc,
			    struct xp_txf *fr, unsigned n)
{
	struct iovec lv[RESP_CHUNK];
	struct emu_rvec rv = { proc, 0 };
	unsigned i;

	if (!n || n > RESP_CHUNK)
		return true;
	for (i = 0; i < n; i++) {
		lv[i].iov_base = fr[i].pay;
		lv[i].iov_len = fr[i].len;
		rv.len += fr[i].len;
	}
	if (rv.len && emu_mem_readv(owner, lv, n, &rv, 1)) {
		for (i = 0; i < n; i++)
			xp_tx_abort(qp, &fr[i]);
		return false;
	}
	for (i = 0; i < n; i++)
		xp_tx_end(qp, &fr[i]);
	return true;
}

/* READ responses for [va, va+len) starting at psn. */
static void resp_read_reply(struct emu_qp *qp, struct emu_ctx *owner, uint64_t proc,
			    uint32_t len, uint32_t psn)
{
	uint32_t mtu = xp_mtu(qp);
	uint32_t n = len ? (len + mtu - 1) / mtu : 1, i;
	struct xp_txf fr[RESP_CHUNK];
	unsigned nf = 0;
	uint64_t chunk = proc;

	for (i = 0; i < n; i++) {
		struct wire_pkt d;
		uint32_t off = i * mtu;
		uint32_t l = len - off < mtu ? len - off : mtu;
		uint8_t op;

		if (n == 1)
			op = WIRE_OP_RC_READ_RESP_ONLY;
		else if (i == 0)
			op = WIRE_OP_RC_READ_RESP_FIRST;
		else if (i + 1 == n)
			op = WIRE_OP_RC_READ_RESP_LAST;
		else
			op = WIRE_OP_RC_READ_RESP_MIDDLE;
		xp_pkt_init(qp, &qp->x.path, &d, op, qp->attr.dest_qp_num, wire_psn_add(psn, i));
		d.aeth.syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
		d.aeth.msn = qp->x.msn & WIRE_PSN_MASK;
		d.payload_len = l;
		if (xp_tx_begin(qp, &qp->x.path, &d, &fr[nf]))
			break; /* the requester times out and asks again */
		if (!nf)
			chunk = proc + off;
		if (++nf == RESP_CHUNK) {
			if (!resp_read_chunk(qp, owner, chunk, fr, nf))
				return;
			nf = 0;
		}
	}
	(void)resp_read_chunk(qp, owner, chunk, fr, nf);
}

static void resp_atomic_ack(struct emu_qp *qp, uint32_t psn, uint64_t orig)
{
	struct wire_pkt d;

	xp_pkt_init(qp, &qp->x.path, &d, WIRE_OP_RC_ATOMIC_ACK, qp->attr.dest_qp_num, psn);
	d.aeth.syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
	d.aeth.msn = qp->x.msn & WIRE_PSN_MASK;
	d.atomicacketh.orig = orig;
	xp_tx(qp, &qp->x.path, &d, NULL, NULL, NULL);
}

static struct emu_xport_res *resp_res_new(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;
	struct emu_xport_res *r;

	if (!x->res_n)
		return NULL;
	/* The oldest resource is recycled: a requester honouring
	 * max_dest_rd_atomic never needs more. */
	r = &x->res[x->res_next++ % x->res_n];
	memset(r, 0, sizeof(*r));
	return r;
}

static void resp_duplicate(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = &qp->x;
	uint8_t cls = pkt->op->cls;
	uint32_t psn = pkt->bth.psn, i;

	x->cnt.dup_requests++;
	if (cls == WIRE_OPC_SEND || cls == WIRE_OPC_WRITE) {
		/* already executed: acknowledge again, never deliver twice */
		resp_ack_later(qp, wire_psn_add(x->epsn, WIRE_PSN_MASK));
		return;
	}
	for (i = 0; i < x->res_n; i++) {
		struct emu_xport_res *r = &x->res[i];

		if (!r->valid)
			continue;
		if (cls == WIRE_OPC_ATOMIC && r->is_atomic && r->first_psn == psn) {
			resp_atomic_ack(qp, psn, r->orig);
			return;
		}
		if (cls == WIRE_OPC_READ && !r->is_atomic &&
		    wire_psn_in_window(psn, r->first_psn,
				       wire_psn_dist(r->first_psn, r->last_psn) + 1)) {
			uint64_t proc = 0;
			struct emu_ctx *owner = NULL;
			int err;
			uint64_t off = pkt->reth.va - r->va;

			/* a re-issued READ may start inside the original one */
			if (pkt->reth.va < r->va || off + pkt->reth.dma_len > r->len)
				return;
			if (pkt->reth.dma_len &&
			    !emu_mr_check_rkey(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len,
					       IBV_ACCESS_REMOTE_READ, &proc, &owner, &err))
				return;
			resp_read_reply(qp, owner, proc, pkt->reth.dma_len, psn);
			return;
		}
	}
}

/* Class B/C/D errors on RC: NAK, complete the receive in error, go to ERR. */
static void resp_fatal(struct emu_qp *qp, const struct wire_pkt *pkt, uint8_t nak,
		       uint8_t wc_status, int ev)
{
	struct emu_xport_qp *x = &qp->x;

	if (qp->type == IBV_QPT_RC) {
		x->cnt.naks_sent++;
		resp_ack(qp, wire_aeth_nak(nak), pkt->bth.psn);
	}
	if (x->rwqe_valid && wc_status)
		recv_cqe(qp, wc_status, IBV_WC_RECV, 0, 0, 0, qp->attr.dest_qp_num, false);
	xp_qp_error(qp, ev);
}

static bool resp_op_allowed(struct emu_qp *qp, uint8_t cls)
{
	unsigned a = qp->attr.qp_access_flags;

	switch (cls) {
	case WIRE_OPC_SEND:
		return true;
	case WIRE_OPC_WRITE:
		return a & IBV_ACCESS_REMOTE_WRITE;
	case WIRE_OPC_READ:
		return qp->type == IBV_QPT_RC && (a & IBV_ACCESS_REMOTE_READ);
	case WIRE_OPC_ATOMIC:
		return qp->type == IBV_QPT_RC && (a & IBV_ACCESS_REMOTE_ATOMIC);
	default:
		return false;
	}
}

static void resp_ud(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = &qp->x;
	uint8_t grh[40];
	const uint8_t *frame = pkt->payload - pkt->payload_off;
	uint32_t flags = IBV_WC_GRH, imm = 0;
	int n;

	if (pkt->op->cls != WIRE_OPC_SEND || !(pkt->hdrs & WIRE_HDR_DETH) ||
	    pkt->deth.qkey != qp->attr.qkey) {
		x->cnt.rx_dropped++;
		return;
	}
	n = resp_get_rwqe(qp);
	if (n <= 0) {
		if (n == 0)
			x->cnt.rx_dropped++; /* UD has no RNR: the datagram is lost */
		return;
	}
	memset(grh, 0, sizeof(grh));
	if (pkt->ip.version == 6)
		memcpy(grh, frame + pkt->l3_off, 40);
	else
		memcpy(grh + 20, frame + pkt->l3_off, 20);
	if (pkt->hdrs & WIRE_HDR_IMMDT) {
		flags |= IBV_WC_WITH_IMM;
		imm = htobe32(pkt->imm);
	}
	if (40u + pkt->payload_len > x->rwqe_len) {
		recv_cqe(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, pkt->deth.sqpn, false);
		return;
	}
	if (xp_sge_copy(qp, x->rwqe->sge, x->rwqe->num_sge, 0, grh, 40, true,
			IBV_ACCESS_LOCAL_WRITE, x->rwqe_epoch) ||
	    xp_sge_copy(qp, x->rwqe->sge, x->rwqe->num_sge, 40, (void *)pkt->payload,
			pkt->payload_len, true, IBV_ACCESS_LOCAL_WRITE, x->rwqe_epoch)) {
		recv_cqe(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, pkt->deth.sqpn, false);
		return;
	}
	recv_cqe_sl(qp, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + pkt->payload_len, flags, imm,
		    pkt->deth.sqpn, pkt->bth.se,
		    pkt->ip.version == 6 ? RESP_UD_SL_IPV6 : RESP_UD_SL_IPV4);
}

void xp_resp_rx(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = &qp->x;
	enum emu_resp_state st = EMU_RESP_GET_REQ;
	const struct wire_opcode_info *op = pkt->op;
	uint8_t cls = op->cls;
	uint32_t psn = pkt->bth.psn, mtu;
	bool rc = qp->type == IBV_QPT_RC;
	bool first = op->flags & WIRE_OPF_FIRST, last = op->flags & WIRE_OPF_LAST;
	uint64_t proc = 0;
	struct emu_ctx *owner = NULL;
	int err = 0;

	if (qp->attr.qp_state < IBV_QPS_RTR || qp->attr.qp_state == IBV_QPS_ERR) {
		x->cnt.rx_dropped++;
		return;
	}
	if (!x->comm_est_sent && qp->attr.qp_state == IBV_QPS_RTR) {
		x->comm_est_sent = 1;
		xp_event(qp, IBV_EVENT_COMM_EST);
	}
	if (qp->type == IBV_QPT_UD) {
		resp_ud(qp, pkt);
		return;
	}
	mtu = xp_mtu(qp);

	while (st != EMU_RESP_DONE && st != EMU_RESP_EXIT) {
		x->resp_state = (uint8_t)st;
		switch (st) {
		case EMU_RESP_GET_REQ:
			if (!(op->flags & WIRE_OPF_REQ)) {
				st = EMU_RESP_EXIT;
				break;
			}
			st = EMU_RESP_CHK_PSN;
			break;
		case EMU_RESP_CHK_PSN: {
			int32_t diff = wire_psn_cmp(psn, x->epsn);

			if (!rc) {
				if (diff < 0) {
					/* UC: a late or duplicated packet, never redelivered */
					x->cnt.dup_requests++;
					st = EMU_RESP_EXIT;
					break;
				}
				if (diff) {
					/* UC: lost packets; abandon the message in
					 * progress and resynchronise on this one */
					x->cnt.out_of_seq++;
					x->resp_opseq = 0;
					x->rcv_off = 0;
					x->uc_drop = !first;
				}
				x->epsn = wire_psn_next(psn);
				if (x->uc_drop && first)
					x->uc_drop = 0;
				if (x->uc_drop) {
					x->cnt.rx_dropped++;
					st = EMU_RESP_EXIT;
					break;
				}
				st = EMU_RESP_CHK_OP_SEQ;
				break;
			}
			if (diff > 0) {
				st = EMU_RESP_ERR_PSN_OUT_OF_SEQ;
			} else if (diff < 0) {
				st = EMU_RESP_DUPLICATE_REQUEST;
			} else {
				x->nak_sent = 0;
				st = EMU_RESP_CHK_OP_SEQ;
			}
			break;
		}
		case EMU_RESP_ERR_PSN_OUT_OF_SEQ:
			x->cnt.out_of_seq++;
			if (!x->nak_sent) {
				x->nak_sent = 1;
				x->cnt.seq_naks_sent++;
				resp_ack(qp, wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR), x->epsn);
			}
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_DUPLICATE_REQUEST:
			resp_duplicate(qp, pkt);
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_CHK_OP_SEQ:
			if (x->resp_opseq) {
				if (first || cls != x->resp_opseq)
					st = EMU_RESP_ERR_MISSING_OPCODE_LAST_C;
				else
					st = EMU_RESP_CHK_OP_VALID;
			} else {
				st = first ? EMU_RESP_CHK_OP_VALID : EMU_RESP_ERR_MISSING_OPCODE_FIRST;
			}
			break;
		case EMU_RESP_ERR_MISSING_OPCODE_FIRST:
		case EMU_RESP_ERR_MISSING_OPCODE_LAST_C:
		case EMU_RESP_ERR_MISSING_OPCODE_LAST_D1E:
		case EMU_RESP_ERR_MALFORMED:
			if (!rc) {
				x->cnt.rx_dropped++;
				x->uc_drop = 1;
				x->resp_opseq = 0;
				st = EMU_RESP_EXIT;
				break;
			}
			resp_fatal(qp, pkt, WIRE_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
				   IBV_EVENT_QP_REQ_ERR);
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_CHK_OP_VALID:
			if (!resp_op_allowed(qp, cls)) {
				st = EMU_RESP_ERR_MALFORMED;
				break;
			}
			st = EMU_RESP_CHK_LENGTH;
			break;
		case EMU_RESP_CHK_LENGTH:
			/* FIRST/MIDDLE carry exactly one MTU, LAST/ONLY at most one */
			if ((op->flags & WIRE_OPF_PAYLOAD) &&
			    (last ? pkt->payload_len > mtu : pkt->payload_len != mtu)) {
				st = EMU_RESP_ERR_MALFORMED;
				break;
			}
			if (((cls == WIRE_OPC_READ || (cls == WIRE_OPC_WRITE && first)) &&
			     pkt->reth.dma_len > EMU_XPORT_MAX_MSG) ||
			    (cls == WIRE_OPC_ATOMIC && (pkt->atomiceth.va & 7))) {
				st = EMU_RESP_ERR_MALFORMED;
				break;
			}
			st = EMU_RESP_CHK_RESOURCE;
			break;
		case EMU_RESP_CHK_RESOURCE: {
			bool need = (cls == WIRE_OPC_SEND && first) ||
				    (cls == WIRE_OPC_WRITE && last && (op->flags & WIRE_OPF_IMM));
			int n;

			if ((cls == WIRE_OPC_READ || cls == WIRE_OPC_ATOMIC) &&
			    !qp->attr.max_dest_rd_atomic) {
				st = EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ;
				break;
			}
			if (!need) {
				st = EMU_RESP_CHK_RKEY;
				break;
			}
			n = resp_get_rwqe(qp);
			if (n == 0) {
				st = EMU_RESP_ERR_RNR;
			} else if (n < 0) {
				if (rc) {
					resp_fatal(qp, pkt, WIRE_NAK_REM_OP_ERR, 0, IBV_EVENT_QP_FATAL);
				} else {
					x->uc_drop = 1;
					x->resp_opseq = 0;
				}
				st = EMU_RESP_EXIT;
			} else {
				st = EMU_RESP_CHK_RKEY;
			}
			break;
		}
		case EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ:
			/* No responder resources at all (max_dest_rd_atomic 0):
			 * IBTA 9.7.5.1.2 / rxe: NAK invalid request. A requester
			 * over a non-zero limit cannot be told from a fast one
			 * here (see docs/transport.md); it recycles the oldest. */
			resp_fatal(qp, pkt, WIRE_NAK_INVALID_REQ, 0, IBV_EVENT_QP_REQ_ERR);
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_ERR_RNR:
			if (!rc) {
				/* UC has no RNR: drop the whole message */
				x->cnt.rx_dropped++;
				x->uc_drop = !last;
				x->resp_opseq = 0;
				st = EMU_RESP_EXIT;
				break;
			}
			x->cnt.rnr_naks_sent++;
			resp_ack(qp, wire_aeth_rnr_nak(qp->attr.min_rnr_timer), psn);
			/* The RNR NAK names the PSN to resume from: the requester's
			 * pipeline behind it is dropped silently (one NAK per gap)
			 * rather than NAKed again as a sequence error. */
			x->nak_sent = 1;
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_CHK_RKEY:
			if (cls == WIRE_OPC_WRITE && first) {
				x->wr_len = pkt->reth.dma_len;
				x->wr_left = pkt->reth.dma_len;
				x->wr_owner = NULL;
				x->wr_va = 0;
				if (pkt->reth.dma_len &&
				    !emu_mr_check_rkey(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len,
						       IBV_ACCESS_REMOTE_WRITE, &proc, &owner, &err)) {
					st = EMU_RESP_ERR_RKEY_VIOLATION;
					break;
				}
				x->wr_owner = owner;
				x->wr_va = pkt->reth.va;
				x->wr_rkey = pkt->reth.rkey;
				x->wr_epoch = qp->dev->mr_epoch;
			} else if (cls == WIRE_OPC_READ) {
				if (pkt->reth.dma_len &&
				    !emu_mr_check_rkey(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len,
						       IBV_ACCESS_REMOTE_READ, &proc, &owner, &err)) {
					st = EMU_RESP_ERR_RKEY_VIOLATION;
					break;
				}
			} else if (cls == WIRE_OPC_ATOMIC) {
				if (!emu_mr_check_rkey(qp, pkt->atomiceth.rkey, pkt->atomiceth.va, 8,
						       IBV_ACCESS_REMOTE_ATOMIC, &proc, &owner, &err)) {
					st = EMU_RESP_ERR_RKEY_VIOLATION;
					break;
				}
			}
			st = EMU_RESP_EXECUTE;
			break;
		case EMU_RESP_ERR_RKEY_VIOLATION:
			EMU_LOG_RL(DEBUG, "qp %u: rkey %#x violation (%d)", qp->qpn,
				cls == WIRE_OPC_ATOMIC ? pkt->atomiceth.rkey : pkt->reth.rkey, err);
			if (!rc) {
				x->cnt.rx_dropped++;
				x->uc_drop = !last;
				x->resp_opseq = 0;
				st = EMU_RESP_EXIT;
				break;
			}
			resp_fatal(qp, pkt, WIRE_NAK_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR,
				   IBV_EVENT_QP_ACCESS_ERR);
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_EXECUTE:
			if (cls == WIRE_OPC_SEND) {
				if ((uint64_t)x->rcv_off + pkt->payload_len > x->rwqe_len) {
					st = EMU_RESP_ERR_LENGTH;
					break;
				}
				if (xp_sge_write_deferred(qp, x->rwqe->sge, x->rwqe->num_sge,
							  x->rcv_off, pkt->payload,
							  pkt->payload_len, x->rwqe_epoch)) {
					if (rc)
						resp_fatal(qp, pkt, WIRE_NAK_REM_OP_ERR,
							   IBV_WC_LOC_PROT_ERR, 0);
					else
						recv_cqe(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0,
							 0, false);
					st = EMU_RESP_EXIT;
					break;
				}
				x->rcv_off += pkt->payload_len;
			} else if (cls == WIRE_OPC_WRITE) {
				if (pkt->payload_len > x->wr_left ||
				    (last && pkt->payload_len != x->wr_left)) {
					st = EMU_RESP_ERR_MALFORMED;
					break;
				}
				/* the key again, for every packet: after a
				 * deregistration, reregistration, window
				 * invalidation or rebind, nothing more lands */
				struct emu_mr *mr = !pkt->payload_len ? NULL :
					emu_mr_check_rkey(qp, x->wr_rkey, x->wr_va,
							  pkt->payload_len, IBV_ACCESS_REMOTE_WRITE,
							  &proc, &owner, &err);
				if (pkt->payload_len && (!mr || mr->gen > x->wr_epoch ||
							 owner != x->wr_owner)) {
					st = EMU_RESP_ERR_RKEY_VIOLATION;
					break;
				}
				struct emu_rvec rv = { proc, pkt->payload_len };

				if (pkt->payload_len &&
				    emu_mem_write_deferred(qp, x->wr_owner, &rv, 1, pkt->payload,
							   pkt->payload_len)) {
					if (rc)
						resp_fatal(qp, pkt, WIRE_NAK_REM_ACCESS_ERR, 0,
							   IBV_EVENT_QP_ACCESS_ERR);
					st = EMU_RESP_EXIT;
					break;
				}
				x->wr_va += pkt->payload_len;
				x->wr_left -= pkt->payload_len;
			} else if (cls == WIRE_OPC_READ) {
				st = EMU_RESP_READ_REPLY;
				break;
			} else if (cls == WIRE_OPC_ATOMIC) {
				st = EMU_RESP_ATOMIC_REPLY;
				break;
			}
			x->resp_opseq = last ? 0 : cls;
			x->epsn = wire_psn_next(psn);
			st = last ? EMU_RESP_COMPLETE : EMU_RESP_ACKNOWLEDGE;
			break;
		case EMU_RESP_ERR_LENGTH:
			if (rc) {
				resp_fatal(qp, pkt, WIRE_NAK_REM_OP_ERR, IBV_WC_LOC_LEN_ERR, 0);
			} else {
				recv_cqe(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, 0, false);
				x->uc_drop = !last;
				x->resp_opseq = 0;
			}
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_READ_REPLY: {
			struct emu_xport_res *r = resp_res_new(qp);
			uint32_t len = pkt->reth.dma_len;
			uint32_t n = len ? (len + mtu - 1) / mtu : 1;

			if (r) {
				r->valid = 1;
				r->first_psn = psn;
				r->last_psn = wire_psn_add(psn, n - 1);
				r->va = pkt->reth.va;
				r->rkey = pkt->reth.rkey;
				r->len = len;
			}
			x->msn = wire_msn_next(x->msn);
			x->epsn = wire_psn_add(psn, n);
			resp_read_reply(qp, owner, proc, len, psn);
			st = EMU_RESP_CLEANUP;
			break;
		}
		case EMU_RESP_ATOMIC_REPLY: {
			struct emu_xport_res *r;
			uint64_t old, val;

			/* single engine thread: atomic w.r.t. every other atomic
			 * through this daemon (IBV_ATOMIC_HCA) */
			if (emu_mem_read(owner, &old, proc, 8)) {
				resp_fatal(qp, pkt, WIRE_NAK_REM_ACCESS_ERR, 0, IBV_EVENT_QP_ACCESS_ERR);
				st = EMU_RESP_EXIT;
				break;
			}
			if (pkt->bth.opcode == WIRE_OP_RC_CMP_SWAP)
				val = old == pkt->atomiceth.compare ? pkt->atomiceth.swap_add : old;
			else
				val = old + pkt->atomiceth.swap_add;
			if (val != old && emu_mem_write(owner, proc, &val, 8)) {
				resp_fatal(qp, pkt, WIRE_NAK_REM_ACCESS_ERR, 0, IBV_EVENT_QP_ACCESS_ERR);
				st = EMU_RESP_EXIT;
				break;
			}
			r = resp_res_new(qp);
			if (r) {
				r->valid = 1;
				r->is_atomic = 1;
				r->first_psn = r->last_psn = psn;
				r->va = pkt->atomiceth.va;
				r->rkey = pkt->atomiceth.rkey;
				r->len = 8;
				r->orig = old;
			}
			x->msn = wire_msn_next(x->msn);
			x->epsn = wire_psn_next(psn);
			resp_atomic_ack(qp, psn, old);
			st = EMU_RESP_CLEANUP;
			break;
		}
		case EMU_RESP_COMPLETE: {
			uint32_t flags = 0, imm = 0, opc = IBV_WC_RECV, len = x->rcv_off;

			x->msn = wire_msn_next(x->msn);
			if (op->flags & WIRE_OPF_IMM) {
				flags |= IBV_WC_WITH_IMM;
				imm = htobe32(pkt->imm);
			}
			if (cls == WIRE_OPC_WRITE) {
				if (!(op->flags & WIRE_OPF_IMM)) {
					st = EMU_RESP_ACKNOWLEDGE;
					break;
				}
				opc = IBV_WC_RECV_RDMA_WITH_IMM;
				len = x->wr_len;
			}
			if (op->flags & WIRE_OPF_INV) {
				struct emu_pd *pd = qp->srq ? qp->srq->pd : qp->pd;

				if (emu_key_invalidate(pd, pkt->ieth_rkey)) {
					st = EMU_RESP_ERR_INVALIDATE_RKEY;
					break;
				}
				flags |= IBV_WC_WITH_INV;
				imm = pkt->ieth_rkey;
			}
			recv_cqe(qp, IBV_WC_SUCCESS, opc, len, flags, imm, qp->attr.dest_qp_num,
				 pkt->bth.se);
			x->rcv_off = 0;
			st = EMU_RESP_ACKNOWLEDGE;
			break;
		}
		case EMU_RESP_ERR_INVALIDATE_RKEY:
			if (rc)
				resp_fatal(qp, pkt, WIRE_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR,
					   IBV_EVENT_QP_REQ_ERR);
			else
				recv_cqe(qp, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, 0, 0, 0, false);
			st = EMU_RESP_EXIT;
			break;
		case EMU_RESP_ACKNOWLEDGE:
			if (rc && pkt->bth.ackreq)
				resp_ack_later(qp, psn);
			st = EMU_RESP_CLEANUP;
			break;
		case EMU_RESP_CLEANUP:
			st = EMU_RESP_DONE;
			break;
		default:
			st = EMU_RESP_EXIT;
			break;
		}
	}
}

void xp_resp_reset(struct emu_qp *qp)
{
	struct emu_xport_qp *x = &qp->x;

	x->resp_opseq = 0;
	x->nak_sent = 0;
	x->ack_pending = 0;
	x->ack_at = 0;
	x->comm_est_sent = 0;
	x->uc_drop = 0;
	x->rwqe_valid = 0;
	x->rcv_off = 0;
	x->msn = 0;
	x->res_next = 0;
	if (x->res)
		memset(x->res, 0, sizeof(*x->res) * x->res_n);
}
