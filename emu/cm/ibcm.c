/* SPDX-License-Identifier: MIT */
/* The IB CM protocol engine of a device (ibcm.h): QP1 and the kernel's
 * ib_cm state machine (drivers/infiniband/core/cm.c), the same messages,
 * timeouts, retry counts and answers to duplicates, stale and unknown
 * connections. One engine per device, run on the engine thread.
 *
 * Ids live in a table allocated at attach: slot i's comm ID is
 * (generation << IBCM_SLOT_BITS | i) ^ a random operand, so a lookup by
 * comm ID is one index and a comparison, and a slot's comm IDs do not
 * repeat for 2^20 uses. A destroyed id leaves its slot at once: if it
 * must wait out TIMEWAIT, a small record of the connection (ibcm_tw)
 * answers a late duplicate REQ, as the kernel's timewait_info outlives
 * its cm_id.
 *
 * What a peer sends decides no timer beyond the kernel's rdma_cm scale
 * (IBCM_MAX_RESP_T, IBCM_MAX_ACK_T), a passive connection not up within
 * IBCM_HALF_OPEN_MS is reclaimed, and requests from the wire pass the
 * per-source admission of ibcm_src.c before they take a slot
 * (docs/security.md, "CM resources"). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ibcm.h"
#include "ibcm_src.h"

#define IBCM_DEF_MAX_IDS   4096u
#define IBCM_MAX_IDS       4096u
#define IBCM_DEF_BACKLOG   128u
#define IBCM_SLOT_BITS     12u   /* IBCM_MAX_IDS == 1 << IBCM_SLOT_BITS */
#define IBCM_HI_TID        1ull  /* the kernel's MAD agent hi_tid: any constant */
#define IBCM_HOP_LIMIT     64u
#define IBCM_RATE_DEFAULT  3u    /* IB_RATE_10_GBPS, rdma_cm's iboe rate floor */
/* Time exponents a peer may give us (REQ response timeouts, MRA service
 * timeout, the ACK timeout our TIMEWAIT follows): at most the kernel
 * rdma_cm's own CMA_CM_RESPONSE_TIMEOUT, 4096 ms a try; 5 bits would
 * allow 2.4 hours (37 hours of REP retransmissions). */
#define IBCM_MAX_RESP_T    20u
#define IBCM_MAX_ACK_T     20u
/* A passive connection (REQ received, REP sent) not established this long
 * after its REQ came is reclaimed: the application never answered, or
 * the peer never sent its RTU (a half-open connection). */
#define IBCM_HALF_OPEN_MS  32000u

struct ibcm_slot {
	struct emu_ibcm_id id;       /* first: ids are slots */
	bool used;
	bool passive;                /* created by a REQ / SIDR_REQ */
	bool in_backlog;             /* counted in its listener's backlog */
	uint32_t gen;
	/* where the id's MADs go */
	struct emu_ibcm_path path;
	struct emu_av av;
	uint8_t av_timeout;          /* packet life time + 1: TIMEWAIT length */
	uint64_t remote_ca_guid;
	uint32_t local_qpn, remote_qpn;
	uint64_t tid;
	uint64_t dreq_tid;           /* DREP answers the DREQ's TID */
	uint32_t timeout_ms;         /* CM response timeout of a try */
	uint8_t max_cm_retries;
	uint64_t open_by;            /* passive: reclaimed if not up by then (0: none) */
	int32_t src;                 /* passive from the wire: ibcm_src entry, else -1 */
	/* listener */
	uint32_t backlog, nbacklog;
	struct ibcm_slot *listener;  /* in_backlog: whose backlog */
	/* the last MAD sent: resent on its timer (armed) and on duplicates */
	uint8_t mad[WIRE_MAD_LEN];
	bool armed;
	uint8_t retries_left;
	uint64_t deadline;           /* retransmission, or TIMEWAIT end */
	bool tw;                     /* deadline is the TIMEWAIT end */
};

/* A destroyed connection waiting out its TIMEWAIT (the kernel's
 * timewait_info): enough to answer a late duplicate of its REQ. */
struct ibcm_tw {
	uint32_t local_id, remote_id;
	uint64_t remote_ca_guid;
	uint64_t until;              /* 0: free */
};

struct emu_ibcm {
	struct emu_dev *dev;
	struct ibcm_slot *slot;
	uint32_t nslots, nused;
	struct ibcm_tw *tw;          /* nslots records, reused oldest first */
	uint32_t tw_next;
	struct ibcm_srcs *srcs;      /* per-source admission (ibcm_src.c) */
	uint32_t id_xor;             /* random comm ID operand */
	uint32_t default_backlog;
	uint32_t psn;
	uint64_t next_deadline;      /* lower bound of every armed timer */
	double loss;                 /* cfg.loss, and its PRNG */
	uint64_t loss_state;
	void (*trace)(struct emu_ibcm_id *id, enum emu_ibcm_state from,
		      enum emu_ibcm_state to, const char *why);
	struct emu_ibcm_counters cnt;
};

static const char *const ibcm_state_names[EMU_IBCM_STATE_NUM] = {
	"IDLE", "LISTEN", "REQ_SENT", "REQ_RCVD", "MRA_REQ_SENT", "MRA_REQ_RCVD",
	"REP_SENT", "REP_RCVD", "MRA_REP_SENT", "MRA_REP_RCVD", "ESTABLISHED",
	"DREQ_SENT", "DREQ_RCVD", "TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD",
};

static const char *const ibcm_event_names[EMU_IBCM_EVENT_NUM] = {
	"REQ_ERROR", "REQ_RECEIVED", "REP_ERROR", "REP_RECEIVED", "RTU_RECEIVED",
	"USER_ESTABLISHED", "DREQ_ERROR", "DREQ_RECEIVED", "DREP_RECEIVED",
	"TIMEWAIT_EXIT", "MRA_RECEIVED", "REJ_RECEIVED", "SIDR_REQ_ERROR",
	"SIDR_REQ_RECEIVED", "SIDR_REP_RECEIVED",
};

static const char *const ibcm_drop_names[EMU_IBCM_DROP_NUM] = {
	"malformed", "unknown-id", "bad-state", "duplicate", "bad-src", "unsupported",
	"not-qp1", "path-src", "own-guid", "rate-limit",
};

const char *emu_ibcm_state_name(enum emu_ibcm_state s)
{
	return (unsigned)s < EMU_IBCM_STATE_NUM ? ibcm_state_names[s] : "?";
}

const char *emu_ibcm_event_name(enum emu_ibcm_event_type t)
{
	return (unsigned)t < EMU_IBCM_EVENT_NUM ? ibcm_event_names[t] : "?";
}

const char *emu_ibcm_drop_name(enum emu_ibcm_drop r)
{
	return (unsigned)r < EMU_IBCM_DROP_NUM ? ibcm_drop_names[r] : "?";
}

static inline struct ibcm_slot *ibcm_slot_of(struct emu_ibcm_id *id)
{
	return (struct ibcm_slot *)id;
}

static uint64_t ibcm_guid(const struct emu_ibcm *cm)
{
	return be64toh(cm->dev->node_guid);
}

/* ------------------------------------------------------------------ */
/* ids                                                                 */
/* ------------------------------------------------------------------ */

static void ibcm_drop(struct emu_ibcm *cm, enum emu_ibcm_drop r)
{
	cm->cnt.drops[r]++;
	cm->dev->cnt.drops[EMU_DROP_GSI_MAD]++;
}

static struct ibcm_slot *ibcm_find_local(struct emu_ibcm *cm, uint32_t local_id)
{
	uint32_t i = (local_id ^ cm->id_xor) & (IBCM_MAX_IDS - 1);

	if (i >= cm->nslots || !cm->slot[i].used || cm->slot[i].id.local_id != local_id)
		return NULL;
	return &cm->slot[i];
}

static void ibcm_set_deadline(struct emu_ibcm *cm, struct ibcm_slot *s, uint64_t t, bool tw)
{
	s->deadline = t;
	s->tw = tw;
	if (t < cm->next_deadline)
		cm->next_deadline = t;
}

static void ibcm_backlog_leave(struct ibcm_slot *s)
{
	if (!s->in_backlog)
		return;
	s->in_backlog = false;
	if (s->listener && s->listener->nbacklog)
		s->listener->nbacklog--;
	s->listener = NULL;
}

/* a passive connection on its way up: in its listener's backlog, and
 * reclaimed when it does not come up in time (open_by) */
static bool ibcm_half_open(enum emu_ibcm_state st)
{
	return st == EMU_IBCM_REQ_RCVD || st == EMU_IBCM_MRA_REQ_SENT || st == EMU_IBCM_REP_SENT ||
	       st == EMU_IBCM_MRA_REP_RCVD || st == EMU_IBCM_SIDR_REQ_RCVD;
}

/* Every state change goes through here: backlog accounting and trace. */
static void ibcm_set_state(struct emu_ibcm *cm, struct ibcm_slot *s, enum emu_ibcm_state to,
			   const char *why)
{
	enum emu_ibcm_state from = s->id.state;

	s->id.state = to;
	if (!ibcm_half_open(to)) {
		ibcm_backlog_leave(s);
		s->open_by = 0;
	}
	if (cm->trace)
		cm->trace(&s->id, from, to, why);
}

/* the deadline of an id with no timer running: its half-open bound, or none */
static uint64_t ibcm_idle_deadline(const struct ibcm_slot *s)
{
	return s->open_by ? s->open_by : UINT64_MAX;
}

static struct ibcm_slot *ibcm_alloc(struct emu_ibcm *cm, emu_ibcm_handler h, void *ctx)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *s = &cm->slot[i];
		if (s->used)
			continue;
		uint32_t gen = s->gen + 1;
		if ((((gen << IBCM_SLOT_BITS) | i) ^ cm->id_xor) == 0)
			gen++; /* comm ID 0 means "not known yet" in REJ */
		memset(s, 0, sizeof(*s));
		s->gen = gen;
		s->used = true;
		s->src = -1;
		s->id.handler = h;
		s->id.context = ctx;
		s->id.cm = cm;
		s->id.state = EMU_IBCM_IDLE;
		s->id.remote_cm_qpn = WIRE_GSI_QPN;
		s->id.local_id = ((gen << IBCM_SLOT_BITS) | i) ^ cm->id_xor;
		s->deadline = UINT64_MAX;
		cm->nused++;
		return s;
	}
	return NULL;
}

static void ibcm_free(struct emu_ibcm *cm, struct ibcm_slot *s)
{
	ibcm_backlog_leave(s);
	/* children keep a pointer to their listener: forget it */
	if (s->id.state == EMU_IBCM_LISTEN)
		for (uint32_t i = 0; i < cm->nslots; i++)
			if (cm->slot[i].listener == s)
				cm->slot[i].listener = NULL;
	ibcm_src_release(cm->srcs, s->src);
	s->src = -1;
	s->used = false;
	s->armed = false;
	s->deadline = UINT64_MAX;
	cm->nused--;
}

struct emu_ibcm_id *emu_ibcm_create_id(struct emu_ibcm *cm, emu_ibcm_handler handler,
				       void *context)
{
	struct ibcm_slot *s = cm ? ibcm_alloc(cm, handler, context) : NULL;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	return &s->id;
}

/* Deliver ev to s's handler; a non-zero return destroys the id. */
static void ibcm_deliver(struct emu_ibcm *cm, struct ibcm_slot *s, const struct emu_ibcm_event *ev)
{
	uint32_t local_id = s->id.local_id;

	(void)cm;
	if (!s->id.handler)
		return;
	/* a handler that broke the rule and destroyed its own id, maybe
	 * reusing the slot, must not get the new id destroyed */
	if (s->id.handler(&s->id, ev) && s->used && s->id.local_id == local_id)
		emu_ibcm_destroy_id(&s->id);
}

/* ------------------------------------------------------------------ */
/* transmit                                                            */
/* ------------------------------------------------------------------ */

/* by attribute, and a REJ by its reason (uroce-stat) */
static void ibcm_count(uint64_t *attr, uint64_t *rej, uint16_t id, uint16_t reason)
{
	if (id >= WIRE_CM_ATTR_REQ && id < WIRE_CM_ATTR_REQ + EMU_IBCM_ATTR_SLOTS)
		attr[id - WIRE_CM_ATTR_REQ]++;
	if (id == WIRE_CM_ATTR_REJ)
		rej[reason < EMU_IBCM_REJ_REASONS ? reason : 0]++;
}

/* Send one MAD along av. The frame is built into a port buffer; a MAD
 * that cannot leave now (no buffer, neighbour unresolved) is counted and
 * left to its retransmission timer, as a lost one would be. */
static int ibcm_tx(struct emu_ibcm *cm, struct emu_av *av, const uint8_t *mad)
{
	struct emu_dev *d = cm->dev;
	struct emu_txbuf b;
	struct wire_pkt p;
	size_t len;

	if (emu_rand_coin(&cm->loss_state, cm->loss)) {
		cm->cnt.loss_tx++;
		return 0;
	}
	if (!emu_av_refresh(d, av)) {
		cm->cnt.tx_fail++;
		return -EAGAIN;
	}
	wire_gsi_pkt_init(&p, av->ipv6 ? 6 : 4, mad, cm->psn++);
	memcpy(p.dmac, av->dmac, 6);
	memcpy(p.smac, d->mac, 6);
	memcpy(p.ip.src.raw, av->sgid.raw, 16);
	memcpy(p.ip.dst.raw, av->dgid.raw, 16);
	p.ip.tos = av->traffic_class;
	p.ip.ttl = av->hop_limit ? av->hop_limit : IBCM_HOP_LIMIT;
	if (av->ipv6)
		p.ip.flow_label = av->flow_label;
	else
		p.ip.id = d->ip_id++;
	p.udp.sport = wire_udp_sport(WIRE_GSI_QPN);
	if (emu_tx_alloc(d, &b)) {
		cm->cnt.tx_fail++;
		return -ENOBUFS;
	}
	if (wire_build(&p, b.data, b.cap, 0, &len)) {
		emu_tx_free(d, &b);
		cm->cnt.tx_fail++;
		return -ENOBUFS;
	}
	emu_tx_send(d, &b, (uint32_t)len);
	cm->cnt.tx_mads++;
	/* the MAD header's attribute ID, a REJ's reason at its offset 10 */
	ibcm_count(cm->cnt.tx_attr, cm->cnt.rej_tx, (uint16_t)(mad[16] << 8 | mad[17]),
		   (uint16_t)(mad[34] << 8 | mad[35]));
	return 0;
}

/* attr_mod: the ECE options of REQ, REP and SIDR_REP, 0 for the rest */
static void ibcm_encode(uint8_t *out, struct wire_cm_msg *m, uint16_t attr, uint64_t tid,
			uint32_t attr_mod)
{
	struct wire_mad_hdr h;

	m->attr = attr;
	wire_mad_hdr_init_cm(&h, attr, tid);
	h.attr_mod = attr_mod;
	wire_mad_encode(out, &h, m);
}

/* Build a MAD into s->mad and send it; with retries, arm its timer. */
static void ibcm_send_slot(struct emu_ibcm *cm, struct ibcm_slot *s, struct wire_cm_msg *m,
			   uint16_t attr, uint64_t tid, uint32_t attr_mod, bool retry)
{
	ibcm_encode(s->mad, m, attr, tid, attr_mod);
	s->armed = retry;
	if (retry) {
		uint64_t t = emu_now_ns() + (uint64_t)s->timeout_ms * 1000000ull;
		s->retries_left = s->max_cm_retries;
		ibcm_set_deadline(cm, s, s->open_by && s->open_by < t ? s->open_by : t, false);
	} else if (!s->tw) {
		s->deadline = ibcm_idle_deadline(s);
	}
	ibcm_tx(cm, &s->av, s->mad);
}

static void ibcm_stop_timer(struct ibcm_slot *s)
{
	s->armed = false;
	if (!s->tw)
		s->deadline = ibcm_idle_deadline(s); /* never earlier than it was */
}

/* The address an answer to pkt goes to (the sender's), as the kernel's
 * cm_init_av_for_response does. */
static void ibcm_av_from_pkt(struct emu_av *av, const struct wire_pkt *pkt)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid.raw, pkt->ip.src.raw, 16);
	memcpy(av->sgid.raw, pkt->ip.dst.raw, 16);
	memcpy(av->dmac, pkt->smac, 6);
	av->mac_valid = 1;
	av->ipv6 = pkt->ip.version == 6;
	av->traffic_class = pkt->ip.tos;
	av->hop_limit = IBCM_HOP_LIMIT;
	av->flow_label = pkt->ip.flow_label;
}

static void ibcm_pdata(struct wire_cm_msg *m, const void *p, uint8_t len)
{
	if (p && len)
		memcpy(m->pdata, p, len);
}

/* A stateless answer (REJ for a REQ nobody takes, DREP for a DREQ to
 * nobody) to the sender of pkt. */
static void ibcm_answer(struct emu_ibcm *cm, const struct wire_pkt *pkt, struct wire_cm_msg *m,
			uint16_t attr, uint64_t tid)
{
	uint8_t mad[WIRE_MAD_LEN];
	struct emu_av av;

	ibcm_av_from_pkt(&av, pkt);
	ibcm_encode(mad, m, attr, tid, 0);
	ibcm_tx(cm, &av, mad);
}

static void ibcm_rej_pkt(struct emu_ibcm *cm, const struct wire_pkt *pkt, uint64_t tid,
			 uint32_t local_id, uint32_t remote_id, unsigned msg_rejected,
			 enum wire_cm_rej_reason reason)
{
	struct wire_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = remote_id;
	m.v[WIRE_CM_F_MSG_REJECTED] = msg_rejected;
	m.v[WIRE_CM_F_REJ_REASON] = reason;
	ibcm_answer(cm, pkt, &m, WIRE_CM_ATTR_REJ, tid);
}

/* ------------------------------------------------------------------ */
/* TIMEWAIT                                                            */
/* ------------------------------------------------------------------ */

static void ibcm_enter_timewait(struct emu_ibcm *cm, struct ibcm_slot *s, const char *why)
{
	ibcm_set_state(cm, s, EMU_IBCM_TIMEWAIT, why);
	s->armed = false;
	ibcm_set_deadline(cm, s, emu_now_ns() + (uint64_t)emu_ibcm_time_ms(s->av_timeout) * 1000000ull,
			  true);
}

static void ibcm_timewait_exit(struct emu_ibcm *cm, struct ibcm_slot *s)
{
	struct emu_ibcm_event ev = { .event = EMU_IBCM_TIMEWAIT_EXIT };

	s->tw = false;
	s->deadline = UINT64_MAX;
	ibcm_set_state(cm, s, EMU_IBCM_IDLE, "timewait-exit");
	ibcm_deliver(cm, s, &ev);
}

/* ------------------------------------------------------------------ */
/* timers                                                              */
/* ------------------------------------------------------------------ */

/* The send of s->mad ran out of retries: the kernel's cm_process_send_error. */
static void ibcm_send_error(struct emu_ibcm *cm, struct ibcm_slot *s)
{
	struct emu_ibcm_event ev = { .param.send_status = -ETIMEDOUT };

	cm->cnt.timeouts++;
	s->armed = false;
	s->deadline = UINT64_MAX;
	switch (s->id.state) {
	case EMU_IBCM_REQ_SENT:
	case EMU_IBCM_MRA_REQ_RCVD:
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "req-timeout");
		ev.event = EMU_IBCM_REQ_ERROR;
		break;
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "rep-timeout");
		ev.event = EMU_IBCM_REP_ERROR;
		break;
	case EMU_IBCM_DREQ_SENT:
		ibcm_enter_timewait(cm, s, "dreq-timeout");
		ev.event = EMU_IBCM_DREQ_ERROR;
		break;
	case EMU_IBCM_SIDR_REQ_SENT:
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "sidr-timeout");
		ev.event = EMU_IBCM_SIDR_REQ_ERROR;
		break;
	default:
		return;
	}
	ibcm_deliver(cm, s, &ev);
}

/* A passive connection not up within IBCM_HALF_OPEN_MS of its REQ: with
 * its REP sent it ends as if the REP had run out of retries (REP_ERROR);
 * a request nobody answered is rejected, as destroying it would (consumer
 * defined: REJ timeout would name an active side), and its id gets
 * REQ_ERROR; a SIDR request goes unanswered (SIDR_REQ_ERROR). */
static void ibcm_reclaim(struct emu_ibcm *cm, struct ibcm_slot *s)
{
	struct emu_ibcm_event ev = { .param.send_status = -ETIMEDOUT };

	cm->cnt.half_open_reclaimed++;
	switch (s->id.state) {
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
		s->open_by = 0;
		ibcm_send_error(cm, s);
		return;
	case EMU_IBCM_REQ_RCVD:
	case EMU_IBCM_MRA_REQ_SENT:
		emu_ibcm_send_rej(&s->id, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		ev.event = EMU_IBCM_REQ_ERROR;
		break;
	default:
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "sidr-unanswered");
		ev.event = EMU_IBCM_SIDR_REQ_ERROR;
		break;
	}
	s->deadline = UINT64_MAX;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_slot_timer(struct emu_ibcm *cm, struct ibcm_slot *s, uint64_t now)
{
	if (s->tw) {
		ibcm_timewait_exit(cm, s);
		return;
	}
	if (s->open_by && now >= s->open_by) {
		ibcm_reclaim(cm, s);
		return;
	}
	if (!s->armed) {
		s->deadline = ibcm_idle_deadline(s);
		return;
	}
	if (!s->retries_left) {
		ibcm_send_error(cm, s);
		return;
	}
	s->retries_left--;
	cm->cnt.retransmits++;
	s->deadline = now + (uint64_t)s->timeout_ms * 1000000ull;
	if (s->open_by && s->open_by < s->deadline)
		s->deadline = s->open_by;
	ibcm_tx(cm, &s->av, s->mad);
}

static void ibcm_poll(struct emu_dev *d, uint64_t now)
{
	struct emu_ibcm *cm = d->gsi_priv;
	uint64_t next = UINT64_MAX;

	if (!cm || now < cm->next_deadline)
		return;
	cm->next_deadline = UINT64_MAX; /* handlers may arm timers meanwhile */
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *s = &cm->slot[i];
		if (!s->used || s->deadline == UINT64_MAX)
			continue;
		if (s->deadline <= now)
			ibcm_slot_timer(cm, s, now);
		if (s->used && s->deadline < next)
			next = s->deadline;
	}
	if (next < cm->next_deadline)
		cm->next_deadline = next;
}

static uint64_t ibcm_next_deadline(struct emu_dev *d)
{
	struct emu_ibcm *cm = d->gsi_priv;

	return cm ? cm->next_deadline : UINT64_MAX;
}

void emu_ibcm_poll(struct emu_dev *d, uint64_t now_ns)
{
	ibcm_poll(d, now_ns);
}

uint64_t emu_ibcm_next_deadline(struct emu_dev *d)
{
	return ibcm_next_deadline(d);
}

/* ------------------------------------------------------------------ */
/* sending (ib_send_cm_*)                                              */
/* ------------------------------------------------------------------ */

/* Resolve a consumer's path into the id's address vector. */
static int ibcm_path_av(struct emu_ibcm *cm, const struct emu_ibcm_path *p, struct emu_av *av)
{
	struct ibv_ah_attr a;
	int idx = emu_gid_find(cm->dev, &p->sgid);

	if (idx < 0)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.sl = p->sl;
	a.grh.dgid = p->dgid;
	a.grh.sgid_index = (uint8_t)idx;
	a.grh.hop_limit = p->hop_limit ? p->hop_limit : IBCM_HOP_LIMIT;
	a.grh.traffic_class = p->traffic_class;
	a.grh.flow_label = p->flow_label;
	if (emu_av_resolve(cm->dev, &a, av))
		return -EINVAL;
	if (p->dmac_valid) {
		memcpy(av->dmac, p->dmac, 6);
		av->mac_valid = 1;
	}
	return 0;
}

static uint8_t ibcm_ack_timeout(uint8_t packet_life_time)
{
	return packet_life_time >= 31 ? 31 : packet_life_time + 1;
}

static void ibcm_format_req(struct emu_ibcm *cm, struct ibcm_slot *s,
			    const struct emu_ibcm_req_param *p, struct wire_cm_msg *m)
{
	const struct emu_ibcm_path *pp = &p->primary_path;

	memset(m, 0, sizeof(*m));
	m->v[WIRE_CM_F_LOCAL_COMM_ID] = s->id.local_id;
	m->v[WIRE_CM_F_SERVICE_ID] = p->service_id;
	m->v[WIRE_CM_F_LOCAL_CA_GUID] = ibcm_guid(cm);
	m->v[WIRE_CM_F_LOCAL_QPN] = p->qp_num & WIRE_QPN_MASK;
	m->v[WIRE_CM_F_RESPONDER_RESOURCES] = p->responder_resources;
	m->v[WIRE_CM_F_INITIATOR_DEPTH] = p->initiator_depth;
	m->v[WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT] = p->remote_cm_response_timeout;
	m->v[WIRE_CM_F_TRANSPORT_TYPE] = p->qp_type == IBV_QPT_UC ? 1 : 0;
	m->v[WIRE_CM_F_E2E_FLOW_CONTROL] = p->flow_control;
	m->v[WIRE_CM_F_STARTING_PSN] = p->starting_psn & WIRE_PSN_MASK;
	m->v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT] = p->local_cm_response_timeout;
	m->v[WIRE_CM_F_RETRY_COUNT] = p->retry_count;
	m->v[WIRE_CM_F_PKEY] = WIRE_GSI_PKEY;
	m->v[WIRE_CM_F_PATH_MTU] = pp->mtu;
	m->v[WIRE_CM_F_RNR_RETRY_COUNT] = p->rnr_retry_count;
	m->v[WIRE_CM_F_MAX_CM_RETRIES] = p->max_cm_retries;
	m->v[WIRE_CM_F_SRQ] = p->srq;
	/* a global (routed) path: permissive LIDs, as the kernel formats RoCE */
	m->v[WIRE_CM_F_PRI_LOCAL_LID] = 0xFFFF;
	m->v[WIRE_CM_F_PRI_REMOTE_LID] = 0xFFFF;
	m->v[WIRE_CM_F_PRI_FLOW_LABEL] = pp->flow_label;
	m->v[WIRE_CM_F_PRI_PACKET_RATE] = pp->rate ? pp->rate : IBCM_RATE_DEFAULT;
	m->v[WIRE_CM_F_PRI_TRAFFIC_CLASS] = pp->traffic_class;
	m->v[WIRE_CM_F_PRI_HOP_LIMIT] = pp->hop_limit ? pp->hop_limit : IBCM_HOP_LIMIT;
	m->v[WIRE_CM_F_PRI_SL] = pp->sl;
	m->v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT] = ibcm_ack_timeout(pp->packet_life_time);
	memcpy(m->gid[0], pp->sgid.raw, 16);
	memcpy(m->gid[1], pp->dgid.raw, 16);
	m->v[WIRE_CM_F_VENDOR_ID] = p->ece.vendor_id & 0xFFFFFF;
	ibcm_pdata(m, p->private_data, p->private_data_len);
}

int emu_ibcm_send_req(struct emu_ibcm_id *id, const struct emu_ibcm_req_param *p)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct emu_ibcm *cm = id->cm;
	struct wire_cm_msg m;

	if (!p || id->state != EMU_IBCM_IDLE || p->private_data_len > WIRE_CM_REQ_PDATA ||
	    (p->qp_type != IBV_QPT_RC && p->qp_type != IBV_QPT_UC) ||
	    p->primary_path.mtu < IBV_MTU_256 || p->primary_path.mtu > IBV_MTU_4096)
		return -EINVAL;
	if (ibcm_path_av(cm, &p->primary_path, &s->av))
		return -EINVAL;
	s->path = p->primary_path;
	s->av_timeout = ibcm_ack_timeout(p->primary_path.packet_life_time);
	s->local_qpn = p->qp_num & WIRE_QPN_MASK;
	s->max_cm_retries = p->max_cm_retries & 0xF;
	/* the kernel's cm_send_req: 2 packet life times + the peer's response time */
	s->timeout_ms = emu_ibcm_time_ms(p->primary_path.packet_life_time) * 2 +
			emu_ibcm_time_ms(p->remote_cm_response_timeout);
	id->service_id = p->service_id;
	s->tid = IBCM_HI_TID << 32 | id->local_id;
	ibcm_format_req(cm, s, p, &m);
	ibcm_set_state(cm, s, EMU_IBCM_REQ_SENT, "send-req");
	ibcm_send_slot(cm, s, &m, WIRE_CM_ATTR_REQ, s->tid, p->ece.attr_mod, true);
	return 0;
}

int emu_ibcm_send_rep(struct emu_ibcm_id *id, const struct emu_ibcm_rep_param *p)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct emu_ibcm *cm = id->cm;
	struct wire_cm_msg m;

	if (!p || (id->state != EMU_IBCM_REQ_RCVD && id->state != EMU_IBCM_MRA_REQ_SENT) ||
	    p->private_data_len > WIRE_CM_REP_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = id->remote_id;
	m.v[WIRE_CM_F_LOCAL_QPN] = p->qp_num & WIRE_QPN_MASK;
	m.v[WIRE_CM_F_STARTING_PSN] = p->starting_psn & WIRE_PSN_MASK;
	m.v[WIRE_CM_F_RESPONDER_RESOURCES] = p->responder_resources;
	m.v[WIRE_CM_F_INITIATOR_DEPTH] = p->initiator_depth;
	m.v[WIRE_CM_F_TARGET_ACK_DELAY] = cm->dev->dev_attr.local_ca_ack_delay;
	m.v[WIRE_CM_F_FAILOVER_ACCEPTED] = p->failover_accepted;
	m.v[WIRE_CM_F_E2E_FLOW_CONTROL] = p->flow_control;
	m.v[WIRE_CM_F_RNR_RETRY_COUNT] = p->rnr_retry_count;
	m.v[WIRE_CM_F_SRQ] = p->srq;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = ibcm_guid(cm);
	m.v[WIRE_CM_F_VENDOR_ID] = p->ece.vendor_id & 0xFFFFFF;
	ibcm_pdata(&m, p->private_data, p->private_data_len);
	s->local_qpn = p->qp_num & WIRE_QPN_MASK;
	ibcm_set_state(cm, s, EMU_IBCM_REP_SENT, "send-rep");
	ibcm_send_slot(cm, s, &m, WIRE_CM_ATTR_REP, s->tid, p->ece.attr_mod, true);
	return 0;
}

int emu_ibcm_send_rtu(struct emu_ibcm_id *id, const void *pdata, uint8_t len)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct wire_cm_msg m;

	if ((id->state != EMU_IBCM_REP_RCVD && id->state != EMU_IBCM_MRA_REP_SENT) ||
	    len > WIRE_CM_RTU_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = id->remote_id;
	ibcm_pdata(&m, pdata, len);
	ibcm_set_state(id->cm, s, EMU_IBCM_ESTABLISHED, "send-rtu");
	/* kept in s->mad: a duplicate REP is answered with it */
	ibcm_send_slot(id->cm, s, &m, WIRE_CM_ATTR_RTU, s->tid, 0, false);
	return 0;
}

int emu_ibcm_send_dreq(struct emu_ibcm_id *id, const void *pdata, uint8_t len)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct wire_cm_msg m;

	if (id->state != EMU_IBCM_ESTABLISHED || len > WIRE_CM_DREQ_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = id->remote_id;
	m.v[WIRE_CM_F_REMOTE_QPN] = s->remote_qpn;
	ibcm_pdata(&m, pdata, len);
	s->tid = IBCM_HI_TID << 32 | id->local_id;
	ibcm_set_state(id->cm, s, EMU_IBCM_DREQ_SENT, "send-dreq");
	ibcm_send_slot(id->cm, s, &m, WIRE_CM_ATTR_DREQ, s->tid, 0, true);
	return 0;
}

static void ibcm_format_drep(struct ibcm_slot *s, struct wire_cm_msg *m, const void *pdata,
			     uint8_t len)
{
	memset(m, 0, sizeof(*m));
	m->v[WIRE_CM_F_LOCAL_COMM_ID] = s->id.local_id;
	m->v[WIRE_CM_F_REMOTE_COMM_ID] = s->id.remote_id;
	ibcm_pdata(m, pdata, len);
}

int emu_ibcm_send_drep(struct emu_ibcm_id *id, const void *pdata, uint8_t len)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct wire_cm_msg m;

	if (id->state != EMU_IBCM_DREQ_RCVD || len > WIRE_CM_DREP_PDATA)
		return -EINVAL;
	ibcm_format_drep(s, &m, pdata, len);
	ibcm_enter_timewait(id->cm, s, "send-drep");
	/* kept in s->mad: a DREQ in TIMEWAIT is answered with it */
	ibcm_send_slot(id->cm, s, &m, WIRE_CM_ATTR_DREP, s->dreq_tid, 0, false);
	return 0;
}

int emu_ibcm_send_rej(struct emu_ibcm_id *id, enum wire_cm_rej_reason reason, const void *ari,
		      uint8_t ari_len, const void *pdata, uint8_t len)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct emu_ibcm *cm = id->cm;
	struct wire_cm_msg m;
	unsigned rejected = 2; /* CM_MSG_RESPONSE_OTHER */
	uint32_t local = id->local_id;
	enum emu_ibcm_state st = id->state;

	if (ari_len > WIRE_CM_INFO_LEN || len > WIRE_CM_REJ_PDATA)
		return -EINVAL;
	switch (st) {
	case EMU_IBCM_REQ_RCVD:
		local = 0; /* the kernel's cm_format_rej: not announced yet */
		rejected = 0;
		break;
	case EMU_IBCM_MRA_REQ_SENT:
		rejected = 0;
		break;
	case EMU_IBCM_REP_RCVD:
	case EMU_IBCM_MRA_REP_SENT:
		rejected = 1;
		break;
	case EMU_IBCM_REQ_SENT:
	case EMU_IBCM_MRA_REQ_RCVD:
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
		break;
	default:
		return -EINVAL;
	}
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = local;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = id->remote_id;
	m.v[WIRE_CM_F_MSG_REJECTED] = rejected;
	m.v[WIRE_CM_F_REJ_REASON] = reason;
	m.v[WIRE_CM_F_REJ_INFO_LEN] = ari_len;
	if (ari && ari_len)
		memcpy(m.info, ari, ari_len);
	ibcm_pdata(&m, pdata, len);
	ibcm_stop_timer(s);
	if (st == EMU_IBCM_REP_SENT || st == EMU_IBCM_MRA_REP_RCVD)
		ibcm_enter_timewait(cm, s, "send-rej");
	else
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "send-rej");
	ibcm_send_slot(cm, s, &m, WIRE_CM_ATTR_REJ, s->tid, 0, false);
	return 0;
}

int emu_ibcm_send_mra(struct emu_ibcm_id *id, uint8_t service_timeout, const void *pdata,
		      uint8_t len)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct wire_cm_msg m;
	unsigned mraed;
	enum emu_ibcm_state to;

	if (len > WIRE_CM_MRA_PDATA)
		return -EINVAL;
	if (id->state == EMU_IBCM_REQ_RCVD) {
		mraed = 0;
		to = EMU_IBCM_MRA_REQ_SENT;
	} else if (id->state == EMU_IBCM_REP_RCVD) {
		mraed = 1;
		to = EMU_IBCM_MRA_REP_SENT;
	} else {
		return -EINVAL;
	}
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->local_id;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = id->remote_id;
	m.v[WIRE_CM_F_MSG_MRAED] = mraed;
	m.v[WIRE_CM_F_SERVICE_TIMEOUT] = service_timeout & 0x1F;
	ibcm_pdata(&m, pdata, len);
	ibcm_set_state(id->cm, s, to, "send-mra");
	/* kept in s->mad: a duplicate REQ/REP is answered with it */
	ibcm_send_slot(id->cm, s, &m, WIRE_CM_ATTR_MRA, s->tid, 0, false);
	return 0;
}

int emu_ibcm_send_sidr_req(struct emu_ibcm_id *id, const struct emu_ibcm_sidr_req_param *p)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct emu_ibcm *cm = id->cm;
	struct wire_cm_msg m;

	if (!p || id->state != EMU_IBCM_IDLE || p->private_data_len > WIRE_CM_SIDR_REQ_PDATA)
		return -EINVAL;
	if (ibcm_path_av(cm, &p->path, &s->av))
		return -EINVAL;
	s->path = p->path;
	s->max_cm_retries = p->max_cm_retries & 0xF;
	s->timeout_ms = p->timeout_ms ? p->timeout_ms : 1;
	id->service_id = p->service_id;
	s->tid = IBCM_HI_TID << 32 | id->local_id;
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->local_id;
	m.v[WIRE_CM_F_PKEY] = WIRE_GSI_PKEY;
	m.v[WIRE_CM_F_SERVICE_ID] = p->service_id;
	ibcm_pdata(&m, p->private_data, p->private_data_len);
	ibcm_set_state(cm, s, EMU_IBCM_SIDR_REQ_SENT, "send-sidr-req");
	ibcm_send_slot(cm, s, &m, WIRE_CM_ATTR_SIDR_REQ, s->tid, 0, true);
	return 0;
}

int emu_ibcm_send_sidr_rep(struct emu_ibcm_id *id, const struct emu_ibcm_sidr_rep_param *p)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct wire_cm_msg m;

	if (!p || id->state != EMU_IBCM_SIDR_REQ_RCVD || p->info_length > WIRE_CM_INFO_LEN ||
	    p->private_data_len > WIRE_CM_SIDR_REP_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = id->remote_id; /* the request ID */
	m.v[WIRE_CM_F_STATUS] = p->status;
	m.v[WIRE_CM_F_ADD_INFO_LEN] = p->info_length;
	m.v[WIRE_CM_F_LOCAL_QPN] = p->qp_num & WIRE_QPN_MASK;
	m.v[WIRE_CM_F_SERVICE_ID] = id->service_id;
	m.v[WIRE_CM_F_LOCAL_QKEY] = p->qkey;
	m.v[WIRE_CM_F_VENDOR_ID] = p->ece.vendor_id & 0xFFFFFF;
	if (p->info && p->info_length)
		memcpy(m.info, p->info, p->info_length);
	ibcm_pdata(&m, p->private_data, p->private_data_len);
	ibcm_set_state(id->cm, s, EMU_IBCM_IDLE, "send-sidr-rep");
	ibcm_send_slot(id->cm, s, &m, WIRE_CM_ATTR_SIDR_REP, s->tid, p->ece.attr_mod, false);
	return 0;
}

int emu_ibcm_notify(struct emu_ibcm_id *id, enum ibv_event_type ev)
{
	struct ibcm_slot *s = ibcm_slot_of(id);
	struct emu_ibcm_event e = { .event = EMU_IBCM_USER_ESTABLISHED };

	if (ev != IBV_EVENT_COMM_EST)
		return -EINVAL;
	if (id->state != EMU_IBCM_REP_SENT && id->state != EMU_IBCM_MRA_REP_RCVD)
		return id->state == EMU_IBCM_ESTABLISHED ? 0 : -EINVAL;
	ibcm_stop_timer(s);
	ibcm_set_state(id->cm, s, EMU_IBCM_ESTABLISHED, "notify-comm-est");
	ibcm_deliver(id->cm, s, &e);
	return 0;
}

int emu_ibcm_get_path(const struct emu_ibcm_id *id, struct emu_ibcm_path *out)
{
	const struct ibcm_slot *s = (const struct ibcm_slot *)id;

	if (id->state == EMU_IBCM_IDLE || id->state == EMU_IBCM_LISTEN)
		return -EINVAL;
	*out = s->path;
	return 0;
}

int emu_ibcm_listen(struct emu_ibcm_id *id, uint64_t service_id, uint64_t service_mask,
		    uint32_t backlog)
{
	struct emu_ibcm *cm = id->cm;
	struct ibcm_slot *s = ibcm_slot_of(id);

	if (id->state != EMU_IBCM_IDLE)
		return -EINVAL;
	if (!service_mask)
		service_mask = ~0ull;
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *o = &cm->slot[i];
		if (!o->used || o->id.state != EMU_IBCM_LISTEN)
			continue;
		uint64_t mk = o->id.service_mask & service_mask;
		if ((o->id.service_id & mk) == (service_id & mk))
			return -EBUSY;
	}
	id->service_id = service_id & service_mask;
	id->service_mask = service_mask;
	s->backlog = backlog ? backlog : cm->default_backlog;
	ibcm_set_state(cm, s, EMU_IBCM_LISTEN, "listen");
	return 0;
}

/* A destroyed connection's TIMEWAIT, kept without its slot: the oldest
 * record makes room when all are taken (it then only loses the answer to
 * a late duplicate REQ, which becomes a new request). */
static void ibcm_tw_add(struct emu_ibcm *cm, const struct ibcm_slot *s)
{
	struct ibcm_tw *t = &cm->tw[cm->tw_next++ % cm->nslots];

	t->local_id = s->id.local_id;
	t->remote_id = s->id.remote_id;
	t->remote_ca_guid = s->remote_ca_guid;
	t->until = s->deadline;
}

/* the record of a connection in TIMEWAIT with that remote comm ID and CA */
static const struct ibcm_tw *ibcm_tw_find(const struct emu_ibcm *cm, uint32_t rid, uint64_t guid)
{
	uint64_t now = emu_now_ns();

	for (uint32_t i = 0; i < cm->nslots; i++) {
		const struct ibcm_tw *t = &cm->tw[i];
		if (t->until > now && t->remote_id == rid && t->remote_ca_guid == guid)
			return t;
	}
	return NULL;
}

void emu_ibcm_destroy_id(struct emu_ibcm_id *id)
{
	struct ibcm_slot *s;
	struct emu_ibcm *cm;
	uint64_t guid;

	if (!id)
		return;
	s = ibcm_slot_of(id);
	cm = id->cm;
	if (!s->used)
		return;
	guid = cm->dev->node_guid; /* the ARI of REJ(timeout): our CA GUID, network order */
	switch (id->state) {
	case EMU_IBCM_REQ_SENT:
	case EMU_IBCM_MRA_REQ_RCVD:
		emu_ibcm_send_rej(id, WIRE_CM_REJ_TIMEOUT, &guid, sizeof(guid), NULL, 0);
		break;
	case EMU_IBCM_REQ_RCVD:
	case EMU_IBCM_MRA_REQ_SENT:
	case EMU_IBCM_REP_RCVD:
	case EMU_IBCM_MRA_REP_SENT:
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
		emu_ibcm_send_rej(id, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		break;
	case EMU_IBCM_ESTABLISHED:
		/* one DREQ, not retried: the id is going away (the kernel
		 * cancels the DREQ's MAD and enters TIMEWAIT) */
		emu_ibcm_send_dreq(id, NULL, 0);
		ibcm_enter_timewait(cm, s, "destroy");
		break;
	case EMU_IBCM_DREQ_SENT:
		ibcm_enter_timewait(cm, s, "destroy");
		break;
	case EMU_IBCM_DREQ_RCVD:
		emu_ibcm_send_drep(id, NULL, 0);
		break;
	case EMU_IBCM_SIDR_REQ_RCVD: {
		struct emu_ibcm_sidr_rep_param rp = { .status = WIRE_CM_SIDR_REJECT };
		emu_ibcm_send_sidr_rep(id, &rp);
		break;
	}
	default:
		break;
	}
	/* the slot goes at once (a client that exits leaves none behind);
	 * a connection in TIMEWAIT leaves its record */
	if (id->state == EMU_IBCM_TIMEWAIT)
		ibcm_tw_add(cm, s);
	ibcm_free(cm, s);
}

/* ------------------------------------------------------------------ */
/* receiving: one function per message, a switch on the id's state     */
/* ------------------------------------------------------------------ */

struct ibcm_rx {
	const struct wire_pkt *pkt;
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
};

/* the MAD came from the address s's connection is with */
static bool ibcm_from_addr(const struct ibcm_slot *s, const struct ibcm_rx *r)
{
	return !memcmp(r->pkt->ip.src.raw, s->av.dgid.raw, 16);
}

static bool ibcm_from_peer(struct emu_ibcm *cm, struct ibcm_slot *s, const struct ibcm_rx *r)
{
	if (ibcm_from_addr(s, r))
		return true;
	ibcm_drop(cm, EMU_IBCM_DROP_BAD_SRC);
	return false;
}

/* A source of ours: a frame of this device (the loopback port, the
 * port's self loop; frames from the wire with one of our addresses as
 * their source never get here, transport/rx.c). */
static bool ibcm_local_src(const struct emu_ibcm *cm, const struct wire_pkt *pkt)
{
	union ibv_gid g;

	memcpy(g.raw, pkt->ip.src.raw, 16);
	return cm->dev->loopback || emu_gid_find(cm->dev, &g) >= 0;
}

/* May a request (REQ, SIDR_REQ) take a slot: a local one always (the
 * rdma_cm charges it to its user), one from the wire if its source is
 * within its rate and budget (ibcm_src.c). False: dropped (rate) or
 * answered by *rej (REJ 3 / SIDR_REP reject) with its counter counted. */
static bool ibcm_admit(struct emu_ibcm *cm, const struct ibcm_rx *r, int32_t *src, bool *rej)
{
	union ibv_gid g;

	*src = -1;
	*rej = false;
	if (ibcm_local_src(cm, r->pkt))
		return true;
	memcpy(g.raw, r->pkt->ip.src.raw, 16);
	switch (ibcm_src_admit(cm->srcs, &g, emu_now_ns(), cm->nslots / 4, src)) {
	case IBCM_SRC_OK:
		return true;
	case IBCM_SRC_RATE_LIMITED:
		ibcm_drop(cm, EMU_IBCM_DROP_RATE);
		return false;
	case IBCM_SRC_BUSY:
		cm->cnt.rej_src_busy++;
		break;
	case IBCM_SRC_TABLE_FULL:
		cm->cnt.rej_src_table++;
		break;
	}
	*rej = true;
	return false;
}

/* a time exponent a peer gave us, within the kernel rdma_cm's scale */
static uint8_t ibcm_peer_t(uint64_t t, uint8_t max)
{
	return (uint8_t)(t < max ? t : max);
}

static void ibcm_resend(struct emu_ibcm *cm, struct ibcm_slot *s)
{
	cm->cnt.dup_answered++;
	ibcm_tx(cm, &s->av, s->mad);
}

static struct ibcm_slot *ibcm_find_listener(struct emu_ibcm *cm, uint64_t sid)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *l = &cm->slot[i];
		if (l->used && l->id.state == EMU_IBCM_LISTEN &&
		    (sid & l->id.service_mask) == l->id.service_id)
			return l;
	}
	return NULL;
}

/* A REQ we already have a connection for (same remote comm ID and CA):
 * the kernel's cm_dup_req_handler, and REP resent while it is unanswered. */
static void ibcm_dup_req(struct emu_ibcm *cm, struct ibcm_slot *s, const struct ibcm_rx *r)
{
	switch (s->id.state) {
	case EMU_IBCM_MRA_REQ_SENT:
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
		ibcm_resend(cm, s); /* the MRA or the REP */
		return;
	case EMU_IBCM_TIMEWAIT: /* cm_format_rej in TIMEWAIT: message "other" */
		cm->cnt.rej_stale++;
		ibcm_rej_pkt(cm, r->pkt, r->h.tid, s->id.local_id, s->id.remote_id, 2,
			     WIRE_CM_REJ_STALE_CONN);
		return;
	default:
		ibcm_drop(cm, EMU_IBCM_DROP_DUPLICATE);
	}
}

/* A REQ from a QP that still has a connection here: the kernel rejects it
 * as stale and disconnects the old one. True if handled. */
static bool ibcm_stale_req(struct emu_ibcm *cm, const struct ibcm_rx *r, uint32_t rid,
			   uint64_t guid, uint32_t rqpn)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *s = &cm->slot[i];
		if (!s->used || !s->passive || s->remote_ca_guid != guid ||
		    s->remote_qpn != rqpn || s->id.state == EMU_IBCM_IDLE ||
		    s->id.state == EMU_IBCM_TIMEWAIT || s->id.state == EMU_IBCM_SIDR_REQ_RCVD)
			continue;
		if (s->id.remote_id == rid)
			continue;
		cm->cnt.rej_stale++;
		ibcm_rej_pkt(cm, r->pkt, r->h.tid, 0, rid, 0, WIRE_CM_REJ_STALE_CONN);
		/* the old connection ends only when the REQ comes from its
		 * peer's address: anyone can claim a CA GUID and a QPN */
		if (s->id.state == EMU_IBCM_ESTABLISHED && ibcm_from_addr(s, r))
			emu_ibcm_send_dreq(&s->id, NULL, 0);
		return true;
	}
	return false;
}

static void ibcm_path_from_req(struct emu_ibcm_path *p, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	uint8_t ack = (uint8_t)m->v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT];

	memset(p, 0, sizeof(*p));
	memcpy(p->sgid.raw, m->gid[1], 16); /* the REQ's remote is us */
	memcpy(p->dgid.raw, m->gid[0], 16);
	memcpy(p->smac, r->pkt->dmac, 6);
	memcpy(p->dmac, r->pkt->smac, 6);
	p->dmac_valid = true;
	p->traffic_class = (uint8_t)m->v[WIRE_CM_F_PRI_TRAFFIC_CLASS];
	p->hop_limit = (uint8_t)m->v[WIRE_CM_F_PRI_HOP_LIMIT];
	p->flow_label = (uint32_t)m->v[WIRE_CM_F_PRI_FLOW_LABEL];
	p->sl = (uint8_t)m->v[WIRE_CM_F_PRI_SL];
	p->mtu = (enum ibv_mtu)m->v[WIRE_CM_F_PATH_MTU];
	p->port = 1;
	p->packet_life_time = ack - (ack > 0); /* cm_format_paths_from_req */
	p->rate = (uint8_t)m->v[WIRE_CM_F_PRI_PACKET_RATE];
}

/* Checks of a REQ before an id is spent on it: the REJ reason, or 0. */
static enum wire_cm_rej_reason ibcm_req_check(struct emu_ibcm *cm, const struct ibcm_rx *r,
					      struct ibcm_slot **listener)
{
	const struct wire_cm_msg *m = &r->m;
	union ibv_gid g;

	if (m->v[WIRE_CM_F_TRANSPORT_TYPE] > 1)
		return WIRE_CM_REJ_INVALID_TRANSPORT_TYPE;
	memcpy(g.raw, m->gid[1], 16);
	if (emu_gid_find(cm->dev, &g) < 0)
		return WIRE_CM_REJ_INVALID_GID;
	if (m->v[WIRE_CM_F_PATH_MTU] < IBV_MTU_256 || m->v[WIRE_CM_F_PATH_MTU] > IBV_MTU_4096)
		return WIRE_CM_REJ_INVALID_MTU;
	*listener = ibcm_find_listener(cm, m->v[WIRE_CM_F_SERVICE_ID]);
	if (!*listener) {
		cm->cnt.rej_no_listener++;
		return WIRE_CM_REJ_INVALID_SERVICE_ID;
	}
	if ((*listener)->nbacklog >= (*listener)->backlog) {
		cm->cnt.rej_no_resources++;
		return WIRE_CM_REJ_NO_RESOURCES;
	}
	return 0;
}

static void ibcm_req_event(struct emu_ibcm *cm, struct ibcm_slot *s, struct ibcm_slot *l,
			   const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct emu_ibcm_event ev;
	struct emu_ibcm_req_event_param *q = &ev.param.req_rcvd;

	memset(&ev, 0, sizeof(ev));
	ev.event = EMU_IBCM_REQ_RECEIVED;
	q->listen_id = &l->id;
	q->port = 1;
	q->primary_path = s->path;
	q->service_id = m->v[WIRE_CM_F_SERVICE_ID];
	q->remote_ca_guid = m->v[WIRE_CM_F_LOCAL_CA_GUID];
	q->remote_qkey = (uint32_t)m->v[WIRE_CM_F_LOCAL_QKEY];
	q->remote_qpn = (uint32_t)m->v[WIRE_CM_F_LOCAL_QPN];
	q->qp_type = m->v[WIRE_CM_F_TRANSPORT_TYPE] == 1 ? IBV_QPT_UC : IBV_QPT_RC;
	q->starting_psn = (uint32_t)m->v[WIRE_CM_F_STARTING_PSN];
	q->responder_resources = (uint8_t)m->v[WIRE_CM_F_RESPONDER_RESOURCES];
	q->initiator_depth = (uint8_t)m->v[WIRE_CM_F_INITIATOR_DEPTH];
	q->local_cm_response_timeout = (uint8_t)m->v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT];
	q->flow_control = m->v[WIRE_CM_F_E2E_FLOW_CONTROL];
	q->remote_cm_response_timeout = (uint8_t)m->v[WIRE_CM_F_REMOTE_CM_RESP_TIMEOUT];
	q->retry_count = (uint8_t)m->v[WIRE_CM_F_RETRY_COUNT];
	q->rnr_retry_count = (uint8_t)m->v[WIRE_CM_F_RNR_RETRY_COUNT];
	q->srq = m->v[WIRE_CM_F_SRQ];
	q->local_ack_timeout = (uint8_t)m->v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT];
	q->ece.vendor_id = (uint32_t)m->v[WIRE_CM_F_VENDOR_ID];
	q->ece.attr_mod = r->h.attr_mod;
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_REQ_PDATA;
	ibcm_deliver(cm, s, &ev);
}

/* A REQ we had a connection for: the slot's (ibcm_dup_req), or the
 * record of one destroyed in TIMEWAIT (REJ stale, message "other"). */
static bool ibcm_req_dup(struct emu_ibcm *cm, const struct ibcm_rx *r, uint32_t rid, uint64_t guid)
{
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *s = &cm->slot[i];
		if (s->used && s->passive && s->id.remote_id == rid && s->remote_ca_guid == guid &&
		    s->id.state != EMU_IBCM_IDLE && s->id.state != EMU_IBCM_SIDR_REQ_RCVD) {
			ibcm_dup_req(cm, s, r);
			return true;
		}
	}
	const struct ibcm_tw *t = ibcm_tw_find(cm, rid, guid);
	if (!t)
		return false;
	cm->cnt.rej_stale++;
	ibcm_rej_pkt(cm, r->pkt, r->h.tid, t->local_id, t->remote_id, 2, WIRE_CM_REJ_STALE_CONN);
	return true;
}

/* a new passive id's timers: what the REQ asks, within the kernel's
 * rdma_cm scale, and up within IBCM_HALF_OPEN_MS or reclaimed */
static void ibcm_req_timers(struct emu_ibcm *cm, struct ibcm_slot *s, const struct wire_cm_msg *m)
{
	s->av_timeout = ibcm_peer_t(m->v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT], IBCM_MAX_ACK_T);
	s->timeout_ms = emu_ibcm_time_ms(ibcm_peer_t(m->v[WIRE_CM_F_LOCAL_CM_RESP_TIMEOUT],
						     IBCM_MAX_RESP_T));
	s->max_cm_retries = (uint8_t)(m->v[WIRE_CM_F_MAX_CM_RETRIES] & 0xF);
	s->open_by = emu_now_ns() + IBCM_HALF_OPEN_MS * 1000000ull;
	ibcm_set_deadline(cm, s, s->open_by, false);
}

static void ibcm_rx_req(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	uint32_t rid = (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID];
	uint64_t guid = m->v[WIRE_CM_F_LOCAL_CA_GUID];
	uint32_t rqpn = (uint32_t)m->v[WIRE_CM_F_LOCAL_QPN];
	struct ibcm_slot *l = NULL, *s;
	enum wire_cm_rej_reason why;
	int32_t src;
	bool rej;

	if (ibcm_req_dup(cm, r, rid, guid))
		return;
	if (!ibcm_admit(cm, r, &src, &rej)) {
		if (rej)
			ibcm_rej_pkt(cm, r->pkt, r->h.tid, 0, rid, 0, WIRE_CM_REJ_NO_RESOURCES);
		return;
	}
	if (ibcm_stale_req(cm, r, rid, guid, rqpn))
		return;
	why = ibcm_req_check(cm, r, &l);
	s = why ? NULL : ibcm_alloc(cm, l->id.handler, l->id.context);
	if (!why && !s) {
		cm->cnt.rej_no_resources++;
		why = WIRE_CM_REJ_NO_RESOURCES;
	}
	if (why) {
		ibcm_rej_pkt(cm, r->pkt, r->h.tid, 0, rid, 0, why);
		return;
	}
	s->src = src;
	ibcm_src_hold(cm->srcs, src);
	s->passive = true;
	s->in_backlog = true;
	s->listener = l;
	l->nbacklog++;
	s->id.remote_id = rid;
	s->id.service_id = m->v[WIRE_CM_F_SERVICE_ID];
	s->remote_ca_guid = guid;
	s->remote_qpn = rqpn;
	s->tid = r->h.tid;
	ibcm_av_from_pkt(&s->av, r->pkt);
	ibcm_path_from_req(&s->path, r);
	ibcm_req_timers(cm, s, m);
	ibcm_set_state(cm, s, EMU_IBCM_REQ_RCVD, "rx-req");
	ibcm_req_event(cm, s, l, r);
}

/* A REP for s from a remote QP another of our active ids is still
 * connected to (the kernel's cm_rep_handler, cm_insert_remote_qpn): REJ
 * stale connection, DREQ on the old connection, s keeps waiting. A REP
 * whose remote comm ID another id already has is a duplicate. */
static bool ibcm_stale_rep(struct emu_ibcm *cm, struct ibcm_slot *s, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	uint64_t guid = m->v[WIRE_CM_F_LOCAL_CA_GUID];

	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *o = &cm->slot[i];
		if (o == s || !o->used || o->passive || o->remote_ca_guid != guid ||
		    o->id.state == EMU_IBCM_IDLE || o->id.state == EMU_IBCM_TIMEWAIT ||
		    o->id.state == EMU_IBCM_REQ_SENT || o->id.state == EMU_IBCM_MRA_REQ_RCVD)
			continue;
		if (o->id.remote_id == m->v[WIRE_CM_F_LOCAL_COMM_ID]) {
			ibcm_drop(cm, EMU_IBCM_DROP_DUPLICATE);
			return true;
		}
		if (o->remote_qpn != m->v[WIRE_CM_F_LOCAL_QPN])
			continue;
		cm->cnt.rej_stale++;
		ibcm_rej_pkt(cm, r->pkt, r->h.tid, (uint32_t)m->v[WIRE_CM_F_REMOTE_COMM_ID],
			     (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID], 1, WIRE_CM_REJ_STALE_CONN);
		if (o->id.state == EMU_IBCM_ESTABLISHED && ibcm_from_addr(o, r))
			emu_ibcm_send_dreq(&o->id, NULL, 0);
		return true;
	}
	return false;
}

static void ibcm_rx_rep(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct ibcm_slot *s = ibcm_find_local(cm, (uint32_t)m->v[WIRE_CM_F_REMOTE_COMM_ID]);
	struct emu_ibcm_event ev;
	struct emu_ibcm_rep_event_param *q = &ev.param.rep_rcvd;

	/* no such id: dropped, as the kernel's cm_rep_handler does (its
	 * cm_dup_rep_handler finds nobody to answer for) */
	if (!s || s->passive) {
		ibcm_drop(cm, EMU_IBCM_DROP_UNKNOWN_ID);
		return;
	}
	if (!ibcm_from_peer(cm, s, r))
		return;
	switch (s->id.state) {
	case EMU_IBCM_REQ_SENT:
	case EMU_IBCM_MRA_REQ_RCVD:
		break;
	case EMU_IBCM_ESTABLISHED: /* our RTU was lost: resend it */
	case EMU_IBCM_MRA_REP_SENT:
		if (s->id.remote_id == m->v[WIRE_CM_F_LOCAL_COMM_ID]) {
			ibcm_resend(cm, s);
			return;
		}
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	case EMU_IBCM_REP_RCVD:
		ibcm_drop(cm, EMU_IBCM_DROP_DUPLICATE);
		return;
	default:
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	if (ibcm_stale_rep(cm, s, r))
		return;
	s->id.remote_id = (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID];
	s->remote_ca_guid = m->v[WIRE_CM_F_LOCAL_CA_GUID];
	s->remote_qpn = (uint32_t)m->v[WIRE_CM_F_LOCAL_QPN];
	ibcm_stop_timer(s);
	ibcm_set_state(cm, s, EMU_IBCM_REP_RCVD, "rx-rep");
	memset(&ev, 0, sizeof(ev));
	ev.event = EMU_IBCM_REP_RECEIVED;
	q->remote_ca_guid = s->remote_ca_guid;
	q->remote_qkey = (uint32_t)m->v[WIRE_CM_F_LOCAL_QKEY];
	q->remote_qpn = s->remote_qpn;
	q->starting_psn = (uint32_t)m->v[WIRE_CM_F_STARTING_PSN];
	q->responder_resources = (uint8_t)m->v[WIRE_CM_F_RESPONDER_RESOURCES];
	q->initiator_depth = (uint8_t)m->v[WIRE_CM_F_INITIATOR_DEPTH];
	q->target_ack_delay = (uint8_t)m->v[WIRE_CM_F_TARGET_ACK_DELAY];
	q->failover_accepted = m->v[WIRE_CM_F_FAILOVER_ACCEPTED];
	q->flow_control = m->v[WIRE_CM_F_E2E_FLOW_CONTROL];
	q->rnr_retry_count = (uint8_t)m->v[WIRE_CM_F_RNR_RETRY_COUNT];
	q->srq = m->v[WIRE_CM_F_SRQ];
	q->ece.vendor_id = (uint32_t)m->v[WIRE_CM_F_VENDOR_ID];
	q->ece.attr_mod = r->h.attr_mod;
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_REP_PDATA;
	ibcm_deliver(cm, s, &ev);
}

/* The id a REP/RTU/DREQ/DREP names: our local ID and its remote ID. */
static struct ibcm_slot *ibcm_find_pair(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	struct ibcm_slot *s = ibcm_find_local(cm, (uint32_t)r->m.v[WIRE_CM_F_REMOTE_COMM_ID]);

	/* an IDLE id has no connection any more (TIMEWAIT ended): a late
	 * DREQ for it is answered as for nobody, as once the kernel's
	 * timewait_info is gone */
	if (!s || s->id.remote_id != r->m.v[WIRE_CM_F_LOCAL_COMM_ID] ||
	    s->id.state == EMU_IBCM_IDLE)
		return NULL;
	return s;
}

/* the connection an answer (RTU, DREP) is for, in state a or b, its
 * timer stopped; else NULL and the drop counted (a duplicate when the
 * connection is already in state dup, where the answer took it) */
static struct ibcm_slot *ibcm_find_answered(struct emu_ibcm *cm, const struct ibcm_rx *r,
					    enum emu_ibcm_state a, enum emu_ibcm_state b,
					    enum emu_ibcm_state dup)
{
	struct ibcm_slot *s = ibcm_find_pair(cm, r);

	if (!s) {
		ibcm_drop(cm, EMU_IBCM_DROP_UNKNOWN_ID);
		return NULL;
	}
	if (!ibcm_from_peer(cm, s, r))
		return NULL;
	if (s->id.state != a && s->id.state != b) {
		ibcm_drop(cm, s->id.state == dup ? EMU_IBCM_DROP_DUPLICATE : EMU_IBCM_DROP_BAD_STATE);
		return NULL;
	}
	ibcm_stop_timer(s);
	return s;
}

static void ibcm_rx_rtu(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	struct ibcm_slot *s = ibcm_find_answered(cm, r, EMU_IBCM_REP_SENT, EMU_IBCM_MRA_REP_RCVD,
						 EMU_IBCM_ESTABLISHED);
	struct emu_ibcm_event ev = { .event = EMU_IBCM_RTU_RECEIVED };

	if (!s)
		return;
	ibcm_set_state(cm, s, EMU_IBCM_ESTABLISHED, "rx-rtu");
	ev.private_data = r->m.pdata;
	ev.private_data_len = WIRE_CM_RTU_PDATA;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_rx_mra(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct ibcm_slot *s = ibcm_find_local(cm, (uint32_t)m->v[WIRE_CM_F_REMOTE_COMM_ID]);
	struct emu_ibcm_event ev = { .event = EMU_IBCM_MRA_RECEIVED };
	/* how long the peer asks us to wait: within rdma_cm's scale */
	uint8_t st = ibcm_peer_t(m->v[WIRE_CM_F_SERVICE_TIMEOUT], IBCM_MAX_RESP_T);
	enum emu_ibcm_state to;

	if (!s) {
		ibcm_drop(cm, EMU_IBCM_DROP_UNKNOWN_ID);
		return;
	}
	if (!ibcm_from_peer(cm, s, r))
		return;
	if (m->v[WIRE_CM_F_MSG_MRAED] == 0 && s->id.state == EMU_IBCM_REQ_SENT) {
		to = EMU_IBCM_MRA_REQ_RCVD;
	} else if (m->v[WIRE_CM_F_MSG_MRAED] == 1 && s->id.state == EMU_IBCM_REP_SENT &&
		   s->id.remote_id == m->v[WIRE_CM_F_LOCAL_COMM_ID]) {
		to = EMU_IBCM_MRA_REP_RCVD;
	} else {
		ibcm_drop(cm, s->id.state == EMU_IBCM_MRA_REQ_RCVD ||
				      s->id.state == EMU_IBCM_MRA_REP_RCVD
			      ? EMU_IBCM_DROP_DUPLICATE : EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	/* the peer needs longer: the outstanding MAD's timer becomes the
	 * announced service time plus a packet life time (cm_mra_handler) */
	if (s->armed) {
		uint64_t t = emu_now_ns() + ((uint64_t)emu_ibcm_time_ms(st) +
					     emu_ibcm_time_ms(s->av_timeout)) * 1000000ull;
		ibcm_set_deadline(cm, s, s->open_by && s->open_by < t ? s->open_by : t, false);
	}
	ibcm_set_state(cm, s, to, "rx-mra");
	ev.param.mra_rcvd.service_timeout = st;
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_MRA_PDATA;
	ibcm_deliver(cm, s, &ev);
}

/* The id a REJ is about (the kernel's cm_acquire_rejected_id). */
static struct ibcm_slot *ibcm_rejected_id(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	uint32_t rid = (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID];

	if (m->v[WIRE_CM_F_REJ_REASON] == WIRE_CM_REJ_TIMEOUT) {
		/* the active side gave up on its REQ: it names itself by
		 * its comm ID and, in the ARI, its CA GUID */
		uint64_t guid;
		memcpy(&guid, m->info, 8);
		guid = be64toh(guid);
		for (uint32_t i = 0; i < cm->nslots; i++) {
			struct ibcm_slot *s = &cm->slot[i];
			if (s->used && s->passive && s->id.remote_id == rid &&
			    s->remote_ca_guid == guid)
				return s;
		}
		return NULL;
	}
	struct ibcm_slot *s = ibcm_find_local(cm, (uint32_t)m->v[WIRE_CM_F_REMOTE_COMM_ID]);
	if (s && m->v[WIRE_CM_F_MSG_REJECTED] != 0 && s->id.remote_id != rid)
		return NULL;
	return s;
}

static void ibcm_rx_rej(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct ibcm_slot *s = ibcm_rejected_id(cm, r);
	struct emu_ibcm_event ev;
	bool stale = m->v[WIRE_CM_F_REJ_REASON] == WIRE_CM_REJ_STALE_CONN;
	bool tw;

	if (!s) {
		ibcm_drop(cm, EMU_IBCM_DROP_UNKNOWN_ID);
		return;
	}
	if (!ibcm_from_peer(cm, s, r))
		return;
	switch (s->id.state) {
	case EMU_IBCM_REQ_SENT:
	case EMU_IBCM_MRA_REQ_RCVD:
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
	case EMU_IBCM_REQ_RCVD:
	case EMU_IBCM_MRA_REQ_SENT:
		tw = stale;
		break;
	case EMU_IBCM_REP_RCVD:
	case EMU_IBCM_MRA_REP_SENT:
		tw = false;
		break;
	case EMU_IBCM_DREQ_SENT:
	case EMU_IBCM_ESTABLISHED:
		tw = true;
		break;
	default:
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	ibcm_stop_timer(s);
	if (tw)
		ibcm_enter_timewait(cm, s, "rx-rej");
	else
		ibcm_set_state(cm, s, EMU_IBCM_IDLE, "rx-rej");
	memset(&ev, 0, sizeof(ev));
	ev.event = EMU_IBCM_REJ_RECEIVED;
	ev.param.rej_rcvd.reason = (enum wire_cm_rej_reason)m->v[WIRE_CM_F_REJ_REASON];
	ev.param.rej_rcvd.ari = m->info;
	ev.param.rej_rcvd.ari_length = (uint8_t)m->v[WIRE_CM_F_REJ_INFO_LEN];
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_REJ_PDATA;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_rx_dreq(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct ibcm_slot *s = ibcm_find_pair(cm, r);
	struct emu_ibcm_event ev = { .event = EMU_IBCM_DREQ_RECEIVED };
	struct wire_cm_msg a;

	if (!s) {
		/* nobody here: DREP so the peer can leave (cm_issue_drep) */
		cm->cnt.drep_unknown++;
		memset(&a, 0, sizeof(a));
		a.v[WIRE_CM_F_LOCAL_COMM_ID] = m->v[WIRE_CM_F_REMOTE_COMM_ID];
		a.v[WIRE_CM_F_REMOTE_COMM_ID] = m->v[WIRE_CM_F_LOCAL_COMM_ID];
		ibcm_answer(cm, r->pkt, &a, WIRE_CM_ATTR_DREP, r->h.tid);
		return;
	}
	if (!ibcm_from_peer(cm, s, r))
		return;
	if (m->v[WIRE_CM_F_REMOTE_QPN] != s->local_qpn) {
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	switch (s->id.state) {
	case EMU_IBCM_ESTABLISHED:
	case EMU_IBCM_REP_SENT:
	case EMU_IBCM_MRA_REP_RCVD:
	case EMU_IBCM_DREQ_SENT:
		break;
	case EMU_IBCM_TIMEWAIT: {
		/* our DREP was lost, or the peer's DREQ crossed ours */
		uint8_t mad[WIRE_MAD_LEN];
		ibcm_format_drep(s, &a, NULL, 0);
		ibcm_encode(mad, &a, WIRE_CM_ATTR_DREP, r->h.tid, 0);
		cm->cnt.dup_answered++;
		ibcm_tx(cm, &s->av, mad);
		return;
	}
	case EMU_IBCM_DREQ_RCVD:
		ibcm_drop(cm, EMU_IBCM_DROP_DUPLICATE);
		return;
	default:
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	ibcm_stop_timer(s);
	s->dreq_tid = r->h.tid;
	ibcm_set_state(cm, s, EMU_IBCM_DREQ_RCVD, "rx-dreq");
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_DREQ_PDATA;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_rx_drep(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	struct ibcm_slot *s = ibcm_find_answered(cm, r, EMU_IBCM_DREQ_SENT, EMU_IBCM_DREQ_RCVD,
						 EMU_IBCM_TIMEWAIT);
	struct emu_ibcm_event ev = { .event = EMU_IBCM_DREP_RECEIVED };

	if (!s)
		return;
	ibcm_enter_timewait(cm, s, "rx-drep");
	ev.private_data = r->m.pdata;
	ev.private_data_len = WIRE_CM_DREP_PDATA;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_sidr_answer(struct emu_ibcm *cm, const struct ibcm_rx *r,
			     enum wire_cm_sidr_status st)
{
	struct wire_cm_msg a;

	memset(&a, 0, sizeof(a));
	a.v[WIRE_CM_F_LOCAL_COMM_ID] = r->m.v[WIRE_CM_F_LOCAL_COMM_ID];
	a.v[WIRE_CM_F_SERVICE_ID] = r->m.v[WIRE_CM_F_SERVICE_ID];
	a.v[WIRE_CM_F_STATUS] = st;
	ibcm_answer(cm, r->pkt, &a, WIRE_CM_ATTR_SIDR_REP, r->h.tid);
}

static void ibcm_rx_sidr_req(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	uint32_t rid = (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID];
	struct ibcm_slot *l, *s;
	struct emu_ibcm_event ev;
	int32_t src;
	bool rej;

	for (uint32_t i = 0; i < cm->nslots; i++) {
		s = &cm->slot[i];
		if (s->used && s->passive && s->id.state == EMU_IBCM_SIDR_REQ_RCVD &&
		    s->id.remote_id == rid && !memcmp(s->av.dgid.raw, r->pkt->ip.src.raw, 16)) {
			ibcm_drop(cm, EMU_IBCM_DROP_DUPLICATE);
			return;
		}
	}
	if (!ibcm_admit(cm, r, &src, &rej)) {
		if (rej)
			ibcm_sidr_answer(cm, r, WIRE_CM_SIDR_REJECT);
		return;
	}
	l = ibcm_find_listener(cm, m->v[WIRE_CM_F_SERVICE_ID]);
	if (!l) {
		cm->cnt.rej_no_listener++;
		ibcm_sidr_answer(cm, r, WIRE_CM_SIDR_UNSUPPORTED);
		return;
	}
	s = l->nbacklog < l->backlog ? ibcm_alloc(cm, l->id.handler, l->id.context) : NULL;
	if (!s) {
		cm->cnt.rej_no_resources++;
		ibcm_sidr_answer(cm, r, WIRE_CM_SIDR_REJECT);
		return;
	}
	s->src = src;
	ibcm_src_hold(cm->srcs, src);
	s->passive = true;
	s->in_backlog = true;
	s->listener = l;
	l->nbacklog++;
	s->id.remote_id = rid;
	s->id.service_id = m->v[WIRE_CM_F_SERVICE_ID];
	s->tid = r->h.tid;
	s->open_by = emu_now_ns() + IBCM_HALF_OPEN_MS * 1000000ull;
	ibcm_set_deadline(cm, s, s->open_by, false);
	ibcm_av_from_pkt(&s->av, r->pkt);
	memcpy(s->path.sgid.raw, r->pkt->ip.dst.raw, 16);
	memcpy(s->path.dgid.raw, r->pkt->ip.src.raw, 16);
	memcpy(s->path.smac, r->pkt->dmac, 6);
	memcpy(s->path.dmac, r->pkt->smac, 6);
	s->path.dmac_valid = true;
	s->path.traffic_class = r->pkt->ip.tos;
	s->path.hop_limit = r->pkt->ip.ttl;
	s->path.flow_label = r->pkt->ip.flow_label;
	s->path.port = 1;
	ibcm_set_state(cm, s, EMU_IBCM_SIDR_REQ_RCVD, "rx-sidr-req");
	memset(&ev, 0, sizeof(ev));
	ev.event = EMU_IBCM_SIDR_REQ_RECEIVED;
	ev.param.sidr_req_rcvd.listen_id = &l->id;
	ev.param.sidr_req_rcvd.service_id = s->id.service_id;
	ev.param.sidr_req_rcvd.pkey = (uint16_t)m->v[WIRE_CM_F_PKEY];
	ev.param.sidr_req_rcvd.port = 1;
	ev.param.sidr_req_rcvd.path = s->path;
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_SIDR_REQ_PDATA;
	ibcm_deliver(cm, s, &ev);
}

static void ibcm_rx_sidr_rep(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	const struct wire_cm_msg *m = &r->m;
	struct ibcm_slot *s = ibcm_find_local(cm, (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID]);
	struct emu_ibcm_event ev;

	if (!s) {
		ibcm_drop(cm, EMU_IBCM_DROP_UNKNOWN_ID);
		return;
	}
	if (!ibcm_from_peer(cm, s, r))
		return;
	if (s->id.state != EMU_IBCM_SIDR_REQ_SENT) {
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_STATE);
		return;
	}
	ibcm_stop_timer(s);
	ibcm_set_state(cm, s, EMU_IBCM_IDLE, "rx-sidr-rep");
	memset(&ev, 0, sizeof(ev));
	ev.event = EMU_IBCM_SIDR_REP_RECEIVED;
	ev.param.sidr_rep_rcvd.status = (enum wire_cm_sidr_status)m->v[WIRE_CM_F_STATUS];
	ev.param.sidr_rep_rcvd.qkey = (uint32_t)m->v[WIRE_CM_F_LOCAL_QKEY];
	ev.param.sidr_rep_rcvd.qpn = (uint32_t)m->v[WIRE_CM_F_LOCAL_QPN];
	ev.param.sidr_rep_rcvd.info = m->info;
	ev.param.sidr_rep_rcvd.info_len = (uint8_t)m->v[WIRE_CM_F_ADD_INFO_LEN];
	ev.private_data = m->pdata;
	ev.private_data_len = WIRE_CM_SIDR_REP_PDATA;
	ibcm_deliver(cm, s, &ev);
}

/* What the MAD says of its sender against where it came from, before it
 * changes any state: a REQ's primary path starts at the packet's source
 * (the kernel builds the connection's address from that path), and our
 * own CA GUID comes only from our own addresses (frames of this device;
 * transport/rx.c drops frames from the wire that claim our addresses).
 * True: dropped and counted. */
static bool ibcm_forged(struct emu_ibcm *cm, const struct ibcm_rx *r)
{
	uint16_t a = r->h.attr_id;

	if ((a == WIRE_CM_ATTR_REQ || a == WIRE_CM_ATTR_REP) &&
	    r->m.v[WIRE_CM_F_LOCAL_CA_GUID] == ibcm_guid(cm) && !ibcm_local_src(cm, r->pkt)) {
		ibcm_drop(cm, EMU_IBCM_DROP_OWN_GUID);
		return true;
	}
	if (a == WIRE_CM_ATTR_REQ && memcmp(r->m.gid[0], r->pkt->ip.src.raw, 16)) {
		ibcm_drop(cm, EMU_IBCM_DROP_PATH_SRC);
		return true;
	}
	return false;
}

static void ibcm_rx(struct emu_dev *d, const struct wire_pkt *pkt)
{
	struct emu_ibcm *cm = d->gsi_priv;
	struct ibcm_rx r;
	enum wire_mad_reason why;
	union ibv_gid dst;

	if (emu_rand_coin(&cm->loss_state, cm->loss)) {
		cm->cnt.loss_rx++;
		return;
	}
	cm->cnt.rx_mads++;
	if (!wire_pkt_is_gsi(pkt)) {
		/* QP1 takes only UD SEND ONLY: anything else is no MAD */
		cm->cnt.mad_reason[WIRE_MAD_R_METHOD]++;
		ibcm_drop(cm, EMU_IBCM_DROP_MALFORMED);
		return;
	}
	/* a CM speaks from its QP1: a MAD from any other QP is a user's UD
	 * QP posing as one (a local one is refused before it is sent) */
	if (pkt->deth.sqpn != WIRE_GSI_QPN) {
		ibcm_drop(cm, EMU_IBCM_DROP_NOT_QP1);
		return;
	}
	why = wire_gsi_pkt_decode(pkt, 0, &r.h, &r.m);
	if (why != WIRE_MAD_OK) {
		cm->cnt.mad_reason[why < WIRE_MAD_R_NUM ? why : 0]++;
		ibcm_drop(cm, EMU_IBCM_DROP_MALFORMED);
		EMU_LOG_RL(INFO, "%s: CM MAD dropped: %s\n", d->name, wire_mad_reason_str(why));
		return;
	}
	/* answers go back from the address the MAD came to: ours, unicast */
	memcpy(dst.raw, pkt->ip.dst.raw, 16);
	if (emu_gid_find(d, &dst) < 0) {
		ibcm_drop(cm, EMU_IBCM_DROP_BAD_SRC);
		return;
	}
	r.pkt = pkt;
	if (ibcm_forged(cm, &r))
		return;
	ibcm_count(cm->cnt.rx_attr, cm->cnt.rej_rx, r.h.attr_id,
		   (uint16_t)r.m.v[WIRE_CM_F_REJ_REASON]);
	switch (r.h.attr_id) {
	case WIRE_CM_ATTR_REQ:      ibcm_rx_req(cm, &r); break;
	case WIRE_CM_ATTR_MRA:      ibcm_rx_mra(cm, &r); break;
	case WIRE_CM_ATTR_REJ:      ibcm_rx_rej(cm, &r); break;
	case WIRE_CM_ATTR_REP:      ibcm_rx_rep(cm, &r); break;
	case WIRE_CM_ATTR_RTU:      ibcm_rx_rtu(cm, &r); break;
	case WIRE_CM_ATTR_DREQ:     ibcm_rx_dreq(cm, &r); break;
	case WIRE_CM_ATTR_DREP:     ibcm_rx_drep(cm, &r); break;
	case WIRE_CM_ATTR_SIDR_REQ: ibcm_rx_sidr_req(cm, &r); break;
	case WIRE_CM_ATTR_SIDR_REP: ibcm_rx_sidr_rep(cm, &r); break;
	default:                    ibcm_drop(cm, EMU_IBCM_DROP_UNSUPPORTED); break;
	}
}

void emu_ibcm_rx(struct emu_dev *d, const struct wire_pkt *pkt)
{
	if (d->gsi_priv)
		ibcm_rx(d, pkt);
	else
		d->cnt.drops[EMU_DROP_UNKNOWN_QP]++;
}

/* ------------------------------------------------------------------ */
/* engine                                                              */
/* ------------------------------------------------------------------ */

static const struct emu_gsi_ops ibcm_gsi_ops = {
	.rx = ibcm_rx,
	.poll = ibcm_poll,
	.next_deadline = ibcm_next_deadline,
};

static uint64_t ibcm_seed(uint64_t seed)
{
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = emu_now_ns() ^ (uint64_t)(uintptr_t)&seed;
	/* splitmix64: any seed gives a well-mixed operand */
	return emu_rand_next(&seed);
}

int emu_ibcm_attach(struct emu_dev *d, const struct emu_ibcm_cfg *cfg)
{
	struct emu_ibcm_cfg def = { 0 };
	struct emu_ibcm *cm;

	if (d->gsi_priv)
		return -EBUSY;
	if (!cfg)
		cfg = &def;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->nslots = cfg->max_ids ? cfg->max_ids : IBCM_DEF_MAX_IDS;
	if (cm->nslots > IBCM_MAX_IDS)
		cm->nslots = IBCM_MAX_IDS;
	cm->slot = calloc(cm->nslots, sizeof(*cm->slot));
	cm->tw = calloc(cm->nslots, sizeof(*cm->tw));
	cm->srcs = ibcm_srcs_new(cm->nslots);
	if (!cm->slot || !cm->tw || !cm->srcs) {
		free(cm->slot);
		free(cm->tw);
		ibcm_srcs_free(cm->srcs);
		free(cm);
		return -ENOMEM;
	}
	uint64_t r = ibcm_seed(cfg->seed);
	cm->id_xor = (uint32_t)r;
	cm->psn = (uint32_t)(r >> 40);
	cm->default_backlog = cfg->default_backlog ? cfg->default_backlog : IBCM_DEF_BACKLOG;
	cm->trace = cfg->trace;
	cm->next_deadline = UINT64_MAX;
	cm->loss = cfg->loss;
	cm->loss_state = cfg->loss_seed;
	if (cm->loss > 0)
		EMU_LOG(NOTICE, "%s: cm: losing %.3f of the CM MADs each way (seed %llu)\n",
			d->name, cm->loss, (unsigned long long)cfg->loss_seed);
	/* generations start at a random point too: ids of a restarted
	 * daemon do not repeat those of the last run */
	for (uint32_t i = 0; i < cm->nslots; i++)
		cm->slot[i].gen = (uint32_t)(r >> 12) + i * 0x9E37u;
	cm->dev = d;
	d->gsi_priv = cm;
	d->gsi = &ibcm_gsi_ops;
	return 0;
}

void emu_ibcm_detach(struct emu_dev *d)
{
	struct emu_ibcm *cm = d->gsi_priv;

	if (!cm)
		return;
	/* the peers hear what they would from a closing kernel device:
	 * DREQ for connections, REJ for pending requests (no events here) */
	for (uint32_t i = 0; i < cm->nslots; i++) {
		struct ibcm_slot *s = &cm->slot[i];
		if (s->used) {
			s->id.handler = NULL;
			emu_ibcm_destroy_id(&s->id);
		}
	}
	emu_tx_flush(d);
	d->gsi = NULL;
	d->gsi_priv = NULL;
	free(cm->slot);
	free(cm->tw);
	ibcm_srcs_free(cm->srcs);
	free(cm);
}

struct emu_ibcm *emu_ibcm_get(struct emu_dev *d)
{
	return d->gsi_priv;
}

struct emu_dev *emu_ibcm_dev(struct emu_ibcm *cm)
{
	return cm->dev;
}

const struct emu_ibcm_counters *emu_ibcm_counters(struct emu_ibcm *cm)
{
	return &cm->cnt;
}

uint32_t emu_ibcm_ids_in_use(struct emu_ibcm *cm)
{
	return cm->nused;
}

uint32_t emu_ibcm_ids_max(struct emu_ibcm *cm)
{
	return cm->nslots;
}

uint32_t emu_ibcm_listeners(struct emu_ibcm *cm)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < cm->nslots; i++)
		n += cm->slot[i].used && cm->slot[i].id.state == EMU_IBCM_LISTEN;
	return n;
}

void emu_ibcm_dump(struct emu_dev *d)
{
	struct emu_ibcm *cm = d->gsi_priv;
	const struct emu_ibcm_counters *c;

	if (!cm || !(cm->cnt.rx_mads + cm->cnt.tx_mads))
		return;
	c = &cm->cnt;
	EMU_LOG(NOTICE, "%s: cm: ids %u, mads rx %lu tx %lu, retrans %lu, timeouts %lu, "
		"dup-answered %lu, rej no-listener %lu no-resources %lu src-busy %lu "
		"src-table %lu stale %lu, half-open reclaimed %lu, "
		"drep-unknown %lu, tx-fail %lu, lost rx %lu, lost tx %lu\n", d->name, cm->nused,
		(unsigned long)c->rx_mads, (unsigned long)c->tx_mads,
		(unsigned long)c->retransmits, (unsigned long)c->timeouts,
		(unsigned long)c->dup_answered, (unsigned long)c->rej_no_listener,
		(unsigned long)c->rej_no_resources, (unsigned long)c->rej_src_busy,
		(unsigned long)c->rej_src_table, (unsigned long)c->rej_stale,
		(unsigned long)c->half_open_reclaimed, (unsigned long)c->drep_unknown,
		(unsigned long)c->tx_fail, (unsigned long)c->loss_rx,
		(unsigned long)c->loss_tx);
	for (int i = 0; i < EMU_IBCM_DROP_NUM; i++)
		if (c->drops[i])
			EMU_LOG(NOTICE, "%s: cm drop %s %lu\n", d->name, ibcm_drop_names[i],
				(unsigned long)c->drops[i]);
	for (int i = 1; i < WIRE_MAD_R_NUM; i++)
		if (c->mad_reason[i])
			EMU_LOG(NOTICE, "%s: cm mad %s %lu\n", d->name, wire_mad_reason_str(i),
				(unsigned long)c->mad_reason[i]);
}
