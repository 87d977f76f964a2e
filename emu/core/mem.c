/* SPDX-License-Identifier: MIT */
/* Application memory access. Payload moves between a client process and
 * daemon buffers through the /proc/<pid>/mem descriptor the client opened
 * on itself and handed over with HELLO (emu_mem_attach): it is bound to
 * that process's address space, not to a pid, so it cannot be redirected
 * by a fork, an exec or pid reuse (docs/security.md). A context without
 * one whose pid is our own (in-process tests) is served by memcpy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"
#include "emu_burst.h"
#include "emu_log.h"

#define EMU_IOV_BATCH 64

/* Deferred writes: while the engine works through an RX burst, payloads
 * bound for one process are collected in the burst (d->burst->wb; they
 * stay in the burst's mbufs) and written with one process_vm_writev
 * instead of one per packet. Any other access to application memory,
 * every CQE (xp_cq_push) and the end of the burst write them out first,
 * so nothing can observe the delay. */
static int emu_mem_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write);

static bool emu_mem_all_mapped(const struct emu_ctx *c, const struct emu_rvec *r, unsigned nr)
{
	if (!c->nmaps)
		return false;
	for (unsigned i = 0; i < nr; i++)
		if (!emu_mrmap_find(c, r[i].addr, r[i].len, true))
			return false;
	return true;
}

void emu_mem_guard_set(struct emu_dev *d, struct emu_mem_guard *g)
{
	d->guard = g;
}

bool emu_mem_guard_abandon(struct emu_mem_guard *g, uint64_t token)
{
	return token && token != EMU_MEM_ABANDONED &&
	       __atomic_compare_exchange_n(&g->token, &token, EMU_MEM_ABANDONED, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Around every system call that may fault on application memory: two
 * stores and a compare-and-swap on a line of our own, no clock. g is the
 * guard as it was when the call began: a thread that takes the device
 * over meanwhile attaches its own. */
static inline uint64_t emu_guard_enter(struct emu_mem_guard *g, struct emu_ctx *c)
{
	uint64_t t;

	if (!g)
		return 0;
	t = ++g->seq;
	if (t == EMU_MEM_ABANDONED)
		t = g->seq = 1;
	__atomic_store_n(&g->ctx, c, __ATOMIC_RELAXED);
	__atomic_store_n(&g->token, t, __ATOMIC_RELEASE);
	return t;
}

static inline void emu_guard_leave(struct emu_mem_guard *g, uint64_t t)
{
	if (!g)
		return;
	if (__atomic_compare_exchange_n(&g->token, &t, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return;
	/* the watchdog gave the device to another engine thread while we
	 * were blocked: everything we were doing is its business now (or
	 * lost), so leave without touching any of it */
	pthread_exit(NULL);
}

void emu_mem_flush(struct emu_dev *d)
{
	struct emu_burst *b = d->burst;

	if (!b || !b->wb.nl)
		return;
	unsigned n = b->wb.nl, nr = b->wb.nr;

	b->wb.nl = b->wb.nr = 0;
	if (!emu_mem_xfer(b->wb.ctx, b->wb.lv, n, b->wb.rv, nr, true))
		return;
	/* someone's memory went away: find whose, fail only those QPs */
	for (unsigned i = 0; i < n; i++)
		if (emu_mem_xfer(b->wb.ctx, &b->wb.lv[i], 1, &b->wb.rv[b->wb.r0[i]],
				 b->wb.rn[i], true))
			b->wb.qp[i]->dev->xops->mem_fault(b->wb.qp[i], b->wb.tag[i]);
}

bool emu_mem_pending(const struct emu_qp *qp)
{
	const struct emu_burst *b = qp->dev->burst;

	for (unsigned i = 0; b && i < b->wb.nl; i++)
		if (b->wb.qp[i] == qp)
			return true;
	return false;
}

void emu_mem_batch(struct emu_dev *d, bool on)
{
	if (!on)
		emu_mem_flush(d);
	if (d->burst)
		d->burst->wb.on = on;
}

int emu_mem_write_deferred(struct emu_qp *qp, struct emu_ctx *c, const struct emu_rvec *r,
			   unsigned nr, const void *src, uint32_t len, uint64_t tag)
{
	struct iovec l = { (void *)(uintptr_t)src, len };
	struct emu_burst *b = qp->dev->burst;

	/* a mapped target costs no system call: nothing to batch */
	if (!b || !b->wb.on || !len || nr > EMU_MAX_SGE || emu_mem_all_mapped(c, r, nr))
		return emu_mem_xfer(c, &l, 1, r, nr, true);
	if (b->wb.nl && (b->wb.ctx != c || b->wb.nl == EMU_WB_MAX ||
			 b->wb.nr + nr > EMU_WB_MAX))
		emu_mem_flush(qp->dev);
	b->wb.ctx = c;
	b->wb.lv[b->wb.nl] = l;
	b->wb.qp[b->wb.nl] = qp;
	b->wb.tag[b->wb.nl] = tag;
	b->wb.r0[b->wb.nl] = (uint8_t)b->wb.nr;
	b->wb.rn[b->wb.nl] = (uint8_t)nr;
	b->wb.nl++;
	for (unsigned i = 0; i < nr; i++)
		b->wb.rv[b->wb.nr++] = r[i];
	return 0;
}

/* One preadv/pwritev per run of contiguous remote ranges, at offset =
 * address: the local iovecs covering the run are sliced out of l. A short
 * transfer (unmapped page, the address space gone after exit or exec)
 * is -EFAULT. */
static int emu_mem_fd_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			   const struct emu_rvec *r, unsigned nr, bool write)
{
	int fd = c->mem_fd;
	struct iovec v[EMU_IOV_BATCH];
	unsigned li = 0, ri = 0;
	size_t lo = 0;

	while (ri < nr) {
		uint64_t addr = r[ri].addr, len = 0;

		while (ri < nr && r[ri].addr == addr + len)
			len += r[ri++].len;
		while (len) {
			unsigned nv = 0;
			size_t got = 0;

			while (got < len && nv < EMU_IOV_BATCH && li < nl) {
				size_t n = l[li].iov_len - lo;

				if (n > len - got)
					n = len - got;
				if (n)
					v[nv++] = (struct iovec){ (uint8_t *)l[li].iov_base + lo, n };
				lo += n;
				got += n;
				if (lo == l[li].iov_len) {
					li++;
					lo = 0;
				}
			}
			if (!got)
				return -EINVAL; /* lengths were checked equal */
			ssize_t x;
			do {
				struct emu_mem_guard *g = c->dev->guard;
				uint64_t t = emu_guard_enter(g, c);
				x = write ? pwritev(fd, v, (int)nv, (off_t)addr)
					  : preadv(fd, v, (int)nv, (off_t)addr);
				int e = errno;
				emu_guard_leave(g, t);
				errno = e;
			} while (x < 0 && errno == EINTR);
			if (x < 0)
				return errno == EIO || errno == ESRCH ? -EFAULT : -errno;
			if ((size_t)x != got)
				return -EFAULT;
			addr += got;
			len -= got;
		}
	}
	return 0;
}

/* The peer's pid in its own (innermost) pid namespace: the last NSpid
 * field of /proc/<pid>/status. 0 or -errno. */
static int emu_proc_nspid(pid_t pid, long *own)
{
	char path[48], line[256];
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *t = strrchr(line, '\t'), *end;
			errno = 0;
			*own = t ? strtol(t + 1, &end, 10) : 0;
			rc = t && !errno && *own > 0 && (*end == '\n' || !*end) ? 0 : -EINVAL;
			break;
		}
	fclose(f);
	return rc;
}

/* fd on a procfs instance other than ours: a client in another container
 * (each mounts its own /proc; another instance has other device and inode
 * numbers even in a shared pid namespace). The kernel's name for the
 * descriptor, ".../<n>/<name>", gives the pid directory in the client's
 * procfs: n must be the peer's pid in its own pid namespace, which we can
 * read only when the peer is visible to us (the daemon in the clients' pid
 * namespace or an ancestor of it: docs/running.md "Containers and CI").
 * The client opened the file itself, with its own rights, so a name that
 * matched by chance would give us nothing it could not reach already. A
 * dead process's entry reads "... (deleted)" and does not match. -ESRCH
 * when the peer is not visible to us, else 0 or -EACCES. */
static int emu_proc_fd_foreign(const struct emu_ctx *c, int fd, const char *name)
{
	char link[48], path[256];
	size_t nl = strlen(name);
	long n, own = 0;
	char *end;

	if (c->pid <= 0) {
		EMU_LOG_RL(NOTICE, "a client in a pid namespace the daemon cannot see (another "
			   "container): run it in the daemon's pid namespace (--pid "
			   "container:NAME) or the daemon in the host's (--pid host)\n");
		return -ESRCH;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0 || (size_t)len < nl + 3 || (size_t)len >= sizeof(path) - 1)
		return -EACCES;
	path[len] = 0;
	if (strcmp(path + len - nl, name) || path[len - nl - 1] != '/')
		return -EACCES;
	path[len - nl - 1] = 0;
	char *dir = strrchr(path, '/');
	if (!dir || dir[1] < '1' || dir[1] > '9')
		return -EACCES;
	errno = 0;
	n = strtol(dir + 1, &end, 10);
	if (errno || *end || emu_proc_nspid(c->pid, &own) || own != n)
		return -EACCES;
	return 0;
}

/* fd must be /proc/<pid>/<name> of the peer itself, opened for reading
 * (and writing, if rw): on our procfs, the same inode as the one that pid
 * names now (a proc inode lives while the descriptor pins it and is never
 * reused for a new process with the same pid); on another (a client in
 * another container), see emu_proc_fd_foreign. 0, -EACCES, or -ESRCH: a
 * client in a pid namespace we cannot see. */
static int emu_proc_fd_check(const struct emu_ctx *c, int fd, const char *name, bool rw)
{
	struct stat fs, ps, ours;
	struct statfs sf;
	char path[48];
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_ACCMODE) != (rw ? O_RDWR : O_RDONLY))
		return -EACCES;
	if (fstatfs(fd, &sf) || sf.f_type != PROC_SUPER_MAGIC || fstat(fd, &fs) ||
	    !S_ISREG(fs.st_mode))
		return -EACCES;
	if (stat("/proc/self", &ours) == 0 && ours.st_dev != fs.st_dev)
		return emu_proc_fd_foreign(c, fd, name);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)c->pid, name);
	if (c->pid <= 0 || stat(path, &ps) || ps.st_dev != fs.st_dev || ps.st_ino != fs.st_ino)
		return -EACCES;
	return 0;
}

int emu_mem_attach(struct emu_ctx *c, int fd, int maps_fd)
{
	if (fd < 0)
		return -EINVAL;
	int rc = emu_proc_fd_check(c, fd, "mem", true);
	if (!rc && maps_fd >= 0)
		rc = emu_proc_fd_check(c, maps_fd, "maps", false);
	if (rc)
		return rc;
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	c->mem_fd = fd;
	if (c->maps_fd >= 0)
		close(c->maps_fd);
	c->maps_fd = maps_fd;
	/* a client without one (an older one, or a test): ours, if we may
	 * open it (a daemon that runs as another user may not) */
	if (maps_fd < 0)
		(void)emu_vma_attach(c);
	return 0;
}

/* The path without a mapping: the client's /proc/<pid>/mem descriptor. */
static int emu_mem_sys_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			    const struct emu_rvec *r, unsigned nr, bool write)
{
	for (unsigned i = 0; i < nr; i++)
		if (r[i].addr + r[i].len > EMU_DM_VA_BASE)
			return -EFAULT; /* device memory is reached only through its piece */
	c->mr_syscall += nr;
	c->dev->cnt.mr_syscall += nr;
	/* getpid() once: the same value for every thread */
	static pid_t self;
	pid_t me = __atomic_load_n(&self, __ATOMIC_RELAXED);
	if (!me) {
		me = getpid();
		__atomic_store_n(&self, me, __ATOMIC_RELAXED);
	}
	if (c->mem_fd < 0 && c->pid == me) {
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
	if (c->mem_fd < 0)
		return -EFAULT;
	return emu_mem_fd_xfer(c, l, nl, r, nr, write);
}

/* Some remote ranges lie in mapped MR pieces (mrmap.c): memcpy those, the
 * rest through the descriptor, range by range in order. */
static int emu_mem_map_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			    const struct emu_rvec *r, unsigned nr, bool write)
{
	uint8_t *mp[EMU_WB_MAX];
	unsigned i, nm = 0, li = 0;
	size_t lo = 0;

	for (i = 0; i < nr; i++)
		nm += (mp[i] = emu_mrmap_find(c, r[i].addr, r[i].len, write)) != NULL;
	if (!nm)
		return emu_mem_sys_xfer(c, l, nl, r, nr, write);
	c->mr_mapped += nm;
	c->dev->cnt.mr_mapped += nm;
	for (i = 0; i < nr; i++) {
		for (uint64_t done = 0; done < r[i].len;) {
			if (li >= nl)
				return -EINVAL; /* lengths were checked equal */
			size_t n = l[li].iov_len - lo;
			if (n > r[i].len - done)
				n = (size_t)(r[i].len - done);
			uint8_t *lp = (uint8_t *)l[li].iov_base + lo;
			int rc;
			if (mp[i]) {
				rc = write ? emu_mrmap_copy(mp[i] + done, lp, n)
					   : emu_mrmap_copy(lp, mp[i] + done, n);
			} else {
				struct iovec v = { lp, n };
				struct emu_rvec rv = { r[i].addr + done, n };
				rc = emu_mem_sys_xfer(c, &v, 1, &rv, 1, write);
			}
			if (rc)
				return rc;
			done += n;
			lo += n;
			if (lo == l[li].iov_len) {
				li++;
				lo = 0;
			}
		}
	}
	return 0;
}

static int emu_mem_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write)
{
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
	if ((c->dead && c->nh == 0) || c->mem_stalled)
		return -EFAULT; /* the application is gone (zombie context) or quarantined */
	if (want == 0)
		return 0;
	/* keep every access to one process in posting order; another
	 * process's pending writes can wait (and a client whose memory
	 * blocks then stalls no other client's packet half-way) */
	struct emu_burst *b = c->dev->burst;
	if (b && b->wb.nl && b->wb.ctx == c)
		emu_mem_flush(c->dev);
	if (c->nmaps && nr <= EMU_WB_MAX)
		return emu_mem_map_xfer(c, l, nl, r, nr, write);
	return emu_mem_sys_xfer(c, l, nl, r, nr, write);
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
