/* SPDX-License-Identifier: MIT */
#include "mtu.h"

uint32_t wire_mtu_to_bytes(enum wire_mtu mtu)
{
	if (mtu < WIRE_MTU_256 || mtu > WIRE_MTU_4096)
		return 0;
	return 128u << mtu;
}

enum wire_mtu wire_mtu_from_bytes(uint32_t bytes)
{
	for (int m = WIRE_MTU_256; m <= WIRE_MTU_4096; m++)
		if ((128u << m) == bytes)
			return (enum wire_mtu)m;
	return (enum wire_mtu)0;
}

enum wire_mtu wire_mtu_active(uint32_t eth_mtu, bool ipv6)
{
	uint32_t ovh = ipv6 ? WIRE_ROCE_OVERHEAD_V6 : WIRE_ROCE_OVERHEAD_V4;

	if (eth_mtu < ovh)
		return (enum wire_mtu)0;
	for (int m = WIRE_MTU_4096; m >= WIRE_MTU_256; m--)
		if ((128u << m) <= eth_mtu - ovh)
			return (enum wire_mtu)m;
	return (enum wire_mtu)0;
}

const char *wire_mtu_str(enum wire_mtu mtu)
{
	static const char *const names[] = { "invalid", "256", "512", "1024", "2048", "4096" };

	if (mtu < WIRE_MTU_256 || mtu > WIRE_MTU_4096)
		return names[0];
	return names[mtu];
}
