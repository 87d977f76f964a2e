/* SPDX-License-Identifier: MIT */
/* uroce data-path benchmarks through plain libibverbs (run it with
 * LD_PRELOAD=liburoce.so). Both ends of every connection live in this one
 * process, so a round trip is application -> daemon -> application ->
 * daemon -> application with exactly one application thread: pinned to
 * one core with the daemon on the other, nothing time-shares a core (two
 * perftest processes on one core would measure the scheduler instead).
 *
 *   uroce_bench lat   send|write|read SIZE ITERS   round trip, ns (read: one
 *                                               signaled READ, request + response)
 *   uroce_bench bw    write|read|send SIZE ITERS DEPTH   MB/s (cold buffers)
 *   uroce_bench rate  SIZE ITERS                SEND messages per second
 *   uroce_bench qps   N DAEMON_PID              daemon memory per connected RC QP,
 *                                               QPs created + connected per second
 *   uroce_bench wake  GAP_US ITERS              first round trip after GAP_US idle
 *   uroce_bench first SIZE_MB CHUNK DEPTH       WRITEs of CHUNK into a buffer of
 *                                               SIZE_MB registered just before, each
 *                                               byte written once: MB/s, registration
 *                                               included (and alone)
 *
 * UROCE_BENCH_MEM=shm: every buffer is a MAP_SHARED mapping of a memfd
 * (kept open), which the daemon maps (docs/verbs.md "Registered memory");
 * by default posix_memalign'd private memory, which it reaches through
 * the pages the registration pinned.
 *
 * Every result is one line "key value ..." for bench/run.sh. Exit 0 ok,
 * 1 failure, 77 no uroce device. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define die(...) do { fprintf(stderr, "uroce_bench: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static int gid_index = 1;
static enum ibv_mtu mtu;

struct end {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
};

/* len bytes, page-aligned: private memory, or a shared memfd mapping */
static uint8_t *bench_alloc(size_t len)
{
	const char *m = getenv("UROCE_BENCH_MEM");
	void *p;

	if (m && !strcmp(m, "shm")) {
		int fd = memfd_create("uroce-bench", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)len))
			die("memfd: %s", strerror(errno));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		return p; /* the descriptor stays open: the shim finds the file by it */
	}
	if (posix_memalign(&p, 4096, len))
		die("alloc");
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void open_dev(void)
{
	const char *name = getenv("UROCE_BENCH_DEV") ? getenv("UROCE_BENCH_DEV") : "uroce0";
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_port_attr pa;

	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	if (!ctx) {
		fprintf(stderr, "uroce_bench: no device %s (LD_PRELOAD=liburoce.so? daemon up?)\n", name);
		exit(77);
	}
	ibv_free_device_list(l);
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &pa))
		die("pd/port");
	mtu = pa.active_mtu;
	if (getenv("UROCE_BENCH_GID"))
		gid_index = atoi(getenv("UROCE_BENCH_GID"));
}

static void end_init(struct end *e, size_t len, uint32_t sq, uint32_t rq, uint32_t inl)
{
	struct ibv_qp_init_attr a;

	memset(e, 0, sizeof(*e));
	e->scq = ibv_create_cq(ctx, (int)sq + 16, NULL, NULL, 0);
	e->rcq = ibv_create_cq(ctx, (int)rq + 16, NULL, NULL, 0);
	if (!e->scq || !e->rcq)
		die("create_cq: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.send_cq = e->scq;
	a.recv_cq = e->rcq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = sq;
	a.cap.max_recv_wr = rq;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = inl;
	e->qp = ibv_create_qp(pd, &a);
	if (!e->qp)
		die("create_qp: %s", strerror(errno));
	if (len) {
		/* whole pages, as perftest registers (BUFF_SIZE: at least a
		 * page): a partial page is not daemon-mapped and an 8 B WRITE
		 * would measure the /proc/<pid>/mem fallback instead */
		len = (len + 4095) & ~(size_t)4095;
		e->len = len;
		e->buf = bench_alloc(len);
		memset(e->buf, 0x5a, len);
		e->mr = ibv_reg_mr(pd, e->buf, len, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!e->mr)
			die("reg_mr: %s", strerror(errno));
	}
}

/* INIT -> RTR -> RTS towards dqpn on our own GID (the loopback port). */
static int qp_connect(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_query_gid(ctx, 1, gid_index, &a.ah_attr.grh.dgid))
		return -1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void pair(struct end *a, struct end *b)
{
	if (qp_connect(a->qp, b->qp->qp_num) || qp_connect(b->qp, a->qp->qp_num))
		die("connect: %s", strerror(errno));
}

static void post_recv(struct end *e, uint64_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = off, .sg_list = &s, .num_sge = 1 }, *bad;

	if (ibv_post_recv(e->qp, &w, &bad))
		die("post_recv: %s", strerror(errno));
}

static void post_send(struct end *e, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
		      unsigned flags, const struct end *peer, uint64_t roff)
{
	struct ibv_sge s = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr w, *bad;

	memset(&w, 0, sizeof(w));
	w.opcode = op;
	w.sg_list = &s;
	w.num_sge = 1;
	w.send_flags = flags;
	if (peer) {
		w.wr.rdma.remote_addr = (uintptr_t)peer->buf + roff;
		w.wr.rdma.rkey = peer->mr->rkey;
	}
	int r = ibv_post_send(e->qp, &w, &bad);
	if (r)
		die("post_send: %s", strerror(r));
}

/* Wait for n completions on cq; all must succeed. */
static void wait_cq(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[16];
	uint64_t t0 = now_ns();

	while (n > 0) {
		int k = ibv_poll_cq(cq, n < 16 ? n : 16, wc);

		if (k < 0)
			die("poll_cq");
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				die("completion status %s", ibv_wc_status_str(wc[i].status));
		n -= k;
		if (!k && now_ns() - t0 > 10000000000ull)
			die("no completion within 10 s");
	}
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report_lat(const char *key, uint64_t *lat, long n, uint64_t total)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp64);
	printf("%s avg %.1f p50 %" PRIu64 " p99 %" PRIu64 "\n", key, (double)total / (double)n,
	       lat[n / 2], lat[n * 99 / 100]);
}

/* Ping-pong: a -> b, b -> a. SEND: poll the receive CQ; WRITE: spin on the
 * last byte of the target buffer, as perftest's write_lat does. */
static void bench_lat(const char *op, uint32_t size, long iters, uint64_t gap_us)
{
	struct end a, b;
	bool wr = !strcmp(op, "write"), rd = !strcmp(op, "read");
	uint32_t inl = size <= 256 && !rd ? 256 : 0;
	long warm = gap_us ? 3 : 1000;
	uint64_t *lat = calloc((size_t)iters, sizeof(*lat)), total = 0;

	if (!lat || !size)
		die("args");
	end_init(&a, size, 64, 64, inl);
	end_init(&b, size, 64, 64, inl);
	pair(&a, &b);
	for (int i = 0; i < 32 && !wr && !rd; i++) {
		post_recv(&a, 0, size);
		post_recv(&b, 0, size);
	}
	for (long i = -warm; i < iters; i++) {
		/* a -> b carries 2i, b -> a 2i+1: no value repeats between
		 * consecutive writes into the same byte */
		uint8_t tag = (uint8_t)(2 * i);
		unsigned fl = (inl ? IBV_SEND_INLINE : 0) | ((i & 15) == 0 ? IBV_SEND_SIGNALED : 0);
		uint64_t t;

		if (gap_us)
			usleep((useconds_t)gap_us);
		t = now_ns();
		if (rd) {
			post_send(&a, IBV_WR_RDMA_READ, 0, size, IBV_SEND_SIGNALED, &b, 0);
			wait_cq(a.scq, 1);
			fl = 0; /* waited for already */
		} else if (wr) {
			a.buf[size - 1] = tag;
			post_send(&a, IBV_WR_RDMA_WRITE, 0, size, fl, &b, 0);
			while (__atomic_load_n(&b.buf[size - 1], __ATOMIC_ACQUIRE) != tag)
				;
			b.buf[size - 1] = tag ^ 1;
			post_send(&b, IBV_WR_RDMA_WRITE, 0, size, fl, &a, 0);
			while (__atomic_load_n(&a.buf[size - 1], __ATOMIC_ACQUIRE) != (tag ^ 1))
				;
		} else {
			post_send(&a, IBV_WR_SEND, 0, size, fl, NULL, 0);
			wait_cq(b.rcq, 1);
			post_recv(&b, 0, size);
			post_send(&b, IBV_WR_SEND, 0, size, fl, NULL, 0);
			wait_cq(a.rcq, 1);
			post_recv(&a, 0, size);
		}
		t = now_ns() - t;
		if (fl & IBV_SEND_SIGNALED) {
			wait_cq(a.scq, 1);
			wait_cq(b.scq, 1);
		}
		if (i >= 0) {
			lat[i] = t;
			total += t;
		}
	}
	char key[64];
	snprintf(key, sizeof(key), "%s_%s_%u_ns", gap_us ? "wake" : "lat", op, size);
	report_lat(key, lat, iters, total);
	free(lat);
}

/* Streaming: DEPTH requests in flight, every one signaled, each on a fresh
 * SIZE slice of a 64 MiB arena (cold in cache, like the memcpy baseline). */
static void bench_bw(const char *op, uint32_t size, long iters, int depth)
{
	struct end a, b;
	size_t arena = 64u << 20;
	enum ibv_wr_opcode o = !strcmp(op, "read") ? IBV_WR_RDMA_READ :
			       !strcmp(op, "send") ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
	bool send = o == IBV_WR_SEND;
	long posted = 0, done = 0, recvd = 0;
	uint64_t slots = arena / size;

	if (!size || size > arena || depth < 1 || depth > 512)
		die("args");
	end_init(&a, arena, (uint32_t)depth, 1, 0);
	end_init(&b, arena, 1, send ? 1024 : 1, 0);
	pair(&a, &b);
	if (send)
		for (int i = 0; i < 1024; i++)
			post_recv(&b, (uint64_t)(i % slots) * size, size);
	uint64_t t0 = 0;
	long warm = iters / 10;
	struct ibv_wc wc[32];

	while (done < iters + warm) {
		while (posted - done < depth && posted < iters + warm) {
			uint64_t off = (uint64_t)(posted % (long)slots) * size;

			post_send(&a, o, off, size, IBV_SEND_SIGNALED, send ? NULL : &b, off);
			posted++;
		}
		int k = ibv_poll_cq(a.scq, 32, wc);
		if (k < 0)
			die("poll");
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("status %s", ibv_wc_status_str(wc[i].status));
			if (++done == warm)
				t0 = now_ns();
		}
		if (send) {
			k = ibv_poll_cq(b.rcq, 32, wc);
			for (int i = 0; i < k; i++) {
				post_recv(&b, (uint64_t)((1024 + recvd) % (long)slots) * size, size);
				recvd++;
			}
		}
	}
	double s = (double)(now_ns() - t0) * 1e-9;
	printf("bw_%s_%u MBps %.1f\n", op, size, (double)iters * size / s / 1e6);
}

/* First pass: a destination of SIZE_MB freshly allocated and untouched,
 * registered at t0; WRITEs of CHUNK from a reused 64 MiB source arena, each
 * destination byte written once, DEPTH in flight. What benchmarks that
 * reuse one arena hide: the cost of making the pages reachable (pinning,
 * or mapping) and of the first touch of each. */
static void bench_first(uint32_t size_mb, uint32_t chunk, int depth)
{
	struct end a, b;
	size_t arena = 64u << 20, len = (size_t)size_mb << 20;
	long n = (long)(len / chunk), posted = 0, done = 0;
	struct ibv_wc wc[32];

	if (!chunk || len < chunk || depth < 1 || depth > 512)
		die("args");
	end_init(&a, arena, (uint32_t)depth, 1, 0);
	end_init(&b, 0, 1, 1, 0);
	pair(&a, &b);
	b.buf = bench_alloc(len);
	uint64_t t0 = now_ns();
	b.mr = ibv_reg_mr(pd, b.buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!b.mr)
		die("reg_mr: %s", strerror(errno));
	uint64_t treg = now_ns() - t0;
	while (done < n) {
		while (posted - done < depth && posted < n) {
			uint64_t soff = (uint64_t)posted * chunk % (arena - chunk + 1);
			struct ibv_sge s = { (uintptr_t)a.buf + soff, chunk, a.mr->lkey };
			struct ibv_send_wr w = { .sg_list = &s, .num_sge = 1,
						 .opcode = IBV_WR_RDMA_WRITE,
						 .send_flags = IBV_SEND_SIGNALED }, *bad;
			w.wr.rdma.remote_addr = (uintptr_t)b.buf + (uint64_t)posted * chunk;
			w.wr.rdma.rkey = b.mr->rkey;
			int r = ibv_post_send(a.qp, &w, &bad);
			if (r)
				die("post_send: %s", strerror(r));
			posted++;
		}
		int k = ibv_poll_cq(a.scq, 32, wc);
		if (k < 0)
			die("poll");
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				die("status %s", ibv_wc_status_str(wc[i].status));
		done += k;
	}
	double s = (double)(now_ns() - t0) * 1e-9;
	printf("first_%uMB_%u MBps %.1f reg_ms %.1f\n", size_mb, chunk, (double)len / s / 1e6,
	       (double)treg / 1e6);
}

/* Registration cost: ibv_reg_mr + ibv_dereg_mr of a malloc'd buffer of
 * SIZE whose every page was touched (what an application that registers
 * per operation pays), ITERS times; the median pair. */
static void bench_reg(size_t size, long iters)
{
	uint64_t *t = calloc((size_t)iters, sizeof(*t));
	uint8_t *buf = malloc(size);

	if (!t || !buf || iters < 1)
		die("args");
	memset(buf, 1, size);
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, size,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr || ibv_dereg_mr(mr))
			die("reg/dereg %zu: %s", size, strerror(errno));
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)iters, sizeof(*t), cmp64);
	printf("reg_%zu us %.1f\n", size, (double)t[iters / 2] / 1e3);
	free(buf);
	free(t);
}

/* Message rate: 64-byte (SIZE) SENDs, posted in lists of 32 with one
 * signaled, the receiver reposting as it polls. Counted at the receiver. */
static void bench_rate(uint32_t size, long iters)
{
	struct end a, b;
	enum { RQ = 4096, SQ = 1024, LIST = 32 };
	struct ibv_send_wr w[LIST], *bad;
	struct ibv_sge s = { 0, size, 0 };
	struct ibv_recv_wr rw[LIST], *rbad;
	struct ibv_sge rs = { 0, size, 0 };
	struct ibv_wc wc[64];
	long sent = 0, scomp = 0, recvd = 0;
	uint32_t inl = size <= 256 ? 256 : 0;

	end_init(&a, 4096, SQ, 1, inl);
	end_init(&b, 4096, 1, RQ, 0);
	pair(&a, &b);
	s.addr = (uintptr_t)a.buf;
	s.lkey = a.mr->lkey;
	rs.addr = (uintptr_t)b.buf;
	rs.lkey = b.mr->lkey;
	memset(w, 0, sizeof(w));
	memset(rw, 0, sizeof(rw));
	for (int i = 0; i < LIST; i++) {
		w[i].opcode = IBV_WR_SEND;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].send_flags = (inl ? IBV_SEND_INLINE : 0) |
				  (i == LIST - 1 ? IBV_SEND_SIGNALED : 0);
		w[i].next = i + 1 < LIST ? &w[i + 1] : NULL;
		rw[i].sg_list = &rs;
		rw[i].num_sge = 1;
		rw[i].next = i + 1 < LIST ? &rw[i + 1] : NULL;
	}
	for (int i = 0; i < RQ / LIST; i++)
		if (ibv_post_recv(b.qp, rw, &rbad))
			die("post_recv");
	long warm = iters / 10, total = iters + warm;
	uint64_t t0 = 0, last = now_ns();
	long pending_rq = 0;

	while (recvd < total) {
		if (sent - scomp * LIST <= SQ - LIST && sent < total) {
			int r = ibv_post_send(a.qp, w, &bad);
			if (r)
				die("post_send: %s", strerror(r));
			sent += LIST;
		}
		int k = ibv_poll_cq(a.scq, 64, wc);
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				die("send status %s", ibv_wc_status_str(wc[i].status));
		scomp += k;
		k = ibv_poll_cq(b.rcq, 64, wc);
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("recv status %s", ibv_wc_status_str(wc[i].status));
			if (++recvd == warm)
				t0 = now_ns();
		}
		pending_rq += k;
		while (pending_rq >= LIST) {
			if (ibv_post_recv(b.qp, rw, &rbad))
				die("post_recv");
			pending_rq -= LIST;
		}
		if (k)
			last = now_ns();
		else if (now_ns() - last > 10000000000ull)
			die("stalled at %ld/%ld", recvd, total);
	}
	double sec = (double)(now_ns() - t0) * 1e-9;
	printf("rate_send_%u Mmsgps %.3f\n", size, (double)iters / sec / 1e6);
}

static long rss_kb(int pid, const char *field)
{
	char path[64], line[256];
	long v = -1;
	size_t fl = strlen(field);

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':')
			v = atol(line + fl + 1);
	fclose(f);
	return v;
}

/* CPU time (user + system) of a process, ns: /proc/PID/stat fields 14, 15 */
static uint64_t cpu_ns(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (uint64_t)(ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* the median of v[0..n) (sorts v) */
static uint64_t p50(uint64_t *v, long n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp64);
	return v[n / 2];
}

/* Voluntary context switches (sleeps) of every thread of a process. */
static long sleeps(int pid)
{
	char path[64];
	long sum = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char f[512], line[128];
		FILE *s;

		if (e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "/proc/%d/task/%.32s/status", pid, e->d_name);
		s = fopen(f, "r");
		if (!s)
			continue;
		while (fgets(line, sizeof(line), s))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += atol(line + 24);
		fclose(s);
	}
	closedir(d);
	return sum;
}

/* N RC QPs in connected pairs, smallest queues, one shared CQ. The
 * daemon's anonymous RSS growth is its private memory per QP; ring memory
 * is shared memfd (RssShmem) and reported apart. Besides the rate: the
 * create and the connect (three modifies) phases apart, and the CPU time
 * per QP of this process and of the daemon (what a loaded machine's
 * scheduler does not change much). */
static void bench_qps(long n, int dpid)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp **q = calloc((size_t)n, sizeof(*q));
	struct ibv_qp_init_attr a;

	if (!cq || !q || n < 2)
		die("args");
	long anon0 = rss_kb(dpid, "RssAnon"), shm0 = rss_kb(dpid, "RssShmem");
	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 1;
	a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	long made = 0;
	uint64_t c0 = cpu_ns(getpid()), d0 = cpu_ns(dpid);
	long s0 = sleeps(getpid()), z0 = sleeps(dpid);
	uint64_t t0 = now_ns();
	uint64_t *lc = calloc((size_t)n, sizeof(*lc)), *lm = calloc((size_t)n, sizeof(*lm));
	uint64_t *lc2 = calloc((size_t)n, sizeof(*lc));
	if (!lc || !lm || !lc2)
		die("alloc");
	for (; made < n; made++) {
		uint64_t t = now_ns();

		q[made] = ibv_create_qp(pd, &a);
		lc[made] = lc2[made] = now_ns() - t;
		if (!q[made]) {
			fprintf(stderr, "uroce_bench: create_qp %ld: %s\n", made, strerror(errno));
			break;
		}
	}
	made &= ~1L;
	uint64_t tc = now_ns();
	for (long i = 0; i < made; i += 2) {
		uint64_t t = now_ns();

		if (qp_connect(q[i], q[i + 1]->qp_num))
			die("connect %ld: %s", i, strerror(errno));
		lm[i] = now_ns() - t;
		if (qp_connect(q[i + 1], q[i]->qp_num))
			die("connect %ld: %s", i + 1, strerror(errno));
		lm[i + 1] = now_ns() - t - lm[i];
	}
	uint64_t t1 = now_ns();
	uint64_t c1 = cpu_ns(getpid()), d1 = cpu_ns(dpid);
	long s1 = sleeps(getpid()), z1 = sleeps(dpid);
	long anon1 = rss_kb(dpid, "RssAnon"), shm1 = rss_kb(dpid, "RssShmem");
	double m = made ? (double)made : 1.0;
	printf("qps n %ld anon_per_qp_B %.0f shmem_per_qp_B %.0f create_connect_per_s %.0f "
	       "create_per_s %.0f connect_per_s %.0f app_cpu_us_per_qp %.1f daemon_cpu_us_per_qp %.1f "
	       "app_sleeps_per_qp %.2f daemon_sleeps_per_qp %.2f create_p50_ns %llu connect_p50_ns %llu\n",
	       made, (double)(anon1 - anon0) * 1024 / m, (double)(shm1 - shm0) * 1024 / m,
	       made ? m * 1e9 / (double)(t1 - t0) : 0.0, made ? m * 1e9 / (double)(tc - t0) : 0.0,
	       made ? m * 1e9 / (double)(t1 - tc) : 0.0, (double)(c1 - c0) / m / 1e3,
	       (double)(d1 - d0) / m / 1e3, (double)(s1 - s0) / m, (double)(z1 - z0) / m,
	       (unsigned long long)p50(lc, made), (unsigned long long)p50(lm, made));
	if (getenv("UROCE_BENCH_QPS_TAIL"))
		for (long i = 0; i < made; i++)
			if (lc2[i] > 1000000)
				printf("create_tail %ld %llu\n", i, (unsigned long long)lc2[i]);
	free(lc);
	free(lc2);
	free(lm);
	for (long i = 0; i < n; i++)
		if (q[i])
			ibv_destroy_qp(q[i]);
	ibv_destroy_cq(cq);
	free(q);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		goto usage;
	open_dev();
	if (!strcmp(argv[1], "lat") && argc >= 5)
		bench_lat(argv[2], (uint32_t)atol(argv[3]), atol(argv[4]), 0);
	else if (!strcmp(argv[1], "bw") && argc >= 6)
		bench_bw(argv[2], (uint32_t)atol(argv[3]), atol(argv[4]), atoi(argv[5]));
	else if (!strcmp(argv[1], "rate") && argc >= 4)
		bench_rate((uint32_t)atol(argv[2]), atol(argv[3]));
	else if (!strcmp(argv[1], "qps") && argc >= 4)
		bench_qps(atol(argv[2]), atoi(argv[3]));
	else if (!strcmp(argv[1], "wake") && argc >= 4)
		bench_lat("send", 8, atol(argv[3]), (uint64_t)atol(argv[2]));
	else if (!strcmp(argv[1], "first") && argc >= 5)
		bench_first((uint32_t)atol(argv[2]), (uint32_t)atol(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "reg") && argc >= 4)
		bench_reg((size_t)atol(argv[2]), atol(argv[3]));
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: uroce_bench lat send|write|read SIZE ITERS | bw write|read|send SIZE ITERS DEPTH |"
		" rate SIZE ITERS | qps N DAEMON_PID | wake GAP_US ITERS |"
		" first SIZE_MB CHUNK DEPTH | reg SIZE ITERS\n");
	return 2;
}
