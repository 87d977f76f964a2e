/* SPDX-License-Identifier: MIT */
/* Hardening through the shim (issue 7): descriptors the application gets
 * from the daemon, used as an application might misuse them, with the
 * verbs semantics intact and another context still served.
 *
 *   event_backlog  the channel fd made blocking and one page small, and
 *                  not read while events are generated past its capacity:
 *                  another context is served meanwhile, and every event
 *                  then arrives through ibv_get_cq_event, none extra
 *   abi_refused    daemons of another ABI version (a newer one that says
 *                  its version, an older one that does not): their devices
 *                  are listed, ibv_open_device fails with EPROTONOSUPPORT,
 *                  and stderr has one line per daemon naming both versions */
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <uroce/abi.h>

#include "vt.h"

/* one verified SEND qa -> qb of t, a fresh pattern each time */
static void traffic(struct vt *t, unsigned seed)
{
	struct ibv_wc wc;

	for (unsigned i = 0; i < 256; i++)
		t->buf[8192 + i] = (uint8_t)(seed * 131 + i * 7);
	memset(t->buf, 0, 256);
	vt_post_recv(t->qb, t->mr, 0, 4096, seed);
	REQUIRE(!vt_post_send(t->qa, t->mr, IBV_WR_SEND, 8192, 256, IBV_SEND_SIGNALED, 0, 0, 0,
			    seed));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	vt_poll_n(t->rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == 256);
	REQUIRE(!memcmp(t->buf, t->buf + 8192, 256));
}

static void event_backlog(void)
{
	struct vt_opts o = { .channel = true };
	struct ibv_cq *cq;
	void *cc;
	struct vt t, t2;
	int i, n, fl, cap;

	vt_init(&t, &o);
	fl = fcntl(t.ch->fd, F_GETFL);
	REQUIRE(fl >= 0 && !fcntl(t.ch->fd, F_SETFL, fl & ~O_NONBLOCK));
	cap = fcntl(t.ch->fd, F_SETPIPE_SZ, 4096);
	REQUIRE(cap > 0);
	n = cap / 8 + 50; /* 50 events more than the pipe holds */
	for (i = 0; i < n; i++) {
		REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
		traffic(&t, (unsigned)i);
	}
	/* the daemon holds 50 records for us and still serves others */
	vt_init(&t2, NULL);
	for (i = 0; i < 8; i++)
		traffic(&t2, 1000u + (unsigned)i);
	vt_fini(&t2);
	for (i = 0; i < n; i++) {
		vt_get_event(t.ch, &cq, &cc);
		REQUIRE(cq == t.rcq && cc == (void *)0x7c);
	}
	ibv_ack_cq_events(t.rcq, (unsigned)n);
	REQUIRE(!vt_readable(t.ch->fd, 300)); /* no more than were triggered */
	vt_fini(&t);
}

/* A daemon of another ABI version as it answers every HELLO: refused,
 * with its version as the body when it has one to say (0: a daemon from
 * before version 4, which refused without a body). */
static void fake_daemon(int ls, uint32_t version)
{
	for (;;) {
		union { struct cmsghdr c; uint8_t b[CMSG_SPACE(sizeof(int) * 4)]; } cb;
		struct { struct uroce_msg_hdr h; uint32_t v; } m;
		struct iovec iov = { &m, sizeof(m) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.b, .msg_controllen = sizeof(cb) };
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			_exit(1);
		/* the request's descriptor (/proc/self/mem) closes on exit */
		if (recvmsg(c, &mh, MSG_CMSG_CLOEXEC) >= (ssize_t)sizeof(m.h) &&
		    m.h.op == UROCE_OP_HELLO) {
			m.h.status = -EPROTONOSUPPORT;
			m.h.len = (uint32_t)(version ? sizeof(m) : sizeof(m.h));
			m.v = version;
			if (send(c, &m, m.h.len, MSG_NOSIGNAL) < 0)
				_exit(1);
		}
		close(c);
	}
}

static struct {
	char dir[64];
	pid_t pid[2];
} fake;

static void fake_stop(void)
{
	char p[128];

	for (int i = 0; i < 2; i++) {
		if (fake.pid[i] > 0) {
			kill(fake.pid[i], SIGKILL);
			waitpid(fake.pid[i], NULL, 0);
		}
		snprintf(p, sizeof(p), "%s/uroce%d.sock", fake.dir, 8 + i);
		unlink(p);
	}
	rmdir(fake.dir);
}

static pid_t fake_start(const char *name, uint32_t version)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	pid_t pid;

	REQUIRE(ls >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", fake.dir, name);
	REQUIRE(!bind(ls, (struct sockaddr *)&sa, sizeof(sa)) && !listen(ls, 4));
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(VT_WAIT_S); /* never outlive a hung test */
		fake_daemon(ls, version);
	}
	close(ls);
	return pid;
}

static void abi_refused(void)
{
	const uint32_t newer = UROCE_ABI_VERSION + 1;
	char out[2048], want[2][128];
	struct ibv_device **l;
	int n, i, opened = 0, err = 0, saved, tmp;
	ssize_t got;

	snprintf(fake.dir, sizeof(fake.dir), "/tmp/uroce-s6-hyg-XXXXXX");
	REQUIRE(mkdtemp(fake.dir));
	atexit(fake_stop);
	fake.pid[0] = fake_start("uroce8", newer);
	fake.pid[1] = fake_start("uroce9", 0);
	REQUIRE(!setenv(UROCE_ENV_RUN_DIR, fake.dir, 1));
	/* the shim's lines to stderr, into a file */
	snprintf(out, sizeof(out), "%s/stderr", fake.dir);
	tmp = open(out, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	REQUIRE(tmp >= 0 && !unlink(out));
	fflush(stderr);
	saved = dup(2);
	REQUIRE(saved >= 0 && dup2(tmp, 2) == 2);
	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n; i++) {
		const char *name = ibv_get_device_name(l[i]);
		struct ibv_context *ctx;

		if (strcmp(name, "uroce8") && strcmp(name, "uroce9"))
			continue;
		errno = 0;
		ctx = ibv_open_device(l[i]);
		opened += ctx != NULL;
		err |= ctx ? 0 : errno == EPROTONOSUPPORT ? 1 << (name[5] - '8') : 4;
		if (ctx)
			ibv_close_device(ctx);
	}
	fflush(stderr);
	REQUIRE(dup2(saved, 2) == 2 && !close(saved));
	got = pread(tmp, out, sizeof(out) - 1, 0);
	close(tmp);
	REQUIRE(got >= 0);
	out[got] = 0;
	fprintf(stderr, "shim said:\n%s", out);
	REQUIRE(l);
	ibv_free_device_list(l);
	/* both listed, neither opened, each with EPROTONOSUPPORT */
	REQUIRE(!opened && err == 3);
	snprintf(want[0], sizeof(want[0]), "uroce8.sock: the daemon speaks ABI version %u, "
		 "this liburoce %u: ", newer, UROCE_ABI_VERSION);
	snprintf(want[1], sizeof(want[1]), "uroce9.sock: the daemon speaks ABI version < 4, "
		 "this liburoce %u: ", UROCE_ABI_VERSION);
	/* one line each: the listing's and the open's are the same line */
	for (i = 0; i < 2; i++) {
		const char *at = strstr(out, want[i]);

		REQUIRE(at && !strstr(at + 1, want[i]));
	}
	REQUIRE(!strcmp(out + strlen(out) - 1, "\n"));
	for (i = 0, n = 0; out[i]; i++)
		n += out[i] == '\n';
	REQUIRE(n == 2);
}

static const struct vt_case cases[] = {
	{ "event_backlog", event_backlog },
	{ "abi_refused", abi_refused },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
