/* SPDX-License-Identifier: MIT */
/* Issue 21, each finding written as the attack: a root daemon serving two
 * unprivileged users (the victim V and the attacker A, --allow-uid both;
 * the uids are numbers no account has, made unique by our pid, so nothing
 * is created on the system), and the victim must come out unharmed. The
 * attacker drives the control socket itself, as a hostile client would,
 * not through the shim. One daemon per case:
 *   qp1     A sets the GSI's controlled Q_Key on a UD QP and sends forged CM
 *           REQs (our node GUID, every QPN) to QP1: the stale-connection
 *           rule used to disconnect V's established rdma_cm connection.
 *           Now: EPERM, the sends complete in error, nothing reaches QP1;
 *           a privileged client (root: CAP_NET_RAW) may still.
 *   table   A fills the CM engine with half-open connections until it is
 *           refused: V still connects (a uid holds a quarter, uroce-ctl
 *           limits shows it); A exits and its ids are gone at once.
 *   xrc     V's XRC domain file is unlinked; A creates files until one
 *           would get its inode number: the daemon holds the inode, so
 *           none does, and A cannot reach V's TGT QP.
 *   rundir  V runs a daemon of its own with XDG_RUNTIME_DIR in a directory
 *           A can write: A plants a stale-looking DPDK directory and swaps
 *           a subdirectory with a symlink to V's files while it starts; the
 *           daemon puts DPDK's runtime directory in its own run directory
 *           and V's files stay.
 *   capture --pcap and a capture started at run time are 0600.
 * Verdicts come from counters, replies and events, each wait bounded by
 * what it waits for (the daemon's counters), never from elapsed time.
 * Usage: test_attack <uroced> <case>; needs root (77 without). */
#include <dirent.h>
#include <grp.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "ucma_client.h"
#include "wire.h"

static const char *g_uroced;
static struct t_daemon g_d;
static uid_t uid_v, uid_a;

/* ---------------------------------------------------------------- */
/* two users                                                         */
/* ---------------------------------------------------------------- */

/* fn as uid in a child process: its exit status (0: its checks passed) */
static pid_t as_uid(uid_t uid, int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t p = fork();
	if (p != 0)
		return p;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	t_cur = NULL; /* a failing child must not stop the daemon */
	t_failures = 0; /* its own checks only */
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		_exit(126);
	prctl(PR_SET_DUMPABLE, 1); /* its own /proc/self/mem for HELLO */
	int rc = fn(arg);
	fflush(NULL);
	_exit(rc || t_failures ? 1 : 0);
}

static int wait_child(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void start_shared(const char *const *more)
{
	static char v[16], a[16];
	const char *opts[16] = { "--allow-uid", v, "--allow-uid", a };
	int n = 4;

	snprintf(v, sizeof(v), "%u", (unsigned)uid_v);
	snprintf(a, sizeof(a), "%u", (unsigned)uid_a);
	for (int i = 0; more && more[i] && n < 15; i++)
		opts[n++] = more[i];
	opts[n] = NULL;
	REQUIRE(t_daemon_start(&g_d, g_uroced, false, opts) == 0, "start");
	/* the users reach the run directory (the daemon made it 0755) */
	REQUIRE(chmod(g_d.dir, 0755) == 0, "chmod %s", g_d.dir);
}

static int finish(void)
{
	int st = t_daemon_stop(&g_d);
	CHECK(st == 0, "daemon exit %d", st);
	t_rmdir(&g_d);
	t_cur = NULL;
	if (t_failures) {
		fprintf(stderr, "%d failure(s)\n", t_failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* one of the IB CM engine's named counters (UROCE_OP_QUERY_CM_STATS),
 * 0 when it is not there (it counts only when not zero) */
static uint64_t cm_stat(struct t_client *c, const char *name)
{
	static struct uroce_cm_stats_rep r;
	REQUIRE(t_call(c, UROCE_OP_QUERY_CM_STATS, NULL, 0, NULL, 0, &r, sizeof(r), NULL,
		       NULL) == 0, "cm stats");
	for (uint32_t i = 0; i < r.n && i < UROCE_CM_STATS_MAX; i++)
		if (!strncmp(r.name[i], name, UROCE_STATS_NAME_LEN))
			return r.val[i];
	return 0;
}

/* until counter name of the engine reaches v: bounded by what it waits for */
static void cm_stat_wait(struct t_client *c, const char *name, uint64_t v)
{
	for (uint64_t end = t_now_ms() + 30000; cm_stat(c, name) < v;) {
		REQUIRE(t_now_ms() < end, "cm counter %s never reached %llu", name,
			(unsigned long long)v);
		usleep(2000);
	}
}

static uint32_t dev_nctx(struct t_client *c)
{
	static struct uroce_dev_info di;
	REQUIRE(t_call(c, UROCE_OP_DEV_INFO, NULL, 0, NULL, 0, &di, sizeof(di), NULL, NULL) == 0,
		"dev info");
	return di.nctx;
}

/* until the daemon has only n contexts (a client's exit is processed) */
static void nctx_wait(struct t_client *c, uint32_t n)
{
	for (uint64_t end = t_now_ms() + 30000; dev_nctx(c) > n;) {
		REQUIRE(t_now_ms() < end, "a context never went");
		usleep(2000);
	}
}

/* a pipe byte from the other process (bounded) */
static void sync_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;
	REQUIRE(poll(&p, 1, 60000) == 1 && read(fd, &b, 1) == 1, "no word from the other side");
}

static void sync_say(int fd)
{
	REQUIRE(write(fd, "x", 1) == 1, "pipe");
}

/* ---------------------------------------------------------------- */
/* rdma_cm connections of one client                                 */
/* ---------------------------------------------------------------- */

#define VICTIM_QPN 0x123

/* id a of file f connects to listener port on 127.0.0.1 with QPN qpn;
 * the request is accepted (passive id *n) and both are ESTABLISHED */
static void rc_up(struct cmf *f, uint16_t port, uint32_t qpn, uint32_t *a, uint32_t *n)
{
	struct rdma_ucm_event_resp e;

	REQUIRE(cm_create(f, 0xA0, RDMA_PS_TCP, a) == 0, "create");
	cm_resolve_all(f, *a, 0xA0, "127.0.0.1", port);
	REQUIRE(cm_connect(f, *a, qpn, "x") == 0, "connect");
	EXPECT(f, EV_CONNECT_REQUEST, &e);
	*n = e.id;
	REQUIRE(cm_accept(f, *n, 0xA1, 0x456, "y") == 0, "accept");
	EXPECT(f, EV_CONNECT_RESPONSE, &e);
	REQUIRE(cm_accept(f, *a, 0, 0, NULL) == 0, "rtu");
	EXPECT(f, EV_ESTABLISHED, &e);
	CHECK(e.id == *n, "established");
}

static uint16_t listen_any(struct cmf *f, uint32_t backlog, uint32_t *l)
{
	REQUIRE(cm_create(f, 0xB0, RDMA_PS_TCP, l) == 0, "listener");
	REQUIRE(cm_bind(f, *l, "127.0.0.1", 0) == 0 && cm_listen(f, *l, backlog) == 0, "listen");
	return cm_port(f, *l);
}

/* ---------------------------------------------------------------- */
/* qp1                                                               */
/* ---------------------------------------------------------------- */

struct qp1_ctx {
	int to_parent, from_parent;  /* pipes */
	int result;                  /* attacker: write end for its count */
};

/* V: an established rdma_cm connection to itself; after the attack, no
 * event came, and it comes down as a healthy one does (the passive side
 * hears the DREQ first) */
static int qp1_victim(void *arg)
{
	struct qp1_ctx *x = arg;
	struct t_client c;
	struct cmf f;
	struct rdma_ucm_event_resp e;
	uint32_t l, a, n;

	REQUIRE(t_client_open(&c, g_d.sock) == 0 && cm_open(&c, &f) == 0, "victim client");
	uint16_t port = listen_any(&f, 8, &l);
	rc_up(&f, port, VICTIM_QPN, &a, &n);
	sync_say(x->to_parent);
	sync_wait(x->from_parent);
	CHECK(cm_quiet(&f), "the victim's connection heard something during the attack");
	REQUIRE(cm_disconnect(&f, a) == 0, "disconnect");
	EXPECT(&f, EV_DISCONNECTED, &e);
	CHECK(e.id == n, "the peer's DREQ reached the passive side (id %u)", e.id);
	REQUIRE(cm_disconnect(&f, n) == 0, "drep");
	EXPECT(&f, EV_DISCONNECTED, &e);
	CHECK(e.id == a && e.status == 0, "the DREP reached the active side");
	t_client_close(&c);
	return 0;
}

static uint8_t qp1_mads[2][WIRE_MAD_LEN];

/* a CM REQ as the host's CM would send it: our node GUID, QPN qpn */
static void forge_req(uint8_t *mad, const struct t_client *c, int gi, uint32_t qpn)
{
	struct wire_cm_msg m;
	struct wire_mad_hdr h;

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REQ;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x5000 + qpn;
	m.v[WIRE_CM_F_SERVICE_ID] = 0x0000000001060000ull | 9999;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = be64toh(c->hello.node_guid);
	m.v[WIRE_CM_F_LOCAL_QPN] = qpn;
	m.v[WIRE_CM_F_PATH_MTU] = IBV_MTU_1024;
	m.v[WIRE_CM_F_MAX_CM_RETRIES] = 15;
	memcpy(m.gid[0], c->hello.gids[gi].raw, 16);
	memcpy(m.gid[1], c->hello.gids[gi].raw, 16);
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REQ, 0x100000000ull | qpn);
	REQUIRE(wire_mad_encode(mad, &h, &m) == 0, "encode");
}

/* the GID table index of ::ffff:127.0.0.1 */
static int loop_gid(const struct t_client *c)
{
	static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
	for (uint32_t i = 0; i < c->hello.gid_count; i++)
		if (!memcmp(c->hello.gids[i].raw, lo, 16))
			return (int)i;
	return -1;
}

struct ud {
	uint32_t pd, lkey, ah;
	struct uroce_create_cq_rep cq;
	struct uroce_create_qp_rep qp;
	struct t_ring sq, cqr;
	uint32_t cq_cons;
};

/* PD, an MR over qp1_mads, a CQ, a UD QP in INIT with Q_Key qkey (the
 * modify's status), then RTR and RTS with a good Q_Key if that failed,
 * and an AH to GID gi */
static int ud_open(struct t_client *c, struct ud *u, uint32_t qkey, int gi)
{
	int mfd, qfd;

	memset(u, 0, sizeof(*u));
	REQUIRE(t_pd(c, &u->pd) == 0, "pd");
	struct uroce_reg_mr_req mq = { .pin = UROCE_PIN_NONE, .pd = u->pd,
				       .access = IBV_ACCESS_LOCAL_WRITE,
				       .addr = (uintptr_t)qp1_mads, .length = sizeof(qp1_mads),
				       .iova = (uintptr_t)qp1_mads };
	struct uroce_reg_mr_rep mr;
	REQUIRE(t_call(c, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
		       NULL) == 0, "mr");
	u->lkey = mr.lkey;
	REQUIRE(t_cq(c, 64, &u->cq, &mfd) == 0, "cq");
	uint8_t *cm = mmap(NULL, u->cq.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	close(mfd);
	REQUIRE(cm != MAP_FAILED, "map cq");
	u->cqr = (struct t_ring){ cm, u->cq.entries, UROCE_CQE_SIZE };
	REQUIRE(t_qp(c, u->pd, u->cq.handle, u->cq.handle, IBV_QPT_UD, &u->qp, &qfd) == 0, "qp");
	uint8_t *qm = mmap(NULL, u->qp.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, qfd, 0);
	close(qfd);
	REQUIRE(qm != MAP_FAILED, "map qp");
	u->sq = (struct t_ring){ qm + u->qp.sq_offset, u->qp.sq_entries, u->qp.sq_stride };
	struct uroce_modify_qp_req q = { .handle = u->qp.handle };
	q.attr.qp_state = IBV_QPS_INIT;
	q.attr.port_num = 1;
	q.attr.qkey = qkey;
	q.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	int rc = t_modify(c, &q);
	if (rc) {
		q.attr.qkey = 0x11;
		REQUIRE(t_modify(c, &q) == 0, "init");
	}
	memset(&q.attr, 0, sizeof(q.attr));
	q.attr.qp_state = IBV_QPS_RTR;
	q.attr_mask = IBV_QP_STATE;
	REQUIRE(t_modify(c, &q) == 0, "rtr");
	q.attr.qp_state = IBV_QPS_RTS;
	q.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	REQUIRE(t_modify(c, &q) == 0, "rts");
	struct uroce_create_ah_req aq = { .pd = u->pd };
	aq.attr.is_global = 1;
	aq.attr.port_num = 1;
	aq.attr.grh.sgid_index = (uint8_t)gi;
	aq.attr.grh.hop_limit = 64;
	aq.attr.grh.dgid = c->hello.gids[gi];
	struct uroce_handle_msg ah;
	REQUIRE(t_call(c, UROCE_OP_CREATE_AH, &aq, sizeof(aq), NULL, 0, &ah, sizeof(ah), NULL,
		       NULL) == 0, "ah");
	u->ah = ah.handle;
	return rc;
}

/* one signaled UD SEND of 256 bytes at qp1_mads[k] to QPN dqpn with the
 * QP's Q_Key: its completion status (bounded wait) */
static int ud_send(struct t_client *c, struct ud *u, int k, uint32_t dqpn)
{
	uint32_t p = __atomic_load_n(r_prod(&u->sq), __ATOMIC_RELAXED);
	struct uroce_send_wqe *w = r_slot(&u->sq, p);
	struct uroce_sge *sge = (struct uroce_sge *)((uint8_t *)w + UROCE_SEND_WQE_HDR);

	memset(w, 0, UROCE_SEND_WQE_HDR);
	w->wr_id = p;
	w->opcode = IBV_WR_SEND;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->ud.ah = u->ah;
	w->ud.remote_qpn = dqpn;
	w->ud.remote_qkey = 0x80010000u; /* bit 31: the QP's own Q_Key */
	sge->addr = (uintptr_t)qp1_mads[k];
	sge->length = WIRE_MAD_LEN;
	sge->lkey = u->lkey;
	__atomic_store_n(r_prod(&u->sq), p + 1, __ATOMIC_RELEASE);
	t_ring(c, u->qp.db_index);
	for (uint64_t end = t_now_ms() + 20000;;) {
		if (__atomic_load_n(r_prod(&u->cqr), __ATOMIC_ACQUIRE) != u->cq_cons) {
			struct uroce_cqe *e = r_slot(&u->cqr, u->cq_cons++);
			__atomic_store_n(r_cons(&u->cqr), u->cq_cons, __ATOMIC_RELEASE);
			return (int)e->status;
		}
		REQUIRE(t_now_ms() < end, "no completion");
		usleep(500);
	}
}

/* A: the GSI's Q_Key on its UD QP, then forged REQs for every QPN of a
 * range (the victim's among them) to QP1, and one to QP0. It writes how
 * many of its sends completed successfully. */
static int qp1_attacker(void *arg)
{
	struct qp1_ctx *x = arg;
	struct t_client c;
	struct ud u;

	REQUIRE(t_client_open(&c, g_d.sock) == 0, "attacker client");
	CHECK(!(c.hello.flags & UROCE_HELLO_F_PRIVILEGED), "an unprivileged client is privileged");
	int gi = loop_gid(&c);
	REQUIRE(gi >= 0, "no 127.0.0.1 GID");
	int rc = ud_open(&c, &u, WIRE_GSI_QKEY, gi);
	CHECK(rc == -EPERM, "controlled Q_Key 0x80010000 set by an unprivileged client: %d", rc);
	uint32_t ok = 0;
	for (uint32_t qpn = VICTIM_QPN - 8; qpn <= VICTIM_QPN + 8; qpn++) {
		forge_req(qp1_mads[0], &c, gi, qpn);
		int st = ud_send(&c, &u, 0, 1);
		ok += st == IBV_WC_SUCCESS;
		if (st != IBV_WC_SUCCESS) {
			CHECK(st == IBV_WC_LOC_QP_OP_ERR || st == IBV_WC_WR_FLUSH_ERR,
			      "send to QP1: status %d", st);
			break; /* the QP is in error now */
		}
	}
	CHECK(ok == 0, "%u sends to QP1 went out", ok);
	REQUIRE(write(x->result, &ok, sizeof(ok)) == sizeof(ok), "result");
	t_client_close(&c);
	return 0;
}

static int case_qp1(void)
{
	int up[2], down[2], res[2];
	struct t_client root;

	start_shared(NULL);
	REQUIRE(pipe(up) == 0 && pipe(down) == 0 && pipe(res) == 0, "pipes");
	struct qp1_ctx x = { up[1], down[0], res[1] };
	pid_t v = as_uid(uid_v, qp1_victim, &x);
	sync_wait(up[0]);
	REQUIRE(t_client_open(&root, g_d.sock) == 0, "root client");
	uint64_t req0 = cm_stat(&root, "rx-REQ"), stale0 = cm_stat(&root, "stale");
	uint64_t dreq0 = cm_stat(&root, "rx-DREQ");
	pid_t a = as_uid(uid_a, qp1_attacker, &x);
	CHECK(wait_child(a) == 0, "the attacker's own checks");
	uint32_t ok = 0;
	REQUIRE(read(res[0], &ok, sizeof(ok)) == sizeof(ok), "attacker result");
	/* whatever got through is processed before the victim looks: every
	 * forged REQ received, every DREQ of a stale rule delivered */
	cm_stat_wait(&root, "rx-REQ", req0 + ok);
	uint64_t stale = cm_stat(&root, "stale") - stale0;
	CHECK(stale == 0, "%llu REQs judged stale", (unsigned long long)stale);
	cm_stat_wait(&root, "rx-DREQ", dreq0 + stale);
	sync_say(down[1]);
	CHECK(wait_child(v) == 0, "the victim's connection was harmed");
	/* what CAP_NET_RAW may (the kernel's rule): root's context here */
	CHECK(root.hello.flags & UROCE_HELLO_F_PRIVILEGED, "root is not privileged");
	struct ud u;
	int gi = loop_gid(&root);
	CHECK(ud_open(&root, &u, WIRE_GSI_QKEY, gi) == 0, "root's controlled Q_Key refused");
	t_client_close(&root);
	return finish();
}

/* ---------------------------------------------------------------- */
/* table                                                             */
/* ---------------------------------------------------------------- */

struct table_ctx {
	int to_parent, from_parent;
};

/* A: requests to its own listener, never answered, until refused; then
 * it holds them until told to go (it exits holding everything) */
#define TABLE_CTXS 16

/* the next event of id, others (rejected requests) skipped */
static void event_of(struct cmf *f, uint32_t id, uint32_t type)
{
	struct rdma_ucm_event_resp e;
	do
		REQUIRE(cm_event(f, &e, 30000) == 0, "no event for id %u", id);
	while (e.id != id);
	CHECK(e.event == type, "id %u: event %u, not %u", id, e.event, type);
}

/* an id of f connecting to port, whatever else f hears meanwhile */
static int attack_connect(struct cmf *f, uint16_t port, uint32_t qpn)
{
	uint32_t id;
	int rc = cm_create(f, 0xC0, RDMA_PS_TCP, &id);
	if (rc)
		return rc;
	REQUIRE(cm_resolve(f, id, "127.0.0.1", port, 2000) == 0, "resolve");
	event_of(f, id, EV_ADDR_RESOLVED);
	REQUIRE(cm_route(f, id) == 0, "route");
	event_of(f, id, EV_ROUTE_RESOLVED);
	return cm_connect(f, id, qpn, "");
}

static int table_attacker(void *arg)
{
	struct table_ctx *x = arg;
	static struct t_client c[TABLE_CTXS];
	struct cmf f, lf;
	uint32_t l;
	int rc = 0, n = 0;

	/* the listener's requests queue on a file of their own, never read */
	REQUIRE(t_client_open(&c[0], g_d.sock) == 0 && cm_open(&c[0], &lf) == 0, "attacker");
	uint16_t port = listen_any(&lf, 1024, &l);
	/* as many contexts as it takes: each holds its sixteenth, the uid
	 * a quarter */
	for (int k = 0; k < TABLE_CTXS; k++) {
		int m = 0;
		REQUIRE((k == 0 || t_client_open(&c[k], g_d.sock) == 0) && cm_open(&c[k], &f) == 0,
			"attacker context %d", k);
		for (rc = 0; !rc && m < 5000; m++) {
			rc = attack_connect(&f, port, 0x1000 + (uint32_t)n);
			n += !rc;
		}
		CHECK(rc == -ENOMEM, "context %d stopped by %d", k, rc);
		if (m == 1)
			break; /* refused at once: the uid's share is taken */
	}
	printf("attacker: %d requests, then %d\n", n, rc);
	sync_say(x->to_parent);
	sync_wait(x->from_parent);
	return 0; /* exits holding them all */
}

/* V: a connection of its own */
static int table_victim(void *arg)
{
	(void)arg;
	struct t_client c;
	struct cmf f;
	uint32_t l, a, n;

	REQUIRE(t_client_open(&c, g_d.sock) == 0 && cm_open(&c, &f) == 0, "victim client");
	uint16_t port = listen_any(&f, 8, &l);
	rc_up(&f, port, VICTIM_QPN, &a, &n);
	t_client_close(&c);
	return 0;
}

static int case_table(void)
{
	int up[2], down[2];
	struct t_client root;

	start_shared(NULL);
	REQUIRE(pipe(up) == 0 && pipe(down) == 0, "pipes");
	REQUIRE(t_client_open(&root, g_d.sock) == 0, "root client");
	uint32_t nctx0 = dev_nctx(&root);
	struct table_ctx x = { up[1], down[0] };
	pid_t a = as_uid(uid_a, table_attacker, &x);
	sync_wait(up[0]);
	/* A holds its share of the engine's table: a quarter, which the
	 * limits op (uroce-ctl limits) shows */
	struct uroce_query_limits_req lq = { .uid = uid_a };
	static struct uroce_query_limits_rep lr;
	REQUIRE(t_call(&root, UROCE_OP_QUERY_LIMITS, &lq, sizeof(lq), NULL, 0, &lr, sizeof(lr),
		       NULL, NULL) == 0, "limits");
	const struct uroce_limit *conn = NULL;
	for (uint32_t i = 0; i < lr.n; i++)
		if (!strcmp(lr.e[i].name, "cm_conn"))
			conn = &lr.e[i];
	REQUIRE(conn != NULL, "no cm_conn limit");
	CHECK(conn->uid_used + 1 >= conn->uid_max && conn->uid_max <= lr.cm_ids / 4,
	      "the attacker holds %u of its %u, the table %u", conn->uid_used, conn->uid_max,
	      lr.cm_ids);
	CHECK(lr.cm_ids_used < lr.cm_ids, "the table is full: %u", lr.cm_ids_used);
	/* the victim still connects */
	int vs = wait_child(as_uid(uid_v, table_victim, NULL));
	CHECK(vs == 0, "the victim could not connect (%d)", vs);
	uint64_t ids = cm_stat(&root, "ids");
	/* A exits holding everything: its ids are freed with its context,
	 * none waits in the table */
	sync_say(down[1]);
	CHECK(wait_child(a) == 0, "the attacker's own checks");
	nctx_wait(&root, nctx0);
	uint64_t after = cm_stat(&root, "ids");
	CHECK(after == 0, "%llu CM ids left after every client went (%llu while A held them)",
	      (unsigned long long)after, (unsigned long long)ids);
	t_client_close(&root);
	return finish();
}

/* ---------------------------------------------------------------- */
/* xrc                                                               */
/* ---------------------------------------------------------------- */

struct xrc_ctx {
	int to_parent, from_parent;
	char dir[300];
	ino_t ino;
	uint32_t tgt_qpn;
};

static int xrcd_open_file(struct t_client *c, const char *path, uint32_t *h)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct uroce_open_xrcd_req q = { .oflags = O_CREAT };
	struct uroce_open_xrcd_rep r;
	int rc = t_call(c, UROCE_OP_OPEN_XRCD, &q, sizeof(q), &fd, 1, &r, sizeof(r), NULL, NULL);
	close(fd);
	if (!rc)
		*h = r.handle;
	return rc;
}

/* V: a domain on its 0600 file, a TGT QP in it, the file unlinked */
static int xrc_victim(void *arg)
{
	struct xrc_ctx *x = arg;
	struct t_client c;
	char path[400];
	struct stat st;
	uint32_t xh;

	snprintf(path, sizeof(path), "%s/victim.xrc", x->dir);
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0 && fstat(fd, &st) == 0, "victim file");
	close(fd);
	REQUIRE(t_client_open(&c, g_d.sock) == 0, "victim client");
	REQUIRE(xrcd_open_file(&c, path, &xh) == 0, "open xrcd");
	struct uroce_xrc_qp_req q = { .xrcd = xh };
	struct uroce_xrc_qp_rep r;
	REQUIRE(t_call(&c, UROCE_OP_CREATE_XTGT, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL,
		       NULL) == 0, "tgt qp");
	REQUIRE(unlink(path) == 0, "unlink");
	x->ino = st.st_ino;
	x->tgt_qpn = r.qpn;
	REQUIRE(write(x->to_parent, x, sizeof(*x)) == sizeof(*x), "tell");
	sync_wait(x->from_parent);
	/* the TGT QP is still ours and untouched */
	struct uroce_query_qp_req qq = { .handle = r.handle, .attr_mask = IBV_QP_STATE };
	struct uroce_query_qp_rep qr;
	REQUIRE(t_call(&c, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL,
		       NULL) == 0, "query tgt");
	CHECK(qr.attr.qp_state != IBV_QPS_ERR, "the victim's TGT QP moved to %u", qr.attr.qp_state);
	t_client_close(&c);
	return 0;
}

/* A: new files (on the same file system) until one has the victim's
 * inode number: then its domain would be the victim's */
static int xrc_attacker(void *arg)
{
	struct xrc_ctx *x = arg;
	struct t_client c;
	char path[400];
	int hit = 0;

	REQUIRE(t_client_open(&c, g_d.sock) == 0, "attacker client");
	for (int i = 0; i < 2000 && !hit; i++) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/a%d", x->dir, i);
		int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
		REQUIRE(fd >= 0 && fstat(fd, &st) == 0, "attacker file %s", path);
		close(fd);
		if (st.st_ino != x->ino)
			continue;
		hit = 1;
		uint32_t xh;
		REQUIRE(xrcd_open_file(&c, path, &xh) == 0, "open xrcd");
		struct uroce_xrc_qp_req q = { .xrcd = xh, .qpn = x->tgt_qpn };
		struct uroce_xrc_qp_rep r;
		int rc = t_call(&c, UROCE_OP_OPEN_QP, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL,
				NULL);
		CHECK(rc != 0, "the attacker opened the victim's TGT QP");
		if (!rc) {
			struct uroce_modify_qp_req mq = { .handle = r.handle };
			mq.attr.qp_state = IBV_QPS_ERR;
			mq.attr_mask = IBV_QP_STATE;
			t_modify(&c, &mq);
		}
	}
	CHECK(!hit, "a new file got the unlinked domain file's inode number");
	t_client_close(&c);
	return 0;
}

/* the daemon has a descriptor of the file with inode ino (deleted) */
static bool daemon_holds(pid_t pid, ino_t ino)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	bool found = false;
	for (struct dirent *e; d && (e = readdir(d)) != NULL && !found;) {
		struct stat st;
		if (!fstatat(dirfd(d), e->d_name, &st, 0) && st.st_ino == ino && S_ISREG(st.st_mode))
			found = true;
	}
	if (d)
		closedir(d);
	return found;
}

static int case_xrc(void)
{
	int up[2], down[2];
	struct xrc_ctx x = { 0 };

	start_shared(NULL);
	REQUIRE(pipe(up) == 0 && pipe(down) == 0, "pipes");
	/* a directory both may create files in, on the run directory's file
	 * system (sticky, as /tmp) */
	snprintf(x.dir, sizeof(x.dir), "%s/pub", g_d.dir);
	REQUIRE(mkdir(x.dir, 01777) == 0 && chmod(x.dir, 01777) == 0, "pub dir");
	x.to_parent = up[1];
	x.from_parent = down[0];
	pid_t v = as_uid(uid_v, xrc_victim, &x);
	REQUIRE(read(up[0], &x, sizeof(x)) == sizeof(x), "victim's file");
	CHECK(daemon_holds(g_d.pid, x.ino), "the domain does not hold its file's inode");
	CHECK(wait_child(as_uid(uid_a, xrc_attacker, &x)) == 0, "the attacker joined");
	sync_say(down[1]);
	CHECK(wait_child(v) == 0, "the victim was harmed");
	return finish();
}

/* ---------------------------------------------------------------- */
/* rundir                                                            */
/* ---------------------------------------------------------------- */

#define RD_FILES 50

struct rd_ctx {
	char shared[300];   /* XDG_RUNTIME_DIR of V's daemon: A may write it */
	char files[300];    /* V's own files */
	char stale[400];    /* A's stale-looking DPDK directory */
	volatile int stop;
};

/* A: the stale directory, refilled with names V's files have */
static void rd_plant(struct rd_ctx *x)
{
	char p[500];
	mkdir(x->stale, 0777);
	snprintf(p, sizeof(p), "%s/sub", x->stale);
	mkdir(p, 0777);
	for (int i = 0; i < RD_FILES; i++) {
		snprintf(p, sizeof(p), "%s/sub/f%d", x->stale, i);
		close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
	}
	/* more names, so that a walk is still in sub/ when it is swapped */
	for (int i = 0; i < 500; i++) {
		snprintf(p, sizeof(p), "%s/sub/g%d", x->stale, i);
		close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
	}
}

/* A: as soon as a removal opens sub/ of the stale directory (inotify),
 * sub/ becomes a symlink to V's files, so that a removal walking by path
 * names unlinks "sub/f3" there; after a while the directory comes back,
 * refilled, for the next start. */
static void *rd_swapper(void *arg)
{
	struct rd_ctx *x = arg;
	char sub[460], tmp[460];
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	snprintf(sub, sizeof(sub), "%s/sub", x->stale);
	snprintf(tmp, sizeof(tmp), "%s/subx", x->stale);
	while (!x->stop && in >= 0) {
		int w = inotify_add_watch(in, sub, IN_OPEN | IN_ONLYDIR);
		struct pollfd p = { .fd = in, .events = POLLIN };
		if (w < 0 || poll(&p, 1, 50) != 1) {
			if (w >= 0)
				inotify_rm_watch(in, w);
			continue;
		}
		char ev[4096];
		while (read(in, ev, sizeof(ev)) > 0)
			;
		if (!rename(sub, tmp) && !symlink(x->files, sub)) {
			usleep(200000);
			unlink(sub);
		}
		rename(tmp, sub);
		rd_plant(x);
		inotify_rm_watch(in, w);
	}
	if (in >= 0)
		close(in);
	return NULL;
}

/* V: its own daemon, started and stopped while A swaps */
static int rd_victim(void *arg)
{
	struct rd_ctx *x = arg;
	struct t_daemon d;
	char base[400], own[460];

	setenv("XDG_RUNTIME_DIR", x->shared, 1);
	for (int i = 0; i < RD_FILES; i++) {
		char p[400];
		snprintf(p, sizeof(p), "%s/f%d", x->files, i);
		close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	}
	snprintf(base, sizeof(base), "%s/dpdk", x->shared);
	for (int round = 0; round < 6; round++) {
		REQUIRE(t_daemon_start(&d, g_uroced, false, NULL) == 0, "victim daemon");
		/* DPDK's runtime directory is in the daemon's own run directory */
		snprintf(own, sizeof(own), "%s/dpdk/uroce%d", d.run, (int)d.pid);
		CHECK(access(own, F_OK) == 0, "no %s", own);
		CHECK(t_daemon_stop(&d) == 0, "victim daemon exit");
		t_rmdir(&d);
		t_cur = NULL;
	}
	int left = 0;
	for (int i = 0; i < RD_FILES; i++) {
		char p[400];
		snprintf(p, sizeof(p), "%s/f%d", x->files, i);
		left += access(p, F_OK) == 0;
	}
	CHECK(left == RD_FILES, "the victim's daemon deleted %d of its %d files", RD_FILES - left,
	      RD_FILES);
	return 0;
}

static int rd_attacker(void *arg)
{
	struct rd_ctx *x = arg;
	pthread_t t;
	char base[400];

	snprintf(base, sizeof(base), "%s/dpdk", x->shared);
	mkdir(base, 0777);
	chmod(base, 0777);
	rd_plant(x);
	REQUIRE(pthread_create(&t, NULL, rd_swapper, x) == 0, "swapper");
	/* refill what a removal took, until the parent says stop (the pipe) */
	char b;
	while (read(0, &b, 1) < 0 && errno == EINTR)
		;
	x->stop = 1;
	pthread_join(t, NULL);
	return 0;
}

static int case_rundir(void)
{
	struct rd_ctx x = { 0 };
	char dir[] = "/tmp/uroce-attack-XXXXXX";
	int stop[2];

	REQUIRE(mkdtemp(dir) && chmod(dir, 0755) == 0, "tmp");
	snprintf(x.shared, sizeof(x.shared), "%s/shared", dir);
	snprintf(x.files, sizeof(x.files), "%s/vfiles", dir);
	REQUIRE(mkdir(x.shared, 01777) == 0 && chmod(x.shared, 01777) == 0, "shared");
	REQUIRE(mkdir(x.files, 0700) == 0 && chown(x.files, uid_v, uid_v) == 0, "files");
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0); /* a pid nobody has: the stale name */
	snprintf(x.stale, sizeof(x.stale), "%s/dpdk/uroce%d", x.shared, (int)dead);
	REQUIRE(pipe(stop) == 0, "pipe");
	pid_t a = fork();
	if (a == 0) {
		dup2(stop[0], 0);
		close(stop[1]);
		_exit(wait_child(as_uid(uid_a, rd_attacker, &x)));
	}
	close(stop[0]);
	CHECK(wait_child(as_uid(uid_v, rd_victim, &x)) == 0, "the victim's files");
	close(stop[1]);
	wait_child(a);
	/* A's directory was never the daemon's to remove */
	CHECK(access(x.stale, F_OK) == 0, "the daemon removed %s, which is not its own", x.stale);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0, "cleanup");
	if (t_failures) {
		fprintf(stderr, "%d failure(s)\n", t_failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* ---------------------------------------------------------------- */
/* capture                                                           */
/* ---------------------------------------------------------------- */

static int case_capture(void)
{
	char dir[] = "/tmp/uroce-attack-XXXXXX", pcap[300], run[300];
	struct stat st;
	struct t_client root;

	REQUIRE(mkdtemp(dir), "tmp");
	snprintf(pcap, sizeof(pcap), "%s/daemon.pcap", dir);
	snprintf(run, sizeof(run), "%s/runtime.pcap", dir);
	umask(022);
	const char *more[] = { "--pcap", pcap, NULL };
	start_shared(more);
	CHECK(stat(pcap, &st) == 0 && (st.st_mode & 0777) == 0600, "--pcap file mode %o",
	      st.st_mode & 0777);
	/* a capture started at run time on a file made 0644 */
	int fd = open(run, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	REQUIRE(fd >= 0, "runtime file");
	REQUIRE(t_client_open(&root, g_d.sock) == 0, "root client");
	REQUIRE(t_call(&root, UROCE_OP_CAPTURE_STOP, NULL, 0, NULL, 0, NULL, 0, NULL, NULL) == 0,
		"stop --pcap");
	REQUIRE(t_call(&root, UROCE_OP_CAPTURE_START, NULL, 0, &fd, 1, NULL, 0, NULL, NULL) == 0,
		"capture start");
	close(fd);
	CHECK(stat(run, &st) == 0 && (st.st_mode & 0777) == 0600, "run-time capture mode %o",
	      st.st_mode & 0777);
	t_client_close(&root);
	int rc = finish();
	unlink(pcap);
	unlink(run);
	rmdir(dir);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	g_uroced = argv[1];
	if (geteuid() != 0) {
		printf("needs root (two users and a root daemon)\n");
		return 77;
	}
	alarm(200);
	setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1", 0);
	/* uids no account has, one pair per run */
	uid_v = 3000000u + (uid_t)(getpid() % 400000) * 2;
	uid_a = uid_v + 1;
	if (!strcmp(argv[2], "qp1"))
		return case_qp1();
	if (!strcmp(argv[2], "table"))
		return case_table();
	if (!strcmp(argv[2], "xrc"))
		return case_xrc();
	if (!strcmp(argv[2], "rundir"))
		return case_rundir();
	if (!strcmp(argv[2], "capture"))
		return case_capture();
	return 2;
}
