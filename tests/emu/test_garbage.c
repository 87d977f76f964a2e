/* SPDX-License-Identifier: MIT */
/* Robustness: random control messages (random ops, lengths, bodies, fds),
 * random bytes in a QP's rings and doorbell page with doorbells rung, and
 * random QP modifies never crash the daemon, and another client is still
 * served afterwards. Seeded, so a failure reproduces. */
#include "emu_test.h"

static uint64_t s = 0x1234567;

static uint64_t rnd(void)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static void fill(void *p, size_t n)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

static bool alive(struct t_daemon *d)
{
	int st;
	return waitpid(d->pid, &st, WNOHANG) == 0;
}

int main(int argc, char **argv)
{
	struct t_daemon d;
	struct t_client a, b;
	int rc;

	if (argc < 2)
		return 2;
	if (argc > 2)
		s = strtoull(argv[2], NULL, 0);
	alarm(100);
	REQUIRE(t_daemon_start(&d, argv[1], false, NULL) == 0, "start");

	/* 1. random control messages on a fresh connection each round of 200 */
	for (int round = 0; round < 10; round++) {
		struct t_client g = { 0 };
		g.fd = t_connect(d.sock);
		REQUIRE(g.fd >= 0, "connect: %d", g.fd);
		if (round & 1) { /* half the rounds after a valid HELLO */
			t_client_close(&g);
			REQUIRE(t_client_open(&g, d.sock) == 0, "hello");
		}
		for (int i = 0; i < 200; i++) {
			uint8_t msg[UROCE_MAX_MSG + 64], rep[UROCE_MAX_MSG];
			size_t len = rnd() % 2 ? rnd() % 200 : rnd() % sizeof(msg);
			fill(msg, len);
			if (len >= sizeof(struct uroce_msg_hdr) && rnd() % 4) {
				struct uroce_msg_hdr h = { .op = (uint32_t)(rnd() % (UROCE_OP_MAX + 2)),
							   .len = (uint32_t)len, .seq = (uint32_t)i };
				memcpy(msg, &h, sizeof(h));
			}
			int fds[2];
			unsigned nfds = 0;
			int p[2] = { -1, -1 };
			if (rnd() % 4 == 0 && pipe(p) == 0) {
				fds[0] = p[1];
				nfds = 1;
			}
			if (len == 0)
				len = 1;
			int n = t_raw(g.fd, msg, len, fds, nfds, rep, sizeof(rep), NULL, NULL);
			if (p[0] >= 0) {
				close(p[0]);
				close(p[1]);
			}
			if (n <= 0 && n != -EAGAIN)
				break; /* the daemon may hang up on us: fine */
		}
		t_client_close(&g);
		REQUIRE(alive(&d), "daemon died in control round %d", round);
		if (getenv("T_VERBOSE"))
			fprintf(stderr, "control round %d done\n", round);
	}

	/* 2. garbage in the shared rings and doorbells */
	REQUIRE(t_client_open(&a, d.sock) == 0, "client a");
	uint32_t pd;
	REQUIRE(t_pd(&a, &pd) == 0, "pd");
	struct uroce_create_cq_rep cq;
	int cqfd;
	REQUIRE(t_cq(&a, 8, &cq, &cqfd) == 0, "cq");
	uint8_t *cqm = mmap(NULL, cq.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, cqfd, 0);
	REQUIRE(cqm != MAP_FAILED, "cq map");
	struct uroce_create_qp_rep qp[3];
	uint8_t *qm[3];
	uint32_t types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	for (int k = 0; k < 3; k++) {
		int fd;
		REQUIRE(t_qp(&a, pd, cq.handle, cq.handle, types[k], &qp[k], &fd) == 0, "qp");
		qm[k] = mmap(NULL, qp[k].map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		REQUIRE(qm[k] != MAP_FAILED, "qp map");
		close(fd);
		/* try to bring it up to RTS so the transport really reads the rings */
		struct uroce_modify_qp_req mq = { .handle = qp[k].handle };
		mq.attr.qp_state = IBV_QPS_INIT;
		mq.attr.port_num = 1;
		mq.attr.qkey = 0x11111111;
		mq.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       (types[k] == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
		t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
		mq.attr.qp_state = IBV_QPS_RTR;
		mq.attr.path_mtu = IBV_MTU_1024;
		mq.attr.dest_qp_num = qp[k].qpn;
		mq.attr.ah_attr.is_global = 1;
		mq.attr.ah_attr.port_num = 1;
		mq.attr.ah_attr.grh.sgid_index = 1;
		mq.attr.ah_attr.grh.dgid = a.hello.gids[1];
		mq.attr.ah_attr.grh.hop_limit = 1;
		mq.attr.max_dest_rd_atomic = 1;
		mq.attr.min_rnr_timer = 1;
		mq.attr_mask = types[k] == IBV_QPT_UD ? IBV_QP_STATE :
			IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			(types[k] == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
		t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
		mq.attr.qp_state = IBV_QPS_RTS;
		mq.attr.timeout = 1;
		mq.attr.retry_cnt = 1;
		mq.attr.rnr_retry = 1;
		mq.attr.max_rd_atomic = 1;
		mq.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN |
			(types[k] == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC : 0);
		t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
	}
	for (int i = 0; i < 3000; i++) {
		int k = (int)(rnd() % 3);
		struct uroce_create_qp_rep *q = &qp[k];
		uint8_t *sq = qm[k] + q->sq_offset, *rq = qm[k] + q->rq_offset;
		switch (rnd() % 6) {
		case 0: /* random slot contents, valid-looking prod */
			fill(sq + UROCE_RING_HDR_SIZE + (rnd() % q->sq_entries) * q->sq_stride, q->sq_stride);
			__atomic_fetch_add((uint32_t *)sq, 1, __ATOMIC_RELEASE);
			break;
		case 1: /* random producer index */
			__atomic_store_n((uint32_t *)sq, (uint32_t)rnd(), __ATOMIC_RELEASE);
			break;
		case 2:
			fill(rq + UROCE_RING_HDR_SIZE + (rnd() % q->rq_entries) * q->rq_stride, q->rq_stride);
			__atomic_store_n((uint32_t *)rq, (uint32_t)rnd() % 64, __ATOMIC_RELEASE);
			break;
		case 3: /* ring headers scribbled (entries/stride copies are ours) */
			fill(sq + 128, 16);
			fill(rq + 128, 16);
			break;
		case 4: /* the CQ consumer index and arm word */
			__atomic_store_n((uint32_t *)(cqm + 64), (uint32_t)rnd(), __ATOMIC_RELEASE);
			__atomic_store_n((uint32_t *)(cqm + 136), (uint32_t)rnd(), __ATOMIC_RELEASE);
			break;
		case 5: /* random doorbell bits */
			a.db->bits[rnd() % (UROCE_DB_MAX / 64)] = rnd();
			a.db->summary[rnd() % (UROCE_DB_MAX / 4096)] = rnd();
			break;
		}
		t_ring(&a, q->db_index);
		if (i % 500 == 0)
			usleep(2000);
	}
	usleep(50000);
	REQUIRE(alive(&d), "daemon died on ring garbage");
	if (getenv("T_VERBOSE"))
		fprintf(stderr, "ring garbage done\n");

	/* random QP modifies */
	for (int i = 0; i < 300; i++) {
		struct uroce_modify_qp_req mq;
		fill(&mq, sizeof(mq));
		mq.handle = qp[rnd() % 3].handle;
		t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
		struct uroce_query_qp_req qq = { .handle = mq.handle, .attr_mask = (uint32_t)rnd() };
		struct uroce_query_qp_rep qr;
		t_call(&a, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL, NULL);
	}
	REQUIRE(alive(&d), "daemon died on random modify");

	/* another client is still served */
	REQUIRE(t_client_open(&b, d.sock) == 0, "client b");
	uint32_t pd2;
	CHECK(t_pd(&b, &pd2) == 0, "pd from b");
	struct uroce_create_cq_rep cq2;
	CHECK(t_cq(&b, 4, &cq2, NULL) == 0, "cq from b");
	t_client_close(&a);
	t_client_close(&b);
	rc = t_daemon_stop(&d);
	CHECK(rc == 0, "exit %d", rc);
	t_rmdir(&d);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
