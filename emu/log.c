/* SPDX-License-Identifier: MIT */
/* Logging over rte_log (own logtype) and the replaceable clock. rte_log
 * works before rte_eal_init (it writes to stderr), so the DPDK-free core
 * and its tests can use it. */
#include <stdarg.h>
#include <time.h>

#include <rte_log.h>

#include "emu.h"

static int emu_logtype = -1;

RTE_INIT(emu_log_init)
{
	emu_logtype = rte_log_register_type_and_pick_level("uroce.emu", RTE_LOG_NOTICE);
}

bool emu_log_enabled(uint32_t level)
{
	return emu_logtype >= 0 && rte_log_can_log((uint32_t)emu_logtype, level);
}

void emu_log(uint32_t level, const char *fmt, ...)
{
	va_list ap;

	if (!emu_log_enabled(level))
		return;
	va_start(ap, fmt);
	rte_vlog(level, (uint32_t)emu_logtype, fmt, ap);
	va_end(ap);
}

static uint64_t (*emu_clock_fn)(void);

uint64_t emu_now_ns(void)
{
	struct timespec ts;

	if (emu_clock_fn)
		return emu_clock_fn();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_clock_set(uint64_t (*fn)(void))
{
	emu_clock_fn = fn;
}
