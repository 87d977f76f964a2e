/* SPDX-License-Identifier: MIT */
/* crafted_peer HOST PORT DEV GIDX - the verbs side of the crafted-frame
 * interop check (tests/interop/crafted.sh): a plain libibverbs program that
 * runs inside the rxe VM against rxe0 and on the host against uroce0
 * (LD_PRELOAD=liburoce.so), and does what the packet crafter
 * (crafted.py) tells it over TCP, one command a line:
 *
 *   QP rc|uc|ud                    a new QP (the last one is destroyed), its MR
 *                                  (64 KiB, zeroed, every access), to INIT
 *                                  -> "QP qpn psn rkey va gid"
 *   CONN MTU TIMEOUT RETRY DQPN RQPSN DGID
 *                                  to RTR (path MTU code, AV: DGID hex, sgid GIDX,
 *                                  hop limit 64) and RTS (sq_psn: the PSN above;
 *                                  TIMEOUT, RETRY: its retransmit timer and count)
 *   RECV N LEN                     N receives of LEN bytes at MR + i * 4096
 *                                  (wr_id 100 + i)
 *   POST OP LEN RADDR RKEY         one signaled WR, OP send|write|read|faa|cas,
 *                                  local MR + 32768 (wr_id 1, 2, ...)
 *   POLL MS N                      up to N completions or MS milliseconds:
 *                                  "WC s|r WR_ID STATUS OPCODE BYTE_LEN" each
 *   STATE                          -> "STATE RTS" (ibv_query_qp)
 *   MEM OFF LEN                    -> "MEM hex" of the MR
 *   FILL OFF LEN BYTE              the application writes its MR
 *   QUIT
 *
 * Every command is answered by its lines and then "OK" (or "ERR why").
 * Exit 0 after QUIT, 1 on a broken connection or setup, 77 without the
 * device. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MR_LEN 65536
#define SEND_OFF 32768

struct peer {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gidx;
	uint32_t psn;
	uint64_t next_id;
	FILE *in, *out;
};

static void put(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(p->out, fmt, ap);
	va_end(ap);
	fflush(p->out);
}

static void drop_qp(struct peer *p)
{
	if (p->qp)
		ibv_destroy_qp(p->qp);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	free(p->buf);
	p->qp = NULL;
	p->mr = NULL;
	p->scq = p->rcq = NULL;
	p->buf = NULL;
}

static int cmd_qp(struct peer *p, const char *type)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	union ibv_gid gid;
	enum ibv_qp_type t = !strcmp(type, "uc") ? IBV_QPT_UC : !strcmp(type, "ud") ? IBV_QPT_UD
										   : IBV_QPT_RC;
	int flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	drop_qp(p);
	if (t == IBV_QPT_RC)
		flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	p->buf = aligned_alloc(4096, MR_LEN);
	if (!p->buf)
		return -1;
	memset(p->buf, 0, MR_LEN);
	p->mr = ibv_reg_mr(p->pd, p->buf, MR_LEN, flags);
	p->scq = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
	p->rcq = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
	if (!p->mr || !p->scq || !p->rcq)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = p->scq;
	ia.recv_cq = p->rcq;
	ia.qp_type = t;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	p->qp = ibv_create_qp(p->pd, &ia);
	if (!p->qp)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = flags;
	a.qkey = 0x11111111;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     (t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return -1;
	if (ibv_query_gid(p->ctx, 1, p->gidx, &gid))
		return -1;
	p->psn = (uint32_t)(p->qp->qp_num * 1009u) & 0xffffff;
	put(p, "QP %u %u %u %llu ", p->qp->qp_num, p->psn, p->mr->rkey,
	    (unsigned long long)(uintptr_t)p->buf);
	for (int i = 0; i < 16; i++)
		put(p, "%02x", gid.raw[i]);
	put(p, "\n");
	return 0;
}

static int cmd_conn(struct peer *p, unsigned mtu, unsigned timeout, unsigned retry,
		    uint32_t dqpn, uint32_t rqpsn, const char *dgid)
{
	struct ibv_qp_attr a;
	int rtr, rts;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (p->qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = (enum ibv_mtu)mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = rqpsn;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.sgid_index = (uint8_t)p->gidx;
		a.ah_attr.grh.hop_limit = 64;
		for (int i = 0; i < 16 && dgid[2 * i] && dgid[2 * i + 1]; i++)
			sscanf(dgid + 2 * i, "%2hhx", &a.ah_attr.grh.dgid.raw[i]);
	}
	rtr = p->qp->qp_type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0;
	if (p->qp->qp_type != IBV_QPT_UD)
		rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | rtr))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = p->psn;
	a.timeout = (uint8_t)timeout;
	a.retry_cnt = (uint8_t)retry;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	rts = p->qp->qp_type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0;
	return ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | rts) ? -1 : 0;
}

static int cmd_recv(struct peer *p, unsigned n, unsigned len)
{
	for (unsigned i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)p->buf + i * 4096, len, p->mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (i * 4096 + len > SEND_OFF || ibv_post_recv(p->qp, &w, &bad))
			return -1;
	}
	return 0;
}

static int cmd_post(struct peer *p, const char *op, unsigned len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)p->buf + SEND_OFF, len, p->mr->lkey };
	struct ibv_send_wr w, *bad;

	memset(&w, 0, sizeof(w));
	w.wr_id = ++p->next_id;
	w.sg_list = &s;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	if (!strcmp(op, "send")) {
		w.opcode = IBV_WR_SEND;
	} else if (!strcmp(op, "write")) {
		w.opcode = IBV_WR_RDMA_WRITE;
	} else if (!strcmp(op, "read")) {
		w.opcode = IBV_WR_RDMA_READ;
	} else if (!strcmp(op, "faa") || !strcmp(op, "cas")) {
		w.opcode = op[0] == 'f' ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 1;
		s.length = 8;
	} else {
		return -1;
	}
	return ibv_post_send(p->qp, &w, &bad) ? -1 : 0;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The wait bounds how long the crafter looks, never what it concludes. */
static void cmd_poll(struct peer *p, unsigned ms, unsigned want)
{
	double end = now_ms() + ms;
	unsigned got = 0;

	while (got < want && now_ms() < end) {
		struct ibv_wc wc;
		int k = 0;

		for (int c = 0; c < 2 && got < want; c++) {
			while (got < want && ibv_poll_cq(c ? p->rcq : p->scq, 1, &wc) == 1) {
				put(p, "WC %c %llu %s %d %u\n", c ? 'r' : 's',
				    (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
				    wc.status == IBV_WC_SUCCESS ? (int)wc.opcode : -1, wc.byte_len);
				got++;
				k++;
			}
		}
		if (!k)
			usleep(2000);
	}
}

static const char *state_name(enum ibv_qp_state s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static int one(struct peer *p, char *line)
{
	char c[16] = "", s[64] = "";
	unsigned a = 0, b = 0, d = 0;
	unsigned long long u = 0, v = 0;

	if (sscanf(line, "%15s", c) != 1)
		return -1;
	if (!strcmp(c, "QP") && sscanf(line, "QP %63s", s) == 1)
		return cmd_qp(p, s);
	if (!p->qp && strcmp(c, "QUIT"))
		return -1;
	if (!strcmp(c, "CONN") && sscanf(line, "CONN %u %u %u %llu %llu %63s", &a, &b, &d, &u, &v,
					 s) == 6)
		return cmd_conn(p, a, b, d, (uint32_t)u, (uint32_t)v, s);
	if (!strcmp(c, "RECV") && sscanf(line, "RECV %u %u", &a, &b) == 2)
		return cmd_recv(p, a, b);
	if (!strcmp(c, "POST") && sscanf(line, "POST %15s %u %llu %llu", s, &a, &u, &v) == 4)
		return cmd_post(p, s, a, u, (uint32_t)v);
	if (!strcmp(c, "POLL") && sscanf(line, "POLL %u %u", &a, &b) == 2) {
		cmd_poll(p, a, b);
		return 0;
	}
	if (!strcmp(c, "STATE")) {
		struct ibv_qp_attr at;
		struct ibv_qp_init_attr it;

		if (ibv_query_qp(p->qp, &at, IBV_QP_STATE, &it))
			return -1;
		put(p, "STATE %s\n", state_name(at.qp_state));
		return 0;
	}
	if (!strcmp(c, "FILL") && sscanf(line, "FILL %u %u %u", &a, &b, &d) == 3 && a + b <= MR_LEN) {
		memset(p->buf + a, (int)d, b);
		return 0;
	}
	if (!strcmp(c, "MEM") && sscanf(line, "MEM %u %u", &a, &b) == 2 && a + b <= MR_LEN) {
		put(p, "MEM ");
		for (unsigned i = 0; i < b; i++)
			put(p, "%02x", p->buf[a + i]);
		put(p, "\n");
		return 0;
	}
	return -1;
}

static FILE *dial(const char *host, const char *port)
{
	struct addrinfo hint = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1;

	/* the crafter may still be starting (or the VM's link coming up) */
	for (int t = 0; t < 600 && fd < 0; t++) {
		if (getaddrinfo(host, port, &hint, &ai))
			return NULL;
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			close(fd);
			fd = -1;
			usleep(100000);
		}
		freeaddrinfo(ai);
	}
	return fd < 0 ? NULL : fdopen(fd, "r");
}

int main(int argc, char **argv)
{
	struct ibv_device **l;
	struct peer p;
	char line[512];
	int n = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: crafted_peer HOST PORT DEV GIDX\n");
		return 2;
	}
	memset(&p, 0, sizeof(p));
	p.gidx = atoi(argv[4]);
	l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n && !p.ctx; i++)
		if (!strcmp(ibv_get_device_name(l[i]), argv[3]))
			p.ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!p.ctx) {
		fprintf(stderr, "crafted_peer: no device %s\n", argv[3]);
		return 77;
	}
	p.pd = ibv_alloc_pd(p.ctx);
	p.in = dial(argv[1], argv[2]);
	if (!p.pd || !p.in) {
		fprintf(stderr, "crafted_peer: setup: %s\n", strerror(errno));
		return 1;
	}
	/* one stream each way: stdio cannot turn a socket stream around */
	p.out = fdopen(dup(fileno(p.in)), "w");
	if (!p.out)
		return 1;
	put(&p, "HELLO %s\n", argv[3]);
	while (fgets(line, sizeof(line), p.in)) {
		if (!strncmp(line, "QUIT", 4)) {
			drop_qp(&p);
			ibv_dealloc_pd(p.pd);
			ibv_close_device(p.ctx);
			return 0;
		}
		if (one(&p, line))
			put(&p, "ERR %s", line);
		else
			put(&p, "OK\n");
	}
	return 1;
}
