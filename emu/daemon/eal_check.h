/* SPDX-License-Identifier: MIT */
/* What DPDK's EAL needs from the installed system (eal_check.c). */
#ifndef EMU_EAL_CHECK_H
#define EMU_EAL_CHECK_H

/* Before rte_eal_init, for device dev on port (its --port, "" for the
 * loopback) with --eal arguments eal: 0 when what EAL will need is there
 * (the DPDK drivers it loads as plugins, unless eal loads drivers itself
 * with -d; /sys/module); otherwise one line on stderr naming what to
 * install or give, and -1. */
int emu_eal_check(const char *dev, const char *port, const char *eal);

#endif
