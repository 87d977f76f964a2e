/* SPDX-License-Identifier: MIT */
/* uroce-ctl's connection to a daemon: the run directory and socket are
 * trusted exactly as the shim trusts them (verbs/client.c), then HELLO as
 * an ordinary client (the daemon knows our uid from SO_PEERCRED). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "client.h"
#include "ctl.h"

int ctl_fail(const struct ctl *c, const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s: %s\n", c->prog, c->dev, what, strerror(err < 0 ? -err : err));
	return CTL_FAILED;
}

int ctl_set_run_dir(struct ctl *c, const char *dir)
{
	if (!dir) {
		if (!uroce_run_dir(c->run_dir, sizeof(c->run_dir)))
			return 0;
	} else if (strlen(dir) < sizeof(c->run_dir)) {
		snprintf(c->run_dir, sizeof(c->run_dir), "%s", dir);
		return 0;
	}
	fprintf(stderr, "%s: run directory name too long\n", c->prog);
	return CTL_USAGE;
}

/* The run directory, checked: its descriptor, or -1 after one line. */
static int ctl_run_dir(const struct ctl *c)
{
	const char *why = NULL;
	int dfd = urv_run_dir_open(c->run_dir, &why);

	if (dfd >= 0)
		return dfd;
	if (why)
		fprintf(stderr, "%s: %s: run directory not trusted (%s; docs/security.md)\n",
			c->prog, c->run_dir, why);
	else
		fprintf(stderr, "%s: no uroced running (%s: %s)\n", c->prog, c->run_dir,
			strerror(errno));
	return -1;
}

static int ctl_hello(struct ctl *c, const char *path)
{
	static struct uroce_hello_rep r;
	int out[3];
	int rc = urv_hello(c->sock, &c->seq, &r, out);

	if (rc == -EPROTONOSUPPORT)
		fprintf(stderr, "%s: %s: the daemon speaks ABI version %u (0: before 4), this tool %u\n",
			c->prog, path, r.abi_version, UROCE_ABI_VERSION);
	if (rc)
		return rc;
	/* doorbell page, wake pipe, async pipe: a tool posts nothing */
	for (int i = 0; i < 3; i++)
		close(out[i]);
	return 0;
}

int ctl_open(struct ctl *c, const char *dev)
{
	char path[sizeof(c->run_dir) + UROCE_DEV_NAME_MAX + 8];
	char sock[UROCE_DEV_NAME_MAX + 8];

	c->dev = dev;
	int dfd = ctl_run_dir(c);
	if (dfd < 0)
		return c->fail_status;
	snprintf(sock, sizeof(sock), "%s%s", dev, UROCE_SOCK_SUFFIX);
	errno = 0;
	bool ok = urv_sock_trusted(dfd, sock);
	int e = errno;
	close(dfd);
	if (!ok) {
		if (e == ENOENT)
			fprintf(stderr, "%s: no uroced serves %s (no %s/%s)\n", c->prog, dev,
				c->run_dir, sock);
		else
			fprintf(stderr, "%s: %s/%s: not a socket of this user or root\n", c->prog,
				c->run_dir, sock);
		return c->fail_status;
	}
	snprintf(path, sizeof(path), "%s/%s", c->run_dir, sock);
	c->sock = urv_connect(path);
	if (c->sock < 0 && errno == ECONNREFUSED && c->skip_stale)
		return CTL_STALE; /* a daemon's leftover socket */
	if (c->sock < 0) {
		if (errno == EPERM)
			fprintf(stderr, "%s: %s: the daemon is not run by this user or root\n",
				c->prog, path);
		else
			fprintf(stderr, "%s: no uroced serves %s (%s: %s)\n", c->prog, dev, path,
				strerror(errno));
		return c->fail_status;
	}
	struct timeval tv = { .tv_sec = 5 }; /* a wedged daemon must not hang us */
	setsockopt(c->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int rc = ctl_hello(c, path);
	if (rc == -EACCES) {
		fprintf(stderr, "%s: %s: the daemon's access rule refuses uid %u\n", c->prog, path,
			(unsigned)geteuid());
		ctl_close(c);
		return c->fail_status;
	}
	if (rc) {
		if (rc != -EPROTONOSUPPORT) /* ctl_hello named both versions */
			fprintf(stderr, "%s: %s: hello: %s\n", c->prog, path, strerror(-rc));
		ctl_close(c);
		return c->fail_status;
	}
	return 0;
}

void ctl_close(struct ctl *c)
{
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}

int ctl_call(struct ctl *c, uint32_t op, const void *req, size_t rlen, void *rep,
	     size_t replen, int fd_in)
{
	return urv_ctl_raw(c->sock, &c->seq, op, req, rlen, rep, replen, &fd_in, fd_in >= 0,
			   NULL, 0);
}

static int ctl_name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int ctl_list_devices(struct ctl *c, char names[][UROCE_DEV_NAME_MAX], int max)
{
	int dfd = ctl_run_dir(c), n = 0;
	if (dfd < 0)
		return -c->fail_status;
	DIR *dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return -c->fail_status;
	}
	size_t sl = strlen(UROCE_SOCK_SUFFIX);
	for (struct dirent *de; (de = readdir(dp)) && n < max;) {
		size_t l = strlen(de->d_name);
		if (l <= sl || l - sl >= UROCE_DEV_NAME_MAX ||
		    strcmp(de->d_name + l - sl, UROCE_SOCK_SUFFIX) ||
		    !urv_sock_trusted(dirfd(dp), de->d_name))
			continue;
		snprintf(names[n++], UROCE_DEV_NAME_MAX, "%.*s", (int)(l - sl), de->d_name);
	}
	closedir(dp);
	qsort(names, (size_t)n, UROCE_DEV_NAME_MAX, ctl_name_cmp);
	if (!n)
		fprintf(stderr, "%s: no uroced running (no sockets in %s)\n", c->prog, c->run_dir);
	return n ? n : -c->fail_status;
}
