/* SPDX-License-Identifier: MIT */
/* The daemon reaches a client's memory only through the /proc/self/mem
 * descriptor the client handed over with HELLO (docs/security.md):
 *  - HELLO without it, with a read-only one, with another process's or
 *    with something that is not /proc/<pid>/mem at all is refused;
 *  - a context whose process has exec'd no longer reaches anything, even
 *    through a forked child that kept the socket: REG_MR (which probes the
 *    range) over an address mapped in the new image fails with -EFAULT,
 *    where access by pid would have read the new image. */
#include "emu_test.h"

static int hello_with2(const char *sock, int memfd, int mapsfd)
{
	struct t_client c = { 0 };
	int p[2];

	c.fd = t_connect(sock);
	if (c.fd < 0 || pipe2(p, O_CLOEXEC))
		return -999;
	struct uroce_hello_req q = { .abi_version = UROCE_ABI_VERSION, .pid = (uint32_t)getpid() };
	struct uroce_hello_rep r;
	int rfds[4];
	unsigned nr = 0;
	int in[2] = { memfd, mapsfd };
	int rc = t_call(&c, UROCE_OP_HELLO, &q, sizeof(q), in, memfd < 0 ? 0 : mapsfd < 0 ? 1 : 2,
			&r, sizeof(r), rfds, &nr);
	for (unsigned i = 0; i < nr; i++)
		close(rfds[i]);
	close(p[0]);
	close(p[1]);
	close(c.fd);
	return rc;
}

static int hello_with(const char *sock, int memfd)
{
	return hello_with2(sock, memfd, -1);
}

static int reg_mr(struct t_client *c, uint32_t pd, uint64_t addr, uint64_t len)
{
	struct uroce_reg_mr_req q = { .pin = UROCE_PIN_NONE, .pd = pd, .access = 0, .addr = addr, .length = len,
				      .iova = addr };
	struct uroce_reg_mr_rep r;
	return t_call(c, UROCE_OP_REG_MR, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
}

/* First mapping of pid's current image (its executable's text). */
static uint64_t first_mapping(pid_t pid)
{
	char path[64];
	unsigned long lo = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lx-", &lo) != 1)
		lo = 0;
	fclose(f);
	return lo;
}

static bool is_sleep(pid_t pid)
{
	char path[64], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(comm, sizeof(comm), f) && !strncmp(comm, "sleep", 5);
	fclose(f);
	return ok;
}

/* The process that said HELLO (P) forks a child (C) that keeps the
 * socket, then execs sleep. C reports on res: 'b' before-exec REG_MR
 * result ok, then 'y' if REG_MR over P's new image failed with -EFAULT. */
static void exec_case(const char *sock, int res)
{
	struct t_client c;
	static uint8_t buf[4096];
	uint32_t pd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (t_client_open(&c, sock) || t_pd(&c, &pd))
		_exit(3);
	int rc = reg_mr(&c, pd, (uintptr_t)buf, sizeof(buf));
	if (write(res, rc == 0 ? "b" : "B", 1) != 1)
		_exit(3);
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0)
		_exit(3);
	if (child == 0) {
		t_cur = NULL; /* the daemon is not ours to kill */
		signal(SIGALRM, SIG_DFL);
		alarm(30);
		uint64_t end = t_now_ms() + 20000;
		while (!is_sleep(parent) && t_now_ms() < end)
			usleep(10000);
		uint64_t a = first_mapping(parent);
		char v = 'n';
		if (a && is_sleep(parent)) {
			rc = reg_mr(&c, pd, a, 64);
			v = rc == -EFAULT ? 'y' : 'n';
			if (v == 'n')
				fprintf(stderr, "reg_mr over the new image at 0x%lx: %d\n",
					(unsigned long)a, rc);
		}
		if (write(res, &v, 1) != 1)
			_exit(3);
		_exit(0);
	}
	/* the socket is close-on-exec here: only the child keeps it */
	execlp("sleep", "sleep", "30", (char *)NULL);
	_exit(4);
}

int main(int argc, char **argv)
{
	struct t_daemon d;

	if (argc < 2)
		return 2;
	alarm(90);
	int rc = t_daemon_start(&d, argv[1], false, NULL);
	REQUIRE(rc == 0, "daemon start: %d", rc);

	/* refused HELLOs */
	CHECK((rc = hello_with(d.sock, -1)) == -EINVAL, "hello without memory fd: %d", rc);
	int ro = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	REQUIRE(ro >= 0, "open ro");
	CHECK((rc = hello_with(d.sock, ro)) == -EACCES, "read-only /proc/self/mem: %d", rc);
	close(ro);
	int other = -1;
	pid_t kid = fork();
	REQUIRE(kid >= 0, "fork");
	if (kid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)kid);
	other = open(path, O_RDWR | O_CLOEXEC);
	REQUIRE(other >= 0, "open %s: %s", path, strerror(errno));
	CHECK((rc = hello_with(d.sock, other)) == -EACCES, "another process's mem: %d", rc);
	close(other);
	/* the optional maps descriptor (what the daemon may write, vma.c):
	 * another process's, or not a maps file, is refused */
	int self_mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)kid);
	other = open(path, O_RDONLY | O_CLOEXEC);
	int status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	REQUIRE(self_mem >= 0 && other >= 0 && status >= 0 && maps >= 0, "open maps");
	CHECK((rc = hello_with2(d.sock, self_mem, other)) == -EACCES, "another's maps: %d", rc);
	CHECK((rc = hello_with2(d.sock, self_mem, status)) == -EACCES, "status as maps: %d", rc);
	CHECK((rc = hello_with2(d.sock, self_mem, maps)) == 0, "our own maps: %d", rc);
	close(self_mem);
	close(other);
	close(status);
	close(maps);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	int mfd = memfd_create("not-mem", MFD_CLOEXEC);
	REQUIRE(mfd >= 0, "memfd");
	CHECK((rc = hello_with(d.sock, mfd)) == -EACCES, "a memfd as mem: %d", rc);
	close(mfd);
	int self = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	REQUIRE(self >= 0, "open self");
	CHECK((rc = hello_with(d.sock, self)) == 0, "our own /proc/self/mem: %d", rc);
	close(self);

	/* exec: the context does not follow the pid into the new image */
	int res[2];
	REQUIRE(pipe2(res, O_CLOEXEC) == 0, "pipe");
	pid_t p = fork();
	REQUIRE(p >= 0, "fork");
	if (p == 0) {
		close(res[0]);
		exec_case(d.sock, res[1]);
	}
	close(res[1]);
	char got[2] = { 0, 0 };
	size_t n = 0;
	while (n < 2) {
		ssize_t k = read(res[0], got + n, 2 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(res[0]);
	CHECK(n >= 1 && got[0] == 'b', "reg_mr before exec (got '%c')", n ? got[0] : '-');
	CHECK(n == 2 && got[1] == 'y', "reg_mr over the exec'd image must fail (got '%c')",
	      n == 2 ? got[1] : '-');
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);

	/* and the daemon still serves a well-behaved client */
	struct t_client c;
	uint32_t pd;
	static uint8_t buf[256];
	REQUIRE(t_client_open(&c, d.sock) == 0 && t_pd(&c, &pd) == 0, "new client");
	CHECK((rc = reg_mr(&c, pd, (uintptr_t)buf, sizeof(buf))) == 0, "reg_mr: %d", rc);
	t_client_close(&c);

	rc = t_daemon_stop(&d);
	CHECK(rc == 0, "exit status %d", rc);
	t_rmdir(&d);
	return t_failures ? 1 : 0;
}
