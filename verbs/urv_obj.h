/* SPDX-License-Identifier: MIT */
/* liburoce: the verbs objects of uroce devices. Each embeds the
 * libibverbs structure first, so the application's pointer is ours; the
 * registry (registry.c) finds the objects event records name. */
#ifndef URV_OBJ_H
#define URV_OBJ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <uroce/abi.h>
#include <uroce/flush.h>
#include "urv_base.h"
#include "urv_dev.h"

/* Objects that the daemon names in event records, found by id. */
enum urv_obj_type { URV_OBJ_CQ = 1, URV_OBJ_QP, URV_OBJ_SRQ };
/* Which object an async event names (0: a port or the device). */
enum urv_obj_type urv_event_obj(enum ibv_event_type t);
struct urv_obj {
	struct urv_obj *next;
	uint64_t id;
	enum urv_obj_type type;
	uint32_t events_got;    /* async or completion events handed out */
};

struct urv_td;
struct urv_pd {
	struct ibv_pd ibpd;
	/* a parent domain (pd.c) has the handle of the PD it was made
	 * from, so every call that takes a PD serves it as that PD */
	struct urv_pd *inner;   /* parent domain: that PD; NULL: a PD */
	struct urv_td *td;      /* its thread domain, or NULL */
	void *pd_context;       /* IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT */
	unsigned parents;       /* a PD: parent domains made from it (atomic) */
	unsigned users;         /* a parent domain: its QPs and CQs (atomic), as mlx5 counts */
};

static inline struct urv_pd *to_upd(struct ibv_pd *pd)
{
	return urv_container_of(pd, struct urv_pd, ibpd);
}

/* How the device reaches a registration's pages (mr_pin.c) */
struct urv_pin_ref {
	uint32_t pin;           /* enum uroce_pin; 0: ODP, device memory */
	uint32_t slot, n;       /* UROCE_PIN_RING: the ring's buffers it pinned */
	int32_t why;            /* UROCE_PIN_NONE: the errno that refused pinning */
};

struct urv_mr {
	struct ibv_mr ibmr;
	uint64_t iova;          /* address the peer uses (ibv_reg_mr_iova2) */
	unsigned access;        /* as registered (what the daemon maps writable) */
	bool mapped;            /* the daemon maps (part of) it: mr_map.c */
	struct urv_pin_ref pin;
};

struct urv_mw {
	struct ibv_mw ibmw;
};

struct urv_channel {
	struct ibv_comp_channel ch;
	uint32_t handle;
};

struct urv_cq {
	struct ibv_cq_ex ex;    /* starts with the fields of struct ibv_cq */
	struct urv_obj obj;
	struct urv_context *ctx;
	urv_spin_t lock;
	struct uroce_ring_hdr *ring;
	struct uroce_cqe *cqes;
	struct uroce_cqe_inl *inl; /* companion slots: small receive payloads */
	size_t map_size;
	uint32_t entries;
	uint32_t comp_got;      /* completion events handed out */
	uint32_t empty_polls;   /* consecutive empty polls (daemon liveness) */
	uint64_t gone_check_ns; /* last daemon liveness check (CLOCK_MONOTONIC) */
	uint64_t empty_since_ns; /* start of the current empty streak, 0 = none */
	uint64_t wc_flags_ex;   /* ibv_create_cq_ex wc_flags */
	struct urv_pd *pdom;    /* IBV_CQ_INIT_ATTR_MASK_PD: its parent domain */
	struct uroce_cqe *cur;  /* ibv_cq_ex: the entry being read */
	uint32_t cur_idx;
};

struct urv_wq {         /* one SPSC ring the shim produces into */
	struct uroce_ring_hdr *hdr;
	uint8_t *slots;
	uint32_t entries;
	uint32_t stride;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t cons_seen;     /* the daemon's cons as last read (wq_full) */
};

struct urv_srq {
	struct ibv_srq ibsrq;
	struct urv_obj obj;
	struct urv_context *ctx;
	urv_spin_t lock;
	uint32_t db_index;
	struct urv_wq rq;
	void *map;
	size_t map_size;
	bool xrc;               /* an XRC SRQ: srqn is its number (ibv_get_srq_num) */
	uint32_t srqn;
};

/* ibv_open_xrcd (xrc.c) */
struct urv_xrcd {
	struct ibv_xrcd ibxrcd;
	struct urv_context *ctx;
	uint32_t handle;
	uint32_t num;
};

struct urv_qp {
	struct ibv_qp_ex ex;    /* starts with struct ibv_qp */
	/* newer rdma-core's struct ibv_qp_ex goes on here (uroce/flush.h):
	 * programs built against it call wr_flush at this offset */
	uroce_wr_flush_fn wr_flush;
	struct urv_obj obj;
	struct urv_context *ctx;
	urv_spin_t sq_lock;
	urv_spin_t rq_lock;
	uint32_t db_index;
	struct urv_wq sq;
	struct urv_wq rq;
	struct ibv_qp_cap cap;
	uint32_t sq_sig_all;
	struct urv_pd *pdom;    /* made on a parent domain: that one */
	void *map;              /* rings of their own (else NULL: in the arena) */
	size_t map_size;
	/* ibv_qp_ex batch */
	uint32_t ex_prod;       /* next slot while between wr_start/complete */
	int ex_err;
	struct uroce_send_wqe *ex_cur;
};

struct urv_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
};

static inline struct urv_cq *to_ucq(struct ibv_cq *c)
{
	return (struct urv_cq *)(void *)c;
}
static inline struct urv_qp *to_uqp(struct ibv_qp *q)
{
	return (struct urv_qp *)(void *)q;
}
static inline struct urv_srq *to_usrq(struct ibv_srq *s)
{
	return (struct urv_srq *)(void *)s;
}
static inline struct urv_channel *to_uch(struct ibv_comp_channel *c)
{
	return (struct urv_channel *)(void *)c;
}

/* registry.c */
void urv_obj_add(struct urv_obj *o, enum urv_obj_type type);
void urv_obj_del(struct urv_obj *o);
struct urv_obj *urv_obj_lookup(uint64_t id, enum urv_obj_type type);
void urv_registry_lock(void);
void urv_registry_unlock(void);

#endif /* URV_OBJ_H */
