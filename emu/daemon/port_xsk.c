/* SPDX-License-Identifier: MIT */
/* uroced's own AF_XDP socket (issue 22, docs/running.md "af_xdp"): the
 * receive side of an af_xdp port sized for the daemon being off its core.
 * DPDK 22.11's af_xdp PMD keeps 2048 UMEM frames in the fill ring and
 * gives back one per frame received, so a receiving daemon descheduled
 * for a few ms lost the rest of an incast at its fill ring
 * (xdp-fill-empty). Here every RX frame of the UMEM that the engine does
 * not hold is in the fill ring: 8192 or more (as many as af_packet's ring
 * holds), the engine reads a burst in place and hands its frames back to
 * the fill ring as soon as the burst is done, so the kernel can always
 * buffer a whole ring. TX copies the daemon's mbufs into TX frames of the
 * same UMEM and kicks the kernel only when the ring asks for it
 * (XDP_USE_NEED_WAKEUP); completions are reclaimed on every call.
 *
 * The XDP program is attached through a BPF link (bpf_link_create): the
 * kernel detaches it when the link's last descriptor closes, so a killed
 * daemon leaves no program on the interface, and the UMEM goes with the
 * socket. Without --shared the program sends every frame of the queue to
 * the socket (uroce_steer_all), with it only RoCEv2. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "port_xsk.h"

#ifdef EMU_HAVE_XSK
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#define EMU_XSK_BURST 64

struct emu_xsk {
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	struct xsk_umem *umem;
	struct xsk_socket *sk;
	struct bpf_object *obj;
	struct bpf_link *link;
	uint8_t *area;
	size_t area_len;
	uint32_t frame_size;
	uint32_t tx_frames;
	/* TX frames not in the ring: a stack of UMEM addresses */
	uint32_t ntx_free;
	uint64_t *tx_free;
	/* the RX burst the caller holds: its frames' addresses */
	unsigned nrx;
	uint64_t rx_addr[EMU_XSK_BURST];
	struct emu_xsk_stats st;
	uint64_t *tx_long;
	/* the last kick failed for good (ENETDOWN, ENXIO...): what waits in
	 * the TX ring does not keep the engine awake, the next send retries */
	bool kick_failed;
};

uint32_t emu_xsk_max_mtu(uint32_t frame_size)
{
	/* the kernel writes a frame XDP_PACKET_HEADROOM into its chunk;
	 * Ethernet header and one VLAN tag */
	return frame_size - XDP_PACKET_HEADROOM - 18;
}

/* the program's "steer every frame" switch, in a section of its own
 * (roce_steer.bpf.c) so that setting it touches nothing else */
static int emu_xsk_steer_all(struct bpf_object *obj)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t l = strlen(n);
		if (l >= 13 && !strcmp(n + l - 13, ".rodata.uroce")) {
			uint32_t v = 1;
			return bpf_map__set_initial_value(m, &v, sizeof(v));
		}
	}
	return -ENOENT;
}

/* The XDP object loaded, attached to the interface by a link and the
 * socket put into its xsks_map at our queue. 0, or -1 after one line. */
static int emu_xsk_prog(struct emu_xsk *x, const char *dev, const struct emu_xsk_cfg *c,
			unsigned ifindex)
{
	const char *what = "open";
	int rc;

	x->obj = bpf_object__open_file(c->prog, NULL);
	rc = x->obj ? 0 : -errno;
	if (rc == 0 && c->steer_all) {
		what = "configure";
		rc = emu_xsk_steer_all(x->obj);
	}
	if (rc == 0) {
		what = "load";
		rc = bpf_object__load(x->obj);
	}
	struct bpf_program *p = rc == 0 ? bpf_object__next_program(x->obj, NULL) : NULL;
	struct bpf_map *map = rc == 0 ? bpf_object__find_map_by_name(x->obj, "xsks_map") : NULL;
	if (rc == 0 && (!p || !map)) {
		what = "find its program and xsks_map in";
		rc = -ENOENT;
	}
	if (rc == 0) {
		what = "attach";
		x->link = bpf_program__attach_xdp(p, (int)ifindex);
		rc = x->link ? 0 : -errno;
	}
	if (rc == 0) {
		what = "update xsks_map of";
		int fd = xsk_socket__fd(x->sk);
		uint32_t q = c->queue;
		rc = bpf_map_update_elem(bpf_map__fd(map), &q, &fd, 0) ? -errno : 0;
	}
	if (rc) {
		fprintf(stderr, "uroced: %s: af_xdp: cannot %s the XDP program %s on %s: %s%s\n",
			dev, what, c->prog, c->ifname, strerror(-rc),
			rc == -EBUSY ? " (another XDP program is attached: ip link set dev IF "
				       "xdp off)" :
			rc == -EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : "");
		return -1;
	}
	return 0;
}

/* every RX frame into the fill ring (the first rx_frames of the UMEM),
 * the TX frames (the rest) onto the free stack */
static void emu_xsk_frames(struct emu_xsk *x, const struct emu_xsk_cfg *c)
{
	uint32_t idx = 0;
	uint32_t n = xsk_ring_prod__reserve(&x->fq, c->rx_frames, &idx);

	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = (uint64_t)i * c->frame_size;
	xsk_ring_prod__submit(&x->fq, n);
	for (uint32_t i = 0; i < c->tx_frames; i++)
		x->tx_free[x->ntx_free++] = (uint64_t)(c->rx_frames + i) * c->frame_size;
}

struct emu_xsk *emu_xsk_open(const char *dev, const struct emu_xsk_cfg *c)
{
	unsigned ifindex = if_nametoindex(c->ifname);
	struct emu_xsk *x = calloc(1, sizeof(*x));
	int rc;

	if (!ifindex) {
		fprintf(stderr, "uroced: %s: af_xdp: no interface '%s'\n", dev, c->ifname);
		free(x);
		return NULL;
	}
	if (!x || !(x->tx_free = calloc(c->tx_frames, sizeof(uint64_t)))) {
		fprintf(stderr, "uroced: %s: af_xdp: out of memory\n", dev);
		free(x);
		return NULL;
	}
	x->frame_size = c->frame_size;
	x->tx_long = c->tx_long;
	x->tx_frames = c->tx_frames;
	x->area_len = (size_t)(c->rx_frames + c->tx_frames) * c->frame_size;
	x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		fprintf(stderr, "uroced: %s: af_xdp: UMEM of %zu MiB: %s\n", dev,
			x->area_len >> 20, strerror(errno));
		goto fail;
	}
	struct xsk_umem_config uc = {
		.fill_size = c->rx_frames,
		.comp_size = c->tx_frames,
		.frame_size = c->frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	rc = xsk_umem__create(&x->umem, x->area, x->area_len, &x->fq, &x->cq, &uc);
	if (rc) {
		fprintf(stderr, "uroced: %s: af_xdp: UMEM of %zu MiB: %s%s\n", dev, x->area_len >> 20,
			strerror(-rc), rc == -EPERM || rc == -ENOMEM ?
			" (the UMEM is locked memory: raise RLIMIT_MEMLOCK, ulimit -l, or run "
			"with CAP_IPC_LOCK)" : "");
		x->umem = NULL;
		goto fail;
	}
	struct xsk_socket_config sc = {
		.rx_size = c->rx_frames,
		.tx_size = c->tx_frames,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = (uint16_t)(XDP_USE_NEED_WAKEUP | (c->force_copy ? XDP_COPY : 0)),
	};
	rc = xsk_socket__create(&x->sk, c->ifname, c->queue, x->umem, &x->rx, &x->tx, &sc);
	if (rc) {
		fprintf(stderr, "uroced: %s: af_xdp: socket on %s queue %u: %s%s\n", dev, c->ifname,
			c->queue, strerror(-rc), rc == -EPERM ?
			" (needs CAP_NET_RAW, or root)" : rc == -EINVAL ?
			" (no such queue: start_queue=)" : "");
		x->sk = NULL;
		goto fail;
	}
	emu_xsk_frames(x, c);
	if (emu_xsk_prog(x, dev, c, ifindex))
		goto fail;
	return x;
fail:
	emu_xsk_close(x);
	return NULL;
}

void emu_xsk_close(struct emu_xsk *x)
{
	if (!x)
		return;
	/* the program first: no frame is steered to a socket going away */
	if (x->link)
		bpf_link__destroy(x->link);
	if (x->obj)
		bpf_object__close(x->obj);
	if (x->sk)
		xsk_socket__delete(x->sk);
	if (x->umem)
		(void)xsk_umem__delete(x->umem);
	if (x->area)
		munmap(x->area, x->area_len);
	free(x->tx_free);
	free(x);
}

int emu_xsk_fd(const struct emu_xsk *x)
{
	return xsk_socket__fd(x->sk);
}

unsigned emu_xsk_rx(struct emu_xsk *x, const uint8_t **frame, uint32_t *len, unsigned max)
{
	uint32_t idx = 0;

	if (max > EMU_XSK_BURST)
		max = EMU_XSK_BURST;
	unsigned n = xsk_ring_cons__peek(&x->rx, max, &idx);
	for (unsigned i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		uint64_t a = xsk_umem__add_offset_to_addr(d->addr);
		/* the kernel's descriptor: inside the UMEM, or dropped */
		if (a >= x->area_len || d->len > x->area_len - a) {
			len[i] = 0;
			frame[i] = x->area;
		} else {
			frame[i] = x->area + a;
			len[i] = d->len;
		}
		x->rx_addr[i] = xsk_umem__extract_addr(d->addr) & ~(uint64_t)(x->frame_size - 1);
	}
	x->nrx = n;
	return n;
}

void emu_xsk_rx_done(struct emu_xsk *x, unsigned n)
{
	uint32_t idx = 0;

	if (n > x->nrx)
		n = x->nrx;
	if (!n)
		return;
	/* the fill ring has room for every RX frame: never short */
	unsigned got = xsk_ring_prod__reserve(&x->fq, n, &idx);
	for (unsigned i = 0; i < got; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = x->rx_addr[i];
	xsk_ring_prod__submit(&x->fq, got);
	xsk_ring_cons__release(&x->rx, n);
	x->nrx = 0;
	/* a zero-copy driver may sleep on an empty fill ring */
	if (xsk_ring_prod__needs_wakeup(&x->fq)) {
		x->st.fill_kicks++;
		(void)recvfrom(xsk_socket__fd(x->sk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
	}
}

static void emu_xsk_reclaim(struct emu_xsk *x)
{
	uint32_t idx = 0;
	unsigned n = xsk_ring_cons__peek(&x->cq, x->tx_frames, &idx);

	for (unsigned i = 0; i < n && x->ntx_free < x->tx_frames; i++)
		x->tx_free[x->ntx_free++] = *xsk_ring_cons__comp_addr(&x->cq, idx + i) &
					    ~(uint64_t)(x->frame_size - 1);
	xsk_ring_cons__release(&x->cq, n);
}

/* descriptors in the TX ring the kernel has not taken yet */
static unsigned emu_xsk_tx_pending(const struct emu_xsk *x)
{
	return x->tx.cached_prod - __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
}

/* A copy-mode socket sends at most 32 frames per sendto() and answers
 * EAGAIN while more wait; a bounded number of kicks, the rest waits for
 * the next call (the caller keeps the engine awake meanwhile). */
static void emu_xsk_kick(struct emu_xsk *x)
{
	for (unsigned k = 0; k < x->tx_frames / 32 + 2 && emu_xsk_tx_pending(x); k++) {
		if (!xsk_ring_prod__needs_wakeup(&x->tx))
			return;
		x->st.tx_kicks++;
		x->kick_failed = false;
		if (sendto(xsk_socket__fd(x->sk), NULL, 0, MSG_DONTWAIT, NULL, 0) == 0)
			continue;
		if (errno != EAGAIN && errno != EBUSY && errno != EINTR) {
			x->kick_failed = true; /* ENETDOWN...: the next call tries again */
			return;
		}
		emu_xsk_reclaim(x);
	}
}

unsigned emu_xsk_tx(struct emu_xsk *x, struct rte_mbuf **m, unsigned n)
{
	uint32_t idx = 0;

	emu_xsk_reclaim(x);
	if (n > x->ntx_free)
		n = x->ntx_free;
	n = xsk_ring_prod__reserve(&x->tx, n, &idx);
	unsigned put = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t len = m[i]->pkt_len;
		if (len > x->frame_size) {
			(*x->tx_long)++;
			continue; /* freed below with the others */
		}
		uint64_t a = x->tx_free[--x->ntx_free];
		uint8_t *dst = x->area + a;
		const void *s = rte_pktmbuf_read(m[i], 0, len, dst);
		if (s && s != dst)
			memcpy(dst, s, len);
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + put);
		d->addr = a;
		d->len = len;
		put++;
	}
	/* reserved slots not used (a frame too long) go back unsubmitted */
	x->tx.cached_prod -= n - put;
	xsk_ring_prod__submit(&x->tx, put);
	rte_pktmbuf_free_bulk(m, n);
	emu_xsk_kick(x);
	return n;
}

unsigned emu_xsk_tx_poll(struct emu_xsk *x)
{
	emu_xsk_reclaim(x);
	if (emu_xsk_tx_pending(x))
		emu_xsk_kick(x);
	return x->kick_failed ? 0 : emu_xsk_tx_pending(x);
}

void emu_xsk_stats(const struct emu_xsk *x, struct emu_xsk_stats *s)
{
	*s = x->st;
}

#else /* built without libxdp */

uint32_t emu_xsk_max_mtu(uint32_t frame_size)
{
	return frame_size - 256 - 18;
}

struct emu_xsk *emu_xsk_open(const char *dev, const struct emu_xsk_cfg *c)
{
	(void)c;
	fprintf(stderr, "uroced: %s: af_xdp: uroced was built without libxdp (libxdp-dev): "
		"use --xdp-driver dpdk\n", dev);
	return NULL;
}

void emu_xsk_close(struct emu_xsk *x) { (void)x; }
int emu_xsk_fd(const struct emu_xsk *x) { (void)x; return -1; }
unsigned emu_xsk_rx(struct emu_xsk *x, const uint8_t **f, uint32_t *l, unsigned max)
{
	(void)x; (void)f; (void)l; (void)max;
	return 0;
}
void emu_xsk_rx_done(struct emu_xsk *x, unsigned n) { (void)x; (void)n; }
unsigned emu_xsk_tx(struct emu_xsk *x, struct rte_mbuf **m, unsigned n)
{
	(void)x;
	rte_pktmbuf_free_bulk(m, n);
	return n;
}
unsigned emu_xsk_tx_poll(struct emu_xsk *x) { (void)x; return 0; }
void emu_xsk_stats(const struct emu_xsk *x, struct emu_xsk_stats *s)
{
	(void)x;
	memset(s, 0, sizeof(*s));
}
#endif
