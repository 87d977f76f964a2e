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
	[EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ] = "ERR_TOO_MANY_RDMA_ATM_REQ",
	[EMU_RESP_ERR_RNR] = "ERR_RNR",
	[EMU_RESP_ERR_RKEY_VIOLATION] = "ERR_RKEY_VIOLATION",
	[EMU_RESP_ERR_INVALIDATE_RKEY] = "ERR_INVALIDATE_RKEY",
	[EMU_RESP_ERR_LENGTH] = "ERR_LENGTH",
	[EMU_RESP_ERR_REM_OP] = "ERR_REM_OP",
	[EMU_RESP_ERR_REM_ACCESS] = "ERR_REM_ACCESS",
	[EMU_RESP_DONE] = "DONE",
	[EMU_RESP_EXIT] = "EXIT",
};

/* Headers of a response packet (ACK, READ response, atomic ACK): every
 * one carries an AETH with the current MSN. */
static void resp_pkt_init(struct emu_qp *qp, struct wire_pkt *d, uint8_t op, uint32_t psn,
			  uint8_t syn)
{
	xp_pkt_init(qp, &qp->x->path, d, op, qp->attr.dest_qp_num, psn);
	d->aeth.syndrome = syn;
	d->aeth.msn = qp->x->msn & WIRE_PSN_MASK;
}

/* A response (or a receive completion) must not acknowledge a deferred
 * write (a placement recorded during the RX burst, written at its end)
 * before it is written: write them out first. false when one failed
 * (xp_resp_mem_fault has completed its receive, queued the NAK, and the
 * QP is going to ERR): nothing else may be sent or completed. On the
 * common path this is one flag test. */
static bool resp_settle(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	if (__builtin_expect(x->wr_unsettled, 0)) {
		emu_mem_flush(qp->dev);
		x->wr_unsettled = 0;
	}
	return !x->wr_failed;
}

/* Record a deferred write (RC: ACKs wait for it; RC and UC: so does the
 * receive completion). */
static void resp_unsettled(struct emu_qp *qp)
{
	qp->x->wr_unsettled = 1;
}

/* A QP's responses leave in PSN order (IBTA 9.7.5.2): while READ or
 * atomic responses of earlier requests wait for transmit room (rd_pend),
 * an ACK, RNR NAK or sequence NAK for a later PSN waits behind them in
 * the pending-ACK slot (a NAK is not replaced by an ACK); it goes when
 * they are all sent (resp_pump). A fatal NAK is held by resp_fatal, with
 * the QP's ERR; one for the head response itself (resp_read_fail) goes at
 * once. */
static bool resp_ack_held(struct emu_qp *qp, uint8_t syn, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;

	if (!x->rd_pend || qp->attr.qp_state == IBV_QPS_ERR ||
	    (wire_aeth_type(syn) == WIRE_AETH_NAK &&
			    syn != wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR)))
		return false;
	if (!x->ack_pending || wire_aeth_type(x->ack_syndrome) == WIRE_AETH_ACK ||
	    wire_aeth_type(syn) != WIRE_AETH_ACK) {
		x->ack_pending = 1;
		x->ack_hold_at = 0;
		x->ack_psn = psn;
		x->ack_syndrome = syn;
	}
	xp_act_add(qp);
	return true;
}

/* An ACK or NAK that found no TX buffer (the port's pool empty, the part
 * kept for ACKs and NAKs too) waits in the pending-ACK slot and goes
 * again XP_ACK_RETRY_NS later, up to XP_ACK_RETRIES times: lost, it
 * left the requester to its loss probe or retransmit timeout (at least
 * 250 us, then a resent packet) for what a buffer given back by the
 * next TX completion would have carried. A NAK is not replaced by an ACK
 * (the slot's rule, resp_ack_held). Past the bound (buffers that do not
 * come back, a neighbour never resolved) it is given up and the
 * requester's timers recover, as before. */
#define XP_ACK_RETRY_NS EMU_XPORT_ACK_DELAY_NS
#define XP_ACK_RETRIES EMU_XPORT_ACK_RETRIES
static void resp_ack_nobuf(struct emu_qp *qp, uint8_t syn, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;

	if (x->ack_retry >= XP_ACK_RETRIES) {
		x->ack_retry = 0;
		return;
	}
	if (x->ack_pending && wire_aeth_type(x->ack_syndrome) != WIRE_AETH_ACK &&
	    wire_aeth_type(syn) == WIRE_AETH_ACK)
		return;
	x->ack_retry++;
	x->ack_pending = 1;
	x->ack_psn = psn;
	x->ack_syndrome = syn;
	x->ack_hold_at = emu_now_ns() + XP_ACK_RETRY_NS;
	xp_act_add(qp);
}

static void resp_ack_tx(struct emu_qp *qp, uint8_t syn, uint32_t psn)
{
	struct wire_pkt d;

	if (resp_ack_held(qp, syn, psn))
		return;
	/* a pending coalesced ACK goes out before a NAK for a later PSN */
	if (qp->x->ack_pending && wire_aeth_type(syn) != WIRE_AETH_ACK)
		xp_resp_send_ack(qp);
	resp_pkt_init(qp, &d, WIRE_OP_RC_ACK, psn, syn);
	if (xp_tx(qp, &qp->x->path, &d, NULL, NULL, NULL) == -ENOBUFS)
		resp_ack_nobuf(qp, syn, psn);
	else
		qp->x->ack_retry = 0;
}

/* Immediately send an ACK/NAK with syndrome syn for psn. */
static void resp_ack(struct emu_qp *qp, uint8_t syn, uint32_t psn)
{
	if (resp_settle(qp))
		resp_ack_tx(qp, syn, psn);
}

/* Coalesced ACK flushed by emu_xport_poll (bounded by one engine turn). */
static void resp_ack_later(struct emu_qp *qp, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;

	/* a NAK held behind READ responses stays, unless this is past it */
	if (x->ack_pending && wire_aeth_type(x->ack_syndrome) != WIRE_AETH_ACK &&
	    !wire_psn_before(x->ack_psn, psn))
		return;
	x->ack_pending = 1;
	x->ack_hold_at = 0; /* a new ACK is due at once unless resp_ack_hold holds it */
	x->ack_psn = psn;
	x->ack_syndrome = wire_aeth_ack(WIRE_AETH_CREDITS_INVALID);
	xp_act_add(qp);
}

void xp_resp_send_ack(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	/* behind responses still to send: resp_pump sends it after them */
	if (!x->ack_pending || (x->rd_pend && qp->attr.qp_state != IBV_QPS_ERR))
		return;
	x->ack_pending = 0;
	if (x->ack_hold_at && qp->dev->x->hold_until == x->ack_hold_at)
		qp->dev->x->hold_until = 0; /* (the engine's spin waits for it no more) */
	x->ack_hold_at = 0;
	/* after a failed deferred write only its NAK is left to send */
	if (x->wr_failed)
		resp_ack_tx(qp, x->ack_syndrome, x->ack_psn);
	else
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
			uint8_t sl, const struct uroce_cqe_inl *inl, unsigned inl_nseg)
{
	struct uroce_cqe e;

	memset(&e, 0, sizeof(e));
	e.sl = sl;
	e.wr_id = qp->x->rwqe->wr_id;
	e.status = status;
	e.opcode = opcode;
	e.byte_len = len;
	e.wc_flags = flags;
	e.imm_or_inv = imm_or_inv;
	e.src_qp = src_qp;
	e.solicited = se;
	e.inl_nseg = (uint8_t)inl_nseg;
	qp->x->rwqe_valid = 0;
	/* in an RX burst (qp->dev->burst) the CQE waits in the burst and
	 * enters the ring at its end, after the burst's deferred payload
	 * writes (cqe.c); outside one, now */
	xp_cq_push_inl(qp, qp->recv_cq, &e, inl_nseg ? inl : NULL);
}

static void recv_cqe(struct emu_qp *qp, uint8_t status, uint32_t opcode, uint32_t len,
		     uint32_t flags, uint32_t imm_or_inv, uint32_t src_qp, bool se)
{
	recv_cqe_sl(qp, status, opcode, len, flags, imm_or_inv, src_qp, se, 0, NULL, 0);
}

void xp_resp_mem_fault(struct emu_qp *qp, uint64_t tag)
{
	struct emu_xport_qp *x = qp->x;
	unsigned kind = (unsigned)(tag >> 32);

	if (kind == XP_WB_READ || x->wr_failed)
		return; /* the requester's, or the first failure has decided */
	x->wr_failed = 1;
	/* the receive whose data did not land completes in error now, as one
	 * whose placement fails at once does (resp_exec_send): mlx5's local
	 * protection error; only the receives after it are flushed */
	if (kind == XP_WB_RECV && x->rwqe_valid)
		recv_cqe(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, qp->attr.dest_qp_num,
			 false);
	if (!xp_rc_like(qp))
		return;
	/* NAK the packet whose write failed: everything before it was
	 * written (and may have been ACKed), nothing from it on is */
	x->cnt.naks_sent++;
	x->ack_pending = 1;
	x->ack_hold_at = 0;
	x->ack_psn = (uint32_t)tag & WIRE_PSN_MASK;
	x->ack_syndrome = wire_aeth_nak(kind == XP_WB_RECV ? WIRE_NAK_REM_OP_ERR :
					WIRE_NAK_REM_ACCESS_ERR);
	xp_act_add(qp);
}

/* Take a receive WQE and validate its SGEs. 1 ok, 0 none, <0 bad WQE
 * (completed in error already). */
static int resp_get_rwqe(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_pd *pd = xp_recv_pd(qp);
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
static bool resp_read_chunk(struct emu_qp *qp, struct emu_mr *mr, uint64_t proc,
			    struct xp_txf *fr, unsigned n)
{
	struct iovec lv[RESP_CHUNK];
	struct emu_rvec rv = { proc, 0, mr };
	unsigned i, nz = 0;
	int rc = 0;

	if (!n || n > RESP_CHUNK)
		return true;
	for (i = 0; i < n; i++) {
		lv[i].iov_base = fr[i].pay;
		lv[i].iov_len = fr[i].len;
		rv.len += fr[i].len;
		nz += fr[i].zc != NULL;
	}
	if (!nz && rv.len)
		rc = emu_mem_readv(mr->ctx, lv, n, &rv, 1);
	for (i = 0; nz && i < n && !rc; proc += fr[i++].len)
		if (!fr[i].zc) /* zero-copy ones need nothing */
			rc = emu_mr_read(mr, fr[i].pay, proc, fr[i].len);
	for (i = 0; i < n; i++)
		(void)xp_tx_finish(qp, &fr[i], &rc);
	return !rc;
}

/* READ and atomic responses are paced by transmit room (docs/transport.md,
 * "READ responses paced by transmit room"), as an HCA's responder walks
 * its outstanding READ queue: each responder resource keeps how far its
 * responses went (struct emu_xport_res: pend, rpsn, sent) and sends only
 * what the port has buffers for (emu_tx_room), at most RESP_BATCH per
 * turn; the rest goes from emu_xport_poll (xp_resp_poll), the room shared
 * between the QPs that wait. Oldest request first, and anything later of
 * the QP (ACKs, NAKs: resp_ack_held) behind it. */
#define RESP_BATCH 256u

static void resp_res_arm(struct emu_qp *qp, struct emu_xport_res *r, uint32_t psn)
{
	struct emu_xport_qp *x = qp->x;

	r->rpsn = psn;
	r->sent = 0;
	if (r->pend)
		return;
	r->pend = 1;
	if (!x->rd_pend++)
		qp->dev->x->resp_npend++;
	xp_act_add(qp);
}

static void resp_res_done(struct emu_qp *qp, struct emu_xport_res *r)
{
	r->pend = 0;
	if (!--qp->x->rd_pend)
		qp->dev->x->resp_npend--;
}

void xp_resp_release(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	/* ERR, reset or destroy: a NAK held behind the responses goes with
	 * them */
	x->fatal_held = 0;
	for (uint32_t i = 0; x->res && i < x->res_n; i++)
		x->res[i].pend = 0;
	if (x->rd_pend && qp->dev)
		qp->dev->x->resp_npend--;
	x->rd_pend = 0;
}

/* The oldest resource with responses to send: the one whose request is
 * farthest behind the expected PSN (a duplicate asking again for an old
 * one goes before newer ones). */
static struct emu_xport_res *resp_res_head(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_res *h = NULL;
	uint32_t best = 0;

	for (uint32_t i = 0; x->rd_pend && i < x->res_n; i++) {
		struct emu_xport_res *r = &x->res[i];
		uint32_t age = wire_psn_dist(r->first_psn, x->epsn);

		if (r->pend && (!h || age > best)) {
			h = r;
			best = age;
		}
	}
	return h;
}

/* A READ's memory cannot be read any more (deregistered, its window
 * invalidated, the pages gone): NAK remote access error at the next
 * response, as an HCA whose translation fails; the QP goes to ERR. */
static int resp_read_fail(struct emu_qp *qp, struct emu_xport_res *r)
{
	uint32_t psn = wire_psn_add(r->rpsn, r->sent);

	xp_resp_release(qp);
	qp->x->cnt.naks_sent++;
	resp_ack(qp, wire_aeth_nak(WIRE_NAK_REM_ACCESS_ERR), psn);
	xp_qp_error(qp, IBV_EVENT_QP_ACCESS_ERR);
	return -EACCES;
}

/* Up to max more READ responses of r (READ Response Only of no payload
 * for ATOMIC WRITE and FLUSH): the number sent, or <0 when the QP failed.
 * The key is checked again for the range about to be read. */
static int resp_read_send(struct emu_qp *qp, struct emu_xport_res *r, uint32_t max)
{
	uint32_t mtu = xp_mtu(qp);
	/* the response message: from packet k of the request to its end */
	uint64_t k = wire_psn_dist(r->first_psn, r->rpsn), rva = r->va + k * mtu;
	uint32_t rlen = r->len > k * mtu ? (uint32_t)(r->len - k * mtu) : 0;
	uint32_t n = rlen ? (uint32_t)(((uint64_t)rlen + mtu - 1) / mtu) : 1, i;
	uint32_t end = n - r->sent > max ? r->sent + max : n;
	uint64_t off = (uint64_t)r->sent * mtu, stop = (uint64_t)end * mtu, base = 0, chunk = 0;
	struct xp_txf fr[RESP_CHUNK];
	struct emu_mr *mr = NULL;
	unsigned nf = 0;

	if (stop > rlen)
		stop = rlen;
	if (stop > off) {
		struct emu_ctx *owner = NULL;
		int err = 0;

		mr = emu_mr_check_rkey(qp, r->rkey, rva + off, (uint32_t)(stop - off),
				       IBV_ACCESS_REMOTE_READ, &base, &owner, &err);
		if (!mr || mr->gen > r->epoch)
			return resp_read_fail(qp, r);
		base -= off; /* proc of the response message's byte 0 */
	}
	for (i = r->sent; i < end; i++) {
		static const uint8_t ops[XP_POS_N] = {
			[XP_POS_MIDDLE] = WIRE_OP_RC_READ_RESP_MIDDLE,
			[XP_POS_FIRST] = WIRE_OP_RC_READ_RESP_FIRST,
			[XP_POS_LAST] = WIRE_OP_RC_READ_RESP_LAST,
			[XP_POS_ONLY] = WIRE_OP_RC_READ_RESP_ONLY,
		};
		uint64_t o = (uint64_t)i * mtu;
		struct wire_pkt d;

		resp_pkt_init(qp, &d, ops[xp_pos(i, n)], wire_psn_add(r->rpsn, i),
			      wire_aeth_ack(WIRE_AETH_CREDITS_INVALID));
		d.aeth.msn = r->msn & WIRE_PSN_MASK;
		d.payload_len = (uint32_t)(rlen - o < mtu ? rlen - o : mtu);
		if (xp_tx_begin(qp, &qp->x->path, &d, &fr[nf]))
			break; /* resumed from here when there is room again */
		if (mr)
			(void)xp_txf_zc(qp, &fr[nf], mr, base + o);
		if (!nf)
			chunk = base + o;
		if (++nf == RESP_CHUNK) {
			if (!resp_read_chunk(qp, mr, chunk, fr, nf))
				return resp_read_fail(qp, r);
			nf = 0;
		}
	}
	if (!resp_read_chunk(qp, mr, chunk, fr, nf))
		return resp_read_fail(qp, r);
	max = i - r->sent;
	r->sent = i;
	if (i == n)
		resp_res_done(qp, r);
	return (int)max;
}

static int resp_atomic_ack(struct emu_qp *qp, uint32_t psn, uint64_t orig, uint32_t msn)
{
	struct wire_pkt d;

	resp_pkt_init(qp, &d, WIRE_OP_RC_ATOMIC_ACK, psn, wire_aeth_ack(WIRE_AETH_CREDITS_INVALID));
	d.aeth.msn = msn & WIRE_PSN_MASK;
	d.atomicacketh.orig = orig;
	return xp_tx(qp, &qp->x->path, &d, NULL, NULL, NULL);
}

static int resp_res_send(struct emu_qp *qp, struct emu_xport_res *r, uint32_t max)
{
	if (r->kind != EMU_RES_ATOMIC)
		return resp_read_send(qp, r, max);
	if (resp_atomic_ack(qp, r->rpsn, r->orig, r->msn))
		return 0;
	r->sent = 1;
	resp_res_done(qp, r);
	return 1;
}

static void resp_fatal_now(struct emu_qp *qp, uint8_t nak, uint32_t psn, uint8_t wc_status,
			   int ev);

/* Send what the QP's responder resources owe, oldest first, at most max
 * packets (fewer when the port's buffers run out); then the ACK or NAK
 * held behind them. The packets sent. */
static uint32_t resp_pump(struct emu_qp *qp, uint32_t max)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_res *r;
	uint32_t done = 0;
	uint64_t now = 0;
	/* READ responses are this QP's data as WRITEs are a requester's: a
	 * CNP (its peer saw them marked CE) paces them on the same reaction
	 * point, one packet per pacer check; the engine comes back at
	 * xp_rp_wake (the QP stays active while rd_pend) */
	bool paced = xp_rp_active(x);
	int n;

	/* a response acknowledges every request before it: their deferred
	 * writes land first */
	if (!resp_settle(qp))
		return 0;
	if (paced) {
		now = emu_now_ns();
		xp_rp_turn(qp, now);
		paced = xp_rp_active(x);
	}
	while (done < max && (r = resp_res_head(qp))) {
		uint64_t before = x->cnt.tx_bytes;

		/* an ACK held for an earlier PSN is implied by this response
		 * (its AETH acknowledges everything before); a NAK goes first */
		if (x->ack_pending && wire_psn_before(x->ack_psn, r->rpsn)) {
			x->ack_pending = 0;
			x->ack_hold_at = 0;
			if (wire_aeth_type(x->ack_syndrome) != WIRE_AETH_ACK)
				resp_ack_tx(qp, x->ack_syndrome, x->ack_psn);
			before = x->cnt.tx_bytes;
		}
		if (paced && xp_rp_pace(qp, now))
			break;
		n = resp_res_send(qp, r, paced ? 1 : max - done);
		if (n < 0)
			return done;
		if (paced)
			xp_rp_sent(qp, x->cnt.tx_bytes - before);
		done += (uint32_t)n;
		if (r->pend && (!paced || !n))
			break; /* out of room: the rest at a later turn */
	}
	if (!x->rd_pend && x->ack_pending)
		xp_resp_send_ack(qp);
	if (!x->rd_pend && x->fatal_held) {
		x->fatal_held = 0;
		resp_fatal_now(qp, x->fatal_nak, x->fatal_psn, x->fatal_wc, x->fatal_ev);
	}
	return done;
}

/* This turn's share of the port's room for one QP: what is there, split
 * between the QPs that wait for it (round robin: each gets its share every
 * turn), at most RESP_BATCH. */
static uint32_t resp_share(struct emu_dev *d, uint32_t room)
{
	uint32_t n = d->x->resp_npend ? d->x->resp_npend : 1;
	uint32_t s = room / n;

	if (!s && room)
		s = 1;
	return s < RESP_BATCH ? s : RESP_BATCH;
}

/* A resource armed in the RX path: its first responses go now if it is
 * the QP's oldest and the port has room (a small READ is answered in the
 * same turn), else they wait their turn in xp_resp_poll. */
static void resp_emit(struct emu_qp *qp)
{
	uint32_t room = emu_tx_room(qp->dev);

	if (room)
		(void)resp_pump(qp, resp_share(qp->dev, room));
}

uint32_t xp_resp_poll(struct emu_qp *qp, uint32_t room)
{
	if (!qp->x->rd_pend || !room)
		return 0;
	return resp_pump(qp, resp_share(qp->dev, room));
}

static struct emu_xport_res *resp_res_new(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	struct emu_xport_res *r;

	/* The oldest resource is recycled: a requester honouring
	 * max_dest_rd_atomic never needs more, and resp_chk_resource refused
	 * the request if that one still has responses to send. */
	r = &x->res[x->res_next++ % x->res_n];
	memset(r, 0, sizeof(*r));
	return r;
}

/* The responder resource of request psn of kind k, or NULL. */
static struct emu_xport_res *resp_res_find(struct emu_qp *qp, uint32_t psn, uint8_t k)
{
	struct emu_xport_qp *x = qp->x;

	for (uint32_t i = 0; i < x->res_n; i++) {
		struct emu_xport_res *r = &x->res[i];

		if (r->valid && r->kind == k &&
		    wire_psn_in_window(psn, r->first_psn,
				       wire_psn_dist(r->first_psn, r->last_psn) + 1))
			return r;
	}
	return NULL;
}

/* A request again whose original was executed: SEND and WRITE are ACKed
 * again, never delivered twice; READ, atomics, ATOMIC WRITE and FLUSH
 * are answered again from their responder resource (IBTA 1.5: the last
 * two hold one too). One whose resource was recycled (a requester over
 * max_dest_rd_atomic) is dropped, as rxe's class D handling drops it. */
static void resp_duplicate(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	uint8_t cls = pkt->op->cls;
	uint32_t psn = pkt->bth.psn;
	bool zero = cls == WIRE_OPC_FLUSH || pkt->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE;
	struct emu_xport_res *r;

	x->cnt.dup_requests++;
	if (!zero && (cls == WIRE_OPC_SEND || cls == WIRE_OPC_WRITE)) {
		resp_ack_later(qp, wire_psn_add(x->epsn, WIRE_PSN_MASK));
		return;
	}
	r = resp_res_find(qp, psn, zero ? EMU_RES_ZERO : cls == WIRE_OPC_ATOMIC ? EMU_RES_ATOMIC :
				   EMU_RES_READ);
	if (!r || (cls != WIRE_OPC_READ && r->first_psn != psn))
		return;
	if (cls == WIRE_OPC_READ) {
		uint64_t proc = 0, off = pkt->reth.va - r->va;
		struct emu_ctx *owner = NULL;
		int err;

		/* a re-issued READ may start inside the original one, at the
		 * packet its PSN names (as requesters re-issue, comp.c's
		 * req_send_rd_atomic and rxe's), and goes to its end */
		if (pkt->reth.va < r->va ||
		    off != (uint64_t)wire_psn_dist(r->first_psn, psn) * xp_mtu(qp) ||
		    off + pkt->reth.dma_len != r->len)
			return;
		if (pkt->reth.dma_len &&
		    !emu_mr_check_rkey(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len,
				       IBV_ACCESS_REMOTE_READ, &proc, &owner, &err))
			return;
		/* IBTA 9.9.1.1: answered again from the PSN asked for, as a
		 * response message of its own, paced as the original: this
		 * replaces where a resource still sending stood */
		r->rkey = pkt->reth.rkey;
		r->epoch = qp->dev->mr_epoch;
		resp_res_arm(qp, r, psn);
	} else {
		resp_res_arm(qp, r, psn); /* the atomic ACK or empty response again */
	}
	resp_emit(qp);
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
		return xp_rc_like(qp) && (a & IBV_ACCESS_REMOTE_READ);
	case WIRE_OPC_ATOMIC:
		return xp_rc_like(qp) && (a & IBV_ACCESS_REMOTE_ATOMIC);
	case WIRE_OPC_FLUSH: /* and the flag of its type: resp_chk_op_valid */
		return qp->type == IBV_QPT_RC;
	default:
		return false;
	}
}
static void resp_ud(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;
	uint8_t grh[40];
	const uint8_t *frame = pkt->payload - pkt->payload_off;
	uint32_t flags = IBV_WC_GRH, imm = 0;
	int n;

	/* UD answers nothing (IBTA 9.8): a wrong Q_Key, or a length fault
	 * (len_reason), drops the datagram silently */
	if (pkt->op->cls != WIRE_OPC_SEND || !(pkt->hdrs & WIRE_HDR_DETH) ||
	    pkt->deth.qkey != qp->attr.qkey || pkt->len_reason != WIRE_OK) {
		xp_drop(qp, EMU_XDROP_UD_INVALID);
		return;
	}
	n = resp_get_rwqe(qp);
	if (n <= 0) {
		if (n == 0)
			xp_drop(qp, EMU_XDROP_UD_NO_RECV); /* UD has no RNR: lost */
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
	/* a small datagram travels in the CQ ring, GRH area included (the
	 * shim writes both when the application polls): no system call */
	struct uroce_cqe_inl inl;
	unsigned nseg = 0;

	if (pkt->payload_len <= UROCE_CQE_INL_PAYLOAD) {
		uint8_t buf[40 + UROCE_CQE_INL_PAYLOAD];

		memcpy(buf, grh, 40);
		memcpy(buf + 40, pkt->payload, pkt->payload_len);
		nseg = xp_sge_inline(qp, x->rwqe->sge, x->rwqe->num_sge, buf,
				     40 + pkt->payload_len, x->rwqe_epoch, &inl);
	}
	if (!nseg &&
	    (xp_sge_copy(qp, x->rwqe->sge, x->rwqe->num_sge, 0, grh, 40, true,
			 IBV_ACCESS_LOCAL_WRITE, x->rwqe_epoch) ||
	     xp_sge_copy(qp, x->rwqe->sge, x->rwqe->num_sge, 40, (void *)pkt->payload,
			 pkt->payload_len, true, IBV_ACCESS_LOCAL_WRITE, x->rwqe_epoch))) {
		recv_cqe(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, pkt->deth.sqpn, false);
		return;
	}
	recv_cqe_sl(qp, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + pkt->payload_len, flags, imm,
		    pkt->deth.sqpn, pkt->bth.se,
		    pkt->ip.version == 6 ? RESP_UD_SL_IPV6 : RESP_UD_SL_IPV4, &inl, nseg);
}

/* ---- the state machine ----
 * One function per state; each returns the next state and
 * xp_resp_rx's loop dispatches. Error states are one function per IBTA
 * NAK class (sequence, invalid request, remote access, remote operational,
 * RNR); the state that found the error leaves in the context what the
 * class handler needs (receive status, event, UC handling). */

/* What UC (which has no NAKs) does with a failed packet; OR of these. */
#define RESP_UC_COUNT 1u /* count the packet as dropped */
#define RESP_UC_CQE   2u /* complete the receive with c->wc */
#define RESP_UC_ALL   4u /* drop until the next FIRST/ONLY */
#define RESP_UC_REST  8u /* the same unless this was the message's last */

struct resp_ctx {
	struct emu_qp *qp;
	const struct wire_pkt *pkt;
	uint8_t cls;            /* enum wire_opc_class */
	bool rc, first, last;
	uint32_t psn, mtu;
	uint64_t proc;          /* checked target of READ/atomic/WRITE */
	struct emu_ctx *owner;
	struct emu_mr *mr;      /* ... and its registration (how it is reached) */
	int err;
	uint8_t wc;             /* receive completion status of the error (0 none) */
	uint8_t uc;             /* RESP_UC_* */
	int ev;                 /* async event of the error (0 none) */
	uint64_t flen;          /* FLUSH: bytes at proc it covers */
	bool xrc_bad;           /* XRC TGT: the XRCETH names no SRQ of its domain */
	struct uroce_cqe_inl *inl; /* a small SEND's payload for the CQ ring */
	unsigned inl_nseg;      /* its segments (0: placed, or none) */
};

typedef enum emu_resp_state (*resp_state_fn)(struct resp_ctx *c);

/* Record what the error handler of class st must do, and go there. */
static enum emu_resp_state resp_fail(struct resp_ctx *c, enum emu_resp_state st, uint8_t wc,
				     int ev, unsigned uc)
{
	c->wc = wc;
	c->ev = ev;
	c->uc = (uint8_t)uc;
	return st;
}

static void resp_fatal_now(struct emu_qp *qp, uint8_t nak, uint32_t psn, uint8_t wc_status,
			   int ev)
{
	struct emu_xport_qp *x = qp->x;

	if (xp_rc_like(qp)) {
		x->cnt.naks_sent++;
		resp_ack(qp, wire_aeth_nak(nak), psn);
	}
	if (x->rwqe_valid && wc_status)
		recv_cqe(qp, wc_status, IBV_WC_RECV, 0, 0, 0, qp->attr.dest_qp_num, false);
	xp_qp_error(qp, ev);
}

/* Class B/C/D errors on RC: NAK, complete the receive in error, go to ERR.
 * Responses leave in PSN order (IBTA 9.7.5.2), a NAK too: while READ or
 * atomic responses of earlier requests still wait for transmit room, all
 * three wait behind them (resp_pump releases them when the last one is
 * sent); an HCA sends those responses before it finds the error. Sent at
 * once, the NAK overtook them: the requester, seeing its READ's responses
 * missing, asked again until RETRY_EXC instead of completing the READ.
 * Requests arriving meanwhile are dropped (resp_admit), as after ERR. */
static void resp_fatal(struct emu_qp *qp, const struct wire_pkt *pkt, uint8_t nak,
		       uint8_t wc_status, int ev)
{
	struct emu_xport_qp *x = qp->x;

	if (x->rd_pend && xp_rc_like(qp) && qp->attr.qp_state != IBV_QPS_ERR) {
		x->fatal_held = 1;
		x->fatal_nak = nak;
		x->fatal_psn = pkt->bth.psn;
		x->fatal_wc = wc_status;
		x->fatal_ev = ev;
		return;
	}
	resp_fatal_now(qp, nak, pkt->bth.psn, wc_status, ev);
}

/* UC: the only place a message is abandoned and the following packets
 * are dropped until the next FIRST/ONLY (x->uc_drop, checked by
 * resp_chk_psn_uc). */
static enum emu_resp_state resp_uc_fail(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;

	if (c->uc & RESP_UC_COUNT)
		xp_drop(c->qp, x->resp_state == EMU_RESP_ERR_RNR ? EMU_XDROP_UC_NO_RECV :
			       x->resp_state == EMU_RESP_ERR_RKEY_VIOLATION ? EMU_XDROP_UC_RKEY :
			       EMU_XDROP_UC_INV_REQ);
	if (c->uc & RESP_UC_CQE)
		recv_cqe(c->qp, c->wc, IBV_WC_RECV, 0, 0, 0, 0, false);
	if (c->uc & (RESP_UC_ALL | RESP_UC_REST)) {
		x->uc_drop = (c->uc & RESP_UC_ALL) ? 1 : !c->last;
		x->resp_opseq = 0;
		/* the receive WQE (if still ours) takes the next message from
		 * its start, as rxe's class D1/E handling resets its dma */
		x->rcv_off = 0;
	}
	return EMU_RESP_EXIT;
}

/* NAK class nak on RC, the UC equivalent otherwise. */
static enum emu_resp_state resp_err_class(struct resp_ctx *c, uint8_t nak)
{
	if (!c->rc)
		return resp_uc_fail(c);
	resp_fatal(c->qp, c->pkt, nak, c->wc, c->ev);
	return EMU_RESP_EXIT;
}

static enum emu_resp_state resp_err_inv_req(struct resp_ctx *c)
{
	return resp_err_class(c, WIRE_NAK_INVALID_REQ);
}

static enum emu_resp_state resp_err_rem_access(struct resp_ctx *c)
{
	if (c->qp->x->resp_state == EMU_RESP_ERR_RKEY_VIOLATION)
		EMU_LOG_RL(DEBUG, "qp %u: rkey %#x violation (%d)\n", c->qp->qpn,
			   c->cls == WIRE_OPC_ATOMIC ? c->pkt->atomiceth.rkey : c->pkt->reth.rkey,
			   c->err);
	return resp_err_class(c, WIRE_NAK_REM_ACCESS_ERR);
}

static enum emu_resp_state resp_err_rem_op(struct resp_ctx *c)
{
	return resp_err_class(c, WIRE_NAK_REM_OP_ERR);
}

/* Sequence error (RC only): one NAK per gap, and per round of go-back-N.
 * After the NAK the requester's pipeline keeps arriving, PSNs rising, and
 * is dropped silently (as rxe does). When a PSN then falls back below the
 * last one seen, the requester went back and resent, and the expected PSN
 * is still missing: the resent packet was lost too (or the NAK was). One
 * more NAK for it then makes the requester resend at once, where silence
 * left it to its loss probe or the retransmit timeout. */
static enum emu_resp_state resp_err_seq(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	/* the requester's resend starts at epsn: when that packet is lost
	 * again the next one seen is epsn + 1, below the PSNs seen before; a
	 * packet merely reordered on the wire rarely is exactly that one, so
	 * reordering does not NAK again (each such NAK would spend a retry) */
	bool round = x->nak_sent && c->psn == wire_psn_next(x->epsn) &&
		     wire_psn_before(c->psn, x->oos_hi);

	x->cnt.out_of_seq++;
	x->oos_hi = c->psn;
	if (!x->nak_sent || round) {
		x->nak_sent = 1;
		x->cnt.seq_naks_sent++;
		resp_ack(c->qp, wire_aeth_nak(WIRE_NAK_PSN_SEQ_ERR), x->epsn);
	}
	return EMU_RESP_EXIT;
}

static enum emu_resp_state resp_err_rnr(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;

	if (!c->rc)
		return resp_uc_fail(c); /* UC has no RNR: drop the whole message */
	x->cnt.rnr_naks_sent++;
	resp_ack(c->qp, wire_aeth_rnr_nak(c->qp->attr.min_rnr_timer), c->psn);
	/* The RNR NAK names the PSN to resume from: the requester's pipeline
	 * behind it is dropped silently (one NAK per gap) rather than NAKed
	 * again as a sequence error. */
	x->nak_sent = 1;
	x->oos_hi = c->psn;
	return EMU_RESP_EXIT;
}

static enum emu_resp_state resp_get_req(struct resp_ctx *c)
{
	return (c->pkt->op->flags & WIRE_OPF_REQ) ? EMU_RESP_CHK_PSN : EMU_RESP_EXIT;
}

/* UC: late packets are never redelivered; after a gap the message in
 * progress is abandoned and the stream resynchronises on a FIRST/ONLY. */
static enum emu_resp_state resp_chk_psn_uc(struct resp_ctx *c, int32_t diff)
{
	struct emu_xport_qp *x = c->qp->x;

	if (diff < 0) {
		x->cnt.dup_requests++;
		return EMU_RESP_EXIT;
	}
	if (diff) {
		x->cnt.out_of_seq++;
		x->resp_opseq = 0;
		x->rcv_off = 0;
		x->uc_drop = !c->first;
	}
	x->epsn = wire_psn_next(c->psn);
	if (x->uc_drop && c->first)
		x->uc_drop = 0;
	if (x->uc_drop) {
		xp_drop(c->qp, EMU_XDROP_UC_GAP);
		return EMU_RESP_EXIT;
	}
	return EMU_RESP_CHK_OP_SEQ;
}

static enum emu_resp_state resp_chk_psn(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	int32_t diff = wire_psn_cmp(c->psn, x->epsn);

	if (!c->rc)
		return resp_chk_psn_uc(c, diff);
	if (diff > 0)
		return EMU_RESP_ERR_PSN_OUT_OF_SEQ;
	if (diff < 0)
		return EMU_RESP_DUPLICATE_REQUEST;
	x->nak_sent = 0;
	return EMU_RESP_CHK_OP_SEQ;
}

static enum emu_resp_state resp_dup(struct resp_ctx *c)
{
	resp_duplicate(c->qp, c->pkt);
	return EMU_RESP_EXIT;
}

/* A malformed or out-of-order request: invalid request class; UC drops
 * the message. */
static enum emu_resp_state resp_malformed(struct resp_ctx *c, enum emu_resp_state st)
{
	return resp_fail(c, st, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR,
			 RESP_UC_COUNT | RESP_UC_ALL);
}

static enum emu_resp_state resp_chk_op_seq(struct resp_ctx *c)
{
	uint8_t opseq = c->qp->x->resp_opseq;

	if (opseq)
		return c->first || c->cls != opseq ?
			resp_malformed(c, EMU_RESP_ERR_MISSING_OPCODE_LAST_C) :
			EMU_RESP_CHK_OP_VALID;
	return c->first ? EMU_RESP_CHK_OP_VALID :
			  resp_malformed(c, EMU_RESP_ERR_MISSING_OPCODE_FIRST);
}

/* The MR (and QP) access flag each placement type of a FLUSH needs. */
static unsigned resp_flush_access(const struct wire_feth *f)
{
	return ((f->plt & WIRE_FLUSH_GLOBAL) ? UROCE_ACCESS_FLUSH_GLOBAL : 0) |
	       ((f->plt & WIRE_FLUSH_PERSISTENT) ? UROCE_ACCESS_FLUSH_PERSISTENT : 0);
}

static enum emu_resp_state resp_chk_op_valid(struct resp_ctx *c)
{
	unsigned need;

	if (c->xrc_bad || !resp_op_allowed(c->qp, c->cls))
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	/* FLUSH: a type and level it can execute, and the QP's flag for each
	 * type (rxe: check_qp_attr_access), else invalid request */
	if (c->cls == WIRE_OPC_FLUSH) {
		need = resp_flush_access(&c->pkt->feth);
		if (!wire_feth_valid(&c->pkt->feth) ||
		    (c->qp->attr.qp_access_flags & need) != need)
			return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	}
	return EMU_RESP_CHK_LENGTH;
}

/* IBTA 9.7.5.1 length check: the packet's length fits its opcode. The
 * parser's length faults (payload on an opcode that carries none, none on
 * a FIRST/MIDDLE, a pad count its length cannot have: len_reason), then
 * FIRST/MIDDLE exactly one MTU, LAST 1..MTU (a message of n MTUs ends
 * with a full packet: no sender builds an empty LAST), ONLY at most one
 * MTU. Invalid request (rxe: RESPST_ERR_LENGTH, class C); UC drops it. */
static enum emu_resp_state resp_chk_length(struct resp_ctx *c)
{
	const struct wire_pkt *pkt = c->pkt;
	uint32_t n = pkt->payload_len;

	if (pkt->len_reason != WIRE_OK)
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	if ((pkt->op->flags & WIRE_OPF_PAYLOAD) &&
	    (!c->last ? n != c->mtu : n > c->mtu || (!c->first && !n)))
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	if (((c->cls == WIRE_OPC_READ || (c->cls == WIRE_OPC_WRITE && c->first)) &&
	     pkt->reth.dma_len > EMU_XPORT_MAX_MSG) ||
	    (c->cls == WIRE_OPC_ATOMIC && (pkt->atomiceth.va & 7)))
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	/* ATOMIC WRITE: exactly 8 bytes to an 8-aligned address */
	if (pkt->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE &&
	    (pkt->payload_len != 8 || pkt->reth.dma_len != 8 || (pkt->reth.va & 7)))
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	return EMU_RESP_CHK_RESOURCE;
}

static enum emu_resp_state resp_chk_resource(struct resp_ctx *c)
{
	bool need = (c->cls == WIRE_OPC_SEND && c->first) ||
		    (c->cls == WIRE_OPC_WRITE && c->last && (c->pkt->op->flags & WIRE_OPF_IMM));
	int n;

	if ((c->cls == WIRE_OPC_READ || c->cls == WIRE_OPC_ATOMIC || c->cls == WIRE_OPC_FLUSH ||
	     c->pkt->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE) &&
	    (!c->qp->attr.max_dest_rd_atomic || !c->qp->x->res))
		/* No responder resources at all (max_dest_rd_atomic 0): IBTA
		 * 9.7.5.1.2 / rxe: NAK invalid request. A requester over a
		 * non-zero limit is told from a fast one only when every
		 * resource still sends (below). */
		return resp_fail(c, EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ, 0, IBV_EVENT_QP_REQ_ERR, 0);
	if ((c->cls == WIRE_OPC_READ || c->cls == WIRE_OPC_ATOMIC || c->cls == WIRE_OPC_FLUSH ||
	     c->pkt->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE) &&
	    c->qp->x->res[c->qp->x->res_next % c->qp->x->res_n].pend) {
		/* Every resource still owes responses: the requester has more
		 * READs/atomics outstanding than max_dest_rd_atomic allows.
		 * Dropped, not executed (the PSN stays expected): IBTA's NAK
		 * invalid request would have to wait behind those responses
		 * and then fail the QP; as rxe, which takes such a request
		 * only once its earlier READs are answered, the requester is
		 * served when it asks again (the sequence NAK for its next
		 * packet, held behind the responses, or its timer). */
		xp_drop(c->qp, EMU_XDROP_RD_OVER);
		return EMU_RESP_EXIT;
	}
	if (!need)
		return EMU_RESP_CHK_RKEY;
	n = resp_get_rwqe(c->qp);
	if (n == 0)
		return resp_fail(c, EMU_RESP_ERR_RNR, 0, 0, RESP_UC_COUNT | RESP_UC_REST);
	if (n < 0) /* the bad receive WQE is completed in error already */
		return resp_fail(c, EMU_RESP_ERR_REM_OP, 0, IBV_EVENT_QP_FATAL, RESP_UC_ALL);
	return EMU_RESP_CHK_RKEY;
}

static bool resp_rkey_ok(struct resp_ctx *c, uint32_t rkey, uint64_t va, uint32_t len,
			 unsigned access)
{
	c->mr = emu_mr_check_rkey(c->qp, rkey, va, len, access, &c->proc, &c->owner, &c->err);
	return c->mr != NULL;
}

static enum emu_resp_state resp_rkey_violation(struct resp_ctx *c)
{
	return resp_fail(c, EMU_RESP_ERR_RKEY_VIOLATION, IBV_WC_REM_ACCESS_ERR,
			 IBV_EVENT_QP_ACCESS_ERR, RESP_UC_COUNT | RESP_UC_REST);
}

/* FLUSH: the RETH's range, or the whole region of its R_Key (level MR:
 * VA and length ignored, as rxe does), with the MR flag of each type. */
static enum emu_resp_state resp_chk_rkey_flush(struct resp_ctx *c)
{
	const struct wire_pkt *pkt = c->pkt;
	uint64_t va = pkt->reth.va, len = pkt->reth.dma_len;

	if (pkt->feth.sel == WIRE_FLUSH_MR && emu_rkey_extent(c->qp, pkt->reth.rkey, &va, &len))
		return resp_rkey_violation(c);
	if (!resp_rkey_ok(c, pkt->reth.rkey, va, len, resp_flush_access(&pkt->feth)))
		return resp_rkey_violation(c);
	c->flen = len;
	return EMU_RESP_EXECUTE;
}

static enum emu_resp_state resp_chk_rkey(struct resp_ctx *c)
{
	const struct wire_pkt *pkt = c->pkt;
	struct emu_xport_qp *x = c->qp->x;

	if (c->cls == WIRE_OPC_WRITE && c->first) {
		x->wr_len = pkt->reth.dma_len;
		x->wr_left = pkt->reth.dma_len;
		x->wr_owner = NULL;
		x->wr_va = 0;
		if (pkt->reth.dma_len && !resp_rkey_ok(c, pkt->reth.rkey, pkt->reth.va,
						       pkt->reth.dma_len, IBV_ACCESS_REMOTE_WRITE))
			return resp_rkey_violation(c);
		x->wr_owner = c->owner;
		x->wr_va = pkt->reth.va;
		x->wr_rkey = pkt->reth.rkey;
		x->wr_epoch = c->qp->dev->mr_epoch;
	} else if (c->cls == WIRE_OPC_READ) {
		if (pkt->reth.dma_len && !resp_rkey_ok(c, pkt->reth.rkey, pkt->reth.va,
						       pkt->reth.dma_len, IBV_ACCESS_REMOTE_READ))
			return resp_rkey_violation(c);
	} else if (c->cls == WIRE_OPC_ATOMIC) {
		if (!resp_rkey_ok(c, pkt->atomiceth.rkey, pkt->atomiceth.va, 8,
				  IBV_ACCESS_REMOTE_ATOMIC))
			return resp_rkey_violation(c);
	} else if (c->cls == WIRE_OPC_FLUSH) {
		return resp_chk_rkey_flush(c);
	}
	return EMU_RESP_EXECUTE;
}

/* SEND payload into the receive WQE. */
static enum emu_resp_state resp_exec_send(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	const struct wire_pkt *pkt = c->pkt;

	if ((uint64_t)x->rcv_off + pkt->payload_len > x->rwqe_len)
		return resp_fail(c, EMU_RESP_ERR_LENGTH, IBV_WC_LOC_LEN_ERR, 0,
				 RESP_UC_CQE | RESP_UC_REST);
	/* a small whole message goes in the CQ ring: nothing to place, so
	 * nothing unsettled; checks failing fall through to the placement,
	 * which fails the same way as before */
	if (c->first && c->last && !x->rcv_off && pkt->payload_len <= UROCE_CQE_INL_PAYLOAD) {
		c->inl_nseg = xp_sge_inline(c->qp, x->rwqe->sge, x->rwqe->num_sge, pkt->payload,
					    pkt->payload_len, x->rwqe_epoch, c->inl);
		if (c->inl_nseg) {
			x->rcv_off = pkt->payload_len;
			return EMU_RESP_NONE;
		}
	}
	if (xp_sge_write_deferred(c->qp, x->rwqe->sge, x->rwqe->num_sge, x->rcv_off,
				  pkt->payload, pkt->payload_len, x->rwqe_epoch,
				  xp_wb_tag(XP_WB_RECV, c->psn)))
		/* UC: the receive is completed in error; the rest of the
		 * message must not reach it (nor complete it again) */
		return resp_fail(c, EMU_RESP_ERR_REM_OP, IBV_WC_LOC_PROT_ERR, 0,
				 RESP_UC_CQE | RESP_UC_REST);
	resp_unsettled(c->qp);
	x->rcv_off += pkt->payload_len;
	return EMU_RESP_NONE;
}

/* WRITE payload into the target checked at the FIRST packet. */
static enum emu_resp_state resp_exec_write(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	const struct wire_pkt *pkt = c->pkt;
	uint32_t len = pkt->payload_len;
	struct emu_mr *mr;

	if (len > x->wr_left || (c->last && len != x->wr_left))
		return resp_malformed(c, EMU_RESP_ERR_MALFORMED);
	/* the key again, for every packet: after a deregistration,
	 * reregistration, window invalidation or rebind, nothing more lands */
	mr = !len ? NULL : emu_mr_check_rkey(c->qp, x->wr_rkey, x->wr_va, len,
					     IBV_ACCESS_REMOTE_WRITE, &c->proc, &c->owner, &c->err);
	if (len && (!mr || mr->gen > x->wr_epoch || c->owner != x->wr_owner))
		return resp_rkey_violation(c);
	struct emu_rvec rv = { c->proc, len, mr };

	if (len && emu_mem_write_deferred(c->qp, x->wr_owner, &rv, 1, pkt->payload, len,
					  xp_wb_tag(XP_WB_WRITE, c->psn)))
		return resp_fail(c, EMU_RESP_ERR_REM_ACCESS, 0, IBV_EVENT_QP_ACCESS_ERR, 0);
	if (len)
		resp_unsettled(c->qp);
	x->wr_va += len;
	x->wr_left -= len;
	return EMU_RESP_NONE;
}

/* IBTA 1.5 ATOMIC WRITE and FLUSH are answered with an RDMA READ
 * Response Only of no payload (AETH ACK), as rxe 6.2+ answers them, and
 * hold a responder resource like a READ or an atomic: a duplicate gets
 * the answer again from it, never a second execution. */
static enum emu_resp_state resp_zero_reply(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	struct emu_xport_res *r = resp_res_new(c->qp);

	r->valid = 1;
	r->kind = EMU_RES_ZERO;
	r->first_psn = r->last_psn = c->psn;
	x->msn = wire_msn_next(x->msn);
	x->epsn = wire_psn_next(c->psn);
	x->resp_opseq = 0;
	r->msn = x->msn;
	resp_res_arm(c->qp, r, c->psn);
	resp_emit(c->qp);
	return EMU_RESP_CLEANUP;
}

/* IBTA 1.5 ATOMIC WRITE: once every earlier placement of the QP has
 * landed, its 8 bytes in one write, serialised with the daemon's atomics
 * (one engine thread, IBV_ATOMIC_HCA), as rxe stores them with release
 * order. Its key was checked at chk_rkey; again here, as for any WRITE. */
static enum emu_resp_state resp_exec_atomic_write(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	struct emu_mr *mr;

	if (!resp_settle(c->qp))
		return EMU_RESP_EXIT; /* an earlier write failed: the QP is dead */
	mr = emu_mr_check_rkey(c->qp, x->wr_rkey, x->wr_va, 8, IBV_ACCESS_REMOTE_WRITE,
			       &c->proc, &c->owner, &c->err);
	if (!mr || mr->gen > x->wr_epoch || c->owner != x->wr_owner)
		return resp_rkey_violation(c);
	if (emu_mr_write(mr, c->proc, c->pkt->payload, 8))
		return resp_fail(c, EMU_RESP_ERR_REM_ACCESS, 0, IBV_EVENT_QP_ACCESS_ERR, 0);
	x->wr_va += 8;
	x->wr_left = 0;
	return resp_zero_reply(c);
}

/* IBTA 1.5 FLUSH. Global visibility: every earlier placement of the QP
 * has landed (the daemon's writes are complete when they return, so that
 * is writing out the deferred ones). Persistence: then the daemon's
 * mappings of the range are written back to their files; memory on the
 * /proc/<pid>/mem path has no file of its own (docs/transport.md). */
static enum emu_resp_state resp_exec_flush(struct resp_ctx *c)
{
	if (!resp_settle(c->qp))
		return EMU_RESP_EXIT; /* an earlier write failed: the QP is dead */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((c->pkt->feth.plt & WIRE_FLUSH_PERSISTENT) &&
	    emu_mrmap_persist(c->mr, c->proc, c->flen))
		return resp_fail(c, EMU_RESP_ERR_REM_ACCESS, 0, IBV_EVENT_QP_ACCESS_ERR, 0);
	return resp_zero_reply(c);
}

static enum emu_resp_state resp_execute(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	enum emu_resp_state st = EMU_RESP_NONE;

	if (c->cls == WIRE_OPC_SEND)
		st = resp_exec_send(c);
	else if (c->pkt->bth.opcode == WIRE_OP_RC_ATOMIC_WRITE)
		st = resp_exec_atomic_write(c);
	else if (c->cls == WIRE_OPC_WRITE)
		st = resp_exec_write(c);
	else if (c->cls == WIRE_OPC_READ)
		return EMU_RESP_READ_REPLY;
	else if (c->cls == WIRE_OPC_ATOMIC)
		return EMU_RESP_ATOMIC_REPLY;
	else if (c->cls == WIRE_OPC_FLUSH)
		return resp_exec_flush(c);
	if (st != EMU_RESP_NONE)
		return st;
	x->resp_opseq = c->last ? 0 : c->cls;
	x->epsn = wire_psn_next(c->psn);
	return c->last ? EMU_RESP_COMPLETE : EMU_RESP_ACKNOWLEDGE;
}

static enum emu_resp_state resp_read_reply_st(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	struct emu_xport_res *r = resp_res_new(c->qp);
	uint32_t len = c->pkt->reth.dma_len;
	uint32_t n = len ? (len + c->mtu - 1) / c->mtu : 1;

	r->valid = 1;
	r->first_psn = c->psn;
	r->last_psn = wire_psn_add(c->psn, n - 1);
	r->va = c->pkt->reth.va;
	r->rkey = c->pkt->reth.rkey;
	r->len = len;
	r->epoch = c->qp->dev->mr_epoch;
	x->msn = wire_msn_next(x->msn);
	x->epsn = wire_psn_add(c->psn, n);
	r->msn = x->msn;
	resp_res_arm(c->qp, r, c->psn);
	resp_emit(c->qp);
	return EMU_RESP_CLEANUP;
}

static enum emu_resp_state resp_atomic_reply(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	const struct wire_pkt *pkt = c->pkt;
	struct emu_xport_res *r;
	uint64_t old, val;

	if (!resp_settle(c->qp))
		return EMU_RESP_EXIT; /* an earlier write failed: the QP is dead */
	/* single engine thread: atomic w.r.t. every other atomic through this
	 * daemon (IBV_ATOMIC_HCA) */
	if (emu_mr_read(c->mr, &old, c->proc, 8))
		return resp_fail(c, EMU_RESP_ERR_REM_ACCESS, 0, IBV_EVENT_QP_ACCESS_ERR, 0);
	if (xp_rc_op(pkt->bth.opcode) == WIRE_OP_RC_CMP_SWAP)
		val = old == pkt->atomiceth.compare ? pkt->atomiceth.swap_add : old;
	else
		val = old + pkt->atomiceth.swap_add;
	if (val != old && emu_mr_write(c->mr, c->proc, &val, 8))
		return resp_fail(c, EMU_RESP_ERR_REM_ACCESS, 0, IBV_EVENT_QP_ACCESS_ERR, 0);
	r = resp_res_new(c->qp);
	r->valid = 1;
	r->kind = EMU_RES_ATOMIC;
	r->first_psn = r->last_psn = c->psn;
	r->va = pkt->atomiceth.va;
	r->rkey = pkt->atomiceth.rkey;
	r->len = 8;
	r->orig = old;
	x->msn = wire_msn_next(x->msn);
	x->epsn = wire_psn_next(c->psn);
	r->msn = x->msn;
	resp_res_arm(c->qp, r, c->psn);
	resp_emit(c->qp);
	return EMU_RESP_CLEANUP;
}

static enum emu_resp_state resp_complete(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	const struct wire_pkt *pkt = c->pkt;
	uint8_t f = pkt->op->flags;
	uint32_t flags = 0, imm = 0, opc = IBV_WC_RECV, len = x->rcv_off;

	/* a receive completes only once its payload is in place: a deferred
	 * write that failed (the pages went away meanwhile) has completed it
	 * in error, NAKed and failed the QP (xp_resp_mem_fault) */
	if ((c->cls != WIRE_OPC_WRITE || (f & WIRE_OPF_IMM)) && !resp_settle(c->qp))
		return EMU_RESP_EXIT;
	x->msn = wire_msn_next(x->msn);
	if (f & WIRE_OPF_IMM) {
		flags |= IBV_WC_WITH_IMM;
		imm = htobe32(pkt->imm);
	}
	if (c->cls == WIRE_OPC_WRITE) {
		if (!(f & WIRE_OPF_IMM))
			return EMU_RESP_ACKNOWLEDGE;
		opc = IBV_WC_RECV_RDMA_WITH_IMM;
		len = x->wr_len;
	}
	if (f & WIRE_OPF_INV) {
		if (emu_key_invalidate(xp_recv_pd(c->qp), pkt->ieth_rkey))
			return resp_fail(c, EMU_RESP_ERR_INVALIDATE_RKEY, IBV_WC_REM_INV_REQ_ERR,
					 IBV_EVENT_QP_REQ_ERR, RESP_UC_CQE);
		flags |= IBV_WC_WITH_INV;
		imm = pkt->ieth_rkey;
	}
	recv_cqe_sl(c->qp, IBV_WC_SUCCESS, opc, len, flags, imm, c->qp->attr.dest_qp_num,
		    pkt->bth.se, 0, c->inl, opc == IBV_WC_RECV ? c->inl_nseg : 0);
	x->rcv_off = 0;
	return EMU_RESP_ACKNOWLEDGE;
}

/* Hold the ACK for the reply. IBTA has no piggy-backed ACK, but in a
 * ping-pong the ACK of a message and the QP's own next request (the
 * application's reply, microseconds later) can leave in one TX burst: one
 * sendto here and one wake-up of the peer's daemon instead of two of
 * each. The ACK stays its own packet (its AETH, its MSN); only when it
 * leaves changes. Held only
 *  - for a message that ended (the LAST or ONLY packet) on a QP whose
 *    traffic alternates: since our last request the peer sent one message,
 *    not two (ack_pp; a stream, ib_send_bw's, turns it off at its second
 *    message and its ACKs leave at the turn's end as before);
 *  - at most the device's ack_hold_ns (EMU_XPORT_ACK_HOLD_NS, far below the
 *    peer's 250 us minimum loss probe): emu_xport_next_deadline wakes an
 *    idle engine for it, and one that left alone at the bound ends the
 *    QP's ping-pong until it alternates again.
 * Meanwhile the engine counts the reply as expected (emu_xport_rx_expected,
 * d->x->hold_until) and keeps its yielding spin: sleeping, the reply's
 * doorbell had to wake it, which cost qperf rc_lat over af_packet more
 * than the joined burst saved (docs/performance.md, "One burst per hop").
 * It leaves with the QP's next post, ahead of it (emu_xport_sq_kick), before a
 * NAK (resp_ack_tx) or with a READ/atomic response (resp_pump), and when
 * the QP goes to ERR (xp_ack_due); RESET drops it (xp_resp_reset). */
static void resp_ack_hold(struct resp_ctx *c)
{
	struct emu_xport_qp *x = c->qp->x;
	uint32_t hold = c->qp->dev->x->ack_hold_ns;

	/* a request after a message that ended, none of ours between: a
	 * stream (or a peer that never waits for us) */
	if (x->rx_msg_end)
		x->ack_pp = 0;
	x->rx_msg_end = c->last;
	if (!c->pkt->bth.ackreq)
		return;
	resp_ack_later(c->qp, c->psn);
	if (c->last && x->ack_pp && hold && !x->rd_pend &&
	    wire_aeth_type(x->ack_syndrome) == WIRE_AETH_ACK) {
		x->ack_hold_at = emu_now_ns() + hold;
		x->cnt.acks_held++;
		c->qp->dev->x->hold_until = x->ack_hold_at;
	}
}

static enum emu_resp_state resp_acknowledge(struct resp_ctx *c)
{
	if (c->rc)
		resp_ack_hold(c);
	return EMU_RESP_CLEANUP;
}

static enum emu_resp_state resp_cleanup(struct resp_ctx *c)
{
	(void)c;
	return EMU_RESP_DONE;
}

static const resp_state_fn resp_state_fns[EMU_RESP_NSTATES] = {
	[EMU_RESP_GET_REQ] = resp_get_req,
	[EMU_RESP_CHK_PSN] = resp_chk_psn,
	[EMU_RESP_CHK_OP_SEQ] = resp_chk_op_seq,
	[EMU_RESP_CHK_OP_VALID] = resp_chk_op_valid,
	[EMU_RESP_CHK_RESOURCE] = resp_chk_resource,
	[EMU_RESP_CHK_LENGTH] = resp_chk_length,
	[EMU_RESP_CHK_RKEY] = resp_chk_rkey,
	[EMU_RESP_EXECUTE] = resp_execute,
	[EMU_RESP_READ_REPLY] = resp_read_reply_st,
	[EMU_RESP_ATOMIC_REPLY] = resp_atomic_reply,
	[EMU_RESP_COMPLETE] = resp_complete,
	[EMU_RESP_ACKNOWLEDGE] = resp_acknowledge,
	[EMU_RESP_CLEANUP] = resp_cleanup,
	[EMU_RESP_DUPLICATE_REQUEST] = resp_dup,
	[EMU_RESP_ERR_PSN_OUT_OF_SEQ] = resp_err_seq,
	[EMU_RESP_ERR_MALFORMED] = resp_err_inv_req,
	[EMU_RESP_ERR_MISSING_OPCODE_FIRST] = resp_err_inv_req,
	[EMU_RESP_ERR_MISSING_OPCODE_LAST_C] = resp_err_inv_req,
	[EMU_RESP_ERR_TOO_MANY_RDMA_ATM_REQ] = resp_err_inv_req,
	[EMU_RESP_ERR_INVALIDATE_RKEY] = resp_err_inv_req,
	[EMU_RESP_ERR_RKEY_VIOLATION] = resp_err_rem_access,
	[EMU_RESP_ERR_REM_ACCESS] = resp_err_rem_access,
	[EMU_RESP_ERR_LENGTH] = resp_err_rem_op,
	[EMU_RESP_ERR_REM_OP] = resp_err_rem_op,
	[EMU_RESP_ERR_RNR] = resp_err_rnr,
};

/* Before the state machine: state gate, COMM_EST, UD. true to go on. */
static bool resp_admit(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	struct emu_xport_qp *x = qp->x;

	if (qp->attr.qp_state < IBV_QPS_RTR || qp->attr.qp_state == IBV_QPS_ERR ||
	    x->fatal_held) {
		xp_drop(qp, EMU_XDROP_QP_STATE);
		return false;
	}
	if (!x->comm_est_sent && qp->attr.qp_state == IBV_QPS_RTR) {
		x->comm_est_sent = 1;
		xp_event(qp, IBV_EVENT_COMM_EST);
	}
	if (qp->type == IBV_QPT_UD) {
		resp_ud(qp, pkt);
		return false;
	}
	return true;
}

void xp_resp_rx(struct emu_qp *qp, const struct wire_pkt *pkt)
{
	enum emu_resp_state st = EMU_RESP_GET_REQ;
	struct uroce_cqe_inl inl; /* filled only for a small SEND */
	struct resp_ctx c;
	bool trace;

	if (!resp_admit(qp, pkt))
		return;
	memset(&c, 0, sizeof(c));
	c.qp = qp;
	c.pkt = pkt;
	c.cls = pkt->op->cls;
	c.rc = xp_rc_like(qp);
	/* XRC TGT: the request names the SRQ (and so the PD and CQ) that
	 * serves it; one of another domain, or none, is an invalid request */
	c.xrc_bad = qp->type == IBV_QPT_XRC_RECV && !xp_xrc_tgt_bind(qp, pkt->xrc_srqn);
	c.first = pkt->op->flags & WIRE_OPF_FIRST;
	c.last = pkt->op->flags & WIRE_OPF_LAST;
	c.psn = pkt->bth.psn;
	c.mtu = xp_mtu(qp);
	c.inl = &inl;
	trace = emu_log_enabled(EMU_LOG_LVL_DEBUG);
	while (st != EMU_RESP_DONE && st != EMU_RESP_EXIT) {
		qp->x->resp_state = (uint8_t)st;
		if (trace)
			EMU_LOG(DEBUG, "qp %u psn %u resp %s\n", qp->qpn, c.psn,
				emu_resp_state_name[st]);
		st = resp_state_fns[st] ? resp_state_fns[st](&c) : EMU_RESP_EXIT;
	}
}

void xp_resp_reset(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;

	x->resp_opseq = 0;
	x->nak_sent = 0;
	x->ack_pending = 0;
	x->ack_hold_at = 0;
	x->ack_pp = 0;
	x->rx_msg_end = 0;
	x->ack_retry = 0;
	x->comm_est_sent = 0;
	x->uc_drop = 0;
	x->wr_unsettled = 0;
	x->wr_failed = 0;
	x->rwqe_valid = 0;
	x->rcv_off = 0;
	x->msn = 0;
	x->res_next = 0;
	xp_resp_release(qp);
	if (x->res)
		memset(x->res, 0, sizeof(*x->res) * x->res_n);
}
