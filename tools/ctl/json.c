/* SPDX-License-Identifier: MIT */
/* The JSON uroce-ctl prints with --json: a streaming writer to stdout,
 * enough for nested objects and arrays of numbers, strings and booleans. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "ctl.h"

#define JS_DEPTH 16
static bool js_first[JS_DEPTH] = { true };
static char js_close[JS_DEPTH];
static int js_depth;

static void js_quote(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p); /* names are ASCII; anything else escaped */
		else
			putchar(*p);
	}
	putchar('"');
}

static void js_key(const char *key)
{
	if (!js_first[js_depth])
		putchar(',');
	js_first[js_depth] = false;
	if (key) {
		js_quote(key);
		putchar(':');
	}
}

static void js_open(const char *key, char open, char close)
{
	js_key(key);
	putchar(open);
	if (js_depth < JS_DEPTH - 1)
		js_depth++;
	js_first[js_depth] = true;
	js_close[js_depth] = close;
}

void js_obj(const char *key)
{
	js_open(key, '{', '}');
}

void js_arr(const char *key)
{
	js_open(key, '[', ']');
}

void js_end(void)
{
	putchar(js_close[js_depth]);
	if (js_depth > 0)
		js_depth--;
}

void js_str(const char *key, const char *v)
{
	js_key(key);
	js_quote(v);
}

void js_u64(const char *key, uint64_t v)
{
	js_key(key);
	printf("%" PRIu64, v);
}

void js_dbl(const char *key, double v)
{
	js_key(key);
	if (isfinite(v))
		printf("%.17g", v);
	else
		printf("null");
}

void js_bool(const char *key, bool v)
{
	js_key(key);
	printf(v ? "true" : "false");
}

void js_null(const char *key)
{
	js_key(key);
	printf("null");
}

void js_done(void)
{
	putchar('\n');
	js_depth = 0;
	js_first[0] = true;
}
