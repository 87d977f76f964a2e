/* SPDX-License-Identifier: MIT */
/* What the last request received tells the engine (xport.h,
 * emu_xport_req_announces; xport.c, emu_xport_rx_expected): more follows
 * inside a message and after the last packet of a multi-packet message
 * (bulk messages come in trains: the engine keeps its yielding spin
 * rather than sleep and be woken for the next one), nothing after a
 * single-packet message (a ping-pong's next waits for an application).
 * The ACK hold is off here, so only the packet decides.
 * Usage: test_rxexpect <name>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pair.h"

/* Every valid request opcode: announces more unless it is a whole
 * message in one packet. */
static int t_rx_expect_policy(void)
{
	static const uint8_t more[] = {
		WIRE_OP_RC_SEND_FIRST, WIRE_OP_RC_SEND_MIDDLE, WIRE_OP_RC_SEND_LAST,
		WIRE_OP_RC_SEND_LAST_IMM, WIRE_OP_RC_WRITE_FIRST, WIRE_OP_RC_WRITE_MIDDLE,
		WIRE_OP_RC_WRITE_LAST, WIRE_OP_RC_WRITE_LAST_IMM,
	};
	static const uint8_t none[] = {
		WIRE_OP_RC_SEND_ONLY, WIRE_OP_RC_SEND_ONLY_IMM, WIRE_OP_RC_WRITE_ONLY,
		WIRE_OP_RC_WRITE_ONLY_IMM, WIRE_OP_RC_READ_REQ,
	};

	for (unsigned i = 0; i < sizeof(more); i++)
		CHECK(emu_xport_req_announces(wire_opcode_info(more[i])->flags));
	for (unsigned i = 0; i < sizeof(none); i++)
		CHECK(!emu_xport_req_announces(wire_opcode_info(none[i])->flags));
	return 0;
}

/* A sends len bytes from offset 0 of its MR as one SEND */
static void send_len(struct pair *p, uint64_t id, uint32_t len)
{
	struct uroce_send_wqe w;
	struct uroce_sge s = xt_sge(&p->ma, 0, len);

	xt_wqe(&w, id, IBV_WR_SEND, 1);
	sim_post_send(&p->a, &w, &s, NULL);
}

static void recv_len(struct pair *p, uint64_t id, uint32_t len)
{
	struct uroce_sge s = xt_sge(&p->mb, 65536, len);

	sim_post_recv(&p->b, id, &s, 1);
}

/* On the simulated pair: B has received a 4-packet SEND (MTU 1024):
 * expected; then a 64-byte one: not; then a 4-packet one again. */
static int t_rx_expect_train(void)
{
	struct pair p;
	struct emu_dev *b;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, 1 << 20))
		return 1;
	for (int i = 0; i < 2; i++)
		emu_xport_ack_hold_set(&p.s.n[i].dev, 0);
	b = &p.s.n[1].dev;
	recv_len(&p, 1, 4096);
	recv_len(&p, 2, 4096);
	recv_len(&p, 3, 4096);
	send_len(&p, 1, 4096);
	sim_run(&p.s, 10000000);
	CHECK_EQ(p.b.qp->x->cnt.rx_pkts, 4);
	CHECK(emu_xport_rx_expected(b));
	send_len(&p, 2, 64);
	sim_run(&p.s, 10000000);
	CHECK_EQ(p.b.qp->x->cnt.rx_pkts, 5);
	CHECK(!emu_xport_rx_expected(b));
	send_len(&p, 3, 4096);
	sim_run(&p.s, 10000000);
	CHECK_EQ(p.b.qp->x->cnt.rx_pkts, 9);
	CHECK(emu_xport_rx_expected(b));
	struct uroce_cqe c[8];
	int n = sim_poll(p.b.rcq, c, 8), ok = 0;
	for (int i = 0; i < n; i++)
		ok += c[i].status == IBV_WC_SUCCESS;
	CHECK_EQ(ok, 3);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "rx_expect_policy", t_rx_expect_policy },
	{ "rx_expect_train", t_rx_expect_train },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
