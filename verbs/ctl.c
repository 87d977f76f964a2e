/* SPDX-License-Identifier: MIT */
/* Control socket: one SOCK_SEQPACKET request and one reply per call. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "urv.h"

/* The daemon behind a socket must be this user's or root's: anyone else
 * would see our work requests and inline data (docs/security.md). */
static bool peer_trusted(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
		return false;
	return cr.uid == 0 || cr.uid == geteuid();
}

int urv_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	if (!peer_trusted(fd)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* The daemon refused the connection (UROCE_REFUSED_SEQ) and closed it.
 * When it closed with our request unread, the kernel reports ECONNRESET
 * once before the queued refusal: read past it. */
static bool refused(int sock)
{
	struct uroce_msg_hdr h;
	ssize_t n = -1;

	for (int i = 0; i < 2 && n < 0; i++)
		n = recv(sock, &h, sizeof(h), MSG_DONTWAIT);
	return n == (ssize_t)sizeof(h) && h.seq == UROCE_REFUSED_SEQ &&
		h.status == -EACCES;
}

#define URV_MAX_FDS 4

union urv_msg_buf {
	struct uroce_msg_hdr h;
	uint8_t b[UROCE_MAX_MSG];
};

union urv_cmsg_buf {
	struct cmsghdr c;
	char b[CMSG_SPACE(sizeof(int) * URV_MAX_FDS)];
};

/* Close the descriptors a reply brought that the caller will not get. */
static void fds_drop(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
}

/* One request (header + body, fds by SCM_RIGHTS); 0 or a negative errno. */
static int ctl_send(int sock, union urv_msg_buf *buf, const int *fds_in,
		    int nfds_in)
{
	union urv_cmsg_buf cbuf;
	struct iovec iov = { .iov_base = buf->b, .iov_len = buf->h.len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds_in) {
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds_in);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds_in);
		memcpy(CMSG_DATA(cm), fds_in, sizeof(int) * nfds_in);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if ((errno == EPIPE || errno == ECONNRESET) && refused(sock))
			return -EACCES;
		return errno == EPIPE || errno == ECONNRESET ||
			errno == ENOTCONN ? -ENODEV : -errno;
	}
	return 0;
}

/* One message into buf; the descriptors it carries go to fds_out (*got of
 * them), the ones beyond nfds_out are closed. Its length, or a negative
 * errno. */
static ssize_t ctl_recv(int sock, union urv_msg_buf *buf, int *fds_out,
			int nfds_out, int *got)
{
	union urv_cmsg_buf cbuf;
	struct iovec iov = { .iov_base = buf->b, .iov_len = sizeof(*buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.b, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -ENODEV;
	if (n < 0) {
		if (errno == ECONNRESET && refused(sock))
			return -EACCES;
		return errno == ECONNRESET ? -ENODEV : -errno;
	}
	*got = 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int nf = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *f = (int *)(void *)CMSG_DATA(cm);

		for (int i = 0; i < nf; i++) {
			if (*got < nfds_out)
				fds_out[(*got)++] = f[i];
			else
				close(f[i]);
		}
	}
	return n;
}

/* build the request -> send -> receive until our seq -> check the reply. */
int urv_ctl_raw(int sock, uint32_t *seq, uint32_t op, const void *req,
		size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		int nfds_in, int *fds_out, int nfds_out)
{
	union urv_msg_buf buf;
	ssize_t n;
	uint32_t s = ++*seq;
	int i, ret, got = 0;

	if (req_len + sizeof(buf.h) > sizeof(buf) || nfds_in > URV_MAX_FDS ||
	    nfds_out > URV_MAX_FDS)
		return -EINVAL;
	for (i = 0; i < nfds_out; i++)
		fds_out[i] = -1;
	memset(&buf.h, 0, sizeof(buf.h));
	buf.h.op = op;
	buf.h.len = (uint32_t)(sizeof(buf.h) + req_len);
	buf.h.seq = s;
	if (req_len)
		memcpy(buf.b + sizeof(buf.h), req, req_len);
	ret = ctl_send(sock, &buf, fds_in, nfds_in);
	if (ret)
		return ret;
	for (;;) {
		n = ctl_recv(sock, &buf, fds_out, nfds_out, &got);
		if (n < 0)
			return (int)n;
		if ((size_t)n >= sizeof(buf.h) && buf.h.seq == UROCE_REFUSED_SEQ &&
		    buf.h.status == -EACCES) {
			fds_drop(fds_out, got);
			return -EACCES;
		}
		if ((size_t)n >= sizeof(buf.h) && buf.h.seq == s)
			break;
		/* a stale reply (an earlier call timed out): drop it */
		fds_drop(fds_out, got);
	}
	if (buf.h.status) {
		fds_drop(fds_out, got);
		return buf.h.status < 0 ? buf.h.status : -EIO;
	}
	if (got < nfds_out) {
		fds_drop(fds_out, got);
		return -EPROTO;
	}
	if (rep_len) {
		size_t have = (size_t)n - sizeof(buf.h);

		memset(rep, 0, rep_len);
		memcpy(rep, buf.b + sizeof(buf.h), have < rep_len ? have : rep_len);
	}
	return 0;
}

int urv_ctl(struct urv_context *c, uint32_t op, const void *req,
	    size_t req_len, void *rep, size_t rep_len, const int *fds_in,
	    int nfds_in, int *fds_out, int nfds_out)
{
	int ret;

	if (c->origin)
		c = c->origin; /* an imported context speaks on its origin's connection */
	pthread_mutex_lock(&c->ctl_lock);
	if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&c->ctl_lock);
		return -ENODEV;
	}
	ret = urv_ctl_raw(c->sock, &c->seq, op, req, req_len, rep, rep_len,
			  fds_in, nfds_in, fds_out, nfds_out);
	if (ret == -ENODEV)
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->ctl_lock);
	return ret;
}

void urv_doorbell(struct urv_context *c, uint32_t db_index)
{
	struct uroce_db_page *db = c->db;
	uint32_t word = db_index / 64;
	static const uint64_t one = 1;

	__atomic_fetch_or(&db->bits[word], 1ull << (db_index % 64),
			  __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->summary[word / 64], 1ull << (word % 64),
			  __ATOMIC_RELEASE);
	/* Pairs with the daemon's fence between setting need_wakeup and its
	 * last scan: either it sees our bits or we see its flag. */
	atomic_thread_fence(memory_order_seq_cst);
	if (__atomic_load_n(&db->need_wakeup, __ATOMIC_ACQUIRE)) {
		ssize_t r = write(c->wake_fd, &one, sizeof(one));

		(void)r;
	}
}

/* A daemon killed outright marks nothing in shared memory; its end of the
 * control socket closing is what remains. */
bool urv_daemon_gone(struct urv_context *c)
{
	struct pollfd p;

	if (c->origin)
		c = c->origin;
	p.fd = c->sock;
	p.events = POLLRDHUP;
	if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		return true;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}
