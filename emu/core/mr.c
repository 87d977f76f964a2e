/* SPDX-License-Identifier: MIT */
/* Memory regions: ibv_reg_mr / ibv_rereg_mr / ibv_dereg_mr with their
 * checks, an MR over device memory (ibv_reg_dm_mr), and ibv_import_pd /
 * ibv_import_mr. Handles are scoped to the context, so another context's handle is
 * simply unknown (-EINVAL); an object still referenced is -EBUSY, as the
 * kernel answers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"
#include "emu_int.h"
#include <uroce/flush.h>

#define EMU_MR_ACCESS_OK (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			  IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
			  IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING | \
			  UROCE_ACCESS_FLUSH)

#define EMU_MR_WRITABLE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* How a registration that is not ODP reaches its memory (docs/verbs.md,
 * "Registered memory"): pinned buffers of the context's memory channel,
 * or unpinned (the address, where the kernel refused to pin for the
 * client). In-process tests (no /proc descriptor, our own pid) may give
 * none: their memory is ours. */
struct emu_mr_route { uint32_t pin, slot; int32_t why; };

static int emu_mr_route_ok(struct emu_ctx *c, uint64_t addr, uint64_t len, unsigned access,
			   const struct emu_mr_route *rt)
{
	switch (rt->pin) {
	case UROCE_PIN_RING:
		/* the client pinned the pages itself, FOLL_WRITE, so they are
		 * mapped and writable; a client that names buffers it did not
		 * fill only reaches its own pages */
		return emu_pin_slots_ok(c, rt->slot, len) ? 0 : -EINVAL;
	case UROCE_PIN_NONE:
		break;
	case 0:
		if (c->mem_fd < 0 && c->pid == getpid())
			break;
		return -EINVAL;
	default:
		return -EINVAL;
	}
	/* what pinning would have refused (ib_umem_get): unmapped ends,
	 * pages the process cannot read, or write for an MR the device may
	 * write (ib_access_writable: FOLL_WRITE); asked through the
	 * descriptors bound at HELLO, one answer for every refusal */
	uint8_t b;
	if (emu_mem_read(c, &b, addr, 1) || emu_mem_read(c, &b, addr + len - 1, 1) ||
	    emu_vma_allowed(c, addr, len, access & EMU_MR_WRITABLE))
		return -EFAULT;
	return 0;
}

static int emu_mr_args(struct emu_ctx *c, uint64_t addr, uint64_t len, uint64_t iova,
		       unsigned access, const struct emu_mr_route *rt)
{
	if (access & ~(unsigned)EMU_MR_ACCESS_OK)
		return -EINVAL;
	/* remote write or atomic without local write: refused like
	 * ib_check_mr_access() */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* implicit ODP is addressed by virtual address, as mlx5 requires */
	if (emu_mr_implicit(addr, len, access))
		return iova ? -EINVAL : 0;
	if (len == 0 || len > EMU_MAX_MR_SIZE || addr + len < addr || iova + len < iova)
		return -EINVAL;
	/* ODP: pages need not be there until they are used */
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	return emu_mr_route_ok(c, addr, len, access, rt);
}

static void emu_mr_set_route(struct emu_mr *mr, const struct emu_mr_route *rt)
{
	bool odp = mr->access & IBV_ACCESS_ON_DEMAND;

	mr->pin = odp ? 0 : (uint8_t)rt->pin;
	mr->slot = odp ? 0 : rt->slot;
	mr->why = odp || rt->pin != UROCE_PIN_NONE ? 0 : rt->why;
}

static int emu_mr_rep(const struct emu_mr *mr, struct uroce_reg_mr_rep *r)
{
	r->handle = mr->handle;
	r->lkey = mr->lkey;
	r->rkey = mr->rkey;
	r->rsvd = 0;
	return 0;
}

/* an MR of pd with keys and a handle; the caller checked the arguments */
static int emu_mr_new(struct emu_ctx *c, struct emu_pd *pd, uint64_t addr, uint64_t len,
		      uint64_t iova, unsigned access, struct emu_mr **out)
{
	if (c->nobj[EMU_OBJ_MR] >= EMU_MAX_MR || emu_ctx_quota(c, EMU_OBJ_MR))
		return -ENOMEM;
	struct emu_mr *mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->ctx = c;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->iova = iova;
	mr->access = access;
	mr->gen = ++c->dev->mr_epoch;
	int rc = emu_key_alloc(c->dev, EMU_OBJ_MR, mr, &mr->lkey);
	if (rc) {
		free(mr);
		return rc;
	}
	mr->rkey = mr->lkey;
	rc = emu_ctx_put(c, EMU_OBJ_MR, mr, &mr->handle);
	if (rc) {
		emu_key_free(c->dev, mr->lkey);
		free(mr);
		return rc;
	}
	pd->refcnt++;
	*out = mr;
	return 0;
}

int emu_mr_reg(struct emu_ctx *c, const struct uroce_reg_mr_req *q, struct uroce_reg_mr_rep *r)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	struct emu_mr *mr;
	int rc;

	if (!pd)
		return -EINVAL;
	struct emu_mr_route rt = { q->pin, q->slot, q->why };
	if ((rc = emu_mr_args(c, q->addr, q->length, q->iova, q->access, &rt)))
		return rc;
	if ((rc = emu_mr_new(c, pd, q->addr, q->length, q->iova, q->access, &mr)))
		return rc;
	emu_mr_set_route(mr, &rt);
	return emu_mr_rep(mr, r);
}

int emu_mr_rereg(struct emu_ctx *c, const struct uroce_rereg_mr_req *q, struct uroce_reg_mr_rep *r)
{
	struct emu_mr *mr = emu_ctx_get(c, q->handle, EMU_OBJ_MR);
	struct emu_pd *pd = NULL;
	int rc;

	if (!mr)
		return -EINVAL;
	if (!q->flags || (q->flags & ~(unsigned)(IBV_REREG_MR_CHANGE_TRANSLATION |
						IBV_REREG_MR_CHANGE_PD |
						IBV_REREG_MR_CHANGE_ACCESS)))
		return -EINVAL;
	if (mr->mw_bound)
		return -EBUSY;
	if (mr->dm)
		return -EINVAL; /* device memory has no translation to change */
	if (q->flags & IBV_REREG_MR_CHANGE_PD) {
		pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);
		if (!pd)
			return -EINVAL;
	}
	uint64_t addr = mr->addr, len = mr->length, iova = mr->iova;
	unsigned access = mr->access;
	if (q->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		addr = q->addr;
		len = q->length;
		iova = q->iova;
	}
	if (q->flags & IBV_REREG_MR_CHANGE_ACCESS)
		access = q->access;
	/* the same pages, unless the translation changes: the shim pinned
	 * the new range and names it */
	struct emu_mr_route rt = { mr->pin, mr->slot, mr->why };
	if (q->flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		rt = (struct emu_mr_route){ q->pin, q->slot, q->why };
	if ((rc = emu_mr_args(c, addr, len, iova, access, &rt)))
		return rc;
	if (pd) {
		mr->pd->refcnt--;
		pd->refcnt++;
		mr->pd = pd;
	}
	emu_mr_unmap(mr); /* the shim maps the new translation again */
	mr->addr = addr;
	mr->length = len;
	mr->iova = iova;
	mr->access = access;
	emu_mr_set_route(mr, &rt);
	mr->gen = ++c->dev->mr_epoch; /* messages in flight through it fail */
	return emu_mr_rep(mr, r);
}

int emu_mr_dereg(struct emu_ctx *c, uint32_t handle)
{
	struct emu_mr *mr = emu_ctx_get(c, handle, EMU_OBJ_MR);

	if (!mr)
		return -EINVAL;
	if (mr->mw_bound && !c->dead)
		return -EBUSY;
	emu_mr_unmap(mr);
	emu_key_free(c->dev, mr->lkey);
	if (mr->dm)
		mr->dm->mrs--;
	mr->pd->refcnt--;
	emu_ctx_drop(c, handle);
	free(mr);
	return 0;
}

static void emu_mr_info(const struct emu_mr *mr, struct uroce_mr_info *i)
{
	memset(i, 0, sizeof(*i));
	i->pid = (uint32_t)mr->ctx->pid;
	i->handle = mr->handle;
	i->addr = mr->addr;
	i->length = mr->length;
	i->access = mr->access;
	i->lkey = mr->lkey;
	i->pin = mr->pin;
	i->why = mr->why;
	i->mapped = mr->nmaps;
	i->flags = (mr->access & IBV_ACCESS_ON_DEMAND ? UROCE_MRI_ODP : 0) |
		   (mr->dm ? UROCE_MRI_DM : 0);
	i->pinned = mr->moved[0];
	i->unpinned = mr->moved[1];
	i->by_map = mr->moved[2];
}

void emu_mr_info_fill(struct emu_dev *d, const struct emu_ctx *viewer,
		      const struct uroce_query_mrs_req *q, struct uroce_query_mrs_rep *r)
{
	bool started = !q->start_pid;

	memset(r, 0, sizeof(*r));
	for (struct emu_ctx *c = d->ctxs; c; c = c->next) {
		if (c->dead || (!viewer->see_all && c->uid != viewer->uid))
			continue;
		if (!started && (uint32_t)c->pid != q->start_pid)
			continue;
		uint32_t h0 = started ? 0 : q->start_handle;
		started = true;
		for (uint32_t h = h0; h < c->nh; h++) {
			if (c->h[h].type != EMU_OBJ_MR)
				continue;
			if (r->n == UROCE_MRS_PER_MSG) {
				r->next_pid = (uint32_t)c->pid;
				r->next_handle = h;
				return;
			}
			emu_mr_info(c->h[h].obj, &r->mrs[r->n++]);
		}
	}
}

/* what mlx5 lets a DM MR have (its MLX5_DM_ALLOWED_ACCESS, without the
 * optional range, which the shim drops) */
#define EMU_DM_ACCESS_OK (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			  IBV_ACCESS_ZERO_BASED)
/* The kernel's checks for UVERBS_METHOD_DM_MR_REG (zero-based, local
 * write with remote write or atomic, range inside the allocation) and
 * mlx5's access set. */
int emu_dm_reg_mr(struct emu_ctx *c, const struct uroce_reg_dm_mr_req *q,
		  struct uroce_reg_mr_rep *r)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	struct emu_dm *dm = emu_ctx_get(c, q->dm, EMU_OBJ_DM);
	struct emu_mr *mr;
	int rc;

	if (!pd || !dm || q->rsvd)
		return -EINVAL;
	if (!(q->access & IBV_ACCESS_ZERO_BASED) || (q->access & ~(unsigned)EMU_DM_ACCESS_OK))
		return -EINVAL;
	if ((q->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(q->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (q->offset > dm->length || q->length > dm->length - q->offset)
		return -EINVAL;
	rc = emu_mr_new(c, pd, dm->va + q->offset, q->length, 0, q->access, &mr);
	if (rc)
		return rc;
	mr->dm = dm;
	dm->mrs++;
	if (q->length && (rc = emu_mr_map_dm(mr, dm->map + q->offset))) {
		emu_mr_dereg(c, mr->handle);
		return rc;
	}
	return emu_mr_rep(mr, r);
}

/* ibv_import_pd / ibv_import_mr through a second ibv_context of the same
 * connection: the object must be this context's (handles are per context,
 * so nothing of another context can be named), an MR in the PD given. */
int emu_obj_import(struct emu_ctx *c, const struct uroce_import_req *q,
		   struct uroce_import_rep *r)
{
	memset(r, 0, sizeof(*r));
	if (q->rsvd)
		return -EINVAL;
	if (q->type == UROCE_IMPORT_PD)
		return emu_ctx_get(c, q->handle, EMU_OBJ_PD) ? 0 : -EINVAL;
	if (q->type != UROCE_IMPORT_MR)
		return -EINVAL;
	struct emu_mr *mr = emu_ctx_get(c, q->handle, EMU_OBJ_MR);
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	if (!mr || !pd || mr->pd != pd)
		return -EINVAL;
	r->lkey = mr->lkey;
	r->rkey = mr->rkey;
	r->length = mr->length;
	r->iova = mr->iova;
	r->access = mr->access;
	return 0;
}
