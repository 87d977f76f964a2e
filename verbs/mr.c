/* SPDX-License-Identifier: MIT */
/* Memory regions and memory windows (protection domains: pd.c). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"
#include "urv_verbs.h"

/* fork: what rdma-core's ibv_reg_mr / ibv_dereg_mr do for every provider
 * (libibverbs' own ibv_dontfork_range and ibv_dofork_range: MADV_DONTFORK
 * while registered once ibv_fork_init or RDMAV_FORK_SAFE asked for it,
 * unless the kernel copies pinned pages at fork, IBV_FORK_UNNEEDED). Not
 * for ODP registrations, as there. */
typedef int (*urv_fork_fn)(void *, size_t);
static urv_fork_fn urv_fork_fns[2];
static pthread_once_t urv_fork_once = PTHREAD_ONCE_INIT;

/* both at once, before the first registration: the undo after a failed
 * one must not need the dynamic loader (which may mmap, and a client
 * whose memory the daemon is reading through a blocked fault has its
 * mmap lock held until that fault ends) */
static void urv_fork_load(void)
{
	urv_fork_fns[0] = (urv_fork_fn)urv_real_sym("ibv_dofork_range", "IBVERBS_1.1");
	urv_fork_fns[1] = (urv_fork_fn)urv_real_sym("ibv_dontfork_range", "IBVERBS_1.1");
}

static int urv_fork_range(void *addr, size_t len, unsigned access, bool dont)
{
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	pthread_once(&urv_fork_once, urv_fork_load);
	return urv_fork_fns[dont] ? urv_fork_fns[dont](addr, len) : 0;
}

struct ibv_mr *urv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  uint64_t iova, unsigned access)
{
	struct uroce_reg_mr_req req = {
		.pd = pd->handle,
		.access = access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE,
		.addr = (uintptr_t)addr,
		.length = len,
		.iova = iova,
	};
	struct uroce_reg_mr_rep rep;
	struct urv_mr *umr;
	struct ibv_mr *mr;
	int ret;

	umr = calloc(1, sizeof(*umr));
	if (!umr) {
		errno = ENOMEM;
		return NULL;
	}
	if (urv_fork_range(addr, len, access, true)) {
		free(umr);
		return NULL;
	}
	/* the kernel pins the pages before the daemon hears of them */
	ret = urv_pin_reg(to_uctx(pd->context), addr, len, req.access, &umr->pin);
	if (!ret) {
		req.pin = umr->pin.pin;
		req.slot = umr->pin.slot;
		req.why = umr->pin.why;
		ret = urv_ctl(to_uctx(pd->context), UROCE_OP_REG_MR, &req, sizeof(req),
			      &rep, sizeof(rep), NULL, 0, NULL, 0);
		if (ret)
			urv_pin_unreg(to_uctx(pd->context), &umr->pin);
	}
	if (ret) {
		urv_fork_range(addr, len, access, false);
		free(umr);
		errno = -ret;
		return NULL;
	}
	umr->iova = iova;
	umr->access = req.access;
	mr = &umr->ibmr;
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->handle = rep.handle;
	mr->lkey = rep.lkey;
	mr->rkey = rep.rkey;
	urv_mr_map(to_uctx(pd->context), umr);
	return mr;
}

int urv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		 void *addr, size_t len, int access)
{
	struct uroce_rereg_mr_req req = {
		.handle = mr->handle,
		.flags = (uint32_t)flags,
		/* the daemon reads it only with CHANGE_PD (mr->pd may be a
		 * parent domain gone since) */
		.pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0,
		.access = (uint32_t)access & ~(uint32_t)IBV_ACCESS_OPTIONAL_RANGE,
		.addr = (uintptr_t)((flags & IBV_REREG_MR_CHANGE_TRANSLATION) ?
				    addr : mr->addr),
		.length = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? len :
			mr->length,
	};
	struct urv_mr *umr = urv_container_of(mr, struct urv_mr, ibmr);
	struct uroce_reg_mr_rep rep;
	struct urv_pin_ref pin = umr->pin;
	int ret;

	if (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
		      IBV_REREG_MR_CHANGE_ACCESS))
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !len))
		return IBV_REREG_MR_ERR_INPUT;
	/* a new translation is addressed by its virtual address, as
	 * ibv_rereg_mr(3) has no iova argument */
	req.iova = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? req.addr : umr->iova;
	/* a new translation: its pages pinned before the daemon uses them,
	 * the old ones let go after */
	unsigned acc = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? req.access : umr->access;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (urv_fork_range(addr, len, acc, true))
			return IBV_REREG_MR_ERR_INPUT;
		ret = urv_pin_reg(to_uctx(mr->context), addr, len, acc, &pin);
		if (ret) {
			urv_fork_range(addr, len, acc, false);
			errno = -ret;
			return IBV_REREG_MR_ERR_CMD;
		}
		req.pin = pin.pin;
		req.slot = pin.slot;
		req.why = pin.why;
	}
	ret = urv_ctl(to_uctx(mr->context), UROCE_OP_REREG_MR, &req, sizeof(req),
		      &rep, sizeof(rep), NULL, 0, NULL, 0);
	if (ret) {
		if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
			urv_pin_unreg(to_uctx(mr->context), &pin);
			urv_fork_range(addr, len, acc, false);
		}
		errno = -ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		urv_pin_unreg(to_uctx(mr->context), &umr->pin);
		urv_fork_range(mr->addr, mr->length, umr->access, false);
		umr->pin = pin;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = len;
		umr->iova = req.iova;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		umr->access = req.access;
	mr->lkey = rep.lkey;
	mr->rkey = rep.rkey;
	/* the daemon dropped the mapping of the old registration */
	umr->mapped = false;
	urv_mr_map(to_uctx(mr->context), umr);
	return 0;
}

int urv_dereg_mr(struct ibv_mr *mr)
{
	struct uroce_handle_msg req = { .handle = mr->handle };
	int ret;

	struct urv_mr *umr = urv_container_of(mr, struct urv_mr, ibmr);

	ret = urv_ctl(to_uctx(mr->context), UROCE_OP_DEREG_MR, &req,
		      sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	/* the daemon no longer reaches the pages: the kernel may let them go
	 * (nothing of the application's own view changes) */
	urv_pin_unreg(to_uctx(mr->context), &umr->pin);
	urv_fork_range(mr->addr, mr->length, umr->access, false);
	free(umr);
	return 0;
}

struct ibv_mw *urv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct uroce_alloc_mw_req req = { .pd = pd->handle, .type = type };
	struct uroce_alloc_mw_rep rep;
	struct urv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urv_ctl(to_uctx(pd->context), UROCE_OP_ALLOC_MW, &req, sizeof(req),
		      &rep, sizeof(rep), NULL, 0, NULL, 0);
	if (ret) {
		free(mw);
		errno = -ret;
		return NULL;
	}
	mw->ibmw.context = pd->context;
	mw->ibmw.pd = pd;
	mw->ibmw.rkey = rep.rkey;
	mw->ibmw.handle = rep.handle;
	mw->ibmw.type = type;
	return &mw->ibmw;
}

int urv_dealloc_mw(struct ibv_mw *mw)
{
	struct uroce_handle_msg req = { .handle = mw->handle };
	int ret;

	ret = urv_ctl(to_uctx(mw->context), UROCE_OP_DEALLOC_MW, &req,
		      sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	free(mw);
	return 0;
}

/* Type 1 bind: a BIND_MW WQE on the QP's send queue, as providers do. */
int urv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	struct ibv_send_wr wr, *bad;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = b->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = b->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = b->bind_info;
	ret = urv_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = rkey;
	return ret;
}
