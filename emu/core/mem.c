/* SPDX-License-Identifier: MIT */
/* Application memory access: the route of each remote range is its
 * registration's (docs/verbs.md, "Registered memory"): pieces the daemon
 * maps are copied with memcpy (mrmap.c), pinned registrations move through
 * the client's io_uring (pin.c), registrations the kernel could not pin
 * through process_vm_readv/writev with the client's credentials (below),
 * ODP registrations and bare addresses through the /proc/<pid>/mem
 * descriptor the client opened on itself and handed over with HELLO
 * (emu_mem_attach): it is bound to that process's address space, not to a
 * pid, so it cannot be redirected by a fork, an exec or pid reuse
 * (docs/security.md). A context without one whose pid is our own
 * (in-process tests) is served by memcpy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu_log.h"
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
		if (!r[i].mr || !emu_mrmap_at(r[i].mr, r[i].addr, r[i].len, true))
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

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; Debian 12's headers predate it */
#endif

/* The process at the other end of the control socket, as a pidfd (pin.c
 * takes the client's ring through it). The kernel's own answer first
 * (SO_PEERPIDFD): it names the process that connected whatever pid
 * namespace it is in, also one the daemon cannot see (SO_PEERCRED's pid
 * is 0 then), and no pid can be reused under it. Older kernels: the pid,
 * opened before the caller compares its mem inode with the descriptor's
 * (a pid is not reused while its process lives, so a match proves the
 * pidfd is the client's). -1: none; such a client's registrations are
 * not pinned (docs/verbs.md, "Registered memory"). */
int emu_ctx_pidfd(const struct emu_ctx *c)
{
	int pidfd = -1;
	socklen_t l = sizeof(pidfd);

	if (c->sock >= 0 && !getsockopt(c->sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &l) &&
	    l == sizeof(pidfd) && pidfd >= 0)
		return pidfd;
	return c->pid > 0 ? (int)syscall(SYS_pidfd_open, c->pid, 0) : -1;
}

int emu_mem_attach(struct emu_ctx *c, int fd, int maps_fd)
{
	if (fd < 0)
		return -EINVAL;
	/* the pidfd before the checks: on a kernel without SO_PEERPIDFD it is
	 * opened by pid, and the mem inode's match below proves it names the
	 * client (emu_ctx_pidfd) */
	int pidfd = emu_ctx_pidfd(c);
	int rc = emu_proc_fd_check(c, fd, "mem", true);
	if (!rc && maps_fd >= 0)
		rc = emu_proc_fd_check(c, maps_fd, "maps", false);
	if (rc) {
		if (pidfd >= 0)
			close(pidfd);
		return rc;
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = pidfd;
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

/* ---------------- registrations the kernel could not pin ---------------- */

/* process_vm_readv/writev honour the process's protections (no
 * FOLL_FORCE) and charge a page they fault in to the process's memory
 * cgroup, but name the process by pid. A daemon with the privilege to
 * reach any process (root) therefore runs each call with the client's
 * ids, as the thread's own credentials (raw system calls: the C library
 * would change every thread's): the kernel's ptrace rule then lets it
 * reach what a process of that user could, never the image of a setuid
 * program the client executed, nor another user's process that reused
 * the pid. A daemon without that privilege reaches what its own user can. */
static int emu_pvm_creds(const struct emu_ctx *c, bool as_client)
{
	static int root = -1;

	if (root < 0)
		root = geteuid() == 0;
	if (!root || c->uid == 0)
		return 0;
	if (as_client) {
		if (syscall(SYS_setresgid, c->gid, c->gid, (gid_t)-1) ||
		    syscall(SYS_setresuid, c->uid, c->uid, (uid_t)-1)) {
			(void)syscall(SYS_setresgid, 0, 0, (gid_t)-1);
			return -EPERM;
		}
		return 0;
	}
	/* the saved uid stayed 0: this cannot fail */
	if (syscall(SYS_setresuid, 0, 0, (uid_t)-1) || syscall(SYS_setresgid, 0, 0, (gid_t)-1))
		EMU_LOG(ERR, "could not take back the daemon's credentials\n");
	return 0;
}

static int emu_pvm_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write)
{
	struct iovec rv[EMU_WB_MAX];
	size_t want = 0;

	if (nr > EMU_WB_MAX || c->pid <= 0)
		return -EFAULT;
	for (unsigned i = 0; i < nr; i++) {
		rv[i] = (struct iovec){ (void *)(uintptr_t)r[i].addr, (size_t)r[i].len };
		want += r[i].len;
	}
	/* the process bound at HELLO, not a later image under its pid */
	if (!emu_mem_alive(c) || emu_pvm_creds(c, true))
		return -EFAULT;
	ssize_t x;
	do {
		struct emu_mem_guard *g = c->dev->guard;
		uint64_t t = emu_guard_enter(g, c);
		x = write ? process_vm_writev(c->pid, l, nl, rv, nr, 0)
			  : process_vm_readv(c->pid, l, nl, rv, nr, 0);
		int e = errno;
		emu_guard_leave(g, t);
		errno = e;
	} while (x < 0 && errno == EINTR);
	emu_pvm_creds(c, false);
	return x == (ssize_t)want ? 0 : -EFAULT;
}

/* ---------------- routes ---------------- */

enum emu_route { EMU_RT_SYS, EMU_RT_MAP, EMU_RT_PIN, EMU_RT_PVM };

static enum emu_route emu_mem_route(const struct emu_ctx *c, const struct emu_rvec *r,
				    bool write)
{
	const struct emu_mr *mr = r->mr;

	if (!mr || (mr->access & IBV_ACCESS_ON_DEMAND))
		return EMU_RT_SYS;
	if (mr->nmaps && emu_mrmap_at(mr, r->addr, r->len, write))
		return EMU_RT_MAP;
	if (mr->pin == UROCE_PIN_RING && c->pin)
		return EMU_RT_PIN;
	if (mr->pin == UROCE_PIN_NONE)
		return EMU_RT_PVM;
	return EMU_RT_SYS; /* in-process tests register no route */
}

/* The next len bytes of l from (*li, *lo) as iovecs in out (at most max):
 * 0, or -EINVAL (lengths were checked equal, so only too many pieces) */
static int emu_iov_slice(const struct iovec *l, unsigned nl, unsigned *li, size_t *lo,
			 uint64_t len, struct iovec *out, unsigned max, unsigned *nout)
{
	unsigned n = 0;

	while (len) {
		if (*li >= nl || n == max)
			return -EINVAL;
		size_t k = l[*li].iov_len - *lo;
		if (k > len)
			k = (size_t)len;
		if (k)
			out[n++] = (struct iovec){ (uint8_t *)l[*li].iov_base + *lo, k };
		*lo += k;
		len -= k;
		if (*lo == l[*li].iov_len) {
			(*li)++;
			*lo = 0;
		}
	}
	*nout = n;
	return 0;
}

/* Pinned ranges: pieces cut at local iovecs, at the client's buffers (one
 * per GiB of the registration) and at EMU_PIN_PIECE. */
static int emu_mem_pin_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			    const struct emu_rvec *r, unsigned nr, bool write)
{
	struct emu_pin_io io[EMU_IOV_BATCH];
	unsigned n = 0, li = 0;
	size_t lo = 0;

	for (unsigned i = 0; i < nr; i++) {
		const struct emu_mr *mr = r[i].mr;
		uint64_t addr = r[i].addr, left = r[i].len;

		while (left) {
			uint64_t off = addr - mr->addr;
			uint64_t k = ((off >> UROCE_PIN_BUF_SHIFT) + 1) << UROCE_PIN_BUF_SHIFT;

			k -= off; /* to the end of this buffer */
			if (k > left)
				k = left;
			if (k > EMU_PIN_PIECE)
				k = EMU_PIN_PIECE;
			if (li >= nl)
				return -EINVAL; /* lengths were checked equal */
			if (k > l[li].iov_len - lo)
				k = l[li].iov_len - lo;
			io[n++] = (struct emu_pin_io){ (uint8_t *)l[li].iov_base + lo, addr,
						       (uint32_t)k,
						       mr->slot + (uint32_t)(off >> UROCE_PIN_BUF_SHIFT) };
			addr += k;
			left -= k;
			lo += k;
			if (lo == l[li].iov_len) {
				li++;
				lo = 0;
			}
			if (n == EMU_IOV_BATCH) {
				int rc = emu_pin_xfer(c, io, n, write);
				if (rc)
					return rc;
				n = 0;
			}
		}
	}
	return n ? emu_pin_xfer(c, io, n, write) : 0;
}

/* A range of a mapped piece: memcpy. A page the daemon will not fault in
 * (a hole the client punched, a file it shrank: mrmap.c) fails the copy;
 * the access then takes the registration's own route: the page it
 * pinned, or (unpinned) the address as the process maps it now, where a
 * fault brings the page in on the client's account. */
static int emu_mem_map_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			    const struct emu_rvec *r, bool write)
{
	uint8_t *mp = emu_mrmap_at(r->mr, r->addr, r->len, write);
	uint64_t done = 0;

	for (unsigned i = 0; i < nl; i++) {
		int rc = write ? emu_mrmap_copy(mp + done, l[i].iov_base, l[i].iov_len)
			       : emu_mrmap_copy(l[i].iov_base, mp + done, l[i].iov_len);
		if (rc) {
			if (r->mr->pin == UROCE_PIN_RING && c->pin)
				return emu_mem_pin_xfer(c, l, nl, r, 1, write);
			if (r->mr->pin == UROCE_PIN_NONE)
				return emu_pvm_xfer(c, l, nl, r, 1, write);
			return rc;
		}
		done += l[i].iov_len;
	}
	return 0;
}

static void emu_mem_count(struct emu_ctx *c, const struct emu_rvec *r, unsigned nr,
			  enum emu_route rt)
{
	static const unsigned idx[] = { [EMU_RT_PIN] = 0, [EMU_RT_PVM] = 1, [EMU_RT_MAP] = 2 };
	uint64_t *cc[] = { [EMU_RT_SYS] = &c->mr_syscall, [EMU_RT_MAP] = &c->mr_mapped,
			   [EMU_RT_PIN] = &c->mr_pinned, [EMU_RT_PVM] = &c->mr_unpinned };
	uint64_t *dc[] = { [EMU_RT_SYS] = &c->dev->cnt.mr_syscall,
			   [EMU_RT_MAP] = &c->dev->cnt.mr_mapped,
			   [EMU_RT_PIN] = &c->dev->cnt.mr_pinned,
			   [EMU_RT_PVM] = &c->dev->cnt.mr_unpinned };

	if (rt == EMU_RT_SYS)
		return; /* counted by its path, emu_mem_sys_xfer */
	*cc[rt] += nr;
	*dc[rt] += nr;
	for (unsigned i = 0; i < nr; i++)
		r[i].mr->moved[idx[rt]]++;
}

static int emu_mem_route_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			      const struct emu_rvec *r, unsigned nr, bool write,
			      enum emu_route rt)
{
	emu_mem_count(c, r, nr, rt);
	switch (rt) {
	case EMU_RT_MAP:
		return emu_mem_map_xfer(c, l, nl, r, write);
	case EMU_RT_PIN:
		return emu_mem_pin_xfer(c, l, nl, r, nr, write);
	case EMU_RT_PVM:
		return emu_pvm_xfer(c, l, nl, r, nr, write);
	default:
		return emu_mem_sys_xfer(c, l, nl, r, nr, write);
	}
}

static int emu_mem_xfer(struct emu_ctx *c, const struct iovec *l, unsigned nl,
			const struct emu_rvec *r, unsigned nr, bool write)
{
	size_t want = 0, lsum = 0;
	unsigned i, li = 0;
	size_t lo = 0;

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
	/* runs of ranges that take the same route, each in one go (a mapped
	 * piece one range at a time: it is a memcpy) */
	for (i = 0; i < nr;) {
		enum emu_route rt = emu_mem_route(c, &r[i], write);
		unsigned j = i + 1;
		uint64_t len = r[i].len;

		while (rt != EMU_RT_MAP && j < nr && emu_mem_route(c, &r[j], write) == rt)
			len += r[j++].len;
		struct iovec sub[EMU_WB_MAX * 2];
		unsigned ns;
		int rc = emu_iov_slice(l, nl, &li, &lo, len, sub, EMU_WB_MAX * 2, &ns);
		if (!rc)
			rc = emu_mem_route_xfer(c, sub, ns, &r[i], j - i, write, rt);
		if (rc)
			return rc;
		i = j;
	}
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

int emu_mr_read(struct emu_mr *mr, void *dst, uint64_t addr, size_t len)
{
	struct iovec l = { dst, len };
	struct emu_rvec r = { addr, len, mr };

	return emu_mem_xfer(mr->ctx, &l, 1, &r, 1, false);
}

int emu_mr_write(struct emu_mr *mr, uint64_t addr, const void *src, size_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len };
	struct emu_rvec r = { addr, len, mr };

	return emu_mem_xfer(mr->ctx, &l, 1, &r, 1, true);
}

int emu_mem_read(struct emu_ctx *c, void *dst, uint64_t addr, size_t len)
{
	struct iovec l = { dst, len };
	struct emu_rvec r = { addr, len, NULL };

	return emu_mem_xfer(c, &l, 1, &r, 1, false);
}

int emu_mem_write(struct emu_ctx *c, uint64_t addr, const void *src, size_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len };
	struct emu_rvec r = { addr, len, NULL };

	return emu_mem_xfer(c, &l, 1, &r, 1, true);
}
