/* SPDX-License-Identifier: MIT */
/* No placement after deregistration: a multi-packet message whose target
 * MR is deregistered (or reregistered elsewhere) between two of its
 * packets places nothing more, neither through the old registration nor
 * through the new translation, and completes in error:
 *  - responder WRITE: remote access error NAK, QP_ACCESS_ERR on the
 *    responder, IBV_WC_REM_ACCESS_ERR at the requester;
 *  - responder SEND: the receive completes with IBV_WC_LOC_PROT_ERR, the
 *    requester gets the remote operational error NAK (IBV_WC_REM_OP_ERR);
 *  - requester READ response: IBV_WC_LOC_PROT_ERR.
 * The control operation runs from the wire hook, i.e. between two packets
 * as the daemon runs control messages between RX bursts. */
#include <stdlib.h>
#include <string.h>

#include "pair.h"

#define MSG 4096u  /* 4 packets at MTU 1024 */
#define PKT 1024u

static struct pair P;
static struct sim_mr *victim;     /* the MR to take away */
static struct sim_node *victim_node;
static int victim_to;             /* node whose incoming frames trigger it */
static uint8_t trigger_op;        /* ... at the first frame with this opcode */
static void *rereg_to;            /* non-NULL: reregister here instead */
static int fired;

static bool take_away(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	(void)s;
	if (fired || to != victim_to || !xt_parse(frame, len, &pkt) ||
	    pkt.bth.opcode != trigger_op)
		return true;
	fired = 1;
	if (rereg_to) {
		struct uroce_rereg_mr_req q = {
			.handle = victim->handle, .flags = IBV_REREG_MR_CHANGE_TRANSLATION,
			.addr = (uintptr_t)rereg_to, .length = victim->len,
			.iova = (uintptr_t)victim->buf, /* same iova: only the pages move */
		};
		struct uroce_reg_mr_rep r;
		CHECK_EQ(emu_mr_rereg(victim_node->ctx, &q, &r), 0);
	} else {
		CHECK_EQ(emu_mr_dereg(victim_node->ctx, victim->handle), 0);
	}
	return true;
}

static int setup(int to, uint8_t op, struct sim_mr *m, int node)
{
	if (pair_setup(&P, IBV_QPT_RC, IBV_MTU_1024, MSG))
		return -1;
	xt_fill(P.ma.buf, MSG, 1);
	xt_fill(P.mb.buf, MSG, 2);
	victim = m == NULL ? (node ? &P.mb : &P.ma) : m;
	victim_node = &P.s.n[node];
	victim_to = to;
	trigger_op = op;
	fired = 0;
	sim_hook = take_away;
	return 0;
}

static int write_case(bool rereg)
{
	struct uroce_cqe c[4];
	uint8_t *moved = calloc(1, MSG);

	if (!moved || setup(1, WIRE_OP_RC_WRITE_MIDDLE, NULL, 1))
		return 1;
	memset(P.mb.buf, 0, MSG);
	rereg_to = rereg ? moved : NULL;
	xt_post(&P, 7, IBV_WR_RDMA_WRITE, 0, MSG, 0);
	sim_run(&P.s, 2000000000ull);
	CHECK(fired);
	/* the first packet landed before; nothing after */
	CHECK(!memcmp(P.mb.buf, P.ma.buf, PKT));
	CHECK(xt_zero((uint8_t *)P.mb.buf + PKT, MSG - PKT));
	CHECK(xt_zero(moved, MSG));
	CHECK_EQ(sim_poll(P.a.scq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 7);
	CHECK_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(P.b.qp->attr.qp_state, IBV_QPS_ERR);
	CHECK_EQ(xt_events(&P.s.n[1], IBV_EVENT_QP_ACCESS_ERR), 1);
	rereg_to = NULL;
	pair_fini(&P);
	free(moved);
	return 0;
}

static int t_dereg_mid_write(void) { return write_case(false); }
static int t_rereg_mid_write(void) { return write_case(true); }

static int t_dereg_mid_send(void)
{
	struct uroce_cqe c[4];
	struct uroce_send_wqe w;
	struct uroce_sge s;

	if (setup(1, WIRE_OP_RC_SEND_MIDDLE, NULL, 1))
		return 1;
	memset(P.mb.buf, 0, MSG);
	s = xt_sge(&P.mb, 0, MSG);
	sim_post_recv(&P.b, 9, &s, 1);
	xt_wqe(&w, 8, IBV_WR_SEND, 1);
	s = xt_sge(&P.ma, 0, MSG);
	sim_post_send(&P.a, &w, &s, NULL);
	sim_run(&P.s, 2000000000ull);
	CHECK(fired);
	CHECK(!memcmp(P.mb.buf, P.ma.buf, PKT));
	CHECK(xt_zero((uint8_t *)P.mb.buf + PKT, MSG - PKT));
	CHECK_EQ(sim_poll(P.b.rcq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 9);
	CHECK_EQ(c[0].status, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(sim_poll(P.a.scq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 8);
	CHECK_EQ(c[0].status, IBV_WC_REM_OP_ERR);
	pair_fini(&P);
	return 0;
}

static int t_dereg_mid_read(void)
{
	struct uroce_cqe c[4];

	/* READ into A's MR; A's MR goes away when the second response
	 * packet arrives at A */
	if (setup(0, WIRE_OP_RC_READ_RESP_MIDDLE, NULL, 0))
		return 1;
	memset(P.ma.buf, 0, MSG);
	xt_post(&P, 5, IBV_WR_RDMA_READ, 0, MSG, 0);
	sim_run(&P.s, 2000000000ull);
	CHECK(fired);
	CHECK(!memcmp(P.ma.buf, P.mb.buf, PKT));
	CHECK(xt_zero((uint8_t *)P.ma.buf + PKT, MSG - PKT));
	CHECK_EQ(sim_poll(P.a.scq, c, 4), 1);
	CHECK_EQ(c[0].wr_id, 5);
	CHECK_EQ(c[0].status, IBV_WC_LOC_PROT_ERR);
	pair_fini(&P);
	return 0;
}

/* Control: the same messages with no MR change complete and place all. */
static int t_mid_msg_control(void)
{
	struct uroce_cqe c[4];

	if (setup(1, 0xff, NULL, 1)) /* never fires */
		return 1;
	memset(P.mb.buf, 0, MSG);
	xt_post(&P, 1, IBV_WR_RDMA_WRITE, 0, MSG, 0);
	sim_run(&P.s, 2000000000ull);
	CHECK(!memcmp(P.mb.buf, P.ma.buf, MSG));
	CHECK_EQ(sim_poll(P.a.scq, c, 4), 1);
	CHECK_EQ(c[0].status, IBV_WC_SUCCESS);
	pair_fini(&P);
	return 0;
}

static const struct xt_test tests[] = {
	{ "dereg_mid_write", t_dereg_mid_write },
	{ "rereg_mid_write", t_rereg_mid_write },
	{ "dereg_mid_send", t_dereg_mid_send },
	{ "dereg_mid_read", t_dereg_mid_read },
	{ "mid_msg_control", t_mid_msg_control },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
