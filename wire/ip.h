/* SPDX-License-Identifier: MIT */
/**
 * @file ip.h
 * @brief IPv4 header checksum, UDP checksum and RoCEv2 UDP source ports.
 */
#ifndef WIRE_IP_H
#define WIRE_IP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Internet checksum (RFC 1071) of an IPv4 header of @p len bytes, with the
 *  checksum field taken as zero: the value to store in bytes 10-11. */
uint16_t wire_ipv4_csum(const uint8_t *hdr, size_t len);

/** True if the IPv4 header of @p len bytes (checksum included) sums to 0xFFFF. */
bool wire_ipv4_csum_ok(const uint8_t *hdr, size_t len);

/** UDP checksum of the datagram at @p udp (@p udp_len bytes, header
 *  included, checksum field taken as zero) with the pseudo-header of the IP
 *  header at @p l3 (IPv4 or IPv6). Returns the value to store (0 is sent as
 *  0xFFFF, per RFC 768). */
uint16_t wire_udp_csum(const uint8_t *l3, const uint8_t *udp, size_t udp_len);

/** Running Internet checksum (RFC 1071): adds @p len bytes at @p p, as
 *  big-endian 16-bit words (an odd last byte padded with zero), to @p acc.
 *  For checksums wire/ does not build itself (ICMP, ICMPv6 with its
 *  pseudo-header). */
uint32_t wire_csum_add(uint32_t acc, const uint8_t *p, size_t len);

/** The checksum to store for a sum from wire_csum_add(): folded, inverted. */
uint16_t wire_csum_fold(uint32_t acc);

/** UDP source port for a QP, as Linux rdma_rxe picks it for UD QPs (and for
 *  any QP before it is connected): 0xC000 + the top 14 bits of
 *  (qpn * 0x61C88647), a golden-ratio hash. */
uint16_t wire_udp_sport(uint32_t qpn);

/** UDP source port from a 20-bit flow label: the low 14 bits xor the high 6,
 *  in 0xC000..0xFFFF (Linux rdma_flow_label_to_udp_sport()). rxe uses it for
 *  connected QPs whose address vector carries a flow label (RDMA-CM sets
 *  one). */
uint16_t wire_udp_sport_flow_label(uint32_t flow_label);

/** UDP source port of a connected QP pair (local, remote) when the address
 *  vector has no flow label: the flow label is derived from lqpn * rqpn, so
 *  both ends of a connection get the same port. rxe's RC/UC QPs in the
 *  captures (QPN 0x11 <-> 0x11: port 49441) use this. */
uint16_t wire_udp_sport_pair(uint32_t lqpn, uint32_t rqpn);

#endif /* WIRE_IP_H */
