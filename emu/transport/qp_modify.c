/* SPDX-License-Identifier: MIT */
/* QP state machine (ibv_modify_qp / ibv_query_qp): the IBTA transition
 * table with required and optional attribute masks per QP type (the same
 * table as the kernel's ib_modify_qp_is_ok), value checks, and the transport
 * effects of each transition. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xport_int.h"

int xp_qp_alloc(struct emu_qp *qp);

/* XI / XT: XRC INI (send side) and TGT (receive side) QPs, whose columns
 * are the kernel's IB_QPT_XRC_INI / IB_QPT_XRC_TGT */
enum { T_UD, T_UC, T_RC, T_XI, T_XT, T_N };

struct qp_trans {
	bool valid;
	int req[T_N];
	int opt[T_N];
};

#define S(x) IBV_QPS_##x
#define M(x) IBV_QP_##x

/* what RESET -> INIT requires and INIT -> INIT may change */
#define INIT_ATTRS { \
	[T_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY), \
	[T_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), \
	[T_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), \
	[T_XI] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), \
	[T_XT] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), \
}

/* the optional attributes of every transition to RTS (from RTR, RTS and
 * SQD: the same in the IBTA table) */
#define TO_RTS_OPT { \
	[T_UD] = M(CUR_STATE) | M(QKEY), \
	[T_UC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE), \
	[T_RC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | \
		 M(PATH_MIG_STATE), \
	[T_XI] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE), \
	[T_XT] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | \
		 M(PATH_MIG_STATE), \
}

static const struct qp_trans qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.req = INIT_ATTRS,
		},
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.opt = INIT_ATTRS,
		},
		[S(RTR)] = {
			.valid = true,
			.req = {
				[T_UC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
				[T_RC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
				[T_XI] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
				[T_XT] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
			},
			.opt = {
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_UC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[T_RC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[T_XI] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[T_XT] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
			},
		},
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.req = {
				[T_UD] = M(SQ_PSN),
				[T_UC] = M(SQ_PSN),
				[T_RC] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					 M(MAX_QP_RD_ATOMIC),
				[T_XI] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					 M(MAX_QP_RD_ATOMIC),
				[T_XT] = M(TIMEOUT) | M(SQ_PSN),
			},
			.opt = TO_RTS_OPT,
		},
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = TO_RTS_OPT,
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_UD] = M(EN_SQD_ASYNC_NOTIFY),
				[T_UC] = M(EN_SQD_ASYNC_NOTIFY),
				[T_RC] = M(EN_SQD_ASYNC_NOTIFY),
				[T_XI] = M(EN_SQD_ASYNC_NOTIFY),
				[T_XT] = M(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = TO_RTS_OPT,
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_UC] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					 M(PATH_MIG_STATE),
				[T_RC] = M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
					 M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
					 M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(MIN_RNR_TIMER) |
					 M(PATH_MIG_STATE),
				[T_XI] = M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
					 M(MAX_QP_RD_ATOMIC) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					 M(PKEY_INDEX) | M(PATH_MIG_STATE),
				[T_XT] = M(PORT) | M(AV) | M(TIMEOUT) | M(MAX_DEST_RD_ATOMIC) |
					 M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					 M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
			},
		},
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_UC] = M(CUR_STATE) | M(ACCESS_FLAGS),
			},
		},
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
	},
};

static int qp_tidx(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UD:
		return T_UD;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_XRC_SEND:
		return T_XI;
	case IBV_QPT_XRC_RECV:
		return T_XT;
	default:
		return -1;
	}
}

/* Is (cur -> next, mask) allowed for type? Exposed for tests. */
bool emu_qp_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			 enum ibv_qp_type type, int mask);
bool emu_qp_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			 enum ibv_qp_type type, int mask)
{
	int t = qp_tidx(type);
	const struct qp_trans *tr;
	int req, opt;

	if (t < 0 || cur > IBV_QPS_ERR || next > IBV_QPS_ERR)
		return false;
	tr = &qp_table[cur][next];
	if (!tr->valid)
		return false;
	req = tr->req[t];
	opt = tr->opt[t];
	if ((mask & req) != req)
		return false;
	if (mask & ~(req | opt | IBV_QP_STATE))
		return false;
	return true;
}

static int check_values(struct emu_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct emu_dev *d = qp->dev;

	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > d->active_mtu))
		return -EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > EMU_XPORT_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > EMU_XPORT_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	/* ON_DEMAND means nothing for a QP; mlx5 and rxe ignore it there and
	 * rdma-core's test_odp passes its MR flags as the QP's */
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				    IBV_ACCESS_MW_BIND | UROCE_ACCESS_FLUSH | IBV_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > WIRE_QPN_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_AV) &&
	    (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= d->gid_count ||
	     (a->ah_attr.port_num && a->ah_attr.port_num != 1)))
		return -EINVAL; /* RoCE addresses by GID: a GRH is mandatory */
	if ((mask & IBV_QP_ALT_PATH) && a->alt_port_num > 1)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state != IBV_MIG_MIGRATED &&
	    a->path_mig_state != IBV_MIG_REARM && a->path_mig_state != IBV_MIG_ARMED)
		return -EINVAL;
	return 0;
}

static void to_reset(struct emu_qp *qp)
{
	struct emu_xport_qp *x = qp->x;
	uint32_t prod;

	/* Everything posted is discarded without completions (IBTA 10.3.1). */
	xp_act_del(qp);
	xp_req_reset(qp);
	xp_resp_reset(qp);
	if (x->sq_copy) {
		prod = emu_ring_prod(&qp->sq);
		if (prod - x->sq_comp > x->sq_entries)
			prod = x->sq_fetch;
		x->sq_fetch = x->sq_req = x->sq_comp = prod;
		x->sq_req_pkt = 0;
		emu_ring_publish(&qp->sq, prod);
	}
	if (!qp->srq && qp->rq.entries && x->rwqe) {
		/* bounded: the application may keep posting while we drain */
		for (uint32_t left = qp->rq.entries + 1; left; left--)
			if (emu_recv_take(qp, x->rwqe) == 0)
				break;
	}
	x->rwqe_valid = 0;
	if (!qp->srq && qp->rq.hdr) /* out of ERR: receives need no doorbell */
		__atomic_fetch_and(&qp->rq.hdr->flags, ~UROCE_RING_F_KICK, __ATOMIC_RELAXED);
	memset(&x->path, 0, sizeof(x->path));
	xp_cnt_retire(qp);
	memset(&x->cnt, 0, sizeof(x->cnt));
	xp_rp_reset(qp);
}

/* Validate a modify and allocate what it needs (path, responder
 * resources, the transport state at INIT); nothing visible changes. */
static int modify_prepare(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask,
			  enum ibv_qp_state cur, enum ibv_qp_state next,
			  struct emu_xport_path *path, struct emu_xport_res **res)
{
	struct emu_xport_qp *x = qp->x;
	int r;

	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur &&
	    !(cur == IBV_QPS_SQE && attr->cur_qp_state == IBV_QPS_RTS))
		return -EINVAL;
	if (!emu_qp_modify_is_ok(cur, next, qp->type, mask))
		return -EINVAL;
	r = check_values(qp, attr, mask);
	if (r)
		return r;
	memset(path, 0, sizeof(*path));
	if (mask & IBV_QP_AV) {
		struct emu_av av;

		if (emu_av_resolve(qp->dev, &attr->ah_attr, &av))
			return -EINVAL;
		xp_path_from_av(path, &av, qp->qpn);
	}
	if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
		r = xp_qp_alloc(qp);
		if (r)
			return r;
	}
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && xp_rc_like(qp)) {
		/* one resource even for 0: the slot is never used then (such
		 * requests are NAKed), but keeps the responder branch-free */
		uint32_t n = attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic : 1;

		if (n != x->res_n || !x->res) {
			*res = calloc(n, sizeof(**res));
			if (!*res)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Commit: the attributes first (can no longer fail). */
static void modify_attrs(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask,
			 const struct emu_xport_path *path)
{
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		qp->x->path = *path;
	}
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn & WIRE_PSN_MASK;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn & WIRE_PSN_MASK;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		qp->attr.alt_ah_attr = attr->alt_ah_attr;
		qp->attr.alt_pkey_index = attr->alt_pkey_index;
		qp->attr.alt_port_num = attr->alt_port_num;
		qp->attr.alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;
}

/* ... then the transport state they set ... */
static void modify_xport(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask,
			 struct emu_xport_res *res)
{
	struct emu_xport_qp *x = qp->x;

	if (qp->type == IBV_QPT_UD)
		qp->attr.path_mtu = qp->dev->active_mtu;
	if (mask & IBV_QP_RQ_PSN)
		x->epsn = qp->attr.rq_psn;
	if (res) {
		xp_resp_release(qp);
		free(x->res);
		x->res = res;
		x->res_n = attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic : 1;
		x->res_next = 0;
	}
	if (mask & (IBV_QP_RETRY_CNT))
		x->retry_left = qp->attr.retry_cnt;
	if (mask & (IBV_QP_RNR_RETRY))
		x->rnr_left = qp->attr.rnr_retry;
	if (mask & IBV_QP_SQ_PSN) {
		x->sq_psn = x->sq_psn_max = x->acked_psn = x->sq_psn_hw = qp->attr.sq_psn;
		xp_infl_sync(qp);
	}
}

/* ... then the transition's effects. */
static void modify_transition(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask,
			      enum ibv_qp_state cur, enum ibv_qp_state next)
{
	struct emu_xport_qp *x = qp->x;

	qp->attr.qp_state = next;
	qp->attr.cur_qp_state = next;
	if (next == IBV_QPS_RTS && (cur == IBV_QPS_SQD || cur == IBV_QPS_SQE))
		qp->attr.sq_draining = 0;
	switch (next) {
	case IBV_QPS_RESET:
		to_reset(qp);
		break;
	case IBV_QPS_ERR:
		if (cur != IBV_QPS_ERR) {
			qp->attr.qp_state = cur; /* let xp_qp_error do the move */
			xp_qp_error(qp, 0);
		}
		break;
	case IBV_QPS_SQD:
		if (cur == IBV_QPS_RTS) {
			x->sq_drain_evt = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
					  attr->en_sqd_async_notify;
			qp->attr.sq_draining = 1;
			xp_comp_progress(qp);
		}
		break;
	case IBV_QPS_RTS:
		/* WRs posted before RTS, or held in SQD/SQE, go now */
		xp_req_kick(qp);
		emu_tx_flush(qp->dev);
		break;
	default:
		break;
	}
}

int emu_qp_modify(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur = qp->attr.qp_state;
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	struct emu_xport_path path;
	struct emu_xport_res *res = NULL;
	int r;

	r = modify_prepare(qp, attr, mask, cur, next, &path, &res);
	if (r)
		return r;
	modify_attrs(qp, attr, mask, &path);
	modify_xport(qp, attr, mask, res);
	modify_transition(qp, attr, mask, cur, next);
	return 0;
}

int emu_qp_query(struct emu_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)mask; /* every field is returned, as providers do */
	*attr = qp->attr;
	attr->cur_qp_state = qp->attr.qp_state;
	attr->cap = qp->cap;
	if (qp->attr.qp_state == IBV_QPS_SQD) {
		const struct emu_xport_qp *x = qp->x;

		attr->sq_draining = x->sq_comp != x->sq_req || x->sq_req_pkt;
	}
	return 0;
}
