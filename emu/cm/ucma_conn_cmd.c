/* SPDX-License-Identifier: MIT */
/* The connection commands of rdma_ucm: CONNECT (the REQ or SIDR_REQ),
 * LISTEN, ACCEPT (REP, RTU, SIDR_REP), REJECT, DISCONNECT (DREQ, DREP),
 * INIT_QP_ATTR (what rdma_init_qp_attr returns) and NOTIFY, each sent
 * through the device's IB CM engine (ucma_conn.c has what comes back). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"
#include <uroce/flush.h>

static void ucma_path(const struct ucma_id *a, struct emu_ibcm_path *p)
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
static int ucma_send_sidr_req(struct ucma_id *a, struct emu_ibcm_id *c,
			      const struct rdma_ucm_conn_param *q, const uint8_t *pd)
{
	struct emu_ibcm_sidr_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.timeout_ms = emu_ibcm_time_ms(UCMA_CM_RESPONSE_TIMEOUT),
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.max_cm_retries = UCMA_MAX_CM_RETRIES,
	};
	ucma_path(a, &r.path);
	return emu_ibcm_send_sidr_req(c, &r);
}

/* RC/UC: the REQ, as cma_connect_ib */
static int ucma_send_req_rc(struct ucma_id *a, struct emu_ibcm_id *c,
			    const struct rdma_ucm_conn_param *q, const uint8_t *pd)
{
	struct emu_ibcm_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.qp_num = q->qp_num,
		.qp_type = a->qp_type,
		.starting_psn = a->seq_num,
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.responder_resources = a->resp_res,
		.initiator_depth = a->init_depth,
		.remote_cm_response_timeout = UCMA_CM_RESPONSE_TIMEOUT,
		.local_cm_response_timeout = UCMA_CM_RESPONSE_TIMEOUT,
		.flow_control = q->flow_control,
		.retry_count = a->retry,
		.rnr_retry_count = a->rnr_retry,
		.max_cm_retries = UCMA_MAX_CM_RETRIES,
		.srq = q->srq,
		.ece = { a->ece.vendor_id, a->ece.attr_mod },
	};
	ucma_path(a, &r.primary_path);
	return emu_ibcm_send_req(c, &r);
}

/* the REQ (UD: SIDR_REQ) of active id a, with the cma_hdr before the
 * application's private data: addresses and ports, which the passive
 * side's listener is found by */
static int ucma_send_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q)
{
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
	if (!ucma_engine(u))
		return -ENODEV;
	struct emu_ibcm_id *c = ucma_cm_new(u, a);
	if (!c)
		return -ENOMEM;
	int rc = a->qp_type == IBV_QPT_UD ? ucma_send_sidr_req(a, c, q, pd) :
					     ucma_send_req_rc(a, c, q, pd);
	if (rc) {
		ucma_cm_drop(a, c);
		return rc;
	}
	a->cm = c;
	a->cp = CP_REQ_SENT;
	return 0;
}

int ucma_cmd_connect(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_connect, q, offsetof(struct rdma_ucm_connect, ece));
	struct ucma_id *id;

	if (!q.conn_param.valid)
		return -EINVAL;
	int rc = ucma_get_dev(k, q.id, &id);
	if (rc)
		return rc;
	if (id->state != S_ROUTE_RESOLVED)
		return -EINVAL;
	unsigned max = id->qp_type == IBV_QPT_UD ? UCMA_SIDR_REQ_PDATA : UCMA_REQ_PDATA;
	if (q.conn_param.private_data_len > max)
		return -EINVAL;
	id->state = S_CONNECT;
	id->resp_res = q.conn_param.responder_resources;
	id->init_depth = q.conn_param.initiator_depth;
	/* cma_connect_ib: the REQ carries 3-bit counts, clamped */
	if (q.conn_param.retry_count > 7)
		q.conn_param.retry_count = 7;
	if (q.conn_param.rnr_retry_count > 7)
		q.conn_param.rnr_retry_count = 7;
	id->retry = q.conn_param.retry_count;
	id->rnr_retry = q.conn_param.rnr_retry_count;
	id->srq = q.conn_param.srq;
	id->flow_control = q.conn_param.flow_control;
	id->ece = q.ece; /* zero when the command has no ece (rdma_connect_ece) */
	rc = ucma_send_req(k->u, id, &q.conn_param);
	if (rc)
		id->state = S_ROUTE_RESOLVED;
	return rc;
}

int ucma_cmd_listen(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_listen, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	uint32_t backlog = (int32_t)q.backlog > 0 && q.backlog < UCMA_MAX_BACKLOG ?
			   q.backlog : UCMA_MAX_BACKLOG;
	if (id->state == S_IDLE) {
		struct sockaddr_storage any;
		memset(&any, 0, sizeof(any));
		any.ss_family = AF_INET;
		rc = ucma_bind(k->u, id, &any);
		if (rc)
			return rc;
	}
	if (id->state != S_ADDR_BOUND)
		return -EINVAL;
	if (id->reuseaddr) {
		/* rdma_listen: a listener takes its port for itself, and is no
		 * longer reusable */
		rc = ucma_check_port(k->u, id, ucma_port(&id->src), false);
		if (rc)
			return rc;
		id->reuseaddr = false;
	}
	rc = ucma_cm_listen(k->u, id);
	if (rc)
		return rc;
	id->backlog = backlog;
	id->state = S_LISTEN;
	return 0;
}

/* the passive side accepts a SIDR_REQ: its QPN and Q_Key (cma_send_sidr_rep) */
static int ucma_send_sidr_rep(struct ucma_id *n, const struct rdma_ucm_conn_param *q)
{
	if (q && q->private_data_len > UCMA_SIDR_REP_PDATA)
		return -EINVAL;
	if (n->cp != CP_REQ_RCVD || !n->cm)
		return -EINVAL;
	struct emu_ibcm_sidr_rep_param r = {
		.qp_num = q ? q->qp_num : 0, .qkey = q && q->qkey ? q->qkey : UCMA_UDP_QKEY,
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

/* the passive side accepts a REQ: the REP (cma_accept_ib) */
static int ucma_send_rep(struct ucma_id *n, const struct rdma_ucm_conn_param *q)
{
	if (n->cp != CP_REQ_RCVD || !n->cm || q->private_data_len > UCMA_REP_PDATA)
		return -EINVAL;
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
	n->resp_res = q->responder_resources;
	n->init_depth = q->initiator_depth;
	n->cp = CP_REP_SENT;
	return 0;
}

/* the active side's ACCEPT after its CONNECT_RESPONSE: the RTU */
static int ucma_send_rtu(struct ucma_id *a)
{
	if (a->cp != CP_REP_RCVD || !a->cm)
		return -EINVAL;
	int rc = emu_ibcm_send_rtu(a->cm, NULL, 0);
	if (!rc)
		a->cp = CP_ESTABLISHED;
	return rc;
}

int ucma_cmd_accept(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_accept, q, offsetof(struct rdma_ucm_accept, ece));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);

	if (rc)
		return rc;
	if (id->state != S_CONNECT)
		return -EINVAL;
	id->ece = q.ece; /* __rdma_accept_ece: the REP / SIDR_REP carries it */
	bool ud = id->qp_type == IBV_QPT_UD;
	if (!q.conn_param.valid)
		return ud ? ucma_send_sidr_rep(id, NULL) : ucma_send_rtu(id);
	if (id->cp == CP_REP_RCVD)
		return -EINVAL; /* ib_send_cm_rep in the wrong state */
	if (q.conn_param.rnr_retry_count > 7) /* cma_accept_ib: 3 bits */
		q.conn_param.rnr_retry_count = 7;
	uint64_t old = id->uid;
	id->uid = q.uid; /* before the REP, as ucma_accept */
	rc = ud ? ucma_send_sidr_rep(id, &q.conn_param) : ucma_send_rep(id, &q.conn_param);
	if (rc)
		id->uid = old;
	return rc;
}

int ucma_cmd_reject(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_reject, q, offsetof(struct rdma_ucm_reject, private_data));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);

	if (rc)
		return rc;
	if (!q.reason)
		q.reason = REJ_CONSUMER_DEFINED;
	if (q.reason != REJ_CONSUMER_DEFINED && q.reason != REJ_VENDOR_OPTION_NOT_SUPPORTED)
		return -EINVAL;
	bool ud = id->qp_type == IBV_QPT_UD;
	if (q.private_data_len > (ud ? UCMA_SIDR_REP_PDATA : UCMA_REJ_PDATA))
		return -EINVAL;
	if ((id->cp != CP_REQ_RCVD && id->cp != CP_REP_RCVD && id->cp != CP_REP_SENT &&
	     id->cp != CP_REQ_SENT) || !id->cm)
		return -EINVAL;
	if (ud) {
		struct emu_ibcm_sidr_rep_param r = {
			.status = WIRE_CM_SIDR_REJECT, .private_data = q.private_data,
			.private_data_len = q.private_data_len,
		};
		rc = emu_ibcm_send_sidr_rep(id->cm, &r);
	} else {
		rc = emu_ibcm_send_rej(id->cm, (enum wire_cm_rej_reason)q.reason, NULL, 0,
				       q.private_data, q.private_data_len);
	}
	if (!rc)
		id->cp = CP_DONE;
	return rc;
}

/* rdma_disconnect: a DREQ, or else a DREP; 0 either way (the kernel's
 * cma: neither can go in most states, and says 0 too) */
int ucma_cmd_disconnect(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_disconnect, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);

	if (rc)
		return rc;
	if (!id->cm)
		return -EINVAL;
	if (id->cp == CP_DREQ_RCVD) {
		if (!emu_ibcm_send_drep(id->cm, NULL, 0))
			id->cp = CP_TIMEWAIT;
	} else if (!emu_ibcm_send_dreq(id->cm, NULL, 0)) {
		id->cp = CP_DREQ_SENT;
	}
	return 0;
}

int ucma_cmd_init_qp_attr(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_init_qp_attr, q, sizeof(q));
	struct ib_uverbs_qp_attr r;
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	if (q.qp_state > IBV_QPS_ERR)
		return -EINVAL;
	int rc = ucma_get_dev(k, q.id, &id);
	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	r.qp_state = q.qp_state;
	r.port_num = 1;
	r.pkey_index = 0;
	if (id->cp == CP_NONE || id->qp_type == IBV_QPT_UD) {
		/* cma_ib_init_qp_attr */
		r.qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			r.qkey = id->qkey ? id->qkey : UCMA_UDP_QKEY;
			r.qp_attr_mask |= IBV_QP_QKEY;
		} else {
			r.qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
	} else {
		/* ib_cm_init_qp_attr */
		bool rc_qp = id->qp_type == IBV_QPT_RC;
		bool ok;
		switch (q.qp_state) {
		case IBV_QPS_INIT:
			ok = id->cp >= CP_REQ_SENT && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
					 IBV_QP_PORT;
			r.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			/* and FLUSH of both types: the device has them (Linux
			 * 6.2+ cm_init_qp_init_attr) */
			if (id->resp_res)
				r.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
						     UROCE_ACCESS_FLUSH;
			break;
		case IBV_QPS_RTR:
			ok = id->cp >= CP_REQ_RCVD && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
			ucma_ah_attr(id, &r.ah_attr);
			r.path_mtu = id->path_mtu;
			r.dest_qp_num = id->rqpn;
			if (rc_qp) {
				r.qp_attr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
				r.max_dest_rd_atomic = id->resp_res;
				r.min_rnr_timer = 0;
			}
			break;
		case IBV_QPS_RTS:
			ok = id->cp >= CP_REQ_RCVD && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
			r.sq_psn = id->sq_psn;
			if (rc_qp) {
				r.qp_attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						  IBV_QP_MAX_QP_RD_ATOMIC;
				r.timeout = id->timeout_set ? id->timeout : UCMA_DEF_ACK_TIMEOUT;
				r.retry_cnt = id->retry;
				r.rnr_retry = id->rnr_retry;
				r.max_rd_atomic = id->init_depth;
			}
			break;
		default:
			return -EINVAL;
		}
	}
	if (q.qp_state == IBV_QPS_RTR)
		r.rq_psn = id->seq_num; /* rdma_init_qp_attr */
	ucma_out(k, &r, sizeof(r));
	return 0;
}

int ucma_cmd_notify(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_notify, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	if (!id->has_dev || id->state != S_CONNECT)
		return -EINVAL;
	if (q.event != IBV_EVENT_COMM_EST)
		return -EINVAL;
	if (!id->cm)
		return -EINVAL;
	return emu_ibcm_notify(id->cm, IBV_EVENT_COMM_EST);
}
