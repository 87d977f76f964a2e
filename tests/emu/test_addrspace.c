/* SPDX-License-Identifier: MIT */
/* Answers about another program's address space (issue 21, finding 6;
 * docs/security.md "What binds a context to its process"), written as the
 * attack: a root daemon serving an unprivileged user. The attacker (uid
 * nobody) says HELLO, maps a huge read-only region and registers it, forks
 * a child that keeps the control socket, and executes a setuid-root
 * program. The child then asks, about addresses of that program, what
 * the daemon answers from the client's address space: MAP_MR (a shared
 * file there?), REG_MR (mapped and readable?), MEM_CHANNEL (whose
 * descriptor is that?). Every answer about an address the setuid image
 * maps must be the answer about one it does not map: the daemon asks only
 * the address space that said HELLO, through descriptors bound to it, and
 * says one error for every refusal. Before, MAP_MR read the maps of
 * whatever the pid ran now and answered -EACCES for a mapped address,
 * -ENOENT for an unmapped one. Root only (a setuid file, a second uid);
 * skipped (77) where setuid files do not take effect. */
#include <grp.h>
#include <pwd.h>
#include <sys/statvfs.h>

#include "emu_test.h"

/* Read-only address space with no memory behind it, registered, on both
 * sides of the attacker's own program: a program is loaded at 0x55..
 * plus up to 1 TiB of randomization, so the setuid image's text lies in
 * one of them. Registrations of at most EMU_MAX_MR_SIZE (1 TiB) each. */
#define WIN (1ull << 40)
#define SPAN (WIN + WIN / 4)
#define NWIN 4

struct probe_in { uint64_t mapped, unmapped; };
struct probe_out { int32_t map_m, map_u, reg_m, reg_u, chan[8]; };

static char suid_path[256];

/* a setuid-root copy of sleep where setuid bits take effect; false: none */
static bool make_suid(char *dir)
{
	struct statvfs sv;

	if (!mkdtemp(dir) || chmod(dir, 0755) || statvfs(dir, &sv) || (sv.f_flag & ST_NOSUID))
		return false;
	snprintf(suid_path, sizeof(suid_path), "%s/suidsleep", dir);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && chown 0:0 %s && chmod 4755 %s", suid_path,
		 suid_path, suid_path);
	return system(cmd) == 0;
}

static int map_mr(struct t_client *c, uint32_t h, uint64_t addr, int fd)
{
	struct uroce_map_mr_req q = { .handle = h, .addr = addr, .length = 4096, .file_off = 0 };

	return t_call(c, UROCE_OP_MAP_MR, &q, sizeof(q), &fd, 1, NULL, 0, NULL, NULL);
}

static int reg_mr(struct t_client *c, uint32_t pd, uint64_t addr)
{
	struct uroce_reg_mr_req q = { .pin = UROCE_PIN_NONE, .pd = pd, .addr = addr,
				      .length = 4096, .iova = addr };
	struct uroce_reg_mr_rep r;

	return t_call(c, UROCE_OP_REG_MR, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
}

/* The child that kept the socket: asks about the two addresses the test
 * names once the parent runs the setuid program. */
static uint32_t win_h[NWIN]; /* the registrations over the regions */
static uint64_t win_at[NWIN], win_len[NWIN];

static uint32_t win_of(uint64_t a)
{
	for (int i = 0; i < NWIN; i++)
		if (a - win_at[i] < win_len[i])
			return win_h[i];
	return 0;
}

static void attacker_child(struct t_client *c, uint32_t pd, int in, int out)
{
	struct probe_in q;
	struct probe_out r;
	int fd = memfd_create("attack", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 1 << 20) || read(in, &q, sizeof(q)) != sizeof(q))
		_exit(3);
	r.map_m = map_mr(c, win_of(q.mapped), q.mapped, fd);
	r.map_u = map_mr(c, win_of(q.unmapped), q.unmapped, fd);
	r.reg_m = reg_mr(c, pd, q.mapped);
	r.reg_u = reg_mr(c, pd, q.unmapped);
	for (int i = 0; i < 8; i++) {
		struct uroce_mem_chan_req mc = { .ring_fd = i, .sq_entries = 64, .cq_entries = 128,
						 .nbufs = 16384 };
		r.chan[i] = t_call(c, UROCE_OP_MEM_CHANNEL, &mc, sizeof(mc), NULL, 0, NULL, 0, NULL,
				   NULL);
	}
	_exit(write(out, &r, sizeof(r)) == sizeof(r) ? 0 : 3);
}

/* uid nobody: HELLO, the region and its registration, then the child and
 * the exec. Reports the region's start on out first. */
static void attacker(const char *sock, int in, int out)
{
	struct passwd *pw = getpwnam("nobody");
	struct t_client c;
	uint32_t pd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!pw || setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
		_exit(3);
	/* as a process that user started: its /proc files its own */
	prctl(PR_SET_DUMPABLE, 1);
	const uint64_t g = 1ull << 30;
	uint64_t below = ((uintptr_t)&attacker & ~(g - 1)) - SPAN;
	uint64_t above = ((uintptr_t)sbrk(0) + 2 * g) & ~(g - 1);
	uint64_t reg[2] = { below, above };
	for (int k = 0; k < 2; k++) {
		void *x = mmap((void *)(uintptr_t)reg[k], SPAN, PROT_READ,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (x == MAP_FAILED)
			_exit(6);
		win_at[2 * k] = reg[k];
		win_len[2 * k] = WIN;
		win_at[2 * k + 1] = reg[k] + WIN;
		win_len[2 * k + 1] = SPAN - WIN;
	}
	int rc = t_client_open(&c, sock);
	if (rc) {
		fprintf(stderr, "attacker's HELLO: %d\n", rc);
		_exit(7);
	}
	if (t_pd(&c, &pd))
		_exit(8);
	for (unsigned i = 0; i < NWIN; i++) {
		struct uroce_reg_mr_req q = { .pin = UROCE_PIN_NONE, .pd = pd,
					      .addr = win_at[i], .length = win_len[i],
					      .iova = win_at[i] };
		struct uroce_reg_mr_rep r;
		if (t_call(&c, UROCE_OP_REG_MR, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL))
			_exit(4);
		win_h[i] = r.handle;
	}
	if (write(out, reg, sizeof(reg)) != sizeof(reg))
		_exit(3);
	pid_t kid = fork();
	if (kid < 0)
		_exit(3);
	if (kid == 0) {
		t_cur = NULL;
		attacker_child(&c, pd, in, out);
	}
	/* the socket is close-on-exec: only the child keeps it */
	execl(suid_path, "suidsleep", "30", (char *)NULL);
	_exit(5);
}

/* A mapped and an unmapped page of pid's image, both inside [lo, hi) */
static bool pick1(pid_t pid, uint64_t lo, uint64_t hi, struct probe_in *q)
{
	char path[64], line[512];
	unsigned long s, e, prev_end = lo;
	bool got_m = false, got_u = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f) && !(got_m && got_u)) {
		if (sscanf(line, "%lx-%lx", &s, &e) != 2 || e <= lo || s >= hi)
			continue;
		if (!got_m && s >= lo && s < hi) {
			q->mapped = s;
			got_m = true;
		}
		if (!got_u && s >= prev_end + 2 * 4096 && s - 4096 >= lo) {
			q->unmapped = s - 4096;
			got_u = true;
		}
		prev_end = e;
	}
	fclose(f);
	return got_m && got_u;
}

/* the same in either region */
static bool pick(pid_t pid, const uint64_t reg[2], struct probe_in *q)
{
	return pick1(pid, reg[0], reg[0] + SPAN, q) || pick1(pid, reg[1], reg[1] + SPAN, q);
}

static bool is_suid_running(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	bool name = false, root = false;
	while (f && fgets(buf, sizeof(buf), f)) {
		name |= !strncmp(buf, "Name:\tsuidsleep", 15);
		unsigned r, e;
		if (sscanf(buf, "Uid:\t%u\t%u", &r, &e) == 2)
			root = e == 0;
	}
	if (f)
		fclose(f);
	return name && root;
}

int main(int argc, char **argv)
{
	struct t_daemon d;
	char dir[] = "/tmp/uroce-suid-XXXXXX";
	char uid[16];

	if (argc < 2)
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "not root: skipped\n");
		return T_SKIP;
	}
	if (!make_suid(dir)) {
		fprintf(stderr, "no setuid file possible here: skipped\n");
		rmdir(dir);
		return T_SKIP;
	}
	alarm(90);
	snprintf(uid, sizeof(uid), "%u", (unsigned)getpwnam("nobody")->pw_uid);
	const char *extra[] = { "--allow-uid", uid, NULL };
	int rc = t_daemon_start(&d, argv[1], false, extra);
	REQUIRE(rc == 0, "daemon start: %d", rc);
	chmod(d.dir, 0755);
	chmod(d.run, 0755);
	chmod(d.sock, 0666);

	int down[2], up[2];
	REQUIRE(pipe2(down, O_CLOEXEC) == 0 && pipe2(up, O_CLOEXEC) == 0, "pipes");
	pid_t a = fork();
	REQUIRE(a >= 0, "fork");
	if (a == 0) {
		close(down[1]);
		close(up[0]);
		attacker(d.sock, down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	uint64_t reg[2];
	if (read(up[0], reg, sizeof(reg)) != sizeof(reg)) {
		int st = 0;
		waitpid(a, &st, 0);
		REQUIRE(0, "the attacker did not register its region (status %#x)", st);
	}
	uint64_t end = t_now_ms() + 20000;
	while (!is_suid_running(a) && t_now_ms() < end)
		usleep(10000);
	REQUIRE(is_suid_running(a), "the setuid program runs as root");
	struct probe_in q;
	if (!pick(a, reg, &q)) {
		char cmd[64];
		fprintf(stderr, "regions at %#llx and %#llx; the image:\n", (unsigned long long)reg[0],
			(unsigned long long)reg[1]);
		snprintf(cmd, sizeof(cmd), "cat /proc/%d/maps >&2", (int)a);
		(void)!system(cmd);
		REQUIRE(0, "addresses of the setuid image inside the region");
	}
	fprintf(stderr, "setuid image: %#llx mapped, %#llx not\n", (unsigned long long)q.mapped,
		(unsigned long long)q.unmapped);
	REQUIRE(write(down[1], &q, sizeof(q)) == sizeof(q), "to the child");
	struct probe_out r;
	REQUIRE(read(up[0], &r, sizeof(r)) == sizeof(r), "the child's answers");
	fprintf(stderr, "MAP_MR %d / %d, REG_MR %d / %d, MEM_CHANNEL", r.map_m, r.map_u, r.reg_m,
		r.reg_u);
	for (int i = 0; i < 8; i++)
		fprintf(stderr, " %d", r.chan[i]);
	fputc('\n', stderr);
	CHECK(r.map_m == r.map_u && r.map_m == -EACCES, "MAP_MR tells mapped from unmapped");
	CHECK(r.reg_m == r.reg_u && r.reg_m == -EFAULT, "REG_MR tells mapped from unmapped");
	for (int i = 1; i < 8; i++)
		CHECK(r.chan[i] == r.chan[0] && r.chan[0] == -EINVAL,
		      "MEM_CHANNEL tells the setuid program's descriptors apart (%d: %d)", i,
		      r.chan[i]);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	/* and the daemon still serves */
	struct t_client c;
	uint32_t pd;
	REQUIRE(t_client_open(&c, d.sock) == 0 && t_pd(&c, &pd) == 0, "new client");
	t_client_close(&c);
	rc = t_daemon_stop(&d);
	CHECK(rc == 0, "exit status %d", rc);
	t_rmdir(&d);
	unlink(suid_path);
	rmdir(dir);
	return t_failures ? 1 : 0;
}
