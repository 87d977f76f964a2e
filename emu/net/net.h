/* SPDX-License-Identifier: MIT */
/* Net layer (emu/net/): frames in and out of a port (tx helpers with
 * counting and capture), neighbour resolution with ARP / ND / ICMP, and
 * fault injection on received frames. The public header of the layer for
 * the transport above it; includes the core's headers it builds on (the
 * device and its port, objects, log). */
#ifndef EMU_NET_H
#define EMU_NET_H

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"

/* Transmit helpers: count, capture, then the port op. */
int emu_tx_alloc(struct emu_dev *d, struct emu_txbuf *b);
/* The same for a frame of at most len bytes: a small buffer if the port
 * has them (b->cap tells what was given). */
int emu_tx_alloc_len(struct emu_dev *d, struct emu_txbuf *b, uint32_t len);
void emu_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len);
void emu_tx_free(struct emu_dev *d, struct emu_txbuf *b);
/* Zero-copy TX: may payload of a mapped MR go out without a copy now (a
 * port that chains buffers, on the internal ring with no capture or
 * faults needing the ICRC over it)? Then emu_tx_send_ext queues b's hl
 * header bytes + len bytes at ext (mapping h) + tl trailer bytes; 0, or
 * -ENOBUFS and b is still the caller's (copy the payload instead). */
static inline bool emu_tx_zc_ok(const struct emu_dev *d)
{
	return d->tx_zc && d->icrc_tx_skip;
}
int emu_tx_send_ext(struct emu_dev *d, struct emu_txbuf *b, uint32_t hl, const uint8_t *ext,
		    uint32_t len, struct emu_mrmap_hold *h, const uint8_t *trailer, uint32_t tl);
void emu_tx_flush(struct emu_dev *d);
/* Back-pressure: frames the port queued but the NIC has not taken yet
 * (d->tx_backlog, kept by the port). Above this the requester pauses new
 * request packets until the port drains (counted in tx_stalls); ACKs,
 * responses and ARP still go out, so the peer keeps making progress. */
#define EMU_TX_BACKLOG_STALL 256u
static inline bool emu_tx_congested(struct emu_dev *d)
{
	if (__builtin_expect(d->tx_backlog < EMU_TX_BACKLOG_STALL, 1))
		return false;
	d->cnt.tx_stalls++;
	return true;
}
/* Frames a sender that can wait for room may queue now: READ responses
 * (transport/resp.c) go out only as far as the port has buffers for them
 * (its tx_room) and the TX backlog stays below EMU_TX_BACKLOG_STALL, and
 * resume when room comes back, instead of failing to allocate (a lost
 * response costs the requester a timeout). */
static inline uint32_t emu_tx_room(struct emu_dev *d)
{
	uint32_t r = d->ops && d->ops->tx_room ? d->ops->tx_room(d) : UINT32_MAX;
	uint32_t b = d->tx_backlog < EMU_TX_BACKLOG_STALL ? EMU_TX_BACKLOG_STALL - d->tx_backlog : 0;

	return r < b ? r : b;
}
/* Send a complete frame by copy (ARP, ICMP, tests). 0 or -ENOBUFS. */
int emu_tx_frame(struct emu_dev *d, const uint8_t *frame, uint32_t len);

/* Resolve an ibv_ah_attr of qp's/AH's device into av: GID index valid,
 * dest MAC from the neighbour table / own address / loopback. 0 or
 * -EINVAL; av->mac_valid = 0 while the neighbour is being resolved. */
int emu_av_resolve(struct emu_dev *d, const struct ibv_ah_attr *a, struct emu_av *av);
/* Retry a pending MAC resolution; true when av->dmac is valid. */
bool emu_av_refresh(struct emu_dev *d, struct emu_av *av);
/* Neighbour table: 0 and mac, or -EAGAIN (resolution started). */
int emu_neigh_lookup(struct emu_dev *d, const union ibv_gid *ip, uint8_t mac[6]);
void emu_neigh_update(struct emu_dev *d, const union ibv_gid *ip, const uint8_t mac[6]);
/* Index of gid in the GID table, or -1. */
int emu_gid_find(const struct emu_dev *d, const union ibv_gid *gid);

/* A port shared with the host's kernel (kneigh.c): neighbours and next
 * hops from the kernel's tables over rtnetlink instead of our own ARP/ND.
 * open: 0 or -errno; query: 0 and mac, -EAGAIN (the kernel is resolving:
 * ask again), or -ENETUNREACH (no route through this interface). */
int emu_kneigh_open(struct emu_dev *d, const char *ifname);
void emu_kneigh_close(struct emu_dev *d);
int emu_kneigh_query(struct emu_dev *d, const union ibv_gid *ip, uint8_t mac[6]);

/* Frames that are not RoCE (ARP, ND, ICMP): answered and learnt from. */
void emu_ip_l2_input(struct emu_dev *d, const uint8_t *frame, uint32_t len);
/* Neighbour resolution retries (the port's timers, emu_port_poll, run them). */
void emu_neigh_poll(struct emu_dev *d, uint64_t now);
uint64_t emu_neigh_next_deadline(struct emu_dev *d);

struct emu_fault_cfg {
	double drop, dup, reorder, corrupt; /* probabilities 0..1 */
	double ce;                          /* ECN-capable IP frames marked CE */
	uint32_t delay_us;                  /* fixed extra latency, 0 = none */
	uint64_t seed;
	/* only RoCE frames to this QPN (0: any) / with this BTH opcode
	 * (by_opcode) are subject to faults; the others pass untouched */
	uint32_t qpn;
	bool by_opcode;
	uint8_t opcode;
	/* CM MADs (QP1) lost in each direction, applied by the IB CM engine
	 * (emu/cm/ibcm.c) with its own PRNG seeded from seed: the frame
	 * faults above do not know MADs, and lost sends are not frames */
	double cm_drop;
};
/* Parse "drop=0.1,dup=0.05,reorder=0.05,corrupt=0.01,ce=0.01,delay_us=10,seed=1,
 * qp=0x11,opcode=4,cm_drop=0.2". 0 or -EINVAL. */
int emu_fault_parse(const char *s, struct emu_fault_cfg *cfg);
struct emu_fault *emu_fault_new(const struct emu_fault_cfg *cfg);
/* A new configuration at run time (uroce-ctl): the PRNG restarts from its
 * seed; frames held back keep their release times. */
void emu_fault_reconfig(struct emu_fault *f, const struct emu_fault_cfg *cfg);
const struct emu_fault_cfg *emu_fault_cfg(const struct emu_fault *f);
/* Every held frame to deliver() now (fault injection being turned off). */
void emu_fault_flush(struct emu_fault *f, struct emu_dev *d,
		     void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t));
void emu_fault_free(struct emu_fault *f);
/* Run one frame through the faults; survivors go to deliver() now or later
 * (from emu_fault_poll). Counters in d->cnt. */
void emu_fault_rx(struct emu_fault *f, struct emu_dev *d, const uint8_t *frame, uint32_t len,
		  void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t));
void emu_fault_poll(struct emu_fault *f, struct emu_dev *d, uint64_t now_ns,
		    void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t));
uint64_t emu_fault_next_deadline(const struct emu_fault *f);
/* The fault injector's PRNG (emu_rand_next on its state), for tests too. */
uint64_t emu_fault_rand(struct emu_fault *f);
/* A coin that is true with probability p (never for p <= 0), from
 * emu_rand_next on *state. */
bool emu_rand_coin(uint64_t *state, double p);

#endif /* EMU_NET_H */
