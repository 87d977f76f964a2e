/* SPDX-License-Identifier: MIT */
/* Wildcard listeners across devices. The kernel's rdma_cm listens on every
 * device for an id bound to 0.0.0.0 or ::; a uroce daemon serves the
 * devices it owns, each on its own socket and engine. So the shim does it:
 * a secondary rdma_cm file on each other uroce device (of this daemon or
 * another), a copy of the listener there, and the application's fd turned
 * into an epoll fd over every file's event pipe, so that poll, blocking
 * and O_NONBLOCK reads see the events of all of them (docs/cm.md). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "urv_ctl.h"
#include "ucma_mux.h"

#define MUX_CONNS URV_MUX_MAX

/* Connections to other devices' sockets, made on first use, kept for the
 * process (lock: one request at a time on each). */
static struct {
	char path[512];
	int sock;
	uint32_t seq;
} conns[MUX_CONNS];
static int nconns;
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;

static void sys_close(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

void urv_mux_atfork_child(void)
{
	pthread_mutex_init(&conn_lock, NULL);
	for (int i = 0; i < nconns; i++)
		sys_close(conns[i].sock);
	nconns = 0;
}

static int conn_of(const char *path)
{
	int i, s, ret;
	uint32_t seq = 0;

	for (i = 0; i < nconns; i++)
		if (!strcmp(conns[i].path, path))
			return conns[i].sock >= 0 ? i : -ENODEV;
	if (nconns >= MUX_CONNS || strlen(path) >= sizeof(conns[0].path))
		return -ENOMEM;
	s = urv_connect(path);
	if (s < 0)
		return -ENODEV;
	ret = urv_ucma_hello(s, &seq);
	if (ret) {
		sys_close(s);
		return ret;
	}
	strcpy(conns[nconns].path, path);
	conns[nconns].sock = s;
	conns[nconns].seq = seq;
	return nconns++;
}

int urv_mux_call(int conn, uint32_t op, const void *req, size_t len, void *rep, size_t rep_len,
		 int *fds_out, int nfds_out)
{
	int ret = -ENODEV;

	pthread_mutex_lock(&conn_lock);
	if (conn >= 0 && conn < nconns && conns[conn].sock >= 0)
		ret = urv_ctl_raw(conns[conn].sock, &conns[conn].seq, op, req, len, rep, rep_len,
				  NULL, 0, fds_out, nfds_out);
	pthread_mutex_unlock(&conn_lock);
	return ret;
}

int urv_mux_init(struct urv_mux *m, int app_fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	int fl = fcntl(app_fd, F_GETFL), fdfl = fcntl(app_fd, F_GETFD);
	int prim = fcntl(app_fd, F_DUPFD_CLOEXEC, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (fl < 0 || fdfl < 0 || prim < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, prim, &ev) ||
	    fcntl(ep, F_SETFL, fl & O_NONBLOCK) < 0 ||
	    syscall(SYS_dup3, ep, app_fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		int e = errno;
		sys_close(prim);
		sys_close(ep);
		return -e;
	}
	sys_close(ep);
	/* only now is prim the pipe's last descriptor besides ours */
	fcntl(prim, F_SETFL, O_NONBLOCK);
	m->prim_fd = prim;
	return 0;
}

int urv_mux_sec_get(struct urv_mux *m, int app_fd, const char *path)
{
	int c;

	pthread_mutex_lock(&conn_lock);
	c = conn_of(path);
	pthread_mutex_unlock(&conn_lock);
	return c < 0 ? c : urv_mux_sec_k(m, app_fd, (unsigned)c + 1);
}

int urv_mux_sec_k(struct urv_mux *m, int app_fd, unsigned k)
{
	struct uroce_ucma_open_rep rep = { 0 };
	int c = (int)k - 1, fd = -1, ret;

	if (k < 1 || k > URV_MUX_MAX)
		return -ENOENT;
	if (m->sec[k].open)
		return (int)k;
	if (m->prim_fd < 0 && (ret = urv_mux_init(m, app_fd)))
		return ret;
	ret = urv_mux_call(c, UROCE_OP_UCMA_OPEN, NULL, 0, &rep, sizeof(rep), &fd, 1);
	if (ret)
		return ret;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = k };
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0 || epoll_ctl(app_fd, EPOLL_CTL_ADD, fd, &ev)) {
		struct uroce_handle_msg h = { .handle = rep.handle };

		sys_close(fd);
		urv_mux_call(c, UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
		return -EIO;
	}
	m->sec[k] = (struct urv_mux_sec){ .open = true, .conn = c, .handle = rep.handle,
					  .rfd = fd };
	return (int)k;
}

/* one byte from pipe fd: 1, 0 (none now), -1 at EOF */
static int take_byte(int fd)
{
	char b;
	long k = fd < 0 ? 0 : syscall(SYS_read, fd, &b, 1);

	return k == 1 ? 1 : k == 0 ? -1 : 0;
}

int urv_mux_wait(struct urv_mux *m, int app_fd, unsigned *src)
{
	for (;;) {
		int r = take_byte(m->prim_fd);
		if (r > 0) {
			*src = 0;
			return 0;
		}
		if (r < 0)
			return -ENODEV;
		for (unsigned k = 1; k <= URV_MUX_MAX; k++) {
			if (!m->sec[k].open)
				continue;
			r = take_byte(m->sec[k].rfd);
			if (r > 0) {
				*src = k;
				return 0;
			}
			if (r < 0) {
				/* that daemon went away: its file says no more */
				epoll_ctl(app_fd, EPOLL_CTL_DEL, m->sec[k].rfd, NULL);
				sys_close(m->sec[k].rfd);
				m->sec[k].rfd = -1;
			}
		}
		int fl = fcntl(app_fd, F_GETFL);

		if (fl < 0)
			return -EBADF; /* closed meanwhile */
		if (fl & O_NONBLOCK)
			return -EAGAIN;
		struct epoll_event ev;
		if (epoll_wait(app_fd, &ev, 1, -1) < 0 && errno != EAGAIN)
			return errno == EINTR ? -EINTR : -ENODEV; /* EBADF: closed meanwhile */
	}
}

void urv_mux_set_primary(struct urv_mux *m, int app_fd, int rfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };

	epoll_ctl(app_fd, EPOLL_CTL_DEL, m->prim_fd, NULL);
	sys_close(m->prim_fd);
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	m->prim_fd = rfd;
	epoll_ctl(app_fd, EPOLL_CTL_ADD, rfd, &ev);
}

void urv_mux_close(struct urv_mux *m)
{
	for (unsigned k = 1; k <= URV_MUX_MAX; k++) {
		struct uroce_handle_msg h = { .handle = m->sec[k].handle };

		if (!m->sec[k].open)
			continue;
		urv_mux_call(m->sec[k].conn, UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
		sys_close(m->sec[k].rfd);
	}
	sys_close(m->prim_fd);
	free(m->shadows);
	memset(m, 0, sizeof(*m));
	m->prim_fd = -1;
}
