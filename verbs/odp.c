/* SPDX-License-Identifier: MIT */
/* On-demand paging, shim side (docs/verbs.md, "On-demand paging"). The
 * daemon reaches this process's memory through /proc/self/mem, which
 * follows the current mapping and faults pages in on access: every
 * registration behaves as an ODP one, so what ODP adds is what the
 * application can see — the capabilities, implicit registrations, and
 * ibv_advise_mr, whose prefetch faults the pages in here, in the process
 * that owns them, with MADV_POPULATE_READ/WRITE (no byte is touched). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"

/* What works on ODP memory per transport: all of it on RC, XRC (RC's
 * machinery: its receives are SRQ receives) and UC (UC has no READ or
 * atomics to begin with), SEND and receives on UD. */
#define URV_ODP_RC (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
		    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV)
#define URV_ODP_UC (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
		    IBV_ODP_SUPPORT_SRQ_RECV)
#define URV_ODP_UD (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV)
#define URV_ODP_XRC URV_ODP_RC

/* the kernel takes the list as one ioctl attribute of at most 64 KB */
#define URV_ADVISE_MAX (UINT16_MAX / sizeof(struct ibv_sge))

void urv_odp_caps(struct ibv_device_attr_ex *a)
{
	a->odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a->odp_caps.per_transport_caps.rc_odp_caps = URV_ODP_RC;
	a->odp_caps.per_transport_caps.uc_odp_caps = URV_ODP_UC;
	a->odp_caps.per_transport_caps.ud_odp_caps = URV_ODP_UD;
	a->xrc_odp_caps = URV_ODP_XRC;
}

bool urv_mr_odp(const struct urv_mr *umr)
{
	return umr->access & IBV_ACCESS_ON_DEMAND;
}

/* Fault [addr, addr + len) in as the advice asks: 0 or -1. */
static int urv_populate(uint64_t addr, uint64_t len, bool write)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t s = addr & ~(pg - 1), e = addr + len;

	if (!len)
		return 0;
	if (e < addr || e > UINT64_MAX - pg)
		return -1;
	e = (e + pg - 1) & ~(pg - 1);
	for (int tries = 0; tries < 8; tries++) {
		if (!madvise((void *)(uintptr_t)s, e - s,
			     write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
			return 0;
		if (errno != EINTR && errno != EAGAIN)
			break;
	}
	return -1;
}

/* One request's worth of the list: the daemon checks it, then the pages
 * of the good entries are faulted in. An asynchronous prefetch (no
 * FLUSH) reports only a bad key and ignores what cannot be faulted, as
 * mlx5 does from its work queue. */
static int urv_advise_chunk(struct ibv_pd *pd, uint32_t advice, uint32_t flags,
			    const struct ibv_sge *sg, uint32_t n)
{
	struct uroce_advise_mr_req req = { .pd = pd->handle, .advice = advice,
					   .flags = flags, .num_sge = n };
	struct uroce_advise_mr_rep rep;
	bool sync = flags & IBV_ADVISE_MR_FLAG_FLUSH;
	int ret;

	for (uint32_t i = 0; i < n; i++)
		req.sge[i] = (struct uroce_sge){ .addr = sg[i].addr, .length = sg[i].length,
						 .lkey = sg[i].lkey };
	ret = urv_ctl(to_uctx(pd->context), UROCE_OP_ADVISE_MR, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret)
		return -ret;
	if (rep.n_ok > n || rep.err > 0)
		return EIO;
	if (rep.err && !sync)
		return -rep.err;
	for (uint32_t i = 0; advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT && i < rep.n_ok; i++)
		if (urv_populate(rep.seg[i].addr, rep.seg[i].len,
				 advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE) && sync)
			return EFAULT;
	return -rep.err;
}

int urv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sg, uint32_t num_sge)
{
	if (!num_sge || !sg || num_sge > URV_ADVISE_MAX)
		return EINVAL;
	for (uint32_t i = 0; i < num_sge; i += UROCE_ADVISE_MAX_SGE) {
		uint32_t n = num_sge - i < UROCE_ADVISE_MAX_SGE ? num_sge - i :
			UROCE_ADVISE_MAX_SGE;
		int ret = urv_advise_chunk(pd, advice, flags, sg + i, n);

		if (ret)
			return ret;
	}
	return 0;
}
