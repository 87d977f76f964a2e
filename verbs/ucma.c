/* SPDX-License-Identifier: MIT */
/* The kernel's rdma_ucm character device, emulated so that the real,
 * unmodified librdmacm runs on uroce (docs/cm.md).
 *
 * librdmacm opens /dev/infiniband/rdma_cm, fstat()s it (a character
 * device), write()s `struct rdma_ucm_cmd_hdr` + a command struct for every
 * call and poll()s the fd for events. Here:
 *   open   -> UROCE_OP_UCMA_OPEN on this process's rdma_cm connection to
 *             the daemon; the fd returned is the read end of the daemon's
 *             event pipe (one byte per queued event: pollable, blocking or
 *             not per the fd's own flags, as the kernel's fd);
 *   write  -> UROCE_OP_UCMA_CMD, the reply copied to the command's
 *             `response` pointer; the kernel's ucma_write return values
 *             and errnos (byte count, EINVAL, EFAULT, ENOSPC, ENOSYS, ...);
 *   GET_EVENT reads one pipe byte first (that is where it blocks);
 *   close  -> UROCE_OP_UCMA_CLOSE (the daemon destroys the file's ids);
 *   fstat  -> a character device.
 * Any other fd goes to libc after one load and, while an rdma_cm file is
 * open, one bit test.
 *
 * fork: the child inherits the fds but not the right to drive the parent's
 * ids over the parent's connection (that would interleave requests on one
 * socket). A child's write() on an inherited rdma_cm fd fails with EACCES
 * (what the kernel's ucma_write returns for a file used from another
 * context), its close() only closes its copy, and a new open() in the
 * child gets a connection of its own. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "urv.h"
#include "ucma.h"
#include "ucma_gone.h"
#include "ucma_mux.h"

#define URV_EXPORT __attribute__((visibility("default")))

/* ---- the real libc functions ------------------------------------------ */

#define REAL_PTR(fn) static __typeof__(fn) *real_##fn
#define LOAD(fn, err)                                                         \
	do {                                                                  \
		if (!__atomic_load_n(&real_##fn, __ATOMIC_ACQUIRE))           \
			__atomic_store_n(&real_##fn,                          \
					 (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn), \
					 __ATOMIC_RELEASE);                   \
		if (!real_##fn) {                                             \
			errno = ENOSYS;                                       \
			return err;                                           \
		}                                                             \
	} while (0)

REAL_PTR(write);
REAL_PTR(read);
REAL_PTR(close);
REAL_PTR(dup2);
REAL_PTR(dup3);
REAL_PTR(fstat);
REAL_PTR(fstat64);

/* ---- open rdma_cm files ----------------------------------------------- */

struct ucma_file {
	struct ucma_file *next;
	int fd;                 /* the pipe read end the application holds */
	uint32_t handle;        /* the daemon's file handle */
	bool foreign;           /* inherited through fork: the parent's */
	bool closed;            /* the application closed its fd */
	int refs;               /* the list's + calls in progress (list_lock) */
	struct urv_cm_track t;  /* its ids, for DEVICE_REMOVAL (list_lock) */
	int gone_wfd;           /* after the daemon: the new event pipe's write end */
	struct urv_mux mux;     /* other devices' files (wildcard listeners) */
};

/* fds below this are found with one bit test; others take the lock */
#define UCMA_FD_BITS 65536

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ucma_file *files;
static int nfiles;              /* entries in files (atomic reads) */
static uint64_t fd_bits[UCMA_FD_BITS / 64];

/* The connection all of this process's rdma_cm files use (ctl_lock). */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_sock = -1;
static char ctl_path[512];      /* its socket: the primary device's */
static uint32_t ctl_seq;
static bool ctl_dead;

static inline bool maybe_fd(int fd)
{
	if (!__atomic_load_n(&nfiles, __ATOMIC_ACQUIRE) || fd < 0)
		return false;
	if (fd >= UCMA_FD_BITS)
		return true;
	return __atomic_load_n(&fd_bits[fd / 64], __ATOMIC_ACQUIRE) &
		(1ull << (fd % 64));
}

static void bit_set(int fd, bool on)
{
	if (fd < 0 || fd >= UCMA_FD_BITS)
		return;
	if (on)
		__atomic_fetch_or(&fd_bits[fd / 64], 1ull << (fd % 64), __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&fd_bits[fd / 64], ~(1ull << (fd % 64)),
				   __ATOMIC_RELEASE);
}

/* The file of fd with a reference taken, or NULL. */
static struct ucma_file *file_get(int fd)
{
	struct ucma_file *f;

	pthread_mutex_lock(&list_lock);
	for (f = files; f && f->fd != fd; f = f->next)
		;
	if (f)
		f->refs++;
	pthread_mutex_unlock(&list_lock);
	return f;
}

static void file_put(struct ucma_file *f)
{
	bool last;

	pthread_mutex_lock(&list_lock);
	last = --f->refs == 0;
	pthread_mutex_unlock(&list_lock);
	if (last) {
		urv_cm_track_free(&f->t);
		if (f->gone_wfd >= 0)
			syscall(SYS_close, f->gone_wfd);
		free(f);
	}
}

/* Unlink fd's file (the caller gets the list's reference), or NULL. */
static struct ucma_file *file_take(int fd)
{
	struct ucma_file **pp, *f = NULL;

	pthread_mutex_lock(&list_lock);
	for (pp = &files; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			f = *pp;
			*pp = f->next;
			__atomic_store_n(&f->closed, true, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&nfiles, 1, __ATOMIC_RELEASE);
			bit_set(fd, false);
			break;
		}
	pthread_mutex_unlock(&list_lock);
	return f;
}

static void file_add(struct ucma_file *f)
{
	pthread_mutex_lock(&list_lock);
	f->refs = 1;
	f->next = files;
	files = f;
	bit_set(f->fd, true);
	__atomic_add_fetch(&nfiles, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&list_lock);
}

/* Files of this process (not inherited) still open. list_lock held. */
static bool own_files_left(void)
{
	for (struct ucma_file *f = files; f; f = f->next)
		if (!f->foreign)
			return true;
	return false;
}

/* fork: the inherited files are the parent's; the connection is too (its
 * fd is closed here: the parent keeps its own copy). */
static void atfork_child(void)
{
	pthread_mutex_init(&list_lock, NULL);
	pthread_mutex_init(&ctl_lock, NULL);
	for (struct ucma_file *f = files; f; f = f->next)
		f->foreign = true;
	if (ctl_sock >= 0)
		syscall(SYS_close, ctl_sock);
	ctl_sock = -1;
	ctl_seq = 0;
	ctl_dead = false;
	urv_mux_atfork_child();
}

__attribute__((constructor)) static void ucma_init(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

/* ---- the application's memory, read and written without faulting ------- */

/* Copy through a pipe: the kernel reports a bad address as EFAULT. */
static int pipe_copy(void *dst, const void *src, size_t n)
{
	int p[2], ret = 0;
	ssize_t k;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	k = syscall(SYS_write, p[1], src, n);
	if (k != (ssize_t)n)
		ret = -EFAULT;
	else if (syscall(SYS_read, p[0], dst, n) != (long)n)
		ret = -EFAULT;
	syscall(SYS_close, p[0]);
	syscall(SYS_close, p[1]);
	return ret;
}

/* dst <- src where either may be a bad address of the application:
 * 0 or -EFAULT, never a fault of our own. */
static int mem_copy(void *dst, const void *src, size_t n, bool to_app)
{
	struct iovec l, r;
	ssize_t k;

	if (!n)
		return 0;
	l.iov_len = r.iov_len = n;
	if (to_app) {
		l.iov_base = (void *)src;
		r.iov_base = dst;
		k = process_vm_writev(getpid(), &l, 1, &r, 1, 0);
	} else {
		l.iov_base = dst;
		r.iov_base = (void *)src;
		k = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	}
	if (k == (ssize_t)n)
		return 0;
	/* a sandbox that forbids process_vm_* (seccomp): the slow way */
	if (k < 0 && (errno == ENOSYS || errno == EPERM))
		return pipe_copy(dst, src, n);
	return -EFAULT;
}

/* Is [p, p+n) writable memory of the application: 0 or -EFAULT. Checked
 * before a command runs, so that a bad `response` does not lose an event
 * or leave an id behind (the kernel undoes those on EFAULT). */
static int mem_writable(uint64_t p, size_t n)
{
	uint8_t tmp[UROCE_UCMA_MAX_OUT];
	void *a = (void *)(uintptr_t)p;

	if (!n)
		return 0;
	if (n > sizeof(tmp))
		n = sizeof(tmp);
	if (mem_copy(tmp, a, n, false) || mem_copy(a, tmp, n, true))
		return -EFAULT;
	return 0;
}

/* ---- the daemon connection ---------------------------------------------- */

static void close_fds(int *f, int n)
{
	for (int i = 0; i < n; i++)
		if (f[i] >= 0)
			real_close(f[i]);
}

int urv_ucma_hello(int sock, uint32_t *seq)
{
	struct uroce_hello_req req = {
		.abi_version = UROCE_ABI_VERSION,
		.pid = (uint32_t)getpid(),
	};
	struct uroce_hello_rep *rep;
	int f[3] = { -1, -1, -1 }, mem, ret;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	/* the daemon checks that this is our own /proc/self/mem */
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mem < 0) {
		free(rep);
		return -errno;
	}
	ret = urv_ctl_raw(sock, seq, UROCE_OP_HELLO, &req, sizeof(req), rep,
			  sizeof(*rep), &mem, 1, f, 3);
	real_close(mem);
	/* no verbs on this connection: its doorbell and pipes are not used */
	close_fds(f, 3);
	if (!ret && rep->abi_version != UROCE_ABI_VERSION)
		ret = -EPROTO;
	free(rep);
	return ret;
}

/* The daemon's socket: $UROCE_CM_DEVICE's, else the first device's (one
 * daemon serves every rdma_cm file of a process: docs/cm.md). */
static int daemon_path(char *out, size_t len)
{
	const char *want = getenv("UROCE_CM_DEVICE");
	struct ibv_device **l;
	int n = 0, ret = -ENODEV;

	l = urv_get_device_list(NULL, 0, &n);
	if (!l)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct urv_device *d = urv_container_of(l[i], struct urv_device, ibdev);

		if (want && *want && strcmp(d->ibdev.name, want))
			continue;
		snprintf(out, len, "%s", d->sock_path);
		ret = 0;
		break;
	}
	free(l - 1);
	return ret;
}

/* The connection, made on first use. ctl_lock held; 0 or -errno. */
static int conn_get(void)
{
	struct timeval tv = { .tv_sec = 30 };
	char path[512];
	int s, ret;

	if (ctl_sock >= 0)
		return ctl_dead ? -ENODEV : 0;
	ret = daemon_path(path, sizeof(path));
	if (ret)
		return ret;
	snprintf(ctl_path, sizeof(ctl_path), "%s", path);
	s = urv_connect(path);
	if (s < 0)
		return -ENODEV;
	/* bounded: a daemon that stops answering fails the call, not the
	 * application forever */
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ctl_seq = 0;
	ret = urv_ucma_hello(s, &ctl_seq);
	if (ret) {
		real_close(s);
		return ret == -EACCES ? -EACCES : -ENODEV;
	}
	ctl_sock = s;
	ctl_dead = false;
	return 0;
}

/* One request on the connection (which must exist): 0 or -errno. */
static int ctl_call(uint32_t op, const void *req, size_t req_len, void *rep,
		    size_t rep_len, int *fds_out, int nfds_out)
{
	int ret;

	pthread_mutex_lock(&ctl_lock);
	ret = conn_get();
	if (!ret)
		ret = urv_ctl_raw(ctl_sock, &ctl_seq, op, req, req_len, rep, rep_len,
				  NULL, 0, fds_out, nfds_out);
	if (ret == -ENODEV && ctl_sock >= 0)
		ctl_dead = true;
	pthread_mutex_unlock(&ctl_lock);
	return ret;
}

/* No file of ours left: the daemon's client goes (it holds nothing). */
static void conn_drop_if_idle(void)
{
	bool idle;

	pthread_mutex_lock(&ctl_lock);
	pthread_mutex_lock(&list_lock);
	idle = !own_files_left();
	pthread_mutex_unlock(&list_lock);
	if (idle && ctl_sock >= 0) {
		real_close(ctl_sock);
		ctl_sock = -1;
		ctl_dead = false;
	}
	pthread_mutex_unlock(&ctl_lock);
}

/* ---- which paths are ours ------------------------------------------------ */

static bool raw_exists(const char *p)
{
	return syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
}

bool urv_ucma_served(char *run, unsigned long len)
{
	const char *mode = getenv("UROCE_CM");
	char p[PATH_MAX];
	int n;

	run[0] = 0;
	if (mode && !strcmp(mode, "kernel"))
		return false;
	/* a kernel rdma_cm: its ids reach the real devices; it wins unless
	 * UROCE_CM=uroce asks for ours */
	if (!(mode && !strcmp(mode, "uroce")) && raw_exists(URV_UCMA_DEV))
		return false;
	urv_run_dir(run, len);
	if (!run[0])
		return false;
	n = snprintf(p, sizeof(p), "%s/" URV_UCMA_SYSFS_REL "/abi_version", run);
	return n > 0 && (size_t)n < sizeof(p) && raw_exists(p);
}

/* more than one uroce device: wildcard listeners may need the others */
static bool several_devices(void)
{
	int n = 0;
	struct ibv_device **l = urv_get_device_list(NULL, 0, &n);

	if (l)
		free(l - 1);
	return n > 1;
}

int urv_ucma_open(const char *path, int flags, int *ret)
{
	struct uroce_ucma_open_rep rep = { 0 };
	struct ucma_file *f;
	char run[PATH_MAX];
	int fd = -1, r;

	if (!path || strcmp(path, URV_UCMA_DEV) || !urv_ucma_served(run, sizeof(run)))
		return 0;
	if (!real_close)
		real_close = (__typeof__(close) *)dlsym(RTLD_NEXT, "close");
	if (!real_close)
		return 0;
	if (flags & O_DIRECTORY) {
		*ret = -1;
		errno = ENOTDIR;
		return 1;
	}
	pthread_mutex_lock(&ctl_lock);
	r = conn_get();
	pthread_mutex_unlock(&ctl_lock);
	/* no daemon answers: the path is what it is without uroce */
	if (r == -ENODEV)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!r && !f)
		r = -ENOMEM;
	if (!r)
		r = ctl_call(UROCE_OP_UCMA_OPEN, NULL, 0, &rep, sizeof(rep), &fd, 1);
	if (!r) {
		/* the application's flags, as open(2) gives them to the kernel's fd */
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, (fl & ~O_NONBLOCK) | (flags & O_NONBLOCK)) < 0 ||
		    fcntl(fd, F_SETFD, (flags & O_CLOEXEC) ? FD_CLOEXEC : 0) < 0)
			r = -errno;
		f->mux.prim_fd = -1;
		if (!r && several_devices())
			r = urv_mux_init(&f->mux, fd);
	}
	if (r) {
		if (fd >= 0) {
			struct uroce_handle_msg h = { .handle = rep.handle };

			real_close(fd);
			ctl_call(UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
		}
		free(f);
		conn_drop_if_idle();
		*ret = -1;
		errno = -r;
		return 1;
	}
	f->fd = fd;
	f->handle = rep.handle;
	f->gone_wfd = -1;
	file_add(f);
	*ret = fd;
	return 1;
}

/* ---- write: one command ---------------------------------------------------- */

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
	ssize_t k = real_read(fd, &b, 1);

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
	src = file_get((int)m.fd);
	if (!src)
		return -EINVAL;        /* an fd that is no rdma_cm file */
	if (src->foreign) {
		file_put(src);
		return -EINVAL;
	}
	m.fd = src->handle;
	file_put(src);
	memcpy(data, &m, sizeof(m));
	return 0;
}

/* The daemon went away (its event pipe at EOF, or the connection): queue
 * DEVICE_REMOVAL for the file's ids on a new pipe put in the place of the
 * old one, so that poll, blocking and O_NONBLOCK reads behave on as the
 * kernel's fd does (one byte per event, no EOF). 0 or -errno. */
static int file_gone(struct ucma_file *f)
{
	int p[2], ret = 0;

	pthread_mutex_lock(&list_lock);
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
	pthread_mutex_unlock(&list_lock);
	return ret;
}

static bool conn_is_dead(void)
{
	bool dead;

	pthread_mutex_lock(&ctl_lock);
	dead = ctl_dead;
	pthread_mutex_unlock(&ctl_lock);
	return dead;
}

static struct ucma_file *file_by_handle(uint32_t h)
{
	struct ucma_file *f;

	for (f = files; f && (f->handle != h || f->foreign); f = f->next)
		;
	return f;
}

/* the file whose secondary k has daemon handle h (list_lock held) */
static struct ucma_file *file_by_sec(unsigned k, uint32_t h)
{
	struct ucma_file *f;

	for (f = files; f && (f->foreign || !f->mux.sec[k].open || f->mux.sec[k].handle != h);
	     f = f->next)
		;
	return f;
}

/* A command for secondary file src went out with the daemon's handle: the
 * application sees (and the tracking keeps) the id and the handles in the
 * reply with src in their top bits. */
static void mux_tag(struct uroce_ucma_cmd_req *req, uint8_t *rep, unsigned src)
{
	uint32_t tag = (uint32_t)src << URV_MUX_SHIFT, h;
	long off = urv_cm_id_offset(req->cmd);

	if (off >= 0 && req->in >= (uint32_t)off + sizeof(h)) {
		memcpy(&h, req->data + off, sizeof(h));
		h |= tag;
		memcpy(req->data + off, &h, sizeof(h));
	}
	if (req->cmd == RDMA_USER_CM_CMD_GET_EVENT)
		off = offsetof(struct rdma_ucm_event_resp, id);
	else if (req->cmd == RDMA_USER_CM_CMD_JOIN_IP_MCAST ||
		 req->cmd == RDMA_USER_CM_CMD_JOIN_MCAST)
		off = offsetof(struct rdma_ucm_create_id_resp, id);
	else
		return;
	memcpy(&h, rep + off, sizeof(h));
	h |= tag;
	memcpy(rep + off, &h, sizeof(h));
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
		mux_tag(req, rep, src);
		goto track;
	}
	if (!f->t.dead) {
		ret = ctl_call(UROCE_OP_UCMA_CMD, req, sizeof(*req) + req->in, rep, out, NULL, 0);
		if (ret != -ENODEV || !conn_is_dead())
			goto track;
		int err = file_gone(f);
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
	pthread_mutex_lock(&list_lock);
	if (f->t.dead && !src) {
		ret = urv_cm_track_dead_cmd(&f->t, req->cmd, req->data, req->in, rep, &n);
	} else if (req->cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
		struct rdma_ucm_migrate_id m;
		struct ucma_file *from;

		memcpy(&m, req->data, sizeof(m));
		from = src ? file_by_sec(src, m.fd) : file_by_handle(m.fd);
		if (from)
			urv_cm_track_move(&from->t, &f->t, m.id);
	} else {
		urv_cm_track_cmd(&f->t, req->cmd, req->data, req->in, rep, n);
	}
	pthread_mutex_unlock(&list_lock);
	return ret;
}

/* One command of the shim's own on f's file src (0: the primary). */
static int file_cmd(struct ucma_file *f, unsigned src, uint32_t cmd, const void *in,
		    uint32_t in_len, void *rep, uint32_t out)
{
	union {
		struct uroce_ucma_cmd_req r;
		uint8_t b[sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN];
	} req;

	memset(&req.r, 0, sizeof(req.r));
	memcpy(req.r.data, in, in_len);
	req.r.file = src ? f->mux.sec[src].handle : f->handle;
	req.r.cmd = cmd;
	req.r.out = out;
	req.r.in = in_len;
	if (src)
		return urv_mux_call(f->mux.sec[src].conn, UROCE_OP_UCMA_CMD, &req,
				    sizeof(req.r) + in_len, rep, out, NULL, 0);
	return ctl_call(UROCE_OP_UCMA_CMD, &req, sizeof(req.r) + in_len, rep, out, NULL, 0);
}

/* the listener's copy on secondary k: its port space, context and address */
static uint32_t mux_shadow(struct ucma_file *f, unsigned k, const struct urv_cm_id *id,
			   const void *addr, uint32_t backlog)
{
	struct rdma_ucm_create_id c = { .uid = id->uid, .ps = id->ps, .qp_type = id->qp_type };
	struct rdma_ucm_create_id_resp cr = { 0 };
	struct rdma_ucm_bind_ip b = { 0 };
	struct rdma_ucm_listen l = { .backlog = backlog };
	struct rdma_ucm_destroy_id d = { 0 };
	struct rdma_ucm_destroy_id_resp dr;

	if (file_cmd(f, k, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), &cr, sizeof(cr)))
		return 0;
	b.id = l.id = d.id = cr.id;
	memcpy(&b.addr, addr, sizeof(b.addr));
	if (!file_cmd(f, k, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), NULL, 0) &&
	    !file_cmd(f, k, RDMA_USER_CM_CMD_LISTEN, &l, sizeof(l), NULL, 0))
		return cr.id;
	/* that device cannot (its port taken there): the others still hear */
	file_cmd(f, k, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), &dr, sizeof(dr));
	return 0;
}

/* LISTEN succeeded on an id of the primary: bound to the wildcard, it
 * listens on every other uroce device too, as the kernel's rdma_cm listens
 * on every device (its requests then come on those devices' files). */
static void mux_listen(struct ucma_file *f, const struct rdma_ucm_listen *l)
{
	struct rdma_ucm_query q = { .id = l->id };
	struct rdma_ucm_query_route_resp qr;
	struct urv_mux_shadow sh = { .id = l->id };
	struct urv_cm_id id, *p;
	struct ibv_device **list;
	bool any = false;
	int n = 0;

	pthread_mutex_lock(&list_lock);
	p = urv_cm_track_id(&f->t, l->id);
	if (p)
		id = *p;
	pthread_mutex_unlock(&list_lock);
	if (!p || file_cmd(f, 0, RDMA_USER_CM_CMD_QUERY_ROUTE, &q, sizeof(q), &qr, sizeof(qr)) ||
	    !urv_cm_addr_any(&qr.src_addr))
		return;
	list = urv_get_device_list(NULL, 0, &n);
	if (!list)
		return;
	for (int i = 0; i < n; i++) {
		struct urv_device *d = urv_container_of(list[i], struct urv_device, ibdev);
		int k;

		if (!strcmp(d->sock_path, ctl_path) ||
		    (k = urv_mux_sec_get(&f->mux, f->fd, d->sock_path)) <= 0)
			continue;
		sh.h[k] = mux_shadow(f, (unsigned)k, &id, &qr.src_addr, l->backlog);
		any |= sh.h[k] != 0;
	}
	free(list - 1);
	struct urv_mux_shadow *t = any ? realloc(f->mux.shadows,
						 (f->mux.nshadows + 1) * sizeof(*t)) : NULL;
	if (t) {
		t[f->mux.nshadows++] = sh;
		f->mux.shadows = t;
	}
}

/* the listener goes: its copies with it */
static void mux_unlisten(struct ucma_file *f, uint32_t id)
{
	for (unsigned i = 0; i < f->mux.nshadows; i++) {
		struct urv_mux_shadow *sh = &f->mux.shadows[i];

		if (sh->id != id)
			continue;
		for (unsigned k = 1; k <= URV_MUX_MAX; k++) {
			struct rdma_ucm_destroy_id d = { .id = sh->h[k] };
			struct rdma_ucm_destroy_id_resp dr;

			if (sh->h[k])
				file_cmd(f, k, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), &dr,
					 sizeof(dr));
		}
		*sh = f->mux.shadows[--f->mux.nshadows];
		return;
	}
}

/* MIGRATE_ID of an id of secondary k (a request that came on another
 * device, to a synchronous id's own channel): it moves between the two
 * files' secondaries on that device; the destination's is opened now. */
static int mux_migrate(struct ucma_file *f, struct uroce_ucma_cmd_req *req, unsigned k)
{
	struct rdma_ucm_migrate_id m;
	struct ucma_file *from;
	uint32_t h = 0;
	int ret;

	if (req->in < sizeof(m) || k > URV_MUX_MAX)
		return -EINVAL;
	memcpy(&m, req->data, sizeof(m));
	pthread_mutex_lock(&list_lock);
	from = file_by_handle(m.fd); /* migrate_fd put the file's handle there */
	if (from && from->mux.sec[k].open)
		h = from->mux.sec[k].handle;
	pthread_mutex_unlock(&list_lock);
	if (!from || !h)
		return -EINVAL;
	ret = urv_mux_sec_k(&f->mux, f->fd, k);
	if (ret < 0)
		return ret;
	m.fd = h;
	memcpy(req->data, &m, sizeof(m));
	return 0;
}

/* Which file a command goes to: an id with a secondary's index in its top
 * bits goes there, without them. 0 or -errno. */
static int mux_route(struct ucma_file *f, struct uroce_ucma_cmd_req *req, unsigned *src)
{
	long off = urv_cm_id_offset(req->cmd);
	uint32_t h;

	*src = 0;
	if (off < 0 || req->in < (uint32_t)off + sizeof(h))
		return 0;
	memcpy(&h, req->data + off, sizeof(h));
	if (!(h >> URV_MUX_SHIFT))
		return 0;
	*src = h >> URV_MUX_SHIFT;
	h &= URV_MUX_MASK;
	memcpy(req->data + off, &h, sizeof(h));
	if (req->cmd == RDMA_USER_CM_CMD_MIGRATE_ID)
		return mux_migrate(f, req, *src);
	return *src <= URV_MUX_MAX && f->mux.sec[*src].open ? 0 : -ENOENT;
}

/* after a command succeeded on the primary: wildcard listeners' copies */
static void mux_after(struct ucma_file *f, const struct uroce_ucma_cmd_req *req)
{
	if (req->cmd == RDMA_USER_CM_CMD_LISTEN && req->in >= sizeof(struct rdma_ucm_listen)) {
		struct rdma_ucm_listen l;

		memcpy(&l, req->data, sizeof(l));
		mux_listen(f, &l);
	} else if (req->cmd == RDMA_USER_CM_CMD_DESTROY_ID && f->mux.nshadows &&
		   req->in >= sizeof(struct rdma_ucm_destroy_id)) {
		struct rdma_ucm_destroy_id d;

		memcpy(&d, req->data, sizeof(d));
		mux_unlisten(f, d.id);
	}
}

/* The command, with the kernel's ucma_write checks in its order: the
 * byte count written, or -errno. */
static ssize_t ucma_write(struct ucma_file *f, const void *buf, size_t len)
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
	if (mem_copy(&hdr, buf, sizeof(hdr), false))
		return -EFAULT;
	if (hdr.cmd > RDMA_USER_CM_CMD_JOIN_MCAST)
		return -EINVAL;
	if (hdr.in + sizeof(hdr) > len)
		return -EINVAL;
	if (hdr.cmd == RDMA_USER_CM_CMD_GET_OPTION)
		return -ENOSYS;
	if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT &&
	    hdr.out < offsetof(struct rdma_ucm_event_resp, ece))
		return -ENOSPC;        /* before waiting, as the kernel checks */
	in = hdr.in < UROCE_UCMA_MAX_IN ? hdr.in : UROCE_UCMA_MAX_IN;
	out = hdr.out < UROCE_UCMA_MAX_OUT ? hdr.out : UROCE_UCMA_MAX_OUT;
	memset(&req.r, 0, sizeof(req.r));
	if (mem_copy(req.r.data, (const uint8_t *)buf + sizeof(hdr), in, false))
		return -EFAULT;

	if (hdr.cmd == RDMA_USER_CM_CMD_SET_OPTION && in >= sizeof(struct rdma_ucm_set_option)) {
		struct rdma_ucm_set_option o;

		memcpy(&o, req.r.data, sizeof(o));
		/* the value follows the struct (abi.h); none is larger than this */
		if (o.optlen > UROCE_UCMA_MAX_IN - sizeof(o))
			return -EINVAL;
		if (mem_copy(req.r.data + sizeof(o), (const void *)(uintptr_t)o.optval,
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
	if (want && mem_writable(resp, want))
		return -EFAULT;

	req.r.file = f->handle;
	req.r.cmd = hdr.cmd;
	req.r.out = out;
	req.r.in = in;
	ret = mux_route(f, &req.r, &src);
	if (ret)
		return ret;
	for (;;) {
		if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT) {
			ret = f->mux.prim_fd >= 0 ? urv_mux_wait(&f->mux, f->fd, &src) :
						    wait_event_byte(f->fd);
			if (ret == -ENODEV && __atomic_load_n(&f->closed, __ATOMIC_ACQUIRE))
				return wait_forever();
			if (ret == -ENODEV) {
				/* the daemon's end: its DEVICE_REMOVAL events
				 * come on the pipe put in its place */
				ret = file_gone(f);
				if (ret)
					return ret;
				continue;
			}
			if (ret)
				return ret;
		}
		memset(rep, 0, sizeof(rep));
		ret = ucma_call(f, &req.r, rep, out, src);
		/* a stale byte (its event went with its id): wait for the next */
		if (!(hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT && ret == -EAGAIN))
			break;
	}
	if (ret)
		return ret;
	if (!src && !f->t.dead)
		mux_after(f, &req.r);
	hide_ibdev_index(hdr.cmd, req.r.data, in, rep, want);
	/* the reply says how much the kernel would copy: at most `want`
	 * bytes (what the kernel writes; the rest of rep is zero) */
	if (want && mem_copy((void *)(uintptr_t)resp, rep, want, true))
		return -EFAULT;
	return (ssize_t)len;
}

/* ---- the libc interposers -------------------------------------------------- */

static __attribute__((noinline)) ssize_t write_slow(int fd, const void *buf, size_t len)
{
	struct ucma_file *f;
	ssize_t r;

	LOAD(read, -1);
	f = file_get(fd);
	if (!f)
		return real_write(fd, buf, len);
	r = ucma_write(f, buf, len);
	file_put(f);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

URV_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	LOAD(write, -1);
	if (!maybe_fd(fd))
		return real_write(fd, buf, len);
	return write_slow(fd, buf, len);
}

/* The file goes: its ids with it, unless they are the parent's. */
static void file_release(struct ucma_file *f)
{
	if (!f->foreign) {
		struct uroce_handle_msg h = { .handle = f->handle };

		ctl_call(UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
	}
	urv_mux_close(&f->mux);
	file_put(f);
	conn_drop_if_idle();
}

URV_EXPORT int close(int fd)
{
	struct ucma_file *f;

	LOAD(close, -1);
	if (maybe_fd(fd) && (f = file_take(fd)))
		file_release(f);
	return real_close(fd);
}

/* dup2/dup3 onto an rdma_cm fd close it first, as the kernel does */
static void drop_target(int oldfd, int newfd)
{
	struct ucma_file *f;

	if (oldfd == newfd || !maybe_fd(newfd) || fcntl(oldfd, F_GETFD) < 0)
		return;
	f = file_take(newfd);
	if (f)
		file_release(f);
}

URV_EXPORT int dup2(int oldfd, int newfd)
{
	LOAD(dup2, -1);
	drop_target(oldfd, newfd);
	return real_dup2(oldfd, newfd);
}

URV_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	LOAD(dup3, -1);
	drop_target(oldfd, newfd);
	return real_dup3(oldfd, newfd, flags);
}

/* librdmacm's open_cdev() insists on a character device. The kernel's
 * misc minor is dynamic; a kernel node's number is used when there is
 * one (its netlink answer names it). */
static void fake_chr(mode_t *mode, dev_t *rdev)
{
	struct stat st;

	*mode = S_IFCHR | 0666;
	if (syscall(SYS_newfstatat, AT_FDCWD, URV_UCMA_DEV, &st, 0) == 0 &&
	    S_ISCHR(st.st_mode))
		*rdev = st.st_rdev;
	else
		*rdev = makedev(10, 58);
}

static bool fd_is_ours(int fd)
{
	struct ucma_file *f;

	if (!maybe_fd(fd) || !(f = file_get(fd)))
		return false;
	file_put(f);
	return true;
}

URV_EXPORT int fstat(int fd, struct stat *st)
{
	int r;

	LOAD(fstat, -1);
	r = real_fstat(fd, st);
	if (!r && fd_is_ours(fd))
		fake_chr(&st->st_mode, &st->st_rdev);
	return r;
}

URV_EXPORT int fstat64(int fd, struct stat64 *st)
{
	int r;

	LOAD(fstat64, -1);
	r = real_fstat64(fd, st);
	if (!r && fd_is_ours(fd))
		fake_chr(&st->st_mode, &st->st_rdev);
	return r;
}

/* programs built against glibc < 2.33 */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
URV_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat(fd, st);
}
URV_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	(void)ver;
	return fstat64(fd, st);
}
