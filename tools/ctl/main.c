/* SPDX-License-Identifier: MIT */
/* uroce-ctl: look at and adjust a running uroced (docs/man/uroce-ctl.8).
 *
 *   uroce-ctl [-d DEV] [-r RUN_DIR] [--json] COMMAND [ARGS]
 *
 * Exit 0, 1 when the daemon refused or failed the request, 2 on a usage
 * error or when no trusted daemon answers. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static const struct {
	const char *name;
	int (*run)(struct ctl *c, int argc, char **argv);
} ctl_cmds[] = {
	{ "devices", ctl_cmd_devices },
	{ "qps", ctl_cmd_qps },
	{ "mrs", ctl_cmd_mrs },
	{ "counters", ctl_cmd_counters },
	{ "fault", ctl_cmd_fault },
	{ "capture", ctl_cmd_capture },
	{ "cc", ctl_cmd_cc },
	{ "limits", ctl_cmd_limits },
	{ "mtu", ctl_cmd_mtu },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-ctl [-d DEV] [-r RUN_DIR] [--json] COMMAND [ARGS]\n"
		"  devices                     devices, ports, MTUs, addresses, GID table\n"
		"                              (every device of the run directory unless -d)\n"
		"  qps                         QPs: state, PSNs, outstanding work, retries, peer\n"
		"  mrs                         memory registrations: how the device reaches each\n"
		"                              (pinned, unpinned and why, odp, dm), pieces moved\n"
		"  counters [--port]           port, NIC (nic.*, xstat.*) and per-QP counters\n"
		"  fault show                  fault injection on received frames\n"
		"  fault set KEY=VAL...        drop= dup= reorder= corrupt= (0..1) delay_us=\n"
		"                              seed= qp=QPN opcode=N (admin)\n"
		"  fault clear                 fault injection off (admin)\n"
		"  capture start FILE          pcap of every frame to FILE (admin)\n"
		"  capture stop                (admin)\n"
		"  cc show                     DCQCN settings and totals (docs/dcqcn.md)\n"
		"  cc set NAME VALUE           change one at run time; or NAME=VALUE...,\n"
		"                              on, off (admin)\n"
		"  limits [UID]                object limits (--limit, --uid-limit) and what\n"
		"                              our uid holds (another UID: admin)\n"
		"  mtu N                       the device's Ethernet MTU at run time (admin)\n"
		"  -d DEV       device (default uroce0)\n"
		"  -r RUN_DIR   socket directory (default $" UROCE_ENV_RUN_DIR
		", else $XDG_RUNTIME_DIR/uroce, else /tmp/uroce-<euid>)\n"
		"  -j, --json   JSON output (docs/running.md)\n"
		"admin: root or the daemon's user only\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl c = { .prog = "uroce-ctl", .sock = -1, .fail_status = CTL_USAGE };
	int o;

	if (ctl_set_run_dir(&c, NULL))
		return CTL_USAGE;
	/* '+': options end at the command, whose own arguments follow */
	while ((o = getopt_long(argc, argv, "+d:r:jh", lo, NULL)) != -1) {
		switch (o) {
		case 'd':
			if (!*optarg || strlen(optarg) >= UROCE_DEV_NAME_MAX || strchr(optarg, '/')) {
				fprintf(stderr, "uroce-ctl: bad device name '%s'\n", optarg);
				return CTL_USAGE;
			}
			c.dev = optarg;
			break;
		case 'r':
			if (ctl_set_run_dir(&c, optarg))
				return CTL_USAGE;
			break;
		case 'j': c.json = true; break;
		case 'h': usage(stdout); return CTL_OK;
		default: usage(stderr); return CTL_USAGE;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++) {
		if (strcmp(argv[optind], ctl_cmds[i].name))
			continue;
		int rc = ctl_cmds[i].run(&c, argc - optind, argv + optind);
		if (rc < 0) {
			fprintf(stderr, "uroce-ctl: bad arguments for '%s'\n", argv[optind]);
			usage(stderr);
			return CTL_USAGE;
		}
		return rc;
	}
	fprintf(stderr, "uroce-ctl: unknown command '%s'\n", argv[optind]);
	usage(stderr);
	return CTL_USAGE;
}
