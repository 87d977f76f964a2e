/* SPDX-License-Identifier: MIT */
/* liburoce: registered memory pinned through the connection's io_uring
 * (mr_pin.c), shared file memory the daemon maps (mr_map.c), on-demand
 * paging (odp.c). */
#ifndef URV_MEM_H
#define URV_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "urv_obj.h"

/* mr_map.c: hand the daemon the file behind a shared mapping of a
 * registration, if it has one */
bool urv_mr_map_on(void);
void urv_mr_map(struct urv_context *c, struct urv_mr *umr);

/* odp.c: on-demand paging */
void urv_odp_caps(struct ibv_device_attr_ex *a);
bool urv_mr_odp(const struct urv_mr *umr);
int urv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sg, uint32_t num_sge);

/* mr_pin.c: registered pages pinned through the connection's io_uring.
 * urv_pin_reg: 0 with r filled (pinned, or unpinned and why), or -errno
 * for ibv_reg_mr (what an HCA refuses too). */
struct urv_pin;
int urv_pin_reg(struct urv_context *c, void *addr, size_t len, unsigned access,
		struct urv_pin_ref *r);
void urv_pin_unreg(struct urv_context *c, const struct urv_pin_ref *r);
void urv_pin_close(struct urv_context *c);

#endif /* URV_MEM_H */
