/* SPDX-License-Identifier: MIT */
/* Resource limits: a daemon with small per-context and per-uid limits.
 * A client that creates objects until refused gets ENOMEM at exactly its
 * limit, the limits are what HELLO (ibv_query_device) reports, a second
 * client of the same uid keeps working within what the uid has left and
 * gets it back when the first leaves, and contexts per uid are bounded. */
#include "emu_test.h"

#define CTX_QP 8
#define UID_QP 12
#define CTX_MR 16
#define UID_CTX 3

static int reg_mr(struct t_client *c, uint32_t pd, void *addr, uint64_t len)
{
	struct uroce_reg_mr_req q = { .pin = UROCE_PIN_NONE, .pd = pd, .access = IBV_ACCESS_LOCAL_WRITE,
				      .addr = (uintptr_t)addr, .length = len,
				      .iova = (uintptr_t)addr };
	struct uroce_reg_mr_rep r;
	return t_call(c, UROCE_OP_REG_MR, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
}

/* QPs until refused (bounded): count, and the refusal in *err */
static int qps_until_refused(struct t_client *c, uint32_t pd, uint32_t cq, int *err)
{
	struct uroce_create_qp_rep r;
	int n = 0, rc = 0;

	while (n < 1000 && (rc = t_qp(c, pd, cq, cq, IBV_QPT_RC, &r, NULL)) == 0)
		n++;
	*err = rc;
	return n;
}

static int big_qp(struct t_client *c, uint32_t pd, uint32_t cq, uint32_t wr)
{
	struct uroce_create_qp_req q = {
		.pd = pd, .send_cq = cq, .recv_cq = cq, .srq = -1, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 512 },
	};
	struct uroce_create_qp_rep r;
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(c, UROCE_OP_CREATE_QP, &q, sizeof(q), NULL, 0, &r, sizeof(r), fds, &nf);
	for (unsigned i = 0; i < nf; i++)
		close(fds[i]);
	if (!rc)
		t_handle_op(c, UROCE_OP_DESTROY_QP, r.handle);
	return rc;
}

/* an SRQ of wr entries x sge SGEs, destroyed again if made: 0 or -errno */
static int srq_try(struct t_client *c, uint32_t pd, uint32_t wr, uint32_t sge)
{
	struct uroce_create_srq_req q = { .pd = pd, .max_wr = wr, .max_sge = sge };
	struct uroce_create_srq_rep r;
	int fds[4];
	unsigned nf = 0;
	int rc = t_call(c, UROCE_OP_CREATE_SRQ, &q, sizeof(q), NULL, 0, &r, sizeof(r), fds, &nf);
	for (unsigned i = 0; i < nf; i++)
		close(fds[i]);
	if (!rc)
		t_handle_op(c, UROCE_OP_DESTROY_SRQ, r.handle);
	return rc;
}

int main(int argc, char **argv)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	static const char *const opts[] = {
		"--limit", "qp=8", "--limit", "mr=16", "--uid-limit", "qp=12",
		"--uid-limit", "ctx=3", "--limit", "mem=8M", NULL,
	};
	struct t_daemon d;
	struct t_client a, b, c3, x;
	struct uroce_create_cq_rep cr;
	uint32_t pda, pdb, cqa, cqb;
	int n, err, rc;

	if (argc < 2)
		return 2;
	alarm(90);
	REQUIRE(t_daemon_start(&d, argv[1], false, opts) == 0, "start");
	REQUIRE(t_client_open(&a, d.sock) == 0, "client a");
	REQUIRE(t_client_open(&b, d.sock) == 0, "client b");

	/* reported as an HCA reports its limits */
	CHECK(a.hello.dev_attr.max_qp == CTX_QP, "max_qp %d", a.hello.dev_attr.max_qp);
	CHECK(a.hello.dev_attr.max_mr == CTX_MR, "max_mr %d", a.hello.dev_attr.max_mr);
	CHECK(a.hello.dev_attr.max_cq > 0 && a.hello.dev_attr.max_cq <= 16384 / 16,
	      "max_cq %d", a.hello.dev_attr.max_cq);

	REQUIRE(t_pd(&a, &pda) == 0 && t_pd(&b, &pdb) == 0, "pds");
	REQUIRE(t_cq(&a, 64, &cr, NULL) == 0, "cq a");
	cqa = cr.handle;
	REQUIRE(t_cq(&b, 64, &cr, NULL) == 0, "cq b");
	cqb = cr.handle;

	/* daemon memory (8 MiB per context here): a send queue of 16384
	 * entries with 512 B inline costs 16 MiB of ring plus as much of
	 * private copy; 1024 entries fit. A 512K-entry CQ (128 MiB with its
	 * small-payload slots) does not. */
	CHECK(big_qp(&a, pda, cqa, 16384) == -ENOMEM, "16 MiB send queue accepted");
	CHECK(big_qp(&a, pda, cqa, 1024) == 0, "1 MiB send queue refused");
	/* destroyed QPs give their memory back (20 x ~1.5 MiB > 8 MiB) */
	for (int i = 0; i < 20; i++)
		CHECK(big_qp(&a, pda, cqa, 1024) == 0, "send queue %d: memory not returned", i);
	rc = t_cq(&a, (1u << 19) - 1, &cr, NULL);
	CHECK(rc == -ENOMEM, "128 MiB CQ: %d", rc);
	/* SRQ rings: 16384 x 32 SGEs (16 MiB) refused; 4096 x 8 (1 MiB) made
	 * and given back twenty times */
	CHECK(srq_try(&a, pda, 16384, 32) == -ENOMEM, "16 MiB SRQ accepted");
	for (int i = 0; i < 20; i++)
		CHECK(srq_try(&a, pda, 4096, 8) == 0, "SRQ %d: memory not returned", i);

	/* per context */
	n = qps_until_refused(&a, pda, cqa, &err);
	CHECK(n == CTX_QP && err == -ENOMEM, "a: %d QPs, then %d", n, err);
	for (n = 0; n < 1000 && (rc = reg_mr(&a, pda, buf, sizeof(buf))) == 0; n++)
		;
	CHECK(n == CTX_MR && rc == -ENOMEM, "a: %d MRs, then %d", n, rc);

	/* per uid: b gets what the uid has left, and is otherwise served */
	n = qps_until_refused(&b, pdb, cqb, &err);
	CHECK(n == UID_QP - CTX_QP && err == -ENOMEM, "b: %d QPs, then %d", n, err);
	CHECK(reg_mr(&b, pdb, buf, sizeof(buf)) == 0, "b: mr while a is at its limit");

	/* contexts per uid */
	REQUIRE(t_client_open(&c3, d.sock) == 0, "third context");
	rc = t_client_open(&x, d.sock);
	CHECK(rc != 0, "fourth context of the uid accepted");
	t_client_close(&x);

	/* a leaves: its QPs and context go back to the uid */
	t_client_close(&a);
	uint64_t end = t_now_ms() + 20000;
	do {
		usleep(20000);
		n = qps_until_refused(&b, pdb, cqb, &err);
	} while (n == 0 && t_now_ms() < end);
	CHECK(n == CTX_QP - (UID_QP - CTX_QP) && err == -ENOMEM,
	      "b after a left: %d more QPs, then %d", n, err);
	rc = -1;
	end = t_now_ms() + 20000;
	while (t_now_ms() < end && (rc = t_client_open(&x, d.sock)) != 0) {
		t_client_close(&x);
		usleep(20000);
	}
	CHECK(rc == 0, "context after a left: %d", rc);
	if (rc == 0) {
		uint32_t pdx;
		CHECK(t_pd(&x, &pdx) == 0, "new client's pd");
		t_client_close(&x);
	}
	t_client_close(&b);
	t_client_close(&c3);
	CHECK(t_daemon_stop(&d) == 0, "clean exit");
	t_rmdir(&d);
	return t_failures ? 1 : 0;
}
