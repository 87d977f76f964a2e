/* SPDX-License-Identifier: MIT */
/* Logging over rte_log (own logtype) and the replaceable clock. rte_log
 * works before rte_eal_init (it writes to stderr), so the DPDK-free core
 * and its tests can use it. */
#include <stdarg.h>
#include <time.h>

#include <rte_log.h>

#include "emu_log.h"

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

static uint64_t emu_log_suppressed_total;

/* Real time, not emu_now_ns: a virtual test clock must not open the gate. */
static uint64_t emu_log_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_log_rl(struct emu_log_rl *rl, uint32_t level, const char *fmt, ...)
{
	va_list ap;

	if (!emu_log_enabled(level))
		return;
	uint64_t now = emu_log_mono_ns();
	if (now - rl->start_ns >= EMU_LOG_RL_WINDOW_NS) {
		if (rl->suppressed)
			rte_log(level, (uint32_t)emu_logtype,
				"(%lu similar messages suppressed)\n",
				(unsigned long)rl->suppressed);
		rl->start_ns = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n >= EMU_LOG_RL_BURST) {
		rl->suppressed++;
		__atomic_fetch_add(&emu_log_suppressed_total, 1, __ATOMIC_RELAXED);
		return;
	}
	rl->n++;
	va_start(ap, fmt);
	rte_vlog(level, (uint32_t)emu_logtype, fmt, ap);
	va_end(ap);
}

uint64_t emu_log_suppressed(void)
{
	return __atomic_load_n(&emu_log_suppressed_total, __ATOMIC_RELAXED);
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
