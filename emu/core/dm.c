/* SPDX-License-Identifier: MIT */
/* Device memory (ibv_alloc_dm): memory of the device that the application
 * maps and copies to and from (ibv_memcpy_to_dm / _from_dm, in the shim)
 * and registers as a zero-based MR (ibv_reg_dm_mr) for local and remote
 * access. Here it is a sealed memfd of the daemon, mapped by both sides,
 * charged to the context's memory limit like its queues (security.md).
 * An MR over it (emu_dm_reg_mr, mr.c, with the other MRs) is a
 * daemon-mapped piece (mrmap.c) at the DM's addresses
 * in the kernel half (emu_obj.h, EMU_DM_VA_BASE): nothing the client names
 * can be confused with them, and a lookup that misses cannot reach any
 * other memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_obj.h"
#include "emu_int.h"

/* mlx5's largest log_align_req is the page: an allocation starts on one */
#define EMU_DM_LOG_ALIGN_MAX 12u

int emu_dm_alloc(struct emu_ctx *c, const struct uroce_alloc_dm_req *q,
		 struct uroce_alloc_dm_rep *r, int *memfd_out)
{
	struct emu_dm *dm;
	int rc;

	if (q->comp_mask || q->log_align_req > EMU_DM_LOG_ALIGN_MAX || !q->length ||
	    q->length > emu_dm_max_size())
		return -EINVAL;
	if (c->nobj[EMU_OBJ_DM] >= EMU_MAX_DM || emu_ctx_quota(c, EMU_OBJ_DM))
		return -ENOMEM;
	if (!(dm = calloc(1, sizeof(*dm))))
		return -ENOMEM;
	dm->ctx = c;
	dm->length = q->length;
	dm->size = (size_t)((q->length + 4095) & ~(uint64_t)4095);
	dm->memfd = -1;
	if ((rc = emu_ctx_charge(c, dm->size)))
		goto err_free;
	if ((rc = emu_shm_create("uroce-dm", dm->size, &dm->memfd, (void **)&dm->map)))
		goto err_charge;
	if ((rc = emu_ctx_put(c, EMU_OBJ_DM, dm, &dm->handle)))
		goto err_shm;
	dm->va = EMU_DM_VA_BASE + ((uint64_t)dm->handle << EMU_DM_VA_SHIFT);
	*memfd_out = dm->memfd;
	r->handle = dm->handle;
	r->rsvd = 0;
	r->length = dm->length;
	return 0;
err_shm:
	emu_shm_destroy(dm->memfd, dm->map, dm->size);
err_charge:
	emu_ctx_uncharge(c, dm->size);
err_free:
	free(dm);
	return rc;
}

int emu_dm_free(struct emu_ctx *c, uint32_t handle)
{
	struct emu_dm *dm = emu_ctx_get(c, handle, EMU_OBJ_DM);

	if (!dm)
		return -EINVAL;
	if (dm->mrs)
		return -EBUSY;
	emu_ctx_drop(c, handle);
	emu_shm_destroy(dm->memfd, dm->map, dm->size);
	emu_ctx_uncharge(c, dm->size);
	free(dm);
	return 0;
}

/* ibv_import_dm through a second ibv_context of the same connection */
int emu_dm_import(struct emu_ctx *c, uint32_t handle, uint64_t *length, int *memfd_out)
{
	struct emu_dm *dm = emu_ctx_get(c, handle, EMU_OBJ_DM);

	if (!dm)
		return -EINVAL;
	*length = dm->length;
	*memfd_out = dm->memfd;
	return 0;
}
