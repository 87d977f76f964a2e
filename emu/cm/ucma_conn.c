/* SPDX-License-Identifier: MIT */
/* The IB CM side of rdma_cm ids: one path, through the device's IB CM
 * engine (emu/cm/ibcm.c). REQ, REP, RTU, REJ, DREQ, DREP (SIDR_REQ and
 * SIDR_REP for UD ids) are MADs on QP1, between two ids of this device
 * too: their frames come back through the port's receive path (the
 * loopback ring, or on any other port the self loop of frames to the
 * device's own MAC, daemon/port_dpdk.c), as the kernel's rxe_loopback
 * hands a local frame to rxe_rcv. This file: listener matching, the
 * listeners' and ids' engine ids, and what the engine reports turned into
 * rdma_cm events (cma_ib_req_handler, cma_ib_handler,
 * cma_sidr_rep_handler). The commands that send are in ucma_conn_cmd.c. */
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

/* the listener of a's destination: a specific address before the wildcard */
static struct ucma_id *ucma_find_listener(struct ucma_dev *u, const struct ucma_id *a)
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
static struct ucma_id *ucma_req_new(struct ucma_dev *u, struct ucma_id *l, struct ucma_ev **ep)
{
	struct ucma_id *n = NULL;
	struct ucma_ev *e = NULL;
	int err = 0;

	if (l->pending < l->backlog && ucma_ev_room(l->file))
		n = ucma_id_new(u, l->file, l->ps, l->qp_type, &err);
	/* the connection is charged to the listener's context and uid: one
	 * user's listeners cannot take the engine's table from the others */
	if (n && emu_ctx_obj_add(l->file->ctx, EMU_OBJ_CM_CONN)) {
		ucma_id_free(u, n);
		n = NULL;
	}
	if (n)
		e = ucma_ev_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		if (n) {
			emu_ctx_obj_del(l->file->ctx, EMU_OBJ_CM_CONN);
			ucma_id_free(u, n);
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

/* CONNECT_REQUEST (req) / CONNECT_RESPONSE parameters: what id took from
 * the peer's REQ or REP, already turned to the receiving side's view
 * (cm_format_req_event, cm_format_rep_event); a REP has no retry count.
 * The private data field goes whole: IB carries no length. */
static void ucma_conn_event_param(struct rdma_ucm_conn_param *cp, const struct ucma_id *id,
				  bool req, const uint8_t *pd, unsigned plen)
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

/* ------------------------------------------------------------------ */
/* what the engine reports                                             */
/* ------------------------------------------------------------------ */

/* the new id's path and addresses, as cma_ib_req_handler makes them from
 * the cma_hdr (addresses, ports) and the REQ's path (GIDs, traffic
 * class, hop limit, MTU) */
static void ucma_req_addrs(struct ucma_dev *u, struct ucma_id *n, const struct wire_cma_hdr *h,
			   const struct emu_ibcm_path *path)
{
	sa_family_t fam = h->ip_version == 4 ? AF_INET : AF_INET6;
	union ibv_gid hsrc; /* aligned copy */

	memcpy(hsrc.raw, h->src.raw, 16);
	ucma_gid_to_addr(&hsrc, fam, &n->dst);
	ucma_set_port(&n->dst, h->src_port);
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
}

/* The fields a REQ and a REP both carry (same names in the engine's two
 * event structs), turned to the receiving side's view: we send from the
 * peer's PSN (seq_num stays our own); cm_format_req_event and
 * cm_format_rep_event swap responder resources and initiator depth. */
#define UCMA_PEER_FIELDS(n, p) do { \
	(n)->rqpn = (p)->remote_qpn; \
	(n)->sq_psn = (p)->starting_psn; \
	(n)->resp_res = (p)->initiator_depth; \
	(n)->init_depth = (p)->responder_resources; \
	(n)->rnr_retry = (p)->rnr_retry_count; \
	(n)->flow_control = (p)->flow_control; \
	(n)->srq = (p)->srq; \
} while (0)

/* the REQ's fields: the shared ones and its ACK timeout and retry count */
static void ucma_req_fields(struct ucma_id *n, const struct emu_ibcm_req_event_param *p)
{
	n->timeout = p->local_ack_timeout;
	n->timeout_set = true;
	n->retry = p->retry_count;
	UCMA_PEER_FIELDS(n, p);
}

/* a REQ or SIDR_REQ for one of our listeners: the new id and its
 * CONNECT_REQUEST, or -errno and the engine rejects it */
static int ucma_req_rcvd(struct ucma_dev *u, struct emu_ibcm_id *c, const struct emu_ibcm_event *ev)
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
	union ibv_gid hdst; /* aligned copy */
	memcpy(hdst.raw, h.dst.raw, 16);
	memset(&probe, 0, sizeof(probe));
	probe.ps = ps;
	ucma_gid_to_addr(&hdst, h.ip_version == 4 ? AF_INET : AF_INET6, &probe.dst);
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
	n->src = probe.dst;
	n->afonly = l->afonly;
	ucma_req_addrs(u, n, &h, path);
	const uint8_t *pd = ev->private_data + WIRE_CMA_HDR_LEN;
	unsigned plen = ev->private_data_len - WIRE_CMA_HDR_LEN;
	if (sidr) {
		if (plen > UCMA_SIDR_REQ_PDATA)
			plen = UCMA_SIDR_REQ_PDATA;
		memcpy(e->resp.param.ud.private_data, pd, plen);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REQ_PDATA;
	} else {
		ucma_req_fields(n, p);
		ucma_conn_event_param(&e->resp.param.conn, n, true, pd, plen);
		e->resp.ece.vendor_id = p->ece.vendor_id;
		e->resp.ece.attr_mod = p->ece.attr_mod;
	}
	ucma_ev_post(u, e);
	return 0;
}

/* The active side takes the REP's fields as sent, seen from the receiving
 * side (cm_rep_handler / cm_format_rep_event: the peer's initiator depth
 * is our responder resources; we send from the peer's PSN), then
 * CONNECT_RESPONSE. */
static void ucma_rep_rcvd(struct ucma_dev *u, struct ucma_id *a, const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_rep_event_param *p = &ev->param.rep_rcvd;

	a->cp = CP_REP_RCVD;
	UCMA_PEER_FIELDS(a, p);
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (!e)
		return;
	ucma_conn_event_param(&e->resp.param.conn, a, false, ev->private_data,
			      ev->private_data_len);
	e->resp.ece.vendor_id = p->ece.vendor_id; /* cm_format_rep_event */
	e->resp.ece.attr_mod = p->ece.attr_mod;
	ucma_ev_post(u, e);
}

/* the SIDR_REP: the UD peer's QPN and Q_Key, or why not */
static void ucma_sidr_rep_rcvd(struct ucma_dev *u, struct ucma_id *a,
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

/* the peer's REJ: REJECTED with its reason (UD: UNREACHABLE) */
static void ucma_rej_rcvd(struct ucma_dev *u, struct ucma_id *id, const struct emu_ibcm_event *ev)
{
	int reason = ev->param.rej_rcvd.reason;
	unsigned plen = !ev->private_data ? 0 :
			ev->private_data_len < UCMA_REJ_PDATA ? ev->private_data_len : UCMA_REJ_PDATA;

	id->cp = CP_DONE;
	if (id->qp_type == IBV_QPT_UD) {
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, reason);
		return;
	}
	ucma_event_pdata(u, id, RDMA_CM_EVENT_REJECTED, reason, ev->private_data, plen,
			 UCMA_REJ_PDATA);
}

/* the peer's DREQ */
static void ucma_dreq_rcvd(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->state != S_CONNECT)
		return;
	id->state = S_DISCONNECT;
	id->cp = CP_DREQ_RCVD;
	ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, 0);
}

/* the engine's DREP (or its DREQ timing out): the originator is
 * disconnected; TIMEWAIT_EXIT comes from the engine */
static void ucma_drep_rcvd(struct ucma_dev *u, struct ucma_id *id, int status)
{
	id->cp = CP_TIMEWAIT;
	if (id->state == S_CONNECT) {
		id->state = S_DISCONNECT;
		ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, status);
	}
}

/* the request's end of the exchange is done: the rest are answers */
static void ucma_conn_done(struct ucma_dev *u, struct ucma_id *id, uint32_t event, int status)
{
	id->cp = CP_DONE;
	ucma_event(u, id, event, status);
}

/* A request the application never fetched, reclaimed by the engine (not
 * answered within its bound): it goes with its CONNECT_REQUEST, as
 * ucma_destroy.c destroys a request (all a hidden request has: no
 * events of its own, no joins, no requests of its own). */
static void ucma_req_expired(struct ucma_dev *u, struct ucma_id *n)
{
	ucma_ev_free(ucma_ev_take(n->file, NULL, n, NULL));
	if (n->listen) {
		n->listen->pending--;
		n->listen = NULL;
	}
	ucma_cm_destroy(u, n);
	ucma_id_free(u, n);
}

static int ucma_handler(struct emu_ibcm_id *c, const struct emu_ibcm_event *ev)
{
	if (ev->event == EMU_IBCM_REQ_RECEIVED || ev->event == EMU_IBCM_SIDR_REQ_RECEIVED)
		return ucma_req_rcvd(c->context, c, ev); /* a listener's: context = u */
	struct ucma_id *id = c->context;
	if (!id)
		return 0;
	struct ucma_dev *u = ucma_dev(emu_ibcm_dev(c->cm), false);
	switch (ev->event) {
	case EMU_IBCM_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_rep_rcvd(u, id, ev);
		break;
	case EMU_IBCM_RTU_RECEIVED:
	case EMU_IBCM_USER_ESTABLISHED:
		if (id->cp == CP_REP_SENT) {
			id->cp = CP_ESTABLISHED;
			ucma_event(u, id, RDMA_CM_EVENT_ESTABLISHED, 0);
		}
		break;
	case EMU_IBCM_REJ_RECEIVED:
		ucma_rej_rcvd(u, id, ev);
		break;
	case EMU_IBCM_REQ_ERROR:
	case EMU_IBCM_REP_ERROR:
	case EMU_IBCM_SIDR_REQ_ERROR:
		/* a request the engine reclaimed before the application even
		 * fetched it goes (its engine id with it: a handler may
		 * destroy its own id in IDLE); else UNREACHABLE, as a REP
		 * that ran out of retries */
		if (id->hidden)
			ucma_req_expired(u, id);
		else
			ucma_conn_done(u, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case EMU_IBCM_DREQ_RECEIVED:
		ucma_dreq_rcvd(u, id);
		break;
	case EMU_IBCM_DREP_RECEIVED:
		ucma_drep_rcvd(u, id, 0);
		break;
	case EMU_IBCM_DREQ_ERROR:
		ucma_drep_rcvd(u, id, -ETIMEDOUT);
		break;
	case EMU_IBCM_TIMEWAIT_EXIT:
		ucma_conn_done(u, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case EMU_IBCM_SIDR_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_sidr_rep_rcvd(u, id, ev);
		break;
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* engine ids                                                          */
/* ------------------------------------------------------------------ */

/* The device's engine, or NULL (it failed to attach: no rdma_cm
 * connection can be made, -ENODEV). u->cm remembers it: the pointers
 * of our ids belong to it. */
struct emu_ibcm *ucma_engine(struct ucma_dev *u)
{
	struct emu_ibcm *cm = emu_ibcm_get(u->d);

	if (cm)
		u->cm = cm;
	return cm;
}

/* the engine our ids' pointers belong to is still there (it is detached
 * when the engine loop ends, before the clients are closed) */
static bool ucma_engine_live(struct ucma_dev *u)
{
	return u->cm && emu_ibcm_get(u->d) == u->cm;
}

/* an engine id for active id a (its CONNECT), charged to a's context
 * and uid (cm_conn), or NULL */
struct emu_ibcm_id *ucma_cm_new(struct ucma_dev *u, struct ucma_id *a)
{
	struct emu_ibcm *cm = ucma_engine(u);

	if (!cm || emu_ctx_obj_add(a->file->ctx, EMU_OBJ_CM_CONN))
		return NULL;
	struct emu_ibcm_id *c = emu_ibcm_create_id(cm, ucma_handler, a);
	if (!c)
		emu_ctx_obj_del(a->file->ctx, EMU_OBJ_CM_CONN);
	return c;
}

/* an engine id that never became a's (its send failed) */
void ucma_cm_drop(struct ucma_id *a, struct emu_ibcm_id *c)
{
	emu_ibcm_destroy_id(c);
	emu_ctx_obj_del(a->file->ctx, EMU_OBJ_CM_CONN);
}

/* a listener's service on the wire (shared per port space and port): 0,
 * or -errno and the id does not listen */
int ucma_cm_listen(struct ucma_dev *u, struct ucma_id *l)
{
	struct emu_ibcm *cm = ucma_engine(u);
	uint16_t port = ucma_port(&l->src);

	if (!cm)
		return -ENODEV;
	int rc = emu_ctx_obj_add(l->file->ctx, EMU_OBJ_CM_LISTEN);
	if (rc)
		return rc;
	for (struct ucma_wl *w = u->wls; w; w = w->next)
		if (w->ps == l->ps && w->port == port) {
			w->refs++;
			l->wl = w;
			return 0;
		}
	struct ucma_wl *w = calloc(1, sizeof(*w));
	struct emu_ibcm_id *c = w ? emu_ibcm_create_id(cm, ucma_handler, u) : NULL;
	rc = c ? emu_ibcm_listen(c, (uint64_t)l->ps << 16 | port, 0, UCMA_MAX_BACKLOG) : -ENOMEM;
	if (rc) {
		if (c)
			emu_ibcm_destroy_id(c);
		free(w);
		emu_ctx_obj_del(l->file->ctx, EMU_OBJ_CM_LISTEN);
		return rc;
	}
	w->ps = l->ps;
	w->port = port;
	w->refs = 1;
	w->cm = c;
	w->next = u->wls;
	u->wls = w;
	l->wl = w;
	return 0;
}

static void ucma_cm_unlisten(struct ucma_dev *u, struct ucma_id *l)
{
	struct ucma_wl *w = l->wl;

	l->wl = NULL;
	if (!w)
		return;
	emu_ctx_obj_del(l->file->ctx, EMU_OBJ_CM_LISTEN);
	if (--w->refs)
		return;
	for (struct ucma_wl **pp = &u->wls; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (ucma_engine_live(u))
		emu_ibcm_destroy_id(w->cm);
	free(w);
}

/* the id goes: the engine sends what ib_destroy_cm_id sends (REJ to a
 * pending request, DREQ on a connection, DREP to a received DREQ) */
void ucma_cm_destroy(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->wl)
		ucma_cm_unlisten(u, id);
	if (id->cm) {
		/* after the engine's detach its ids are gone: touch nothing */
		if (ucma_engine_live(u)) {
			id->cm->context = NULL;
			emu_ibcm_destroy_id(id->cm);
		}
		id->cm = NULL;
		emu_ctx_obj_del(id->file->ctx, EMU_OBJ_CM_CONN);
	}
}
