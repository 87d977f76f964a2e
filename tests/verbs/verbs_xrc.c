/* SPDX-License-Identifier: MIT */
/* XRC (docs/verbs.md "XRC"): domains and their reference counts, a domain
 * shared by file across two processes, ibv_open_qp, and what a hostile
 * client gets: a wrong or foreign SRQ number is an error completion, a
 * domain of a file opened without read access or a TGT QP of another
 * domain is refused. Run one case per process (vt_main). */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "vt.h"

struct xs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_idx;
	union ibv_gid gid;
};

static void xs_init(struct xs *s)
{
	memset(s, 0, sizeof(*s));
	s->ctx = vt_open();
	s->gid_idx = vt_find_gid(s->ctx, &s->gid);
	REQUIRE((s->pd = ibv_alloc_pd(s->ctx)));
	REQUIRE((s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0)));
	REQUIRE((s->buf = calloc(1, VT_BUF)));
	REQUIRE((s->mr = ibv_reg_mr(s->pd, s->buf, VT_BUF, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)));
}

static void xs_fini(struct xs *s)
{
	REQUIRE(!ibv_dereg_mr(s->mr));
	REQUIRE(!ibv_destroy_cq(s->cq));
	REQUIRE(!ibv_dealloc_pd(s->pd));
	REQUIRE(!ibv_close_device(s->ctx));
	free(s->buf);
}

static struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xsrq(struct xs *s, struct ibv_xrcd *x)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		      IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = x;
	a.cq = s->cq;
	a.pd = s->pd;
	return ibv_create_srq_ex(s->ctx, &a);
}

static struct ibv_qp *tgt_qp(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = x;
	return ibv_create_qp_ex(ctx, &a);
}

static struct ibv_qp *ini_qp(struct xs *s)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = s->pd;
	a.send_cq = s->cq;
	a.cap.max_send_wr = 16;
	a.cap.max_send_sge = 1;
	REQUIRE((qp = ibv_create_qp_ex(s->ctx, &a)));
	return qp;
}

/* RESET -> RTS with the kernel's attribute masks for XRC INI and TGT */
static void xrc_connect(struct xs *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr m;

	vt_qp_start(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0);
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	m.path_mtu = IBV_MTU_1024;
	m.dest_qp_num = dest_qpn;
	m.rq_psn = 7;
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 1;
	m.ah_attr.is_global = 1;
	m.ah_attr.grh.dgid = s->gid;
	m.ah_attr.grh.sgid_index = (uint8_t)s->gid_idx;
	m.ah_attr.grh.hop_limit = 64;
	m.ah_attr.port_num = 1;
	REQUIRE(!ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     (tgt ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)));
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTS;
	m.sq_psn = 7;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	REQUIRE(!ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     (tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC)));
}

static void post_srq(struct ibv_srq *srq, struct ibv_mr *mr, size_t off, uint32_t len,
		     uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + off, .length = len,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	REQUIRE(!ibv_post_srq_recv(srq, &wr, &bad));
}

static void send_to(struct ibv_qp *ini, struct ibv_mr *mr, size_t off, uint32_t len,
		    uint32_t srqn, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + off, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	REQUIRE(!ibv_post_send(ini, &wr, &bad));
}

static char tmpl[] = "/tmp/uroce-s5-xrc-XXXXXX";

static int domain_file(void)
{
	int fd = mkstemp(tmpl);

	REQUIRE(fd >= 0);
	return fd;
}

/* Reference counts: a handle with an SRQ, a TGT QP or an opened QP made
 * through it cannot close (EBUSY); handles on one file share the domain,
 * which lives while any handle does; O_CREAT / O_EXCL as the kernel's. */
static void t_refs(void)
{
	struct xs s;
	struct ibv_xrcd *priv, *f1, *f2, *f3;
	struct ibv_srq *srq;
	struct ibv_qp *tgt, *opened;
	int fd = domain_file();

	xs_init(&s);
	REQUIRE((priv = xrcd_open(s.ctx, -1, 0)));
	REQUIRE((srq = xsrq(&s, priv)));
	errno = 0;
	REQUIRE(ibv_close_xrcd(priv) == EBUSY);
	REQUIRE(ibv_destroy_cq(s.cq) == EBUSY); /* the XRC SRQ completes on it */
	REQUIRE(!ibv_destroy_srq(srq));
	REQUIRE((tgt = tgt_qp(s.ctx, priv)));
	REQUIRE(ibv_close_xrcd(priv) == EBUSY);
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_close_xrcd(priv));

	/* a file's domain: made with O_CREAT only, refused with O_EXCL */
	errno = 0;
	REQUIRE(!xrcd_open(s.ctx, fd, 0) && errno == EAGAIN);
	REQUIRE((f1 = xrcd_open(s.ctx, fd, O_CREAT)));
	errno = 0;
	REQUIRE(!xrcd_open(s.ctx, fd, O_CREAT | O_EXCL) && errno == EINVAL);
	REQUIRE((f2 = xrcd_open(s.ctx, fd, 0)));
	REQUIRE((tgt = tgt_qp(s.ctx, f1)));
	/* the same domain through the other handle: its TGT QP opens */
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = tgt->qp_num, .xrcd = f2, .qp_type = IBV_QPT_XRC_RECV,
	};
	REQUIRE((opened = ibv_open_qp(s.ctx, &oa)));
	REQUIRE(opened->qp_num == tgt->qp_num && opened->qp_type == IBV_QPT_XRC_RECV);
	REQUIRE(ibv_close_xrcd(f2) == EBUSY);
	REQUIRE(!ibv_destroy_qp(opened));
	REQUIRE(!ibv_close_xrcd(f2));
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_close_xrcd(f1));
	/* every handle closed: the domain is gone, O_CREAT needed again */
	errno = 0;
	REQUIRE(!xrcd_open(s.ctx, fd, 0) && errno == EAGAIN);
	REQUIRE((f3 = xrcd_open(s.ctx, fd, O_CREAT)));
	REQUIRE(!ibv_close_xrcd(f3));
	xs_fini(&s);
	close(fd);
	unlink(tmpl);
}

static void pipe_put(int fd, const void *p, size_t n)
{
	REQUIRE(write(fd, p, n) == (ssize_t)n);
}

static void pipe_get(int fd, void *p, size_t n)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	REQUIRE(poll(&pf, 1, VT_WAIT_S * 1000) == 1);
	REQUIRE(read(fd, p, n) == (ssize_t)n);
}

/* The other process of t_shared: opens the same file, opens the parent's
 * TGT QP (and fails to through a domain of another file), then sends from
 * its own INI QP through its own TGT QP to the parent's XRC SRQ. */
static int shared_child(const char *path, const char *other, int rd)
{
	struct { uint32_t tgt, srqn; } p;
	struct ibv_qp *opened, *ini, *tgt;
	struct ibv_xrcd *x, *y;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	struct xs s;
	int fd = open(path, O_RDONLY), ofd = open(other, O_RDONLY);

	REQUIRE(fd >= 0 && ofd >= 0);
	pipe_get(rd, &p, sizeof(p));
	xs_init(&s);
	REQUIRE((x = xrcd_open(s.ctx, fd, 0))); /* exists: no O_CREAT needed */
	REQUIRE((y = xrcd_open(s.ctx, ofd, O_CREAT)));
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = p.tgt, .xrcd = y, .qp_type = IBV_QPT_XRC_RECV,
	};
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EACCES);
	oa.xrcd = x;
	REQUIRE((opened = ibv_open_qp(s.ctx, &oa)));
	REQUIRE(!ibv_query_qp(opened, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_RESET);
	/* this process's TGT QP, the parent's SRQ: the data lands in the
	 * parent's memory, placed by the daemon (3000 bytes: three packets
	 * at MTU 1024, none of them small enough for the CQ ring) */
	REQUIRE((tgt = tgt_qp(s.ctx, x)));
	ini = ini_qp(&s);
	xrc_connect(&s, tgt, ini->qp_num);
	xrc_connect(&s, ini, tgt->qp_num);
	for (int i = 0; i < 3000; i++)
		s.buf[i] = (uint8_t)(i * 7 + 1);
	send_to(ini, s.mr, 0, 3000, p.srqn, 77);
	vt_poll_n(s.cq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 77);
	REQUIRE(ibv_poll_cq(s.cq, 1, &wc) == 0); /* the receive is the parent's */
	REQUIRE(!ibv_destroy_qp(ini));
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_destroy_qp(opened));
	REQUIRE(!ibv_close_xrcd(y));
	REQUIRE(!ibv_close_xrcd(x));
	xs_fini(&s);
	return 0;
}

/* Two processes, one domain by file: the child's INI QP sends, through a
 * TGT QP the child created, to the parent's XRC SRQ; the message lands in
 * the parent's memory and completes on the parent's CQ. */
static void t_shared(void)
{
	char other[] = "/tmp/uroce-s5-xrc-o-XXXXXX";
	int fd = domain_file(), ofd = mkstemp(other), down[2], st;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct ibv_qp *tgt;
	struct ibv_wc wc;
	struct xs s;

	REQUIRE(ofd >= 0 && !pipe(down));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(shared_child(tmpl, other, down[0]));
	}
	xs_init(&s);
	REQUIRE((x = xrcd_open(s.ctx, fd, O_CREAT)));
	REQUIRE((srq = xsrq(&s, x)));
	REQUIRE((tgt = tgt_qp(s.ctx, x)));
	struct { uint32_t tgt, srqn; } p = { tgt->qp_num, 0 };
	REQUIRE(!ibv_get_srq_num(srq, &p.srqn) && p.srqn);
	post_srq(srq, s.mr, 4096, 4096, 5);
	pipe_put(down[1], &p, sizeof(p));
	vt_poll_n(s.cq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 && wc.byte_len == 3000 &&
	      wc.opcode == IBV_WC_RECV);
	for (int i = 0; i < 3000; i++)
		REQUIRE(s.buf[4096 + i] == (uint8_t)(i * 7 + 1));
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_destroy_srq(srq));
	REQUIRE(!ibv_close_xrcd(x));
	xs_fini(&s);
	close(fd);
	close(ofd);
	unlink(tmpl);
	unlink(other);
}

/* One process: INI -> TGT of domain A. A SEND naming an SRQ number that
 * does not exist, or the SRQ of domain B, is NAKed (invalid request): an
 * error completion, nothing taken from any SRQ; the right number works. */
static void t_bad_srqn(void)
{
	struct ibv_xrcd *a, *b;
	struct ibv_srq *sa, *sb;
	struct ibv_qp *tgt, *ini;
	uint32_t na, nb;
	struct ibv_wc wc;
	struct xs s;

	xs_init(&s);
	REQUIRE((a = xrcd_open(s.ctx, -1, 0)) && (b = xrcd_open(s.ctx, -1, 0)));
	REQUIRE((sa = xsrq(&s, a)) && (sb = xsrq(&s, b)));
	REQUIRE(!ibv_get_srq_num(sa, &na) && !ibv_get_srq_num(sb, &nb) && na != nb);
	post_srq(sa, s.mr, 8192, 64, 1);
	post_srq(sb, s.mr, 8192 + 64, 64, 2);
	for (int round = 0; round < 3; round++) {
		/* the good number last: the two bad ones leave both SRQs alone */
		uint32_t n = round == 0 ? 0xfffff : round == 1 ? nb : na;

		REQUIRE((tgt = tgt_qp(s.ctx, a)));
		ini = ini_qp(&s);
		xrc_connect(&s, tgt, ini->qp_num);
		xrc_connect(&s, ini, tgt->qp_num);
		send_to(ini, s.mr, 0, 16, n, 100 + (unsigned)round);
		if (round < 2) {
			vt_poll_n(s.cq, 1, &wc);
			REQUIRE(wc.wr_id == 100u + (unsigned)round &&
			      wc.status == IBV_WC_REM_INV_REQ_ERR);
		} else {
			/* the receive and the send complete on one CQ, in either order */
			struct ibv_wc two[2];

			vt_poll_n(s.cq, 2, two);
			int r = two[0].wr_id == 1 ? 0 : 1;
			REQUIRE(two[r].wr_id == 1 && two[r].status == IBV_WC_SUCCESS &&
			      two[r].byte_len == 16 && two[r].qp_num == tgt->qp_num);
			REQUIRE(two[1 - r].wr_id == 102 && two[1 - r].status == IBV_WC_SUCCESS);
		}
		REQUIRE(!ibv_destroy_qp(ini));
		REQUIRE(!ibv_destroy_qp(tgt));
	}
	REQUIRE(ibv_poll_cq(s.cq, 1, &wc) == 0); /* SRQ b's receive still posted */
	REQUIRE(!ibv_destroy_srq(sa) && !ibv_destroy_srq(sb));
	REQUIRE(!ibv_close_xrcd(a) && !ibv_close_xrcd(b));
	xs_fini(&s);
}

/* ibv_open_qp refuses what is not a TGT QP of the caller's domain. A TGT
 * QP opened by another context outlives its creator's handle (the
 * kernel's semantics): the opener then owns it, its domain handle holds
 * it, the creator's domain handle is free to close. */
static void t_open_qp(void)
{
	int fd = domain_file();
	struct ibv_xrcd *a, *b, *a2;
	struct ibv_qp *tgt, *ini, *opened;
	struct ibv_context *ctx2 = vt_open();
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct xs s;

	xs_init(&s);
	REQUIRE((a = xrcd_open(s.ctx, fd, O_CREAT)) && (b = xrcd_open(s.ctx, -1, 0)));
	REQUIRE((a2 = xrcd_open(ctx2, fd, 0)));
	REQUIRE((tgt = tgt_qp(s.ctx, a)));
	ini = ini_qp(&s);
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = ini->qp_num, .xrcd = a, .qp_type = IBV_QPT_XRC_RECV,
	};
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EINVAL);  /* an INI QP */
	oa.qp_num = 0xabcdef;
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EINVAL);  /* no such QP */
	oa.qp_num = tgt->qp_num;
	oa.xrcd = b;
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EACCES);  /* another domain */
	oa.qp_type = IBV_QPT_RC;
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EINVAL);
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = a2;
	REQUIRE((opened = ibv_open_qp(ctx2, &oa)));
	/* the opened handle modifies the one QP: its state is the creator's */
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	REQUIRE(!ibv_modify_qp(opened, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS));
	REQUIRE(!ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_INIT);
	/* the creator lets go: the QP lives on in ctx2 */
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_close_xrcd(a));
	REQUIRE(!ibv_query_qp(opened, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_INIT);
	REQUIRE(ibv_close_xrcd(a2) == EBUSY);
	REQUIRE(!ibv_destroy_qp(opened));
	REQUIRE(!ibv_close_xrcd(a2));
	/* gone with its last handle: nothing left to open */
	struct ibv_xrcd *a3;
	REQUIRE((a3 = xrcd_open(s.ctx, fd, O_CREAT)));
	oa.xrcd = a3;
	errno = 0;
	REQUIRE(!ibv_open_qp(s.ctx, &oa) && errno == EINVAL);
	REQUIRE(!ibv_close_xrcd(a3));
	REQUIRE(!ibv_destroy_qp(ini));
	/* what an XRC QP cannot do */
	struct ibv_recv_wr rw = { .wr_id = 1 }, *bad;
	REQUIRE(ibv_post_recv(ini = ini_qp(&s), &rw, &bad) == EINVAL);
	REQUIRE(!ibv_destroy_qp(ini));
	REQUIRE(!ibv_close_xrcd(b));
	REQUIRE(!ibv_close_device(ctx2));
	xs_fini(&s);
	close(fd);
	unlink(tmpl);
}

/* The file naming a domain must be open for reading: an O_PATH
 * descriptor (which needs no permission on the file: mode 0 here) or one
 * open for writing only is refused with EACCES; no domain is made. */
static void t_file_access(void)
{
	int fd = domain_file();
	struct ibv_context *ctx = vt_open();
	int po, wo;

	REQUIRE(!fchmod(fd, 0));
	REQUIRE((po = open(tmpl, O_PATH)) >= 0 && (wo = open(tmpl, O_WRONLY)) >= 0);
	errno = 0;
	REQUIRE(!xrcd_open(ctx, po, O_CREAT) && errno == EACCES);
	errno = 0;
	REQUIRE(!xrcd_open(ctx, wo, O_CREAT) && errno == EACCES);
	errno = 0;
	REQUIRE(!xrcd_open(ctx, fd, 0) && errno == EAGAIN); /* nothing was made */
	struct ibv_xrcd_init_attr bad = { .comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1 };
	errno = 0;
	REQUIRE(!ibv_open_xrcd(ctx, &bad) && errno == EINVAL);
	REQUIRE(!ibv_close_device(ctx));
	close(po);
	close(wo);
	close(fd);
	unlink(tmpl);
}

#define XRC_NOBODY 65534

/* The other uid's side of t_other_uid: it cannot open the file, gets a
 * descriptor anyway (O_PATH needs no permission on it) and is refused the
 * domain; its own domain does not open root's TGT QP. */
static int other_uid_child(const char *path, uint32_t tgt_qpn)
{
	if (setgroups(0, NULL) || setresgid(XRC_NOBODY, XRC_NOBODY, XRC_NOBODY) ||
	    setresuid(XRC_NOBODY, XRC_NOBODY, XRC_NOBODY))
		return 10;
	prctl(PR_SET_DUMPABLE, 1); /* its own /proc/self/mem, for HELLO */
	errno = 0;
	REQUIRE(open(path, O_RDONLY) < 0 && errno == EACCES);
	int po = open(path, O_PATH);
	REQUIRE(po >= 0);
	struct ibv_context *ctx = vt_open();
	struct ibv_xrcd *y;
	errno = 0;
	REQUIRE(!xrcd_open(ctx, po, O_CREAT) && errno == EACCES);
	REQUIRE((y = xrcd_open(ctx, -1, 0)));
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = tgt_qpn, .xrcd = y, .qp_type = IBV_QPT_XRC_RECV,
	};
	errno = 0;
	REQUIRE(!ibv_open_qp(ctx, &oa) && errno == EACCES);
	REQUIRE(!ibv_close_xrcd(y));
	REQUIRE(!ibv_close_device(ctx));
	return 0;
}

/* Run as root with --allow-uid 65534 (meson): a client of another uid
 * that may use the daemon still cannot join root's domain by a file it
 * cannot read, nor open root's TGT QP from a domain of its own. */
static void t_other_uid(void)
{
	const char *rd = getenv("UROCE_RUN_DIR");
	struct ibv_xrcd *x;
	struct ibv_qp *tgt;
	int fd, st;

	if (geteuid() != 0) {
		fprintf(stderr, "needs root (to be another uid)\n");
		exit(1);
	}
	REQUIRE(rd && !chmod(rd, 0755)); /* the other uid reaches the socket */
	fd = domain_file();
	REQUIRE(!fchmod(fd, 0600));
	struct ibv_context *ctx = vt_open();
	REQUIRE((x = xrcd_open(ctx, fd, O_CREAT)));
	REQUIRE((tgt = tgt_qp(ctx, x)));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(other_uid_child(tmpl, tgt->qp_num));
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE(!ibv_destroy_qp(tgt));
	REQUIRE(!ibv_close_xrcd(x));
	REQUIRE(!ibv_close_device(ctx));
	close(fd);
	unlink(tmpl);
}

/* Run with --limit xrcd=2 (meson): a third domain handle is ENOMEM, a
 * closed one makes room again; the limit counts handles, not domains. */
static void t_limit(void)
{
	struct ibv_context *ctx = vt_open();
	struct ibv_xrcd *a, *b, *c;

	REQUIRE((a = xrcd_open(ctx, -1, 0)) && (b = xrcd_open(ctx, -1, 0)));
	errno = 0;
	REQUIRE(!xrcd_open(ctx, -1, 0) && errno == ENOMEM);
	REQUIRE(!ibv_close_xrcd(a));
	REQUIRE((c = xrcd_open(ctx, -1, 0)));
	REQUIRE(!ibv_close_xrcd(b) && !ibv_close_xrcd(c));
	REQUIRE(!ibv_close_device(ctx));
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "refs", t_refs },
		{ "shared", t_shared },
		{ "bad_srqn", t_bad_srqn },
		{ "open_qp", t_open_qp },
		{ "file_access", t_file_access },
		{ "limit", t_limit },
		{ "other_uid", t_other_uid },
	};

	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
