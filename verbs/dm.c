/* SPDX-License-Identifier: MIT */
/* Device memory: ibv_alloc_dm / ibv_free_dm, ibv_memcpy_to_dm / _from_dm,
 * ibv_reg_dm_mr, ibv_import_dm / ibv_unimport_dm. The memory is a memfd
 * of the daemon mapped here (emu/core/dm.c); copies to and from it are
 * plain loads and stores, with mlx5's rules for offsets and lengths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

struct urv_dm {
	struct ibv_dm ibdm;
	uint8_t *map;
	size_t map_size;
	uint64_t length;
};

/* the connection a context speaks on (an imported one: its origin's) */
static struct urv_context *dm_conn(struct ibv_context *ibctx)
{
	struct urv_context *c = to_uctx(ibctx);

	return c->origin ? c->origin : c;
}

static struct urv_dm *to_udm(struct ibv_dm *d)
{
	return urv_container_of(d, struct urv_dm, ibdm);
}

/* mlx5_access_dm: the range first (EFAULT), then 4-byte granularity
 * (EINVAL), as its hardware needs and the suite's bad-flow tests expect */
static int dm_range(const struct urv_dm *dm, uint64_t off, size_t len)
{
	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	if ((off & 3) || (len & 3))
		return EINVAL;
	return 0;
}

static int dm_to(struct ibv_dm *ibdm, uint64_t off, const void *host, size_t len)
{
	struct urv_dm *dm = to_udm(ibdm);
	int rc = dm_range(dm, off, len);

	if (!rc && len)
		memcpy(dm->map + off, host, len);
	return rc;
}

static int dm_from(void *host, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct urv_dm *dm = to_udm(ibdm);
	int rc = dm_range(dm, off, len);

	if (!rc && len)
		memcpy(host, dm->map + off, len);
	return rc;
}

/* the DM structure around the daemon's memfd (closed here either way) */
static struct ibv_dm *dm_wrap(struct ibv_context *ibctx, uint32_t handle, uint64_t length,
			      int fd)
{
	struct urv_dm *dm = calloc(1, sizeof(*dm));
	long pg = sysconf(_SC_PAGESIZE);

	if (!dm) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	dm->length = length;
	dm->map_size = (size_t)((length + (uint64_t)pg - 1) & ~((uint64_t)pg - 1));
	dm->map = mmap(NULL, dm->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (dm->map == MAP_FAILED) {
		free(dm);
		return NULL;
	}
	dm->ibdm.context = ibctx;
	dm->ibdm.memcpy_to_dm = dm_to;
	dm->ibdm.memcpy_from_dm = dm_from;
	dm->ibdm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->ibdm.handle = handle;
	return &dm->ibdm;
}

struct ibv_dm *urv_alloc_dm(struct ibv_context *ibctx, struct ibv_alloc_dm_attr *attr)
{
	struct urv_context *c = to_uctx(ibctx);
	struct uroce_alloc_dm_req req;
	struct uroce_alloc_dm_rep rep;
	int fd = -1, ret;

	if (!attr || attr->comp_mask || !attr->length ||
	    attr->length > c->info.max_dm_size) {
		errno = EINVAL;
		return NULL;
	}
	req = (struct uroce_alloc_dm_req){ .length = attr->length,
					   .log_align_req = attr->log_align_req };
	ret = urv_ctl(c, UROCE_OP_ALLOC_DM, &req, sizeof(req), &rep, sizeof(rep),
		      NULL, 0, &fd, 1);
	if (ret || fd < 0) {
		errno = ret ? -ret : EPROTO;
		return NULL;
	}
	struct ibv_dm *dm = dm_wrap(ibctx, rep.handle, rep.length, fd);
	if (!dm) {
		int e = errno;
		struct uroce_handle_msg fr = { .handle = rep.handle };

		urv_ctl(c, UROCE_OP_FREE_DM, &fr, sizeof(fr), NULL, 0, NULL, 0, NULL, 0);
		errno = e;
	}
	return dm;
}

int urv_free_dm(struct ibv_dm *ibdm)
{
	struct uroce_handle_msg req = { .handle = ibdm->handle };
	int ret;

	ret = urv_ctl(to_uctx(ibdm->context), UROCE_OP_FREE_DM, &req, sizeof(req),
		      NULL, 0, NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret; /* EBUSY: an MR still covers it */
	urv_unimport_dm(ibdm);
	return 0;
}

/* what the DM and the shim have, without the daemon's object */
void urv_unimport_dm(struct ibv_dm *ibdm)
{
	struct urv_dm *dm = to_udm(ibdm);

	munmap(dm->map, dm->map_size);
	free(dm);
}

struct ibv_dm *urv_import_dm(struct ibv_context *ibctx, uint32_t handle)
{
	struct uroce_import_req req = { .type = UROCE_IMPORT_DM, .handle = handle };
	struct uroce_import_rep rep;
	int fd = -1, ret;

	ret = urv_ctl(to_uctx(ibctx), UROCE_OP_IMPORT, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, &fd, 1);
	if (ret || fd < 0) {
		errno = ret ? -ret : EPROTO;
		return NULL;
	}
	return dm_wrap(ibctx, handle, rep.length, fd);
}

/* mlx5_reg_dm_mr's access set; the optional range (relaxed ordering and
 * what may follow it) is a hint a device may drop, and is dropped */
#define URV_DM_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
		       IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE)

struct ibv_mr *urv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t off,
			     size_t len, unsigned int access)
{
	struct uroce_reg_dm_mr_req req = {
		.pd = pd->handle,
		.dm = ibdm->handle,
		.offset = off,
		.length = len,
		.access = access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE,
	};
	struct uroce_reg_mr_rep rep;
	struct urv_mr *umr;
	int ret;

	/* DM MRs are zero-based: the mapping is not the application's to
	 * name (rdma-core's ibv_cmd_reg_dm_mr) */
	if ((access & ~(unsigned)URV_DM_ACCESS) || !(access & IBV_ACCESS_ZERO_BASED) ||
	    !ibdm || !urv_ctx_ours(ibdm->context) || dm_conn(ibdm->context) != dm_conn(pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	umr = calloc(1, sizeof(*umr));
	if (!umr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urv_ctl(to_uctx(pd->context), UROCE_OP_REG_DM_MR, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, NULL, 0);
	if (ret) {
		free(umr);
		errno = -ret;
		return NULL;
	}
	umr->access = req.access;
	umr->ibmr.context = pd->context;
	umr->ibmr.pd = pd;
	umr->ibmr.addr = NULL;
	umr->ibmr.length = len;
	umr->ibmr.handle = rep.handle;
	umr->ibmr.lkey = rep.lkey;
	umr->ibmr.rkey = rep.rkey;
	return &umr->ibmr;
}
