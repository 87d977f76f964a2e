/* SPDX-License-Identifier: MIT */
/* Control server: one SOCK_SEQPACKET socket per device (and the mailbox in
 * each context's doorbell page), one message per verbs call. Everything a
 * client sends is validated against its op's entry in the request tables
 * (length, fds, who may; the handlers are in ctl_<object>.c), handles in
 * its own context; a client that closes its socket or dies loses all its
 * objects. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_op.h"
#include "cm/ibcm.h"
#include "cm/ucma.h"

#define EMU_MAX_FDS_IN 4

/* Out of descriptors or memory, accept() fails at once while the listening
 * socket stays readable: polling it would spin. Stop watching it for a
 * while (a closing client ends the pause early); pending clients wait in
 * the backlog instead of being refused. */
#define EMU_ACCEPT_PAUSE_NS 100000000ull

static void emu_accept_watch(struct emu_daemon *dm, bool on)
{
	struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.ptr = &dm->ep_listen };

	if (dm->listen_fd >= 0 && epoll_ctl(dm->epfd, EPOLL_CTL_MOD, dm->listen_fd, &ev) < 0)
		EMU_LOG_RL(WARNING, "%s: epoll listen: %s\n", dm->o.dev, strerror(errno));
}

static void emu_accept_resume_check(struct emu_daemon *dm)
{
	if (dm->accept_resume_ns && emu_now_ns() >= dm->accept_resume_ns) {
		dm->accept_resume_ns = 0;
		emu_accept_watch(dm, true);
	}
}

static int emu_op_hello(struct emu_op *k);
static const struct emu_op_def emu_ctl_session_defs[] = {
	{ .op = UROCE_OP_HELLO, .len = sizeof(struct uroce_hello_req),
	  .fds = 2, .run = emu_op_hello },
};
static const struct emu_op_table emu_ctl_session = EMU_OP_TABLE(emu_ctl_session_defs);

/* Every request the control socket serves, one table per kind of object
 * (ctl_<object>.c), so that a new verb touches only its object's file. */
static const struct emu_op_table *const emu_ctl_tables[] = {
	&emu_ctl_session, &emu_ctl_dev, &emu_ctl_pd, &emu_ctl_mr, &emu_ctl_mw, &emu_ctl_dm,
	&emu_ctl_cq, &emu_ctl_srq, &emu_ctl_qp, &emu_ctl_ah, &emu_ctl_mcast, &emu_ctl_xrc,
	&emu_ctl_ucma, &emu_ctl_admin, &emu_ctl_nic,
};

/* The same by op code, made once (emu_ctl_open): an op nobody serves is
 * refused. */
static const struct emu_op_def *emu_req_shape[UROCE_OP_MAX];
static pthread_once_t emu_req_once = PTHREAD_ONCE_INIT;
static bool emu_req_bad;

static void emu_req_index(void)
{
	for (size_t t = 0; t < sizeof(emu_ctl_tables) / sizeof(emu_ctl_tables[0]); t++) {
		for (unsigned i = 0; i < emu_ctl_tables[t]->n; i++) {
			const struct emu_op_def *d = &emu_ctl_tables[t]->def[i];

			if (d->op == 0 || d->op >= UROCE_OP_MAX || emu_req_shape[d->op]) {
				EMU_LOG(ERR, "control op %u defined twice or out of range\n", d->op);
				emu_req_bad = true;
				continue;
			}
			emu_req_shape[d->op] = d;
		}
	}
}

void emu_ctl_reap(struct emu_daemon *dm)
{
	emu_accept_resume_check(dm);
	while (dm->dead_clients) {
		struct emu_client *cl = dm->dead_clients;
		dm->dead_clients = cl->next_dead;
		free(cl);
	}
}

int emu_ctl_open(struct emu_daemon *dm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(dm->sock_path, sizeof(dm->sock_path), "%s/%s%s", dm->o.run_dir,
			 dm->o.dev, UROCE_SOCK_SUFFIX);

	pthread_once(&emu_req_once, emu_req_index);
	if (emu_req_bad)
		return -EINVAL;
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		EMU_LOG(ERR, "socket path too long: %s\n", dm->sock_path);
		return -ENAMETOOLONG;
	}
	if (mkdir(dm->o.run_dir, 0700) < 0 && errno != EEXIST) {
		EMU_LOG(ERR, "mkdir %s: %s\n", dm->o.run_dir, strerror(errno));
		return -errno;
	}
	/* a directory someone else owns (or others can write) could hold a
	 * planted socket: refuse it */
	struct stat st;
	if (stat(dm->o.run_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		EMU_LOG(ERR, "%s: not a private directory of uid %u\n", dm->o.run_dir,
			(unsigned)geteuid());
		dm->sock_path[0] = 0;
		return -EPERM;
	}
	/* a live daemon answers a connect; a stale file does not */
	strcpy(sa.sun_path, dm->sock_path);
	int t = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (t >= 0 && connect(t, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(t);
		EMU_LOG(ERR, "%s: another uroced serves this device\n", dm->sock_path);
		dm->sock_path[0] = 0;
		return -EADDRINUSE;
	}
	if (t >= 0)
		close(t);
	/* bind and listen under a temporary name, then rename: a client
	 * never finds the socket file before it accepts connections */
	char tmp[sizeof(sa.sun_path) + 32];
	n = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", dm->sock_path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		dm->sock_path[0] = 0;
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, tmp);
	unlink(tmp);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int prc = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    (prc = emu_access_sock_perms(&dm->o.acc, tmp)) < 0 || rename(tmp, dm->sock_path) < 0) {
		if (prc < 0)
			errno = -prc;
		int e = errno;
		unlink(tmp);
		errno = e;
		goto fail;
	}
	dm->listen_fd = fd;
	dm->ep_listen.kind = EMU_EP_LISTEN;
	dm->ep_listen.p = NULL;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &dm->ep_listen };
	if (epoll_ctl(dm->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		/* fail closes fd: forget it so teardown does not close it
		 * (or a later fd with the same number) again */
		dm->listen_fd = -1;
		goto fail;
	}
	EMU_LOG(NOTICE, "%s: serving on %s\n", dm->o.dev, dm->sock_path);
	return 0;
fail:;
	int e = errno;
	EMU_LOG(ERR, "%s: %s\n", dm->sock_path, strerror(e));
	close(fd);
	dm->sock_path[0] = 0;
	return -e;
}

static void emu_client_close(struct emu_daemon *dm, struct emu_client *cl)
{
	struct emu_ctx *c = cl->ctx;

	EMU_LOG_RL(INFO, "client pid %d gone\n", (int)c->pid);
	if (dm->accept_resume_ns)
		dm->accept_resume_ns = 1; /* a descriptor is free again: accept now */
	epoll_ctl(dm->epfd, EPOLL_CTL_DEL, c->sock, NULL);
	if (c->wake_fd >= 0)
		epoll_ctl(dm->epfd, EPOLL_CTL_DEL, c->wake_fd, NULL);
	emu_ucma_ctx_gone(c); /* its rdma_cm ids first: peers see DREQ/REJ */
	emu_ctx_destroy(c);
	cl->ctx = NULL;
	cl->next_dead = dm->dead_clients;
	dm->dead_clients = cl;
}

void emu_ctl_close(struct emu_daemon *dm)
{
	while (dm->dev.ctxs)
		emu_client_close(dm, dm->dev.ctxs->priv);
	emu_ucma_dev_fini(&dm->dev);
	emu_ctl_reap(dm);
	if (dm->listen_fd >= 0) {
		close(dm->listen_fd);
		dm->listen_fd = -1;
	}
	if (dm->sock_path[0]) {
		unlink(dm->sock_path);
		dm->sock_path[0] = 0;
	}
}

static uint64_t emu_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A connection the access rule refuses: one -EACCES message the shim can
 * report, then close. Counted; logged at most once a second, since any
 * local user can connect as often as it likes. */
static void emu_refuse(struct emu_daemon *dm, int fd, const struct ucred *cr)
{
	struct uroce_msg_hdr h = { .op = UROCE_OP_HELLO, .len = sizeof(h),
				   .seq = UROCE_REFUSED_SEQ, .status = -EACCES };
	uint64_t now = emu_mono_ms();

	if (send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* nothing to do: the close says it too */
	}
	close(fd);
	dm->dev.cnt.clients_refused++;
	dm->refused_unlogged++;
	if (!dm->refused_log_ms || now - dm->refused_log_ms >= 1000) {
		EMU_LOG(WARNING, "%s: refused pid %d uid %u gid %u (access rule; %lu refused since "
			"the last line)\n", dm->o.dev, (int)cr->pid, (unsigned)cr->uid,
			(unsigned)cr->gid, (unsigned long)dm->refused_unlogged);
		dm->refused_log_ms = now;
		dm->refused_unlogged = 0;
	}
}

static void emu_accept(struct emu_daemon *dm)
{
	for (;;) {
		int fd = accept4(dm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR)
				return;
			if (e == ECONNABORTED)
				continue;
			if (e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS) {
				dm->accept_resume_ns = emu_now_ns() + EMU_ACCEPT_PAUSE_NS;
				emu_accept_watch(dm, false);
			}
			EMU_LOG_RL(WARNING, "%s: accept: %s\n", dm->o.dev, strerror(e));
			return;
		}
		struct ucred cr;
		socklen_t l = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0) {
			close(fd);
			continue;
		}
		if (!emu_access_allowed(&dm->o.acc, fd, &cr)) {
			emu_refuse(dm, fd, &cr);
			continue;
		}
		struct emu_client *cl = calloc(1, sizeof(*cl));
		struct emu_ctx *c = cl ? emu_ctx_new(&dm->dev, cr.pid, fd) : NULL;
		if (c && emu_ctx_set_uid(c, cr.uid)) {
			EMU_LOG_RL(WARNING, "%s: uid %u has its maximum of contexts\n",
				   dm->o.dev, (unsigned)cr.uid);
			c->sock = -1; /* closed below */
			emu_ctx_destroy(c);
			c = NULL;
		}
		if (!c) {
			free(cl);
			close(fd);
			continue;
		}
		cl->ctx = c;
		c->priv = cl;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->see_all = cr.uid == 0 || cr.uid == geteuid();
		cl->ep_sock.kind = EMU_EP_SOCK;
		cl->ep_sock.p = cl;
		cl->ep_wake.kind = EMU_EP_WAKE;
		cl->ep_wake.p = cl;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &cl->ep_sock };
		if (epoll_ctl(dm->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			emu_ctx_destroy(c);
			free(cl);
			continue;
		}
		EMU_LOG_RL(INFO, "client pid %d connected\n", (int)cr.pid);
	}
}

/* Expected request body size per op (exact), and fds it carries. */
/* false: the reply could not be queued, the client is to be dropped */
static bool emu_reply(struct emu_ctx *c, const struct uroce_msg_hdr *rq, int status,
		      const void *body, size_t blen, const int *fds, unsigned nfds)
{
	union {
		struct uroce_msg_hdr h;
		uint8_t b[UROCE_MAX_MSG];
	} m;
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * 3)];
	} cb;

	if (status)
		nfds = 0;
	m.h.op = rq->op;
	m.h.seq = rq->seq;
	m.h.status = status;
	m.h.len = (uint32_t)(sizeof(m.h) + blen);
	if (blen)
		memcpy(m.b + sizeof(m.h), body, blen);
	struct iovec iov = { m.b, m.h.len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	/* MSG_DONTWAIT holds for this call whatever the socket's flags, and
	 * the socket is the daemon's own end: this never blocks. The shim
	 * waits for each reply before its next request, so a full socket
	 * buffer means a client that sends without reading: it is dropped
	 * (one log line per client) rather than served with replies lost. */
	if (sendmsg(c->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		EMU_LOG_RL(NOTICE, "pid %d: reply op %u: %s: dropping the client\n", (int)c->pid,
			rq->op, strerror(errno));
		return false;
	}
	return true;
}

/* The pipes made here are the daemon's: it keeps the wake read end and
 * the async write end, each an open file description the client never
 * holds, so the client cannot make them blocking; it gets the other ends
 * (fds[1], fds[2]: closed here once sent). */
static int emu_hello(struct emu_daemon *dm, struct emu_client *cl, const struct uroce_hello_req *q,
		     int *mem_fd, int *maps_fd, struct uroce_hello_rep *r, int fds[3])
{
	struct emu_ctx *c = cl->ctx;

	if (c->hello_done)
		return -EISCONN;
	if (q->abi_version != UROCE_ABI_VERSION) {
		/* the refusal's body tells the client ours */
		EMU_LOG_RL(NOTICE, "pid %d: liburoce speaks ABI version %u, this uroced %u: refused\n",
			(int)c->pid, q->abi_version, UROCE_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* no payload moves by pid: the context is bound to the address
	 * space of the process that opened its own /proc/self/mem */
	int rc = emu_mem_attach(c, *mem_fd, *maps_fd);
	if (rc) {
		EMU_LOG(NOTICE, "pid %d: hello without its own /proc/self/mem (and maps): %s\n",
			(int)c->pid, strerror(-rc));
		return rc;
	}
	*mem_fd = *maps_fd = -1; /* the context owns them now */
	c->privileged = emu_access_privileged(&dm->o.acc, c->uid, c->pid, c->mem_fd);
	void *map;
	int mfd;
	rc = emu_shm_create("uroce-db", UROCE_DB_PAGE_SIZE, &mfd, &map);
	if (rc)
		return rc;
	int w[2] = { -1, -1 }, ard = -1, awr = -1;
	if (pipe2(w, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = emu_evq_pipe(&ard, &awr);
	if (rc)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &cl->ep_wake };
	if (epoll_ctl(dm->epfd, EPOLL_CTL_ADD, w[0], &ev) < 0) {
		rc = -errno;
		goto fail;
	}
	c->db = map;
	c->db_memfd = mfd;
	c->wake_fd = w[0];
	c->async_fd = awr;
	c->db->daemon_pid = (uint32_t)getpid();
	c->hello_done = true;
	emu_dev_hello(&dm->dev, r);
	r->flags = c->privileged ? UROCE_HELLO_F_PRIVILEGED : 0;
	fds[0] = mfd;
	fds[1] = w[1];
	fds[2] = ard;
	return 0;
fail:
	for (int i = 0; i < 2; i++)
		if (w[i] >= 0)
			close(w[i]);
	if (ard >= 0)
		close(ard);
	if (awr >= 0)
		close(awr);
	emu_shm_destroy(mfd, map, UROCE_DB_PAGE_SIZE);
	return rc;
}

static int emu_op_hello(struct emu_op *k)
{
	int no_fd = -1, no_maps = -1;
	/* fds[0]: the client's /proc/self/mem, fds[1] (optional) its maps */
	int rc = emu_hello(k->dm, k->cl, &k->q->hello, k->nfds >= 1 ? &k->fds[0] : &no_fd,
			   k->nfds >= 2 ? &k->fds[1] : &no_maps, &k->rep->hello, k->ofds);
	if (!rc) {
		k->nofds = 3;
		k->oclose = 1; /* the client's ends of the wake and async pipes */
		k->rlen = sizeof(k->rep->hello);
	} else if (rc == -EPROTONOSUPPORT) {
		/* the reply's first field keeps its place in every version */
		k->rep->hello.abi_version = UROCE_ABI_VERSION;
		k->elen = sizeof(k->rep->hello.abi_version);
	}
	return rc;
}

/* validate the header against the shape table: 0 or the reply status */
static int emu_req_check(const struct emu_ctx *c, const struct uroce_msg_hdr *h, size_t n,
			 unsigned nfds)
{
	if (n < sizeof(*h))
		return -EINVAL;
	if (h->op == 0 || h->op >= UROCE_OP_MAX || h->len != n || !emu_req_shape[h->op])
		return -EINVAL;
	/* the one variable-length request: an rdma_ucm command */
	if (h->op == UROCE_OP_UCMA_CMD ? n - sizeof(*h) < sizeof(struct uroce_ucma_cmd_req) ||
					 n - sizeof(*h) > emu_req_shape[h->op]->len :
	    n - sizeof(*h) != emu_req_shape[h->op]->len)
		return -EINVAL;
	if (nfds > emu_req_shape[h->op]->fds)
		return -EINVAL;
	if (!c->hello_done && h->op != UROCE_OP_HELLO)
		return -ENOTCONN;
	/* the uid is the kernel's (SO_PEERCRED at connect), not the client's word */
	if (emu_req_shape[h->op]->admin && !emu_admin_allowed(c))
		return -EPERM;
	return 0;
}

/* The reply to a mailbox request (abi.h, struct uroce_ctl_mbox), as
 * req_seq (what the client waits for): in the mailbox, or on the socket
 * when it has descriptors or does not fit. false: drop the client. */
static bool emu_mbox_reply(struct emu_ctx *c, const struct uroce_msg_hdr *rq, uint32_t req_seq,
			   int status, const void *body, size_t blen, const int *fds,
			   unsigned nfds)
{
	struct uroce_ctl_mbox *mb = &c->db->mbox;
	struct uroce_msg_hdr h = { .op = rq->op, .seq = rq->seq, .status = status };
	bool ok = true;

	if (status)
		nfds = 0;
	if (nfds || sizeof(h) + blen > UROCE_MBOX_MAX) {
		ok = emu_reply(c, rq, status, body, blen, fds, nfds);
		h.len = 0; /* "on the socket" */
	} else {
		h.len = (uint32_t)(sizeof(h) + blen);
		if (blen)
			memcpy(mb->rep + sizeof(h), body, blen);
	}
	memcpy(mb->rep, &h, sizeof(h));
	__atomic_store_n(&mb->rep_seq, req_seq, __ATOMIC_RELEASE);
	/* pairs with the client's fence between setting waiting and its
	 * last look at rep_seq before FUTEX_WAIT */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&mb->waiting, __ATOMIC_RELAXED))
		syscall(SYS_futex, &mb->rep_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
	return ok;
}

/* false: drop the client (its reply could not be sent). mbox_seq: 0 for
 * a socket request, else the mailbox's req_seq it came with. */
static bool emu_dispatch(struct emu_daemon *dm, struct emu_client *cl, const uint8_t *buf,
			 size_t n, int *fds, unsigned nfds, uint32_t mbox_seq)
{
	struct emu_ctx *c = cl->ctx;
	struct uroce_msg_hdr h;
	union emu_rep rep;
	union emu_req q;
	struct emu_op k = { .dm = dm, .cl = cl, .c = c, .q = &q, .rep = &rep,
			    .fds = fds, .nfds = nfds, .mfd = -1 };
	int rc;

	/* every message gets exactly one reply, even a runt (with what we
	 * could read of its header) so a client never waits forever */
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	memset(&rep, 0, sizeof(rep));
	rc = emu_req_check(c, &h, n, nfds);
	if (rc)
		goto reply;
	/* should its execution block on the client's memory, the engine
	 * that takes over answers it (emu_ctl_abandoned) */
	c->ctl_busy = true;
	c->ctl_op = h.op;
	c->ctl_seq = h.seq;
	cl->mbox_busy = mbox_seq != 0;
	/* the body may be unaligned inside buf: copy it out */
	memcpy(&q, buf + sizeof(h), n - sizeof(h));
	k.qlen = n - sizeof(h);
	k.op = h.op;
	rc = emu_req_shape[h.op]->run(&k);
	if (!rc && k.mfd >= 0) {
		k.ofds[0] = k.mfd;
		k.nofds = 1;
		k.oclose = 1; /* owned by its object */
	}
	if (rc)
		EMU_LOG_RL(DEBUG, "pid %d: op %u -> %d\n", (int)c->pid, h.op, rc);
reply:
	c->ctl_busy = false;
	/* an error reply has no body unless the op gave it one */
	size_t blen = rc ? k.elen : k.rlen;
	bool ok = mbox_seq ? emu_mbox_reply(c, &h, mbox_seq, rc, &rep, blen, k.ofds, k.nofds) :
		  emu_reply(c, &h, rc, &rep, blen, k.ofds, k.nofds);
	for (unsigned i = k.oclose; i < k.nofds; i++)
		close(k.ofds[i]);
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ok;
}

void emu_ctl_abandoned(struct emu_ctx *c, int status)
{
	struct uroce_msg_hdr h = { .op = c->ctl_op, .seq = c->ctl_seq };

	struct emu_client *cl = c->priv;

	if (!c->ctl_busy || c->sock < 0)
		return;
	c->ctl_busy = false;
	if (cl && cl->mbox_busy && c->db)
		emu_mbox_reply(c, &h, cl->mbox_seen, status, NULL, 0, NULL, 0);
	else
		emu_reply(c, &h, status, NULL, 0, NULL, 0);
}

bool emu_ctl_mbox_ready(struct emu_daemon *dm)
{
	for (struct emu_ctx *c = dm->dev.ctxs; c; c = c->next) {
		struct emu_client *cl = c->priv;

		if (c->db && cl &&
		    __atomic_load_n(&c->db->mbox.req_seq, __ATOMIC_ACQUIRE) != cl->mbox_seen)
			return true;
	}
	return false;
}

unsigned emu_ctl_mbox_poll(struct emu_daemon *dm)
{
	uint8_t *buf = dm->ctl_mbox_buf;
	unsigned served = 0;

	for (struct emu_ctx *c = dm->dev.ctxs, *next; c; c = next) {
		struct emu_client *cl = c->priv;

		next = c->next;
		if (!c->db || !cl)
			continue;
		struct uroce_ctl_mbox *mb = &c->db->mbox;
		uint32_t s = __atomic_load_n(&mb->req_seq, __ATOMIC_ACQUIRE);
		if (s == cl->mbox_seen)
			continue;
		cl->mbox_seen = s;
		/* the client may change all of it at any time: its length is
		 * read once, and the request copied out before it is looked at */
		uint32_t len = __atomic_load_n(&mb->req_len, __ATOMIC_RELAXED);
		if (len > UROCE_MBOX_MAX)
			len = UROCE_MBOX_MAX; /* its header's len then disagrees: EINVAL */
		memcpy(buf, mb->req, len);
		served++;
		/* 0 is "a socket request" to emu_dispatch; a client that
		 * counts through it gets its reply as req_seq 0 all the same */
		if (!emu_dispatch(dm, cl, buf, len, NULL, 0, s ? s : UINT32_MAX))
			emu_client_close(dm, cl);
	}
	return served;
}

/* *served counts the requests answered */
static bool emu_client_read(struct emu_daemon *dm, struct emu_client *cl, unsigned *served)
{
	uint8_t *buf = dm->ctl_buf;
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * EMU_MAX_FDS_IN)];
	} cb;

	for (int k = 0; k < 64; k++) {
		struct iovec iov = { buf, sizeof(dm->ctl_buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
		ssize_t n = recvmsg(cl->ctx->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			return false;
		}
		if (n == 0)
			return false; /* EOF: the application closed or died */
		int fds[EMU_MAX_FDS_IN];
		unsigned nfds = 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			unsigned k2 = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			int *p = (int *)CMSG_DATA(cm);
			for (unsigned i = 0; i < k2; i++) {
				if (nfds < EMU_MAX_FDS_IN)
					fds[nfds++] = p[i];
				else
					close(p[i]);
			}
		}
		if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n > UROCE_MAX_MSG) {
			struct uroce_msg_hdr h = { 0 };
			if (n >= (ssize_t)sizeof(h))
				memcpy(&h, buf, sizeof(h));
			bool ok = emu_reply(cl->ctx, &h, -EMSGSIZE, NULL, 0, NULL, 0);
			for (unsigned i = 0; i < nfds; i++)
				close(fds[i]);
			if (!ok)
				return false;
			continue;
		}
		++*served;
		if (!emu_dispatch(dm, cl, buf, (size_t)n, fds, nfds, 0))
			return false;
	}
	return true;
}

unsigned emu_ctl_event(struct emu_daemon *dm, struct emu_ep *ep, uint32_t events)
{
	struct emu_client *cl = ep->p;
	unsigned served = 0;

	if (ep->kind == EMU_EP_PORT)
		return 0; /* a frame woke us: the engine loop receives it */
	if (ep->kind != EMU_EP_LISTEN && !cl->ctx)
		return 0; /* closed earlier in this batch */
	switch (ep->kind) {
	case EMU_EP_LISTEN:
		emu_accept(dm);
		break;
	case EMU_EP_SOCK:
		if (!emu_client_read(dm, cl, &served) || (events & (EPOLLHUP | EPOLLERR)))
			emu_client_close(dm, cl);
		break;
	case EMU_EP_WAKE: {
		/* our own O_NONBLOCK read end: never blocks, whatever the
		 * client does with its write end; a few reads per event, the
		 * level-triggered epoll brings us back for the rest */
		uint8_t v[512];
		for (int k = 0; k < 8; k++) {
			ssize_t r = read(cl->ctx->wake_fd, v, sizeof(v));
			if (r == 0) {
				/* the client closed its end: an EOF would wake
				 * the level-triggered epoll forever */
				epoll_ctl(dm->epfd, EPOLL_CTL_DEL, cl->ctx->wake_fd, NULL);
				close(cl->ctx->wake_fd);
				cl->ctx->wake_fd = -1;
				break;
			}
			if (r < (ssize_t)sizeof(v)) {
				if (r < 0 && errno != EAGAIN && errno != EINTR)
					EMU_LOG_RL(DEBUG, "wake read: %s\n", strerror(errno));
				break;
			}
		}
		break;
	}
	default:
		break;
	}
	return served;
}

void emu_ctl_need_wakeup(struct emu_daemon *dm, uint32_t v)
{
	for (struct emu_ctx *c = dm->dev.ctxs; c; c = c->next)
		if (c->db)
			__atomic_store_n(&c->db->need_wakeup, v, __ATOMIC_SEQ_CST);
}

bool emu_ctl_db_pending(struct emu_daemon *dm)
{
	if (emu_ctl_mbox_ready(dm))
		return true;
	for (struct emu_ctx *c = dm->dev.ctxs; c; c = c->next) {
		if (!c->db)
			continue;
		for (unsigned s = 0; s < UROCE_DB_MAX / 64 / 64; s++)
			if (__atomic_load_n(&c->db->summary[s], __ATOMIC_ACQUIRE))
				return true;
	}
	return false;
}

void emu_ctl_mark_dead(struct emu_daemon *dm)
{
	for (struct emu_ctx *c = dm->dev.ctxs; c; c = c->next) {
		for (uint32_t i = 0; i < c->nh; i++) {
			struct uroce_ring_hdr *h[2] = { NULL, NULL };
			switch (c->h[i].type) {
			case EMU_OBJ_CQ: h[0] = ((struct emu_cq *)c->h[i].obj)->hdr; break;
			case EMU_OBJ_SRQ: h[0] = ((struct emu_srq *)c->h[i].obj)->rq.hdr; break;
			case EMU_OBJ_QP:
				h[0] = ((struct emu_qp *)c->h[i].obj)->sq.hdr;
				h[1] = ((struct emu_qp *)c->h[i].obj)->rq.hdr;
				break;
			default: break;
			}
			for (int k = 0; k < 2; k++)
				if (h[k])
					__atomic_fetch_or(&h[k]->flags, UROCE_RING_F_DEAD, __ATOMIC_RELEASE);
		}
	}
}
