/* SPDX-License-Identifier: MIT */
/* Zero-copy TX (issue 10, docs/performance.md): large payload pieces of
 * daemon-mapped MRs leave as mbuf segments pointing into the mapping, and
 * the receiver places them straight from there. Data integrity across
 * sizes and SGE layouts (seeded, printed), the port counters of the path,
 * and the lifetime of a mapping that frames in flight still point into:
 * deregistration and client exit with frames queued. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "vt.h"
#include "vt_stats.h"

#define ZBUF (1u << 20)
#define ZACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)


/* One side: a context (VT_DEV_A / VT_DEV_B, default uroce0), a 1 MiB
 * buffer registered whole (a shared memfd mapping: the daemon maps it and
 * sends from it without a copy), and a small MR over part of one page of
 * a second, malloc'd buffer (pinned: placed and gathered through the
 * client's io_uring, never zero-copy). */
struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t *buf, *side;
	int fd;                 /* buf's memfd: open, so the shim finds it */
	struct ibv_mr *mr, *part;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
	int gid_idx;
	enum ibv_mtu mtu;
};

#define PART_OFF 100u
#define PART_LEN 3000u

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l;
	struct ibv_context *c = NULL;
	int n;

	l = ibv_get_device_list(&n);
	REQUIRE(l);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!c)
		fprintf(stderr, "no device %s\n", name);
	REQUIRE(c);
	return c;
}

static void end_open(struct end *e, const char *name)
{
	struct ibv_port_attr pa;

	memset(e, 0, sizeof(*e));
	e->ctx = open_dev(name);
	e->gid_idx = vt_find_gid(e->ctx, &e->gid);
	REQUIRE(!ibv_query_port(e->ctx, 1, &pa));
	e->mtu = pa.active_mtu;
	e->pd = ibv_alloc_pd(e->ctx);
	e->fd = memfd_create("vt-zc", MFD_CLOEXEC);
	REQUIRE(e->fd >= 0 && !ftruncate(e->fd, ZBUF));
	e->buf = mmap(NULL, ZBUF, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	REQUIRE(e->buf != MAP_FAILED);
	e->side = aligned_alloc(4096, 4096);
	REQUIRE(e->pd && e->buf && e->side);
	memset(e->buf, 0, ZBUF);
	memset(e->side, 0, 4096);
	e->mr = ibv_reg_mr(e->pd, e->buf, ZBUF, ZACC);
	e->part = ibv_reg_mr(e->pd, e->side + PART_OFF, PART_LEN, ZACC);
	e->cq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	REQUIRE(e->mr && e->part && e->cq);
	struct ibv_qp_init_attr a = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 4,
			 .max_recv_sge = 4 } };
	e->qp = ibv_create_qp(e->pd, &a);
	REQUIRE(e->qp);
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	REQUIRE(!ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS));
}

static void end_connect(struct end *e, const struct end *peer)
{
	vt_qp_up(e->qp, e->mtu < peer->mtu ? e->mtu : peer->mtu, peer->qp->qp_num, &peer->gid,
		 e->gid_idx);
}

static void end_close(struct end *e)
{
	REQUIRE(!ibv_destroy_qp(e->qp) && !ibv_destroy_cq(e->cq));
	if (e->mr)
		REQUIRE(!ibv_dereg_mr(e->mr));
	REQUIRE(!ibv_dereg_mr(e->part) && !ibv_dealloc_pd(e->pd) && !ibv_close_device(e->ctx));
	munmap(e->buf, ZBUF);
	close(e->fd);
	free(e->side);
}

static void pair_open(struct end e[2])
{
	const char *na = getenv("VT_DEV_A"), *nb = getenv("VT_DEV_B");

	end_open(&e[0], na ? na : "uroce0");
	end_open(&e[1], nb ? nb : (na ? na : "uroce0"));
	end_connect(&e[0], &e[1]);
	end_connect(&e[1], &e[0]);
}

/* A list of up to 4 SGEs covering len bytes of e's big MR from about
 * off, with random cut points and gaps; with part, one of them (if it
 * fits) is the partial-page MR. The byte addresses in order go to
 * addr[] (the model). Returns the number of SGEs. */
static int sges(struct end *e, uint32_t off, uint32_t len, bool part, struct ibv_sge *sg,
		uint8_t **addr)
{
	unsigned n = 1 + vt_rnd() % 4, k = 0, pk = part ? vt_rnd() % n : 99;
	uint32_t left = len, pos = off;

	for (unsigned i = 0; i < n && left; i++) {
		uint32_t l = i == n - 1 ? left : (left > 1 ? 1 + vt_rnd() % left : left);

		if (l > left)
			l = left;
		if (i == pk && l <= PART_LEN) {
			uint32_t po = vt_rnd() % (PART_LEN - l + 1);
			sg[k] = (struct ibv_sge){ (uintptr_t)e->side + PART_OFF + po, l, e->part->lkey };
		} else {
			sg[k] = (struct ibv_sge){ (uintptr_t)e->buf + pos, l, e->mr->lkey };
			pos += l + vt_rnd() % 64;
		}
		for (uint32_t b = 0; b < l; b++)
			*addr++ = (uint8_t *)(uintptr_t)sg[k].addr + b;
		k++;
		left -= l;
	}
	REQUIRE(!left && pos <= ZBUF);
	return (int)k;
}

static void wait_ok(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[8];

	for (int i = 0; i < n; i++) {
		vt_poll_n(cq, 1, wc);
		if (wc[0].status != IBV_WC_SUCCESS)
			fprintf(stderr, "wr %llu: %s\n", (unsigned long long)wc[0].wr_id,
				ibv_wc_status_str(wc[0].status));
		REQUIRE(wc[0].status == IBV_WC_SUCCESS);
	}
}

static const uint32_t lens[] = { 1, 100, 511, 512, 513, 1023, 1024, 1025, 2048, 4095, 4096,
				 4097, 8195, 12288, 65536, 65537, 131072 + 77, 262144 };

/* One message of op from s to d, checked byte by byte (and the bytes
 * around the target untouched). */
static void one(struct end *s, struct end *d, enum ibv_wr_opcode op, uint32_t len)
{
	static uint8_t *la[ZBUF], *ra[ZBUF];
	struct ibv_sge ls[4], rs[4];
	uint32_t loff = 1 + vt_rnd() % 8192, roff = 1 + vt_rnd() % 8192; /* a guard byte before */
	bool part = len <= PART_LEN && vt_rnd() % 2;
	int nl = sges(s, loff, len, part, ls, la);
	/* READ: the local SGEs are written, the remote range read */
	uint8_t **src = op == IBV_WR_RDMA_READ ? ra : la, **dst = op == IBV_WR_RDMA_READ ? la : ra;
	int nr = 0;

	if (op == IBV_WR_SEND) {
		nr = sges(d, roff, len, vt_rnd() % 2, rs, ra);
		struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = rs, .num_sge = nr }, *rb;
		REQUIRE(!ibv_post_recv(d->qp, &rw, &rb));
	} else {
		for (uint32_t b = 0; b < len; b++)
			ra[b] = d->buf + roff + b;
	}
	for (uint32_t b = 0; b < len; b++) {
		*src[b] = (uint8_t)vt_rnd();
		*dst[b] = (uint8_t)~*src[b];
	}
	uint8_t guard_lo = *(dst[0] - 1), guard_hi = *(dst[len - 1] + 1);
	struct ibv_send_wr w = { .wr_id = 2, .sg_list = ls, .num_sge = nl, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op != IBV_WR_SEND) {
		w.wr.rdma.remote_addr = (uintptr_t)d->buf + roff;
		w.wr.rdma.rkey = d->mr->rkey;
	}
	REQUIRE(!ibv_post_send(s->qp, &w, &bad));
	wait_ok(s->cq, 1);
	if (op == IBV_WR_SEND)
		wait_ok(d->cq, 1);
	for (uint32_t b = 0; b < len; b++)
		if (*dst[b] != *src[b]) {
			fprintf(stderr, "op %d len %u nsge %d/%d: byte %u is 0x%02x, want 0x%02x\n",
				op, len, nl, nr, b, *dst[b], *src[b]);
			REQUIRE(0);
		}
	REQUIRE(*(dst[0] - 1) == guard_lo && *(dst[len - 1] + 1) == guard_hi);
}

static void stats(struct uroce_port_stats *p)
{
	REQUIRE(vt_port_stats(p) == 0);
	fprintf(stderr, "tx_zc %llu (%llu bytes), rx_seg %llu, rx_lin %llu, "
		"zc_unmap_deferred %llu\n", (unsigned long long)p->tx_zc,
		(unsigned long long)p->tx_zc_bytes, (unsigned long long)p->rx_seg,
		(unsigned long long)p->rx_lin, (unsigned long long)p->zc_unmap_deferred);
}

/* WRITE, READ and SEND of every size in lens[] and random ones, random
 * SGE layouts, both directions. VT_ZC=0: the daemon copies (--no-zc, a
 * capture): no zero-copy frame may be counted; otherwise some must be,
 * and on a ring port every one is received from its segments. */
static void case_integrity(void)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						  IBV_WR_SEND };
	const char *z = getenv("VT_ZC");
	bool want = !z || strcmp(z, "0");
	struct uroce_port_stats p0, p1;
	struct end e[2];

	(void)vt_seed();
	pair_open(e);
	stats(&p0);
	for (unsigned r = 0; r < 3 * 2 * (sizeof(lens) / sizeof(lens[0]) + 6); r++) {
		unsigned li = r / 6;
		uint32_t len = li < sizeof(lens) / sizeof(lens[0]) ? lens[li] : 1 + vt_rnd() % 300000;

		one(&e[r & 1], &e[!(r & 1)], ops[(r >> 1) % 3], len);
	}
	stats(&p1);
	if (want) {
		REQUIRE(p1.tx_zc > p0.tx_zc && p1.tx_zc_bytes - p0.tx_zc_bytes >= 512 * (p1.tx_zc - p0.tx_zc));
		if (!getenv("VT_DEV_B")) /* both ends of one loopback ring */
			REQUIRE(p1.rx_seg - p0.rx_seg == p1.tx_zc - p0.tx_zc);
		REQUIRE(p1.rx_lin == p0.rx_lin);
	} else {
		REQUIRE(p1.tx_zc == p0.tx_zc && p1.rx_seg == p0.rx_seg);
	}
	end_close(&e[0]);
	end_close(&e[1]);
}

/* K WRITEs of 64 KB posted, then the MR they are gathered from (src) or
 * placed into (dst) deregistered at once, while their frames may still
 * be queued. Each completes (successfully, or in error once the key is
 * gone); the daemon keeps a source mapping that queued frames point into
 * until they are freed (an unmap under them would crash it: the ASan
 * build reports it), and after ibv_dereg_mr of the target returns nothing
 * more lands in it. Then the daemon still serves a fresh MR. */
#define K 48
static void dereg(bool src)
{
	struct uroce_port_stats p0, p1;
	struct end e[2];
	struct ibv_wc wc;
	static uint8_t snap[ZBUF];

	(void)vt_seed();
	pair_open(e);
	stats(&p0);
	for (unsigned round = 0; round < 4; round++) {
		for (uint32_t i = 0; i < K * 65536; i++)
			e[0].buf[i % ZBUF] = (uint8_t)vt_rnd();
		for (int i = 0; i < K; i++) {
			struct ibv_sge sg = { (uintptr_t)e[0].buf + (i * 65536u) % ZBUF, 65536,
					      e[0].mr->lkey };
			struct ibv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1,
						 .opcode = IBV_WR_RDMA_WRITE,
						 .send_flags = IBV_SEND_SIGNALED }, *bad;
			w.wr.rdma.remote_addr = (uintptr_t)e[1].buf + (i * 65536u) % ZBUF;
			w.wr.rdma.rkey = e[1].mr->rkey;
			REQUIRE(!ibv_post_send(e[0].qp, &w, &bad));
		}
		struct end *x = &e[src ? 0 : 1];
		REQUIRE(!ibv_dereg_mr(x->mr));
		x->mr = NULL;
		if (!src)
			memcpy(snap, e[1].buf, ZBUF);
		unsigned ok = 0;
		for (int i = 0; i < K; i++) {
			vt_poll_n(e[0].cq, 1, &wc);
			ok += wc.status == IBV_WC_SUCCESS;
			REQUIRE(wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_LOC_PROT_ERR ||
			      wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_WR_FLUSH_ERR);
		}
		fprintf(stderr, "round %u: %u of %d WRITEs completed before the dereg\n", round,
			ok, K);
		if (!src)
			REQUIRE(!memcmp(snap, e[1].buf, ZBUF));
		/* a new QP pair and MR: the daemon still works */
		end_close(&e[0]);
		end_close(&e[1]);
		pair_open(e);
		one(&e[0], &e[1], IBV_WR_RDMA_WRITE, 65536 * 3 + 5);
	}
	stats(&p1);
	end_close(&e[0]);
	end_close(&e[1]);
}

static void case_dereg_src(void) { dereg(true); }
static void case_dereg_dst(void) { dereg(false); }

/* A client killed with its zero-copy frames in flight: the daemon cleans
 * up the context (its mappings stay until those frames are freed) and
 * serves the next client. */
static void case_kill(void)
{
	(void)vt_seed();
	for (unsigned round = 0; round < 4; round++) {
		pid_t pid = fork();

		REQUIRE(pid >= 0);
		if (pid == 0) {
			struct end e[2];

			pair_open(e);
			for (int i = 0; i < K; i++) {
				struct ibv_sge sg = { (uintptr_t)e[0].buf + (i * 65536u) % ZBUF, 65536,
						      e[0].mr->lkey };
				struct ibv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sg,
					.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE }, *bad;
				w.wr.rdma.remote_addr = (uintptr_t)e[1].buf + (i * 65536u) % ZBUF;
				w.wr.rdma.rkey = e[1].mr->rkey;
				if (ibv_post_send(e[0].qp, &w, &bad))
					break;
			}
			raise(SIGKILL);
			_exit(1);
		}
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		struct end e[2];
		pair_open(e);
		one(&e[0], &e[1], IBV_WR_RDMA_WRITE, 65536 * 2 + 1);
		one(&e[1], &e[0], IBV_WR_RDMA_READ, 65536 + 3);
		end_close(&e[0]);
		end_close(&e[1]);
	}
	struct uroce_port_stats p;
	stats(&p);
}

/* The source MR's file shrunk after registration (a hostile client, or a
 * careless one): the daemon's mapping has lost those pages, so no frame
 * is sent from it (a port would read it unguarded) and the gather's copy
 * faults in its guard; the pages the registration pinned are still the
 * registration's, and the WRITE carries them, as an HCA's would. The
 * daemon lives on and serves the next pair. */
static void case_truncate_src(void)
{
	struct end e[2];
	struct ibv_wc wc;

	(void)vt_seed();
	pair_open(e);
	int fd = memfd_create("vt-zc-trunc", MFD_CLOEXEC);
	REQUIRE(fd >= 0 && !ftruncate(fd, 65536));
	uint8_t *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(p != MAP_FAILED);
	memset(p, 0x5a, 65536);
	struct ibv_mr *mr = ibv_reg_mr(e[0].pd, p, 65536, ZACC);
	REQUIRE(mr);
	REQUIRE(!ftruncate(fd, 0)); /* the application must not touch p now */
	struct ibv_sge sg = { (uintptr_t)p, 65536, mr->lkey };
	struct ibv_send_wr w = { .wr_id = 5, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.rdma.remote_addr = (uintptr_t)e[1].buf;
	w.wr.rdma.rkey = e[1].mr->rkey;
	REQUIRE(!ibv_post_send(e[0].qp, &w, &bad));
	vt_poll_n(e[0].cq, 1, &wc);
	fprintf(stderr, "WRITE from a shrunk file: %s\n", ibv_wc_status_str(wc.status));
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	for (size_t i = 0; i < 65536; i++)
		if (e[1].buf[i] != 0x5a) {
			fprintf(stderr, "byte %zu: %#x, not the pinned page's\n", i, e[1].buf[i]);
			REQUIRE(0);
		}
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(p, 65536);
	close(fd);
	end_close(&e[0]);
	end_close(&e[1]);
	pair_open(e);
	one(&e[0], &e[1], IBV_WR_RDMA_WRITE, 65536 + 9);
	end_close(&e[0]);
	end_close(&e[1]);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "integrity", case_integrity },
		{ "dereg_src", case_dereg_src },
		{ "dereg_dst", case_dereg_dst },
		{ "kill", case_kill },
		{ "truncate_src", case_truncate_src },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
