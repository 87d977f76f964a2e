/* SPDX-License-Identifier: MIT */
/* Multicast groups of UD QPs: attach, detach, the receive path's lookup
 * of a group's members. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_int.h"

int emu_mcast_op(struct emu_ctx *c, const struct uroce_mcast_req *q, bool attach)
{
	struct emu_qp *qp = emu_ctx_get(c, q->qp, EMU_OBJ_QP);

	if (!qp)
		return -EINVAL;
	return attach ? emu_mcast_attach(qp, &q->gid) : emu_mcast_detach(qp, &q->gid);
}

struct emu_mcast *emu_mcast_find(struct emu_dev *d, const union ibv_gid *gid)
{
	if (!d->mcast)
		return NULL;
	for (unsigned i = 0; i < EMU_MAX_MCAST_GRP; i++)
		if (d->mcast[i].nqp && !memcmp(d->mcast[i].gid.raw, gid->raw, 16))
			return &d->mcast[i];
	return NULL;
}

int emu_mcast_attach(struct emu_qp *qp, const union ibv_gid *gid)
{
	struct emu_dev *d = qp->dev;

	if (qp->type != IBV_QPT_UD || !emu_gid_is_mcast(gid) || !d->mcast)
		return -EINVAL;
	struct emu_mcast *m = emu_mcast_find(d, gid);
	if (!m) {
		for (unsigned i = 0; i < EMU_MAX_MCAST_GRP && !m; i++)
			if (!d->mcast[i].nqp)
				m = &d->mcast[i];
		if (!m)
			return -ENOMEM;
		m->gid = *gid;
	}
	for (uint32_t i = 0; i < m->nqp; i++)
		if (m->qp[i] == qp)
			return 0; /* attaching twice is not an error in rxe */
	if (m->nqp == EMU_MAX_MCAST_ATT)
		return -ENOMEM;
	m->qp[m->nqp++] = qp;
	qp->mcast_groups++;
	return 0;
}

int emu_mcast_detach(struct emu_qp *qp, const union ibv_gid *gid)
{
	struct emu_mcast *m = emu_mcast_find(qp->dev, gid);

	if (!m)
		return -EINVAL;
	for (uint32_t i = 0; i < m->nqp; i++) {
		if (m->qp[i] != qp)
			continue;
		m->qp[i] = m->qp[--m->nqp];
		qp->mcast_groups--;
		return 0;
	}
	return -EINVAL;
}

/* Called on QP destroy: leave every group. */
void emu_mcast_detach_all(struct emu_qp *qp)
{
	struct emu_dev *d = qp->dev;

	for (unsigned g = 0; qp->mcast_groups && d->mcast && g < EMU_MAX_MCAST_GRP; g++) {
		struct emu_mcast *m = &d->mcast[g];
		for (uint32_t i = 0; i < m->nqp; i++) {
			if (m->qp[i] == qp) {
				m->qp[i] = m->qp[--m->nqp];
				qp->mcast_groups--;
				break;
			}
		}
	}
}

/* Destroy order: QPs (they reference everything), SRQs, AHs, MWs, MRs,
 * device memory, CQs, channels, PDs. */
