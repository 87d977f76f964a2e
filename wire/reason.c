/* SPDX-License-Identifier: MIT */
#include "pkt.h"

static const struct {
	const char *name;
	const char *desc;
} reasons[WIRE_R_NUM] = {
	[WIRE_OK] = { "ok", "valid RoCEv2 packet" },
	[WIRE_R_NOT_IP] = { "not-ip", "EtherType is neither IPv4 nor IPv6" },
	[WIRE_R_NOT_UDP] = { "not-udp", "IP payload is not UDP" },
	[WIRE_R_NOT_ROCE_PORT] = { "not-roce-port", "UDP destination port is not 4791" },
	[WIRE_R_TRUNC_ETH] = { "trunc-eth", "frame shorter than the Ethernet/VLAN header" },
	[WIRE_R_TRUNC_IP] = { "trunc-ip", "frame shorter than the IP header" },
	[WIRE_R_TRUNC_UDP] = { "trunc-udp", "frame shorter than the UDP header" },
	[WIRE_R_TRUNC_BTH] = { "trunc-bth", "UDP payload shorter than BTH + ICRC" },
	[WIRE_R_TRUNC_EXT] = { "trunc-ext", "UDP payload shorter than the opcode's headers + ICRC" },
	[WIRE_R_IPV4_VERSION] = { "ipv4-version", "IPv4 EtherType but IP version is not 4" },
	[WIRE_R_IPV4_IHL] = { "ipv4-ihl", "IPv4 header length below 20 bytes" },
	[WIRE_R_IPV4_OPTIONS] = { "ipv4-options", "IPv4 options present" },
	[WIRE_R_IPV4_CSUM] = { "ipv4-csum", "bad IPv4 header checksum" },
	[WIRE_R_IPV4_FRAGMENT] = { "ipv4-fragment", "IPv4 fragment" },
	[WIRE_R_IP_LEN] = { "ip-len", "IP length disagrees with the frame" },
	[WIRE_R_IPV6_VERSION] = { "ipv6-version", "IPv6 EtherType but IP version is not 6" },
	[WIRE_R_IPV6_EXT_HDR] = { "ipv6-ext-hdr", "IPv6 extension headers before UDP" },
	[WIRE_R_UDP_LEN] = { "udp-len", "UDP length disagrees with the IP length" },
	[WIRE_R_UDP_CSUM] = { "udp-csum", "bad UDP checksum" },
	[WIRE_R_BTH_TVER] = { "bth-tver", "BTH transport version is not 0" },
	[WIRE_R_OPCODE] = { "bad-opcode", "reserved or unsupported BTH opcode" },
	[WIRE_R_PAD] = { "bad-pad", "pad count not allowed for this packet" },
	[WIRE_R_PAYLOAD_UNEXPECTED] = { "payload-unexpected", "payload on an opcode without payload" },
	[WIRE_R_PAYLOAD_MISSING] = { "payload-missing", "empty payload on a first/middle packet" },
	[WIRE_R_ICRC] = { "bad-icrc", "ICRC mismatch" },
};

const char *wire_reason_str(enum wire_reason r)
{
	if ((unsigned)r >= WIRE_R_NUM)
		return "unknown";
	return reasons[r].name;
}

const char *wire_reason_desc(enum wire_reason r)
{
	if ((unsigned)r >= WIRE_R_NUM)
		return "unknown reason";
	return reasons[r].desc;
}

bool wire_reason_is_roce(enum wire_reason r)
{
	return r != WIRE_R_NOT_IP && r != WIRE_R_NOT_UDP && r != WIRE_R_NOT_ROCE_PORT &&
	       (unsigned)r < WIRE_R_NUM;
}

bool wire_reason_is_transport(enum wire_reason r)
{
	return r == WIRE_R_PAD || r == WIRE_R_PAYLOAD_UNEXPECTED || r == WIRE_R_PAYLOAD_MISSING;
}
