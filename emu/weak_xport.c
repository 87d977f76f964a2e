/* SPDX-License-Identifier: MIT */
/* Weak fallbacks for the transport hooks, so the daemon links while the
 * transport is partly written. emu_core is linked whole, so any real
 * definition wins. */
#include <errno.h>

#include "emu.h"

#define WEAK __attribute__((weak))

WEAK void emu_xport_qp_init(struct emu_qp *qp) { (void)qp; }
WEAK void emu_xport_qp_fini(struct emu_qp *qp) { (void)qp; }
WEAK int emu_qp_modify(struct emu_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	(void)qp; (void)attr; (void)mask;
	return -EOPNOTSUPP;
}
WEAK int emu_qp_query(struct emu_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)mask;
	*attr = qp->attr;
	return 0;
}
WEAK void emu_xport_sq_kick(struct emu_qp *qp) { (void)qp; }
WEAK void emu_xport_rq_kick(struct emu_qp *qp) { (void)qp; }
WEAK void emu_xport_srq_kick(struct emu_srq *srq) { (void)srq; }
WEAK void emu_xport_rx(struct emu_dev *d, struct emu_qp *qp, const struct wire_pkt *pkt)
{
	(void)d; (void)qp; (void)pkt;
}
WEAK void emu_xport_poll(struct emu_dev *d, uint64_t now_ns) { (void)d; (void)now_ns; }
WEAK uint64_t emu_xport_next_deadline(struct emu_dev *d) { (void)d; return UINT64_MAX; }
WEAK void emu_xport_flush(struct emu_qp *qp) { (void)qp; }
WEAK void emu_xport_mem_fault(struct emu_qp *qp) { (void)qp; }
WEAK void emu_xport_rx_batch(struct emu_dev *d, bool on) { (void)d; emu_mem_batch(on); }
