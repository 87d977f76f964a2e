/* SPDX-License-Identifier: MIT */
/* Core-private helpers shared between the core's files. */
#ifndef EMU_EMU_INT_H
#define EMU_EMU_INT_H

#include "emu_obj.h"
#include "emu_dev.h"

void emu_random_init(const char *dev);
uint32_t emu_random_u32(void);
int emu_key_alloc(struct emu_dev *d, uint8_t type, void *obj, uint32_t *key);
void emu_key_free(struct emu_dev *d, uint32_t key);
void *emu_key_get(struct emu_dev *d, uint32_t key, uint8_t type);
void emu_mw_release(struct emu_mw *mw);

static inline uint32_t pow2_at_least(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

static inline size_t page_align(size_t x)
{
	return (x + 4095) & ~(size_t)4095;
}

/* ring.c: the shared rings of CQs, SRQs and QPs (sizes, layout) */
size_t emu_ring_bytes(uint32_t entries, uint32_t stride);
uint32_t emu_recv_stride(uint32_t sge);
void emu_ring_init(struct emu_ring *r, void *base, uint32_t entries, uint32_t stride);

/* handle table of a context */
int emu_ctx_put(struct emu_ctx *c, enum emu_obj_type type, void *obj, uint32_t *handle);
void emu_ctx_drop(struct emu_ctx *c, uint32_t handle);
/* doorbell index allocation */
/* XRC (xrcd.c, qp.c) */
static inline bool emu_qp_no_rq(uint32_t qp_type)
{
	return qp_type == IBV_QPT_XRC_SEND || qp_type == IBV_QPT_XRC_RECV;
}
int emu_qp_create_x(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		    struct emu_xrcd_ref *xref, struct uroce_create_qp_rep *r, int *memfd_out);
int emu_xrc_qp_close(struct emu_ctx *c, uint32_t handle);
bool emu_xrc_tgt_handover(struct emu_ctx *c, uint32_t handle, struct emu_qp *qp);
void emu_xsrq_fini(struct emu_srq *srq);
void emu_xrc_dev_fini(struct emu_dev *d);
int emu_db_alloc(struct emu_ctx *c, enum emu_obj_type type, void *obj, uint32_t *idx);
void emu_db_free(struct emu_ctx *c, uint32_t idx);

#endif
