/* SPDX-License-Identifier: MIT */
/* liburoce's rdma_cm device (verbs/ucma.c) as librdmacm and a hostile
 * client see it: the kernel's ucma_write errnos, a bad `response` pointer
 * answered with EFAULT (never a crash), GET_EVENT blocking and not, the
 * fd's poll, close/dup2 destroying the file's ids, MIGRATE_ID, fork.
 *
 *   cm_shim CASE [PORT]    (run by cm.py with a private daemon, or with
 *                           none for "nodaemon")
 * Built twice: linked with liburoce (cm_shim) and without (cm_noshim), so
 * that "nodaemon" can show the errors are those of librdmacm alone. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>

#include "cm_check.h"

/* write() expecting -1 with errno e */
#define WERR(fd, p, n, e) do {                                                \
		errno = 0;                                                    \
		ssize_t r_ = write(fd, p, n);                                 \
		CHECK(r_ == -1 && errno == (e), "write -> %zd errno %d (%s), want %s", \
		      r_, errno, strerror(errno), #e);                        \
	} while (0)

static struct ucma_abi_create_id create_cmd(void *resp)
{
	struct ucma_abi_create_id c;

	INIT(c, UCMA_CMD_CREATE_ID, sizeof(struct ucma_abi_create_id_resp));
	c.response = (uintptr_t)resp;
	c.ps = RDMA_PS_TCP;
	c.qp_type = IBV_QPT_RC;
	return c;
}

/* an address nothing is mapped at, hidden from the compiler's checks */
static void *bad_ptr(uintptr_t v)
{
	volatile uintptr_t x = v;

	return (void *)x;
}

static int open_cm(int flags)
{
	int fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC | flags);

	CHECK(fd >= 0, "open rdma_cm: %s", strerror(errno));
	if (fd < 0)
		exit(1);
	return fd;
}

/* ---- no daemon: what librdmacm says without uroce ---------------------- */

static int case_nodaemon(void)
{
	struct rdma_event_channel *ch;
	struct ibv_context **devs;
	int n = -1, fd;

	errno = 0;
	fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);
	printf("open: %d %s\n", fd < 0 ? -1 : 0, fd < 0 ? strerror(errno) : "");
	errno = 0;
	ch = rdma_create_event_channel();
	printf("channel: %s %s\n", ch ? "ok" : "NULL", ch ? "" : strerror(errno));
	errno = 0;
	devs = rdma_get_devices(&n);
	printf("devices: %d\n", devs ? n : -1);
	if (devs)
		rdma_free_devices(devs);
	if (ch)
		rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- the write() checks, in the kernel's order ------------------------- */

static int case_write_errors(void)
{
	struct ucma_abi_create_id_resp cresp;
	struct ucma_abi_create_id c;
	struct ucma_abi_get_event ev;
	struct ucma_abi_destroy_id d;
	struct ucma_abi_destroy_id_resp dresp;
	struct stat st;
	void *ro;
	int fd = open_cm(0);

	CHECK(fstat(fd, &st) == 0 && S_ISCHR(st.st_mode), "fstat: not a character device");
	WERR(fd, &c, 4, EINVAL);                      /* shorter than the header */
	WERR(fd, bad_ptr(16), sizeof(c), EFAULT);      /* unreadable command */
	c = create_cmd(&cresp);
	c.cmd = 99;
	WERR(fd, &c, sizeof(c), EINVAL);              /* no such command */
	c = create_cmd(&cresp);
	c.in = sizeof(c) - HDR_SZ + 8;
	WERR(fd, &c, sizeof(c), EINVAL);              /* in beyond the write */
	c = create_cmd(&cresp);
	c.cmd = UCMA_CMD_GET_OPTION;
	WERR(fd, &c, sizeof(c), ENOSYS);              /* the kernel has none */

	INIT(ev, UCMA_CMD_GET_EVENT, 8);
	WERR(fd, &ev, sizeof(ev), ENOSPC);            /* room for no event */

	/* a bad response pointer: EFAULT, not a crash, nothing created */
	c = create_cmd(bad_ptr(8));
	WERR(fd, &c, sizeof(c), EFAULT);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED, "mmap");
	c = create_cmd(ro);
	WERR(fd, &c, sizeof(c), EFAULT);
	c = create_cmd(&cresp);
	c.out = 0;
	WERR(fd, &c, sizeof(c), ENOSPC);              /* no room for the id */

	/* GET_EVENT: no event and O_NONBLOCK is EAGAIN; a bad pointer is
	 * EFAULT before anything is consumed */
	CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0, "fcntl");
	struct ucma_abi_event_resp eresp;

	INIT(ev, UCMA_CMD_GET_EVENT, sizeof(eresp));
	ev.response = (uintptr_t)&eresp;
	WERR(fd, &ev, sizeof(ev), EAGAIN);
	ev.response = (uintptr_t)ro;
	WERR(fd, &ev, sizeof(ev), EFAULT);

	/* a good command: the byte count, the id in the response */
	c = create_cmd(&cresp);
	memset(&cresp, 0xa5, sizeof(cresp));
	errno = 0;
	ssize_t r = write(fd, &c, sizeof(c));
	CHECK(r == (ssize_t)sizeof(c), "create_id -> %zd (%s)", r, strerror(errno));

	/* MIGRATE_ID names its source file by fd */
	struct ucma_abi_migrate_id m;
	struct ucma_abi_migrate_resp mresp;
	int p[2];

	INIT(m, UCMA_CMD_MIGRATE_ID, sizeof(mresp));
	m.response = (uintptr_t)&mresp;
	m.id = cresp.id;
	m.fd = 1000;                                 /* not open */
	WERR(fd, &m, sizeof(m), ENOENT);
	CHECK(pipe(p) == 0, "pipe");
	m.fd = (uint32_t)p[0];                     /* not an rdma_cm file */
	WERR(fd, &m, sizeof(m), EINVAL);
	m.fd = (uint32_t)fd;                         /* itself: events_reported */
	mresp.events_reported = 77;
	r = write(fd, &m, sizeof(m));
	CHECK(r == (ssize_t)sizeof(m) && mresp.events_reported == 0,
	      "migrate to itself -> %zd (%s) events_reported %u", r, strerror(errno),
	      mresp.events_reported);

	INIT(d, UCMA_CMD_DESTROY_ID, sizeof(dresp));
	d.response = (uintptr_t)ro;
	d.id = cresp.id;
	WERR(fd, &d, sizeof(d), EFAULT);             /* the id stays */
	d.response = (uintptr_t)&dresp;
	dresp.events_reported = 77;
	r = write(fd, &d, sizeof(d));
	CHECK(r == (ssize_t)sizeof(d) && dresp.events_reported == 0,
	      "destroy_id -> %zd (%s) events_reported %u", r, strerror(errno),
	      dresp.events_reported);
	WERR(fd, &d, sizeof(d), ENOENT);             /* gone now */

	struct pollfd pf = { .fd = fd, .events = POLLIN };

	CHECK(poll(&pf, 1, 0) == 0, "poll: readable with no event");
	close(p[0]);
	close(p[1]);
	close(fd);
	munmap(ro, 4096);
	return 0;
}

/* ---- events through librdmacm: poll, blocking, O_NONBLOCK, migrate ---- */

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int timeout_ms)
{
	struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e = NULL;

	if (poll(&pf, 1, timeout_ms) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &e))
		return NULL;
	return e;
}

static int case_events(void)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct sockaddr_in dst = lo_addr(7174);
	struct pollfd pf;
	int fl;

	CHECK(ch1 && ch2, "rdma_create_event_channel: %s", strerror(errno));
	if (!ch1 || !ch2)
		return 1;
	CHECK(rdma_create_id(ch1, &id, NULL, RDMA_PS_TCP) == 0, "create_id: %s",
	      strerror(errno));
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0,
	      "resolve_addr: %s", strerror(errno));
	/* blocking: the event comes (bounded by poll first) */
	e = next_event(ch1, 20000);
	CHECK(e && e->event == RDMA_CM_EVENT_ADDR_RESOLVED, "no ADDR_RESOLVED");
	/* the first device, or the one UROCE_CM_DEVICE names */
	const char *want = getenv("UROCE_CM_DEVICE") ? getenv("UROCE_CM_DEVICE") : "uroce0";

	CHECK(id->verbs && !strcmp(ibv_get_device_name(id->verbs->device), want),
	      "id on %s, want %s", id->verbs ? ibv_get_device_name(id->verbs->device) : "-",
	      want);
	if (e)
		rdma_ack_cm_event(e);
	/* O_NONBLOCK from the application: EAGAIN, as the kernel's fd */
	fl = fcntl(ch1->fd, F_GETFL);
	CHECK(fcntl(ch1->fd, F_SETFL, fl | O_NONBLOCK) == 0, "fcntl");
	errno = 0;
	CHECK(rdma_get_cm_event(ch1, &e) == -1 && errno == EAGAIN,
	      "nonblocking get_cm_event: errno %d", errno);
	/* migrate: the next event comes on ch2 only */
	CHECK(rdma_migrate_id(id, ch2) == 0, "migrate_id: %s", strerror(errno));
	CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route: %s", strerror(errno));
	e = next_event(ch2, 20000);
	CHECK(e && e->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "no ROUTE_RESOLVED on ch2");
	if (e)
		rdma_ack_cm_event(e);
	pf = (struct pollfd){ .fd = ch1->fd, .events = POLLIN };
	CHECK(poll(&pf, 1, 0) == 0, "ch1 readable after the migration");
	CHECK(rdma_destroy_id(id) == 0, "destroy_id: %s", strerror(errno));
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
	return 0;
}

/* ---- SET_OPTION: the value travels with the command ------------------- */

static int case_set_option(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = lo_addr(7174);
	struct ucma_abi_set_option so;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	uint8_t tos = 0x28, big[2048] = { 0 };

	CHECK(ch != NULL, "channel: %s", strerror(errno));
	if (!ch)
		return 1;
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
	/* the value is read from the application's memory: a bad one is EFAULT */
	INIT(so, UCMA_CMD_SET_OPTION, 0);
	so.id = 0;          /* the checks come before the id is looked up */
	so.level = RDMA_OPTION_ID;
	so.optname = RDMA_OPTION_ID_TOS;
	so.optlen = 1;
	so.optval = (uintptr_t)bad_ptr(8);
	WERR(ch->fd, &so, sizeof(so), EFAULT);
	so.optval = (uintptr_t)big;
	so.optlen = sizeof(big);
	WERR(ch->fd, &so, sizeof(so), EINVAL);      /* no option is that long */
	/* a good one reaches the daemon: the route carries the TOS */
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1) == 0,
	      "set_option TOS: %s", strerror(errno));
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve_addr");
	e = next_event(ch, 20000);
	CHECK(e && e->event == RDMA_CM_EVENT_ADDR_RESOLVED, "no ADDR_RESOLVED");
	if (e)
		rdma_ack_cm_event(e);
	CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route");
	e = next_event(ch, 20000);
	CHECK(e && e->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "no ROUTE_RESOLVED");
	if (e)
		rdma_ack_cm_event(e);
	CHECK(id->route.num_paths >= 1 && id->route.path_rec &&
	      id->route.path_rec[0].traffic_class == tos,
	      "route traffic class %d, want %d (the TOS set)",
	      id->route.path_rec ? id->route.path_rec[0].traffic_class : -1, tos);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- the file's ids go with its last close (close, dup2) -------------- */

static int bind_on(struct rdma_event_channel *ch, int port, struct rdma_cm_id **id)
{
	struct sockaddr_in a = lo_addr(port);

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_bind_addr(*id, (struct sockaddr *)&a)) {
		int e = errno;

		rdma_destroy_id(*id);
		*id = NULL;
		return -e;
	}
	return 0;
}

static int case_close(int port)
{
	struct rdma_event_channel *a = rdma_create_event_channel();
	struct rdma_event_channel *b = rdma_create_event_channel();
	struct rdma_cm_id *ia, *ib;
	int r, null = open("/dev/null", O_RDWR);

	CHECK(a && b, "channels: %s", strerror(errno));
	if (!a || !b)
		return 1;
	CHECK(bind_on(a, port, &ia) == 0, "bind %d", port);
	r = bind_on(b, port, &ib);
	CHECK(r == -EADDRINUSE, "second bind of %d: %d, want EADDRINUSE", port, r);
	/* dup2 over a's fd closes a's file: its id and port go */
	CHECK(dup2(null, a->fd) == a->fd, "dup2");
	r = bind_on(b, port, &ib);
	CHECK(r == 0, "bind after dup2 over the owner's fd: %d", r);
	/* close() does the same */
	struct rdma_event_channel *c = rdma_create_event_channel();
	struct rdma_cm_id *ic;

	CHECK(c != NULL, "channel c");
	close(b->fd);
	r = bind_on(c, port, &ic);
	CHECK(r == 0, "bind after close of the owner's fd: %d", r);
	rdma_destroy_id(ic);
	rdma_destroy_event_channel(c);
	close(null);
	return 0;
}

/* ---- GET_EVENT blocked while another thread closes the fd ------------- */

/* The kernel's file lives while the blocked call holds it: the call keeps
 * waiting (no event comes any more) until a signal ends it. rping's event
 * thread relies on it while main() closes the channel and returns. */
static int blocked_ret, blocked_errno, blocked_done;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *get_event_thread(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_cm_event *e;
	int r = rdma_get_cm_event(ch, &e);

	blocked_errno = errno;
	blocked_ret = r;
	__atomic_store_n(&blocked_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int case_close_blocked(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };   /* no SA_RESTART */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	pthread_t t;

	CHECK(ch != NULL, "channel: %s", strerror(errno));
	if (!ch)
		return 1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&t, NULL, get_event_thread, ch);
	/* the sleeps only give a wrong implementation the time to show */
	usleep(200 * 1000);
	close(ch->fd);
	usleep(300 * 1000);
	CHECK(!__atomic_load_n(&blocked_done, __ATOMIC_ACQUIRE),
	      "GET_EVENT returned after the close: %d errno %d (%s)", blocked_ret,
	      blocked_errno, strerror(blocked_errno));
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	CHECK(blocked_ret == -1 && blocked_errno == EINTR,
	      "after the signal: %d errno %d, want EINTR", blocked_ret, blocked_errno);
	rdma_destroy_event_channel(ch);         /* its fd is closed already */
	return 0;
}

/* ---- fork: the child cannot touch the parent's ids -------------------- */

static int case_fork(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	int st;
	pid_t pid;

	CHECK(ch != NULL, "channel: %s", strerror(errno));
	if (!ch)
		return 1;
	CHECK(bind_on(ch, port, &id) == 0, "bind %d", port);
	pid = fork();
	if (pid == 0) {
		struct ucma_abi_create_id_resp cresp;
		struct ucma_abi_create_id c = create_cmd(&cresp);
		struct rdma_event_channel *mine;
		struct rdma_cm_id *cid;
		int r;

		/* the inherited fd: refused, as the kernel refuses a file used
		 * from another context */
		WERR(ch->fd, &c, sizeof(c), EACCES);
		/* closing it only closes the child's copy */
		close(ch->fd);
		/* a channel of its own works, and sees the parent's port taken */
		mine = rdma_create_event_channel();
		CHECK(mine != NULL, "child channel: %s", strerror(errno));
		r = mine ? bind_on(mine, port, &cid) : -1;
		CHECK(r == -EADDRINUSE, "child bind: %d, want EADDRINUSE", r);
		_exit(failures ? 1 : 0);
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child failed");
	/* the parent's id survived the child's close */
	CHECK(rdma_listen(id, 4) == 0, "listen after the child: %s", strerror(errno));
	CHECK(rdma_destroy_id(id) == 0, "destroy_id: %s", strerror(errno));
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- a wildcard listener's copies take its options --------------------- */

/* the child, on uroce1: connect to dst, the REJECTED status it gets */
static int connect_status(const struct sockaddr *dst)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 0x123, .retry_count = 7 };
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	int st = -1;

	CHECK(ch && !rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "child id: %s", strerror(errno));
	if (!ch)
		return -1;
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000), "resolve_addr");
	if ((e = next_event(ch, 10000)))
		rdma_ack_cm_event(e);
	CHECK(!rdma_resolve_route(id, 2000), "resolve_route: %s", strerror(errno));
	if ((e = next_event(ch, 10000)))
		rdma_ack_cm_event(e);
	CHECK(!rdma_connect(id, &cp), "connect: %s", strerror(errno));
	e = next_event(ch, 20000);
	CHECK(e && e->event == RDMA_CM_EVENT_REJECTED, "connect: %s",
	      e ? rdma_event_str(e->event) : "no event");
	if (e) {
		st = e->status;
		rdma_ack_cm_event(e);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return st;
}

/* A listener on [::] with AFONLY, REUSEADDR and TOS set before LISTEN, in
 * a process whose rdma_cm is uroce0: its copy on uroce1 must take them
 * (the kernel's per-device listeners take afonly and tos). A client on
 * uroce1 (a child with UROCE_CM_DEVICE=uroce1) connects over IPv4, which
 * the listener must not hear (a copy without AFONLY would), then over
 * IPv6, which it must (a copy refusing an option would not be there).
 * Both are rejected with 28: the listener's rdma_reject, and for IPv4 the
 * service's IB CM listener finding no rdma_cm id for the address, as the
 * kernel's cma_ib_req_handler fails and cm_destroy_id rejects. */
static int case_mux_options(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	struct rdma_cm_id *l;
	int one = 1, st, v4 = 0, v6 = 0;
	uint8_t tos = 32;
	pid_t pid;

	CHECK(ch && !rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), "id: %s", strerror(errno));
	if (!ch)
		return 1;
	CHECK(!rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), "afonly");
	CHECK(!rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)),
	      "reuseaddr");
	CHECK(!rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)), "tos");
	CHECK(!rdma_bind_addr(l, (struct sockaddr *)&any), "bind [::]: %s", strerror(errno));
	CHECK(!rdma_listen(l, 4), "listen: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in a4 = lo_addr(port);
		struct sockaddr_in6 a6 = any;

		a6.sin6_addr = in6addr_loopback;
		setenv("UROCE_CM_DEVICE", "uroce1", 1);
		st = connect_status((struct sockaddr *)&a4);
		CHECK(st == 28, "IPv4 to uroce1: REJECTED %d, want 28", st);
		st = connect_status((struct sockaddr *)&a6);
		CHECK(st == 28, "IPv6 to uroce1: REJECTED %d, want 28 (the listener's reject)", st);
		_exit(failures ? 1 : 0);
	}
	CHECK(pid > 0, "fork");
	/* every request the listener hears is rejected; which family came */
	for (int i = 0; i < 300 && waitpid(pid, &st, WNOHANG) == 0; i++) {
		struct rdma_cm_event *e = next_event(ch, 100);

		if (!e)
			continue;
		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			sa_family_t fam = e->id->route.addr.src_addr.sa_family;

			v4 += fam == AF_INET;
			v6 += fam == AF_INET6;
			rdma_reject(e->id, NULL, 0);
			rdma_destroy_id(e->id);
		}
		rdma_ack_cm_event(e);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
	CHECK(v4 == 0 && v6 == 1, "requests heard: %d IPv4, %d IPv6; want 0, 1", v4, v6);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- DEVICE_REMOVAL when the daemon goes away ------------------------- */

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *e = next_event(ch, 20000);

	CHECK(e && e->event == t, "event %s, want %s", e ? rdma_event_str(e->event) : "none",
	      rdma_event_str(t));
	return e && e->event == t ? e : NULL;
}

static struct rdma_cm_event *blocked_event;

/* rdma_get_cm_event() blocked in the read when the daemon stops */
static void *removal_thread(void *arg)
{
	struct rdma_event_channel *ch = arg;

	if (rdma_get_cm_event(ch, &blocked_event))
		blocked_event = NULL;
	return NULL;
}

/* what the removal cases set up before cm.py stops the daemon */
struct removal_ids {
	struct rdma_event_channel *chs, *chc; /* server's, client's */
	struct rdma_cm_id *l, *c, *n, *idle;  /* listener, client, accepted, unbound */
};

/* a listener, both ends of a connection and an unbound id (contexts 0x11,
 * 0x22, 0x44, 0x33); 0 when all are there */
static int removal_setup(int port, struct removal_ids *r)
{
	struct rdma_conn_param cp = { .qp_num = 0x123, .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7 };
	struct sockaddr_in a = lo_addr(port);
	struct rdma_cm_event *e;

	memset(r, 0, sizeof(*r));
	r->chs = rdma_create_event_channel();
	r->chc = rdma_create_event_channel();
	CHECK(r->chs && r->chc, "channels: %s", strerror(errno));
	if (!r->chs || !r->chc)
		return 1;
	CHECK(rdma_create_id(r->chs, &r->l, (void *)0x11, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(r->l, (struct sockaddr *)&a) == 0 && rdma_listen(r->l, 4) == 0,
	      "listen: %s", strerror(errno));
	CHECK(rdma_create_id(r->chs, &r->idle, (void *)0x33, RDMA_PS_TCP) == 0, "idle id");
	CHECK(rdma_create_id(r->chc, &r->c, (void *)0x22, RDMA_PS_TCP) == 0 &&
	      rdma_resolve_addr(r->c, NULL, (struct sockaddr *)&a, 2000) == 0, "resolve");
	if ((e = expect(r->chc, RDMA_CM_EVENT_ADDR_RESOLVED)))
		rdma_ack_cm_event(e);
	CHECK(rdma_resolve_route(r->c, 2000) == 0, "resolve_route");
	if ((e = expect(r->chc, RDMA_CM_EVENT_ROUTE_RESOLVED)))
		rdma_ack_cm_event(e);
	CHECK(rdma_connect(r->c, &cp) == 0, "connect: %s", strerror(errno));
	if ((e = expect(r->chs, RDMA_CM_EVENT_CONNECT_REQUEST))) {
		r->n = e->id;
		r->n->context = (void *)0x44;
		cp.qp_num = 0x456;
		CHECK(rdma_accept(r->n, &cp) == 0, "accept: %s", strerror(errno));
		rdma_ack_cm_event(e);
	}
	if ((e = expect(r->chc, RDMA_CM_EVENT_CONNECT_RESPONSE))) {
		CHECK(rdma_establish(r->c) == 0, "establish: %s", strerror(errno));
		rdma_ack_cm_event(e);
	}
	if ((e = expect(r->chs, RDMA_CM_EVENT_ESTABLISHED)))
		rdma_ack_cm_event(e);
	return failures || !r->n;
}

/* the ids set up; cm.py stops the daemon after READY: every id on the
 * device gets DEVICE_REMOVAL (with its context) through its channel,
 * exactly once, the unbound one none; then commands on them fail with
 * ENXIO, DESTROY_ID works */
static int case_removal(int port)
{
	struct removal_ids r;
	struct rdma_event_channel *chs, *chc;
	struct rdma_cm_id *l, *c, *n, *idle;
	struct rdma_cm_event *e;
	pthread_t th;
	int seen_l = 0, seen_n = 0;

	if (removal_setup(port, &r))
		return 1;
	chs = r.chs, chc = r.chc, l = r.l, c = r.c, n = r.n, idle = r.idle;
	pthread_create(&th, NULL, removal_thread, chc);
	printf("READY\n");
	/* the listener and the accepted id, in either order, through poll */
	for (int k = 0; k < 2; k++) {
		e = next_event(chs, 30000);
		CHECK(e && e->event == RDMA_CM_EVENT_DEVICE_REMOVAL, "server event %d: %s", k,
		      e ? rdma_event_str(e->event) : strerror(errno));
		if (!e)
			break;
		seen_l += e->id == l && e->id->context == (void *)0x11;
		seen_n += e->id == n && e->id->context == (void *)0x44;
		CHECK(e->status == 0, "status %d", e->status);
		rdma_ack_cm_event(e);
	}
	CHECK(seen_l == 1 && seen_n == 1, "DEVICE_REMOVAL: listener %d, accepted id %d",
	      seen_l, seen_n);
	/* nothing more: not readable, EAGAIN without blocking (the idle id
	 * is on no device) */
	struct pollfd pf = { .fd = chs->fd, .events = POLLIN };
	CHECK(poll(&pf, 1, 200) == 0, "server channel readable after its events (revents %#x)",
	      pf.revents);
	fcntl(chs->fd, F_SETFL, fcntl(chs->fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	CHECK(rdma_get_cm_event(chs, &e) == -1 && errno == EAGAIN, "after: errno %d", errno);
	pthread_join(th, NULL);
	CHECK(blocked_event && blocked_event->event == RDMA_CM_EVENT_DEVICE_REMOVAL &&
	      blocked_event->id == c && c->context == (void *)0x22,
	      "blocked rdma_get_cm_event: %s",
	      blocked_event ? rdma_event_str(blocked_event->event) : "failed");
	if (blocked_event)
		rdma_ack_cm_event(blocked_event);
	/* the ids are closed: ENXIO (ucma_get_ctx), as after the kernel's */
	errno = 0;
	CHECK(rdma_disconnect(n) == -1 && errno == ENXIO, "disconnect: errno %d", errno);
	CHECK(rdma_destroy_id(n) == 0 && rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0 &&
	      rdma_destroy_id(idle) == 0, "destroy_id: %s", strerror(errno));
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
	return 0;
}

/* An id destroyed after the daemon went away and before its DEVICE_REMOVAL
 * was fetched takes that event with it (the kernel's ucma_destroy_id
 * frees the id's queued events): rping's main thread destroys its
 * connection's id after a failed poll while its CM thread has yet to
 * fetch, and librdmacm would hand that thread an event for the freed id.
 * cm.py stops the daemon after READY. */
static int case_removal_destroyed(int port)
{
	struct removal_ids r;
	struct rdma_cm_event *e;
	int got_l = 0, other = 0;

	if (removal_setup(port, &r))
		return 1;
	printf("READY\n");
	/* the daemon's end of the server's channel closes; fetch nothing */
	struct pollfd pf = { .fd = r.chs->fd, .events = POLLIN };
	CHECK(poll(&pf, 1, 30000) == 1, "the daemon did not go away");
	/* a command finds the daemon gone: the ids' events are queued, the
	 * command fails (ENXIO: the ids are closed) */
	uint8_t tos = 32;
	errno = 0;
	CHECK(rdma_set_option(r.idle, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)) == -1 &&
	      errno == ENXIO, "set_option on the unbound id: errno %d, want ENXIO", errno);
	CHECK(rdma_destroy_id(r.n) == 0, "destroy the accepted id: %s", strerror(errno));
	fcntl(r.chs->fd, F_SETFL, fcntl(r.chs->fd, F_GETFL) | O_NONBLOCK);
	for (int k = 0; k < 4; k++) {
		errno = 0;
		if (rdma_get_cm_event(r.chs, &e)) {
			CHECK(errno == EAGAIN, "server channel: errno %d", errno);
			break;
		}
		if (e->event == RDMA_CM_EVENT_DEVICE_REMOVAL && e->id == r.l &&
		    r.l->context == (void *)0x11)
			got_l++;
		else
			other++; /* e->id may be the freed one: not read */
		rdma_ack_cm_event(e);
	}
	CHECK(got_l == 1 && other == 0,
	      "server events: %d DEVICE_REMOVAL for the listener (want 1), %d others (want 0: "
	      "the accepted id was destroyed before its event was fetched)", got_l, other);
	if ((e = expect(r.chc, RDMA_CM_EVENT_DEVICE_REMOVAL))) {
		CHECK(e->id == r.c && r.c->context == (void *)0x22, "client's event for another id");
		rdma_ack_cm_event(e);
	}
	CHECK(rdma_destroy_id(r.c) == 0 && rdma_destroy_id(r.l) == 0 &&
	      rdma_destroy_id(r.idle) == 0, "destroy_id: %s", strerror(errno));
	rdma_destroy_event_channel(r.chs);
	rdma_destroy_event_channel(r.chc);
	return 0;
}

/* ---- a REJECT, then what perftest's retry should do ------------------- */

/* a client id on ch resolved to port, with a QP of its own (as perftest's
 * data connection has one before it connects) */
static struct rdma_cm_id *client_with_qp(struct rdma_event_channel *ch, int port,
					 struct ibv_pd **pd, struct ibv_cq **cq)
{
	struct sockaddr_in a = lo_addr(port);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, (void *)0x55, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000))
		return NULL;
	if ((e = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED)))
		rdma_ack_cm_event(e);
	CHECK(!rdma_resolve_route(id, 2000), "resolve_route: %s", strerror(errno));
	if ((e = expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)))
		rdma_ack_cm_event(e);
	*pd = id->verbs ? ibv_alloc_pd(id->verbs) : NULL;
	*cq = id->verbs ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
	CHECK(*pd && *cq, "pd/cq: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = *cq;
	CHECK(*pd && *cq && !rdma_create_qp(id, *pd, &qa), "rdma_create_qp: %s", strerror(errno));
	return id;
}

static void client_free(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq)
{
	if (id->qp)
		rdma_destroy_qp(id);
	CHECK(!rdma_destroy_id(id), "destroy_id: %s", strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
}

/* perftest -R's data connection when the server has not listened again:
 * REJECTED 8 for the connecting id (its context kept, its QP in ERR as
 * librdmacm leaves it), then the client frees everything it made for the
 * connection and makes it again (what perftest 4.5's retry fails to do:
 * it reuses the destroyed ids, docs/cm.md) and is accepted once a
 * listener is there. */
static int case_reject_retry(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct sockaddr_in a = lo_addr(port);
	struct rdma_cm_id *c, *l, *n = NULL;
	struct rdma_cm_event *e;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;

	CHECK(ch && chs, "channels: %s", strerror(errno));
	if (!ch || !chs)
		return 1;
	c = client_with_qp(ch, port, &pd, &cq);
	CHECK(c && c->qp, "client: %s", strerror(errno));
	if (!c || !c->qp)
		return 1;
	CHECK(!rdma_connect(c, &cp), "connect: %s", strerror(errno));
	if ((e = expect(ch, RDMA_CM_EVENT_REJECTED))) {
		CHECK(e->id == c && e->id->context == (void *)0x55 && e->status == 8,
		      "REJECTED: id %p (want %p), context %p, status %d (want 8)",
		      (void *)e->id, (void *)c, e->id->context, e->status);
		rdma_ack_cm_event(e);
	}
	CHECK(!ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_ERR,
	      "the rejected QP: state %d, want ERR", (int)qa.qp_state);
	if (failures)
		return 1;
	client_free(c, pd, cq);
	rdma_destroy_event_channel(ch);

	CHECK(!rdma_create_id(chs, &l, NULL, RDMA_PS_TCP) &&
	      !rdma_bind_addr(l, (struct sockaddr *)&a) && !rdma_listen(l, 4),
	      "listen: %s", strerror(errno));
	ch = rdma_create_event_channel();
	c = ch ? client_with_qp(ch, port, &pd, &cq) : NULL;
	CHECK(c && c->qp, "client again: %s", strerror(errno));
	if (!c || !c->qp)
		return 1;
	CHECK(!rdma_connect(c, &cp), "connect again: %s", strerror(errno));
	if ((e = expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST))) {
		n = e->id;
		cp.qp_num = 0x789;     /* the server needs no QP of its own here */
		CHECK(!rdma_accept(n, &cp), "accept: %s", strerror(errno));
		rdma_ack_cm_event(e);
	}
	/* the client has a QP: librdmacm moves it to RTS and sends the RTU */
	if ((e = expect(ch, RDMA_CM_EVENT_ESTABLISHED))) {
		CHECK(e->id == c, "ESTABLISHED for another id");
		rdma_ack_cm_event(e);
	}
	if ((e = expect(chs, RDMA_CM_EVENT_ESTABLISHED)))
		rdma_ack_cm_event(e);
	if (failures)
		return 1;      /* an event left unacked would hang rdma_destroy_id */
	if (n)
		rdma_destroy_id(n);
	client_free(c, pd, cq);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(chs);
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	int port = argc > 2 ? atoi(argv[2]) : 7471;
	int r;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(c, "nodaemon"))
		r = case_nodaemon();
	else if (!strcmp(c, "write_errors"))
		r = case_write_errors();
	else if (!strcmp(c, "events"))
		r = case_events();
	else if (!strcmp(c, "close"))
		r = case_close(port);
	else if (!strcmp(c, "set_option"))
		r = case_set_option();
	else if (!strcmp(c, "close_blocked"))
		r = case_close_blocked();
	else if (!strcmp(c, "fork"))
		r = case_fork(port);
	else if (!strcmp(c, "mux_options"))
		r = case_mux_options(port);
	else if (!strcmp(c, "removal"))
		r = case_removal(port);
	else if (!strcmp(c, "removal_destroyed"))
		r = case_removal_destroyed(port);
	else if (!strcmp(c, "reject_retry"))
		r = case_reject_retry(port);
	else {
		fprintf(stderr, "unknown case %s\n", c);
		return 2;
	}
	if (r || failures) {
		fprintf(stderr, "%s: %d failure(s)\n", c, failures);
		return 1;
	}
	printf("%s: ok\n", c);
	return 0;
}
