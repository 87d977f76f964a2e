/* SPDX-License-Identifier: MIT */
/* The control protocol object by object: creation, validation errors as
 * the kernel/rdma-core return them, handles scoped per context, busy
 * objects, and cleanup when a client disconnects without destroying. */
#include "emu_test.h"

static int reg_mr(struct t_client *c, uint32_t pd, void *addr, uint64_t len, uint32_t access,
		  struct uroce_reg_mr_rep *r)
{
	struct uroce_reg_mr_req q = { .pin = UROCE_PIN_NONE, .pd = pd, .access = access, .addr = (uintptr_t)addr,
				      .length = len, .iova = (uintptr_t)addr };
	return t_call(c, UROCE_OP_REG_MR, &q, sizeof(q), NULL, 0, r, sizeof(*r), NULL, NULL);
}

int main(int argc, char **argv)
{
	struct t_daemon d;
	struct t_client a, b, c3;
	int rc;

	if (argc < 2)
		return 2;
	alarm(90);
	/* same user as us: the daemon reads our memory to validate MRs */
	REQUIRE(t_daemon_start(&d, argv[1], false, NULL) == 0, "start");
	REQUIRE(t_client_open(&a, d.sock) == 0, "client a");
	REQUIRE(t_client_open(&b, d.sock) == 0, "client b");

	/* PD */
	uint32_t pd, pd_b;
	REQUIRE(t_pd(&a, &pd) == 0, "pd");
	REQUIRE(t_pd(&b, &pd_b) == 0, "pd b");
	CHECK(t_handle_op(&a, UROCE_OP_DEALLOC_PD, 999) == -EINVAL, "bad pd handle");

	/* MR */
	static uint8_t buf[65536] __attribute__((aligned(4096)));
	struct uroce_reg_mr_rep mr, mr2;
	rc = reg_mr(&a, pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND, &mr);
	REQUIRE(rc == 0, "reg mr %d", rc);
	CHECK(mr.lkey == mr.rkey && (mr.lkey >> 8) != 0, "keys %x %x", mr.lkey, mr.rkey);
	CHECK(reg_mr(&a, pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE, &mr2) == -EINVAL,
	      "remote write without local write");
	CHECK(reg_mr(&a, pd, buf, 0, 0, &mr2) == -EINVAL, "zero length");
	CHECK(reg_mr(&a, pd, (void *)16, 4096, 0, &mr2) == -EFAULT, "unmapped memory");
	CHECK(reg_mr(&a, pd, buf, sizeof(buf), 1u << 30, &mr2) == -EINVAL, "unknown access bit");
	CHECK(reg_mr(&a, 999, buf, sizeof(buf), 0, &mr2) == -EINVAL, "bad pd");
	CHECK(reg_mr(&a, pd, (void *)(uintptr_t)UINT64_MAX - 10, 100, 0, &mr2) == -EINVAL,
	      "wrapping range");
	CHECK(t_handle_op(&a, UROCE_OP_DEALLOC_PD, pd) == -EBUSY, "pd in use by mr");
	/* another context cannot touch it: its handle space has no MR */
	CHECK(t_handle_op(&b, UROCE_OP_DEREG_MR, mr.handle) == -EINVAL, "cross-context mr");
	CHECK(reg_mr(&b, pd == pd_b ? 12345 : pd, buf, 64, 0, &mr2) == -EINVAL, "cross-context pd");
	/* rereg: access change keeps the keys */
	struct uroce_rereg_mr_req rq = { .handle = mr.handle, .flags = IBV_REREG_MR_CHANGE_ACCESS,
					 .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND };
	rc = t_call(&a, UROCE_OP_REREG_MR, &rq, sizeof(rq), NULL, 0, &mr2, sizeof(mr2), NULL, NULL);
	CHECK(rc == 0 && mr2.lkey == mr.lkey, "rereg %d", rc);
	rq.flags = 0;
	rc = t_call(&a, UROCE_OP_REREG_MR, &rq, sizeof(rq), NULL, 0, &mr2, sizeof(mr2), NULL, NULL);
	CHECK(rc == -EINVAL, "rereg no flags %d", rc);

	/* MW */
	struct uroce_alloc_mw_req wq = { .pd = pd, .type = IBV_MW_TYPE_2 };
	struct uroce_alloc_mw_rep mw;
	rc = t_call(&a, UROCE_OP_ALLOC_MW, &wq, sizeof(wq), NULL, 0, &mw, sizeof(mw), NULL, NULL);
	CHECK(rc == 0 && mw.rkey != mr.rkey, "alloc mw %d", rc);
	wq.type = 7;
	CHECK(t_call(&a, UROCE_OP_ALLOC_MW, &wq, sizeof(wq), NULL, 0, &mw, sizeof(mw), NULL, NULL) ==
	      -EINVAL, "bad mw type");

	/* completion channel and CQs */
	int p[2];
	REQUIRE(pipe(p) == 0, "pipe");
	struct uroce_handle_msg ch;
	/* the daemon makes the pipe: a client's fd is refused */
	rc = t_call(&a, UROCE_OP_CREATE_COMP_CHANNEL, NULL, 0, &p[1], 1, &ch, sizeof(ch), NULL, NULL);
	CHECK(rc == -EINVAL, "channel with a client fd %d", rc);
	close(p[0]);
	close(p[1]);
	int chfd[4];
	unsigned nchfd = 0;
	rc = t_call(&a, UROCE_OP_CREATE_COMP_CHANNEL, NULL, 0, NULL, 0, &ch, sizeof(ch), chfd, &nchfd);
	CHECK(rc == 0 && nchfd == 1, "channel %d (%u fds)", rc, nchfd);
	if (rc == 0 && nchfd == 1) {
		int fl = fcntl(chfd[0], F_GETFL);
		CHECK(fl >= 0 && (fl & O_ACCMODE) == O_RDONLY, "channel fd is a read end");
		close(chfd[0]);
	}
	struct uroce_create_cq_req cq_q = { .cqe = 100, .channel = (int32_t)ch.handle, .user_handle = 7 };
	struct uroce_create_cq_rep cq, cq2;
	int fds[4];
	unsigned nf;
	rc = t_call(&a, UROCE_OP_CREATE_CQ, &cq_q, sizeof(cq_q), NULL, 0, &cq, sizeof(cq), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "cq %d", rc);
	CHECK(cq.cqe >= 100 && cq.entries >= 100 && (cq.entries & (cq.entries - 1)) == 0, "cq size");
	struct uroce_ring_hdr *cqh = mmap(NULL, cq.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	CHECK(cqh != MAP_FAILED && cqh->entries == cq.entries && cqh->stride == UROCE_CQE_SIZE, "cq map");
	close(fds[0]);
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_COMP_CHANNEL, ch.handle) == -EBUSY, "channel in use");
	cq_q.cqe = 0;
	CHECK(t_call(&a, UROCE_OP_CREATE_CQ, &cq_q, sizeof(cq_q), NULL, 0, &cq2, sizeof(cq2), NULL, NULL) ==
	      -EINVAL, "cqe 0");
	cq_q.cqe = 1u << 30;
	CHECK(t_call(&a, UROCE_OP_CREATE_CQ, &cq_q, sizeof(cq_q), NULL, 0, &cq2, sizeof(cq2), NULL, NULL) ==
	      -EINVAL, "cqe too big");
	cq_q.cqe = 4;
	cq_q.channel = 4242;
	CHECK(t_call(&a, UROCE_OP_CREATE_CQ, &cq_q, sizeof(cq_q), NULL, 0, &cq2, sizeof(cq2), NULL, NULL) ==
	      -EINVAL, "bad channel");
	struct uroce_resize_cq_req rz = { .handle = cq.handle, .cqe = 1000 };
	rc = t_call(&a, UROCE_OP_RESIZE_CQ, &rz, sizeof(rz), NULL, 0, &cq2, sizeof(cq2), fds, &nf);
	CHECK(rc == 0 && nf == 1 && cq2.cqe >= 1000 && cq2.handle == cq.handle, "resize %d", rc);
	if (rc == 0 && nf)
		close(fds[0]);

	/* SRQ */
	struct uroce_create_srq_req sq = { .pd = pd, .max_wr = 10, .max_sge = 3 };
	struct uroce_create_srq_rep srq;
	rc = t_call(&a, UROCE_OP_CREATE_SRQ, &sq, sizeof(sq), NULL, 0, &srq, sizeof(srq), fds, &nf);
	REQUIRE(rc == 0 && nf == 1, "srq %d", rc);
	close(fds[0]);
	CHECK(srq.max_wr >= 10 && srq.max_sge >= 3, "srq caps");
	struct uroce_modify_srq_req ms = { .handle = srq.handle, .attr_mask = IBV_SRQ_LIMIT,
					   .attr = { .srq_limit = 5 } };
	CHECK(t_call(&a, UROCE_OP_MODIFY_SRQ, &ms, sizeof(ms), NULL, 0, NULL, 0, NULL, NULL) == 0, "srq arm");
	ms.attr.srq_limit = 100000;
	CHECK(t_call(&a, UROCE_OP_MODIFY_SRQ, &ms, sizeof(ms), NULL, 0, NULL, 0, NULL, NULL) == -EINVAL,
	      "srq limit > max_wr");
	struct ibv_srq_attr sa;
	struct uroce_handle_msg hq = { .handle = srq.handle };
	rc = t_call(&a, UROCE_OP_QUERY_SRQ, &hq, sizeof(hq), NULL, 0, &sa, sizeof(sa), NULL, NULL);
	CHECK(rc == 0 && sa.srq_limit == 5 && sa.max_wr >= 10, "srq query");

	/* QP */
	struct uroce_create_qp_rep qp, qp2;
	int qfd;
	rc = t_qp(&a, pd, cq.handle, cq.handle, IBV_QPT_RC, &qp, &qfd);
	REQUIRE(rc == 0, "qp %d", rc);
	CHECK(qp.qpn >= 2 && qp.qpn <= 0xffffff, "qpn %x", qp.qpn);
	CHECK(qp.cap.max_send_wr >= 16 && qp.cap.max_recv_wr >= 16 && qp.cap.max_send_sge >= 2 &&
	      qp.cap.max_inline_data >= 64, "qp caps");
	CHECK(qp.sq_entries >= 16 && qp.rq_entries >= 16 && qp.rq_offset >= qp.sq_offset, "rings");
	uint8_t *qm = mmap(NULL, qp.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, qfd, 0);
	CHECK(qm != MAP_FAILED, "qp map");
	if (qm != MAP_FAILED) {
		struct uroce_ring_hdr *sh = (void *)(qm + qp.sq_offset), *rh = (void *)(qm + qp.rq_offset);
		CHECK(sh->entries == qp.sq_entries && sh->stride == qp.sq_stride, "sq hdr");
		CHECK(rh->entries == qp.rq_entries && rh->stride == qp.rq_stride, "rq hdr");
	}
	close(qfd);
	rc = t_qp(&a, pd, cq.handle, cq.handle, IBV_QPT_UD, &qp2, NULL);
	CHECK(rc == 0 && qp2.qpn != qp.qpn, "second qp %d", rc);
	CHECK(t_qp(&a, pd, 999, cq.handle, IBV_QPT_RC, &qp2, NULL) == -EINVAL, "qp bad cq");
	CHECK(t_qp(&a, 999, cq.handle, cq.handle, IBV_QPT_RC, &qp2, NULL) == -EINVAL, "qp bad pd");
	CHECK(t_qp(&b, pd_b, cq.handle, cq.handle, IBV_QPT_RC, &qp2, NULL) == -EINVAL, "qp cross-ctx cq");
	CHECK(t_qp(&a, pd, cq.handle, cq.handle, IBV_QPT_RAW_PACKET, &qp2, NULL) == -EOPNOTSUPP, "raw qp");
	struct uroce_create_qp_req bigq = { .pd = pd, .send_cq = cq.handle, .recv_cq = cq.handle,
					    .srq = -1, .qp_type = IBV_QPT_RC,
					    .cap = { .max_send_wr = 1u << 30, .max_recv_wr = 1 } };
	CHECK(t_call(&a, UROCE_OP_CREATE_QP, &bigq, sizeof(bigq), NULL, 0, &qp2, sizeof(qp2), NULL, NULL) ==
	      -EINVAL, "too many wr");
	bigq.cap.max_send_wr = 4;
	bigq.cap.max_send_sge = 33;
	CHECK(t_call(&a, UROCE_OP_CREATE_QP, &bigq, sizeof(bigq), NULL, 0, &qp2, sizeof(qp2), NULL, NULL) ==
	      -EINVAL, "too many sge");
	/* QP on the SRQ */
	bigq.cap.max_send_sge = 1;
	bigq.srq = (int32_t)srq.handle;
	rc = t_call(&a, UROCE_OP_CREATE_QP, &bigq, sizeof(bigq), NULL, 0, &qp2, sizeof(qp2), fds, &nf);
	CHECK(rc == 0 && qp2.rq_entries == 0, "qp with srq %d", rc);
	if (!rc)
		close(fds[0]);
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_SRQ, srq.handle) == -EBUSY, "srq in use");
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_CQ, cq.handle) == -EBUSY, "cq in use");
	CHECK(t_handle_op(&a, UROCE_OP_DEALLOC_PD, pd) == -EBUSY, "pd in use");
	struct uroce_query_qp_req qq = { .handle = qp.handle, .attr_mask = IBV_QP_STATE };
	struct uroce_query_qp_rep qr;
	rc = t_call(&a, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL, NULL);
	CHECK(rc == 0 && qr.attr.qp_state == IBV_QPS_RESET && qr.cap.max_send_wr == qp.cap.max_send_wr,
	      "query qp %d state %d", rc, qr.attr.qp_state);
	qq.handle = 4242;
	CHECK(t_call(&a, UROCE_OP_QUERY_QP, &qq, sizeof(qq), NULL, 0, &qr, sizeof(qr), NULL, NULL) ==
	      -EINVAL, "query bad qp");
	struct uroce_modify_qp_req mq = { .handle = qp.handle,
		.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		.attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
			  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE } };
	rc = t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
	CHECK(rc == 0 || rc == -EOPNOTSUPP, "modify to INIT %d", rc);
	mq.attr.qp_state = IBV_QPS_RTS; /* RESET/INIT -> RTS is not a transition */
	mq.attr_mask = IBV_QP_STATE;
	rc = t_call(&a, UROCE_OP_MODIFY_QP, &mq, sizeof(mq), NULL, 0, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL || rc == -EOPNOTSUPP, "bad transition %d", rc);

	/* AH */
	struct uroce_create_ah_req ah = { .pd = pd };
	ah.attr.is_global = 1;
	ah.attr.port_num = 1;
	ah.attr.grh.sgid_index = 1;
	ah.attr.grh.dgid = a.hello.gids[1];
	ah.attr.grh.hop_limit = 64;
	struct uroce_handle_msg ahr;
	rc = t_call(&a, UROCE_OP_CREATE_AH, &ah, sizeof(ah), NULL, 0, &ahr, sizeof(ahr), NULL, NULL);
	CHECK(rc == 0, "ah %d", rc);
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_AH, ahr.handle) == 0, "destroy ah");
	ah.attr.is_global = 0;
	CHECK(t_call(&a, UROCE_OP_CREATE_AH, &ah, sizeof(ah), NULL, 0, &ahr, sizeof(ahr), NULL, NULL) ==
	      -EINVAL, "ah without grh");
	ah.attr.is_global = 1;
	ah.attr.grh.sgid_index = 9;
	CHECK(t_call(&a, UROCE_OP_CREATE_AH, &ah, sizeof(ah), NULL, 0, &ahr, sizeof(ahr), NULL, NULL) ==
	      -EINVAL, "ah bad sgid index");
	ah.attr.grh.sgid_index = 0; /* IPv6 source, IPv4 destination */
	CHECK(t_call(&a, UROCE_OP_CREATE_AH, &ah, sizeof(ah), NULL, 0, &ahr, sizeof(ahr), NULL, NULL) ==
	      -EINVAL, "ah mixed families");

	/* multicast: UD only */
	struct uroce_mcast_req mc = { .qp = qp2.handle };
	mc.gid.raw[0] = 0xff;
	mc.gid.raw[1] = 0x0e;
	mc.gid.raw[15] = 1;
	CHECK(t_call(&a, UROCE_OP_ATTACH_MCAST, &mc, sizeof(mc), NULL, 0, NULL, 0, NULL, NULL) == -EINVAL,
	      "mcast on RC");

	/* malformed messages: wrong length, unknown op */
	struct uroce_handle_msg h1 = { .handle = pd };
	rc = t_call(&a, UROCE_OP_DEALLOC_PD, &h1, 4, NULL, 0, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "short body %d", rc);
	rc = t_call(&a, 999, NULL, 0, NULL, 0, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "unknown op %d", rc);

	/* destroy in order works */
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_QP, qp.handle) == 0, "destroy qp");
	CHECK(t_handle_op(&a, UROCE_OP_DESTROY_QP, qp.handle) == -EINVAL, "destroy qp twice");
	CHECK(t_handle_op(&a, UROCE_OP_DEREG_MR, mr.handle) == 0, "dereg");
	CHECK(t_handle_op(&a, UROCE_OP_DEREG_MR, mr.handle) == -EINVAL, "dereg twice");

	/* stale key: a new MR in the same slot gets a different key */
	rc = reg_mr(&a, pd, buf, 4096, 0, &mr2);
	CHECK(rc == 0 && mr2.lkey != mr.lkey, "fresh key %x vs %x", mr2.lkey, mr.lkey);

	/* a disconnect with everything still allocated cleans up; the
	 * daemon keeps serving others */
	t_client_close(&a);
	usleep(100000);
	REQUIRE(t_client_open(&c3, d.sock) == 0, "client after disconnect");
	uint32_t pd3;
	CHECK(t_pd(&c3, &pd3) == 0, "pd after disconnect");
	struct uroce_create_cq_rep cq3;
	CHECK(t_cq(&c3, 16, &cq3, NULL) == 0, "cq after disconnect");
	CHECK(t_qp(&c3, pd3, cq3.handle, cq3.handle, IBV_QPT_RC, &qp2, NULL) == 0, "qp after disconnect");
	CHECK(t_handle_op(&b, UROCE_OP_DEALLOC_PD, pd_b) == 0, "b still served");
	t_client_close(&b);
	t_client_close(&c3);

	rc = t_daemon_stop(&d);
	CHECK(rc == 0, "exit %d", rc);
	t_rmdir(&d);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failure(s)\n", t_failures);
	return t_failures ? 1 : 0;
}
