/* SPDX-License-Identifier: MIT */
/* Names uroce-ctl prints for verbs enums (as ibv_devinfo spells them). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

const char *ctl_qp_type(uint32_t t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	default: return "?";
	}
}

const char *ctl_qp_state(uint32_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

const char *ctl_port_state(uint32_t s)
{
	static const char *const n[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

unsigned ctl_mtu_bytes(uint32_t ibv_mtu)
{
	return ibv_mtu >= IBV_MTU_256 && ibv_mtu <= IBV_MTU_4096 ? 128u << ibv_mtu : 0;
}

const char *ctl_gid_type(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "?";
	}
}

/* an IPv4-mapped GID as the IPv4 address it stands for */
void ctl_gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!memcmp(g->raw, v4, sizeof(v4)))
		inet_ntop(AF_INET, g->raw + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len);
}
