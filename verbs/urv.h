/* SPDX-License-Identifier: MIT */
/* liburoce internals, all of them: an umbrella for the files that name
 * every kind of object (ops.c's table, interpose.c's exports). The others
 * include the headers of the concerns they use:
 *
 *   urv_base.h   container_of, the data path's spinlock
 *   urv_dev.h    devices, contexts, the real libibverbs, the ops table
 *   urv_ctl.h    control requests, doorbells, the daemon's liveness
 *   urv_obj.h    the verbs objects and their registry
 *   urv_mem.h    daemon-mapped, moved and on-demand-paging memory
 *   urv_verbs.h  the verbs implemented, by object
 */
#ifndef URV_H
#define URV_H

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"
#include "urv_verbs.h"

#endif /* URV_H */
