/* SPDX-License-Identifier: MIT */
/* DCQCN of a daemon (UROCE_OP_QUERY_CC, docs/dcqcn.md): the device's
 * settings and totals, and each visible QP's reaction point, shown with
 * `counters` as "dcqcn.NAME" port lines and per-QP rate lines; `cc show`
 * and `cc set` (UROCE_OP_CC_SET) for the settings alone. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define CD(n, w) { "dcqcn." #n, offsetof(struct uroce_cc_dev, n), w }
static const struct { const char *name; size_t off; int w; } cc_dev_fields[] = {
	CD(ect, 4), CD(np, 4), CD(rp, 4), CD(line_rate_mbps, 4),
	CD(min_time_between_cnps, 4), CD(cnp_dscp, 4), CD(rpg_time_reset, 4),
	CD(rpg_byte_reset, 4), CD(rpg_threshold, 4), CD(rpg_ai_rate, 4), CD(rpg_hai_rate, 4),
	CD(rpg_min_rate, 4), CD(rpg_min_dec_fac, 4), CD(rpg_gd, 4),
	CD(rate_reduce_monitor_period, 4), CD(rate_to_set_on_first_cnp, 4),
	CD(initial_alpha_value, 4), CD(dce_tcp_g, 4), CD(dce_tcp_rtt, 4),
	CD(clamp_tgt_rate, 4), CD(clamp_tgt_rate_after_time_inc, 4),
	CD(ce_rcvd, 8), CD(cnp_sent, 8), CD(cnp_rcvd, 8), CD(rate_cuts, 8),
};

static uint64_t cc_get(const void *base, size_t off, int w)
{
	uint64_t v64 = 0;
	uint32_t v32 = 0;

	if (w == 4) {
		memcpy(&v32, (const uint8_t *)base + off, 4);
		return v32;
	}
	memcpy(&v64, (const uint8_t *)base + off, 8);
	return v64;
}

/* Every page, at the sizes the reply states; a daemon without the op
 * leaves cc->ok false. */
void ctl_cc_get(struct ctl *c, struct ctl_cc *cc)
{
	static uint8_t raw[UROCE_MAX_MSG];
	struct uroce_query_stats_req q = { 0, 0 };
	const size_t hdr = offsetof(struct uroce_query_cc_rep, dev);

	memset(cc, 0, sizeof(*cc));
	do {
		struct uroce_query_cc_rep r;

		memset(raw, 0, sizeof(raw));
		if (ctl_call(c, UROCE_OP_QUERY_CC, &q, sizeof(q), raw, sizeof(raw), -1))
			return;
		memcpy(&r, raw, hdr);
		if (!r.dev_size || r.nqps > UROCE_CC_QP_PER_MSG ||
		    hdr + r.dev_size + (size_t)r.nqps * r.qp_size > sizeof(raw))
			return;
		memcpy(&cc->dev, raw + hdr, r.dev_size < sizeof(cc->dev) ? r.dev_size
									 : sizeof(cc->dev));
		struct uroce_cc_qp *m = realloc(cc->qps, (cc->nqps + r.nqps + 1) * sizeof(*m));
		if (!m)
			return;
		cc->qps = m;
		for (uint32_t i = 0; i < r.nqps; i++) {
			memset(&m[cc->nqps], 0, sizeof(*m));
			memcpy(&m[cc->nqps++], raw + hdr + r.dev_size + (size_t)i * r.qp_size,
			       r.qp_size < sizeof(*m) ? r.qp_size : sizeof(*m));
		}
		cc->ok = true;
		if (r.next_qpn && r.next_qpn <= q.first_qpn)
			return; /* never loop on a confused daemon */
		q.first_qpn = r.next_qpn;
	} while (q.first_qpn);
}

void ctl_cc_free(struct ctl_cc *cc)
{
	free(cc->qps);
	cc->qps = NULL;
	cc->nqps = 0;
}

void ctl_cc_port_print(const struct ctl *c, const struct ctl_cc *cc)
{
	if (!cc->ok)
		return;
	if (c->json)
		js_obj("dcqcn");
	for (size_t i = 0; i < sizeof(cc_dev_fields) / sizeof(cc_dev_fields[0]); i++) {
		uint64_t v = cc_get(&cc->dev, cc_dev_fields[i].off, cc_dev_fields[i].w);
		if (c->json)
			js_u64(cc_dev_fields[i].name + 6, v);
		else
			printf("  %-20s %llu\n", cc_dev_fields[i].name, (unsigned long long)v);
	}
	if (c->json)
		js_end();
}

/* The QP's reaction point: rate, target, alpha (1/1024), stage (0 line
 * rate, 1 fast recovery, 2 additive, 3 hyper), cuts, pacer waits. */
void ctl_cc_qp_print(const struct ctl *c, const struct ctl_cc *cc, uint32_t qpn)
{
	const struct uroce_cc_qp *q = NULL;

	for (uint32_t i = 0; i < cc->nqps && !q; i++)
		if (cc->qps[i].qpn == qpn)
			q = &cc->qps[i];
	if (!q)
		return;
	const struct { const char *n; uint64_t v; } f[] = {
		{ "rate_mbps", q->rate_mbps }, { "target_mbps", q->target_mbps },
		{ "alpha", q->alpha }, { "dcqcn_stage", q->stage }, { "paced", q->paced },
		{ "rate_cuts", q->rate_cuts }, { "pacer_waits", q->pacer_waits },
	};
	if (c->json)
		js_obj("dcqcn");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (c->json)
			js_u64(f[i].n, f[i].v);
		else
			printf("  %-20s %llu\n", f[i].n, (unsigned long long)f[i].v);
	}
	if (c->json)
		js_end();
}

static void cc_settings_print(const struct ctl *c, const struct ctl_cc *cc)
{
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
	} else {
		printf("dcqcn %s:\n", c->dev);
	}
	ctl_cc_port_print(c, cc);
	if (c->json) {
		js_end();
		js_done();
	}
}

/* "set NAME VALUE", or "set NAME=VALUE..." (also "set on|off"): the
 * daemon's --dcqcn syntax, items joined with ',' */
static int cc_spec(int argc, char **argv, struct uroce_cc_set_req *q)
{
	memset(q, 0, sizeof(*q));
	if (argc == 4 && !strchr(argv[2], '=') && !strchr(argv[3], '=')) {
		int n = snprintf(q->spec, sizeof(q->spec), "%s=%s", argv[2], argv[3]);
		return n > 0 && (size_t)n < sizeof(q->spec) ? 0 : -1;
	}
	return ctl_join(q->spec, sizeof(q->spec), argc - 2, argv + 2);
}

static int cc_set(struct ctl *c, const struct uroce_cc_set_req *q)
{
	static uint8_t raw[UROCE_MAX_MSG];
	const size_t hdr = offsetof(struct uroce_query_cc_rep, dev);
	struct ctl_cc cc = { .ok = true };
	struct uroce_query_cc_rep r;

	int rc = ctl_call(c, UROCE_OP_CC_SET, q, sizeof(*q), raw, sizeof(raw), -1);
	ctl_close(c);
	if (rc == -EPERM) {
		fprintf(stderr, "%s: %s: cc set: only root or the daemon's user may change "
			"DCQCN's parameters\n", c->prog, c->dev);
		return CTL_FAILED;
	}
	if (rc == -EINVAL) {
		fprintf(stderr, "%s: %s: bad cc setting '%s' (on, off, or NAME VALUE: a --dcqcn key "
			"and a value in its range, uroce-ctl(8))\n",
			c->prog, c->dev, q->spec);
		return CTL_USAGE;
	}
	if (rc)
		return ctl_fail(c, "cc set", rc);
	memcpy(&r, raw, hdr);
	if (!r.dev_size || hdr + r.dev_size > sizeof(raw))
		return ctl_fail(c, "cc set", -EPROTO);
	memcpy(&cc.dev, raw + hdr, r.dev_size < sizeof(cc.dev) ? r.dev_size : sizeof(cc.dev));
	cc_settings_print(c, &cc);
	return CTL_OK;
}

/* `cc show` / `cc set ...`: the device's DCQCN settings and totals, and
 * changing them at run time (admin; the daemon checks). */
int ctl_cmd_cc(struct ctl *c, int argc, char **argv)
{
	static struct uroce_cc_set_req q;
	bool set;

	if (argc == 2 && !strcmp(argv[1], "show"))
		set = false;
	else if (argc >= 3 && !strcmp(argv[1], "set") && !cc_spec(argc, argv, &q))
		set = true;
	else
		return -CTL_USAGE;
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	if (set)
		return cc_set(c, &q);
	struct ctl_cc cc;
	ctl_cc_get(c, &cc);
	ctl_close(c);
	if (!cc.ok)
		return ctl_fail(c, "cc show", -EPROTO);
	cc_settings_print(c, &cc);
	ctl_cc_free(&cc);
	return CTL_OK;
}
