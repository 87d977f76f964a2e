/* SPDX-License-Identifier: MIT */
/* Application memory access. process_vm_readv/writev move payload between
 * a client process and daemon buffers; a context whose pid is our own (in
 * process tests) is served by memcpy. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu.h"

#define EMU_IOV_BATCH 64

/* Deferred writes: while the engine works through an RX burst, payloads
 * bound for one process are collected (they stay in the burst's mbufs)
 * and written with one process_vm_writev instead of one per packet. Any
 * other access to application memory, every CQE (xp_cq_push) and the end
 * of the burst write them out first, so nothing can observe the delay. */
#define EMU_WB_MAX 64
static __thread struct { /* per worker thread */
	bool on;
	struct emu_ctx *ctx;
	unsigned nl, nr;
	struct iovec lv[EMU_WB_MAX];
	struct emu_rvec rv[EMU_WB_MAX];
	struct emu_qp *qp[EMU_WB_MAX];  /* who asked, per local entry */
	uint8_t r0[EMU_WB_MAX], rn[EMU_WB_MAX]; /* its remote ranges */
} emu_wb;

static int emu_mem_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write);

void emu_mem_flush(void)
{
	unsigned n = emu_wb.nl, nr = emu_wb.nr;

	if (!n)
		return;
	emu_wb.nl = emu_wb.nr = 0;
	if (!emu_mem_xfer(emu_wb.ctx, emu_wb.lv, n, emu_wb.rv, nr, true))
		return;
	/* someone's memory went away: find whose, fail only those QPs */
	for (unsigned i = 0; i < n; i++)
		if (emu_mem_xfer(emu_wb.ctx, &emu_wb.lv[i], 1, &emu_wb.rv[emu_wb.r0[i]],
				 emu_wb.rn[i], true))
			emu_xport_mem_fault(emu_wb.qp[i]);
}

void emu_mem_batch(bool on)
{
	if (!on)
		emu_mem_flush();
	emu_wb.on = on;
}

int emu_mem_write_deferred(struct emu_qp *qp, struct emu_ctx *c, const struct emu_rvec *r,
			   unsigned nr, const void *src, uint32_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len };

	if (!emu_wb.on || !len || nr > EMU_MAX_SGE)
		return emu_mem_xfer(c, &l, 1, r, nr, true);
	if (emu_wb.nl && (emu_wb.ctx != c || emu_wb.nl == EMU_WB_MAX ||
			  emu_wb.nr + nr > EMU_WB_MAX))
		emu_mem_flush();
	emu_wb.ctx = c;
	emu_wb.lv[emu_wb.nl] = l;
	emu_wb.qp[emu_wb.nl] = qp;
	emu_wb.r0[emu_wb.nl] = (uint8_t)emu_wb.nr;
	emu_wb.rn[emu_wb.nl] = (uint8_t)nr;
	emu_wb.nl++;
	for (unsigned i = 0; i < nr; i++)
		emu_wb.rv[emu_wb.nr++] = r[i];
	return 0;
}

static int emu_mem_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write)
{
	struct iovec rv[EMU_IOV_BATCH];
	size_t want = 0, lsum = 0;
	unsigned i;

	for (i = 0; i < nl; i++)
		lsum += l[i].iov_len;
	for (i = 0; i < nr; i++) {
		if (r[i].addr + r[i].len < r[i].addr)
			return -EFAULT;
		want += r[i].len;
	}
	if (want != lsum)
		return -EINVAL;
	if (c->dead && c->nh == 0)
		return -EFAULT; /* the application is gone (zombie context) */
	if (want == 0)
		return 0;
	if (emu_wb.nl)
		emu_mem_flush(); /* keep every access in posting order */
	static __thread pid_t self;
	if (!self)
		self = getpid();
	if (c->pid == self) {
		/* in-process tests: walk both lists */
		unsigned li = 0, ri = 0;
		size_t lo = 0, ro = 0;

		while (li < nl && ri < nr) {
			size_t n = l[li].iov_len - lo;

			if (r[ri].len - ro < n)
				n = r[ri].len - ro;
			uint8_t *lp = (uint8_t *)l[li].iov_base + lo;
			uint8_t *rp = (uint8_t *)(uintptr_t)(r[ri].addr + ro);
			if (n) {
				if (write)
					memmove(rp, lp, n);
				else
					memmove(lp, rp, n);
			}
			lo += n;
			ro += n;
			if (lo == l[li].iov_len) { li++; lo = 0; }
			if (ro == r[ri].len) { ri++; ro = 0; }
		}
		return 0;
	}
	/* the kernel takes up to IOV_MAX (1024) elements a side; the
	 * transport never needs more (32 SGEs, a few remote ranges) */
	if (nl > EMU_IOV_BATCH || nr > EMU_IOV_BATCH)
		return -E2BIG;
	for (i = 0; i < nr; i++) {
		rv[i].iov_base = (void *)(uintptr_t)r[i].addr;
		rv[i].iov_len = r[i].len;
	}
	ssize_t x = write ? process_vm_writev(c->pid, l, nl, rv, nr, 0)
			  : process_vm_readv(c->pid, l, nl, rv, nr, 0);
	if (x < 0)
		return -errno;
	if ((size_t)x != want)
		return -EFAULT;
	return 0;
}

int emu_mem_readv(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		  const struct emu_rvec *remote, unsigned nremote)
{
	return emu_mem_xfer(c, local, nlocal, remote, nremote, false);
}

int emu_mem_writev(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		   const struct emu_rvec *remote, unsigned nremote)
{
	return emu_mem_xfer(c, local, nlocal, remote, nremote, true);
}

int emu_mem_read(struct emu_ctx *c, void *dst, uint64_t addr, size_t len)
{
	struct iovec l = { dst, len };
	struct emu_rvec r = { addr, len };

	return emu_mem_xfer(c, &l, 1, &r, 1, false);
}

int emu_mem_write(struct emu_ctx *c, uint64_t addr, const void *src, size_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len };
	struct emu_rvec r = { addr, len };

	return emu_mem_xfer(c, &l, 1, &r, 1, true);
}
