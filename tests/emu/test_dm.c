/* SPDX-License-Identifier: MIT */
/* Device memory in the daemon's core (emu/core/dm.c, emu_dm_reg_mr):
 * charge and limits, the zero-based local address space of a DM MR,
 * placement through its piece, addresses that miss it (kernel half) never
 * reaching memory, another context unable to name or register it, free
 * while registered, teardown with everything live. In-process contexts:
 * a miss would be a memmove at a kernel address, so the guard is what
 * keeps this test alive. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xport.h"

static int fails;
#define T_FAILURES fails
#include "../include/check.h"

static uint32_t dm_alloc(struct emu_ctx *c, uint64_t len, int *rc)
{
	struct uroce_alloc_dm_req q = { .length = len };
	struct uroce_alloc_dm_rep r = { 0 };
	int fd = -1;

	*rc = emu_dm_alloc(c, &q, &r, &fd);
	return r.handle;
}

static void test_mr(struct emu_dev *d)
{
	struct emu_ctx *a = emu_ctx_new(d, getpid(), -1), *b = emu_ctx_new(d, getpid(), -1);
	uint32_t pd = 0, pdb = 0;
	int rc, err;

	CHECK(emu_pd_alloc(a, &pd) == 0 && emu_pd_alloc(b, &pdb) == 0, "pds");
	uint32_t h = dm_alloc(a, 10000, &rc);
	CHECK(rc == 0, "alloc %d", rc);
	struct emu_dm *dm = emu_ctx_get(a, h, EMU_OBJ_DM);
	CHECK(dm && dm->size == 12288 && a->mem == 12288, "charged %lu", (unsigned long)a->mem);
	CHECK(dm->va >= EMU_DM_VA_BASE, "kernel half");
	struct uroce_reg_dm_mr_req q = { .pd = pd, .dm = h, .offset = 4096, .length = 4096,
					 .access = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
						   IBV_ACCESS_REMOTE_WRITE };
	struct uroce_reg_mr_rep r;
	q.access &= ~(unsigned)IBV_ACCESS_ZERO_BASED;
	CHECK(emu_dm_reg_mr(a, &q, &r) == -EINVAL, "zero-based required");
	q.access |= IBV_ACCESS_ZERO_BASED;
	q.length = 10000 - 4096 + 1;
	CHECK(emu_dm_reg_mr(a, &q, &r) == -EINVAL, "past the DM");
	q.length = 4096;
	CHECK(emu_dm_reg_mr(a, &q, &r) == 0, "reg");
	struct emu_pd *p = emu_ctx_get(a, pd, EMU_OBJ_PD);
	struct emu_mr *mr = emu_mr_check_lkey(p, r.lkey, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &err);
	CHECK(mr && mr->dm == dm && mr->iova == 0, "lkey over offsets from 0");
	CHECK(!emu_mr_check_lkey(p, r.lkey, 1, 4096, 0, &err) && err == -ERANGE, "bounds");
	CHECK(!emu_mr_check_lkey(p, r.lkey, mr->addr, 1, 0, &err) && err == -ERANGE,
	      "its daemon address is no local address");
	/* placement through the piece lands in the DM's memory */
	CHECK(emu_mr_write(mr, mr->addr + 8, "dm!", 4) == 0, "write");
	CHECK(!memcmp(dm->map + 4096 + 8, "dm!", 4), "placed at DM offset 4104");
	uint8_t x[4] = { 0 };
	CHECK(emu_mr_read(mr, x, mr->addr + 8, 4) == 0 && !memcmp(x, "dm!", 4), "read");
	/* a range past the piece (still the DM's addresses) reaches nothing,
	 * nor does the address alone, without the registration */
	CHECK(emu_mr_write(mr, mr->addr + 4090, "overrun", 8) == -EFAULT, "past the piece");
	CHECK(emu_mem_read(a, x, mr->addr + 8, 4) == -EFAULT, "the address alone");
	CHECK(emu_mem_read(a, x, dm->va, 4) == -EFAULT, "DM bytes outside the MR");
	/* another context: the handle names nothing there, the address is no
	 * memory of its process */
	uint64_t len;
	int fd;
	CHECK(emu_dm_import(b, h, &len, &fd) == -EINVAL, "import elsewhere");
	struct uroce_reg_dm_mr_req qb = q;
	qb.pd = pdb;
	CHECK(emu_dm_reg_mr(b, &qb, &r) == -EINVAL, "register elsewhere");
	struct uroce_reg_mr_req rq = { .pin = UROCE_PIN_NONE, .pd = pdb, .access = IBV_ACCESS_LOCAL_WRITE,
				       .addr = mr->addr, .length = 16, .iova = 0 };
	CHECK(emu_mr_reg(b, &rq, &r) == -EFAULT, "a plain MR at its address");
	CHECK(emu_mem_read(b, x, mr->addr + 8, 4) == -EFAULT, "b reads a's DM address");
	/* busy while registered; a's teardown with a DM and its MR live */
	CHECK(emu_dm_free(a, h) == -EBUSY, "busy");
	emu_ctx_destroy(a);
	emu_ctx_destroy(b);
}

static void test_limits(struct emu_dev *d)
{
	struct emu_ctx *c = emu_ctx_new(d, getpid(), -1);
	uint32_t h[3];
	int rc;

	CHECK(emu_dm_max_size() == EMU_DM_MAX_SIZE, "max %u", emu_dm_max_size());
	CHECK(emu_limit_set("dm=2", false) == 0, "limit");
	h[0] = dm_alloc(c, 4, &rc);
	h[1] = dm_alloc(c, 4, &rc);
	dm_alloc(c, 4, &rc);
	CHECK(rc == -ENOMEM, "third of 2: %d", rc);
	CHECK(emu_dm_free(c, h[0]) == 0 && emu_dm_free(c, h[1]) == 0 && c->mem == 0, "freed");
	CHECK(emu_limit_set("dm=256", false) == 0, "limit back");
	/* the memory limit bounds max_dm_size and the sum */
	CHECK(emu_limit_set("mem=8K", false) == 0, "mem");
	CHECK(emu_dm_max_size() == 8192, "max under mem=8K: %u", emu_dm_max_size());
	dm_alloc(c, 8193, &rc);
	CHECK(rc == -EINVAL, "over max: %d", rc);
	h[2] = dm_alloc(c, 8192, &rc);
	CHECK(rc == 0, "all of it");
	dm_alloc(c, 4, &rc);
	CHECK(rc == -ENOMEM, "nothing left: %d", rc);
	CHECK(emu_dm_free(c, h[2]) == 0, "free");
	CHECK(emu_limit_set("mem=256M", false) == 0, "mem back");
	struct uroce_alloc_dm_req q = { .length = 64, .comp_mask = 1 };
	struct uroce_alloc_dm_rep r;
	int fd;
	CHECK(emu_dm_alloc(c, &q, &r, &fd) == -EINVAL, "comp_mask");
	q.comp_mask = 0;
	q.log_align_req = 13;
	CHECK(emu_dm_alloc(c, &q, &r, &fd) == -EINVAL, "alignment past a page");
	emu_ctx_destroy(c);
}

int main(void)
{
	struct emu_dev d;
	uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };

	CHECK(emu_dev_init(&d, "dm0", mac, 1500, NULL, 0) == 0, "dev");
	test_mr(&d);
	test_limits(&d);
	emu_dev_fini(&d);
	if (fails)
		fprintf(stderr, "%d failure(s)\n", fails);
	return fails ? 1 : 0;
}
