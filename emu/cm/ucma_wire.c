/* SPDX-License-Identifier: MIT */
/* The rdma_cm exchange through the IB CM engine (emu/cm/ibcm.c):
 * REQ, REP, RTU, REJ, DREQ, DREP as MADs on QP1, with what the engine
 * reports turned into the same rdma_cm events as the direct exchange; UD
 * ids use SIDR_REQ / SIDR_REP. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

bool ucma_wire_dst(struct ucma_dev *u, const struct ucma_id *a)
{
	/* every destination on the loopback port (its frames come back to
	 * our engine); on a real port our own addresses stay inside the
	 * daemon: a frame to our own MAC would leave and not return */
	return !u->no_wire && emu_ibcm_get(u->d) &&
	       (u->d->loopback || ucma_local_index(u->d, &a->dst) < 0);
}

/* the engine an id's wire pointers belong to is still there (it is
 * detached when the engine loop ends, before the clients are closed) */
static bool ucma_wire_live(struct ucma_dev *u)
{
	return u->cm && emu_ibcm_get(u->d) == u->cm;
}

static int ucma_wire_handler(struct emu_ibcm_id *c, const struct emu_ibcm_event *ev);

static void ucma_wire_path(const struct ucma_id *a, struct emu_ibcm_path *p)
{
	memset(p, 0, sizeof(*p));
	p->sgid = a->sgid;
	p->dgid = a->dgid;
	p->traffic_class = a->tclass;
	p->hop_limit = a->hop_limit;
	p->mtu = (enum ibv_mtu)a->path_mtu;
	p->port = 1;
	p->packet_life_time = UCMA_PKT_LIFETIME;
}

/* UD: the SIDR_REQ, as cma_resolve_ib_udp (4 s a try, 15 retries) */
static int ucma_wire_sidr_req(struct ucma_dev *u, struct ucma_id *a, struct emu_ibcm_id *c,
			      const struct rdma_ucm_conn_param *q, const uint8_t *pd)
{
	struct emu_ibcm_sidr_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.timeout_ms = emu_ibcm_time_ms(20),
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.max_cm_retries = 15,
	};
	ucma_wire_path(a, &r.path);
	int rc = emu_ibcm_send_sidr_req(c, &r);
	if (rc) {
		emu_ibcm_destroy_id(c);
		return rc;
	}
	u->cm = emu_ibcm_get(u->d);
	a->cm = c;
	a->cp = CP_REQ_SENT;
	return 0;
}

int ucma_wire_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q)
{
	struct emu_ibcm *cm = emu_ibcm_get(u->d);
	uint8_t pd[WIRE_CM_SIDR_REQ_PDATA];
	struct wire_cma_hdr h = {
		.cma_version = WIRE_CMA_VERSION,
		.ip_version = a->dst.ss_family == AF_INET ? 4 : 6,
		.src_port = ucma_port(&a->src),
	};
	union ibv_gid g;

	ucma_gid(&a->src, &g);
	memcpy(h.src.raw, g.raw, 16);
	ucma_gid(&a->dst, &g);
	memcpy(h.dst.raw, g.raw, 16);
	memset(pd, 0, sizeof(pd));
	if (wire_cma_hdr_encode(pd, &h))
		return -EINVAL;
	memcpy(pd + WIRE_CMA_HDR_LEN, q->private_data, q->private_data_len);
	struct emu_ibcm_id *c = emu_ibcm_create_id(cm, ucma_wire_handler, a);
	if (!c)
		return -ENOMEM;
	if (a->qp_type == IBV_QPT_UD)
		return ucma_wire_sidr_req(u, a, c, q, pd);
	struct emu_ibcm_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.qp_num = q->qp_num,
		.qp_type = a->qp_type,
		.starting_psn = a->seq_num,
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.responder_resources = a->resp_res,
		.initiator_depth = a->init_depth,
		.remote_cm_response_timeout = 20, /* CMA_CM_RESPONSE_TIMEOUT */
		.local_cm_response_timeout = 20,
		.flow_control = q->flow_control,
		.retry_count = a->retry,
		.rnr_retry_count = a->rnr_retry,
		.max_cm_retries = 15,             /* CMA_MAX_CM_RETRIES */
		.srq = q->srq,
		.ece = { a->ece.vendor_id, a->ece.attr_mod },
	};
	ucma_wire_path(a, &r.primary_path);
	int rc = emu_ibcm_send_req(c, &r);
	if (rc) {
		emu_ibcm_destroy_id(c);
		return rc;
	}
	u->cm = cm;
	a->cm = c;
	a->cp = CP_REQ_SENT;
	return 0;
}

/* a REQ from the wire for one of our listeners: the new id, as
 * cma_ib_req_handler makes it from the cma_hdr and the path */
static int ucma_wire_req_rcvd(struct ucma_dev *u, struct emu_ibcm_id *c,
			      const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_req_event_param *p = &ev->param.req_rcvd;
	bool sidr = ev->event == EMU_IBCM_SIDR_REQ_RECEIVED;
	uint64_t sid = sidr ? ev->param.sidr_req_rcvd.service_id : p->service_id;
	const struct emu_ibcm_path *path = sidr ? &ev->param.sidr_req_rcvd.path : &p->primary_path;
	struct wire_cma_hdr h;
	struct ucma_id probe;
	uint16_t ps, port;

	if (wire_cma_service_parse(sid, &ps, &port) || !ev->private_data ||
	    ev->private_data_len < WIRE_CMA_HDR_LEN ||
	    wire_cma_hdr_decode(ev->private_data, ev->private_data_len, &h))
		return -EINVAL;
	sa_family_t fam = h.ip_version == 4 ? AF_INET : AF_INET6;
	union ibv_gid hsrc, hdst; /* aligned copies */
	memcpy(hsrc.raw, h.src.raw, 16);
	memcpy(hdst.raw, h.dst.raw, 16);
	memset(&probe, 0, sizeof(probe));
	probe.ps = ps;
	ucma_gid_to_addr(&hdst, fam, &probe.dst);
	ucma_set_port(&probe.dst, port);
	struct ucma_id *l = ucma_find_listener(u, &probe);
	struct ucma_ev *e = NULL;
	struct ucma_id *n = NULL;
	if (l && (sidr ? l->qp_type == IBV_QPT_UD : l->qp_type == p->qp_type))
		n = ucma_req_new(u, l, &e);
	if (!n)
		return -ENOMEM; /* the engine rejects the REQ (consumer defined) */
	n->cm = c;
	c->context = n;
	u->cm = emu_ibcm_get(u->d);
	n->src = probe.dst;
	ucma_gid_to_addr(&hsrc, fam, &n->dst);
	ucma_set_port(&n->dst, h.src_port);
	n->has_dev = true;
	n->sgid = path->sgid;
	int si = emu_gid_find(u->d, &n->sgid);
	n->sgid_index = (uint8_t)(si >= 0 ? si : 0);
	n->dgid = path->dgid;
	n->route = true;
	n->path_mtu = (uint8_t)(path->mtu && path->mtu < u->d->active_mtu ? path->mtu :
				u->d->active_mtu);
	n->tclass = path->traffic_class;
	n->hop_limit = path->hop_limit ? path->hop_limit : UCMA_HOP_LIMIT;
	unsigned plen = ev->private_data_len - WIRE_CMA_HDR_LEN;
	if (sidr) {
		if (plen > UCMA_SIDR_REQ_PDATA)
			plen = UCMA_SIDR_REQ_PDATA;
		memcpy(e->resp.param.ud.private_data, ev->private_data + WIRE_CMA_HDR_LEN, plen);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REQ_PDATA;
		ucma_ev_post(u, e);
		return 0;
	}
	n->timeout = p->local_ack_timeout;
	n->timeout_set = true;
	n->afonly = l->afonly;
	n->rqpn = p->remote_qpn;
	n->sq_psn = p->starting_psn; /* cm_req_handler; seq_num stays our own */
	/* the engine reports the REQ's fields as sent; rdma_cm sees them
	 * from the receiving side (cm_format_req_event swaps them) */
	n->resp_res = p->initiator_depth;
	n->init_depth = p->responder_resources;
	n->retry = p->retry_count;
	n->rnr_retry = p->rnr_retry_count;
	n->flow_control = p->flow_control;
	n->srq = p->srq;
	ucma_conn_event_param(&e->resp.param.conn, n, true,
			      ev->private_data + WIRE_CMA_HDR_LEN, plen);
	e->resp.ece.vendor_id = p->ece.vendor_id;
	e->resp.ece.attr_mod = p->ece.attr_mod;
	ucma_ev_post(u, e);
	return 0;
}

static void ucma_wire_rep_rcvd(struct ucma_dev *u, struct ucma_id *a, const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_rep_event_param *p = &ev->param.rep_rcvd;

	struct ucma_rep r = {
		.qpn = p->remote_qpn, .psn = p->starting_psn,
		.initiator_depth = p->initiator_depth,
		.responder_resources = p->responder_resources, .rnr_retry = p->rnr_retry_count,
		.flow_control = p->flow_control, .srq = p->srq,
		.pdata = ev->private_data, .pdata_len = ev->private_data_len,
		.ece = { p->ece.vendor_id, p->ece.attr_mod },
	};
	ucma_rep_rcvd(u, a, &r);
}

/* the SIDR_REP: the UD peer's QPN and Q_Key, or why not */
static void ucma_wire_sidr_rep_rcvd(struct ucma_dev *u, struct ucma_id *a,
				    const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_sidr_rep_event_param *p = &ev->param.sidr_rep_rcvd;

	a->cp = CP_DONE;
	if (p->status != WIRE_CM_SIDR_SUCCESS) {
		ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, (int32_t)p->status);
		return;
	}
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!e)
		return;
	a->qkey = p->qkey;
	e->resp.param.ud.qp_num = p->qpn;
	e->resp.param.ud.qkey = p->qkey;
	ucma_ah_attr(a, &e->resp.param.ud.ah_attr);
	if (ev->private_data)
		memcpy(e->resp.param.ud.private_data, ev->private_data,
		       ev->private_data_len < UCMA_SIDR_REP_PDATA ? ev->private_data_len :
								     UCMA_SIDR_REP_PDATA);
	e->resp.param.ud.private_data_len = UCMA_SIDR_REP_PDATA;
	ucma_ev_post(u, e);
}

/* the engine's DREP (or its DREQ timing out): the originator is
 * disconnected; TIMEWAIT_EXIT comes from the engine */
static void ucma_wire_drep(struct ucma_dev *u, struct ucma_id *id, int status)
{
	id->cp = CP_TIMEWAIT;
	if (id->state == S_CONNECT) {
		id->state = S_DISCONNECT;
		ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, status);
	}
}

static int ucma_wire_handler(struct emu_ibcm_id *c, const struct emu_ibcm_event *ev)
{
	if (ev->event == EMU_IBCM_REQ_RECEIVED || ev->event == EMU_IBCM_SIDR_REQ_RECEIVED)
		return ucma_wire_req_rcvd(c->context, c, ev);
	struct ucma_id *id = c->context;
	if (!id)
		return 0;
	struct ucma_dev *u = ucma_dev(emu_ibcm_dev(c->cm), false);
	switch (ev->event) {
	case EMU_IBCM_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_wire_rep_rcvd(u, id, ev);
		break;
	case EMU_IBCM_RTU_RECEIVED:
	case EMU_IBCM_USER_ESTABLISHED:
		if (id->cp == CP_REP_SENT)
			ucma_establish(u, id);
		break;
	case EMU_IBCM_REJ_RECEIVED:
		ucma_rej_rcvd(u, id, ev->param.rej_rcvd.reason, ev->private_data,
			      ev->private_data && ev->private_data_len < UCMA_REJ_PDATA ?
			      ev->private_data_len : ev->private_data ? UCMA_REJ_PDATA : 0);
		break;
	case EMU_IBCM_REQ_ERROR:
	case EMU_IBCM_REP_ERROR:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case EMU_IBCM_DREQ_RECEIVED:
		ucma_dreq_rcvd(u, id);
		break;
	case EMU_IBCM_DREP_RECEIVED:
		ucma_wire_drep(u, id, 0);
		break;
	case EMU_IBCM_DREQ_ERROR:
		ucma_wire_drep(u, id, -ETIMEDOUT);
		break;
	case EMU_IBCM_TIMEWAIT_EXIT:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case EMU_IBCM_SIDR_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_wire_sidr_rep_rcvd(u, id, ev);
		break;
	case EMU_IBCM_SIDR_REQ_ERROR:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	default:
		break;
	}
	return 0;
}

/* a listener's service on the wire (shared per port space and port) */
void ucma_wire_listen(struct ucma_dev *u, struct ucma_id *l)
{
	struct emu_ibcm *cm = emu_ibcm_get(u->d);
	uint16_t port = ucma_port(&l->src);

	if (!cm || u->no_wire)
		return;
	for (struct ucma_wl *w = u->wls; w; w = w->next)
		if (w->ps == l->ps && w->port == port) {
			w->refs++;
			l->wl = w;
			return;
		}
	struct ucma_wl *w = calloc(1, sizeof(*w));
	struct emu_ibcm_id *c = w ? emu_ibcm_create_id(cm, ucma_wire_handler, u) : NULL;
	if (!c || emu_ibcm_listen(c, (uint64_t)l->ps << 16 | port, 0, UCMA_MAX_BACKLOG)) {
		if (c)
			emu_ibcm_destroy_id(c);
		free(w);
		EMU_LOG_RL(INFO, "%s: rdma_cm port %u listens inside the daemon only\n",
			   u->d->name, port);
		return;
	}
	u->cm = cm;
	w->ps = l->ps;
	w->port = port;
	w->refs = 1;
	w->cm = c;
	w->next = u->wls;
	u->wls = w;
	l->wl = w;
}

static void ucma_wire_unlisten(struct ucma_dev *u, struct ucma_id *l)
{
	struct ucma_wl *w = l->wl;

	l->wl = NULL;
	if (!w || --w->refs)
		return;
	for (struct ucma_wl **pp = &u->wls; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (ucma_wire_live(u))
		emu_ibcm_destroy_id(w->cm);
	free(w);
}

/* the id goes: the engine sends what ib_destroy_cm_id sends */
void ucma_wire_destroy(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->wl)
		ucma_wire_unlisten(u, id);
	if (id->cm) {
		/* after the engine's detach its ids are gone: touch nothing */
		if (ucma_wire_live(u)) {
			id->cm->context = NULL;
			emu_ibcm_destroy_id(id->cm);
		}
		id->cm = NULL;
	}
}
