/* SPDX-License-Identifier: MIT */
/**
 * @file gid.h
 * @brief 16-byte GIDs: IPv4-mapped (::ffff:a.b.c.d) and IPv6, link-local from MAC.
 *
 * A RoCEv2 GID is the node's IP address in IPv6 form; IPv4 addresses use the
 * IPv4-mapped form. Bytes are in network order.
 */
#ifndef WIRE_GID_H
#define WIRE_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** A GID (or IPv6 address), network byte order. */
struct wire_gid {
	uint8_t raw[16];
};

/** Buffer size sufficient for wire_gid_str() (INET6_ADDRSTRLEN). */
#define WIRE_GID_STRLEN 46

/** Build ::ffff:a.b.c.d from 4 address bytes in network order. */
void wire_gid_from_ipv4(struct wire_gid *gid, const uint8_t ip4[4]);

/** Copy a 16-byte IPv6 address into a GID. */
void wire_gid_from_ipv6(struct wire_gid *gid, const uint8_t ip6[16]);

/** True if @p gid is IPv4-mapped (first 10 bytes 0, then 0xFFFF). */
bool wire_gid_is_ipv4(const struct wire_gid *gid);

/** Extract the IPv4 address of an IPv4-mapped GID; false if not mapped. */
bool wire_gid_to_ipv4(const struct wire_gid *gid, uint8_t ip4[4]);

/** True if @p gid is IPv6 link-local (fe80::/10). */
bool wire_gid_is_link_local(const struct wire_gid *gid);

/** True if all 16 bytes are zero (an unused GID table entry). */
bool wire_gid_is_zero(const struct wire_gid *gid);

/** fe80::/64 + modified EUI-64 of @p mac (U/L bit flipped, ff:fe inserted),
 *  as rdma_rxe and the IPv6 stack make GID 0. */
void wire_gid_from_mac(struct wire_gid *gid, const uint8_t mac[6]);

/** Equality. */
bool wire_gid_eq(const struct wire_gid *a, const struct wire_gid *b);

/** Format as text: IPv4-mapped GIDs as "::ffff:10.0.0.1", others in RFC 5952
 *  form. Returns @p buf, or NULL if @p len is too small. */
char *wire_gid_str(const struct wire_gid *gid, char *buf, size_t len);

/** Parse "a.b.c.d" (gives the IPv4-mapped GID) or any IPv6 text form.
 *  Returns false on malformed input. */
bool wire_gid_parse(struct wire_gid *gid, const char *str);

#endif /* WIRE_GID_H */
