/* SPDX-License-Identifier: MIT */
/* Memory windows (ibv_alloc_mw, ibv_dealloc_mw; binding: keys.c). Handles are scoped to the context, so another context's handle is
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
#include "emu_int.h"

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
