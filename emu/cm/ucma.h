/* SPDX-License-Identifier: MIT */
/* The kernel's rdma_ucm device (drivers/infiniband/core/ucma.c + cma.c),
 * emulated in the daemon: librdmacm writes its commands on an fd the shim
 * turns into UROCE_OP_UCMA_* control requests (include/uroce/abi.h,
 * docs/cm.md). One ucma state per device, owned by its engine thread. */
#ifndef EMU_CM_UCMA_H
#define EMU_CM_UCMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xport.h" /* the layers below: core, net, transport */

/* Limits against hostile clients (docs/cm.md): files, queued events and
 * multicast joins per context (all its files). Past them: -ENOMEM /
 * -EMFILE, an event is dropped (logged), and a connection request whose
 * listener's context is full is rejected. Ids, listening ids and
 * connections are charged to the context and its uid with every other
 * object (EMU_OBJ_CM_*, --limit / --uid-limit cm_id, cm_listen, cm_conn). */
#define EMU_UCMA_MAX_FILES  64u
#define EMU_UCMA_MAX_EVENTS 8192u  /* per context, ~3 MB */
#define EMU_UCMA_MAX_MCS    1024u  /* multicast joins per context */

/* UROCE_OP_UCMA_OPEN: a new file of c; *rfd = the event pipe's read end
 * (the caller sends and closes it). 0 or -errno. */
int emu_ucma_open(struct emu_ctx *c, uint32_t *handle, int *rfd);
/* UROCE_OP_UCMA_CMD: q is the request body of len bytes (header and
 * q->in bytes of command). The response goes to out (room for
 * UROCE_UCMA_MAX_OUT), its length to *olen. 0 or -errno. */
int emu_ucma_cmd(struct emu_ctx *c, const void *body, size_t len, void *out, size_t *olen);
/* UROCE_OP_UCMA_CLOSE: destroy file handle of c and its ids. */
int emu_ucma_close(struct emu_ctx *c, uint32_t handle);
/* The client went away: every file of c, as UCMA_CLOSE. */
void emu_ucma_ctx_gone(struct emu_ctx *c);
/* Timers (address resolution timeouts); the engine calls
 * it every few iterations. */
void emu_ucma_poll(struct emu_dev *d, uint64_t now_ns);
/* When emu_ucma_poll has work next (UINT64_MAX: none): a sleeping engine
 * wakes for it */
uint64_t emu_ucma_next_deadline(struct emu_dev *d);
/* The device goes away (daemon stop): free its state. */
void emu_ucma_dev_fini(struct emu_dev *d);

#endif
