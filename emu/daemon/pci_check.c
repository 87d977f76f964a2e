/* SPDX-License-Identifier: MIT */
/* A PCI port checked before DPDK's EAL starts (docs/running.md "PCI
 * NICs"): EAL skips a device it cannot use with a debug message, or stops
 * on missing hugepages with several lines about something else, and
 * uroced would end with "no usable port". Each way a device cannot be
 * used is one line here, naming what to do:
 *   - no such device;
 *   - bound to no driver, or to a kernel network driver (with its
 *     interface): DPDK needs vfio-pci or a UIO driver (the bifurcated
 *     mlx4/mlx5 PMDs excepted, which drive the device next to the kernel);
 *   - vfio-pci: the IOMMU group not viable (another device of the group
 *     bound to a kernel driver) or busy (/dev/vfio/N held by another
 *     process: EBUSY);
 *   - another uroced drives it (an exclusive lock on its sysfs directory,
 *     held until we exit: two DPDK programs on one device corrupt each
 *     other's rings, and uio does not stop the second);
 *   - hugepages: fewer free than EAL will take;
 *   - after EAL: bound right but no PMD took it (emu_pci_no_port). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "daemon.h"

#define EMU_PCI_DEVS "/sys/bus/pci/devices"

bool emu_is_pci(const char *v)
{
	unsigned a, b, c2, f;
	char tail;

	return v[0] && (sscanf(v, "%x:%x:%x.%x%c", &a, &b, &c2, &f, &tail) == 4 ||
			sscanf(v, "%x:%x.%x%c", &b, &c2, &f, &tail) == 3);
}

/* "0000:03:00.0" from "03:00.0" or "0000:03:00.0" */
static void emu_pci_addr(const char *v, char *out, size_t len)
{
	unsigned a = 0, b = 0, c = 0, f = 0;

	if (sscanf(v, "%x:%x:%x.%x", &a, &b, &c, &f) != 4) {
		a = 0;
		(void)sscanf(v, "%x:%x.%x", &b, &c, &f);
	}
	snprintf(out, len, "%04x:%02x:%02x.%x", a & 0xffff, b & 0xff, c & 0x1f, f & 7);
}

/* the last path element of a sysfs link (a driver's or a group's name) */
static int emu_link_name(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		return -1;
	buf[n] = 0;
	const char *s = strrchr(buf, '/');
	snprintf(out, len, "%.*s", (int)len - 1, s ? s + 1 : buf);
	return 0;
}

static void emu_pci_read_id(const char *dir, const char *file, char *out, size_t len)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(out, len, "?");
	if (snprintf(p, sizeof(p), "%s/%s", dir, file) >= (int)sizeof(p) || !(f = fopen(p, "re")))
		return;
	if (fgets(out, (int)len, f)) {
		out[strcspn(out, "\n")] = 0;
		if (!strncmp(out, "0x", 2))
			memmove(out, out + 2, strlen(out + 2) + 1);
	}
	fclose(f);
}

/* the first entry of dir/sub not starting with '.', or "" */
static void emu_first_entry(const char *dir, const char *sub, char *out, size_t len)
{
	char p[PATH_MAX];
	DIR *d;

	out[0] = 0;
	if (snprintf(p, sizeof(p), "%s/%s", dir, sub) >= (int)sizeof(p) || !(d = opendir(p)))
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.') {
			snprintf(out, len, "%.*s", (int)len - 1, e->d_name);
			break;
		}
	closedir(d);
}

/* the network interface the kernel made of the device (a virtio device's
 * is one level down, on the virtio bus), or "" */
static void emu_pci_ifname(const char *dir, char *out, size_t len)
{
	DIR *d;

	emu_first_entry(dir, "net", out, len);
	if (out[0] || !(d = opendir(dir)))
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL && !out[0];) {
		char sub[300];
		if (!strncmp(e->d_name, "virtio", 6) &&
		    snprintf(sub, sizeof(sub), "%s/net", e->d_name) < (int)sizeof(sub))
			emu_first_entry(dir, sub, out, len);
	}
	closedir(d);
}

static bool emu_drv_dpdk(const char *drv, const char *vendor)
{
	if (!strcmp(drv, "vfio-pci") || !strcmp(drv, "uio_pci_generic") || !strcmp(drv, "igb_uio"))
		return true;
	/* bifurcated: mlx4/mlx5 PMDs drive the device next to its kernel driver */
	return !strcmp(vendor, "15b3") && (!strcmp(drv, "mlx5_core") || !strcmp(drv, "mlx4_core"));
}

/* vfio-pci: every device of the group bound to vfio-pci (or to nothing,
 * or a bridge's pcieport), and the group's file not held by anyone */
static int emu_pci_vfio_group(const struct emu_opts *o, const char *addr, const char *dir)
{
	char p[PATH_MAX], grp[64], drv[64];
	DIR *gd;

	if (snprintf(p, sizeof(p), "%s/iommu_group", dir) >= (int)sizeof(p) ||
	    emu_link_name(p, grp, sizeof(grp))) {
		fprintf(stderr, "uroced: %s: PCI device %s is bound to vfio-pci but has no IOMMU "
			"group (enable the IOMMU: intel_iommu=on / amd_iommu=on)\n", o->dev, addr);
		return -1;
	}
	snprintf(p, sizeof(p), "/sys/kernel/iommu_groups/%s/devices", grp);
	if ((gd = opendir(p)) != NULL) {
		for (struct dirent *e; (e = readdir(gd)) != NULL;) {
			char dp[PATH_MAX];
			if (e->d_name[0] == '.' ||
			    snprintf(dp, sizeof(dp), "%s/%s/driver", p, e->d_name) >= (int)sizeof(dp) ||
			    emu_link_name(dp, drv, sizeof(drv)) || !strcmp(drv, "vfio-pci") ||
			    !strcmp(drv, "pcieport"))
				continue;
			fprintf(stderr, "uroced: %s: IOMMU group %s of %s is not viable: it also "
				"holds %s, bound to %s (bind every device of the group to "
				"vfio-pci)\n", o->dev, grp, addr, e->d_name, drv);
			closedir(gd);
			return -1;
		}
		closedir(gd);
	}
	/* the group's character device admits one opener at a time */
	snprintf(p, sizeof(p), "/dev/vfio/%s", grp);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		snprintf(p, sizeof(p), "/dev/vfio/noiommu-%s", grp);
		fd = open(p, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0 && errno == EBUSY) {
		fprintf(stderr, "uroced: %s: IOMMU group %s of %s is busy: another process (a "
			"uroced, a VM, a DPDK program) holds %s\n", o->dev, grp, addr, p);
		return -1;
	}
	if (fd < 0) {
		fprintf(stderr, "uroced: %s: IOMMU group %s of %s: cannot open %s: %s\n", o->dev,
			grp, addr, p, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* the device exists and a driver DPDK can use holds it */
static int emu_pci_bound(const struct emu_opts *o, const char *addr, const char *dir)
{
	char p[PATH_MAX], drv[64], vendor[16], device[16], ifn[IF_NAMESIZE];

	if (access(dir, F_OK)) {
		fprintf(stderr, "uroced: %s: no PCI device %s (nothing in " EMU_PCI_DEVS ")\n",
			o->dev, addr);
		return -1;
	}
	emu_pci_read_id(dir, "vendor", vendor, sizeof(vendor));
	emu_pci_read_id(dir, "device", device, sizeof(device));
	snprintf(p, sizeof(p), "%s/driver", dir);
	if (emu_link_name(p, drv, sizeof(drv))) {
		fprintf(stderr, "uroced: %s: PCI device %s (%s:%s) is bound to no driver: bind it "
			"to vfio-pci or uio_pci_generic (dpdk-devbind.py --bind=vfio-pci %s; "
			"docs/running.md)\n", o->dev, addr, vendor, device, addr);
		return -1;
	}
	if (!emu_drv_dpdk(drv, vendor)) {
		emu_pci_ifname(dir, ifn, sizeof(ifn));
		fprintf(stderr, "uroced: %s: PCI device %s (%s:%s) is bound to the kernel's %s "
			"driver%s%s%s: bind it to vfio-pci or uio_pci_generic (dpdk-devbind.py "
			"--bind=vfio-pci %s), or use the interface through af_packet/af_xdp "
			"(docs/running.md)\n", o->dev, addr, vendor, device, drv,
			ifn[0] ? " (interface " : "", ifn, ifn[0] ? ")" : "", addr);
		return -1;
	}
	return strcmp(drv, "vfio-pci") ? 0 : emu_pci_vfio_group(o, addr, dir);
}

/* free hugepages of every size, in MB, and whether a hugetlbfs is mounted */
static unsigned emu_huge_free_mb(bool *mounted)
{
	unsigned mb = 0;
	DIR *d = opendir("/sys/kernel/mm/hugepages");
	char line[512];
	FILE *m = fopen("/proc/mounts", "re");

	*mounted = false;
	while (m && fgets(line, sizeof(line), m))
		if (strstr(line, " hugetlbfs "))
			*mounted = true;
	if (m)
		fclose(m);
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		unsigned long kb, n = 0;
		char p[PATH_MAX];
		FILE *f;
		if (sscanf(e->d_name, "hugepages-%lukB", &kb) != 1 ||
		    snprintf(p, sizeof(p), "/sys/kernel/mm/hugepages/%s/free_hugepages",
			     e->d_name) >= (int)sizeof(p) || !(f = fopen(p, "re")))
			continue;
		if (fscanf(f, "%lu", &n) == 1)
			mb += (unsigned)(n * kb / 1024);
		fclose(f);
	}
	closedir(d);
	return mb;
}

static int emu_pci_hugepages(const struct emu_opts *o, const char *addr, unsigned mb)
{
	bool mounted;
	unsigned have = emu_huge_free_mb(&mounted);

	if (have >= mb && mounted)
		return 0;
	if (!mounted && have >= mb)
		fprintf(stderr, "uroced: %s: PCI port %s needs hugepages, and no hugetlbfs is "
			"mounted (mount -t hugetlbfs nodev /dev/hugepages)\n", o->dev, addr);
	else
		fprintf(stderr, "uroced: %s: PCI port %s needs %u MB of hugepages, %u MB are free "
			"(echo %u > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; "
			"docs/running.md)\n", o->dev, addr, mb, have, (mb + 1) / 2);
	return -1;
}

int emu_pci_check(const struct emu_opts *o, bool hugepages, unsigned mb, int *lock_fd)
{
	char addr[32], dir[96];

	*lock_fd = -1;
	if (!emu_is_pci(o->vdev))
		return 0;
	emu_pci_addr(o->vdev, addr, sizeof(addr));
	snprintf(dir, sizeof(dir), EMU_PCI_DEVS "/%s", addr);
	if (emu_pci_bound(o, addr, dir))
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
		fprintf(stderr, "uroced: %s: PCI device %s is in use by another uroced\n", o->dev,
			addr);
		close(fd);
		return -1;
	}
	if (hugepages && emu_pci_hugepages(o, addr, mb)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*lock_fd = fd;
	return 0;
}

void emu_pci_no_port(const struct emu_opts *o)
{
	char addr[32], dir[96], vendor[16], device[16], drv[64] = "?", p[PATH_MAX];

	emu_pci_addr(o->vdev, addr, sizeof(addr));
	snprintf(dir, sizeof(dir), EMU_PCI_DEVS "/%s", addr);
	emu_pci_read_id(dir, "vendor", vendor, sizeof(vendor));
	emu_pci_read_id(dir, "device", device, sizeof(device));
	snprintf(p, sizeof(p), "%s/driver", dir);
	(void)emu_link_name(p, drv, sizeof(drv));
	fprintf(stderr, "uroced: %s: no DPDK driver took PCI device %s (%s:%s, bound to %s): "
		"DPDK has no PMD for it, or its PMD's package (librte-net-*) is not installed "
		"(see the EAL messages above)\n", o->dev, addr, vendor, device, drv);
}
