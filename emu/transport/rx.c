/* SPDX-License-Identifier: MIT */
/* Frame entry of a device: receive classification (RoCE to the transport,
 * the rest to ARP/ND/ICMP), drop accounting, the device's timers (neighbour
 * retries, frames held back by fault injection); multicast fan-out over
 * the core's membership table. On the transport's side of the layer line
 * so that a packet reaches emu_xport_rx by a direct call. */
#include <errno.h>
#include <string.h>

#include "xport.h"

/* Why the port dropped a frame (d->cnt.drops): counted here, in the
 * fault layer (fault) and by the transmit helpers (tx-nobuf). */
const char *const emu_drop_name[EMU_DROP_NUM] = {
	[EMU_DROP_NOT_ROCE] = "not-roce",
	[EMU_DROP_PARSE] = "parse",
	[EMU_DROP_ICRC] = "icrc",
	[EMU_DROP_NOT_OUR_MAC] = "not-our-mac",
	[EMU_DROP_NOT_OUR_IP] = "not-our-ip",
	[EMU_DROP_UNKNOWN_QP] = "unknown-qp",
	[EMU_DROP_MCAST] = "mcast-no-member",
	[EMU_DROP_TX_NOBUF] = "tx-nobuf",
	[EMU_DROP_FAULT] = "fault",
	[EMU_DROP_SRC_MISMATCH] = "src-mismatch",
	[EMU_DROP_GSI_MAD] = "gsi-mad",
	[EMU_DROP_MARTIAN] = "martian-src",
	[EMU_DROP_PKEY] = "bad-pkey",
	[EMU_DROP_LINK_DOWN] = "link-down",
	[EMU_DROP_VLAN] = "vlan",
};

static const uint8_t emu_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void emu_port_rx_roce(struct emu_dev *d, const struct wire_pkt *pkt);

/* A length fault of a whole packet (wire_reason_is_transport) is its QP's
 * transport's to judge (IBTA 9.7.5: NAK invalid request, bad response,
 * or a UC/UD drop) - for a QP's request or response only: a CNP and a MAD
 * to QP1 have one fixed shape, and one that breaks it is a header error. */
static bool emu_port_rx_judged(const struct wire_pkt *pkt, enum wire_reason r)
{
	return wire_reason_is_transport(r) && (pkt->op->flags & (WIRE_OPF_REQ | WIRE_OPF_RESP)) &&
	       pkt->bth.dqpn != WIRE_GSI_QPN;
}

void emu_port_rx_deliver(struct emu_dev *d, const uint8_t *frame, uint32_t len)
{
	struct wire_pkt pkt;
	enum wire_reason r;

	d->cnt.rx_pkts++;
	d->cnt.rx_bytes += len;
	if (d->capture)
		d->capture(d, frame, len, false);
	/* sent by this daemon over its internal ring: no ICRC check; the
	 * device already checked the IPv4 header's checksum (emu_dev) */
	r = wire_parse_ex(frame, len, (d->icrc_rx_skip ? WIRE_PARSE_NO_ICRC : 0u) |
				      (d->rx_l3_csum_ok ? WIRE_PARSE_NO_IPV4_CSUM : 0u), &pkt);
	if (r != WIRE_OK) {
		if (r < WIRE_R_NUM)
			d->cnt.rx_reason[r]++;
		if (emu_port_rx_judged(&pkt, r)) {
			emu_port_rx_roce(d, &pkt);
			return;
		}
		if (!wire_reason_is_roce(r)) {
			if (len >= 6 && !d->loopback && memcmp(frame, d->mac, 6) &&
			    memcmp(frame, emu_bcast, 6) && !(frame[0] & 1)) {
				d->cnt.drops[EMU_DROP_NOT_OUR_MAC]++;
				return;
			}
			if (d->l2_hook)
				d->l2_hook(d, frame, len);
			else
				emu_ip_l2_input(d, frame, len);
			return;
		}
		if (r == WIRE_R_ICRC) {
			d->cnt.icrc_errors++;
			d->cnt.drops[EMU_DROP_ICRC]++;
		} else {
			d->cnt.hdr_errors++;
			d->cnt.drops[EMU_DROP_PARSE]++;
		}
		return;
	}
	if (d->icrc_rx_skip)
		d->cnt.icrc_skipped++;
	emu_port_rx_roce(d, &pkt);
}

/* A parsed RoCE frame: to its QP(s), QP1's CM engine, or counted away. */
static void emu_port_rx_roce(struct emu_dev *d, const struct wire_pkt *pkt)
{
	d->cnt.rx_roce++;
	/* wire_gid is byte-aligned, ibv_gid 8-byte: copy, don't cast */
	union ibv_gid dgid_copy;
	memcpy(dgid_copy.raw, pkt->ip.dst.raw, 16);
	const union ibv_gid *dgid = &dgid_copy;
	bool mcast = emu_gid_is_mcast(dgid);
	if (!d->loopback && !mcast && memcmp(pkt->dmac, d->mac, 6)) {
		d->cnt.drops[EMU_DROP_NOT_OUR_MAC]++;
		return;
	}
	if (!mcast && emu_gid_find(d, dgid) < 0) {
		d->cnt.drops[EMU_DROP_NOT_OUR_IP]++;
		return;
	}
	/* A frame from the wire that says it comes from one of our own
	 * addresses is forged (the kernel drops such a "martian" source
	 * before rxe sees it): only the loopback port and the port's self
	 * loop bring our frames back. Without this, a host on the wire
	 * could speak for our own CM and QPs (docs/security.md). */
	if (!d->loopback && !d->rx_self) {
		union ibv_gid sgid;
		memcpy(sgid.raw, pkt->ip.src.raw, 16);
		if (emu_gid_find(d, &sgid) >= 0) {
			d->cnt.drops[EMU_DROP_MARTIAN]++;
			return;
		}
	}
	/* the port's P_Key table holds the default key only (index 0) */
	if (!wire_pkey_match(pkt->bth.pkey, WIRE_PKEY_DEFAULT)) {
		d->cnt.drops[EMU_DROP_PKEY]++;
		return;
	}
	if (pkt->bth.dqpn == WIRE_QPN_MASK) {
		struct emu_mcast *m = mcast ? emu_mcast_find(d, dgid) : NULL;
		if (!m) {
			d->cnt.drops[EMU_DROP_MCAST]++;
			return;
		}
		/* copy the member list: a member may detach from inside rx */
		struct emu_qp *qps[EMU_MAX_MCAST_ATT];
		uint32_t n = m->nqp;
		memcpy(qps, m->qp, n * sizeof(qps[0]));
		for (uint32_t i = 0; i < n; i++)
			emu_xport_rx(d, qps[i], pkt);
		return;
	}
	if (pkt->bth.dqpn == WIRE_GSI_QPN && d->gsi) {
		d->gsi->rx(d, pkt); /* a MAD for QP1: the CM engine */
		return;
	}
	struct emu_qp *qp = emu_qp_lookup(d, pkt->bth.dqpn);
	if (!qp)
		d->cnt.drops[EMU_DROP_UNKNOWN_QP]++;
	emu_xport_rx(d, qp, pkt);
}

bool emu_port_rx_split(struct emu_dev *d, const uint8_t *hdr, uint32_t hl, const uint8_t *pay,
		       uint32_t plen, const uint8_t *tail, uint32_t tl)
{
	struct wire_pkt pkt;
	uint32_t len = hl + plen + tl;

	/* what the full parse would check the ICRC of, capture or delay */
	if (d->fault || d->capture || !d->icrc_rx_skip)
		return false;
	if (wire_parse_ex(hdr, len, WIRE_PARSE_HDRS_ONLY, &pkt) != WIRE_OK ||
	    pkt.payload_off != hl || pkt.payload_len != plen || pkt.frame_len != len ||
	    tl != (uint32_t)pkt.bth.pad + WIRE_ICRC_LEN)
		return false; /* not the layout zero-copy TX sends: the caller copies */
	pkt.payload = pay;
	memcpy(pkt.pad_bytes, tail, pkt.bth.pad);
	pkt.icrc = wire_icrc_get(tail + pkt.bth.pad);
	d->cnt.rx_pkts++;
	d->cnt.rx_bytes += len;
	d->cnt.icrc_skipped++;
	d->cnt.rx_seg++;
	emu_port_rx_roce(d, &pkt);
	return true;
}

void emu_port_rx_frame(struct emu_dev *d, const uint8_t *frame, uint32_t len)
{
	/* the port's self loop is inside the device, as an HCA's: no wire
	 * faults (and a held frame would lose its rx_self mark) */
	if (d->fault && !d->rx_self)
		emu_fault_rx(d->fault, d, frame, len, emu_port_rx_deliver);
	else
		emu_port_rx_deliver(d, frame, len);
}

int emu_dev_fault_set(struct emu_dev *d, const struct emu_fault_cfg *cfg)
{
	if (d->fault) {
		emu_fault_reconfig(d->fault, cfg);
		return 0;
	}
	d->fault = emu_fault_new(cfg);
	return d->fault ? 0 : -ENOMEM;
}

void emu_dev_fault_clear(struct emu_dev *d)
{
	struct emu_fault *f = d->fault;

	if (!f)
		return;
	/* off before the held frames go: they must not meet the faults again */
	d->fault = NULL;
	emu_fault_flush(f, d, emu_port_rx_deliver);
	emu_fault_free(f);
}

/* the port's timers: neighbour resolution retries, the CM engine's on
 * QP1, and frames fault injection held back, which re-enter here */
void emu_port_poll(struct emu_dev *d, uint64_t now)
{
	emu_neigh_poll(d, now);
	if (d->gsi)
		d->gsi->poll(d, now);
	if (d->fault)
		emu_fault_poll(d->fault, d, now, emu_port_rx_deliver);
}

uint64_t emu_port_next_deadline(struct emu_dev *d)
{
	uint64_t t = emu_fault_next_deadline(d->fault);
	uint64_t n = emu_neigh_next_deadline(d);

	if (d->gsi) {
		uint64_t g = d->gsi->next_deadline(d);
		if (g < t)
			t = g;
	}
	return n < t ? n : t;
}
