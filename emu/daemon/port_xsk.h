/* SPDX-License-Identifier: MIT */
/* uroced's own AF_XDP socket for an af_xdp port (port_xsk.c): the RX and
 * TX of `--port net_af_xdp0,iface=IF` unless `--xdp-driver dpdk`. */
#ifndef EMU_PORT_XSK_H
#define EMU_PORT_XSK_H

#include <stdbool.h>
#include <stdint.h>

struct rte_mbuf;
struct emu_daemon;
struct emu_xsk;

/* What the socket is made with (from the port string and the MTU). */
struct emu_xsk_cfg {
	char ifname[16];
	uint32_t queue;       /* start_queue= */
	uint32_t rx_frames;   /* UMEM frames for RX: all in the fill ring */
	uint32_t tx_frames;   /* UMEM frames for TX, and the TX ring's size */
	uint32_t frame_size;  /* 2048 or 4096 */
	bool force_copy;      /* force_copy=1: XDP_COPY */
	bool steer_all;       /* no --shared: every frame of the queue to us */
	const char *prog;     /* the XDP object (uroce_xdp.o or xdp_prog=) */
	uint64_t *tx_long;    /* counts frames too long for a TX frame (dropped) */
};

/* The socket, its UMEM and its XDP program attached through a BPF link
 * (detached by the kernel when the daemon exits, killed or not). NULL
 * after one line on stderr. */
struct emu_xsk *emu_xsk_open(const char *dev, const struct emu_xsk_cfg *cfg);
void emu_xsk_close(struct emu_xsk *x);
int emu_xsk_fd(const struct emu_xsk *x);

/* Up to max received frames, in place in the UMEM: they stay the
 * caller's until emu_xsk_rx_done gives them back to the fill ring. */
unsigned emu_xsk_rx(struct emu_xsk *x, const uint8_t **frame, uint32_t *len, unsigned max);
void emu_xsk_rx_done(struct emu_xsk *x, unsigned n);

/* Frames copied into TX frames of the UMEM and their mbufs freed: how many
 * were taken (fewer when the TX ring or its frames are all in flight). */
unsigned emu_xsk_tx(struct emu_xsk *x, struct rte_mbuf **m, unsigned n);
/* Completions reclaimed, the kernel kicked for descriptors it has not
 * taken yet: how many are still waiting in the TX ring. */
unsigned emu_xsk_tx_poll(struct emu_xsk *x);

/* System calls made (kicks), for measurements. */
struct emu_xsk_stats {
	uint64_t tx_kicks, fill_kicks;
};
void emu_xsk_stats(const struct emu_xsk *x, struct emu_xsk_stats *s);

/* The largest MTU a UMEM frame of this size carries (one frame per
 * packet: no multi-buffer) */
uint32_t emu_xsk_max_mtu(uint32_t frame_size);

#endif
