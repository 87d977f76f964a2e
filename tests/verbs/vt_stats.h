/* SPDX-License-Identifier: MIT */
#ifndef VT_STATS_H
#define VT_STATS_H
#include <uroce/abi.h>
/* the port counters of $UROCE_RUN_DIR/uroce0.sock: 0 or -errno */
int vt_port_stats(struct uroce_port_stats *p);
#endif
