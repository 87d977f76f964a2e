/* SPDX-License-Identifier: MIT */
/* RX wake-up of an idle engine on af_packet ports. DPDK 22.11's af_packet
 * and af_xdp PMDs have no RX interrupt (no rx_queue_intr_enable:
 * rte_eth_dev_rx_intr_* answer -ENOTSUP), but af_packet receives through
 * an AF_PACKET socket bound to the interface whose poll() says when its
 * TPACKET_V2 RX ring holds a frame (the slot before the kernel's head is
 * the user's). That socket goes into the engine's epoll set, level-
 * triggered and for EPOLLIN only, so a sleeping engine wakes when a frame
 * arrives instead of polling RX every millisecond; nothing is read from it
 * here (the PMD does that). Every other port keeps the periodic poll,
 * af_xdp included: its socket's poll() works the same way, but with it in
 * the epoll set net_xdp's rdma_cm case (ib_write_bw -R) failed in most
 * runs (an early REQ rejected, then the retried connection's first SEND
 * RNR-NAKed for good), not understood yet (docs/emu.md, "Engine loop and
 * idling"). */
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

/* The AF_PACKET socket of this port: bound to its interface (the PMD
 * opens one per queue pair when EAL probes the vdev). */
static bool emu_fd_is_rx(int fd, unsigned ifindex)
{
	int dom = -1;
	socklen_t l = sizeof(dom);
	struct sockaddr_ll sll;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) < 0 || dom != AF_PACKET)
		return false;
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

	dm->wake.nfds = 0;
	if (strncmp(dm->o.vdev + 4, "af_packet", 9) || !ifa)
		return 0; /* ring, af_xdp, PCI, pcap...: the periodic poll */
	size_t k = strcspn(ifa, ",");
	if (k < sizeof(ifname)) {
		memcpy(ifname, ifa, k);
		ifname[k] = 0;
		ifindex = if_nametoindex(ifname);
	}
	if (!ifindex)
		return 0;
	n = emu_fds_open(fds, EMU_WAKE_SCAN);
	dm->wake.ep = (struct emu_ep){ .kind = EMU_EP_PORT, .p = dm };
	for (unsigned i = 0; i < n && dm->wake.nfds < EMU_WAKE_MAX; i++) {
		if (!emu_fd_is_rx(fds[i], ifindex))
			continue;
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
