/* SPDX-License-Identifier: MIT */
/* Transport test harness: two uroce devices joined by a simulated wire
 * (frames queue and are delivered by sim_run, through the core's fault
 * injector), a virtual clock, and the test process as both applications. */
#ifndef XPORT_SIM_H
#define XPORT_SIM_H

#include <stdint.h>
#include <stdio.h>
#include "xport.h"

struct sim_node {
	struct emu_dev dev;
	struct emu_ctx *ctx;
	uint32_t pd;
	int async_rd;        /* read end of the async event pipe */
};

struct sim {
	struct sim_node n[2];
	uint64_t frames;     /* delivered */
};

struct sim_qp {
	struct sim_node *node;
	struct emu_qp *qp;
	struct emu_cq *scq, *rcq;
	uint32_t handle;
};

struct sim_mr {
	void *buf;
	size_t len;
	uint32_t handle, lkey, rkey;
};

extern uint64_t sim_now;
extern int sim_failures;
/* Start PSN of every connection sim_connect makes; -1 = per-QP default. */
extern int64_t sim_psn_start;
/* Called for every frame before delivery (to = receiving node 0/1); may
 * rewrite it in place. Return false to drop it. NULL = none. */
extern bool (*sim_hook)(struct sim *s, int to, uint8_t *frame, uint32_t len);
/* Deliver the queued frames as one RX burst (emu_rx_burst_begin), as the
 * daemon does: placements become deferred writes flushed at its end,
 * before timers and coalesced ACKs run. */
extern bool sim_batch;
/* Processing time of each frame a node receives or sends (ns), per node;
 * sim_fini clears it. Set, sim_run models the loopback daemon: one FIFO
 * for both directions (its ring: a sender above SIM_RING queued frames
 * sees TX back-pressure), one engine taking bursts of 32 frames and then
 * running the timers, the virtual clock advanced by every frame's cost.
 * Both 0: frames take no time and everything queued goes in one turn. */
extern uint64_t sim_cost_ns[2];
/* TX room of each node (0: unlimited; sim_fini clears it): frames
 * allocated and not yet delivered hold a buffer; at the limit the port's
 * tx_room is 0, and a few buffers further (kept for ACKs and NAKs)
 * allocation fails (drop tx-nobuf). */
extern uint32_t sim_txbufs[2];
/* The next allocations of each node that fail as a port out of buffers
 * does (-ENOBUFS, tx-nobuf), whatever its room (sim_fini clears it). */
extern uint32_t sim_txfail[2];
/* TX bursts: each node's port flushes so far (emu_tx_flush; the daemon's
 * one sendto or ring kick each), and a hook seeing every frame a node
 * sends, at its send (the frames a node sends between two flushes leave
 * in one burst). sim_fini clears both. */
extern uint64_t sim_flushes[2];
extern void (*sim_tx_hook)(int from, const uint8_t *frame, uint32_t len);

/* A model of the wire between the nodes (a switch and its queue): take
 * sees every frame sent (to = receiving node) and returns true to keep
 * it (then it owns the malloc'd frame and hands it on with sim_deliver);
 * sim_run calls run with the time at every step and wakes at next
 * (UINT64_MAX: nothing to do). NULL: frames go straight through. */
struct sim_wire {
	bool (*take)(int to, uint8_t *frame, uint32_t len);
	void (*run)(uint64_t now);
	uint64_t (*next)(void);
};
extern const struct sim_wire *sim_wire;
/* Queue a frame for delivery to node to, now (ownership passes). */
void sim_deliver(int to, uint8_t *frame, uint32_t len);

/* the failure count is global: pair.c and the test files check */
#define T_FAILURES sim_failures
#include "../include/check.h"

int sim_init(struct sim *s);
void sim_fini(struct sim *s);
/* Fault injection on frames arriving at node i (NULL cfg = none). */
void sim_fault(struct sim *s, int i, const struct emu_fault_cfg *cfg);
/* Deliver frames and fire timers until idle or max_ns of virtual time. */
void sim_run(struct sim *s, uint64_t max_ns);
/* Drop every frame currently queued (a cut cable). */
void sim_drop_queued(struct sim *s);

int sim_mr(struct sim_node *n, size_t len, unsigned access, struct sim_mr *mr);
int sim_qp(struct sim_node *n, enum ibv_qp_type type, uint32_t max_wr, struct sim_qp *q,
	   int srq_handle);
/* Same with explicit capabilities (max_send_sge, max_recv_sge, inline) and
 * CQs of cqe entries (0 = default). */
int sim_qp_cap(struct sim_node *n, enum ibv_qp_type type, const struct ibv_qp_cap *cap,
	       uint32_t cqe, struct sim_qp *q, int srq_handle);
/* An SRQ of n with max_wr entries: its handle, or -1. */
int sim_srq(struct sim_node *n, uint32_t max_wr, uint32_t max_sge);
void sim_post_srq_recv(struct emu_srq *srq, uint64_t wr_id, const struct uroce_sge *sge,
		       unsigned nsge);
/* RESET -> INIT -> RTR -> RTS towards peer (UD: no AV). */
int sim_connect(struct sim_qp *a, struct sim_qp *b, enum ibv_mtu mtu);
/* The attributes sim_connect_with gives (RC's timers and depths only for RC) */
struct sim_conn {
	enum ibv_mtu mtu;
	unsigned access;         /* qp_access_flags */
	int64_t psn;             /* sq_psn and rq_psn; -1: sim_psn_start's rule */
	uint8_t rd_atomic;       /* max_rd_atomic and max_dest_rd_atomic */
	uint8_t timeout, retry_cnt, rnr_retry;
};
int sim_connect_with(struct sim_qp *a, struct sim_qp *b, const struct sim_conn *c);

void sim_post_send(struct sim_qp *q, const struct uroce_send_wqe *w,
		   const struct uroce_sge *sge, const void *inl);
void sim_post_recv(struct sim_qp *q, uint64_t wr_id, const struct uroce_sge *sge,
		   unsigned nsge);
int sim_poll(struct emu_cq *cq, struct uroce_cqe *out, int max);
/* Async events of node: returns count read into out. */
int sim_events(struct sim_node *n, struct uroce_async_event *out, int max);

#endif
