/* SPDX-License-Identifier: MIT */
/* liburoce: the verbs the shim implements for uroce devices, by object
 * (one file each: pd.c mr.c dm.c event.c cq.c srq.c xrc.c qp.c post.c
 * ece.c ah.c import.c), for ops.c and interpose.c. */
#ifndef URV_VERBS_H
#define URV_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include "urv_obj.h"

/* import.c */
bool urv_import_device(int fd, struct ibv_context **out);
struct ibv_pd *urv_import_pd(struct ibv_context *c, uint32_t handle);
struct ibv_mr *urv_import_mr(struct ibv_pd *pd, uint32_t handle);

/* objects */
struct ibv_pd *urv_alloc_pd(struct ibv_context *c);
/* a zeroed urv_pd of context c standing for the daemon's PD handle, or
 * NULL with errno ENOMEM (a PD, an imported PD, a parent domain) */
struct urv_pd *urv_pd_new(struct ibv_context *c, uint32_t handle);
int urv_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *urv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  uint64_t iova, unsigned access);
int urv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		 void *addr, size_t len, int access);
int urv_dereg_mr(struct ibv_mr *mr);
struct ibv_mw *urv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urv_dealloc_mw(struct ibv_mw *mw);
int urv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *bind);

/* pd.c: thread domains and parent domains */
struct ibv_td *urv_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *attr);
int urv_dealloc_td(struct ibv_td *td);
struct ibv_pd *urv_alloc_parent_domain(struct ibv_context *c,
				       struct ibv_parent_domain_init_attr *attr);
int urv_dealloc_parent_domain(struct urv_pd *pd);
/* a QP or CQ made on pd: its parent domain, held (NULL: a plain PD);
 * put when the object goes (never read the object's pd then: a PD may
 * be an imported one unimported since) */
struct urv_pd *urv_pdom_get(struct ibv_pd *pd);
void urv_pdom_put(struct urv_pd *pdom);

/* dm.c: device memory */
struct ibv_dm *urv_alloc_dm(struct ibv_context *c, struct ibv_alloc_dm_attr *attr);
int urv_free_dm(struct ibv_dm *dm);
struct ibv_mr *urv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off,
			     size_t len, unsigned int access);
struct ibv_dm *urv_import_dm(struct ibv_context *c, uint32_t handle);
void urv_unimport_dm(struct ibv_dm *dm);

struct ibv_comp_channel *urv_create_comp_channel(struct ibv_context *c);
int urv_destroy_comp_channel(struct ibv_comp_channel *ch);
int urv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_context);
void urv_ack_cq_events(struct ibv_cq *cq, unsigned n);
int urv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev);
void urv_ack_async_event(struct ibv_async_event *ev);

struct ibv_cq *urv_create_cq(struct ibv_context *c, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int vec);
struct ibv_cq_ex *urv_create_cq_ex(struct ibv_context *c,
				   struct ibv_cq_init_attr_ex *attr);
int urv_resize_cq(struct ibv_cq *cq, int cqe);
int urv_destroy_cq(struct ibv_cq *cq);
int urv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
void urv_cq_clean(struct ibv_cq *cq, uint32_t qpn);
int urv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void urv_cq_ex_init(struct urv_cq *cq);

struct ibv_srq *urv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr);
struct ibv_srq *urv_create_srq_ex(struct ibv_context *c,
				  struct ibv_srq_init_attr_ex *attr);
int urv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int urv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int urv_destroy_srq(struct ibv_srq *srq);
int urv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);
struct ibv_srq *urv_srq_create_x(struct ibv_pd *pd, struct ibv_srq_init_attr *a,
				 struct uroce_create_xsrq_req *xq);

/* xrc.c */
struct ibv_xrcd *urv_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a);
int urv_close_xrcd(struct ibv_xrcd *x);
struct ibv_srq *urv_create_xsrq(struct ibv_context *c, struct ibv_srq_init_attr_ex *a);
int urv_get_srq_num(struct ibv_srq *srq, uint32_t *num);
struct ibv_qp *urv_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a);
/* an XRC TGT QP (UROCE_OP_CREATE_XTGT) or a handle on one (OPEN_QP),
 * a QP without rings */
struct ibv_qp *urv_xrc_qp_new(struct ibv_context *ibctx, uint32_t op, struct ibv_xrcd *xrcd,
			      uint32_t qpn, const struct ibv_qp_init_attr_ex *ia);

struct ibv_qp *urv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
struct ibv_qp *urv_create_qp_ex(struct ibv_context *c,
				struct ibv_qp_init_attr_ex *a);
int urv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
int urv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		 struct ibv_qp_init_attr *init);
int urv_destroy_qp(struct ibv_qp *qp);
int urv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad);
int urv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
void urv_qp_ex_init(struct urv_qp *qp);
void urv_qp_fill(struct urv_qp *qp, struct ibv_context *ibctx,
		 const struct ibv_qp_init_attr_ex *a, const struct uroce_create_qp_rep *rep);
int urv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);
int urv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);
/* ece.c */
int urv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece);
int urv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece);

struct ibv_ah *urv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
void urv_ah_attr_copy(struct ibv_ah_attr *dst, const struct ibv_ah_attr *src);
int urv_destroy_ah(struct ibv_ah *ah);
int urv_init_ah_from_wc(struct ibv_context *c, uint8_t port,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *attr);

#endif /* URV_VERBS_H */
