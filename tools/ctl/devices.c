/* SPDX-License-Identifier: MIT */
/* `devices`: every device of the run directory (or -d DEV), its port,
 * state, MTUs, MAC and GID table (UROCE_OP_DEV_INFO). */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#define CTL_MAX_DEVS 64

/* as /sys/class/infiniband/<dev>/ports/1/gids/<n> shows it */
static void gid_hex(const union ibv_gid *g, char *buf, size_t len)
{
	const uint8_t *r = g->raw;

	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
		 r[13], r[14], r[15]);
}

static void dev_json(const struct ctl *c, const struct uroce_dev_info *d, const char *mac,
		     const char *guid, const struct ctl_nic *n)
{
	char gid[64], hex[48];

	js_obj(NULL);
	js_str("name", d->name);
	js_str("port", d->port[0] ? d->port : "loopback");
	js_bool("loopback", d->flags & UROCE_DEV_F_LOOPBACK);
	js_str("state", ctl_port_state(d->port_state));
	js_u64("mtu", d->mtu);
	js_u64("active_mtu", ctl_mtu_bytes(d->active_mtu));
	js_u64("max_mtu", ctl_mtu_bytes(d->max_mtu));
	js_str("mac", mac);
	js_str("node_guid", guid);
	js_bool("capture", d->flags & UROCE_DEV_F_CAPTURE);
	js_bool("fault", d->flags & UROCE_DEV_F_FAULT);
	js_u64("contexts", d->nctx);
	js_u64("qps", d->nqp);
	js_u64("daemon_pid", d->daemon_pid);
	js_u64("daemon_uid", d->daemon_uid);
	ctl_nic_dev_print(c, n);
	js_arr("gids");
	for (uint32_t i = 0; i < d->gid_count && i < UROCE_MAX_GIDS; i++) {
		ctl_gid_str(&d->gids[i], gid, sizeof(gid));
		gid_hex(&d->gids[i], hex, sizeof(hex));
		js_obj(NULL);
		js_u64("index", i);
		js_str("gid", hex);
		js_str("address", gid);
		js_str("type", ctl_gid_type(d->gid_type[i]));
		js_end();
	}
	js_end();
	js_end();
}

static void dev_table(const struct ctl *c, const struct uroce_dev_info *d, const char *mac,
		      const char *guid, const struct ctl_nic *n)
{
	char gid[64], hex[48];

	printf("%s  port %s  state %s  mtu %u (active %u, max %u)\n", d->name,
	       d->port[0] ? d->port : "loopback", ctl_port_state(d->port_state), d->mtu,
	       ctl_mtu_bytes(d->active_mtu), ctl_mtu_bytes(d->max_mtu));
	printf("  mac %s  node_guid %s  capture %s  fault %s\n", mac, guid,
	       d->flags & UROCE_DEV_F_CAPTURE ? "on" : "off",
	       d->flags & UROCE_DEV_F_FAULT ? "on" : "off");
	printf("  contexts %u  qps %u  daemon pid %u uid %u\n", d->nctx, d->nqp, d->daemon_pid,
	       d->daemon_uid);
	ctl_nic_dev_print(c, n);
	printf("  %-5s %-8s %-40s %s\n", "GID", "TYPE", "GID VALUE", "ADDRESS");
	for (uint32_t i = 0; i < d->gid_count && i < UROCE_MAX_GIDS; i++) {
		ctl_gid_str(&d->gids[i], gid, sizeof(gid));
		gid_hex(&d->gids[i], hex, sizeof(hex));
		printf("  %-5u %-8s %-40s %s\n", i, ctl_gid_type(d->gid_type[i]), hex, gid);
	}
}

static int dev_one(struct ctl *c, const char *name)
{
	static struct uroce_dev_info d;
	char mac[32], guid[48];

	int rc = ctl_open(c, name);
	if (rc == CTL_STALE)
		return CTL_STALE;
	if (rc)
		return rc;
	rc = ctl_call(c, UROCE_OP_DEV_INFO, NULL, 0, &d, sizeof(d), -1);
	struct ctl_nic n = { 0 };
	if (rc || ctl_nic_get(c, &n))
		n.ok = false; /* a daemon without it: no nic line */
	ctl_close(c);
	if (rc) {
		ctl_nic_free(&n);
		return ctl_fail(c, "device info", rc);
	}
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", d.mac[0], d.mac[1],
		 d.mac[2], d.mac[3], d.mac[4], d.mac[5]);
	const uint8_t *g = (const uint8_t *)&d.node_guid;
	snprintf(guid, sizeof(guid), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2],
		 g[3], g[4], g[5], g[6], g[7]);
	if (c->json)
		dev_json(c, &d, mac, guid, &n);
	else
		dev_table(c, &d, mac, guid, &n);
	ctl_nic_free(&n);
	return CTL_OK;
}

int ctl_cmd_devices(struct ctl *c, int argc, char **argv)
{
	static char names[CTL_MAX_DEVS][UROCE_DEV_NAME_MAX];
	int n = 1, worst = CTL_OK;

	(void)argv;
	if (argc > 1)
		return -CTL_USAGE;
	if (c->dev) {
		snprintf(names[0], sizeof(names[0]), "%s", c->dev);
	} else {
		n = ctl_list_devices(c, names, CTL_MAX_DEVS);
		c->skip_stale = true;
	}
	if (n < 0)
		return -n;
	if (c->json) {
		js_obj(NULL);
		js_arr("devices");
	}
	int shown = 0;
	for (int i = 0; i < n; i++) {
		int rc = dev_one(c, names[i]);
		shown += rc != CTL_STALE;
		if (rc > worst)
			worst = rc;
	}
	if (c->json) {
		js_end();
		js_end();
		js_done();
	}
	if (!shown) {
		fprintf(stderr, "%s: no uroced running (only stale sockets in %s)\n", c->prog,
			c->run_dir);
		return c->fail_status;
	}
	return worst;
}
