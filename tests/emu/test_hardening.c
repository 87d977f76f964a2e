/* SPDX-License-Identifier: MIT */
/* Hardening of the shared memory and descriptors a client gets (issue 7):
 * one case per run (argv[2]), each against its own daemon. Every case
 * lets a misbehaving client "a" do its worst, then asserts that the
 * daemon is alive and serves a second, well-behaved client "b" with
 * verified loopback traffic (an RC SEND of seeded random bytes, checked
 * byte for byte) within bounded time.
 *
 *   seal      ftruncate of the doorbell, CQ (and resized CQ), QP and SRQ
 *             (and grown SRQ) memfds: EPERM, the daemon keeps going
 *   evpipe    the completion channel's read end made blocking and small,
 *             filled past capacity: events are kept, in order, not lost
 *   evlost    the same channel filled past the daemon's backlog: the
 *             records it drops are counted in the port stats (evq_lost)
 *             and the count is what the reader misses
 *   ctlflood  a client that sends requests but never reads replies is
 *             dropped (EOF), the engine is not stalled
 *   wake      the wake descriptor: a write-only end, cannot be drained;
 *             closing it does not disturb the daemon
 *   flush     UD QP, 8-entry CQ, 64 failing WRs: the SQ flush overruns
 *             the CQ; the daemon answers at once and stops on SIGTERM
 *   prodback  an SQ producer index moved back behind fetched WQEs: the
 *             daemon keeps serving (the fetch loop ran 2^32 times)
 *   dpdkdir   no DPDK runtime directory after a clean exit; a stale one
 *             of a dead daemon removed at start, others left alone
 *   mrmap     UROCE_OP_MAP_MR with descriptors that are not the MR's
 *             memory (another memfd, one mapped elsewhere, a wrong
 *             offset, read-only for a writable MR, a file on disk, a
 *             range outside the MR): refused, and WRITEs into the MR
 *             land in it through the old path (counted) while the other
 *             files stay untouched; the right descriptor is mapped
 *   arena     QP rings in the context's arena (UROCE_OP_CREATE_QP_ARENA):
 *             sealed chunks sent once, no overlap, freed ranges reused
 *             zeroed, own memfd for large rings, ENOMEM at the memory
 *             limit and as many again after freeing, a client scribbling
 *             over its whole arena
 *   mbox      the control mailbox misused: huge length, runt, an op that
 *             needs a descriptor, a reply with one (on the socket), a
 *             flood of sequence numbers
 *   memchan   UROCE_OP_MEM_CHANNEL with what is not a fresh disabled
 *             io_uring of the client's (a memfd, an enabled ring, one
 *             with its own restrictions or files, an SQ-polling one,
 *             twice): refused; then a proper channel whose client does
 *             its worst with its ring (submits itself, NOP and other
 *             registrations refused by the daemon's restrictions;
 *             garbage over its submission and completion queues, its
 *             own reads and writes on the daemon's pipes): the daemon
 *             survives, pinned WRITEs land or fail, others are served
 *
 * Usage: test_emu_hardening UROCED CASE [SEED] */
#include "emu_test.h"

#include <dirent.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <sys/syscall.h>

static uint64_t seed = 0x5eed0007;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static bool alive(struct t_daemon *d)
{
	int st;
	return d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == 0;
}

/* ---------------- a well-behaved client: loopback RC traffic ---------------- */

struct t_rc {
	struct t_client *c;
	uint32_t pd, cq_handle, lkey;
	struct uroce_create_cq_rep cq;
	struct uroce_create_qp_rep qp;
	struct t_ring cqr, sq, rq;
	uint8_t *qmap, *cqmap;
	uint32_t cq_cons;
};

/* RC QP connected to dest (itself: the default port is a loopback ring),
 * local ACK timeout code tmo */
static int t_rc_up_to(struct t_client *c, struct uroce_create_qp_rep *qp, uint32_t dest,
		      uint8_t tmo)
{
	struct uroce_modify_qp_req mq = { .handle = qp->handle };
	int rc;

	mq.attr.qp_state = IBV_QPS_INIT;
	mq.attr.port_num = 1;
	mq.attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if ((rc = t_modify(c, &mq)))
		return rc;
	memset(&mq.attr, 0, sizeof(mq.attr));
	mq.attr.qp_state = IBV_QPS_RTR;
	mq.attr.path_mtu = IBV_MTU_1024;
	mq.attr.dest_qp_num = dest;
	mq.attr.ah_attr.is_global = 1;
	mq.attr.ah_attr.port_num = 1;
	mq.attr.ah_attr.grh.sgid_index = 1;
	mq.attr.ah_attr.grh.dgid = c->hello.gids[1];
	mq.attr.ah_attr.grh.hop_limit = 1;
	mq.attr.max_dest_rd_atomic = 1;
	mq.attr.min_rnr_timer = 1;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if ((rc = t_modify(c, &mq)))
		return rc;
	memset(&mq.attr, 0, sizeof(mq.attr));
	mq.attr.qp_state = IBV_QPS_RTS;
	mq.attr.timeout = tmo;
	mq.attr.retry_cnt = 7;
	mq.attr.rnr_retry = 7;
	mq.attr.max_rd_atomic = 1;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return t_modify(c, &mq);
}

static int t_rc_up(struct t_client *c, struct uroce_create_qp_rep *qp)
{
	return t_rc_up_to(c, qp, qp->qpn, 14);
}

static uint8_t t_buf[2][4096];

/* PD, MR over t_buf[k], a CQ (channel or -1), an RC QP up and connected
 * to itself. 0 or -errno. */
static int t_rc_open(struct t_rc *r, struct t_client *c, int k, int32_t channel)
{
	int rc, fd;

	memset(r, 0, sizeof(*r));
	r->c = c;
	if ((rc = t_pd(c, &r->pd)))
		return rc;
	struct uroce_reg_mr_req mq = { .pin = UROCE_PIN_NONE, .pd = r->pd, .access = IBV_ACCESS_LOCAL_WRITE,
				       .addr = (uintptr_t)t_buf[k], .length = sizeof(t_buf[k]),
				       .iova = (uintptr_t)t_buf[k] };
	struct uroce_reg_mr_rep mr;
	if ((rc = t_call(c, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL, NULL)))
		return rc;
	r->lkey = mr.lkey;
	struct uroce_create_cq_req cq = { .cqe = 64, .channel = channel, .user_handle = 0xcafe };
	int fds[4];
	unsigned nf = 0;
	rc = t_call(c, UROCE_OP_CREATE_CQ, &cq, sizeof(cq), NULL, 0, &r->cq, sizeof(r->cq), fds, &nf);
	if (rc)
		return rc;
	if (nf != 1)
		return -EPROTO;
	r->cqmap = mmap(NULL, r->cq.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (r->cqmap == MAP_FAILED)
		return -errno;
	r->cqr = (struct t_ring){ r->cqmap, r->cq.entries, UROCE_CQE_SIZE };
	if ((rc = t_qp(c, r->pd, r->cq.handle, r->cq.handle, IBV_QPT_RC, &r->qp, &fd)))
		return rc;
	r->qmap = mmap(NULL, r->qp.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->qmap == MAP_FAILED)
		return -errno;
	r->sq = (struct t_ring){ r->qmap + r->qp.sq_offset, r->qp.sq_entries, r->qp.sq_stride };
	r->rq = (struct t_ring){ r->qmap + r->qp.rq_offset, r->qp.rq_entries, r->qp.rq_stride };
	return t_rc_up(c, &r->qp);
}

/* An inline SEND or RDMA WRITE (to raddr/rkey) of len bytes of src, signaled. */
static void t_rc_send_op(struct t_rc *r, uint8_t op, const uint8_t *src, uint32_t len,
			 uint64_t raddr, uint32_t rkey, uint64_t id)
{
	uint32_t p = __atomic_load_n(r_prod(&r->sq), __ATOMIC_RELAXED);
	struct uroce_send_wqe *sw = r_slot(&r->sq, p);
	memset(sw, 0, UROCE_SEND_WQE_HDR);
	sw->wr_id = id;
	sw->opcode = op;
	sw->send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	sw->inline_len = len;
	if (op == IBV_WR_RDMA_WRITE) {
		sw->rdma.remote_addr = raddr;
		sw->rdma.rkey = rkey;
	}
	memcpy((uint8_t *)sw + UROCE_SEND_WQE_HDR, src, len);
	__atomic_store_n(r_prod(&r->sq), p + 1, __ATOMIC_RELEASE);
	t_ring(r->c, r->qp.db_index);
}

/* Post a receive into t_buf[k] and an inline SEND of len bytes from src. */
static void t_rc_post(struct t_rc *r, int k, const uint8_t *src, uint32_t len, uint64_t id)
{
	uint32_t p = __atomic_load_n(r_prod(&r->rq), __ATOMIC_RELAXED);
	struct uroce_recv_wqe *rw = r_slot(&r->rq, p);
	struct uroce_sge *sge = (struct uroce_sge *)(rw + 1);
	rw->wr_id = id;
	rw->num_sge = 1;
	sge->addr = (uintptr_t)t_buf[k];
	sge->length = sizeof(t_buf[k]);
	sge->lkey = r->lkey;
	__atomic_store_n(r_prod(&r->rq), p + 1, __ATOMIC_RELEASE);

	t_rc_send_op(r, IBV_WR_SEND, src, len, 0, 0, id);
}

/* Take n CQEs (all successful) within ms; 0 or -1. */
static int t_rc_poll(struct t_rc *r, int n, int ms)
{
	uint64_t end = t_now_ms() + (uint64_t)ms;
	while (n > 0) {
		uint32_t prod = __atomic_load_n(r_prod(&r->cqr), __ATOMIC_ACQUIRE);
		if (prod == r->cq_cons) {
			if (t_now_ms() > end) {
				fprintf(stderr, "no completion within %d ms\n", ms);
				return -1;
			}
			usleep(200);
			continue;
		}
		struct uroce_cqe *e = r_slot(&r->cqr, r->cq_cons);
		if (e->status != IBV_WC_SUCCESS) {
			fprintf(stderr, "completion status %u opcode %u\n", e->status, e->opcode);
			return -1;
		}
		/* as the shim does: a small payload left in the ring goes to
		 * the receive buffer when the completion is taken (abi.h) */
		const struct uroce_cqe_inl *in = (const void *)(r->cqmap +
			UROCE_CQ_INL_OFFSET(r->cq.entries));
		in += r->cq_cons & (r->cq.entries - 1);
		for (uint32_t i = 0, off = 0; i < e->inl_nseg && i < UROCE_CQE_INL_SEGS; i++) {
			uint32_t l = in->seg[i].len < e->byte_len - off ? in->seg[i].len
								      : e->byte_len - off;
			memcpy((void *)(uintptr_t)in->seg[i].addr, in->data + off, l);
			off += l;
		}
		r->cq_cons++;
		__atomic_store_n(r_cons(&r->cqr), r->cq_cons, __ATOMIC_RELEASE);
		n--;
	}
	return 0;
}

static void t_rc_close(struct t_rc *r)
{
	if (r->qmap && r->qmap != MAP_FAILED)
		munmap(r->qmap, r->qp.map_size);
	if (r->cqmap && r->cqmap != MAP_FAILED)
		munmap(r->cqmap, r->cq.map_size);
	memset(r, 0, sizeof(*r));
}

/* A new client b on d: one verified SEND within 20 s. */
static void check_served(struct t_daemon *d, const char *after)
{
	struct t_client b;
	struct t_rc r;
	uint8_t msg[256];

	REQUIRE(alive(d), "daemon dead after %s", after);
	REQUIRE(t_client_open(&b, d->sock) == 0, "client b after %s", after);
	REQUIRE(t_rc_open(&r, &b, 1, -1) == 0, "client b's QP after %s", after);
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < sizeof(msg); i++)
			msg[i] = (uint8_t)rnd();
		uint32_t len = 1 + (uint32_t)(rnd() % 64);
		memset(t_buf[1], 0, sizeof(t_buf[1]));
		t_rc_post(&r, 1, msg, len, (uint64_t)round);
		REQUIRE(t_rc_poll(&r, 2, 20000) == 0, "b's traffic after %s", after);
		REQUIRE(memcmp(t_buf[1], msg, len) == 0, "b's data after %s", after);
	}
	t_rc_close(&r);
	t_client_close(&b);
}

/* ---------------- memchan: a hostile memory channel ---------------- */

struct mc_ring {
	int fd;
	struct io_uring_params p;
	uint8_t *probe;
};

static int mc_reg(int fd, unsigned op, const void *arg, unsigned n)
{
	return syscall(__NR_io_uring_register, fd, op, arg, n) < 0 ? -errno : 0;
}

static int mc_update(int fd, uint32_t slot, void *addr, size_t len)
{
	struct iovec iov = { addr, len };
	struct io_uring_rsrc_update2 up = { .offset = slot, .data = (uintptr_t)&iov, .nr = 1 };

	return (int)syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS_UPDATE, &up,
			    sizeof(up));
}

/* A ring as the shim makes one (flags: more to spoil it), with its probe
 * page in buffer 0 */
static void mc_open(struct mc_ring *m, unsigned flags)
{
	struct io_uring_rsrc_register rr = { .nr = 16384, .flags = IORING_RSRC_REGISTER_SPARSE };

	memset(&m->p, 0, sizeof(m->p));
	m->p.flags = flags;
	m->fd = (int)syscall(__NR_io_uring_setup, 64, &m->p);
	REQUIRE(m->fd >= 0, "io_uring_setup: %s", strerror(errno));
	m->probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m->probe != MAP_FAILED, "probe");
	REQUIRE(mc_reg(m->fd, IORING_REGISTER_BUFFERS2, &rr, sizeof(rr)) == 0, "sparse buffers");
	REQUIRE(mc_update(m->fd, 0, m->probe, 4096) == 1, "probe buffer");
}

static int mc_send(struct t_client *c, const struct mc_ring *m, int fd)
{
	struct uroce_mem_chan_req q = {
		.ring_fd = fd, .sq_entries = m->p.sq_entries, .cq_entries = m->p.cq_entries,
		.nbufs = 16384, .sq_head = m->p.sq_off.head, .sq_tail = m->p.sq_off.tail,
		.sq_mask = m->p.sq_off.ring_mask, .sq_array = m->p.sq_off.array,
		.cq_head = m->p.cq_off.head, .cq_tail = m->p.cq_off.tail,
		.cq_mask = m->p.cq_off.ring_mask, .cq_cqes = m->p.cq_off.cqes,
		.probe = (uintptr_t)m->probe,
	};
	return t_call(c, UROCE_OP_MEM_CHANNEL, &q, sizeof(q), NULL, 0, NULL, 0, NULL, NULL);
}

static void mc_close(struct mc_ring *m)
{
	close(m->fd);
	munmap(m->probe, 4096);
}

/* Submit one SQE of our own on ring m (after the daemon enabled it) and
 * return its completion's result. */
static int mc_own_sqe(struct mc_ring *m, uint8_t opcode, uint8_t flags)
{
	size_t sqlen = m->p.sq_off.array + m->p.sq_entries * 4;
	size_t cqlen = m->p.cq_off.cqes + m->p.cq_entries * sizeof(struct io_uring_cqe);
	size_t len = sqlen > cqlen ? sqlen : cqlen;
	uint8_t *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, IORING_OFF_SQ_RING);
	struct io_uring_sqe *sq = mmap(NULL, m->p.sq_entries * sizeof(*sq), PROT_READ | PROT_WRITE,
				       MAP_SHARED, m->fd, IORING_OFF_SQES);
	REQUIRE(r != MAP_FAILED && sq != MAP_FAILED, "map our own ring");
	uint32_t *tail = (uint32_t *)(r + m->p.sq_off.tail), t = *tail;
	uint32_t i = t & (m->p.sq_entries - 1);
	memset(&sq[i], 0, sizeof(sq[i]));
	sq[i].opcode = opcode;
	sq[i].flags = flags;
	sq[i].user_data = 0x51;
	((uint32_t *)(r + m->p.sq_off.array))[i] = i;
	__atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
	int res = -9999;
	if (syscall(__NR_io_uring_enter, m->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) == 1) {
		uint32_t *h = (uint32_t *)(r + m->p.cq_off.head);
		uint32_t ct = __atomic_load_n((uint32_t *)(r + m->p.cq_off.tail), __ATOMIC_ACQUIRE);
		struct io_uring_cqe *cq = (void *)(r + m->p.cq_off.cqes);
		for (; *h != ct; (*h)++)
			if (cq[*h & (m->p.cq_entries - 1)].user_data == 0x51)
				res = cq[*h & (m->p.cq_entries - 1)].res;
	}
	/* then spoil everything we can reach of it */
	for (uint32_t k = 0; k < m->p.sq_entries; k++)
		for (size_t b = 0; b < sizeof(sq[k]); b++)
			((uint8_t *)&sq[k])[b] = (uint8_t)rnd();
	for (size_t b = 0; b < len; b++)
		if (rnd() & 1)
			r[b] = (uint8_t)rnd();
	munmap(sq, m->p.sq_entries * sizeof(*sq));
	munmap(r, len);
	return res;
}

/* A WRITE of fresh bytes from a's QP into its pinned MR; whether it
 * landed */
static bool mc_write(struct t_rc *r, uint32_t rkey, uint8_t *dst, uint64_t id)
{
	uint8_t msg[48];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(rnd() | 1);
	t_rc_send_op(r, IBV_WR_RDMA_WRITE, msg, sizeof(msg), (uintptr_t)dst, rkey, id);
	return t_rc_poll(r, 1, 20000) == 0 && !memcmp(dst, msg, sizeof(msg));
}

static void case_memchan(struct t_daemon *d)
{
	struct t_client a;
	struct t_rc r;
	struct mc_ring m;
	int rc;

	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	REQUIRE(t_rc_open(&r, &a, 0, -1) == 0, "a's QP");
	int mfd = memfd_create("not-a-ring", MFD_CLOEXEC);
	struct mc_ring fake = { .fd = mfd };
	fake.p.sq_entries = 64;
	fake.p.cq_entries = 128;
	CHECK((rc = mc_send(&a, &fake, mfd)) == -EINVAL, "a memfd: %d", rc);
	CHECK((rc = mc_send(&a, &fake, 9999)) == -EINVAL, "no such descriptor: %d", rc);
	close(mfd);
	/* enabled already: restrictions can no longer be set */
	mc_open(&m, 0);
	CHECK((rc = mc_send(&a, &m, m.fd)) == -EINVAL, "an enabled ring: %d", rc);
	mc_close(&m);
	/* the client's own restrictions (everything allowed) first */
	mc_open(&m, IORING_SETUP_R_DISABLED);
	struct io_uring_restriction res[2] = {
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_NOP },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_OPENAT },
	};
	REQUIRE(mc_reg(m.fd, IORING_REGISTER_RESTRICTIONS, res, 2) == 0, "own restrictions");
	CHECK((rc = mc_send(&a, &m, m.fd)) == -EINVAL, "a ring with its own restrictions: %d", rc);
	mc_close(&m);
	/* files of the client's own in the table */
	mc_open(&m, IORING_SETUP_R_DISABLED);
	int own[1] = { open("/dev/null", O_RDWR | O_CLOEXEC) };
	REQUIRE(mc_reg(m.fd, IORING_REGISTER_FILES, own, 1) == 0, "own files");
	CHECK((rc = mc_send(&a, &m, m.fd)) == -EINVAL, "a ring with its own files: %d", rc);
	mc_close(&m);
	close(own[0]);
	/* a kernel thread polling the queue would run our submissions late */
	mc_open(&m, IORING_SETUP_R_DISABLED | IORING_SETUP_SQPOLL);
	CHECK((rc = mc_send(&a, &m, m.fd)) == -EINVAL, "an SQ-polling ring: %d", rc);
	mc_close(&m);

	/* a proper one, and a pinned MR over t_buf[0] */
	mc_open(&m, IORING_SETUP_R_DISABLED);
	CHECK((rc = mc_send(&a, &m, m.fd)) == 0, "the channel: %d", rc);
	CHECK((rc = mc_send(&a, &m, m.fd)) == -EBUSY, "a second channel: %d", rc);
	REQUIRE(mc_update(m.fd, 1, t_buf[0], sizeof(t_buf[0])) == 1, "pin t_buf[0]");
	struct uroce_reg_mr_req mq = { .pin = UROCE_PIN_RING, .slot = 1, .pd = r.pd,
				       .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
				       .addr = (uintptr_t)t_buf[0], .length = sizeof(t_buf[0]),
				       .iova = (uintptr_t)t_buf[0] };
	struct uroce_reg_mr_rep mr;
	REQUIRE(t_call(&a, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
		       NULL) == 0, "pinned MR");
	mq.slot = 0; /* the probe page is the daemon's */
	CHECK((rc = t_call(&a, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
			   NULL)) == -EINVAL, "an MR on the probe buffer: %d", rc);
	mq.slot = 16383;
	mq.length = 2ull << 30; /* two buffers from the last one */
	CHECK((rc = t_call(&a, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
			   NULL)) != 0, "buffers past the table: %d", rc);
	mq.slot = 1;
	mq.length = sizeof(t_buf[0]);
	REQUIRE(t_call(&a, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
		       NULL) == 0, "pinned MR");
	CHECK(mc_write(&r, mr.rkey, t_buf[0] + 100, 1), "a pinned WRITE lands");
	/* what the daemon allowed: its two operations on fixed files,
	 * buffer updates; nothing else, not even for the ring's owner */
	CHECK((rc = mc_reg(m.fd, IORING_REGISTER_FILES_UPDATE, &(struct io_uring_files_update){ 0 },
			   1)) == -EACCES, "a file table update: %d", rc);
	CHECK((rc = mc_reg(m.fd, IORING_REGISTER_PERSONALITY, NULL, 0)) == -EACCES,
	      "a personality: %d", rc);
	rc = mc_own_sqe(&m, IORING_OP_NOP, 0);
	CHECK(rc == -EACCES, "a NOP of the client's own: %d", rc);
	/* after the garbage: whatever a's traffic does, it stays a's */
	for (int k = 0; k < 4; k++) {
		rc = mc_own_sqe(&m, IORING_OP_READ_FIXED, IOSQE_FIXED_FILE);
		(void)mc_write(&r, mr.rkey, t_buf[0] + 200, 2 + (uint64_t)k);
	}
	check_served(d, "memchan");
	mc_close(&m);
	t_rc_close(&r);
	t_client_close(&a);
	check_served(d, "memchan after a left");
}

static int finish(struct t_daemon *d)
{
	int rc = t_daemon_stop(d);
	CHECK(rc == 0, "daemon exit status %d", rc);
	t_rmdir(d);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}

/* ---------------- cases ---------------- */

static void check_sealed(int fd, const char *what)
{
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0, "fstat %s", what);
	errno = 0;
	CHECK(ftruncate(fd, 0) < 0 && errno == EPERM, "%s: shrink not refused (errno %d)", what, errno);
	errno = 0;
	CHECK(ftruncate(fd, st.st_size + 4096) < 0 && errno == EPERM,
	      "%s: grow not refused (errno %d)", what, errno);
	int seals = fcntl(fd, F_GET_SEALS);
	CHECK(seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
	      (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), "%s: seals %#x", what, seals);
	struct stat st2;
	CHECK(fstat(fd, &st2) == 0 && st2.st_size == st.st_size, "%s: size changed", what);
}

static void case_seal(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	check_sealed(a.db_fd, "doorbell page");

	struct t_rc r;
	REQUIRE(t_rc_open(&r, &a, 0, -1) == 0, "a's QP");
	/* CQ memfd, then a resize that copies out of the old ring */
	struct uroce_create_cq_rep cq;
	int fd;
	REQUIRE(t_cq(&a, 8, &cq, &fd) == 0, "cq");
	check_sealed(fd, "cq ring");
	close(fd);
	struct uroce_resize_cq_req rq = { .handle = cq.handle, .cqe = 100 };
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(&a, UROCE_OP_RESIZE_CQ, &rq, sizeof(rq), NULL, 0, &cq, sizeof(cq), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "resize cq: %d", rc);
	check_sealed(fds[0], "resized cq ring");
	close(fds[0]);
	rq.cqe = 10;
	rc = t_call(&a, UROCE_OP_RESIZE_CQ, &rq, sizeof(rq), NULL, 0, &cq, sizeof(cq), fds, &nf);
	CHECK(rc == 0, "second resize: %d", rc);
	if (rc == 0)
		close(fds[0]);
	/* QP rings */
	struct uroce_create_qp_rep qp;
	REQUIRE(t_qp(&a, r.pd, cq.handle, cq.handle, IBV_QPT_UD, &qp, &fd) == 0, "qp");
	check_sealed(fd, "qp rings");
	close(fd);
	/* SRQ ring, and the new one when it grows */
	struct uroce_create_srq_req sq = { .pd = r.pd, .max_wr = 8, .max_sge = 1, .user_handle = 5 };
	struct uroce_create_srq_rep srq;
	rc = t_call(&a, UROCE_OP_CREATE_SRQ, &sq, sizeof(sq), NULL, 0, &srq, sizeof(srq), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "srq: %d", rc);
	check_sealed(fds[0], "srq ring");
	close(fds[0]);
	struct uroce_modify_srq_req ms = { .handle = srq.handle, .attr_mask = IBV_SRQ_MAX_WR };
	ms.attr.max_wr = 1000;
	rc = t_call(&a, UROCE_OP_MODIFY_SRQ, &ms, sizeof(ms), NULL, 0, &srq, sizeof(srq), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "srq grow: %d", rc);
	check_sealed(fds[0], "grown srq ring");
	close(fds[0]);
	/* make the daemon use every mapping: traffic on a's own QP rings its
	 * doorbell page, touches the SQ/RQ/CQ */
	uint8_t msg[32];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)rnd();
	t_rc_post(&r, 0, msg, sizeof(msg), 1);
	CHECK(t_rc_poll(&r, 2, 20000) == 0, "a's own traffic");
	CHECK(memcmp(t_buf[0], msg, sizeof(msg)) == 0, "a's data");
	check_served(d, "ftruncate of every memfd");
	t_rc_close(&r);
	t_client_close(&a);
}

/* want armed completions on r's CQ, one at a time: each arm yields one
 * channel event (the arm word lives in the CQ ring header) */
static void fire_events(struct t_rc *r, int want)
{
	uint32_t *arm = (uint32_t *)(r->cqmap + offsetof(struct uroce_ring_hdr, arm));
	uint8_t msg[8] = { 1 };

	for (int i = 0; i < want; i++) {
		__atomic_fetch_or(arm, UROCE_ARM_NEXT, __ATOMIC_SEQ_CST);
		msg[1] = (uint8_t)i;
		t_rc_post(r, 0, msg, sizeof(msg), (uint64_t)i);
		REQUIRE(t_rc_poll(r, 2, 20000) == 0, "a's traffic, event %d", i);
	}
}

/* Read channel records until want arrived or 20 s passed; with check,
 * each must name the CQ's handle (0xcafe). Returns how many arrived. */
static int read_events(int cfd, int want, bool check)
{
	int got = 0;
	uint64_t end = t_now_ms() + 20000;

	while (got < want && t_now_ms() < end) {
		struct pollfd p = { .fd = cfd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		struct uroce_comp_event ev[64];
		ssize_t n = read(cfd, ev, sizeof(ev));
		REQUIRE(n > 0 && n % (ssize_t)sizeof(ev[0]) == 0, "channel read %zd", n);
		for (ssize_t i = 0; check && i < n / (ssize_t)sizeof(ev[0]); i++)
			CHECK(ev[i].cq_handle == 0xcafe, "event record %d: %#lx", got + (int)i,
			      (unsigned long)ev[i].cq_handle);
		got += (int)(n / (ssize_t)sizeof(ev[0]));
	}
	return got;
}

static void case_evpipe(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	/* what the daemon hands out are read ends, and the only ones */
	int fl = fcntl(a.async_r, F_GETFL);
	CHECK(fl >= 0 && (fl & O_ACCMODE) == O_RDONLY, "async fd is a read end (%#x)", fl);
	struct uroce_handle_msg ch;
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(&a, UROCE_OP_CREATE_COMP_CHANNEL, NULL, 0, NULL, 0, &ch, sizeof(ch), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "channel: %d", rc);
	int cfd = fds[0];
	fl = fcntl(cfd, F_GETFL);
	CHECK(fl >= 0 && (fl & O_ACCMODE) == O_RDONLY, "channel fd is a read end (%#x)", fl);
	/* the hostile part: blocking (clears O_NONBLOCK if it were set) and
	 * as small as a pipe can be, so it fills after a few hundred events */
	CHECK(fcntl(cfd, F_SETFL, fl & ~O_NONBLOCK) == 0, "clear O_NONBLOCK");
	int cap = fcntl(cfd, F_SETPIPE_SZ, 4096);
	REQUIRE(cap > 0, "F_SETPIPE_SZ: %s", strerror(errno));
	int want = cap / (int)sizeof(struct uroce_comp_event) + 100; /* 100 past full */
	fprintf(stderr, "pipe capacity %d bytes: %d events\n", cap, want);

	struct t_rc r;
	REQUIRE(t_rc_open(&r, &a, 0, (int32_t)ch.handle) == 0, "a's QP on the channel");
	fire_events(&r, want);
	/* nobody read the channel: the pipe is full and 100 events wait */
	check_served(d, "a full completion channel");
	int got = read_events(cfd, want, true);
	CHECK(got == want, "%d of %d events delivered", got, want);
	struct pollfd p = { .fd = cfd, .events = POLLIN };
	CHECK(poll(&p, 1, 200) == 0, "no event beyond the %d triggered", want);
	close(cfd);
	t_rc_close(&r);
	t_client_close(&a);
}

static uint64_t port_evq_lost(struct t_client *c)
{
	static struct uroce_query_stats_rep r;
	struct uroce_query_stats_req q = { 0, 0 };
	int rc = t_call(c, UROCE_OP_QUERY_STATS, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
	REQUIRE(rc == 0, "query stats: %d", rc);
	REQUIRE(r.port_stats_size == sizeof(r.port), "port record size %u", r.port_stats_size);
	return r.port.evq_lost;
}

/* EMU_EVQ_BACKLOG in emu/core/emu.h: not ABI, so the test only needs "more
 * than the pipe and the backlog together" */
#define T_EVQ_BACKLOG 256

static void case_evlost(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	CHECK(port_evq_lost(&a) == 0, "no lost event records before the test");
	struct uroce_handle_msg ch;
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(&a, UROCE_OP_CREATE_COMP_CHANNEL, NULL, 0, NULL, 0, &ch, sizeof(ch), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "channel: %d", rc);
	int cfd = fds[0];
	int cap = fcntl(cfd, F_SETPIPE_SZ, 4096);
	REQUIRE(cap > 0, "F_SETPIPE_SZ: %s", strerror(errno));
	int extra = 20 + (int)(rnd() % 50);
	int want = cap / (int)sizeof(struct uroce_comp_event) + T_EVQ_BACKLOG + extra;
	fprintf(stderr, "pipe capacity %d bytes: %d events (%d past pipe + backlog)\n", cap,
		want, extra);

	struct t_rc r;
	REQUIRE(t_rc_open(&r, &a, 0, (int32_t)ch.handle) == 0, "a's QP on the channel");
	fire_events(&r, want);
	check_served(d, "an overflowed completion channel");
	uint64_t lost = port_evq_lost(&a);
	CHECK(lost >= (uint64_t)extra, "evq_lost %lu, at least %d expected", (unsigned long)lost,
	      extra);
	int got = read_events(cfd, want - (int)lost, false);
	struct pollfd p = { .fd = cfd, .events = POLLIN };
	CHECK(poll(&p, 1, 200) == 0, "no event beyond the %d triggered", want);
	CHECK((uint64_t)got + lost == (uint64_t)want, "%d delivered + %lu lost != %d triggered", got,
	      (unsigned long)lost, want);
	CHECK(port_evq_lost(&a) == lost, "no more lost once the reader caught up");
	close(cfd);
	t_rc_close(&r);
	t_client_close(&a);
}

static void case_ctlflood(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	struct uroce_query_port_req qp = { .port_num = 1 };
	uint8_t buf[64];
	struct uroce_msg_hdr h = { .op = UROCE_OP_QUERY_PORT, .len = sizeof(h) + sizeof(qp) };
	int sent = 0;
	uint64_t end = t_now_ms() + 20000;
	/* requests, never a read: until the daemon stops taking them */
	while (sent < 200000 && t_now_ms() < end) {
		h.seq = (uint32_t)sent;
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), &qp, sizeof(qp));
		ssize_t n = send(a.fd, buf, h.len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN) {
				usleep(1000);
				if (!alive(d))
					break;
				continue;
			}
			break; /* EPIPE/ECONNRESET: dropped already */
		}
		sent++;
	}
	fprintf(stderr, "%d requests sent unread\n", sent);
	check_served(d, "a client that never reads its replies");
	/* the daemon hung up on a: after its queued replies, EOF */
	int eof = 0;
	end = t_now_ms() + 20000;
	while (!eof && t_now_ms() < end) {
		uint8_t rb[UROCE_MAX_MSG];
		ssize_t n = recv(a.fd, rb, sizeof(rb), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			eof = 1;
		else if (n < 0)
			usleep(1000);
	}
	CHECK(eof, "the flooding client was not dropped");
	t_client_close(&a);
}

static void case_wake(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	int fl = fcntl(a.wake_fd, F_GETFL);
	CHECK(fl >= 0 && (fl & O_ACCMODE) == O_WRONLY, "wake fd is write-only (%#x)", fl);
	uint64_t v;
	errno = 0;
	CHECK(read(a.wake_fd, &v, sizeof(v)) < 0 && errno == EBADF,
	      "the client can drain the wake descriptor (errno %d)", errno);
	/* blocking on our side changes nothing on the daemon's: fill it
	 * from a nonblocking copy, then ring doorbells over it */
	CHECK(fcntl(a.wake_fd, F_SETFL, fl & ~O_NONBLOCK) == 0, "clear O_NONBLOCK");
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a.wake_fd);
	int nb = open(path, O_WRONLY | O_NONBLOCK); /* a new description of the pipe */
	REQUIRE(nb >= 0, "reopen wake pipe: %s", strerror(errno));
	uint8_t junk[4096] = { 0 };
	for (int i = 0; i < 1000 && write(nb, junk, sizeof(junk)) > 0; i++)
		;
	close(nb);
	struct t_rc r;
	REQUIRE(t_rc_open(&r, &a, 0, -1) == 0, "a's QP");
	uint8_t msg[16] = { 7 };
	t_rc_post(&r, 0, msg, sizeof(msg), 1);
	CHECK(t_rc_poll(&r, 2, 20000) == 0, "a's traffic over a stuffed wake pipe");
	check_served(d, "a stuffed wake descriptor");
	/* the daemon's read end at EOF must not upset it either */
	close(a.wake_fd);
	a.wake_fd = -1;
	usleep(100000);
	check_served(d, "a closed wake descriptor");
	t_rc_close(&r);
	t_client_close(&a);
}

static void case_flush(struct t_daemon *d)
{
	struct t_client a;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	uint32_t pd;
	REQUIRE(t_pd(&a, &pd) == 0, "pd");
	struct uroce_create_cq_rep cq;
	REQUIRE(t_cq(&a, 8, &cq, NULL) == 0 && cq.entries == 8, "8-entry cq");
	struct uroce_create_qp_req q = {
		.pd = pd, .send_cq = cq.handle, .recv_cq = cq.handle, .srq = -1,
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 64, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct uroce_create_qp_rep qp;
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(&a, UROCE_OP_CREATE_QP, &q, sizeof(q), NULL, 0, &qp, sizeof(qp), fds, &nf);
	REQUIRE(rc == 0 && nf == 1 && qp.sq_entries >= 64, "ud qp: %d", rc);
	uint8_t *m = mmap(NULL, qp.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	REQUIRE(m != MAP_FAILED, "map");
	struct uroce_modify_qp_req mq = { .handle = qp.handle };
	mq.attr.qp_state = IBV_QPS_INIT;
	mq.attr.port_num = 1;
	mq.attr.qkey = 0x11111111;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	REQUIRE(t_modify(&a, &mq) == 0, "init");
	mq.attr.qp_state = IBV_QPS_RTR;
	mq.attr_mask = IBV_QP_STATE;
	REQUIRE(t_modify(&a, &mq) == 0, "rtr");
	mq.attr.qp_state = IBV_QPS_RTS;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	REQUIRE(t_modify(&a, &mq) == 0, "rts");
	/* 64 WRs that all fail (RDMA WRITE is no UD opcode): the first error
	 * moves the QP to SQE and flushes the other 63 into an 8-entry CQ */
	struct t_ring sq = { m + qp.sq_offset, qp.sq_entries, qp.sq_stride };
	for (uint32_t i = 0; i < 64; i++) {
		struct uroce_send_wqe *w = r_slot(&sq, i);
		memset(w, 0, UROCE_SEND_WQE_HDR);
		w->wr_id = i;
		w->opcode = IBV_WR_RDMA_WRITE;
		w->send_flags = IBV_SEND_SIGNALED;
	}
	__atomic_store_n(r_prod(&sq), 64, __ATOMIC_RELEASE);
	t_ring(&a, qp.db_index);
	/* the daemon answers (t_call times out after 10 s; the runaway loop
	 * took ~20 s on a fast machine) */
	usleep(100000);
	struct uroce_query_qp_req qq = { .handle = qp.handle, .attr_mask = IBV_QP_STATE };
	struct uroce_query_qp_rep qr;
	rc = t_call(&a, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL, NULL);
	CHECK(rc == 0, "query after the overrun: %d", rc);
	CHECK(rc || qr.attr.qp_state == IBV_QPS_ERR, "qp state %u", qr.attr.qp_state);
	/* every WR retired exactly once: cons == prod, not past it */
	CHECK(__atomic_load_n(r_cons(&sq), __ATOMIC_ACQUIRE) == 64, "sq cons %u",
	      __atomic_load_n(r_cons(&sq), __ATOMIC_ACQUIRE));
	check_served(d, "a flush overrunning its CQ");
	munmap(m, qp.map_size);
	t_client_close(&a);
}

/* The application moves its SQ producer index back behind WQEs the daemon
 * already fetched: "fetch until sq_fetch == prod" ran 2^32 times. */
static void case_prodback(struct t_daemon *d)
{
	struct t_client a;
	struct t_rc r;
	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	REQUIRE(t_rc_open(&r, &a, 0, -1) == 0, "a's QP");
	/* re-aim it at a QPN nobody has, with a long timeout (~4 s, 7
	 * retries), so what it sends stays outstanding */
	struct uroce_modify_qp_req mq = { .handle = r.qp.handle };
	mq.attr.qp_state = IBV_QPS_RESET;
	mq.attr_mask = IBV_QP_STATE;
	REQUIRE(t_modify(&a, &mq) == 0, "reset");
	REQUIRE(t_rc_up_to(&a, &r.qp, r.qp.qpn ^ 0x800000, 20) == 0, "re-connect");
	uint8_t msg[16] = { 3 };
	for (int i = 0; i < 4; i++) {
		uint32_t p = __atomic_load_n(r_prod(&r.sq), __ATOMIC_RELAXED);
		struct uroce_send_wqe *w = r_slot(&r.sq, p);
		memset(w, 0, UROCE_SEND_WQE_HDR);
		w->wr_id = (uint64_t)i;
		w->opcode = IBV_WR_SEND;
		w->send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		w->inline_len = sizeof(msg);
		memcpy((uint8_t *)w + UROCE_SEND_WQE_HDR, msg, sizeof(msg));
		__atomic_store_n(r_prod(&r.sq), p + 1, __ATOMIC_RELEASE);
	}
	t_ring(&a, r.qp.db_index);
	usleep(200000); /* fetched by now (a slow daemon only weakens the test) */
	uint32_t p = __atomic_load_n(r_prod(&r.sq), __ATOMIC_RELAXED);
	__atomic_store_n(r_prod(&r.sq), p - 2, __ATOMIC_RELEASE);
	t_ring(&a, r.qp.db_index);
	usleep(100000);
	check_served(d, "a producer index moved back");
	t_rc_close(&r);
	t_client_close(&a);
}

static bool exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static pid_t dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

/* uroced again on the run directory d already has (t_daemon_start makes
 * a new one): its socket within 30 s */
static void restart_in(struct t_daemon *d, const char *uroced)
{
	d->pid = fork();
	REQUIRE(d->pid >= 0, "fork");
	if (d->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("UROCE_RUN_DIR", d->run, 1);
		execl(uroced, uroced, (char *)NULL);
		_exit(127);
	}
	t_cur = d;
	for (uint64_t end = t_now_ms() + 30000; access(d->sock, F_OK);) {
		REQUIRE(t_now_ms() < end && alive(d), "restart");
		usleep(10000);
	}
}

static void mkfile(const char *p)
{
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0, "%s: %s", p, strerror(errno));
	close(fd);
}

/* DPDK's runtime directory is in the daemon's own run directory
 * (<run>/dpdk/uroce<pid>), removed on a clean exit; at start the stale
 * ones of dead daemons go, never by following a symlink: a stale name
 * that is a symlink loses the link, a symlink inside a stale directory
 * is removed, not walked (what it points to stays); live pids' and
 * other names stay. */
static int case_dpdkdir(const char *uroced)
{
	char base[340], stale[360], staleb[400], live[360], other[360], own[360], slink[360];
	char victim[340], vfile[360], inlink[400];
	struct t_daemon d;

	alarm(100);
	REQUIRE(t_daemon_start(&d, uroced, false, NULL) == 0, "start");
	snprintf(own, sizeof(own), "%s/dpdk/uroce%d", d.run, (int)d.pid);
	CHECK(exists(own), "no %s: DPDK's runtime directory is elsewhere", own);
	REQUIRE(t_daemon_stop(&d) == 0, "stop");
	CHECK(!exists(own), "%s left behind after a clean exit", own);

	snprintf(base, sizeof(base), "%s/dpdk", d.run);
	snprintf(victim, sizeof(victim), "%s/victim", d.dir);
	snprintf(vfile, sizeof(vfile), "%s/keep", victim);
	REQUIRE(mkdir(victim, 0700) == 0, "victim dir");
	mkfile(vfile);
	pid_t dp = dead_pid(), dp2 = dead_pid(), dp3 = dead_pid();
	snprintf(stale, sizeof(stale), "%s/uroce%d", base, (int)dp);
	snprintf(staleb, sizeof(staleb), "%s/leftover", stale);
	snprintf(inlink, sizeof(inlink), "%s/config", stale);
	snprintf(slink, sizeof(slink), "%s/uroce%d", base, (int)dp2);
	snprintf(live, sizeof(live), "%s/uroce%d", base, (int)getpid());
	snprintf(other, sizeof(other), "%s/noturoce%d", base, (int)dp3);
	REQUIRE(mkdir(stale, 0700) == 0, "mkdir %s: %s", stale, strerror(errno));
	mkfile(staleb);
	REQUIRE(symlink(victim, inlink) == 0 && symlink(victim, slink) == 0, "symlinks");
	CHECK(mkdir(live, 0700) == 0, "mkdir live");
	CHECK(mkdir(other, 0700) == 0, "mkdir other");

	restart_in(&d, uroced);
	CHECK(!exists(stale), "stale %s not removed at start", stale);
	CHECK(!exists(slink), "stale symlink %s not removed", slink);
	CHECK(exists(vfile), "%s removed through a symlink", vfile);
	CHECK(exists(live), "%s (a live pid) removed", live);
	CHECK(exists(other), "%s (not ours) removed", other);
	check_served(&d, "start-up");
	int rc = t_daemon_stop(&d);
	CHECK(rc == 0, "daemon exit status %d", rc);
	t_rmdir(&d);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}

/* ---------------- mrmap: descriptors that are not the MR's memory ---------------- */

static void self_counts(struct t_client *c, uint64_t *mapped, uint64_t *sys)
{
	static struct uroce_query_stats_rep r;
	struct uroce_query_stats_req q = { 0, 0 };
	int rc = t_call(c, UROCE_OP_QUERY_STATS, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
	REQUIRE(rc == 0, "query stats: %d", rc);
	*mapped = r.self_mr_mapped;
	*sys = r.self_mr_unpinned; /* the route these registrations take without a ring */
}

#define MM_LEN (3 * 4096)

static uint8_t *mm_file(int fd, uint8_t fill)
{
	REQUIRE(ftruncate(fd, MM_LEN) == 0, "ftruncate: %s", strerror(errno));
	uint8_t *p = mmap(NULL, MM_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(p, fill, MM_LEN);
	return p;
}

struct mm_env {
	struct t_client a;
	struct t_rc r;
	uint8_t *pa;          /* the MR's memory (memfd A) */
	uint8_t *others[3];   /* memfd B (mapped elsewhere), a file on disk, memfd D */
	uint32_t handle, rkey;
	int round;
};

/* One WRITE of fresh bytes into the MR; they must land there and nowhere
 * else, through the path want_mapped says. */
static void mm_write(struct mm_env *e, bool want_mapped, const char *what)
{
	uint8_t msg[64];
	uint64_t m0, s0, m1, s1;
	uint32_t off = (uint32_t)(rnd() % (MM_LEN - sizeof(msg)));

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(rnd() | 1); /* never the others' fill byte 0 */
	self_counts(&e->a, &m0, &s0);
	t_rc_send_op(&e->r, IBV_WR_RDMA_WRITE, msg, sizeof(msg), (uintptr_t)e->pa + off, e->rkey,
		     (uint64_t)e->round++);
	REQUIRE(t_rc_poll(&e->r, 1, 20000) == 0, "WRITE after %s", what);
	self_counts(&e->a, &m1, &s1);
	CHECK(memcmp(e->pa + off, msg, sizeof(msg)) == 0, "data after %s", what);
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < MM_LEN; i++)
			if (e->others[k][i]) {
				CHECK(0, "other file %d touched at %zu after %s", k, i, what);
				break;
			}
	if (want_mapped)
		CHECK(m1 > m0 && s1 == s0, "after %s: mapped +%llu, old path +%llu", what,
		      (unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
	else
		CHECK(m1 == m0 && s1 > s0, "after %s: mapped +%llu, old path +%llu", what,
		      (unsigned long long)(m1 - m0), (unsigned long long)(s1 - s0));
}

static int mm_map(struct mm_env *e, uint32_t handle, uint8_t *addr, uint64_t len, uint64_t off,
		  int fd)
{
	struct uroce_map_mr_req q = { .handle = handle, .addr = (uintptr_t)addr, .length = len,
				      .file_off = off };
	return t_call(&e->a, UROCE_OP_MAP_MR, &q, sizeof(q), &fd, fd >= 0 ? 1 : 0, NULL, 0, NULL,
		      NULL);
}

static uint32_t mm_reg(struct mm_env *e, uint8_t *addr, uint32_t *rkey)
{
	struct uroce_reg_mr_req mq = { .pin = UROCE_PIN_NONE, .pd = e->r.pd,
				       .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
				       .addr = (uintptr_t)addr, .length = MM_LEN,
				       .iova = (uintptr_t)addr };
	struct uroce_reg_mr_rep mr;
	int rc = t_call(&e->a, UROCE_OP_REG_MR, &mq, sizeof(mq), NULL, 0, &mr, sizeof(mr), NULL,
			NULL);
	REQUIRE(rc == 0, "reg mr: %d", rc);
	if (rkey)
		*rkey = mr.rkey;
	return mr.handle;
}

static void case_mrmap(struct t_daemon *d)
{
	static struct mm_env e;
	char path[512];

	REQUIRE(t_client_open(&e.a, d->sock) == 0, "client a");
	REQUIRE(t_rc_open(&e.r, &e.a, 0, -1) == 0, "a's QP");
	int fa = memfd_create("mm-a", MFD_CLOEXEC), fb = memfd_create("mm-b", MFD_CLOEXEC);
	int fdd = memfd_create("mm-d", MFD_CLOEXEC);
	snprintf(path, sizeof(path), "%s/disk-file", d->dir);
	int ff = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	REQUIRE(fa >= 0 && fb >= 0 && fdd >= 0 && ff >= 0, "files: %s", strerror(errno));
	e.pa = mm_file(fa, 0);
	e.others[0] = mm_file(fb, 0);
	e.others[1] = mm_file(ff, 0);
	e.others[2] = mm_file(fdd, 0);
	e.handle = mm_reg(&e, e.pa, &e.rkey);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fa);
	int fa_ro = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fa_ro >= 0, "read-only A: %s", strerror(errno));

	mm_write(&e, false, "registration");
	int rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, fb);
	CHECK(rc == -EACCES, "another memfd (mapped elsewhere): %d", rc);
	mm_write(&e, false, "another memfd");
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, fdd);
	CHECK(rc == -EACCES, "an unmapped memfd: %d", rc);
	mm_write(&e, false, "an unmapped memfd");
	rc = mm_map(&e, e.handle, e.pa, 4096, 4096, fa);
	CHECK(rc == -EACCES, "wrong offset: %d", rc);
	mm_write(&e, false, "a wrong offset");
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, fa_ro);
	CHECK(rc == -EACCES, "read-only descriptor for a writable MR: %d", rc);
	mm_write(&e, false, "a read-only descriptor");
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, ff);
	CHECK(rc == -EACCES, "a file on disk: %d", rc);
	mm_write(&e, false, "a file on disk");
	rc = mm_map(&e, e.handle, e.pa + 4096, MM_LEN, 4096, fa);
	CHECK(rc == -EACCES, "past the MR: %d", rc);
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, -1);
	CHECK(rc == -EACCES, "no descriptor: %d", rc);
	rc = mm_map(&e, e.handle + 1000, e.pa, MM_LEN, 0, fa);
	CHECK(rc == -EACCES, "no such MR: %d", rc);
	mm_write(&e, false, "bad requests");
	/* an MR over the disk file's own mapping, with its own descriptor */
	uint32_t h2 = mm_reg(&e, e.others[1], NULL);
	rc = mm_map(&e, h2, e.others[1], MM_LEN, 0, ff);
	CHECK(rc == -EACCES, "an MR on a disk file: %d", rc);
	/* and the right one */
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, fa);
	CHECK(rc == 0, "the MR's own memfd: %d", rc);
	mm_write(&e, true, "mapping");
	/* at most three pieces per MR: the daemon's mappings are a shared,
	 * bounded resource (vm.max_map_count) */
	CHECK(mm_map(&e, e.handle, e.pa, 4096, 0, fa) == 0, "second piece");
	CHECK(mm_map(&e, e.handle, e.pa + 4096, 4096, 4096, fa) == 0, "third piece");
	rc = mm_map(&e, e.handle, e.pa, MM_LEN, 0, fa);
	CHECK(rc == -EACCES, "a fourth piece of one MR: %d", rc);
	mm_write(&e, true, "mapping (again)");
	/* a page punched out between registration and mapping: the daemon's
	 * mapping brings no page of the file into being (it would be on the
	 * daemon's account: docs/security.md, "Whose memory") */
	int fh = memfd_create("mm-h", MFD_CLOEXEC);
	REQUIRE(fh >= 0, "memfd: %s", strerror(errno));
	uint8_t *ph = mm_file(fh, 0x33);
	uint32_t h3 = mm_reg(&e, ph, NULL);
	REQUIRE(fallocate(fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096) == 0,
		"punch: %s", strerror(errno));
	struct stat st0, st1;
	REQUIRE(fstat(fh, &st0) == 0, "fstat");
	rc = mm_map(&e, h3, ph, MM_LEN, 0, fh);
	REQUIRE(fstat(fh, &st1) == 0, "fstat");
	CHECK(rc == 0 && st1.st_blocks == st0.st_blocks,
	      "mapping a punched file: %d, blocks %lld -> %lld", rc, (long long)st0.st_blocks,
	      (long long)st1.st_blocks);
	munmap(ph, MM_LEN);
	close(fh);
	close(fa_ro);
	t_rc_close(&e.r);
	t_client_close(&e.a);
	check_served(d, "mrmap");
}


/* ---------------- the QP arena and the control mailbox ---------------- */

static int qpa_create(struct t_client *c, uint32_t pd, uint32_t cq, uint32_t swr, uint32_t inl,
		      struct uroce_create_qp_arena_rep *r, int *fd)
{
	struct uroce_create_qp_req q = {
		.pd = pd, .send_cq = cq, .recv_cq = cq, .srq = -1, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = swr, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = inl },
	};
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(c, UROCE_OP_CREATE_QP_ARENA, &q, sizeof(q), NULL, 0, r, sizeof(*r), fds,
			&nf);

	*fd = -1;
	if (rc)
		return rc;
	if (nf != ((r->flags & UROCE_ARENA_F_NEW) ? 1u : 0u)) {
		for (unsigned i = 0; i < nf; i++)
			close(fds[i]);
		return -EPROTO;
	}
	if (nf)
		*fd = fds[0];
	return 0;
}

#define QPA_MAX 4096

/* Rings carved from the arena: one sealed memfd per chunk, sent once;
 * ranges never overlap; a destroyed QP's range comes back zeroed; rings
 * too large get a memfd of their own; chunks are charged whole (ENOMEM at
 * the memory limit, the same count again after destroying everything);
 * a client that scribbles over its whole arena and rings every doorbell
 * harms nobody. Daemon: --limit mem=4M. */
static void case_arena(struct t_daemon *d)
{
	static struct uroce_create_qp_arena_rep q[QPA_MAX];
	static uint8_t *chunk[64];
	struct uroce_create_cq_rep cr;
	struct t_client a;
	uint32_t pd;
	int fd, n1, n2, rc;

	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	REQUIRE(t_pd(&a, &pd) == 0 && t_cq(&a, 64, &cr, NULL) == 0, "pd, cq");
	REQUIRE(qpa_create(&a, pd, cr.handle, 1, 0, &q[0], &fd) == 0, "first arena QP");
	CHECK(q[0].chunk == 0 && (q[0].flags & UROCE_ARENA_F_NEW) && fd >= 0 &&
	      q[0].chunk_size == UROCE_ARENA_CHUNK, "first QP: chunk %u flags %#x", q[0].chunk,
	      q[0].flags);
	REQUIRE(fd >= 0, "chunk memfd");
	check_sealed(fd, "arena chunk");
	chunk[0] = mmap(NULL, UROCE_ARENA_CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(chunk[0] != MAP_FAILED, "map chunk");
	REQUIRE(qpa_create(&a, pd, cr.handle, 1, 0, &q[1], &fd) == 0, "second arena QP");
	CHECK(fd < 0 && q[1].chunk == 0 && !(q[1].flags & UROCE_ARENA_F_NEW),
	      "second QP: a descriptor again (flags %#x)", q[1].flags);
	CHECK(q[1].qp.sq_offset >= q[0].qp.sq_offset + q[0].qp.map_size ||
	      q[0].qp.sq_offset >= q[1].qp.sq_offset + q[1].qp.map_size, "rings overlap");
	/* a destroyed QP's pages come back zeroed to the next one */
	uint8_t *h0 = chunk[0] + q[0].qp.sq_offset;
	memset(h0, 0xa5, q[0].qp.map_size);
	REQUIRE(t_handle_op(&a, UROCE_OP_DESTROY_QP, q[0].qp.handle) == 0, "destroy");
	REQUIRE(qpa_create(&a, pd, cr.handle, 1, 0, &q[0], &fd) == 0 && fd < 0, "recreate");
	CHECK(chunk[0] + q[0].qp.sq_offset == h0, "the freed range was not reused");
	CHECK(((struct uroce_ring_hdr *)h0)->prod == 0 && ((struct uroce_ring_hdr *)h0)->cons == 0 &&
	      ((struct uroce_ring_hdr *)h0)->entries == q[0].qp.sq_entries,
	      "reused ring header not fresh");
	/* larger than the arena takes: a memfd of its own */
	struct uroce_create_qp_arena_rep big;
	REQUIRE(qpa_create(&a, pd, cr.handle, 512, 512, &big, &fd) == 0, "big QP");
	CHECK(big.chunk == UROCE_ARENA_OWN && (big.flags & UROCE_ARENA_F_NEW) &&
	      big.chunk_size == big.qp.map_size && big.qp.map_size > UROCE_ARENA_MAX_RINGS &&
	      fd >= 0, "big QP: chunk %#x size %lu", big.chunk, (unsigned long)big.chunk_size);
	if (fd >= 0) {
		check_sealed(fd, "own QP memfd");
		close(fd);
	}
	REQUIRE(t_handle_op(&a, UROCE_OP_DESTROY_QP, big.qp.handle) == 0, "destroy big");
	/* up to the memory limit: ENOMEM, then as many again */
	for (n1 = 2; n1 < QPA_MAX; n1++) {
		rc = qpa_create(&a, pd, cr.handle, 1, 0, &q[n1], &fd);
		if (rc)
			break;
		if (fd >= 0) {
			REQUIRE(q[n1].chunk < 64 && !chunk[q[n1].chunk], "chunk %u twice", q[n1].chunk);
			chunk[q[n1].chunk] = mmap(NULL, UROCE_ARENA_CHUNK, PROT_READ | PROT_WRITE,
						  MAP_SHARED, fd, 0);
			close(fd);
			REQUIRE(chunk[q[n1].chunk] != MAP_FAILED, "map chunk %u", q[n1].chunk);
		}
	}
	CHECK(rc == -ENOMEM && n1 > 128 && n1 < QPA_MAX, "%d QPs, then %d", n1, rc);
	for (int i = 0; i < n1; i++)
		CHECK(t_handle_op(&a, UROCE_OP_DESTROY_QP, q[i].qp.handle) == 0, "destroy %d", i);
	for (n2 = 0; n2 < QPA_MAX; n2++) {
		rc = qpa_create(&a, pd, cr.handle, 1, 0, &q[n2], &fd);
		if (rc)
			break;
		CHECK(fd < 0, "QP %d: a new chunk after everything was freed", n2);
		if (fd >= 0)
			close(fd);
	}
	CHECK(rc == -ENOMEM && n2 == n1, "after destroying all: %d QPs (before: %d), then %d", n2,
	      n1, rc);
	/* the client scribbles over every chunk it has and rings everything */
	for (int k = 0; k < 64; k++)
		for (size_t i = 0; chunk[k] && i < UROCE_ARENA_CHUNK; i += 8) {
			uint64_t v = rnd();
			memcpy(chunk[k] + i, &v, 8);
		}
	for (int i = 0; i < n2; i++)
		t_ring(&a, q[i].qp.db_index);
	struct uroce_modify_qp_req mq = { .handle = q[0].qp.handle };
	mq.attr.qp_state = IBV_QPS_INIT;
	mq.attr.port_num = 1;
	mq.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	CHECK(t_modify(&a, &mq) == 0, "modify after the scribble");
	for (int i = 0; i < n2; i += 2)
		CHECK(t_handle_op(&a, UROCE_OP_DESTROY_QP, q[i].qp.handle) == 0, "destroy %d", i);
	check_served(d, "arena scribble");
	for (int k = 0; k < 64; k++)
		if (chunk[k])
			munmap(chunk[k], UROCE_ARENA_CHUNK);
	t_client_close(&a);
	check_served(d, "arena client gone");
}

/* One mailbox request of len bytes (msg: header first): the reply's
 * header (len 0: "on the socket"), body into rep; -ETIMEDOUT after 10 s */
static int mbox_call(struct t_client *c, const void *msg, uint32_t len, uint32_t seq,
		     struct uroce_msg_hdr *h, void *rep, size_t rcap)
{
	struct uroce_ctl_mbox *mb = &c->db->mbox;
	uint64_t end = t_now_ms() + 10000;

	memcpy(mb->req, msg, len < UROCE_MBOX_MAX ? len : UROCE_MBOX_MAX);
	__atomic_store_n(&mb->req_len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->req_seq, seq, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->db->need_wakeup, __ATOMIC_ACQUIRE)) {
		uint64_t one = 1;
		if (write(c->wake_fd, &one, 8) < 0) { /* the daemon is gone */ }
	}
	while (__atomic_load_n(&mb->rep_seq, __ATOMIC_ACQUIRE) != seq) {
		if (t_now_ms() > end)
			return -ETIMEDOUT;
		usleep(100);
	}
	memcpy(h, mb->rep, sizeof(*h));
	if (rep && h->len > sizeof(*h))
		memcpy(rep, mb->rep + sizeof(*h), h->len - sizeof(*h) < rcap ? h->len - sizeof(*h)
									      : rcap);
	return 0;
}

/* The control mailbox in the doorbell page, misused: a request is served
 * as on the socket (same replies, same checks); a length past the
 * mailbox, a runt, a request that needs a descriptor are refused; a reply
 * with a descriptor comes on the socket; a flood of sequence numbers
 * without requests does not stall the engine. */
static void case_mbox(struct t_daemon *d)
{
	struct t_client a;
	uint8_t msg[UROCE_MBOX_MAX], rep[UROCE_MBOX_MAX];
	struct uroce_msg_hdr h = { .op = UROCE_OP_QUERY_PORT, .seq = 1 }, r;
	struct uroce_query_port_req qp = { .port_num = 1 };

	REQUIRE(t_client_open(&a, d->sock) == 0, "client a");
	h.len = sizeof(h) + sizeof(qp);
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &qp, sizeof(qp));
	REQUIRE(mbox_call(&a, msg, h.len, 1, &r, rep, sizeof(rep)) == 0, "query port by mailbox");
	CHECK(r.op == h.op && r.seq == 1 && r.status == 0 &&
	      r.len == sizeof(h) + sizeof(struct uroce_query_port_rep), "query port: op %u seq %u "
	      "status %d len %u", r.op, r.seq, r.status, r.len);
	/* the request's own length says more than the mailbox holds */
	REQUIRE(mbox_call(&a, msg, 0xffffffffu, 2, &r, NULL, 0) == 0, "huge length");
	CHECK(r.status == -EINVAL && r.len == sizeof(r), "huge length: %d", r.status);
	REQUIRE(mbox_call(&a, msg, 3, 3, &r, NULL, 0) == 0, "runt");
	CHECK(r.status == -EINVAL, "runt: %d", r.status);
	/* UROCE_OP_MAP_MR needs the file's descriptor: none can come this way */
	struct uroce_map_mr_req mm = { .handle = 1, .length = 4096 };
	h = (struct uroce_msg_hdr){ .op = UROCE_OP_MAP_MR, .len = sizeof(h) + sizeof(mm), .seq = 4 };
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &mm, sizeof(mm));
	REQUIRE(mbox_call(&a, msg, h.len, 4, &r, NULL, 0) == 0, "map_mr");
	CHECK(r.status < 0, "map_mr without a descriptor: %d", r.status);
	/* a reply with a descriptor (a CQ's ring) comes on the socket */
	struct uroce_create_cq_req cq = { .cqe = 16, .channel = -1 };
	h = (struct uroce_msg_hdr){ .op = UROCE_OP_CREATE_CQ, .len = sizeof(h) + sizeof(cq), .seq = 5 };
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &cq, sizeof(cq));
	REQUIRE(mbox_call(&a, msg, h.len, 5, &r, NULL, 0) == 0, "create_cq");
	CHECK(r.len == 0 && r.seq == 5, "create_cq by mailbox: len %u", r.len);
	uint8_t in[UROCE_MAX_MSG];
	union { struct cmsghdr c; uint8_t b[CMSG_SPACE(sizeof(int) * 4)]; } cb;
	struct iovec iov = { in, sizeof(in) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct pollfd pf = { .fd = a.fd, .events = POLLIN };
	REQUIRE(poll(&pf, 1, 10000) == 1, "create_cq's reply on the socket");
	ssize_t n = recvmsg(a.fd, &mh, MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	memcpy(&r, in, sizeof(r));
	CHECK(n == (ssize_t)(sizeof(r) + sizeof(struct uroce_create_cq_rep)) && r.seq == 5 &&
	      r.status == 0 && cm && cm->cmsg_type == SCM_RIGHTS, "socket reply: n %zd seq %u", n,
	      r.seq);
	if (cm && cm->cmsg_type == SCM_RIGHTS) {
		int f;
		memcpy(&f, CMSG_DATA(cm), sizeof(f));
		close(f);
	}
	/* sequence numbers without requests, as fast as the client can */
	memset(a.db->mbox.req, 0xee, UROCE_MBOX_MAX);
	for (uint32_t s = 6; s < 200000; s++)
		__atomic_store_n(&a.db->mbox.req_seq, s, __ATOMIC_RELEASE);
	check_served(d, "mailbox flood");
	/* and the mailbox still works for this client */
	h = (struct uroce_msg_hdr){ .op = UROCE_OP_QUERY_PORT, .len = sizeof(h) + sizeof(qp),
				    .seq = 200001 };
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &qp, sizeof(qp));
	REQUIRE(mbox_call(&a, msg, h.len, 200001, &r, NULL, 0) == 0, "query port after the flood");
	CHECK(r.status == 0 && r.seq == 200001, "after the flood: %d", r.status);
	t_client_close(&a);
}

int main(int argc, char **argv)
{
	struct t_daemon d;

	if (argc < 3)
		return 2;
	if (argc > 3)
		seed = strtoull(argv[3], NULL, 0);
	fprintf(stderr, "case %s, seed %#llx\n", argv[2], (unsigned long long)seed);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[2], "dpdkdir"))
		return case_dpdkdir(argv[1]);
	alarm(200);
	static const char *const arena_opts[] = { "--limit", "mem=4M", NULL };
	REQUIRE(t_daemon_start(&d, argv[1], false,
			       !strcmp(argv[2], "arena") ? arena_opts : NULL) == 0, "start");
	if (!strcmp(argv[2], "seal"))
		case_seal(&d);
	else if (!strcmp(argv[2], "evpipe"))
		case_evpipe(&d);
	else if (!strcmp(argv[2], "evlost"))
		case_evlost(&d);
	else if (!strcmp(argv[2], "ctlflood"))
		case_ctlflood(&d);
	else if (!strcmp(argv[2], "wake"))
		case_wake(&d);
	else if (!strcmp(argv[2], "flush"))
		case_flush(&d);
	else if (!strcmp(argv[2], "prodback"))
		case_prodback(&d);
	else if (!strcmp(argv[2], "mrmap"))
		case_mrmap(&d);
	else if (!strcmp(argv[2], "arena"))
		case_arena(&d);
	else if (!strcmp(argv[2], "mbox"))
		case_mbox(&d);
	else if (!strcmp(argv[2], "memchan"))
		case_memchan(&d);
	else
		REQUIRE(0, "unknown case %s", argv[2]);
	return finish(&d);
}
