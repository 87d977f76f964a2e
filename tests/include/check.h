/* SPDX-License-Identifier: MIT */
/* The check macros of every C test (docs/testing.md): one family.
 *
 *   CHECK(cond[, fmt, ...])     a failure is printed (file, line, condition,
 *                               message) and counted; the test goes on
 *   REQUIRE(cond[, fmt, ...])   the same, then the test ends with 1 (what
 *                               follows depends on it); errno is printed
 *   CHECK_EQ(a, b)              CHECK(a == b) printing both values
 *   t_done(name)                "name: N checks, M failures"; 0 or 1
 *
 * A test exits 0 pass, 1 fail, 77 skip (T_SKIP: a missing prerequisite,
 * never 0). Before including this header a test area may name its own
 * failure counter (T_FAILURES, e.g. a global shared by several files)
 * and its own way to end (T_EXIT(code), e.g. one that stops a daemon). */
#ifndef UROCE_TEST_CHECK_H
#define UROCE_TEST_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#ifndef T_FAILURES
static int t_failures __attribute__((unused));
#define T_FAILURES t_failures
#endif
#ifndef T_EXIT
#define T_EXIT(code) exit(code)
#endif
static long t_checks __attribute__((unused));

__attribute__((format(printf, 5, 6), unused))
static void t_report(const char *file, int line, const char *cond, int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s:%d: %s:", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, " (errno %d %s)", err, strerror(err));
	fputc('\n', stderr);
}

/* " " __VA_ARGS__: the message is optional, and a literal one is joined
 * to " " (so a check without a message has a format of its own) */
#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		t_checks++;                                                      \
		if (!(cond)) {                                                   \
			T_FAILURES++;                                            \
			t_report(__FILE__, __LINE__, #cond, 0, " " __VA_ARGS__); \
		}                                                                \
	} while (0)

#define REQUIRE(cond, ...)                                                       \
	do {                                                                     \
		t_checks++;                                                      \
		if (!(cond)) {                                                   \
			int e_ = errno;                                          \
			T_FAILURES++;                                            \
			t_report(__FILE__, __LINE__, #cond, e_, " " __VA_ARGS__); \
			T_EXIT(T_FAIL);                                          \
		}                                                                \
	} while (0)

#define CHECK_EQ(a, b)                                                           \
	do {                                                                     \
		long long a_ = (long long)(a), b_ = (long long)(b);              \
		CHECK(a_ == b_, "%s = %lld, %s = %lld", #a, a_, #b, b_);         \
	} while (0)

__attribute__((unused))
static int t_done(const char *name)
{
	printf("%s: %ld checks, %d failures\n", name, t_checks, T_FAILURES);
	return T_FAILURES ? T_FAIL : T_PASS;
}

#endif
