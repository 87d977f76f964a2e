/* SPDX-License-Identifier: MIT */
/* Helpers shared by the transport tests built on sim.h: a connected QP pair
 * with one MR per side, WQE builders, event and CQ helpers, frame helpers
 * for sim_hook, and a main() that runs tests by name. */
#ifndef XPORT_PAIR_H
#define XPORT_PAIR_H

#include "sim.h"
#include "xport_int.h"

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

struct pair {
	struct sim s;
	struct sim_qp a, b;
	struct sim_mr ma, mb;
};

int pair_setup(struct pair *p, enum ibv_qp_type t, enum ibv_mtu mtu, size_t mrlen);
/* The same with both QPs of capabilities cap (sim_qp_cap, default CQs) */
int pair_setup_cap(struct pair *p, enum ibv_qp_type t, enum ibv_mtu mtu, size_t mrlen,
		   const struct ibv_qp_cap *cap);
void pair_fini(struct pair *p);
/* A UD address handle on A's node for B's GID 1 (IPv4-mapped) with the
 * traffic class tclass: 0, or -1 after one line. */
int pair_ah(struct pair *p, uint8_t tclass, uint32_t *ahh);

void xt_fill(void *buf, size_t len, uint32_t seed);
/* every one of the len bytes at b is 0 */
bool xt_zero(const void *b, size_t len);
struct uroce_sge xt_sge(struct sim_mr *m, size_t off, uint32_t len);
void xt_wqe(struct uroce_send_wqe *w, uint64_t wr_id, uint8_t op, unsigned nsge);
/* Post one signaled WR from A: SGE [off, off+len) of A's MR; WRITE/READ/
 * atomic at B's MR + roff. */
void xt_post(struct pair *p, uint64_t id, uint8_t op, uint32_t off, uint32_t len,
	     uint32_t roff);
/* Occurrences of event t on node n (consumes every pending event). */
int xt_events(struct sim_node *n, enum ibv_event_type t);
uint32_t xt_rng(uint64_t *st);

/* Parse a frame on the simulated wire (false if it is not RoCE). */
bool xt_parse(const uint8_t *frame, uint32_t len, struct wire_pkt *pkt);
/* Rebuild frame from pkt in place (same length): for hooks that edit
 * headers (ECN, PSN) and need the checksums and ICRC right again. */
void xt_rebuild(uint8_t *frame, uint32_t len, struct wire_pkt *pkt);

struct xt_test {
	const char *name;
	int (*fn)(void);
};
int xt_main(const struct xt_test *t, unsigned n, int argc, char **argv);

#endif
