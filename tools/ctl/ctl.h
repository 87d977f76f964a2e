/* SPDX-License-Identifier: MIT */
/* uroce-ctl: a running uroced over its control socket (docs/running.md,
 * docs/man/uroce-ctl.8). One file per command; this header is theirs. */
#ifndef UROCE_CTL_H
#define UROCE_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uroce/abi.h>

/* exit statuses (documented in the man page) */
#define CTL_OK 0
#define CTL_FAILED 1   /* the daemon refused or failed the request */
#define CTL_USAGE 2    /* bad arguments, no daemon, untrusted socket */

struct ctl {
	const char *prog;          /* for messages: "uroce-ctl" / "uroce-stat" */
	char run_dir[108];
	const char *dev;           /* NULL: the command's default */
	bool json;
	int sock;
	uint32_t seq;
	int fail_status;           /* what a connection failure exits with */
	bool skip_stale;           /* listing: a socket nobody listens on is
				    * skipped quietly, as the shim skips it */
};
#define CTL_STALE (-1)             /* ctl_open: skipped (skip_stale) */

/* conn.c */
/* dir, or the default (NULL: UROCE_RUN_DIR, XDG_RUNTIME_DIR, /tmp): 0, or
 * CTL_USAGE after one line */
int ctl_set_run_dir(struct ctl *c, const char *dir);
/* Connect to dev's daemon and say HELLO: 0, or an exit status after one
 * line on stderr. */
int ctl_open(struct ctl *c, const char *dev);
void ctl_close(struct ctl *c);
/* One request / reply; fd_in >= 0 travels with it. 0 or -errno. */
int ctl_call(struct ctl *c, uint32_t op, const void *req, size_t rlen, void *rep,
	     size_t replen, int fd_in);
/* The device names of the run directory (trusted sockets only), sorted;
 * how many, or an exit status (negative) after one line on stderr. */
int ctl_list_devices(struct ctl *c, char names[][UROCE_DEV_NAME_MAX], int max);
/* one line "<prog>: <dev>: <what>: <strerror>" and CTL_FAILED */
int ctl_fail(const struct ctl *c, const char *what, int err);

/* stats.c: the counters pages of UROCE_OP_QUERY_STATS, unpacked */
struct ctl_stats {
	struct uroce_query_stats_rep first;  /* port, transport drops, first QPs */
	struct uroce_qp_stats *qps;
	uint32_t nqps;
};
int ctl_stats_get(struct ctl *c, struct ctl_stats *s, bool port_only);
void ctl_stats_free(struct ctl_stats *s);
/* counters of one QP in human ("  name value" lines) or JSON form */
void ctl_qp_counters_print(const struct ctl *c, const struct uroce_qp_stats *q);

/* nic.c: the port's Ethernet device (UROCE_OP_QUERY_NIC), every xstats
 * page; ok false when the daemon does not answer it */
struct ctl_xstat {
	char name[UROCE_NIC_NAME_LEN];
	uint64_t value;
};
struct ctl_nic {
	bool ok;
	struct uroce_query_nic_rep first;
	struct ctl_xstat *x;
	uint32_t nx;
};
int ctl_nic_get(struct ctl *c, struct ctl_nic *n);
void ctl_nic_free(struct ctl_nic *n);
void ctl_nic_dev_print(const struct ctl *c, const struct ctl_nic *n);
void ctl_nic_counters_print(const struct ctl *c, const struct ctl_nic *n);
/* drops.c: drops by reason (UROCE_OP_QUERY_DROPS), every page */
struct ctl_drops {
	struct uroce_drop_val *v;
	uint32_t n;
};
void ctl_drops_get(struct ctl *c, struct ctl_drops *d, bool port_only);
void ctl_drops_free(struct ctl_drops *d);
/* the port's "link." and "qps." values; one QP's values */
void ctl_drops_port_print(const struct ctl *c, const struct ctl_drops *d);
void ctl_drops_qp_print(const struct ctl *c, const struct ctl_drops *d, uint32_t qpn);

/* cc.c: DCQCN settings and per-QP reaction points (UROCE_OP_QUERY_CC) */
struct ctl_cc {
	bool ok;                   /* the daemon answered */
	struct uroce_cc_dev dev;
	struct uroce_cc_qp *qps;
	uint32_t nqps;
};
void ctl_cc_get(struct ctl *c, struct ctl_cc *cc);
void ctl_cc_free(struct ctl_cc *cc);
void ctl_cc_port_print(const struct ctl *c, const struct ctl_cc *cc);
void ctl_cc_qp_print(const struct ctl *c, const struct ctl_cc *cc, uint32_t qpn);

/* json.c: a streaming writer to stdout (keys NULL inside arrays) */
void js_obj(const char *key);
void js_arr(const char *key);
void js_end(void);
void js_str(const char *key, const char *v);
void js_u64(const char *key, uint64_t v);
void js_dbl(const char *key, double v);
void js_bool(const char *key, bool v);
void js_null(const char *key);
void js_done(void);          /* newline after the top-level value */

/* args.c: "a=1 b=2" and "a=1,b=2" say the same: argv joined with ',' into
 * buf (NUL-terminated); -1 when empty or too long */
int ctl_join(char *buf, size_t len, int argc, char **argv);

/* names.c */
const char *ctl_qp_type(uint32_t t);
const char *ctl_qp_state(uint32_t s);
const char *ctl_port_state(uint32_t s);
unsigned ctl_mtu_bytes(uint32_t ibv_mtu);
const char *ctl_gid_type(uint32_t t);
void ctl_gid_str(const union ibv_gid *g, char *buf, size_t len);

/* the commands: argv[0] is the command name */
int ctl_cmd_devices(struct ctl *c, int argc, char **argv);
int ctl_cmd_qps(struct ctl *c, int argc, char **argv);
int ctl_cmd_mrs(struct ctl *c, int argc, char **argv);
int ctl_cmd_counters(struct ctl *c, int argc, char **argv);
int ctl_cmd_fault(struct ctl *c, int argc, char **argv);
int ctl_cmd_capture(struct ctl *c, int argc, char **argv);
int ctl_cmd_cc(struct ctl *c, int argc, char **argv);
int ctl_cmd_limits(struct ctl *c, int argc, char **argv);
int ctl_cmd_mtu(struct ctl *c, int argc, char **argv);

#endif
