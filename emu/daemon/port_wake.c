/* SPDX-License-Identifier: MIT */
/* RX wake-up of an idle engine on af_packet and af_xdp ports. DPDK
 * 22.11's af_packet and af_xdp PMDs have no RX interrupt (no
 * rx_queue_intr_enable: rte_eth_dev_rx_intr_* answer -ENOTSUP), but each
 * receives through a kernel socket whose poll() says when a frame waits:
 * af_packet's AF_PACKET socket bound to the interface (its TPACKET_V2 RX
 * ring: the slot before the kernel's head is the user's), af_xdp's AF_XDP
 * socket (its RX ring is not empty). Those sockets go into the engine's
 * epoll set, level-triggered and for EPOLLIN only, so a sleeping engine
 * wakes when a frame arrives instead of polling RX every millisecond;
 * nothing is read from them here (the PMD does that). uroced's own AF_XDP
 * socket (port_xsk.c, the default for af_xdp) is added by its descriptor;
 * the /proc/self/fd scan is for DPDK's PMDs only. Other ports (ring,
 * PCI, pcap) keep the periodic poll. af_xdp once stayed on the poll
 * because net_xdp's ib_write_bw -R hung with the wake-up: that was the
 * test's retry, not the port (docs/emu.md, "Engine loop and idling"). */
#include <dirent.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

/* the numbers of the open descriptors, ascending (at most max) */
static unsigned emu_fds_open(int *fds, unsigned max)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) != NULL && n < max;) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || v < 0 || v == dirfd(d))
			continue;
		fds[n++] = (int)v;
	}
	closedir(d);
	return n;
}

/* the RX sockets the devices set up so far took (written only at start,
 * by the main thread, one device after the other) */
static int emu_wake_taken[EMU_MAX_DEVS * EMU_WAKE_MAX];
static unsigned emu_wake_ntaken;

static bool emu_fd_taken(int fd)
{
	for (unsigned i = 0; i < emu_wake_ntaken; i++)
		if (emu_wake_taken[i] == fd)
			return true;
	return false;
}

/* A socket this port receives through. af_packet: AF_PACKET bound to its
 * interface (the PMD opens one per queue pair when EAL probes the vdev).
 * af_xdp: an AF_XDP socket (opened in rx_queue_setup) no earlier device
 * took: devices are set up one after the other, each port's queues then
 * its wake-up, and an AF_XDP socket has no address to ask. */
static bool emu_fd_is_rx(int fd, int want, unsigned ifindex)
{
	int dom = -1;
	socklen_t l = sizeof(dom);
	struct sockaddr_ll sll;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) < 0 || dom != want)
		return false;
	if (want == AF_XDP)
		return !emu_fd_taken(fd);
	l = sizeof(sll);
	memset(&sll, 0, sizeof(sll));
	return getsockname(fd, (struct sockaddr *)&sll, &l) == 0 &&
	       (unsigned)sll.sll_ifindex == ifindex;
}

int emu_port_wake_arm(struct emu_daemon *dm)
{
	const char *ifa = emu_vdev_arg(dm->o.vdev, "iface");
	char ifname[IF_NAMESIZE] = "";
	int fds[EMU_WAKE_SCAN];
	unsigned n, ifindex = 0;
	int want = AF_PACKET;

	dm->wake.nfds = 0;
	int xfd = emu_port_xsk_fd(dm);
	if (xfd >= 0) {
		/* our own AF_XDP socket (port_xsk.c): its descriptor is known */
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &dm->wake.ep };
		dm->wake.domain = AF_XDP;
		dm->wake.ep = (struct emu_ep){ .kind = EMU_EP_PORT, .p = dm };
		if (epoll_ctl(dm->epfd, EPOLL_CTL_ADD, xfd, &ev) < 0) {
			EMU_LOG(WARNING, "%s: rx wake-up on fd %d: %s: idle RX polled every ms\n",
				dm->o.dev, xfd, strerror(errno));
			return 0;
		}
		dm->wake.fds[dm->wake.nfds++] = xfd;
		EMU_LOG(NOTICE, "%s: rx wake-up: 1 kernel socket(s) of the port in the engine's epoll (uroced's own AF_XDP socket)\n",
			dm->o.dev);
		return 1;
	}
	if (!strncmp(dm->o.vdev + 4, "af_xdp", 6)) {
		want = AF_XDP;
	} else if (!strncmp(dm->o.vdev + 4, "af_packet", 9) && ifa) {
		size_t k = strcspn(ifa, ",");
		if (k < sizeof(ifname)) {
			memcpy(ifname, ifa, k);
			ifname[k] = 0;
			ifindex = if_nametoindex(ifname);
		}
		if (!ifindex)
			return 0;
	} else {
		return 0; /* ring, PCI, pcap...: the periodic poll */
	}
	dm->wake.domain = want;
	n = emu_fds_open(fds, EMU_WAKE_SCAN);
	dm->wake.ep = (struct emu_ep){ .kind = EMU_EP_PORT, .p = dm };
	for (unsigned i = 0; i < n && dm->wake.nfds < EMU_WAKE_MAX; i++) {
		if (!emu_fd_is_rx(fds[i], want, ifindex))
			continue;
		if (emu_wake_ntaken < EMU_MAX_DEVS * EMU_WAKE_MAX)
			emu_wake_taken[emu_wake_ntaken++] = fds[i]; /* ours, added or not */
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &dm->wake.ep };
		if (epoll_ctl(dm->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			EMU_LOG(WARNING, "%s: rx wake-up on fd %d: %s\n", dm->o.dev, fds[i],
				strerror(errno));
			continue;
		}
		dm->wake.fds[dm->wake.nfds++] = fds[i];
	}
	if (dm->wake.nfds)
		EMU_LOG(NOTICE, "%s: rx wake-up: %u kernel socket(s) of the port in the engine's "
			"epoll\n", dm->o.dev, dm->wake.nfds);
	else
		EMU_LOG(NOTICE, "%s: no rx wake-up for this port: idle RX polled every ms\n",
			dm->o.dev);
	return (int)dm->wake.nfds;
}
