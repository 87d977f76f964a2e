/* SPDX-License-Identifier: MIT */
/* Wildcard listeners on every uroce device (docs/cm.md, "Wildcard
 * listeners"): a listener bound to the wildcard gets a copy on each other
 * device's secondary file; commands naming ids of a secondary go there
 * (the index in their top bits), replies come back tagged. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_user_cm.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_obj.h"
#include "ucma_int.h"

/* A command for secondary file src went out with the daemon's handle: the
 * application sees (and the tracking keeps) the id and the handles in the
 * reply with src in their top bits. */
void ucma_mux_tag(struct uroce_ucma_cmd_req *req, uint8_t *rep, unsigned src)
{
	uint32_t tag = (uint32_t)src << URV_MUX_SHIFT, h;
	long off = urv_cm_id_offset(req->cmd);

	if (off >= 0 && req->in >= (uint32_t)off + sizeof(h)) {
		memcpy(&h, req->data + off, sizeof(h));
		h |= tag;
		memcpy(req->data + off, &h, sizeof(h));
	}
	if (req->cmd == RDMA_USER_CM_CMD_GET_EVENT)
		off = offsetof(struct rdma_ucm_event_resp, id);
	else if (req->cmd == RDMA_USER_CM_CMD_JOIN_IP_MCAST ||
		 req->cmd == RDMA_USER_CM_CMD_JOIN_MCAST)
		off = offsetof(struct rdma_ucm_create_id_resp, id);
	else
		return;
	memcpy(&h, rep + off, sizeof(h));
	h |= tag;
	memcpy(rep + off, &h, sizeof(h));
}

/* One command of the shim's own on f's file src (0: the primary). */
static int file_cmd(struct ucma_file *f, unsigned src, uint32_t cmd, const void *in,
		    uint32_t in_len, void *rep, uint32_t out)
{
	union {
		struct uroce_ucma_cmd_req r;
		uint8_t b[sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN];
	} req;

	memset(&req.r, 0, sizeof(req.r));
	memcpy(req.r.data, in, in_len);
	req.r.file = src ? f->mux.sec[src].handle : f->handle;
	req.r.cmd = cmd;
	req.r.out = out;
	req.r.in = in_len;
	if (src)
		return urv_mux_call(f->mux.sec[src].conn, UROCE_OP_UCMA_CMD, &req,
				    sizeof(req.r) + in_len, rep, out, NULL, 0);
	return ucma_ctl_call(UROCE_OP_UCMA_CMD, &req, sizeof(req.r) + in_len, rep, out, NULL, 0);
}

/* one id option on secondary k's id h, as the application set it */
static int shadow_option(struct ucma_file *f, unsigned k, uint32_t h, uint32_t name, int v,
			 uint32_t len)
{
	struct {
		struct rdma_ucm_set_option o;
		int v;
	} s = { .o = { .id = h, .level = RDMA_OPTION_ID, .optname = name, .optlen = len } };

	if (len == 1)
		memcpy(&s.v, &(uint8_t){ (uint8_t)v }, 1);
	else
		s.v = v;
	return file_cmd(f, k, RDMA_USER_CM_CMD_SET_OPTION, &s, sizeof(s.o) + len, NULL, 0);
}

/* the id options set before LISTEN that decide what the copy hears and
 * binds: AFONLY and TOS as the kernel's per-device listeners take them
 * (cma_listen_on_dev), REUSEADDR because the copy binds in the other
 * device's port space as the listener did in its own */
static int shadow_options(struct ucma_file *f, unsigned k, uint32_t h, const struct urv_cm_id *id)
{
	int rc = 0;

	if (id->reuse_set)
		rc = shadow_option(f, k, h, RDMA_OPTION_ID_REUSEADDR, id->reuseaddr, sizeof(int));
	if (!rc && id->afonly_set)
		rc = shadow_option(f, k, h, RDMA_OPTION_ID_AFONLY, id->afonly, sizeof(int));
	if (!rc && id->tos_set)
		rc = shadow_option(f, k, h, RDMA_OPTION_ID_TOS, id->tos, 1);
	return rc;
}

/* the listener's copy on secondary k: its port space, context, options
 * and address */
static uint32_t mux_shadow(struct ucma_file *f, unsigned k, const struct urv_cm_id *id,
			   const void *addr, uint32_t backlog)
{
	struct rdma_ucm_create_id c = { .uid = id->uid, .ps = id->ps, .qp_type = id->qp_type };
	struct rdma_ucm_create_id_resp cr = { 0 };
	struct rdma_ucm_bind_ip b = { 0 };
	struct rdma_ucm_listen l = { .backlog = backlog };
	struct rdma_ucm_destroy_id d = { 0 };
	struct rdma_ucm_destroy_id_resp dr;

	if (file_cmd(f, k, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), &cr, sizeof(cr)))
		return 0;
	b.id = l.id = d.id = cr.id;
	memcpy(&b.addr, addr, sizeof(b.addr));
	if (!shadow_options(f, k, cr.id, id) &&
	    !file_cmd(f, k, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), NULL, 0) &&
	    !file_cmd(f, k, RDMA_USER_CM_CMD_LISTEN, &l, sizeof(l), NULL, 0))
		return cr.id;
	/* that device cannot (its port taken there): the others still hear */
	file_cmd(f, k, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), &dr, sizeof(dr));
	return 0;
}

/* LISTEN succeeded on an id of the primary: bound to the wildcard, it
 * listens on every other uroce device too, as the kernel's rdma_cm listens
 * on every device (its requests then come on those devices' files). */
static void mux_listen(struct ucma_file *f, const struct rdma_ucm_listen *l)
{
	struct rdma_ucm_query q = { .id = l->id };
	struct rdma_ucm_query_route_resp qr;
	struct urv_mux_shadow sh = { .id = l->id };
	struct urv_cm_id id, *p;
	struct ibv_device **list;
	bool any = false;
	int n = 0;

	pthread_mutex_lock(&ucma_list_lock);
	p = urv_cm_track_id(&f->t, l->id);
	if (p)
		id = *p;
	pthread_mutex_unlock(&ucma_list_lock);
	if (!p || file_cmd(f, 0, RDMA_USER_CM_CMD_QUERY_ROUTE, &q, sizeof(q), &qr, sizeof(qr)) ||
	    !urv_cm_addr_any(&qr.src_addr))
		return;
	list = urv_get_device_list(NULL, 0, &n);
	if (!list)
		return;
	for (int i = 0; i < n; i++) {
		struct urv_device *d = urv_container_of(list[i], struct urv_device, ibdev);
		int k;

		if (!strcmp(d->sock_path, ucma_ctl_path()) ||
		    (k = urv_mux_sec_get(&f->mux, f->fd, d->sock_path)) <= 0)
			continue;
		sh.h[k] = mux_shadow(f, (unsigned)k, &id, &qr.src_addr, l->backlog);
		any |= sh.h[k] != 0;
	}
	free(list - 1);
	struct urv_mux_shadow *t = any ? realloc(f->mux.shadows,
						 (f->mux.nshadows + 1) * sizeof(*t)) : NULL;
	if (t) {
		t[f->mux.nshadows++] = sh;
		f->mux.shadows = t;
	}
}

/* the listener goes: its copies with it */
static void mux_unlisten(struct ucma_file *f, uint32_t id)
{
	for (unsigned i = 0; i < f->mux.nshadows; i++) {
		struct urv_mux_shadow *sh = &f->mux.shadows[i];

		if (sh->id != id)
			continue;
		for (unsigned k = 1; k <= URV_MUX_MAX; k++) {
			struct rdma_ucm_destroy_id d = { .id = sh->h[k] };
			struct rdma_ucm_destroy_id_resp dr;

			if (sh->h[k])
				file_cmd(f, k, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), &dr,
					 sizeof(dr));
		}
		*sh = f->mux.shadows[--f->mux.nshadows];
		return;
	}
}

/* MIGRATE_ID of an id of secondary k (a request that came on another
 * device, to a synchronous id's own channel): it moves between the two
 * files' secondaries on that device; the destination's is opened now. */
static int mux_migrate(struct ucma_file *f, struct uroce_ucma_cmd_req *req, unsigned k)
{
	struct rdma_ucm_migrate_id m;
	struct ucma_file *from;
	uint32_t h = 0;
	int ret;

	if (req->in < sizeof(m) || k > URV_MUX_MAX)
		return -EINVAL;
	memcpy(&m, req->data, sizeof(m));
	pthread_mutex_lock(&ucma_list_lock);
	from = ucma_file_by_handle(m.fd); /* migrate_fd put the file's handle there */
	if (from && from->mux.sec[k].open)
		h = from->mux.sec[k].handle;
	pthread_mutex_unlock(&ucma_list_lock);
	if (!from || !h)
		return -EINVAL;
	ret = urv_mux_sec_k(&f->mux, f->fd, k);
	if (ret < 0)
		return ret;
	m.fd = h;
	memcpy(req->data, &m, sizeof(m));
	return 0;
}

/* Which file a command goes to: an id with a secondary's index in its top
 * bits goes there, without them. 0 or -errno. */
int ucma_mux_route(struct ucma_file *f, struct uroce_ucma_cmd_req *req, unsigned *src)
{
	long off = urv_cm_id_offset(req->cmd);
	uint32_t h;

	*src = 0;
	if (off < 0 || req->in < (uint32_t)off + sizeof(h))
		return 0;
	memcpy(&h, req->data + off, sizeof(h));
	if (!(h >> URV_MUX_SHIFT))
		return 0;
	*src = h >> URV_MUX_SHIFT;
	h &= URV_MUX_MASK;
	memcpy(req->data + off, &h, sizeof(h));
	if (req->cmd == RDMA_USER_CM_CMD_MIGRATE_ID)
		return mux_migrate(f, req, *src);
	return *src <= URV_MUX_MAX && f->mux.sec[*src].open ? 0 : -ENOENT;
}

/* after a command succeeded on the primary: wildcard listeners' copies */
void ucma_mux_after(struct ucma_file *f, const struct uroce_ucma_cmd_req *req)
{
	if (req->cmd == RDMA_USER_CM_CMD_LISTEN && req->in >= sizeof(struct rdma_ucm_listen)) {
		struct rdma_ucm_listen l;

		memcpy(&l, req->data, sizeof(l));
		mux_listen(f, &l);
	} else if (req->cmd == RDMA_USER_CM_CMD_DESTROY_ID && f->mux.nshadows &&
		   req->in >= sizeof(struct rdma_ucm_destroy_id)) {
		struct rdma_ucm_destroy_id d;

		memcpy(&d, req->data, sizeof(d));
		mux_unlisten(f, d.id);
	}
}
