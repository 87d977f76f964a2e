/* SPDX-License-Identifier: MIT */
/* The IB CM exchange of rdma_cm ids: listener matching, connection
 * requests, the events each message gives, and the exchange between two
 * ids of this device carried by direct calls (no engine, UROCE_CM_NO_WIRE). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

static bool ucma_listen_match(const struct ucma_id *l, const struct ucma_id *a)
{
	if (l->state != S_LISTEN || l->ps != a->ps || ucma_port(&l->src) != ucma_port(&a->dst))
		return false;
	if (ucma_any(&l->src))
		return l->src.ss_family == a->dst.ss_family ||
		       (l->src.ss_family == AF_INET6 && !l->afonly);
	return ucma_same_addr(&l->src, &a->dst) ||
	       (ucma_is_loop(&a->dst) && ucma_is_loop(&l->src) && l->src.ss_family == a->dst.ss_family);
}

struct ucma_id *ucma_find_listener(struct ucma_dev *u, const struct ucma_id *a)
{
	struct ucma_id *wild = NULL;

	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *l = u->ids[i];
		if (!l || !ucma_listen_match(l, a))
			continue;
		if (!ucma_any(&l->src))
			return l;
		if (!wild)
			wild = l;
	}
	return wild;
}

/* a connection request for listener l: its new id, hidden until the
 * CONNECT_REQUEST *ep is fetched, or NULL when l cannot take it (backlog,
 * limits: the kernel's handler fails and ib_cm rejects the REQ) */
struct ucma_id *ucma_req_new(struct ucma_dev *u, struct ucma_id *l, struct ucma_ev **ep)
{
	struct ucma_id *n = NULL;
	struct ucma_ev *e = NULL;
	int err = 0;

	if (l->pending < l->backlog && ucma_ev_room(l->file))
		n = ucma_id_new(u, l->file, l->ps, l->qp_type, &err);
	if (n)
		e = ucma_ev_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		if (n) {
			u->ids[n->handle] = NULL;
			((struct ucma_ctx *)n->file->ctx->ucma)->nids--;
			free(n);
		}
		return NULL;
	}
	n->hidden = true;
	n->listen = l;
	l->pending++;
	n->state = S_CONNECT;
	n->cp = CP_REQ_RCVD;
	e->conn = n;
	e->resp.id = n->handle;
	*ep = e;
	return n;
}

static uint64_t ucma_timewait_ns(const struct ucma_id *id)
{
	unsigned t = id->timeout_set ? id->timeout : UCMA_DEF_ACK_TIMEOUT;

	if (t > 24)
		t = 24;
	/* 4.096 us << timeout, as cm_convert_to_ms, plus a margin */
	return (4096ull << t) + 100000000ull;
}

static void ucma_enter_timewait(struct ucma_dev *u, struct ucma_id *id)
{
	id->cp = CP_TIMEWAIT;
	ucma_timer(u, id, emu_now_ns() + ucma_timewait_ns(id));
}

/* the peer's REJ reached id */
void ucma_rej_rcvd(struct ucma_dev *u, struct ucma_id *id, int reason,
		   const uint8_t *pd, unsigned plen)
{
	id->peer = NULL;
	id->cp = CP_DONE;
	if (id->qp_type == IBV_QPT_UD) {
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, reason);
		return;
	}
	ucma_event_pdata(u, id, RDMA_CM_EVENT_REJECTED, reason, pd, plen, UCMA_REJ_PDATA);
}

/* the peer's DREQ reached id */
void ucma_dreq_rcvd(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->state != S_CONNECT)
		return;
	id->state = S_DISCONNECT;
	id->cp = CP_DREQ_RCVD;
	ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, 0);
}

/* the peer's DREP reached id (it had sent a DREQ) */
static void ucma_drep_rcvd(struct ucma_dev *u, struct ucma_id *id, int status)
{
	id->peer = NULL;
	ucma_enter_timewait(u, id);
	if (id->state == S_CONNECT) {
		id->state = S_DISCONNECT;
		ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, status);
	}
}

/* what cm_destroy_id sends for the state the id is in */
void ucma_conn_abort(struct ucma_dev *u, struct ucma_id *id)
{
	struct ucma_id *p = id->peer;

	id->peer = NULL;
	if (!p)
		return;
	switch (id->cp) {
	case CP_REQ_SENT:
		if (p->qp_type == IBV_QPT_UD) {
			p->peer = NULL; /* a SIDR request just goes unanswered */
			break;
		}
		ucma_rej_rcvd(u, p, REJ_TIMEOUT, NULL, 0);
		break;
	case CP_REQ_RCVD:
	case CP_REP_SENT:
	case CP_REP_RCVD:
		ucma_rej_rcvd(u, p, p->qp_type == IBV_QPT_UD ? SIDR_REJECT : REJ_CONSUMER_DEFINED,
			      NULL, 0);
		break;
	case CP_ESTABLISHED:
		ucma_dreq_rcvd(u, p);
		p->peer = NULL; /* nobody will answer its DREP */
		ucma_enter_timewait(u, p);
		break;
	case CP_DREQ_RCVD:
		ucma_drep_rcvd(u, p, 0);
		break;
	default:
		p->peer = NULL;
		break;
	}
}

/* CONNECT_REQUEST (req) / CONNECT_RESPONSE parameters: what id took from
 * the peer's REQ or REP, already turned to the receiving side's view
 * (cm_format_req_event, cm_format_rep_event); a REP has no retry count.
 * The private data field goes whole: IB carries no length. */
void ucma_conn_event_param(struct rdma_ucm_conn_param *cp, const struct ucma_id *id, bool req,
			   const uint8_t *pd, unsigned plen)
{
	unsigned field = req ? UCMA_REQ_PDATA : UCMA_REP_PDATA;

	cp->qp_num = id->rqpn;
	cp->srq = id->srq;
	cp->responder_resources = id->resp_res;
	cp->initiator_depth = id->init_depth;
	cp->flow_control = id->flow_control;
	cp->retry_count = req ? id->retry : 0;
	cp->rnr_retry_count = id->rnr_retry;
	if (pd && plen)
		memcpy(cp->private_data, pd, plen < field ? plen : field);
	cp->private_data_len = (uint8_t)field;
}

/* REQ / SIDR_REQ from active id a to whoever listens on its destination
 * on this device, without MADs (the engine's path: ucma_wire_req). */
void ucma_send_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q)
{
	bool ud = a->qp_type == IBV_QPT_UD;
	struct ucma_id *l = ucma_find_listener(u, a);

	a->cp = CP_REQ_SENT;
	if (!l || l->qp_type != a->qp_type) {
		a->cp = CP_DONE;
		if (ud)
			ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, SIDR_UNSUPPORTED);
		else
			ucma_event_pdata(u, a, RDMA_CM_EVENT_REJECTED, REJ_INVALID_SERVICE_ID,
					 NULL, 0, UCMA_REJ_PDATA);
		return;
	}
	struct ucma_ev *e = NULL;
	struct ucma_id *n = ucma_req_new(u, l, &e);
	if (!n) {
		a->cp = CP_DONE;
		if (ud)
			ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, SIDR_REJECT);
		else
			ucma_event_pdata(u, a, RDMA_CM_EVENT_REJECTED, REJ_CONSUMER_DEFINED,
					 NULL, 0, UCMA_REJ_PDATA);
		return;
	}
	n->peer = a;
	a->peer = n;
	/* addresses: ours is where the request went, the peer's where it came
	 * from (cma_save_net_info) */
	n->src = a->dst;
	n->dst = a->src;
	n->has_dev = true;
	int li = ucma_local_index(u->d, &a->dst);
	n->sgid_index = (uint8_t)(li >= 0 ? li : a->sgid_index);
	n->sgid = a->dgid;
	n->dgid = a->sgid;
	n->route = true;
	n->path_mtu = a->path_mtu;
	n->tclass = a->tclass;
	n->hop_limit = a->hop_limit;
	n->tos = a->tos;
	n->afonly = l->afonly;
	n->reuseaddr = l->reuseaddr;
	n->timeout_set = l->timeout_set;
	n->timeout = a->timeout_set ? a->timeout : UCMA_DEF_ACK_TIMEOUT;
	n->timeout_set = true; /* the REQ's local ACK timeout */
	n->rqpn = q->qp_num;
	/* each side receives from its own PSN and sends from the peer's
	 * (cm_req_handler / cm_rep_handler with rdma_init_qp_attr) */
	n->sq_psn = a->seq_num;
	n->resp_res = a->init_depth;
	n->init_depth = a->resp_res;
	n->retry = q->retry_count;
	n->rnr_retry = q->rnr_retry_count;
	n->flow_control = q->flow_control;
	n->srq = q->srq;
	if (ud) {
		memcpy(e->resp.param.ud.private_data, q->private_data, q->private_data_len);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REQ_PDATA;
	} else {
		ucma_conn_event_param(&e->resp.param.conn, n, true, q->private_data,
				      q->private_data_len);
		/* the REQ's vendor ID and options (cm_format_req_event) */
		e->resp.ece.vendor_id = a->ece.vendor_id & 0xFFFFFF;
		e->resp.ece.attr_mod = a->ece.attr_mod;
	}
	ucma_ev_post(u, e);
}

void ucma_ah_attr(const struct ucma_id *id, struct ib_uverbs_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, id->dgid.raw, 16);
	ah->grh.sgid_index = id->sgid_index;
	ah->grh.hop_limit = id->hop_limit;
	ah->grh.traffic_class = id->tclass;
	ah->is_global = 1;
	ah->port_num = 1;
}

/* the passive side accepts (REP, or SIDR_REP for UD) */
int ucma_send_rep(struct ucma_dev *u, struct ucma_id *n, const struct rdma_ucm_conn_param *q)
{
	struct ucma_id *a = n->peer;

	if (n->qp_type == IBV_QPT_UD) {
		if (q && q->private_data_len > UCMA_SIDR_REP_PDATA)
			return -EINVAL;
		if (n->cp != CP_REQ_RCVD)
			return -EINVAL;
		uint32_t qkey = q && q->qkey ? q->qkey : UCMA_UDP_QKEY;
		if (n->cm) {
			struct emu_ibcm_sidr_rep_param r = {
				.qp_num = q ? q->qp_num : 0, .qkey = qkey,
				.status = WIRE_CM_SIDR_SUCCESS,
				.private_data = q ? q->private_data : NULL,
				.private_data_len = q ? q->private_data_len : 0,
				.ece = { n->ece.vendor_id, n->ece.attr_mod },
			};
			int rc = emu_ibcm_send_sidr_rep(n->cm, &r);
			if (!rc)
				n->cp = CP_DONE;
			return rc;
		}
		n->cp = CP_DONE;
		n->peer = NULL;
		if (!a)
			return 0;
		a->peer = NULL;
		a->cp = CP_DONE;
		struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return 0;
		e->resp.param.ud.qp_num = q ? q->qp_num : 0;
		e->resp.param.ud.qkey = qkey;
		a->qkey = qkey;
		ucma_ah_attr(a, &e->resp.param.ud.ah_attr);
		if (q)
			memcpy(e->resp.param.ud.private_data, q->private_data, q->private_data_len);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REP_PDATA;
		ucma_ev_post(u, e);
		return 0;
	}
	if (n->cp != CP_REQ_RCVD)
		return -EINVAL;
	if (q->private_data_len > UCMA_REP_PDATA)
		return -EINVAL;
	if (n->cm) {
		struct emu_ibcm_rep_param r = {
			.qp_num = q->qp_num, .starting_psn = n->seq_num,
			.private_data = q->private_data, .private_data_len = q->private_data_len,
			.responder_resources = q->responder_resources,
			.initiator_depth = q->initiator_depth, .flow_control = q->flow_control,
			.rnr_retry_count = q->rnr_retry_count, .srq = q->srq,
			.ece = { n->ece.vendor_id, n->ece.attr_mod },
		};
		int rc = emu_ibcm_send_rep(n->cm, &r);
		if (rc)
			return rc;
	}
	n->resp_res = q->responder_resources;
	n->init_depth = q->initiator_depth;
	n->cp = CP_REP_SENT;
	if (!a)
		return 0;
	struct ucma_rep r = {
		.qpn = q->qp_num, .psn = n->seq_num, .initiator_depth = q->initiator_depth,
		.responder_resources = q->responder_resources, .rnr_retry = q->rnr_retry_count,
		.flow_control = q->flow_control, .srq = q->srq,
		.pdata = q->private_data, .pdata_len = q->private_data_len,
		.ece = { n->ece.vendor_id & 0xFFFFFF, n->ece.attr_mod },
	};
	ucma_rep_rcvd(u, a, &r);
	return 0;
}

/* The active side takes the REP's fields as sent, seen from the receiving
 * side (cm_rep_handler / cm_format_rep_event: the peer's initiator depth
 * is our responder resources; we send from the peer's PSN), then
 * CONNECT_RESPONSE. */
void ucma_rep_rcvd(struct ucma_dev *u, struct ucma_id *a, const struct ucma_rep *r)
{
	a->cp = CP_REP_RCVD;
	a->rqpn = r->qpn;
	a->sq_psn = r->psn;
	a->resp_res = r->initiator_depth;
	a->init_depth = r->responder_resources;
	a->rnr_retry = r->rnr_retry;
	a->flow_control = r->flow_control;
	a->srq = r->srq;
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (!e)
		return;
	ucma_conn_event_param(&e->resp.param.conn, a, false, r->pdata, r->pdata_len);
	e->resp.ece = r->ece; /* cm_format_rep_event */
	ucma_ev_post(u, e);
}

/* the active side's RTU after its CONNECT_RESPONSE, or NOTIFY(COMM_EST) */
void ucma_establish(struct ucma_dev *u, struct ucma_id *n)
{
	n->cp = CP_ESTABLISHED;
	ucma_event(u, n, RDMA_CM_EVENT_ESTABLISHED, 0);
}

int ucma_send_rtu(struct ucma_dev *u, struct ucma_id *a)
{
	if (a->cp != CP_REP_RCVD)
		return -EINVAL;
	if (a->cm) {
		int rc = emu_ibcm_send_rtu(a->cm, NULL, 0);
		if (rc)
			return rc;
	}
	a->cp = CP_ESTABLISHED;
	if (a->peer && a->peer->cp == CP_REP_SENT)
		ucma_establish(u, a->peer);
	return 0;
}

int ucma_disconnect(struct ucma_dev *u, struct ucma_id *id)
{
	struct ucma_id *p = id->peer;

	if (id->cm) {
		/* rdma_disconnect: a DREQ, or else a DREP; 0 either way */
		if (id->cp == CP_DREQ_RCVD) {
			if (!emu_ibcm_send_drep(id->cm, NULL, 0))
				id->cp = CP_TIMEWAIT;
		} else if (!emu_ibcm_send_dreq(id->cm, NULL, 0)) {
			id->cp = CP_DREQ_SENT;
		}
		return 0;
	}

	switch (id->cp) {
	case CP_NONE:
		return -EINVAL;
	case CP_ESTABLISHED:
	case CP_REP_SENT:
	case CP_REP_RCVD:
		id->cp = CP_DREQ_SENT;
		if (p) {
			ucma_dreq_rcvd(u, p);
		} else {
			/* nobody to answer: the DREQ times out */
			ucma_drep_rcvd(u, id, -ETIMEDOUT);
		}
		return 0;
	case CP_DREQ_RCVD:
		id->peer = NULL;
		ucma_enter_timewait(u, id);
		if (p)
			ucma_drep_rcvd(u, p, 0);
		return 0;
	default:
		return 0; /* neither a DREQ nor a DREP can go: the kernel says 0 too */
	}
}
