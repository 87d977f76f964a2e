/* SPDX-License-Identifier: MIT */
/* The IB CM engine (emu/cm/ibcm.c) on two simulated devices joined by the
 * transport tests' wire, with a virtual clock: connections, loss of every
 * message, timeouts after the kernel's retries, duplicates, unknown and
 * stale connections, SIDR, malformed MADs, REQ floods.
 * Usage: test_ibcm <name>. Device A (node 0) listens, B (node 1) connects. */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"
#include "ibcm.h"
#include "pcapw.h"
#include <pcap/pcap.h>

#define SEED 0x1bc3u
#define SID  0x0000000001060000ull /* rdma_cm TCP port space, port 0 (kept simple) */
#define NEV  256

struct evrec {
	struct emu_ibcm_id *id;
	struct emu_ibcm_event ev;
	uint8_t pdata[WIRE_CM_PDATA_MAX];
	uint8_t ari[WIRE_CM_INFO_LEN];
};

struct side {
	struct evrec ev[NEV];
	unsigned n;
	int destroy_on;        /* handler returns 1 for this event type (-1 none) */
	int auto_mode;         /* 1: answer REQ with REP, REP with RTU, DREQ with DREP */
};

static struct sim S;
static struct side SA, SB;
static struct emu_ibcm *CA, *CB;
static struct emu_ibcm_id *last_new; /* id of the last REQ/SIDR_REQ_RECEIVED */

static int handler(struct emu_ibcm_id *id, const struct emu_ibcm_event *ev)
{
	struct side *sd = id->context;
	struct evrec *r;

	if (sd->n < NEV) {
		r = &sd->ev[sd->n++];
		r->id = id;
		r->ev = *ev;
		if (ev->private_data && ev->private_data_len)
			memcpy(r->pdata, ev->private_data, ev->private_data_len);
		if (ev->event == EMU_IBCM_REJ_RECEIVED && ev->param.rej_rcvd.ari)
			memcpy(r->ari, ev->param.rej_rcvd.ari, ev->param.rej_rcvd.ari_length);
	}
	if (ev->event == EMU_IBCM_REQ_RECEIVED || ev->event == EMU_IBCM_SIDR_REQ_RECEIVED)
		last_new = id;
	if ((int)ev->event == sd->destroy_on)
		return 1;
	if (!sd->auto_mode)
		return 0;
	switch (ev->event) {
	case EMU_IBCM_REQ_RECEIVED: {
		struct emu_ibcm_rep_param p = { .qp_num = 0x222, .starting_psn = 0x456,
						.responder_resources = 4, .initiator_depth = 4,
						.rnr_retry_count = 7 };
		CHECK_EQ(emu_ibcm_send_rep(id, &p), 0);
		break;
	}
	case EMU_IBCM_REP_RECEIVED:
		CHECK_EQ(emu_ibcm_send_rtu(id, NULL, 0), 0);
		break;
	case EMU_IBCM_DREQ_RECEIVED:
		CHECK_EQ(emu_ibcm_send_drep(id, NULL, 0), 0);
		break;
	default:
		break;
	}
	return 0;
}

static unsigned count(struct side *sd, enum emu_ibcm_event_type t)
{
	unsigned c = 0;

	for (unsigned i = 0; i < sd->n; i++)
		c += sd->ev[i].ev.event == t;
	return c;
}

static struct evrec *find_ev(struct side *sd, enum emu_ibcm_event_type t)
{
	for (unsigned i = 0; i < sd->n; i++)
		if (sd->ev[i].ev.event == t)
			return &sd->ev[i];
	return NULL;
}

/* ---- the wire: count and drop MADs by attribute ---- */

static int drop_attr = -1;     /* drop frames carrying this attribute ... */
static int drop_left;          /* ... this many times */
static bool drop_all_to_a;     /* a peer that never answers */
static unsigned seen[2][0x20]; /* MADs delivered to node i, by attribute */
static uint8_t saved[2048];    /* a copy of one frame (duplicate tests) */
static uint32_t saved_len;
static int save_attr = -1;

static int frame_attr(const uint8_t *f, uint32_t len)
{
	struct wire_pkt p;

	if (wire_parse(f, len, &p) != WIRE_OK || !wire_pkt_is_gsi(&p) || p.payload_len < 18)
		return -1;
	return p.payload[16] << 8 | p.payload[17];
}

static struct pcapw *cap;      /* pcap mode: every MAD delivered */
static FILE *cap_exp;
static unsigned cap_n;
static void cap_frame(const uint8_t *f, uint32_t len);

static bool hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	int a = frame_attr(f, len);

	if (cap && a >= 0)
		cap_frame(f, len);

	(void)s;
	if (a < 0)
		return true;
	if (drop_all_to_a && to == 0)
		return false;
	if (a == drop_attr && drop_left > 0) {
		drop_left--;
		return false;
	}
	if (a == save_attr && !saved_len && len <= sizeof(saved)) {
		memcpy(saved, f, len);
		saved_len = len;
	}
	if (a < 0x20)
		seen[to][a]++;
	return true;
}

/* state changes of A's ids (the engine's trace hook) */
static char trace_a[2048];

static void tracer(struct emu_ibcm_id *id, enum emu_ibcm_state from, enum emu_ibcm_state to,
		   const char *why)
{
	size_t n = strlen(trace_a);

	if (id->state == EMU_IBCM_LISTEN && from == EMU_IBCM_IDLE)
		return;
	snprintf(trace_a + n, sizeof(trace_a) - n, "%s>%s(%s) ", emu_ibcm_state_name(from),
		 emu_ibcm_state_name(to), why);
}

static double loss_a;          /* A's configured MAD loss (cfg.loss), with this seed */
static uint64_t loss_seed_a;

static void setup(uint32_t max_ids_a, uint32_t backlog_a)
{
	struct emu_ibcm_cfg ca = { .max_ids = max_ids_a, .default_backlog = backlog_a, .seed = SEED,
				   .trace = tracer, .loss = loss_a, .loss_seed = loss_seed_a };
	struct emu_ibcm_cfg cb = { .seed = SEED + 1 };

	printf("seed %u\n", SEED);
	if (sim_init(&S)) {
		fprintf(stderr, "sim_init failed\n");
		exit(1);
	}
	sim_hook = hook;
	memset(&SA, 0, sizeof(SA));
	memset(&SB, 0, sizeof(SB));
	SA.destroy_on = SB.destroy_on = -1;
	CHECK_EQ(emu_ibcm_attach(&S.n[0].dev, &ca), 0);
	CHECK_EQ(emu_ibcm_attach(&S.n[1].dev, &cb), 0);
	CHECK_EQ(emu_ibcm_attach(&S.n[1].dev, &cb), -EBUSY);
	CA = emu_ibcm_get(&S.n[0].dev);
	CB = emu_ibcm_get(&S.n[1].dev);
}

static int teardown(void)
{
	emu_ibcm_detach(&S.n[0].dev);
	emu_ibcm_detach(&S.n[1].dev);
	CHECK(S.n[0].dev.gsi == NULL);
	sim_fini(&S);
	if (sim_failures)
		fprintf(stderr, "%d failures\n", sim_failures);
	return sim_failures ? 1 : 0;
}

static struct emu_ibcm_id *listen_a(uint64_t sid)
{
	struct emu_ibcm_id *l = emu_ibcm_create_id(CA, handler, &SA);

	CHECK(l != NULL);
	CHECK_EQ(emu_ibcm_listen(l, sid, 0, 0), 0);
	return l;
}

static void req_param(struct emu_ibcm_req_param *p, uint64_t sid, const void *pd, uint8_t len)
{
	memset(p, 0, sizeof(*p));
	p->primary_path.sgid = S.n[1].dev.gids[1];
	p->primary_path.dgid = S.n[0].dev.gids[1];
	p->primary_path.traffic_class = 0x68;
	p->primary_path.hop_limit = 17;
	p->primary_path.mtu = IBV_MTU_1024;
	p->primary_path.port = 1;
	p->primary_path.packet_life_time = 18; /* rdma_cm on RoCE */
	p->service_id = sid;
	p->qp_num = 0x111;
	p->qp_type = IBV_QPT_RC;
	p->starting_psn = 0xabcde;
	p->private_data = pd;
	p->private_data_len = len;
	p->responder_resources = 3;
	p->initiator_depth = 2;
	p->remote_cm_response_timeout = 20; /* CMA_CM_RESPONSE_TIMEOUT */
	p->local_cm_response_timeout = 20;
	p->retry_count = 6;
	p->rnr_retry_count = 5;
	p->max_cm_retries = 15;             /* CMA_MAX_CM_RETRIES */
}

/* B connects to A's listener and both sides run the whole exchange
 * automatically. Returns B's id. */
static struct emu_ibcm_id *connect_auto(void)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b = emu_ibcm_create_id(CB, handler, &SB);

	SA.auto_mode = SB.auto_mode = 1;
	req_param(&p, SID, "hello", 6);
	CHECK(b != NULL);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	return b;
}

#define MS 1000000ull

/* Run the wire and the timers for ns of virtual time: sim_run stops at the
 * last event, the clock is then moved to the end of the window, so that
 * windows add up. */
static void advance(uint64_t ns)
{
	uint64_t end = sim_now + ns;

	sim_run(&S, ns);
	if (sim_now < end)
		sim_now = end;
	sim_run(&S, 0);
}
#define REQ_TRY_MS (2 * 1024 + 4096) /* 2 packet life times (18) + response time (20) */

/* ------------------------------------------------------------------ */

static int t_connect(void)
{
	static const char pd_req[] = "request private data";
	static const char pd_rep[] = "reply private data";
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *l, *b, *a;
	struct evrec *r;

	setup(0, 0);
	l = listen_a(SID);
	CHECK_EQ(emu_ibcm_listen(emu_ibcm_create_id(CA, handler, &SA), SID, 0, 0), -EBUSY);
	b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, pd_req, sizeof(pd_req));
	p.ece.vendor_id = 0xFF001ACE; /* 24 bits go on the wire */
	p.ece.attr_mod = 0xDEADBEEF;
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	CHECK_EQ(b->state, EMU_IBCM_REQ_SENT);
	CHECK_EQ(emu_ibcm_send_req(b, &p), -EINVAL); /* not IDLE */
	advance(10 * MS);
	r = find_ev(&SA, EMU_IBCM_REQ_RECEIVED);
	CHECK(r != NULL);
	if (!r)
		return teardown();
	a = r->id;
	const struct emu_ibcm_req_event_param *q = &r->ev.param.req_rcvd;
	CHECK(q->listen_id == l);
	CHECK(a != l);
	CHECK_EQ(a->state, EMU_IBCM_REQ_RCVD);
	CHECK_EQ(a->remote_id, b->local_id);
	CHECK(a->local_id != b->local_id);
	CHECK_EQ(q->remote_qpn, 0x111);
	CHECK_EQ(q->starting_psn, 0xabcde);
	CHECK_EQ(q->service_id, SID);
	CHECK_EQ(q->qp_type, IBV_QPT_RC);
	CHECK_EQ(q->responder_resources, 3);
	CHECK_EQ(q->initiator_depth, 2);
	CHECK_EQ(q->retry_count, 6);
	CHECK_EQ(q->rnr_retry_count, 5);
	CHECK_EQ(q->remote_cm_response_timeout, 20);
	CHECK_EQ(q->local_cm_response_timeout, 20);
	CHECK_EQ(q->local_ack_timeout, 19);
	CHECK_EQ(q->remote_ca_guid, be64toh(S.n[1].dev.node_guid));
	CHECK_EQ(q->primary_path.mtu, IBV_MTU_1024);
	CHECK_EQ(q->primary_path.traffic_class, 0x68);
	CHECK_EQ(q->primary_path.hop_limit, 17);
	CHECK_EQ(q->primary_path.packet_life_time, 18);
	CHECK(!memcmp(q->primary_path.sgid.raw, S.n[0].dev.gids[1].raw, 16));
	CHECK(!memcmp(q->primary_path.dgid.raw, S.n[1].dev.gids[1].raw, 16));
	CHECK(!memcmp(q->primary_path.dmac, S.n[1].dev.mac, 6));
	CHECK_EQ(r->ev.private_data_len, WIRE_CM_REQ_PDATA);
	CHECK(!memcmp(r->pdata, pd_req, sizeof(pd_req)));
	CHECK_EQ(q->ece.vendor_id, 0x001ACE);
	CHECK_EQ(q->ece.attr_mod, 0xDEADBEEF);

	struct emu_ibcm_rep_param rp = { .qp_num = 0x222, .starting_psn = 0x456,
					 .private_data = pd_rep, .private_data_len = sizeof(pd_rep),
					 .responder_resources = 2, .initiator_depth = 3,
					 .rnr_retry_count = 7,
					 .ece = { .vendor_id = 0xABCDEF, .attr_mod = 5 } };
	CHECK_EQ(emu_ibcm_send_rtu(a, NULL, 0), -EINVAL); /* wrong state */
	CHECK_EQ(emu_ibcm_send_rep(a, &rp), 0);
	advance(10 * MS);
	r = find_ev(&SB, EMU_IBCM_REP_RECEIVED);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ(r->ev.param.rep_rcvd.remote_qpn, 0x222);
		CHECK_EQ(r->ev.param.rep_rcvd.starting_psn, 0x456);
		CHECK_EQ(r->ev.param.rep_rcvd.responder_resources, 2);
		CHECK_EQ(r->ev.param.rep_rcvd.initiator_depth, 3);
		CHECK_EQ(r->ev.param.rep_rcvd.rnr_retry_count, 7);
		CHECK_EQ(r->ev.param.rep_rcvd.remote_ca_guid, be64toh(S.n[0].dev.node_guid));
		CHECK(!memcmp(r->pdata, pd_rep, sizeof(pd_rep)));
		CHECK_EQ(r->ev.param.rep_rcvd.ece.vendor_id, 0xABCDEF);
		CHECK_EQ(r->ev.param.rep_rcvd.ece.attr_mod, 5);
	}
	CHECK_EQ(b->state, EMU_IBCM_REP_RCVD);
	CHECK_EQ(b->remote_id, a->local_id);
	CHECK_EQ(emu_ibcm_send_rtu(b, "rtu", 4), 0);
	advance(10 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_RTU_RECEIVED), 1);
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);

	/* disconnect from B */
	CHECK_EQ(emu_ibcm_send_dreq(b, "bye", 4), 0);
	advance(10 * MS);
	r = find_ev(&SA, EMU_IBCM_DREQ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK(!memcmp(r->pdata, "bye", 4));
	CHECK_EQ(a->state, EMU_IBCM_DREQ_RCVD);
	CHECK_EQ(emu_ibcm_send_drep(a, "ok", 3), 0);
	advance(10 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_DREP_RECEIVED), 1);
	CHECK_EQ(a->state, EMU_IBCM_TIMEWAIT);
	CHECK_EQ(b->state, EMU_IBCM_TIMEWAIT);
	/* TIMEWAIT lasts 2^(19-8) ms (packet life time 18 + 1) */
	advance(2000 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_TIMEWAIT_EXIT), 0);
	advance(200 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_TIMEWAIT_EXIT), 1);
	CHECK_EQ(count(&SB, EMU_IBCM_TIMEWAIT_EXIT), 1);
	CHECK_EQ(a->state, EMU_IBCM_IDLE);
	CHECK_EQ(b->state, EMU_IBCM_IDLE);
	CHECK_EQ(emu_ibcm_counters(CA)->retransmits + emu_ibcm_counters(CB)->retransmits, 0);
	emu_ibcm_destroy_id(a);
	emu_ibcm_destroy_id(b);
	CHECK_EQ(emu_ibcm_ids_in_use(CB), 0);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 2); /* the listener and the -EBUSY one */
	return teardown();
}

/* One message of the exchange lost once: resent on its timer (or
 * answered as a duplicate), and the connection still comes up and down. */
static int t_lose(uint16_t attr)
{
	struct emu_ibcm_id *b;

	setup(0, 0);
	listen_a(SID);
	drop_attr = attr;
	drop_left = 1;
	b = connect_auto();
	advance(60000 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	CHECK_EQ(count(&SB, EMU_IBCM_REP_RECEIVED), 1);
	if (attr == WIRE_CM_ATTR_RTU) {
		/* A resent its REP; B, established, answered it with the RTU */
		CHECK_EQ(emu_ibcm_counters(CA)->retransmits, 1);
		CHECK_EQ(emu_ibcm_counters(CB)->dup_answered, 1);
	}
	CHECK_EQ(count(&SA, EMU_IBCM_RTU_RECEIVED), 1);
	CHECK_EQ(last_new ? (int)last_new->state : -1, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(emu_ibcm_send_dreq(b, NULL, 0), 0);
	advance(60000 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_DREQ_RECEIVED), 1);
	CHECK_EQ(count(&SB, EMU_IBCM_DREP_RECEIVED), 1);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_ERROR), 0);
	CHECK_EQ(count(&SB, EMU_IBCM_TIMEWAIT_EXIT), 1);
	CHECK_EQ(drop_left, 0);
	uint64_t rt = emu_ibcm_counters(CA)->retransmits + emu_ibcm_counters(CB)->retransmits;
	CHECK_EQ(rt, 1);
	/* the DREQ is resent after A's TIMEWAIT (2 s) ended: A answers it
	 * as a DREQ for nobody */
	if (attr == WIRE_CM_ATTR_DREP)
		CHECK_EQ(emu_ibcm_counters(CA)->drep_unknown, 1);
	return teardown();
}

/* A loses a seeded fraction of the MADs it receives and sends (uroced's
 * --fault cm_drop): every connection still comes up and down through the
 * retransmissions, the losses are counted on the side they happened, what A
 * lost was never sent (B received exactly A's tx_mads) or never processed
 * (A's rx_mads + loss_rx = what the wire delivered to A), and the same seed
 * loses the same MADs. */
static int loss_run(uint64_t seed, uint64_t out[2])
{
	enum { CONNS = 12 };
	unsigned to_a = 0;

	loss_a = 0.3;
	loss_seed_a = seed;
	setup(0, 0);
	printf("loss seed %llu\n", (unsigned long long)seed);
	listen_a(SID);
	for (int i = 0; i < CONNS; i++) {
		struct emu_ibcm_id *b = connect_auto();

		advance(300000 * MS);
		CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
		CHECK_EQ(last_new ? (int)last_new->state : -1, EMU_IBCM_ESTABLISHED);
		CHECK_EQ(emu_ibcm_send_dreq(b, NULL, 0), 0);
		advance(300000 * MS);
		CHECK_EQ(count(&SB, EMU_IBCM_DREP_RECEIVED), (unsigned)i + 1);
		emu_ibcm_destroy_id(b);
	}
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), CONNS);
	CHECK_EQ(count(&SB, EMU_IBCM_REP_RECEIVED), CONNS);
	CHECK_EQ(count(&SB, EMU_IBCM_REQ_ERROR) + count(&SB, EMU_IBCM_DREQ_ERROR), 0);
	const struct emu_ibcm_counters *a = emu_ibcm_counters(CA), *bc = emu_ibcm_counters(CB);
	for (unsigned k = 0; k < 0x20; k++)
		to_a += seen[0][k];
	printf("A lost rx %llu tx %llu; retransmits A %llu B %llu; duplicates answered A %llu B %llu\n",
	       (unsigned long long)a->loss_rx, (unsigned long long)a->loss_tx,
	       (unsigned long long)a->retransmits, (unsigned long long)bc->retransmits,
	       (unsigned long long)a->dup_answered, (unsigned long long)bc->dup_answered);
	CHECK(a->loss_rx > 0);
	CHECK(a->loss_tx > 0);
	CHECK_EQ(bc->loss_rx + bc->loss_tx, 0);
	CHECK_EQ(a->rx_mads + a->loss_rx, to_a);
	CHECK_EQ(bc->rx_mads, a->tx_mads);
	CHECK(a->retransmits > 0 && bc->retransmits > 0);
	CHECK(a->dup_answered + bc->dup_answered > 0);
	out[0] = a->loss_rx;
	out[1] = a->loss_tx;
	memset(seen, 0, sizeof(seen));
	last_new = NULL;
	loss_a = 0;
	return teardown();
}

static int t_loss(void)
{
	uint64_t r1[2], r2[2];
	int rc = loss_run(77, r1) | loss_run(77, r2);

	CHECK_EQ(r1[0], r2[0]);
	CHECK_EQ(r1[1], r2[1]);
	return rc | (sim_failures ? 1 : 0);
}

static int t_no_listener(void)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b;
	struct evrec *r;

	setup(0, 0);
	listen_a(SID + 1);
	b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(100 * MS);
	r = find_ev(&SB, EMU_IBCM_REJ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_INVALID_SERVICE_ID);
	CHECK_EQ(b->state, EMU_IBCM_IDLE);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_no_listener, 1);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 0);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 1);
	/* the REQ's timer is gone: nothing more happens */
	advance(200000 * MS);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 0);
	CHECK_EQ(count(&SB, EMU_IBCM_REQ_ERROR), 0);
	return teardown();
}

static int t_req_timeout(void)
{
	struct emu_ibcm_id *b;
	uint64_t t0 = sim_now;

	setup(0, 0);
	listen_a(SID);
	drop_all_to_a = true;
	t0 = sim_now;
	b = connect_auto();
	/* 1 send + 15 retries, REQ_TRY_MS each: no error before the last one ends */
	advance(16ull * REQ_TRY_MS * MS - 10 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_REQ_ERROR), 0);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 15);
	CHECK_EQ(b->state, EMU_IBCM_REQ_SENT);
	advance(20 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_REQ_ERROR), 1);
	CHECK_EQ(emu_ibcm_counters(CB)->timeouts, 1);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 15);
	CHECK_EQ(b->state, EMU_IBCM_IDLE);
	CHECK(sim_now - t0 >= 16ull * REQ_TRY_MS * MS);
	struct evrec *r = find_ev(&SB, EMU_IBCM_REQ_ERROR);
	if (r)
		CHECK_EQ(r->ev.param.send_status, -ETIMEDOUT);
	/* and nothing after that */
	advance(200000 * MS);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 15);
	CHECK_EQ(SB.n, 1);
	return teardown();
}

/* A duplicate REQ after the REP: the REP is resent, no second connection. */
static int t_dup_req(void)
{
	struct emu_ibcm_id *b;

	setup(0, 0);
	listen_a(SID);
	save_attr = WIRE_CM_ATTR_REQ;
	drop_attr = WIRE_CM_ATTR_REP; /* keep A in REP_SENT */
	drop_left = 1;
	b = connect_auto();
	advance(10 * MS);
	CHECK(last_new != NULL);
	CHECK_EQ(last_new ? (int)last_new->state : -1, EMU_IBCM_REP_SENT);
	CHECK_EQ(b->state, EMU_IBCM_REQ_SENT);
	CHECK(saved_len > 0);
	unsigned reps = seen[1][WIRE_CM_ATTR_REP];
	emu_port_rx_frame(&S.n[0].dev, saved, saved_len);
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_counters(CA)->dup_answered, 1);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REP], reps + 1);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 2);
	/* the same REQ once more, now that the connection is up: ignored
	 * as a duplicate, no REP */
	reps = seen[1][WIRE_CM_ATTR_REP];
	emu_port_rx_frame(&S.n[0].dev, saved, saved_len);
	advance(10 * MS);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REP], reps);
	CHECK_EQ(emu_ibcm_counters(CA)->drops[EMU_IBCM_DROP_DUPLICATE], 1);
	/* after the connection is closed, in TIMEWAIT: REJ stale connection */
	emu_ibcm_send_dreq(b, NULL, 0);
	advance(10 * MS);
	CHECK_EQ(last_new->state, EMU_IBCM_TIMEWAIT);
	unsigned rejs = seen[1][WIRE_CM_ATTR_REJ];
	emu_port_rx_frame(&S.n[0].dev, saved, saved_len);
	advance(10 * MS);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REJ], rejs + 1);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_stale, 1);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	return teardown();
}

/* Build a CM MAD from B's address to A and feed it to A. */
static void inject(struct wire_cm_msg *m, uint16_t attr, const struct wire_mad_hdr *hdr,
		   size_t mad_len, uint32_t qkey, uint8_t opcode)
{
	uint8_t mad[WIRE_MAD_LEN + 16], frame[2048];
	struct wire_mad_hdr h;
	struct wire_pkt p;
	size_t len;

	memset(mad, 0, sizeof(mad));
	m->attr = attr;
	if (hdr)
		h = *hdr;
	else
		wire_mad_hdr_init_cm(&h, attr, 0x1234);
	h.attr_id = attr;
	if (wire_mad_encode(mad, &h, m))
		wire_mad_hdr_encode(mad, &h); /* an unknown attribute: header only */
	wire_gsi_pkt_init(&p, 4, mad, 7);
	p.payload_len = (uint32_t)mad_len;
	p.deth.qkey = qkey;
	p.bth.opcode = opcode;
	memcpy(p.dmac, S.n[0].dev.mac, 6);
	memcpy(p.smac, S.n[1].dev.mac, 6);
	memcpy(p.ip.src.raw, S.n[1].dev.gids[1].raw, 16);
	memcpy(p.ip.dst.raw, S.n[0].dev.gids[1].raw, 16);
	CHECK_EQ(wire_build(&p, frame, sizeof(frame), 0, &len), 0);
	emu_port_rx_frame(&S.n[0].dev, frame, (uint32_t)len);
}

static void inject_ok(struct wire_cm_msg *m, uint16_t attr)
{
	inject(m, attr, NULL, WIRE_MAD_LEN, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY);
}

static int t_unknown_ids(void)
{
	struct wire_cm_msg m;

	setup(0, 0);
	listen_a(SID);
	/* DREQ for a connection A never had: DREP to the sender */
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x11111111;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = 0x22222222;
	m.v[WIRE_CM_F_REMOTE_QPN] = 0x333;
	inject_ok(&m, WIRE_CM_ATTR_DREQ);
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_counters(CA)->drep_unknown, 1);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_DREP], 1);
	/* B has no such id either: it counts the DREP, answers nothing */
	CHECK_EQ(emu_ibcm_counters(CB)->drops[EMU_IBCM_DROP_UNKNOWN_ID], 1);
	/* REP, RTU, DREP, MRA, REJ, SIDR_REP for nobody: counted, no answer
	 * (the kernel's cm_rep_handler drops a REP it has no id for too) */
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x44444444;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = 0x55555555;
	static const uint16_t quiet[] = { WIRE_CM_ATTR_REP, WIRE_CM_ATTR_RTU, WIRE_CM_ATTR_DREP,
					  WIRE_CM_ATTR_MRA, WIRE_CM_ATTR_REJ, WIRE_CM_ATTR_SIDR_REP };
	for (unsigned i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		inject_ok(&m, quiet[i]);
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_counters(CA)->drops[EMU_IBCM_DROP_UNKNOWN_ID], 6);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REJ] + seen[1][WIRE_CM_ATTR_DREP], 1);
	CHECK_EQ(S.n[0].dev.cnt.drops[EMU_DROP_GSI_MAD], 6);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 1);
	return teardown();
}

static int t_sidr(void)
{
	struct emu_ibcm_sidr_req_param p;
	struct emu_ibcm_id *b, *b2;
	struct evrec *r;

	setup(0, 0);
	listen_a(SID);
	b = emu_ibcm_create_id(CB, handler, &SB);
	memset(&p, 0, sizeof(p));
	p.path.sgid = S.n[1].dev.gids[1];
	p.path.dgid = S.n[0].dev.gids[1];
	p.path.mtu = IBV_MTU_1024;
	p.service_id = SID;
	p.timeout_ms = 1000;
	p.max_cm_retries = 3;
	p.private_data = "sidr";
	p.private_data_len = 5;
	drop_attr = WIRE_CM_ATTR_SIDR_REQ; /* lost once: resent */
	drop_left = 1;
	CHECK_EQ(emu_ibcm_send_sidr_req(b, &p), 0);
	advance(1500 * MS);
	r = find_ev(&SA, EMU_IBCM_SIDR_REQ_RECEIVED);
	CHECK(r != NULL);
	if (!r)
		return teardown();
	CHECK_EQ(r->ev.param.sidr_req_rcvd.service_id, SID);
	CHECK_EQ(r->ev.param.sidr_req_rcvd.pkey, 0xFFFF);
	CHECK(!memcmp(r->pdata, "sidr", 5));
	CHECK_EQ(r->id->state, EMU_IBCM_SIDR_REQ_RCVD);
	struct emu_ibcm_sidr_rep_param rp = { .qp_num = 0x777, .qkey = 0x01234567,
					      .status = WIRE_CM_SIDR_SUCCESS,
					      .private_data = "rep", .private_data_len = 4 };
	CHECK_EQ(emu_ibcm_send_sidr_rep(r->id, &rp), 0);
	advance(10 * MS);
	r = find_ev(&SB, EMU_IBCM_SIDR_REP_RECEIVED);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ(r->ev.param.sidr_rep_rcvd.status, WIRE_CM_SIDR_SUCCESS);
		CHECK_EQ(r->ev.param.sidr_rep_rcvd.qpn, 0x777);
		CHECK_EQ(r->ev.param.sidr_rep_rcvd.qkey, 0x01234567);
		CHECK(!memcmp(r->pdata, "rep", 4));
	}
	CHECK_EQ(b->state, EMU_IBCM_IDLE);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 1);
	/* no listener: status UNSUPPORTED */
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	p.service_id = SID + 9;
	CHECK_EQ(emu_ibcm_send_sidr_req(b2, &p), 0);
	advance(10 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_SIDR_REP_RECEIVED), 2);
	CHECK_EQ(SB.ev[SB.n - 1].ev.param.sidr_rep_rcvd.status, WIRE_CM_SIDR_UNSUPPORTED);
	/* nobody answers: SIDR_REQ_ERROR after 1 + 3 tries */
	drop_all_to_a = true;
	emu_ibcm_destroy_id(b2);
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	p.service_id = SID;
	CHECK_EQ(emu_ibcm_send_sidr_req(b2, &p), 0);
	advance(3900 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_SIDR_REQ_ERROR), 0);
	advance(200 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_SIDR_REQ_ERROR), 1);
	return teardown();
}

static int t_malformed(void)
{
	struct wire_cm_msg m;
	struct wire_mad_hdr h;
	const struct emu_ibcm_counters *c;

	setup(0, 0);
	listen_a(SID);
	c = emu_ibcm_counters(CA);
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_SERVICE_ID] = SID;
	m.v[WIRE_CM_F_PATH_MTU] = IBV_MTU_1024;
	/* truncated MAD (200 bytes) */
	inject(&m, WIRE_CM_ATTR_REQ, NULL, 200, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_SHORT], 1);
	/* wrong Q_Key */
	inject(&m, WIRE_CM_ATTR_REQ, NULL, WIRE_MAD_LEN, 0x1234, WIRE_OP_UD_SEND_ONLY);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_QKEY], 1);
	/* unknown attribute */
	inject_ok(&m, 0x0020);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_ATTR], 1);
	/* class version 1 */
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REQ, 1);
	h.class_version = 1;
	inject(&m, WIRE_CM_ATTR_REQ, &h, WIRE_MAD_LEN, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_CLASS_VERSION], 1);
	/* another management class (SA) */
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REQ, 1);
	h.mgmt_class = 0x03;
	inject(&m, WIRE_CM_ATTR_REQ, &h, WIRE_MAD_LEN, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_CLASS], 1);
	/* a GET, not a SEND */
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REQ, 1);
	h.method = 0x01;
	inject(&m, WIRE_CM_ATTR_REQ, &h, WIRE_MAD_LEN, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_METHOD], 1);
	/* not a UD SEND ONLY (UD SEND with immediate) */
	inject(&m, WIRE_CM_ATTR_REQ, NULL, WIRE_MAD_LEN, WIRE_GSI_QKEY, WIRE_OP_UD_SEND_ONLY_IMM);
	CHECK_EQ(c->mad_reason[WIRE_MAD_R_METHOD], 2);
	/* LAP (alternate paths): unsupported */
	inject_ok(&m, WIRE_CM_ATTR_LAP);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_UNSUPPORTED], 1);
	/* REQ with an MTU outside 256..4096 or a remote GID not ours: REJ
	 * (its path starts at its sender, as every REQ's must) */
	memcpy(m.gid[0], S.n[1].dev.gids[1].raw, 16);
	m.v[WIRE_CM_F_PATH_MTU] = 7;
	memcpy(m.gid[1], S.n[0].dev.gids[1].raw, 16);
	inject_ok(&m, WIRE_CM_ATTR_REQ);
	m.v[WIRE_CM_F_PATH_MTU] = IBV_MTU_1024;
	m.gid[1][15] ^= 0x55;
	inject_ok(&m, WIRE_CM_ATTR_REQ);
	m.v[WIRE_CM_F_TRANSPORT_TYPE] = 2; /* RD */
	memcpy(m.gid[1], S.n[0].dev.gids[1].raw, 16);
	inject_ok(&m, WIRE_CM_ATTR_REQ);
	advance(10 * MS);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REJ], 3);
	/* a REQ whose path does not start at the packet's source: dropped
	 * before any answer or state (it would be answered elsewhere) */
	m.v[WIRE_CM_F_TRANSPORT_TYPE] = 0;
	m.gid[0][15] ^= 0x77;
	inject_ok(&m, WIRE_CM_ATTR_REQ);
	advance(10 * MS);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_PATH_SRC], 1);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_REJ], 3);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 0);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_MALFORMED], 7);
	CHECK_EQ(S.n[0].dev.cnt.drops[EMU_DROP_GSI_MAD], 9);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 1);
	/* a seeded storm of random bytes in MADs: no crash, no id; a quarter
	 * from a QP that is not QP1, a quarter from A's own address (forged
	 * on the wire), a quarter claiming A's own CA GUID */
	uint64_t rs = SEED, not_qp1 = 0, martian = 0;
	uint64_t q1 = c->drops[EMU_IBCM_DROP_NOT_QP1];
	uint64_t m1 = S.n[0].dev.cnt.drops[EMU_DROP_MARTIAN];
	for (int i = 0; i < 2000; i++) {
		uint8_t mad[WIRE_MAD_LEN], frame[2048];
		struct wire_pkt p;
		size_t len;
		for (unsigned k = 0; k < sizeof(mad); k++) {
			rs = rs * 6364136223846793005ull + 1442695040888963407ull;
			mad[k] = (uint8_t)(rs >> 56);
		}
		mad[0] = 1; mad[1] = 7; mad[2] = 2; mad[3] = 3; /* mostly valid headers */
		mad[16] = 0;
		mad[17] = (uint8_t)(0x10 + i % 10);
		if ((rs >> 20) % 4 == 3) /* REQ / REP: the local CA GUID at 24 + 16 */
			memcpy(mad + 40, &S.n[0].dev.node_guid, 8);
		wire_gsi_pkt_init(&p, 4, mad, 1);
		if ((rs >> 20) % 4 == 1) {
			p.deth.sqpn = 2 + (uint32_t)(rs >> 40) % 0xfff;
			not_qp1++;
		}
		memcpy(p.dmac, S.n[0].dev.mac, 6);
		memcpy(p.smac, S.n[1].dev.mac, 6);
		memcpy(p.ip.src.raw, S.n[(rs >> 20) % 4 == 2 ? 0 : 1].dev.gids[1].raw, 16);
		martian += (rs >> 20) % 4 == 2;
		memcpy(p.ip.dst.raw, S.n[0].dev.gids[1].raw, 16);
		if (!wire_build(&p, frame, sizeof(frame), 0, &len))
			emu_port_rx_frame(&S.n[0].dev, frame, (uint32_t)len);
		advance(1 * MS);
	}
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 0); /* random REQs name no listener */
	CHECK(emu_ibcm_ids_in_use(CA) <= 1);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_NOT_QP1] - q1, not_qp1);
	CHECK_EQ(S.n[0].dev.cnt.drops[EMU_DROP_MARTIAN] - m1, martian);
	CHECK(c->drops[EMU_IBCM_DROP_OWN_GUID] > 0);
	return teardown();
}

/* A REQ sent from QP sqpn at source GID src (the REQ's path starts
 * there), for service sid with remote comm ID rid, QPN qpn, CA GUID guid,
 * arriving at A from the wire. */
static void inject_req_ex(const uint8_t src[16], uint64_t sid, uint32_t rid, uint32_t qpn,
			  uint64_t guid, uint32_t sqpn)
{
	struct wire_cm_msg m;
	uint8_t mad[WIRE_MAD_LEN], frame[2048];
	struct wire_mad_hdr h;
	struct wire_pkt p;
	size_t len;

	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REQ;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = rid;
	m.v[WIRE_CM_F_SERVICE_ID] = sid;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = guid;
	m.v[WIRE_CM_F_LOCAL_QPN] = qpn;
	m.v[WIRE_CM_F_PATH_MTU] = IBV_MTU_1024;
	m.v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT] = 20;
	m.v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT] = 19;
	m.v[WIRE_CM_F_MAX_CM_RETRIES] = 15;
	memcpy(m.gid[0], src, 16);
	memcpy(m.gid[1], S.n[0].dev.gids[1].raw, 16);
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REQ, 0x77000000ull | rid);
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	wire_gsi_pkt_init(&p, 4, mad, 7);
	p.deth.sqpn = sqpn;
	memcpy(p.dmac, S.n[0].dev.mac, 6);
	memcpy(p.smac, S.n[1].dev.mac, 6);
	memcpy(p.ip.src.raw, src, 16);
	memcpy(p.ip.dst.raw, S.n[0].dev.gids[1].raw, 16);
	CHECK_EQ(wire_build(&p, frame, sizeof(frame), 0, &len), 0);
	emu_port_rx_frame(&S.n[0].dev, frame, (uint32_t)len);
}

/* the same from another host's CM (QP 1) */
static void inject_req_from(const uint8_t src[16], uint64_t sid, uint32_t rid, uint32_t qpn,
			    uint64_t guid)
{
	inject_req_ex(src, sid, rid, qpn, guid, WIRE_GSI_QPN);
}

/* ::ffff:10.9.<hi>.<lo>: hosts on the wire that are neither A nor B */
static void other_host(uint8_t g[16], unsigned n)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 10;
	g[13] = 9;
	g[14] = (uint8_t)(n >> 8);
	g[15] = (uint8_t)n;
}

/* A listener whose application never answers: only its backlog of REQs
 * gets ids, the rest is rejected with "no resources"; one source holds
 * at most a quarter of the device's id table (the rest: REJ 3, counted
 * rej_src_busy), so that another host still gets an id; the table
 * bounds everything. */
static int t_flood(void)
{
	enum { N = 60 };
	struct emu_ibcm_id *b[N];
	struct emu_ibcm_req_param p;

	setup(64, 8);
	listen_a(SID);
	req_param(&p, SID, NULL, 0);
	for (int i = 0; i < N; i++) {
		b[i] = emu_ibcm_create_id(CB, handler, &SB);
		CHECK(b[i] != NULL);
		p.qp_num = 0x100 + (uint32_t)i;
		if (b[i])
			CHECK_EQ(emu_ibcm_send_req(b[i], &p), 0);
	}
	advance(100 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 8);
	CHECK_EQ(count(&SB, EMU_IBCM_REJ_RECEIVED), N - 8);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_no_resources, N - 8);
	struct evrec *r = find_ev(&SB, EMU_IBCM_REJ_RECEIVED);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_NO_RESOURCES);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 9);
	advance(400 * MS); /* B's rate: a burst of 64 again (ibcm_rate) */
	/* a second listener without a backlog limit of its own: B's address
	 * gets 64 / 4 = 16 ids in all, the rest is REJ 3 (its budget) */
	struct emu_ibcm_id *l2 = emu_ibcm_create_id(CA, handler, &SA);
	CHECK_EQ(emu_ibcm_listen(l2, SID + 1, 0, 1000), 0);
	p.service_id = SID + 1;
	SB.n = 0;
	for (int i = 0; i < N; i++) {
		emu_ibcm_destroy_id(b[i]);
		b[i] = emu_ibcm_create_id(CB, handler, &SB);
		p.qp_num = 0x200 + (uint32_t)i;
		if (b[i])
			CHECK_EQ(emu_ibcm_send_req(b[i], &p), 0);
	}
	advance(100 * MS);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 2 + 16);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_src_busy, N - (16 - 8));
	CHECK_EQ(count(&SB, EMU_IBCM_REJ_RECEIVED), N - (16 - 8));
	/* other hosts are not B: each gets ids of its own, until the table */
	for (unsigned h = 0; h < 4; h++)
		for (unsigned i = 0; i < 16; i++) {
			uint8_t g[16];
			other_host(g, h);
			inject_req_from(g, SID + 1, 0x5000 + h * 16 + i, 0x300 + i, 0x1000 + h);
		}
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 64);
	CHECK(emu_ibcm_create_id(CA, handler, &SA) == NULL);
	/* the application answers them all (REJ) and the ids come back */
	for (unsigned i = 0; i < SA.n; i++)
		if (SA.ev[i].ev.event == EMU_IBCM_REQ_RECEIVED)
			emu_ibcm_destroy_id(SA.ev[i].id);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 2);
	advance(100 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_REJ_RECEIVED), N);
	return teardown();
}

/* Forged MADs from the wire (issue 21): what a MAD says of its sender is
 * checked against where it came from before any state changes. B and A
 * are connected (the victim); the attacker is another host (10.9.0.1),
 * or a user's UD QP posing as a CM. The victim's connection stays up. */
static int t_forged(void)
{
	const struct emu_ibcm_counters *c;
	uint8_t atk[16], b_gid[16], a_gid[16];
	uint64_t guid_b, guid_a;

	setup(0, 0);
	listen_a(SID);
	struct emu_ibcm_id *b = connect_auto();
	advance(10 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	struct emu_ibcm_id *a = last_new;
	c = emu_ibcm_counters(CA);
	other_host(atk, 1);
	memcpy(b_gid, S.n[1].dev.gids[1].raw, 16);
	memcpy(a_gid, S.n[0].dev.gids[1].raw, 16);
	guid_b = be64toh(S.n[1].dev.node_guid);
	guid_a = be64toh(S.n[0].dev.node_guid);
	uint64_t rx0 = c->rx_attr[0];
	/* from B's address and GUID with the victim's QPN, but not from a
	 * CM's QP 1 (a user's UD QP with the GSI Q_Key) */
	inject_req_ex(b_gid, SID, 0x7001, 0x111, guid_b, 0x42);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_NOT_QP1], 1);
	/* our own CA GUID from another host */
	inject_req_from(atk, SID, 0x7002, 0x999, guid_a);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_OWN_GUID], 1);
	/* B's GUID and QPN from another address: a stale connection as
	 * far as the kernel's rule goes -- the REQ is refused, but only a
	 * REQ from the connection's own peer may end it */
	inject_req_from(atk, SID, 0x7003, 0x111, guid_b);
	advance(10 * MS);
	CHECK_EQ(c->rej_stale, 1);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_RECEIVED), 0);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	/* a frame from the wire with A's own address as its source: a
	 * martian, dropped before the engine sees it */
	inject_req_from(a_gid, SID, 0x7004, 0x111, guid_b);
	CHECK_EQ(S.n[0].dev.cnt.drops[EMU_DROP_MARTIAN], 1);
	CHECK_EQ(c->rx_attr[0], rx0 + 1); /* only the other-host stale REQ was a REQ taken */
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	/* the victim's own peer reconnecting from its QP: the kernel's
	 * stale rule holds (REJ, DREQ on the old connection) */
	inject_req_from(b_gid, SID, 0x7005, 0x111, guid_b);
	advance(10 * MS);
	CHECK_EQ(c->rej_stale, 2);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_RECEIVED), 1);
	return teardown();
}

/* Timers a peer influences (issue 21): a REQ asking for 2^31 x 4.096 us
 * response timeouts and ACK timeout, 15 retries. A's REP is resent every
 * 4096 ms (rdma_cm's own CMA_CM_RESPONSE_TIMEOUT), a connection not up
 * within 32 s is reclaimed (REP_ERROR; an unanswered REQ: REJ to the
 * peer, REQ_ERROR here), a TIMEWAIT lasts 4 s; before, the REP would be
 * resent every 2.4 hours for 37 hours and the TIMEWAIT last 2.3 hours. */
static int t_clamp(void)
{
	struct emu_ibcm_req_param p;
	const struct emu_ibcm_counters *c;

	setup(0, 0);
	listen_a(SID);
	c = emu_ibcm_counters(CA);
	req_param(&p, SID, NULL, 0);
	p.local_cm_response_timeout = 31;
	p.remote_cm_response_timeout = 31;
	p.primary_path.packet_life_time = 30; /* ACK timeout 31 */
	/* accepted, the RTU never comes: a half-open connection */
	drop_attr = WIRE_CM_ATTR_RTU;
	drop_left = 1000;
	SB.auto_mode = 1;
	struct emu_ibcm_id *b = emu_ibcm_create_id(CB, handler, &SB);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	struct emu_ibcm_id *a = last_new;
	struct emu_ibcm_rep_param rp = { .qp_num = 0x222 };
	CHECK(a != NULL);
	if (!a)
		return teardown();
	CHECK_EQ(emu_ibcm_send_rep(a, &rp), 0);
	advance(4000 * MS);
	CHECK_EQ(c->retransmits, 0);
	advance(200 * MS);
	CHECK_EQ(c->retransmits, 1);
	advance(27000 * MS); /* 31.2 s after the REQ */
	CHECK_EQ(count(&SA, EMU_IBCM_REP_ERROR), 0);
	advance(1000 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_REP_ERROR), 1);
	CHECK_EQ(a->state, EMU_IBCM_IDLE);
	CHECK_EQ(c->half_open_reclaimed, 1);
	CHECK(c->retransmits <= 8);
	emu_ibcm_destroy_id(a);
	emu_ibcm_destroy_id(b);
	/* a REQ nobody answers: reclaimed at 32 s, the peer told */
	SB.auto_mode = 0;
	SB.n = 0;
	b = emu_ibcm_create_id(CB, handler, &SB);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	a = last_new;
	advance(31000 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_ERROR), 0);
	advance(1100 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_ERROR), 1);
	CHECK_EQ(a->state, EMU_IBCM_IDLE);
	struct evrec *r = find_ev(&SB, EMU_IBCM_REJ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_CONSUMER_DEFINED);
	CHECK_EQ(c->half_open_reclaimed, 2);
	emu_ibcm_destroy_id(a);
	/* up, then A disconnects: its TIMEWAIT is 4096 ms, not 2^23 ms */
	drop_left = 0;
	SA.auto_mode = SB.auto_mode = 1;
	SA.n = SB.n = 0;
	b = emu_ibcm_create_id(CB, handler, &SB);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	a = last_new;
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(emu_ibcm_send_dreq(a, NULL, 0), 0);
	advance(10 * MS);
	CHECK_EQ(a->state, EMU_IBCM_TIMEWAIT);
	advance(4000 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_TIMEWAIT_EXIT), 0);
	advance(200 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_TIMEWAIT_EXIT), 1);
	return teardown();
}

/* Requests from the wire are admitted per source before they take an id
 * (issue 21): one host's flood of 1000 REQs at once gets its burst (64)
 * of ids, the rest is dropped unanswered and counted; another host is not
 * slowed down by it; a second later the flooding host has a burst again,
 * and requests below the rate (200 a second) all get ids. */
static int t_rate(void)
{
	const struct emu_ibcm_counters *c;
	uint8_t h1[16], h2[16];

	setup(0, 1000); /* a backlog that is not the limit */
	listen_a(SID);
	c = emu_ibcm_counters(CA);
	other_host(h1, 1);
	other_host(h2, 2);
	for (uint32_t i = 0; i < 1000; i++)
		inject_req_from(h1, SID, 0x10000 + i, 0x1000 + i, 0x4242);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 64);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_RATE], 1000 - 64);
	CHECK_EQ(c->rej_tx[WIRE_CM_REJ_NO_RESOURCES], 0); /* no answer to a flood */
	for (uint32_t i = 0; i < 10; i++)
		inject_req_from(h2, SID, 0x20000 + i, 0x2000 + i, 0x4343);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 64 + 10);
	/* a second later: a burst again, no more */
	advance(1000 * MS);
	for (uint32_t i = 0; i < 1000; i++)
		inject_req_from(h1, SID, 0x30000 + i, 0x3000 + i, 0x4242);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 64 + 10 + 64);
	/* below the rate (100 a second), every request is taken */
	advance(1000 * MS);
	for (uint32_t i = 0; i < 50; i++) {
		inject_req_from(h1, SID, 0x40000 + i, 0x4000 + i, 0x4242);
		advance(10 * MS);
	}
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 64 + 10 + 64 + 50);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_RATE], 2 * (1000 - 64));
	return teardown();
}

/* MRA: the passive side needs time; the active side's REQ timer becomes
 * the announced service timeout and the REQ is not resent meanwhile --
 * within rdma_cm's scale: 2^24 us asked (65 s) is taken as 2^20 (4 s). */
static int t_mra(void)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b, *a;

	setup(0, 0);
	listen_a(SID);
	save_attr = WIRE_CM_ATTR_REQ;
	b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	a = last_new;
	CHECK(a != NULL);
	if (!a)
		return teardown();
	CHECK_EQ(emu_ibcm_send_mra(a, 24, NULL, 0), 0); /* 2^16 ms asked */
	advance(10 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_MRA_RECEIVED), 1);
	CHECK_EQ(b->state, EMU_IBCM_MRA_REQ_RCVD);
	/* B's timer: 4096 ms (clamped) + its packet life time (ACK timeout
	 * 19: 2048 ms) -- past REQ_TRY_MS, not resent until then */
	advance(6000 * MS);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 0);
	advance(300 * MS);
	CHECK_EQ(emu_ibcm_counters(CB)->retransmits, 1);
	/* a duplicate REQ now gets the MRA again */
	/* the REQ B resent got the MRA again, as a duplicate REQ does */
	CHECK_EQ(seen[1][WIRE_CM_ATTR_MRA], 2);
	emu_port_rx_frame(&S.n[0].dev, saved, saved_len);
	advance(10 * MS);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_MRA], 3);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	CHECK_EQ(b->state, EMU_IBCM_MRA_REQ_RCVD);
	SA.auto_mode = SB.auto_mode = 1;
	struct emu_ibcm_rep_param rp = { .qp_num = 0x222 };
	CHECK_EQ(emu_ibcm_send_rep(a, &rp), 0);
	advance(10 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	return teardown();
}

/* Destroying ids as the kernel does: an established one sends one DREQ
 * and keeps its comm ID through TIMEWAIT; a pending REQ is rejected. */
static int t_destroy(void)
{
	struct emu_ibcm_id *b, *b2;

	setup(0, 0);
	listen_a(SID);
	b = connect_auto();
	advance(10 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	uint32_t a_id = last_new ? last_new->local_id : 0;
	emu_ibcm_destroy_id(last_new);
	/* the slot goes at once: only the listener (its TIMEWAIT is a record) */
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 1);
	advance(10 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_RECEIVED), 1);
	CHECK_EQ(count(&SB, EMU_IBCM_DREP_RECEIVED), 0);
	CHECK_EQ(b->state, EMU_IBCM_TIMEWAIT); /* auto: B answered with DREP */
	CHECK_EQ(count(&SA, EMU_IBCM_DREP_RECEIVED), 0); /* no event after destroy */
	/* a new id never gets the comm ID back while the old one might
	 * still be in flight (its slot's generation moved on) */
	struct emu_ibcm_id *n2 = emu_ibcm_create_id(CA, handler, &SA);
	CHECK(n2 != NULL && n2->local_id != a_id);
	emu_ibcm_destroy_id(n2);
	advance(3000 * MS);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 1);
	/* a pending REQ destroyed: REJ timeout reaches the listener's id */
	SA.auto_mode = 0;
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	struct emu_ibcm_req_param p;
	req_param(&p, SID, NULL, 0);
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	CHECK_EQ(last_new ? (int)last_new->state : -1, EMU_IBCM_REQ_RCVD);
	emu_ibcm_destroy_id(b2);
	advance(10 * MS);
	struct evrec *r = find_ev(&SA, EMU_IBCM_REJ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_TIMEOUT);
	CHECK_EQ(last_new->state, EMU_IBCM_IDLE);
	/* a handler returning non-zero destroys its id: REQ refused */
	SA.destroy_on = EMU_IBCM_REQ_RECEIVED;
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	CHECK_EQ(b2->state, EMU_IBCM_IDLE);
	CHECK_EQ(SB.ev[SB.n - 1].ev.param.rej_rcvd.reason, WIRE_CM_REJ_CONSUMER_DEFINED);
	return teardown();
}

/* ---- pcap mode: the engine's MADs for tshark's CM dissector ---- */

static void hexout(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(cap_exp, "%02x", p[i]);
}

struct cap_field {
	uint16_t attr;
	enum wire_cm_field f;
	const char *name;
};

/* tshark 4.0's field for each value worth checking (see
 * tests/tools/gen_cm_frames.c for the names and tshark's quirks) */
static const struct cap_field cap_fields[] = {
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.req" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_SERVICE_ID, "infiniband.cm.req.serviceid" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_LOCAL_CA_GUID, "infiniband.cm.req.localcaguid" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_LOCAL_QPN, "infiniband.cm.req.localqpn" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_RESPONDER_RESOURCES, "infiniband.cm.req.responderres" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_INITIATOR_DEPTH, "infiniband.cm.req.initdepth" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT, "infiniband.cm.req.remoteresptout" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_STARTING_PSN, "infiniband.cm.req.startpsn" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT, "infiniband.cm.req.localresptout" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_RETRY_COUNT, "infiniband.cm.req.retrcount" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PKEY, "infiniband.cm.req.pkey" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PATH_MTU, "infiniband.cm.req.pppmtu" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_RNR_RETRY_COUNT, "infiniband.cm.req.rnrretrcount" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_MAX_CM_RETRIES, "infiniband.cm.req.maxcmretr" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_LOCAL_LID, "infiniband.cm.req.prim_locallid" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_REMOTE_LID, "infiniband.cm.req.prim_remotelid" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_LOCAL_GID, "infiniband.cm.req.prim_localgid_ipv4" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_REMOTE_GID, "infiniband.cm.req.prim_remotegid_ipv4" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_TRAFFIC_CLASS, "infiniband.cm.req.prim_tfcclass" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_HOP_LIMIT, "infiniband.cm.req.prim_hoplim" },
	{ WIRE_CM_ATTR_REQ, WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT, "infiniband.cm.req.prim_localacktout" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.rep" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.rep.remotecommid" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_LOCAL_QPN, "infiniband.cm.rep.localqpn" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_STARTING_PSN, "infiniband.cm.rep.startpsn" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_RESPONDER_RESOURCES, "infiniband.cm.rep.respres" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_INITIATOR_DEPTH, "infiniband.cm.rep.initdepth" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_TARGET_ACK_DELAY, "infiniband.cm.rep.tgtackdelay" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_RNR_RETRY_COUNT, "infiniband.cm.rep.rnrretrcount" },
	{ WIRE_CM_ATTR_REP, WIRE_CM_F_LOCAL_CA_GUID, "infiniband.cm.rep.localcaguid" },
	{ WIRE_CM_ATTR_RTU, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.rtu.localcommid" },
	{ WIRE_CM_ATTR_RTU, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.rtu.remotecommid" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.rej.localcommid" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.rej.remotecommid" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_MSG_REJECTED, "infiniband.cm.rej.msgrej" },
	{ WIRE_CM_ATTR_REJ, WIRE_CM_F_REJ_REASON, "infiniband.cm.rej.reason" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.dreq.localcommid" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.dreq.remotecommid" },
	{ WIRE_CM_ATTR_DREQ, WIRE_CM_F_REMOTE_QPN, "infiniband.cm.req.remoteqpneecn" },
	{ WIRE_CM_ATTR_DREP, WIRE_CM_F_LOCAL_COMM_ID, "infiniband.cm.drsp.localcommid" },
	{ WIRE_CM_ATTR_DREP, WIRE_CM_F_REMOTE_COMM_ID, "infiniband.cm.drsp.remotecommid" },
};

static void cap_frame(const uint8_t *f, uint32_t len)
{
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
	struct wire_pkt p;

	CHECK_EQ(wire_parse(f, len, &p), WIRE_OK);
	CHECK_EQ(wire_gsi_pkt_decode(&p, WIRE_MAD_STRICT, &h, &m), WIRE_MAD_OK);
	CHECK_EQ(pcapw_write(cap, f, len, 1795305600000000000ull + cap_n * 1000000ull), 0);
	fprintf(cap_exp, "frame=%u infiniband.mad.baseversion=1 infiniband.mad.mgmtclass=7 "
		"infiniband.mad.classversion=2 infiniband.mad.method=3 "
		"infiniband.mad.transactionid=0x%016llx infiniband.mad.attributeid=0x%04x",
		++cap_n, (unsigned long long)h.tid, h.attr_id);
	for (unsigned i = 0; i < sizeof(cap_fields) / sizeof(cap_fields[0]); i++) {
		const struct cap_field *c = &cap_fields[i];
		if (c->attr != h.attr_id)
			continue;
		fprintf(cap_exp, " %s=", c->name);
		if (c->f == WIRE_CM_F_PRI_LOCAL_GID || c->f == WIRE_CM_F_PRI_REMOTE_GID)
			hexout(m.gid[c->f - WIRE_CM_F_PRI_LOCAL_GID] + 12, 4);
		else
			fprintf(cap_exp, "0x%llx", (unsigned long long)m.v[c->f]);
	}
	fputc('\n', cap_exp);
}

/* Every message the engine sends, once, through the sim wire into a
 * pcap plus the values tshark must decode (tests/tools/cm_tshark_check.py). */
static int t_pcap(const char *pcap, const char *expect)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b, *a;

	cap_exp = fopen(expect, "w");
	if (!cap_exp || pcapw_open(&cap, pcap, 0)) {
		fprintf(stderr, "cannot write %s / %s\n", pcap, expect);
		return 1;
	}
	setup(0, 0);
	fprintf(cap_exp, "# test_ibcm pcap, seed %u\n", SEED);
	listen_a(SID);
	b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, "hello", 6);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	a = last_new;
	CHECK(a != NULL);
	if (!a)
		return teardown();
	CHECK_EQ(emu_ibcm_send_mra(a, 20, NULL, 0), 0);
	advance(10 * MS);
	SA.auto_mode = SB.auto_mode = 1;
	struct emu_ibcm_rep_param rp = { .qp_num = 0x222, .starting_psn = 0x456,
					 .responder_resources = 4, .initiator_depth = 4,
					 .rnr_retry_count = 7 };
	CHECK_EQ(emu_ibcm_send_rep(a, &rp), 0);
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_send_dreq(b, "bye", 4), 0);
	advance(10 * MS);
	/* REJ (no listener) and SIDR */
	struct emu_ibcm_id *b2 = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID + 5, NULL, 0);
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	struct emu_ibcm_sidr_req_param sp = { .service_id = SID, .timeout_ms = 100,
					      .max_cm_retries = 2 };
	sp.path.sgid = S.n[1].dev.gids[1];
	sp.path.dgid = S.n[0].dev.gids[1];
	struct emu_ibcm_id *b3 = emu_ibcm_create_id(CB, handler, &SB);
	CHECK_EQ(emu_ibcm_send_sidr_req(b3, &sp), 0);
	advance(10 * MS);
	struct emu_ibcm_sidr_rep_param srp = { .qp_num = 0x777, .qkey = 0x01234567 };
	CHECK(last_new && last_new->state == EMU_IBCM_SIDR_REQ_RCVD);
	if (last_new)
		CHECK_EQ(emu_ibcm_send_sidr_rep(last_new, &srp), 0);
	advance(10 * MS);
	CHECK_EQ(cap_n, 10); /* REQ MRA REP RTU DREQ DREP REQ REJ SIDR_REQ SIDR_REP */
	pcapw_close(cap);
	fclose(cap_exp);
	cap = NULL;
	return teardown();
}

/* The passive side's states through a whole connection, as traced. */
static int t_trace(void)
{
	setup(0, 0);
	listen_a(SID);
	struct emu_ibcm_id *b = connect_auto();
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_send_dreq(b, NULL, 0), 0);
	advance(3000 * MS);
	printf("%s\n", trace_a);
	CHECK(!strcmp(trace_a, "IDLE>REQ_RCVD(rx-req) REQ_RCVD>REP_SENT(send-rep) "
		      "REP_SENT>ESTABLISHED(rx-rtu) ESTABLISHED>DREQ_RCVD(rx-dreq) "
		      "DREQ_RCVD>TIMEWAIT(send-drep) TIMEWAIT>IDLE(timewait-exit) "));
	CHECK(!strcmp(emu_ibcm_state_name(EMU_IBCM_MRA_REP_RCVD), "MRA_REP_RCVD"));
	CHECK(!strcmp(emu_ibcm_event_name(EMU_IBCM_SIDR_REP_RECEIVED), "SIDR_REP_RECEIVED"));
	return teardown();
}

/* A new REQ from a QP that still has a connection here (the peer
 * restarted): REJ stale connection, and the old connection gets a DREQ,
 * as the kernel's cm_req_handler does. */
static int t_stale(void)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b, *b2, *a;

	setup(0, 0);
	listen_a(SID);
	b = connect_auto();
	advance(10 * MS);
	a = last_new;
	CHECK_EQ(a ? (int)a->state : -1, EMU_IBCM_ESTABLISHED);
	SB.auto_mode = 0; /* B forgot the connection: it answers nothing */
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0); /* the same QPN 0x111 */
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_stale, 1);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 1);
	struct evrec *r = find_ev(&SB, EMU_IBCM_REJ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_STALE_CONN);
	CHECK_EQ(b2->state, EMU_IBCM_TIMEWAIT); /* REJ stale: the kernel enters TIMEWAIT */
	CHECK_EQ(a ? (int)a->state : -1, EMU_IBCM_DREQ_SENT);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_RECEIVED), 1); /* on the old id b */
	(void)b;
	return teardown();
}

/* The active side's view (cm_rep_handler): a REP from a remote QP that
 * an established id of ours is still connected to is rejected as stale,
 * the old connection gets a DREQ. The second REP is forged from A's
 * address (A's own engine would refuse the REQ first). */
static int t_stale_rep(void)
{
	struct emu_ibcm_id *b, *b2, *a;
	struct emu_ibcm_req_param p;
	struct wire_cm_msg m;

	setup(0, 0);
	listen_a(SID);
	b = connect_auto();
	advance(10 * MS);
	a = last_new;
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	drop_all_to_a = true; /* A sees nothing more */
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	p.qp_num = 0x999;
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	/* a REP to b2 from A's address, A's CA and the QPN b is connected to */
	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_REP;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = 0x7777;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = b2->local_id;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0x222;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = be64toh(S.n[0].dev.node_guid);
	uint8_t mad[WIRE_MAD_LEN], frame[1024];
	struct wire_mad_hdr h;
	struct wire_pkt pk;
	size_t len;
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_REP, 3);
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	wire_gsi_pkt_init(&pk, 4, mad, 1);
	memcpy(pk.dmac, S.n[1].dev.mac, 6);
	memcpy(pk.smac, S.n[0].dev.mac, 6);
	memcpy(pk.ip.src.raw, S.n[0].dev.gids[1].raw, 16);
	memcpy(pk.ip.dst.raw, S.n[1].dev.gids[1].raw, 16);
	CHECK_EQ(wire_build(&pk, frame, sizeof(frame), 0, &len), 0);
	uint64_t tx = emu_ibcm_counters(CB)->tx_mads;
	emu_port_rx_frame(&S.n[1].dev, frame, (uint32_t)len);
	CHECK_EQ(emu_ibcm_counters(CB)->rej_stale, 1);
	CHECK_EQ(emu_ibcm_counters(CB)->tx_mads, tx + 2); /* REJ, DREQ */
	CHECK_EQ(b->state, EMU_IBCM_DREQ_SENT);
	CHECK_EQ(b2->state, EMU_IBCM_REQ_SENT);
	CHECK_EQ(count(&SB, EMU_IBCM_REP_RECEIVED), 1); /* only b's */
	(void)a;
	return teardown();
}

/* Over IPv6 (the devices' link-local GIDs), the MAC given in the path:
 * the whole exchange, the path GIDs reported as sent. */
static int t_ipv6(void)
{
	struct emu_ibcm_req_param p;
	struct emu_ibcm_id *b;

	setup(0, 0);
	listen_a(SID);
	SA.auto_mode = SB.auto_mode = 1;
	b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	p.primary_path.sgid = S.n[1].dev.gids[0];
	p.primary_path.dgid = S.n[0].dev.gids[0];
	p.primary_path.flow_label = 0x12345;
	memcpy(p.primary_path.dmac, S.n[0].dev.mac, 6);
	p.primary_path.dmac_valid = true;
	CHECK(S.n[0].dev.gids[0].raw[0] == 0xfe);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	struct evrec *r = find_ev(&SA, EMU_IBCM_REQ_RECEIVED);
	CHECK(r != NULL);
	if (r) {
		const struct emu_ibcm_path *pp = &r->ev.param.req_rcvd.primary_path;
		CHECK(!memcmp(pp->sgid.raw, S.n[0].dev.gids[0].raw, 16));
		CHECK(!memcmp(pp->dgid.raw, S.n[1].dev.gids[0].raw, 16));
		CHECK_EQ(pp->flow_label, 0x12345);
		CHECK_EQ(r->id->state, EMU_IBCM_ESTABLISHED);
	}
	CHECK_EQ(emu_ibcm_send_dreq(b, NULL, 0), 0);
	advance(3000 * MS);
	CHECK_EQ(count(&SB, EMU_IBCM_TIMEWAIT_EXIT), 1);
	/* an IPv4 source with an IPv6 destination is refused */
	struct emu_ibcm_id *b2 = emu_ibcm_create_id(CB, handler, &SB);
	p.primary_path.sgid = S.n[1].dev.gids[1];
	CHECK_EQ(emu_ibcm_send_req(b2, &p), -EINVAL);
	CHECK_EQ(b2->state, EMU_IBCM_IDLE);
	return teardown();
}

/* A genuine REQ of the Linux kernel (tests/data/send_bw_rdmacm.pcap:
 * ib_send_bw -R between two rdma_rxe hosts, 10.77.0.12 active) fed to A,
 * which takes the passive host's address: every field reaches
 * REQ_RECEIVED as the kernel sent it, and A's REP answers the kernel's
 * comm ID and transaction ID at the kernel host's address. */
static const char *kreq_pcap;
static uint8_t kreq_rep[2048];
static uint32_t kreq_rep_len;

static bool kreq_hook(struct sim *s, int to, uint8_t *f, uint32_t len)
{
	(void)s;
	if (to == 1 && frame_attr(f, len) == WIRE_CM_ATTR_REP && len <= sizeof(kreq_rep)) {
		memcpy(kreq_rep, f, len);
		kreq_rep_len = len;
	}
	return true;
}

static int t_kernel_req(void)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	struct wire_pkt p, kp;
	struct wire_mad_hdr kh, h;
	struct wire_cm_msg km, m;
	bool found = false;

	pcap_t *pc = pcap_open_offline(kreq_pcap, err);
	if (!pc) {
		fprintf(stderr, "%s: %s\n", kreq_pcap, err);
		return 1;
	}
	static uint8_t frame[2048];
	uint32_t flen = 0;
	while (!found && pcap_next_ex(pc, &ph, &data) == 1) {
		if (ph->caplen > sizeof(frame) || frame_attr(data, ph->caplen) != WIRE_CM_ATTR_REQ)
			continue;
		memcpy(frame, data, ph->caplen);
		flen = ph->caplen;
		found = true;
	}
	pcap_close(pc);
	CHECK(found);
	if (!found)
		return 1;
	CHECK_EQ(wire_parse(frame, flen, &kp), WIRE_OK);
	CHECK_EQ(wire_gsi_pkt_decode(&kp, WIRE_MAD_STRICT, &kh, &km), WIRE_MAD_OK);

	setup(0, 0);
	sim_hook = kreq_hook;
	/* A becomes the kernel's passive host: its address and MAC */
	struct emu_dev *a = &S.n[0].dev;
	memcpy(a->gids[a->gid_count].raw, kp.ip.dst.raw, 16);
	a->gid_count++;
	memcpy(a->mac, kp.dmac, 6);
	listen_a(km.v[WIRE_CM_F_SERVICE_ID]);
	SA.auto_mode = 1;
	emu_port_rx_frame(a, frame, flen);
	advance(10 * MS);
	struct evrec *r = find_ev(&SA, EMU_IBCM_REQ_RECEIVED);
	CHECK(r != NULL);
	if (!r)
		return teardown();
	const struct emu_ibcm_req_event_param *q = &r->ev.param.req_rcvd;
	CHECK_EQ(r->id->remote_id, km.v[WIRE_CM_F_LOCAL_COMM_ID]);
	CHECK_EQ(q->remote_qpn, km.v[WIRE_CM_F_LOCAL_QPN]);
	CHECK_EQ(q->starting_psn, km.v[WIRE_CM_F_STARTING_PSN]);
	CHECK_EQ(q->remote_ca_guid, km.v[WIRE_CM_F_LOCAL_CA_GUID]);
	CHECK_EQ(q->responder_resources, km.v[WIRE_CM_F_RESPONDER_RESOURCES]);
	CHECK_EQ(q->initiator_depth, km.v[WIRE_CM_F_INITIATOR_DEPTH]);
	CHECK_EQ(q->retry_count, km.v[WIRE_CM_F_RETRY_COUNT]);
	CHECK_EQ(q->rnr_retry_count, km.v[WIRE_CM_F_RNR_RETRY_COUNT]);
	CHECK_EQ(q->primary_path.mtu, km.v[WIRE_CM_F_PATH_MTU]);
	CHECK_EQ(q->primary_path.hop_limit, km.v[WIRE_CM_F_PRI_HOP_LIMIT]);
	CHECK_EQ(q->primary_path.traffic_class, km.v[WIRE_CM_F_PRI_TRAFFIC_CLASS]);
	CHECK_EQ(q->local_ack_timeout, km.v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT]);
	CHECK(!memcmp(q->primary_path.dgid.raw, kp.ip.src.raw, 16));
	CHECK(!memcmp(q->primary_path.sgid.raw, kp.ip.dst.raw, 16));
	CHECK(!memcmp(r->pdata, km.pdata, WIRE_CM_REQ_PDATA)); /* cma_hdr + user data */
	/* the kernel's rdma_cm: REQ timeout 2 x 2^(18-8) + 2^(20-8) ms, 15 retries */
	printf("kernel REQ: local cm resp timeout %u, remote %u, max retries %u, ack timeout %u\n",
	       (unsigned)km.v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT],
	       (unsigned)km.v[WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT],
	       (unsigned)km.v[WIRE_CM_F_MAX_CM_RETRIES], (unsigned)q->local_ack_timeout);
	CHECK(kreq_rep_len > 0);
	if (!kreq_rep_len)
		return teardown();
	CHECK_EQ(wire_parse(kreq_rep, kreq_rep_len, &p), WIRE_OK);
	CHECK_EQ(wire_gsi_pkt_decode(&p, WIRE_MAD_STRICT, &h, &m), WIRE_MAD_OK);
	CHECK_EQ(h.tid, kh.tid);
	CHECK_EQ(m.v[WIRE_CM_F_REMOTE_COMM_ID], km.v[WIRE_CM_F_LOCAL_COMM_ID]);
	CHECK(!memcmp(p.ip.dst.raw, kp.ip.src.raw, 16));
	CHECK(!memcmp(p.ip.src.raw, kp.ip.dst.raw, 16));
	CHECK(!memcmp(p.dmac, kp.smac, 6));
	CHECK_EQ(p.deth.sqpn, 1);
	return teardown();
}

/* Every MAD the Linux kernel's rdma_cm (rdma_rxe, tests/interop cmloss)
 * sent, from tests/data/rdmacm_rxe_loss.pcap (IPv4 and IPv6, REQ, REP, RTU,
 * REJ, DREQ, DREP, SIDR_REQ, SIDR_REP, retransmissions included): each
 * decodes strictly, and the engine, in the address of the uroce side but
 * with none of its ids, takes them all without a malformed drop and
 * answers what has an answer for nobody (REQ: REJ, DREQ: DREP, SIDR_REQ:
 * SIDR_REP), as the kernel would. */
static const char *kmads_pcap;

static int t_kernel_mads(void)
{
	static const uint8_t vm4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 2 };
	static const uint8_t vm6[16] = { 0xfd, 0x77, [15] = 2 };
	static const uint8_t us4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 1 };
	static const uint8_t us6[16] = { 0xfd, 0x77, [15] = 1 };
	static const uint8_t us_mac[6] = { 2, 0, 0, 0x4d, 0, 1 };
	static uint8_t frames[128][400];
	static uint32_t lens[128];
	unsigned n = 0, by_attr[0x20] = { 0 }, v6 = 0;
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;

	pcap_t *pc = pcap_open_offline(kmads_pcap, err);
	if (!pc) {
		fprintf(stderr, "%s: %s\n", kmads_pcap, err);
		return 1;
	}
	while (n < 128 && pcap_next_ex(pc, &ph, &data) == 1) {
		struct wire_pkt kp;
		struct wire_mad_hdr kh;
		struct wire_cm_msg km;
		int a = frame_attr(data, ph->caplen);

		if (a < 0 || ph->caplen > sizeof(frames[0]) || wire_parse(data, ph->caplen, &kp) != WIRE_OK)
			continue;
		if (memcmp(kp.ip.src.raw, vm4, 16) && memcmp(kp.ip.src.raw, vm6, 16))
			continue; /* uroce's own */
		CHECK_EQ(wire_gsi_pkt_decode(&kp, WIRE_MAD_STRICT, &kh, &km), WIRE_MAD_OK);
		memcpy(frames[n], data, ph->caplen);
		lens[n++] = ph->caplen;
		by_attr[a & 0x1f]++;
		v6 += !memcmp(kp.ip.src.raw, vm6, 16);
	}
	pcap_close(pc);
	printf("%u kernel MADs, %u over IPv6\n", n, v6);
	CHECK(v6 > 0 && v6 < n);
	static const uint16_t want[] = { WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_REP, WIRE_CM_ATTR_RTU,
					 WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP, WIRE_CM_ATTR_SIDR_REQ,
					 WIRE_CM_ATTR_SIDR_REP };
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(by_attr[want[i] & 0x1f] > 0);

	setup(0, 0);
	struct emu_dev *a = &S.n[0].dev;
	memcpy(a->gids[a->gid_count++].raw, us4, 16);
	memcpy(a->gids[a->gid_count++].raw, us6, 16);
	memcpy(a->mac, us_mac, 6);
	for (unsigned i = 0; i < n; i++)
		emu_port_rx_frame(a, frames[i], lens[i]);
	advance(10 * MS);
	const struct emu_ibcm_counters *c = emu_ibcm_counters(CA);
	CHECK_EQ(c->rx_mads, n);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_MALFORMED], 0);
	CHECK_EQ(c->drops[EMU_IBCM_DROP_BAD_SRC], 0);
	/* REJ 8 for a REQ, SIDR_REP "unsupported" for a SIDR_REQ */
	CHECK_EQ(c->rej_no_listener,
		 by_attr[WIRE_CM_ATTR_REQ & 0x1f] + by_attr[WIRE_CM_ATTR_SIDR_REQ & 0x1f]);
	CHECK_EQ(c->drep_unknown, by_attr[WIRE_CM_ATTR_DREQ & 0x1f]);
	CHECK_EQ(seen[1][WIRE_CM_ATTR_SIDR_REP & 0x1f], by_attr[WIRE_CM_ATTR_SIDR_REQ & 0x1f]);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 0);
	return teardown();
}

/* The RTU is lost but data arrives: COMM_EST through notify establishes
 * the passive side and stops its REP retransmission. */
static int t_notify(void)
{
	struct emu_ibcm_id *b, *a;

	setup(0, 0);
	listen_a(SID);
	drop_attr = WIRE_CM_ATTR_RTU;
	drop_left = 1;
	b = connect_auto();
	advance(10 * MS);
	a = last_new;
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(a ? (int)a->state : -1, EMU_IBCM_REP_SENT);
	if (!a)
		return teardown();
	CHECK_EQ(emu_ibcm_notify(a, IBV_EVENT_PATH_MIG), -EINVAL);
	CHECK_EQ(emu_ibcm_notify(a, IBV_EVENT_COMM_EST), 0);
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	CHECK_EQ(count(&SA, EMU_IBCM_USER_ESTABLISHED), 1);
	advance(20000 * MS);
	CHECK_EQ(emu_ibcm_counters(CA)->retransmits, 0);
	struct emu_ibcm_path path;
	CHECK_EQ(emu_ibcm_get_path(a, &path), 0);
	CHECK_EQ(path.mtu, IBV_MTU_1024);
	CHECK(!memcmp(path.dgid.raw, S.n[1].dev.gids[1].raw, 16));
	return teardown();
}

/* A message naming a live connection from another address is dropped. */
static int t_bad_src(void)
{
	struct emu_ibcm_id *b, *a;
	struct wire_cm_msg m;
	uint8_t mad[WIRE_MAD_LEN], frame[1024];
	struct wire_mad_hdr h;
	struct wire_pkt p;
	size_t len;

	setup(0, 0);
	listen_a(SID);
	b = connect_auto();
	advance(10 * MS);
	a = last_new;
	if (!a)
		return teardown();
	memset(&m, 0, sizeof(m));
	m.attr = WIRE_CM_ATTR_DREQ;
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = b->local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = a->local_id;
	m.v[WIRE_CM_F_REMOTE_QPN] = 0x222;
	wire_mad_hdr_init_cm(&h, WIRE_CM_ATTR_DREQ, 5);
	CHECK_EQ(wire_mad_encode(mad, &h, &m), 0);
	wire_gsi_pkt_init(&p, 4, mad, 1);
	memcpy(p.dmac, S.n[0].dev.mac, 6);
	memcpy(p.smac, S.n[1].dev.mac, 6);
	memcpy(p.ip.src.raw, S.n[1].dev.gids[1].raw, 16);
	p.ip.src.raw[15] = 99; /* a third host */
	memcpy(p.ip.dst.raw, S.n[0].dev.gids[1].raw, 16);
	CHECK_EQ(wire_build(&p, frame, sizeof(frame), 0, &len), 0);
	emu_port_rx_frame(&S.n[0].dev, frame, (uint32_t)len);
	CHECK_EQ(emu_ibcm_counters(CA)->drops[EMU_IBCM_DROP_BAD_SRC], 1);
	CHECK_EQ(a->state, EMU_IBCM_ESTABLISHED);
	/* the same DREQ from the peer's address is taken */
	memcpy(p.ip.src.raw, S.n[1].dev.gids[1].raw, 16);
	CHECK_EQ(wire_build(&p, frame, sizeof(frame), 0, &len), 0);
	emu_port_rx_frame(&S.n[0].dev, frame, (uint32_t)len);
	CHECK_EQ(a->state, EMU_IBCM_TIMEWAIT); /* auto: DREP sent */
	return teardown();
}

/* A handler that destroys its own id (against the rule) and creates
 * another one, which takes the freed slot, then returns non-zero: the new
 * id must survive. */
static struct emu_ibcm_id *reborn;

static int rude_handler(struct emu_ibcm_id *id, const struct emu_ibcm_event *ev)
{
	if (ev->event != EMU_IBCM_REQ_RECEIVED)
		return 0;
	emu_ibcm_destroy_id(id);
	reborn = emu_ibcm_create_id(id->cm, handler, &SA);
	return 1;
}

static int t_self_destroy(void)
{
	struct emu_ibcm_req_param p;

	setup(0, 0);
	struct emu_ibcm_id *l = emu_ibcm_create_id(CA, rude_handler, &SA);
	CHECK_EQ(emu_ibcm_listen(l, SID, 0, 0), 0);
	struct emu_ibcm_id *b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	CHECK(reborn != NULL);
	CHECK_EQ(emu_ibcm_ids_in_use(CA), 2); /* the listener and the new id */
	if (reborn)
		CHECK_EQ(reborn->state, EMU_IBCM_IDLE);
	CHECK_EQ(count(&SB, EMU_IBCM_REJ_RECEIVED), 1); /* the REQ was rejected */
	return teardown();
}

/* The engine going away (the daemon stops): the peer's connection gets
 * a DREQ, its pending request a REJ, and no event reaches A's handlers. */
static int t_detach(void)
{
	struct emu_ibcm_id *b, *b2;
	struct emu_ibcm_req_param p;

	setup(0, 0);
	listen_a(SID);
	b = connect_auto();
	advance(10 * MS);
	CHECK_EQ(b->state, EMU_IBCM_ESTABLISHED);
	SA.auto_mode = 0;
	b2 = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, SID, NULL, 0);
	p.qp_num = 0x555;
	CHECK_EQ(emu_ibcm_send_req(b2, &p), 0);
	advance(10 * MS);
	CHECK_EQ(b2->state, EMU_IBCM_REQ_SENT); /* A got it, never answered */
	unsigned na = SA.n;
	emu_ibcm_detach(&S.n[0].dev);
	CHECK(emu_ibcm_get(&S.n[0].dev) == NULL);
	advance(10 * MS);
	CHECK_EQ(SA.n, na);
	CHECK_EQ(count(&SB, EMU_IBCM_DREQ_RECEIVED), 1);
	struct evrec *r = find_ev(&SB, EMU_IBCM_REJ_RECEIVED);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ(r->ev.param.rej_rcvd.reason, WIRE_CM_REJ_CONSUMER_DEFINED);
	CHECK_EQ(b2->state, EMU_IBCM_IDLE);
	/* B's DREP finds no engine on A: an unknown QP there */
	CHECK_EQ(b->state, EMU_IBCM_TIMEWAIT);
	CHECK(S.n[0].dev.cnt.drops[EMU_DROP_UNKNOWN_QP] >= 1);
	return teardown();
}

/* Listening under a mask: every port of the TCP port space reaches the
 * listener; an overlapping listener is refused, a disjoint one is not. */
static int t_listen_mask(void)
{
	struct emu_ibcm_req_param p;
	const uint64_t mask = ~0xFFFFull;

	setup(0, 0);
	struct emu_ibcm_id *l = emu_ibcm_create_id(CA, handler, &SA);
	CHECK_EQ(emu_ibcm_listen(l, 0x01060000ull, mask, 0), 0);
	CHECK_EQ(emu_ibcm_listen(l, 0x01110000ull, mask, 0), -EINVAL); /* not IDLE */
	struct emu_ibcm_id *o = emu_ibcm_create_id(CA, handler, &SA);
	CHECK_EQ(emu_ibcm_listen(o, 0x01060007ull, 0, 0), -EBUSY);  /* inside the mask */
	CHECK_EQ(emu_ibcm_listen(o, 0x01110007ull, 0, 0), 0);       /* UDP port space */
	for (uint16_t port = 1; port <= 3; port++) {
		struct emu_ibcm_id *b = emu_ibcm_create_id(CB, handler, &SB);
		req_param(&p, 0x01060000ull | port * 1000u, NULL, 0);
		p.qp_num = 0x300 + port;
		CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	}
	struct emu_ibcm_id *b = emu_ibcm_create_id(CB, handler, &SB);
	req_param(&p, 0x01070001ull, NULL, 0); /* another port space: nobody */
	CHECK_EQ(emu_ibcm_send_req(b, &p), 0);
	advance(10 * MS);
	CHECK_EQ(count(&SA, EMU_IBCM_REQ_RECEIVED), 3);
	for (unsigned i = 0; i < SA.n; i++)
		if (SA.ev[i].ev.event == EMU_IBCM_REQ_RECEIVED) {
			CHECK(SA.ev[i].ev.param.req_rcvd.listen_id == l);
			CHECK_EQ(SA.ev[i].ev.param.req_rcvd.service_id & mask, 0x01060000ull);
			CHECK_EQ(SA.ev[i].id->service_id, SA.ev[i].ev.param.req_rcvd.service_id);
		}
	CHECK_EQ(count(&SB, EMU_IBCM_REJ_RECEIVED), 1);
	CHECK_EQ(emu_ibcm_counters(CA)->rej_no_listener, 1);
	return teardown();
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "connect", t_connect },
	{ "no_listener", t_no_listener },
	{ "req_timeout", t_req_timeout },
	{ "dup_req", t_dup_req },
	{ "unknown_ids", t_unknown_ids },
	{ "sidr", t_sidr },
	{ "malformed", t_malformed },
	{ "flood", t_flood },
	{ "forged", t_forged },
	{ "clamp", t_clamp },
	{ "rate", t_rate },
	{ "mra", t_mra },
	{ "destroy", t_destroy },
	{ "trace", t_trace },
	{ "stale", t_stale },
	{ "stale_rep", t_stale_rep },
	{ "ipv6", t_ipv6 },
	{ "notify", t_notify },
	{ "bad_src", t_bad_src },
	{ "self_destroy", t_self_destroy },
	{ "detach", t_detach },
	{ "listen_mask", t_listen_mask },
	{ "loss", t_loss },
};

static const struct {
	const char *name;
	uint16_t attr;
} losses[] = {
	{ "lose_req", WIRE_CM_ATTR_REQ },
	{ "lose_rep", WIRE_CM_ATTR_REP },
	{ "lose_rtu", WIRE_CM_ATTR_RTU },
	{ "lose_dreq", WIRE_CM_ATTR_DREQ },
	{ "lose_drep", WIRE_CM_ATTR_DREP },
};

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "pcap"))
		return t_pcap(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "kernel_mads")) {
		kmads_pcap = argv[2];
		return t_kernel_mads();
	}
	if (argc == 3 && !strcmp(argv[1], "kernel_req")) {
		kreq_pcap = argv[2];
		return t_kernel_req();
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s <test>\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name))
			return tests[i].fn();
	for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		if (!strcmp(argv[1], losses[i].name))
			return t_lose(losses[i].attr);
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
