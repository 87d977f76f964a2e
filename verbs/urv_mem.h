/* SPDX-License-Identifier: MIT */
/* liburoce: registered memory the daemon maps (mr_map.c), private pages
 * moved onto a memfd while registered (mr_move.c), on-demand paging
 * (odp.c). */
#ifndef URV_MEM_H
#define URV_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "urv_obj.h"

/* mr_map.c: hand the daemon the file behind a registration, if it has one
 * (private anonymous pages moved onto one first) */
bool urv_mr_map_on(void);
void urv_mr_map(struct urv_context *c, struct urv_mr *umr);

/* odp.c: on-demand paging */
void urv_odp_caps(struct ibv_device_attr_ex *a);
bool urv_mr_odp(const struct urv_mr *umr);
int urv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sg, uint32_t num_sge);

/* mr_move.c: private anonymous pages moved onto a memfd while registered;
 * munmap/mremap/fork with such pages and daemon-mapped MRs */
struct urv_moved;
void urv_mv_setup(void);
void urv_mv_fork_init(void);
void urv_mv_lock(void);
void urv_mv_unlock(void);
struct urv_moved *urv_mv_get(uintptr_t s, uintptr_t e, int *fd);
struct urv_moved *urv_mv_of_file(unsigned maj, unsigned min, uint64_t ino);
void urv_mv_track(struct urv_mr *umr);
void urv_mv_release(struct urv_mr *umr);

#endif /* URV_MEM_H */
