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
	if (want == 0)
		return 0;
	static pid_t self;
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
