/* SPDX-License-Identifier: MIT */
/* liburoce internals: the verbs objects of uroce devices. Each embeds the
 * libibverbs structure first, so the application's pointer is ours. */
#ifndef URV_H
#define URV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <uroce/abi.h>
#include <uroce/flush.h>
#include "client.h"

#define URV_MAX_DEVICES 32

#define urv_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#if defined(__x86_64__) || defined(__i386__)
#define urv_cpu_relax() __builtin_ia32_pause()
#else
#define urv_cpu_relax() do { } while (0)
#endif

/* Spinlock for the data path: posts and polls hold it for a few hundred
 * nanoseconds at most, and a mutex could cost a system call. */
typedef struct { atomic_int v; } urv_spin_t;
static inline void urv_spin_init(urv_spin_t *s) { atomic_init(&s->v, 0); }
static inline void urv_spin_lock(urv_spin_t *s)
{
	while (atomic_exchange_explicit(&s->v, 1, memory_order_acquire))
		while (atomic_load_explicit(&s->v, memory_order_relaxed))
			urv_cpu_relax();
}
static inline void urv_spin_unlock(urv_spin_t *s)
{
	atomic_store_explicit(&s->v, 0, memory_order_release);
}

struct urv_device {
	struct ibv_device ibdev;
	char sock_path[512];
	uint64_t node_guid;     /* network order, from the listing HELLO */
	int index;
};

struct urv_context {
	struct verbs_context vctx;
	struct urv_device *dev;
	/* ibv_import_device: a second context on the connection of origin
	 * (its socket, lock and seq carry every control call; sock is then
	 * the descriptor the import was given, closed with this context) */
	struct urv_context *origin;
	struct urv_context *next; /* contexts opened here (device.c) */
	unsigned refs;          /* the context itself and its imports */
	pid_t pid;              /* the process that opened it */
	dev_t sock_dev;         /* the control socket's identity (fstat) */
	ino_t sock_ino;
	int sock;
	pthread_mutex_t ctl_lock;
	uint32_t seq;
	bool dead;              /* control socket failed: the daemon is gone */
	struct uroce_db_page *db;
	int wake_fd;
	struct uroce_hello_rep info;
	pthread_mutex_t async_lock;
	bool fatal_reported;
	/* the daemon's QP arena chunks (abi.h UROCE_OP_CREATE_QP_ARENA),
	 * mapped once each, by chunk index; under ctl_lock */
	uint8_t **arena;
	uint32_t narena;
	/* the memory channel (mr_pin.c): the io_uring through which this
	 * connection's registrations are pinned; made at the first one */
	struct urv_pin *pin;
	pthread_mutex_t pin_lock;
};

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
	/* a parent domain (pdomain.c) has the handle of the PD it was made
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

static inline struct urv_context *to_uctx(struct ibv_context *c)
{
	return urv_container_of(c, struct urv_context, vctx.context);
}
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

/* real.c: the real libibverbs */
void *urv_real_sym(const char *name, const char *version);
bool urv_called_from_libibverbs(const void *ret_addr);

/* device.c */
bool urv_dev_ours(const struct ibv_device *d);
/* The run directory (UROCE_RUN_DIR or the default), into buf. */
void urv_run_dir(char *buf, size_t len);
static inline bool urv_ctx_ours(const struct ibv_context *c)
{
	return c && urv_dev_ours(c->device);
}
struct ibv_device **urv_get_device_list(struct ibv_device **real, int nreal,
					int *num);
struct ibv_context *urv_open_device(struct ibv_device *d);
void urv_ctx_put(struct urv_context *c);
struct urv_context *urv_ctx_by_sock(dev_t dev, ino_t ino);
bool urv_import_device(int fd, struct ibv_context **out);
struct ibv_pd *urv_import_pd(struct ibv_context *c, uint32_t handle);
struct ibv_mr *urv_import_mr(struct ibv_pd *pd, uint32_t handle);
int urv_close_device(struct ibv_context *c);
int urv_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int urv_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *a, size_t len);
int urv_query_port(struct ibv_context *c, uint8_t port,
		   struct ibv_port_attr *a, size_t len);
int urv_query_gid(struct ibv_context *c, uint8_t port, int idx,
		  union ibv_gid *gid);
int urv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t idx,
		     struct ibv_gid_entry *e, uint32_t flags, size_t esz);
ssize_t urv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e,
			    size_t max, uint32_t flags, size_t esz);
int urv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned idx,
		       uint32_t *type);
int urv_query_pkey(struct ibv_context *c, uint8_t port, int idx,
		   __be16 *pkey);
int urv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey);

/* ctl.c: one request, one reply on the control socket of a context
 * (client.h: without one) */
int urv_ctl(struct urv_context *c, uint32_t op, const void *req,
	    size_t req_len, void *rep, size_t rep_len, const int *fds_in,
	    int nfds_in, int *fds_out, int nfds_out);
/* The same in steps, for a caller that acts on the reply before the next
 * request of the connection: hold (the connection's context, its
 * ctl_lock taken), call (same arguments as urv_ctl), release. */
struct urv_context *urv_ctl_hold(struct urv_context *c);
int urv_ctl_held(struct urv_context *o, uint32_t op, const void *req,
		 size_t req_len, void *rep, size_t rep_len, const int *fds_in,
		 int nfds_in, int *fds_out, int nfds_out);
void urv_ctl_release(struct urv_context *o);
/* true in a process that forked or was forked (ctl.c): the doorbell page and
 * the QP arena are then shared with processes this one does not order */
bool urv_ctl_forked_now(void);
void urv_doorbell(struct urv_context *c, uint32_t db_index);
bool urv_daemon_gone(struct urv_context *c);

/* mr_map.c: hand the daemon the file behind a registration, if it has one
 * (private anonymous pages moved onto one first) */
bool urv_mr_map_on(void);
void urv_mr_map(struct urv_context *c, struct urv_mr *umr);

/* odp.c: on-demand paging */
void urv_odp_caps(struct ibv_device_attr_ex *a);
bool urv_mr_odp(const struct urv_mr *umr);
int urv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sg, uint32_t num_sge);

/* mr_pin.c: registered pages pinned through the connection's io_uring.
 * urv_pin_reg: 0 with r filled (pinned, or unpinned and why), or -errno
 * for ibv_reg_mr (what an HCA refuses too). */
struct urv_pin;
int urv_pin_reg(struct urv_context *c, void *addr, size_t len, unsigned access,
		struct urv_pin_ref *r);
void urv_pin_unreg(struct urv_context *c, const struct urv_pin_ref *r);
void urv_pin_close(struct urv_context *c);

/* registry.c */
void urv_obj_add(struct urv_obj *o, enum urv_obj_type type);
void urv_obj_del(struct urv_obj *o);
struct urv_obj *urv_obj_lookup(uint64_t id, enum urv_obj_type type);
void urv_registry_lock(void);
void urv_registry_unlock(void);

/* objects */
struct ibv_pd *urv_alloc_pd(struct ibv_context *c);
/* a zeroed urv_pd of context c standing for the daemon's PD handle, or
 * NULL with errno ENOMEM (a PD, an imported PD, a parent domain) */
struct urv_pd *urv_pd_new(struct ibv_context *c, uint32_t handle);
int urv_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *urv_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  uint64_t iova, unsigned access);
int urv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		 void *addr, size_t len, int access);
int urv_dereg_mr(struct ibv_mr *mr);
struct ibv_mw *urv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urv_dealloc_mw(struct ibv_mw *mw);
int urv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		struct ibv_mw_bind *bind);

/* pdomain.c: thread domains and parent domains */
struct ibv_td *urv_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *attr);
int urv_dealloc_td(struct ibv_td *td);
struct ibv_pd *urv_alloc_parent_domain(struct ibv_context *c,
				       struct ibv_parent_domain_init_attr *attr);
int urv_dealloc_parent_domain(struct urv_pd *pd);
/* a QP or CQ made on pd: its parent domain, held (NULL: a plain PD);
 * put when the object goes (never read the object's pd then: a PD may
 * be an imported one unimported since) */
struct urv_pd *urv_pdom_get(struct ibv_pd *pd);
void urv_pdom_put(struct urv_pd *pdom);

/* dm.c: device memory */
struct ibv_dm *urv_alloc_dm(struct ibv_context *c, struct ibv_alloc_dm_attr *attr);
int urv_free_dm(struct ibv_dm *dm);
struct ibv_mr *urv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off,
			     size_t len, unsigned int access);
struct ibv_dm *urv_import_dm(struct ibv_context *c, uint32_t handle);
void urv_unimport_dm(struct ibv_dm *dm);

struct ibv_comp_channel *urv_create_comp_channel(struct ibv_context *c);
int urv_destroy_comp_channel(struct ibv_comp_channel *ch);
int urv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_context);
void urv_ack_cq_events(struct ibv_cq *cq, unsigned n);
int urv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev);
void urv_ack_async_event(struct ibv_async_event *ev);

struct ibv_cq *urv_create_cq(struct ibv_context *c, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int vec);
struct ibv_cq_ex *urv_create_cq_ex(struct ibv_context *c,
				   struct ibv_cq_init_attr_ex *attr);
int urv_resize_cq(struct ibv_cq *cq, int cqe);
int urv_destroy_cq(struct ibv_cq *cq);
int urv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
void urv_cq_clean(struct ibv_cq *cq, uint32_t qpn);
int urv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void urv_cq_ex_init(struct urv_cq *cq);

struct ibv_srq *urv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr);
struct ibv_srq *urv_create_srq_ex(struct ibv_context *c,
				  struct ibv_srq_init_attr_ex *attr);
int urv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int urv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int urv_destroy_srq(struct ibv_srq *srq);
int urv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);
struct ibv_srq *urv_srq_create_x(struct ibv_pd *pd, struct ibv_srq_init_attr *a,
				 struct uroce_create_xsrq_req *xq);

/* xrc.c */
struct ibv_xrcd *urv_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a);
int urv_close_xrcd(struct ibv_xrcd *x);
struct ibv_srq *urv_create_xsrq(struct ibv_context *c, struct ibv_srq_init_attr_ex *a);
int urv_get_srq_num(struct ibv_srq *srq, uint32_t *num);
struct ibv_qp *urv_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a);
/* an XRC TGT QP (UROCE_OP_CREATE_XTGT) or a handle on one (OPEN_QP),
 * a QP without rings */
struct ibv_qp *urv_xrc_qp_new(struct ibv_context *ibctx, uint32_t op, struct ibv_xrcd *xrcd,
			      uint32_t qpn, const struct ibv_qp_init_attr_ex *ia);

struct ibv_qp *urv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
struct ibv_qp *urv_create_qp_ex(struct ibv_context *c,
				struct ibv_qp_init_attr_ex *a);
int urv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
int urv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		 struct ibv_qp_init_attr *init);
int urv_destroy_qp(struct ibv_qp *qp);
int urv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad);
int urv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
void urv_qp_ex_init(struct urv_qp *qp);
void urv_qp_fill(struct urv_qp *qp, struct ibv_context *ibctx,
		 const struct ibv_qp_init_attr_ex *a, const struct uroce_create_qp_rep *rep);
int urv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);
int urv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		     uint16_t lid);
/* ece.c */
int urv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece);
int urv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece);

struct ibv_ah *urv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
void urv_ah_attr_copy(struct ibv_ah_attr *dst, const struct ibv_ah_attr *src);
int urv_destroy_ah(struct ibv_ah *ah);
int urv_init_ah_from_wc(struct ibv_context *c, uint8_t port,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *attr);

void urv_set_ops(struct urv_context *c);

#endif
