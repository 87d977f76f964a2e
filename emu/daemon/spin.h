/* SPDX-License-Identifier: MIT */
/* The engine's spin before a sleep (engine.c), apart so that its rule is
 * tested alone (tests/emu/test_spin.c). */
#ifndef EMU_DAEMON_SPIN_H
#define EMU_DAEMON_SPIN_H

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

#endif /* EMU_DAEMON_SPIN_H */
