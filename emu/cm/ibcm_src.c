/* SPDX-License-Identifier: MIT */
/* Per-source admission of connection requests from the wire (ibcm_src.h).
 * A source is remembered by its GID in an open-addressing table probed
 * IBCM_SRC_PROBE slots from the GID's hash; a source that holds no slot
 * and has a full token bucket again may be forgotten to make room. The
 * rate is a token bucket kept as a theoretical arrival time (GCRA): one
 * request costs one interval, a source may be at most a burst ahead. No
 * allocation after ibcm_srcs_new, no system call. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ibcm_src.h"

#define IBCM_SRC_NS (1000000000ull / IBCM_SRC_RATE)

struct ibcm_src {
	union ibv_gid gid;
	uint64_t tat;            /* next request's theoretical arrival time */
	uint32_t held;           /* passive slots it holds */
	bool used;
};

struct ibcm_srcs {
	uint32_t n;
	struct ibcm_src e[];
};

struct ibcm_srcs *ibcm_srcs_new(uint32_t n)
{
	struct ibcm_srcs *t = calloc(1, sizeof(*t) + (size_t)n * sizeof(t->e[0]));

	if (t)
		t->n = n;
	return t;
}

void ibcm_srcs_free(struct ibcm_srcs *t)
{
	free(t);
}

static uint32_t ibcm_src_hash(const union ibv_gid *g)
{
	uint64_t a, b;

	memcpy(&a, g->raw, 8);
	memcpy(&b, g->raw + 8, 8);
	uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
	return (uint32_t)(h >> 32);
}

/* an entry that may be forgotten: holds nothing and its bucket is full
 * (forgetting it gives the source nothing it did not have) */
static bool ibcm_src_idle(const struct ibcm_src *s, uint64_t now)
{
	return !s->held && s->tat <= now;
}

/* gid's entry, a new one, or -1 when the probe window has none free */
static int32_t ibcm_src_find(struct ibcm_srcs *t, const union ibv_gid *g, uint64_t now)
{
	uint32_t h = ibcm_src_hash(g);
	int32_t free_idx = -1;

	for (uint32_t k = 0; k < IBCM_SRC_PROBE && k < t->n; k++) {
		uint32_t i = (h + k) % t->n;
		struct ibcm_src *s = &t->e[i];
		if (s->used && !memcmp(s->gid.raw, g->raw, 16))
			return (int32_t)i;
		if (free_idx < 0 && (!s->used || ibcm_src_idle(s, now)))
			free_idx = (int32_t)i;
	}
	if (free_idx >= 0) {
		struct ibcm_src *s = &t->e[free_idx];
		memset(s, 0, sizeof(*s));
		s->gid = *g;
		s->used = true;
	}
	return free_idx;
}

enum ibcm_src_verdict ibcm_src_admit(struct ibcm_srcs *t, const union ibv_gid *gid,
				     uint64_t now, uint32_t budget, int32_t *idx)
{
	int32_t i = ibcm_src_find(t, gid, now);

	if (i < 0)
		return IBCM_SRC_TABLE_FULL;
	struct ibcm_src *s = &t->e[i];
	if (s->tat < now)
		s->tat = now;
	if (s->tat - now >= (uint64_t)IBCM_SRC_BURST * IBCM_SRC_NS)
		return IBCM_SRC_RATE_LIMITED;
	s->tat += IBCM_SRC_NS;
	if (s->held >= budget)
		return IBCM_SRC_BUSY;
	*idx = i;
	return IBCM_SRC_OK;
}

void ibcm_src_hold(struct ibcm_srcs *t, int32_t idx)
{
	if (idx >= 0 && (uint32_t)idx < t->n)
		t->e[idx].held++;
}

void ibcm_src_release(struct ibcm_srcs *t, int32_t idx)
{
	if (idx >= 0 && (uint32_t)idx < t->n && t->e[idx].held)
		t->e[idx].held--;
}

uint32_t ibcm_src_held(const struct ibcm_srcs *t, int32_t idx)
{
	return idx >= 0 && (uint32_t)idx < t->n ? t->e[idx].held : 0;
}
