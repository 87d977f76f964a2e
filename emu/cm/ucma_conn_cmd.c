/* SPDX-License-Identifier: MIT */
/* The connection commands of rdma_ucm: CONNECT, LISTEN, ACCEPT, REJECT,
 * DISCONNECT, INIT_QP_ATTR (what rdma_init_qp_attr returns) and NOTIFY. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"
#include <uroce/flush.h>

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
	if (ucma_wire_dst(k->u, id)) {
		rc = ucma_wire_req(k->u, id, &q.conn_param);
		if (rc)
			id->state = S_ROUTE_RESOLVED;
		return rc;
	}
	ucma_send_req(k->u, id, &q.conn_param);
	return 0;
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
	id->backlog = backlog;
	id->state = S_LISTEN;
	ucma_wire_listen(k->u, id);
	return 0;
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
	if (q.conn_param.valid) {
		if (id->cp == CP_REP_RCVD)
			return -EINVAL; /* ib_send_cm_rep in the wrong state */
		if (q.conn_param.rnr_retry_count > 7) /* cma_accept_ib: 3 bits */
			q.conn_param.rnr_retry_count = 7;
		uint64_t old = id->uid;
		id->uid = q.uid; /* before the REP, as ucma_accept */
		rc = ucma_send_rep(k->u, id, &q.conn_param);
		if (rc)
			id->uid = old;
		return rc;
	}
	if (id->qp_type == IBV_QPT_UD)
		return ucma_send_rep(k->u, id, NULL);
	return ucma_send_rtu(k->u, id);
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
	if (id->cp != CP_REQ_RCVD && id->cp != CP_REP_RCVD && id->cp != CP_REP_SENT &&
	    id->cp != CP_REQ_SENT)
		return -EINVAL;
	if (id->cm && ud) {
		struct emu_ibcm_sidr_rep_param r = {
			.status = WIRE_CM_SIDR_REJECT, .private_data = q.private_data,
			.private_data_len = q.private_data_len,
		};
		int rc = emu_ibcm_send_sidr_rep(id->cm, &r);
		if (!rc)
			id->cp = CP_DONE;
		return rc;
	}
	if (id->cm) {
		int rc = emu_ibcm_send_rej(id->cm, (enum wire_cm_rej_reason)q.reason, NULL, 0,
					   q.private_data, q.private_data_len);
		if (!rc)
			id->cp = CP_DONE;
		return rc;
	}
	struct ucma_id *p = id->peer;
	id->peer = NULL;
	id->cp = CP_DONE;
	if (p)
		ucma_rej_rcvd(k->u, p, ud ? SIDR_REJECT : q.reason, q.private_data,
			      q.private_data_len);
	return 0;
}

int ucma_cmd_disconnect(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_disconnect, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);
	return rc ? rc : ucma_disconnect(k->u, id);
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
	if (id->cm)
		return emu_ibcm_notify(id->cm, IBV_EVENT_COMM_EST);
	if (id->cp == CP_ESTABLISHED)
		return -EISCONN;
	if (id->cp != CP_REP_SENT)
		return -EINVAL;
	ucma_establish(k->u, id);
	return 0;
}
