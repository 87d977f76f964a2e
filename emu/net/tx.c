/* SPDX-License-Identifier: MIT */
/* Frame exit of a device: transmit wrappers over the port ops, with capture
 * and drop accounting. Below transport/rx.c and neigh.c, which both send
 * through it. */
#include <errno.h>
#include <string.h>

#include "net.h"

int emu_tx_alloc(struct emu_dev *d, struct emu_txbuf *b)
{
	int rc = d->ops && d->ops->tx_alloc ? d->ops->tx_alloc(d, b) : -ENOBUFS;

	if (rc)
		d->cnt.drops[EMU_DROP_TX_NOBUF]++;
	return rc;
}

int emu_tx_alloc_len(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	/* a small mbuf when the port has one left, else a full one */
	if (len <= EMU_TX_SMALL && d->ops && d->ops->tx_alloc_small &&
	    !d->ops->tx_alloc_small(d, b))
		return 0;
	return emu_tx_alloc(d, b);
}

void emu_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	d->cnt.tx_pkts++;
	d->cnt.tx_bytes += len;
	if (d->capture)
		d->capture(d, b->data, len, true);
	d->ops->tx_send(d, b, len);
}

int emu_tx_send_ext(struct emu_dev *d, struct emu_txbuf *b, uint32_t hl, const uint8_t *ext,
		    uint32_t len, struct emu_mrmap_hold *h, const uint8_t *trailer, uint32_t tl)
{
	/* a capture wants the frame in one piece: the caller copies */
	if (d->capture || !d->ops->tx_send_ext ||
	    d->ops->tx_send_ext(d, b, hl, ext, len, h, trailer, tl))
		return -ENOBUFS;
	d->cnt.tx_pkts++;
	d->cnt.tx_bytes += hl + len + tl;
	d->cnt.tx_zc++;
	d->cnt.tx_zc_bytes += len;
	return 0;
}

void emu_tx_free(struct emu_dev *d, struct emu_txbuf *b)
{
	if (d->ops && d->ops->tx_free)
		d->ops->tx_free(d, b);
}

void emu_tx_flush(struct emu_dev *d)
{
	if (d->ops && d->ops->tx_flush)
		d->ops->tx_flush(d);
}

int emu_tx_frame(struct emu_dev *d, const uint8_t *frame, uint32_t len)
{
	struct emu_txbuf b;
	int rc = emu_tx_alloc(d, &b);

	if (rc)
		return rc;
	if (len > b.cap) {
		emu_tx_free(d, &b);
		return -EMSGSIZE;
	}
	memcpy(b.data, frame, len);
	emu_tx_send(d, &b, len);
	return 0;
}
