/* SPDX-License-Identifier: MIT */
/* Drops and discards by reason (UROCE_OP_QUERY_DROPS, docs/running.md
 * "Counters"), shown with `counters`: the port's as "link.NAME" (what the
 * PMD, the kernel socket and the interface lost before the daemon saw a
 * frame) and "qps.NAME" lines (the transport's over every QP the device
 * had), each QP's as "drop.NAME" lines. A daemon without the op shows
 * none of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* Every page; a daemon without the op (or a confused one) leaves what was
 * read so far. */
void ctl_drops_get(struct ctl *c, struct ctl_drops *d, bool port_only)
{
	static struct uroce_query_drops_rep r;
	struct uroce_query_drops_req q = { 0, 0 };

	memset(d, 0, sizeof(*d));
	for (unsigned pages = 0; pages < 1u << 16; pages++) {
		memset(&r, 0, sizeof(r));
		if (ctl_call(c, UROCE_OP_QUERY_DROPS, &q, sizeof(q), &r, sizeof(r), -1) ||
		    r.n > UROCE_DROPS_PER_MSG)
			return;
		struct uroce_drop_val *m = realloc(d->v, (d->n + r.n + 1) * sizeof(*m));
		if (!m)
			return;
		d->v = m;
		for (uint32_t i = 0; i < r.n; i++) {
			m[d->n] = r.v[i];
			m[d->n++].name[UROCE_DROP_NAME_LEN - 1] = 0;
		}
		if (!r.more || (port_only && r.next_qpn))
			return;
		/* pages move forward, or we stop (a confused daemon) */
		if (r.next_qpn < q.first_qpn || (r.next_qpn == q.first_qpn && r.next <= q.first))
			return;
		q.first_qpn = r.next_qpn;
		q.first = r.next;
	}
}

void ctl_drops_free(struct ctl_drops *d)
{
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

/* the values of qpn whose name starts with prefix (prefix stripped in
 * JSON, kept in the human form) */
static void drops_group(const struct ctl *c, const struct ctl_drops *d, uint32_t qpn,
			const char *prefix, const char *key, const char *human)
{
	size_t pl = strlen(prefix);
	bool open = false;

	for (uint32_t i = 0; i < d->n; i++) {
		const struct uroce_drop_val *e = &d->v[i];
		if (e->qpn != qpn || strncmp(e->name, prefix, pl))
			continue;
		if (c->json) {
			if (!open)
				js_obj(key);
			open = true;
			js_u64(e->name + pl, e->val);
		} else {
			char name[64];
			snprintf(name, sizeof(name), "%s%s", human, e->name + pl);
			printf("  %-20s %llu\n", name, (unsigned long long)e->val);
		}
	}
	if (open)
		js_end();
}

void ctl_drops_port_print(const struct ctl *c, const struct ctl_drops *d)
{
	drops_group(c, d, 0, "link.", "link", "link.");
	drops_group(c, d, 0, "qps.", "qp_totals", "qps.");
}

void ctl_drops_qp_print(const struct ctl *c, const struct ctl_drops *d, uint32_t qpn)
{
	drops_group(c, d, qpn, "", "drops", "drop.");
}
