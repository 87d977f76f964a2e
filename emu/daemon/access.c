/* SPDX-License-Identifier: MIT */
/* Access rule of the control sockets. File permissions are the first
 * gate; the SO_PEERCRED check of every accepted connection is the one
 * that counts (a socket file's mode can be changed, a descriptor passed
 * on). Default: the daemon's own uid and root. System-wide: also the
 * uids and groups given on the command line. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

static bool emu_num(const char *v, unsigned long max, unsigned long *out, int base)
{
	char *end;

	errno = 0;
	unsigned long n = strtoul(v, &end, base);
	if (!*v || *end || errno || n > max || v[0] == '-')
		return false;
	*out = n;
	return true;
}

static int emu_parse_uid(const char *v, uid_t *out)
{
	unsigned long n;
	struct passwd *pw;

	if (emu_num(v, 0xfffffffeul, &n, 10)) {
		*out = (uid_t)n;
		return 0;
	}
	pw = *v ? getpwnam(v) : NULL;
	if (!pw)
		return -1;
	*out = pw->pw_uid;
	return 0;
}

static int emu_parse_gid(const char *v, gid_t *out)
{
	unsigned long n;
	struct group *gr;

	if (emu_num(v, 0xfffffffeul, &n, 10)) {
		*out = (gid_t)n;
		return 0;
	}
	gr = *v ? getgrnam(v) : NULL;
	if (!gr)
		return -1;
	*out = gr->gr_gid;
	return 0;
}

int emu_access_opt(struct emu_access *a, enum emu_access_opt_kind k, const char *v)
{
	unsigned long n;
	uid_t u;
	gid_t g;

	switch (k) {
	case EMU_ACC_SOCKET_MODE:
		/* owner rw always; x bits and setuid/sticky mean nothing on a
		 * socket and hint at a typo */
		if (!emu_num(v, 0777, &n, 8) || (n & 0111) || (n & 0600) != 0600) {
			fprintf(stderr, "uroced: bad --socket-mode '%s' (octal, 0600..0666)\n", v);
			return -1;
		}
		a->sock_mode = (unsigned)n;
		a->sock_mode_set = true;
		return 0;
	case EMU_ACC_ALLOW_UID:
	case EMU_ACC_PRIV_UID: {
		bool priv = k == EMU_ACC_PRIV_UID;
		if ((priv ? a->npriv : a->nuids) == EMU_ACCESS_MAX || emu_parse_uid(v, &u)) {
			fprintf(stderr, "uroced: bad --%s '%s' (user name or uid, at most %d)\n",
				priv ? "privileged-uid" : "allow-uid", v, EMU_ACCESS_MAX);
			return -1;
		}
		if (priv)
			a->priv_uids[a->npriv++] = u;
		else
			a->uids[a->nuids++] = u;
		return 0;
	}
	case EMU_ACC_SOCKET_GROUP:
	case EMU_ACC_ALLOW_GID:
		if (a->ngids == EMU_ACCESS_MAX || emu_parse_gid(v, &g) ||
		    (k == EMU_ACC_SOCKET_GROUP && a->sock_gid_set)) {
			fprintf(stderr, "uroced: bad --%s '%s' (group name or gid%s)\n",
				k == EMU_ACC_SOCKET_GROUP ? "socket-group" : "allow-gid", v,
				k == EMU_ACC_SOCKET_GROUP ? ", once" : ", at most 16");
			return -1;
		}
		a->gids[a->ngids++] = g;
		if (k == EMU_ACC_SOCKET_GROUP) {
			a->sock_gid = g;
			a->sock_gid_set = true;
		}
		return 0;
	}
	return -1;
}

bool emu_access_shared(const struct emu_access *a)
{
	return a->nuids || a->ngids || (a->sock_mode_set && (a->sock_mode & 066));
}

/* "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/" (trailing slashes ignored) */
static void emu_parent(const char *dir, char *out, size_t len)
{
	snprintf(out, len, "%s", dir);
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
	char *s = strrchr(out, '/');
	if (!s)
		snprintf(out, len, ".");
	else if (s == out)
		out[1] = 0;
	else
		*s = 0;
}

int emu_run_dir_prepare(const char *dir, bool shared)
{
	uid_t me = geteuid();
	mode_t want = shared ? 0755 : 0700;
	char parent[4096];
	struct stat st;

	if (mkdir(dir, want) < 0 && errno != EEXIST) {
		fprintf(stderr, "uroced: run directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) < 0) {
		fprintf(stderr, "uroced: run directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	/* someone who made it first (or can write it) could plant a socket
	 * or read what clients send */
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 022)) {
		fprintf(stderr, "uroced: run directory %s is unsafe (%s): it must be a directory "
			"of uid %u, not a symlink, not writable by group or others\n", dir,
			S_ISLNK(st.st_mode) ? "a symlink" : !S_ISDIR(st.st_mode) ? "not a directory" :
			st.st_uid != me ? "owned by another uid" : "group/other-writable",
			(unsigned)me);
		return -1;
	}
	/* whoever can write the parent can rename ours away and put theirs
	 * in its place, unless the parent is sticky (as /tmp is) */
	emu_parent(dir, parent, sizeof(parent));
	if (stat(parent, &st) < 0 || (st.st_uid != me && st.st_uid != 0) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
		fprintf(stderr, "uroced: run directory %s is unsafe: its parent %s must belong to "
			"uid %u or root and be sticky or not writable by group or others\n", dir,
			parent, (unsigned)me);
		return -1;
	}
	/* a system-wide daemon's clients must reach the socket */
	if (shared && chmod(dir, 0755) < 0) {
		fprintf(stderr, "uroced: run directory %s: chmod: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

int emu_access_sock_perms(const struct emu_access *a, const char *path)
{
	mode_t mode = 0600;

	if (a->sock_mode_set) {
		mode = a->sock_mode;
	} else if (emu_access_shared(a)) {
		/* only the socket's group can be a file-permission gate;
		 * anyone else allowed needs "other" access, and the
		 * SO_PEERCRED check keeps the rest out */
		bool only_group = !a->nuids && a->sock_gid_set;
		for (unsigned i = 0; i < a->ngids; i++)
			only_group &= a->gids[i] == a->sock_gid;
		mode = only_group ? 0660 : 0666;
	}
	if (a->sock_gid_set && chown(path, (uid_t)-1, a->sock_gid) < 0)
		return -errno;
	if (chmod(path, mode) < 0)
		return -errno;
	return 0;
}

static bool emu_gid_listed(const struct emu_access *a, gid_t g)
{
	for (unsigned i = 0; i < a->ngids; i++)
		if (a->gids[i] == g)
			return true;
	return false;
}

bool emu_access_allowed(const struct emu_access *a, int fd, const struct ucred *cr)
{
	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	for (unsigned i = 0; i < a->nuids; i++)
		if (a->uids[i] == cr->uid)
			return true;
	if (!a->ngids)
		return false;
	if (emu_gid_listed(a, cr->gid))
		return true;
	/* supplementary groups as they were at connect() */
	gid_t small[64], *gs = small;
	socklen_t len = sizeof(small);
	bool ok = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gs, &len) < 0) {
		if (errno != ERANGE || len > 65536 * sizeof(gid_t) || !(gs = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gs, &len) < 0)
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t) && !ok; i++)
		ok = emu_gid_listed(a, gs[i]);
	if (gs != small)
		free(gs);
	return ok;
}

/* CAP_NET_RAW in the effective set of /proc/<pid>/status ("CapEff:", hex) */
static bool emu_pid_net_raw(pid_t pid)
{
	char path[48], line[128];
	bool raw = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			raw = (caps >> 13) & 1; /* CAP_NET_RAW */
			break;
		}
	}
	fclose(f);
	return raw;
}

/* /proc/<pid>/<name> is the same file as /proc/self/<name> (fd < 0:
 * ns/user), or as the open descriptor fd (mem) */
static bool emu_pid_same(pid_t pid, const char *name, int fd)
{
	char path[48];
	struct stat a, b;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	if (stat(path, &a))
		return false;
	if (fd >= 0) {
		rc = fstat(fd, &b);
	} else {
		snprintf(path, sizeof(path), "/proc/self/%s", name);
		rc = stat(path, &b);
	}
	return !rc && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool emu_access_privileged(const struct emu_access *a, uid_t uid, pid_t pid, int mem_fd)
{
	for (unsigned i = 0; i < a->npriv; i++)
		if (a->priv_uids[i] == uid)
			return true;
	if (pid <= 0 || mem_fd < 0)
		return false;
	/* the kernel's capable(CAP_NET_RAW): the capability in the initial
	 * (here: the daemon's) user namespace, not in one the client made;
	 * read by pid, then the pid must still name the process the
	 * context's mem descriptor is bound to (a reused pid has another
	 * /proc/<pid>/mem inode) */
	return emu_pid_net_raw(pid) && emu_pid_same(pid, "ns/user", -1) &&
	       emu_pid_same(pid, "mem", mem_fd);
}
