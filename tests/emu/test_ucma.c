/* SPDX-License-Identifier: MIT */
/* The daemon's rdma_ucm (emu/cm/ucma.c) driven through the control socket
 * as the shim drives it for librdmacm: UROCE_OP_UCMA_OPEN/CMD/CLOSE with
 * the kernel's command structs, events through the file's pipe. Each case
 * starts its own default (loopback) daemon:
 *   conn    - RC: listen, resolve, connect, accept, RTU, disconnect,
 *             timewait; event sequence, private data, INIT_QP_ATTR values;
 *             REJECTED from a port nobody listens on; a client that dies
 *             disconnects its peer
 *   bind    - port 0, EADDRINUSE / EADDRNOTAVAIL, reuseaddr, wildcard,
 *             addresses not ours, ADDR_ERROR for an unreachable address
 *   events  - destroy with queued events (events_reported, stale bytes),
 *             a listener destroyed with a pending request, MIGRATE_ID,
 *             UCMA_CLOSE
 *   ud      - UDP port space through SIDR, UD INIT_QP_ATTR, multicast join
 *   hostile - bad handles, another client's ids, short/oversized commands,
 *             thousands of ids: errors, and the other client still works
 *   link    - two devices back to back: resolution through ARP, and
 *             ADDR_ERROR when nobody answers
 *   igmp    - IGMPv2/MLDv1 reports and leaves for multicast joins (capture)
 *   wire    - two devices back to back, a client on each: connections
 *             through the IB CM engine (MADs on QP1)
 *   self    - two ids of one device on a port that does not bring frames
 *             back: the same engine, its MADs through the port's self loop
 * Every case goes through the IB CM engine: there is no other path. */
#include <dirent.h>

#include "ucma_client.h"
#include <uroce/flush.h>

static const char *g_daemon;
static struct t_daemon g_d;

static bool g_gsi_check;     /* finish() counts the CM MADs captured */
static char g_pcap[300];

/* RoCEv2 (IPv4) frames to QPN 1 in the capture: the CM engine's MADs
 * (self: only those to the sender's own MAC) */
static int pcap_gsi_frames(const char *path, bool self)
{
	FILE *fp = fopen(path, "rb");
	uint8_t gh[24], rh[16], f[4096];
	int n = 0;

	if (!fp || fread(gh, 1, 24, fp) != 24) {
		if (fp)
			fclose(fp);
		return -1;
	}
	while (fread(rh, 1, 16, fp) == 16) {
		uint32_t len;
		memcpy(&len, rh + 8, 4);
		if (len > sizeof(f) || fread(f, 1, len, fp) != len)
			break;
		if (len >= 54 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 && f[36] == 0x12 &&
		    f[37] == 0xb7 && f[47] == 0 && f[48] == 0 && f[49] == 1 &&
		    (!self || !memcmp(f, f + 6, 6)))
			n++;
	}
	fclose(fp);
	return n;
}

static void start(struct t_client *a, struct t_client *b)
{
	REQUIRE(mkdtemp(strcpy(g_pcap, "/tmp/uroce-ucma-XXXXXX")) != NULL, "tmp");
	strcat(g_pcap, "/cap.pcap");
	const char *opts[] = { "--pcap", g_pcap, NULL };
	REQUIRE(t_daemon_start(&g_d, g_daemon, false, opts) == 0, "start");
	REQUIRE(t_client_open(a, g_d.sock) == 0, "client a");
	if (b)
		REQUIRE(t_client_open(b, g_d.sock) == 0, "client b");
}

/* after the daemon stopped: the capture g_pcap and its directory, the run
 * directory, the verdict */
static int verdict(void)
{
	if (g_pcap[0]) {
		unlink(g_pcap);
		*strrchr(g_pcap, '/') = 0;
		rmdir(g_pcap);
		g_pcap[0] = 0;
	}
	t_rmdir(&g_d);
	t_cur = NULL;
	if (t_failures) {
		fprintf(stderr, "%d failure(s)\n", t_failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int finish(void)
{
	int st = t_daemon_stop(&g_d);
	CHECK(st == 0, "daemon exit %d", st);
	if (g_gsi_check) {
		/* the exchange went as MADs through the engine */
		int n = pcap_gsi_frames(g_pcap, false);
		CHECK(n >= 5, "%d CM MADs captured", n);
	}
	return verdict();
}

/* ------------------------------------------------------------------ */

static int case_conn(void)
{
	struct t_client a, b;
	struct cmf fa, fb;
	struct rdma_ucm_event_resp e;
	struct ib_uverbs_qp_attr qa, qb;
	uint32_t lid, cid, sid, nid, rep;

	g_gsi_check = true;
	start(&a, &b);
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&b, &fb) == 0, "files");
	/* server: listen on 127.0.0.1, ephemeral port */
	REQUIRE(cm_create(&fa, 0xA1, RDMA_PS_TCP, &lid) == 0, "create");
	REQUIRE(cm_bind(&fa, lid, "127.0.0.1", 0) == 0, "bind");
	uint16_t port = cm_port(&fa, lid);
	CHECK(port >= 32768 && port <= 60999, "ephemeral port %u", port);
	struct rdma_ucm_query_route_resp qr;
	REQUIRE(cm_query_route(&fa, lid, &qr) == 0, "query route");
	CHECK(qr.node_guid == a.hello.node_guid && qr.node_guid != 0, "node guid %llx vs %llx",
	      (unsigned long long)qr.node_guid, (unsigned long long)a.hello.node_guid);
	CHECK(qr.port_num == 1 && qr.num_paths == 0, "port %u paths %u", qr.port_num, qr.num_paths);
	REQUIRE(cm_listen(&fa, lid, 4) == 0, "listen");
	CHECK(cm_listen(&fa, lid, 4) == -EINVAL, "listen twice");

	/* client: resolve, route, path */
	REQUIRE(cm_create(&fb, 0xB1, RDMA_PS_TCP, &cid) == 0, "create b");
	cm_resolve_all(&fb, cid, 0xB1, "127.0.0.1", port);
	REQUIRE(cm_query_route(&fb, cid, &qr) == 0, "query route b");
	CHECK(qr.num_paths == 1, "paths %u", qr.num_paths);
	static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
	CHECK(!memcmp(qr.ib_route[0].sgid, lo, 16) && !memcmp(qr.ib_route[0].dgid, lo, 16),
	      "path gids");
	CHECK(qr.ib_route[0].mtu == a.hello.port_attr.active_mtu, "path mtu %u", qr.ib_route[0].mtu);
	CHECK(qr.ib_route[0].pkey == 0xffff && qr.ib_route[0].hop_limit == 64, "pkey/hop");
	union {
		struct rdma_ucm_query_path_resp r;
		uint8_t b[512];
	} qp;
	struct rdma_ucm_query qq = { .id = cid, .option = RDMA_USER_CM_QUERY_PATH };
	size_t got = 0;
	REQUIRE(cm_cmd_raw(&b, fb.h, RDMA_USER_CM_CMD_QUERY, &qq, sizeof(qq), sizeof(qp), &qp,
			   &got) == 0, "query path");
	CHECK(qp.r.num_paths == 1 && got == sizeof(qp.r) + sizeof(struct ib_path_rec_data),
	      "path resp %u %zu", qp.r.num_paths, got);
	CHECK(!memcmp((uint8_t *)qp.r.path_data[0].path_rec + 8, lo, 16), "packed dgid");

	/* an id with no connection: INIT only, no access */
	REQUIRE(cm_qp_attr(&fb, cid, IBV_QPS_INIT, &qb) == 0, "init attr");
	CHECK(qb.qp_attr_mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) &&
	      qb.qp_access_flags == 0 && qb.port_num == 1, "pre-connect init mask %x",
	      qb.qp_attr_mask);
	CHECK(cm_qp_attr(&fb, cid, 99, &qb) == -EINVAL, "bad state");

	/* connect with private data */
	CHECK(cm_connect(&fb, cid, 0x123, "this private data is far too long for a REQ: 56 bytes max!") == -EINVAL,
	      "57 bytes of REQ private data accepted");
	REQUIRE(cm_connect(&fb, cid, 0x123, "hello") == 0, "connect");
	CHECK(cm_connect(&fb, cid, 0x123, "again") == -EINVAL, "connect twice");
	REQUIRE(cm_qp_attr(&fb, cid, IBV_QPS_INIT, &qb) == 0, "init attr");
	CHECK(qb.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC | UROCE_ACCESS_FLUSH),
	      "access %x", qb.qp_access_flags);
	CHECK(cm_qp_attr(&fb, cid, IBV_QPS_RTR, &qb) == -EINVAL, "RTR before the REP");

	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	nid = e.id;
	CHECK(e.uid == 0xA1 && nid != lid, "request uid %llx id %u", (unsigned long long)e.uid, nid);
	CHECK(e.param.conn.qp_num == 0x123 && e.param.conn.private_data_len == 56 &&
	      !memcmp(e.param.conn.private_data, "hello", 5) && e.param.conn.private_data[5] == 0,
	      "request param qpn %x len %u", e.param.conn.qp_num, e.param.conn.private_data_len);
	CHECK(e.param.conn.responder_resources == 2 && e.param.conn.initiator_depth == 4 &&
	      e.param.conn.retry_count == 5 && e.param.conn.rnr_retry_count == 6,
	      "request rd %u/%u retry %u/%u", e.param.conn.responder_resources,
	      e.param.conn.initiator_depth, e.param.conn.retry_count, e.param.conn.rnr_retry_count);
	REQUIRE(cm_query_route(&fa, nid, &qr) == 0, "query new id");
	CHECK(ntohs(qr.src_addr.sin6_port) == port && qr.num_paths == 1, "new id src port %u",
	      ntohs(qr.src_addr.sin6_port));
	CHECK(ntohs(qr.dst_addr.sin6_port) == cm_port(&fb, cid), "new id dst port");

	REQUIRE(cm_accept(&fa, nid, 0xA2, 0x456, "world") == 0, "accept");
	CHECK(cm_accept(&fa, nid, 0xA2, 0x456, "world") == -EINVAL, "accept twice");
	EXPECT(&fb, EV_CONNECT_RESPONSE, &e);
	CHECK(e.uid == 0xB1 && e.param.conn.qp_num == 0x456 && e.param.conn.private_data_len == 196 &&
	      !memcmp(e.param.conn.private_data, "world", 5), "response qpn %x len %u",
	      e.param.conn.qp_num, e.param.conn.private_data_len);
	CHECK(e.param.conn.responder_resources == 4 && e.param.conn.initiator_depth == 2 &&
	      e.param.conn.rnr_retry_count == 7, "response rd %u/%u rnr %u",
	      e.param.conn.responder_resources, e.param.conn.initiator_depth,
	      e.param.conn.rnr_retry_count);

	/* what each side's QP is told: the other's QPN and PSN */
	REQUIRE(cm_qp_attr(&fa, nid, IBV_QPS_RTR, &qa) == 0 && cm_qp_attr(&fb, cid, IBV_QPS_RTR, &qb) == 0,
		"rtr");
	uint32_t rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	CHECK(qa.qp_attr_mask == rtr && qb.qp_attr_mask == rtr, "rtr masks %x %x", qa.qp_attr_mask,
	      qb.qp_attr_mask);
	CHECK(qa.dest_qp_num == 0x123 && qb.dest_qp_num == 0x456, "dest qpn %x %x", qa.dest_qp_num,
	      qb.dest_qp_num);
	CHECK(qa.path_mtu == a.hello.port_attr.active_mtu && qb.path_mtu == qa.path_mtu, "mtu");
	CHECK(qa.ah_attr.is_global && !memcmp(qa.ah_attr.grh.dgid, lo, 16) &&
	      qa.ah_attr.grh.hop_limit == 64 && qa.ah_attr.port_num == 1, "passive ah");
	CHECK(a.hello.gids[qb.ah_attr.grh.sgid_index].raw[15] == 1 &&
	      a.hello.gids[qb.ah_attr.grh.sgid_index].raw[12] == 127, "sgid index %u",
	      qb.ah_attr.grh.sgid_index);
	/* as ib_cm: each side's responder resources are what it offered or
	 * was given by the REP (initiator depth and responder resources swap) */
	CHECK(qa.max_dest_rd_atomic == 2 && qb.max_dest_rd_atomic == 4, "max_dest_rd_atomic %u %u",
	      qa.max_dest_rd_atomic, qb.max_dest_rd_atomic);
	struct ib_uverbs_qp_attr sa, sb;
	REQUIRE(cm_qp_attr(&fa, nid, IBV_QPS_RTS, &sa) == 0 && cm_qp_attr(&fb, cid, IBV_QPS_RTS, &sb) == 0,
		"rts");
	uint32_t rts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	CHECK(sa.qp_attr_mask == rts && sb.qp_attr_mask == rts, "rts masks");
	CHECK(qa.rq_psn == sb.sq_psn && qb.rq_psn == sa.sq_psn, "psn a rq %x b sq %x, b rq %x a sq %x",
	      qa.rq_psn, sb.sq_psn, qb.rq_psn, sa.sq_psn);
	/* as the kernel's rdma_cm: each side receives from its own random
	 * PSN (REQ's / REP's) and sends from the other's; a passive side
	 * that took the REQ's PSN hid an active side ignoring the REP's,
	 * which the kernel's passive side does not forgive (rping from
	 * uroce to rxe: "retry exceeded") */
	CHECK(qa.rq_psn != qb.rq_psn, "both sides receive from PSN %x", qa.rq_psn);
	CHECK(sa.timeout == 19 && sb.timeout == 19, "timeout %u %u", sa.timeout, sb.timeout);
	CHECK(sa.retry_cnt == 5 && sb.retry_cnt == 5, "retry %u %u", sa.retry_cnt, sb.retry_cnt);
	/* the RNR retry count each side uses is the one its peer asked for */
	CHECK(sa.rnr_retry == 6 && sb.rnr_retry == 7, "rnr %u %u", sa.rnr_retry, sb.rnr_retry);
	CHECK(sa.max_rd_atomic == 4 && sb.max_rd_atomic == 2, "max_rd_atomic %u %u",
	      sa.max_rd_atomic, sb.max_rd_atomic);

	/* RTU: the passive side is established, under its new uid */
	CHECK(cm_quiet(&fa), "event before the RTU");
	REQUIRE(cm_accept(&fb, cid, 0, 0, NULL) == 0, "rtu");
	EXPECT(&fa, EV_ESTABLISHED, &e);
	CHECK(e.uid == 0xA2 && e.id == nid, "established uid %llx", (unsigned long long)e.uid);

	/* disconnect: DREQ, DREP, then timewait on both */
	REQUIRE(cm_disconnect(&fb, cid) == 0, "disconnect");
	EXPECT(&fa, EV_DISCONNECTED, &e);
	CHECK(cm_quiet(&fb), "DISCONNECTED before the DREP");
	REQUIRE(cm_disconnect(&fa, nid) == 0, "drep");
	EXPECT(&fb, EV_DISCONNECTED, &e);
	EXPECT(&fa, EV_TIMEWAIT_EXIT, &e);
	EXPECT(&fb, EV_TIMEWAIT_EXIT, &e);
	REQUIRE(cm_destroy(&fb, cid, &rep) == 0, "destroy");
	CHECK(rep == 5, "client events reported %u", rep);
	REQUIRE(cm_destroy(&fa, nid, &rep) == 0, "destroy conn");
	CHECK(rep == 3, "server conn events %u", rep);

	/* nobody listens there: REJECTED, invalid service ID */
	REQUIRE(cm_create(&fb, 0xB2, RDMA_PS_TCP, &cid) == 0, "create");
	cm_resolve_all(&fb, cid, 0xB2, "127.0.0.1", (uint16_t)(port + 1 > 60999 ? 32768 : port + 1));
	REQUIRE(cm_connect(&fb, cid, 1, "") == 0, "connect");
	EXPECT(&fb, EV_REJECTED, &e);
	CHECK(e.status == 8 && e.param.conn.private_data_len == 148, "reject status %d",
	      (int)e.status);
	REQUIRE(cm_destroy(&fb, cid, NULL) == 0, "destroy");

	/* consumer reject with private data */
	REQUIRE(cm_create(&fb, 0xB3, RDMA_PS_TCP, &cid) == 0, "create");
	cm_resolve_all(&fb, cid, 0xB3, "127.0.0.1", port);
	{
		/* counts above 3 bits are clamped to 7, as cma_connect_ib does
		 * (libfabric asks for 15: the QP would refuse it) */
		struct rdma_ucm_connect cq = { .id = cid };
		cq.conn_param.valid = 1;
		cq.conn_param.qp_num = 2;
		cq.conn_param.retry_count = 15;
		cq.conn_param.rnr_retry_count = 9;
		REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_CONNECT, &cq, sizeof(cq), NULL, 0) == 0, "connect");
	}
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	CHECK(e.param.conn.retry_count == 7 && e.param.conn.rnr_retry_count == 7,
	      "clamped counts %u %u", e.param.conn.retry_count, e.param.conn.rnr_retry_count);
	struct rdma_ucm_reject rj = { .id = e.id, .private_data_len = 4 };
	memcpy(rj.private_data, "nope", 4);
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_REJECT, &rj, sizeof(rj), NULL, 0) == 0, "reject");
	EXPECT(&fb, EV_REJECTED, &e);
	CHECK(e.status == 28 && !memcmp(e.param.conn.private_data, "nope", 4), "consumer reject %d",
	      (int)e.status);
	REQUIRE(cm_destroy(&fb, cid, NULL) == 0, "destroy");

	/* a connected client that dies: its peer is disconnected */
	REQUIRE(cm_create(&fb, 0xB4, RDMA_PS_TCP, &cid) == 0, "create");
	cm_resolve_all(&fb, cid, 0xB4, "127.0.0.1", port);
	REQUIRE(cm_connect(&fb, cid, 3, "") == 0, "connect");
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	sid = e.id;
	REQUIRE(cm_accept(&fa, sid, 0xA3, 9, "") == 0, "accept");
	EXPECT(&fb, EV_CONNECT_RESPONSE, &e);
	REQUIRE(cm_accept(&fb, cid, 0, 0, NULL) == 0, "rtu");
	EXPECT(&fa, EV_ESTABLISHED, &e);
	close(fb.ev);
	t_client_close(&b);
	EXPECT(&fa, EV_DISCONNECTED, &e);
	CHECK(e.id == sid, "disconnected id");

	close(fa.ev);
	t_client_close(&a);
	return finish();
}

static int case_bind(void)
{
	struct t_client a, b;
	struct cmf fa, fb;
	struct rdma_ucm_event_resp e;
	uint32_t i1, i2, i3, i4;
	int rc;

	start(&a, &b);
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&b, &fb) == 0, "files");
	REQUIRE(cm_create(&fa, 1, RDMA_PS_TCP, &i1) == 0 && cm_create(&fb, 2, RDMA_PS_TCP, &i2) == 0 &&
		cm_create(&fb, 3, RDMA_PS_TCP, &i3) == 0 && cm_create(&fb, 4, RDMA_PS_UDP, &i4) == 0,
		"ids");
	REQUIRE(cm_bind(&fa, i1, "127.0.0.1", 45000) == 0, "bind");
	CHECK(cm_bind(&fa, i1, "127.0.0.1", 45001) == -EINVAL, "bound twice");
	/* another client, same port space */
	rc = cm_bind(&fb, i2, "127.0.0.1", 45000);
	CHECK(rc == -EADDRINUSE, "same address and port: %d", rc);
	rc = cm_bind(&fb, i3, "0.0.0.0", 45000);
	CHECK(rc == -EADDRNOTAVAIL, "wildcard over a bound port: %d", rc);
	/* another port space does not conflict */
	CHECK(cm_bind(&fb, i4, "127.0.0.1", 45000) == 0, "UDP port space");
	/* not an address of the device */
	rc = cm_bind(&fb, i2, "10.11.12.13", 45002);
	CHECK(rc == -EADDRNOTAVAIL, "foreign address: %d", rc);
	/* failed binds leave the id idle: it binds fine elsewhere */
	CHECK(cm_bind(&fb, i2, "127.0.0.1", 45003) == 0, "bind after failures");
	/* reuseaddr on both: shared (not for listeners) */
	int one = 1;
	uint8_t opt[sizeof(struct rdma_ucm_set_option) + sizeof(int)];
	struct rdma_ucm_set_option so = { .id = i3, .level = RDMA_OPTION_ID,
					  .optname = RDMA_OPTION_ID_REUSEADDR, .optlen = sizeof(int) };
	memcpy(opt, &so, sizeof(so));
	memcpy(opt + sizeof(so), &one, sizeof(one));
	REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == 0, "reuseaddr");
	uint32_t i5;
	REQUIRE(cm_create(&fa, 5, RDMA_PS_TCP, &i5) == 0, "id 5");
	so.id = i5;
	memcpy(opt, &so, sizeof(so));
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == 0, "reuseaddr 5");
	REQUIRE(cm_bind(&fa, i5, "127.0.0.1", 46000) == 0, "bind 5");
	CHECK(cm_bind(&fb, i3, "127.0.0.1", 46000) == 0, "reuseaddr pair");
	CHECK(cm_listen(&fb, i3, 1) == -EADDRINUSE, "listen on a shared port");
	/* a reusable id that listens alone takes the port for itself */
	{
		uint32_t r1, r2;
		REQUIRE(cm_create(&fb, 20, RDMA_PS_TCP, &r1) == 0 && cm_create(&fa, 21, RDMA_PS_TCP, &r2) == 0,
			"ids");
		so.id = r1;
		memcpy(opt, &so, sizeof(so));
		REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == 0, "reuse r1");
		so.id = r2;
		memcpy(opt, &so, sizeof(so));
		REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == 0, "reuse r2");
		REQUIRE(cm_bind(&fb, r1, "127.0.0.1", 46500) == 0 && cm_listen(&fb, r1, 1) == 0, "listen r1");
		rc = cm_bind(&fa, r2, "127.0.0.1", 46500);
		CHECK(rc == -EADDRINUSE, "reusable bind on a listener's port: %d", rc);
	}
	/* option lengths are checked; unknown options are ENOSYS */
	so.id = i3;
	so.optlen = 2;
	memcpy(opt, &so, sizeof(so));
	CHECK(cm_cmd(&fb, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == -EINVAL, "optlen");
	so.optlen = 4;
	so.optname = 77;
	memcpy(opt, &so, sizeof(so));
	rc = cm_cmd(&fb, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0);
	CHECK(rc == -ENOSYS, "optname: %d", rc);
	so.optlen = 64;
	so.optname = RDMA_OPTION_ID_TOS;
	memcpy(opt, &so, sizeof(so));
	CHECK(cm_cmd(&fb, RDMA_USER_CM_CMD_SET_OPTION, opt, sizeof(opt), NULL, 0) == -EFAULT,
	      "value missing");

	/* listen on an idle id binds the IPv4 wildcard, an ephemeral port */
	uint32_t l;
	REQUIRE(cm_create(&fa, 6, RDMA_PS_TCP, &l) == 0, "id 6");
	REQUIRE(cm_listen(&fa, l, 0) == 0, "listen idle");
	uint16_t lp = cm_port(&fa, l);
	CHECK(lp >= 32768, "listen port %u", lp);
	/* and a request to 127.0.0.1 finds the wildcard listener */
	uint32_t c;
	REQUIRE(cm_create(&fb, 7, RDMA_PS_TCP, &c) == 0, "id 7");
	cm_resolve_all(&fb, c, 7, "127.0.0.1", lp);
	REQUIRE(cm_connect(&fb, c, 5, "w") == 0, "connect");
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	CHECK(e.uid == 6, "wildcard listener uid %llu", (unsigned long long)e.uid);

	/* an address nobody answers for: ADDR_ERROR with ETIMEDOUT */
	uint32_t u;
	REQUIRE(cm_create(&fb, 8, RDMA_PS_TCP, &u) == 0, "id 8");
	REQUIRE(cm_resolve(&fb, u, "10.77.0.1", 7000, 100) == 0, "resolve unreachable");
	EXPECT(&fb, EV_ADDR_ERROR, &e);
	CHECK((int)e.status == -ETIMEDOUT && e.uid == 8, "addr error %d", (int)e.status);
	CHECK(cm_route(&fb, u) == -EINVAL, "route after an address error");
	/* it may try again (back to ADDR_BOUND) */
	cm_resolve_all(&fb, u, 8, "127.0.0.1", lp);
	/* IPv6 loopback resolves too */
	uint32_t v6;
	REQUIRE(cm_create(&fb, 9, RDMA_PS_TCP, &v6) == 0, "id 9");
	cm_resolve_all(&fb, v6, 9, "::1", 5000);

	close(fa.ev);
	close(fb.ev);
	t_client_close(&a);
	t_client_close(&b);
	return finish();
}

static int case_events(void)
{
	struct t_client a, b;
	struct cmf fa, fa2, fb;
	struct rdma_ucm_event_resp e;
	uint32_t id, rep, l, c;
	int rc;

	start(&a, &b);
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&a, &fa2) == 0 && cm_open(&b, &fb) == 0, "files");

	/* destroy with an event queued: not reported, its byte is stale */
	REQUIRE(cm_create(&fa, 1, RDMA_PS_TCP, &id) == 0, "create");
	REQUIRE(cm_resolve(&fa, id, "127.0.0.1", 5000, 1000) == 0, "resolve");
	struct pollfd p = { .fd = fa.ev, .events = POLLIN };
	REQUIRE(poll(&p, 1, 10000) == 1, "event byte");
	REQUIRE(cm_destroy(&fa, id, &rep) == 0 && rep == 0, "destroy: reported %u", rep);
	CHECK(cm_event(&fa, &e, 200) == -ETIMEDOUT, "event of a destroyed id");

	/* one event delivered, then destroy: 1 reported */
	REQUIRE(cm_create(&fa, 2, RDMA_PS_TCP, &id) == 0, "create");
	REQUIRE(cm_resolve(&fa, id, "127.0.0.1", 5000, 1000) == 0, "resolve");
	EXPECT(&fa, EV_ADDR_RESOLVED, &e);
	REQUIRE(cm_route(&fa, id) == 0, "route");
	REQUIRE(cm_destroy(&fa, id, &rep) == 0, "destroy");
	CHECK(rep == 1, "reported %u", rep);

	/* MIGRATE_ID: an id with a queued event moves to file 2 */
	REQUIRE(cm_create(&fa, 3, RDMA_PS_TCP, &id) == 0, "create");
	REQUIRE(cm_resolve(&fa, id, "127.0.0.1", 5000, 1000) == 0, "resolve");
	struct rdma_ucm_migrate_id mq = { .id = id, .fd = fa.h };
	struct rdma_ucm_migrate_resp mr;
	REQUIRE(cm_cmd(&fa2, RDMA_USER_CM_CMD_MIGRATE_ID, &mq, sizeof(mq), &mr, sizeof(mr)) == 0,
		"migrate");
	CHECK(mr.events_reported == 0, "migrate reported %u", mr.events_reported);
	CHECK(cm_event(&fa, &e, 200) == -ETIMEDOUT, "event left on the old file");
	EXPECT(&fa2, EV_ADDR_RESOLVED, &e);
	CHECK(e.id == id && e.uid == 3, "migrated event");
	CHECK(cm_destroy(&fa, id, NULL) == -EINVAL, "destroy through the old file");
	mq.fd = 9999;
	CHECK(cm_cmd(&fa2, RDMA_USER_CM_CMD_MIGRATE_ID, &mq, sizeof(mq), &mr, sizeof(mr)) == -ENOENT,
	      "migrate from an unknown file");
	mq.fd = fb.h; /* another client's file */
	CHECK(cm_cmd(&fa2, RDMA_USER_CM_CMD_MIGRATE_ID, &mq, sizeof(mq), &mr, sizeof(mr)) == -ENOENT,
	      "migrate from another client's file");
	REQUIRE(cm_destroy(&fa2, id, &rep) == 0 && rep == 1, "destroy migrated: %u", rep);

	/* a listener destroyed with a request pending: the active side is
	 * rejected; backlog 1 rejects the second request */
	REQUIRE(cm_create(&fa, 4, RDMA_PS_TCP, &l) == 0, "listener");
	REQUIRE(cm_bind(&fa, l, "127.0.0.1", 47000) == 0 && cm_listen(&fa, l, 1) == 0, "listen");
	REQUIRE(cm_create(&fb, 5, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fb, c, 5, "127.0.0.1", 47000);
	REQUIRE(cm_connect(&fb, c, 1, "") == 0, "connect");
	uint32_t c2;
	REQUIRE(cm_create(&fb, 6, RDMA_PS_TCP, &c2) == 0, "create");
	cm_resolve_all(&fb, c2, 6, "127.0.0.1", 47000);
	REQUIRE(cm_connect(&fb, c2, 2, "") == 0, "connect 2");
	EXPECT(&fb, EV_REJECTED, &e);
	CHECK(e.id == c2 && e.status == 28, "backlog reject id %u status %d", e.id, (int)e.status);
	REQUIRE(cm_destroy(&fa, l, &rep) == 0 && rep == 0, "destroy listener");
	EXPECT(&fb, EV_REJECTED, &e);
	CHECK(e.id == c && e.status == 28, "pending request reject id %u status %d", e.id,
	      (int)e.status);

	/* the active side goes away: a request not accepted yet hears
	 * nothing (no context set: the kernel drops its events) and cannot
	 * be accepted; an accepted one is rejected under its new uid */
	REQUIRE(cm_create(&fa, 9, RDMA_PS_TCP, &l) == 0, "listener");
	REQUIRE(cm_bind(&fa, l, "127.0.0.1", 47002) == 0 && cm_listen(&fa, l, 4) == 0, "listen");
	REQUIRE(cm_create(&fb, 10, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fb, c, 10, "127.0.0.1", 47002);
	REQUIRE(cm_connect(&fb, c, 1, "") == 0, "connect");
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	uint32_t n1 = e.id;
	REQUIRE(cm_destroy(&fb, c, NULL) == 0, "active destroyed");
	CHECK(cm_accept(&fa, n1, 0x99, 3, "late") == -EINVAL, "accept after the REJ");
	REQUIRE(cm_create(&fb, 11, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fb, c, 11, "127.0.0.1", 47002);
	REQUIRE(cm_connect(&fb, c, 1, "") == 0, "connect");
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	uint32_t n2 = e.id;
	REQUIRE(cm_accept(&fa, n2, 0x98, 4, "") == 0, "accept");
	REQUIRE(cm_destroy(&fb, c, NULL) == 0, "active destroyed after the REP");
	EXPECT(&fa, EV_REJECTED, &e);
	CHECK(e.id == n2 && e.uid == 0x98 && e.status == 28, "rejected id %u uid %llx status %d",
	      e.id, (unsigned long long)e.uid, (int)e.status);
	/* (a stale byte of the request removed above may still be there) */
	rc = cm_event(&fa, &e, 200);
	CHECK(rc == -ETIMEDOUT, "an event for the unaccepted request: rc %d event %u id %u", rc,
	      e.event, e.id);
	REQUIRE(cm_destroy(&fa, n1, &rep) == 0 && rep == 0, "destroy n1: %u", rep);

	/* UCMA_CLOSE: everything of the file goes; the handle is dead */
	REQUIRE(cm_create(&fa2, 7, RDMA_PS_TCP, &id) == 0, "create");
	REQUIRE(cm_bind(&fa2, id, "127.0.0.1", 47001) == 0, "bind");
	struct uroce_handle_msg hm = { .handle = fa2.h };
	REQUIRE(t_call(&a, UROCE_OP_UCMA_CLOSE, &hm, sizeof(hm), NULL, 0, NULL, 0, NULL, NULL) == 0,
		"close");
	CHECK(t_call(&a, UROCE_OP_UCMA_CLOSE, &hm, sizeof(hm), NULL, 0, NULL, 0, NULL, NULL) == -EBADF,
	      "close twice");
	CHECK(cm_destroy(&fa2, id, NULL) == -EBADF, "command on a closed file");
	uint32_t again;
	REQUIRE(cm_create(&fb, 8, RDMA_PS_TCP, &again) == 0, "create");
	CHECK(cm_bind(&fb, again, "127.0.0.1", 47001) == 0, "port of a closed file still taken");
	char x;
	CHECK(read(fa2.ev, &x, 1) == 0, "closed file's pipe: no EOF");

	close(fa.ev);
	close(fa2.ev);
	close(fb.ev);
	t_client_close(&a);
	t_client_close(&b);
	return finish();
}

static int case_ud(void)
{
	struct t_client a, b;
	struct cmf fa, fb;
	struct rdma_ucm_event_resp e;
	struct ib_uverbs_qp_attr qa;
	uint32_t l, c;

	start(&a, &b);
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&b, &fb) == 0, "files");
	REQUIRE(cm_create(&fa, 0x10, RDMA_PS_UDP, &l) == 0, "create");
	REQUIRE(cm_bind(&fa, l, "127.0.0.1", 48000) == 0 && cm_listen(&fa, l, 8) == 0, "listen");
	REQUIRE(cm_create(&fb, 0x20, RDMA_PS_UDP, &c) == 0, "create");
	cm_resolve_all(&fb, c, 0x20, "127.0.0.1", 48000);
	REQUIRE(cm_qp_attr(&fb, c, IBV_QPS_INIT, &qa) == 0, "ud init");
	CHECK(qa.qp_attr_mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) &&
	      qa.qkey == 0x01234567, "ud init mask %x qkey %x", qa.qp_attr_mask, qa.qkey);
	REQUIRE(cm_connect(&fb, c, 0x77, "sidr") == 0, "sidr req");
	EXPECT(&fa, EV_CONNECT_REQUEST, &e);
	CHECK(e.param.ud.private_data_len == 180 && !memcmp(e.param.ud.private_data, "sidr", 4),
	      "sidr req pdata %u", e.param.ud.private_data_len);
	struct rdma_ucm_accept q = { .id = e.id, .uid = 0x11 };
	q.conn_param.valid = 1;
	q.conn_param.qp_num = 0x789;
	q.conn_param.private_data_len = 3;
	memcpy(q.conn_param.private_data, "rep", 3);
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_ACCEPT, &q, sizeof(q), NULL, 0) == 0, "sidr rep");
	EXPECT(&fb, EV_ESTABLISHED, &e);
	static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
	CHECK(e.param.ud.qp_num == 0x789 && e.param.ud.qkey == 0x01234567 &&
	      e.param.ud.ah_attr.is_global && !memcmp(e.param.ud.ah_attr.grh.dgid, lo, 16) &&
	      e.param.ud.private_data_len == 136 && !memcmp(e.param.ud.private_data, "rep", 3),
	      "ud established qpn %x qkey %x", e.param.ud.qp_num, e.param.ud.qkey);

	/* nobody on that port: UNREACHABLE */
	uint32_t c2;
	REQUIRE(cm_create(&fb, 0x21, RDMA_PS_UDP, &c2) == 0, "create");
	cm_resolve_all(&fb, c2, 0x21, "127.0.0.1", 48001);
	REQUIRE(cm_connect(&fb, c2, 0x78, "") == 0, "sidr req");
	EXPECT(&fb, EV_UNREACHABLE, &e);
	CHECK(e.status == 1, "unreachable status %d", (int)e.status);

	/* multicast: MGID from the IP (IPv4-mapped, RoCEv2), QKey, handle */
	uint32_t m;
	REQUIRE(cm_create(&fb, 0x30, RDMA_PS_UDP, &m) == 0, "create");
	REQUIRE(cm_bind(&fb, m, "127.0.0.1", 0) == 0, "bind");
	struct rdma_ucm_join_ip_mcast jq = { .id = m, .uid = 0x31 };
	sin_set(&jq.addr, "224.1.2.3", 0);
	struct rdma_ucm_create_id_resp jr;
	REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == 0,
		"join");
	EXPECT(&fb, EV_MULTICAST_JOIN, &e);
	static const uint8_t mg[16] = { [10] = 0xff, [11] = 0xff, 224, 1, 2, 3 };
	CHECK(e.uid == 0x31 && e.id == jr.id && !memcmp(e.param.ud.ah_attr.grh.dgid, mg, 16) &&
	      e.param.ud.qkey == 0x01234567 && e.param.ud.qp_num == 0xffffff, "join event");
	sin_set(&jq.addr, "10.1.1.1", 0);
	CHECK(cm_cmd(&fb, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == -EINVAL,
	      "join a unicast address");
	struct rdma_ucm_destroy_id lq = { .id = e.id };
	struct rdma_ucm_destroy_id_resp lr;
	REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_LEAVE_MCAST, &lq, sizeof(lq), &lr, sizeof(lr)) == 0 &&
		lr.events_reported == 1, "leave");
	CHECK(cm_cmd(&fb, RDMA_USER_CM_CMD_LEAVE_MCAST, &lq, sizeof(lq), &lr, sizeof(lr)) == -ENOENT,
	      "leave twice");
	/* joins are bounded per client (1024), whatever the groups */
	int joined = 0, rc = 0;
	for (; joined < 2000; joined++) {
		char ip[32];
		snprintf(ip, sizeof(ip), "239.0.%d.%d", joined / 250, joined % 250 + 1);
		sin_set(&jq.addr, ip, 0);
		rc = cm_cmd(&fb, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr));
		if (rc)
			break;
	}
	CHECK(rc == -ENOMEM && joined == 1024, "joins: %d after %d", rc, joined);
	lq.id = jr.id; /* the last one joined */
	REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_LEAVE_MCAST, &lq, sizeof(lq), &lr, sizeof(lr)) == 0,
		"leave one");
	CHECK(cm_cmd(&fb, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == 0,
	      "a join after a leave");

	close(fa.ev);
	close(fb.ev);
	t_client_close(&a);
	t_client_close(&b);
	return finish();
}

/* descriptors the daemon holds */
static int daemon_fds(void)
{
	char path[64];
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)g_d.pid);
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	for (struct dirent *de; (de = readdir(dir));)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

static int case_hostile(uint64_t seed)
{
	struct t_client a, b;
	struct cmf fa, fb;
	struct rdma_ucm_event_resp e;
	uint32_t id, bid;
	size_t got;
	int rc;

	start(&a, &b);
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&b, &fb) == 0, "files");
	REQUIRE(cm_create(&fb, 0xBB, RDMA_PS_TCP, &bid) == 0, "victim id");
	REQUIRE(cm_bind(&fb, bid, "127.0.0.1", 49000) == 0 && cm_listen(&fb, bid, 16) == 0, "listen");
	int fds0 = daemon_fds();
	uint32_t held;
	REQUIRE(cm_create(&fa, 0xA0, RDMA_PS_TCP, &held) == 0 &&
		cm_bind(&fa, held, "127.0.0.1", 49500) == 0, "a holds a port");

	/* b's file and id through a's connection */
	struct cmf bad = { .c = &a, .h = fb.h };
	CHECK(cm_destroy(&bad, bid, NULL) == -EBADF, "another client's file");
	CHECK(cm_destroy(&fa, bid, NULL) == -EINVAL, "another client's id");
	CHECK(cm_destroy(&fa, 123456, NULL) == -ENOENT, "unknown id");
	struct uroce_handle_msg hm = { .handle = fb.h };
	CHECK(t_call(&a, UROCE_OP_UCMA_CLOSE, &hm, sizeof(hm), NULL, 0, NULL, 0, NULL, NULL) == -EBADF,
	      "close another client's file");
	/* short, long, unknown */
	struct rdma_ucm_create_id cq = { .uid = 1, .ps = RDMA_PS_TCP };
	struct rdma_ucm_create_id_resp cr;
	rc = cm_cmd_raw(&a, fa.h, RDMA_USER_CM_CMD_CREATE_ID, &cq, 4, sizeof(cr), &cr, &got);
	CHECK(rc == -EINVAL, "short command: %d", rc);
	rc = cm_cmd_raw(&a, fa.h, RDMA_USER_CM_CMD_CREATE_ID, &cq, sizeof(cq), 2, &cr, &got);
	CHECK(rc == -ENOSPC, "short response room: %d", rc);
	rc = cm_cmd_raw(&a, fa.h, 99, &cq, sizeof(cq), sizeof(cr), &cr, &got);
	CHECK(rc == -ENOSYS, "unknown command: %d", rc);
	rc = cm_cmd_raw(&a, fa.h, RDMA_USER_CM_CMD_GET_OPTION, &cq, sizeof(cq), 0, NULL, &got);
	CHECK(rc == -ENOSYS, "get option: %d", rc);
	cq.ps = 0x999;
	CHECK(cm_cmd(&fa, RDMA_USER_CM_CMD_CREATE_ID, &cq, sizeof(cq), &cr, sizeof(cr)) == -EINVAL,
	      "bad port space");
	/* a message whose in field lies about its length */
	{
		uint8_t buf[256];
		struct uroce_ucma_cmd_req q = { .file = fa.h, .cmd = 0, .out = 4, .in = 200 };
		struct uroce_msg_hdr h = { .op = UROCE_OP_UCMA_CMD,
					   .len = sizeof(h) + sizeof(q) + 24, .seq = ++a.seq };
		uint8_t rep[64];
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), &q, sizeof(q));
		int n = t_raw(a.fd, buf, h.len, NULL, 0, rep, sizeof(rep), NULL, NULL);
		struct uroce_msg_hdr r;
		memcpy(&r, rep, sizeof(r));
		CHECK(n == (int)sizeof(r) && r.status == -EINVAL, "lying in length: %d", r.status);
	}
	/* random garbage commands on a's own ids: errors or not, never a
	 * crash, and b keeps working */
	printf("seed %llu\n", (unsigned long long)seed);
	srandom((unsigned)seed);
	REQUIRE(cm_create(&fa, 0xAA, RDMA_PS_TCP, &id) == 0, "create");
	for (int i = 0; i < 3000; i++) {
		uint8_t in[600];
		for (size_t k = 0; k < sizeof(in); k++)
			in[k] = (uint8_t)random();
		uint32_t cmd = (uint32_t)random() % 24;
		if (cmd == RDMA_USER_CM_CMD_GET_EVENT || cmd == RDMA_USER_CM_CMD_DESTROY_ID)
			continue;
		/* aim at a's own id (offset of id differs per command) half the time */
		if (random() & 1)
			memcpy(in + (random() % 8) * 4, &id, 4);
		size_t inlen = (size_t)random() % sizeof(in);
		uint8_t out[UROCE_UCMA_MAX_OUT];
		cm_cmd_raw(&a, fa.h, cmd, in, inlen, (uint32_t)random() % 1100, out, &got);
		REQUIRE(got <= UROCE_UCMA_MAX_OUT, "reply %zu", got);
	}
	/* files: EMFILE past 64 per client; closing one makes room */
	struct cmf extra[64];
	int nx = 0;
	for (; nx < 64; nx++) {
		rc = cm_open(&a, &extra[nx]);
		if (rc)
			break;
	}
	CHECK(rc == -EMFILE && nx == 63, "files: %d after %d", rc, nx);
	if (nx > 0) {
		struct uroce_handle_msg ch = { .handle = extra[nx - 1].h };
		CHECK(t_call(&a, UROCE_OP_UCMA_CLOSE, &ch, sizeof(ch), NULL, 0, NULL, 0, NULL, NULL) == 0,
		      "close a file");
		close(extra[nx - 1].ev);
		CHECK(cm_open(&a, &extra[nx - 1]) == 0, "no room after a close");
	}
	for (int i = 0; i < nx; i++)
		close(extra[i].ev);
	/* thousands of ids: ENOMEM at the limit, nothing for b lost */
	unsigned made = 0;
	for (;;) {
		uint32_t x;
		rc = cm_create(&fa, 7, RDMA_PS_TCP, &x);
		if (rc)
			break;
		made++;
		REQUIRE(made < 100000, "no limit on ids");
	}
	CHECK(rc == -ENOMEM, "past the limit: %d after %u", rc, made);
	uint32_t c;
	REQUIRE(cm_create(&fb, 0xBC, RDMA_PS_TCP, &c) == 0, "b still creates ids");
	cm_resolve_all(&fb, c, 0xBC, "127.0.0.1", 49000);
	REQUIRE(cm_connect(&fb, c, 1, "b") == 0, "b connects");
	EXPECT(&fb, EV_CONNECT_REQUEST, &e);
	CHECK(e.uid == 0xBB, "b's listener");
	/* a goes away with thousands of ids: freed, b unaffected */
	close(fa.ev);
	t_client_close(&a);
	REQUIRE(t_client_open(&a, g_d.sock) == 0 && cm_open(&a, &fa) == 0, "a again");
	REQUIRE(cm_create(&fa, 1, RDMA_PS_TCP, &id) == 0, "create");
	/* the old client's ids are gone (their port is free), and so are its
	 * files' pipes: the daemon holds what it held with one file for a */
	rc = -1;
	for (uint64_t end = t_now_ms() + 10000; t_now_ms() < end; usleep(10000))
		if ((rc = cm_bind(&fa, id, "127.0.0.1", 49500)) != -EADDRINUSE)
			break;
	CHECK(rc == 0, "port of a client gone: %d", rc);
	int fds1 = daemon_fds();
	for (uint64_t end = t_now_ms() + 10000; fds1 != fds0 && t_now_ms() < end; usleep(10000))
		fds1 = daemon_fds();
	CHECK(fds0 > 0 && fds1 == fds0, "daemon descriptors %d, were %d", fds1, fds0);
	REQUIRE(cm_accept(&fb, e.id, 0xBD, 5, "") == 0, "b accepts");
	EXPECT(&fb, EV_CONNECT_RESPONSE, &e);

	close(fa.ev);
	close(fb.ev);
	t_client_close(&a);
	t_client_close(&b);
	return finish();
}

/* two devices wired back to back: addresses beyond the device resolve
 * through the neighbour table (ARP on the link), or time out */
static int case_link(void)
{
	static const char *const opts[] = {
		"--dev", "uroce0,port=link:wire,ip=10.0.0.1",
		"--dev", "uroce1,port=link:wire,ip=10.0.0.2", NULL,
	};
	struct t_client a;
	struct cmf fa;
	struct rdma_ucm_event_resp e;
	struct rdma_ucm_query_route_resp qr;
	uint32_t id, far, other;

	REQUIRE(t_daemon_start(&g_d, g_daemon, false, opts) == 0, "start");
	REQUIRE(t_client_open(&a, g_d.sock) == 0, "client");
	REQUIRE(cm_open(&a, &fa) == 0, "file");
	REQUIRE(cm_create(&fa, 1, RDMA_PS_TCP, &other) == 0, "create");
	CHECK(cm_bind(&fa, other, "10.0.0.2", 0) == -EADDRNOTAVAIL, "the other device's address");
	CHECK(cm_bind(&fa, other, "127.0.0.1", 0) == -EADDRNOTAVAIL, "127.0.0.1 on a link port");
	REQUIRE(cm_create(&fa, 2, RDMA_PS_TCP, &id) == 0, "create");
	cm_resolve_all(&fa, id, 2, "10.0.0.2", 6000);
	REQUIRE(cm_query_route(&fa, id, &qr) == 0, "query");
	static const uint8_t s1[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const uint8_t d2[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
	struct sockaddr_in *src = (struct sockaddr_in *)&qr.src_addr;
	CHECK(src->sin_family == AF_INET && src->sin_addr.s_addr == htonl(0x0a000001) &&
	      ntohs(src->sin_port) >= 32768, "source 10.0.0.1:ephemeral");
	CHECK(qr.num_paths == 1 && !memcmp(qr.ib_route[0].sgid, s1, 16) &&
	      !memcmp(qr.ib_route[0].dgid, d2, 16), "path gids");
	CHECK(qr.ib_route[0].mtu == a.hello.port_attr.active_mtu, "path mtu");
	REQUIRE(cm_create(&fa, 3, RDMA_PS_TCP, &far) == 0, "create");
	REQUIRE(cm_resolve(&fa, far, "10.0.0.3", 6000, 300) == 0, "resolve");
	EXPECT(&fa, EV_ADDR_ERROR, &e);
	CHECK((int)e.status == -ETIMEDOUT, "no neighbour: %d", (int)e.status);

	close(fa.ev);
	t_client_close(&a);
	return finish();
}

/* One RC connection from file fa to the listener (uid 0xB0) of file fb at
 * ip:port, up and down through the IB CM engine, with what each side
 * sees: request and response fields, the new id's addresses from the
 * cma_hdr, the QP attributes (PSNs, QPNs, path GIDs ga of the active and
 * gb of the passive side), RTU, DREQ/DREP, both TIMEWAIT_EXITs. */
static void rc_cycle(struct cmf *fa, struct cmf *fb, const char *ip, uint16_t port,
		     const uint8_t ga[16], const uint8_t gb[16])
{
	struct rdma_ucm_event_resp e;
	struct ib_uverbs_qp_attr qa, qb, sa, sb;
	uint32_t c, n, rep;

	REQUIRE(cm_create(fa, 0xA0, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(fa, c, 0xA0, ip, port);
	REQUIRE(cm_connect(fa, c, 0x321, "over the wire") == 0, "connect");
	EXPECT(fb, EV_CONNECT_REQUEST, &e);
	n = e.id;
	CHECK(e.uid == 0xB0 && e.param.conn.qp_num == 0x321 && e.param.conn.private_data_len == 56 &&
	      !memcmp(e.param.conn.private_data, "over the wire", 13) &&
	      e.param.conn.responder_resources == 2 && e.param.conn.initiator_depth == 4 &&
	      e.param.conn.retry_count == 5 && e.param.conn.rnr_retry_count == 6,
	      "request qpn %x len %u rd %u/%u", e.param.conn.qp_num, e.param.conn.private_data_len,
	      e.param.conn.responder_resources, e.param.conn.initiator_depth);
	struct rdma_ucm_query_route_resp qr;
	REQUIRE(cm_query_route(fb, n, &qr) == 0, "query");
	struct sockaddr_in *qs = (struct sockaddr_in *)&qr.src_addr, *qd = (struct sockaddr_in *)&qr.dst_addr;
	CHECK(!memcmp(&qs->sin_addr, gb + 12, 4) && ntohs(qs->sin_port) == port &&
	      !memcmp(&qd->sin_addr, ga + 12, 4) && ntohs(qd->sin_port) == cm_port(fa, c),
	      "new id addresses from the cma_hdr");
	REQUIRE(cm_accept(fb, n, 0xB1, 0x654, "welcome") == 0, "accept");
	EXPECT(fa, EV_CONNECT_RESPONSE, &e);
	CHECK(e.param.conn.qp_num == 0x654 && e.param.conn.private_data_len == 196 &&
	      !memcmp(e.param.conn.private_data, "welcome", 7) &&
	      e.param.conn.responder_resources == 4 && e.param.conn.initiator_depth == 2,
	      "response qpn %x rd %u/%u", e.param.conn.qp_num, e.param.conn.responder_resources,
	      e.param.conn.initiator_depth);
	REQUIRE(cm_qp_attr(fb, n, IBV_QPS_RTR, &qb) == 0 && cm_qp_attr(fa, c, IBV_QPS_RTR, &qa) == 0 &&
		cm_qp_attr(fb, n, IBV_QPS_RTS, &sb) == 0 && cm_qp_attr(fa, c, IBV_QPS_RTS, &sa) == 0,
		"attrs");
	CHECK(qa.dest_qp_num == 0x654 && qb.dest_qp_num == 0x321, "dest qpn %x %x", qa.dest_qp_num,
	      qb.dest_qp_num);
	CHECK(qa.rq_psn == sb.sq_psn && qb.rq_psn == sa.sq_psn && qa.rq_psn != qb.rq_psn, "psn");
	CHECK(!memcmp(qa.ah_attr.grh.dgid, gb, 16) && !memcmp(qb.ah_attr.grh.dgid, ga, 16),
	      "path gids");
	CHECK(qa.max_dest_rd_atomic == 4 && qb.max_dest_rd_atomic == 2 && sa.max_rd_atomic == 2 &&
	      sb.max_rd_atomic == 4, "rd atomic");
	CHECK(sa.rnr_retry == 7 && sb.rnr_retry == 6 && sa.retry_cnt == 5 && sb.retry_cnt == 5,
	      "retries");
	REQUIRE(cm_accept(fa, c, 0, 0, NULL) == 0, "rtu");
	EXPECT(fb, EV_ESTABLISHED, &e);
	CHECK(e.uid == 0xB1 && e.id == n, "established");
	REQUIRE(cm_disconnect(fa, c) == 0, "dreq");
	EXPECT(fb, EV_DISCONNECTED, &e);
	REQUIRE(cm_disconnect(fb, n) == 0, "drep");
	EXPECT(fa, EV_DISCONNECTED, &e);
	CHECK(e.status == 0, "disconnected status %d", (int)e.status);
	EXPECT(fa, EV_TIMEWAIT_EXIT, &e);
	EXPECT(fb, EV_TIMEWAIT_EXIT, &e);
	REQUIRE(cm_destroy(fa, c, &rep) == 0 && rep == 5, "destroy: %u", rep);
	REQUIRE(cm_destroy(fb, n, &rep) == 0 && rep == 3, "destroy conn: %u", rep);
}

/* A UD id of fa reaches the UD listener it creates on fb at ip:6000
 * (GID gb) through SIDR_REQ / SIDR_REP: the request's and the answer's
 * fields. Returns the active id. */
static uint32_t sidr_cycle(struct cmf *fa, struct cmf *fb, const char *ip, const uint8_t gb[16])
{
	struct rdma_ucm_event_resp e;

	uint32_t ul, uc;
	REQUIRE(cm_create(fb, 0xB5, RDMA_PS_UDP, &ul) == 0, "ud listener");
	REQUIRE(cm_bind(fb, ul, ip, 6000) == 0 && cm_listen(fb, ul, 8) == 0, "ud listen");
	REQUIRE(cm_create(fa, 0xA5, RDMA_PS_UDP, &uc) == 0, "ud create");
	cm_resolve_all(fa, uc, 0xA5, ip, 6000);
	REQUIRE(cm_connect(fa, uc, 0x55, "sidr") == 0, "sidr req");
	EXPECT(fb, EV_CONNECT_REQUEST, &e);
	CHECK(e.uid == 0xB5 && e.param.ud.private_data_len == 180 &&
	      !memcmp(e.param.ud.private_data, "sidr", 4), "sidr request len %u",
	      e.param.ud.private_data_len);
	struct rdma_ucm_accept uq = { .id = e.id, .uid = 0xB6 };
	uq.conn_param.valid = 1;
	uq.conn_param.qp_num = 0x99;
	uq.conn_param.private_data_len = 2;
	memcpy(uq.conn_param.private_data, "ok", 2);
	REQUIRE(cm_cmd(fb, RDMA_USER_CM_CMD_ACCEPT, &uq, sizeof(uq), NULL, 0) == 0, "sidr rep");
	EXPECT(fa, EV_ESTABLISHED, &e);
	CHECK(e.param.ud.qp_num == 0x99 && e.param.ud.qkey == 0x01234567 &&
	      !memcmp(e.param.ud.ah_attr.grh.dgid, gb, 16) && e.param.ud.private_data_len == 136 &&
	      !memcmp(e.param.ud.private_data, "ok", 2), "ud established qpn %x qkey %x",
	      e.param.ud.qp_num, e.param.ud.qkey);
	return uc;
}

/* two devices back to back, a client on each: the exchange goes over the
 * wire (IB CM MADs on QP1 through the engine), with the same events and
 * QP attributes as inside one device */
static int case_wire(void)
{
	static const char *const opts[] = {
		"--dev", "uroce0,port=link:wire,ip=10.0.0.1",
		"--dev", "uroce1,port=link:wire,ip=10.0.0.2", NULL,
	};
	struct t_client a, b;
	struct cmf fa, fb;
	struct rdma_ucm_event_resp e;
	uint32_t l, c, n;
	char sock1[420];

	REQUIRE(t_daemon_start(&g_d, g_daemon, false, opts) == 0, "start");
	snprintf(sock1, sizeof(sock1), "%s/uroce1.sock", g_d.run);
	for (uint64_t end = t_now_ms() + 30000; access(sock1, F_OK) && t_now_ms() < end;)
		usleep(10000);
	REQUIRE(t_client_open(&a, g_d.sock) == 0 && t_client_open(&b, sock1) == 0, "clients");
	REQUIRE(cm_open(&a, &fa) == 0 && cm_open(&b, &fb) == 0, "files");
	REQUIRE(cm_create(&fb, 0xB0, RDMA_PS_TCP, &l) == 0, "listener");
	REQUIRE(cm_bind(&fb, l, "10.0.0.2", 5000) == 0 && cm_listen(&fb, l, 8) == 0, "listen");
	static const uint8_t g1[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const uint8_t g2[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
	rc_cycle(&fa, &fb, "10.0.0.2", 5000, g1, g2);

	/* nobody listens on that port over there: the peer's engine rejects */
	REQUIRE(cm_create(&fa, 0xA1, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fa, c, 0xA1, "10.0.0.2", 5001);
	REQUIRE(cm_connect(&fa, c, 1, "") == 0, "connect");
	EXPECT(&fa, EV_REJECTED, &e);
	CHECK(e.status == 8, "reject status %d", (int)e.status);
	REQUIRE(cm_destroy(&fa, c, NULL) == 0, "destroy");
	/* a consumer reject with private data */
	REQUIRE(cm_create(&fa, 0xA2, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fa, c, 0xA2, "10.0.0.2", 5000);
	REQUIRE(cm_connect(&fa, c, 1, "") == 0, "connect");
	EXPECT(&fb, EV_CONNECT_REQUEST, &e);
	struct rdma_ucm_reject rj = { .id = e.id, .private_data_len = 3 };
	memcpy(rj.private_data, "no!", 3);
	REQUIRE(cm_cmd(&fb, RDMA_USER_CM_CMD_REJECT, &rj, sizeof(rj), NULL, 0) == 0, "reject");
	EXPECT(&fa, EV_REJECTED, &e);
	CHECK(e.status == 28 && !memcmp(e.param.conn.private_data, "no!", 3), "consumer reject %d",
	      (int)e.status);
	REQUIRE(cm_destroy(&fa, c, NULL) == 0, "destroy");
	/* the passive side destroys a request: the engine rejects it */
	REQUIRE(cm_create(&fa, 0xA4, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fa, c, 0xA4, "10.0.0.2", 5000);
	REQUIRE(cm_connect(&fa, c, 1, "") == 0, "connect");
	EXPECT(&fb, EV_CONNECT_REQUEST, &e);
	REQUIRE(cm_destroy(&fb, e.id, NULL) == 0, "destroy the request");
	EXPECT(&fa, EV_REJECTED, &e);
	CHECK(e.status == 28, "destroyed request: status %d", (int)e.status);
	REQUIRE(cm_destroy(&fa, c, NULL) == 0, "destroy");

	/* UD: SIDR_REQ / SIDR_REP over the wire */
	uint32_t uc = sidr_cycle(&fa, &fb, "10.0.0.2", g2);
	REQUIRE(cm_destroy(&fa, uc, NULL) == 0, "destroy");
	REQUIRE(cm_create(&fa, 0xA6, RDMA_PS_UDP, &uc) == 0, "ud create");
	cm_resolve_all(&fa, uc, 0xA6, "10.0.0.2", 6001);
	REQUIRE(cm_connect(&fa, uc, 0x56, "") == 0, "sidr req to nobody");
	EXPECT(&fa, EV_UNREACHABLE, &e);
	CHECK(e.status == 1, "sidr to nobody: status %d", (int)e.status);

	/* a client that dies while connected: its engine sends the DREQ */
	REQUIRE(cm_create(&fa, 0xA3, RDMA_PS_TCP, &c) == 0, "create");
	cm_resolve_all(&fa, c, 0xA3, "10.0.0.2", 5000);
	REQUIRE(cm_connect(&fa, c, 1, "") == 0, "connect");
	EXPECT(&fb, EV_CONNECT_REQUEST, &e);
	n = e.id;
	REQUIRE(cm_accept(&fb, n, 0xB2, 2, "") == 0, "accept");
	EXPECT(&fa, EV_CONNECT_RESPONSE, &e);
	REQUIRE(cm_accept(&fa, c, 0, 0, NULL) == 0, "rtu");
	EXPECT(&fb, EV_ESTABLISHED, &e);
	close(fa.ev);
	t_client_close(&a);
	EXPECT(&fb, EV_DISCONNECTED, &e);
	CHECK(e.id == n && e.uid == 0xB2, "disconnected by a client gone");

	t_client_close(&b);
	return finish();
}

/* On a port that does not bring frames back (a link ring here, as a NIC
 * or af_packet), a connection between two ids of one device goes through
 * the IB CM engine like any other: its MADs, addressed to the device's
 * own MAC, come back through the port's receive path (the self loop,
 * docs/cm.md), never reach the other end of the link, and the exchange is
 * the one every other peer gets: REQ, REP, RTU, DREQ, DREP, TIMEWAIT, and
 * SIDR for UD ids. */
static int case_self(void)
{
	char cap0[300], cap1[300], dev0[400], dev1[400];
	struct t_client a;
	struct cmf fa;
	uint32_t l;

	REQUIRE(mkdtemp(strcpy(g_pcap, "/tmp/uroce-ucma-XXXXXX")) != NULL, "tmp");
	snprintf(cap0, sizeof(cap0), "%s/self0.pcap", g_pcap);
	snprintf(cap1, sizeof(cap1), "%s/self1.pcap", g_pcap);
	snprintf(dev0, sizeof(dev0), "uroce0,port=link:self,ip=10.0.0.1,pcap=%s", cap0);
	snprintf(dev1, sizeof(dev1), "uroce1,port=link:self,ip=10.0.0.2,pcap=%s", cap1);
	const char *opts[] = { "--dev", dev0, "--dev", dev1, NULL };
	REQUIRE(t_daemon_start(&g_d, g_daemon, false, opts) == 0, "start");
	strcat(g_pcap, "/none.pcap"); /* verdict() removes the directory */
	REQUIRE(t_client_open(&a, g_d.sock) == 0 && cm_open(&a, &fa) == 0, "client");
	REQUIRE(cm_create(&fa, 0xB0, RDMA_PS_TCP, &l) == 0, "self listener");
	REQUIRE(cm_bind(&fa, l, "10.0.0.1", 5003) == 0 && cm_listen(&fa, l, 2) == 0, "listen");
	static const uint8_t g1[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	rc_cycle(&fa, &fa, "10.0.0.1", 5003, g1, g1);

	/* UD: SIDR_REQ / SIDR_REP to ourselves */
	sidr_cycle(&fa, &fa, "10.0.0.1", g1);

	close(fa.ev);
	t_client_close(&a);
	int st = t_daemon_stop(&g_d);
	CHECK(st == 0, "daemon exit %d", st);
	/* REQ REP RTU DREQ DREP SIDR_REQ SIDR_REP, each sent and received */
	int n0 = pcap_gsi_frames(cap0, true), n1 = pcap_gsi_frames(cap1, false);
	CHECK(n0 >= 14, "%d MADs of uroce0 to its own MAC", n0);
	CHECK(n1 == 0, "%d MADs reached the other end of the link", n1);
	unlink(cap0);
	unlink(cap1);
	return verdict(); /* and the directory */
}

/* membership reports seen in a capture: "type group" strings, checksums
 * verified (IPv4 header, IGMP, ICMPv6 with its pseudo-header) */
static uint16_t csum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static int pcap_reports(const char *path, char out[][64], int max)
{
	FILE *fp = fopen(path, "rb");
	uint8_t gh[24], rh[16], f[2048];
	int n = 0;

	if (!fp || fread(gh, 1, 24, fp) != 24) {
		if (fp)
			fclose(fp);
		return -1;
	}
	while (n < max && fread(rh, 1, 16, fp) == 16) {
		uint32_t len;
		memcpy(&len, rh + 8, 4);
		if (len > sizeof(f) || fread(f, 1, len, fp) != len)
			break;
		char g[INET6_ADDRSTRLEN];
		if (len >= 46 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 2) {
			unsigned ihl = (f[14] & 15) * 4u;
			const uint8_t *ig = f + 14 + ihl;
			bool ok = csum16(f + 14, ihl, 0) == 0xffff && csum16(ig, 8, 0) == 0xffff &&
				  f[22] == 1 && ihl == 24 && f[34] == 0x94;
			inet_ntop(AF_INET, ig + 4, g, sizeof(g));
			snprintf(out[n++], 64, "%s%02x %s", ok ? "" : "BAD ", ig[0], g);
		} else if (len >= 86 && f[12] == 0x86 && f[13] == 0xdd && f[20] == 0 && f[54] == 58) {
			const uint8_t *m = f + 62;
			uint32_t sum = 24 + 58;
			for (int i = 0; i < 32; i += 2)
				sum += (uint32_t)f[22 + i] << 8 | f[23 + i];
			bool ok = csum16(m, 24, sum) == 0xffff && f[21] == 1 && f[56] == 5 &&
				  f[22] == 0xfe && f[23] == 0x80;
			inet_ntop(AF_INET6, m + 8, g, sizeof(g));
			snprintf(out[n++], 64, "%s%u %s", ok ? "" : "BAD ", m[0], g);
		}
	}
	fclose(fp);
	return n;
}

/* the port joins and leaves multicast groups as the netdev would: IGMPv2 /
 * MLDv1 reports with the first full member, leave/done with the last */
static int case_igmp(void)
{
	char pcap[400], rep[8][64];
	struct t_client a;
	struct cmf fa;
	struct rdma_ucm_event_resp e;
	uint32_t i1, i2, i3, i6;

	REQUIRE(mkdtemp(strcpy(pcap, "/tmp/uroce-ucma-XXXXXX")) != NULL, "tmp");
	strcat(pcap, "/cap.pcap");
	const char *opts[] = { "--pcap", pcap, NULL };
	REQUIRE(t_daemon_start(&g_d, g_daemon, false, opts) == 0, "start");
	REQUIRE(t_client_open(&a, g_d.sock) == 0 && cm_open(&a, &fa) == 0, "client");
	REQUIRE(cm_create(&fa, 1, RDMA_PS_UDP, &i1) == 0 && cm_create(&fa, 2, RDMA_PS_UDP, &i2) == 0 &&
		cm_create(&fa, 3, RDMA_PS_UDP, &i3) == 0 && cm_create(&fa, 4, RDMA_PS_UDP, &i6) == 0,
		"ids");
	REQUIRE(cm_bind(&fa, i1, "127.0.0.1", 0) == 0 && cm_bind(&fa, i2, "127.0.0.1", 0) == 0 &&
		cm_bind(&fa, i3, "127.0.0.1", 0) == 0 && cm_bind(&fa, i6, "::1", 0) == 0, "binds");
	struct rdma_ucm_join_ip_mcast jq = { .uid = 9 };
	struct rdma_ucm_create_id_resp jr;
	uint32_t m1;
	sin_set(&jq.addr, "224.5.6.7", 0);
	jq.id = i1;
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == 0, "j1");
	m1 = jr.id;
	jq.id = i2;
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == 0, "j2");
	/* a send-only join sends no report */
	struct rdma_ucm_join_mcast sq = { .uid = 9, .id = i3, .addr_size = sizeof(struct sockaddr_in),
					  .join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER };
	sin_set((struct sockaddr_in6 *)&sq.addr, "224.9.9.9", 0);
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_JOIN_MCAST, &sq, sizeof(sq), &jr, sizeof(jr)) == 0, "j3");
	jq.id = i6;
	sin_set(&jq.addr, "ff0e::1234", 0);
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jq, sizeof(jq), &jr, sizeof(jr)) == 0, "j6");
	for (int i = 0; i < 4; i++)
		EXPECT(&fa, EV_MULTICAST_JOIN, &e);
	struct rdma_ucm_destroy_id lq = { .id = m1 };
	struct rdma_ucm_destroy_id_resp lr;
	REQUIRE(cm_cmd(&fa, RDMA_USER_CM_CMD_LEAVE_MCAST, &lq, sizeof(lq), &lr, sizeof(lr)) == 0, "leave 1");
	REQUIRE(cm_destroy(&fa, i2, NULL) == 0, "destroy the last member");
	REQUIRE(cm_destroy(&fa, i6, NULL) == 0, "destroy the IPv6 member");
	close(fa.ev);
	t_client_close(&a);
	int st = t_daemon_stop(&g_d);
	CHECK(st == 0, "daemon exit %d", st);
	int n = pcap_reports(pcap, rep, 8);
	static const char *const want[] = { "16 224.5.6.7", "131 ff0e::1234", "17 224.5.6.7",
					    "132 ff0e::1234" };
	CHECK(n == 4, "%d reports", n);
	for (int i = 0; i < n && i < 4; i++)
		CHECK(!strcmp(rep[i], want[i]), "report %d: '%s', want '%s'", i, rep[i], want[i]);
	snprintf(g_pcap, sizeof(g_pcap), "%s", pcap);
	return verdict();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	g_daemon = argv[1];
	alarm(100);
	/* in the sanitizer build a UBSan report stops the daemon: its exit
	 * status fails the case */
	setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1", 0);
	const char *s = getenv("UROCE_TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
	if (!strcmp(argv[2], "conn"))
		return case_conn();
	if (!strcmp(argv[2], "bind"))
		return case_bind();
	if (!strcmp(argv[2], "events"))
		return case_events();
	if (!strcmp(argv[2], "ud"))
		return case_ud();
	if (!strcmp(argv[2], "hostile"))
		return case_hostile(seed);
	if (!strcmp(argv[2], "link"))
		return case_link();
	if (!strcmp(argv[2], "igmp"))
		return case_igmp();
	if (!strcmp(argv[2], "wire"))
		return case_wire();
	if (!strcmp(argv[2], "self"))
		return case_self();
	return 2;
}
