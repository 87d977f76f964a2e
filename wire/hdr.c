/* SPDX-License-Identifier: MIT */
#include "hdr.h"

#include "bytes.h"

void wire_bth_decode(const uint8_t *p, struct wire_bth *b)
{
	b->opcode = p[0];
	b->se = p[1] >> 7;
	b->mig = (p[1] >> 6) & 1;
	b->pad = (p[1] >> 4) & 3;
	b->tver = p[1] & 0x0f;
	b->pkey = wire_get_be16(p + 2);
	b->fecn = p[4] >> 7;
	b->becn = (p[4] >> 6) & 1;
	b->resv6 = p[4] & 0x3f;
	b->dqpn = wire_get_be24(p + 5);
	b->ackreq = p[8] >> 7;
	b->resv7 = p[8] & 0x7f;
	b->psn = wire_get_be24(p + 9);
}

void wire_bth_encode(uint8_t *p, const struct wire_bth *b)
{
	p[0] = b->opcode;
	p[1] = (uint8_t)((b->se ? 0x80 : 0) | (b->mig ? 0x40 : 0) |
			 (b->pad & 3) << 4 | (b->tver & 0x0f));
	wire_put_be16(p + 2, b->pkey);
	p[4] = (uint8_t)((b->fecn ? 0x80 : 0) | (b->becn ? 0x40 : 0) | (b->resv6 & 0x3f));
	wire_put_be24(p + 5, b->dqpn);
	p[8] = (uint8_t)((b->ackreq ? 0x80 : 0) | (b->resv7 & 0x7f));
	wire_put_be24(p + 9, b->psn);
}

void wire_reth_decode(const uint8_t *p, struct wire_reth *r)
{
	r->va = wire_get_be64(p);
	r->rkey = wire_get_be32(p + 8);
	r->dma_len = wire_get_be32(p + 12);
}

void wire_reth_encode(uint8_t *p, const struct wire_reth *r)
{
	wire_put_be64(p, r->va);
	wire_put_be32(p + 8, r->rkey);
	wire_put_be32(p + 12, r->dma_len);
}

void wire_aeth_decode(const uint8_t *p, struct wire_aeth *a)
{
	a->syndrome = p[0];
	a->msn = wire_get_be24(p + 1);
}

void wire_aeth_encode(uint8_t *p, const struct wire_aeth *a)
{
	p[0] = a->syndrome;
	wire_put_be24(p + 1, a->msn);
}

void wire_atomiceth_decode(const uint8_t *p, struct wire_atomiceth *a)
{
	a->va = wire_get_be64(p);
	a->rkey = wire_get_be32(p + 8);
	a->swap_add = wire_get_be64(p + 12);
	a->compare = wire_get_be64(p + 20);
}

void wire_atomiceth_encode(uint8_t *p, const struct wire_atomiceth *a)
{
	wire_put_be64(p, a->va);
	wire_put_be32(p + 8, a->rkey);
	wire_put_be64(p + 12, a->swap_add);
	wire_put_be64(p + 20, a->compare);
}

void wire_atomicacketh_decode(const uint8_t *p, struct wire_atomicacketh *a)
{
	a->orig = wire_get_be64(p);
}

void wire_atomicacketh_encode(uint8_t *p, const struct wire_atomicacketh *a)
{
	wire_put_be64(p, a->orig);
}

void wire_deth_decode(const uint8_t *p, struct wire_deth *d)
{
	d->qkey = wire_get_be32(p);
	d->resv8 = p[4];
	d->sqpn = wire_get_be24(p + 5);
}

void wire_deth_encode(uint8_t *p, const struct wire_deth *d)
{
	wire_put_be32(p, d->qkey);
	p[4] = d->resv8;
	wire_put_be24(p + 5, d->sqpn);
}
