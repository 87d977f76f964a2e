/* SPDX-License-Identifier: MIT */
/* Known answers from a genuine capture: tests/data/send_bw_rdmacm.pcap
 * (ib_send_bw -R between two kernel rdma_rxe hosts, 10.77.0.12 active,
 * 10.77.0.11 passive). Every CM MAD decodes strictly and re-encodes byte
 * for byte; the kernel's values are checked against what the rest of the
 * capture shows:
 *  - REQ service ID is RDMA_PS_TCP << 16 | 18515, the cma_hdr leads its
 *    private data with the frame's IP addresses;
 *  - REP/RTU/DREQ/DREP comm IDs and transaction IDs pair with the REQ's;
 *  - the QPNs of the connection that carries data are the data packets'
 *    destination QPNs, and the data PSNs start at the REQ/REP starting
 *    PSNs (the kernel's CM: a message's starting PSN is the PSN its sender
 *    will receive, cm_id_priv->rq_psn);
 *  - DREQ remote QPN is the receiver's QPN;
 *  - the REQ's primary flow label gives the data packets' UDP source port
 *    (the kernel's rdma_flow_label_to_udp_sport()), which pins the flow
 *    label's bit position independently of any dissector. */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/check.h"
#include "wire.h"

#define MAXC 8

struct conn {
	struct wire_gid active, passive;       /* IP addresses */
	struct wire_cm_msg req, rep;
	uint64_t tid;
	bool have_rep, have_rtu;
	unsigned dreq, drep;
	bool seen_data[2];                     /* [0] active sends, [1] passive sends */
};

static struct conn conns[MAXC];
static unsigned nconn;
static unsigned counts[0x20];

static struct conn *by_ids(uint32_t a, uint32_t b)
{
	for (unsigned i = 0; i < nconn; i++) {
		uint32_t l = (uint32_t)conns[i].req.v[WIRE_CM_F_LOCAL_COMM_ID];
		uint32_t r = (uint32_t)conns[i].rep.v[WIRE_CM_F_LOCAL_COMM_ID];

		if (conns[i].have_rep && ((a == l && b == r) || (a == r && b == l)))
			return &conns[i];
	}
	return NULL;
}

static struct conn *by_req_id(uint32_t id)
{
	for (unsigned i = 0; i < nconn; i++)
		if ((uint32_t)conns[i].req.v[WIRE_CM_F_LOCAL_COMM_ID] == id)
			return &conns[i];
	return NULL;
}

static void on_req(const struct wire_pkt *p, const struct wire_mad_hdr *h,
		   const struct wire_cm_msg *m)
{
	struct wire_cma_hdr cma;
	uint16_t ps, port;
	struct conn *c;

	CHECK(nconn < MAXC, "too many REQs");
	if (nconn >= MAXC)
		return;
	c = &conns[nconn++];
	c->req = *m;
	c->tid = h->tid;
	c->active = p->ip.src;
	c->passive = p->ip.dst;
	CHECK_EQ(wire_cma_service_parse(m->v[WIRE_CM_F_SERVICE_ID], &ps, &port), 0);
	CHECK_EQ(ps, WIRE_RDMA_PS_TCP);
	CHECK_EQ(port, 18515);
	CHECK_EQ(m->v[WIRE_CM_F_TRANSPORT_TYPE], 0);   /* RC */
	CHECK_EQ(m->v[WIRE_CM_F_PKEY], 0xFFFF);
	CHECK(m->v[WIRE_CM_F_PATH_MTU] >= 1 && m->v[WIRE_CM_F_PATH_MTU] <= 5, "mtu %llu",
	      (unsigned long long)m->v[WIRE_CM_F_PATH_MTU]);
	CHECK(memcmp(m->gid[0], p->ip.src.raw, 16) == 0, "REQ primary local GID = IP source");
	CHECK(memcmp(m->gid[1], p->ip.dst.raw, 16) == 0, "REQ primary remote GID = IP dest");
	CHECK_EQ(m->v[WIRE_CM_F_PRI_HOP_LIMIT], p->ip.ttl);
	CHECK_EQ(wire_cma_hdr_decode(m->pdata, WIRE_CM_REQ_PDATA, &cma), 0);
	CHECK_EQ(cma.ip_version, 4);
	CHECK(wire_gid_eq(&cma.src, &p->ip.src) && wire_gid_eq(&cma.dst, &p->ip.dst),
	      "cma_hdr addresses");
	CHECK(cma.src_port != 0, "cma_hdr source port");
	/* the kernel forms the TID's low half from the local comm ID (in
	 * host order on a little-endian host) */
	CHECK_EQ((uint32_t)h->tid, __builtin_bswap32((uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID]));
}

static void on_mad(const struct wire_pkt *p, const struct wire_mad_hdr *h,
		   const struct wire_cm_msg *m)
{
	uint32_t lid = (uint32_t)m->v[WIRE_CM_F_LOCAL_COMM_ID];
	uint32_t rid = (uint32_t)m->v[WIRE_CM_F_REMOTE_COMM_ID];
	struct conn *c;

	counts[m->attr & 0x1F]++;
	switch (m->attr) {
	case WIRE_CM_ATTR_REQ:
		on_req(p, h, m);
		break;
	case WIRE_CM_ATTR_REP:
		c = by_req_id(rid);
		CHECK(c != NULL, "REP for an unknown REQ %#x", rid);
		if (!c)
			break;
		c->rep = *m;
		c->have_rep = true;
		CHECK_EQ(h->tid, c->tid);
		CHECK(wire_gid_eq(&p->ip.src, &c->passive), "REP from the passive side");
		CHECK(lid != rid, "distinct comm IDs");
		break;
	case WIRE_CM_ATTR_RTU:
		c = by_ids(lid, rid);
		CHECK(c != NULL && (uint32_t)c->req.v[WIRE_CM_F_LOCAL_COMM_ID] == lid,
		      "RTU pairs with a REQ/REP");
		if (c) {
			c->have_rtu = true;
			CHECK_EQ(h->tid, c->tid);
		}
		break;
	case WIRE_CM_ATTR_DREQ:
		c = by_ids(lid, rid);
		CHECK(c != NULL, "DREQ %#x/%#x pairs with a connection", lid, rid);
		if (!c)
			break;
		c->dreq++;
		/* the remote QPN is the QPN of the side receiving the DREQ */
		if (wire_gid_eq(&p->ip.dst, &c->passive))
			CHECK_EQ(m->v[WIRE_CM_F_REMOTE_QPN], c->rep.v[WIRE_CM_F_LOCAL_QPN]);
		else
			CHECK_EQ(m->v[WIRE_CM_F_REMOTE_QPN], c->req.v[WIRE_CM_F_LOCAL_QPN]);
		break;
	case WIRE_CM_ATTR_DREP:
		c = by_ids(lid, rid);
		CHECK(c != NULL, "DREP %#x/%#x pairs with a connection", lid, rid);
		if (c)
			c->drep++;
		break;
	default:
		CHECK(0, "unexpected attribute %#x", m->attr);
	}
}

/* rdma_flow_label_to_udp_sport(): fold the top 6 bits into the low 14. */
static uint16_t sport_of_flow_label(uint32_t fl)
{
	uint32_t lo = fl & 0x03FFF, hi = fl & 0xFC000;

	return (uint16_t)((lo ^ (hi >> 14)) | 0xC000);
}

/* First data packet (not an ACK) in each direction of a connection. */
static void on_data(const struct wire_pkt *p)
{
	if (p->bth.opcode == WIRE_OP_RC_ACK)
		return;
	for (unsigned i = 0; i < nconn; i++) {
		struct conn *c = &conns[i];
		bool from_active = wire_gid_eq(&p->ip.src, &c->active);
		uint64_t peer_qpn = from_active ? c->rep.v[WIRE_CM_F_LOCAL_QPN]
						: c->req.v[WIRE_CM_F_LOCAL_QPN];
		uint64_t start = from_active ? c->rep.v[WIRE_CM_F_STARTING_PSN]
					     : c->req.v[WIRE_CM_F_STARTING_PSN];

		if (!c->have_rtu || p->bth.dqpn != peer_qpn || c->seen_data[!from_active])
			continue;
		c->seen_data[!from_active] = true;
		CHECK(p->bth.psn == start, "conn %u first data PSN %#x, CM starting PSN %#llx",
		      i, p->bth.psn, (unsigned long long)start);
		CHECK_EQ(p->udp.sport, sport_of_flow_label((uint32_t)c->req.v[WIRE_CM_F_PRI_FLOW_LABEL]));
	}
}

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	unsigned mads = 0, with_data = 0;
	pcap_t *pc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s send_bw_rdmacm.pcap\n", argv[0]);
		return T_FAIL;
	}
	pc = pcap_open_offline(argv[1], err);
	if (!pc) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return T_FAIL;
	}
	while (pcap_next_ex(pc, &ph, &data) == 1) {
		uint8_t again[WIRE_MAD_LEN];
		struct wire_mad_hdr h;
		struct wire_cm_msg m;
		struct wire_pkt p;

		if (wire_parse(data, ph->caplen, &p) != WIRE_OK)
			continue;
		if (!wire_pkt_is_gsi(&p)) {
			on_data(&p);
			continue;
		}
		mads++;
		CHECK_EQ(p.bth.pkey, WIRE_GSI_PKEY);
		CHECK_EQ(p.deth.sqpn, WIRE_GSI_QPN);
		CHECK_EQ(wire_gsi_pkt_decode(&p, WIRE_MAD_STRICT, &h, &m), WIRE_MAD_OK);
		CHECK_EQ(wire_mad_encode(again, &h, &m), 0);
		CHECK(memcmp(again, p.payload, WIRE_MAD_LEN) == 0, "MAD %u re-encodes byte for byte",
		      mads);
		on_mad(&p, &h, &m);
	}
	pcap_close(pc);

	CHECK_EQ(mads, 12);
	CHECK_EQ(counts[WIRE_CM_ATTR_REQ & 0x1F], 2);
	CHECK_EQ(counts[WIRE_CM_ATTR_REP & 0x1F], 2);
	CHECK_EQ(counts[WIRE_CM_ATTR_RTU & 0x1F], 2);
	CHECK_EQ(counts[WIRE_CM_ATTR_DREQ & 0x1F], 3);
	CHECK_EQ(counts[WIRE_CM_ATTR_DREP & 0x1F], 3);
	for (unsigned i = 0; i < nconn; i++) {
		CHECK(conns[i].have_rep && conns[i].have_rtu, "conn %u established", i);
		CHECK(conns[i].dreq >= 1 && conns[i].dreq == conns[i].drep,
		      "conn %u: %u DREQ, %u DREP", i, conns[i].dreq, conns[i].drep);
		with_data += conns[i].seen_data[0] && conns[i].seen_data[1];
	}
	CHECK(with_data >= 1, "a connection carried data both ways");
	return t_done("wire-mad-pcap");
}
