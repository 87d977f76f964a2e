/* SPDX-License-Identifier: MIT */
/* Who may use the daemon: the run directory it trusts, the socket file's
 * owner/group/mode, and the SO_PEERCRED check of every connection
 * (docs/security.md, "Access rule"). */
#ifndef EMU_ACCESS_H
#define EMU_ACCESS_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#define EMU_ACCESS_MAX 16

struct emu_access {
	uid_t uids[EMU_ACCESS_MAX];   /* --allow-uid */
	unsigned nuids;
	gid_t gids[EMU_ACCESS_MAX];   /* --allow-gid (and --socket-group) */
	unsigned ngids;
	gid_t sock_gid;               /* --socket-group */
	bool sock_gid_set;
	unsigned sock_mode;           /* --socket-mode */
	bool sock_mode_set;
	uid_t priv_uids[EMU_ACCESS_MAX]; /* --privileged-uid */
	unsigned npriv;
};

enum emu_access_opt_kind {
	EMU_ACC_SOCKET_GROUP,
	EMU_ACC_SOCKET_MODE,
	EMU_ACC_ALLOW_UID,
	EMU_ACC_ALLOW_GID,
	EMU_ACC_PRIV_UID,
};

/* one access option: 0, or -1 after one line on stderr */
int emu_access_opt(struct emu_access *a, enum emu_access_opt_kind k, const char *v);
/* true when other users than the daemon's own are let in (system-wide) */
bool emu_access_shared(const struct emu_access *a);
/* creates the run directory if needed and checks that it is ours, not a
 * symlink and not writable by others, in a parent others cannot rename it
 * out of: 0, or -1 after one line on stderr */
int emu_run_dir_prepare(const char *dir, bool shared);
/* socket file mode and group for the access rule: 0 or -errno */
int emu_access_sock_perms(const struct emu_access *a, const char *path);
/* the SO_PEERCRED (and SO_PEERGROUPS) check of a new connection */
bool emu_access_allowed(const struct emu_access *a, int fd, const struct ucred *cr);
/* May a client use what the kernel reserves to CAP_NET_RAW (controlled
 * Q_Keys, sends to QP0/QP1): its uid is a --privileged-uid, or process
 * pid has CAP_NET_RAW in the daemon's user namespace, pid being still the
 * process whose /proc/<pid>/mem mem_fd is (docs/security.md,
 * "Privileged operations") */
bool emu_access_privileged(const struct emu_access *a, uid_t uid, pid_t pid, int mem_fd);

#endif
