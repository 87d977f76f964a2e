/* SPDX-License-Identifier: MIT */
/* 24-bit PSN / MSN arithmetic across the wrap. */
#include "../include/check.h"
#include "wire.h"

int main(void)
{
	CHECK(wire_psn_cmp(5, 5) == 0, "equal");
	CHECK(wire_psn_before(1, 2) && wire_psn_after(2, 1), "simple order");
	/* Across the wrap: 0xFFFFFF is just before 0. */
	CHECK(wire_psn_before(0xffffff, 0), "wrap before");
	CHECK(wire_psn_after(0, 0xffffff), "wrap after");
	CHECK(wire_psn_before(0xfffff0, 0x10), "wrap window");
	/* Half the space apart: the sign flips exactly at 2^23. */
	CHECK(wire_psn_after(0x7fffff, 0), "just under half");
	CHECK(wire_psn_before(0x800000, 0), "exactly half counts as before");
	CHECK(wire_psn_before(0x800001, 0), "past half");
	/* Upper bits of the inputs are ignored. */
	CHECK(wire_psn_cmp(0x01000005, 5) == 0, "bits above 24 ignored");

	CHECK_EQ(wire_psn_next(0xffffff), 0);
	CHECK_EQ(wire_psn_add(0xfffffe, 5), 3);
	CHECK_EQ(wire_psn_add(10, 0xffffff), 9); /* adding -1 */
	CHECK_EQ(wire_psn_dist(0xfffffe, 3), 5);
	CHECK_EQ(wire_psn_dist(3, 0xfffffe), 0xfffffb);
	CHECK_EQ(wire_psn_diff(3, 0xfffffe), 5);
	CHECK_EQ(wire_psn_diff(0xfffffe, 3), -5);
	CHECK_EQ(wire_psn_diff(0, 0x800000), -0x800000);
	CHECK(wire_psn_in_window(1, 0xfffffe, 4), "in window across wrap");
	CHECK(!wire_psn_in_window(2, 0xfffffe, 4), "end of window excluded");
	CHECK(!wire_psn_in_window(0xfffffd, 0xfffffe, 4), "before window");

	/* Exhaustive-ish: for many bases and small deltas, add/cmp/diff agree. */
	for (uint32_t base = 0; base < (1u << 24); base += 0x10001) {
		for (int32_t d = -300; d <= 300; d += 7) {
			uint32_t b2 = wire_psn_add(base, (uint32_t)d);
			CHECK(b2 <= WIRE_PSN_MASK, "masked");
			CHECK(wire_psn_diff(b2, base) == d, "diff base %u d %d", base, d);
			CHECK((wire_psn_cmp(b2, base) > 0) == (d > 0), "cmp sign base %u d %d", base, d);
		}
	}
	CHECK_EQ(wire_msn_next(0xffffff), 0);
	CHECK(wire_msn_cmp(0, 0xffffff) > 0, "msn wrap");
	return t_done("test_psn");
}
