/* SPDX-License-Identifier: MIT */
/* Address handles (ibv_create_ah: the address resolved through d->xops). Handles are scoped to the context, so another context's handle is
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
