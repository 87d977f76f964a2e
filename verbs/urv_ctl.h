/* SPDX-License-Identifier: MIT */
/* liburoce: control requests of a context (ctl.c), doorbells, the
 * daemon's liveness. */
#ifndef URV_CTL_H
#define URV_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "urv_dev.h"

/* ctl.c: one request, one reply on the control socket of a context
 * (client.h: without one) */
int urv_ctl(struct urv_context *c, uint32_t op, const void *req,
	    size_t req_len, void *rep, size_t rep_len, const int *fds_in,
	    int nfds_in, int *fds_out, int nfds_out);
/* The same in steps, for a caller that acts on the reply before the next
 * request of the connection: hold (the connection's context, its
 * ctl_lock taken), call (same arguments as urv_ctl), release. */
struct urv_context *urv_ctl_hold(struct urv_context *c);
int urv_ctl_held(struct urv_context *o, uint32_t op, const void *req,
		 size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		 int nfds_in, int *fds_out, int nfds_out);
void urv_ctl_release(struct urv_context *o);
/* true in a process that forked or was forked (ctl.c): the doorbell page and
 * the QP arena are then shared with processes this one does not order */
bool urv_ctl_forked_now(void);
void urv_doorbell(struct urv_context *c, uint32_t db_index);
bool urv_daemon_gone(struct urv_context *c);

#endif /* URV_CTL_H */
