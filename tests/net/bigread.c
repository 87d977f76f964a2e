/* SPDX-License-Identifier: MIT */
/* One large RDMA READ (or WRITE) between two RC QPs of one device, every
 * byte checked: tests/net/link.py's "read" case runs it through the shim
 * against a daemon with few mbufs (the READ responder paced by transmit
 * room, docs/transport.md), and by hand for the 2 GiB READ vs WRITE
 * comparison (docs/performance.md).
 *
 *   bigread read|write MIB [DEVICE [GID_INDEX]]
 *
 * Prints "<op> <bytes> bytes <ms> ms" and exits 0 when the data arrived
 * intact; 1 with the reason otherwise. Fresh buffers (mmap), a seeded
 * pattern; the completion is waited for at most 600 s. */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "bigread: %s\n", what);
	return 1;
}

/* the pattern: a 64-bit LCG per 8 bytes, so a misplaced packet shows */
static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	uint64_t x = seed;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(b + i, &x, 8);
	}
}

static int to_rts(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *gid, int gidx,
		  enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1000;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1000;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int n, gidx = argc > 4 ? atoi(argv[4]) : 1;
	const char *dev = argc > 3 ? argv[3] : "uroce0";

	if (argc < 3 || (strcmp(argv[1], "read") && strcmp(argv[1], "write")))
		return die("usage: bigread read|write MIB [DEVICE [GID_INDEX]]");
	int rd = !strcmp(argv[1], "read");
	uint64_t len64 = strtoull(argv[2], NULL, 0) << 20;
	if (!len64 || len64 > (1ull << 31))
		return die("size: 1 MiB .. 2048 MiB");
	size_t len = (size_t)len64;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return die("no such device");
	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gidx, &gid))
		return die("query port/gid");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		return die("pd/cq");
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qa_ = ibv_create_qp(pd, &qa), *qb = ibv_create_qp(pd, &qa);
	if (!qa_ || !qb)
		return die("create qp");
	if (to_rts(qa_, qb->qp_num, &gid, gidx, pa.active_mtu) ||
	    to_rts(qb, qa_->qp_num, &gid, gidx, pa.active_mtu))
		return die("connect");
	uint8_t *la = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *rb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *want = malloc(len);
	if (la == MAP_FAILED || rb == MAP_FAILED || !want)
		return die("out of memory");
	fill(want, len, 0x5eed1 + len);
	/* READ: the data is at B and comes to A; WRITE: A's goes to B */
	memcpy(rd ? rb : la, want, len);
	memset(rd ? la : rb, 0, len);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *ma = ibv_reg_mr(pd, la, len, acc), *mb = ibv_reg_mr(pd, rb, len, acc);
	if (!ma || !mb)
		return die("reg mr");
	struct ibv_sge sge = { .addr = (uintptr_t)la, .length = (uint32_t)len, .lkey = ma->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = rd ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)rb, .rkey = mb->rkey },
	}, *bad;
	double t0 = now_s();
	if (ibv_post_send(qa_, &wr, &bad))
		return die("post send");
	struct ibv_wc wc;
	int got;
	while (!(got = ibv_poll_cq(cq, 1, &wc)))
		if (now_s() - t0 > 600)
			return die("no completion in 600 s");
	double t = now_s() - t0;
	if (got < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "bigread: completion status %s\n",
			got < 0 ? "poll error" : ibv_wc_status_str(wc.status));
		return 1;
	}
	const uint8_t *dst = rd ? la : rb;
	if (memcmp(dst, want, len)) {
		size_t i = 0;

		while (dst[i] == want[i])
			i++;
		fprintf(stderr, "bigread: data differs from byte %zu\n", i);
		return 1;
	}
	printf("%s %zu bytes %.1f ms %.0f MB/s\n", argv[1], len, t * 1e3, (double)len / t / 1e6);
	ibv_dereg_mr(ma);
	ibv_dereg_mr(mb);
	ibv_destroy_qp(qa_);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	munmap(la, len);
	munmap(rb, len);
	free(want);
	return 0;
}
