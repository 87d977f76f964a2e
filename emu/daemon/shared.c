/* SPDX-License-Identifier: MIT */
/* Shared mode (--shared): an af_xdp port on an interface the host keeps
 * using. Our XDP program (xdp/roce_steer.bpf.c) sends only RoCEv2 to
 * uroced and everything else to the kernel, so the kernel goes on
 * answering ARP, ND and ICMP and carrying the host's TCP; uroce takes the
 * interface's MAC, MTU and addresses as its own (GID 1.. are the
 * interface's IPv4 then IPv6 addresses, GID 0 the fe80:: of the MAC as
 * rxe builds it) and resolves peers through the kernel's tables
 * (net/kneigh.c). docs/running.md, "Sharing a NIC with the host". */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

/* the value of ",key=" in the port's arguments into out: true if there
 * and it fits */
static bool emu_vdev_str(const char *vdev, const char *key, char *out, size_t sz)
{
	const char *v = emu_vdev_arg(vdev, key);
	size_t n = v ? strcspn(v, ",") : 0;

	if (!v || n >= sz)
		return false; /* a cut name could be another interface's */
	memcpy(out, v, n);
	out[n] = 0;
	return true;
}

/* The XDP object next to our executable (the build tree), else where
 * meson installs it. */
int emu_xdp_prog_path(const struct emu_opts *o, char *out, size_t sz)
{
#ifdef EMU_XDP_PROG_INSTALL
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash && (size_t)snprintf(out, sz, "%.*s/uroce_xdp.o", (int)(slash - exe), exe) < sz &&
		    access(out, R_OK) == 0)
			return 0;
	}
	if (access(EMU_XDP_PROG_INSTALL, R_OK) == 0 && strlen(EMU_XDP_PROG_INSTALL) < sz) {
		strcpy(out, EMU_XDP_PROG_INSTALL);
		return 0;
	}
	fprintf(stderr, "uroced: %s: --shared: the XDP program is not installed (%s)\n", o->dev,
		EMU_XDP_PROG_INSTALL);
#else
	(void)out;
	(void)sz;
	fprintf(stderr, "uroced: %s: --shared is not available: uroced was built without its "
		"XDP program (needs clang and libbpf-dev)\n", o->dev);
#endif
	return -1;
}

static int emu_if_mtu(const char *ifname, uint32_t *mtu)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -1;
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
	int rc = ioctl(fd, SIOCGIFMTU, &ifr);
	close(fd);
	if (rc || ifr.ifr_mtu <= 0)
		return -1;
	*mtu = (uint32_t)ifr.ifr_mtu;
	return 0;
}

/* The interface's IPv4 addresses, then its IPv6 ones but link-local
 * (GID 0 is that), as GIDs: their number, or -1. */
static int emu_if_gids(const char *ifname, union ibv_gid *g, unsigned max)
{
	struct ifaddrs *ifa;
	unsigned n = 0;

	if (getifaddrs(&ifa))
		return -1;
	for (int fam = 0; fam < 2; fam++) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || strcmp(i->ifa_name, ifname) || n == max)
				continue;
			if (fam == 0 && i->ifa_addr->sa_family == AF_INET) {
				const struct sockaddr_in *s = (const void *)i->ifa_addr;
				wire_gid_from_ipv4((struct wire_gid *)g[n++].raw,
						   (const uint8_t *)&s->sin_addr);
			} else if (fam == 1 && i->ifa_addr->sa_family == AF_INET6) {
				const struct sockaddr_in6 *s = (const void *)i->ifa_addr;
				if (!IN6_IS_ADDR_LINKLOCAL(&s->sin6_addr))
					memcpy(g[n++].raw, &s->sin6_addr, 16);
			}
		}
	}
	freeifaddrs(ifa);
	return (int)n;
}

/* uroce's addresses are the interface's: all of them by default; given
 * with --ip, each must be one of them */
static int emu_shared_ips(struct emu_opts *o, const char *ifname)
{
	union ibv_gid have[UROCE_MAX_GIDS - 1];
	int n = emu_if_gids(ifname, have, UROCE_MAX_GIDS - 1);

	if (n <= 0) {
		fprintf(stderr, "uroced: %s: --shared: %s has no IPv4 or IPv6 address (give it one: "
			"ip addr add ... dev %s)\n", o->dev, ifname, ifname);
		return -1;
	}
	if (o->nips == 0) {
		memcpy(o->ips, have, sizeof(have[0]) * (unsigned)n);
		o->nips = (uint32_t)n;
		return 0;
	}
	for (uint32_t i = 0; i < o->nips; i++) {
		bool found = false;
		for (int j = 0; j < n; j++)
			found |= !memcmp(o->ips[i].raw, have[j].raw, 16);
		if (!found) {
			char s[WIRE_GID_STRLEN];
			fprintf(stderr, "uroced: %s: --shared: %s is not an address of %s (uroce uses "
				"the kernel's addresses)\n", o->dev,
				wire_gid_str((const struct wire_gid *)o->ips[i].raw, s, sizeof(s)),
				ifname);
			return -1;
		}
	}
	return 0;
}

int emu_shared_opts(struct emu_opts *o)
{
	char ifname[IF_NAMESIZE], prog[PATH_MAX];
	uint32_t mtu;

	if (strncmp(o->vdev, "net_af_xdp", 10) && strncmp(o->vdev, "eth_af_xdp", 10)) {
		fprintf(stderr, "uroced: %s: --shared needs an af_xdp port "
			"(--port net_af_xdp0,iface=IF)\n", o->dev);
		return -1;
	}
	char raw[sizeof(o->vdev)] = "";
	if (!emu_vdev_str(o->vdev, "iface", raw, sizeof(raw)) || strlen(raw) >= sizeof(ifname) ||
	    !if_nametoindex(raw)) {
		fprintf(stderr, "uroced: %s: --shared: no interface '%s'\n", o->dev, raw);
		return -1;
	}
	strcpy(ifname, raw);
	if (o->mac_set) {
		fprintf(stderr, "uroced: %s: --shared uses %s's own MAC: no --mac\n", o->dev, ifname);
		return -1;
	}
	if (emu_if_mtu(ifname, &mtu)) {
		fprintf(stderr, "uroced: %s: --shared: cannot read %s's MTU\n", o->dev, ifname);
		return -1;
	}
	/* the interface's MTU is the host's: never changed under it */
	if (o->mtu && o->mtu != mtu) {
		fprintf(stderr, "uroced: %s: --shared: --mtu %u is not %s's MTU %u (set the "
			"interface's: ip link set %s mtu %u)\n", o->dev, o->mtu, ifname, mtu, ifname,
			o->mtu);
		return -1;
	}
	o->mtu = mtu;
	if (emu_shared_ips(o, ifname))
		return -1;
	strcpy(o->iface, ifname); /* both IF_NAMESIZE */
	/* a program of the user's own (xdp_prog= given) is kept */
	if (emu_vdev_str(o->vdev, "xdp_prog", prog, sizeof(prog)))
		return 0;
	if (emu_xdp_prog_path(o, prog, sizeof(prog)))
		return -1;
	size_t l = strlen(o->vdev);
	if ((size_t)snprintf(o->vdev + l, sizeof(o->vdev) - l, ",xdp_prog=%s", prog) >=
	    sizeof(o->vdev) - l) {
		o->vdev[l] = 0;
		fprintf(stderr, "uroced: %s: port arguments too long\n", o->dev);
		return -1;
	}
	return 0;
}

/* Frames that are not RoCE reach us only if the XDP program was not ours
 * (xdp_prog= of the user's): the kernel answers them, never we. */
static void emu_shared_l2(struct emu_dev *d, const uint8_t *frame, uint32_t len)
{
	(void)frame;
	(void)len;
	d->cnt.drops[EMU_DROP_NOT_ROCE]++;
}

int emu_shared_attach(struct emu_daemon *dm)
{
	if (!dm->o.shared)
		return 0;
	int rc = emu_kneigh_open(&dm->dev, dm->o.iface);
	if (rc) {
		fprintf(stderr, "uroced: %s: rtnetlink on %s: %s\n", dm->o.dev, dm->o.iface,
			strerror(-rc));
		return -1;
	}
	dm->dev.l2_hook = emu_shared_l2;
	EMU_LOG(NOTICE, "%s: shared with the kernel on %s: only RoCEv2 (UDP 4791) comes to "
		"uroce, neighbours from the kernel's table\n", dm->o.dev, dm->o.iface);
	return 0;
}

void emu_shared_detach(struct emu_daemon *dm)
{
	emu_kneigh_close(&dm->dev);
}
