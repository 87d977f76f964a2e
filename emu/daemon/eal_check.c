/* SPDX-License-Identifier: MIT */
/* What DPDK's EAL needs from the installed system, named before it starts
 * (one line, exit 1) instead of the unrelated error EAL would end with.
 *
 * Drivers: a distribution's DPDK (Debian's, the one uroce is packaged
 * against) builds its drivers as plugins that EAL loads at start from one
 * directory (RTE_EAL_PMD_PATH), each from its own package. A missing one does not
 * fail the link; it fails later with a message about something else: EAL's
 * "failed to parse device" for a port's driver, EINVAL from the mbuf pool
 * for the ring mempool handler. So before EAL starts, every driver the
 * configuration needs is looked for where EAL will look, and a missing one
 * is reported as what to install (docs/running.md "Installing").
 * Sysfs: see emu_eal_sysfs. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_build_config.h>

#include "eal_check.h"

/* vdev name prefixes of the drivers uroced documents or users reach for,
 * and the library (librte_<stem>) that holds each: the driver's name, its
 * alias, or the library of a driver family */
static const struct {
	const char *prefix, *stem, *what;
} emu_vdev_drivers[] = {
	{ "net_af_packet", "net_af_packet", "af_packet" },
	{ "eth_af_packet", "net_af_packet", "af_packet" },
	{ "net_af_xdp", "net_af_xdp", "af_xdp" },
	{ "net_memif", "net_memif", "memif" },
	{ "net_pcap", "net_pcap", "pcap" },
	{ "eth_pcap", "net_pcap", "pcap" },
	{ "net_null", "net_null", "null" },
	{ "eth_null", "net_null", "null" },
	{ "net_tap", "net_tap", "tap" },
	{ "net_tun", "net_tap", "tun" },
	{ "net_virtio_user", "net_virtio", "virtio_user" },
	{ "net_vhost", "net_vhost", "vhost" },
	{ "eth_vhost", "net_vhost", "vhost" },
};

#ifdef RTE_EAL_PMD_PATH
#define EMU_PMD_DIR RTE_EAL_PMD_PATH
#else
#define EMU_PMD_DIR ""
#endif

/* Debian's package for librte_<stem>.so.<major>: '_' becomes '-', and a
 * name ending in a digit takes a '-' before the ABI major (Debian policy
 * 8.1): mempool_ring -> librte-mempool-ring23, net_e1000 ->
 * librte-net-e1000-23. */
static void emu_plugin_pkg(const char *stem, const char *major, char *out, size_t sz)
{
	size_t n = (size_t)snprintf(out, sz, "librte-%s", stem);
	for (char *c = out; *c; c++)
		if (*c == '_')
			*c = '-';
	if (n < sz && n > 0 && out[n - 1] >= '0' && out[n - 1] <= '9')
		snprintf(out + n, sz - n, "-%s", major);
	else if (n < sz)
		snprintf(out + n, sz - n, "%s", major);
}

/* -1 after one line when librte_<stem>.so.<abi> is not in EAL's plugin
 * directory; port is NULL for a driver every configuration needs */
static int emu_plugin_need(const char *stem, const char *what, const char *dev, const char *port)
{
	const char *dir = EMU_PMD_DIR;
	const char *abi = strrchr(dir, '/');
	char path[512], major[16], pkg[96];

	/* only the layout this check knows: <dir>/pmds-<abi> */
	if (!abi || strncmp(abi, "/pmds-", 6) || !abi[6])
		return 0;
	abi += 6;
	if (snprintf(path, sizeof(path), "%s/librte_%s.so.%s", dir, stem, abi) >= (int)sizeof(path))
		return 0;
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(major, sizeof(major), "%.*s", (int)strcspn(abi, "."), abi);
	emu_plugin_pkg(stem, major, pkg, sizeof(pkg));
	if (port)
		fprintf(stderr, "uroced: %s: port %.*s needs DPDK's %s driver, which is not "
			"installed (no %s): apt install %s (or uroce-ports: every port driver)\n",
			dev, (int)strcspn(port, ","), port, what, path, pkg);
	else
		fprintf(stderr, "uroced: DPDK's %s driver is not installed (no %s): "
			"apt install %s\n", what, path, pkg);
	return -1;
}

/* EAL's -d loads drivers from elsewhere: then the user knows where */
static bool emu_eal_loads_drivers(const char *eal)
{
	char copy[1024];
	char *save = NULL;

	snprintf(copy, sizeof(copy), "%s", eal ? eal : "");
	for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		if (!strncmp(t, "-d", 2))
			return true;
	return false;
}

/* EAL probes for VFIO at every start (PCI or not) and gives up ("Cannot
 * init VFIO", EAGAIN) when /sys/module cannot be read: a container with a
 * partial /sys, e.g. systemd-nspawn with a private network */
static int emu_eal_sysfs(void)
{
	struct stat st;

	if (stat("/sys/module", &st) == 0)
		return 0;
	fprintf(stderr, "uroced: DPDK's EAL needs /sys/module (it looks for VFIO there), which "
		"this system does not show: give it the host's (systemd-nspawn: "
		"--bind-ro=/sys/module)\n");
	return -1;
}

int emu_eal_check(const char *dev, const char *port, const char *eal)
{
	if (emu_eal_sysfs())
		return -1;
	if (emu_eal_loads_drivers(eal))
		return 0;
	/* every mbuf pool's default handler (rte_pktmbuf_pool_create) */
	if (emu_plugin_need("mempool_ring", "ring mempool", dev, NULL))
		return -1;
	if (!port || !port[0])
		return 0;
	for (size_t i = 0; i < sizeof(emu_vdev_drivers) / sizeof(emu_vdev_drivers[0]); i++)
		if (!strncmp(port, emu_vdev_drivers[i].prefix, strlen(emu_vdev_drivers[i].prefix)))
			return emu_plugin_need(emu_vdev_drivers[i].stem, emu_vdev_drivers[i].what,
					       dev, port);
	/* ring ports (loopback, link:), PCI addresses (which PMD claims a
	 * device depends on the device) and drivers not listed: EAL says */
	return 0;
}
