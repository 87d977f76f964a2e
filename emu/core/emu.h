/* SPDX-License-Identifier: MIT */
/* uroced core (emu/core/), the lowest layer of the daemon: device, context
 * and verbs objects, and the services the layers above use. This header
 * is only an umbrella for the daemon (and tests that drive the core); the
 * core, net and transport layers include the headers of the concerns they
 * use:
 *
 *   emu_log.h    log, clock, PRNG
 *   emu_obj.h    verbs objects, contexts, limits, object operations
 *   emu_dev.h    the device and the ops tables of the layers above (driver tier)
 *   emu_mem.h    application memory, mapped MRs, the stall guard
 *   emu_burst.h  the RX burst (deferred writes, held CQEs)
 *   emu_keys.h   key checks, memory windows
 *   emu_cq.h     CQE production, event pipes
 *   emu_ring.h   the shared SQ/RQ/SRQ rings
 *
 * One engine thread per device owns everything of that device, so nothing
 * is locked. Nothing here needs DPDK: transport tests link the daemon's
 * libraries (emu_dep) with a simulated wire. The core reaches the layers
 * above only through the tables in emu_dev.h (d->xops, d->ops, d->gsi). */
#ifndef EMU_EMU_H
#define EMU_EMU_H

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_mem.h"
#include "emu_burst.h"
#include "emu_keys.h"
#include "emu_cq.h"
#include "emu_ring.h"

#endif /* EMU_EMU_H */
