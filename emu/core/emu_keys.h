/* SPDX-License-Identifier: MIT */
/* uroced core: lkey / rkey checks, memory window binding and
 * invalidation (keys.c). */
#ifndef EMU_KEYS_H
#define EMU_KEYS_H

#include "emu_obj.h"

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */
/* access_needed: IBV_ACCESS_* bits; 0 = local read (always allowed).
 * On failure returns NULL and *err = -EINVAL (no such key / wrong PD /
 * invalid window), -EACCES (access), -ERANGE (bounds). */
struct emu_mr *emu_mr_check_lkey(struct emu_pd *pd, uint32_t lkey, uint64_t addr,
				 uint64_t len, unsigned access_needed, int *err);
/* Remote access through an MR rkey or a bound MW: PD of qp, bounds
 * (overflow-safe), access. *proc_addr = process address of va, *owner =
 * context whose memory it is. Returns the MR (for a window, the MR it is
 * bound to) or NULL with *err as above, or -EFAULT for ODP memory the
 * process does not map with the permission the access needs. */
struct emu_mr *emu_mr_check_rkey(struct emu_qp *qp, uint32_t rkey, uint64_t va,
				 uint64_t len, unsigned access_needed,
				 uint64_t *proc_addr, struct emu_ctx **owner, int *err);
/* The whole range rkey names for the peer (an MR's iova and length, a
 * valid window's), for an operation on "the region" (FLUSH level MR); the
 * key is then checked by emu_mr_check_rkey like any other. 0 or -EINVAL. */
int emu_rkey_extent(struct emu_qp *qp, uint32_t rkey, uint64_t *va, uint64_t *len);
/* Bind a window (BIND_MW WQE or ibv_bind_mw): mw_handle in qp's context,
 * new_rkey (type 2: the application's key byte; type 1: ignored, the
 * daemon bumps the key byte), MR by lkey, range within the MR's iova
 * space, length 0 = unbind. Returns 0 (and *rkey_out) or -EINVAL/-EACCES. */
int emu_mw_bind(struct emu_qp *qp, uint32_t mw_handle, uint32_t new_rkey,
		uint32_t mr_lkey, uint64_t addr, uint64_t length, unsigned access,
		uint32_t *rkey_out);
/* LOCAL_INV / SEND_WITH_INV: invalidate a type 2 window of pd. 0 or
 * -EINVAL (no such valid window in pd, type 1, or an MR key). */
int emu_key_invalidate(struct emu_pd *pd, uint32_t rkey);

#endif /* EMU_KEYS_H */
