/* SPDX-License-Identifier: MIT */
/* XRC domains and their handles (IBTA annex A14 as mlx5 exposes it;
 * docs/verbs.md "XRC"): the bookkeeping the core's object operations
 * consult (srq.c, qp.c); xrc_create.c makes the objects. A domain belongs to
 * the device: every context that opens the same file shares it. The file
 * is what the client's descriptor designates (dev/ino by fstat), so a
 * client names only files it could open itself; the domain keeps a
 * descriptor of its own on the file for its whole life, so that the
 * inode cannot be freed and its number given to another user's new
 * file, which would then name this domain. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_int.h"

/* The file of a shared domain must have been opened for reading: a
 * descriptor for writing only, or an O_PATH one (which needs no
 * permission on the file at all), names a domain its holder could not
 * have opened with read access, as the kernel's O_RDONLY open requires. */
static int xrcd_file_id(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return -EACCES;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static struct emu_xrcd *xrcd_find(struct emu_dev *d, dev_t dev, ino_t ino)
{
	for (struct emu_xrcd *x = d->xrcds; x; x = x->next)
		if (x->by_file && x->fdev == dev && x->fino == ino)
			return x;
	return NULL;
}

static struct emu_xrcd *xrcd_new(struct emu_dev *d)
{
	struct emu_xrcd *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	if (++d->next_xrcdn == 0)
		d->next_xrcdn = 1;
	x->num = d->next_xrcdn;
	x->fd = -1;
	x->next = d->xrcds;
	d->xrcds = x;
	return x;
}

static void xrcd_put(struct emu_dev *d, struct emu_xrcd *x)
{
	if (--x->refs)
		return;
	for (struct emu_xrcd **p = &d->xrcds; *p; p = &(*p)->next) {
		if (*p == x) {
			*p = x->next;
			break;
		}
	}
	if (x->fd >= 0)
		close(x->fd);
	free(x);
}

/* ibv_open_xrcd: oflags as the kernel's (O_CREAT to make the file's
 * domain, O_EXCL to insist on a new one). */
int emu_xrcd_open(struct emu_ctx *c, const struct uroce_open_xrcd_req *q, int fd,
		  struct uroce_open_xrcd_rep *r)
{
	struct emu_dev *d = c->dev;
	struct emu_xrcd *x = NULL;
	dev_t fdev = 0;
	ino_t fino = 0;
	int rc;

	if (fd >= 0) {
		rc = xrcd_file_id(fd, &fdev, &fino);
		if (rc)
			return rc;
		x = xrcd_find(d, fdev, fino);
		if (!x && !(q->oflags & O_CREAT))
			return -EAGAIN;
		if (x && (q->oflags & O_EXCL))
			return -EINVAL;
	}
	struct emu_xrcd_ref *ref = calloc(1, sizeof(*ref));
	if (!ref)
		return -ENOMEM;
	if (!x) {
		/* the caller closes fd with the request: a copy holds the inode */
		int own = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
		x = fd >= 0 && own < 0 ? NULL : xrcd_new(d);
		if (!x) {
			if (own >= 0)
				close(own);
			free(ref);
			return fd >= 0 && own < 0 ? -EMFILE : -ENOMEM;
		}
		x->by_file = fd >= 0;
		x->fd = own;
		x->fdev = fdev;
		x->fino = fino;
	}
	x->refs++;
	rc = emu_ctx_put(c, EMU_OBJ_XRCD, ref, &ref->handle);
	if (rc) {
		xrcd_put(d, x);
		free(ref);
		return rc;
	}
	ref->ctx = c;
	ref->x = x;
	r->handle = ref->handle;
	r->xrcdn = x->num;
	return 0;
}

int emu_xrcd_close(struct emu_ctx *c, uint32_t handle)
{
	struct emu_xrcd_ref *ref = emu_ctx_get(c, handle, EMU_OBJ_XRCD);

	if (!ref)
		return -EINVAL;
	if (ref->users)
		return -EBUSY; /* as the kernel's: SRQs and QPs made through it first */
	xrcd_put(c->dev, ref->x);
	emu_ctx_drop(c, handle);
	free(ref);
	return 0;
}

/* An XRC SRQ goes: TGT QPs serving a request from it let go of it (and of
 * its PD and CQ); the receive WQE a message in progress took goes with
 * it, and the rest of that message names an SRQ that no longer exists. */
void emu_xsrq_fini(struct emu_srq *srq)
{
	struct emu_dev *d = srq->ctx->dev;

	for (uint32_t n = EMU_QPN_FIRST; n < EMU_QPN_TABLE; n++) {
		struct emu_qp *qp = d->qpn[n];

		if (!qp || qp->type != IBV_QPT_XRC_RECV || qp->srq != srq)
			continue;
		qp->srq = NULL;
		qp->pd = NULL;
		qp->recv_cq = NULL;
		d->xops->xrc_tgt_unbind(qp);
	}
	d->srqn[srq->srqn] = NULL;
	srq->cq->refcnt--;
	srq->xref->users--;
	srq->xref = NULL;
	srq->cq = NULL;
}

int emu_xrc_qp_close(struct emu_ctx *c, uint32_t handle)
{
	struct emu_xqp *xq = emu_ctx_get(c, handle, EMU_OBJ_XQP);

	if (!xq)
		return -EINVAL;
	xq->ref->users--;
	emu_ctx_drop(c, handle);
	free(xq);
	return 0;
}

/* The creator's handle on a TGT QP goes (ibv_destroy_qp or its process
 * exits) while another context has it open: as the kernel's, the QP lives
 * on, now owned by that context under the handle number it already holds
 * (its opened-QP handle becomes the QP's). true if handed over. */
bool emu_xrc_tgt_handover(struct emu_ctx *c, uint32_t handle, struct emu_qp *qp)
{
	for (struct emu_ctx *o = c->dev->ctxs; o; o = o->next) {
		for (uint32_t i = 0; !o->dead && i < o->nh; i++) {
			struct emu_xqp *xq = o->h[i].type == EMU_OBJ_XQP ? o->h[i].obj : NULL;

			if (!xq || xq->qpn != qp->qpn || xq->ref->x != qp->xref->x)
				continue;
			qp->xref->users--;
			qp->xref = xq->ref; /* keeps the user count the opened handle held */
			emu_ctx_uncharge(c, qp->charged);
			if (emu_ctx_charge(o, qp->charged))
				qp->charged = 0; /* over o's limit: kept uncharged rather than lost */
			emu_ctx_drop(c, handle);
			o->nobj[EMU_OBJ_XQP]--;
			o->nobj[EMU_OBJ_QP]++;
			if (o->uid_slot >= 0) {
				o->dev->uids[o->uid_slot].nobj[EMU_OBJ_XQP]--;
				o->dev->uids[o->uid_slot].nobj[EMU_OBJ_QP]++;
			}
			o->h[i].type = EMU_OBJ_QP;
			o->h[i].obj = qp;
			qp->ctx = o;
			qp->handle = i;
			qp->user_handle = xq->user_handle;
			free(xq);
			return true;
		}
	}
	return false;
}

struct emu_qp *emu_qp_of_handle(struct emu_ctx *c, uint32_t handle)
{
	struct emu_qp *qp = emu_ctx_get(c, handle, EMU_OBJ_QP);
	struct emu_xqp *xq = qp ? NULL : emu_ctx_get(c, handle, EMU_OBJ_XQP);

	if (!xq)
		return qp;
	qp = emu_qp_lookup(c->dev, xq->qpn);
	return qp && qp->type == IBV_QPT_XRC_RECV && qp->xref->x == xq->ref->x ? qp : NULL;
}

void emu_xrc_dev_fini(struct emu_dev *d)
{
	while (d->xrcds) {
		struct emu_xrcd *x = d->xrcds;

		d->xrcds = x->next;
		free(x);
	}
	free(d->srqn);
	d->srqn = NULL;
}
