/* SPDX-License-Identifier: MIT */
/* Gather and scatter through SGE lists: every piece checked against its
 * key, bounds, access and the message's MR epoch, then moved through the
 * core's application memory (emu_mem_readv / writev, deferred writes,
 * small payloads for the CQ ring, zero-copy sources). */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include "xport_int.h"

/* Whose memory an SGE list is in: the responder's receive WQE may be an
 * XRC SRQ's, of another process of the TGT QP's domain. */
static struct emu_ctx *xp_sge_owner(const struct emu_qp *qp, const struct uroce_sge *sge)
{
	return qp->x->rwqe && sge == qp->x->rwqe->sge ? xp_recv_ctx(qp) : qp->ctx;
}

/* Remote ranges of [off, off + len) of an SGE list, each piece checked
 * (see xp_sge_copyv). n ranges or -errno; *odp (if given) tells whether
 * one of them is in an on-demand-paging MR. */
static int xp_sge_ranges(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
			 uint32_t off, uint64_t len, unsigned access, uint64_t epoch,
			 struct emu_rvec *rv, bool *odp)
{
	unsigned n = 0, i;
	uint64_t left = len;
	/* the responder scatters through the receive WQE it took */
	struct emu_pd *pd = qp->x->rwqe && sge == qp->x->rwqe->sge ? xp_recv_pd(qp) : qp->pd;

	for (i = 0; i < nsge && left && n < EMU_MAX_SGE; i++) {
		uint32_t l = sge[i].length;
		int err = 0;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > left)
			l = (uint32_t)left;
		rv[n].addr = sge[i].addr + off;
		rv[n].len = l;
		struct emu_mr *mr = emu_mr_check_lkey(pd, sge[i].lkey, rv[n].addr, l,
						      access, &err);
		if (!mr || mr->gen > epoch)
			return -EACCES;
		rv[n].addr = mr->addr + (rv[n].addr - emu_mr_lbase(mr)); /* DM: its piece */
		rv[n].mr = mr;
		if (odp && (mr->access & IBV_ACCESS_ON_DEMAND))
			*odp = true;
		/* ODP memory: only where the process maps it readable, or
		 * writable for a placement (xp_sge_inline, which asks for odp,
		 * places nothing there itself) */
		else if (emu_mr_odp_access(mr, rv[n].addr, l, access & IBV_ACCESS_LOCAL_WRITE))
			return -EFAULT;
		n++;
		left -= l;
		off = 0;
	}
	if (left)
		return -EMSGSIZE;
	return (int)n;
}

int xp_sge_copyv(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		 uint32_t off, const struct iovec *lv, unsigned nl, bool to_app,
		 unsigned access, uint64_t epoch)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	uint64_t len = 0;
	int n;

	for (unsigned i = 0; i < nl; i++)
		len += lv[i].iov_len;
	if (!len)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, off, len, access, epoch, rv, NULL);
	if (n < 0)
		return n;
	return to_app ? emu_mem_writev(xp_sge_owner(qp, sge), lv, nl, rv, (unsigned)n)
		      : emu_mem_readv(xp_sge_owner(qp, sge), lv, nl, rv, (unsigned)n);
}

bool xp_sge_zc(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge, uint32_t off,
	       uint64_t epoch, struct xp_txf *f)
{
	struct emu_rvec rv[EMU_MAX_SGE];

	if (f->len < XP_ZC_MIN || !emu_tx_zc_ok(qp->dev))
		return false;
	/* a failing check is the copy's to report, as before */
	if (xp_sge_ranges(qp, sge, nsge, off, f->len, 0, epoch, rv, NULL) != 1)
		return false;
	return xp_txf_zc(qp, f, rv[0].mr, rv[0].addr);
}

int xp_sge_write_deferred(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
			  uint32_t off, const void *src, uint32_t len, uint64_t epoch,
			  uint64_t tag)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	int n;

	if (!len)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, off, len, IBV_ACCESS_LOCAL_WRITE, epoch, rv, NULL);
	if (n < 0)
		return n;
	return emu_mem_write_deferred(qp, xp_sge_owner(qp, sge), rv, (unsigned)n, src, len, tag);
}

unsigned xp_sge_inline(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		       const void *src, uint32_t len, uint64_t epoch,
		       struct uroce_cqe_inl *inl)
{
	struct emu_rvec rv[EMU_MAX_SGE];
	bool odp = false;
	int n;

	if (!len || len > UROCE_CQE_INL_DATA)
		return 0;
	n = xp_sge_ranges(qp, sge, nsge, 0, len, IBV_ACCESS_LOCAL_WRITE, epoch, rv, &odp);
	/* ODP memory may be unmapped by the time the shim would copy the
	 * bytes in: the daemon places them and a missing page is an error
	 * completion, not a SIGSEGV in the application */
	if (n <= 0 || n > UROCE_CQE_INL_SEGS || odp)
		return 0;
	for (int i = 0; i < n; i++)
		if (rv[i].addr >= EMU_DM_VA_BASE)
			return 0; /* device memory: the shim has no address to copy to */
	for (int i = 0; i < n; i++) {
		inl->seg[i].addr = rv[i].addr;
		inl->seg[i].len = (uint32_t)rv[i].len;
		inl->seg[i].rsvd = 0;
	}
	memcpy(inl->data, src, len);
	return (unsigned)n;
}

int xp_sge_copy(struct emu_qp *qp, const struct uroce_sge *sge, unsigned nsge,
		uint32_t off, void *buf, uint32_t len, bool to_app, unsigned access,
		uint64_t epoch)
{
	struct iovec lv = { buf, len };

	return xp_sge_copyv(qp, sge, nsge, off, &lv, 1, to_app, access, epoch);
}
