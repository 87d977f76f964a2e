/* SPDX-License-Identifier: MIT */
/* uroced: options, EAL arguments, device set-up, capture, signals and
 * orderly shutdown (rings marked dead, sockets closed, socket file
 * removed) around the engine loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon.h"
#include "sysfs.h"
#include "eal_check.h"
#include "pcapw.h"

struct emu_daemon *emu_ds[EMU_MAX_DEVS];
unsigned emu_nds;

static void emu_usage(FILE *f)
{
	fprintf(f,
		"usage: uroced [options] [--dev NAME[,key=value...] [device options]]...\n"
		"Device options (apply to the device named by the last --dev; before any\n"
		"--dev, to the first device):\n"
		"  --dev NAME[,port=P][,ip=A]...[,mac=M][,mtu=N][,pcap=F][,cpu=C][,shared=1]\n"
		"            [,dcqcn=on|off][,vlan=VID[:PCP]]\n"
		"                    a device (default one: uroce0); every further --dev adds\n"
		"                    one more, each with its own port and worker thread\n"
		"  --port PORT       DPDK port: a vdev (e.g. net_af_packet0,iface=veth0), a\n"
		"                    PCI address (0000:03:00.0), or link:NAME (two devices of\n"
		"                    this daemon naming the same link are wired back to back);\n"
		"                    default: a ring port looped back to itself\n"
		"  --vdev VDEV       same as --port\n"
		"  --ip ADDR         IPv4 or IPv6 address, repeatable (GID 1, 2, ...);\n"
		"                    default 127.0.0.1 on the loopback port\n"
		"  --mac MAC         port MAC (default 02:00:00:00:00:0<n> / the port's)\n"
		"  --mtu N           Ethernet MTU, 576..9216 (default 1500; 9000 on ring\n"
		"                    ports: active MTU 4096, 4x fewer packets)\n"
		"  --pcap FILE       capture every frame sent and received\n"
		"  --cpu N           pin the device's worker thread to CPU N\n"
		"  --shared          share an af_xdp port's interface with the kernel: only\n"
		"                    RoCEv2 (UDP 4791) comes to uroce, the interface's MAC,\n"
		"                    MTU and addresses are uroce's, the kernel keeps ARP,\n"
		"                    ND, ICMP and resolves neighbours (docs/running.md)\n"
		"  --mem-stall-ms N  an access to a client's memory blocked this long\n"
		"                    quarantines the client (default 2000, 0 = never)\n"
		"  --vlan VID[:PCP]  tag every frame with 802.1Q VLAN VID (1..4094), priority\n"
		"                    PCP (0..7, default 0); receive only that VLAN's frames\n"
		"  --dcqcn SPEC      congestion control (docs/dcqcn.md): on | off, or\n"
		"                    key=value,...: ect|np|rp=on|off and mlx5's parameters\n"
		"                    (rpg_time_reset=300,rpg_ai_rate=5,...); in --dev:\n"
		"                    dcqcn=on|off\n"
		"Daemon options:\n"
		"  --run-dir DIR     control socket directory (default $UROCE_RUN_DIR, else\n"
		"                    $XDG_RUNTIME_DIR/uroce, else /tmp/uroce-<euid>); it must be\n"
		"                    ours, not a symlink, not writable by others\n"
		"Access (default: only this uid and root may connect; docs/security.md):\n"
		"  --socket-group G  socket file group (name or gid); its members may connect\n"
		"  --socket-mode M   socket file mode, octal 0600..0666 (default 0600, or\n"
		"                    0660/0666 with the options below)\n"
		"  --allow-uid U     this user (name or uid) may connect, repeatable\n"
		"  --allow-gid G     members of this group may connect, repeatable\n"
		"  --privileged-uid U  this user's clients may use controlled Q_Keys and\n"
		"                    send to QP0/QP1, as with CAP_NET_RAW (repeatable)\n"
		"  --busy-poll       never sleep (benchmarks); default: adaptive (spin, yield, sleep)\n"
		"  --spin-us N       idle spin before sleeping (default 50)\n"
		"  --ack-hold-us N   hold a ping-pong message's ACK up to N us for the QP's\n"
		"                    reply, to leave in one burst with it (default 0: off;\n"
		"                    60 measured, docs/performance.md)\n"
		"  --mbufs N         mbufs in each of a device's pools (default 8191; what a\n"
		"                    port may hold in flight; memory-constrained hosts, tests)\n"
		"  --xdp-driver D    af_xdp ports through uroced's own AF_XDP socket (uroce,\n"
		"                    the default: every RX frame in the fill ring) or DPDK's\n"
		"                    af_xdp PMD (dpdk: 2048 frames, for comparison)\n"
		"  --no-zc           copy every payload into its frame (default: large pieces of\n"
		"                    mapped MRs leave without a copy on ring ports)\n"
		"  --eal \"ARGS\"      extra EAL arguments\n"
		"  --log-level L     DPDK log level (default notice)\n"
		"  --fault SPEC      on every device's RX:\n"
		"                    drop=P,dup=P,reorder=P,corrupt=P,ce=P,delay_us=N,seed=N,\n"
		"                    qp=QPN,opcode=N (only frames to that QP / of that opcode;\n"
		"                    ce: mark ECN-capable frames CE, as a congested switch)\n"
		"                    cm_drop=P: that fraction of CM MADs (QP1) lost each way\n"
		"  --limit T=N       objects one context may hold, T one of pd mr mw\n"
		"                    channel cq srq qp ah dm xrcd xqp (defaults: 1/16 of the device),\n"
		"                    or mem=BYTES[KMG]: queue and device memory (default 256M)\n"
		"  --uid-limit T=N   the same for all contexts of one uid (1/4 of the\n"
		"                    device, mem 1G), and T=ctx: contexts per uid (128)\n"
		"  --help\n"
		"SIGUSR1 dumps counters to the log (uroce-ctl counters reads them live;\n"
		"uroce-ctl also changes faults and capture at run time);\n"
		"SIGINT/SIGTERM stop.\n");
}

/* every worker sees the flags on its next loop (or wake-up) */
static void emu_sig(int sig)
{
	for (unsigned i = 0; i < emu_nds; i++) {
		if (sig == SIGUSR1)
			emu_ds[i]->dump = 1;
		else
			emu_ds[i]->stop = 1;
	}
}

static int emu_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	if (mac[0] & 1)
		return -1; /* multicast MAC */
	return 0;
}

static int emu_set_port(struct emu_opts *o, const char *v)
{
	if (!*v || strlen(v) >= sizeof(o->vdev) || (!strncmp(v, "link:", 5) && !v[5])) {
		fprintf(stderr, "uroced: %s: bad port '%s'\n", o->dev, v);
		return -1;
	}
	strcpy(o->vdev, v);
	return 0;
}

static int emu_set_ip(struct emu_opts *o, const char *v)
{
	struct wire_gid g;

	if (o->nips == UROCE_MAX_GIDS - 1 || !wire_gid_parse(&g, v)) {
		fprintf(stderr, "uroced: %s: bad ip '%s'\n", o->dev, v);
		return -1;
	}
	memcpy(o->ips[o->nips++].raw, g.raw, 16);
	return 0;
}

static int emu_set_mac(struct emu_opts *o, const char *v)
{
	if (emu_parse_mac(v, o->mac)) {
		fprintf(stderr, "uroced: %s: bad mac '%s'\n", o->dev, v);
		return -1;
	}
	o->mac_set = true;
	return 0;
}

static int emu_set_mtu(struct emu_opts *o, const char *v)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (*end || end == v || n < 576 || n > 9216) {
		fprintf(stderr, "uroced: %s: bad mtu '%s' (576..9216)\n", o->dev, v);
		return -1;
	}
	o->mtu = (uint32_t)n;
	return 0;
}

static int emu_set_pcap(struct emu_opts *o, const char *v)
{
	if (!*v || strlen(v) >= sizeof(o->pcap)) {
		fprintf(stderr, "uroced: %s: bad pcap '%s'\n", o->dev, v);
		return -1;
	}
	strcpy(o->pcap, v);
	return 0;
}

static int emu_set_dcqcn(struct emu_opts *o, const char *v)
{
	char err[128];

	if (emu_dcqcn_parse(&o->dcqcn, v, err, sizeof(err))) {
		fprintf(stderr, "uroced: %s: bad --dcqcn '%s': %s\n", o->dev, v, err);
		return -1;
	}
	return 0;
}

/* "VID[:PCP]" */
static int emu_set_vlan(struct emu_opts *o, const char *v)
{
	char *end;
	unsigned long vid = strtoul(v, &end, 10), pcp = 0;

	if (end != v && *end == ':') {
		const char *p = end + 1;
		pcp = strtoul(p, &end, 10);
		if (end == p)
			pcp = 8;
	}
	if (end == v || *end || vid < 1 || vid > 4094 || pcp > 7) {
		fprintf(stderr, "uroced: %s: bad vlan '%s' (VID 1..4094[:PCP 0..7])\n", o->dev, v);
		return -1;
	}
	o->vlan = true;
	o->vlan_tci = (uint16_t)(pcp << 13 | vid);
	return 0;
}

static int emu_set_cpu(struct emu_opts *o, const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (*end || end == v || n < 0 || n >= (ncpu > 0 ? ncpu : 1) || n >= CPU_SETSIZE) {
		fprintf(stderr, "uroced: %s: bad cpu '%s' (0..%ld)\n", o->dev, v, ncpu - 1);
		return -1;
	}
	o->cpu = (int)n;
	return 0;
}

/* "NAME[,key=value...]": the name, then per-device keys. */
static int emu_set_dev(struct emu_opts *o, const char *arg)
{
	char buf[1024];
	char *save = NULL, *t;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "uroced: --dev too long\n");
		return -1;
	}
	strcpy(buf, arg);
	char *name = buf, *rest = strchr(buf, ',');
	if (rest)
		*rest++ = 0;
	if (!*name || strlen(name) >= sizeof(o->dev) || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		fprintf(stderr, "uroced: bad --dev '%s'\n", name);
		return -1;
	}
	strcpy(o->dev, name);
	/* a vdev's own arguments have commas too: port= takes the rest up
	 * to the next key we know */
	for (t = rest ? strtok_r(rest, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		if (!eq) {
			fprintf(stderr, "uroced: %s: bad device key '%s'\n", o->dev, t);
			return -1;
		}
		*eq = 0;
		const char *k = t, *v = eq + 1;
		int rc;
		if (!strcmp(k, "port") || !strcmp(k, "vdev")) {
			char pv[600];
			snprintf(pv, sizeof(pv), "%s", v);
			/* swallow following "x=y" items that are not our keys */
			while (save && *save) {
				size_t n = strcspn(save, ",=");
				static const char *const ours[] = { "ip", "mac", "mtu", "pcap",
								    "cpu", "port", "vdev",
								    "shared", "dcqcn", "vlan" };
				bool mine = false;
				for (unsigned i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
					if (strlen(ours[i]) == n && !strncmp(save, ours[i], n))
						mine = true;
				if (mine)
					break;
				char *item = strtok_r(NULL, ",", &save);
				if (!item)
					break;
				size_t l = strlen(pv);
				snprintf(pv + l, sizeof(pv) - l, ",%s", item);
			}
			rc = emu_set_port(o, pv);
		} else if (!strcmp(k, "ip")) {
			rc = emu_set_ip(o, v);
		} else if (!strcmp(k, "mac")) {
			rc = emu_set_mac(o, v);
		} else if (!strcmp(k, "mtu")) {
			rc = emu_set_mtu(o, v);
		} else if (!strcmp(k, "pcap")) {
			rc = emu_set_pcap(o, v);
		} else if (!strcmp(k, "cpu")) {
			rc = emu_set_cpu(o, v);
		} else if (!strcmp(k, "shared") && (!strcmp(v, "1") || !strcmp(v, "0"))) {
			o->shared = v[0] == '1';
			rc = 0;
		} else if (!strcmp(k, "vlan")) {
			rc = emu_set_vlan(o, v);
		} else if (!strcmp(k, "dcqcn") && (!strcmp(v, "on") || !strcmp(v, "off"))) {
			rc = emu_set_dcqcn(o, v); /* key=value lists need --dcqcn */
		} else if (!strcmp(k, "dcqcn")) {
			fprintf(stderr, "uroced: %s: bad dcqcn '%s' (on, off; or --dcqcn)\n",
				o->dev, v);
			rc = -1;
		} else {
			fprintf(stderr, "uroced: %s: unknown device key '%s'\n", o->dev, k);
			rc = -1;
		}
		if (rc)
			return -1;
	}
	return 0;
}

static void emu_opts_default(struct emu_opts *o, unsigned idx)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->dev, sizeof(o->dev), "uroce%u", idx);
	o->cpu = -1;
	memcpy(o->mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, (uint8_t)(idx + 1) }, 6);
	emu_dcqcn_defaults(&o->dcqcn);
}

enum { O_DEV = 256, O_PORT, O_IP, O_MAC, O_MTU, O_RUNDIR, O_BUSY, O_EAL, O_PCAP,
       O_FAULT, O_SPIN, O_LOG, O_CPU, O_HELP, O_STALL,
       O_SOCK_GROUP, O_SOCK_MODE, O_ALLOW_UID, O_ALLOW_GID, O_LIMIT, O_UID_LIMIT, O_SHARED,
       O_DCQCN, O_NO_ZC, O_MBUFS, O_PRIV_UID, O_VLAN, O_ACK_HOLD, O_XDP_DRIVER };

static const struct option emu_long_opts[] = {
	{ "dev", required_argument, NULL, O_DEV },
	{ "port", required_argument, NULL, O_PORT },
	{ "vdev", required_argument, NULL, O_PORT },
	{ "ip", required_argument, NULL, O_IP },
	{ "mac", required_argument, NULL, O_MAC },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "run-dir", required_argument, NULL, O_RUNDIR },
	{ "busy-poll", no_argument, NULL, O_BUSY },
	{ "no-zc", no_argument, NULL, O_NO_ZC },
	{ "xdp-driver", required_argument, NULL, O_XDP_DRIVER },
	{ "spin-us", required_argument, NULL, O_SPIN },
	{ "ack-hold-us", required_argument, NULL, O_ACK_HOLD },
	{ "mbufs", required_argument, NULL, O_MBUFS },
	{ "eal", required_argument, NULL, O_EAL },
	{ "pcap", required_argument, NULL, O_PCAP },
	{ "fault", required_argument, NULL, O_FAULT },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "cpu", required_argument, NULL, O_CPU },
	{ "help", no_argument, NULL, O_HELP },
	{ "socket-group", required_argument, NULL, O_SOCK_GROUP },
	{ "socket-mode", required_argument, NULL, O_SOCK_MODE },
	{ "allow-uid", required_argument, NULL, O_ALLOW_UID },
	{ "allow-gid", required_argument, NULL, O_ALLOW_GID },
	{ "privileged-uid", required_argument, NULL, O_PRIV_UID },
	{ "mem-stall-ms", required_argument, NULL, O_STALL },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "uid-limit", required_argument, NULL, O_UID_LIMIT },
	{ "shared", no_argument, NULL, O_SHARED },
	{ "dcqcn", required_argument, NULL, O_DCQCN },
	{ "vlan", required_argument, NULL, O_VLAN },
	{ NULL, 0, NULL, 0 },
};

/* Options of the current device: 0, -1 after one error line, 1 not one */
static int emu_opt_device(struct emu_opts *o, int c, const char *v)
{
	switch (c) {
	case O_PORT: return emu_set_port(o, v);
	case O_IP: return emu_set_ip(o, v);
	case O_MAC: return emu_set_mac(o, v);
	case O_MTU: return emu_set_mtu(o, v);
	case O_PCAP: return emu_set_pcap(o, v);
	case O_CPU: return emu_set_cpu(o, v);
	case O_SHARED:
		o->shared = true;
		return 0;
	case O_DCQCN: return emu_set_dcqcn(o, v);
	case O_VLAN: return emu_set_vlan(o, v);
	default: return 1;
	}
}

static int emu_opt_ulong(const char *name, const char *v, unsigned long max, uint32_t *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (*end || end == v || n > max) {
		fprintf(stderr, "uroced: bad --%s '%s'\n", name, v);
		return -1;
	}
	*out = (uint32_t)n;
	return 0;
}


/* Options of every device (kept in g): 0, -1 after one error line, 1 not one */
static int emu_opt_global(struct emu_opts *g, int c, const char *v)
{
	switch (c) {
	case O_LIMIT:
	case O_UID_LIMIT:
		if (emu_limit_set(v, c == O_UID_LIMIT)) {
			fprintf(stderr, "uroced: bad --%s '%s'\n",
				c == O_LIMIT ? "limit" : "uid-limit", v);
			return -1;
		}
		return 0;
	case O_SPIN: return emu_opt_ulong("spin-us", v, 1000000, &g->spin_us);
	/* at most 200 us: below the peer's 250 us minimum loss probe */
	case O_ACK_HOLD: return emu_opt_ulong("ack-hold-us", v, 200, &g->ack_hold_us);
	case O_MBUFS:
		if (emu_opt_ulong("mbufs", v, 1u << 20, &g->nb_mbuf))
			return -1;
		if (g->nb_mbuf < EMU_MIN_MBUF) {
			fprintf(stderr, "uroced: --mbufs %u: at least %u\n", g->nb_mbuf,
				EMU_MIN_MBUF);
			return -1;
		}
		return 0;
	case O_STALL: return emu_opt_ulong("mem-stall-ms", v, 3600000, &g->mem_stall_ms);
	case O_RUNDIR:
		if (!*v || strlen(v) >= 100) {
			fprintf(stderr, "uroced: bad --run-dir\n");
			return -1;
		}
		strcpy(g->run_dir, v);
		return 0;
	case O_BUSY:
		g->busy_poll = true;
		return 0;
	case O_NO_ZC:
		g->no_zc = true;
		return 0;
	case O_XDP_DRIVER:
		if (strcmp(v, "uroce") && strcmp(v, "dpdk")) {
			fprintf(stderr, "uroced: bad --xdp-driver '%s' (uroce or dpdk)\n", v);
			return -1;
		}
		g->xdp_dpdk = !strcmp(v, "dpdk");
		return 0;
	case O_EAL:
		if (strlen(v) >= sizeof(g->eal)) {
			fprintf(stderr, "uroced: --eal too long\n");
			return -1;
		}
		strcpy(g->eal, v);
		return 0;
	case O_FAULT:
		if (emu_fault_parse(v, &g->fault)) {
			fprintf(stderr, "uroced: bad --fault '%s'\n", v);
			return -1;
		}
		g->fault_set = true;
		return 0;
	case O_LOG:
		if (strlen(v) >= sizeof(g->log_level)) {
			fprintf(stderr, "uroced: bad --log-level\n");
			return -1;
		}
		strcpy(g->log_level, v);
		return 0;
	case O_HELP:
		emu_usage(stdout);
		exit(0);
	case O_SOCK_GROUP:
	case O_SOCK_MODE:
	case O_ALLOW_UID:
	case O_ALLOW_GID:
	case O_PRIV_UID:
		return emu_access_opt(&g->acc, c == O_SOCK_GROUP ? EMU_ACC_SOCKET_GROUP :
				      c == O_SOCK_MODE ? EMU_ACC_SOCKET_MODE :
				      c == O_ALLOW_UID ? EMU_ACC_ALLOW_UID :
				      c == O_PRIV_UID ? EMU_ACC_PRIV_UID : EMU_ACC_ALLOW_GID,
				      v) ? -1 : 0;
	default: return 1;
	}
}

/* the global options into device o, and its defaults that depend on them */
static int emu_opts_complete(struct emu_opts *o, const struct emu_opts *g)
{
	bool ring = !o->vdev[0] || !strncmp(o->vdev, "link:", 5);

	strcpy(o->run_dir, g->run_dir);
	o->acc = g->acc;
	strcpy(o->eal, g->eal);
	strcpy(o->log_level, g->log_level);
	o->busy_poll = g->busy_poll;
	o->no_zc = g->no_zc;
	o->xdp_dpdk = g->xdp_dpdk;
	o->spin_us = g->spin_us;
	o->ack_hold_us = g->ack_hold_us;
	o->nb_mbuf = g->nb_mbuf;
	o->mem_stall_ms = g->mem_stall_ms;
	o->fault_set = g->fault_set;
	o->fault = g->fault;
	if (o->shared && o->vlan) {
		fprintf(stderr, "uroced: %s: --vlan with --shared: the VLAN is the kernel's "
			"(give --shared a VLAN interface)\n", o->dev);
		return -1;
	}
	/* before the defaults: the interface decides MTU and addresses */
	if (o->shared && emu_shared_opts(o))
		return -1;
	if (!o->mtu) {
		/* ring ports never meet a real link, so nothing limits
		 * them to 1500: jumbo frames give active MTU 4096 and a
		 * quarter of the per-packet work (docs/performance.md) */
		o->mtu = ring ? 9000 : 1500;
	}
	if (o->nips == 0 && !o->vdev[0]) {
		/* the loopback port never leaves the process: a
		 * loopback-range address is honest and collides with
		 * nothing */
		uint8_t v4[4] = { 127, 0, 0, 1 };
		wire_gid_from_ipv4((struct wire_gid *)o->ips[0].raw, v4);
		o->nips = 1;
	}
	if (o->nips == 0 && !strncmp(o->vdev, "link:", 5)) {
		fprintf(stderr, "uroced: %s: a link port needs --ip\n", o->dev);
		return -1;
	}
	return 0;
}

/* device i against the others: names, ports and capture files not shared,
 * a link:NAME port on exactly two devices */
static int emu_opts_conflicts(const struct emu_opts *os, unsigned i, unsigned n)
{
	const struct emu_opts *o = &os[i];

	for (unsigned j = 0; j < i; j++) {
		if (!strcmp(os[j].dev, o->dev)) {
			fprintf(stderr, "uroced: device '%s' given twice\n", o->dev);
			return -1;
		}
		if (o->vdev[0] && strncmp(o->vdev, "link:", 5) &&
		    !strcmp(os[j].vdev, o->vdev)) {
			fprintf(stderr, "uroced: port '%s' used by two devices\n", o->vdev);
			return -1;
		}
		if (o->pcap[0] && !strcmp(os[j].pcap, o->pcap)) {
			fprintf(stderr, "uroced: pcap file '%s' used by two devices\n",
				o->pcap);
			return -1;
		}
	}
	if (!strncmp(o->vdev, "link:", 5)) {
		unsigned peers = 0;
		for (unsigned j = 0; j < n; j++)
			peers += !strcmp(os[j].vdev, o->vdev);
		if (peers != 2) {
			fprintf(stderr, "uroced: %s needs exactly two devices (has %u)\n",
				o->vdev, peers);
			return -1;
		}
	}
	return 0;
}

/* Fills os[0..*n): per-device options, with the global ones in each. */
static int emu_opts_parse(struct emu_opts *os, unsigned *ndev, int argc, char **argv)
{
	struct emu_opts g; /* global options */
	unsigned n = 1;
	bool named = false;
	int c;

	emu_opts_default(&g, 0);
	g.spin_us = 50;
	g.ack_hold_us = 0;
	g.nb_mbuf = EMU_NB_MBUF;
	/* not 100: a thread of the client holding its mmap lock while preempted
	 * on a loaded machine (or a huge-page compaction) legitimately blocks
	 * a read for hundreds of ms; a real stall (FUSE, a hung device) blocks
	 * for ever, so a longer bound only delays the hand-over */
	g.mem_stall_ms = 2000;
	strcpy(g.log_level, "notice");
	if (uroce_run_dir(g.run_dir, sizeof(g.run_dir))) {
		fprintf(stderr, "uroced: run directory name too long\n");
		return -1;
	}
	emu_opts_default(&os[0], 0);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", emu_long_opts, NULL)) != -1) {
		struct emu_opts *o = &os[n - 1];
		int rc;
		if (c == O_DEV) {
			/* the first --dev names the device the options so far
			 * were for; every later one adds a device */
			if (named) {
				if (n == EMU_MAX_DEVS) {
					fprintf(stderr, "uroced: at most %d devices\n", EMU_MAX_DEVS);
					return -1;
				}
				o = &os[n];
				emu_opts_default(o, n++);
			}
			named = true;
			rc = emu_set_dev(o, optarg);
		} else {
			rc = emu_opt_device(o, c, optarg);
			if (rc > 0)
				rc = emu_opt_global(&g, c, optarg);
		}
		if (rc > 0) {
			if (optopt)
				fprintf(stderr, "uroced: bad option '-%c' (see --help)\n", optopt);
			else
				fprintf(stderr, "uroced: bad option '%s' (see --help)\n", argv[optind - 1]);
		}
		if (rc)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "uroced: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (emu_opts_complete(&os[i], &g) || emu_opts_conflicts(os, i, n))
			return -1;
	/* after the conflict checks: it adds derived arguments to the ports */
	for (unsigned i = 0; i < n; i++)
		if (emu_port_param(&os[i]))
			return -1;
	*ndev = n;
	return 0;
}

/* "0000:03:00.0" or "03:00.0" is a PCI NIC (allow-listed), anything
 * else a virtual device */
static bool emu_eal_pci(const struct emu_opts *os, unsigned ndev)
{
	bool pci = false;

	for (unsigned i = 0; i < ndev; i++)
		pci |= emu_is_pci(os[i].vdev);
	return pci;
}

/* EAL's memory (-m): the mbuf pools and 128 MB besides */
static unsigned emu_eal_mb(const struct emu_opts *os, unsigned ndev)
{
	unsigned mb = 128;

	for (unsigned i = 0; i < ndev; i++)
		mb += os[i].pool_mb;
	return mb;
}

/* hugepages: asked for (--eal --huge-dir), or a PCI port and not refused
 * (--eal --no-huge: vfio-pci with an IOMMU can do without) */
static bool emu_eal_huge(const struct emu_opts *os, unsigned ndev)
{
	if (strstr(os[0].eal, "--huge-dir"))
		return true;
	return emu_eal_pci(os, ndev) && !strstr(os[0].eal, "--no-huge");
}

/* argv for rte_eal_init: the global options are the same in every os[] */
static int emu_eal_args(struct emu_opts *os, unsigned ndev, char **av, int max, char *buf,
			size_t bufsz)
{
	int n = 0;
	size_t used = 0;
#define ADD(s) do { \
		size_t l_ = strlen(s) + 1; \
		if (n >= max - 1 || used + l_ > bufsz) return -1; \
		memcpy(buf + used, s, l_); av[n++] = buf + used; used += l_; \
	} while (0)
	char tmp[600];
	bool pci = emu_eal_pci(os, ndev);
	unsigned mb = emu_eal_mb(os, ndev);

	ADD("uroced");
	/* no hugepages, no PCI scan, no shared config, a private file prefix
	 * and no telemetry socket: any user, any number of daemons at once.
	 * A PCI NIC gets hugepages (its DMA needs memory the kernel will not
	 * move), unlinked at once so that a killed daemon leaves none behind */
	if (!emu_eal_huge(os, ndev))
		ADD("--no-huge");
	else if (!strstr(os[0].eal, "--huge-unlink") && !strstr(os[0].eal, "--in-memory"))
		ADD("--huge-unlink");
	if (!pci)
		ADD("--no-pci");
	ADD("--no-shconf");
	ADD("--no-telemetry");
	ADD("-m");
	snprintf(tmp, sizeof(tmp), "%u", mb);
	ADD(tmp);
	/* ports that never DMA; a PCI NIC's IOVA mode is EAL's choice: physical
	 * addresses for UIO, virtual ones for vfio-pci behind an IOMMU */
	if (!pci)
		ADD("--iova-mode=va");
	ADD("-l");
	ADD("0");
	snprintf(tmp, sizeof(tmp), "--file-prefix=uroce%d", (int)getpid());
	ADD(tmp);
	snprintf(tmp, sizeof(tmp), "--log-level=%s", os[0].log_level);
	ADD(tmp);
	for (unsigned i = 0; i < ndev; i++) {
		const char *v = os[i].vdev;
		/* ring ports and af_xdp on our own socket: no vdev */
		if (!v[0] || !strncmp(v, "link:", 5) || os[i].xsk)
			continue;
		snprintf(tmp, sizeof(tmp), emu_is_pci(v) ? "--allow=%s" : "--vdev=%s", v);
		ADD(tmp);
	}
	if (os[0].eal[0]) {
		char *save = NULL;
		char copy[sizeof(os[0].eal)];
		strcpy(copy, os[0].eal);
		for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
			ADD(t);
	}
	av[n] = NULL;
	return n;
#undef ADD
}

/* One device up to serving: port, device, fault injection, capture,
 * control socket. 0, or -1 after one error line. */
static int emu_daemon_setup(struct emu_daemon *dm)
{
	/* the port layer does not see the other devices: tell it which end
	 * of a link:NAME pair this one is */
	for (unsigned i = 0; i < dm->index; i++)
		if (!strcmp(emu_ds[i]->o.vdev, dm->o.vdev))
			dm->link_second = true;
	if (emu_port_init(dm))
		return -1;
	int rc = emu_dev_init(&dm->dev, dm->o.dev, dm->o.mac, dm->o.mtu, dm->o.ips, dm->o.nips);
	if (rc) {
		fprintf(stderr, "uroced: %s: device init: %s\n", dm->o.dev, strerror(-rc));
		return -1;
	}
	emu_port_attach(dm);
	emu_nic_attach(dm);
	if (emu_shared_attach(dm))
		return -1;
	dm->dev.x->dcqcn = dm->o.dcqcn;
	emu_xport_ack_hold_set(&dm->dev, dm->o.ack_hold_us * 1000);
	if (dm->o.fault_set) {
		dm->dev.fault = emu_fault_new(&dm->o.fault);
		if (!dm->dev.fault) {
			fprintf(stderr, "uroced: %s: fault injection: out of memory\n", dm->o.dev);
			return -1;
		}
	}
	if (dm->o.pcap[0]) {
		struct pcapw *w;
		rc = pcapw_open(&w, dm->o.pcap, PCAPW_NSEC);
		if (rc) {
			fprintf(stderr, "uroced: %s: pcap %s: %s\n", dm->o.dev, dm->o.pcap,
				strerror(-rc));
			return -1;
		}
		dm->pcap = w;
		dm->dev.capture = emu_capture;
		dm->dev.capture_priv = w;
	}
	dm->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dm->epfd < 0 || emu_ctl_open(dm)) {
		fprintf(stderr, "uroced: %s: control socket in %s failed (see the log)\n",
			dm->o.dev, dm->o.run_dir);
		return -1;
	}
	(void)emu_port_wake_arm(dm);
	/* after the socket: the run directory is checked private by now (and
	 * the name is ours). Not fatal: verbs work without it, only system
	 * probes miss the device */
	rc = emu_sysfs_write(dm->o.run_dir, &dm->dev);
	if (rc)
		EMU_LOG(WARNING, "%s: sysfs tree in %s: %s\n", dm->o.dev, dm->o.run_dir,
			strerror(-rc));
	char gbuf[WIRE_GID_STRLEN];
	for (uint32_t i = 0; i < dm->dev.gid_count; i++)
		EMU_LOG(NOTICE, "%s: gid %u %s\n", dm->dev.name, i,
			wire_gid_str((const struct wire_gid *)dm->dev.gids[i].raw, gbuf, sizeof(gbuf)));
	EMU_LOG(NOTICE, "%s: mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u active mtu %u%s\n",
		dm->dev.name, dm->dev.mac[0], dm->dev.mac[1], dm->dev.mac[2], dm->dev.mac[3],
		dm->dev.mac[4], dm->dev.mac[5], dm->o.mtu, 128u << dm->dev.active_mtu,
		dm->dev.loopback ? " (loopback)" : "");
	EMU_LOG(NOTICE, "%s: dcqcn ect %s np %s rp %s, line rate %u Mb/s\n", dm->dev.name,
		dm->dev.x->dcqcn.ect ? "on" : "off", dm->dev.x->dcqcn.np ? "on" : "off",
		dm->dev.x->dcqcn.rp ? "on" : "off", emu_dcqcn_line_mbps(&dm->dev.x->dcqcn));
	return 0;
}

/* ICRC work on ports that never leave the daemon (docs/performance.md):
 * a sender skips it unless its own capture or the receiving device's
 * capture or fault injection needs a valid ICRC; a receiver skips the
 * check unless it injects faults (a corrupted frame must be caught). The
 * receiver of a loopback port is itself; of link:NAME, the other end. */
static void emu_icrc_plan(void)
{
	for (unsigned i = 0; i < emu_nds; i++) {
		struct emu_daemon *dm = emu_ds[i], *peer = NULL;

		if (!dm->o.vdev[0])
			peer = dm;
		else if (!strncmp(dm->o.vdev, "link:", 5))
			for (unsigned k = 0; k < emu_nds; k++)
				if (k != i && !strcmp(emu_ds[k]->o.vdev, dm->o.vdev))
					peer = emu_ds[k];
		dm->icrc_peer = peer;
	}
	for (unsigned i = 0; i < emu_nds; i++)
		emu_icrc_update(emu_ds[i]);
}

static void emu_daemon_teardown(struct emu_daemon *dm, bool served)
{
	if (served) {
		EMU_LOG(NOTICE, "%s: stopping\n", dm->dev.name);
		emu_stats_dump(&dm->dev);
		emu_ctl_mark_dead(dm);
	}
	/* the name is ours while our socket is (a failed start of a second
	 * daemon for the name must not remove the first one's tree) */
	if (dm->listen_fd >= 0)
		emu_sysfs_remove(dm->o.run_dir, dm->o.dev);
	emu_ctl_close(dm);
	emu_shared_detach(dm);
	emu_dev_fini(&dm->dev);
	if (dm->pcap)
		pcapw_close(dm->pcap);
	dm->pcap = NULL;
	if (dm->epfd >= 0)
		close(dm->epfd);
	dm->epfd = -1;
	emu_nic_fini(dm);
	emu_port_fini(dm);
	if (dm->pci_lock_fd >= 0)
		close(dm->pci_lock_fd);
	dm->pci_lock_fd = -1;
}

static void *emu_worker(void *arg)
{
	struct emu_daemon *dm = arg;
	struct emu_mem_guard *g = &dm->worker->guard;

	__atomic_store_n(&g->tid, (pid_t)gettid(), __ATOMIC_RELEASE);
	emu_mem_guard_set(&dm->dev, g);
	emu_port_thread_init();
	if (dm->o.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(dm->o.cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			EMU_LOG(WARNING, "%s: cannot pin to cpu %d\n", dm->o.dev, dm->o.cpu);
	}
	if (dm->adopt)
		emu_engine_adopt(dm);
	emu_engine_run(dm);
	return NULL;
}

/* Blocked in the kernel (S/D), as opposed to runnable but not scheduled:
 * on a loaded machine a healthy access can take long without blocking. */
static bool emu_thread_blocked(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

/* Start (or restart) the engine thread of dm with a fresh worker (guard,
 * RX burst, linearisation buffer). */
static int emu_engine_start(struct emu_daemon *dm, pthread_t *th)
{
	struct emu_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return ENOMEM;
	struct emu_worker *old = dm->worker;
	dm->worker = w;
	int e = pthread_create(th, NULL, emu_worker, dm);
	if (e) {
		dm->worker = old;
		free(w);
	}
	return e;
}

/* The main thread's job while the engines run: an engine whose access to
 * one client's memory has blocked longer than --mem-stall-ms (the token
 * unchanged, the thread asleep in the kernel) is abandoned and a fresh
 * engine thread takes over its device (docs/security.md). */
/* Guards of abandoned engine threads: a thread looks at its guard when its
 * blocked call returns, whenever that is, so they live as long as we do. */
static struct emu_mem_guard *emu_abandoned;

static void emu_watchdog(pthread_t *th)
{
	uint64_t last[EMU_MAX_DEVS] = { 0 }, seen[EMU_MAX_DEVS] = { 0 };
	uint32_t tick_ms = 50;

	for (unsigned i = 0; i < emu_nds; i++)
		if (emu_ds[i]->o.mem_stall_ms && emu_ds[i]->o.mem_stall_ms / 4 < tick_ms)
			tick_ms = emu_ds[i]->o.mem_stall_ms / 4 ? emu_ds[i]->o.mem_stall_ms / 4 : 1;
	while (!emu_ds[0]->stop) {
		struct timespec ts = { tick_ms / 1000, (long)(tick_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		uint64_t now = emu_now_ns();
		for (unsigned i = 0; i < emu_nds; i++) {
			struct emu_daemon *dm = emu_ds[i];
			struct emu_mem_guard *g = &dm->worker->guard;
			uint64_t t = __atomic_load_n(&g->token, __ATOMIC_ACQUIRE);

			if (!dm->o.mem_stall_ms || !t || t == EMU_MEM_ABANDONED) {
				last[i] = 0;
				continue;
			}
			if (t != last[i]) {
				last[i] = t;
				seen[i] = now;
				continue;
			}
			if (now - seen[i] < (uint64_t)dm->o.mem_stall_ms * 1000000 ||
			    !emu_thread_blocked(__atomic_load_n(&g->tid, __ATOMIC_ACQUIRE)) ||
			    !emu_mem_guard_abandon(g, t))
				continue;
			last[i] = 0;
			pthread_detach(th[i]);
			g->next = emu_abandoned;
			emu_abandoned = g;
			dm->adopt = g;
			int e = emu_engine_start(dm, &th[i]);
			if (e) {
				EMU_LOG(ERR, "%s: no new engine thread: %s\n", dm->o.dev, strerror(e));
				emu_sig(SIGTERM);
				return;
			}
		}
	}
}

int main(int argc, char **argv)
{
	static struct emu_opts os[EMU_MAX_DEVS];
	static char eal_buf[8192];
	char *eal_av[96];
	unsigned ndev = 0;
	int ret = 0;

	if (emu_opts_parse(os, &ndev, argc, argv))
		return 2;
	/* before anything else: a squatted run directory is a bad option */
	if (emu_run_dir_prepare(os[0].run_dir, emu_access_shared(&os[0].acc)))
		return 2;
	int eal_ac = emu_eal_args(os, ndev, eal_av, 96, eal_buf, sizeof(eal_buf));
	if (eal_ac < 0) {
		fprintf(stderr, "uroced: EAL arguments too long\n");
		return 2;
	}
	/* a missing driver plugin named as the package to install, not as
	 * EAL's parse error */
	for (unsigned i = 0; i < ndev; i++)
		if (emu_eal_check(os[i].dev, os[i].xsk ? "" : os[i].vdev, os[0].eal))
			return 1;
	for (unsigned i = 0; i < ndev; i++) {
		/* large (the device and its tables): not on any stack */
		struct emu_daemon *dm = calloc(1, sizeof(*dm));
		if (!dm) {
			fprintf(stderr, "uroced: out of memory\n");
			return 1;
		}
		dm->o = os[i];
		dm->index = i;
		dm->listen_fd = -1;
		dm->epfd = -1;
		dm->pci_lock_fd = -1;
		emu_ds[emu_nds++] = dm;
	}
	/* a PCI device that cannot be used: one line now, not EAL's */
	for (unsigned i = 0; i < ndev; i++)
		if (emu_pci_check(&os[i], emu_eal_huge(os, ndev), emu_eal_mb(os, ndev),
				  &emu_ds[i]->pci_lock_fd))
			return 1;

	struct sigaction sa = { .sa_handler = emu_sig };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (emu_eal_init(eal_ac, eal_av, os[0].run_dir))
		return 1;
	unsigned up = 0;
	for (; up < emu_nds; up++)
		if (emu_daemon_setup(emu_ds[up]))
			break;
	if (up < emu_nds) {
		for (unsigned i = 0; i <= up; i++)
			emu_daemon_teardown(emu_ds[i], false);
		emu_eal_fini();
		return 1;
	}
	emu_icrc_plan();

	{
		/* one worker per device; nothing mutable is shared between them
		 * (each has its port, mbuf pool, contexts, QPs and tables); the
		 * main thread watches them (emu_watchdog) */
		pthread_t th[EMU_MAX_DEVS];
		unsigned started = 0;
		for (; started < emu_nds; started++) {
			int e = emu_engine_start(emu_ds[started], &th[started]);
			if (e) {
				EMU_LOG(ERR, "worker thread: %s\n", strerror(e));
				emu_sig(SIGTERM);
				ret = 1;
				break;
			}
		}
		if (started == emu_nds)
			emu_watchdog(th);
		for (unsigned i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		for (unsigned i = 0; i < started; i++) {
			/* teardown runs on this thread: no guard, no burst */
			emu_mem_guard_set(&emu_ds[i]->dev, NULL);
			free(emu_ds[i]->worker);
		}
	}
	for (unsigned i = 0; i < emu_nds; i++)
		emu_daemon_teardown(emu_ds[i], true);
	emu_eal_fini();
	/* a stop signal that comes now (a second SIGTERM while LeakSanitizer
	 * scans at exit, which can take long) has nothing left to stop, and
	 * its handler must not write into the daemons freed below: ignored
	 * (under ASan the write was a use-after-free report that deadlocked
	 * against the leak scan's stopped world: basic-daemon_stop hung) */
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &ign, NULL);
	sigaction(SIGUSR1, &ign, NULL);
	unsigned n = emu_nds;
	__atomic_store_n(&emu_nds, 0, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < n; i++) {
		free(emu_ds[i]);
		emu_ds[i] = NULL;
	}
	return ret;
}
