/* SPDX-License-Identifier: MIT */
/* Private to the IB CM engine (ibcm.c): per-source admission of the
 * connection requests (REQ, SIDR_REQ) that come from the wire, before
 * they take an id slot. A SYN flood's defence, sized for RDMA: each
 * source (remote GID) may start at most IBCM_SRC_RATE requests a second
 * (bursts of IBCM_SRC_BURST) and hold at most a budget of passive slots
 * (the engine's: a quarter of its table), so that no host on the wire can
 * take the table from the others (docs/security.md, "CM resources"). */
#ifndef EMU_CM_IBCM_SRC_H
#define EMU_CM_IBCM_SRC_H

#include <stdint.h>
#include <infiniband/verbs.h>

#define IBCM_SRC_RATE  200u   /* requests a second a source may start */
#define IBCM_SRC_BURST 64u    /* ... at once after a quiet time */
#define IBCM_SRC_PROBE 8u     /* hash slots looked at for a source */

/* why a request was not admitted */
enum ibcm_src_verdict {
	IBCM_SRC_OK,
	IBCM_SRC_RATE_LIMITED,  /* dropped, unanswered: the sender retransmits */
	IBCM_SRC_BUSY,          /* the source holds its budget of slots: REJ 3 */
	IBCM_SRC_TABLE_FULL,    /* no room to track one more source: REJ 3 */
};

struct ibcm_srcs;

/* a table for n sources (at least the engine's slots, so that every
 * source holding a slot fits); NULL without memory */
struct ibcm_srcs *ibcm_srcs_new(uint32_t n);
void ibcm_srcs_free(struct ibcm_srcs *t);
/* may a request from gid at now_ns take a slot, with budget slots per
 * source? On IBCM_SRC_OK, *idx is the source's entry for ibcm_src_hold */
enum ibcm_src_verdict ibcm_src_admit(struct ibcm_srcs *t, const union ibv_gid *gid,
				     uint64_t now_ns, uint32_t budget, int32_t *idx);
/* a slot taken / given back by source idx */
void ibcm_src_hold(struct ibcm_srcs *t, int32_t idx);
void ibcm_src_release(struct ibcm_srcs *t, int32_t idx);
/* slots held by source idx (tests, the dump) */
uint32_t ibcm_src_held(const struct ibcm_srcs *t, int32_t idx);

#endif
