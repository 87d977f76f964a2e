/* SPDX-License-Identifier: MIT */
/* The IB CM engine's counters for the outside (UROCE_OP_QUERY_CM_STATS,
 * tools/uroce-stat): named values, so that the reader needs no table of
 * its own and shows whatever this daemon counts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uroce/abi.h>

#include "ibcm.h"

static void put(struct uroce_cm_stats_rep *r, uint64_t v, const char *fmt, const char *a,
		unsigned n)
{
	if (r->n >= UROCE_CM_STATS_MAX)
		return;
	/* the name may be cut to the field: still one line per counter */
	char tmp[64];
	snprintf(tmp, sizeof(tmp), fmt, a, n);
	memcpy(r->name[r->n], tmp, UROCE_STATS_NAME_LEN - 1);
	r->name[r->n][UROCE_STATS_NAME_LEN - 1] = 0;
	r->val[r->n++] = v;
}

int emu_ibcm_stats_fill(struct emu_dev *d, struct uroce_cm_stats_rep *r)
{
	struct emu_ibcm *cm = emu_ibcm_get(d);

	if (!cm)
		return -ENODEV;
	const struct emu_ibcm_counters *c = emu_ibcm_counters(cm);
	const struct { const char *name; uint64_t v; } tot[] = {
		{ "rx-mads", c->rx_mads }, { "tx-mads", c->tx_mads },
		{ "resends", c->retransmits }, { "timeouts", c->timeouts },
		{ "duplicates", c->dup_answered }, { "rej-no-listener", c->rej_no_listener },
		{ "table-full", c->rej_no_resources }, { "stale", c->rej_stale },
		{ "drep-unknown", c->drep_unknown }, { "tx-fail", c->tx_fail },
		{ "rej-src-busy", c->rej_src_busy }, { "rej-src-table", c->rej_src_table },
		{ "half-open-gone", c->half_open_reclaimed },
		{ "ids", emu_ibcm_ids_in_use(cm) },
		{ "listeners", emu_ibcm_listeners(cm) },
	};
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < sizeof(tot) / sizeof(tot[0]); i++)
		put(r, tot[i].v, "%s", tot[i].name, 0);
	for (unsigned i = 0; i < EMU_IBCM_ATTR_SLOTS; i++) {
		const char *a = wire_cm_attr_name((uint16_t)(WIRE_CM_ATTR_REQ + i));
		if (c->rx_attr[i])
			put(r, c->rx_attr[i], "rx-%s", a, 0);
		if (c->tx_attr[i])
			put(r, c->tx_attr[i], "tx-%s", a, 0);
	}
	for (unsigned i = 0; i < EMU_IBCM_REJ_REASONS; i++) {
		if (c->rej_rx[i])
			put(r, c->rej_rx[i], "rej-rx-%s%u", "", i);
		if (c->rej_tx[i])
			put(r, c->rej_tx[i], "rej-tx-%s%u", "", i);
	}
	for (unsigned i = 0; i < EMU_IBCM_DROP_NUM; i++)
		if (c->drops[i])
			put(r, c->drops[i], "drop-%s", emu_ibcm_drop_name((enum emu_ibcm_drop)i), 0);
	for (unsigned i = 0; i < WIRE_MAD_R_NUM; i++)
		if (c->mad_reason[i])
			put(r, c->mad_reason[i], "mad-%s", wire_mad_reason_str((enum wire_mad_reason)i),
			    0);
	return 0;
}
