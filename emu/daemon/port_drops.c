/* SPDX-License-Identifier: MIT */
/* Where a port loses frames before the daemon sees them, counted by
 * whoever lost them and read when asked (UROCE_OP_QUERY_DROPS, SIGUSR1):
 * DPDK's own statistics (imissed: the NIC or the kernel socket had no
 * room; rx_nombuf: no mbuf to receive into; oerrors: frames the PMD
 * dropped on TX), the AF_XDP socket's XDP_STATISTICS (its RX ring full,
 * its fill ring empty: DPDK 22.11 reports only rx_dropped, as imissed),
 * the AF_PACKET socket's PACKET_STATISTICS (its ring full; the PMD reads
 * none) and the interface's own drop counters (the kernel's, e.g. a
 * veth whose peer's queue was full). Nothing here is on the data path. */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ethdev.h>

#include "daemon.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* the kernel interface under an af_packet or af_xdp port, or "" */
static void emu_port_iface(const struct emu_daemon *dm, char *out, size_t len)
{
	const char *a = strstr(dm->o.vdev, ",iface=");
	size_t k = a ? strcspn(a + 7, ",") : 0;

	out[0] = 0;
	if (k && k < len) {
		memcpy(out, a + 7, k);
		out[k] = 0;
	}
}

/* its rx_dropped / tx_dropped (getifaddrs: this network namespace's) */
static bool emu_iface_drops(const char *ifname, uint64_t *rx, uint64_t *tx)
{
	struct ifaddrs *all;
	bool found = false;

	if (!ifname[0] || getifaddrs(&all) < 0)
		return false;
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET || !i->ifa_data ||
		    strcmp(i->ifa_name, ifname))
			continue;
		const struct rtnl_link_stats *st = i->ifa_data;
		*rx = st->rx_dropped;
		*tx = st->tx_dropped;
		found = true;
		break;
	}
	freeifaddrs(all);
	return found;
}

static unsigned emu_xdp_drops(struct emu_daemon *dm, struct emu_named *v, unsigned n,
			      unsigned max)
{
	struct xdp_statistics t, s;

	memset(&t, 0, sizeof(t));
	for (unsigned i = 0; i < dm->wake.nfds; i++) {
		socklen_t l = sizeof(s);
		memset(&s, 0, sizeof(s));
		if (getsockopt(dm->wake.fds[i], SOL_XDP, XDP_STATISTICS, &s, &l) < 0)
			continue;
		t.rx_dropped += s.rx_dropped;
		t.rx_ring_full += s.rx_ring_full;
		t.rx_fill_ring_empty_descs += s.rx_fill_ring_empty_descs;
		t.rx_invalid_descs += s.rx_invalid_descs;
		t.tx_invalid_descs += s.tx_invalid_descs;
	}
	const struct emu_named x[] = {
		{ "xdp-rx-ring-full", t.rx_ring_full },
		{ "xdp-fill-empty", t.rx_fill_ring_empty_descs },
		{ "xdp-rx-dropped", t.rx_dropped },
		{ "xdp-rx-invalid", t.rx_invalid_descs },
		{ "xdp-tx-invalid", t.tx_invalid_descs },
	};
	for (unsigned i = 0; i < sizeof(x) / sizeof(x[0]) && n < max; i++)
		v[n++] = x[i];
	return n;
}

static unsigned emu_pkt_drops(struct emu_daemon *dm, struct emu_named *v, unsigned n,
			      unsigned max)
{
	for (unsigned i = 0; i < dm->wake.nfds; i++) {
		struct tpacket_stats s;
		socklen_t l = sizeof(s);
		memset(&s, 0, sizeof(s));
		if (getsockopt(dm->wake.fds[i], SOL_PACKET, PACKET_STATISTICS, &s, &l) == 0)
			dm->link.pkt_drops += s.tp_drops;
	}
	if (n < max)
		v[n++] = (struct emu_named){ "pkt-ring-full", dm->link.pkt_drops };
	return n;
}

unsigned emu_port_link_drops(struct emu_daemon *dm, struct emu_named *v, unsigned max)
{
	struct rte_eth_stats st;
	unsigned n = 0;
	char ifname[IF_NAMESIZE];
	uint64_t rx, tx;

	if (!dm->port_up || max < 4)
		return 0;
	memset(&st, 0, sizeof(st));
	/* our own AF_XDP socket has no ethdev: what it counted itself (a
	 * frame larger than a TX frame, no mbuf for a --vlan copy, a bad
	 * descriptor); the kernel's misses are its XDP_STATISTICS below */
	if (dm->link.xsk) {
		st.rx_nombuf = dm->link.xsk_rx_nombuf;
		st.ierrors = dm->link.xsk_rx_bad;
		st.oerrors = dm->link.xsk_tx_long;
	} else {
		(void)rte_eth_stats_get(dm->port_id, &st);
	}
	v[n++] = (struct emu_named){ "rx-missed", st.imissed };
	v[n++] = (struct emu_named){ "rx-nombuf", st.rx_nombuf };
	v[n++] = (struct emu_named){ "rx-errors", st.ierrors };
	v[n++] = (struct emu_named){ "tx-errors", st.oerrors };
	if (dm->wake.nfds && dm->wake.domain == AF_XDP)
		n = emu_xdp_drops(dm, v, n, max);
	else if (dm->wake.nfds && dm->wake.domain == AF_PACKET)
		n = emu_pkt_drops(dm, v, n, max);
	emu_port_iface(dm, ifname, sizeof(ifname));
	if (emu_iface_drops(ifname, &rx, &tx) && n + 2 <= max) {
		v[n++] = (struct emu_named){ "if-rx-dropped", rx };
		v[n++] = (struct emu_named){ "if-tx-dropped", tx };
	}
	return n;
}

void emu_port_link_drops_log(struct emu_daemon *dm)
{
	struct emu_named v[EMU_LINK_DROPS_MAX];
	unsigned n = emu_port_link_drops(dm, v, EMU_LINK_DROPS_MAX);

	for (unsigned i = 0; i < n; i++)
		if (v[i].val)
			EMU_LOG(NOTICE, "%s: link %s %lu\n", dm->o.dev, v[i].name,
				(unsigned long)v[i].val);
}
