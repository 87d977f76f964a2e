/* SPDX-License-Identifier: MIT */
/* uroced core: the RX burst, the state an engine thread holds back while
 * it works through one burst of received frames. */
#ifndef EMU_BURST_H
#define EMU_BURST_H

#include <stdbool.h>
#include <sys/uio.h>

#include "emu_mem.h"

/* ------------------------------------------------------------------ */
/* RX burst                                                            */
/* ------------------------------------------------------------------ */
/* What an engine thread holds back while it works through one burst of
 * received frames, so that the burst costs one system call per process
 * for its payloads and one producer-index store per ring for its
 * completions: the deferred payload writes (mem.c), the CQEs (their data
 * goes first) and the SQ consumer indices the burst moved (transport/
 * cqe.c). The object is the worker's own (the daemon's struct emu_worker,
 * a test's simulator), passed to emu_rx_burst_begin, which attaches it to
 * the device until emu_rx_burst_end: everything the device produces
 * meanwhile, down to a flush deep in an error path, queues behind what
 * the burst already holds, in order. A thread that takes a device over
 * from an abandoned one finds the burst it left in d->burst
 * (emu_rx_burst_adopt). */
#define EMU_WB_MAX 64
#define EMU_BURST_CQES 64
struct emu_burst {
	struct {                         /* deferred writes, for one process at a time */
		bool on;
		struct emu_ctx *ctx;
		unsigned nl, nr;
		struct iovec lv[EMU_WB_MAX];
		struct emu_rvec rv[EMU_WB_MAX];
		struct emu_qp *qp[EMU_WB_MAX];  /* who asked, per local entry */
		uint64_t tag[EMU_WB_MAX];       /* and what for */
		uint8_t r0[EMU_WB_MAX], rn[EMU_WB_MAX]; /* its remote ranges */
	} wb;
	bool hold;                       /* CQEs wait in cqe[] */
	unsigned n;
	struct {
		struct emu_qp *qp;
		struct emu_cq *cq;
		struct uroce_cqe e;
		struct uroce_cqe_inl inl; /* used when e.inl_nseg */
	} cqe[EMU_BURST_CQES];
	unsigned nsq;
	struct emu_qp *sq[EMU_BURST_CQES]; /* SQs whose cons moved in the burst */
};

#endif /* EMU_BURST_H */
