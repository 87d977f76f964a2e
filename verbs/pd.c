/* SPDX-License-Identifier: MIT */
/* Protection domains (ibv_alloc_pd, ibv_dealloc_pd), thread domains and
 * parent domains (ibv_alloc_td, ibv_alloc_parent_domain). A parent domain stands for its PD everywhere a PD is taken: it carries
 * the PD's handle, so the daemon never sees it. A thread domain is a hint
 * that a provider may drop its locks; the shim keeps its spinlocks (a few
 * atomics, no system call).
 *
 * Custom allocators (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) are accepted
 * and never called: a provider calls alloc() for queue memory it takes
 * from the process, and uroce takes none — every ring is a sealed memfd
 * the daemon creates and maps into the process, so that the application
 * can neither shrink nor replace memory the daemon reads
 * (docs/security.md); the allocator could not supply such memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

struct urv_pd *urv_pd_new(struct ibv_context *c, uint32_t handle)
{
	struct urv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = c;
	pd->ibpd.handle = handle;
	return pd;
}

struct ibv_pd *urv_alloc_pd(struct ibv_context *ibctx)
{
	struct uroce_handle_msg rep;
	struct urv_pd *pd;
	int ret;

	pd = urv_pd_new(ibctx, 0);
	if (!pd)
		return NULL;
	ret = urv_ctl(to_uctx(ibctx), UROCE_OP_ALLOC_PD, NULL, 0, &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret) {
		free(pd);
		errno = -ret;
		return NULL;
	}
	pd->ibpd.handle = rep.handle;
	return &pd->ibpd;
}

int urv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct uroce_handle_msg req = { .handle = ibpd->handle };
	int ret;

	if (to_upd(ibpd)->inner)
		return urv_dealloc_parent_domain(to_upd(ibpd));
	if (__atomic_load_n(&to_upd(ibpd)->parents, __ATOMIC_ACQUIRE))
		return EBUSY; /* a parent domain stands for it */

	ret = urv_ctl(to_uctx(ibpd->context), UROCE_OP_DEALLOC_PD, &req,
		      sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	/* a dead daemon has released everything already */
	if (ret && ret != -ENODEV)
		return -ret;
	free(ibpd);
	return 0;
}

struct urv_td {
	struct ibv_td ibtd;
	unsigned refs;          /* parent domains using it (atomic) */
};

struct ibv_td *urv_alloc_td(struct ibv_context *ibctx, struct ibv_td_init_attr *attr)
{
	struct urv_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = ibctx;
	return &td->ibtd;
}

int urv_dealloc_td(struct ibv_td *ibtd)
{
	struct urv_td *td = urv_container_of(ibtd, struct urv_td, ibtd);

	if (__atomic_load_n(&td->refs, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(td);
	return 0;
}

#define URV_PD_INIT_MASK (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
			  IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

struct ibv_pd *urv_alloc_parent_domain(struct ibv_context *ibctx,
				       struct ibv_parent_domain_init_attr *attr)
{
	struct urv_pd *inner, *pd;

	/* as mlx5: a PD of this context, not itself a parent domain; a thread
	 * domain of this context; no mask bit unknown */
	if (!attr || !attr->pd || attr->pd->context != ibctx ||
	    (attr->comp_mask & ~(uint32_t)URV_PD_INIT_MASK) ||
	    (attr->td && attr->td->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	inner = to_upd(attr->pd);
	if (inner->inner) {
		errno = EINVAL;
		return NULL;
	}
	pd = urv_pd_new(ibctx, inner->ibpd.handle);
	if (!pd)
		return NULL;
	pd->inner = inner;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	if (attr->td) {
		pd->td = urv_container_of(attr->td, struct urv_td, ibtd);
		__atomic_add_fetch(&pd->td->refs, 1, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&inner->parents, 1, __ATOMIC_RELEASE);
	return &pd->ibpd;
}

struct urv_pd *urv_pdom_get(struct ibv_pd *ibpd)
{
	if (!ibpd || !to_upd(ibpd)->inner)
		return NULL;
	__atomic_add_fetch(&to_upd(ibpd)->users, 1, __ATOMIC_RELEASE);
	return to_upd(ibpd);
}

void urv_pdom_put(struct urv_pd *pdom)
{
	if (pdom)
		__atomic_sub_fetch(&pdom->users, 1, __ATOMIC_RELEASE);
}

/* ibv_dealloc_pd of a parent domain: nothing of the daemon's goes; EBUSY
 * while QPs or CQs made on it exist (mlx5) */
int urv_dealloc_parent_domain(struct urv_pd *pd)
{
	if (__atomic_load_n(&pd->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	__atomic_sub_fetch(&pd->inner->parents, 1, __ATOMIC_RELEASE);
	if (pd->td)
		__atomic_sub_fetch(&pd->td->refs, 1, __ATOMIC_RELEASE);
	free(pd);
	return 0;
}
