/* SPDX-License-Identifier: MIT */
/* A sysfs-shaped description of the device in the run directory:
 * <run_dir>/class/infiniband/<dev>/{node_guid,ports/1/gids/0,...}, the
 * files rdma-core, UCX, libfabric and infiniband-diags read under
 * /sys/class/infiniband/<dev>. liburoce redirects those paths here
 * (verbs/sysfs.c); no kernel object and no root is involved. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "sysfs.h"

struct sysfs_w {
	char path[PATH_MAX];
	size_t base;    /* length of the device directory prefix in path */
	int err;
};

/* path = <device dir>/<rel>; false when it does not fit */
static bool sw_path(struct sysfs_w *w, const char *rel)
{
	int n = snprintf(w->path + w->base, sizeof(w->path) - w->base, "/%s", rel);

	if (n < 0 || (size_t)n >= sizeof(w->path) - w->base) {
		w->err = -ENAMETOOLONG;
		return false;
	}
	return true;
}

static void sw_dir(struct sysfs_w *w, const char *rel)
{
	if (w->err || !sw_path(w, rel))
		return;
	if (mkdir(w->path, 0755) < 0 && errno != EEXIST)
		w->err = -errno;
}

static void sw_file(struct sysfs_w *w, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void sw_file(struct sysfs_w *w, const char *rel, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, fd;

	if (w->err || !sw_path(w, rel))
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		w->err = -EOVERFLOW;
		return;
	}
	fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0) {
		w->err = -errno;
		return;
	}
	if (write(fd, buf, (size_t)n) != n)
		w->err = errno ? -errno : -EIO;
	close(fd);
}

/* kernel's rate_show(): "25 Gb/sec (1X EDR)" (lane rates in 100 Mb/s) */
static void sw_rate(char *buf, size_t len, uint8_t speed, uint8_t width)
{
	unsigned lane, w = width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 :
		   width == 16 ? 2 : 1;
	const char *name;

	switch (speed) {
	case 2: lane = 50; name = " DDR"; break;
	case 4: lane = 100; name = " QDR"; break;
	case 8: lane = 100; name = " FDR10"; break;
	case 16: lane = 140; name = " FDR"; break;
	case 32: lane = 250; name = " EDR"; break;
	case 64: lane = 500; name = " HDR"; break;
	case 128: lane = 1000; name = " NDR"; break;
	default: lane = 25; name = ""; break;
	}
	snprintf(buf, len, "%u%s Gb/sec (%uX%s)", lane * w / 10, (lane * w) % 10 ? ".5" : "",
		 w, name);
}

static const char *sw_port_state(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "1: DOWN";
	case IBV_PORT_INIT: return "2: INIT";
	case IBV_PORT_ARMED: return "3: ARMED";
	case IBV_PORT_ACTIVE: return "4: ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "5: ACTIVE_DEFER";
	default: return "0: NOP";
	}
}

/* "%04x:%04x:..." of 16 bytes, as the kernel's %pI6 */
static void sw_gid_str(char *buf, size_t len, const uint8_t raw[16])
{
	size_t o = 0;

	for (int i = 0; i < 16 && o < len; i += 2)
		o += (size_t)snprintf(buf + o, len - o, "%s%02x%02x", i ? ":" : "", raw[i],
				      raw[i + 1]);
}

/* "ffffffff,ffffffff" style mask of every configured CPU (local_cpus) */
static void sw_cpumask(char *buf, size_t len)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int groups, o = 0;

	if (n < 1)
		n = 1;
	if (n > 1024)
		n = 1024;
	groups = (int)((n + 31) / 32);
	buf[0] = 0;
	for (int g = groups - 1; g >= 0 && (size_t)o < len; g--) {
		long bits = n - (long)g * 32;
		uint32_t m = bits >= 32 ? 0xffffffffu : (1u << bits) - 1;
		o += snprintf(buf + o, len - (size_t)o, "%s%08x", g == groups - 1 ? "" : ",", m);
	}
}

static void sw_tree(struct sysfs_w *w, const struct emu_dev *d)
{
	const struct ibv_device_attr *a = &d->dev_attr;
	const struct ibv_port_attr *p = &d->port_attr;
	uint64_t g = be64toh(a->node_guid);
	char buf[128], rel[64];

	sw_file(w, "node_type", "1: CA\n");
	sw_file(w, "node_guid", "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48) & 0xffff,
		(unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	g = be64toh(a->sys_image_guid);
	sw_file(w, "sys_image_guid", "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48) & 0xffff,
		(unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	sw_file(w, "fw_ver", "%s\n", a->fw_ver);
	sw_file(w, "hw_rev", "0x%x\n", a->hw_ver);
	sw_file(w, "hca_type", "uroce\n");
	sw_file(w, "board_id", "UROCE0001\n");
	sw_file(w, "node_desc", "uroce %s\n", d->name);
	sw_dir(w, "device");
	sw_file(w, "device/vendor", "0x%04x\n", a->vendor_id);
	sw_file(w, "device/device", "0x%04x\n", a->vendor_part_id);
	/* no PCI function behind it: no NUMA affinity, every CPU is local */
	sw_file(w, "device/numa_node", "-1\n");
	sw_cpumask(buf, sizeof(buf));
	sw_file(w, "device/local_cpus", "%s\n", buf);
	/* the default loopback device is where rdma_cm puts 127.0.0.1 and ::1
	 * (docs/cm.md): its network device is lo, listed where the kernel
	 * lists a RoCE device's netdev (rdma-core's tests find the address
	 * to use there) */
	if (d->loopback) {
		sw_dir(w, "device/net");
		sw_dir(w, "device/net/lo");
	}

	sw_dir(w, "ports");
	sw_dir(w, "ports/1");
	sw_file(w, "ports/1/state", "%s\n", sw_port_state(d->port_state));
	sw_file(w, "ports/1/phys_state", "%s\n",
		d->port_state == IBV_PORT_ACTIVE ? "5: LinkUp" : "3: Disabled");
	sw_rate(buf, sizeof(buf), p->active_speed, p->active_width);
	sw_file(w, "ports/1/rate", "%s\n", buf);
	sw_file(w, "ports/1/link_layer", "Ethernet\n");
	sw_file(w, "ports/1/lid", "0x0\n");
	sw_file(w, "ports/1/sm_lid", "0x0\n");
	sw_file(w, "ports/1/lid_mask_count", "0\n");
	sw_file(w, "ports/1/sm_sl", "0\n");
	sw_file(w, "ports/1/cap_mask", "0x%08x\n", p->port_cap_flags);
	sw_dir(w, "ports/1/pkeys");
	sw_file(w, "ports/1/pkeys/0", "0xffff\n");
	sw_dir(w, "ports/1/gids");
	sw_dir(w, "ports/1/gid_attrs");
	sw_dir(w, "ports/1/gid_attrs/types");
	/* every slot exists as in the kernel; only valid ones have a type */
	for (uint32_t i = 0; i < (uint32_t)p->gid_tbl_len && !w->err; i++) {
		static const uint8_t zero[16];
		const uint8_t *raw = i < d->gid_count ? d->gids[i].raw : zero;

		sw_gid_str(buf, sizeof(buf), raw);
		snprintf(rel, sizeof(rel), "ports/1/gids/%u", i);
		sw_file(w, rel, "%s\n", buf);
		if (i < d->gid_count) {
			snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%u", i);
			sw_file(w, rel, "RoCE v2\n");
		}
	}
}

/* Remove name (in directory at) and what is below it, best effort (an
 * entry that cannot go is left; the callers depend on none). Nothing is
 * ever followed or reached by a path: each directory is opened relative to
 * its parent's descriptor with O_NOFOLLOW and emptied through its own
 * descriptor, so a component another user swaps for a symlink while we
 * walk cannot lead the removal out of the tree (nftw, by path names,
 * could be); a directory that is not ours is not entered at all. */
static void emu_rm_below(int at, const char *name, unsigned depth)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		/* a file, a symlink (ELOOP: the link itself goes), or gone */
		if (errno == ENOTDIR || errno == ELOOP)
			unlinkat(at, name, 0);
		return;
	}
	struct stat st;
	DIR *dir = NULL;
	if (depth < 16 && !fstat(fd, &st) && st.st_uid == geteuid())
		dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(dir)) != NULL;)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			emu_rm_below(dirfd(dir), e->d_name, depth + 1);
	closedir(dir);
	unlinkat(at, name, AT_REMOVEDIR);
}

/* path and everything below it (emu_rm_at); shared with port_dpdk.c for
 * the EAL run directories */
void emu_rm_tree(const char *path)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(parent))
		return;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = 0;
	int pfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return;
	emu_rm_below(pfd, slash + 1, 0);
	close(pfd);
}

void emu_rm_at(int at, const char *name)
{
	emu_rm_below(at, name, 0);
}

static int sw_mkdirs(char *path, size_t upto)
{
	for (size_t i = upto; path[i]; i++) {
		if (path[i] != '/')
			continue;
		path[i] = 0;
		int r = mkdir(path, 0755);
		path[i] = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* class/misc/rdma_cm/abi_version, which librdmacm reads before it opens
 * /dev/infiniband/rdma_cm (liburoce serves both: verbs/ucma.c). Shared by
 * every daemon of the run directory, same content: written whole (a
 * private temporary renamed into place) and never removed, as the
 * kernel's stays while the module is loaded. */
static int emu_sysfs_write_ucma(const char *run_dir)
{
	char dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
	int n, fd, ret = 0;

	n = snprintf(dir, sizeof(dir), "%s/class/misc/rdma_cm", run_dir);
	if (n < 0 || (size_t)n >= sizeof(dir) ||
	    snprintf(tmp, sizeof(tmp), "%s/.abi_version.%d", dir, (int)getpid()) >= (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/abi_version", dir) >= (int)sizeof(final))
		return -ENAMETOOLONG;
	ret = sw_mkdirs(dir, strlen(run_dir) + 1);
	if (ret)
		return ret;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	char v[16];
	int vl = snprintf(v, sizeof(v), "%d\n", UROCE_UCMA_ABI_VERSION);

	if (write(fd, v, (size_t)vl) != vl)
		ret = errno ? -errno : -EIO;
	close(fd);
	if (!ret && rename(tmp, final) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int emu_sysfs_write(const char *run_dir, const struct emu_dev *d)
{
	struct sysfs_w w = { .err = 0 };
	char final[PATH_MAX];
	int n, ret;

	n = snprintf(final, sizeof(final), "%s/" UROCE_SYSFS_CLASS "/%s", run_dir, d->name);
	if (n < 0 || (size_t)n >= sizeof(final))
		return -ENAMETOOLONG;
	n = snprintf(w.path, sizeof(w.path), "%s/" UROCE_SYSFS_CLASS "/.%s.new", run_dir, d->name);
	if (n < 0 || (size_t)n >= sizeof(w.path))
		return -ENAMETOOLONG;
	w.base = (size_t)n;
	emu_rm_tree(w.path);
	ret = sw_mkdirs(w.path, strlen(run_dir) + 1);
	if (ret)
		return ret;
	sw_tree(&w, d);
	w.path[w.base] = 0;
	if (w.err) {
		emu_rm_tree(w.path);
		return w.err;
	}
	/* readers see the whole tree or none: a stale one (a daemon that was
	 * killed) goes first, then the new one is renamed into place */
	emu_rm_tree(final);
	if (rename(w.path, final) < 0) {
		ret = -errno;
		emu_rm_tree(w.path);
		return ret;
	}
	return emu_sysfs_write_ucma(run_dir);
}

void emu_sysfs_remove(const char *run_dir, const char *name)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/" UROCE_SYSFS_CLASS "/%s", run_dir, name);

	if (n > 0 && (size_t)n < sizeof(path))
		emu_rm_tree(path);
}
