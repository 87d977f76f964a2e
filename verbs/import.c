/* SPDX-License-Identifier: MIT */
/* ibv_import_device, ibv_import_pd, ibv_import_mr (rdma-core's shared PD).
 *
 * A uroce context's cmd_fd is its control socket, the connection that is
 * the daemon context. ibv_import_device on that socket (or a dup of it)
 * in the process that opened the context gives a second ibv_context on
 * the same connection, as a kernel uverbs fd gives a second context on
 * the same ucontext: the same objects, named by the same handles.
 *
 * What the descriptor proves is that its holder was given the context;
 * handles are per connection, so no other context's objects can be named.
 * A socket from another process (SCM_RIGHTS) or inherited over fork() is
 * refused (EOPNOTSUPP): its connection's memory is the opener's address
 * space (the /proc/<pid>/mem of HELLO), and a second process speaking on
 * it could register and reach memory of the first that the first never
 * registered, which a kernel uverbs fd does not allow (MRs pin the memory
 * of the process that registers them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

static struct urv_context *import_ctx(struct urv_context *o, int fd,
				      const struct stat *st)
{
	struct urv_context *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->origin = o;
	c->dev = o->dev;
	c->refs = 1;
	c->pid = o->pid;
	c->sock = fd;
	c->sock_dev = st->st_dev;
	c->sock_ino = st->st_ino;
	c->db = o->db;
	c->wake_fd = o->wake_fd;
	pthread_mutex_lock(&o->ctl_lock);
	c->info = o->info;
	pthread_mutex_unlock(&o->ctl_lock);
	pthread_mutex_init(&c->ctl_lock, NULL);
	pthread_mutex_init(&c->async_lock, NULL);
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.device = o->vctx.context.device;
	c->vctx.context.cmd_fd = fd;
	/* one daemon context, one async event pipe (the kernel's ucontext
	 * has one async event file too) */
	c->vctx.context.async_fd = o->vctx.context.async_fd;
	c->vctx.context.num_comp_vectors = o->vctx.context.num_comp_vectors;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	urv_set_ops(c);
	return c;
}

/* false: fd is not a socket (a kernel uverbs fd: the real library's). */
bool urv_import_device(int fd, struct ibv_context **out)
{
	struct urv_context *o, *c;
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return false;
	*out = NULL;
	o = urv_ctx_by_sock(st.st_dev, st.st_ino);
	if (!o) {
		errno = EOPNOTSUPP;
		return true;
	}
	if (o->origin || o->pid != getpid()) {
		urv_ctx_put(o);
		errno = EOPNOTSUPP;
		return true;
	}
	c = import_ctx(o, fd, &st);
	if (!c) {
		urv_ctx_put(o);
		errno = ENOMEM;
		return true;
	}
	*out = &c->vctx.context;
	return true;
}

static int import_obj(struct ibv_context *ibctx, uint32_t type, uint32_t handle,
		      uint32_t pd, struct uroce_import_rep *rep)
{
	struct uroce_import_req req = { .type = type, .handle = handle, .pd = pd };

	return urv_ctl(to_uctx(ibctx), UROCE_OP_IMPORT, &req, sizeof(req), rep,
		       sizeof(*rep), NULL, 0, NULL, 0);
}

struct ibv_pd *urv_import_pd(struct ibv_context *ibctx, uint32_t handle)
{
	struct uroce_import_rep rep;
	struct urv_pd *pd;
	int ret = import_obj(ibctx, UROCE_IMPORT_PD, handle, 0, &rep);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	pd = urv_pd_new(ibctx, handle);
	return pd ? &pd->ibpd : NULL;
}

/* As the kernel's: the address is not known to the importer (NULL). */
struct ibv_mr *urv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
	struct uroce_import_rep rep;
	struct urv_mr *mr;
	int ret = import_obj(pd->context, UROCE_IMPORT_MR, handle, pd->handle, &rep);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->iova = rep.iova;
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.length = rep.length;
	mr->ibmr.handle = handle;
	mr->ibmr.lkey = rep.lkey;
	mr->ibmr.rkey = rep.rkey;
	return &mr->ibmr;
}
