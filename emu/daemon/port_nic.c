/* SPDX-License-Identifier: MIT */
/* The Ethernet device behind a port and what uroce asks of it
 * (docs/running.md "PCI NICs"): one RX and one TX queue whatever the
 * device has (RoCE needs no spreading and a multi-queue device with one
 * queue configured sends everything to it), the MTU within the device's
 * range, the offloads it offers that uroce uses (IPv4 header checksum both
 * ways, VLAN insertion and stripping, scattered RX for jumbo frames), its
 * link followed (read from the device every 100 ms: the port goes DOWN
 * and back to ACTIVE with the IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE
 * an HCA gives), its statistics (xstats) for uroce-ctl, and the MTU
 * changed at run time. Everything here runs on the engine thread, the
 * only thread that touches the device. Ring ports go through it too: they
 * get the VLAN tag in software and show their (software) xstats.
 *
 * Why no LSC interrupts, even where the PMD offers them: with
 * intr_conf.lsc set, rte_eth_link_get_nowait() returns the state the last
 * interrupt left (DPDK 22.11 lib/ethdev) and never reads the device, so a
 * lost interrupt hides a link change for good - vmxnet3 behind vfio-pci
 * in qemu never delivered one (nic.link_down stayed 0 through a whole
 * flap) - and reading the device ourselves beside EAL's interrupt thread,
 * which runs the PMD's link_update too, would race in the PMD's register
 * accesses. A look every 100 ms costs one register read (MMIO on virtio,
 * e1000, vmxnet3) ten times a second, and a link change is seen within
 * 100 ms, far below any RC retransmit timeout. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "daemon.h"
#include "sysfs.h"

#define EMU_NIC_L2 18u                       /* Ethernet header + one VLAN tag */
#define EMU_NIC_POLL_NS 100000000ull         /* the link read this often */
#define EMU_NIC_LINK_WAIT_MS 9000u           /* at start, as testpmd waits */
#define EMU_NIC_SCATTER_MTU 1500u            /* above: scattered RX where offered */

/* the RX offloads uroce asks for when offered: the IPv4 header checksum
 * (RoCEv2 over IPv4), the tag of its VLAN, and buffers chained for jumbo
 * frames (e1000's receive buffers are powers of two: 9018 > 8192) */
static uint64_t emu_nic_rx_want(const struct emu_daemon *dm)
{
	uint64_t w = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;

	if (dm->o.vlan)
		w |= RTE_ETH_RX_OFFLOAD_VLAN_STRIP;
	if (dm->nic.pci && dm->o.mtu > EMU_NIC_SCATTER_MTU)
		w |= RTE_ETH_RX_OFFLOAD_SCATTER;
	return w;
}

static uint64_t emu_nic_tx_want(const struct emu_daemon *dm)
{
	uint64_t w = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;

	if (dm->o.vlan)
		w |= RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
	return w;
}

static void emu_nic_flags(struct emu_nic *n)
{
	n->tx_ip_csum = n->tx_used & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	n->rx_ip_csum = n->rx_used & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	n->vlan_insert_hw = n->vlan && (n->tx_used & RTE_ETH_TX_OFFLOAD_VLAN_INSERT);
	n->tx_prepare = n->tx_ip_csum || n->vlan_insert_hw;
	n->tx_any = n->vlan || n->tx_ip_csum || (n->real && !n->link_up);
	n->rx_any = n->vlan || n->rx_ip_csum;
}

/* what the device is and offers; the MTU refused here, with the device's
 * range, rather than by a failing rte_eth_dev_set_mtu */
static int emu_nic_info(struct emu_daemon *dm, uint16_t port, struct rte_eth_dev_info *info)
{
	struct emu_nic *n = &dm->nic;
	char name[RTE_ETH_NAME_MAX_LEN];
	int rc = rte_eth_dev_info_get(port, info);

	if (rc) {
		fprintf(stderr, "uroced: %s: port %u: no device information: %s\n", dm->o.dev, port,
			rte_strerror(-rc));
		return -1;
	}
	n->port = port;
	snprintf(n->driver, sizeof(n->driver), "%s", info->driver_name ? info->driver_name : "?");
	if (rte_eth_dev_get_name_by_port(port, name))
		snprintf(name, sizeof(name), "port%u", port);
	snprintf(n->device, sizeof(n->device), "%s", name);
	n->max_rxq = info->max_rx_queues;
	n->max_txq = info->max_tx_queues;
	n->min_mtu = info->min_mtu;
	/* a PMD that sets no max_mtu (e1000's em) still bounds the frame */
	n->max_mtu = info->max_mtu;
	if (n->max_mtu == UINT16_MAX && info->max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN &&
	    info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN < n->max_mtu)
		n->max_mtu = info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	n->rx_capa = info->rx_offload_capa;
	n->tx_capa = info->tx_offload_capa;
	n->lsc_offered = n->real && info->dev_flags && (*info->dev_flags & RTE_ETH_DEV_INTR_LSC);
	if (n->pci && (dm->o.mtu < n->min_mtu || dm->o.mtu > n->max_mtu)) {
		fprintf(stderr, "uroced: %s: %s (%s) takes MTU %u..%u: --mtu %u is refused\n",
			dm->o.dev, n->device, n->driver, n->min_mtu, n->max_mtu, dm->o.mtu);
		return -1;
	}
	return 0;
}

int emu_nic_conf(struct emu_daemon *dm, uint16_t port, struct rte_eth_conf *conf)
{
	struct emu_nic *n = &dm->nic;
	struct rte_eth_dev_info info;

	n->real = dm->o.vdev[0] && strncmp(dm->o.vdev, "link:", 5);
	n->pci = emu_is_pci(dm->o.vdev);
	n->vlan = dm->o.vlan;
	n->vlan_tci = dm->o.vlan_tci;
	n->link_up = !n->real;
	if (emu_nic_info(dm, port, &info))
		return -1;
	/* uroce speaks through one queue pair: a multi-queue device with one
	 * queue configured delivers every frame to it (virtio-net sets its
	 * active queue pairs to 1, RSS stays off) */
	n->rx_used = n->rx_capa & emu_nic_rx_want(dm);
	n->tx_used = n->tx_capa & emu_nic_tx_want(dm);
	conf->rxmode.offloads = n->rx_used;
	conf->txmode.offloads = n->tx_used;
	/* the PMD sizes its receive buffers from this (22.11: rxmode.mtu);
	 * ring and af_packet ports have their own limits (port_param.c) */
	if (n->pci)
		conf->rxmode.mtu = dm->o.mtu;
	conf->intr_conf.lsc = 0; /* polled: see the head of this file */
	emu_nic_flags(n);
	return 0;
}

/* "IPV4_CKSUM VLAN_STRIP ..." for the bits of v, as DPDK names them */
static void emu_offload_names(uint64_t v, bool rx, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (unsigned b = 0; b < 64 && off < len; b++) {
		if (!(v & (1ull << b)))
			continue;
		const char *s = rx ? rte_eth_dev_rx_offload_name(1ull << b)
				   : rte_eth_dev_tx_offload_name(1ull << b);
		int k = snprintf(buf + off, len - off, "%s%s", off ? " " : "", s);
		if (k < 0 || (size_t)k >= len - off) {
			buf[off] = 0; /* what fits */
			break;
		}
		off += (size_t)k;
	}
}

/* an af_xdp port on our own socket has no ethdev: the interface's link
 * as the kernel sees it (up and running: a veth whose peer is up, a NIC
 * with carrier), its speed unknown */
static void emu_nic_if_link(const struct emu_nic *n, struct rte_eth_link *l)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, n->ifname, strnlen(n->ifname, sizeof(ifr.ifr_name) - 1));
	if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
	    (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING)) {
		l->link_status = RTE_ETH_LINK_UP;
		l->link_duplex = RTE_ETH_LINK_FULL_DUPLEX;
		l->link_speed = RTE_ETH_SPEED_NUM_UNKNOWN;
	}
	if (fd >= 0)
		close(fd);
}

static void emu_nic_link_read(struct emu_nic *n, struct rte_eth_link *l)
{
	memset(l, 0, sizeof(*l));
	if (n->xsk)
		emu_nic_if_link(n, l);
	else if (rte_eth_link_get_nowait(n->port, l))
		l->link_status = RTE_ETH_LINK_DOWN;
}

void emu_nic_started(struct emu_daemon *dm)
{
	struct emu_nic *n = &dm->nic;
	struct rte_eth_link l;
	char rxo[256], txo[256], speed[32] = "";

	emu_nic_link_read(n, &l);
	/* a real link comes up a moment after the start (autonegotiation):
	 * wait for it, bounded, so that the first programs see ACTIVE */
	for (unsigned ms = 0; n->real && !l.link_status && ms < EMU_NIC_LINK_WAIT_MS; ms += 50) {
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
		emu_nic_link_read(n, &l);
	}
	if (n->real) {
		n->link_up = l.link_status;
		n->speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l.link_speed;
		n->full_duplex = l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
	}
	emu_nic_flags(n);
	if (n->link_up && n->speed_mbps)
		snprintf(speed, sizeof(speed), " %u Mb/s", n->speed_mbps);
	emu_offload_names(n->rx_used, true, rxo, sizeof(rxo));
	emu_offload_names(n->tx_used, false, txo, sizeof(txo));
	EMU_LOG(NOTICE, "%s: %s (%s): queues rx 1 of %u, tx 1 of %u; mtu %u (device %u..%u); "
		"rx offloads [%s] tx offloads [%s]; link %s%s%s\n", dm->o.dev, n->device,
		n->driver, n->max_rxq, n->max_txq, dm->o.mtu, n->min_mtu, n->max_mtu, rxo, txo,
		!n->real ? "none (ring)" : n->link_up ? "up" : "down", speed,
		!n->real ? "" : n->lsc_offered ? ", polled (LSC interrupts offered, unused)" : ", polled");
	if (n->real && !n->link_up)
		EMU_LOG(WARNING, "%s: %s: link down: the port is DOWN until it comes up\n",
			dm->o.dev, n->device);
	n->next_link_poll_ns = emu_now_ns() + EMU_NIC_POLL_NS;
}

void emu_nic_xsk(struct emu_daemon *dm, const char *ifname, uint32_t max_mtu)
{
	struct emu_nic *n = &dm->nic;

	n->real = true;
	n->pci = false;
	n->xsk = true;
	snprintf(n->ifname, sizeof(n->ifname), "%s", ifname);
	n->vlan = dm->o.vlan;
	n->vlan_tci = dm->o.vlan_tci;
	n->link_up = false;
	n->port = UINT16_MAX;
	snprintf(n->driver, sizeof(n->driver), "af_xdp (uroced)");
	snprintf(n->device, sizeof(n->device), "%s", ifname);
	n->max_rxq = n->max_txq = 1;
	n->min_mtu = 576;
	n->max_mtu = max_mtu;
	n->rx_capa = n->tx_capa = n->rx_used = n->tx_used = 0;
	n->lsc_offered = false;
	emu_nic_flags(n);
	emu_nic_started(dm);
}

static void emu_nic_port_state(struct emu_daemon *dm)
{
	struct emu_dev *d = &dm->dev;

	d->port_state = dm->nic.link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	d->port_attr.state = d->port_state;
	d->port_attr.phys_state = dm->nic.link_up ? 5 /* LinkUp */ : 3 /* Disabled */;
}

void emu_nic_attach(struct emu_daemon *dm)
{
	emu_nic_port_state(dm);
}

void emu_nic_fini(struct emu_daemon *dm)
{
	(void)dm; /* nothing registered with EAL */
}

/* The link went down or came up: the port's state as an HCA's (every
 * context gets IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE); while it is
 * down what the transport sends is dropped at the port (drop.link-down)
 * and its QPs retry as over a broken cable: they recover when it comes
 * back within their retries, else complete with IBV_WC_RETRY_EXC_ERR. */
static void emu_nic_link_apply(struct emu_daemon *dm, const struct rte_eth_link *l)
{
	struct emu_nic *n = &dm->nic;
	bool up = l->link_status;

	if (up == n->link_up)
		return;
	n->link_up = up;
	n->speed_mbps = l->link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l->link_speed;
	n->full_duplex = l->link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
	if (up)
		n->cnt.link_up++;
	else
		n->cnt.link_down++;
	emu_nic_flags(n);
	emu_nic_port_state(dm);
	for (struct emu_ctx *c = dm->dev.ctxs; c; c = c->next)
		emu_async_event(c, 1, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
	(void)emu_sysfs_write(dm->o.run_dir, &dm->dev);
	if (up)
		EMU_LOG(NOTICE, "%s: %s: link up, %u Mb/s %s duplex: port ACTIVE\n", dm->o.dev,
			n->device, n->speed_mbps, n->full_duplex ? "full" : "half");
	else
		EMU_LOG(NOTICE, "%s: %s: link down: port DOWN, frames sent are dropped until it "
			"comes back\n", dm->o.dev, n->device);
}

void emu_nic_poll(struct emu_daemon *dm, uint64_t now)
{
	struct emu_nic *n = &dm->nic;
	struct rte_eth_link l;

	if (!n->real || now < n->next_link_poll_ns)
		return;
	n->next_link_poll_ns = now + EMU_NIC_POLL_NS;
	emu_nic_link_read(n, &l);
	emu_nic_link_apply(dm, &l);
}

/* the frame's IPv4 header, untagged Ethernet: its checksum left to the
 * device (the ICRC masks that field, so it is the same either way) */
static void emu_nic_tx_csum(struct emu_nic *n, struct rte_mbuf *m)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);

	if (m->data_len < RTE_ETHER_HDR_LEN + 20 || f[12] != 0x08 || f[13] != 0x00 ||
	    (f[14] >> 4) != 4)
		return;
	m->l2_len = RTE_ETHER_HDR_LEN;
	m->l3_len = (f[14] & 15u) * 4u;
	m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
	f[RTE_ETHER_HDR_LEN + 10] = f[RTE_ETHER_HDR_LEN + 11] = 0;
	n->cnt.tx_ip_csum++;
}

bool emu_nic_tx(struct emu_nic *n, struct emu_dev *d, struct rte_mbuf **mp)
{
	struct rte_mbuf *m = *mp;

	if (n->real && !n->link_up) {
		d->cnt.drops[EMU_DROP_LINK_DOWN]++;
		return false;
	}
	if (n->tx_ip_csum)
		emu_nic_tx_csum(n, m);
	if (n->vlan) {
		m->vlan_tci = n->vlan_tci;
		if (n->vlan_insert_hw) {
			m->ol_flags |= RTE_MBUF_F_TX_VLAN;
			n->cnt.vlan_tx_hw++;
		} else if (rte_vlan_insert(mp) == 0) { /* l2_len grows with it */
			n->cnt.vlan_tx_sw++;
		} else {
			d->cnt.drops[EMU_DROP_TX_NOBUF]++; /* no headroom: never with our mbufs */
			return false;
		}
	}
	if (n->tx_prepare && rte_eth_tx_prepare(n->port, 0, mp, 1) != 1) {
		n->cnt.tx_prepare_err++;
		d->cnt.drops[EMU_DROP_TX_NOBUF]++;
		return false;
	}
	return true;
}

/* The device's verdict on the IPv4 header checksum: a good one spares the
 * parser its check (not under fault injection, which may corrupt the
 * frame after the device saw it); a bad one is counted here and dropped
 * by the parser's own check, as without the offload. */
static void emu_nic_rx_csum(struct emu_nic *n, struct emu_dev *d, const struct rte_mbuf *m)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (f == RTE_MBUF_F_RX_IP_CKSUM_GOOD) {
		n->cnt.rx_ip_csum_good++;
		d->rx_l3_csum_ok = !d->fault;
	} else if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD) {
		n->cnt.rx_ip_csum_bad++;
	}
}

bool emu_nic_rx(struct emu_nic *n, struct emu_dev *d, struct rte_mbuf *m)
{
	if (n->vlan) {
		uint16_t tci;
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		bool hw = m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED;

		if (hw) {
			tci = m->vlan_tci;
		} else if (m->data_len >= EMU_NIC_L2 && f[12] == 0x81 && f[13] == 0x00) {
			tci = (uint16_t)(f[14] << 8 | f[15]);
		} else {
			d->cnt.drops[EMU_DROP_VLAN]++; /* untagged: not on our VLAN */
			return false;
		}
		if ((tci & 0xfff) != (n->vlan_tci & 0xfff) || (!hw && rte_vlan_strip(m))) {
			d->cnt.drops[EMU_DROP_VLAN]++;
			return false;
		}
		if (hw)
			n->cnt.vlan_rx_hw++;
		else
			n->cnt.vlan_rx_sw++;
	}
	if (n->rx_ip_csum)
		emu_nic_rx_csum(n, d, m);
	return true;
}

static void emu_nic_counters(const struct emu_nic *n, struct uroce_query_nic_rep *r)
{
	static const struct { const char *name; size_t off; } f[] = {
#define NC(x) { #x, offsetof(struct emu_nic_counters, x) }
		NC(link_down), NC(link_up), NC(tx_ip_csum), NC(rx_ip_csum_good),
		NC(rx_ip_csum_bad), NC(vlan_tx_hw), NC(vlan_tx_sw), NC(vlan_rx_hw),
		NC(vlan_rx_sw), NC(tx_prepare_err),
#undef NC
	};
	_Static_assert(sizeof(f) / sizeof(f[0]) <= UROCE_NIC_CNT_MAX, "nic counters");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		memcpy(&r->cnt[i], (const uint8_t *)&n->cnt + f[i].off, sizeof(uint64_t));
		snprintf(r->cnt_name[i], sizeof(r->cnt_name[i]), "%s", f[i].name);
	}
	r->ncnt = (uint32_t)(sizeof(f) / sizeof(f[0]));
}

/* one page of the device's xstats, names and values read together */
static void emu_nic_xstats(const struct emu_nic *n, uint32_t first, struct uroce_query_nic_rep *r)
{
	if (n->xsk)
		return; /* no ethdev: the socket's counts are the link's drops */
	int total = rte_eth_xstats_get_names(n->port, NULL, 0);

	if (total <= 0 || first >= (uint32_t)total)
		return;
	struct rte_eth_xstat_name *names = calloc((size_t)total, sizeof(*names));
	struct rte_eth_xstat *vals = calloc((size_t)total, sizeof(*vals));
	if (names && vals && rte_eth_xstats_get_names(n->port, names, (unsigned)total) == total &&
	    rte_eth_xstats_get(n->port, vals, (unsigned)total) == total) {
		uint32_t k = 0;
		for (uint32_t i = first; i < (uint32_t)total && k < UROCE_NIC_XSTATS_PER_MSG; i++, k++) {
			r->xval[k] = vals[i].value;
			snprintf(r->xname[k], sizeof(r->xname[k]), "%.*s",
				 (int)sizeof(r->xname[k]) - 1, names[vals[i].id].name);
		}
		r->nxstats = k;
		r->xstats_total = (uint32_t)total;
		r->next = first + k < (uint32_t)total ? first + k : 0;
	}
	free(names);
	free(vals);
}

static void emu_nic_query(struct emu_daemon *dm, uint32_t first, struct uroce_query_nic_rep *r)
{
	const struct emu_nic *n = &dm->nic;

	memset(r, 0, sizeof(*r));
	r->flags = (n->link_up ? UROCE_NIC_F_LINK_UP : 0) | (n->full_duplex ? UROCE_NIC_F_FULL : 0) |
		   (n->real ? UROCE_NIC_F_REAL : 0) | (n->vlan ? UROCE_NIC_F_VLAN : 0);
	r->speed_mbps = n->speed_mbps;
	snprintf(r->driver, sizeof(r->driver), "%s", n->driver);
	snprintf(r->device, sizeof(r->device), "%s", n->device);
	r->rxq = r->txq = 1;
	r->max_rxq = n->max_rxq;
	r->max_txq = n->max_txq;
	r->mtu = dm->o.mtu;
	r->min_mtu = n->min_mtu;
	r->max_mtu = n->max_mtu;
	r->vlan_tci = n->vlan_tci;
	emu_offload_names(n->rx_capa, true, r->rx_offloads_capa, sizeof(r->rx_offloads_capa));
	emu_offload_names(n->tx_capa, false, r->tx_offloads_capa, sizeof(r->tx_offloads_capa));
	emu_offload_names(n->rx_used, true, r->rx_offloads, sizeof(r->rx_offloads));
	emu_offload_names(n->tx_used, false, r->tx_offloads, sizeof(r->tx_offloads));
	emu_nic_counters(n, r);
	emu_nic_xstats(n, first, r);
}

/* The largest frame the port's buffers take, as sized at start (mbufs,
 * af_packet's ring slots): RX in one mbuf, or any frame the engine can
 * linearise with scattered RX; TX always in one mbuf. */
static uint32_t emu_nic_max_frame(const struct emu_daemon *dm)
{
	uint32_t rx = dm->o.mbuf_room - RTE_PKTMBUF_HEADROOM;
	uint32_t tx = dm->o.tx_mbuf_room - RTE_PKTMBUF_HEADROOM;

	if (dm->nic.rx_used & RTE_ETH_RX_OFFLOAD_SCATTER)
		rx = EMU_RX_LIN_MAX;
	return rx < tx ? rx : tx;
}

/* a QP sending or receiving at a path MTU above mtu (ibv_mtu) */
static struct emu_qp *emu_nic_mtu_user(struct emu_dev *d, enum ibv_mtu mtu)
{
	for (uint32_t q = 0; q < EMU_QPN_TABLE; q++) {
		struct emu_qp *qp = d->qpn[q];
		if (qp && qp->attr.qp_state >= IBV_QPS_RTR && qp->attr.qp_state <= IBV_QPS_SQE &&
		    qp->attr.path_mtu > mtu)
			return qp;
	}
	return NULL;
}

/* the device's own MTU; a PMD that takes it only while stopped (e1000,
 * vmxnet3) gets a stop and a start around it, which its link follows */
static int emu_nic_dev_mtu(struct emu_daemon *dm, uint32_t mtu)
{
	uint16_t port = dm->nic.port;
	int rc = rte_eth_dev_set_mtu(port, (uint16_t)mtu);

	if (rc != -EBUSY)
		return rc;
	rc = rte_eth_dev_stop(port);
	if (rc == 0) {
		rc = rte_eth_dev_set_mtu(port, (uint16_t)mtu);
		int src = rte_eth_dev_start(port);
		if (rc == 0)
			rc = src;
		else if (src)
			EMU_LOG(ERR, "%s: %s: does not start again: %s\n", dm->o.dev,
				dm->nic.device, rte_strerror(-src));
	}
	return rc;
}

static int emu_nic_set_mtu(struct emu_daemon *dm, uint32_t mtu)
{
	struct emu_dev *d = &dm->dev;
	struct emu_nic *n = &dm->nic;
	enum ibv_mtu act = (enum ibv_mtu)wire_mtu_active(mtu, true);

	if (mtu < 576 || mtu > 9216 || (n->pci && (mtu < n->min_mtu || mtu > n->max_mtu)))
		return -EINVAL;
	if (mtu + EMU_NIC_L2 > emu_nic_max_frame(dm)) {
		EMU_LOG(NOTICE, "%s: mtu %u refused: the port's buffers were sized for --mtu at "
			"start (at most %u here)\n", dm->o.dev, mtu,
			emu_nic_max_frame(dm) - EMU_NIC_L2);
		return -E2BIG;
	}
	struct emu_qp *qp = emu_nic_mtu_user(d, act);
	if (qp) {
		EMU_LOG(NOTICE, "%s: mtu %u refused: QP 0x%x has path MTU %u\n", dm->o.dev, mtu,
			qp->qpn, 128u << qp->attr.path_mtu);
		return -EBUSY;
	}
	if (n->pci) {
		int rc = emu_nic_dev_mtu(dm, mtu);
		if (rc) {
			EMU_LOG(NOTICE, "%s: mtu %u refused by %s: %s\n", dm->o.dev, mtu, n->device,
				rte_strerror(-rc));
			return rc;
		}
	}
	EMU_LOG(NOTICE, "%s: mtu %u -> %u, active mtu %u\n", dm->o.dev, dm->o.mtu, mtu, 128u << act);
	dm->o.mtu = mtu;
	d->active_mtu = act;
	d->port_attr.active_mtu = act;
	(void)emu_sysfs_write(dm->o.run_dir, d);
	return 0;
}

const struct emu_nic_ops emu_nic_ops = {
	.query = emu_nic_query,
	.set_mtu = emu_nic_set_mtu,
};
