/* SPDX-License-Identifier: MIT */
/* uroced core: CQE production (cq.c) and the event pipes: completion
 * channels and the async fd (event.c). */
#ifndef EMU_CQ_H
#define EMU_CQ_H

#include "emu_obj.h"

/* ------------------------------------------------------------------ */
/* Completion queues and events                                        */
/* ------------------------------------------------------------------ */
/* Append a CQE (the caller fills everything but timestamp_ns). Handles
 * overrun (-ENOSPC: CQ_ERR raised, CQ dead) and the arm state. */
int emu_cq_push(struct emu_cq *cq, const struct uroce_cqe *cqe);
/* The timestamp for a CQE of cq: 0 unless it wants them; *now is the
 * clock as read for this batch (0: not yet; read here on first need). */
uint64_t emu_cq_stamp(const struct emu_cq *cq, uint64_t *now);
/* emu_cq_push in two steps, so a burst publishes each ring once: write the
 * CQE (stamped ts) and, when inl, its companion slot (the used segments and
 * cqe->byte_len bytes), without making them visible; then publish: prod
 * and the arm check, for everything written since the last publish. */
int emu_cq_put(struct emu_cq *cq, const struct uroce_cqe *cqe,
	       const struct uroce_cqe_inl *inl, uint64_t ts);
void emu_cq_publish(struct emu_cq *cq);
/* Free slots left (entries - (prod - cons)); 0 when in error. */
uint32_t emu_cq_room(const struct emu_cq *cq);
/* Write one async record (kept in the context's backlog if the pipe is full). */
void emu_async_event(struct emu_ctx *c, uint64_t element, enum ibv_event_type type);
/* Send one record of rec bytes to the event pipe fd, or queue it behind
 * the ones already waiting. Never blocks. */
void emu_evq_put(struct emu_dev *d, struct emu_evq *q, int fd, const void *rec, uint32_t len);
/* Write what the readers made room for; call while d->evq_pend != NULL. */
void emu_evq_flush(struct emu_dev *d, uint64_t now);
/* Forget q's backlog (its pipe is being closed). */
void emu_evq_drop(struct emu_dev *d, struct emu_evq *q);
/* A pipe for events the daemon writes: *wfd (O_NONBLOCK, kept by the
 * daemon) and *rfd (blocking, for the application). 0 or -errno. */
int emu_evq_pipe(int *rfd, int *wfd);

#endif /* EMU_CQ_H */
