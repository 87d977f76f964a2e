/* SPDX-License-Identifier: MIT */
/* The shim trusts only a run directory, socket and daemon of its own user
 * or root (docs/security.md), and reports a daemon's access refusal:
 *  - a good private run dir: the device is listed, RC traffic verified;
 *  - the run dir made group/other-writable, a symlink, owned by another
 *    uid; a socket of another uid; a daemon run by another uid; a daemon
 *    whose access rule refuses us: the device is not listed and exactly
 *    one warning line is printed though the list is taken twice;
 *  - a system-wide root daemon lets an allowed uid in (traffic verified);
 *  - with UROCE_RUN_DIR unset, daemon and shim meet in $XDG_RUNTIME_DIR/uroce.
 * Every case runs in a child (its own stderr, its own uid when needed).
 * Cases that need another uid need root: as non-root they fail. The
 * payload pattern is seeded; the seed is printed. */
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vt.h"

#define UID_A 4252u /* allowed by --allow-uid */
#define UID_X 4254u /* nobody the daemons know */

static const char *uroced;
static unsigned seed;


static uint64_t ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct daemon {
	pid_t pid;
	char sock[400];
};

/* uroced with env (NAME=VALUE, NULL-terminated) and args, as uid (or -1);
 * waits up to 30 s for sock to appear. */
static bool daemon_start(struct daemon *d, const char *sock, int uid, char *const *env,
			 char *const *args)
{
	snprintf(d->sock, sizeof(d->sock), "%s", sock);
	d->pid = fork();
	if (d->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		unsetenv("UROCE_RUN_DIR");
		unsetenv("XDG_RUNTIME_DIR");
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		if (uid >= 0 && (setgroups(0, NULL) || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) ||
				 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid)))
			_exit(126);
		char *av[16] = { (char *)uroced };
		for (int i = 0; args && args[i] && i < 14; i++)
			av[i + 1] = args[i];
		execv(uroced, av);
		_exit(127);
	}
	uint64_t end = ms() + 30000;
	while (ms() < end) {
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
			d->pid = 0;
			return false;
		}
		if (access(sock, F_OK) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

static void daemon_stop(struct daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGTERM);
	uint64_t end = ms() + 10000;
	while (waitpid(d->pid, NULL, WNOHANG) != d->pid) {
		if (ms() > end) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			break;
		}
		usleep(5000);
	}
	d->pid = 0;
}

/* In the child: count uroce devices (two listings), then with traffic set
 * send 4 KiB and RDMA-write 4 KiB between two RC QPs and compare. */
static int probe(bool traffic)
{
	int n = 0, found = 0;

	for (int k = 0; k < 2; k++) {
		struct ibv_device **l = ibv_get_device_list(&n);
		if (!l)
			return 10;
		found = 0;
		for (int i = 0; i < n; i++)
			found += !strncmp(ibv_get_device_name(l[i]), "uroce", 5);
		ibv_free_device_list(l);
	}
	if (!traffic || !found)
		return found;
	struct vt t;
	struct ibv_wc wc[2];
	vt_init(&t, NULL);
	srand(seed);
	for (int i = 0; i < 4096; i++)
		t.buf[i] = (uint8_t)rand();
	vt_post_recv(t.qb, t.mr, 8192, 4096, 1);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 0, 4096, IBV_SEND_SIGNALED, 0, 0, 0, 2));
	vt_poll_n(t.scq, 1, wc);
	REQUIRE(wc[0].status == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, wc);
	REQUIRE(wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 4096);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 0, 4096, IBV_SEND_SIGNALED, 0,
			    (uintptr_t)t.buf + 16384, t.mr->rkey, 3));
	vt_poll_n(t.scq, 1, wc);
	REQUIRE(wc[0].status == IBV_WC_SUCCESS);
	int ok = !memcmp(t.buf, t.buf + 8192, 4096) && !memcmp(t.buf, t.buf + 16384, 4096);
	vt_fini(&t);
	return ok ? 1 + 100 : 50; /* 101: one device, traffic verified */
}

/* Run probe in a child as uid (or -1) with UROCE_RUN_DIR=run (NULL: unset,
 * with XDG_RUNTIME_DIR=xdg). Returns probe's result; err gets its stderr. */
static int run_probe(int uid, const char *run, const char *xdg, bool traffic, char *err,
		     size_t cap)
{
	int p[2];

	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 2);
		close(p[0]);
		if (run)
			setenv("UROCE_RUN_DIR", run, 1);
		else
			unsetenv("UROCE_RUN_DIR");
		if (xdg)
			setenv("XDG_RUNTIME_DIR", xdg, 1);
		else
			unsetenv("XDG_RUNTIME_DIR");
		if (uid >= 0 && (setgroups(0, NULL) || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) ||
				 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid)))
			_exit(126);
		/* dumpable again after the uid change, as a user's own process
		 * is: otherwise it cannot open its /proc/self/mem */
		prctl(PR_SET_DUMPABLE, 1);
		_exit(probe(traffic));
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n < cap - 1 && (k = read(p[0], err + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	err[n] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* the device must not be listed, with exactly one warning naming why */
static void expect_hidden(const char *what, int uid, const char *run, const char *needle)
{
	char err[4096];
	int r = run_probe(uid, run, NULL, false, err, sizeof(err));
	CHECK(r == 0, "%s: %d uroce devices listed (want 0): %s", what, r, err);
	CHECK(lines(err) == 1 && strstr(err, needle), "%s: want one warning with '%s', got '%s'",
	       what, needle, err);
}

static void expect_served(const char *what, int uid, const char *run, const char *xdg)
{
	char err[4096];
	int r = run_probe(uid, run, xdg, true, err, sizeof(err));
	CHECK(r == 101, "%s: probe %d (101: listed and traffic verified): %s", what, r, err);
	CHECK(!strstr(err, "uroce:"), "%s: no warning expected: %s", what, err);
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/uroce-vacc-XXXXXX", run[64], sock[128], link[64], cmd[128];
	struct daemon d;
	bool root = geteuid() == 0;

	if (argc < 2)
		return 2;
	uroced = argv[1];
	seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : (unsigned)time(NULL);
	printf("seed %u\n", seed);
	alarm(110);
	if (!mkdtemp(base))
		return 1;
	snprintf(run, sizeof(run), "%s/run", base);
	snprintf(sock, sizeof(sock), "%s/uroce0.sock", run);
	snprintf(link, sizeof(link), "%s/link", base);

	/* 1. a user's own daemon in a private run dir */
	char env_run[128];
	snprintf(env_run, sizeof(env_run), "UROCE_RUN_DIR=%s", run);
	char *env1[] = { env_run, NULL };
	if (!daemon_start(&d, sock, -1, env1, NULL)) {
		CHECK(0, "daemon start");
		goto out;
	}
	expect_served("private run dir", -1, run, NULL);
	/* 2. squatted: someone could have planted the socket */
	CHECK(chmod(run, 0777) == 0, "chmod");
	expect_hidden("other-writable run dir", -1, run, "writable by group or others");
	CHECK(chmod(run, 0720) == 0, "chmod");
	expect_hidden("group-writable run dir", -1, run, "writable by group or others");
	CHECK(chmod(run, 0700) == 0, "chmod");
	CHECK(symlink(run, link) == 0, "symlink");
	expect_hidden("symlinked run dir", -1, link, "symlink");
	if (root) {
		CHECK(chown(run, UID_X, UID_X) == 0, "chown");
		expect_hidden("run dir of another uid", -1, run, "owned by another user");
		CHECK(chown(run, 0, 0) == 0 && chown(sock, UID_X, UID_X) == 0, "chown");
		expect_hidden("socket of another uid", -1, run, "not a socket of this user");
		CHECK(chown(sock, 0, 0) == 0, "chown");
	} else {
		CHECK(root, "other-owner cases need root");
	}
	expect_served("run dir restored", -1, run, NULL);
	daemon_stop(&d);

	if (root) {
		/* 3. a daemon of another uid behind root-owned files: the
		 * socket's peer credentials give it away */
		char xdir[64], xsock[128], env_x[128];
		snprintf(xdir, sizeof(xdir), "%s/x", base);
		CHECK(mkdir(xdir, 0700) == 0 && chown(xdir, UID_X, UID_X) == 0 && chmod(base, 0755) == 0,
		       "x dir");
		snprintf(xsock, sizeof(xsock), "%s/uroce0.sock", xdir);
		snprintf(env_x, sizeof(env_x), "UROCE_RUN_DIR=%s", xdir);
		char *envx[] = { env_x, NULL };
		if (daemon_start(&d, xsock, UID_X, envx, NULL)) {
			CHECK(chown(xdir, 0, 0) == 0 && chown(xsock, 0, 0) == 0, "chown");
			expect_hidden("daemon of another uid", -1, xdir, "not run by this user or root");
			daemon_stop(&d);
		} else {
			CHECK(0, "daemon as uid %u", UID_X);
		}

		/* 4. system-wide root daemon: UID_A allowed, UID_X refused */
		char uida[16];
		snprintf(uida, sizeof(uida), "%u", UID_A);
		char *args[] = { "--allow-uid", uida, NULL };
		snprintf(run, sizeof(run), "%s/sys", base);
		snprintf(sock, sizeof(sock), "%s/uroce0.sock", run);
		snprintf(env_run, sizeof(env_run), "UROCE_RUN_DIR=%s", run);
		if (daemon_start(&d, sock, -1, env1, args)) {
			struct stat st;
			CHECK(stat(sock, &st) == 0 && (st.st_mode & 0777) == 0666, "socket mode %o",
			       st.st_mode & 0777);
			expect_served("allowed uid on a system-wide daemon", UID_A, run, NULL);
			expect_hidden("refused uid on a system-wide daemon", UID_X, run,
				      "access rule refuses uid");
			expect_served("allowed uid after a refusal", UID_A, run, NULL);
			daemon_stop(&d);
		} else {
			CHECK(0, "system-wide daemon start");
		}
	} else {
		CHECK(root, "daemon of another uid and system-wide cases need root");
	}

	/* 5. no UROCE_RUN_DIR: both sides use $XDG_RUNTIME_DIR/uroce */
	char xdg[64], env_xdg[128];
	snprintf(xdg, sizeof(xdg), "%s/xdg", base);
	CHECK(mkdir(xdg, 0700) == 0, "mkdir xdg");
	snprintf(sock, sizeof(sock), "%s/uroce/uroce0.sock", xdg);
	snprintf(env_xdg, sizeof(env_xdg), "XDG_RUNTIME_DIR=%s", xdg);
	char *env5[] = { env_xdg, NULL };
	if (daemon_start(&d, sock, -1, env5, NULL)) {
		expect_served("XDG_RUNTIME_DIR default", -1, NULL, xdg);
		daemon_stop(&d);
	} else {
		CHECK(0, "daemon start with XDG_RUNTIME_DIR");
	}
out:
	daemon_stop(&d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd)) { /* best effort */ }
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
