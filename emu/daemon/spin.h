/* SPDX-License-Identifier: MIT */
/* The engine's spin before a sleep (engine.c), apart so that its rule is
 * tested alone (tests/emu/test_spin.c). */
#ifndef EMU_DAEMON_SPIN_H
#define EMU_DAEMON_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* How long an idle engine spins before it sleeps: adapted as Linux's
 * cpuidle-haltpoll adapts its guest poll window. A spin pays only when
 * the next work comes before it ends; a fixed 50 us after every exchange
 * is up to 100 us of CPU per rc_lat round trip and daemon where the
 * peer's answer comes 300 us later (a loaded machine; measured: both
 * daemons 0.22-0.26 ms per round trip with the fixed spin, 0.155 ms
 * adaptive; docs/performance.md, "CPU per byte over a link"). So: a sleep that
 * ended sooner than the longest spin (--spin-us) would have caught that
 * work by spinning: the window doubles (from EMU_SPIN_START_NS); a sleep
 * longer than the longest spin: the window halves, to none below
 * EMU_SPIN_START_NS. An idle daemon ends with no spin at all. */
#define EMU_SPIN_START_NS 2000ull

struct emu_spin {
	uint64_t cur, max;
};

static inline void emu_spin_adapt(struct emu_spin *sp, uint64_t slept)
{
	if (sp->cur + slept < sp->max) {
		uint64_t n = sp->cur ? sp->cur * 2 : EMU_SPIN_START_NS;
		sp->cur = n < sp->max ? n : sp->max;
	} else if (slept > sp->max) {
		sp->cur /= 2;
		if (sp->cur < EMU_SPIN_START_NS)
			sp->cur = 0;
	}
}

/* The yielding spin after RX (engine.c, emu_rx_spin) stops on a port
 * that wakes the engine when the cores are contended: a sched_yield()
 * whose turn came back more than EMU_YIELD_LOST_NS later lost the core
 * to another thread, and for the next EMU_YIELD_BUSY_NS the engine
 * counts the cores as contended. A frame that the last packet did not
 * announce (a ping-pong's next message waits for an application) is then
 * waited for asleep: spinning for it took the core the application
 * needed (docs/performance.md, "Latency over a link: spins, sleeps and
 * probes"). */
#define EMU_YIELD_LOST_NS 30000ull
#define EMU_YIELD_BUSY_NS 20000000ull

struct emu_yield {
	uint64_t at;         /* the turn that yielded last (0: work since) */
	uint64_t busy_until; /* contended until then */
};

/* An idle turn at now, after the last yield (if any) */
static inline void emu_yield_seen(struct emu_yield *y, uint64_t now)
{
	if (y->at && now - y->at > EMU_YIELD_LOST_NS)
		y->busy_until = now + EMU_YIELD_BUSY_NS;
	y->at = 0;
}

/* Whether the yielding spin after RX goes on: always on a port that
 * cannot wake the engine or after a packet that announced more; on the
 * others only while the cores are not contended. */
static inline bool emu_yield_spin(const struct emu_yield *y, uint64_t now, bool rx_wakes,
				  bool expected)
{
	return !rx_wakes || expected || now >= y->busy_until;
}

#endif /* EMU_DAEMON_SPIN_H */
