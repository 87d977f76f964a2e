/* SPDX-License-Identifier: MIT */
/**
 * @file feth.h
 * @brief FLUSH Extended Transport Header (IBTA 1.5 memory placement
 *        extensions; Linux rxe since 6.2).
 *
 * Four bytes after the BTH of an RC RDMA FLUSH (opcode 0x1C), before its
 * RETH: bits 3-0 the placement type, bits 5-4 the selectivity level, bits
 * 31-6 reserved. The reserved bits are kept so that decode followed by
 * encode reproduces the bytes; senders leave them 0.
 */
#ifndef WIRE_FETH_H
#define WIRE_FETH_H

#include <stdbool.h>
#include <stdint.h>

#include "bytes.h"

#define WIRE_FETH_LEN 4

/** Placement type bits (FETH bits 3-0). */
enum wire_flush_type {
	WIRE_FLUSH_GLOBAL     = 1u << 0, /**< global visibility */
	WIRE_FLUSH_PERSISTENT = 1u << 1, /**< persistence */
};
#define WIRE_FLUSH_TYPES (WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT)

/** Selectivity level (FETH bits 5-4); 2 and 3 are reserved. */
enum wire_flush_level {
	WIRE_FLUSH_RANGE = 0, /**< the RETH's range */
	WIRE_FLUSH_MR    = 1, /**< the whole region of the RETH's R_Key (va, len ignored) */
};

struct wire_feth {
	uint8_t  plt;   /**< placement type, 4 bits */
	uint8_t  sel;   /**< selectivity level, 2 bits */
	uint32_t resv;  /**< bits 31-6, 26 bits */
};

static inline void wire_feth_decode(const uint8_t *p, struct wire_feth *f)
{
	uint32_t v = wire_get_be32(p);

	f->plt = (uint8_t)(v & 0xf);
	f->sel = (uint8_t)((v >> 4) & 3);
	f->resv = v >> 6;
}

static inline void wire_feth_encode(uint8_t *p, const struct wire_feth *f)
{
	wire_put_be32(p, (f->resv << 6) | ((uint32_t)(f->sel & 3) << 4) | (f->plt & 0xfu));
}

/** A request a responder can execute: at least one known placement type,
 *  no unknown one, a defined level (reserved bits are ignored). */
static inline bool wire_feth_valid(const struct wire_feth *f)
{
	return f->plt && !(f->plt & ~WIRE_FLUSH_TYPES) && f->sel <= WIRE_FLUSH_MR;
}

#endif /* WIRE_FETH_H */
