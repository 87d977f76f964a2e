/* SPDX-License-Identifier: MIT */
/* End to end: one default uroced, the LD_PRELOAD shim, and the stock
 * ibv_*_pingpong programs (server and client) exchanging data through it,
 * every byte compared (-c). The client starts once the server listens on
 * its TCP port (a port the kernel picked), once: no retry.
 * argv: uroced liburoce.so pingpong-binary [extra args...] */
#include "emu_test.h"

#include <netinet/in.h>

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

/* A TCP port the kernel calls free (bound to port 0, released). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &l))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* pid listens on TCP port (its /proc/PID/net/tcp{,6}: no probe connection,
 * which the server would take for its client). */
static bool tcp_listening(pid_t pid, int port)
{
	static const char *const f[] = { "tcp", "tcp6" };
	char path[64], line[512];

	for (unsigned i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, f[i]);
		FILE *fp = fopen(path, "r");
		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			char loc[128], rem[128];
			unsigned st;
			if (sscanf(line, " %*d: %127s %127s %x", loc, rem, &st) != 3)
				continue;
			char *c = strrchr(loc, ':');
			if (c && st == 0x0A && (int)strtol(c + 1, NULL, 16) == port) {
				fclose(fp);
				return true;
			}
		}
		fclose(fp);
	}
	return false;
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
	const char *modes[][3] = { { "-e", NULL }, { NULL } };
	for (unsigned m = 0; m < 2; m++) {
		char port[16];
		int pn = free_port();
		REQUIRE(pn > 0, "no free TCP port");
		snprintf(port, sizeof(port), "%d", pn);
		char *sv[24], *cv[24];
		int n = 0;
		sv[n] = argv[3]; cv[n++] = argv[3];
		const char *common[] = { "-g", "1", "-n", "200", "-c", "-p", port };
		for (unsigned i = 0; i < 7; i++, n++)
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
		int rc_c = -1, rc_s = -1, st;
		/* bounded by the server being alive (alarm() above is the last
		 * bound against one that hangs) */
		while (!tcp_listening(s, pn)) {
			if (waitpid(s, &st, WNOHANG) == s) {
				rc_s = WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
				break;
			}
			usleep(5000);
		}
		if (rc_s < 0) {
			rc_c = wait_for(spawn(d.run, argv[2], cv), 40000);
			rc_s = rc_c ? wait_for(s, 0) : wait_for(s, 10000);
		}
		CHECK(rc_c == 0 && rc_s == 0, "%s %s: client %d server %d", argv[3],
		      modes[m][0] ? modes[m][0] : "(poll)", rc_c, rc_s);
	}
	CHECK(t_daemon_stop(&d) == 0, "daemon exit");
	t_rmdir(&d);
	t_cur = NULL;
	return t_failures ? 1 : 0;
}
