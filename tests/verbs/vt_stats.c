/* SPDX-License-Identifier: MIT */
/* The daemon's port counters for tests that link the shim: a control
 * connection of its own (the raw client of tests/emu), one QUERY_STATS. */
#include "../emu/emu_test.h"
#include "vt_stats.h"

int vt_port_stats(struct uroce_port_stats *p)
{
	static struct uroce_query_stats_rep r;
	struct uroce_query_stats_req q = { 0, 0 };
	const char *dir = getenv("UROCE_RUN_DIR");
	char sock[512];
	struct t_client c;
	int rc;

	if (!dir)
		return -ENOENT;
	snprintf(sock, sizeof(sock), "%s/uroce0.sock", dir);
	if ((rc = t_client_open(&c, sock)))
		return rc;
	rc = t_call(&c, UROCE_OP_QUERY_STATS, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);
	t_client_close(&c);
	if (!rc && r.port_stats_size != sizeof(*p))
		rc = -EPROTO;
	if (!rc)
		*p = r.port;
	return rc;
}
