/* SPDX-License-Identifier: MIT */
/* uroced: options, EAL arguments, device set-up, capture, signals and
 * orderly shutdown (rings marked dead, sockets closed, socket file
 * removed) around the engine loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon.h"
#ifdef EMU_HAVE_PCAPW
#include "pcapw.h"
#endif

struct emu_daemon emu_d;

static void emu_usage(FILE *f)
{
	fprintf(f,
		"usage: uroced [options]\n"
		"  --dev NAME        device name (default uroce0)\n"
		"  --port PORT       DPDK port: a vdev (e.g. net_af_packet0,iface=veth0) or a\n"
		"                    PCI address (0000:03:00.0);\n"
		"                    default: a ring port looped back to itself\n"
		"  --vdev VDEV       same as --port\n"
		"  --ip ADDR         IPv4 or IPv6 address, repeatable (GID 1, 2, ...);\n"
		"                    default 127.0.0.1 on the loopback port\n"
		"  --mac MAC         port MAC (default 02:00:00:00:00:01 / the port's)\n"
		"  --mtu N           Ethernet MTU, 576..9216 (default 1500; 9000 on the\n"
		"                    loopback port: active MTU 4096, 4x fewer packets)\n"
		"  --run-dir DIR     control socket directory (default $UROCE_RUN_DIR or /tmp/uroce-<euid>)\n"
		"  --busy-poll       never sleep\n"
		"  --spin-us N       idle spin before sleeping (default 50)\n"
		"  --eal \"ARGS\"      extra EAL arguments\n"
		"  --log-level L     DPDK log level (default notice)\n"
		"  --pcap FILE       capture every frame sent and received\n"
		"  --fault SPEC      drop=P,dup=P,reorder=P,corrupt=P,delay_us=N,seed=N\n"
		"  --help\n"
		"SIGUSR1 dumps counters to the log; SIGINT/SIGTERM stop.\n");
}

static void emu_sig(int sig)
{
	if (sig == SIGUSR1)
		emu_d.dump = 1;
	else
		emu_d.stop = 1;
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

static int emu_opts_parse(struct emu_opts *o, int argc, char **argv)
{
	enum { O_DEV = 256, O_PORT, O_IP, O_MAC, O_MTU, O_RUNDIR, O_BUSY, O_EAL, O_PCAP,
	       O_FAULT, O_SPIN, O_LOG, O_HELP };
	static const struct option lo[] = {
		{ "dev", required_argument, NULL, O_DEV },
		{ "port", required_argument, NULL, O_PORT },
		{ "vdev", required_argument, NULL, O_PORT },
		{ "ip", required_argument, NULL, O_IP },
		{ "mac", required_argument, NULL, O_MAC },
		{ "mtu", required_argument, NULL, O_MTU },
		{ "run-dir", required_argument, NULL, O_RUNDIR },
		{ "busy-poll", no_argument, NULL, O_BUSY },
		{ "spin-us", required_argument, NULL, O_SPIN },
		{ "eal", required_argument, NULL, O_EAL },
		{ "pcap", required_argument, NULL, O_PCAP },
		{ "fault", required_argument, NULL, O_FAULT },
		{ "log-level", required_argument, NULL, O_LOG },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv(UROCE_ENV_RUN_DIR);
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	strcpy(o->dev, "uroce0");
	o->mtu = 0; /* unset: chosen by port type below */
	o->spin_us = 50;
	strcpy(o->log_level, "notice");
	memcpy(o->mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x01 }, 6);
	if (env && *env)
		snprintf(o->run_dir, sizeof(o->run_dir), "%s", env);
	else
		snprintf(o->run_dir, sizeof(o->run_dir), UROCE_DEFAULT_RUN_DIR_FMT, (unsigned)geteuid());
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_DEV:
			if (!*optarg || strlen(optarg) >= sizeof(o->dev) || strchr(optarg, '/')) {
				fprintf(stderr, "uroced: bad --dev '%s'\n", optarg);
				return -1;
			}
			strcpy(o->dev, optarg);
			break;
		case O_PORT:
			if (strlen(optarg) >= sizeof(o->vdev) || !*optarg) {
				fprintf(stderr, "uroced: bad --port\n");
				return -1;
			}
			strcpy(o->vdev, optarg);
			break;
		case O_IP: {
			struct wire_gid g;
			if (o->nips == UROCE_MAX_GIDS - 1 || !wire_gid_parse(&g, optarg)) {
				fprintf(stderr, "uroced: bad --ip '%s'\n", optarg);
				return -1;
			}
			memcpy(o->ips[o->nips++].raw, g.raw, 16);
			break;
		}
		case O_MAC:
			if (emu_parse_mac(optarg, o->mac)) {
				fprintf(stderr, "uroced: bad --mac '%s'\n", optarg);
				return -1;
			}
			o->mac_set = true;
			break;
		case O_MTU: {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v < 576 || v > 9216) {
				fprintf(stderr, "uroced: bad --mtu '%s' (576..9216)\n", optarg);
				return -1;
			}
			o->mtu = (uint32_t)v;
			break;
		}
		case O_SPIN: {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v > 1000000) {
				fprintf(stderr, "uroced: bad --spin-us '%s'\n", optarg);
				return -1;
			}
			o->spin_us = (uint32_t)v;
			break;
		}
		case O_RUNDIR:
			if (!*optarg || strlen(optarg) >= 100) {
				fprintf(stderr, "uroced: bad --run-dir\n");
				return -1;
			}
			strcpy(o->run_dir, optarg);
			break;
		case O_BUSY:
			o->busy_poll = true;
			break;
		case O_EAL:
			if (strlen(optarg) >= sizeof(o->eal)) {
				fprintf(stderr, "uroced: --eal too long\n");
				return -1;
			}
			strcpy(o->eal, optarg);
			break;
		case O_PCAP:
			if (!*optarg || strlen(optarg) >= sizeof(o->pcap)) {
				fprintf(stderr, "uroced: bad --pcap\n");
				return -1;
			}
			strcpy(o->pcap, optarg);
			break;
		case O_FAULT:
			if (emu_fault_parse(optarg, &o->fault)) {
				fprintf(stderr, "uroced: bad --fault '%s'\n", optarg);
				return -1;
			}
			o->fault_set = true;
			break;
		case O_LOG:
			if (strlen(optarg) >= sizeof(o->log_level)) {
				fprintf(stderr, "uroced: bad --log-level\n");
				return -1;
			}
			strcpy(o->log_level, optarg);
			break;
		case O_HELP:
			emu_usage(stdout);
			exit(0);
		default:
			if (optopt)
				fprintf(stderr, "uroced: bad option '-%c' (see --help)\n", optopt);
			else
				fprintf(stderr, "uroced: bad option '%s' (see --help)\n", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroced: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	if (!o->mtu) {
		/* the loopback port never meets a real link, so nothing limits
		 * it to 1500: jumbo frames give active MTU 4096 and a quarter of
		 * the per-packet work (docs/performance.md) */
		o->mtu = o->vdev[0] ? 1500 : 9000;
	}
	if (o->nips == 0 && !o->vdev[0]) {
		/* the loopback port never leaves the process: a loopback-range
		 * address is honest and collides with nothing */
		uint8_t v4[4] = { 127, 0, 0, 1 };
		wire_gid_from_ipv4((struct wire_gid *)o->ips[0].raw, v4);
		o->nips = 1;
	}
	return 0;
}

#ifdef EMU_HAVE_PCAPW
static void emu_capture(struct emu_dev *d, const uint8_t *f, uint32_t len, bool tx)
{
	/* on the loopback port every received frame is one we sent: record
	 * the wire once (what was sent), not twice */
	if (!tx && d->loopback)
		return;
	pcapw_write(d->capture_priv, f, len, pcapw_now_ns());
}
#endif

void emu_capture_flush(struct emu_daemon *dm)
{
#ifdef EMU_HAVE_PCAPW
	if (dm->pcap)
		pcapw_flush(dm->pcap);
#else
	(void)dm;
#endif
}

/* argv for rte_eal_init */
static int emu_eal_args(struct emu_opts *o, char **av, int max, char *buf, size_t bufsz)
{
	int n = 0;
	size_t used = 0;
#define ADD(s) do { \
		size_t l_ = strlen(s) + 1; \
		if (n >= max - 1 || used + l_ > bufsz) return -1; \
		memcpy(buf + used, s, l_); av[n++] = buf + used; used += l_; \
	} while (0)
	char tmp[600];

	/* "0000:03:00.0" or "03:00.0" is a PCI NIC (allow-listed), anything
	 * else a virtual device */
	unsigned a, b, c2, f;
	char tail;
	bool pci = o->vdev[0] &&
		   (sscanf(o->vdev, "%x:%x:%x.%x%c", &a, &b, &c2, &f, &tail) == 4 ||
		    sscanf(o->vdev, "%x:%x.%x%c", &b, &c2, &f, &tail) == 3);

	ADD("uroced");
	/* no hugepages, no PCI scan, no shared config, a private file prefix
	 * and no telemetry socket: any user, any number of daemons at once.
	 * (A PCI NIC usually wants hugepages: add them with --eal.) */
	ADD("--no-huge");
	if (!pci)
		ADD("--no-pci");
	ADD("--no-shconf");
	ADD("--no-telemetry");
	ADD("-m");
	ADD(o->mtu > 4000 ? "512" : "256");
	ADD("--iova-mode=va");
	ADD("-l");
	ADD("0");
	snprintf(tmp, sizeof(tmp), "--file-prefix=uroce%d", (int)getpid());
	ADD(tmp);
	snprintf(tmp, sizeof(tmp), "--log-level=%s", o->log_level);
	ADD(tmp);
	if (o->vdev[0]) {
		snprintf(tmp, sizeof(tmp), pci ? "--allow=%s" : "--vdev=%s", o->vdev);
		ADD(tmp);
	}
	if (o->eal[0]) {
		char *save = NULL;
		char copy[sizeof(o->eal)];
		strcpy(copy, o->eal);
		for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
			ADD(t);
	}
	av[n] = NULL;
	return n;
#undef ADD
}

int main(int argc, char **argv)
{
	struct emu_daemon *dm = &emu_d;
	static char eal_buf[4096];
	char *eal_av[64];

	dm->listen_fd = -1;
	dm->epfd = -1;
	if (emu_opts_parse(&dm->o, argc, argv))
		return 2;
	int eal_ac = emu_eal_args(&dm->o, eal_av, 64, eal_buf, sizeof(eal_buf));
	if (eal_ac < 0) {
		fprintf(stderr, "uroced: EAL arguments too long\n");
		return 2;
	}

	struct sigaction sa = { .sa_handler = emu_sig };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (emu_port_init(dm, eal_ac, eal_av))
		return 1;
	int rc = emu_dev_init(&dm->dev, dm->o.dev, dm->o.mac, dm->o.mtu, dm->o.ips, dm->o.nips);
	if (rc) {
		EMU_LOG(ERR, "device init: %s\n", strerror(-rc));
		emu_port_fini(dm);
		return 1;
	}
	emu_port_attach(dm);
	if (dm->o.fault_set) {
		dm->dev.fault = emu_fault_new(&dm->o.fault);
		if (!dm->dev.fault) {
			EMU_LOG(ERR, "fault injection: out of memory\n");
			goto fail;
		}
	}
	if (dm->o.pcap[0]) {
#ifdef EMU_HAVE_PCAPW
		struct pcapw *w;
		rc = pcapw_open(&w, dm->o.pcap, PCAPW_NSEC);
		if (rc) {
			EMU_LOG(ERR, "--pcap %s: %s\n", dm->o.pcap, strerror(-rc));
			goto fail;
		}
		dm->pcap = w;
		dm->dev.capture = emu_capture;
		dm->dev.capture_priv = w;
#else
		EMU_LOG(WARNING, "--pcap: built without the pcap writer, ignored\n");
#endif
	}
	dm->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dm->epfd < 0 || emu_ctl_open(dm))
		goto fail;
	char gbuf[WIRE_GID_STRLEN];
	for (uint32_t i = 0; i < dm->dev.gid_count; i++)
		EMU_LOG(NOTICE, "%s: gid %u %s\n", dm->dev.name, i,
			wire_gid_str((const struct wire_gid *)dm->dev.gids[i].raw, gbuf, sizeof(gbuf)));
	EMU_LOG(NOTICE, "%s: mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u active mtu %u%s\n",
		dm->dev.name, dm->dev.mac[0], dm->dev.mac[1], dm->dev.mac[2], dm->dev.mac[3],
		dm->dev.mac[4], dm->dev.mac[5], dm->o.mtu, 128u << dm->dev.active_mtu,
		dm->dev.loopback ? " (loopback)" : "");

	emu_engine_run(dm);

	EMU_LOG(NOTICE, "%s: stopping\n", dm->dev.name);
	emu_stats_dump(&dm->dev);
	emu_ctl_mark_dead(dm);
	emu_ctl_close(dm);
	emu_dev_fini(&dm->dev);
#ifdef EMU_HAVE_PCAPW
	if (dm->pcap)
		pcapw_close(dm->pcap);
#endif
	close(dm->epfd);
	emu_port_fini(dm);
	return 0;
fail:
	emu_ctl_close(dm);
	emu_dev_fini(&dm->dev);
	if (dm->epfd >= 0)
		close(dm->epfd);
	emu_port_fini(dm);
	return 1;
}
