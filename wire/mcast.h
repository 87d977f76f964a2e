/* SPDX-License-Identifier: MIT */
/**
 * @file mcast.h
 * @brief Multicast membership reports: IGMPv2 (RFC 2236) for IPv4 groups,
 *        MLDv1 (RFC 2710) for IPv6 groups, as whole Ethernet frames.
 *
 * What a host's IP stack sends when a socket joins or leaves a group; a
 * RoCE device without a netdev (the daemon, for rdma_cm multicast joins)
 * sends them itself so that a snooping switch forwards the group's
 * traffic to its port.
 */
#ifndef WIRE_MCAST_H
#define WIRE_MCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gid.h"

#define WIRE_IGMP_REPORT_V2  0x16 /**< IGMPv2 membership report */
#define WIRE_IGMP_LEAVE      0x17 /**< IGMPv2 leave group, to 224.0.0.2 */
#define WIRE_MLD_REPORT      131  /**< MLDv1 listener report */
#define WIRE_MLD_DONE        132  /**< MLDv1 listener done, to ff02::2 */

/** Frame lengths: Ethernet + IPv4 with Router Alert + IGMP, and
 *  Ethernet + IPv6 + Hop-by-Hop Router Alert + MLD. */
#define WIRE_IGMP_FRAME_LEN (14 + 24 + 8)
#define WIRE_MLD_FRAME_LEN  (14 + 40 + 8 + 24)

/** Build the report for a join (@p join) or the leave/done for group
 *  @p grp, sent from address @p src and MAC @p smac, into @p buf.
 *
 *  Both addresses are GIDs: IPv4-mapped ones give an IGMPv2
 *  frame (to the group, or 224.0.0.2 for a leave; IP identification
 *  @p ip_id, TOS 0xc0 and DF as Linux sends it, TTL 1, the Router Alert
 *  option), IPv6 ones an MLDv1 frame (to the group, or ff02::2 for done;
 *  hop limit 1, a Hop-by-Hop header with Router Alert MLD); the
 *  destination MAC is the group's (01:00:5e + 23 bits, 33:33 + 32 bits).
 *  Every checksum is filled in (IPv4 header, IGMP, ICMPv6 over its
 *  pseudo-header). Returns the frame length, or 0 when @p cap is too
 *  small or the two addresses are not of one family. */
size_t wire_mcast_report(uint8_t *buf, size_t cap, const uint8_t smac[6], uint16_t ip_id,
			 const struct wire_gid *grp, const struct wire_gid *src, bool join);

#endif /* WIRE_MCAST_H */
