/* SPDX-License-Identifier: MIT */
/**
 * @file mtu.h
 * @brief IB path MTU enum (IBV_MTU_* numbering) and active MTU from Ethernet MTU.
 */
#ifndef WIRE_MTU_H
#define WIRE_MTU_H

#include <stdbool.h>
#include <stdint.h>

/** IB MTU codes, numbered as enum ibv_mtu. */
enum wire_mtu {
	WIRE_MTU_256  = 1,
	WIRE_MTU_512  = 2,
	WIRE_MTU_1024 = 3,
	WIRE_MTU_2048 = 4,
	WIRE_MTU_4096 = 5,
};

/** Bytes of an MTU code (256..4096); 0 for an invalid code. */
uint32_t wire_mtu_to_bytes(enum wire_mtu mtu);

/** Code of an exact MTU byte count; 0 if @p bytes is not 256/512/1024/2048/4096. */
enum wire_mtu wire_mtu_from_bytes(uint32_t bytes);

/** Worst-case overhead of a payload-carrying RoCEv2 packet inside the IP MTU,
 *  IPv4: IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 (RDMA WRITE Only with
 *  Immediate; no other payload opcode has more) + ICRC 4. The AtomicETH is
 *  bigger but atomics carry no payload. */
#define WIRE_ROCE_OVERHEAD_V4 (20 + 8 + 12 + 16 + 4 + 4)
/** Same for IPv6 (40-byte IP header). */
#define WIRE_ROCE_OVERHEAD_V6 (40 + 8 + 12 + 16 + 4 + 4)

/** Largest IB MTU that fits in an Ethernet MTU of @p eth_mtu bytes (the IP
 *  MTU, without the Ethernet header) given @p ipv6 addressing; 0 if even 256
 *  does not fit. 1500 -> WIRE_MTU_1024, 9000 -> WIRE_MTU_4096. */
enum wire_mtu wire_mtu_active(uint32_t eth_mtu, bool ipv6);

/** Name "256".."4096", or "invalid". */
const char *wire_mtu_str(enum wire_mtu mtu);

#endif /* WIRE_MTU_H */
