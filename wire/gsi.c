/* SPDX-License-Identifier: MIT */
/* CM MADs as RoCEv2 packets: a UD SEND ONLY to the GSI (QP1), as rdma_rxe
 * and RoCE HCAs send them. */
#include "mad.h"
#include "pkt.h"

void wire_gsi_pkt_init(struct wire_pkt *d, uint8_t version, const uint8_t *mad,
		       uint32_t psn)
{
	wire_pkt_init(d, version);
	d->bth.opcode = WIRE_OP_UD_SEND_ONLY;
	d->bth.pkey = WIRE_GSI_PKEY;
	d->bth.dqpn = WIRE_GSI_QPN;
	d->bth.psn = psn & 0xFFFFFFu;
	d->deth.qkey = WIRE_GSI_QKEY;
	d->deth.sqpn = WIRE_GSI_QPN;
	d->payload = mad;
	d->payload_len = WIRE_MAD_LEN;
}

bool wire_pkt_is_gsi(const struct wire_pkt *p)
{
	return p->bth.opcode == WIRE_OP_UD_SEND_ONLY && p->bth.dqpn == WIRE_GSI_QPN;
}

enum wire_mad_reason wire_gsi_pkt_decode(const struct wire_pkt *p, unsigned flags,
					 struct wire_mad_hdr *hdr, struct wire_cm_msg *msg)
{
	enum wire_mad_reason r;

	r = wire_mad_decode(p->payload, p->payload_len, flags, hdr, msg);
	if (r == WIRE_MAD_OK && p->deth.qkey != WIRE_GSI_QKEY)
		return WIRE_MAD_R_QKEY;
	return r;
}
