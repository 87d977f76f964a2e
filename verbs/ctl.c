/* SPDX-License-Identifier: MIT */
/* Control socket: one SOCK_SEQPACKET request and one reply per call. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"

/* After a fork, parent and children hold the same control socket (a
 * kernel uverbs fd is shared the same way, and rdma-core's
 * test_multi_process_alloc_dm allocates device memory from five children
 * at once): a request and its reply must then be one exchange across
 * processes too, which the per-process mutex cannot give. A POSIX record
 * lock on the socket is per process and goes away with a holder that
 * dies; only a process that has forked, or was forked, pays for it. */
static bool urv_forked;

static void urv_ctl_forked(void)
{
	urv_forked = true;
}

__attribute__((constructor)) static void urv_ctl_init(void)
{
	pthread_atfork(NULL, urv_ctl_forked, urv_ctl_forked);
}

static void urv_ctl_xlock(int sock, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	while (fcntl(sock, F_SETLKW, &fl) < 0 && errno == EINTR)
		;
}

bool urv_ctl_forked_now(void)
{
	return __atomic_load_n(&urv_forked, __ATOMIC_RELAXED);
}

struct urv_context *urv_ctl_hold(struct urv_context *c)
{
	if (c->origin)
		c = c->origin; /* an imported context speaks on its origin's connection */
	pthread_mutex_lock(&c->ctl_lock);
	return c;
}

void urv_ctl_release(struct urv_context *o)
{
	pthread_mutex_unlock(&o->ctl_lock);
}

/* How long a caller spins on the mailbox before it sleeps on it, and how
 * long it sleeps between looks at whether the daemon is still there */
#define URV_MBOX_SPIN_NS 50000ull
#define URV_MBOX_NAP_NS 100000000ll
#define URV_MBOX_TIMEOUT_NS 30000000000ull /* as the socket's SO_RCVTIMEO */

static uint64_t mbox_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Wait for the daemon to answer mailbox request s: 0, or -ENODEV (it went
 * away), -EAGAIN (no answer within the socket's timeout). */
static int mbox_wait(struct urv_context *o, uint32_t s)
{
	struct uroce_ctl_mbox *mb = &o->db->mbox;
	uint64_t t0 = mbox_now(), t;

	for (unsigned i = 0;; i++) {
		if (__atomic_load_n(&mb->rep_seq, __ATOMIC_ACQUIRE) == s)
			return 0;
		if (i % 64 == 0 && (t = mbox_now()) - t0 > URV_MBOX_SPIN_NS)
			break;
		urv_cpu_relax();
	}
	for (;;) {
		uint32_t v = __atomic_load_n(&mb->rep_seq, __ATOMIC_ACQUIRE);
		struct timespec nap = { 0, URV_MBOX_NAP_NS };

		if (v == s)
			break;
		__atomic_store_n(&mb->waiting, 1, __ATOMIC_RELAXED);
		/* pairs with the daemon's fence between rep_seq and waiting */
		atomic_thread_fence(memory_order_seq_cst);
		if (__atomic_load_n(&mb->rep_seq, __ATOMIC_ACQUIRE) == v)
			syscall(SYS_futex, &mb->rep_seq, FUTEX_WAIT, v, &nap, NULL, 0);
		if (__atomic_load_n(&mb->rep_seq, __ATOMIC_ACQUIRE) == s)
			break;
		if (urv_daemon_gone(o))
			return -ENODEV;
		if (mbox_now() - t0 > URV_MBOX_TIMEOUT_NS)
			return -EAGAIN;
	}
	__atomic_store_n(&mb->waiting, 0, __ATOMIC_RELAXED);
	return 0;
}

/* One request by the mailbox (abi.h, struct uroce_ctl_mbox): no system
 * call while the daemon is awake. */
static int ctl_mbox(struct urv_context *o, uint32_t op, const void *req, size_t req_len,
		    void *rep, size_t rep_len, int *fds_out, int nfds_out)
{
	struct uroce_ctl_mbox *mb = &o->db->mbox;
	struct uroce_msg_hdr h = { .op = op, .len = (uint32_t)(sizeof(h) + req_len) };
	int ret;

	if (++o->seq == 0) /* 0 is the mailbox's "nothing yet" */
		++o->seq;
	h.seq = o->seq;
	memcpy(mb->req, &h, sizeof(h));
	if (req_len)
		memcpy(mb->req + sizeof(h), req, req_len);
	__atomic_store_n(&mb->req_len, h.len, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->req_seq, h.seq, __ATOMIC_RELEASE);
	/* the daemon may be asleep: wake it as a doorbell does */
	atomic_thread_fence(memory_order_seq_cst);
	if (__atomic_load_n(&o->db->need_wakeup, __ATOMIC_ACQUIRE)) {
		static const uint64_t one = 1;
		ssize_t r = write(o->wake_fd, &one, sizeof(one));

		(void)r;
	}
	ret = mbox_wait(o, h.seq);
	if (ret)
		return ret;
	memcpy(&h, mb->rep, sizeof(h));
	if (h.len == 0) /* the reply went on the socket (descriptors) */
		return urv_ctl_reply(o->sock, o->seq, rep, rep_len, fds_out, nfds_out);
	if (h.seq != o->seq || h.len < sizeof(h) || h.len > UROCE_MBOX_MAX)
		return -EPROTO;
	if (h.status)
		return h.status < 0 ? h.status : -EIO;
	if (nfds_out > 0)
		return -EPROTO;
	for (int i = 0; i < -nfds_out; i++)
		fds_out[i] = -1;
	if (rep_len) {
		size_t have = h.len - sizeof(h);

		memset(rep, 0, rep_len);
		memcpy(rep, mb->rep + sizeof(h), have < rep_len ? have : rep_len);
	}
	return 0;
}

int urv_ctl_held(struct urv_context *o, uint32_t op, const void *req,
		 size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		 int nfds_in, int *fds_out, int nfds_out)
{
	int ret;

	if (__atomic_load_n(&o->dead, __ATOMIC_RELAXED))
		return -ENODEV;
	/* after a fork the doorbell page, and with it the mailbox, is shared
	 * by processes the per-process lock does not order: the socket then,
	 * under the record lock */
	bool x = urv_ctl_forked_now();
	if (!x && !nfds_in && o->db && sizeof(struct uroce_msg_hdr) + req_len <= UROCE_MBOX_MAX) {
		ret = ctl_mbox(o, op, req, req_len, rep, rep_len, fds_out, nfds_out);
	} else {
		if (x)
			urv_ctl_xlock(o->sock, F_WRLCK);
		ret = urv_ctl_raw(o->sock, &o->seq, op, req, req_len, rep, rep_len,
				  fds_in, nfds_in, fds_out, nfds_out);
		if (x)
			urv_ctl_xlock(o->sock, F_UNLCK);
	}
	if (ret == -ENODEV)
		__atomic_store_n(&o->dead, true, __ATOMIC_RELAXED);
	/* a kernel provider's verb fails in write() or ioctl(), which leaves
	 * the error in errno as well as in the return value; programs print
	 * strerror(errno) after a verb that returns its error (qperf's
	 * "failed to modify QP to RTR", perftest): without this they print
	 * whatever an earlier call left there */
	if (ret < 0)
		errno = -ret;
	return ret;
}

int urv_ctl(struct urv_context *c, uint32_t op, const void *req,
	    size_t req_len, void *rep, size_t rep_len, const int *fds_in,
	    int nfds_in, int *fds_out, int nfds_out)
{
	struct urv_context *o = urv_ctl_hold(c);
	int ret = urv_ctl_held(o, op, req, req_len, rep, rep_len, fds_in,
			       nfds_in, fds_out, nfds_out);

	urv_ctl_release(o);
	return ret;
}

void urv_doorbell(struct urv_context *c, uint32_t db_index)
{
	struct uroce_db_page *db = c->db;
	uint32_t word = db_index / 64;
	static const uint64_t one = 1;

	__atomic_fetch_or(&db->bits[word], 1ull << (db_index % 64),
			  __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->summary[word / 64], 1ull << (word % 64),
			  __ATOMIC_RELEASE);
	/* Pairs with the daemon's fence between setting need_wakeup and its
	 * last scan: either it sees our bits or we see its flag. */
	atomic_thread_fence(memory_order_seq_cst);
	if (__atomic_load_n(&db->need_wakeup, __ATOMIC_ACQUIRE)) {
		ssize_t r = write(c->wake_fd, &one, sizeof(one));

		(void)r;
	}
}

/* A daemon killed outright marks nothing in shared memory; its end of the
 * control socket closing is what remains. */
bool urv_daemon_gone(struct urv_context *c)
{
	struct pollfd p;

	if (c->origin)
		c = c->origin;
	p.fd = c->sock;
	p.events = POLLRDHUP;
	if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		return true;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}
