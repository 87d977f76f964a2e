/* SPDX-License-Identifier: MIT */
/* write() of one rdma_cm command: the kernel's ucma_write checks in its
 * order, the `response` pointer checked before the command runs, GET_EVENT
 * waiting on the pipe, the daemon's answer copied back; and what happens
 * when the daemon goes away (DEVICE_REMOVAL on a new pipe). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "urv_ctl.h"
#include "ucma_int.h"

/* Where the command's `response` pointer is (-1: none) and how many bytes
 * the kernel writes there at most (out is the caller's room). */
static long resp_offset(uint32_t cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return offsetof(struct rdma_ucm_create_id, response);
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		return offsetof(struct rdma_ucm_destroy_id, response);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
		return offsetof(struct rdma_ucm_query, response);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return offsetof(struct rdma_ucm_init_qp_attr, response);
	case RDMA_USER_CM_CMD_GET_EVENT:
		return offsetof(struct rdma_ucm_get_event, response);
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		return offsetof(struct rdma_ucm_join_ip_mcast, response);
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return offsetof(struct rdma_ucm_join_mcast, response);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return offsetof(struct rdma_ucm_migrate_id, response);
	default:
		return -1;
	}
}

static size_t resp_size(uint32_t cmd, const uint8_t *data, uint32_t in, uint32_t out)
{
	size_t n;

	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		n = sizeof(struct rdma_ucm_create_id_resp);
		break;
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		n = sizeof(struct rdma_ucm_destroy_id_resp);
		break;
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		/* the kernel writes it whatever `out` says */
		return sizeof(struct rdma_ucm_migrate_resp);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		n = sizeof(struct rdma_ucm_query_route_resp);
		break;
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		n = sizeof(struct ib_uverbs_qp_attr);
		break;
	case RDMA_USER_CM_CMD_GET_EVENT:
		n = sizeof(struct rdma_ucm_event_resp);
		break;
	case RDMA_USER_CM_CMD_QUERY: {
		struct rdma_ucm_query q = { 0 };

		memcpy(&q, data, in < sizeof(q) ? in : sizeof(q));
		/* paths: as many records as fit (the kernel fills a buffer of
		 * `out` bytes) */
		if (q.option == RDMA_USER_CM_QUERY_PATH)
			return out;
		n = sizeof(struct rdma_ucm_query_addr_resp);
		break;
	}
	default:
		return 0;
	}
	return n < out ? n : out;
}

/* The daemon's device index means nothing in this process (liburoce
 * numbers its devices itself): the reply says "none" (-1), and librdmacm
 * finds the device by its node GUID alone, as with kernels before 5.10. */
static void hide_ibdev_index(uint32_t cmd, const uint8_t *data, uint32_t in,
			     uint8_t *rep, size_t n)
{
	struct rdma_ucm_query q = { 0 };
	size_t off;

	if (cmd == RDMA_USER_CM_CMD_QUERY_ROUTE) {
		off = offsetof(struct rdma_ucm_query_route_resp, ibdev_index);
	} else if (cmd == RDMA_USER_CM_CMD_QUERY) {
		memcpy(&q, data, in < sizeof(q) ? in : sizeof(q));
		if (q.option == RDMA_USER_CM_QUERY_PATH)
			return;
		off = offsetof(struct rdma_ucm_query_addr_resp, ibdev_index);
	} else {
		return;
	}
	if (n >= off + sizeof(uint32_t))
		memset(rep + off, 0xff, sizeof(uint32_t));
}

/* The pipe byte GET_EVENT waits for: 0, or -errno (EAGAIN with
 * O_NONBLOCK, EINTR on a signal, ENODEV when the daemon is gone). */
static int wait_event_byte(int fd)
{
	char b;
	ssize_t k = ucma_real_read(fd, &b, 1);

	if (k == 1)
		return 0;
	if (k == 0)
		return -ENODEV;        /* the daemon closed its end */
	return -errno;
}

/* GET_EVENT blocked while another thread closed the fd: the kernel's file
 * lives while the call holds it, and no event comes any more (rping's
 * event thread waits so while main() closes the channel and returns).
 * A signal ends the wait as it ends the kernel's. */
static int wait_forever(void)
{
	pause();
	return -EINTR;
}

/* MIGRATE_ID names the id's current file by fd: its handle instead. */
static int migrate_fd(uint8_t *data, uint32_t in)
{
	struct rdma_ucm_migrate_id m;
	struct ucma_file *src;

	if (in < sizeof(m))
		return 0;              /* the daemon answers a short command */
	memcpy(&m, data, sizeof(m));
	if (fcntl((int)m.fd, F_GETFD) < 0)
		return -ENOENT;        /* the kernel's fdget failing */
	src = ucma_file_get((int)m.fd);
	if (!src)
		return -EINVAL;        /* an fd that is no rdma_cm file */
	if (src->foreign) {
		ucma_file_put(src);
		return -EINVAL;
	}
	m.fd = src->handle;
	ucma_file_put(src);
	memcpy(data, &m, sizeof(m));
	return 0;
}

/* The daemon went away (its event pipe at EOF, or the connection): queue
 * DEVICE_REMOVAL for the file's ids on a new pipe put in the place of the
 * old one, so that poll, blocking and O_NONBLOCK reads behave on as the
 * kernel's fd does (one byte per event, no EOF). 0 or -errno. */
static int ucma_file_gone(struct ucma_file *f)
{
	int p[2], ret = 0;

	pthread_mutex_lock(&ucma_list_lock);
	if (f->t.dead || __atomic_load_n(&f->closed, __ATOMIC_ACQUIRE))
		goto out; /* done by another thread, or the fd is no longer its */
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		ret = -errno;
		goto out;
	}
	uint32_t n = urv_cm_track_gone(&f->t);
	static const uint8_t ones[256] = { 1 };
	for (uint32_t k = 0; k < n;) {
		uint32_t c = n - k < sizeof(ones) ? n - k : (uint32_t)sizeof(ones);
		if (syscall(SYS_write, p[1], ones, c) != (long)c)
			break; /* past 64 KiB of ids: the rest are never fetched */
		k += c;
	}
	if (f->mux.prim_fd >= 0) {
		/* an epoll fd over the devices' pipes: this one replaces the
		 * primary's */
		urv_mux_set_primary(&f->mux, f->fd, p[0]);
		f->gone_wfd = p[1];
		goto out;
	}
	int fl = fcntl(f->fd, F_GETFL), fdfl = fcntl(f->fd, F_GETFD);
	if (fl < 0 || fdfl < 0 ||
	    syscall(SYS_dup3, p[0], f->fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0 ||
	    fcntl(f->fd, F_SETFL, (fl & O_NONBLOCK) | O_RDONLY) < 0) {
		ret = -errno;
		syscall(SYS_close, p[1]);
	} else {
		f->gone_wfd = p[1];
	}
	syscall(SYS_close, p[0]);
out:
	pthread_mutex_unlock(&ucma_list_lock);
	return ret;
}

/* One command to the daemon, or answered here once it is gone; what it
 * did to the file's ids is noted for DEVICE_REMOVAL. 0 or -errno. */
static int ucma_call(struct ucma_file *f, struct uroce_ucma_cmd_req *req, uint8_t *rep,
		     uint32_t out, unsigned src)
{
	int ret = -ENODEV;
	size_t n = out;

	if (src) {
		req->file = f->mux.sec[src].handle;
		ret = urv_mux_call(f->mux.sec[src].conn, UROCE_OP_UCMA_CMD, req,
				   sizeof(*req) + req->in, rep, out, NULL, 0);
		if (ret)
			return ret;
		ucma_mux_tag(req, rep, src);
		goto track;
	}
	if (!f->t.dead) {
		ret = ucma_ctl_call(UROCE_OP_UCMA_CMD, req, sizeof(*req) + req->in, rep, out, NULL, 0);
		if (ret != -ENODEV || !ucma_conn_is_dead())
			goto track;
		int err = ucma_file_gone(f);
		if (err)
			return err;
		/* GET_EVENT: the byte read was the old pipe's; the next comes
		 * from the new one (-EAGAIN: wait for it) */
		if (req->cmd == RDMA_USER_CM_CMD_GET_EVENT)
			return -EAGAIN;
	}
track:
	if (ret && !f->t.dead)
		return ret;
	pthread_mutex_lock(&ucma_list_lock);
	if (f->t.dead && !src) {
		ret = urv_cm_track_dead_cmd(&f->t, req->cmd, req->data, req->in, rep, &n);
	} else if (req->cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
		struct rdma_ucm_migrate_id m;
		struct ucma_file *from;

		memcpy(&m, req->data, sizeof(m));
		from = src ? ucma_file_by_sec(src, m.fd) : ucma_file_by_handle(m.fd);
		if (from)
			urv_cm_track_move(&from->t, &f->t, m.id);
	} else {
		urv_cm_track_cmd(&f->t, req->cmd, req->data, req->in, rep, n);
	}
	pthread_mutex_unlock(&ucma_list_lock);
	return ret;
}

/* UROCE_CM_CONNECT_DELAY_MS (0..60000): wait that long before each
 * rdma_connect. A test knob, not a fix: perftest -R's client connects a
 * second time as soon as its first connection is done, and a peer that
 * listens again slowly (perftest in the TCG rxe VM of tests/interop)
 * rejects it (no listener yet, REJECTED 8) on any stack. */
static void ucma_connect_pace(void)
{
	static long ms = -1;
	int e = errno;

	if (ms < 0) {
		const char *v = getenv("UROCE_CM_CONNECT_DELAY_MS");
		long x = v ? strtol(v, NULL, 10) : 0;

		ms = x > 0 && x <= 60000 ? x : 0;
	}
	if (ms) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	errno = e;
}

/* The command, with the kernel's ucma_write checks in its order: the
 * byte count written, or -errno. */
ssize_t ucma_write(struct ucma_file *f, const void *buf, size_t len)
{
	union {
		struct uroce_ucma_cmd_req r;
		uint8_t b[sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN];
	} req;
	uint8_t rep[UROCE_UCMA_MAX_OUT];
	struct rdma_ucm_cmd_hdr hdr;
	uint64_t resp = 0;
	uint32_t in, out;
	size_t want;
	unsigned src = 0;
	long off;
	int ret;

	if (f->foreign)
		return -EACCES;
	if (len < sizeof(hdr))
		return -EINVAL;
	if (ucma_mem_copy(&hdr, buf, sizeof(hdr), false))
		return -EFAULT;
	if (hdr.cmd > RDMA_USER_CM_CMD_JOIN_MCAST)
		return -EINVAL;
	if (hdr.in + sizeof(hdr) > len)
		return -EINVAL;
	if (hdr.cmd == RDMA_USER_CM_CMD_CONNECT)
		ucma_connect_pace();
	if (hdr.cmd == RDMA_USER_CM_CMD_GET_OPTION)
		return -ENOSYS;
	if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT &&
	    hdr.out < offsetof(struct rdma_ucm_event_resp, ece))
		return -ENOSPC;        /* before waiting, as the kernel checks */
	in = hdr.in < UROCE_UCMA_MAX_IN ? hdr.in : UROCE_UCMA_MAX_IN;
	out = hdr.out < UROCE_UCMA_MAX_OUT ? hdr.out : UROCE_UCMA_MAX_OUT;
	memset(&req.r, 0, sizeof(req.r));
	if (ucma_mem_copy(req.r.data, (const uint8_t *)buf + sizeof(hdr), in, false))
		return -EFAULT;

	if (hdr.cmd == RDMA_USER_CM_CMD_SET_OPTION && in >= sizeof(struct rdma_ucm_set_option)) {
		struct rdma_ucm_set_option o;

		memcpy(&o, req.r.data, sizeof(o));
		/* the value follows the struct (abi.h); none is larger than this */
		if (o.optlen > UROCE_UCMA_MAX_IN - sizeof(o))
			return -EINVAL;
		if (ucma_mem_copy(req.r.data + sizeof(o), (const void *)(uintptr_t)o.optval,
			     o.optlen, false))
			return -EFAULT;
		in = (uint32_t)sizeof(o) + o.optlen;
	}
	if (hdr.cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
		ret = migrate_fd(req.r.data, in);
		if (ret)
			return ret;
	}
	off = resp_offset(hdr.cmd);
	if (off >= 0 && in >= (uint32_t)off + sizeof(resp))
		memcpy(&resp, req.r.data + off, sizeof(resp));
	want = off >= 0 ? resp_size(hdr.cmd, req.r.data, in, out) : 0;
	if (want && ucma_mem_writable(resp, want))
		return -EFAULT;

	req.r.file = f->handle;
	req.r.cmd = hdr.cmd;
	req.r.out = out;
	req.r.in = in;
	ret = ucma_mux_route(f, &req.r, &src);
	if (ret)
		return ret;
	for (;;) {
		if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT) {
			ret = f->mux.prim_fd >= 0 ? urv_mux_wait(&f->mux, f->fd, &src) :
						    wait_event_byte(f->fd);
			/* closed by another thread while we waited: the pipe
			 * read or the epoll wait failed with EBADF, or saw
			 * the daemon's end go (CI's rping-self: EBADF from
			 * the read, 'rdma_get_cm_event: Bad file descriptor') */
			if (ret && ret != -EINTR && ret != -EAGAIN &&
			    __atomic_load_n(&f->closed, __ATOMIC_ACQUIRE))
				return wait_forever();
			if (ret == -ENODEV) {
				/* the daemon's end: its DEVICE_REMOVAL events
				 * come on the pipe put in its place */
				ret = ucma_file_gone(f);
				if (ret)
					return ret;
				continue;
			}
			if (ret)
				return ret;
		}
		memset(rep, 0, sizeof(rep));
		ret = ucma_call(f, &req.r, rep, out, src);
		/* the event's byte came, then another thread closed the fd (and
		 * with the process's last file, its connection) before the event
		 * was fetched: the kernel's read would still hold the file, find
		 * the event gone with its id, and block on */
		if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT && ret < 0 &&
		    __atomic_load_n(&f->closed, __ATOMIC_ACQUIRE))
			return wait_forever();
		/* a stale byte (its event went with its id): wait for the next */
		if (!(hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT && ret == -EAGAIN))
			break;
	}
	if (ret)
		return ret;
	if (!src && !f->t.dead)
		ucma_mux_after(f, &req.r);
	hide_ibdev_index(hdr.cmd, req.r.data, in, rep, want);
	/* the reply says how much the kernel would copy: at most `want`
	 * bytes (what the kernel writes; the rest of rep is zero) */
	if (want && ucma_mem_copy((void *)(uintptr_t)resp, rep, want, true))
		return -EFAULT;
	return (ssize_t)len;
}
