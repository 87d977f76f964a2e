/* SPDX-License-Identifier: MIT */
/* Which paths are ours (/dev/infiniband/rdma_cm when uroce serves it),
 * open(): a new file of the daemon's, its event pipe as the fd, and what
 * fork makes of the files and the connection. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "urv_dev.h"
#include "ucma.h"
#include "ucma_int.h"

/* fork: the inherited files are the parent's; the connection is too (its
 * fd is closed here: the parent keeps its own copy) */
static void atfork_child(void)
{
	ucma_files_atfork_child();
	ucma_conn_atfork_child();
	urv_mux_atfork_child();
}

__attribute__((constructor)) static void ucma_init(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

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
	if (!ucma_libc_ok())
		return 0;
	if (flags & O_DIRECTORY) {
		*ret = -1;
		errno = ENOTDIR;
		return 1;
	}
	r = ucma_conn_open();
	/* no daemon answers: the path is what it is without uroce */
	if (r == -ENODEV)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!r && !f)
		r = -ENOMEM;
	if (!r)
		r = ucma_ctl_call(UROCE_OP_UCMA_OPEN, NULL, 0, &rep, sizeof(rep), &fd, 1);
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

			ucma_real_close(fd);
			ucma_ctl_call(UROCE_OP_UCMA_CLOSE, &h, sizeof(h), NULL, 0, NULL, 0);
		}
		free(f);
		ucma_conn_drop_if_idle();
		*ret = -1;
		errno = -r;
		return 1;
	}
	f->fd = fd;
	f->handle = rep.handle;
	f->gone_wfd = -1;
	ucma_file_add(f);
	*ret = fd;
	return 1;
}
