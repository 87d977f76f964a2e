/* SPDX-License-Identifier: MIT */
/* Protection domains (ibv_alloc_pd, ibv_dealloc_pd). Handles are scoped to the context, so another context's handle is
 * simply unknown (-EINVAL); an object still referenced is -EBUSY, as the
 * kernel answers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_int.h"

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
