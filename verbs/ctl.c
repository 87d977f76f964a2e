/* SPDX-License-Identifier: MIT */
/* Control socket: one SOCK_SEQPACKET request and one reply per call. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "urv.h"

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

int urv_ctl(struct urv_context *c, uint32_t op, const void *req,
	    size_t req_len, void *rep, size_t rep_len, const int *fds_in,
	    int nfds_in, int *fds_out, int nfds_out)
{
	int ret;

	if (c->origin)
		c = c->origin; /* an imported context speaks on its origin's connection */
	pthread_mutex_lock(&c->ctl_lock);
	if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&c->ctl_lock);
		return -ENODEV;
	}
	bool x = __atomic_load_n(&urv_forked, __ATOMIC_RELAXED);
	if (x)
		urv_ctl_xlock(c->sock, F_WRLCK);
	ret = urv_ctl_raw(c->sock, &c->seq, op, req, req_len, rep, rep_len,
			  fds_in, nfds_in, fds_out, nfds_out);
	if (x)
		urv_ctl_xlock(c->sock, F_UNLCK);
	if (ret == -ENODEV)
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->ctl_lock);
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
