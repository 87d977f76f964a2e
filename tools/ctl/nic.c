/* SPDX-License-Identifier: MIT */
/* The port's Ethernet device (UROCE_OP_QUERY_NIC): its driver, link,
 * queues and offloads in `devices`, uroce's counters of it (nic.NAME) and
 * its extended statistics (xstat.NAME) in `counters`; and `mtu N`
 * (UROCE_OP_SET_MTU). A daemon without the op shows none of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

int ctl_nic_get(struct ctl *c, struct ctl_nic *n)
{
	static struct uroce_query_nic_rep r;
	struct uroce_query_nic_req q = { 0, 0 };

	memset(n, 0, sizeof(*n));
	do {
		memset(&r, 0, sizeof(r));
		int rc = ctl_call(c, UROCE_OP_QUERY_NIC, &q, sizeof(q), &r, sizeof(r), -1);
		if (rc)
			return rc;
		if (!q.first)
			n->first = r;
		if (r.nxstats > UROCE_NIC_XSTATS_PER_MSG)
			return -EPROTO;
		struct ctl_xstat *x = realloc(n->x, (n->nx + r.nxstats + 1) * sizeof(*x));
		if (!x)
			return -ENOMEM;
		n->x = x;
		for (uint32_t i = 0; i < r.nxstats; i++, n->nx++) {
			n->x[n->nx].value = r.xval[i];
			snprintf(n->x[n->nx].name, sizeof(n->x[n->nx].name), "%.*s",
				 UROCE_NIC_NAME_LEN - 1, r.xname[i]);
		}
		if (r.next && r.next <= q.first)
			break; /* never loop on a confused daemon */
		q.first = r.next;
	} while (q.first);
	n->ok = true;
	return 0;
}

void ctl_nic_free(struct ctl_nic *n)
{
	free(n->x);
	n->x = NULL;
	n->nx = 0;
}

/* a string field of the reply, NUL-terminated whatever the daemon sent */
#define NIC_STR(f) ((int)sizeof(f) - 1), (f)

void ctl_nic_dev_print(const struct ctl *c, const struct ctl_nic *n)
{
	const struct uroce_query_nic_rep *r = &n->first;
	bool up = r->flags & UROCE_NIC_F_LINK_UP, real = r->flags & UROCE_NIC_F_REAL;

	if (!n->ok)
		return;
	if (c->json) {
		char s[UROCE_NIC_OFFLOADS_LEN + 1];
		js_obj("nic");
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->driver));
		js_str("driver", s);
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->device));
		js_str("device", s);
		js_bool("link_up", up);
		js_bool("link_of_its_own", real);
		js_str("link_events", !real ? "none" : r->flags & UROCE_NIC_F_LSC_INTR ? "interrupt" :
			"polled");
		js_u64("speed_mbps", r->speed_mbps);
		js_u64("rx_queues", r->rxq);
		js_u64("tx_queues", r->txq);
		js_u64("max_rx_queues", r->max_rxq);
		js_u64("max_tx_queues", r->max_txq);
		js_u64("min_mtu", r->min_mtu);
		js_u64("max_mtu", r->max_mtu);
		if (r->flags & UROCE_NIC_F_VLAN) {
			js_u64("vlan", r->vlan_tci & 0xfff);
			js_u64("vlan_pcp", r->vlan_tci >> 13);
		} else {
			js_null("vlan");
		}
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->rx_offloads));
		js_str("rx_offloads", s);
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->tx_offloads));
		js_str("tx_offloads", s);
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->rx_offloads_capa));
		js_str("rx_offloads_capa", s);
		snprintf(s, sizeof(s), "%.*s", NIC_STR(r->tx_offloads_capa));
		js_str("tx_offloads_capa", s);
		js_end();
		return;
	}
	printf("  nic %.*s (%.*s)  link %s", NIC_STR(r->device), NIC_STR(r->driver),
	       !real ? "none (ring)" : up ? "up" : "down");
	if (real && up && r->speed_mbps)
		printf(" %u Mb/s %s", r->speed_mbps, r->flags & UROCE_NIC_F_FULL ? "full" : "half");
	if (real)
		printf(" (%s)", r->flags & UROCE_NIC_F_LSC_INTR ? "interrupt" : "polled");
	printf("  queues %u/%u of %u/%u  mtu range %u..%u", r->rxq, r->txq, r->max_rxq,
	       r->max_txq, r->min_mtu, r->max_mtu);
	if (r->flags & UROCE_NIC_F_VLAN)
		printf("  vlan %u pcp %u", r->vlan_tci & 0xfff, r->vlan_tci >> 13);
	printf("\n  rx offloads [%.*s] of [%.*s]\n  tx offloads [%.*s] of [%.*s]\n",
	       NIC_STR(r->rx_offloads), NIC_STR(r->rx_offloads_capa), NIC_STR(r->tx_offloads),
	       NIC_STR(r->tx_offloads_capa));
}

void ctl_nic_counters_print(const struct ctl *c, const struct ctl_nic *n)
{
	const struct uroce_query_nic_rep *r = &n->first;
	char name[UROCE_STATS_NAME_LEN + 1];

	if (!n->ok)
		return;
	if (c->json)
		js_obj("nic");
	for (uint32_t i = 0; i < r->ncnt && i < UROCE_NIC_CNT_MAX; i++) {
		snprintf(name, sizeof(name), "%.*s", UROCE_STATS_NAME_LEN, r->cnt_name[i]);
		if (c->json)
			js_u64(name, r->cnt[i]);
		else
			printf("  nic.%-16s %llu\n", name, (unsigned long long)r->cnt[i]);
	}
	if (c->json) {
		js_end();
		js_obj("xstats");
	}
	for (uint32_t i = 0; i < n->nx; i++) {
		if (c->json)
			js_u64(n->x[i].name, n->x[i].value);
		else
			printf("  xstat.%-14s %llu\n", n->x[i].name, (unsigned long long)n->x[i].value);
	}
	if (c->json)
		js_end();
}

/* `mtu N`: the device's Ethernet MTU at run time (admin) */
int ctl_cmd_mtu(struct ctl *c, int argc, char **argv)
{
	static struct uroce_dev_info d;
	char *end;

	if (argc != 2)
		return -CTL_USAGE;
	unsigned long v = strtoul(argv[1], &end, 10);
	if (*end || end == argv[1] || v > 65535)
		return -CTL_USAGE;
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	struct uroce_set_mtu_req q = { (uint32_t)v, 0 };
	rc = ctl_call(c, UROCE_OP_SET_MTU, &q, sizeof(q), &d, sizeof(d), -1);
	if (rc == -E2BIG || rc == -EBUSY || rc == -EINVAL) {
		fprintf(stderr, "%s: %s: mtu %lu refused: %s (the daemon's log says more)\n",
			c->prog, c->dev, v,
			rc == -E2BIG ? "larger than the port's buffers, sized by --mtu at start" :
			rc == -EBUSY ? "a connected QP's path MTU is larger than it allows" :
			"outside 576..9216 or the device's MTU range");
		return CTL_FAILED;
	}
	if (rc)
		return ctl_fail(c, "mtu", rc);
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_u64("mtu", d.mtu);
		js_u64("active_mtu", ctl_mtu_bytes(d.active_mtu));
		js_end();
		js_done();
	} else {
		printf("%s: mtu %u, active mtu %u\n", c->dev, d.mtu, ctl_mtu_bytes(d.active_mtu));
	}
	return CTL_OK;
}
