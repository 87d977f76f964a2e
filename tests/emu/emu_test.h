/* SPDX-License-Identifier: MIT */
/* Helpers for the daemon tests: start/stop a private uroced with bounded
 * timeouts, and a minimal client of the control protocol (abi.h). */
#ifndef EMU_TEST_H
#define EMU_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uroce/abi.h>

/* REQUIRE ends the test through t_exit(): the daemon it started stops */
__attribute__((noreturn)) static inline void t_exit(int code);
#define T_EXIT(code) t_exit(code)
#include "../include/check.h"
#include "../include/t_sendfds.h"

struct t_daemon {
	pid_t pid;
	char dir[256];
	char run[300];
	char sock[400];
};

static struct t_daemon *t_cur __attribute__((unused));

static inline void t_daemon_stop_now(struct t_daemon *d);

__attribute__((noreturn)) static inline void t_exit(int code)
{
	if (t_cur)
		t_daemon_stop_now(t_cur);
	exit(code);
}

static inline uint64_t t_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void t_alarm(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: test timed out\n";
	if (write(2, m, sizeof(m) - 1) < 0) { /* nothing */ }
	if (t_cur && t_cur->pid > 0)
		kill(t_cur->pid, SIGKILL);
	_exit(1);
}

/* Start uroced (path) with extra args (NULL-terminated); as_nobody drops
 * to the nobody user when we are root. Waits up to 30 s for the socket. */
static inline int t_daemon_start(struct t_daemon *d, const char *path, bool as_nobody,
			  const char *const *extra)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/uroce-test-XXXXXX");
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->run, sizeof(d->run), "%s/run", d->dir);
	snprintf(d->sock, sizeof(d->sock), "%s/uroce0.sock", d->run);
	struct passwd *pw = NULL;
	if (as_nobody && geteuid() == 0) {
		pw = getpwnam("nobody");
		/* sticky, as /tmp: the daemon refuses a run dir others could rename */
		chmod(d->dir, 01777);
	}
	signal(SIGALRM, t_alarm);
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid == 0) {
		/* never outlive the test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (pw) {
			if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
				_exit(126);
		}
		setenv("UROCE_RUN_DIR", d->run, 1);
		const char *av[32];
		int n = 0;
		av[n++] = path;
		for (int i = 0; extra && extra[i] && n < 31; i++)
			av[n++] = extra[i];
		av[n] = NULL;
		execv(path, (char *const *)av);
		_exit(127);
	}
	t_cur = d;
	uint64_t end = t_now_ms() + 30000;
	while (t_now_ms() < end) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			return -ECHILD;
		}
		if (access(d->sock, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* SIGTERM, wait up to 10 s, then SIGKILL. Returns the exit status
 * (0..255), 256 + signal if killed by a signal, or -1. */
static inline int t_daemon_stop(struct t_daemon *d)
{
	int st = 0;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	uint64_t end = t_now_ms() + 10000;
	for (;;) {
		pid_t r = waitpid(d->pid, &st, WNOHANG);
		if (r == d->pid)
			break;
		if (t_now_ms() > end) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
			d->pid = 0;
			return -1;
		}
		usleep(5000);
	}
	d->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
}

static inline void t_rmdir(struct t_daemon *d)
{
	char cmd[600];
	if (!d->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
	if (system(cmd)) { /* best effort */ }
	d->dir[0] = 0;
}

static inline void t_daemon_stop_now(struct t_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	t_rmdir(d);
}

/* ---------------- client ---------------- */

struct t_client {
	int fd;
	uint32_t seq;
	int async_r;
	struct uroce_hello_rep hello;
	int db_fd, wake_fd;
	struct uroce_db_page *db;
};

static inline int t_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct timeval tv = { 10, 0 }; /* a reply never takes this long */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send a raw message (with fds), return bytes received into rep (or -errno). */
static inline int t_raw(int fd, const void *msg, size_t len, const int *fds, unsigned nfds,
		 void *rep, size_t rcap, int *rfds, unsigned *nrfds)
{
	union { struct cmsghdr c; uint8_t b[CMSG_SPACE(sizeof(int) * 4)]; } cb;
	struct iovec iov = { rep, rcap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (t_sendfds(fd, msg, len, fds, nfds, MSG_NOSIGNAL) < 0)
		return -errno;
	mh.msg_control = cb.b;
	mh.msg_controllen = sizeof(cb.b);
	/* a closed io_uring's exit work interrupts its maker's sleep (task
	 * work, and SO_RCVTIMEO makes that EINTR): as the shim, try again */
	ssize_t n;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (nrfds)
		*nrfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (unsigned i = 0; i < k; i++) {
			int f = ((int *)CMSG_DATA(cm))[i];
			if (rfds && nrfds && *nrfds < 4)
				rfds[(*nrfds)++] = f;
			else
				close(f);
		}
	}
	return (int)n;
}

/* One call: returns the reply status (0 or -errno), body copied to rep. */
static inline int t_call(struct t_client *c, uint32_t op, const void *req, size_t rlen,
		  const int *fds, unsigned nfds, void *rep, size_t replen, int *rfds, unsigned *nrfds)
{
	uint8_t buf[UROCE_MAX_MSG];
	uint8_t in[UROCE_MAX_MSG];
	struct uroce_msg_hdr h = { .op = op, .len = (uint32_t)(sizeof(h) + rlen), .seq = ++c->seq };

	memcpy(buf, &h, sizeof(h));
	if (rlen)
		memcpy(buf + sizeof(h), req, rlen);
	int n = t_raw(c->fd, buf, h.len, fds, nfds, in, sizeof(in), rfds, nrfds);
	if (n < 0)
		return n == -EAGAIN ? -ETIMEDOUT : n;
	if (n < (int)sizeof(h))
		return -EPROTO;
	struct uroce_msg_hdr r;
	memcpy(&r, in, sizeof(r));
	if (r.op != op || r.seq != h.seq || r.len != (uint32_t)n)
		return -EPROTO;
	if (r.status == 0 && rep) {
		if ((size_t)n - sizeof(h) != replen)
			return -EPROTO;
		memcpy(rep, in + sizeof(h), replen);
	}
	return r.status;
}

static inline int t_client_open(struct t_client *c, const char *sock)
{
	memset(c, 0, sizeof(*c));
	c->fd = t_connect(sock);
	if (c->fd < 0)
		return c->fd;
	struct uroce_hello_req q = { .abi_version = UROCE_ABI_VERSION, .pid = (uint32_t)getpid() };
	int fds[4];
	unsigned nf = 0;
	int in = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int rc = t_call(c, UROCE_OP_HELLO, &q, sizeof(q), &in, 1, &c->hello, sizeof(c->hello),
			fds, &nf);
	close(in);
	if (rc)
		return rc;
	if (nf != 3) {
		for (unsigned i = 0; i < nf; i++)
			close(fds[i]);
		return -EPROTO;
	}
	/* doorbell memfd, wake pipe write end, async pipe read end */
	c->db_fd = fds[0];
	c->wake_fd = fds[1];
	c->async_r = fds[2];
	c->db = mmap(NULL, UROCE_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, c->db_fd, 0);
	if (c->db == MAP_FAILED)
		return -errno;
	return 0;
}

static inline void t_client_close(struct t_client *c)
{
	if (c->db && c->db != MAP_FAILED)
		munmap(c->db, UROCE_DB_PAGE_SIZE);
	if (c->fd > 0)
		close(c->fd);
	if (c->async_r > 0)
		close(c->async_r);
	if (c->db_fd > 0)
		close(c->db_fd);
	if (c->wake_fd > 0)
		close(c->wake_fd);
	memset(c, 0, sizeof(*c));
}

/* Ring doorbell idx of client c. */
static inline void t_ring(struct t_client *c, uint32_t idx)
{
	__atomic_fetch_or(&c->db->bits[idx / 64], 1ull << (idx % 64), __ATOMIC_RELEASE);
	__atomic_fetch_or(&c->db->summary[idx / 4096], 1ull << ((idx / 64) % 64), __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->db->need_wakeup, __ATOMIC_ACQUIRE)) {
		uint64_t one = 1;
		if (write(c->wake_fd, &one, 8) < 0) { /* daemon gone */ }
	}
}

static inline int t_pd(struct t_client *c, uint32_t *pd)
{
	struct uroce_handle_msg r;
	int rc = t_call(c, UROCE_OP_ALLOC_PD, NULL, 0, NULL, 0, &r, sizeof(r), NULL, NULL);
	if (!rc)
		*pd = r.handle;
	return rc;
}

static inline int t_handle_op(struct t_client *c, uint32_t op, uint32_t h)
{
	struct uroce_handle_msg q = { .handle = h };
	return t_call(c, op, &q, sizeof(q), NULL, 0, NULL, 0, NULL, NULL);
}

static inline int t_cq(struct t_client *c, uint32_t cqe, struct uroce_create_cq_rep *r, int *mfd)
{
	struct uroce_create_cq_req q = { .cqe = cqe, .channel = -1, .user_handle = 0xc0ffee };
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(c, UROCE_OP_CREATE_CQ, &q, sizeof(q), NULL, 0, r, sizeof(*r), fds, &nf);
	if (!rc) {
		if (nf != 1)
			return -EPROTO;
		if (mfd)
			*mfd = fds[0];
		else
			close(fds[0]);
	}
	return rc;
}

static inline int t_qp(struct t_client *c, uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t type,
		struct uroce_create_qp_rep *r, int *mfd)
{
	struct uroce_create_qp_req q = {
		.pd = pd, .send_cq = scq, .recv_cq = rcq, .srq = -1, .qp_type = type,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.user_handle = 0x9,
	};
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(c, UROCE_OP_CREATE_QP, &q, sizeof(q), NULL, 0, r, sizeof(*r), fds, &nf);
	if (!rc) {
		if (nf != 1)
			return -EPROTO;
		if (mfd)
			*mfd = fds[0];
		else
			close(fds[0]);
	}
	return rc;
}


/* a ring in shared memory (abi.h): header, slots at UROCE_RING_HDR_SIZE */
struct t_ring {
	uint8_t *base;
	uint32_t entries, stride;
};

static inline uint32_t *r_prod(struct t_ring *r) { return (uint32_t *)r->base; }
static inline uint32_t *r_cons(struct t_ring *r) { return (uint32_t *)(r->base + 64); }
static inline void *r_slot(struct t_ring *r, uint32_t i)
{
	return r->base + UROCE_RING_HDR_SIZE + (size_t)(i & (r->entries - 1)) * r->stride;
}

static inline int t_modify(struct t_client *c, struct uroce_modify_qp_req *mq)
{
	return t_call(c, UROCE_OP_MODIFY_QP, mq, sizeof(*mq), NULL, 0, NULL, 0, NULL, NULL);
}

#endif
