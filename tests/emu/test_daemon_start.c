/* SPDX-License-Identifier: MIT */
/* uroced with no arguments, as an unprivileged user without hugepages:
 * creates its socket, answers HELLO like an HCA, exits 0 on SIGTERM and
 * removes its socket. A bad option is one line on stderr and exit 2. */
#include "emu_test.h"

static int run_bad(const char *path, const char *arg, char *out, size_t cap)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 2);
		close(p[0]);
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n < cap - 1 && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
/* A shim of the previous ABI version (3: no RQ kick flag, no QP arena,
 * no control mailbox) is refused, with /proc/self/mem as it sends it: the
 * reply is -EPROTONOSUPPORT with this daemon's version as its body (what
 * the shim names in its message), no descriptors, and the connection is
 * still one before HELLO. */
static void hello_old_abi(struct t_client *c)
{
	struct {
		struct uroce_msg_hdr h;
		struct uroce_hello_req q;
	} m = { { UROCE_OP_HELLO, sizeof(m), 0x3003, 0 },
		{ UROCE_ABI_VERSION - 1, (uint32_t)getpid() } };
	struct {
		struct uroce_msg_hdr h;
		uint32_t abi_version;
	} r;
	int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC), rfds[4];
	unsigned nr = 0;

	REQUIRE(mem >= 0, "open /proc/self/mem");
	memset(&r, 0, sizeof(r));
	int n = t_raw(c->fd, &m, sizeof(m), &mem, 1, &r, sizeof(r), rfds, &nr);
	close(mem);
	CHECK(n == (int)sizeof(r), "refusal of ABI %u: %d bytes", UROCE_ABI_VERSION - 1, n);
	CHECK(r.h.op == UROCE_OP_HELLO && r.h.seq == 0x3003 && r.h.len == sizeof(r),
	      "reply header op %u seq %#x len %u", r.h.op, r.h.seq, r.h.len);
	CHECK(r.h.status == -EPROTONOSUPPORT, "old abi: status %d", r.h.status);
	CHECK(r.abi_version == UROCE_ABI_VERSION, "refusal names version %u", r.abi_version);
	CHECK(nr == 0, "%u descriptors with a refusal", nr);
	/* refused, not disconnected, and still before HELLO */
	CHECK(t_call(c, UROCE_OP_ALLOC_PD, NULL, 0, NULL, 0, NULL, 0, NULL, NULL) == -ENOTCONN,
	      "op after a refused hello");
}


int main(int argc, char **argv)
{
	struct t_daemon d;
	struct t_client c;

	if (argc < 2)
		return 2;
	alarm(90);
	int rc = t_daemon_start(&d, argv[1], true, NULL);
	REQUIRE(rc == 0, "daemon start: %d", rc);
	struct stat st;
	REQUIRE(stat(d.run, &st) == 0, "run dir");
	CHECK((st.st_mode & 0777) == 0700, "run dir mode %o", st.st_mode & 0777);
	if (geteuid() == 0)
		CHECK(st.st_uid == getpwnam("nobody")->pw_uid, "daemon runs as nobody");

	rc = t_client_open(&c, d.sock);
	REQUIRE(rc == 0, "hello: %d", rc);
	struct uroce_hello_rep *h = &c.hello;
	CHECK(h->abi_version == UROCE_ABI_VERSION, "abi %u", h->abi_version);
	CHECK(h->daemon_pid == (uint32_t)d.pid, "daemon pid %u vs %d", h->daemon_pid, d.pid);
	CHECK(!strcmp(h->dev_name, "uroce0"), "name %s", h->dev_name);
	CHECK(h->dev_attr.vendor_id == UROCE_VENDOR_ID, "vendor %x", h->dev_attr.vendor_id);
	CHECK(h->dev_attr.phys_port_cnt == 1, "ports");
	/* max_qp is what one context may create (default limit: 1/16 of
	 * the device's 16384, docs/running.md) */
	CHECK(h->dev_attr.max_qp == 16384 / 16 && h->dev_attr.max_qp_wr >= 16384, "max_qp %d",
	      h->dev_attr.max_qp);
	CHECK(h->dev_attr.max_sge >= 32 && h->dev_attr.max_cqe >= 65535, "max_sge/cqe");
	CHECK(h->dev_attr.atomic_cap == IBV_ATOMIC_HCA, "atomic cap");
	CHECK(h->dev_attr.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN, "cap flags");
	CHECK(h->dev_attr.node_guid != 0 && h->node_guid == h->dev_attr.node_guid, "guid");
	CHECK(h->port_attr.state == IBV_PORT_ACTIVE, "port state %d", h->port_attr.state);
	/* loopback default: Ethernet MTU 9000 */
	CHECK(h->port_attr.active_mtu == IBV_MTU_4096, "active mtu %d", h->port_attr.active_mtu);
	CHECK(h->port_attr.max_mtu == IBV_MTU_4096, "max mtu");
	CHECK(h->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer");
	CHECK(h->port_attr.phys_state == 5 && h->port_attr.lid == 0, "phys state / lid");
	CHECK(h->port_attr.max_msg_sz == 1u << 31, "max msg");
	CHECK(h->gid_count == 2, "gids %u", h->gid_count);
	CHECK(h->gids[0].raw[0] == 0xfe && h->gids[0].raw[1] == 0x80, "gid0 link local");
	CHECK(h->gids[1].raw[10] == 0xff && h->gids[1].raw[11] == 0xff && h->gids[1].raw[12] == 127,
	      "gid1 ipv4-mapped 127.x");
	CHECK(h->gid_type[0] == IBV_GID_TYPE_ROCE_V2 && h->gid_type[1] == IBV_GID_TYPE_ROCE_V2, "v2");
	CHECK(h->pkeys[0] == 0xffff, "pkey");
	CHECK(!(h->mac[0] & 1) && (h->mac[0] & 2), "locally administered unicast MAC");
	/* a second HELLO on the same connection is refused */
	struct uroce_hello_req q = { .abi_version = UROCE_ABI_VERSION };
	int p[3];
	REQUIRE(pipe(p) == 0, "pipe");
	p[2] = p[0];
	struct uroce_hello_rep r2;
	rc = t_call(&c, UROCE_OP_HELLO, &q, sizeof(q), NULL, 0, &r2, sizeof(r2), NULL, NULL);
	CHECK(rc == -EISCONN, "second hello: %d", rc);
	/* HELLO takes two descriptors at most, the client's /proc/self/mem
	 * and maps (the daemon makes its pipes): more is refused */
	rc = t_call(&c, UROCE_OP_HELLO, &q, sizeof(q), p, 3, &r2, sizeof(r2), NULL, NULL);
	CHECK(rc == -EINVAL, "hello with three fds: %d", rc);
	close(p[0]);
	close(p[1]);

	/* wrong ABI version */
	struct t_client c2 = { 0 };
	c2.fd = t_connect(d.sock);
	REQUIRE(c2.fd >= 0, "connect");
	q.abi_version = 999;
	rc = t_call(&c2, UROCE_OP_HELLO, &q, sizeof(q), NULL, 0, &r2, sizeof(r2), NULL, NULL);
	CHECK(rc == -EPROTONOSUPPORT, "bad abi: %d", rc);
	hello_old_abi(&c2);
	/* anything before HELLO */
	rc = t_call(&c2, UROCE_OP_ALLOC_PD, NULL, 0, NULL, 0, NULL, 0, NULL, NULL);
	CHECK(rc == -ENOTCONN, "op before hello: %d", rc);
	close(c2.fd);

	rc = t_daemon_stop(&d);
	CHECK(rc == 0, "exit status %d", rc);
	CHECK(access(d.sock, F_OK) != 0, "socket removed");
	/* the daemon closed our socket and the async pipe: EOF for both */
	char b[64];
	CHECK(read(c.async_r, b, sizeof(b)) == 0, "async pipe EOF");
	t_client_close(&c);

	char out[4096];
	rc = run_bad(argv[1], "--no-such-option", out, sizeof(out));
	CHECK(rc == 2, "bad option exit %d", rc);
	char *nl = strchr(out, '\n');
	CHECK(nl && nl[1] == 0 && strstr(out, "no-such-option"), "one line: '%s'", out);
	rc = run_bad(argv[1], "--mtu=12", out, sizeof(out));
	CHECK(rc == 2, "bad mtu exit %d", rc);
	nl = strchr(out, '\n');
	CHECK(nl && nl[1] == 0, "one line: '%s'", out);
	rc = run_bad(argv[1], "--fault=drop=7", out, sizeof(out));
	CHECK(rc == 2, "bad fault spec exit %d", rc);
	rc = run_bad(argv[1], "stray-argument", out, sizeof(out));
	CHECK(rc == 2, "stray argument exit %d", rc);
	t_rmdir(&d);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
