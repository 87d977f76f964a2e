/* SPDX-License-Identifier: MIT */
/* Memory keys: the device-wide key table, lkey/rkey checks for MRs and
 * memory windows, window bind and invalidate. Keys are index << 8 | a
 * random variant byte, never the byte the index had last, so keys cannot be
 * guessed and a stale key misses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"
#include "emu_keys.h"
#include "emu_int.h"

#define EMU_KEYS_MAX (EMU_MAX_MR + EMU_MAX_MW + 1)

/* A fresh key byte for slot i: unpredictable, and never the byte of the
 * slot's previous key so a stale key of the last registration misses. */
static uint8_t emu_key_variant(uint8_t prev)
{
	uint8_t v = (uint8_t)emu_random_u32();

	return v == prev ? (uint8_t)(v + 1 + (uint8_t)(emu_random_u32() % 255)) : v;
}

int emu_key_alloc(struct emu_dev *d, uint8_t type, void *obj, uint32_t *key)
{
	uint32_t i, n = d->nkeys;

	for (uint32_t k = 0; k < n; k++) {
		i = d->key_hint + k;
		if (i >= n)
			i -= n;
		if (i == 0 || d->keys[i].type != EMU_OBJ_NONE)
			continue;
		goto found;
	}
	if (n >= EMU_KEYS_MAX)
		return -ENOMEM;
	uint32_t nn = n ? n * 2 : 256;
	if (nn > EMU_KEYS_MAX)
		nn = EMU_KEYS_MAX;
	struct emu_key_slot *t = realloc(d->keys, nn * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + n, 0, (nn - n) * sizeof(*t));
	d->keys = t;
	d->nkeys = nn;
	i = n ? n : 1;
found:
	d->keys[i].variant = emu_key_variant(d->keys[i].variant);
	d->keys[i].type = type;
	d->keys[i].obj = obj;
	d->key_hint = i + 1;
	*key = i << 8 | d->keys[i].variant;
	return 0;
}

void emu_key_free(struct emu_dev *d, uint32_t key)
{
	uint32_t i = key >> 8;

	if (i == 0 || i >= d->nkeys)
		return;
	d->keys[i].type = EMU_OBJ_NONE;
	d->keys[i].obj = NULL;
	/* variant keeps the freed key's byte: the next allocation avoids it */
}

/* The object behind key if the slot holds type. For MRs the full key must
 * match; windows carry their current key in mw->rkey, compared by callers. */
void *emu_key_get(struct emu_dev *d, uint32_t key, uint8_t type)
{
	uint32_t i = key >> 8;

	if (i == 0 || i >= d->nkeys || d->keys[i].type != type)
		return NULL;
	if (type == EMU_OBJ_MR && d->keys[i].variant != (uint8_t)key)
		return NULL;
	return d->keys[i].obj;
}

/* [a, a + len) inside [base, base + size), overflow-safe. */
static bool emu_range_ok(uint64_t a, uint64_t len, uint64_t base, uint64_t size)
{
	if (a < base)
		return false;
	uint64_t off = a - base;
	return off <= size && len <= size - off;
}

struct emu_mr *emu_mr_check_lkey(struct emu_pd *pd, uint32_t lkey, uint64_t addr,
				 uint64_t len, unsigned access_needed, int *err)
{
	struct emu_mr *mr = emu_key_get(pd->ctx->dev, lkey, EMU_OBJ_MR);

	if (!mr || mr->pd != pd || mr->lkey != lkey) {
		*err = -EINVAL;
		return NULL;
	}
	if (!emu_range_ok(addr, len, emu_mr_lbase(mr), mr->length)) {
		*err = -ERANGE;
		return NULL;
	}
	if ((mr->access & access_needed) != access_needed) {
		*err = -EACCES;
		return NULL;
	}
	*err = 0;
	return mr;
}

/* A remote access to an ODP MR reaches only pages the process maps with
 * the permission it needs (odp.c): elsewhere it is an access error. */
static struct emu_mr *emu_rkey_odp(struct emu_mr *mr, unsigned access_needed, uint64_t proc,
				   uint64_t len, int *err)
{
	bool write = access_needed & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);

	*err = 0;
	if (len && emu_mr_odp_access(mr, proc, len, write)) {
		*err = -EFAULT;
		return NULL;
	}
	return mr;
}

struct emu_mr *emu_mr_check_rkey(struct emu_qp *qp, uint32_t rkey, uint64_t va,
				 uint64_t len, unsigned access_needed,
				 uint64_t *proc_addr, struct emu_ctx **owner, int *err)
{
	struct emu_dev *d = qp->dev;
	struct emu_mr *mr = emu_key_get(d, rkey, EMU_OBJ_MR);

	if (mr) {
		if (mr->pd != qp->pd || mr->rkey != rkey) {
			*err = -EINVAL;
			return NULL;
		}
		if (!emu_range_ok(va, len, mr->iova, mr->length)) {
			*err = -ERANGE;
			return NULL;
		}
		if ((mr->access & access_needed) != access_needed) {
			*err = -EACCES;
			return NULL;
		}
		*proc_addr = mr->addr + (va - mr->iova);
		*owner = mr->ctx;
		return emu_rkey_odp(mr, access_needed, *proc_addr, len, err);
	}
	struct emu_mw *mw = emu_key_get(d, rkey, EMU_OBJ_MW);
	if (!mw || mw->rkey != rkey || mw->state != EMU_MW_VALID || !mw->mr) {
		*err = -EINVAL;
		return NULL;
	}
	/* type 1 windows belong to a PD, type 2 to the QP they were bound on */
	if (mw->pd != qp->pd || (mw->type == IBV_MW_TYPE_2 && mw->qp != qp)) {
		*err = -EINVAL;
		return NULL;
	}
	if (!emu_range_ok(va, len, mw->va, mw->length)) {
		*err = -ERANGE;
		return NULL;
	}
	if ((mw->access & access_needed) != access_needed) {
		*err = -EACCES;
		return NULL;
	}
	mr = mw->mr;
	*proc_addr = mr->addr + (va - mr->iova);
	*owner = mr->ctx;
	return emu_rkey_odp(mr, access_needed, *proc_addr, len, err);
}

int emu_rkey_extent(struct emu_qp *qp, uint32_t rkey, uint64_t *va, uint64_t *len)
{
	struct emu_mr *mr = emu_key_get(qp->dev, rkey, EMU_OBJ_MR);
	struct emu_mw *mw;

	if (mr) {
		*va = mr->iova;
		*len = mr->length;
		return 0;
	}
	mw = emu_key_get(qp->dev, rkey, EMU_OBJ_MW);
	if (!mw || mw->state != EMU_MW_VALID)
		return -EINVAL;
	*va = mw->va;
	*len = mw->length;
	return 0;
}

static void emu_mw_unbind(struct emu_mw *mw)
{
	if (mw->mr)
		mw->mr->mw_bound--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->state = EMU_MW_FREE;
	mw->va = mw->length = 0;
	mw->access = 0;
}

int emu_mw_bind(struct emu_qp *qp, uint32_t mw_handle, uint32_t new_rkey,
		uint32_t mr_lkey, uint64_t addr, uint64_t length, unsigned access,
		uint32_t *rkey_out)
{
	struct emu_mw *mw = emu_ctx_get(qp->ctx, mw_handle, EMU_OBJ_MW);
	struct emu_dev *d = qp->dev;

	if (!mw || mw->pd != qp->pd)
		return -EINVAL;
	/* the index part of a window key is fixed; only the key byte moves */
	if ((new_rkey >> 8) != (mw->rkey >> 8))
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_2 && mw->state == EMU_MW_VALID)
		return -EINVAL;
	/* LOCAL_WRITE is accepted and means nothing for a window, as rxe and
	 * mlx5 take it (rdma-core's suite binds with it) */
	if (access & ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
				 IBV_ACCESS_ZERO_BASED))
		return -EINVAL;
	if (access & IBV_ACCESS_ZERO_BASED)
		return -EINVAL; /* not supported */
	if (length == 0) {
		if (mw->type == IBV_MW_TYPE_2)
			return -EINVAL;
		emu_mw_unbind(mw);
		mw->rkey = new_rkey;
		d->keys[mw->rkey >> 8].variant = (uint8_t)new_rkey;
		if (rkey_out)
			*rkey_out = new_rkey;
		return 0;
	}
	struct emu_mr *mr = emu_key_get(d, mr_lkey, EMU_OBJ_MR);
	if (!mr || mr->lkey != mr_lkey || mr->pd != qp->pd)
		return -EINVAL;
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return -EACCES;
	/* remote write / atomic through a window needs local write on the MR */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -EACCES;
	if (!emu_range_ok(addr, length, mr->iova, mr->length))
		return -ERANGE;
	emu_mw_unbind(mw);
	mw->mr = mr;
	mr->mw_bound++;
	mw->qp = mw->type == IBV_MW_TYPE_2 ? qp : NULL;
	mw->va = addr;
	mw->length = length;
	mw->access = access;
	mw->state = EMU_MW_VALID;
	mw->rkey = new_rkey;
	d->keys[mw->rkey >> 8].variant = (uint8_t)new_rkey;
	if (rkey_out)
		*rkey_out = new_rkey;
	return 0;
}

int emu_key_invalidate(struct emu_pd *pd, uint32_t rkey)
{
	struct emu_mw *mw = emu_key_get(pd->ctx->dev, rkey, EMU_OBJ_MW);

	if (!mw || mw->rkey != rkey || mw->pd != pd || mw->type != IBV_MW_TYPE_2 ||
	    mw->state != EMU_MW_VALID)
		return -EINVAL;
	emu_mw_unbind(mw);
	return 0;
}

/* Used by dealloc: drop a window's binding. */
void emu_mw_release(struct emu_mw *mw)
{
	emu_mw_unbind(mw);
}
