/* SPDX-License-Identifier: MIT */
/* uroced core: log (rte_log's levels, rate-limited lines for anything a
 * client or the wire can trigger), the clock (or a test's virtual one) and
 * the deterministic PRNG. */
#ifndef EMU_LOG_H
#define EMU_LOG_H

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Log and clock                                                       */
/* ------------------------------------------------------------------ */
/* Levels are rte_log's (RTE_LOG_ERR ... RTE_LOG_DEBUG). */
#define EMU_LOG_LVL_ERR     4u
#define EMU_LOG_LVL_WARNING 5u
#define EMU_LOG_LVL_NOTICE  6u
#define EMU_LOG_LVL_INFO    7u
#define EMU_LOG_LVL_DEBUG   8u
void emu_log(uint32_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool emu_log_enabled(uint32_t level);

/* Rate-limited logging for anything a client or the wire can trigger: at
 * most EMU_LOG_RL_BURST lines per call site (and thread) per second; the
 * number suppressed is logged with the next line that passes. */
#define EMU_LOG_RL_BURST 10u
#define EMU_LOG_RL_WINDOW_NS 1000000000ull
struct emu_log_rl {
	uint64_t start_ns;
	uint32_t n;
	uint64_t suppressed;
};
void emu_log_rl(struct emu_log_rl *rl, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* lines suppressed by every limiter since start (for the stats dump) */
uint64_t emu_log_suppressed(void);
#define EMU_LOG_RL(lvl, ...) do { \
		static __thread struct emu_log_rl emu_rl_; \
		emu_log_rl(&emu_rl_, EMU_LOG_LVL_##lvl, __VA_ARGS__); \
	} while (0)
/* EMU_LOG(ERR|WARNING|NOTICE|INFO|DEBUG, "fmt", ...) */
#define EMU_LOG(lvl, ...) emu_log(EMU_LOG_LVL_##lvl, __VA_ARGS__)

/* CLOCK_MONOTONIC in ns, or the test's virtual clock after emu_clock_set(). */
uint64_t emu_now_ns(void);
/* NULL restores CLOCK_MONOTONIC. */
void emu_clock_set(uint64_t (*fn)(void));

/* Deterministic PRNG (splitmix64) on a bare state (*state advances): the
 * seeded keys and QPNs of UROCE_TEST_SEED (ctx.c), fault injection and the
 * CM engine's losses. Not for secrets. */
uint64_t emu_rand_next(uint64_t *state);

#endif /* EMU_LOG_H */
