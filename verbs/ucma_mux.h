/* SPDX-License-Identifier: MIT */
/* ucma_mux.c: an rdma_cm file that reaches several uroce devices. A
 * wildcard listener hears requests on every device, as the kernel's
 * (docs/cm.md, "Wildcard listeners"): the shim opens a secondary file on
 * each other device, listens there too, and the application's fd becomes
 * an epoll fd over every file's event pipe. Ids on a secondary file carry
 * its index in their top bits (URV_MUX_SHIFT). */
#ifndef URV_UCMA_MUX_H
#define URV_UCMA_MUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define URV_MUX_MAX 8          /* other devices' connections (per process) */
/* handle = k << 28 | the daemon's handle, k = 1 + the connection's index:
 * the same for every file of the process, so that an id keeps its handle
 * when it migrates to another file */
#define URV_MUX_SHIFT 28
#define URV_MUX_MASK ((1u << URV_MUX_SHIFT) - 1)

struct urv_mux_sec {
	bool open;
	int conn;              /* index in the connection table */
	uint32_t handle;       /* the daemon's file handle */
	int rfd;               /* its event pipe (O_NONBLOCK), -1 once at EOF */
};

struct urv_mux_shadow {
	uint32_t id;           /* the application's listener (primary handle) */
	uint32_t h[URV_MUX_MAX + 1]; /* its copy on secondary k (0: none) */
};

struct urv_mux {
	int prim_fd;           /* the primary's pipe once the fd is an epoll fd; -1 */
	struct urv_mux_sec sec[URV_MUX_MAX + 1]; /* [k], k = 1 + connection index */
	struct urv_mux_shadow *shadows;
	unsigned nshadows;
};

/* app_fd becomes an epoll fd over its primary pipe (kept as prim_fd): done
 * at open when there are several uroce devices, so that a thread already
 * waiting for events sees the secondaries added later. 0 or -errno. */
int urv_mux_init(struct urv_mux *m, int app_fd);
/* One request on connection conn of the table. 0 or -errno. */
int urv_mux_call(int conn, uint32_t op, const void *req, size_t len, void *rep, size_t rep_len,
		 int *fds_out, int nfds_out);
/* The secondary file of m on the device whose socket is path (opened,
 * and app_fd turned into an epoll fd, at the first): its index k >= 1, or
 * -errno. urv_mux_sec_k: the same for index k of an existing connection. */
int urv_mux_sec_get(struct urv_mux *m, int app_fd, const char *path);
int urv_mux_sec_k(struct urv_mux *m, int app_fd, unsigned k);
/* Wait for one event byte on app_fd in epoll mode: 0 with *src the file
 * it came from (0 primary), -EAGAIN (O_NONBLOCK), -EINTR, -ENODEV (the
 * primary's pipe at EOF: its daemon went away). */
int urv_mux_wait(struct urv_mux *m, int app_fd, unsigned *src);
/* The primary's pipe replaced (DEVICE_REMOVAL's): rfd takes its place. */
void urv_mux_set_primary(struct urv_mux *m, int app_fd, int rfd);
/* The application file goes: close the secondaries (UCMA_CLOSE). */
void urv_mux_close(struct urv_mux *m);
/* fork: the child's copies are not its own */
void urv_mux_atfork_child(void);
/* ucma.c's HELLO on a new connection */
int urv_ucma_hello(int sock, uint32_t *seq);

#endif
