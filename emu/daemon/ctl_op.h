/* SPDX-License-Identifier: MIT */
/* The control server's requests (ctl.c) as their handlers see them: one
 * struct emu_op per request being served, and per kind of object a table
 * of the ops it serves (ctl_<object>.c), which ctl.c indexes by op code.
 * Private to emu/daemon/. */
#ifndef EMU_CTL_OP_H
#define EMU_CTL_OP_H

#include "daemon.h"

/* A client of the control socket (ctl.c) */
struct emu_client {
	struct emu_ctx *ctx;      /* NULL once closed */
	struct emu_client *next_dead;
	struct emu_ep ep_sock;
	struct emu_ep ep_wake;
	uint32_t mbox_seen;       /* the mailbox's req_seq last served */
	bool mbox_busy;           /* the request being executed came by the mailbox */
};

/* One control request being served: what the handler reads, and what it
 * leaves for the reply. */
union emu_req {
	struct uroce_hello_req hello;
	struct uroce_query_port_req port;
	struct uroce_handle_msg hm;
	struct uroce_reg_mr_req mr;
	struct uroce_rereg_mr_req rereg;
	struct uroce_map_mr_req map;
	struct uroce_mem_chan_req chan;
	struct uroce_query_mrs_req mrs;
	struct uroce_alloc_mw_req mw;
	struct uroce_import_req imp;
	struct uroce_alloc_dm_req dm;
	struct uroce_reg_dm_mr_req dmmr;
	struct uroce_advise_mr_req adv;
	struct uroce_create_cq_req cq;
	struct uroce_resize_cq_req rcq;
	struct uroce_create_srq_req srq;
	struct uroce_modify_srq_req msrq;
	struct uroce_create_qp_req qp;
	struct uroce_modify_qp_req mqp;
	struct uroce_query_qp_req qqp;
	struct uroce_create_ah_req ah;
	struct uroce_mcast_req mc;
	struct uroce_query_stats_req st;
	struct uroce_query_drops_req drops;
	struct uroce_query_limits_req lim;
	struct uroce_query_qps_req qps;
	struct uroce_fault_set_req fault;
	struct uroce_open_xrcd_req xrcd;
	struct uroce_create_xsrq_req xsrq;
	struct uroce_xrc_qp_req xqp;
	struct uroce_cc_set_req cc_set;
	struct uroce_query_nic_req nic;
	struct uroce_set_mtu_req mtu;
	uint8_t ucma[sizeof(struct uroce_ucma_cmd_req) + UROCE_UCMA_MAX_IN];
};

union emu_rep {
	struct uroce_hello_rep hello;
	struct uroce_query_port_rep port;
	struct uroce_handle_msg hm;
	struct uroce_reg_mr_rep mr;
	struct uroce_alloc_mw_rep mw;
	struct uroce_import_rep imp;
	struct uroce_alloc_dm_rep dm;
	struct uroce_advise_mr_rep adv;
	struct uroce_create_cq_rep cq;
	struct uroce_create_srq_rep srq;
	struct ibv_srq_attr srq_attr;
	struct uroce_create_qp_rep qp;
	struct uroce_create_qp_arena_rep qpa;
	struct uroce_query_qp_rep qq;
	struct uroce_query_stats_rep stats;
	struct uroce_query_drops_rep drops;
	struct uroce_cm_stats_rep cm_stats;
	struct uroce_query_limits_rep limits;
	struct uroce_query_cc_rep cc;
	struct uroce_ucma_open_rep ucma_open;
	struct uroce_dev_info dev_info;
	struct uroce_query_qps_rep qps;
	struct uroce_query_mrs_rep mrs;
	struct uroce_fault_info fault;
	struct uroce_capture_rep capture;
	struct uroce_open_xrcd_rep xrcd;
	struct uroce_create_xsrq_rep xsrq;
	struct uroce_xrc_qp_rep xqp;
	struct uroce_query_nic_rep nic;
	uint8_t ucma_out[UROCE_UCMA_MAX_OUT];
};

struct emu_op {
	struct emu_daemon *dm;
	struct emu_client *cl;
	struct emu_ctx *c;
	uint16_t op;
	const union emu_req *q;
	size_t qlen;          /* request body length (variable-length ops) */
	union emu_rep *rep;
	size_t rlen;          /* reply body length */
	size_t elen;          /* body length of an error reply (HELLO's refusal) */
	int *fds;             /* received descriptors */
	unsigned nfds;
	int ofds[3];          /* descriptors sent with the reply */
	unsigned nofds;
	unsigned oclose;      /* ofds[oclose..nofds) are ours to close once sent */
	int mfd;              /* an object's ring memfd to send (owned by it) */
};

/* One request: its exact body length (UCMA_CMD: at most), how many
 * descriptors it may carry, whether only root and the daemon's uid may
 * send it (emu_admin_allowed), and its handler: 0 or -errno, with the
 * reply's body length in k->rlen and descriptors in k->ofds / k->mfd. */
struct emu_op_def {
	uint16_t op;
	uint32_t len;
	uint8_t fds;
	int (*run)(struct emu_op *k);
	bool admin;
};
struct emu_op_table {
	const struct emu_op_def *def;
	unsigned n;
};
#define EMU_OP_TABLE(defs) { defs, sizeof(defs) / sizeof((defs)[0]) }

extern const struct emu_op_table emu_ctl_dev, emu_ctl_pd, emu_ctl_mr, emu_ctl_mw, emu_ctl_dm,
	emu_ctl_cq, emu_ctl_srq, emu_ctl_qp, emu_ctl_ah, emu_ctl_mcast, emu_ctl_xrc,
	emu_ctl_ucma, emu_ctl_admin, emu_ctl_nic;

#endif /* EMU_CTL_OP_H */
