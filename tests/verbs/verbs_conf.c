/* SPDX-License-Identifier: MIT */
/* What rdma-core's pyverbs suite (docs/conformance.md) checks, reduced to
 * plain verbs so a regression shows here with its cause, not only as a
 * module of the suite that stops passing.
 *
 * Memory windows as the suite binds them (test_mr MWTest, test_qpex
 * bind_mw): the MR has only LOCAL_WRITE | MW_BIND, the window is bound
 * with REMOTE_WRITE | LOCAL_WRITE (IBTA C10-74: a writable window needs
 * local write on the MR, not remote write), RDMA WRITEs through the
 * window's rkey land; then the window is invalidated (type 1: rebound
 * with length 0; type 2: LOCAL_INV, SEND with invalidate carrying no
 * payload, or dealloc) and a WRITE through the old rkey completes with
 * REM_ACCESS_ERR. The bind rules that must still refuse: an MR without
 * MW_BIND, a writable window on an MR without LOCAL_WRITE, a range
 * outside the MR.
 *
 * test_shared_pd: ibv_import_device on a dup of a context's cmd_fd, then
 * ibv_import_pd / ibv_import_mr by handle, traffic through the imports;
 * and what must stay refused (docs/verbs.md, "Shared PD").
 *
 * An SRQ whose PD is not its QP's: receive keys are the SRQ's PD's.
 * IBTA 1.5 RDMA ATOMIC WRITE through both posting APIs. */
#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "vt.h"
#include "../include/t_sendfds.h"

#define MW_OFF 16384u  /* the bound MR's buffer inside t.buf */
#define MW_LEN 4096u

/* the MR the suite binds windows to: no remote access of its own */
static struct ibv_mr *bind_mr(struct vt *t, unsigned access)
{
	struct ibv_mr *mr = ibv_reg_mr(t->pd, t->buf + MW_OFF, MW_LEN, access);

	REQUIRE(mr);
	return mr;
}

static void bind_info(struct ibv_mw_bind_info *b, struct ibv_mr *mr, uint64_t len,
		      unsigned access)
{
	memset(b, 0, sizeof(*b));
	b->mr = mr;
	b->addr = (uintptr_t)mr->addr;
	b->length = len;
	b->mw_access_flags = access;
}

/* type 2: a BIND_MW WR on qp; returns the completion's status */
static enum ibv_wc_status bind2(struct vt *t, struct ibv_qp *qp, struct ibv_mw *mw,
				struct ibv_mr *mr, unsigned access, uint32_t *rkey)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xb2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	bind_info(&wr.bind_mw.bind_info, mr, MW_LEN, access);
	REQUIRE(!ibv_post_send(qp, &wr, &bad));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.wr_id == 0xb2);
	if (wc.status == IBV_WC_SUCCESS)
		REQUIRE(wc.opcode == IBV_WC_BIND_MW);
	*rkey = wr.bind_mw.rkey;
	return wc.status;
}

/* type 1: ibv_bind_mw; returns the completion's status */
static enum ibv_wc_status bind1(struct vt *t, struct ibv_qp *qp, struct ibv_mw *mw,
				struct ibv_mr *mr, uint64_t len, unsigned access)
{
	struct ibv_mw_bind b = { .wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	bind_info(&b.bind_info, mr, len, access);
	REQUIRE(!ibv_bind_mw(qp, mw, &b));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.wr_id == 0xb1);
	return wc.status;
}

/* an 8-byte RDMA WRITE from qa into the window (rkey) at offset off;
 * returns its completion status, and on success checks the bytes */
static enum ibv_wc_status write_through(struct vt *t, uint32_t rkey, uint32_t off,
					uint64_t pattern)
{
	struct ibv_wc wc;

	memcpy(t->buf, &pattern, 8);
	REQUIRE(!vt_post_send(t->qa, t->mr, IBV_WR_RDMA_WRITE, 0, 8, IBV_SEND_SIGNALED, 0,
			    (uintptr_t)t->buf + MW_OFF + off, rkey, 0x77));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.wr_id == 0x77);
	if (wc.status == IBV_WC_SUCCESS)
		REQUIRE(!memcmp(t->buf + MW_OFF + off, &pattern, 8));
	return wc.status;
}

static void mw_type1(void)
{
	struct vt t;
	struct ibv_mr *mr;
	struct ibv_mw *mw;

	vt_init(&t, NULL);
	mr = bind_mr(&t, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	REQUIRE(bind1(&t, t.qb, mw, mr, MW_LEN, IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_LOCAL_WRITE) == IBV_WC_SUCCESS);
	for (uint32_t i = 0; i < 4; i++)
		REQUIRE(write_through(&t, mw->rkey, i * 64, 0x1111000000000000ull + i) ==
		      IBV_WC_SUCCESS);
	/* invalidation by a zero-length bind: the window's key misses */
	REQUIRE(bind1(&t, t.qb, mw, mr, 0, 0) == IBV_WC_SUCCESS);
	REQUIRE(write_through(&t, mw->rkey, 0, 1) == IBV_WC_REM_ACCESS_ERR);
	REQUIRE(!ibv_dealloc_mw(mw));
	REQUIRE(!ibv_dereg_mr(mr));
	vt_fini(&t);
}

enum inv_how { INV_LOCAL, INV_REMOTE, INV_DEALLOC };

static void mw_type2(enum inv_how how)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct vt t;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint32_t rkey;

	vt_init(&t, NULL);
	mr = bind_mr(&t, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_2);
	REQUIRE(mw);
	REQUIRE(bind2(&t, t.qb, mw, mr, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
		    &rkey) == IBV_WC_SUCCESS);
	REQUIRE(write_through(&t, rkey, 8, 0x2222222222222222ull) == IBV_WC_SUCCESS);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1a;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	if (how == INV_LOCAL) {
		/* through the QP the window was bound on */
		wr.opcode = IBV_WR_LOCAL_INV;
		REQUIRE(!ibv_post_send(t.qb, &wr, &bad));
		vt_poll_n(t.scq, 1, &wc);
		REQUIRE(wc.wr_id == 0x1a && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_LOCAL_INV);
	} else if (how == INV_REMOTE) {
		/* as the suite posts it: no SGE at all */
		vt_post_recv(t.qb, t.mr, 4096, 64, 0x2a);
		wr.opcode = IBV_WR_SEND_WITH_INV;
		REQUIRE(!ibv_post_send(t.qa, &wr, &bad));
		vt_poll_n(t.scq, 1, &wc);
		REQUIRE(wc.wr_id == 0x1a && wc.status == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.wr_id == 0x2a && wc.status == IBV_WC_SUCCESS && wc.byte_len == 0 &&
		      (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey);
	} else {
		REQUIRE(!ibv_dealloc_mw(mw));
		mw = NULL;
	}
	REQUIRE(write_through(&t, rkey, 8, 3) == IBV_WC_REM_ACCESS_ERR);
	if (mw)
		REQUIRE(!ibv_dealloc_mw(mw));
	REQUIRE(!ibv_dereg_mr(mr));
	vt_fini(&t);
}

static void mw_type2_local_inv(void)
{
	mw_type2(INV_LOCAL);
}

static void mw_type2_remote_inv(void)
{
	mw_type2(INV_REMOTE);
}

static void mw_type2_dealloc(void)
{
	mw_type2(INV_DEALLOC);
}

/* The bind rules that refuse (IBTA C10-73, C10-74, the window inside the
 * MR): MW_BIND_ERR, and the window stays unbound. A failed bind moves the
 * QP to error, so each refusal gets its own pair. */
static void mw_bind_refused(void)
{
	static const struct {
		unsigned mr_access, mw_access;
		uint64_t len;
	} bad[] = {
		{ IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, MW_LEN },
		{ IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE, MW_LEN },
		{ IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC, MW_LEN },
		{ IBV_ACCESS_MW_BIND | IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, MW_LEN + 1 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vt t;
		struct ibv_mr *mr;
		struct ibv_mw *mw;

		vt_init(&t, NULL);
		mr = bind_mr(&t, bad[i].mr_access);
		mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
		REQUIRE(mw);
		if (bind1(&t, t.qb, mw, mr, bad[i].len, bad[i].mw_access) != IBV_WC_MW_BIND_ERR) {
			fprintf(stderr, "bind %zu was not refused\n", i);
			exit(1);
		}
		REQUIRE(!ibv_dealloc_mw(mw));
		REQUIRE(!ibv_dereg_mr(mr));
		vt_fini(&t);
	}
	/* a read-only window on an MR without local write is fine */
	{
		struct vt t;
		struct ibv_mr *mr;
		struct ibv_mw *mw;

		vt_init(&t, NULL);
		mr = bind_mr(&t, IBV_ACCESS_MW_BIND);
		mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
		REQUIRE(mw);
		REQUIRE(bind1(&t, t.qb, mw, mr, MW_LEN, IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS);
		REQUIRE(!ibv_dealloc_mw(mw));
		REQUIRE(!ibv_dereg_mr(mr));
		vt_fini(&t);
	}
}

/* One SEND of 8 bytes from qa into a receive posted on qb in rmr at off;
 * returns the sender's status (the receiver's completion is polled when
 * the sender succeeded, and its bytes checked). */
static enum ibv_wc_status send_into(struct vt *t, struct ibv_mr *rmr, uint64_t pattern)
{
	struct ibv_wc wc;

	memcpy(t->buf, &pattern, 8);
	vt_post_recv(t->qb, rmr, 0, 64, 0x5e);
	REQUIRE(!vt_post_send(t->qa, t->mr, IBV_WR_SEND, 0, 8, IBV_SEND_SIGNALED, 0, 0, 0,
			    0x5d));
	vt_poll_n(t->scq, 1, &wc);
	REQUIRE(wc.wr_id == 0x5d);
	if (wc.status == IBV_WC_SUCCESS) {
		enum ibv_wc_status st = wc.status;

		vt_poll_n(t->rcq, 1, &wc);
		REQUIRE(wc.wr_id == 0x5e && wc.status == IBV_WC_SUCCESS && wc.byte_len == 8);
		REQUIRE(!memcmp(rmr->addr, &pattern, 8));
		return st;
	}
	return wc.status;
}

/* Both QPs from ERR back to RTS through RESET, as the suite's restate_qps. */
static void restate(struct vt *t)
{
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_RESET };

	REQUIRE(!ibv_modify_qp(t->qa, &m, IBV_QP_STATE));
	REQUIRE(!ibv_modify_qp(t->qb, &m, IBV_QP_STATE));
	vt_qp_start(t->qa, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0);
	vt_qp_start(t->qb, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0);
	vt_connect(t, t->qa, t->qb);
}

/* test_mr's rereg flows: a receive posted before ibv_rereg_mr moves the
 * MR (new address, or another PD) fails the next SEND (the receiver
 * NAKs it: REM_OP_ERR at the sender); both QPs are then taken through
 * RESET back to RTS and the next SEND through the reregistered MR (its
 * old PD again for CHANGE_PD) must succeed: what the error left in the
 * CQs belongs to the QPs' previous life and must not show. */
static void rereg(int flags)
{
	uint8_t *other = aligned_alloc(4096, 4096);
	struct ibv_pd *pd2;
	struct ibv_mr *rmr;
	struct ibv_wc wc;
	struct vt t;

	REQUIRE(other);
	vt_init(&t, NULL);
	pd2 = ibv_alloc_pd(t.ctx);
	REQUIRE(pd2);
	rmr = ibv_reg_mr(t.pd, t.buf + 32768, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(rmr);
	REQUIRE(send_into(&t, rmr, 0x0101010101010101ull) == IBV_WC_SUCCESS);
	/* a receive waits on qb with the MR as it was; more wait on qa */
	vt_post_recv(t.qb, rmr, 0, 64, 0x5f);
	for (int i = 0; i < 3; i++)
		vt_post_recv(t.qa, t.mr, 4096, 64, 0x60 + (uint64_t)i);
	if (flags == IBV_REREG_MR_CHANGE_TRANSLATION)
		REQUIRE(!ibv_rereg_mr(rmr, flags, NULL, other, 4096, 0));
	else
		REQUIRE(!ibv_rereg_mr(rmr, flags, pd2, NULL, 0, 0));
	REQUIRE(send_into(&t, rmr, 2) == IBV_WC_REM_OP_ERR);
	restate(&t);
	if (flags == IBV_REREG_MR_CHANGE_PD)
		REQUIRE(!ibv_rereg_mr(rmr, flags, t.pd, NULL, 0, 0));
	REQUIRE(send_into(&t, rmr, 0x0303030303030303ull) == IBV_WC_SUCCESS);
	/* nothing of the QPs' previous life is left in either CQ */
	REQUIRE(ibv_poll_cq(t.scq, 1, &wc) == 0 && ibv_poll_cq(t.rcq, 1, &wc) == 0);
	REQUIRE(!ibv_dereg_mr(rmr));
	REQUIRE(!ibv_dealloc_pd(pd2));
	vt_fini(&t);
	free(other);
}

static void rereg_addr(void)
{
	rereg(IBV_REREG_MR_CHANGE_TRANSLATION);
}

static void rereg_pd(void)
{
	rereg(IBV_REREG_MR_CHANGE_PD);
}

/* RESET drops only the QP's own unpolled completions from a CQ it shares:
 * qb and qd receive into one CQ, [qb 1, qd 2, qb 3, qd 4, qb 5] wait in it
 * (small SENDs: their bytes ride in the CQ ring's companion slots); qd to
 * RESET leaves qb's three, in order, with their payloads. */
static void reset_clean(void)
{
	struct ibv_qp *qc, *qd, *to[5];
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[5];
	struct vt t;

	vt_init(&t, NULL);
	qc = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	qd = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 16, 16);
	vt_connect(&t, qc, qd);
	for (uint64_t i = 1; i <= 5; i++) {
		struct ibv_qp *src = i & 1 ? t.qa : qc;

		to[i - 1] = i & 1 ? t.qb : qd;
		vt_post_recv(to[i - 1], t.mr, 4096 + i * 64, 64, i);
		memset(t.buf + i * 64, (int)(0x40 + i), 32);
		REQUIRE(!vt_post_send(src, t.mr, IBV_WR_SEND, i * 64, 32, IBV_SEND_SIGNALED, 0,
				    0, 0, 100 + i));
		/* the sender's completion follows the receiver's */
		vt_poll_n(t.scq, 1, wc);
		REQUIRE(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 100 + i);
	}
	REQUIRE(!ibv_modify_qp(qd, &m, IBV_QP_STATE));
	memset(t.buf + 4096, 0, 8 * 64);
	vt_poll_n(t.rcq, 3, wc);
	for (int k = 0; k < 3; k++) {
		uint64_t i = 1 + 2 * (uint64_t)k;
		uint8_t want[32];

		memset(want, (int)(0x40 + i), 32);
		REQUIRE(wc[k].wr_id == i && wc[k].status == IBV_WC_SUCCESS &&
		      wc[k].qp_num == t.qb->qp_num && wc[k].byte_len == 32);
		REQUIRE(!memcmp(t.buf + 4096 + i * 64, want, 32));
	}
	REQUIRE(ibv_poll_cq(t.rcq, 5, wc) == 0);
	REQUIRE(!ibv_destroy_qp(qc));
	REQUIRE(!ibv_destroy_qp(qd));
	vt_fini(&t);
}

/* ibv_create_qp_ex with IBV_QP_INIT_ATTR_CREATE_FLAGS in comp_mask and no
 * flag asked for creates the QP (rdma-core's test_qp picks that mask at
 * random, and its RC/UD create and UC query tests skipped on EOPNOTSUPP);
 * a flag uroce does not have is EOPNOTSUPP. Each QP created is queried. */
static void create_qp_ex_flags(void)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct vt t;

	vt_init(&t, NULL);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct ibv_qp_init_attr_ex a;
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr q;
		struct ibv_qp *qp;

		vt_qp_ex_attr(&t, &a, types[i], 4, IBV_QP_INIT_ATTR_CREATE_FLAGS);
		qp = ibv_create_qp_ex(t.ctx, &a);
		REQUIRE(qp);
		REQUIRE(!ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &init));
		REQUIRE(q.qp_state == IBV_QPS_RESET && init.qp_type == types[i] &&
		      q.cap.max_send_wr >= 4 && q.cap.max_recv_wr >= 4);
		REQUIRE(!ibv_destroy_qp(qp));
		a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
		errno = 0;
		REQUIRE(!ibv_create_qp_ex(t.ctx, &a) && errno == EOPNOTSUPP);
	}
	vt_fini(&t);
}

/* A context imported from a dup of t.ctx's cmd_fd: the PD and MR of t
 * imported by handle carry an RDMA WRITE from a QP created on the
 * imported context into t.qb's side; the imported context outlives
 * ibv_close_device of the one it came from. */
static void import_shared(void)
{
	struct ibv_context *c2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	struct ibv_cq *cq2;
	struct ibv_qp *q2;
	struct ibv_wc wc;
	struct vt t, t2;
	uint64_t v = 0x5a5a000011112222ull;

	vt_init(&t, NULL);
	c2 = ibv_import_device(dup(t.ctx->cmd_fd));
	REQUIRE(c2 && c2->device == t.ctx->device);
	pd2 = ibv_import_pd(c2, t.pd->handle);
	REQUIRE(pd2 && pd2->handle == t.pd->handle && pd2->context == c2);
	mr2 = ibv_import_mr(pd2, t.mr->handle);
	REQUIRE(mr2 && mr2->lkey == t.mr->lkey && mr2->rkey == t.mr->rkey &&
	      mr2->length == t.mr->length && !mr2->addr && mr2->pd == pd2);
	/* what is not there, or not in that PD, is not imported */
	errno = 0;
	REQUIRE(!ibv_import_pd(c2, t.pd->handle + 1000) && errno == EINVAL);
	{
		struct ibv_pd *other = ibv_alloc_pd(c2);

		REQUIRE(other);
		errno = 0;
		REQUIRE(!ibv_import_mr(other, t.mr->handle) && errno == EINVAL);
		REQUIRE(!ibv_dealloc_pd(other));
	}
	/* a QP of the imported context, on the imported PD, to t.qa's peer
	 * role: t2 borrows t's fields with the imported objects */
	cq2 = ibv_create_cq(c2, 16, NULL, NULL, 0);
	REQUIRE(cq2);
	t2 = t;
	t2.ctx = c2;
	t2.pd = pd2;
	q2 = vt_qp(&t2, IBV_QPT_RC, cq2, cq2, NULL, 8, 8);
	{
		struct ibv_qp *peer = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 8, 8);
		/* mr2->addr is NULL: the SGE names the memory by t's address,
		 * with the imported lkey */
		struct ibv_mr sge_mr = *mr2;

		sge_mr.addr = t.buf;
		vt_connect(&t, q2, peer);
		memcpy(t.buf, &v, 8);
		REQUIRE(!vt_post_send(q2, &sge_mr, IBV_WR_RDMA_WRITE, 0, 8, IBV_SEND_SIGNALED, 0,
				    (uintptr_t)t.buf + 512, t.mr->rkey, 9));
		vt_poll_n(cq2, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 9);
		REQUIRE(!memcmp(t.buf + 512, &v, 8));
		REQUIRE(!ibv_destroy_qp(peer));
	}
	REQUIRE(!ibv_destroy_qp(q2));
	REQUIRE(!ibv_destroy_cq(cq2));
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	/* unimport released nothing of the daemon's: t's objects still work */
	REQUIRE(write_through(&t, t.mr->rkey, 0, 0x77) == IBV_WC_SUCCESS);
	/* the imported context outlives its origin's close */
	{
		struct ibv_context *c3 = ibv_import_device(dup(t.ctx->cmd_fd));
		struct ibv_pd *p3;

		REQUIRE(c3);
		REQUIRE(!ibv_close_device(c2));
		vt_fini(&t);
		p3 = ibv_alloc_pd(c3);
		REQUIRE(p3);
		REQUIRE(!ibv_dealloc_pd(p3));
		REQUIRE(!ibv_close_device(c3));
	}
}

static int send_fd(int sock, int fd)
{
	return t_sendfds(sock, "f", 1, &fd, 1, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	h = CMSG_FIRSTHDR(&m);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

/* Another process holding the descriptor may not import: one that got it
 * over a socket (it has no context of its own on it) and a fork() child
 * (it inherited the opener's context): EOPNOTSUPP, and the opener's
 * context is untouched. */
static void import_refused(void)
{
	int sv[2], st;
	pid_t got, fork_child;
	struct vt t;

	REQUIRE(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	got = fork();
	REQUIRE(got >= 0);
	if (got == 0) {
		int fd = recv_fd(sv[1]);
		struct ibv_context *c;

		if (fd < 0)
			_exit(2);
		errno = 0;
		c = ibv_import_device(fd);
		_exit(!c && errno == EOPNOTSUPP ? 0 : 3);
	}
	vt_init(&t, NULL);
	REQUIRE(!send_fd(sv[0], t.ctx->cmd_fd));
	REQUIRE(waitpid(got, &st, 0) == got && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fork_child = fork();
	REQUIRE(fork_child >= 0);
	if (fork_child == 0) {
		struct ibv_context *c;

		errno = 0;
		c = ibv_import_device(dup(t.ctx->cmd_fd));
		_exit(!c && errno == EOPNOTSUPP ? 0 : 3);
	}
	REQUIRE(waitpid(fork_child, &st, 0) == fork_child && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	REQUIRE(write_through(&t, t.mr->rkey, 0, 0x99) == IBV_WC_SUCCESS);
	close(sv[0]);
	close(sv[1]);
	vt_fini(&t);
}

/* A QP on one PD with an SRQ on another: the receive WQE's lkeys belong
 * to the SRQ's PD (IBTA: the SRQ's PD, not the QP's). Messages of 4 KB
 * (placed by the daemon) and 16 bytes (carried in the CQ ring) land in an
 * MR of the SRQ's PD; a receive naming an MR of the QP's PD fails with
 * LOC_PROT_ERR. */
static void srq_pd(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	uint8_t *rbuf = aligned_alloc(4096, 8192);
	struct ibv_recv_wr rwr, *bad;
	struct ibv_sge sge;
	struct ibv_qp *qc, *qd;
	struct ibv_pd *pd2;
	struct ibv_srq *srq;
	struct ibv_mr *rmr;
	struct ibv_wc wc;
	struct vt t;
	const uint32_t lens[] = { 4096, 16 };

	REQUIRE(rbuf);
	vt_init(&t, NULL);
	pd2 = ibv_alloc_pd(t.ctx);
	REQUIRE(pd2);
	srq = ibv_create_srq(pd2, &sa);
	REQUIRE(srq);
	rmr = ibv_reg_mr(pd2, rbuf, 8192, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(rmr);
	qc = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, srq, 8, 0);
	qd = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 8, 8);
	vt_connect(&t, qd, qc);
	for (int k = 0; k < 2; k++) {
		memset(rbuf, 0, 8192);
		for (uint32_t i = 0; i < lens[k]; i++)
			t.buf[i] = (uint8_t)(i * 7 + (uint32_t)k);
		sge = (struct ibv_sge){ (uintptr_t)rbuf, 8192, rmr->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = 0x50 + (uint64_t)k, .sg_list = &sge,
					    .num_sge = 1 };
		REQUIRE(!ibv_post_srq_recv(srq, &rwr, &bad));
		REQUIRE(!vt_post_send(qd, t.mr, IBV_WR_SEND, 0, lens[k], IBV_SEND_SIGNALED, 0,
				    0, 0, 0x60 + (uint64_t)k));
		vt_poll_n(t.scq, 1, &wc);
		REQUIRE(wc.wr_id == 0x60 + (uint64_t)k && wc.status == IBV_WC_SUCCESS);
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.wr_id == 0x50 + (uint64_t)k && wc.status == IBV_WC_SUCCESS &&
		      wc.byte_len == lens[k] && wc.qp_num == qc->qp_num);
		REQUIRE(!memcmp(rbuf, t.buf, lens[k]));
	}
	/* an lkey of the QP's PD in the SRQ's receive: refused */
	sge = (struct ibv_sge){ (uintptr_t)t.buf + 8192, 4096, t.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 0x5f, .sg_list = &sge, .num_sge = 1 };
	REQUIRE(!ibv_post_srq_recv(srq, &rwr, &bad));
	REQUIRE(!vt_post_send(qd, t.mr, IBV_WR_SEND, 0, 4096, IBV_SEND_SIGNALED, 0, 0, 0, 0x6f));
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.wr_id == 0x5f && wc.status == IBV_WC_LOC_PROT_ERR);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 0x6f && wc.status != IBV_WC_SUCCESS);
	REQUIRE(!ibv_destroy_qp(qc));
	REQUIRE(!ibv_destroy_qp(qd));
	REQUIRE(!ibv_destroy_srq(srq));
	REQUIRE(!ibv_dereg_mr(rmr));
	REQUIRE(!ibv_dealloc_pd(pd2));
	vt_fini(&t);
	free(rbuf);
}

/* IBTA 1.5 RDMA ATOMIC WRITE (test_qpex's test_qp_ex_rc_atomic_write):
 * the device says so (IB_UVERBS_DEVICE_ATOMIC_WRITE, bit 40 of
 * device_cap_flags_ex); ibv_wr_atomic_write and ibv_post_send with
 * IBV_WR_ATOMIC_WRITE (its 8 bytes from the SGE) land 8 bytes at an MR
 * with only REMOTE_WRITE, completing as IBV_WC_ATOMIC_WRITE; a misaligned
 * address or a length other than 8 is EINVAL; an MR without REMOTE_WRITE
 * is REM_ACCESS_ERR. */
static void atomic_write(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr_ex a;
	struct ibv_send_wr wr, *bad;
	struct ibv_qp *qx, *peer;
	struct ibv_qp_ex *ex;
	struct ibv_mr *wmr, *romr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t v = 0x0102030405060708ull;
	struct vt t;

	vt_init(&t, NULL);
	REQUIRE(!ibv_query_device_ex(t.ctx, NULL, &dx));
	REQUIRE(dx.device_cap_flags_ex & (1ULL << 40));
	wmr = ibv_reg_mr(t.pd, t.buf + 16384, 4096, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE);
	romr = ibv_reg_mr(t.pd, t.buf + 20480, 4096, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_READ);
	REQUIRE(wmr && romr);
	vt_qp_ex_attr(&t, &a, IBV_QPT_RC, 8, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
	ex = vt_qp_ex_init(&t, &a, IBV_ACCESS_REMOTE_WRITE, &qx);
	peer = vt_qp(&t, IBV_QPT_RC, t.scq, t.rcq, NULL, 8, 8);
	vt_connect(&t, qx, peer);
	/* through ibv_wr_atomic_write */
	ibv_wr_start(ex);
	ex->wr_id = 0xa1;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(ex, wmr->rkey, (uintptr_t)t.buf + 16384 + 64, &v);
	REQUIRE(!ibv_wr_complete(ex));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 0xa1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE);
	REQUIRE(!memcmp(t.buf + 16384 + 64, &v, 8));
	/* misaligned: EINVAL at ibv_wr_complete, the QP still usable */
	ibv_wr_start(ex);
	ibv_wr_atomic_write(ex, wmr->rkey, (uintptr_t)t.buf + 16384 + 3, &v);
	REQUIRE(ibv_wr_complete(ex) == EINVAL);
	/* through ibv_post_send: the 8 bytes of the SGE */
	v = ~v;
	memcpy(t.buf, &v, 8);
	sge = (struct ibv_sge){ (uintptr_t)t.buf, 8, t.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xa2;
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)t.buf + 16384 + 128;
	wr.wr.rdma.rkey = wmr->rkey;
	REQUIRE(!ibv_post_send(qx, &wr, &bad));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 0xa2 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE);
	REQUIRE(!memcmp(t.buf + 16384 + 128, &v, 8));
	sge.length = 4;
	REQUIRE(ibv_post_send(qx, &wr, &bad) == EINVAL && bad == &wr);
	sge.length = 8;
	/* an MR without REMOTE_WRITE */
	wr.wr_id = 0xa3;
	wr.wr.rdma.remote_addr = (uintptr_t)t.buf + 20480;
	wr.wr.rdma.rkey = romr->rkey;
	REQUIRE(!ibv_post_send(qx, &wr, &bad));
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.wr_id == 0xa3 && wc.status == IBV_WC_REM_ACCESS_ERR);
	REQUIRE(!ibv_destroy_qp(qx));
	REQUIRE(!ibv_destroy_qp(peer));
	REQUIRE(!ibv_dereg_mr(wmr));
	REQUIRE(!ibv_dereg_mr(romr));
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "atomic_write", atomic_write },
	{ "srq_pd", srq_pd },
	{ "import_shared", import_shared },
	{ "import_refused", import_refused },
	{ "create_qp_ex_flags", create_qp_ex_flags },
	{ "reset_clean", reset_clean },
	{ "rereg_addr", rereg_addr },
	{ "rereg_pd", rereg_pd },
	{ "mw_type1", mw_type1 },
	{ "mw_type2_local_inv", mw_type2_local_inv },
	{ "mw_type2_remote_inv", mw_type2_remote_inv },
	{ "mw_type2_dealloc", mw_type2_dealloc },
	{ "mw_bind_refused", mw_bind_refused },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
