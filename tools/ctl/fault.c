/* SPDX-License-Identifier: MIT */
/* `fault show|set|clear`: the daemon's fault injection on received frames,
 * changed at run time (root and the daemon's uid only; the daemon checks). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static void fault_print(const struct ctl *c, const struct uroce_fault_info *f)
{
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_bool("active", f->active);
		js_dbl("drop", f->drop);
		js_dbl("dup", f->dup);
		js_dbl("reorder", f->reorder);
		js_dbl("corrupt", f->corrupt);
		js_u64("delay_us", f->delay_us);
		js_u64("seed", f->seed);
		if (f->qpn)
			js_u64("qp", f->qpn);
		else
			js_null("qp");
		if (f->opcode != UROCE_FAULT_ANY_OPCODE)
			js_u64("opcode", f->opcode);
		else
			js_null("opcode");
		js_obj("counters");
		js_u64("drop", f->n_drop);
		js_u64("dup", f->n_dup);
		js_u64("reorder", f->n_reorder);
		js_u64("corrupt", f->n_corrupt);
		js_u64("delay", f->n_delay);
		js_end();
		js_end();
		js_done();
		return;
	}
	printf("fault %s: %s\n", c->dev, f->active ? "on" : "off");
	if (f->active) {
		printf("  drop %g  dup %g  reorder %g  corrupt %g  delay_us %u  seed %llu\n",
		       f->drop, f->dup, f->reorder, f->corrupt, f->delay_us,
		       (unsigned long long)f->seed);
		printf("  frames: ");
		if (f->qpn)
			printf("to qp 0x%x ", f->qpn);
		if (f->opcode != UROCE_FAULT_ANY_OPCODE)
			printf("opcode 0x%02x ", f->opcode);
		printf("%s\n", f->qpn || f->opcode != UROCE_FAULT_ANY_OPCODE ? "only" : "all");
	}
	printf("  counted: drop %llu  dup %llu  reorder %llu  corrupt %llu  delay %llu\n",
	       (unsigned long long)f->n_drop, (unsigned long long)f->n_dup,
	       (unsigned long long)f->n_reorder, (unsigned long long)f->n_corrupt,
	       (unsigned long long)f->n_delay);
}

int ctl_cmd_fault(struct ctl *c, int argc, char **argv)
{
	static struct uroce_fault_set_req q;
	static struct uroce_fault_info f;
	uint32_t op;

	if (argc < 2)
		return -CTL_USAGE;
	if (!strcmp(argv[1], "show") && argc == 2)
		op = UROCE_OP_FAULT_GET;
	else if (!strcmp(argv[1], "clear") && argc == 2)
		op = UROCE_OP_FAULT_CLEAR;
	else if (!strcmp(argv[1], "set") && !ctl_join(q.spec, sizeof(q.spec), argc - 2, argv + 2))
		op = UROCE_OP_FAULT_SET;
	else
		return -CTL_USAGE;
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	rc = op == UROCE_OP_FAULT_SET ? ctl_call(c, op, &q, sizeof(q), &f, sizeof(f), -1)
				      : ctl_call(c, op, NULL, 0, &f, sizeof(f), -1);
	ctl_close(c);
	if (rc == -EPERM) {
		fprintf(stderr, "%s: %s: fault %s: only root or the daemon's user may change "
			"fault injection\n", c->prog, c->dev, argv[1]);
		return CTL_FAILED;
	}
	if (rc == -EINVAL && op == UROCE_OP_FAULT_SET) {
		fprintf(stderr, "%s: %s: bad fault spec '%s' (keys drop dup reorder corrupt "
			"delay_us seed qp opcode)\n", c->prog, c->dev, q.spec);
		return CTL_USAGE;
	}
	if (rc)
		return ctl_fail(c, argv[1], rc);
	fault_print(c, &f);
	return CTL_OK;
}
