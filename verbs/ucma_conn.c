/* SPDX-License-Identifier: MIT */
/* The process's one connection to the daemon serving rdma_cm (the first
 * uroce device, or $UROCE_CM_DEVICE's): made on first use with HELLO,
 * dropped with the last file, marked dead when the daemon goes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "urv_ctl.h"
#include "urv_obj.h"
#include "ucma_int.h"

/* The connection all of this process's rdma_cm files use (ctl_lock). */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_sock = -1;
static char ctl_path[512];      /* its socket: the primary device's */
static uint32_t ctl_seq;
static bool ctl_dead;

static void close_fds(int *f, int n)
{
	for (int i = 0; i < n; i++)
		if (f[i] >= 0)
			ucma_real_close(f[i]);
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
	ucma_real_close(mem);
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
		ucma_real_close(s);
		return ret == -EACCES ? -EACCES : -ENODEV;
	}
	ctl_sock = s;
	ctl_dead = false;
	return 0;
}

/* One request on the connection (which must exist): 0 or -errno. */
int ucma_ctl_call(uint32_t op, const void *req, size_t req_len, void *rep,
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
void ucma_conn_drop_if_idle(void)
{
	bool idle;

	pthread_mutex_lock(&ctl_lock);
	pthread_mutex_lock(&ucma_list_lock);
	idle = !ucma_own_files_left();
	pthread_mutex_unlock(&ucma_list_lock);
	if (idle && ctl_sock >= 0) {
		ucma_real_close(ctl_sock);
		ctl_sock = -1;
		ctl_dead = false;
	}
	pthread_mutex_unlock(&ctl_lock);
}

bool ucma_conn_is_dead(void)
{
	bool dead;

	pthread_mutex_lock(&ctl_lock);
	dead = ctl_dead;
	pthread_mutex_unlock(&ctl_lock);
	return dead;
}

/* open(): the connection exists (made now if needed): 0 or -errno */
int ucma_conn_open(void)
{
	int r;

	pthread_mutex_lock(&ctl_lock);
	r = conn_get();
	pthread_mutex_unlock(&ctl_lock);
	return r;
}

const char *ucma_ctl_path(void)
{
	return ctl_path;
}

/* fork: the connection is the parent's (its fd is closed here: the
 * parent keeps its own copy) */
void ucma_conn_atfork_child(void)
{
	pthread_mutex_init(&ctl_lock, NULL);
	if (ctl_sock >= 0)
		syscall(SYS_close, ctl_sock);
	ctl_sock = -1;
	ctl_seq = 0;
	ctl_dead = false;
}
