/* SPDX-License-Identifier: MIT */
/* On-demand paging. The daemon reaches a client's memory through its
 * /proc/<pid>/mem descriptor, which follows the process's current
 * mapping and faults a page in on access, as an ODP HCA does; what is
 * left here is what registration and ibv_advise_mr must check. The MR
 * of an ODP registration is never mapped into the daemon (emu_mr_map
 * refuses it): a later munmap + mmap at the same address must be seen
 * anew, which a mapping of the old pages would not. */
#include <errno.h>
#include <string.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_int.h"

bool emu_mr_implicit(uint64_t addr, uint64_t len, unsigned access)
{
	/* ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...) */
	return addr == 0 && len == UINT64_MAX && (access & IBV_ACCESS_ON_DEMAND);
}

/* An advise entry's MR, as mlx5's get_prefetchable_mr answers: an
 * unknown key or one that is not an ODP MR is -ENOENT, a window's key
 * -EINVAL, another PD's MR or a write prefetch on an MR the device may
 * not write -EPERM. */
static struct emu_mr *emu_advise_mr(struct emu_pd *pd, uint32_t lkey, uint32_t advice,
				    int *err)
{
	struct emu_dev *d = pd->ctx->dev;
	struct emu_mr *mr = emu_key_get(d, lkey, EMU_OBJ_MR);

	*err = 0;
	if (!mr || mr->lkey != lkey || !(mr->access & IBV_ACCESS_ON_DEMAND)) {
		*err = emu_key_get(d, lkey, EMU_OBJ_MW) ? -EINVAL : -ENOENT;
		return NULL;
	}
	if (mr->pd != pd || (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			     !(mr->access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_ATOMIC)))) {
		*err = -EPERM;
		return NULL;
	}
	return mr;
}

int emu_mr_advise(struct emu_ctx *c, const struct uroce_advise_mr_req *q,
		  struct uroce_advise_mr_rep *r)
{
	struct emu_pd *pd = emu_ctx_get(c, q->pd, EMU_OBJ_PD);
	bool flush = q->flags & IBV_ADVISE_MR_FLAG_FLUSH;
	unsigned i;
	int err = 0;

	memset(r, 0, sizeof(*r));
	if (!pd || !q->num_sge || q->num_sge > UROCE_ADVISE_MAX_SGE ||
	    (q->flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH))
		return -EINVAL;
	if (q->advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    q->advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    q->advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	for (i = 0; i < q->num_sge; i++) {
		const struct uroce_sge *s = &q->sge[i];
		struct emu_mr *mr = emu_advise_mr(pd, s->lkey, q->advice, &err);

		if (!mr)
			break;
		/* within [iova, iova + length) of the MR? A synchronous
		 * prefetch outside it is -EFAULT (mlx5's pagefault_mr), an
		 * asynchronous one only does nothing there */
		uint64_t off = s->addr - mr->iova;
		bool in = s->addr >= mr->iova && off <= mr->length &&
			  s->length <= mr->length - off;
		if (!in && flush) {
			err = -EFAULT;
			break;
		}
		r->seg[i].addr = mr->addr + off;
		r->seg[i].len = in ? s->length : 0;
	}
	r->n_ok = i;
	r->err = err;
	return 0;
}
