/* SPDX-License-Identifier: MIT */
/* Control server: one SOCK_SEQPACKET socket per device, one message per
 * verbs call. Everything a client sends is validated (length per op, fds
 * per op, handles in its own context); a client that closes its socket or
 * dies loses all its objects. */
#include <errno.h>
#include <fcntl.h>
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

#include "daemon.h"
#include "cm/ibcm.h"
#include "cm/ucma.h"

#define EMU_MAX_FDS_IN 4

struct emu_client {
	struct emu_ctx *ctx;      /* NULL once closed */
	struct emu_client *next_dead;
	struct emu_ep ep_sock;
	struct emu_ep ep_wake;
	uint32_t mbox_seen;       /* the mailbox's req_seq last served */
	bool mbox_busy;           /* the request being executed came by the mailbox */
};

/* Closed clients are freed only after the current epoll batch: a later
 * event of the same batch may still name them. */
static __thread struct emu_client *emu_dead_clients; /* per worker */

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

void emu_ctl_reap(struct emu_daemon *dm)
{
	emu_accept_resume_check(dm);
	while (emu_dead_clients) {
		struct emu_client *cl = emu_dead_clients;
		emu_dead_clients = cl->next_dead;
		free(cl);
	}
}

int emu_ctl_open(struct emu_daemon *dm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(dm->sock_path, sizeof(dm->sock_path), "%s/%s%s", dm->o.run_dir,
			 dm->o.dev, UROCE_SOCK_SUFFIX);

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
	cl->next_dead = emu_dead_clients;
	emu_dead_clients = cl;
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

/* One control request being served: what the handler reads, and what it
 * leaves for the reply. */
union emu_req {
	struct uroce_hello_req hello;
	struct uroce_query_port_req port;
	struct uroce_handle_msg hm;
	struct uroce_reg_mr_req mr;
	struct uroce_rereg_mr_req rereg;
	struct uroce_map_mr_req map;
	struct uroce_mem_chan_req chan;
	struct uroce_query_mrs_req mrs;
	struct uroce_alloc_mw_req mw;
	struct uroce_import_req imp;
	struct uroce_alloc_dm_req dm;
	struct uroce_reg_dm_mr_req dmmr;
	struct uroce_advise_mr_req adv;
	struct uroce_create_cq_req cq;
	struct uroce_resize_cq_req rcq;
	struct uroce_create_srq_req srq;
	struct uroce_modify_srq_req msrq;
	struct uroce_create_qp_req qp;
	struct uroce_modify_qp_req mqp;
	struct uroce_query_qp_req qqp;
	struct uroce_create_ah_req ah;
	struct uroce_mcast_req mc;
	struct uroce_query_stats_req st;
	struct uroce_query_qps_req qps;
	struct uroce_fault_set_req fault;
	struct uroce_open_xrcd_req xrcd;
	struct uroce_create_xsrq_req xsrq;
	struct uroce_xrc_qp_req xqp;
	struct uroce_cc_set_req cc_set;
	uint8_t ucma[sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN];
};

union emu_rep {
	struct uroce_hello_rep hello;
	struct uroce_query_port_rep port;
	struct uroce_handle_msg hm;
	struct uroce_reg_mr_rep mr;
	struct uroce_alloc_mw_rep mw;
	struct uroce_import_rep imp;
	struct uroce_alloc_dm_rep dm;
	struct uroce_advise_mr_rep adv;
	struct uroce_create_cq_rep cq;
	struct uroce_create_srq_rep srq;
	struct ibv_srq_attr srq_attr;
	struct uroce_create_qp_rep qp;
	struct uroce_create_qp_arena_rep qpa;
	struct uroce_query_qp_rep qq;
	struct uroce_query_stats_rep stats;
	struct uroce_cm_stats_rep cm_stats;
	struct uroce_query_cc_rep cc;
	struct uroce_ucma_open_rep ucma_open;
	struct uroce_dev_info dev_info;
	struct uroce_query_qps_rep qps;
	struct uroce_query_mrs_rep mrs;
	struct uroce_fault_info fault;
	struct uroce_capture_rep capture;
	struct uroce_open_xrcd_rep xrcd;
	struct uroce_create_xsrq_rep xsrq;
	struct uroce_xrc_qp_rep xqp;
	uint8_t ucma_out[UROCE_UCMA_MAX_OUT];
};

struct emu_op {
	struct emu_daemon *dm;
	struct emu_client *cl;
	struct emu_ctx *c;
	uint16_t op;
	const union emu_req *q;
	size_t qlen;          /* request body length (variable-length ops) */
	union emu_rep *rep;
	size_t rlen;          /* reply body length */
	size_t elen;          /* body length of an error reply (HELLO's refusal) */
	int *fds;             /* received descriptors */
	unsigned nfds;
	int ofds[3];          /* descriptors sent with the reply */
	unsigned nofds;
	unsigned oclose;      /* ofds[oclose..nofds) are ours to close once sent */
	int mfd;              /* an object's ring memfd to send (owned by it) */
};

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

static int emu_op_query_port(struct emu_op *k)
{
	const struct emu_dev *d = &k->dm->dev;
	struct uroce_query_port_rep *r = &k->rep->port;

	if (k->q->port.port_num != 1)
		return -EINVAL;
	r->port_attr = d->port_attr;
	r->port_attr.state = d->port_state;
	r->gid_count = d->gid_count;
	for (uint32_t i = 0; i < d->gid_count; i++) {
		r->gids[i] = d->gids[i];
		r->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
	}
	k->rlen = sizeof(*r);
	return 0;
}

static int emu_op_alloc_pd(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->hm);
	return emu_pd_alloc(k->c, &k->rep->hm.handle);
}

static int emu_op_dealloc_pd(struct emu_op *k)
{
	return emu_pd_dealloc(k->c, k->q->hm.handle);
}

static int emu_op_reg_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_mr_reg(k->c, &k->q->mr, &k->rep->mr);
}

static int emu_op_rereg_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_mr_rereg(k->c, &k->q->rereg, &k->rep->mr);
}

static int emu_op_dereg_mr(struct emu_op *k)
{
	return emu_mr_dereg(k->c, k->q->hm.handle);
}

/* the file stays mapped through its own reference; the descriptor is
 * closed with the request's. Every refusal -EACCES (core/mrmap.c). */
static int emu_op_map_mr(struct emu_op *k)
{
	if (k->nfds != 1)
		return -EACCES;
	return emu_mr_map(k->c, &k->q->map, k->fds[0]);
}

/* XRC (core/xrcd.c); the domain's file descriptor is closed with the
 * request's: the daemon keeps only its dev/ino */
static int emu_op_open_xrcd(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xrcd);
	return emu_xrcd_open(k->c, &k->q->xrcd, k->nfds ? k->fds[0] : -1, &k->rep->xrcd);
}

static int emu_op_close_xrcd(struct emu_op *k)
{
	return emu_xrcd_close(k->c, k->q->hm.handle);
}

static int emu_op_create_xsrq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xsrq);
	return emu_xsrq_create(k->c, &k->q->xsrq, &k->rep->xsrq, &k->mfd);
}

static int emu_op_create_xtgt(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xqp);
	return emu_xrc_tgt_create(k->c, &k->q->xqp, &k->rep->xqp);
}

static int emu_op_open_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->xqp);
	return emu_xrc_qp_open(k->c, &k->q->xqp, &k->rep->xqp);
}

/* the client's io_uring, taken from its process (core/pin.c) */
static int emu_op_mem_channel(struct emu_op *k)
{
	return emu_pin_attach(k->c, &k->q->chan);
}

static int emu_op_import(struct emu_op *k)
{
	const struct uroce_import_req *q = &k->q->imp;

	k->rlen = sizeof(k->rep->imp);
	if (q->type != UROCE_IMPORT_DM)
		return emu_obj_import(k->c, q, &k->rep->imp);
	memset(&k->rep->imp, 0, sizeof(k->rep->imp));
	if (q->pd || q->rsvd)
		return -EINVAL;
	return emu_dm_import(k->c, q->handle, &k->rep->imp.length, &k->mfd);
}

static int emu_op_alloc_dm(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->dm);
	return emu_dm_alloc(k->c, &k->q->dm, &k->rep->dm, &k->mfd);
}

static int emu_op_free_dm(struct emu_op *k)
{
	return emu_dm_free(k->c, k->q->hm.handle);
}

static int emu_op_reg_dm_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mr);
	return emu_dm_reg_mr(k->c, &k->q->dmmr, &k->rep->mr);
}

static int emu_op_advise_mr(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->adv);
	return emu_mr_advise(k->c, &k->q->adv, &k->rep->adv);
}

static int emu_op_alloc_mw(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->mw);
	return emu_mw_alloc(k->c, &k->q->mw, &k->rep->mw);
}

static int emu_op_dealloc_mw(struct emu_op *k)
{
	return emu_mw_dealloc(k->c, k->q->hm.handle);
}

static int emu_op_create_channel(struct emu_op *k)
{
	int wfd;
	int rc = emu_evq_pipe(&k->ofds[0], &wfd);
	if (rc)
		return rc;
	rc = emu_channel_create(k->c, wfd, &k->rep->hm.handle); /* owns wfd, even on error */
	if (rc) {
		close(k->ofds[0]);
		return rc;
	}
	k->nofds = 1;
	k->oclose = 0; /* the read end goes to the client only */
	k->rlen = sizeof(k->rep->hm);
	return 0;
}

static int emu_op_destroy_channel(struct emu_op *k)
{
	return emu_channel_destroy(k->c, k->q->hm.handle);
}

static int emu_op_create_cq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cq);
	return emu_cq_create(k->c, &k->q->cq, &k->rep->cq, &k->mfd);
}

static int emu_op_resize_cq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cq);
	return emu_cq_resize(k->c, &k->q->rcq, &k->rep->cq, &k->mfd);
}

static int emu_op_destroy_cq(struct emu_op *k)
{
	return emu_cq_destroy(k->c, k->q->hm.handle);
}

static int emu_op_create_srq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->srq);
	return emu_srq_create(k->c, &k->q->srq, &k->rep->srq, &k->mfd);
}

static int emu_op_modify_srq(struct emu_op *k)
{
	if (k->q->msrq.attr_mask & IBV_SRQ_MAX_WR)
		k->rlen = sizeof(k->rep->srq);
	return emu_srq_modify_ex(k->c, &k->q->msrq, &k->rep->srq, &k->mfd);
}

static int emu_op_query_srq(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->srq_attr);
	return emu_srq_query(k->c, k->q->hm.handle, &k->rep->srq_attr);
}

static int emu_op_destroy_srq(struct emu_op *k)
{
	return emu_srq_destroy(k->c, k->q->hm.handle);
}

static int emu_op_create_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->qp);
	return emu_qp_create(k->c, &k->q->qp, &k->rep->qp, &k->mfd);
}

static int emu_op_create_qp_arena(struct emu_op *k)
{
	int fd;
	bool fd_close;
	int rc = emu_qp_create_arena(k->c, &k->q->qp, &k->rep->qpa, &fd, &fd_close);

	if (rc)
		return rc;
	k->rlen = sizeof(k->rep->qpa);
	if (fd >= 0) {
		k->ofds[0] = fd;
		k->nofds = 1;
		k->oclose = fd_close ? 0 : 1;
	}
	return 0;
}

static int emu_op_modify_qp(struct emu_op *k)
{
	return emu_qp_modify_op(k->c, &k->q->mqp);
}

static int emu_op_query_qp(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->qq);
	return emu_qp_query_op(k->c, &k->q->qqp, &k->rep->qq);
}

static int emu_op_destroy_qp(struct emu_op *k)
{
	return emu_qp_destroy(k->c, k->q->hm.handle);
}

static int emu_op_create_ah(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->hm);
	return emu_ah_create(k->c, &k->q->ah, &k->rep->hm.handle);
}

static int emu_op_destroy_ah(struct emu_op *k)
{
	return emu_ah_destroy(k->c, k->q->hm.handle);
}

static int emu_op_mcast(struct emu_op *k)
{
	return emu_mcast_op(k->c, &k->q->mc, k->op == UROCE_OP_ATTACH_MCAST);
}

static int emu_op_query_stats(struct emu_op *k)
{
	emu_stats_fill(&k->dm->dev, k->c, k->q->st.first_qpn, &k->rep->stats);
	k->rlen = sizeof(k->rep->stats);
	return 0;
}

static int emu_op_query_cm_stats(struct emu_op *k)
{
	int rc = emu_ibcm_stats_fill(&k->dm->dev, &k->rep->cm_stats);
	if (!rc)
		k->rlen = sizeof(k->rep->cm_stats);
	return rc;
}

static int emu_op_query_cc(struct emu_op *k)
{
	emu_cc_fill(&k->dm->dev, k->c, k->q->st.first_qpn, &k->rep->cc);
	k->rlen = sizeof(k->rep->cc);
	return 0;
}

/* rdma_cm (emu/cm/ucma.c): the pipe's read end goes to the client only */
static int emu_op_ucma_open(struct emu_op *k)
{
	int rc = emu_ucma_open(k->c, &k->rep->ucma_open.handle, &k->ofds[0]);
	if (rc)
		return rc;
	k->nofds = 1;
	k->oclose = 0;
	k->rlen = sizeof(k->rep->ucma_open);
	return 0;
}

static int emu_op_ucma_cmd(struct emu_op *k)
{
	return emu_ucma_cmd(k->c, k->q->ucma, k->qlen, k->rep->ucma_out, &k->rlen);
}

static int emu_op_ucma_close(struct emu_op *k)
{
	return emu_ucma_close(k->c, k->q->hm.handle);
}

/* uroce-ctl (admin.c) */
static int emu_op_dev_info(struct emu_op *k)
{
	emu_admin_dev_info(k->dm, &k->rep->dev_info);
	k->rlen = sizeof(k->rep->dev_info);
	return 0;
}

static int emu_op_query_qps(struct emu_op *k)
{
	emu_qp_info_fill(&k->dm->dev, k->c, k->q->qps.first_qpn, &k->rep->qps);
	k->rlen = sizeof(k->rep->qps);
	return 0;
}

static int emu_op_query_mrs(struct emu_op *k)
{
	emu_mr_info_fill(&k->dm->dev, k->c, &k->q->mrs, &k->rep->mrs);
	k->rlen = sizeof(k->rep->mrs);
	return 0;
}

static int emu_op_fault(struct emu_op *k)
{
	int rc = 0;

	if (k->op == UROCE_OP_FAULT_SET)
		rc = emu_admin_fault_set(k->dm, &k->q->fault, &k->rep->fault);
	else if (k->op == UROCE_OP_FAULT_CLEAR)
		emu_admin_fault_clear(k->dm, &k->rep->fault);
	else
		emu_admin_fault_get(k->dm, &k->rep->fault);
	k->rlen = sizeof(k->rep->fault);
	return rc;
}

static int emu_op_cc_set(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->cc);
	return emu_admin_cc_set(k->dm, k->c, &k->q->cc_set, &k->rep->cc);
}

static int emu_op_capture_start(struct emu_op *k)
{
	int no_fd = -1;

	return emu_admin_capture_start(k->dm, k->nfds >= 1 ? &k->fds[0] : &no_fd);
}

static int emu_op_capture_stop(struct emu_op *k)
{
	k->rlen = sizeof(k->rep->capture);
	return emu_admin_capture_stop(k->dm, &k->rep->capture);
}

/* Requests that change what every user's traffic goes through: root and
 * the daemon's uid only (admin.c). */
static bool emu_op_admin(uint32_t op)
{
	switch (op) {
	case UROCE_OP_FAULT_SET:
	case UROCE_OP_FAULT_CLEAR:
	case UROCE_OP_CAPTURE_START:
	case UROCE_OP_CAPTURE_STOP:
	case UROCE_OP_CC_SET:
		return true;
	default:
		return false;
	}
}

/* Each request: its exact body length (UCMA_CMD: at most), how many
 * descriptors it may carry, and its handler. An op without a handler is
 * refused. */
static const struct {
	uint16_t len;
	uint8_t fds;
	int (*run)(struct emu_op *k);
} emu_req_shape[UROCE_OP_MAX] = {
	[UROCE_OP_HELLO] = { sizeof(struct uroce_hello_req), 2, emu_op_hello },
	[UROCE_OP_QUERY_PORT] = { sizeof(struct uroce_query_port_req), 0, emu_op_query_port },
	[UROCE_OP_ALLOC_PD] = { 0, 0, emu_op_alloc_pd },
	[UROCE_OP_DEALLOC_PD] = { sizeof(struct uroce_handle_msg), 0, emu_op_dealloc_pd },
	[UROCE_OP_REG_MR] = { sizeof(struct uroce_reg_mr_req), 0, emu_op_reg_mr },
	[UROCE_OP_REREG_MR] = { sizeof(struct uroce_rereg_mr_req), 0, emu_op_rereg_mr },
	[UROCE_OP_DEREG_MR] = { sizeof(struct uroce_handle_msg), 0, emu_op_dereg_mr },
	[UROCE_OP_ALLOC_MW] = { sizeof(struct uroce_alloc_mw_req), 0, emu_op_alloc_mw },
	[UROCE_OP_DEALLOC_MW] = { sizeof(struct uroce_handle_msg), 0, emu_op_dealloc_mw },
	[UROCE_OP_CREATE_COMP_CHANNEL] = { 0, 0, emu_op_create_channel },
	[UROCE_OP_DESTROY_COMP_CHANNEL] = { sizeof(struct uroce_handle_msg), 0,
					    emu_op_destroy_channel },
	[UROCE_OP_CREATE_CQ] = { sizeof(struct uroce_create_cq_req), 0, emu_op_create_cq },
	[UROCE_OP_RESIZE_CQ] = { sizeof(struct uroce_resize_cq_req), 0, emu_op_resize_cq },
	[UROCE_OP_DESTROY_CQ] = { sizeof(struct uroce_handle_msg), 0, emu_op_destroy_cq },
	[UROCE_OP_CREATE_SRQ] = { sizeof(struct uroce_create_srq_req), 0, emu_op_create_srq },
	[UROCE_OP_MODIFY_SRQ] = { sizeof(struct uroce_modify_srq_req), 0, emu_op_modify_srq },
	[UROCE_OP_QUERY_SRQ] = { sizeof(struct uroce_handle_msg), 0, emu_op_query_srq },
	[UROCE_OP_DESTROY_SRQ] = { sizeof(struct uroce_handle_msg), 0, emu_op_destroy_srq },
	[UROCE_OP_CREATE_QP] = { sizeof(struct uroce_create_qp_req), 0, emu_op_create_qp },
	[UROCE_OP_MODIFY_QP] = { sizeof(struct uroce_modify_qp_req), 0, emu_op_modify_qp },
	[UROCE_OP_QUERY_QP] = { sizeof(struct uroce_query_qp_req), 0, emu_op_query_qp },
	[UROCE_OP_DESTROY_QP] = { sizeof(struct uroce_handle_msg), 0, emu_op_destroy_qp },
	[UROCE_OP_CREATE_AH] = { sizeof(struct uroce_create_ah_req), 0, emu_op_create_ah },
	[UROCE_OP_DESTROY_AH] = { sizeof(struct uroce_handle_msg), 0, emu_op_destroy_ah },
	[UROCE_OP_ATTACH_MCAST] = { sizeof(struct uroce_mcast_req), 0, emu_op_mcast },
	[UROCE_OP_DETACH_MCAST] = { sizeof(struct uroce_mcast_req), 0, emu_op_mcast },
	[UROCE_OP_QUERY_STATS] = { sizeof(struct uroce_query_stats_req), 0, emu_op_query_stats },
	[UROCE_OP_UCMA_OPEN] = { 0, 0, emu_op_ucma_open },
	[UROCE_OP_UCMA_CMD] = { sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN, 0,
				emu_op_ucma_cmd },
	[UROCE_OP_UCMA_CLOSE] = { sizeof(struct uroce_handle_msg), 0, emu_op_ucma_close },
	[UROCE_OP_QUERY_CM_STATS] = { 0, 0, emu_op_query_cm_stats },
	[UROCE_OP_DEV_INFO] = { 0, 0, emu_op_dev_info },
	[UROCE_OP_QUERY_QPS] = { sizeof(struct uroce_query_qps_req), 0, emu_op_query_qps },
	[UROCE_OP_FAULT_GET] = { 0, 0, emu_op_fault },
	[UROCE_OP_FAULT_SET] = { sizeof(struct uroce_fault_set_req), 0, emu_op_fault },
	[UROCE_OP_FAULT_CLEAR] = { 0, 0, emu_op_fault },
	[UROCE_OP_CAPTURE_START] = { 0, 1, emu_op_capture_start },
	[UROCE_OP_CAPTURE_STOP] = { 0, 0, emu_op_capture_stop },
	[UROCE_OP_MAP_MR] = { sizeof(struct uroce_map_mr_req), 1, emu_op_map_mr },
	[UROCE_OP_MEM_CHANNEL] = { sizeof(struct uroce_mem_chan_req), 0, emu_op_mem_channel },
	[UROCE_OP_IMPORT] = { sizeof(struct uroce_import_req), 0, emu_op_import },
	[UROCE_OP_QUERY_CC] = { sizeof(struct uroce_query_stats_req), 0, emu_op_query_cc },
	[UROCE_OP_ALLOC_DM] = { sizeof(struct uroce_alloc_dm_req), 0, emu_op_alloc_dm },
	[UROCE_OP_FREE_DM] = { sizeof(struct uroce_handle_msg), 0, emu_op_free_dm },
	[UROCE_OP_REG_DM_MR] = { sizeof(struct uroce_reg_dm_mr_req), 0, emu_op_reg_dm_mr },
	[UROCE_OP_OPEN_XRCD] = { sizeof(struct uroce_open_xrcd_req), 1, emu_op_open_xrcd },
	[UROCE_OP_CLOSE_XRCD] = { sizeof(struct uroce_handle_msg), 0, emu_op_close_xrcd },
	[UROCE_OP_CREATE_XSRQ] = { sizeof(struct uroce_create_xsrq_req), 0, emu_op_create_xsrq },
	[UROCE_OP_CREATE_XTGT] = { sizeof(struct uroce_xrc_qp_req), 0, emu_op_create_xtgt },
	[UROCE_OP_OPEN_QP] = { sizeof(struct uroce_xrc_qp_req), 0, emu_op_open_qp },
	[UROCE_OP_CC_SET] = { sizeof(struct uroce_cc_set_req), 0, emu_op_cc_set },
	[UROCE_OP_ADVISE_MR] = { sizeof(struct uroce_advise_mr_req), 0, emu_op_advise_mr },
	[UROCE_OP_CREATE_QP_ARENA] = { sizeof(struct uroce_create_qp_req), 0,
				       emu_op_create_qp_arena },
	[UROCE_OP_QUERY_MRS] = { sizeof(struct uroce_query_mrs_req), 0, emu_op_query_mrs },
};

/* validate the header against the shape table: 0 or the reply status */
static int emu_req_check(const struct emu_ctx *c, const struct uroce_msg_hdr *h, size_t n,
			 unsigned nfds)
{
	if (n < sizeof(*h))
		return -EINVAL;
	if (h->op == 0 || h->op >= UROCE_OP_MAX || h->len != n || !emu_req_shape[h->op].run)
		return -EINVAL;
	/* the one variable-length request: an rdma_ucm command */
	if (h->op == UROCE_OP_UCMA_CMD ? n - sizeof(*h) < sizeof(struct uroce_ucma_cmd_req) ||
					 n - sizeof(*h) > emu_req_shape[h->op].len :
	    n - sizeof(*h) != emu_req_shape[h->op].len)
		return -EINVAL;
	if (nfds > emu_req_shape[h->op].fds)
		return -EINVAL;
	if (!c->hello_done && h->op != UROCE_OP_HELLO)
		return -ENOTCONN;
	/* the uid is the kernel's (SO_PEERCRED at connect), not the client's word */
	if (emu_op_admin(h->op) && !emu_admin_allowed(c))
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
	rc = emu_req_shape[h.op].run(&k);
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
	static __thread uint8_t buf[UROCE_MBOX_MAX]; /* per worker */
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
	/* one extra byte detects an oversized message */
	static __thread uint8_t buf[UROCE_MAX_MSG + 1]; /* per worker */
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * EMU_MAX_FDS_IN)];
	} cb;

	for (int k = 0; k < 64; k++) {
		struct iovec iov = { buf, sizeof(buf) };
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
