/* SPDX-License-Identifier: MIT */
/* Control-socket client without a verbs context (client.c): liburoce's and
 * the tools'. */
#ifndef URV_CLIENT_H
#define URV_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uroce/abi.h>

/* root or this process's effective uid */
bool urv_owner_trusted(uid_t uid);
/* The run directory dir opened if it is trusted (owner, mode, parent:
 * docs/security.md), else -1 with *why set (NULL: it does not exist or
 * cannot be read). */
int urv_run_dir_open(const char *dir, const char **why);
/* name in the run directory dfd is a socket of this user or root */
bool urv_sock_trusted(int dfd, const char *name);
/* Connect to a control socket; -1 with errno, EPERM when the daemon
 * (SO_PEERCRED) is neither this user nor root. */
int urv_connect(const char *path);
/* One request (fds_in passed along), one reply: 0 or a negative errno
 * (-EACCES: the daemon's access rule refused us, -ENODEV: it is gone).
 * The reply must bring nfds_out descriptors (-EPROTO otherwise); a
 * negative nfds_out: up to -nfds_out, those it does not bring are -1. */
int urv_ctl_raw(int sock, uint32_t *seq, uint32_t op, const void *req,
		size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		int nfds_in, int *fds_out, int nfds_out);
/* The second half of urv_ctl_raw: the reply to request seq s. */
int urv_ctl_reply(int sock, uint32_t s, void *rep, size_t rep_len, int *fds_out, int nfds_out);
/* HELLO with this process's /proc/self/mem; fds: the doorbell page, the
 * wake pipe's write end, the async pipe's read end. -EPROTONOSUPPORT when
 * the daemon speaks another ABI version: rep->abi_version is the daemon's,
 * 0 when it did not say (docs/verbs.md, "ABI version"). */
int urv_hello(int sock, uint32_t *seq, struct uroce_hello_rep *rep, int fds[3]);

#endif
