/* SPDX-License-Identifier: MIT */
/* Addresses of rdma_cm ids: sockaddr helpers, an address as a GID
 * (rdma_ip2gid) and the GID of this device that serves an address. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

socklen_t ucma_addr_size(const struct sockaddr_storage *a)
{
	switch (a->ss_family) {
	case AF_INET: return sizeof(struct sockaddr_in);
	case AF_INET6: return sizeof(struct sockaddr_in6);
	case AF_IB: return sizeof(struct ucma_sib);
	default: return 0;
	}
}

uint16_t ucma_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

void ucma_set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

/* the address as a GID (IPv4-mapped for IPv4), as rdma_ip2gid */
void ucma_gid(const struct sockaddr_storage *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (a->ss_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(g->raw + 12, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a->ss_family == AF_INET6) {
		memcpy(g->raw, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
	}
}

void ucma_gid_to_addr(const union ibv_gid *g, sa_family_t fam, struct sockaddr_storage *a)
{
	uint16_t port = ucma_port(a);

	memset(a, 0, sizeof(*a));
	a->ss_family = fam;
	if (fam == AF_INET)
		memcpy(&((struct sockaddr_in *)a)->sin_addr, g->raw + 12, 4);
	else
		memcpy(&((struct sockaddr_in6 *)a)->sin6_addr, g->raw, 16);
	ucma_set_port(a, port);
}

bool ucma_any(const struct sockaddr_storage *a)
{
	static const uint8_t z[16];

	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == 0;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, z, 16);
	return true;
}

bool ucma_is_loop(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] == 127;
	if (a->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return false;
}

bool ucma_is_mcast(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] & 0xf0) == 0xe0;
	if (a->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr[0] == 0xff;
	return false;
}

/* same address (ports not compared), as cma_addr_cmp == 0 */
bool ucma_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	union ibv_gid ga, gb;

	if (a->ss_family != b->ss_family)
		return false;
	ucma_gid(a, &ga);
	ucma_gid(b, &gb);
	return !memcmp(ga.raw, gb.raw, 16);
}

bool ucma_gid_v4(const union ibv_gid *g)
{
	static const uint8_t p[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(g->raw, p, 12);
}

/* GID index serving address a of this device, or -1: an address in the
 * GID table; on the loopback port also 127/8 and ::1 */
int ucma_local_index(const struct emu_dev *d, const struct sockaddr_storage *a)
{
	union ibv_gid g;

	ucma_gid(a, &g);
	int i = emu_gid_find(d, &g);
	if (i >= 0)
		return i;
	if (!d->loopback || !ucma_is_loop(a))
		return -1;
	for (uint32_t k = 0; k < d->gid_count; k++)
		if (ucma_gid_v4(&d->gids[k]) == (a->ss_family == AF_INET))
			return (int)k;
	return 0;
}

/* first GID of the family to source traffic to a remote address, or -1 */
int ucma_src_index(const struct emu_dev *d, sa_family_t fam)
{
	int ll = -1;

	for (uint32_t k = 0; k < d->gid_count; k++) {
		if (ucma_gid_v4(&d->gids[k]) != (fam == AF_INET))
			continue;
		if (fam == AF_INET6 && d->gids[k].raw[0] == 0xfe && (d->gids[k].raw[1] & 0xc0) == 0x80) {
			if (ll < 0)
				ll = (int)k;
			continue;
		}
		return (int)k;
	}
	return ll;
}

/* rdma_addr_size_in6: an IPv4 or IPv6 address in a sockaddr_in6 field */
int ucma_in6_size(const struct sockaddr_in6 *a)
{
	return a->sin6_family == AF_INET || a->sin6_family == AF_INET6;
}

void ucma_copy_addr(void *dst, size_t room, const struct sockaddr_storage *a)
{
	size_t n = ucma_addr_size(a);
	memcpy(dst, a, n < room ? n : room);
}
