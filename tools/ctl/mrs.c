/* SPDX-License-Identifier: MIT */
/* `mrs`: the memory registrations the daemon lets us see (ours; all for
 * root and the daemon's uid) and how the device reaches each one
 * (UROCE_OP_QUERY_MRS, docs/verbs.md "Registered memory"): pinned pages,
 * the address (a registration the kernel would not pin for, and why),
 * ODP, device memory; pieces the daemon maps; payload pieces moved by
 * each route. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static int mrs_get(struct ctl *c, struct uroce_mr_info **out, uint32_t *n)
{
	static struct uroce_query_mrs_rep rep;
	struct uroce_query_mrs_req q = { 0, 0 };

	*out = NULL;
	*n = 0;
	for (unsigned pages = 0; pages < 1u << 16; pages++) {
		int rc = ctl_call(c, UROCE_OP_QUERY_MRS, &q, sizeof(q), &rep, sizeof(rep), -1);
		if (rc)
			return rc;
		if (rep.n > UROCE_MRS_PER_MSG)
			return -EPROTO;
		struct uroce_mr_info *m = realloc(*out, (*n + rep.n + 1) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		*out = m;
		memcpy(m + *n, rep.mrs, rep.n * sizeof(*m));
		*n += rep.n;
		if (!rep.next_pid)
			return 0;
		q.start_pid = rep.next_pid;
		q.start_handle = rep.next_handle;
	}
	return 0; /* never loop on a confused daemon */
}

static const char *mr_route(const struct uroce_mr_info *m)
{
	if (m->flags & UROCE_MRI_DM)
		return "dm";
	if (m->flags & UROCE_MRI_ODP)
		return "odp";
	switch (m->pin) {
	case UROCE_PIN_RING:
		return "pinned";
	case UROCE_PIN_NONE:
		return "unpinned";
	default:
		return "-";
	}
}

static void mr_access(unsigned a, char *s, size_t n)
{
	snprintf(s, n, "%s%s%s%s", a & IBV_ACCESS_LOCAL_WRITE ? "L" : "-",
		 a & IBV_ACCESS_REMOTE_WRITE ? "W" : "-", a & IBV_ACCESS_REMOTE_READ ? "R" : "-",
		 a & IBV_ACCESS_REMOTE_ATOMIC ? "A" : "-");
}

int ctl_cmd_mrs(struct ctl *c, int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return -CTL_USAGE;
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	struct uroce_mr_info *m;
	uint32_t n;
	if ((rc = mrs_get(c, &m, &n))) {
		free(m);
		return ctl_fail(c, "query MRs", rc);
	}
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_arr("mrs");
	} else {
		printf("%-7s %-6s %-18s %-12s %-6s %-10s %-9s %-16s %-6s %-9s %-9s %s\n", "PID",
		       "HANDLE", "ADDR", "LENGTH", "ACCESS", "LKEY", "ROUTE", "WHY", "MAPPED",
		       "PINNED", "UNPINNED", "BY_MAP");
	}
	for (uint32_t i = 0; i < n; i++) {
		char acc[8];
		const char *why = m[i].pin == UROCE_PIN_NONE && m[i].why > 0 ? strerror(m[i].why) : "-";
		mr_access(m[i].access, acc, sizeof(acc));
		if (c->json) {
			js_obj(NULL);
			js_u64("pid", m[i].pid);
			js_u64("handle", m[i].handle);
			js_u64("addr", m[i].addr);
			js_u64("length", m[i].length);
			js_u64("access", m[i].access);
			js_u64("lkey", m[i].lkey);
			js_str("route", mr_route(&m[i]));
			if (m[i].pin == UROCE_PIN_NONE)
				js_str("why", why);
			else
				js_null("why");
			js_u64("mapped_pieces", m[i].mapped);
			js_u64("pinned", m[i].pinned);
			js_u64("unpinned", m[i].unpinned);
			js_u64("by_map", m[i].by_map);
			js_end();
		} else {
			printf("%-7u %-6u 0x%-16llx %-12llu %-6s 0x%-8x %-9s %-16.16s %-6u %-9llu %-9llu "
			       "%llu\n", m[i].pid, m[i].handle, (unsigned long long)m[i].addr,
			       (unsigned long long)m[i].length, acc, m[i].lkey, mr_route(&m[i]), why,
			       m[i].mapped, (unsigned long long)m[i].pinned,
			       (unsigned long long)m[i].unpinned, (unsigned long long)m[i].by_map);
		}
	}
	if (c->json) {
		js_end();
		js_end();
		js_done();
	}
	free(m);
	return CTL_OK;
}
