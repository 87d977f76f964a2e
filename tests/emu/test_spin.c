/* SPDX-License-Identifier: MIT */
/* The engine's adaptive spin (emu/daemon/spin.h): the window grows while
 * sleeps end sooner than the longest spin, shrinks to none while they
 * last longer, never exceeds --spin-us, and --spin-us 0 never spins. The
 * yielding spin after RX stops while the cores are contended, after a
 * packet that announced nothing more, on a port that wakes the engine. */
#include <stdio.h>

#include "../../emu/daemon/spin.h"

static int fails;
#define T_FAILURES fails
#include "../include/check.h"

#define US 1000ull

int main(void)
{
	struct emu_spin sp = { 50 * US, 50 * US };

	/* idle: sleeps of 200 ms halve the window down to no spin at all */
	for (int i = 0; i < 16; i++)
		emu_spin_adapt(&sp, 200000 * US);
	CHECK(sp.cur == 0);
	/* a ping-pong whose answers come after 5 us: a spin would have
	 * caught them, the window grows back (2, 4, ... us), up to the max */
	emu_spin_adapt(&sp, 5 * US);
	CHECK(sp.cur == EMU_SPIN_START_NS);
	for (int i = 0; i < 16; i++)
		emu_spin_adapt(&sp, 5 * US);
	CHECK(sp.cur == 50 * US);
	/* answers that come 300 us later (a loaded machine): the spin is
	 * wasted, it halves each time */
	emu_spin_adapt(&sp, 300 * US);
	CHECK(sp.cur == 25 * US);
	emu_spin_adapt(&sp, 300 * US);
	CHECK(sp.cur == 12500);
	/* a sleep between the two bounds changes nothing */
	sp.cur = 30 * US;
	emu_spin_adapt(&sp, 40 * US);
	CHECK(sp.cur == 30 * US);
	/* --spin-us 0: never spins, whatever the sleeps */
	struct emu_spin z = { 0, 0 };
	emu_spin_adapt(&z, 0);
	emu_spin_adapt(&z, 1 * US);
	emu_spin_adapt(&z, 1000 * US);
	CHECK(z.cur == 0);

	/* the yielding spin after RX: a yield whose turn came back 5 us
	 * later kept the core (nobody else wanted it): the spin goes on */
	struct emu_yield y = { 0, 0 };
	uint64_t t = 1000000 * US;
	y.at = t;
	emu_yield_seen(&y, t + 5 * US);
	CHECK(y.at == 0);
	CHECK(emu_yield_spin(&y, t + 5 * US, true, false));
	/* one that came back 40 us later lost it: for 20 ms a port that
	 * wakes the engine stops spinning after a packet that announced
	 * nothing more ... */
	y.at = t + 10 * US;
	emu_yield_seen(&y, t + 50 * US);
	CHECK(!emu_yield_spin(&y, t + 50 * US, true, false));
	CHECK(!emu_yield_spin(&y, t + 50 * US + EMU_YIELD_BUSY_NS - 1, true, false));
	/* ... but not after one that announced more, nor on a port that
	 * cannot wake it */
	CHECK(emu_yield_spin(&y, t + 50 * US, true, true));
	CHECK(emu_yield_spin(&y, t + 50 * US, false, false));
	/* an idle turn without a yield before it changes nothing */
	emu_yield_seen(&y, t + 60 * US);
	CHECK(!emu_yield_spin(&y, t + 60 * US, true, false));
	/* 20 ms on: the spin is tried again */
	CHECK(emu_yield_spin(&y, t + 50 * US + EMU_YIELD_BUSY_NS, true, false));
	if (fails)
		return 1;
	printf("ok\n");
	return 0;
}
