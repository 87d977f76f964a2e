/* SPDX-License-Identifier: MIT */
/* End to end: one default uroced, the LD_PRELOAD shim, and the stock
 * ibv_*_pingpong programs (server and client) exchanging data through it.
 * argv: uroced liburoce.so pingpong-binary [extra args...] */
#include "emu_test.h"

static pid_t spawn(const char *run, const char *shim, char *const *av)
{
	pid_t p = fork();
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("UROCE_RUN_DIR", run, 1);
		setenv("LD_PRELOAD", shim, 1);
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		execv(av[0], av);
		_exit(127);
	}
	return p;
}

/* wait up to ms for pid; returns exit status or -1 (killed on timeout) */
static int wait_for(pid_t p, uint64_t ms)
{
	uint64_t end = t_now_ms() + ms;
	int st;
	for (;;) {
		if (waitpid(p, &st, WNOHANG) == p)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
		if (t_now_ms() > end) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			return -1;
		}
		usleep(5000);
	}
}

int main(int argc, char **argv)
{
	struct t_daemon d;

	if (argc < 4)
		return 2;
	if (access(argv[3], X_OK) || access(argv[2], R_OK))
		return T_SKIP;
	alarm(110);
	REQUIRE(t_daemon_start(&d, argv[1], false, NULL) == 0, "start");
	char port[16];
	snprintf(port, sizeof(port), "%d", 20000 + getpid() % 20000);
	const char *modes[][3] = { { "-e", NULL }, { NULL } };
	for (unsigned m = 0; m < 2; m++) {
		char *sv[24], *cv[24];
		int n = 0;
		sv[n] = argv[3]; cv[n++] = argv[3];
		const char *common[] = { "-g", "1", "-n", "200", "-p", port };
		for (unsigned i = 0; i < 6; i++, n++)
			sv[n] = cv[n] = (char *)common[i];
		if (modes[m][0]) {
			sv[n] = cv[n] = (char *)modes[m][0];
			n++;
		}
		for (int i = 4; i < argc && n < 20; i++, n++)
			sv[n] = cv[n] = argv[i];
		sv[n] = NULL;
		cv[n] = "localhost";
		cv[n + 1] = NULL;
		pid_t s = spawn(d.run, argv[2], sv);
		usleep(300000); /* the server listens on its TCP port */
		pid_t c = -1;
		int rc_c = -1;
		for (int tries = 0; tries < 20; tries++) {
			c = spawn(d.run, argv[2], cv);
			rc_c = wait_for(c, 40000);
			if (rc_c == 0 || waitpid(s, NULL, WNOHANG) != 0)
				break;
			usleep(200000); /* server not listening yet: try again */
		}
		int rc_s = wait_for(s, 10000);
		CHECK(rc_c == 0 && rc_s == 0, "%s %s: client %d server %d", argv[3],
		      modes[m][0] ? modes[m][0] : "(poll)", rc_c, rc_s);
	}
	CHECK(t_daemon_stop(&d) == 0, "daemon exit");
	t_rmdir(&d);
	t_cur = NULL;
	return t_failures ? 1 : 0;
}
