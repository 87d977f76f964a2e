/* SPDX-License-Identifier: MIT */
/* Small harness for the verbs semantic tests: a loopback RC pair on one
 * uroce context, bounded waits, and pass (0) / fail (1) / skip (77). */
#ifndef VT_H
#define VT_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define VT_SKIP T_SKIP
#define VT_BUF 65536
#define VT_WAIT_S 20   /* upper bound on any wait: a hang, not a verdict */

/* the C tests' check family: REQUIRE (the verbs tests stop at the first
 * failed step), CHECK (record and go on) */
#include "../include/check.h"

struct vt {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qa, *qb;
	int gid_idx;
	union ibv_gid gid;
};

struct vt_opts {
	int cqe;              /* 0 = 64 */
	bool channel;
	bool shared_cq;       /* scq == rcq */
	int max_send_wr;      /* 0 = 32 */
	int max_recv_wr;
	struct ibv_srq *srq;
};

static inline double vt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in ns, the clock of completion timestamps */
static inline uint64_t vt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct ibv_context *vt_open(void);
int vt_find_gid(struct ibv_context *ctx, union ibv_gid *gid);
void vt_init(struct vt *t, const struct vt_opts *o);
/* qp (just created) to INIT with the access flags access, or a UD QP on
 * to RTS with sq_psn ud_psn (Q_Key 0x11111111): what vt_connect expects */
void vt_qp_start(struct ibv_qp *qp, unsigned access, uint32_t ud_psn);
struct ibv_qp *vt_qp(struct vt *t, enum ibv_qp_type type, struct ibv_cq *scq,
		     struct ibv_cq *rcq, struct ibv_srq *srq, int swr, int rwr);
void vt_connect(struct vt *t, struct ibv_qp *a, struct ibv_qp *b);
/* An address handle of t's PD for t's own GID (loopback, UD) */
struct ibv_ah *vt_ah(struct vt *t);
/* RESET/INIT -> RTR -> RTS towards QP dqpn at dgid (PSNs 100; RC: 4 reads
 * in flight each way, retries 7, timeout 14) */
void vt_qp_up(struct ibv_qp *qp, enum ibv_mtu mtu, uint32_t dqpn, const union ibv_gid *dgid,
	      int sgid_idx);
/* Seeded random numbers for test data: VT_SEED or the time, printed */
unsigned vt_seed(void);
uint32_t vt_rnd(void);
/* ibv_create_qp_ex attributes on t's PD and CQs: nwr WRs and 1 SGE each
 * way, comp_mask IBV_QP_INIT_ATTR_PD | extra */
/* A QP made by ibv_create_qp_ex from a into *qp, moved to INIT with the
 * remote access flags access (vt_connect takes it on): its ibv_qp_ex. */
struct ibv_qp_ex *vt_qp_ex_init(struct vt *t, struct ibv_qp_init_attr_ex *a, unsigned access,
				struct ibv_qp **qp);
void vt_qp_ex_attr(struct vt *t, struct ibv_qp_init_attr_ex *a, enum ibv_qp_type type,
		   uint32_t nwr, uint32_t extra);
void vt_fini(struct vt *t);
void vt_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, size_t off,
		  uint32_t len, uint64_t wr_id);
int vt_post_send(struct ibv_qp *qp, struct ibv_mr *mr, enum ibv_wr_opcode op,
		 size_t off, uint32_t len, unsigned flags, uint32_t imm,
		 uint64_t raddr, uint32_t rkey, uint64_t wr_id);
/* poll until exactly n completions gathered (fails after VT_WAIT_S) */
void vt_poll_n(struct ibv_cq *cq, int n, struct ibv_wc *wc);
/* true if the channel fd becomes readable within ms */
bool vt_readable(int fd, int ms);
void vt_get_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx);

/* Case table and driver shared by the test programs: no argument lists the
 * cases, one argument runs that case (exit 0, or the case aborts). */
struct vt_case {
	const char *name;
	void (*fn)(void);
};
int vt_main(const struct vt_case *cases, size_t n, int argc, char **argv);

#endif
