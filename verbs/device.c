/* SPDX-License-Identifier: MIT */
/* uroce devices: discovery through the run directory, HELLO, queries
 * (contexts: context.c). */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_mem.h"

/* Devices are never freed: an application may keep a device pointer
 * across list calls while a context is open on it, and keeping them makes
 * "is this device ours" a scan of a small fixed array. */
static struct urv_device *devices[URV_MAX_DEVICES];
static int ndevices;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

bool urv_dev_ours(const struct ibv_device *d)
{
	int i, n = __atomic_load_n(&ndevices, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (&devices[i]->ibdev == d)
			return true;
	return false;
}

/* One stderr line per problem and path for the life of the process: an
 * application lists devices often. Called with dev_lock held. */
static void warn_once(const char *path, const char *fmt, ...)
{
	static char *warned[32];
	static unsigned nwarned;
	char line[768];
	va_list ap;
	unsigned i;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (i = 0; i < nwarned; i++)
		if (!strcmp(warned[i], line))
			return;
	if (nwarned < sizeof(warned) / sizeof(warned[0]))
		warned[nwarned++] = strdup(line) ? : (char *)"";
	fprintf(stderr, "uroce: %s: %s\n", path, line);
}

/* The run directory for the system view (verbs/sysfs.c): empty when it
 * fails the same trust checks as device discovery, so nothing is
 * redirected into a directory another user could have filled. */
void urv_run_dir(char *buf, size_t len)
{
	const char *why;
	int fd;

	if (uroce_run_dir(buf, len) < 0) {
		buf[0] = 0;
		return;
	}
	fd = urv_run_dir_open(buf, &why);
	if (fd < 0)
		buf[0] = 0;
	else
		close(fd);
}

void urv_sock_timeout(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* HELLO on a fresh connection to path. fds[0]: doorbell memfd, fds[1]:
 * wake pipe write end; *async_rd: the read end of the daemon's async
 * event pipe. A daemon of another ABI version is named once on stderr. */
int urv_dev_hello(const char *path, int sock, struct uroce_hello_rep *rep, int *async_rd,
		  int fds[2])
{
	uint32_t seq = 0;
	int f[3], ret;

	ret = urv_hello(sock, &seq, rep, f);
	if (ret == -EPROTONOSUPPORT) {
		char theirs[16] = "< 4";

		if (rep->abi_version)
			snprintf(theirs, sizeof(theirs), "%u", rep->abi_version);
		warn_once(path, "the daemon speaks ABI version %s, this liburoce %u: "
			  "run a uroced of the same release (docs/verbs.md, \"ABI version\")",
			  theirs, UROCE_ABI_VERSION);
	}
	if (ret)
		return ret;
	fds[0] = f[0];
	fds[1] = f[1];
	*async_rd = f[2];
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct urv_device *device_get(const char *name, const char *path)
{
	struct urv_device *d;
	int i;

	for (i = 0; i < ndevices; i++)
		if (!strcmp(devices[i]->ibdev.name, name) &&
		    !strcmp(devices[i]->sock_path, path))
			return devices[i];
	if (ndevices == URV_MAX_DEVICES)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", name);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs_%s", name);
	/* No sysfs behind it: reads of attribute files simply fail. */
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
		 "/sys/class/infiniband_verbs/uverbs_%s", name);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
		 "/sys/class/infiniband/%s", name);
	snprintf(d->sock_path, sizeof(d->sock_path), "%s", path);
	d->index = 0x10000 + ndevices;
	devices[ndevices] = d;
	__atomic_store_n(&ndevices, ndevices + 1, __ATOMIC_RELEASE);
	return d;
}

/* The daemon sockets of the run directory (dir, filled in), sorted: their
 * device names, strdup'ed into names. Returns how many. */
static int scan_run_dir(char *dir, size_t dir_size, char **names)
{
	const char *why = NULL;
	int dfd = -1, nnames = 0;
	struct dirent *de;
	DIR *dp = NULL;

	if (uroce_run_dir(dir, dir_size) == 0)
		dfd = urv_run_dir_open(dir, &why);
	if (dfd < 0 && why) {
		pthread_mutex_lock(&dev_lock);
		warn_once(dir, "run directory ignored (%s; docs/security.md)", why);
		pthread_mutex_unlock(&dev_lock);
	}
	if (dfd >= 0) {
		dp = fdopendir(dfd);
		if (!dp)
			close(dfd);
	}
	while (dp && (de = readdir(dp)) && nnames < URV_MAX_DEVICES) {
		size_t l = strlen(de->d_name), sl = strlen(UROCE_SOCK_SUFFIX);

		if (l <= sl || l - sl >= UROCE_DEV_NAME_MAX ||
		    strcmp(de->d_name + l - sl, UROCE_SOCK_SUFFIX))
			continue;
		/* a socket someone else made is not our daemon's */
		if (!urv_sock_trusted(dirfd(dp), de->d_name)) {
			pthread_mutex_lock(&dev_lock);
			warn_once(dir, "%s ignored (not a socket of this user or root)",
				  de->d_name);
			pthread_mutex_unlock(&dev_lock);
			continue;
		}
		names[nnames] = strndup(de->d_name, l - sl);
		if (names[nnames])
			nnames++;
	}
	if (dp)
		closedir(dp);
	qsort(names, (size_t)nnames, sizeof(names[0]), name_cmp);
	return nnames;
}

/* A device whose daemon answers HELLO on dir/name.sock, or NULL (a stale
 * socket, a refusal). Called with dev_lock held. */
static struct urv_device *probe_device(const char *dir, const char *name)
{
	char path[512];
	struct uroce_hello_rep rep;
	struct urv_device *d;
	int fds[2], ard, sock;

	snprintf(path, sizeof(path), "%s/%s%s", dir, name, UROCE_SOCK_SUFFIX);
	sock = urv_connect(path);
	if (sock < 0) {
		if (errno == EPERM)
			warn_once(path, "ignored: the daemon is not run by this user or root");
		return NULL;   /* else a stale socket: no daemon behind it */
	}
	urv_sock_timeout(sock, 2);
	int hr = urv_dev_hello(path, sock, &rep, &ard, fds);
	if (hr) {
		if (hr == -EACCES)
			warn_once(path, "the daemon's access rule refuses uid %u",
				  (unsigned)geteuid());
		else if (hr == -ESRCH) /* another container's daemon */
			warn_once(path, "the daemon cannot see this process (another pid "
				  "namespace: docs/running.md \"Containers and CI\")");
		close(sock);
		/* listed all the same: ibv_open_device then fails with
		 * EPROTONOSUPPORT instead of the device silently missing */
		return hr == -EPROTONOSUPPORT ? device_get(name, path) : NULL;
	}
	close(ard);
	close(fds[0]);
	close(fds[1]);
	close(sock);
	d = device_get(name, path);
	if (d)
		d->node_guid = rep.node_guid;
	return d;
}

/* Returns a malloc'ed NULL-terminated array: the real devices, then ours.
 * The slot before the array remembers the real list for freeing. */
struct ibv_device **urv_get_device_list(struct ibv_device **real, int nreal,
					int *num)
{
	char dir[256];
	char *names[URV_MAX_DEVICES];
	struct urv_device *found[URV_MAX_DEVICES];
	struct ibv_device **list;
	int nnames, nfound = 0, i;

	nnames = scan_run_dir(dir, sizeof(dir), names);
	pthread_mutex_lock(&dev_lock);
	for (i = 0; i < nnames; i++) {
		struct urv_device *d = probe_device(dir, names[i]);

		if (d)
			found[nfound++] = d;
	}
	pthread_mutex_unlock(&dev_lock);
	for (i = 0; i < nnames; i++)
		free(names[i]);

	list = calloc((size_t)(nreal + nfound + 2), sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = (struct ibv_device *)(void *)real;
	list++;
	for (i = 0; i < nreal; i++)
		list[i] = real[i];
	for (i = 0; i < nfound; i++)
		list[nreal + i] = &found[i]->ibdev;
	if (num)
		*num = nreal + nfound;
	return list;
}

int urv_query_device(struct ibv_context *ibctx, struct ibv_device_attr *a)
{
	*a = to_uctx(ibctx)->info.dev_attr;
	return 0;
}

/* IB_UVERBS_DEVICE_ATOMIC_WRITE (Linux 6.2 uapi; Debian 12's headers are
 * older): ibv_wr_atomic_write is served */
#define URV_DEVICE_ATOMIC_WRITE (1ULL << 40)

int urv_query_device_ex(struct ibv_context *ibctx,
			const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *a, size_t len)
{
	struct ibv_device_attr_ex ex;

	if (in && in->comp_mask)
		return EINVAL;
	if (len < sizeof(a->orig_attr))
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	ex.orig_attr = to_uctx(ibctx)->info.dev_attr;
	/* CQE timestamps are CLOCK_MONOTONIC nanoseconds: a 1 GHz clock */
	ex.completion_timestamp_mask = UINT64_MAX;
	ex.hca_core_clock = 1000000;    /* kHz */
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	/* FLUSH of both placement types (docs/verbs.md: what persistent
	 * means here) */
	ex.device_cap_flags_ex = URV_DEVICE_ATOMIC_WRITE | UROCE_DEVICE_FLUSH_GLOBAL |
				 UROCE_DEVICE_FLUSH_PERSISTENT;
	ex.max_dm_size = to_uctx(ibctx)->info.max_dm_size;
	urv_odp_caps(&ex);
	memcpy(a, &ex, len < sizeof(ex) ? len : sizeof(ex));
	return 0;
}

int urv_query_port(struct ibv_context *ibctx, uint8_t port,
		   struct ibv_port_attr *a, size_t len)
{
	struct urv_context *c = to_uctx(ibctx);
	struct uroce_query_port_req req = { .port_num = port };
	struct uroce_query_port_rep rep;
	int ret;

	if (port != 1)
		return EINVAL;
	ret = urv_ctl(c, UROCE_OP_QUERY_PORT, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret)
		return -ret;
	pthread_mutex_lock(&c->ctl_lock);
	c->info.port_attr = rep.port_attr;
	c->info.gid_count = rep.gid_count > UROCE_MAX_GIDS ? UROCE_MAX_GIDS :
		rep.gid_count;
	memcpy(c->info.gids, rep.gids, sizeof(rep.gids));
	memcpy(c->info.gid_type, rep.gid_type, sizeof(rep.gid_type));
	pthread_mutex_unlock(&c->ctl_lock);
	memset(a, 0, len);
	memcpy(a, &rep.port_attr, len < sizeof(*a) ? len : sizeof(*a));
	return 0;
}

static bool gid_valid(struct urv_context *c, uint32_t idx)
{
	static const union ibv_gid zero;

	return idx < c->info.gid_count &&
		memcmp(&c->info.gids[idx], &zero, sizeof(zero));
}

int urv_query_gid(struct ibv_context *ibctx, uint8_t port, int idx,
		  union ibv_gid *gid)
{
	struct urv_context *c = to_uctx(ibctx);

	if (port != 1 || idx < 0 || idx >= c->info.port_attr.gid_tbl_len) {
		errno = EINVAL;
		return -1;
	}
	if ((uint32_t)idx < c->info.gid_count)
		*gid = c->info.gids[idx];
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

int urv_query_gid_ex(struct ibv_context *ibctx, uint32_t port, uint32_t idx,
		     struct ibv_gid_entry *e, uint32_t flags, size_t esz)
{
	struct urv_context *c = to_uctx(ibctx);

	if (flags || esz < sizeof(*e) || port != 1)
		return EINVAL;
	if (idx >= (uint32_t)c->info.port_attr.gid_tbl_len)
		return EINVAL;
	if (!gid_valid(c, idx))
		return ENODATA;
	memset(e, 0, esz);
	e->gid = c->info.gids[idx];
	e->gid_index = idx;
	e->port_num = 1;
	e->gid_type = c->info.gid_type[idx];
	e->ndev_ifindex = 0;
	return 0;
}

ssize_t urv_query_gid_table(struct ibv_context *ibctx,
			    struct ibv_gid_entry *e, size_t max,
			    uint32_t flags, size_t esz)
{
	struct urv_context *c = to_uctx(ibctx);
	size_t n = 0;
	uint32_t i;

	if (flags || esz < sizeof(*e))
		return -EINVAL;
	for (i = 0; i < c->info.gid_count; i++) {
		struct ibv_gid_entry *out;

		if (!gid_valid(c, i))
			continue;
		if (n == max)
			return -EINVAL;
		out = (struct ibv_gid_entry *)(void *)((char *)e + n * esz);
		memset(out, 0, esz);
		out->gid = c->info.gids[i];
		out->gid_index = i;
		out->port_num = 1;
		out->gid_type = c->info.gid_type[i];
		n++;
	}
	return (ssize_t)n;
}

/* rdma-core's private enum ibv_gid_type_sysfs: 0 = IB/RoCE v1, 1 = v2. */
int urv_query_gid_type(struct ibv_context *ibctx, uint8_t port, unsigned idx,
		       uint32_t *type)
{
	struct urv_context *c = to_uctx(ibctx);

	if (port != 1 || idx >= (unsigned)c->info.port_attr.gid_tbl_len) {
		errno = EINVAL;
		return -1;
	}
	*type = idx < c->info.gid_count &&
		c->info.gid_type[idx] == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
	return 0;
}

int urv_query_pkey(struct ibv_context *ibctx, uint8_t port, int idx,
		   __be16 *pkey)
{
	struct urv_context *c = to_uctx(ibctx);

	if (port != 1 || idx < 0 || idx >= c->info.port_attr.pkey_tbl_len) {
		errno = EINVAL;
		return -1;
	}
	*pkey = idx == 0 ? htobe16(c->info.pkeys[0] ? c->info.pkeys[0] : 0xffff) : 0;
	return 0;
}

int urv_get_pkey_index(struct ibv_context *ibctx, uint8_t port, __be16 pkey)
{
	__be16 p;

	if (urv_query_pkey(ibctx, port, 0, &p))
		return -1;
	if (p != pkey) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
