/* SPDX-License-Identifier: MIT */
/* Teardown of a context (its application went away or closed it) and of
 * the device: every object destroyed in dependency order. Above the
 * object files, which it calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_cq.h"
#include "emu_mem.h"
#include "emu_int.h"

void emu_ctx_destroy(struct emu_ctx *c)
{
	static const enum emu_obj_type order[] = {
		EMU_OBJ_XQP, EMU_OBJ_QP, EMU_OBJ_SRQ, EMU_OBJ_XRCD, EMU_OBJ_AH, EMU_OBJ_MW,
		EMU_OBJ_MR, EMU_OBJ_DM, EMU_OBJ_CQ, EMU_OBJ_CHANNEL, EMU_OBJ_PD,
	};
	struct emu_dev *d = c->dev;

	c->dead = true;
	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (uint32_t i = 0; i < c->nh; i++) {
			if (c->h[i].type != order[k])
				continue;
			int rc;
			switch (order[k]) {
			case EMU_OBJ_XQP: /* fall through: emu_qp_destroy closes it */
			case EMU_OBJ_QP: rc = emu_qp_destroy(c, i); break;
			case EMU_OBJ_XRCD: rc = emu_xrcd_close(c, i); break;
			case EMU_OBJ_SRQ: rc = emu_srq_destroy(c, i); break;
			case EMU_OBJ_AH: rc = emu_ah_destroy(c, i); break;
			case EMU_OBJ_MW: rc = emu_mw_dealloc(c, i); break;
			case EMU_OBJ_MR: rc = emu_mr_dereg(c, i); break;
			case EMU_OBJ_DM: rc = emu_dm_free(c, i); break;
			case EMU_OBJ_CQ: rc = emu_cq_destroy(c, i); break;
			case EMU_OBJ_CHANNEL: rc = emu_channel_destroy(c, i); break;
			case EMU_OBJ_PD: rc = emu_pd_dealloc(c, i); break;
			default: rc = 0; break;
			}
			if (rc)
				EMU_LOG(ERR, "ctx pid %d: teardown of handle %u failed: %d\n",
					(int)c->pid, i, rc);
		}
	}
	emu_arena_fini(c); /* its QPs are gone */
	if (c->db)
		munmap(c->db, UROCE_DB_PAGE_SIZE);
	if (c->db_memfd >= 0)
		close(c->db_memfd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	emu_evq_drop(d, &c->async_q);
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->sock >= 0)
		close(c->sock);
	emu_pin_detach(c); /* the pinned pages go when the client's ring does */
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	if (c->maps_fd >= 0)
		close(c->maps_fd);
	c->mem_fd = c->maps_fd = c->pidfd = -1;
	c->db = NULL;
	c->db_memfd = c->wake_fd = c->async_fd = c->sock = -1;
	if (c->uid_slot >= 0) {
		d->uids[c->uid_slot].nobj[EMU_OBJ_NONE]--;
		c->uid_slot = -1;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		d->ctxs = c->next;
	if (c->next)
		c->next->prev = c->prev;
	d->nctx--;
	free(c->h);
	free(c->dbs);
	c->h = NULL;
	c->dbs = NULL;
	c->nh = c->ndbs = 0;
	/* Another context's QP may still hold this one as the owner of a
	 * message in progress (a multi-packet WRITE into our memory): keep
	 * the struct as a zombie (memory access then fails with -EFAULT)
	 * until no QP exists on the device. */
	c->next = d->zombies;
	d->zombies = c;
	if (d->nqp == 0)
		emu_ctx_reap(d);
}

void emu_dev_core_fini(struct emu_dev *d)
{
	while (d->ctxs)
		emu_ctx_destroy(d->ctxs);
	emu_ctx_reap(d);
	emu_xrc_dev_fini(d);
	free(d->qpn);
	free(d->mcast);
	free(d->keys);
	free(d->uids);
	d->uids = NULL;
	d->nuids = 0;
	d->qpn = NULL;
	d->mcast = NULL;
	d->keys = NULL;
}
