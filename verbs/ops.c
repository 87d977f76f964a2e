/* SPDX-License-Identifier: MIT */
/* The context's ops tables. libibverbs' inline wrappers call through them
 * without NULL checks, so every slot is filled; what uroce does not do
 * answers EOPNOTSUPP. */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "urv.h"

static void *nop_compat(void) { errno = EOPNOTSUPP; return NULL; }
static int nop_compat_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{ return urv_query_device(c, a); }
static int nop_compat_query_port(struct ibv_context *c, uint8_t p,
				 struct _compat_ibv_port_attr *a)
{
	return urv_query_port(c, p, (struct ibv_port_attr *)(void *)a,
			      offsetof(struct ibv_port_attr, port_cap_flags2));
}

static struct ibv_mr *no_alloc_null_mr(struct ibv_pd *pd)
{ (void)pd; errno = EOPNOTSUPP; return NULL; }
static int no_read_counters(struct ibv_counters *c, uint64_t *v, uint32_t n,
			    uint32_t f)
{ (void)c; (void)v; (void)n; (void)f; return EOPNOTSUPP; }
static int no_attach_counters(struct ibv_counters *c,
			      struct ibv_counter_attach_attr *a, struct ibv_flow *f)
{ (void)c; (void)a; (void)f; return EOPNOTSUPP; }
static struct ibv_counters *no_create_counters(struct ibv_context *c,
					       struct ibv_counters_init_attr *a)
{ (void)c; (void)a; errno = EOPNOTSUPP; return NULL; }
static int no_destroy_counters(struct ibv_counters *c)
{ (void)c; return EOPNOTSUPP; }
static int no_modify_esp(struct ibv_flow_action *a, struct ibv_flow_action_esp_attr *e)
{ (void)a; (void)e; return EOPNOTSUPP; }
static int no_destroy_action(struct ibv_flow_action *a) { (void)a; return EOPNOTSUPP; }
static struct ibv_flow_action *no_create_esp(struct ibv_context *c,
					     struct ibv_flow_action_esp_attr *a)
{ (void)c; (void)a; errno = EOPNOTSUPP; return NULL; }
static int no_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *a)
{ (void)qp; (void)a; return EOPNOTSUPP; }
static int no_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
{ (void)cq; (void)a; return EOPNOTSUPP; }
static int no_post_srq_ops(struct ibv_srq *s, struct ibv_ops_wr *o, struct ibv_ops_wr **b)
{ (void)s; *b = o; return EOPNOTSUPP; }
static int no_destroy_rwq(struct ibv_rwq_ind_table *t) { (void)t; return EOPNOTSUPP; }
static struct ibv_rwq_ind_table *no_create_rwq(struct ibv_context *c,
					       struct ibv_rwq_ind_table_init_attr *a)
{ (void)c; (void)a; errno = EOPNOTSUPP; return NULL; }
static int no_destroy_wq(struct ibv_wq *wq) { (void)wq; return EOPNOTSUPP; }
static int no_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a)
{ (void)wq; (void)a; return EOPNOTSUPP; }
static struct ibv_wq *no_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *a)
{ (void)c; (void)a; errno = EOPNOTSUPP; return NULL; }
static int no_destroy_flow(struct ibv_flow *f) { (void)f; return EOPNOTSUPP; }
static struct ibv_flow *no_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{ (void)qp; (void)a; errno = EOPNOTSUPP; return NULL; }
static void no_placeholder(void) { }

static int query_rt_values(struct ibv_context *c, struct ibv_values_ex *v)
{
	struct timespec ts;

	(void)c;
	if (v->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v->raw_clock = ts;    /* CQE timestamps are CLOCK_MONOTONIC ns */
	v->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

void urv_set_ops(struct urv_context *c)
{
	struct verbs_context *v = &c->vctx;
	struct ibv_context_ops *o = &v->context.ops;

	o->_compat_query_device = nop_compat_query_device;
	o->_compat_query_port = nop_compat_query_port;
	o->_compat_alloc_pd = nop_compat;
	o->_compat_dealloc_pd = nop_compat;
	o->_compat_reg_mr = nop_compat;
	o->_compat_rereg_mr = nop_compat;
	o->_compat_dereg_mr = nop_compat;
	o->alloc_mw = urv_alloc_mw;
	o->bind_mw = urv_bind_mw;
	o->dealloc_mw = urv_dealloc_mw;
	o->_compat_create_cq = nop_compat;
	o->poll_cq = urv_poll_cq;
	o->req_notify_cq = urv_req_notify_cq;
	o->_compat_cq_event = nop_compat;
	o->_compat_resize_cq = nop_compat;
	o->_compat_destroy_cq = nop_compat;
	o->_compat_create_srq = nop_compat;
	o->_compat_modify_srq = nop_compat;
	o->_compat_query_srq = nop_compat;
	o->_compat_destroy_srq = nop_compat;
	o->post_srq_recv = urv_post_srq_recv;
	o->_compat_create_qp = nop_compat;
	o->_compat_query_qp = nop_compat;
	o->_compat_modify_qp = nop_compat;
	o->_compat_destroy_qp = nop_compat;
	o->post_send = urv_post_send;
	o->post_recv = urv_post_recv;
	o->_compat_create_ah = nop_compat;
	o->_compat_destroy_ah = nop_compat;
	o->_compat_attach_mcast = nop_compat;
	o->_compat_detach_mcast = nop_compat;
	o->_compat_async_event = nop_compat;

	v->query_port = urv_query_port;
	v->advise_mr = urv_advise_mr;
	v->alloc_null_mr = no_alloc_null_mr;
	v->read_counters = no_read_counters;
	v->attach_counters_point_flow = no_attach_counters;
	v->create_counters = no_create_counters;
	v->destroy_counters = no_destroy_counters;
	v->reg_dm_mr = urv_reg_dm_mr;
	v->alloc_dm = urv_alloc_dm;
	v->free_dm = urv_free_dm;
	v->modify_flow_action_esp = no_modify_esp;
	v->destroy_flow_action = no_destroy_action;
	v->create_flow_action_esp = no_create_esp;
	v->modify_qp_rate_limit = no_rate_limit;
	v->alloc_parent_domain = urv_alloc_parent_domain;
	v->dealloc_td = urv_dealloc_td;
	v->alloc_td = urv_alloc_td;
	v->modify_cq = no_modify_cq;
	v->post_srq_ops = no_post_srq_ops;
	v->destroy_rwq_ind_table = no_destroy_rwq;
	v->create_rwq_ind_table = no_create_rwq;
	v->destroy_wq = no_destroy_wq;
	v->modify_wq = no_modify_wq;
	v->create_wq = no_create_wq;
	v->query_rt_values = query_rt_values;
	v->create_cq_ex = urv_create_cq_ex;
	v->priv = NULL;     /* libibverbs-private; never reached for our contexts */
	v->query_device_ex = urv_query_device_ex;
	v->ibv_destroy_flow = no_destroy_flow;
	v->ABI_placeholder2 = no_placeholder;
	v->ibv_create_flow = no_create_flow;
	v->ABI_placeholder1 = no_placeholder;
	v->open_qp = urv_open_qp;
	v->create_qp_ex = urv_create_qp_ex;
	v->get_srq_num = urv_get_srq_num;
	v->create_srq_ex = urv_create_srq_ex;
	v->open_xrcd = urv_open_xrcd;
	v->close_xrcd = urv_close_xrcd;
}
