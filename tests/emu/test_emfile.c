/* SPDX-License-Identifier: MIT */
/* EMFILE: a daemon started with a low RLIMIT_NOFILE, a client that opens
 * connections until the daemon runs out of descriptors. accept() then
 * fails at once while the listening socket stays readable; the daemon
 * must neither spin (CPU time from /proc/<pid>/stat) nor flood its log
 * (lines counted), must keep serving a client it already has, and must
 * serve a new client once the hog's connections are gone. */
#include <sys/resource.h>

#include "emu_test.h"

#define NOFILE 64
#define HOG_MAX 400
#define WATCH_S 4

/* utime + stime of pid in seconds (fields 14, 15 of /proc/pid/stat) */
static double cpu_s(pid_t pid)
{
	char p[64], b[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	size_t n = fread(b, 1, sizeof(b) - 1, f);
	fclose(f);
	b[n] = 0;
	char *s = strrchr(b, ')');
	unsigned long ut = 0, st = 0;
	if (!s || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int ch;
	if (!f)
		return -1;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static int hog_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct t_daemon d;
	struct t_client good, late;
	static int hog[HOG_MAX];
	int nhog = 0;
	char logp[] = "/tmp/uroce-emfile-log-XXXXXX";

	if (argc < 2)
		return 2;
	alarm(100);
	int logfd = mkstemp(logp);
	REQUIRE(logfd >= 0, "log file");
	/* the daemon inherits a stderr we count */
	int saved = dup(2);
	REQUIRE(saved >= 0 && dup2(logfd, 2) == 2, "redirect");
	int rc = t_daemon_start(&d, argv[1], false, NULL);
	dup2(saved, 2);
	close(saved);
	if (rc) {
		unlink(logp);
		REQUIRE(rc == 0, "start %d", rc);
	}
	/* a low descriptor limit, set once the daemon runs (DPDK's EAL
	 * raises the soft limit to the hard one while it starts) */
	struct rlimit low = { NOFILE, NOFILE };
	REQUIRE(prlimit(d.pid, RLIMIT_NOFILE, &low, NULL) == 0, "prlimit: %s", strerror(errno));

	REQUIRE(t_client_open(&good, d.sock) == 0, "well-behaved client");
	uint32_t pd;
	REQUIRE(t_pd(&good, &pd) == 0, "pd");

	/* the hog: connections (one daemon descriptor each) until refused */
	/* a full backlog refuses with EAGAIN until the daemon accepts: retry
	 * until it has refused for 1.5 s in a row */
	uint64_t last_ok = t_now_ms();
	while (nhog < HOG_MAX && t_now_ms() - last_ok < 1500) {
		int fd = hog_connect(d.sock);
		if (fd < 0) {
			usleep(5000);
			continue;
		}
		hog[nhog++] = fd;
		last_ok = t_now_ms();
	}
	fprintf(stderr, "hog holds %d connections (daemon limit %d)\n", nhog, NOFILE);
	CHECK(nhog > NOFILE, "hog reached the daemon's limit (%d)", nhog);
	usleep(500000);
	if (getenv("T_DEBUG")) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "grep 'open files' /proc/%d/limits >&2; ls /proc/%d/fd | wc -l >&2; tail -3 %s >&2", (int)d.pid, (int)d.pid, logp);
		if (system(cmd)) {}
	}

	double c0 = cpu_s(d.pid);
	long l0 = count_lines(logp);
	sleep(WATCH_S);
	double c1 = cpu_s(d.pid);
	long l1 = count_lines(logp);
	fprintf(stderr, "at EMFILE for %d s: daemon cpu %.2f s, %ld log lines\n", WATCH_S,
		c1 - c0, l1 - l0);
	/* a spinning daemon burns ~WATCH_S s of CPU and logs ~100k lines/s */
	CHECK(c0 >= 0 && c1 - c0 < 0.25 * WATCH_S, "daemon spins: %.2f s cpu", c1 - c0);
	CHECK(l1 - l0 < 20 * WATCH_S, "log flood: %ld lines", l1 - l0);

	/* the existing client is still served */
	uint32_t pd2;
	CHECK(t_pd(&good, &pd2) == 0, "pd while the daemon is at its fd limit");

	/* hog gone: a new client is served within a bounded time */
	for (int i = 0; i < nhog; i++)
		close(hog[i]);
	uint64_t end = t_now_ms() + 20000;
	rc = -1;
	while (t_now_ms() < end) {
		rc = t_client_open(&late, d.sock);
		if (rc == 0)
			break;
		t_client_close(&late);
		usleep(100000);
	}
	CHECK(rc == 0, "new client after the hog left: %d", rc);
	if (rc == 0) {
		uint32_t pd3;
		CHECK(t_pd(&late, &pd3) == 0, "new client's pd");
		t_client_close(&late);
	}
	t_client_close(&good);
	CHECK(t_daemon_stop(&d) == 0, "clean exit");
	t_rmdir(&d);
	if (t_failures) {
		fprintf(stderr, "daemon log (last lines of %s):\n", logp);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "tail -5 %s >&2", logp);
		if (system(cmd)) { /* diagnostics only */ }
	}
	unlink(logp);
	close(logfd);
	return t_failures ? 1 : 0;
}
