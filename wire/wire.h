/* SPDX-License-Identifier: MIT */
/**
 * @file wire.h
 * @brief uroce wire library: RoCEv2 (IBTA Annex A17) packet formats.
 *
 * Umbrella header. Everything is prefixed wire_ / WIRE_. The library
 * allocates nothing, works on caller buffers, has no global state and no
 * dependency beyond libc (no DPDK), so it is safe from any thread.
 *
 *  - bytes.h   unaligned big/little-endian access
 *  - psn.h     24-bit PSN / MSN arithmetic
 *  - hdr.h     BTH and extension headers: structs, encode/decode, pad
 *  - aeth.h    AETH syndromes, RNR timer table, retransmit timeout
 *  - opcode.h  the 256-entry opcode table
 *  - icrc.h    ICRC (and the raw CRC-32)
 *  - ip.h      IPv4 / UDP checksums, UDP source port
 *  - gid.h     GIDs and IP addresses
 *  - mtu.h     IB MTU codes, active MTU
 *  - pkt.h     frame parser (with reject reasons) and builder
 *  - mad.h     MADs, CM attributes, rdma_cm's cma_hdr
 *  - mcast.h   IGMPv2 / MLDv1 membership reports
 */
#ifndef WIRE_WIRE_H
#define WIRE_WIRE_H

#include "bytes.h"
#include "psn.h"
#include "hdr.h"
#include "aeth.h"
#include "opcode.h"
#include "icrc.h"
#include "ip.h"
#include "gid.h"
#include "mtu.h"
#include "pkt.h"
#include "mad.h"
#include "mcast.h"

#define WIRE_API_VERSION 1 /**< bumped on incompatible API changes */

#endif /* WIRE_WIRE_H */
