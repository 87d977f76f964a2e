/* SPDX-License-Identifier: MIT */
/* Verbs objects: creation with full validation, destruction with busy
 * checks (as the kernel: a PD, CQ, SRQ or channel still referenced is
 * -EBUSY), and the shared ring memory of CQs, SRQs and QPs. Handles are
 * scoped to the context, so another context's handle is simply unknown
 * (-EINVAL). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu.h"
#include "emu_int.h"
#include <uroce/flush.h>

static uint32_t pow2_at_least(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

static size_t page_align(size_t x)
{
	return (x + 4095) & ~(size_t)4095;
}

/* Bytes of a shared ring (header, then entries slots of stride bytes),
 * rounded to whole pages: every CQ, SQ, RQ and SRQ ring is sized here. */
static size_t emu_ring_bytes(uint32_t entries, uint32_t stride)
{
	return page_align(UROCE_RING_HDR_SIZE + (size_t)entries * stride);
}

/* Slot size of a receive ring (RQ or SRQ) for sge scatter entries. */
static uint32_t emu_recv_stride(uint32_t sge)
{
	return pow2_at_least(UROCE_RECV_WQE_HDR + sge * (uint32_t)sizeof(struct uroce_sge));
}

static void emu_ring_init(struct emu_ring *r, void *base, uint32_t entries, uint32_t stride)
{
	r->hdr = base;
	r->slots = (uint8_t *)base + UROCE_RING_HDR_SIZE;
	r->entries = entries;
	r->mask = entries ? entries - 1 : 0;
	r->stride = stride;
	r->cons = 0;
	r->prod_seen = 0;
	r->hdr->entries = entries;
	r->hdr->stride = stride;
}

/* ---------------- PD ---------------- */

int emu_pd_alloc(struct emu_ctx *c, uint32_t *handle)
{
	if (c->nobj[EMU_OBJ_PD] >= EMU_MAX_PD || emu_ctx_quota(c, EMU_OBJ_PD))
		return -ENOMEM;
	struct emu_pd *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = c;
	int rc = emu_ctx_put(c, EMU_OBJ_PD, pd, &pd->handle);
	if (rc) {
		free(pd);
		return rc;
	}
	*handle = pd->handle;
	return 0;
}

int emu_pd_dealloc(struct emu_ctx *c, uint32_t handle)
{
	struct emu_pd *pd = emu_ctx_get(c, handle, EMU_OBJ_PD);

	if (!pd)
		return -EINVAL;
	if (pd->refcnt)
		return -EBUSY;
	emu_ctx_drop(c, handle);
	free(pd);
	return 0;
}

/* ---------------- MR ---------------- */

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

/* ---------------- MW ---------------- */

int emu_mw_alloc(struct emu_ctx *c, const struct uroce_alloc_mw_req *q, struct uroce_alloc_mw_rep *r)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);

	if (!pd || (q->type != IBV_MW_TYPE_1 && q->type != IBV_MW_TYPE_2))
		return -EINVAL;
	if (c->nobj[EMU_OBJ_MW] >= EMU_MAX_MW || emu_ctx_quota(c, EMU_OBJ_MW))
		return -ENOMEM;
	struct emu_mw *mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	mw->ctx = c;
	mw->pd = pd;
	mw->type = (enum ibv_mw_type)q->type;
	mw->state = EMU_MW_FREE;
	int rc = emu_key_alloc(c->dev, EMU_OBJ_MW, mw, &mw->rkey);
	if (rc) {
		free(mw);
		return rc;
	}
	rc = emu_ctx_put(c, EMU_OBJ_MW, mw, &mw->handle);
	if (rc) {
		emu_key_free(c->dev, mw->rkey);
		free(mw);
		return rc;
	}
	pd->refcnt++;
	r->handle = mw->handle;
	r->rkey = mw->rkey;
	return 0;
}

int emu_mw_dealloc(struct emu_ctx *c, uint32_t handle)
{
	struct emu_mw *mw = emu_ctx_get(c, handle, EMU_OBJ_MW);

	if (!mw)
		return -EINVAL;
	emu_mw_release(mw);
	emu_key_free(c->dev, mw->rkey);
	mw->pd->refcnt--;
	emu_ctx_drop(c, handle);
	free(mw);
	return 0;
}

/* ---------------- completion channel ---------------- */

int emu_channel_create(struct emu_ctx *c, int wfd, uint32_t *handle)
{
	struct emu_channel *ch;

	if (wfd < 0)
		return -EINVAL;
	if (emu_ctx_quota(c, EMU_OBJ_CHANNEL)) {
		close(wfd);
		return -ENOMEM;
	}
	/* the daemon made wfd (emu_evq_pipe); tests may pass their own */
	int fl = fcntl(wfd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY ||
	    fcntl(wfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(wfd);
		return -EINVAL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		close(wfd);
		return -ENOMEM;
	}
	ch->ctx = c;
	ch->wfd = wfd;
	int rc = emu_ctx_put(c, EMU_OBJ_CHANNEL, ch, &ch->handle);
	if (rc) {
		close(wfd);
		free(ch);
		return rc;
	}
	*handle = ch->handle;
	return 0;
}

int emu_channel_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_channel *ch = emu_ctx_get(c, handle, EMU_OBJ_CHANNEL);

	if (!ch)
		return -EINVAL;
	if (ch->refcnt)
		return -EBUSY;
	emu_evq_drop(c->dev, &ch->q);
	close(ch->wfd);
	emu_ctx_drop(c, handle);
	free(ch);
	return 0;
}

/* ---------------- CQ ---------------- */

static int emu_cq_ring_new(struct emu_cq *cq, uint32_t cqe)
{
	uint32_t entries = pow2_at_least(cqe < 2 ? 2 : cqe);
	/* every CQE slot has its companion slot for small payloads */
	size_t size = emu_ring_bytes(entries, UROCE_CQE_SIZE + UROCE_CQE_INL_SIZE);
	void *map;
	int fd;
	int rc = emu_shm_create("uroce-cq", size, &fd, &map);

	if (rc)
		return rc;
	cq->memfd = fd;
	cq->map = map;
	cq->map_size = size;
	cq->hdr = map;
	cq->slots = (struct uroce_cqe *)((uint8_t *)map + UROCE_RING_HDR_SIZE);
	cq->inl = (struct uroce_cqe_inl *)((uint8_t *)map + UROCE_CQ_INL_OFFSET(entries));
	cq->entries = entries;
	cq->mask = entries - 1;
	cq->cqe = entries;
	cq->hdr->entries = entries;
	cq->hdr->stride = UROCE_CQE_SIZE;
	return 0;
}

static void emu_cq_rep(const struct emu_cq *cq, struct uroce_create_cq_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->handle = cq->handle;
	r->entries = cq->entries;
	r->cqe = cq->cqe;
	r->map_size = cq->map_size;
}

int emu_cq_create(struct emu_ctx *c, const struct uroce_create_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out)
{
	struct emu_channel *ch = NULL;

	if (q->cqe < 1 || q->cqe >= EMU_MAX_CQE)
		return -EINVAL;
	if (q->channel != -1) {
		ch = emu_ctx_get(c, (uint32_t)q->channel, EMU_OBJ_CHANNEL);
		if (!ch)
			return -EINVAL;
	}
	if (q->comp_vector != 0)
		return -EINVAL; /* num_comp_vectors is 1 */
	if (q->flags & ~UROCE_CQ_F_TIMESTAMP)
		return -EINVAL;
	if (c->nobj[EMU_OBJ_CQ] >= EMU_MAX_CQ || emu_ctx_quota(c, EMU_OBJ_CQ))
		return -ENOMEM;
	struct emu_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ctx = c;
	cq->user_handle = q->user_handle;
	cq->channel = ch;
	cq->want_ts = q->flags & UROCE_CQ_F_TIMESTAMP;
	int rc = emu_cq_ring_new(cq, q->cqe);
	if (rc) {
		free(cq);
		return rc;
	}
	rc = emu_ctx_charge(c, cq->map_size);
	if (!rc) {
		rc = emu_ctx_put(c, EMU_OBJ_CQ, cq, &cq->handle);
		if (rc)
			emu_ctx_uncharge(c, cq->map_size);
	}
	if (rc) {
		emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
		free(cq);
		return rc;
	}
	if (ch)
		ch->refcnt++;
	emu_cq_rep(cq, r);
	*memfd_out = cq->memfd;
	return 0;
}

int emu_cq_resize(struct emu_ctx *c, const struct uroce_resize_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out)
{
	struct emu_cq *cq = emu_ctx_get(c, q->handle, EMU_OBJ_CQ);

	if (!cq || q->cqe < 1 || q->cqe >= EMU_MAX_CQE)
		return -EINVAL;
	uint32_t cons = __atomic_load_n(&cq->hdr->cons, __ATOMIC_ACQUIRE);
	uint32_t used = cq->prod - cons;
	if (used > cq->entries || q->cqe < used)
		return -EINVAL;
	struct emu_cq nq = *cq;
	int rc = emu_cq_ring_new(&nq, q->cqe);
	if (rc)
		return rc;
	/* charge the new ring while the old one is still held (both exist
	 * during the copy) */
	rc = emu_ctx_charge(c, nq.map_size);
	if (rc) {
		emu_shm_destroy(nq.memfd, nq.map, nq.map_size);
		return rc;
	}
	emu_ctx_uncharge(c, cq->map_size);
	/* keep the free-running indices: the shim continues at cons */
	for (uint32_t k = 0, i = cons; k < used; k++, i++) { /* used <= both sizes */
		nq.slots[i & nq.mask] = cq->slots[i & cq->mask];
		nq.inl[i & nq.mask] = cq->inl[i & cq->mask];
	}
	nq.hdr->cons = cons;
	nq.cons_seen = cons;
	nq.hdr->prod = cq->prod;
	nq.hdr->arm = __atomic_load_n(&cq->hdr->arm, __ATOMIC_ACQUIRE);
	nq.hdr->flags = cq->hdr->flags;
	emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
	*cq = nq;
	emu_cq_rep(cq, r);
	*memfd_out = cq->memfd;
	return 0;
}

int emu_cq_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_cq *cq = emu_ctx_get(c, handle, EMU_OBJ_CQ);

	if (!cq)
		return -EINVAL;
	if (cq->refcnt)
		return -EBUSY;
	if (cq->channel)
		cq->channel->refcnt--;
	emu_shm_destroy(cq->memfd, cq->map, cq->map_size);
	emu_ctx_uncharge(c, cq->map_size);
	emu_ctx_drop(c, handle);
	free(cq);
	return 0;
}

/* ---------------- SRQ ---------------- */

int emu_srq_create(struct emu_ctx *c, const struct uroce_create_srq_req *q,
		   struct uroce_create_srq_rep *r, int *memfd_out)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);

	if (!pd || q->max_wr < 1 || q->max_wr > EMU_MAX_SRQ_WR || q->max_sge > EMU_MAX_SRQ_SGE)
		return -EINVAL;
	if (c->nobj[EMU_OBJ_SRQ] >= EMU_MAX_SRQ || emu_ctx_quota(c, EMU_OBJ_SRQ))
		return -ENOMEM;
	struct emu_srq *srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	uint32_t sge = q->max_sge ? q->max_sge : 1;
	uint32_t entries = pow2_at_least(q->max_wr);
	uint32_t stride = emu_recv_stride(sge);
	size_t size = emu_ring_bytes(entries, stride);
	int rc = emu_ctx_charge(c, size);
	if (rc) {
		free(srq);
		return rc;
	}
	rc = emu_shm_create("uroce-srq", size, &srq->memfd, &srq->map);
	if (rc) {
		emu_ctx_uncharge(c, size);
		free(srq);
		return rc;
	}
	srq->map_size = size;
	srq->ctx = c;
	srq->pd = pd;
	srq->user_handle = q->user_handle;
	emu_ring_init(&srq->rq, srq->map, entries, stride);
	srq->max_wr = entries;
	srq->max_sge = (stride - UROCE_RECV_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (srq->max_sge > EMU_MAX_SRQ_SGE)
		srq->max_sge = EMU_MAX_SRQ_SGE;
	/* srq_limit is ignored at creation (ibv_create_srq(3)) */
	rc = emu_ctx_put(c, EMU_OBJ_SRQ, srq, &srq->handle);
	if (!rc) {
		rc = emu_db_alloc(c, EMU_OBJ_SRQ, srq, &srq->db_index);
		if (rc)
			emu_ctx_drop(c, srq->handle);
	}
	if (rc) {
		emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
		emu_ctx_uncharge(c, srq->map_size);
		free(srq);
		return rc;
	}
	pd->refcnt++;
	memset(r, 0, sizeof(*r));
	r->handle = srq->handle;
	r->db_index = srq->db_index;
	r->max_wr = srq->max_wr;
	r->max_sge = srq->max_sge;
	r->entries = entries;
	r->stride = stride;
	r->map_size = size;
	*memfd_out = srq->memfd;
	return 0;
}

/* A new ring of at least want entries (same stride) holding the WQEs not
 * yet consumed at the same free-running indices, so the shim's producer
 * index stays valid; the old ring goes. */
static int emu_srq_regrow(struct emu_srq *srq, uint32_t want)
{
	uint32_t entries = pow2_at_least(want);
	uint32_t stride = srq->rq.stride;
	size_t size = emu_ring_bytes(entries, stride);
	uint32_t prod = emu_ring_prod(&srq->rq), cons = srq->rq.cons;
	void *map;
	int mfd;
	/* the new ring is charged while the old one still exists */
	int rc = emu_ctx_charge(srq->ctx, size);

	if (rc)
		return rc;
	rc = emu_shm_create("uroce-srq", size, &mfd, &map);
	if (rc) {
		emu_ctx_uncharge(srq->ctx, size);
		return rc;
	}
	struct emu_ring nr = { 0 };
	emu_ring_init(&nr, map, entries, stride);
	/* prod is the application's and may have moved since the caller
	 * checked it: copy at most one old ring's worth, and never more than
	 * the new ring holds */
	uint32_t n = prod - cons;
	if (n > srq->rq.entries || n > entries) {
		emu_shm_destroy(mfd, map, size);
		emu_ctx_uncharge(srq->ctx, size);
		return -EINVAL;
	}
	for (uint32_t k = 0, i = cons; k < n; k++, i++)
		memcpy(nr.slots + (size_t)(i & nr.mask) * stride,
		       srq->rq.slots + (size_t)(i & srq->rq.mask) * stride, stride);
	nr.cons = cons;
	nr.prod_seen = cons;
	nr.hdr->cons = cons;
	nr.hdr->prod = prod;
	nr.hdr->flags = srq->rq.hdr->flags;
	emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
	emu_ctx_uncharge(srq->ctx, srq->map_size);
	srq->rq = nr;
	srq->memfd = mfd;
	srq->map = map;
	srq->map_size = size;
	return 0;
}

int emu_srq_modify_ex(struct emu_ctx *c, const struct uroce_modify_srq_req *q,
		      struct uroce_create_srq_rep *r, int *memfd_out)
{
	struct emu_srq *srq = emu_ctx_get(c, q->handle, EMU_OBJ_SRQ);

	if (!srq || (q->attr_mask & ~(unsigned)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) || !q->attr_mask)
		return -EINVAL;
	uint32_t max_wr = srq->max_wr;
	bool grow = false;
	if (q->attr_mask & IBV_SRQ_MAX_WR) {
		/* shrinking below what is posted is refused; growing past
		 * the ring needs a new one (only with somewhere to send it) */
		int posted = emu_ring_pending(&srq->rq);
		if (q->attr.max_wr < 1 || q->attr.max_wr > EMU_MAX_SRQ_WR || posted < 0 ||
		    q->attr.max_wr < (uint32_t)posted)
			return -EINVAL;
		grow = q->attr.max_wr > srq->rq.entries;
		if (grow && !r)
			return -EINVAL;
		max_wr = q->attr.max_wr;
	}
	if (q->attr_mask & IBV_SRQ_LIMIT) {
		if (q->attr.srq_limit > max_wr)
			return -EINVAL;
	}
	if (grow) {
		int rc = emu_srq_regrow(srq, max_wr);
		if (rc)
			return rc;
		max_wr = srq->rq.entries; /* the ring really holds this many */
	}
	srq->max_wr = max_wr;
	if (q->attr_mask & IBV_SRQ_LIMIT)
		srq->srq_limit = q->attr.srq_limit;
	if (r && (q->attr_mask & IBV_SRQ_MAX_WR)) {
		memset(r, 0, sizeof(*r));
		r->handle = srq->handle;
		r->db_index = srq->db_index;
		r->max_wr = srq->max_wr;
		r->max_sge = srq->max_sge;
		r->entries = srq->rq.entries;
		r->stride = srq->rq.stride;
		r->map_size = srq->map_size;
		*memfd_out = srq->memfd; /* the same ring unless it grew */
	}
	return 0;
}

int emu_srq_modify(struct emu_ctx *c, const struct uroce_modify_srq_req *q)
{
	return emu_srq_modify_ex(c, q, NULL, NULL);
}

int emu_srq_query(struct emu_ctx *c, uint32_t handle, struct ibv_srq_attr *a)
{
	struct emu_srq *srq = emu_ctx_get(c, handle, EMU_OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->max_wr = srq->max_wr;
	a->max_sge = srq->max_sge;
	a->srq_limit = srq->srq_limit;
	return 0;
}

int emu_srq_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_srq *srq = emu_ctx_get(c, handle, EMU_OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (srq->refcnt)
		return -EBUSY;
	if (srq->xref)
		emu_xsrq_fini(srq);
	emu_db_free(c, srq->db_index);
	srq->pd->refcnt--;
	emu_shm_destroy(srq->memfd, srq->map, srq->map_size);
	emu_ctx_uncharge(c, srq->map_size);
	emu_ctx_drop(c, handle);
	free(srq);
	return 0;
}

/* ---------------- QP ---------------- */

static int emu_qpn_alloc(struct emu_dev *d, struct emu_qp *qp)
{
	if (d->nqp >= EMU_MAX_QP)
		return -ENOMEM;
	/* round robin so a destroyed QPN is not reused at once (late
	 * packets of the old QP must not reach a new one) */
	for (uint32_t k = 0; k < EMU_QPN_TABLE; k++) {
		uint32_t n = d->next_qpn++;
		if (d->next_qpn >= EMU_QPN_TABLE)
			d->next_qpn = EMU_QPN_FIRST;
		if (n < EMU_QPN_FIRST || d->qpn[n])
			continue;
		d->qpn[n] = qp;
		d->nqp++;
		qp->qpn = n;
		return 0;
	}
	return -ENOMEM;
}

/* Ring geometry of one QP: computed once, used for the charge, the mapping,
 * the reported caps and the reply. */
struct emu_qp_layout {
	uint32_t sq_entries, sq_stride, rq_entries, rq_stride;
	size_t sq_size, size;
};

/* validate: objects exist, type and caps within limits; *cap is adjusted
 * (no receive queue with an SRQ) */
static int emu_qp_check(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct emu_srq **srqp, struct ibv_qp_cap *cap)
{
	struct emu_srq *srq = NULL;

	if (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC && q->qp_type != IBV_QPT_UD &&
	    q->qp_type != IBV_QPT_XRC_SEND && q->qp_type != IBV_QPT_XRC_RECV)
		return -EOPNOTSUPP;
	/* XRC QPs have no receive queue: INI QPs only send, TGT QPs take
	 * the XRC SRQ each request names */
	if (q->qp_type == IBV_QPT_XRC_SEND || q->qp_type == IBV_QPT_XRC_RECV) {
		if (q->srq != -1)
			return -EINVAL;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (q->srq != -1) {
		srq = emu_ctx_get(c, (uint32_t)q->srq, EMU_OBJ_SRQ);
		if (!srq)
			return -EINVAL;
	}
	if (cap->max_send_wr > EMU_MAX_QP_WR || cap->max_send_sge > EMU_MAX_SGE ||
	    cap->max_inline_data > EMU_MAX_INLINE)
		return -EINVAL;
	if (srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else if (cap->max_recv_wr > EMU_MAX_QP_WR || cap->max_recv_sge > EMU_MAX_SGE ||
		   (emu_qp_no_rq(q->qp_type) && cap->max_recv_wr)) {
		return -EINVAL;
	}
	*srqp = srq;
	return 0;
}

static void emu_qp_layout(const struct ibv_qp_cap *cap, bool srq, struct emu_qp_layout *l)
{
	l->sq_entries = pow2_at_least(cap->max_send_wr ? cap->max_send_wr : 1);
	uint32_t sbody = cap->max_send_sge * (uint32_t)sizeof(struct uroce_sge);
	if (cap->max_inline_data > sbody)
		sbody = cap->max_inline_data;
	if (sbody < sizeof(struct uroce_sge))
		sbody = sizeof(struct uroce_sge);
	l->sq_stride = pow2_at_least(UROCE_SEND_WQE_HDR + sbody);
	l->rq_entries = srq ? 0 : pow2_at_least(cap->max_recv_wr ? cap->max_recv_wr : 1);
	uint32_t rsge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	l->rq_stride = srq ? 0 : emu_recv_stride(rsge);
	l->sq_size = emu_ring_bytes(l->sq_entries, l->sq_stride);
	size_t rq_size = srq ? 0 : emu_ring_bytes(l->rq_entries, l->rq_stride);
	l->size = l->sq_size + (srq ? 4096 : rq_size); /* an unused RQ header with an SRQ */
}

/* report what the rings can really hold (>= requested) */
static void emu_qp_real_caps(struct emu_qp *qp, const struct emu_qp_layout *l)
{
	qp->cap.max_send_wr = l->sq_entries;
	qp->cap.max_send_sge = (l->sq_stride - UROCE_SEND_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (qp->cap.max_send_sge > EMU_MAX_SGE)
		qp->cap.max_send_sge = EMU_MAX_SGE;
	qp->cap.max_inline_data = l->sq_stride - UROCE_SEND_WQE_HDR;
	if (qp->cap.max_inline_data > EMU_MAX_INLINE)
		qp->cap.max_inline_data = EMU_MAX_INLINE;
	qp->cap.max_recv_wr = l->rq_entries;
	qp->cap.max_recv_sge = !l->rq_entries ? 0 :
		(l->rq_stride - UROCE_RECV_WQE_HDR) / (uint32_t)sizeof(struct uroce_sge);
	if (qp->cap.max_recv_sge > EMU_MAX_SGE)
		qp->cap.max_recv_sge = EMU_MAX_SGE;
}

static void emu_qp_reply(const struct emu_qp *qp, const struct emu_qp_layout *l,
			 struct uroce_create_qp_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->handle = qp->handle;
	r->qpn = qp->qpn;
	r->db_index = qp->db_index;
	r->cap = qp->cap;
	r->sq_entries = l->sq_entries;
	r->sq_stride = l->sq_stride;
	r->rq_entries = l->rq_entries;
	r->rq_stride = l->rq_stride;
	r->sq_offset = 0;
	r->rq_offset = l->sq_size;
	r->map_size = l->size;
}

/* The rings' memory: a memfd of their own (ar NULL, or rings larger than
 * the arena takes) or a piece of the arena (*off in its chunk); what it
 * costs is charged to c (an arena chunk is charged whole when it is made,
 * arena.c). *new_fd: an arena chunk's descriptor to send, or -1. */
static int emu_qp_rings_get(struct emu_ctx *c, struct emu_qp *qp, const struct emu_qp_layout *l,
			    struct uroce_create_qp_arena_rep *ar, int *new_fd, uint64_t *off)
{
	/* the transport's private copy of the send queue */
	uint64_t charge = (uint64_t)l->sq_entries * (l->sq_stride + sizeof(struct emu_xport_swqe));
	bool own = !ar || l->size > UROCE_ARENA_MAX_RINGS;
	struct emu_arena_piece p;
	int rc;

	*new_fd = -1;
	*off = 0;
	if (own)
		charge += l->size;
	rc = emu_ctx_charge(c, charge);
	if (rc)
		return rc;
	qp->charged = charge;
	qp->map_size = l->size;
	if (own) {
		rc = emu_shm_create("uroce-qp", l->size, &qp->memfd, &qp->map);
		if (!rc && ar) {
			ar->chunk = UROCE_ARENA_OWN;
			ar->flags = UROCE_ARENA_F_NEW;
			ar->chunk_size = l->size;
		}
	} else {
		rc = emu_arena_alloc(c, l->size, &p);
		if (!rc) {
			qp->memfd = -1;
			qp->map = p.map;
			*new_fd = p.new_fd;
			*off = p.off;
			ar->chunk = p.chunk;
			ar->flags = p.new_fd >= 0 ? UROCE_ARENA_F_NEW : 0;
			ar->chunk_size = UROCE_ARENA_CHUNK;
		}
	}
	if (rc)
		emu_ctx_uncharge(c, charge);
	return rc;
}

static void emu_qp_rings_put(struct emu_ctx *c, struct emu_qp *qp)
{
	if (qp->memfd >= 0)
		emu_shm_destroy(qp->memfd, qp->map, qp->map_size);
	else
		emu_arena_free(c, qp->map, qp->map_size);
	emu_ctx_uncharge(c, qp->charged);
}

/* validate -> allocate -> publish; ar NULL: CREATE_QP (a memfd of its
 * own in *fd_out), else CREATE_QP_ARENA; xref: an XRC TGT QP of that
 * domain, which has no PD, CQ or doorbell of its own (q names none) and
 * whose rings never leave the daemon */
static int emu_qp_new(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		      struct emu_xrcd_ref *xref, struct uroce_create_qp_rep *r,
		      struct uroce_create_qp_arena_rep *ar, int *fd_out)
{
	struct emu_dev *d = c->dev;
	struct emu_pd *pd = xref ? NULL : emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	struct emu_cq *scq = xref ? NULL : emu_ctx_get(c, q->send_cq, EMU_OBJ_CQ);
	struct emu_cq *rcq = xref ? NULL : emu_ctx_get(c, q->recv_cq, EMU_OBJ_CQ);
	struct emu_srq *srq = NULL;
	struct ibv_qp_cap cap = q->cap;
	struct emu_qp_layout l;
	uint64_t off;
	int rc, new_fd;

	if ((!pd || !scq || !rcq) != !!xref || (q->qp_type == IBV_QPT_XRC_RECV) != !!xref)
		return -EINVAL;
	if (emu_ctx_quota(c, EMU_OBJ_QP))
		return -ENOMEM; /* before the queue memory is made */
	rc = emu_qp_check(c, q, &srq, &cap);
	if (rc)
		return rc;

	struct emu_qp *qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	emu_qp_layout(&cap, srq || emu_qp_no_rq(q->qp_type), &l);
	rc = emu_qp_rings_get(c, qp, &l, ar, &new_fd, &off);
	if (rc) {
		free(qp);
		return rc;
	}
	qp->dev = d;
	qp->ctx = c;
	qp->type = (enum ibv_qp_type)q->qp_type;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->srq = srq;
	qp->sq_sig_all = q->sq_sig_all != 0;
	qp->user_handle = q->user_handle;
	emu_ring_init(&qp->sq, qp->map, l.sq_entries, l.sq_stride);
	emu_ring_init(&qp->rq, (uint8_t *)qp->map + l.sq_size, l.rq_entries, l.rq_stride);
	emu_qp_real_caps(qp, &l);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.cap = qp->cap;
	qp->attr.port_num = 1;

	rc = emu_qpn_alloc(d, qp);
	if (rc)
		goto err_shm;
	rc = emu_ctx_put(c, EMU_OBJ_QP, qp, &qp->handle);
	if (rc)
		goto err_qpn;
	/* a TGT QP has nothing the client posts to: no doorbell, and its
	 * rings never leave the daemon */
	qp->db_index = UINT32_MAX;
	rc = xref ? 0 : emu_db_alloc(c, EMU_OBJ_QP, qp, &qp->db_index);
	if (rc)
		goto err_handle;
	if (xref) {
		qp->xref = xref;
		xref->users++;
	} else {
		pd->refcnt++;
		scq->refcnt++;
		rcq->refcnt++;
	}
	if (srq)
		srq->refcnt++;
	c->dev->xops->qp_init(qp);

	emu_qp_reply(qp, &l, r);
	r->sq_offset += off;
	r->rq_offset += off;
	*fd_out = xref ? -1 : new_fd >= 0 ? new_fd : qp->memfd;
	return 0;

err_handle:
	emu_ctx_drop(c, qp->handle);
err_qpn:
	d->qpn[qp->qpn] = NULL;
	d->nqp--;
err_shm:
	/* a chunk made for this QP stays in the arena (charged, empty) */
	if (new_fd >= 0)
		close(new_fd);
	emu_qp_rings_put(c, qp);
	free(qp);
	return rc;
}

int emu_qp_create(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		  struct uroce_create_qp_rep *r, int *memfd_out)
{
	return emu_qp_new(c, q, NULL, r, NULL, memfd_out);
}

int emu_qp_create_x(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		    struct emu_xrcd_ref *xref, struct uroce_create_qp_rep *r, int *memfd_out)
{
	return emu_qp_new(c, q, xref, r, NULL, memfd_out);
}

int emu_qp_create_arena(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct uroce_create_qp_arena_rep *r, int *fd_out, bool *fd_close)
{
	memset(r, 0, sizeof(*r));
	int rc = emu_qp_new(c, q, NULL, &r->qp, r, fd_out);
	/* an arena chunk's descriptor is the client's once sent; a QP's own
	 * memfd stays with it (as CREATE_QP's) */
	*fd_close = !rc && r->chunk != UROCE_ARENA_OWN;
	return rc;
}

int emu_qp_modify_op(struct emu_ctx *c, const struct uroce_modify_qp_req *q)
{
	struct emu_qp *qp = emu_qp_of_handle(c, q->handle);

	if (!qp)
		return -EINVAL;
	return c->dev->xops->qp_modify(qp, &q->attr, (int)q->attr_mask);
}

int emu_qp_query_op(struct emu_ctx *c, const struct uroce_query_qp_req *q,
		    struct uroce_query_qp_rep *r)
{
	struct emu_qp *qp = emu_qp_of_handle(c, q->handle);

	if (!qp)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	int rc = c->dev->xops->qp_query(qp, &r->attr, (int)q->attr_mask);
	if (rc)
		return rc;
	r->cap = qp->cap;
	r->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int emu_qp_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_qp *qp = emu_ctx_get(c, handle, EMU_OBJ_QP);
	struct emu_dev *d = c->dev;

	if (emu_ctx_get(c, handle, EMU_OBJ_XQP))
		return emu_xrc_qp_close(c, handle);
	if (!qp)
		return -EINVAL;
	if (qp->xref && emu_xrc_tgt_handover(c, handle, qp))
		return 0; /* another context has it open: it lives on there */
	if (qp->mcast_groups && !c->dead)
		return -EBUSY; /* rxe: detach multicast groups first */
	/* WRs posted before the destroy call are on the wire with a NIC (its
	 * doorbell is microseconds, a destroy a firmware command): send what
	 * the doorbells announce before the QP goes. Datagram protocols over
	 * UD (libfabric's rxd) post their last ACK and close right away. */
	if (!c->dead)
		emu_ctx_doorbells(c);
	emu_mcast_detach_all(qp);
	/* type 2 windows bound through this QP lose their binding (a scan of
	 * every handle: only when there are windows) */
	for (uint32_t i = 0; c->nobj[EMU_OBJ_MW] && i < c->nh; i++) {
		if (c->h[i].type == EMU_OBJ_MW) {
			struct emu_mw *mw = c->h[i].obj;
			if (mw->qp == qp)
				emu_mw_release(mw);
		}
	}
	d->qpn[qp->qpn] = NULL;
	d->nqp--;
	c->dev->xops->qp_fini(qp);
	if (d->nqp == 0)
		emu_ctx_reap(d); /* no transport state can point at a zombie now */
	emu_db_free(c, qp->db_index);
	if (qp->xref) {
		qp->xref->users--; /* pd, recv_cq, srq: an XRC SRQ's, borrowed */
	} else {
		qp->pd->refcnt--;
		qp->send_cq->refcnt--;
		qp->recv_cq->refcnt--;
		if (qp->srq)
			qp->srq->refcnt--;
	}
	__atomic_fetch_or(&qp->sq.hdr->flags, UROCE_RING_F_ERROR, __ATOMIC_RELEASE);
	emu_qp_rings_put(c, qp);
	emu_ctx_drop(c, handle);
	free(qp);
	return 0;
}

/* ---------------- AH ---------------- */

int emu_ah_create(struct emu_ctx *c, const struct uroce_create_ah_req *q, uint32_t *handle)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);

	if (!pd)
		return -EINVAL;
	if (c->nobj[EMU_OBJ_AH] >= EMU_MAX_AH || emu_ctx_quota(c, EMU_OBJ_AH))
		return -ENOMEM;
	struct emu_ah *ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	int rc = c->dev->xops->av_resolve(c->dev, &q->attr, &ah->av);
	if (rc) {
		free(ah);
		return rc;
	}
	ah->ctx = c;
	ah->pd = pd;
	ah->attr = q->attr;
	rc = emu_ctx_put(c, EMU_OBJ_AH, ah, &ah->handle);
	if (rc) {
		free(ah);
		return rc;
	}
	pd->refcnt++;
	*handle = ah->handle;
	return 0;
}

int emu_ah_destroy(struct emu_ctx *c, uint32_t handle)
{
	struct emu_ah *ah = emu_ctx_get(c, handle, EMU_OBJ_AH);

	if (!ah)
		return -EINVAL;
	ah->pd->refcnt--;
	emu_ctx_drop(c, handle);
	free(ah);
	return 0;
}

int emu_mcast_op(struct emu_ctx *c, const struct uroce_mcast_req *q, bool attach)
{
	struct emu_qp *qp = emu_ctx_get(c, q->qp, EMU_OBJ_QP);

	if (!qp)
		return -EINVAL;
	return attach ? emu_mcast_attach(qp, &q->gid) : emu_mcast_detach(qp, &q->gid);
}

struct emu_mcast *emu_mcast_find(struct emu_dev *d, const union ibv_gid *gid)
{
	if (!d->mcast)
		return NULL;
	for (unsigned i = 0; i < EMU_MAX_MCAST_GRP; i++)
		if (d->mcast[i].nqp && !memcmp(d->mcast[i].gid.raw, gid->raw, 16))
			return &d->mcast[i];
	return NULL;
}

int emu_mcast_attach(struct emu_qp *qp, const union ibv_gid *gid)
{
	struct emu_dev *d = qp->dev;

	if (qp->type != IBV_QPT_UD || !emu_gid_is_mcast(gid) || !d->mcast)
		return -EINVAL;
	struct emu_mcast *m = emu_mcast_find(d, gid);
	if (!m) {
		for (unsigned i = 0; i < EMU_MAX_MCAST_GRP && !m; i++)
			if (!d->mcast[i].nqp)
				m = &d->mcast[i];
		if (!m)
			return -ENOMEM;
		m->gid = *gid;
	}
	for (uint32_t i = 0; i < m->nqp; i++)
		if (m->qp[i] == qp)
			return 0; /* attaching twice is not an error in rxe */
	if (m->nqp == EMU_MAX_MCAST_ATT)
		return -ENOMEM;
	m->qp[m->nqp++] = qp;
	qp->mcast_groups++;
	return 0;
}

int emu_mcast_detach(struct emu_qp *qp, const union ibv_gid *gid)
{
	struct emu_mcast *m = emu_mcast_find(qp->dev, gid);

	if (!m)
		return -EINVAL;
	for (uint32_t i = 0; i < m->nqp; i++) {
		if (m->qp[i] != qp)
			continue;
		m->qp[i] = m->qp[--m->nqp];
		qp->mcast_groups--;
		return 0;
	}
	return -EINVAL;
}

/* Called on QP destroy: leave every group. */
void emu_mcast_detach_all(struct emu_qp *qp)
{
	struct emu_dev *d = qp->dev;

	for (unsigned g = 0; qp->mcast_groups && d->mcast && g < EMU_MAX_MCAST_GRP; g++) {
		struct emu_mcast *m = &d->mcast[g];
		for (uint32_t i = 0; i < m->nqp; i++) {
			if (m->qp[i] == qp) {
				m->qp[i] = m->qp[--m->nqp];
				qp->mcast_groups--;
				break;
			}
		}
	}
}

/* Destroy order: QPs (they reference everything), SRQs, AHs, MWs, MRs,
 * device memory, CQs, channels, PDs. */
void emu_ctx_destroy(struct emu_ctx *c)
{
	static const enum emu_obj_type order[] = {
		EMU_OBJ_XQP, EMU_OBJ_QP, EMU_OBJ_SRQ, EMU_OBJ_XRCD, EMU_OBJ_AH, EMU_OBJ_MW,
		EMU_OBJ_MR, EMU_OBJ_DM, EMU_OBJ_CQ, EMU_OBJ_CHANNEL, EMU_OBJ_PD,
	};
	struct emu_dev *d = c->dev;

	c->dead = true;
	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (uint32_t i = 0; i < c->nh; i++) {
			if (c->h[i].type != order[k])
				continue;
			int rc;
			switch (order[k]) {
			case EMU_OBJ_XQP: /* fall through: emu_qp_destroy closes it */
			case EMU_OBJ_QP: rc = emu_qp_destroy(c, i); break;
			case EMU_OBJ_XRCD: rc = emu_xrcd_close(c, i); break;
			case EMU_OBJ_SRQ: rc = emu_srq_destroy(c, i); break;
			case EMU_OBJ_AH: rc = emu_ah_destroy(c, i); break;
			case EMU_OBJ_MW: rc = emu_mw_dealloc(c, i); break;
			case EMU_OBJ_MR: rc = emu_mr_dereg(c, i); break;
			case EMU_OBJ_DM: rc = emu_dm_free(c, i); break;
			case EMU_OBJ_CQ: rc = emu_cq_destroy(c, i); break;
			case EMU_OBJ_CHANNEL: rc = emu_channel_destroy(c, i); break;
			case EMU_OBJ_PD: rc = emu_pd_dealloc(c, i); break;
			default: rc = 0; break;
			}
			if (rc)
				EMU_LOG(ERR, "ctx pid %d: teardown of handle %u failed: %d\n",
					(int)c->pid, i, rc);
		}
	}
	emu_arena_fini(c); /* its QPs are gone */
	if (c->db)
		munmap(c->db, UROCE_DB_PAGE_SIZE);
	if (c->db_memfd >= 0)
		close(c->db_memfd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	emu_evq_drop(d, &c->async_q);
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->sock >= 0)
		close(c->sock);
	emu_pin_detach(c); /* the pinned pages go when the client's ring does */
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	if (c->maps_fd >= 0)
		close(c->maps_fd);
	c->mem_fd = c->maps_fd = c->pidfd = -1;
	c->db = NULL;
	c->db_memfd = c->wake_fd = c->async_fd = c->sock = -1;
	if (c->uid_slot >= 0) {
		d->uids[c->uid_slot].nobj[EMU_OBJ_NONE]--;
		c->uid_slot = -1;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		d->ctxs = c->next;
	if (c->next)
		c->next->prev = c->prev;
	d->nctx--;
	free(c->h);
	free(c->dbs);
	c->h = NULL;
	c->dbs = NULL;
	c->nh = c->ndbs = 0;
	/* Another context's QP may still hold this one as the owner of a
	 * message in progress (a multi-packet WRITE into our memory): keep
	 * the struct as a zombie (memory access then fails with -EFAULT)
	 * until no QP exists on the device. */
	c->next = d->zombies;
	d->zombies = c;
	if (d->nqp == 0)
		emu_ctx_reap(d);
}

void emu_dev_core_fini(struct emu_dev *d)
{
	while (d->ctxs)
		emu_ctx_destroy(d->ctxs);
	emu_ctx_reap(d);
	emu_xrc_dev_fini(d);
	free(d->qpn);
	free(d->mcast);
	free(d->keys);
	free(d->uids);
	d->uids = NULL;
	d->nuids = 0;
	d->qpn = NULL;
	d->mcast = NULL;
	d->keys = NULL;
}
