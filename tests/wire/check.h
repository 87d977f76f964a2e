/* SPDX-License-Identifier: MIT */
/* Minimal check helpers for the wire tests: each test is a standalone
 * program exiting 0 (pass), 1 (fail) or 77 (skip). */
#ifndef WIRE_TEST_CHECK_H
#define WIRE_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

static int t_failures;
static long t_checks;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		t_checks++;                                                    \
		if (!(cond)) {                                                 \
			t_failures++;                                          \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, \
				__LINE__, #cond);                              \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			if (t_failures > 50) {                                 \
				fprintf(stderr, "too many failures\n");        \
				exit(T_FAIL);                                  \
			}                                                      \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	CHECK((a) == (b), "%s = %lld, %s = %lld", #a, (long long)(a), #b,      \
	      (long long)(b))

static inline int t_done(const char *name)
{
	printf("%s: %ld checks, %d failures\n", name, t_checks, t_failures);
	return t_failures ? T_FAIL : T_PASS;
}

#endif
