/* SPDX-License-Identifier: MIT */
/* Fault injection on received frames: drop, duplicate, reorder, corrupt,
 * delay and ECN CE marks, driven by a seeded PRNG so a run is reproducible. DPDK-free: the
 * transport tests put it on their simulated wire. Held frames live in a
 * pool allocated up front (no allocation per frame). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define EMU_FAULT_SLOTS 256
#define EMU_FAULT_FRAME 10240
#define EMU_FAULT_REORDER_NS 200000ull /* a reordered frame waits at most this */

struct emu_fault_held {
	uint64_t at_ns;      /* deliver at or after */
	uint32_t len;
	uint8_t used;
	uint8_t until_next;  /* reorder: released by the next delivered frame */
	uint64_t seq;        /* arrival order, to keep delay FIFO */
	uint8_t *data;
};

struct emu_fault {
	struct emu_fault_cfg cfg;
	uint64_t s;
	uint64_t seq;
	uint32_t nheld;
	struct emu_fault_held held[EMU_FAULT_SLOTS];
	uint8_t scratch[EMU_FAULT_FRAME];
	uint8_t *pool;
};

int emu_fault_parse(const char *s, struct emu_fault_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	if (!s)
		return -EINVAL;
	while (*s) {
		const char *eq = strchr(s, '=');
		if (!eq)
			return -EINVAL;
		size_t kl = (size_t)(eq - s);
		char *end;
		const char *v = eq + 1;
		double *p = NULL;

		if (kl == 4 && !strncmp(s, "drop", 4))
			p = &cfg->drop;
		else if (kl == 3 && !strncmp(s, "dup", 3))
			p = &cfg->dup;
		else if (kl == 7 && !strncmp(s, "reorder", 7))
			p = &cfg->reorder;
		else if (kl == 7 && !strncmp(s, "corrupt", 7))
			p = &cfg->corrupt;
		else if (kl == 2 && !strncmp(s, "ce", 2))
			p = &cfg->ce;
		else if (kl == 7 && !strncmp(s, "cm_drop", 7))
			p = &cfg->cm_drop;
		if (p) {
			*p = strtod(v, &end);
			if (end == v || *p < 0 || *p > 1)
				return -EINVAL;
		} else if (kl == 8 && !strncmp(s, "delay_us", 8)) {
			unsigned long x = strtoul(v, &end, 0);
			if (end == v || x > 10000000)
				return -EINVAL;
			cfg->delay_us = (uint32_t)x;
		} else if (kl == 4 && !strncmp(s, "seed", 4)) {
			cfg->seed = strtoull(v, &end, 0);
			if (end == v)
				return -EINVAL;
		} else if (kl == 2 && !strncmp(s, "qp", 2)) {
			unsigned long x = strtoul(v, &end, 0);
			if (end == v || x == 0 || x > 0xffffff)
				return -EINVAL;
			cfg->qpn = (uint32_t)x;
		} else if (kl == 6 && !strncmp(s, "opcode", 6)) {
			unsigned long x = strtoul(v, &end, 0);
			if (end == v || x > 0xff)
				return -EINVAL;
			cfg->opcode = (uint8_t)x;
			cfg->by_opcode = true;
		} else {
			return -EINVAL;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		s = end;
	}
	return 0;
}

bool emu_rand_coin(uint64_t *state, double p)
{
	if (p <= 0)
		return false;
	return (double)(emu_rand_next(state) >> 11) * 0x1.0p-53 < p;
}

uint64_t emu_fault_rand(struct emu_fault *f)
{
	return emu_rand_next(&f->s);
}

static bool emu_fault_coin(struct emu_fault *f, double p)
{
	return emu_rand_coin(&f->s, p);
}

struct emu_fault *emu_fault_new(const struct emu_fault_cfg *cfg)
{
	struct emu_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->pool = malloc((size_t)EMU_FAULT_SLOTS * EMU_FAULT_FRAME);
	if (!f->pool) {
		free(f);
		return NULL;
	}
	for (unsigned i = 0; i < EMU_FAULT_SLOTS; i++)
		f->held[i].data = f->pool + (size_t)i * EMU_FAULT_FRAME;
	f->cfg = *cfg;
	f->s = cfg->seed;
	return f;
}

void emu_fault_reconfig(struct emu_fault *f, const struct emu_fault_cfg *cfg)
{
	f->cfg = *cfg;
	f->s = cfg->seed;
}

const struct emu_fault_cfg *emu_fault_cfg(const struct emu_fault *f)
{
	return &f->cfg;
}

void emu_fault_free(struct emu_fault *f)
{
	if (!f)
		return;
	free(f->pool);
	free(f);
}

static bool emu_fault_hold(struct emu_fault *f, const uint8_t *frame, uint32_t len,
			   uint64_t at, bool until_next)
{
	if (len > EMU_FAULT_FRAME || f->nheld == EMU_FAULT_SLOTS)
		return false;
	for (unsigned i = 0; i < EMU_FAULT_SLOTS; i++) {
		struct emu_fault_held *h = &f->held[i];
		if (h->used)
			continue;
		memcpy(h->data, frame, len);
		h->len = len;
		h->at_ns = at;
		h->until_next = until_next;
		h->seq = f->seq++;
		h->used = 1;
		f->nheld++;
		return true;
	}
	return false;
}

/* Deliver held frames that are due (or, with release_reordered, the ones
 * waiting for a successor), oldest first. */
static void emu_fault_release(struct emu_fault *f, struct emu_dev *d, uint64_t now,
			      bool release_reordered,
			      void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t))
{
	while (f->nheld) {
		struct emu_fault_held *best = NULL;
		for (unsigned i = 0; i < EMU_FAULT_SLOTS; i++) {
			struct emu_fault_held *h = &f->held[i];
			if (!h->used)
				continue;
			if (!(h->at_ns <= now || (release_reordered && h->until_next)))
				continue;
			if (!best || h->seq < best->seq)
				best = h;
		}
		if (!best)
			return;
		best->used = 0;
		f->nheld--;
		deliver(d, best->data, best->len);
	}
}

/* A fault limited to one QP or opcode spares every other frame (and
 * whatever is not RoCE). The ICRC is not checked here: the receive path
 * does that after us. */
static bool emu_fault_spared(const struct emu_fault *f, const uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;

	if (!f->cfg.qpn && !f->cfg.by_opcode)
		return false;
	if (wire_parse_ex(frame, len, WIRE_PARSE_NO_ICRC, &pkt) != WIRE_OK)
		return true;
	return (f->cfg.qpn && pkt.bth.dqpn != f->cfg.qpn) ||
	       (f->cfg.by_opcode && pkt.bth.opcode != f->cfg.opcode);
}

/* A congested switch on the way: an ECN-capable IPv4 or IPv6 frame (no
 * VLAN tag) marked CE with probability ce, in scratch. The ICRC does not
 * cover the ECN bits; the IPv4 checksum does. */
static bool emu_fault_ecn_ce(struct emu_fault *f, const uint8_t *frame, uint32_t len)
{
	uint16_t et = len >= 14 + 40 ? (uint16_t)(frame[12] << 8 | frame[13]) : 0;
	size_t ihl = (size_t)(frame[14] & 0xf) * 4;
	uint8_t *ip = f->scratch + 14;

	/* IPv6: the traffic class is bits 4-11, its ECN bits 4-5 of byte 1 */
	bool v4 = et == 0x0800 && (frame[15] & WIRE_ECN_MASK) && ihl >= 20 && 14 + ihl <= len;
	bool v6 = et == 0x86dd && (frame[15] & (WIRE_ECN_MASK << 4));

	if (!(v4 || v6) || !emu_fault_coin(f, f->cfg.ce))
		return false;
	if (frame != f->scratch)
		memcpy(f->scratch, frame, len);
	if (v6) {
		ip[1] |= WIRE_ECN_CE << 4;
		return true;
	}
	ip[1] |= WIRE_ECN_CE;
	ip[10] = ip[11] = 0;
	uint16_t c = wire_ipv4_csum(ip, ihl);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	return true;
}

/* Is frame byte pos one the RoCEv2 ICRC masks (IBTA A17.8.3: IPv4 TOS,
 * TTL and header checksum; IPv6 traffic class, flow label and hop limit;
 * the UDP checksum; BTH's FECN/BECN/resv6 byte)? A bit flipped there is
 * not the ICRC's to catch. Ethernet without a VLAN tag, as uroce sends. */
static bool emu_fault_masked(const uint8_t *fr, uint32_t len, uint32_t pos, uint8_t bit)
{
	if (len < 14 + 20 || pos < 14)
		return false;
	uint16_t et = (uint16_t)(fr[12] << 8 | fr[13]);
	uint32_t ip = 14, udp;
	if (et == 0x0800) {
		udp = ip + (fr[ip] & 0x0f) * 4u;
		if (pos == ip + 1 || pos == ip + 8 || pos == ip + 10 || pos == ip + 11)
			return true;
	} else if (et == 0x86dd) {
		udp = ip + 40;
		if (pos == ip)  /* version (covered), traffic class's high nibble */
			return bit < 0x10;
		if (pos == ip + 1 || pos == ip + 2 || pos == ip + 3 || pos == ip + 7)
			return true;
	} else {
		return false;
	}
	return pos == udp + 6 || pos == udp + 7 || pos == udp + 8 + 4;
}

/* Where a corrupted frame went, read from the counters its synchronous
 * delivery moved: the fault test accounts for every flip it injected. */
static void emu_fault_fate(struct emu_dev *d, const struct emu_port_counters *b, bool masked)
{
	struct emu_port_counters *c = &d->cnt;
	uint64_t drops_b = 0, drops_a = 0;

	for (int i = 0; i < EMU_DROP_NUM; i++) {
		drops_b += b->drops[i];
		drops_a += c->drops[i];
	}
	if (c->icrc_errors != b->icrc_errors)
		c->fault_corrupt_icrc++;
	else if (c->hdr_errors != b->hdr_errors)
		c->fault_corrupt_hdr++;
	else if (drops_a != drops_b || c->rx_roce == b->rx_roce)
		c->fault_corrupt_other++;   /* not RoCE any more, not ours */
	else if (masked)
		c->fault_corrupt_masked++;  /* passed: the flip is in a masked field */
	else
		c->fault_corrupt_passed++;  /* passed with a covered byte flipped */
}

void emu_fault_rx(struct emu_fault *f, struct emu_dev *d, const uint8_t *frame, uint32_t len,
		  void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t))
{
	int corrupt = -1;  /* a flipped frame delivered now: 1 masked, 0 covered */
	uint64_t now = emu_now_ns();

	if (emu_fault_spared(f, frame, len)) {
		deliver(d, frame, len);
		emu_fault_release(f, d, now, true, deliver);
		return;
	}
	if (emu_fault_coin(f, f->cfg.drop)) {
		d->cnt.fault_drop++;
		d->cnt.drops[EMU_DROP_FAULT]++;
		return;
	}
	if (emu_fault_coin(f, f->cfg.corrupt) && len > 0 && len <= EMU_FAULT_FRAME) {
		memcpy(f->scratch, frame, len);
		/* flip one bit past the Ethernet header so the frame still
		 * reaches the RoCE parser and the ICRC has to catch it */
		uint32_t lo = len > 14 ? 14 : 0;
		uint32_t pos = lo + (uint32_t)(emu_fault_rand(f) % (len - lo));
		uint8_t bit = (uint8_t)(1u << (emu_fault_rand(f) & 7));
		f->scratch[pos] ^= bit;
		frame = f->scratch;
		d->cnt.fault_corrupt++;
		corrupt = emu_fault_masked(frame, len, pos, bit);
	}
	if (f->cfg.ce > 0 && len <= EMU_FAULT_FRAME && emu_fault_ecn_ce(f, frame, len))
		frame = f->scratch; /* counted as the receiving QP's ce_rcvd */
	unsigned copies = 1;
	if (emu_fault_coin(f, f->cfg.dup)) {
		copies = 2;
		d->cnt.fault_dup++;
	}
	/* a corrupted frame delivered once and now is followed to its fate;
	 * one duplicated or held is counted once as not followed */
	bool follow = corrupt >= 0 && copies == 1;
	if (corrupt >= 0 && copies > 1)
		d->cnt.fault_corrupt_unseen++;
	for (unsigned k = 0; k < copies; k++) {
		if (emu_fault_coin(f, f->cfg.reorder) &&
		    emu_fault_hold(f, frame, len, now + EMU_FAULT_REORDER_NS +
				   f->cfg.delay_us * 1000ull, true)) {
			d->cnt.fault_reorder++;
			if (follow)
				d->cnt.fault_corrupt_unseen++;
			continue;
		}
		if (f->cfg.delay_us &&
		    emu_fault_hold(f, frame, len, now + f->cfg.delay_us * 1000ull, false)) {
			d->cnt.fault_delay++;
			if (follow)
				d->cnt.fault_corrupt_unseen++;
			continue;
		}
		/* a frame waiting to be overtaken goes right after this one */
		if (follow) {
			struct emu_port_counters before = d->cnt;
			deliver(d, frame, len);
			emu_fault_fate(d, &before, corrupt == 1);
		} else {
			deliver(d, frame, len);
		}
		emu_fault_release(f, d, now, true, deliver);
	}
}

void emu_fault_flush(struct emu_fault *f, struct emu_dev *d,
		     void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t))
{
	if (f && f->nheld)
		emu_fault_release(f, d, UINT64_MAX, true, deliver);
}

void emu_fault_poll(struct emu_fault *f, struct emu_dev *d, uint64_t now_ns,
		    void (*deliver)(struct emu_dev *, const uint8_t *, uint32_t))
{
	if (f && f->nheld)
		emu_fault_release(f, d, now_ns, false, deliver);
}

uint64_t emu_fault_next_deadline(const struct emu_fault *f)
{
	uint64_t t = UINT64_MAX;

	if (!f || !f->nheld)
		return t;
	for (unsigned i = 0; i < EMU_FAULT_SLOTS; i++)
		if (f->held[i].used && f->held[i].at_ns < t)
			t = f->held[i].at_ns;
	return t;
}
