/* SPDX-License-Identifier: MIT */
/* The QP ring arena of a context (abi.h, UROCE_OP_CREATE_QP_ARENA): QP
 * rings are carved in whole pages from sealed memfds of UROCE_ARENA_CHUNK
 * bytes, so creating a QP costs neither a memfd, a seal, a mapping nor a
 * descriptor passed to the client, on either side, except once per chunk
 * (docs/performance.md, "QP setup").
 *
 * A chunk is charged whole to the context when it is made and stays until
 * the context ends: the client maps it once and may write anywhere in it,
 * so what it can make the system hold is bounded by its memory limit, not
 * by the QPs it has now. A freed range is punched out (its pages go back
 * and read as zeros when a later QP gets them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_obj.h"

#define EMU_ARENA_PAGES (UROCE_ARENA_CHUNK / 4096)
#define EMU_ARENA_WORDS (EMU_ARENA_PAGES / 64)
/* more than any memory limit needs: the table is an array */
#define EMU_ARENA_MAX_CHUNKS 65536u

/* Pages are populated this many at a time ahead of use: a page fault of
 * a fresh shmem page was ~2.8 us here, five sixths of a QP's create; one
 * madvise per window instead, and a context with one QP holds a window,
 * not its whole chunk, in memory */
#define EMU_ARENA_WINDOW 16u

struct emu_arena_chunk {
	uint8_t *map;
	uint32_t used;                   /* pages allocated */
	uint32_t populated;              /* pages [0, populated) were populated once */
	uint64_t bits[EMU_ARENA_WORDS];  /* page i allocated: bit i */
};

struct emu_arena {
	struct emu_arena_chunk *ch;
	uint32_t n, cap;
	uint32_t hint; /* chunks below it are full */
};

static bool page_used(const struct emu_arena_chunk *k, uint32_t i)
{
	return k->bits[i / 64] >> (i % 64) & 1;
}

static void pages_set(struct emu_arena_chunk *k, uint32_t first, uint32_t n, bool on)
{
	for (uint32_t i = first; i < first + n; i++) {
		if (on)
			k->bits[i / 64] |= 1ull << (i % 64);
		else
			k->bits[i / 64] &= ~(1ull << (i % 64));
	}
}

/* first fit of n pages in k: the first page, or -1 */
static int32_t chunk_fit(const struct emu_arena_chunk *k, uint32_t n)
{
	if (EMU_ARENA_PAGES - k->used < n)
		return -1;
	for (uint32_t i = 0, run = 0; i < EMU_ARENA_PAGES; i++) {
		run = page_used(k, i) ? 0 : run + 1;
		if (run == n)
			return (int32_t)(i + 1 - n);
	}
	return -1;
}

/* a new chunk at the end of the table, charged to c: 0, *fd to send */
static int chunk_new(struct emu_ctx *c, struct emu_arena *a, int *fd)
{
	if (a->n >= EMU_ARENA_MAX_CHUNKS)
		return -ENOMEM;
	if (a->n == a->cap) {
		uint32_t nc = a->cap ? a->cap * 2 : 16;
		struct emu_arena_chunk *t = realloc(a->ch, nc * sizeof(*t));

		if (!t)
			return -ENOMEM;
		a->ch = t;
		a->cap = nc;
	}
	int rc = emu_ctx_charge(c, UROCE_ARENA_CHUNK);
	if (rc)
		return rc;
	struct emu_arena_chunk *k = &a->ch[a->n];
	void *map;
	rc = emu_shm_create("uroce-qps", UROCE_ARENA_CHUNK, fd, &map);
	if (rc) {
		emu_ctx_uncharge(c, UROCE_ARENA_CHUNK);
		return rc;
	}
	memset(k, 0, sizeof(*k));
	k->map = map;
	a->n++;
	return 0;
}

int emu_arena_alloc(struct emu_ctx *c, size_t size, struct emu_arena_piece *p)
{
	struct emu_arena *a = c->arena;
	uint32_t n = (uint32_t)((size + 4095) / 4096);
	int32_t first = -1;
	uint32_t i;

	p->new_fd = -1;
	if (!n || size > UROCE_ARENA_MAX_RINGS)
		return -EINVAL;
	if (!a) {
		a = c->arena = calloc(1, sizeof(*a));
		if (!a)
			return -ENOMEM;
	}
	for (i = a->hint; i < a->n; i++) {
		first = chunk_fit(&a->ch[i], n);
		if (first >= 0)
			break;
		if (i == a->hint && a->ch[i].used == EMU_ARENA_PAGES)
			a->hint++;
	}
	if (first < 0) {
		int rc = chunk_new(c, a, &p->new_fd);
		if (rc)
			return rc;
		i = a->n - 1;
		first = 0;
	}
	struct emu_arena_chunk *k = &a->ch[i];
	uint32_t end = (uint32_t)first + n;
	if (end > k->populated) {
		uint32_t to = end + EMU_ARENA_WINDOW - 1 < EMU_ARENA_PAGES ?
			      end + EMU_ARENA_WINDOW - 1 : EMU_ARENA_PAGES;
		/* an error (an older kernel) leaves it to the page faults */
		(void)madvise(k->map + (size_t)k->populated * 4096,
			      (size_t)(to - k->populated) * 4096, MADV_POPULATE_WRITE);
		k->populated = to;
	}
	pages_set(k, (uint32_t)first, n, true);
	k->used += n;
	p->chunk = i;
	p->off = (uint64_t)first * 4096;
	p->map = k->map + p->off;
	return 0;
}

void emu_arena_free(struct emu_ctx *c, void *at, size_t size)
{
	struct emu_arena *a = c->arena;
	uint32_t n = (uint32_t)((size + 4095) / 4096), chunk;
	uint8_t *p = at;

	/* found by address: struct emu_qp has no room for the index (2 KB
	 * per QP), and a context has a chunk per 128 small QPs */
	for (chunk = 0; a && chunk < a->n; chunk++)
		if (p >= a->ch[chunk].map && p < a->ch[chunk].map + UROCE_ARENA_CHUNK)
			break;
	if (!a || chunk == a->n)
		return;
	struct emu_arena_chunk *k = &a->ch[chunk];
	uint64_t off = (uint64_t)(p - k->map);
	if (off % 4096 || off / 4096 + n > EMU_ARENA_PAGES)
		return;
	/* the pages go back to the system, and read as zeros for the next
	 * ring here (its header's indices start at 0) */
	if (madvise(k->map + off, n * 4096ul, MADV_REMOVE) < 0)
		memset(k->map + off, 0, n * 4096ul);
	pages_set(k, (uint32_t)(off / 4096), n, false);
	k->used -= n;
	if (chunk < a->hint)
		a->hint = chunk;
}

void emu_arena_fini(struct emu_ctx *c)
{
	struct emu_arena *a = c->arena;

	if (!a)
		return;
	for (uint32_t i = 0; i < a->n; i++) {
		munmap(a->ch[i].map, UROCE_ARENA_CHUNK);
		emu_ctx_uncharge(c, UROCE_ARENA_CHUNK);
	}
	free(a->ch);
	free(a);
	c->arena = NULL;
}
