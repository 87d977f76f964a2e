/* SPDX-License-Identifier: MIT */
/* `qps`: the QPs the daemon lets us see (ours; all for root and the
 * daemon's uid), their transport state (UROCE_OP_QUERY_QPS) and counters
 * (UROCE_OP_QUERY_STATS), joined by QPN. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static int qps_get(struct ctl *c, struct uroce_qp_info **out, uint32_t *n)
{
	static struct uroce_query_qps_rep rep;
	struct uroce_query_qps_req q = { 0, 0 };

	*out = NULL;
	*n = 0;
	do {
		int rc = ctl_call(c, UROCE_OP_QUERY_QPS, &q, sizeof(q), &rep, sizeof(rep), -1);
		if (rc)
			return rc;
		if (rep.nqps > UROCE_QPS_PER_MSG || rep.info_size < sizeof(rep.qps[0]))
			return -EPROTO;
		struct uroce_qp_info *m = realloc(*out, (*n + rep.nqps + 1) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		*out = m;
		memcpy(m + *n, rep.qps, rep.nqps * sizeof(*m));
		*n += rep.nqps;
		if (rep.next_qpn && rep.next_qpn <= q.first_qpn)
			break; /* never loop on a confused daemon */
		q.first_qpn = rep.next_qpn;
	} while (q.first_qpn);
	return 0;
}

static const struct uroce_qp_stats *qp_stats_find(const struct ctl_stats *s, uint32_t qpn)
{
	for (uint32_t i = 0; i < s->nqps; i++)
		if (s->qps[i].qpn == qpn)
			return &s->qps[i];
	return NULL;
}

/* the transport state, one JSON key per field */
#define IF(n) { #n, offsetof(struct uroce_qp_info, n) }
static const struct {
	const char *name;
	size_t off;
} info_fields[] = {
	IF(sq_psn), IF(acked_psn), IF(rq_psn), IF(sq_outstanding), IF(rq_posted),
	IF(rd_atomic_out), IF(retry_cnt), IF(retry_left), IF(rnr_retry), IF(rnr_left),
};

static void qp_json(const struct ctl *c, const struct uroce_qp_info *q,
		    const struct uroce_qp_stats *st)
{
	char peer[64];

	js_obj(NULL);
	js_u64("qpn", q->qpn);
	js_u64("pid", q->pid);
	js_str("type", ctl_qp_type(q->qp_type));
	js_str("state", ctl_qp_state(q->qp_state));
	js_u64("path_mtu", ctl_mtu_bytes(q->path_mtu));
	for (size_t i = 0; i < sizeof(info_fields) / sizeof(info_fields[0]); i++) {
		uint32_t v;
		memcpy(&v, (const uint8_t *)q + info_fields[i].off, sizeof(v));
		js_u64(info_fields[i].name, v);
	}
	if (q->dest_qpn) {
		ctl_gid_str(&q->dgid, peer, sizeof(peer));
		js_str("peer", peer);
		js_u64("peer_qpn", q->dest_qpn);
	} else {
		js_null("peer");
		js_null("peer_qpn");
	}
	if (st)
		ctl_qp_counters_print(c, st);
	else
		js_null("counters");
	js_end();
}

static void qp_row(const struct uroce_qp_info *q, const struct uroce_qp_stats *st)
{
	char peer[80] = "-", gid[64];

	if (q->dest_qpn) {
		ctl_gid_str(&q->dgid, gid, sizeof(gid));
		snprintf(peer, sizeof(peer), "%s/0x%x", gid, q->dest_qpn);
	}
	printf("0x%-6x %-7u %-4s %-5s %-8u %-8u %-8u %-6u %-7u %u/%-4u %u/%-4u %-24s %-9llu %-9llu %llu\n",
	       q->qpn, q->pid, ctl_qp_type(q->qp_type), ctl_qp_state(q->qp_state), q->sq_psn,
	       q->acked_psn, q->rq_psn, q->sq_outstanding, q->rq_posted, q->retry_left,
	       q->retry_cnt, q->rnr_left, q->rnr_retry, peer,
	       st ? (unsigned long long)st->tx_pkts : 0ull,
	       st ? (unsigned long long)st->rx_pkts : 0ull,
	       st ? (unsigned long long)st->retransmits : 0ull);
}

int ctl_cmd_qps(struct ctl *c, int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return -CTL_USAGE;
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	struct uroce_qp_info *qi;
	struct ctl_stats s;
	uint32_t n;
	rc = qps_get(c, &qi, &n);
	int rc2 = rc ? 0 : ctl_stats_get(c, &s, false);
	if (rc || rc2) {
		free(qi);
		if (!rc)
			ctl_stats_free(&s);
		return ctl_fail(c, "query QPs", rc ? rc : rc2);
	}
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_arr("qps");
	} else {
		printf("%-8s %-7s %-4s %-5s %-8s %-8s %-8s %-6s %-7s %-6s %-6s %-24s %-9s %-9s %s\n",
		       "QPN", "PID", "TYPE", "STATE", "SQ_PSN", "ACKED", "RQ_PSN", "SQ_OUT",
		       "RQ_POST", "RETRY", "RNR", "PEER/QPN", "TX_PKTS", "RX_PKTS", "RETRANS");
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct uroce_qp_stats *st = qp_stats_find(&s, qi[i].qpn);
		if (c->json)
			qp_json(c, &qi[i], st);
		else
			qp_row(&qi[i], st);
	}
	if (c->json) {
		js_end();
		js_end();
		js_done();
	}
	free(qi);
	ctl_stats_free(&s);
	return CTL_OK;
}
