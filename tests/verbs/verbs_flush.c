/* SPDX-License-Identifier: MIT */
/* IBTA 1.5 RDMA FLUSH through the shim, on a loopback RC pair (the
 * requester qx, built with ibv_create_qp_ex, flushes memory of the
 * responder peer, whose QP carries the FLUSH access flags):
 *  flush_ops    - ibv_query_device_ex reports both FLUSH capabilities;
 *                 FLUSH global after WRITEs and FLUSH persistent of the
 *                 whole MR complete in order with IBV_WC_FLUSH (8) and
 *                 their wr_id, the WRITEs' data in place; the wr_flush
 *                 slot is where newer rdma-core's ibv_qp_ex has it;
 *                 ibv_post_send cannot post a FLUSH (EINVAL, *bad_wr);
 *  flush_access - an MR without the flag: IBV_WC_REM_ACCESS_ERR; a
 *                 responder QP without it: IBV_WC_REM_INV_REQ_ERR;
 *  flush_bad    - no placement type, an unknown type bit, a reserved
 *                 level, a length over 4 GiB: ibv_wr_complete EINVAL and
 *                 nothing posted, the QP still usable;
 *  flush_file   - WRITE + FLUSH persistent into MRs over MAP_SHARED
 *                 mappings of a /dev/shm file (mapped by the daemon, which
 *                 msyncs it) and of a file on the root filesystem: the
 *                 bytes read back through a separate descriptor. */
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "vt.h"
#include <uroce/flush.h>

#define ACC_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

struct fl {
	struct vt t;
	struct ibv_qp *qx, *peer;
	struct ibv_qp_ex *ex;
};

/* qx (ibv_qp_ex, FLUSH among its send ops) -> peer, whose access flags
 * are RDMA WRITE plus peer_flush */
static void fl_init(struct fl *f, unsigned peer_flush)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	vt_init(&f->t, NULL);
	vt_qp_ex_attr(&f->t, &a, IBV_QPT_RC, 16, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | UROCE_QP_EX_WITH_FLUSH;
	f->ex = vt_qp_ex_init(&f->t, &a, IBV_ACCESS_REMOTE_WRITE, &f->qx);
	f->peer = vt_qp(&f->t, IBV_QPT_RC, f->t.scq, f->t.rcq, NULL, 16, 16);
	m.qp_access_flags = ACC_RW | peer_flush;
	REQUIRE(!ibv_modify_qp(f->peer, &m, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS));
	vt_connect(&f->t, f->qx, f->peer);
}

/* An MR over the upper half of t.buf with RDMA WRITE and mr_flush */
static struct ibv_mr *fl_mr(struct fl *f, unsigned mr_flush)
{
	struct ibv_mr *mr = ibv_reg_mr(f->t.pd, f->t.buf + 32768, 32768, ACC_RW | mr_flush);

	REQUIRE(mr);
	return mr;
}

static void fl_fini(struct fl *f)
{
	REQUIRE(!ibv_destroy_qp(f->qx));
	REQUIRE(!ibv_destroy_qp(f->peer));
	vt_fini(&f->t);
}

static void fl_write(struct fl *f, uint64_t id, size_t off, uint32_t len, uint64_t raddr,
		     uint32_t rkey)
{
	ibv_wr_start(f->ex);
	f->ex->wr_id = id;
	f->ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(f->ex, rkey, raddr);
	ibv_wr_set_sge(f->ex, f->t.mr->lkey, (uintptr_t)f->t.buf + off, len);
	REQUIRE(!ibv_wr_complete(f->ex));
}

static int fl_flush(struct fl *f, uint64_t id, uint32_t rkey, uint64_t raddr, size_t len,
		    uint8_t type, uint8_t level)
{
	ibv_wr_start(f->ex);
	f->ex->wr_id = id;
	f->ex->wr_flags = IBV_SEND_SIGNALED;
	uroce_wr_flush(f->ex, rkey, raddr, len, type, level);
	return ibv_wr_complete(f->ex);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 29 + i * 13 + (i >> 9));
}

static void flush_ops(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc[4];
	struct ibv_mr *mr;
	struct fl f;
	uint8_t *dst;

	fl_init(&f, UROCE_ACCESS_FLUSH);
	REQUIRE(!ibv_query_device_ex(f.t.ctx, NULL, &dx));
	REQUIRE((dx.device_cap_flags_ex & (UROCE_DEVICE_FLUSH_GLOBAL | UROCE_DEVICE_FLUSH_PERSISTENT)) ==
	      (UROCE_DEVICE_FLUSH_GLOBAL | UROCE_DEVICE_FLUSH_PERSISTENT));
	/* newer rdma-core calls qp->wr_flush at this offset */
	REQUIRE(offsetof(struct uroce_qp_ex, wr_flush) == 352);
	REQUIRE(((struct uroce_qp_ex *)(void *)f.ex)->wr_flush != NULL);
	dst = f.t.buf + 32768;
	mr = fl_mr(&f, UROCE_ACCESS_FLUSH);
	fill(f.t.buf, 20000, 1);
	fl_write(&f, 1, 0, 12000, (uintptr_t)dst, mr->rkey);
	fl_write(&f, 2, 12000, 8000, (uintptr_t)dst + 12000, mr->rkey);
	REQUIRE(!fl_flush(&f, 3, mr->rkey, (uintptr_t)dst, 20000, UROCE_FLUSH_GLOBAL,
			UROCE_FLUSH_RANGE));
	REQUIRE(!fl_flush(&f, 4, mr->rkey, 0, 0, UROCE_FLUSH_PERSISTENT, UROCE_FLUSH_MR));
	vt_poll_n(f.t.scq, 4, wc);
	for (int i = 0; i < 4; i++) {
		REQUIRE(wc[i].wr_id == (uint64_t)i + 1 && wc[i].status == IBV_WC_SUCCESS);
		REQUIRE((int)wc[i].opcode == (i < 2 ? IBV_WC_RDMA_WRITE : UROCE_WC_FLUSH));
	}
	REQUIRE(!memcmp(dst, f.t.buf, 20000));
	/* ibv_send_wr has no FLUSH fields: only the ibv_qp_ex path posts it */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = (enum ibv_wr_opcode)UROCE_WR_OP_FLUSH;
	wr.wr.rdma.rkey = mr->rkey;
	REQUIRE(ibv_post_send(f.qx, &wr, &bad) == EINVAL && bad == &wr);
	REQUIRE(!ibv_dereg_mr(mr));
	fl_fini(&f);
}

/* One FLUSH that fails at the responder with status want. */
static void flush_fails(unsigned mr_flush, unsigned peer_flush, uint8_t type,
			enum ibv_wc_status want)
{
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct fl f;

	fl_init(&f, peer_flush);
	mr = fl_mr(&f, mr_flush);
	REQUIRE(!fl_flush(&f, 7, mr->rkey, (uintptr_t)f.t.buf + 32768, 64, type,
			UROCE_FLUSH_RANGE));
	vt_poll_n(f.t.scq, 1, &wc);
	if (wc.wr_id != 7 || wc.status != want) {
		fprintf(stderr, "FLUSH type %u: status %d, want %d\n", type, wc.status, want);
		exit(1);
	}
	REQUIRE(!ibv_dereg_mr(mr));
	fl_fini(&f);
}

static void flush_access(void)
{
	flush_fails(0, UROCE_ACCESS_FLUSH, UROCE_FLUSH_GLOBAL, IBV_WC_REM_ACCESS_ERR);
	flush_fails(UROCE_ACCESS_FLUSH_GLOBAL, UROCE_ACCESS_FLUSH, UROCE_FLUSH_PERSISTENT,
		    IBV_WC_REM_ACCESS_ERR);
	flush_fails(UROCE_ACCESS_FLUSH, UROCE_ACCESS_FLUSH_GLOBAL, UROCE_FLUSH_PERSISTENT,
		    IBV_WC_REM_INV_REQ_ERR);
	flush_fails(UROCE_ACCESS_FLUSH, 0, UROCE_FLUSH_GLOBAL, IBV_WC_REM_INV_REQ_ERR);
}

static void flush_bad(void)
{
	static const struct { uint8_t type, level; size_t len; } bad[] = {
		{ 0, UROCE_FLUSH_RANGE, 8 },
		{ 4, UROCE_FLUSH_RANGE, 8 },
		{ UROCE_FLUSH_GLOBAL, 2, 8 },
		{ UROCE_FLUSH_GLOBAL, UROCE_FLUSH_RANGE, (size_t)1 << 32 },
	};
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct fl f;

	fl_init(&f, UROCE_ACCESS_FLUSH);
	mr = fl_mr(&f, UROCE_ACCESS_FLUSH);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		REQUIRE(fl_flush(&f, 8, mr->rkey, (uintptr_t)f.t.buf + 32768, bad[i].len,
			       bad[i].type, bad[i].level) == EINVAL);
	usleep(50 * 1000);
	REQUIRE(ibv_poll_cq(f.t.scq, 1, &wc) == 0);
	REQUIRE(!fl_flush(&f, 9, mr->rkey, (uintptr_t)f.t.buf + 32768, 8,
			UROCE_FLUSH_GLOBAL | UROCE_FLUSH_PERSISTENT, UROCE_FLUSH_RANGE));
	vt_poll_n(f.t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 9 && wc.status == IBV_WC_SUCCESS && (int)wc.opcode == UROCE_WC_FLUSH);
	REQUIRE(!ibv_dereg_mr(mr));
	fl_fini(&f);
}

/* WRITE + FLUSH persistent into a MAP_SHARED mapping of path; the file
 * read through another descriptor holds the bytes. */
static void file_case(struct fl *f, const char *path, unsigned seed)
{
	const size_t len = 65536;
	uint8_t back[8192];
	struct ibv_wc wc[2];
	struct ibv_mr *mr;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rfd;
	uint8_t *map;

	REQUIRE(fd >= 0);
	REQUIRE(!ftruncate(fd, (off_t)len));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(map != MAP_FAILED);
	mr = ibv_reg_mr(f->t.pd, map, len, ACC_RW | UROCE_ACCESS_FLUSH);
	REQUIRE(mr);
	fill(f->t.buf, sizeof(back), seed);
	fl_write(f, 20, 0, sizeof(back), (uintptr_t)map + 4096, mr->rkey);
	REQUIRE(!fl_flush(f, 21, mr->rkey, (uintptr_t)map + 4096, sizeof(back),
			UROCE_FLUSH_PERSISTENT, UROCE_FLUSH_RANGE));
	vt_poll_n(f->t.scq, 2, wc);
	REQUIRE(wc[1].wr_id == 21 && wc[1].status == IBV_WC_SUCCESS &&
	      (int)wc[1].opcode == UROCE_WC_FLUSH);
	/* the file opened again by its name: what it holds, not our mapping */
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	REQUIRE(rfd >= 0);
	REQUIRE(pread(rfd, back, sizeof(back), 4096) == (ssize_t)sizeof(back));
	REQUIRE(!memcmp(back, f->t.buf, sizeof(back)));
	close(rfd);
	REQUIRE(!ibv_dereg_mr(mr));
	munmap(map, len);
	close(fd);
}

static void flush_file(void)
{
	char path[96];
	struct fl f;

	fl_init(&f, UROCE_ACCESS_FLUSH);
	snprintf(path, sizeof(path), "/dev/shm/uroce-s5-flush-%d", (int)getpid());
	file_case(&f, path, 3);
	snprintf(path, sizeof(path), "/var/tmp/uroce-s5-flush-%d", (int)getpid());
	file_case(&f, path, 4);
	fl_fini(&f);
}

static const struct vt_case cases[] = {
	{ "flush_ops", flush_ops },
	{ "flush_access", flush_access },
	{ "flush_bad", flush_bad },
	{ "flush_file", flush_file },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
