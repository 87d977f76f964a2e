/* SPDX-License-Identifier: MIT */
/* Port parameters from the device's MTU, before EAL starts: the af_packet
 * ring geometry (blocksz/framesz/framecnt, appended to the vdev arguments
 * unless given), the mbuf data room, the descriptor count and the memory
 * the mbuf pool needs. A port type that cannot carry the MTU is refused
 * here with one line, so the documented commands either work as given or
 * say why not (docs/running.md, "Port parameters"). */
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "daemon.h"
#include "port_xsk.h"

/* the largest frame for an MTU: Ethernet header and one VLAN tag */
#define EMU_L2_OVERHEAD 18u
/* TPACKET_V2: the kernel writes a frame at TPACKET_ALIGN(tpacket2_hdr +
 * sockaddr_ll + 16) = 80 bytes into its ring slot (less the MAC header),
 * and DPDK 22.11 copies it to an mbuf sized from the whole slot less 32 */
#define EMU_TPACKET_FRAME_OFF 80u
#define EMU_TPACKET_RX_OFF 32u
/* af_xdp's UMEM is the mbuf pool: the kernel puts a frame after the pool's
 * object header, the mbuf, its headroom and XDP_PACKET_HEADROOM */
#define EMU_XDP_HEADROOM 256u
/* af_packet ring memory per direction: 4096 frames at MTU 2000-4000
 * (16 MiB). The RX ring is what absorbs a burst while the engine is off
 * its core (a loaded host deschedules it for milliseconds); at 1024
 * frames (the earlier 4 MiB) a peer at 1.7 GB/s filled it in under 2 ms
 * and the frames were lost there (issue 22). */
#define EMU_AFP_RING_BYTES (16u << 20)
#define EMU_AFP_MIN_FRAMES 2048u
#define EMU_NB_DESC 1024u
/* af_xdp: DPDK 22.11 puts 2048 UMEM frames in the fill ring at start and
 * gives back one per frame received, so 2048 frames can wait for the
 * engine; an RX ring of 1024 descriptors dropped the second half of such
 * a burst (link.xdp-rx-ring-full). Its RX ring holds all of them. */
#define EMU_XDP_NB_DESC 2048u

enum emu_port_kind { EMU_PK_RING, EMU_PK_AF_PACKET, EMU_PK_AF_XDP, EMU_PK_OTHER };

static enum emu_port_kind emu_port_kind(const char *vdev)
{
	if (!vdev[0] || !strncmp(vdev, "link:", 5))
		return EMU_PK_RING;
	if (!strncmp(vdev, "net_af_packet", 13) || !strncmp(vdev, "eth_af_packet", 13))
		return EMU_PK_AF_PACKET;
	if (!strncmp(vdev, "net_af_xdp", 10) || !strncmp(vdev, "eth_af_xdp", 10))
		return EMU_PK_AF_XDP;
	return EMU_PK_OTHER;
}

const char *emu_vdev_arg(const char *vdev, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = strchr(vdev, ','); p; p = strchr(p + 1, ','))
		if (!strncmp(p + 1, key, kl) && p[1 + kl] == '=')
			return p + 2 + kl;
	return NULL;
}

/* The value of ",key=N" in a vdev string: 1 found, 0 absent, -1 not a
 * positive number (one line printed). */
static int emu_vdev_uint(const struct emu_opts *o, const char *key, unsigned *out)
{
	const char *a = emu_vdev_arg(o->vdev, key);
	char *end;

	if (!a)
		return 0;
	unsigned long v = strtoul(a, &end, 10);
	if (end == a || (*end && *end != ',') || v == 0 || v > (1u << 30)) {
		fprintf(stderr, "uroced: %s: bad %s in port '%s'\n", o->dev, key, o->vdev);
		return -1;
	}
	*out = (unsigned)v;
	return 1;
}

static int emu_vdev_append(struct emu_opts *o, const char *key, unsigned v)
{
	size_t l = strlen(o->vdev);
	int n = snprintf(o->vdev + l, sizeof(o->vdev) - l, ",%s=%u", key, v);

	if (n < 0 || (size_t)n >= sizeof(o->vdev) - l) {
		o->vdev[l] = 0;
		fprintf(stderr, "uroced: %s: port arguments too long\n", o->dev);
		return -1;
	}
	return 0;
}

/* af_packet: ring slots that hold the largest frame, blocks that are a
 * whole number of slots (DPDK 22.11 walks the ring as if slots were
 * contiguous, the kernel never lets one cross a block) and a page
 * multiple (the kernel's rule), and mbufs DPDK accepts for that slot. */
static int emu_param_af_packet(struct emu_opts *o, unsigned page)
{
	unsigned need = o->mtu + EMU_L2_OVERHEAD + EMU_TPACKET_FRAME_OFF;
	unsigned fs = 0, bs = 0, fc = 0;
	int hf = emu_vdev_uint(o, "framesz", &fs), hb = emu_vdev_uint(o, "blocksz", &bs);
	int hc = emu_vdev_uint(o, "framecnt", &fc);

	if (hf < 0 || hb < 0 || hc < 0)
		return -1;
	if (!hf) {
		for (fs = 2048; fs < need && fs < page; fs *= 2)
			;
		if (fs < need)
			fs = (need + page - 1) / page * page;
	}
	if (!hb)
		bs = fs < page ? page : fs;
	if (fs < need || fs % 16) {
		fprintf(stderr, "uroced: %s: af_packet framesz=%u cannot hold a frame of --mtu %u "
			"(needs a multiple of 16 >= %u; leave framesz out to have it derived)\n",
			o->dev, fs, o->mtu, need);
		return -1;
	}
	if (bs % page || bs % fs) {
		fprintf(stderr, "uroced: %s: af_packet blocksz=%u must be a multiple of the page "
			"size (%u) and of framesz=%u\n", o->dev, bs, page, fs);
		return -1;
	}
	if (!hc) {
		fc = EMU_AFP_RING_BYTES / fs;
		if (fc < EMU_AFP_MIN_FRAMES)
			fc = EMU_AFP_MIN_FRAMES;
		fc -= fc % (bs / fs);
	}
	if (fc % (bs / fs)) {
		fprintf(stderr, "uroced: %s: af_packet framecnt=%u must be a multiple of "
			"blocksz/framesz (%u)\n", o->dev, fc, bs / fs);
		return -1;
	}
	if ((!hf && emu_vdev_append(o, "framesz", fs)) || (!hb && emu_vdev_append(o, "blocksz", bs)) ||
	    (!hc && emu_vdev_append(o, "framecnt", fc)))
		return -1;
	if (fs - EMU_TPACKET_RX_OFF + RTE_PKTMBUF_HEADROOM > o->mbuf_room)
		o->mbuf_room = fs - EMU_TPACKET_RX_OFF + RTE_PKTMBUF_HEADROOM;
	snprintf(o->port_info, sizeof(o->port_info), "af_packet ring %u frames of %u B in "
		 "blocks of %u B", fc, fs, bs);
	return 0;
}

static unsigned emu_xdp_obj_size(unsigned mtu)
{
	unsigned room = RTE_PKTMBUF_HEADROOM + EMU_XDP_HEADROOM + mtu + EMU_L2_OVERHEAD;

	return rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + room, 0, NULL);
}

/* uroced's own AF_XDP socket (port_xsk.c): the port arguments it takes
 * (the PMD's others are refused: they would silently mean nothing) */
static const char *const emu_xsk_keys[] = { "iface", "start_queue", "queue_count", "xdp_prog",
					    "force_copy" };

static int emu_xsk_args(const struct emu_opts *o)
{
	for (const char *a = strchr(o->vdev, ','); a; a = strchr(a + 1, ',')) {
		size_t k = strcspn(a + 1, "=,");
		bool ok = false;
		for (size_t i = 0; i < sizeof(emu_xsk_keys) / sizeof(emu_xsk_keys[0]); i++)
			ok |= strlen(emu_xsk_keys[i]) == k && !strncmp(a + 1, emu_xsk_keys[i], k);
		if (!ok) {
			fprintf(stderr, "uroced: %s: af_xdp: '%.*s' is not an argument of uroced's "
				"AF_XDP socket (it takes iface, start_queue, xdp_prog, force_copy; "
				"--xdp-driver dpdk for DPDK's PMD)\n", o->dev, (int)k, a + 1);
			return -1;
		}
	}
	const char *ifa = emu_vdev_arg(o->vdev, "iface");
	if (!ifa) {
		fprintf(stderr, "uroced: %s: af_xdp: iface=IF missing in port '%s'\n", o->dev,
			o->vdev);
		return -1;
	}
	char ifname[IF_NAMESIZE];
	size_t il = strcspn(ifa, ",");
	if (il < sizeof(ifname)) {
		memcpy(ifname, ifa, il);
		ifname[il] = 0;
	}
	if (il >= sizeof(ifname) || !if_nametoindex(ifname)) {
		fprintf(stderr, "uroced: %s: af_xdp: no interface '%.*s'\n", o->dev, (int)il, ifa);
		return -1;
	}
	const char *q = emu_vdev_arg(o->vdev, "start_queue");
	char *end;
	if (q && (strtoul(q, &end, 10) > 4095 || end == q || (*end && *end != ','))) {
		fprintf(stderr, "uroced: %s: bad start_queue in port '%s'\n", o->dev, o->vdev);
		return -1;
	}
	return 0;
}

/* Our socket's UMEM: a frame per packet of 2048 bytes, or 4096 for an MTU
 * that needs it; RX frames as many as the RX pool has mbufs, at least
 * EMU_XSK_RX_FRAMES, all of them in the fill ring (the kernel buffers that
 * many frames while the engine is off its core); TX frames as many as the
 * PMD's descriptors were. */
#define EMU_XSK_RX_FRAMES 8192u
#define EMU_XSK_MAX_RX_FRAMES 65536u
static int emu_param_xsk(struct emu_opts *o)
{
	if (emu_xsk_args(o))
		return -1;
	o->xsk_frame = o->mtu <= emu_xsk_max_mtu(2048) ? 2048 : 4096;
	if (o->mtu > emu_xsk_max_mtu(o->xsk_frame)) {
		fprintf(stderr, "uroced: %s: af_xdp holds a frame in one %u-byte UMEM frame (no "
			"multi-buffer AF_XDP): --mtu at most %u, or use af_packet for --mtu %u\n",
			o->dev, o->xsk_frame, emu_xsk_max_mtu(o->xsk_frame), o->mtu);
		return -1;
	}
	unsigned rx = o->nb_mbuf > EMU_XSK_RX_FRAMES ? o->nb_mbuf : EMU_XSK_RX_FRAMES;
	rx = rte_align32pow2(rx);
	o->xsk_rx_frames = rx < EMU_XSK_MAX_RX_FRAMES ? rx : EMU_XSK_MAX_RX_FRAMES;
	o->xsk_tx_frames = EMU_XDP_NB_DESC;
	o->xsk = true;
	/* the largest frame a UMEM frame takes: what --mtu may grow to at run
	 * time (uroce-ctl mtu, emu_nic_max_frame), RX copies (--vlan) and TX
	 * mbufs included */
	o->mbuf_room = o->tx_mbuf_room = RTE_PKTMBUF_HEADROOM + emu_xsk_max_mtu(o->xsk_frame) +
					 EMU_L2_OVERHEAD;
	snprintf(o->port_info, sizeof(o->port_info), "umem %u rx (all in the fill ring) + %u tx "
		 "frames of %u B", o->xsk_rx_frames, o->xsk_tx_frames, o->xsk_frame);
	return 0;
}

/* af_xdp with --xdp-driver dpdk: the UMEM is DPDK's mbuf pool and the kernel takes a UMEM chunk of
 * at most one page; DPDK 22.11 has no multi-buffer AF_XDP, so a frame and
 * every header in front of it fit in one pool object of a page. */
static int emu_param_af_xdp(struct emu_opts *o, unsigned page)
{
	if (o->xdp_dpdk && emu_xdp_obj_size(o->mtu) > page) {
		unsigned max = o->mtu;
		while (max > 576 && emu_xdp_obj_size(max) > page)
			max--;
		fprintf(stderr, "uroced: %s: af_xdp holds a frame in one %u-byte page (DPDK 22.11 "
			"has no multi-buffer AF_XDP): --mtu at most %u, or use af_packet for "
			"--mtu %u\n", o->dev, page, max, o->mtu);
		return -1;
	}
	o->mbuf_room = RTE_PKTMBUF_HEADROOM + EMU_XDP_HEADROOM + o->mtu + EMU_L2_OVERHEAD;
	o->nb_desc = EMU_XDP_NB_DESC;
	/* The engine polls one RX queue (start_queue): DPDK would open the
	 * sockets of queue_count=N queues only for queues we set up, so the
	 * frames of the other N-1 would silently go to the kernel (--shared)
	 * or be lost. Several queues were measured to be no way out of the
	 * 2048-frame fill ring either: DPDK 22.11 takes queue_count only up
	 * to the interface's combined channels, which veth has none of
	 * (docs/performance.md, "UD incast on af_xdp"). */
	unsigned nq = 1;
	int q = emu_vdev_uint(o, "queue_count", &nq);
	if (q < 0)
		return -1;
	if (nq > 1) {
		fprintf(stderr, "uroced: %s: queue_count=%u: uroced receives on one queue "
			"(start_queue=N); steer UDP 4791 to it (docs/running.md, \"Sharing a "
			"NIC with the host\")\n", o->dev, nq);
		return -1;
	}
	if (!o->xdp_dpdk)
		return emu_param_xsk(o);
	/* DPDK 22.11 enables "preferred busy polling" by default (busy_budget
	 * 64): every RX burst that finds the ring empty makes a recvfrom()
	 * system call, so an engine polling an idle or slow RX ring made one
	 * per turn: 1.6 million per GB sent, 4.7 per frame, the largest CPU
	 * cost of a sending daemon (docs/performance.md, "CPU per byte").
	 * The engine polls the ring itself and sleeps in epoll on the socket
	 * (port_wake.c), so the kernel's busy poll buys nothing here. */
	if (!emu_vdev_arg(o->vdev, "busy_budget") && emu_vdev_append(o, "busy_budget", 0))
		return -1;
	snprintf(o->port_info, sizeof(o->port_info), "af_xdp umem chunk %u B",
		 emu_xdp_obj_size(o->mtu));
	return 0;
}

int emu_port_param(struct emu_opts *o)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned page = pg > 0 ? (unsigned)pg : 4096;
	int rc = 0;

	o->mbuf_room = o->mtu + 64 + RTE_PKTMBUF_HEADROOM;
	if (o->mbuf_room < RTE_MBUF_DEFAULT_BUF_SIZE)
		o->mbuf_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	o->tx_mbuf_room = o->mbuf_room;
	o->nb_desc = EMU_NB_DESC;
	o->port_info[0] = 0;
	switch (emu_port_kind(o->vdev)) {
	case EMU_PK_AF_PACKET:
		rc = emu_param_af_packet(o, page);
		break;
	case EMU_PK_AF_XDP:
		rc = emu_param_af_xdp(o, page);
		break;
	default:
		break;
	}
	if (rc)
		return -1;
	if (o->mbuf_room > UINT16_MAX) {
		fprintf(stderr, "uroced: %s: mbufs of %u bytes are too large for DPDK\n", o->dev,
			o->mbuf_room);
		return -1;
	}
	/* the pools' objects in MB, rounded up (ring ports have one, real
	 * ports an RX and a TX pool: port_dpdk.c), plus the device's rings,
	 * queues and DPDK's own allocations */
	uint64_t obj = rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + o->mbuf_room, 0, NULL);
	uint64_t sm = 0;
	if (emu_port_kind(o->vdev) != EMU_PK_RING)
		obj += rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + o->tx_mbuf_room, 0, NULL);
	else
		sm = rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + RTE_PKTMBUF_HEADROOM +
					       EMU_SM_ROOM, 0, NULL) * o->nb_mbuf;
	o->pool_mb = (uint32_t)((obj * o->nb_mbuf + sm + (1u << 20) - 1) >> 20) + 128;
	return 0;
}
