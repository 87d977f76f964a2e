/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim.h"

uint64_t sim_now = 1000000;
int sim_failures;
int64_t sim_psn_start = -1;
bool (*sim_hook)(struct sim *s, int to, uint8_t *frame, uint32_t len);
bool sim_batch;
uint64_t sim_cost_ns[2];
const struct sim_wire *sim_wire;

uint32_t sim_txbufs[2];
uint32_t sim_txfail[2];
static uint32_t sim_txused[2];

struct sim_frame {
	struct sim_frame *next;
	struct emu_dev *to;
	int from;            /* node whose TX buffer it is (-1: none counted) */
	uint32_t len;
	uint8_t *data;
};
static struct sim_frame *q_head, *q_tail;
static uint32_t q_len;
static struct sim *q_sim;   /* whose devices the queue connects (sim_init) */

/* The timed model (sim_cost_ns): frames per engine turn and the frames the
 * loopback ring holds before the sender sees back-pressure, as
 * port_dpdk.c's EMU_BURST and EMU_RING_SIZE. */
#define SIM_BURST 32u
#define SIM_RING  4096u

static bool sim_timed(void)
{
	return sim_cost_ns[0] || sim_cost_ns[1];
}

static int sim_node_of(const struct emu_dev *d)
{
	return q_sim && d == &q_sim->n[1].dev;
}

/* Frames beyond the ring wait in the senders' TX backlogs: the requester
 * pauses above EMU_TX_BACKLOG_STALL, as it does on the loopback port. */
static void sim_set_backlog(void)
{
	uint32_t b = q_len > SIM_RING ? q_len - SIM_RING : 0;

	if (!q_sim || !sim_timed())
		return;
	q_sim->n[0].dev.tx_backlog = b;
	q_sim->n[1].dev.tx_backlog = b;
}

static uint64_t sim_clock(void)
{
	return sim_now;
}

#define SIM_BUF 2048

/* A node with sim_txbufs set has that many TX buffers and SIM_TX_KEEP
 * more, as port_dpdk.c keeps part of its pool for ACKs and NAKs: one is
 * taken by every frame allocated and given back when the frame is freed
 * unsent or delivered (at the end of the receiver's turn, as an mbuf of a
 * ring port); tx_room tells how many of the sim_txbufs are left. */
#define SIM_TX_KEEP 8u
static int sim_tx_alloc(struct emu_dev *d, struct emu_txbuf *b)
{
	int i = sim_node_of(d);

	if (sim_txbufs[i] && sim_txused[i] >= sim_txbufs[i] + SIM_TX_KEEP)
		return -ENOBUFS;
	if (sim_txfail[i]) {
		sim_txfail[i]--;
		return -ENOBUFS;
	}
	b->data = malloc(SIM_BUF);
	b->cap = SIM_BUF;
	b->priv = NULL;
	if (!b->data)
		return -ENOBUFS;
	sim_txused[i]++;
	return 0;
}

static void sim_txbuf_put(int i)
{
	if (i >= 0 && sim_txused[i])
		sim_txused[i]--;
}

static uint32_t sim_tx_room(struct emu_dev *d)
{
	int i = sim_node_of(d);

	if (!sim_txbufs[i])
		return UINT32_MAX;
	return sim_txused[i] < sim_txbufs[i] ? sim_txbufs[i] - sim_txused[i] : 0;
}

/* Queue a frame for delivery to node to (ownership passes). */
static void sim_enqueue(struct emu_dev *to, uint8_t *data, uint32_t len, int from)
{
	struct sim_frame *f = malloc(sizeof(*f));

	if (!f) {
		free(data);
		sim_txbuf_put(from);
		return;
	}
	f->next = NULL;
	f->to = to;
	f->from = from;
	f->len = len;
	f->data = data;
	if (q_tail)
		q_tail->next = f;
	else
		q_head = f;
	q_tail = f;
	q_len++;
	sim_set_backlog();
}

uint64_t sim_flushes[2];
void (*sim_tx_hook)(int from, const uint8_t *frame, uint32_t len);

static void sim_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	/* a frame to the node's own MAC (two QPs of one device) comes back
	 * to it, as through the daemon's self ring */
	struct emu_dev *to = memcmp(b->data, d->mac, 6) ? d->port_priv : d;

	if (sim_tx_hook)
		sim_tx_hook(sim_node_of(d), b->data, len);
	sim_now += sim_cost_ns[sim_node_of(d)];
	if (sim_wire && sim_wire->take(to == &q_sim->n[1].dev, b->data, len)) {
		sim_txbuf_put(sim_node_of(d)); /* the wire model's now */
		return;
	}
	sim_enqueue(to, b->data, len, sim_node_of(d));
}

void sim_deliver(int to, uint8_t *frame, uint32_t len)
{
	sim_enqueue(&q_sim->n[to ? 1 : 0].dev, frame, len, -1);
}

static void sim_tx_free(struct emu_dev *d, struct emu_txbuf *b)
{
	sim_txbuf_put(sim_node_of(d));
	free(b->data);
}

static void sim_tx_flush(struct emu_dev *d)
{
	sim_flushes[sim_node_of(d)]++;
}

static const struct emu_port_ops sim_ops = {
	.tx_alloc = sim_tx_alloc,
	.tx_send = sim_tx_send,
	.tx_free = sim_tx_free,
	.tx_flush = sim_tx_flush,
	.tx_room = sim_tx_room,
};

static void gid_v4(union ibv_gid *g, uint8_t last)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[15] = last;
}

int sim_init(struct sim *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	q_sim = s;
	emu_clock_set(sim_clock);
	for (i = 0; i < 2; i++) {
		uint8_t mac[6] = { 0x02, 0, 0, 0, 0, (uint8_t)(i + 1) };
		union ibv_gid g;
		int p[2];

		gid_v4(&g, (uint8_t)(i + 1));
		if (emu_dev_init(&s->n[i].dev, i ? "simB" : "simA", mac, 1500, &g, 1))
			return -1;
		s->n[i].dev.ops = &sim_ops;
		s->n[i].ctx = emu_ctx_new(&s->n[i].dev, getpid(), -1);
		if (!s->n[i].ctx || emu_pd_alloc(s->n[i].ctx, &s->n[i].pd))
			return -1;
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
			return -1;
		s->n[i].async_rd = p[0];
		s->n[i].ctx->async_fd = p[1];
	}
	s->n[0].dev.port_priv = &s->n[1].dev;
	s->n[1].dev.port_priv = &s->n[0].dev;
	for (i = 0; i < 2; i++) {
		struct emu_dev *peer = &s->n[1 - i].dev;

		emu_neigh_update(&s->n[i].dev, &peer->gids[1], peer->mac);
		emu_neigh_update(&s->n[i].dev, &s->n[i].dev.gids[1], s->n[i].dev.mac);
	}
	return 0;
}

void sim_drop_queued(struct sim *s)
{
	(void)s;
	while (q_head) {
		struct sim_frame *f = q_head;

		q_head = f->next;
		sim_txbuf_put(f->from);
		free(f->data);
		free(f);
	}
	q_tail = NULL;
	q_len = 0;
	sim_set_backlog();
}

void sim_fini(struct sim *s)
{
	int i;

	sim_drop_queued(s);
	for (i = 0; i < 2; i++) {
		emu_dev_fini(&s->n[i].dev);
		close(s->n[i].async_rd);
	}
	emu_clock_set(NULL);
	q_sim = NULL;
	sim_cost_ns[0] = sim_cost_ns[1] = 0;
	sim_txbufs[0] = sim_txbufs[1] = 0;
	sim_txfail[0] = sim_txfail[1] = 0;
	sim_txused[0] = sim_txused[1] = 0;
	sim_flushes[0] = sim_flushes[1] = 0;
	sim_tx_hook = NULL;
}

void sim_fault(struct sim *s, int i, const struct emu_fault_cfg *cfg)
{
	struct emu_dev *d = &s->n[i].dev;

	emu_fault_free(d->fault);
	d->fault = cfg ? emu_fault_new(cfg) : NULL;
}

/* Take the frame at the head of the queue (the caller frees it). */
static struct sim_frame *sim_pop(void)
{
	struct sim_frame *f = q_head;

	q_head = f->next;
	if (!q_head)
		q_tail = NULL;
	q_len--;
	return f;
}

static void sim_rx_frame(struct sim *s, struct sim_frame *f)
{
	/* one of its own frames: our addresses as its source are no forgery */
	f->to->rx_self = f->from >= 0 && f->to == &s->n[f->from].dev;
	if (!sim_hook || sim_hook(s, f->to == &s->n[1].dev, f->data, f->len))
		emu_port_rx_frame(f->to, f->data, f->len);
	f->to->rx_self = false;
	s->frames++;
}

static void sim_free_list(struct sim_frame *done)
{
	while (done) {
		struct sim_frame *f = done;

		done = f->next;
		sim_txbuf_put(f->from);
		free(f->data);
		free(f);
	}
}

/* Timers and coalesced ACKs of both nodes, as at the end of an engine turn. */
static void sim_poll_nodes(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		emu_xport_poll(&s->n[i].dev, sim_now);
		emu_port_poll(&s->n[i].dev, sim_now);
	}
}

static uint64_t sim_next_deadline(struct sim *s)
{
	uint64_t t = UINT64_MAX, u;

	if (sim_wire && (u = sim_wire->next()) < t)
		t = u;
	for (int i = 0; i < 2; i++) {
		u = emu_xport_next_deadline(&s->n[i].dev);
		if (u < t)
			t = u;
		u = emu_port_next_deadline(&s->n[i].dev);
		if (u < t)
			t = u;
	}
	return t;
}

/* Each node's RX burst (emu_rx_burst_begin), as each device of the daemon
 * has its engine thread's. */
static struct emu_burst sim_burst[2];

/* One engine turn: untimed, everything queued (and whatever it causes);
 * timed, at most SIM_BURST frames, each costing its receiver's processing
 * time before it is handled. */
static void sim_turn(struct sim *s)
{
	struct sim_frame *done = NULL; /* payloads live until the burst ends */
	unsigned limit = sim_timed() ? SIM_BURST : UINT_MAX;

	if (sim_wire)
		sim_wire->run(sim_now);
	if (sim_batch && q_head)
		for (int i = 0; i < 2; i++)
			emu_rx_burst_begin(&s->n[i].dev, &sim_burst[i]);
	for (unsigned n = 0; q_head && n < limit; n++) {
		struct sim_frame *f = sim_pop();

		sim_set_backlog();
		sim_now += sim_cost_ns[sim_node_of(f->to)];
		sim_rx_frame(s, f);
		f->next = done;
		done = f;
	}
	if (sim_batch)
		for (int i = 0; i < 2; i++)
			emu_rx_burst_end(&s->n[i].dev);
	sim_free_list(done);
}

void sim_run(struct sim *s, uint64_t max_ns)
{
	uint64_t end = sim_now + max_ns;
	unsigned long guard = 0;

	while (guard++ < 10000000ul) {
		uint64_t t;

		sim_turn(s);
		sim_poll_nodes(s);
		if (q_head) {
			if (sim_now > end)
				break;
			continue;
		}
		t = sim_next_deadline(s);
		if (t == UINT64_MAX || t > end)
			break;
		if (t > sim_now)
			sim_now = t;
	}
}

int sim_mr(struct sim_node *n, size_t len, unsigned access, struct sim_mr *mr)
{
	struct uroce_reg_mr_req q;
	struct uroce_reg_mr_rep r;

	memset(mr, 0, sizeof(*mr));
	mr->buf = aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (!mr->buf)
		return -ENOMEM;
	memset(mr->buf, 0, len);
	mr->len = len;
	memset(&q, 0, sizeof(q));
	q.pd = n->pd;
	q.access = access;
	q.addr = (uintptr_t)mr->buf;
	q.length = len;
	q.iova = (uintptr_t)mr->buf;
	if (emu_mr_reg(n->ctx, &q, &r))
		return -EINVAL;
	mr->handle = r.handle;
	mr->lkey = r.lkey;
	mr->rkey = r.rkey;
	return 0;
}

int sim_qp(struct sim_node *n, enum ibv_qp_type type, uint32_t max_wr, struct sim_qp *q,
	   int srq_handle)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = max_wr, .max_recv_wr = max_wr, .max_send_sge = 4,
		.max_recv_sge = 4, .max_inline_data = 64,
	};

	return sim_qp_cap(n, type, &cap, 0, q, srq_handle);
}

int sim_qp_cap(struct sim_node *n, enum ibv_qp_type type, const struct ibv_qp_cap *cap,
	       uint32_t cqe, struct sim_qp *q, int srq_handle)
{
	uint32_t max_wr = cap->max_send_wr > cap->max_recv_wr ? cap->max_send_wr
							      : cap->max_recv_wr;
	struct uroce_create_cq_req cq;
	struct uroce_create_cq_rep cqr;
	struct uroce_create_qp_req qr;
	struct uroce_create_qp_rep qrep;
	uint32_t h[2];
	int fd, i;

	memset(q, 0, sizeof(*q));
	q->node = n;
	for (i = 0; i < 2; i++) {
		memset(&cq, 0, sizeof(cq));
		cq.cqe = cqe ? cqe : 4 * max_wr + 16;
		cq.channel = -1;
		cq.user_handle = 0xc0 + (uint64_t)i;
		if (emu_cq_create(n->ctx, &cq, &cqr, &fd))
			return -1;
		h[i] = cqr.handle;
	}
	q->scq = emu_ctx_get(n->ctx, h[0], EMU_OBJ_CQ);
	q->rcq = emu_ctx_get(n->ctx, h[1], EMU_OBJ_CQ);
	memset(&qr, 0, sizeof(qr));
	qr.pd = n->pd;
	qr.send_cq = h[0];
	qr.recv_cq = h[1];
	qr.srq = srq_handle;
	qr.qp_type = type;
	qr.cap = *cap;
	qr.user_handle = 0x9900;
	if (emu_qp_create(n->ctx, &qr, &qrep, &fd))
		return -1;
	q->handle = qrep.handle;
	q->qp = emu_ctx_get(n->ctx, qrep.handle, EMU_OBJ_QP);
	return q->qp ? 0 : -1;
}

int sim_connect(struct sim_qp *a, struct sim_qp *b, enum ibv_mtu mtu)
{
	const struct sim_conn c = {
		.mtu = mtu,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE,
		.psn = -1, .rd_atomic = 4, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};

	return sim_connect_with(a, b, &c);
}

/* the PSN qp starts from: the connection's, sim_psn_start's, or from the QPN */
static uint32_t sim_start_psn(const struct sim_conn *c, const struct emu_qp *qp)
{
	if (c->psn >= 0)
		return (uint32_t)c->psn;
	return sim_psn_start >= 0 ? (uint32_t)sim_psn_start : 0x100 + qp->qpn * 7;
}

int sim_connect_with(struct sim_qp *a, struct sim_qp *b, const struct sim_conn *c)
{
	struct ibv_qp_attr at;
	struct emu_qp *qp = a->qp;
	int r;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.pkey_index = 0;
	at.port_num = 1;
	at.qp_access_flags = c->access;
	at.qkey = 0x11111111;
	if (qp->type == IBV_QPT_UD)
		r = emu_qp_modify(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	else
		r = emu_qp_modify(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	if (qp->type == IBV_QPT_UD) {
		r = emu_qp_modify(qp, &at, IBV_QP_STATE);
	} else {
		at.path_mtu = c->mtu;
		at.dest_qp_num = b->qp->qpn;
		at.rq_psn = sim_start_psn(c, b->qp);
		at.max_dest_rd_atomic = c->rd_atomic;
		at.min_rnr_timer = 1;
		at.ah_attr.is_global = 1;
		at.ah_attr.port_num = 1;
		at.ah_attr.grh.sgid_index = 1;
		at.ah_attr.grh.dgid = b->node->dev.gids[1];
		at.ah_attr.grh.hop_limit = 64;
		r = emu_qp_modify(qp, &at,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN |
					  (qp->type == IBV_QPT_RC
						   ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
						   : 0));
	}
	if (r)
		return r;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = sim_start_psn(c, qp);
	at.timeout = c->timeout;
	at.retry_cnt = c->retry_cnt;
	at.rnr_retry = c->rnr_retry;
	at.max_rd_atomic = c->rd_atomic;
	return emu_qp_modify(qp, &at,
			     IBV_QP_STATE | IBV_QP_SQ_PSN |
				     (qp->type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
								      IBV_QP_RNR_RETRY |
								      IBV_QP_MAX_QP_RD_ATOMIC
							     : 0));
}

void sim_post_send(struct sim_qp *q, const struct uroce_send_wqe *w,
		   const struct uroce_sge *sge, const void *inl)
{
	struct emu_ring *r = &q->qp->sq;
	uint32_t prod = r->hdr->prod;
	uint8_t *slot = emu_ring_slot(r, prod);

	memcpy(slot, w, sizeof(*w));
	if (w->send_flags & IBV_SEND_INLINE)
		memcpy(slot + UROCE_SEND_WQE_HDR, inl, w->inline_len);
	else if (w->num_sge)
		memcpy(slot + UROCE_SEND_WQE_HDR, sge, w->num_sge * sizeof(*sge));
	__atomic_store_n(&r->hdr->prod, prod + 1, __ATOMIC_RELEASE);
	emu_xport_sq_kick(q->qp);
}

void sim_post_recv(struct sim_qp *q, uint64_t wr_id, const struct uroce_sge *sge,
		   unsigned nsge)
{
	struct emu_ring *r = &q->qp->rq;
	uint32_t prod = r->hdr->prod;
	uint8_t *slot = emu_ring_slot(r, prod);
	struct uroce_recv_wqe h = { .wr_id = wr_id, .num_sge = nsge };

	memcpy(slot, &h, sizeof(h));
	memcpy(slot + UROCE_RECV_WQE_HDR, sge, nsge * sizeof(*sge));
	__atomic_store_n(&r->hdr->prod, prod + 1, __ATOMIC_RELEASE);
	emu_xport_rq_kick(q->qp);
}

int sim_poll(struct emu_cq *cq, struct uroce_cqe *out, int max)
{
	uint32_t cons = cq->hdr->cons;
	uint32_t prod = __atomic_load_n(&cq->hdr->prod, __ATOMIC_ACQUIRE);
	int n = 0;

	while (cons != prod && n < max) {
		const struct uroce_cqe *e = &cq->slots[cons & cq->mask];
		const struct uroce_cqe_inl *s = &cq->inl[cons & cq->mask];
		uint32_t off = 0;

		/* as the shim does: a small payload left in the ring goes to
		 * the receive buffer before the completion is seen */
		for (unsigned i = 0; i < e->inl_nseg && i < UROCE_CQE_INL_SEGS; i++) {
			uint32_t l = s->seg[i].len;

			if (l > e->byte_len - off)
				l = e->byte_len - off;
			memcpy((void *)(uintptr_t)s->seg[i].addr, s->data + off, l);
			off += l;
		}
		out[n++] = *e;
		cons++;
	}
	__atomic_store_n(&cq->hdr->cons, cons, __ATOMIC_RELEASE);
	return n;
}

int sim_events(struct sim_node *n, struct uroce_async_event *out, int max)
{
	int k = 0;

	while (k < max && read(n->async_rd, &out[k], sizeof(out[k])) == (ssize_t)sizeof(out[k]))
		k++;
	return k;
}

int sim_srq(struct sim_node *n, uint32_t max_wr, uint32_t max_sge)
{
	struct uroce_create_srq_req q;
	struct uroce_create_srq_rep r;
	int fd;

	memset(&q, 0, sizeof(q));
	q.pd = n->pd;
	q.max_wr = max_wr;
	q.max_sge = max_sge;
	q.user_handle = 0x5500;
	if (emu_srq_create(n->ctx, &q, &r, &fd))
		return -1;
	return (int)r.handle;
}

void sim_post_srq_recv(struct emu_srq *srq, uint64_t wr_id, const struct uroce_sge *sge,
		       unsigned nsge)
{
	struct emu_ring *r = &srq->rq;
	uint32_t prod = r->hdr->prod;
	uint8_t *slot = emu_ring_slot(r, prod);
	struct uroce_recv_wqe h = { .wr_id = wr_id, .num_sge = nsge };

	memcpy(slot, &h, sizeof(h));
	memcpy(slot + UROCE_RECV_WQE_HDR, sge, nsge * sizeof(*sge));
	__atomic_store_n(&r->hdr->prod, prod + 1, __ATOMIC_RELEASE);
	emu_xport_srq_kick(srq);
}
