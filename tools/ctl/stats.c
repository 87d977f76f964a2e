/* SPDX-License-Identifier: MIT */
/* The counters of a daemon (UROCE_OP_QUERY_STATS), every page of them, and
 * the `counters` command (uroce-stat's output, or JSON). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* The reply as the daemon laid it out: port record, then nqps QP
 * records, then the transport drops, at the sizes the reply states (a
 * daemon older or newer than us may have shorter or longer records).
 * Fields we know and it does not stay 0. 0 or -EPROTO. */
static int stats_unpack(const uint8_t *raw, size_t len, struct uroce_query_stats_rep *r)
{
	const size_t hdr = offsetof(struct uroce_query_stats_rep, port);

	memset(r, 0, sizeof(*r));
	if (len < hdr)
		return -EPROTO;
	memcpy(r, raw, hdr);
	size_t ps = r->port_stats_size, qs = r->qp_stats_size;
	if (r->nqps > UROCE_STATS_QP_PER_MSG || ps > len || qs > len ||
	    hdr + ps + (size_t)UROCE_STATS_QP_PER_MSG * qs > len)
		return -EPROTO;
	memcpy(&r->port, raw + hdr, ps < sizeof(r->port) ? ps : sizeof(r->port));
	const uint8_t *q = raw + hdr + ps;
	for (uint32_t i = 0; i < r->nqps; i++, q += qs)
		memcpy(&r->qps[i], q, qs < sizeof(r->qps[0]) ? qs : sizeof(r->qps[0]));
	q = raw + hdr + ps + (size_t)UROCE_STATS_QP_PER_MSG * qs;
	size_t tail = sizeof(*r) - offsetof(struct uroce_query_stats_rep, nxdrops);
	size_t have = len - (size_t)(q - raw);
	memcpy(&r->nxdrops, q, have < tail ? have : tail);
	return 0;
}

int ctl_stats_get(struct ctl *c, struct ctl_stats *s, bool port_only)
{
	static uint8_t raw[UROCE_MAX_MSG];
	static struct uroce_query_stats_rep rep;
	struct uroce_query_stats_req q = { 0, 0 };

	memset(s, 0, sizeof(*s));
	do {
		/* the reply's length is what urv_ctl_raw copied: ask for all */
		memset(raw, 0, sizeof(raw));
		int rc = ctl_call(c, UROCE_OP_QUERY_STATS, &q, sizeof(q), raw, sizeof(raw), -1);
		if (rc)
			return rc;
		if (stats_unpack(raw, sizeof(raw), &rep))
			return -EPROTO;
		if (!q.first_qpn)
			s->first = rep;
		if (port_only)
			break;
		struct uroce_qp_stats *n = realloc(s->qps, (s->nqps + rep.nqps + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->qps = n;
		memcpy(s->qps + s->nqps, rep.qps, rep.nqps * sizeof(*n));
		s->nqps += rep.nqps;
		if (rep.next_qpn && rep.next_qpn <= q.first_qpn)
			break; /* never loop on a confused daemon */
		q.first_qpn = rep.next_qpn;
	} while (q.first_qpn);
	return 0;
}

void ctl_stats_free(struct ctl_stats *s)
{
	free(s->qps);
	s->qps = NULL;
}

/* Every counter has one name, shared by the table and the JSON keys. */
struct ctl_field {
	const char *name;
	size_t off;
};
#define PF(n) { #n, offsetof(struct uroce_port_stats, n) }
static const struct ctl_field port_fields[] = {
	PF(tx_pkts), PF(tx_bytes), PF(rx_pkts), PF(rx_bytes), PF(rx_roce), PF(rx_arp),
	PF(tx_arp), PF(rx_icmp), PF(tx_icmp), PF(rx_nd), PF(tx_nd), PF(icrc_errors),
	PF(hdr_errors), PF(tx_stalls), PF(fault_drop), PF(fault_dup), PF(fault_reorder),
	PF(fault_corrupt), PF(fault_delay),
};
/* after the drops, as uroce-stat always printed them */
static const struct ctl_field port_tail[] = {
	{ "qps", offsetof(struct uroce_port_stats, nqp) },
	{ "contexts", offsetof(struct uroce_port_stats, nctx) },
	{ "clients_refused", offsetof(struct uroce_port_stats, clients_refused) },
	PF(evq_lost), PF(cqe_inline), PF(icrc_skipped), PF(mr_mapped), PF(mr_syscall), PF(mr_pinned), PF(mr_unpinned),
	PF(tx_zc), PF(tx_zc_bytes), PF(rx_seg), PF(rx_lin), PF(zc_unmap_deferred),
};
#define QF(n) { #n, offsetof(struct uroce_qp_stats, n) }
static const struct ctl_field qp_fields[] = {
	QF(tx_pkts), QF(tx_bytes), QF(rx_pkts), QF(rx_bytes), QF(retransmits), QF(timeouts),
	QF(dup_requests), QF(out_of_seq), QF(seq_naks_sent), QF(seq_naks_rcvd),
	QF(rnr_naks_sent), QF(rnr_naks_rcvd), QF(naks_sent), QF(naks_rcvd),
	QF(retry_exceeded), QF(rnr_retry_exceeded), QF(rx_dropped), QF(tx_no_buf),
	QF(ce_rcvd), QF(cnp_sent), QF(cnp_rcvd),
};
#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* 64-bit counters, except the 32-bit counts at the end of the port record */
static uint64_t field_get(const void *base, const struct ctl_field *f, bool u32)
{
	const uint8_t *p = (const uint8_t *)base + f->off;
	uint64_t v64;
	uint32_t v32;

	if (u32) {
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
	memcpy(&v64, p, sizeof(v64));
	return v64;
}

static bool port_tail_u32(const struct ctl_field *f)
{
	return f->off < offsetof(struct uroce_port_stats, evq_lost);
}

static void fields_print(const struct ctl *c, const void *base, const struct ctl_field *f,
			 size_t n, bool (*u32)(const struct ctl_field *))
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = field_get(base, &f[i], u32 && u32(&f[i]));
		if (c->json)
			js_u64(f[i].name, v);
		else
			printf("  %-20s %llu\n", f[i].name, (unsigned long long)v);
	}
}

/* by-reason drops: names from the daemon */
static void drops_print(const struct ctl *c, const char *key, const char *prefix,
			const uint64_t *v, const char (*names)[UROCE_STATS_NAME_LEN], uint32_t n,
			uint32_t max)
{
	if (c->json)
		js_obj(key);
	for (uint32_t i = 0; i < n && i < max; i++) {
		char name[UROCE_STATS_NAME_LEN + 1];
		snprintf(name, sizeof(name), "%.*s", UROCE_STATS_NAME_LEN, names[i]);
		if (c->json)
			js_u64(name, v[i]);
		else
			printf("  %s.%-*s %llu\n", prefix, (int)(19 - strlen(prefix)), name,
			       (unsigned long long)v[i]);
	}
	if (c->json)
		js_end();
}

static void port_print(const struct ctl *c, const struct uroce_query_stats_rep *r,
		       const struct ctl_drops *dr)
{
	const struct uroce_port_stats *p = &r->port;

	if (c->json)
		js_obj("port");
	else
		printf("port %s\n", c->dev);
	fields_print(c, p, port_fields, NF(port_fields), NULL);
	drops_print(c, "drops", "drop", p->drops, p->drop_name, p->ndrops, UROCE_STATS_DROP_MAX);
	fields_print(c, p, port_tail, NF(port_tail), port_tail_u32);
	drops_print(c, "xport_drops", "xport_drop", r->xdrops, r->xdrop_name, r->nxdrops,
		    UROCE_STATS_XDROP_MAX);
	ctl_drops_port_print(c, dr);
	if (c->json)
		js_end();
}

/* The IB CM engine's counters ("cm.NAME"): nothing from a daemon without
 * an engine or the op. */
static void cm_print(struct ctl *c)
{
	static struct uroce_cm_stats_rep r;

	memset(&r, 0, sizeof(r));
	if (ctl_call(c, UROCE_OP_QUERY_CM_STATS, NULL, 0, &r, sizeof(r), -1) || !r.n)
		return;
	drops_print(c, "cm", "cm", r.val, r.name, r.n, UROCE_CM_STATS_MAX);
}

void ctl_qp_counters_print(const struct ctl *c, const struct uroce_qp_stats *q)
{
	if (c->json)
		js_obj("counters");
	fields_print(c, q, qp_fields, NF(qp_fields), NULL);
	if (c->json)
		js_end();
}

int ctl_cmd_counters(struct ctl *c, int argc, char **argv)
{
	bool port_only = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port"))
			return -CTL_USAGE;
		port_only = true;
	}
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	struct ctl_stats s;
	struct ctl_cc cc;
	struct ctl_drops dr;
	ctl_cc_get(c, &cc);
	ctl_drops_get(c, &dr, port_only);
	rc = ctl_stats_get(c, &s, port_only);
	if (rc) {
		ctl_stats_free(&s);
		ctl_cc_free(&cc);
		ctl_drops_free(&dr);
		return ctl_fail(c, "query stats", rc);
	}
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
	}
	struct ctl_nic nic;
	if (ctl_nic_get(c, &nic))
		nic.ok = false; /* a daemon without it */
	port_print(c, &s.first, &dr);
	ctl_cc_port_print(c, &cc);
	cm_print(c);
	ctl_nic_counters_print(c, &nic);
	ctl_nic_free(&nic);
	if (c->json && !port_only)
		js_arr("qps");
	for (uint32_t i = 0; i < s.nqps && !port_only; i++) {
		const struct uroce_qp_stats *q = &s.qps[i];
		if (c->json) {
			js_obj(NULL);
			js_u64("qpn", q->qpn);
			js_u64("pid", q->pid);
			js_str("type", ctl_qp_type(q->qp_type));
			js_str("state", ctl_qp_state(q->qp_state));
		} else {
			printf("qp 0x%x pid %u %s %s\n", q->qpn, q->pid, ctl_qp_type(q->qp_type),
			       ctl_qp_state(q->qp_state));
		}
		ctl_qp_counters_print(c, q);
		ctl_drops_qp_print(c, &dr, q->qpn);
		ctl_cc_qp_print(c, &cc, q->qpn);
		if (c->json)
			js_end();
	}
	if (c->json) {
		if (!port_only)
			js_end();
		js_end();
		js_done();
	}
	ctl_stats_free(&s);
	ctl_cc_free(&cc);
	ctl_drops_free(&dr);
	return CTL_OK;
}
