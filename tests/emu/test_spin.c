/* SPDX-License-Identifier: MIT */
/* The engine's adaptive spin (emu/daemon/spin.h): the window grows while
 * sleeps end sooner than the longest spin, shrinks to none while they
 * last longer, never exceeds --spin-us, and --spin-us 0 never spins. */
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
	if (fails)
		return 1;
	printf("ok\n");
	return 0;
}
