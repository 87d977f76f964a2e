/* SPDX-License-Identifier: MIT */
/* Access rule and isolation between users (docs/security.md):
 *  1. a user's daemon refuses a client of another uid even when the socket
 *     file lets it connect (SO_PEERCRED), answers -EACCES and closes,
 *     counts it, and keeps serving its own user and root;
 *  2. a system-wide root daemon with --socket-group sets the socket's group
 *     and mode, lets members (primary or supplementary group) in and
 *     refuses anyone else;
 *  3. on that daemon each uid's QUERY_STATS shows only its own QPs (root
 *     sees all);
 *  4. a squatted run directory (group/other-writable, a symlink, owned by
 *     another uid, in a parent others can write) stops the daemon before
 *     it starts: one line, exit 2.
 *  5. (audit, a regression guard) handles and QPNs of one context mean
 *     nothing in another: every handle-taking op, multicast attach by
 *     handle or QPN and AH creation on another context's PD fail with
 *     -EINVAL and leave the owner's objects as they were.
 * Parts 1-3 and the other-owner case need root (to be another uid); run
 * as non-root they are reported as failures, not skipped. */
#include "emu_test.h"

#define UID_A 4242u /* member of GRP by a supplementary group */
#define UID_B 4243u /* member of GRP by its primary group */
#define UID_X 4244u /* not allowed */
#define GRP 4300u

static const char *uroced;

/* Fork a child that becomes uid/gid (+ one supplementary group, or none)
 * and runs fn; the child never touches the test's daemon record. */
static pid_t as_user(uid_t uid, gid_t gid, gid_t sup, int (*fn)(void *), void *arg)
{
	pid_t p = fork();
	if (p != 0)
		return p;
	t_cur = NULL;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	gid_t g[1] = { sup };
	if (setgroups(sup ? 1 : 0, g) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		_exit(126);
	/* a uid change makes a process non-dumpable, and a non-dumpable
	 * process cannot open its own /proc/self/mem (docs/security.md); a
	 * user's processes started normally are dumpable */
	prctl(PR_SET_DUMPABLE, 1);
	_exit(fn(arg));
}

static int wait_child(pid_t p)
{
	int st;
	uint64_t end = t_now_ms() + 30000;
	while (waitpid(p, &st, WNOHANG) != p) {
		if (t_now_ms() > end) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			return -1;
		}
		usleep(5000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* HELLO on a fresh connection: 0 served, 1 refused with -EACCES then EOF,
 * 2 could not connect (file permissions), 3 anything else. */
static int try_hello(const char *sock)
{
	int fd = t_connect(sock);
	if (fd < 0)
		return 2;
	struct {
		struct uroce_msg_hdr h;
		struct uroce_hello_req q;
	} m = { { UROCE_OP_HELLO, sizeof(m), 7, 0 }, { UROCE_ABI_VERSION, (uint32_t)getpid() } };
	uint8_t in[UROCE_MAX_MSG];
	int rfds[4];
	unsigned nr = 0;
	int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	int n = t_raw(fd, &m, sizeof(m), &mem, mem >= 0 ? 1 : 0, in, sizeof(in), rfds, &nr);
	/* refused before our HELLO went out (EPIPE), or closed with it unread
	 * (ECONNRESET, reported once before the queued refusal) */
	for (int i = 0; i < 3 && (n == -EPIPE || n == -ECONNRESET); i++) {
		ssize_t k = recv(fd, in, sizeof(in), MSG_DONTWAIT);
		n = k < 0 ? -errno : (int)k;
	}
	for (unsigned i = 0; i < nr; i++)
		close(rfds[i]);
	if (mem >= 0)
		close(mem);
	int rc = 3;
	struct uroce_msg_hdr h;
	if (n >= (int)sizeof(h)) {
		memcpy(&h, in, sizeof(h));
		if (h.seq == 7 && h.status == 0)
			rc = 0;
		else if (h.seq == UROCE_REFUSED_SEQ && h.status == -EACCES &&
			 recv(fd, in, sizeof(in), 0) <= 0) /* and then closed */
			rc = 1;
	}
	close(fd);
	return rc;
}

static int child_hello(void *sock)
{
	return try_hello(sock);
}

/* A client that also gets objects made: served for real. */
static int child_serve(void *sock)
{
	struct t_client c;
	uint32_t pd;
	if (t_client_open(&c, sock))
		return 1;
	int rc = t_pd(&c, &pd);
	t_client_close(&c);
	return rc ? 1 : 0;
}

static int stats_qpns(struct t_client *c, uint32_t *qpns, uint32_t *pids, unsigned max,
		      uint32_t *refused)
{
	static struct uroce_query_stats_rep r;
	struct uroce_query_stats_req q = { 0, 0 };
	unsigned n = 0;
	do {
		int rc = t_call(c, UROCE_OP_QUERY_STATS, &q, sizeof(q), NULL, 0, &r, sizeof(r),
				NULL, NULL);
		if (rc)
			return rc;
		if (refused)
			*refused = r.port.clients_refused;
		for (uint32_t i = 0; i < r.nqps && n < max; i++, n++) {
			qpns[n] = r.qps[i].qpn;
			pids[n] = r.qps[i].pid;
		}
		if (r.next_qpn && r.next_qpn <= q.first_qpn)
			return -EPROTO;
		q.first_qpn = r.next_qpn;
	} while (q.first_qpn);
	return (int)n;
}

struct stats_arg {
	const char *sock;
	int to_parent, from_parent;
};

/* Make a QP, tell the parent its QPN, wait for "go", then report what
 * QUERY_STATS shows: count, then (qpn, pid) pairs. */
static int child_stats(void *v)
{
	struct stats_arg *a = v;
	struct t_client c;
	struct uroce_create_cq_rep cq;
	struct uroce_create_qp_rep qp;
	uint32_t pd, qpns[64], pids[64];
	char go;

	if (t_client_open(&c, a->sock) || t_pd(&c, &pd) || t_cq(&c, 16, &cq, NULL) ||
	    t_qp(&c, pd, cq.handle, cq.handle, IBV_QPT_RC, &qp, NULL))
		return 1;
	if (write(a->to_parent, &qp.qpn, 4) != 4 || read(a->from_parent, &go, 1) != 1)
		return 2;
	int n = stats_qpns(&c, qpns, pids, 64, NULL);
	if (n < 0)
		return 3;
	if (write(a->to_parent, &n, 4) != 4)
		return 2;
	for (int i = 0; i < n; i++)
		if (write(a->to_parent, &qpns[i], 4) != 4 || write(a->to_parent, &pids[i], 4) != 4)
			return 2;
	/* hold the QP until the parent has looked as root */
	if (read(a->from_parent, &go, 1) < 0)
		return 2;
	t_client_close(&c);
	return 0;
}

static bool read4(int fd, uint32_t *v)
{
	return read(fd, v, 4) == 4;
}

static void part_user_daemon(void)
{
	struct t_daemon d;
	struct t_client root;

	REQUIRE(t_daemon_start(&d, uroced, true, NULL) == 0, "start as nobody");
	uid_t nob = getpwnam("nobody")->pw_uid;
	gid_t nobg = getpwnam("nobody")->pw_gid;
	CHECK(try_hello(d.sock) == 0, "root is let in");
	CHECK(wait_child(as_user(nob, nobg, 0, child_serve, d.sock)) == 0,
	      "the daemon's own uid is served");
	/* the repro: a socket made reachable to everyone, as a
	 * multi-user service would have it. The file is no longer the gate. */
	CHECK(chmod(d.run, 0755) == 0 && chmod(d.sock, 0666) == 0, "chmod");
	CHECK(wait_child(as_user(UID_X, UID_X, 0, child_hello, d.sock)) == 1,
	      "another uid is refused with -EACCES and a close");
	CHECK(wait_child(as_user(UID_A, GRP, GRP, child_hello, d.sock)) == 1,
	      "another uid in any group is refused");
	/* and the daemon still serves its user, and counted the refusals */
	CHECK(wait_child(as_user(nob, nobg, 0, child_serve, d.sock)) == 0,
	      "own uid served after refusals");
	REQUIRE(t_client_open(&root, d.sock) == 0, "root client");
	uint32_t q[4], p[4], refused = 0;
	CHECK(stats_qpns(&root, q, p, 4, &refused) >= 0 && refused == 2, "refused counted: %u",
	      refused);
	t_client_close(&root);
	CHECK(t_daemon_stop(&d) == 0, "clean stop");
	t_rmdir(&d);
}

static void part_system_daemon(void)
{
	struct t_daemon d;
	char grp[16];
	snprintf(grp, sizeof(grp), "%u", GRP);
	const char *extra[] = { "--socket-group", grp, NULL };

	REQUIRE(t_daemon_start(&d, uroced, false, extra) == 0, "start system-wide");
	struct stat st;
	CHECK(stat(d.run, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0755,
	      "run dir root 0755: %o", st.st_mode & 0777);
	CHECK(stat(d.sock, &st) == 0 && st.st_gid == GRP && (st.st_mode & 0777) == 0660,
	      "socket group %u mode %o", (unsigned)st.st_gid, st.st_mode & 0777);
	chmod(d.dir, 0755); /* the test's parent dir: reachable by the users */
	CHECK(wait_child(as_user(UID_A, UID_A, GRP, child_serve, d.sock)) == 0,
	      "supplementary member served");
	CHECK(wait_child(as_user(UID_B, GRP, 0, child_serve, d.sock)) == 0,
	      "primary-group member served");
	CHECK(wait_child(as_user(UID_X, UID_X, 0, child_hello, d.sock)) == 2,
	      "non-member stopped by the socket's mode");
	CHECK(chmod(d.sock, 0666) == 0, "chmod");
	CHECK(wait_child(as_user(UID_X, UID_X, 0, child_hello, d.sock)) == 1,
	      "non-member refused by SO_PEERCRED once the file lets it connect");

	/* statistics: each member sees its own QP only, root both */
	int up[2][2], down[2][2];
	pid_t kid[2];
	uint32_t qpn[2];
	for (int i = 0; i < 2; i++) {
		REQUIRE(pipe(up[i]) == 0 && pipe(down[i]) == 0, "pipe");
		struct stats_arg a = { d.sock, up[i][1], down[i][0] };
		kid[i] = i ? as_user(UID_B, GRP, 0, child_stats, &a) :
			as_user(UID_A, UID_A, GRP, child_stats, &a);
		close(up[i][1]);
		close(down[i][0]);
		REQUIRE(read4(up[i][0], &qpn[i]), "child %d QPN", i);
	}
	CHECK(qpn[0] != qpn[1], "two QPs");
	for (int i = 0; i < 2; i++)
		CHECK(write(down[i][1], "g", 1) == 1, "go");
	for (int i = 0; i < 2; i++) {
		uint32_t n = 0, q, p;
		bool own = false, other = false;
		REQUIRE(read4(up[i][0], &n), "child %d count", i);
		for (uint32_t k = 0; k < n; k++) {
			REQUIRE(read4(up[i][0], &q) && read4(up[i][0], &p), "child %d list", i);
			own |= q == qpn[i] && p == (uint32_t)kid[i];
			other |= q != qpn[i];
		}
		CHECK(n == 1 && own && !other, "uid %u sees only its QP (%u QPs, own %d other %d)",
		      i ? UID_B : UID_A, n, own, other);
	}
	struct t_client root;
	uint32_t q[8], p[8];
	REQUIRE(t_client_open(&root, d.sock) == 0, "root client");
	int n = stats_qpns(&root, q, p, 8, NULL);
	int seen = 0;
	for (int k = 0; k < n; k++)
		seen += (q[k] == qpn[0] && p[k] == (uint32_t)kid[0]) +
			(q[k] == qpn[1] && p[k] == (uint32_t)kid[1]);
	CHECK(n == 2 && seen == 2, "root sees both QPs (%d, %d matched)", n, seen);
	t_client_close(&root);
	for (int i = 0; i < 2; i++) {
		CHECK(write(down[i][1], "g", 1) == 1, "done");
		CHECK(wait_child(kid[i]) == 0, "stats child %d", i);
		close(up[i][0]);
		close(down[i][1]);
	}
	CHECK(t_daemon_stop(&d) == 0, "clean stop");
	t_rmdir(&d);
}

/* uroced with UROCE_RUN_DIR=run: exit status (killed after 20 s if it
 * starts after all) and its stderr. */
static int run_daemon(const char *run, char *out, size_t cap)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 2);
		close(p[0]);
		setenv("UROCE_RUN_DIR", run, 1);
		execl(uroced, uroced, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	size_t n = 0;
	int st = 0;
	uint64_t end = t_now_ms() + 20000;
	bool killed = false;
	for (;;) {
		ssize_t k = read(p[0], out + n, cap - 1 - n);
		if (k > 0)
			n += (size_t)k;
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (!killed && t_now_ms() > end) {
			kill(pid, SIGKILL);
			killed = true;
		}
		usleep(5000);
	}
	ssize_t k;
	while (n < cap - 1 && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(p[0]);
	return killed ? -2 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_refused(const char *what, const char *run)
{
	char out[4096];
	int rc = run_daemon(run, out, sizeof(out));
	char *nl = strchr(out, '\n');
	CHECK(rc == 2, "%s: exit %d (want 2): %s", what, rc, out);
	CHECK(nl && nl[1] == 0 && strstr(out, "unsafe"), "%s: one line: '%s'", what, out);
}

static void part_run_dir(void)
{
	char base[] = "/tmp/uroce-acc-XXXXXX", run[300], good[300], sub[300];
	REQUIRE(mkdtemp(base), "mkdtemp");
	snprintf(run, sizeof(run), "%s/run", base);

	CHECK(mkdir(run, 0700) == 0 && chmod(run, 0777) == 0, "mkdir");
	expect_refused("other-writable run dir", run);
	CHECK(chmod(run, 0770) == 0, "chmod");
	expect_refused("group-writable run dir", run);
	rmdir(run);

	snprintf(good, sizeof(good), "%s/good", base);
	CHECK(mkdir(good, 0700) == 0 && symlink(good, run) == 0, "symlink");
	expect_refused("symlinked run dir", run);
	unlink(run);

	/* a parent anyone can write (not sticky) lets them swap the dir */
	snprintf(sub, sizeof(sub), "%s/open", base);
	CHECK(mkdir(sub, 0777) == 0 && chmod(sub, 0777) == 0, "mkdir open");
	snprintf(run, sizeof(run), "%s/open/run", base);
	expect_refused("run dir in a world-writable parent", run);
	snprintf(run, sizeof(run), "%s/run", base);

	if (geteuid() == 0) {
		CHECK(mkdir(run, 0700) == 0 && chown(run, UID_X, UID_X) == 0, "chown");
		expect_refused("run dir of another uid", run);
		rmdir(run);
	} else {
		CHECK(geteuid() == 0, "run dir of another uid: needs root");
	}
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd)) { /* best effort */ }
}

static void part_cross_context(void)
{
	struct t_daemon d;
	struct t_client a, b;
	struct uroce_create_cq_rep cq;
	struct uroce_create_qp_rep qp;
	uint32_t pd;

	REQUIRE(t_daemon_start(&d, uroced, false, NULL) == 0, "start");
	REQUIRE(t_client_open(&a, d.sock) == 0 && t_client_open(&b, d.sock) == 0, "clients");
	REQUIRE(t_pd(&a, &pd) == 0 && t_cq(&a, 16, &cq, NULL) == 0 &&
		t_qp(&a, pd, cq.handle, cq.handle, IBV_QPT_UD, &qp, NULL) == 0, "a's objects");
	/* b has no objects: a's handle numbers (and its QPN taken as a
	 * handle) must name nothing */
	uint32_t hs[] = { pd, cq.handle, qp.handle, qp.qpn };
	for (unsigned i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
		uint32_t h = hs[i];
		struct uroce_query_qp_req qq = { .handle = h, .attr_mask = IBV_QP_STATE };
		struct uroce_query_qp_rep qr;
		CHECK(t_call(&b, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr),
			     NULL, NULL) == -EINVAL, "query qp %u", h);
		struct uroce_modify_qp_req mq = { .handle = h, .attr_mask = IBV_QP_STATE };
		mq.attr.qp_state = IBV_QPS_ERR;
		CHECK(t_call(&b, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL,
			     NULL) == -EINVAL, "modify qp %u", h);
		struct uroce_mcast_req mc = { .qp = h };
		mc.gid.raw[0] = 0xff;
		mc.gid.raw[15] = 1;
		CHECK(t_call(&b, UROCE_OP_ATTACH_MCAST, &mc, sizeof(mc), NULL, 0, NULL, 0, NULL,
			     NULL) == -EINVAL, "attach mcast qp %u", h);
		struct uroce_create_ah_req ah = { .pd = h };
		ah.attr.port_num = 1;
		struct uroce_handle_msg ahr;
		CHECK(t_call(&b, UROCE_OP_CREATE_AH, &ah, sizeof(ah), NULL, 0, &ahr, sizeof(ahr),
			     NULL, NULL) == -EINVAL, "create ah on pd %u", h);
		struct uroce_create_qp_req q2 = { .pd = h, .send_cq = h, .recv_cq = h, .srq = -1,
						  .qp_type = IBV_QPT_UD,
						  .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };
		struct uroce_create_qp_rep qr2;
		CHECK(t_call(&b, UROCE_OP_CREATE_QP, &q2, sizeof(q2), NULL, 0, &qr2, sizeof(qr2),
			     NULL, NULL) == -EINVAL, "create qp on pd/cq %u", h);
		struct uroce_resize_cq_req rc2 = { .handle = h, .cqe = 32 };
		struct uroce_create_cq_rep cr2;
		CHECK(t_call(&b, UROCE_OP_RESIZE_CQ, &rc2, sizeof(rc2), NULL, 0, &cr2, sizeof(cr2),
			     NULL, NULL) == -EINVAL, "resize cq %u", h);
		static uint8_t mem[4096];
		struct uroce_reg_mr_req mr2 = { .pin = UROCE_PIN_NONE, .pd = h, .access = IBV_ACCESS_LOCAL_WRITE,
						.addr = (uintptr_t)mem, .length = sizeof(mem),
						.iova = (uintptr_t)mem };
		struct uroce_reg_mr_rep mrr;
		CHECK(t_call(&b, UROCE_OP_REG_MR, &mr2, sizeof(mr2), NULL, 0, &mrr, sizeof(mrr),
			     NULL, NULL) == -EINVAL, "reg mr on pd %u", h);
		static const uint32_t destroy[] = { UROCE_OP_DESTROY_QP, UROCE_OP_DESTROY_CQ,
						    UROCE_OP_DEALLOC_PD, UROCE_OP_DEREG_MR,
						    UROCE_OP_DESTROY_AH, UROCE_OP_DESTROY_SRQ,
						    UROCE_OP_QUERY_SRQ, UROCE_OP_DEALLOC_MW,
						    UROCE_OP_DESTROY_COMP_CHANNEL };
		for (unsigned k = 0; k < sizeof(destroy) / sizeof(destroy[0]); k++)
			CHECK(t_handle_op(&b, destroy[k], h) == -EINVAL, "op %u on %u", destroy[k], h);
	}
	/* a's QP is untouched: still RESET (UD QPs start there), and a can
	 * still use and destroy its objects */
	struct uroce_query_qp_req qq = { .handle = qp.handle, .attr_mask = IBV_QP_STATE };
	struct uroce_query_qp_rep qr;
	CHECK(t_call(&a, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL,
		     NULL) == 0 && qr.attr.qp_state == IBV_QPS_RESET, "a's QP untouched");
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_QP, qp.handle) == 0, "a destroys its QP");
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_CQ, cq.handle) == 0, "a destroys its CQ");
	CHECK(t_handle_op(&a, UROCE_OP_DEALLOC_PD, pd) == 0, "a frees its PD");
	t_client_close(&a);
	t_client_close(&b);
	CHECK(t_daemon_stop(&d) == 0, "clean stop");
	t_rmdir(&d);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	uroced = argv[1];
	alarm(110);
	part_run_dir();
	part_cross_context();
	if (geteuid() == 0) {
		part_user_daemon();
		part_system_daemon();
	} else {
		CHECK(geteuid() == 0, "clients of other uids need root: parts 1-3 not run");
	}
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
