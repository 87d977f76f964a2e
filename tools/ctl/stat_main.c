/* SPDX-License-Identifier: MIT */
/* uroce-stat: `uroce-ctl counters` under its old name and options, for the
 * scripts and tests that read it.
 *
 *   uroce-stat [-d DEV] [-r RUN_DIR] [-q]
 *
 * One "name value" line per counter under "port DEV" and "qp 0xQPN pid
 * PID TYPE STATE" headers; -q: port counters only. Exit 0, 1 when the
 * daemon cannot be reached or refuses us, 2 on a usage error. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: uroce-stat [-d DEV] [-r RUN_DIR] [-q]\n"
		   "  -d DEV      device (default uroce0)\n"
		   "  -r RUN_DIR  socket directory (default $" UROCE_ENV_RUN_DIR
		   ", else $XDG_RUNTIME_DIR/uroce, else /tmp/uroce-<euid>)\n"
		   "  -q          port counters only\n"
		   "(uroce-ctl counters, with JSON and more: uroce-ctl(8))\n");
}

int main(int argc, char **argv)
{
	struct ctl c = { .prog = "uroce-stat", .sock = -1, .fail_status = CTL_FAILED,
			 .dev = "uroce0" };
	char *args[] = { "counters", "--port", NULL };
	int nargs = 1, o;

	if (ctl_set_run_dir(&c, NULL))
		return CTL_USAGE;
	while ((o = getopt(argc, argv, "d:r:qh")) != -1) {
		switch (o) {
		case 'd': c.dev = optarg; break;
		case 'r':
			if (ctl_set_run_dir(&c, optarg))
				return CTL_USAGE;
			break;
		case 'q': nargs = 2; break;
		case 'h': usage(stdout); return CTL_OK;
		default: usage(stderr); return CTL_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	return ctl_cmd_counters(&c, nargs, args);
}
