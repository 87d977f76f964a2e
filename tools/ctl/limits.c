/* SPDX-License-Identifier: MIT */
/* `limits [UID]`: the object limits of the daemon (--limit per context,
 * --uid-limit per uid; docs/security.md) and what a uid holds now: our
 * own uid, or another one for root and the daemon's user (the daemon
 * checks). The "ctx" column is this tool's own context. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static void limits_print(const struct ctl *c, const struct uroce_query_limits_rep *r)
{
	uint32_t n = r->n < UROCE_LIMITS_MAX ? r->n : UROCE_LIMITS_MAX;

	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_u64("uid", r->uid);
		js_obj("cm_table");
		js_u64("size", r->cm_ids);
		js_u64("used", r->cm_ids_used);
		js_end();
		js_obj("mem");
		js_u64("ctx_max", r->mem_ctx_max);
		js_u64("uid_max", r->mem_uid_max);
		js_u64("uid_used", r->mem_uid_used);
		js_end();
		js_arr("objects");
		for (uint32_t i = 0; i < n; i++) {
			js_obj(NULL);
			js_str("name", r->e[i].name);
			js_u64("ctx_max", r->e[i].ctx_max);
			js_u64("uid_max", r->e[i].uid_max);
			js_u64("uid_used", r->e[i].uid_used);
			js_end();
		}
		js_end();
		js_end();
		js_done();
		return;
	}
	printf("limits %s: uid %u (CM id table: %u of %u in use, every user and peer)\n",
	       c->dev, r->uid, r->cm_ids_used, r->cm_ids);
	printf("  %-10s %12s %12s %12s\n", "OBJECT", "PER CONTEXT", "PER UID", "UID HOLDS");
	for (uint32_t i = 0; i < n; i++) {
		char cm[16] = "-";
		if (r->e[i].ctx_max)
			snprintf(cm, sizeof(cm), "%u", r->e[i].ctx_max);
		printf("  %-10.*s %12s %12u %12u\n", UROCE_STATS_NAME_LEN, r->e[i].name, cm,
		       r->e[i].uid_max, r->e[i].uid_used);
	}
	printf("  %-10s %12llu %12llu %12llu\n", "mem", (unsigned long long)r->mem_ctx_max,
	       (unsigned long long)r->mem_uid_max, (unsigned long long)r->mem_uid_used);
}

int ctl_cmd_limits(struct ctl *c, int argc, char **argv)
{
	struct uroce_query_limits_req q = { .uid = UROCE_LIMITS_SELF };
	static struct uroce_query_limits_rep r;

	if (argc > 2)
		return -CTL_USAGE;
	if (argc == 2) {
		char *end;
		unsigned long v = strtoul(argv[1], &end, 10);
		if (!*argv[1] || *end || v >= UROCE_LIMITS_SELF)
			return -CTL_USAGE;
		q.uid = (uint32_t)v;
	}
	if (!c->dev)
		c->dev = "uroce0";
	int rc = ctl_open(c, c->dev);
	if (rc)
		return rc;
	rc = ctl_call(c, UROCE_OP_QUERY_LIMITS, &q, sizeof(q), &r, sizeof(r), -1);
	ctl_close(c);
	if (rc == -EPERM) {
		fprintf(stderr, "%s: %s: limits: only root or the daemon's user may look at "
			"another uid\n", c->prog, c->dev);
		return CTL_FAILED;
	}
	if (rc)
		return ctl_fail(c, "limits", rc);
	limits_print(c, &r);
	return CTL_OK;
}
