/* SPDX-License-Identifier: MIT */
/* The exported libibverbs entry points. Each takes a device, context or
 * object; ours are served here, everything else goes to the real
 * libibverbs with the same symbol version. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "urv.h"
#include "urv_symvers.h"

/* verbs.h makes these macros around the exported functions */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port
#undef ibv_get_device_list

/* not in the installed headers: rdma-core's driver.h */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, uint32_t *type);

#define URV_EXPORT __attribute__((visibility("default")))

URV_DEFAULT_SYMVERS;

#define REAL_PTR(name) ({						\
	static void *p_;						\
	void *q_ = __atomic_load_n(&p_, __ATOMIC_ACQUIRE);		\
	if (!q_) {							\
		q_ = urv_real_sym(#name, URV_VER_##name);		\
		__atomic_store_n(&p_, q_, __ATOMIC_RELEASE);		\
	}								\
	(__typeof__(&name))q_;						\
})

/* return REAL(name)(args), or err with errno = ENOSYS if there is none */
#define FWD(err, name, ...) do {					\
	__typeof__(&name) r_ = REAL_PTR(name);				\
	if (!r_) {							\
		errno = ENOSYS;						\
		return err;						\
	}								\
	return r_(__VA_ARGS__);						\
} while (0)

#define FWD_VOID(name, ...) do {					\
	__typeof__(&name) r_ = REAL_PTR(name);				\
	if (r_)								\
		r_(__VA_ARGS__);					\
} while (0)

#define OURS(obj) ((obj) && urv_ctx_ours((obj)->context))

/* ---- devices ---- */

URV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	__typeof__(&ibv_get_device_list) real = REAL_PTR(ibv_get_device_list);
	struct ibv_device **rl = NULL, **l;
	int nreal = 0, e;

	if (real && urv_called_from_libibverbs(__builtin_return_address(0)))
		return real(num);
	if (real) {
		/* no RDMA in the kernel: the real list fails; ours stands */
		rl = real(&nreal);
		if (!rl)
			nreal = 0;
	}
	e = errno;
	l = urv_get_device_list(rl, nreal, num);
	if (!l && rl) {
		__typeof__(&ibv_free_device_list) f = REAL_PTR(ibv_free_device_list);

		if (f)
			f(rl);
	}
	if (l)
		errno = e;
	return l;
}

URV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	struct ibv_device **real;

	if (!list)
		return;
	if (urv_called_from_libibverbs(__builtin_return_address(0))) {
		FWD_VOID(ibv_free_device_list, list);
		return;
	}
	real = (struct ibv_device **)(void *)list[-1];
	free(list - 1);
	if (real)
		FWD_VOID(ibv_free_device_list, real);
}

URV_EXPORT const char *ibv_get_device_name(struct ibv_device *d)
{
	if (urv_dev_ours(d))
		return d->name;
	FWD(NULL, ibv_get_device_name, d);
}

URV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *d)
{
	if (urv_dev_ours(d))
		return urv_container_of(d, struct urv_device, ibdev)->node_guid;
	FWD(0, ibv_get_device_guid, d);
}

URV_EXPORT int ibv_get_device_index(struct ibv_device *d)
{
	if (urv_dev_ours(d))
		return urv_container_of(d, struct urv_device, ibdev)->index;
	FWD(-1, ibv_get_device_index, d);
}

URV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	if (urv_dev_ours(d))
		return urv_open_device(d);
	FWD(NULL, ibv_open_device, d);
}

URV_EXPORT int ibv_close_device(struct ibv_context *c)
{
	if (urv_ctx_ours(c))
		return urv_close_device(c);
	FWD(-1, ibv_close_device, c);
}

URV_EXPORT struct ibv_context *ibv_import_device(int fd)
{
	struct ibv_context *c;

	if (urv_import_device(fd, &c))
		return c;
	FWD(NULL, ibv_import_device, fd);
}

URV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *c, uint32_t h)
{
	if (urv_ctx_ours(c))
		return urv_import_pd(c, h);
	FWD(NULL, ibv_import_pd, c, h);
}

/* unimport frees what the import made, never the daemon's object */
URV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (OURS(pd)) {
		free(urv_container_of(pd, struct urv_pd, ibpd));
		return;
	}
	FWD_VOID(ibv_unimport_pd, pd);
}

URV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t h)
{
	if (OURS(pd))
		return urv_import_mr(pd, h);
	FWD(NULL, ibv_import_mr, pd, h);
}

URV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (OURS(mr)) {
		free(urv_container_of(mr, struct urv_mr, ibmr));
		return;
	}
	FWD_VOID(ibv_unimport_mr, mr);
}

URV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *c, uint32_t h)
{
	if (urv_ctx_ours(c))
		return urv_import_dm(c, h);
	FWD(NULL, ibv_import_dm, c, h);
}

URV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	if (OURS(dm)) {
		urv_unimport_dm(dm);
		return;
	}
	FWD_VOID(ibv_unimport_dm, dm);
}

/* ---- events ---- */

URV_EXPORT int ibv_get_async_event(struct ibv_context *c,
				   struct ibv_async_event *ev)
{
	if (urv_ctx_ours(c))
		return urv_get_async_event(c, ev);
	FWD(-1, ibv_get_async_event, c, ev);
}

static struct ibv_context *event_context(struct ibv_async_event *ev)
{
	switch (urv_event_obj(ev->event_type)) {
	case URV_OBJ_CQ:
		return ev->element.cq->context;
	case URV_OBJ_QP:
		return ev->element.qp->context;
	case URV_OBJ_SRQ:
		return ev->element.srq->context;
	default:
		return NULL;
	}
}

URV_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	struct ibv_context *c = event_context(ev);

	if (c && urv_ctx_ours(c)) {
		urv_ack_async_event(ev);
		return;
	}
	if (!c) /* port and device events have nothing to count */
		return;
	FWD_VOID(ibv_ack_async_event, ev);
}

URV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	if (urv_ctx_ours(c))
		return urv_create_comp_channel(c);
	FWD(NULL, ibv_create_comp_channel, c);
}

URV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	if (OURS(ch))
		return urv_destroy_comp_channel(ch);
	FWD(-1, ibv_destroy_comp_channel, ch);
}

URV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
				void **cq_context)
{
	if (OURS(ch))
		return urv_get_cq_event(ch, cq, cq_context);
	FWD(-1, ibv_get_cq_event, ch, cq, cq_context);
}

URV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	if (OURS(cq)) {
		urv_ack_cq_events(cq, n);
		return;
	}
	FWD_VOID(ibv_ack_cq_events, cq, n);
}

/* ---- queries ---- */

URV_EXPORT int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	if (urv_ctx_ours(c))
		return urv_query_device(c, a);
	FWD(-1, ibv_query_device, c, a);
}

URV_EXPORT int ibv_query_port(struct ibv_context *c, uint8_t port,
			      struct _compat_ibv_port_attr *a)
{
	if (urv_ctx_ours(c))
		/* callers built against older headers pass the shorter
		 * struct that ended before port_cap_flags2 */
		return urv_query_port(c, port, (struct ibv_port_attr *)(void *)a,
				      offsetof(struct ibv_port_attr,
					       port_cap_flags2));
	FWD(-1, ibv_query_port, c, port, a);
}

URV_EXPORT int ibv_query_gid(struct ibv_context *c, uint8_t port, int idx,
			     union ibv_gid *gid)
{
	if (urv_ctx_ours(c))
		return urv_query_gid(c, port, idx, gid);
	FWD(-1, ibv_query_gid, c, port, idx, gid);
}

URV_EXPORT int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port,
				 uint32_t idx, struct ibv_gid_entry *e,
				 uint32_t flags, size_t esz)
{
	if (urv_ctx_ours(c))
		return urv_query_gid_ex(c, port, idx, e, flags, esz);
	FWD(ENOSYS, _ibv_query_gid_ex, c, port, idx, e, flags, esz);
}

URV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *c,
					struct ibv_gid_entry *e, size_t max,
					uint32_t flags, size_t esz)
{
	if (urv_ctx_ours(c))
		return urv_query_gid_table(c, e, max, flags, esz);
	FWD(-ENOSYS, _ibv_query_gid_table, c, e, max, flags, esz);
}

URV_EXPORT int ibv_query_gid_type(struct ibv_context *c, uint8_t port,
				  unsigned int idx, uint32_t *type)
{
	if (urv_ctx_ours(c))
		return urv_query_gid_type(c, port, idx, type);
	FWD(-1, ibv_query_gid_type, c, port, idx, type);
}

URV_EXPORT int ibv_query_pkey(struct ibv_context *c, uint8_t port, int idx,
			      __be16 *pkey)
{
	if (urv_ctx_ours(c))
		return urv_query_pkey(c, port, idx, pkey);
	FWD(-1, ibv_query_pkey, c, port, idx, pkey);
}

URV_EXPORT int ibv_get_pkey_index(struct ibv_context *c, uint8_t port,
				  __be16 pkey)
{
	if (urv_ctx_ours(c))
		return urv_get_pkey_index(c, port, pkey);
	FWD(-1, ibv_get_pkey_index, c, port, pkey);
}

/* ---- PD, MR ---- */

URV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	if (urv_ctx_ours(c))
		return urv_alloc_pd(c);
	FWD(NULL, ibv_alloc_pd, c);
}

URV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (OURS(pd))
		return urv_dealloc_pd(pd);
	FWD(ENOSYS, ibv_dealloc_pd, pd);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				     size_t len, int access)
{
	if (OURS(pd))
		return urv_reg_mr(pd, addr, len, (uintptr_t)addr, (unsigned)access);
	FWD(NULL, ibv_reg_mr, pd, addr, len, access);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					  size_t len, uint64_t iova, int access)
{
	if (OURS(pd))
		return urv_reg_mr(pd, addr, len, iova, (unsigned)access);
	FWD(NULL, ibv_reg_mr_iova, pd, addr, len, iova, access);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					   size_t len, uint64_t iova,
					   unsigned int access)
{
	if (OURS(pd))
		return urv_reg_mr(pd, addr, len, iova, access);
	FWD(NULL, ibv_reg_mr_iova2, pd, addr, len, iova, access);
}

URV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off,
					    size_t len, uint64_t iova, int fd,
					    int access)
{
	if (OURS(pd)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	FWD(NULL, ibv_reg_dmabuf_mr, pd, off, len, iova, fd, access);
}

URV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			    void *addr, size_t len, int access)
{
	if (OURS(mr))
		return urv_rereg_mr(mr, flags, pd, addr, len, access);
	FWD(IBV_REREG_MR_ERR_CMD, ibv_rereg_mr, mr, flags, pd, addr, len, access);
}

URV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (OURS(mr))
		return urv_dereg_mr(mr);
	FWD(ENOSYS, ibv_dereg_mr, mr);
}

/* ---- CQ ---- */

URV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe,
					void *cq_ctx,
					struct ibv_comp_channel *ch, int vec)
{
	if (urv_ctx_ours(c))
		return urv_create_cq(c, cqe, cq_ctx, ch, vec);
	FWD(NULL, ibv_create_cq, c, cqe, cq_ctx, ch, vec);
}

URV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (OURS(cq))
		return urv_resize_cq(cq, cqe);
	FWD(ENOSYS, ibv_resize_cq, cq, cqe);
}

URV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (OURS(cq))
		return urv_destroy_cq(cq);
	FWD(ENOSYS, ibv_destroy_cq, cq);
}

/* ---- SRQ ---- */

URV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					  struct ibv_srq_init_attr *a)
{
	if (OURS(pd))
		return urv_create_srq(pd, a);
	FWD(NULL, ibv_create_srq, pd, a);
}

URV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *a,
			      int mask)
{
	if (OURS(srq))
		return urv_modify_srq(srq, a, mask);
	FWD(ENOSYS, ibv_modify_srq, srq, a, mask);
}

URV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *a)
{
	if (OURS(srq))
		return urv_query_srq(srq, a);
	FWD(ENOSYS, ibv_query_srq, srq, a);
}

URV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (OURS(srq))
		return urv_destroy_srq(srq);
	FWD(ENOSYS, ibv_destroy_srq, srq);
}

/* ---- QP ---- */

URV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					struct ibv_qp_init_attr *a)
{
	if (OURS(pd))
		return urv_create_qp(pd, a);
	FWD(NULL, ibv_create_qp, pd, a);
}

URV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (OURS(qp))
		return urv_modify_qp(qp, a, mask);
	FWD(ENOSYS, ibv_modify_qp, qp, a, mask);
}

URV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			    struct ibv_qp_init_attr *init)
{
	if (OURS(qp))
		return urv_query_qp(qp, a, mask, init);
	FWD(ENOSYS, ibv_query_qp, qp, a, mask, init);
}

URV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (OURS(qp))
		return urv_destroy_qp(qp);
	FWD(ENOSYS, ibv_destroy_qp, qp);
}

URV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (OURS(qp))
		return &to_uqp(qp)->ex;
	FWD(NULL, ibv_qp_to_qp_ex, qp);
}

URV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					  enum ibv_wr_opcode op, uint32_t flags)
{
	/* the daemon places payload packet by packet in PSN order */
	if (OURS(qp))
		return flags ? 0 : 1;
	FWD(0, ibv_query_qp_data_in_order, qp, op, flags);
}

URV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (OURS(qp))
		return urv_set_ece(qp, ece);
	FWD(ENOSYS, ibv_set_ece, qp, ece);
}

URV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (OURS(qp))
		return urv_query_ece(qp, ece);
	FWD(ENOSYS, ibv_query_ece, qp, ece);
}

URV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	if (OURS(qp))
		return urv_attach_mcast(qp, gid, lid);
	FWD(ENOSYS, ibv_attach_mcast, qp, gid, lid);
}

URV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	if (OURS(qp))
		return urv_detach_mcast(qp, gid, lid);
	FWD(ENOSYS, ibv_detach_mcast, qp, gid, lid);
}

/* ---- AH ---- */

URV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	if (OURS(pd))
		return urv_create_ah(pd, attr);
	FWD(NULL, ibv_create_ah, pd, attr);
}

URV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (OURS(ah))
		return urv_destroy_ah(ah);
	FWD(ENOSYS, ibv_destroy_ah, ah);
}

URV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *c, uint8_t port,
				   struct ibv_wc *wc, struct ibv_grh *grh,
				   struct ibv_ah_attr *attr)
{
	if (urv_ctx_ours(c))
		return urv_init_ah_from_wc(c, port, wc, grh, attr);
	FWD(-1, ibv_init_ah_from_wc, c, port, wc, grh, attr);
}

URV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						struct ibv_wc *wc,
						struct ibv_grh *grh,
						uint8_t port)
{
	struct ibv_ah_attr attr;

	if (OURS(pd)) {
		if (urv_init_ah_from_wc(pd->context, port, wc, grh, &attr))
			return NULL;
		return urv_create_ah(pd, &attr);
	}
	FWD(NULL, ibv_create_ah_from_wc, pd, wc, grh, port);
}

URV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *c,
					   struct ibv_ah_attr *attr,
					   uint8_t mac[ETHERNET_LL_SIZE],
					   uint16_t *vid)
{
	if (urv_ctx_ours(c)) {
		(void)attr; (void)mac; (void)vid;
		return EOPNOTSUPP;
	}
	FWD(ENOSYS, ibv_resolve_eth_l2_from_gid, c, attr, mac, vid);
}

/* Rings are MAP_SHARED and every fd is close-on-exec. Registered pages
 * are libibverbs' own business here as for any provider: ibv_reg_mr marks
 * them with its ibv_dontfork_range (mr.c), which acts once this call
 * (or RDMAV_FORK_SAFE) asked for it. */
URV_EXPORT int ibv_fork_init(void)
{
	__typeof__(&ibv_fork_init) r = REAL_PTR(ibv_fork_init);

	return r ? r() : 0;
}
