/* SPDX-License-Identifier: MIT */
/* What ecn_queue.bpf.c (the marking queue) and its loader ecn_queue.c
 * share: the maps' value layouts. */
#ifndef ECN_QUEUE_H
#define ECN_QUEUE_H

#define ECNQ_MAX_FLOWS 64

struct ecnq_cfg {
	__u64 rate_Bps;    /* the bottleneck (the tbf's rate), bytes per second */
	__u32 kmin, kmax;  /* marking starts above kmin bytes, certain above kmax */
	__u32 pmax_1024;   /* the probability at kmax, in 1/1024 */
	__u32 limit;       /* a frame that would take the queue past this is dropped */
};

struct ecnq_state {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 q;           /* bytes queued after the last frame, at t */
	__u64 t;           /* ns, bpf_ktime_get_ns */
	__u64 rnd;         /* the LCG's state: the seed to begin with */
};

struct ecnq_counters {
	__u64 pkts, bytes; /* passed (marked or not) */
	__u64 ect;         /* RoCEv2 frames that were ECN-capable */
	__u64 marked, dropped;
};

struct ecnq_flow {
	__u64 bytes, pkts, marked;
};

#endif
