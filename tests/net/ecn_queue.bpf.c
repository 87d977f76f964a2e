/* SPDX-License-Identifier: MIT */
/* The marking queue of tests/net's dcqcn case (docs/dcqcn.md, "Two
 * namespaces"): a tc clsact egress program on the sender's veth, in front
 * of a tbf qdisc that drains the link at the bottleneck rate. It keeps a
 * model of that queue (bytes in, drained at the same rate since the last
 * frame) and, on it, does what a RED/ECN switch port does: RoCEv2 frames
 * that are ECN-capable are marked CE with a probability rising from 0 at
 * kmin to pmax at kmax and always above kmax; any frame that would take
 * the queue past limit is dropped. The kernel of the CI machine has no
 * red, fq_codel, codel or pie qdisc, hence this. The random draws are a
 * seeded LCG (the seed is the test's), not the kernel's generator. */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ecn_queue.h"

#define ROCE_V2_PORT 4791
#define ECN_MASK 3
#define ECN_CE 3

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ecnq_cfg);
} ecnq_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ecnq_state);
} ecnq_state SEC(".maps");

/* the deepest the queue was since the reader last took it (reset by it) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ecnq_qmax SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ecnq_counters);
} ecnq_count SEC(".maps");

/* per flow: the destination QPN of the frames (a flow is one QP) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ECNQ_MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct ecnq_flow);
} ecnq_flows SEC(".maps");

struct roce {
	__u32 qpn;       /* 0: not RoCEv2 */
	__u8 ecn;
	__u8 v6;
	__u8 tos_b;      /* the byte holding the ECN bits, as it is */
	__u32 tos_off;   /* its offset in the frame */
};

/* RoCEv2 in IPv4 or IPv6 (no VLAN tag: the test sends none) */
static __always_inline void roce_parse(struct __sk_buff *skb, struct roce *r)
{
	__u8 h[ETH_HLEN + 40 + 8 + 8];
	__u32 l4;
	__u16 proto;
	struct udphdr *u;

	r->qpn = 0;
	if (bpf_skb_load_bytes(skb, 0, h, ETH_HLEN + 20 + 8 + 8))
		return;
	proto = ((__u16)h[12] << 8) | h[13];
	if (proto == ETH_P_IP) {
		struct iphdr *ip = (void *)(h + ETH_HLEN);
		if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
			return;
		l4 = ETH_HLEN + 20;
		r->tos_off = ETH_HLEN + 1;
		r->tos_b = h[ETH_HLEN + 1];
		r->ecn = r->tos_b & ECN_MASK;
		r->v6 = 0;
	} else if (proto == ETH_P_IPV6) {
		if (bpf_skb_load_bytes(skb, 0, h, sizeof(h)))
			return;
		struct ipv6hdr *ip6 = (void *)(h + ETH_HLEN);
		if (ip6->nexthdr != IPPROTO_UDP)
			return;
		l4 = ETH_HLEN + 40;
		/* traffic class: low nibble of byte 0, high nibble of byte 1 */
		r->tos_off = ETH_HLEN + 1;
		r->tos_b = h[ETH_HLEN + 1];
		r->ecn = (r->tos_b >> 4) & ECN_MASK;
		r->v6 = 1;
	} else {
		return;
	}
	if (l4 + 16 > sizeof(h))
		return;
	u = (void *)(h + l4);
	if (u->dest != bpf_htons(ROCE_V2_PORT))
		return;
	/* BTH: opcode, flags, P_Key, reserved, destination QP (24 bits) */
	r->qpn = ((__u32)h[l4 + 8 + 5] << 16) | ((__u32)h[l4 + 8 + 6] << 8) | h[l4 + 8 + 7];
	r->qpn |= 0x80000000u; /* QPN 0 stays apart from "not RoCE" */
}

/* The frame joins the queue: 1 mark, 0 pass, -1 drop. */
static __always_inline int ecnq_enqueue(const struct ecnq_cfg *c, struct ecnq_state *s,
					 __u64 now, __u32 len, int ect)
{
	__u64 dt, drained, q, p;
	int v = 0;

	bpf_spin_lock(&s->lock);
	dt = now > s->t ? now - s->t : 0;
	if (dt > 1000000000ull)
		dt = 1000000000ull;
	drained = dt * c->rate_Bps / 1000000000ull;
	q = s->q > drained ? s->q - drained : 0;
	s->t = now;
	if (q + len > c->limit) {
		s->q = q;
		v = -1;
	} else {
		q += len;
		s->q = q;
		if (ect && q > c->kmax) {
			v = 1;
		} else if (ect && q > c->kmin) {
			p = (__u64)c->pmax_1024 * (q - c->kmin) / (c->kmax - c->kmin);
			s->rnd = s->rnd * 6364136223846793005ull + 1442695040888963407ull;
			v = ((s->rnd >> 33) & 1023) < p;
		}
	}
	bpf_spin_unlock(&s->lock);
	return v;
}

static __always_inline void ecnq_mark(struct __sk_buff *skb, const struct roce *r)
{
	__u8 b = r->v6 ? r->tos_b | (ECN_CE << 4) : r->tos_b | ECN_CE;

	if (!r->v6) {
		/* the header checksum covers the TOS in the 16-bit word of
		 * version/IHL and TOS */
		__u16 from = bpf_htons(0x4500 | r->tos_b), to = bpf_htons(0x4500 | b);
		bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), from, to, 2);
	}
	bpf_skb_store_bytes(skb, r->tos_off, &b, 1, 0);
}

SEC("tc")
int ecn_queue(struct __sk_buff *skb)
{
	__u32 k = 0;
	struct ecnq_cfg *c = bpf_map_lookup_elem(&ecnq_cfg, &k);
	struct ecnq_state *s = bpf_map_lookup_elem(&ecnq_state, &k);
	struct ecnq_counters *n = bpf_map_lookup_elem(&ecnq_count, &k);
	__u64 *qmax = bpf_map_lookup_elem(&ecnq_qmax, &k);
	struct roce r;
	__u64 now = bpf_ktime_get_ns(), q;
	int v;

	if (!c || !s || !n || !qmax || !c->rate_Bps || c->kmax <= c->kmin)
		return TC_ACT_OK;
	roce_parse(skb, &r);
	int ect = r.qpn && (r.ecn == 1 || r.ecn == 2);
	v = ecnq_enqueue(c, s, now, skb->len, ect);
	q = s->q;
	if (q > *qmax)
		*qmax = q;
	if (v < 0) {
		__sync_fetch_and_add(&n->dropped, 1);
		return TC_ACT_SHOT;
	}
	__sync_fetch_and_add(&n->pkts, 1);
	__sync_fetch_and_add(&n->bytes, skb->len);
	if (ect)
		__sync_fetch_and_add(&n->ect, 1);
	if (v > 0) {
		__sync_fetch_and_add(&n->marked, 1);
		ecnq_mark(skb, &r);
	}
	if (r.qpn) {
		struct ecnq_flow *f = bpf_map_lookup_elem(&ecnq_flows, &r.qpn);
		if (!f) {
			struct ecnq_flow z = {};
			bpf_map_update_elem(&ecnq_flows, &r.qpn, &z, BPF_NOEXIST);
			f = bpf_map_lookup_elem(&ecnq_flows, &r.qpn);
		}
		if (f) {
			__sync_fetch_and_add(&f->bytes, skb->len);
			__sync_fetch_and_add(&f->pkts, 1);
			if (v > 0)
				__sync_fetch_and_add(&f->marked, 1);
		}
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "Dual MIT/GPL";
