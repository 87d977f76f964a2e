/* SPDX-License-Identifier: MIT */
/* Neighbours from the kernel's tables, for a port shared with the host
 * (uroced --shared, docs/running.md): the kernel owns ARP and ND on the
 * interface, so the daemon asks it over rtnetlink instead of soliciting
 * itself. RTM_GETROUTE gives the next hop (the peer, or its gateway) and
 * refuses a peer routed through another interface; RTM_GETNEIGH reads
 * the next hop's MAC; when the kernel has none, RTM_NEWNEIGH with NTF_USE
 * makes it resolve (the CAP_NET_ADMIN this needs is already needed to
 * attach the XDP program; a UDP connect() routes but never resolves, and
 * a datagram sent to make the kernel resolve would reach the peer).
 * Called from neighbour resolution (neigh.c) only on a cache miss or an
 * expired entry, never per packet; every call is a bounded local
 * request and answer. */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "net.h"

struct emu_kneigh {
	int fd;
	int ifindex;
	uint32_t seq;
	char ifname[IF_NAMESIZE];
};

/* a request: header, family message, one address attribute */
struct emu_nlreq {
	struct nlmsghdr h;
	union {
		struct rtmsg rt;
		struct ndmsg nd;
	};
	char attrs[64];
};

int emu_kneigh_open(struct emu_dev *d, const char *ifname)
{
	struct emu_kneigh *k = calloc(1, sizeof(*k));
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (!k)
		return -ENOMEM;
	k->ifindex = (int)if_nametoindex(ifname);
	if (!k->ifindex || strlen(ifname) >= sizeof(k->ifname)) {
		free(k);
		return -ENODEV;
	}
	strcpy(k->ifname, ifname);
	k->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (k->fd < 0 || bind(k->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		int e = errno;
		if (k->fd >= 0)
			close(k->fd);
		free(k);
		return -e;
	}
	d->kneigh = k;
	return 0;
}

void emu_kneigh_close(struct emu_dev *d)
{
	if (!d->kneigh)
		return;
	close(d->kneigh->fd);
	free(d->kneigh);
	d->kneigh = NULL;
}

static void emu_nl_put(struct emu_nlreq *r, uint16_t type, const void *data, unsigned len)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static void emu_nl_addr(struct emu_nlreq *r, uint16_t type, const union ibv_gid *ip, bool v4)
{
	emu_nl_put(r, type, v4 ? ip->raw + 12 : ip->raw, v4 ? 4 : 16);
}

/* Send r and read its answer into buf: the answer's length, or -errno
 * (the kernel's error for the request, -ETIMEDOUT, -EIO). */
static int emu_nl_call(struct emu_kneigh *k, struct emu_nlreq *r, char *buf, size_t sz)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	r->h.nlmsg_seq = ++k->seq;
	if (sendto(k->fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	/* answers to earlier requests that timed out may still be queued */
	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(k->fd, buf, sz, 0);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_seq != k->seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(h);
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EIO;
			return e->error < 0 ? e->error : 0;
		}
		return (int)h->nlmsg_len;
	}
	return -EIO;
}

/* The attribute type of an answer's body (after a family message of
 * fixed size hdr), or NULL. */
static struct rtattr *emu_nl_attr(char *buf, size_t hdr, uint16_t type)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(hdr);
	struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdr));

	for (; len > 0 && RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == type)
			return a;
	return NULL;
}

/* The next hop towards ip through our interface into hop: 0, or
 * -ENETUNREACH (no route, or one through another interface). */
static int emu_kneigh_route(struct emu_dev *d, const union ibv_gid *ip, bool v4,
			    union ibv_gid *hop)
{
	struct emu_kneigh *k = d->kneigh;
	struct emu_nlreq r = { 0 };
	char buf[4096];
	char s[WIRE_GID_STRLEN];

	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(r.rt));
	r.h.nlmsg_type = RTM_GETROUTE;
	r.h.nlmsg_flags = NLM_F_REQUEST;
	r.rt.rtm_family = v4 ? AF_INET : AF_INET6;
	r.rt.rtm_dst_len = v4 ? 32 : 128;
	emu_nl_addr(&r, RTA_DST, ip, v4);
	/* a link-local peer (GID 0's fe80::) is on whichever link is named:
	 * ours. Anything else is looked up as the kernel routes it, so a peer
	 * behind another interface is seen as such. */
	if (!v4 && ip->raw[0] == 0xfe && (ip->raw[1] & 0xc0) == 0x80)
		emu_nl_put(&r, RTA_OIF, &k->ifindex, sizeof(k->ifindex));
	int n = emu_nl_call(k, &r, buf, sizeof(buf));
	if (n < 0) {
		EMU_LOG_RL(WARNING, "%s: no route to %s in the kernel's table: %s\n", d->name,
			   wire_gid_str((const struct wire_gid *)ip->raw, s, sizeof(s)), strerror(-n));
		return -ENETUNREACH;
	}
	struct rtattr *oif = emu_nl_attr(buf, sizeof(struct rtmsg), RTA_OIF);
	struct rtattr *gw = emu_nl_attr(buf, sizeof(struct rtmsg), RTA_GATEWAY);
	if (!oif || RTA_PAYLOAD(oif) < 4 || *(int *)RTA_DATA(oif) != k->ifindex) {
		EMU_LOG_RL(WARNING, "%s: %s is routed through another interface than %s: "
			   "not reachable from this port\n", d->name,
			   wire_gid_str((const struct wire_gid *)ip->raw, s, sizeof(s)), k->ifname);
		return -ENETUNREACH;
	}
	*hop = *ip;
	if (gw && RTA_PAYLOAD(gw) == (v4 ? 4u : 16u))
		memcpy(v4 ? hop->raw + 12 : hop->raw, RTA_DATA(gw), v4 ? 4 : 16);
	return 0;
}

/* Let the kernel resolve hop (as if it had a packet for it). */
static void emu_kneigh_use(struct emu_dev *d, const union ibv_gid *hop, bool v4)
{
	struct emu_kneigh *k = d->kneigh;
	struct emu_nlreq r = { 0 };
	char buf[4096];

	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(r.nd));
	r.h.nlmsg_type = RTM_NEWNEIGH;
	r.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK;
	r.nd.ndm_family = v4 ? AF_INET : AF_INET6;
	r.nd.ndm_ifindex = k->ifindex;
	r.nd.ndm_flags = NTF_USE;
	emu_nl_addr(&r, NDA_DST, hop, v4);
	int n = emu_nl_call(k, &r, buf, sizeof(buf));
	if (n < 0)
		EMU_LOG_RL(WARNING, "%s: kernel neighbour resolution on %s: %s\n", d->name,
			   k->ifname, strerror(-n));
}

int emu_kneigh_query(struct emu_dev *d, const union ibv_gid *ip, uint8_t mac[6])
{
	struct emu_kneigh *k = d->kneigh;
	bool v4 = !memcmp(ip->raw, (const uint8_t[12]){ [10] = 0xff, [11] = 0xff }, 12);
	union ibv_gid hop;
	struct emu_nlreq r = { 0 };
	char buf[4096];

	if (emu_kneigh_route(d, ip, v4, &hop))
		return -ENETUNREACH;
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(r.nd));
	r.h.nlmsg_type = RTM_GETNEIGH;
	r.h.nlmsg_flags = NLM_F_REQUEST;
	r.nd.ndm_family = v4 ? AF_INET : AF_INET6;
	r.nd.ndm_ifindex = k->ifindex;
	emu_nl_addr(&r, NDA_DST, &hop, v4);
	int n = emu_nl_call(k, &r, buf, sizeof(buf));
	const struct ndmsg *nd = NLMSG_DATA((struct nlmsghdr *)buf);
	struct rtattr *ll = n > 0 ? emu_nl_attr(buf, sizeof(*nd), NDA_LLADDR) : NULL;
	uint16_t ok = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT;
	if (ll && RTA_PAYLOAD(ll) == 6 && (nd->ndm_state & ok)) {
		memcpy(mac, RTA_DATA(ll), 6);
		/* a stale entry is used while the kernel confirms it, as the
		 * kernel's own output path does */
		if (nd->ndm_state & NUD_STALE)
			emu_kneigh_use(d, &hop, v4);
		return 0;
	}
	emu_kneigh_use(d, &hop, v4);
	return -EAGAIN;
}
