/* SPDX-License-Identifier: MIT */
/* The client side of a daemon's control socket, without a verbs context:
 * which run directory and socket to trust, connecting with the peer
 * check, one request and one reply. liburoce and the tools (uroce-ctl,
 * uroce-stat) share it, so they trust exactly the same daemons
 * (docs/security.md, "Run directory"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

bool urv_owner_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* The run directory is trusted only if nobody but this user or root can
 * have put sockets in it: owned by one of them, not a symlink, not
 * writable by group or others, in a parent that is owned by one of them
 * and not writable by others unless sticky (a parent others can write
 * lets them rename the directory away and put theirs in its place).
 * Returns an open descriptor of the directory, or -1 with *why set. */
int urv_run_dir_open(const char *dir, const char **why)
{
	char parent[512], *s;
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ELOOP || errno == ENOTDIR ?
			"a symlink or not a directory" : NULL;
		return -1;
	}
	*why = NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	if (!urv_owner_trusted(st.st_uid))
		*why = "owned by another user";
	else if (st.st_mode & 022)
		*why = "writable by group or others";
	if (*why) {
		close(fd);
		return -1;
	}
	snprintf(parent, sizeof(parent), "%s", dir);
	for (s = parent + strlen(parent); s > parent + 1 && s[-1] == '/'; )
		*--s = 0;
	s = strrchr(parent, '/');
	if (!s)
		strcpy(parent, ".");
	else
		s[s == parent] = 0;
	if (stat(parent, &st) < 0 || !urv_owner_trusted(st.st_uid) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
		*why = "its parent directory is writable by others";
		close(fd);
		return -1;
	}
	return fd;
}

/* A socket in the run directory (dfd) is a daemon's only if it is a
 * socket (not a symlink to one) of this user or root. */
bool urv_sock_trusted(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
	       urv_owner_trusted(st.st_uid);
}

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

/* How long a caller polls for its reply before it sleeps in recvmsg: the
 * daemon answers most requests in microseconds, and a sleep costs two
 * scheduler wake-ups (tens of microseconds on a virtual machine whose idle
 * vCPU halts): most of a QP's create + connect time was spent so
 * (docs/performance.md, "QP setup"). */
#define URV_CTL_SPIN_NS 50000ull

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* recvmsg, first without sleeping for up to URV_CTL_SPIN_NS */
static ssize_t ctl_recvmsg(int sock, struct msghdr *mh)
{
	uint64_t t0 = 0;
	ssize_t n;

	for (;;) {
		n = recvmsg(sock, mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			return n;
		uint64_t t = mono_ns();
		if (!t0)
			t0 = t;
		else if (t - t0 > URV_CTL_SPIN_NS)
			break;
	}
	do
		n = recvmsg(sock, mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	return n;
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

	n = ctl_recvmsg(sock, &mh);
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

/* a body shorter than rep leaves the rest zero */
static void reply_copy(void *rep, size_t rep_len, const void *body, size_t have)
{
	memset(rep, 0, rep_len);
	memcpy(rep, body, have < rep_len ? have : rep_len);
}

/* receive until our seq -> check the reply */
int urv_ctl_reply(int sock, uint32_t s, void *rep, size_t rep_len, int *fds_out, int nfds_out)
{
	union urv_msg_buf buf;
	ssize_t n;
	int i, got = 0;
	bool upto = nfds_out < 0;

	if (upto)
		nfds_out = -nfds_out;
	if (nfds_out > URV_MAX_FDS)
		return -EINVAL;
	for (i = 0; i < nfds_out; i++)
		fds_out[i] = -1;
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
	size_t have = (size_t)n - sizeof(buf.h);

	if (buf.h.status) {
		fds_drop(fds_out, got);
		/* a refusal may say why in a body (HELLO: the daemon's ABI
		 * version); rep is left alone when it has none */
		if (rep_len && have)
			reply_copy(rep, rep_len, buf.b + sizeof(buf.h), have);
		return buf.h.status < 0 ? buf.h.status : -EIO;
	}
	if (got < nfds_out && !upto) {
		fds_drop(fds_out, got);
		return -EPROTO;
	}
	if (rep_len)
		reply_copy(rep, rep_len, buf.b + sizeof(buf.h), have);
	return 0;
}

/* build the request -> send -> the reply */
int urv_ctl_raw(int sock, uint32_t *seq, uint32_t op, const void *req,
		size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		int nfds_in, int *fds_out, int nfds_out)
{
	union urv_msg_buf buf;
	uint32_t s = ++*seq;
	int ret;

	if (req_len + sizeof(buf.h) > sizeof(buf) || nfds_in > URV_MAX_FDS ||
	    nfds_out > URV_MAX_FDS || nfds_out < -URV_MAX_FDS)
		return -EINVAL;
	for (int i = 0; i < (nfds_out < 0 ? -nfds_out : nfds_out); i++)
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
	return urv_ctl_reply(sock, s, rep, rep_len, fds_out, nfds_out);
}

int urv_hello(int sock, uint32_t *seq, struct uroce_hello_rep *rep, int fds[3])
{
	struct uroce_hello_req req = {
		.abi_version = UROCE_ABI_VERSION,
		.pid = (uint32_t)getpid(),
	};
	int mem[2], ret;

	/* the daemon reaches our memory only through this descriptor: it
	 * stays bound to this address space (a fork or exec cannot redirect
	 * it) and is checked to be ours (docs/security.md); our maps tell it
	 * which pages we may read or write ourselves (a daemon running as
	 * another user could not open them) */
	mem[0] = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mem[0] < 0)
		return -errno;
	mem[1] = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	rep->abi_version = 0; /* a daemon before version 4 refuses without saying its own */
	ret = urv_ctl_raw(sock, seq, UROCE_OP_HELLO, &req, sizeof(req), rep,
			  sizeof(*rep), mem, mem[1] >= 0 ? 2 : 1, fds, 3);
	close(mem[0]);
	if (mem[1] >= 0)
		close(mem[1]);
	if (!ret && rep->abi_version != UROCE_ABI_VERSION) {
		fds_drop(fds, 3);
		ret = -EPROTONOSUPPORT;
	}
	return ret;
}
