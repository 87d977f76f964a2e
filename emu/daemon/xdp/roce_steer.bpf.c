/* SPDX-License-Identifier: MIT */
/* XDP program of uroced's shared mode (docs/running.md, "Sharing a NIC
 * with the host"): RoCEv2 frames (UDP destination port 4791 in IPv4 or
 * IPv6, at most one 802.1Q/802.1ad tag, not fragmented) go to the AF_XDP
 * socket of the receiving queue, everything else to the kernel, which so
 * keeps its ARP, ND, ICMP and TCP on the interface. uroced's own AF_XDP
 * socket (port_xsk.c) loads it, attaches it by a BPF link and puts its
 * socket into xsks_map; with --xdp-driver dpdk DPDK's af_xdp PMD loads it
 * (xdp_prog=) and finds the map by that name. Without --shared uroced's
 * socket takes the whole queue: it sets uroce_steer_all before loading.
 * Compiled with clang -target bpf at build time. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_V2_PORT 4791

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* set by port_xsk.c before loading (a section of its own, nothing else
 * in it): every frame of the queue to the socket */
volatile const __u32 uroce_steer_all SEC(".rodata.uroce") = 0;

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

/* The UDP header behind an unfragmented IPv4/IPv6 header, or NULL. */
static __always_inline struct udphdr *roce_udp(void *p, void *end, __u16 proto)
{
	if (proto == ETH_P_IP) {
		struct iphdr *ip = p;
		if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
			return NULL;
		/* a fragment (MF set or an offset) is not a whole RoCE packet:
		 * the kernel reassembles or drops it, uroce never sees one */
		if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3fff)))
			return NULL;
		p = (char *)ip + ip->ihl * 4;
	} else if (proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = p;
		/* UDP right behind the fixed header: RoCEv2 carries no
		 * extension headers, and a fragment header means a fragment */
		if ((void *)(ip6 + 1) > end || ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		p = ip6 + 1;
	} else {
		return NULL;
	}
	if ((char *)p + sizeof(struct udphdr) > (char *)end)
		return NULL;
	return p;
}

SEC("xdp")
int uroce_roce_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *p = eth + 1;

	if (uroce_steer_all)
		return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	if (p > end)
		return XDP_PASS;
	__u16 proto = bpf_ntohs(eth->h_proto);
	if (proto == ETH_P_8021Q || proto == ETH_P_8021AD) {
		struct vlan_tag *t = p;
		if ((void *)(t + 1) > end)
			return XDP_PASS;
		proto = bpf_ntohs(t->proto);
		p = t + 1;
	}
	struct udphdr *udp = roce_udp(p, end, proto);
	if (!udp || udp->dest != bpf_htons(ROCE_V2_PORT))
		return XDP_PASS;
	/* no socket on this queue (uroced not bound to it): the kernel's */
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
