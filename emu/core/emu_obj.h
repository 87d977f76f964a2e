/* SPDX-License-Identifier: MIT */
/* uroced core: the verbs objects (PD, MR, DM, MW, channel, CQ, XRC
 * domain, SRQ, AH, QP), the context that owns them, the limits, and the
 * object operations the control server calls (one file per object:
 * pd.c mr.c mw.c dm.c event.c cq.c srq.c qp.c ah.c mcast.c xrcd.c
 * xrc_create.c; ctx.c, teardown.c, arena.c). */
#ifndef EMU_OBJ_H
#define EMU_OBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include <uroce/abi.h>

/* ------------------------------------------------------------------ */
/* Limits (reported in ibv_device_attr; the control server enforces)   */
/* ------------------------------------------------------------------ */
#define EMU_MAX_QP        16384
#define EMU_MAX_QP_WR     16384
#define EMU_MAX_SGE       32
#define EMU_MAX_INLINE    512
#define EMU_MAX_CQ        16384
#define EMU_MAX_CQE       (1u << 19)  /* 512K - 1 reported: with its 256 B
                                        * (CQE + small-payload slot) that
                                        * ring fits the default 256 MB
                                        * per-context queue memory */
#define EMU_MAX_MR        65536
#define EMU_MAX_PD        65536
#define EMU_MAX_MW        65536
#define EMU_MAX_AH        65536
#define EMU_MAX_SRQ       8192
#define EMU_MAX_SRQ_WR    16384
#define EMU_MAX_SRQ_SGE   32
#define EMU_MAX_DM        4096
/* rdma_cm (emu/cm): ids, listening ids, and IB CM connections (the CM
 * engine's id slots an rdma_cm id holds: requests, connections, SIDR) */
#define EMU_MAX_CM_ID     65536
#define EMU_MAX_CM_LISTEN 4096
#define EMU_MAX_CM_CONN   4096     /* the IB CM engine's table */
/* ibv_alloc_dm's largest allocation (max_dm_size), less when the
 * context's memory limit is lower: it is daemon memory, charged as
 * queue memory is (--limit mem=) */
#define EMU_DM_MAX_SIZE   (256u << 10)
#define EMU_MAX_MCAST_GRP 256
#define EMU_MAX_MCAST_ATT 64     /* QPs per group */
#define EMU_MAX_MR_SIZE   (1ull << 40)
#define EMU_SQ_STRIDE_MAX 1024u  /* 64 B header + 32 SGEs or 512 B inline -> 1024 */
#define EMU_QPN_FIRST     0x11u
#define EMU_QPN_TABLE     65536u /* QPNs live in [EMU_QPN_FIRST, EMU_QPN_TABLE) */
/* READs and atomics a QP may have outstanding (max_qp_rd_atom,
 * max_qp_init_rd_atom; the transport sizes its resources by it) */
#define EMU_MAX_RD_ATOMIC 128

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */
struct emu_dev;
struct emu_ctx;
struct emu_fault;
struct emu_kneigh;

enum emu_obj_type {
	EMU_OBJ_NONE = 0,
	EMU_OBJ_PD,
	EMU_OBJ_MR,
	EMU_OBJ_MW,
	EMU_OBJ_CHANNEL,
	EMU_OBJ_CQ,
	EMU_OBJ_SRQ,
	EMU_OBJ_QP,
	EMU_OBJ_AH,
	EMU_OBJ_DM,
	EMU_OBJ_XRCD,       /* a context's handle on an XRC domain (xrcd.c) */
	EMU_OBJ_XQP,        /* a handle from ibv_open_qp on an XRC TGT QP */
	/* counted, not in the handle table (emu/cm keeps its own):
	 * emu_ctx_obj_add / emu_ctx_obj_del */
	EMU_OBJ_CM_ID,      /* rdma_cm ids */
	EMU_OBJ_CM_LISTEN,  /* ... listening */
	EMU_OBJ_CM_CONN,    /* ... holding an IB CM engine id (a connection) */
	EMU_OBJ_NTYPES
};

/* Daemon-private view of one shared ring. entries/mask/stride are the
 * daemon's copies (the header's copies are the application's to scribble
 * on). */
struct emu_ring {
	struct uroce_ring_hdr *hdr;
	uint8_t *slots;
	uint32_t entries;
	uint32_t mask;
	uint32_t stride;
	uint32_t cons;      /* our consumer index (SQ/RQ/SRQ), last published */
	/* the producer index as last read (RQ/SRQ): while it says entries are
	 * there, taking one reads no line the application writes to but the
	 * WQE itself (docs/performance.md, "Round trips") */
	uint32_t prod_seen;
	bool broken;        /* producer index seen impossible (emu_recv_take) */
};

struct emu_pd {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint32_t refcnt;    /* MRs, MWs, SRQs, QPs, AHs */
};

struct emu_mr {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	uint64_t addr;      /* process virtual address */
	uint64_t length;
	uint64_t iova;      /* address the peer uses */
	unsigned access;    /* enum ibv_access_flags */
	uint32_t lkey, rkey;
	uint32_t mw_bound;  /* windows bound to it: dereg = -EBUSY */
	uint64_t gen;       /* dev->mr_epoch when registered or last reregistered */
	struct emu_dm *dm;  /* ibv_reg_dm_mr: the device memory it covers */
	/* How the device reaches its memory (docs/verbs.md, "Registered
	 * memory"): the pages the client pinned into buffers [slot, slot +
	 * n) of its memory channel (pin.c), or, where the kernel could not
	 * pin, the address as the process maps it now (pvm.c; why: the errno
	 * the shim met). ODP and device memory have neither (0). */
	uint8_t pin;        /* enum uroce_pin, 0 */
	uint32_t slot;
	int32_t why;
	/* pieces of it the daemon maps (mrmap.c): shared tmpfs / hugetlbfs
	 * files, device memory; found by MR, never by address alone (two
	 * registrations of one address may hold different pages) */
	uint32_t nmaps;
	struct emu_mrmap *maps;
	uint64_t moved[3];  /* payload pieces: pinned, unpinned, mapped */
};

/* Device memory (dm.c): a sealed memfd the daemon maps and the shim maps
 * too. It has no address in the client's process, so each one gets a
 * range of addresses no process can have (the kernel half), and an MR
 * over it is a daemon-mapped piece at those addresses (mrmap.c): every
 * placement and gather is a memcpy, and an address that misses the piece
 * can only fail. */
#define EMU_DM_VA_BASE  0xffff800000000000ull
#define EMU_DM_VA_SHIFT 24 /* per handle: above EMU_DM_MAX_SIZE */
struct emu_dm {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint64_t length;    /* as allocated (ibv_alloc_dm_attr.length) */
	size_t size;        /* of the memfd: whole pages, charged to ctx */
	int memfd;
	uint8_t *map;
	uint64_t va;        /* the address its byte 0 has in MRs over it */
	uint32_t mrs;       /* MRs over it: free = -EBUSY */
};

/* The address local SGEs give byte 0 of mr: its process address, or for
 * device memory (zero-based, nothing to point at) its iova */
static inline uint64_t emu_mr_lbase(const struct emu_mr *mr)
{
	return mr->dm ? mr->iova : mr->addr;
}

/* A piece of an MR mapped into the daemon (mrmap.c): client addresses
 * [addr, addr + len) are base[0 .. len) here. */
struct emu_mrmap_hold;
struct emu_mrmap {
	uint64_t addr, len;
	uint8_t *base;
	/* the mapping (what to munmap, and the references on it: frames
	 * sent zero-copy point into it); NULL for device memory */
	struct emu_mrmap_hold *hold;
	bool writable;
};
#define EMU_MRMAP_PER_MR 3

enum emu_mw_state { EMU_MW_FREE, EMU_MW_VALID };

struct emu_mw {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	enum ibv_mw_type type;
	enum emu_mw_state state;
	uint32_t rkey;      /* index << 8 | key byte (type 2: chosen at bind) */
	struct emu_mr *mr;  /* bound MR */
	struct emu_qp *qp;  /* type 2: the QP it was bound through */
	uint64_t va;        /* window start, in the MR's iova space */
	uint64_t length;
	unsigned access;
};

/* Records waiting for room in an event pipe (emu_evq_put). The pipe is
 * the daemon's own (the application holds only the read end), so a write
 * never blocks; a reader that falls behind gets up to EMU_EVQ_BACKLOG
 * records kept in order, beyond that they are counted and logged. */
#define EMU_EVQ_BACKLOG 256u
#define EMU_EVQ_REC_MAX 16u
struct emu_evq {
	int fd;                   /* the write end the backlog is for */
	uint32_t rec;             /* record size */
	uint32_t head, n;         /* backlog ring, in records */
	uint8_t *buf;             /* EMU_EVQ_BACKLOG records, allocated at first use */
	uint64_t lost;            /* records dropped: backlog full or reader gone */
	uint64_t log_ns;          /* last "lost" log line (rate limit) */
	struct emu_evq *pend_next; /* dev->evq_pend while n > 0 */
	bool pending;
};

struct emu_channel {
	struct emu_ctx *ctx;
	uint32_t handle;
	int wfd;            /* write end of the daemon's pipe (O_NONBLOCK, ours alone) */
	struct emu_evq q;
	uint32_t refcnt;    /* CQs */
};

struct emu_cq {
	struct emu_ctx *ctx;
	uint32_t handle;
	uint64_t user_handle;
	struct emu_channel *channel;
	struct uroce_ring_hdr *hdr;
	struct uroce_cqe *slots;
	struct uroce_cqe_inl *inl; /* companion slots: small payloads (abi.h) */
	uint32_t entries, mask;
	uint32_t prod;      /* daemon-private producer index */
	uint32_t pub;       /* prod as last published to the ring */
	uint32_t cons_seen; /* the shim's cons as last read: re-read only when
			     * the ring looks full, so a put does not pull the
			     * line the poller writes */
	bool pend_sol;      /* an unpublished CQE may fire a SOLICITED arm */
	uint32_t cqe;       /* capacity reported */
	bool error;         /* overrun: CQ_ERR raised, no more CQEs */
	bool want_ts;       /* UROCE_CQ_F_TIMESTAMP: CQEs carry the time */
	uint32_t refcnt;    /* QPs using it */
	int memfd;
	void *map;
	size_t map_size;
};

/* XRC domains (xrcd.c, docs/verbs.md "XRC"). A domain is the device's:
 * processes opening the same file share one (the file identified by the
 * dev/ino of a descriptor the client passed, never by a path), no file
 * makes a private one. Each ibv_open_xrcd is a handle of its context
 * (emu_xrcd_ref) counting what was made through it. */
struct emu_xrcd {
	struct emu_xrcd *next;    /* dev->xrcds */
	uint32_t num;             /* xrcdn, unique on the device */
	bool by_file;
	int fd;                   /* by_file: our own descriptor of the file, so
				   * its inode (and dev/ino) cannot be freed and
				   * reused while the domain lives; else -1 */
	dev_t fdev;
	ino_t fino;
	uint32_t refs;            /* handles, in every context */
};

struct emu_xrcd_ref {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_xrcd *x;
	uint32_t users;           /* XRC SRQs, TGT QPs, opened QPs: close is -EBUSY */
};

/* ibv_open_qp: names its TGT QP by number and domain, looked up at each
 * use, so a TGT QP destroyed meanwhile leaves nothing dangling */
struct emu_xqp {
	struct emu_xrcd_ref *ref;
	uint32_t handle;
	uint32_t qpn;
	uint64_t user_handle;
};

struct emu_srq {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	uint64_t user_handle;
	uint32_t db_index;
	struct emu_ring rq;
	uint32_t max_wr, max_sge;
	uint32_t srq_limit; /* 0 = not armed */
	bool error;
	uint32_t refcnt;    /* QPs */
	/* XRC SRQ: its domain, the CQ of its receive completions, its number
	 * on the device (the XRCETH's); NULL / 0 for a basic SRQ */
	struct emu_xrcd_ref *xref;
	struct emu_cq *cq;
	uint32_t srqn;
	int memfd;
	void *map;
	size_t map_size;
};

/* A resolved address vector: everything needed to address a packet. */
struct emu_av {
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint8_t dmac[6];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t ipv6;       /* 0: IPv4 (dgid IPv4-mapped), 1: IPv6 */
	uint8_t mac_valid;  /* 0: neighbour unresolved (emu_av_refresh) */
	uint32_t flow_label;
};

struct emu_ah {
	struct emu_ctx *ctx;
	uint32_t handle;
	struct emu_pd *pd;
	struct ibv_ah_attr attr;
	struct emu_av av;
};

/* The transport's state of a QP and of a device: its own types
 * (transport/xport_state.h); the core only allocates and points to them. */
struct emu_xport_qp;
struct emu_xport_dev;

struct emu_qp {
	struct emu_dev *dev;
	/* the transport's state of this QP: d->xops->qp_size bytes allocated
	 * with the QP, right after it (one allocation, no pointer chase
	 * beyond this line); the core never looks inside */
	struct emu_xport_qp *x;
	struct emu_ctx *ctx;
	uint32_t handle;
	enum ibv_qp_type type;
	struct emu_pd *pd;
	struct emu_cq *send_cq, *recv_cq;
	struct emu_srq *srq;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct ibv_qp_attr attr;  /* as last set (the transport keeps it current) */
	uint32_t qpn;
	uint32_t db_index;        /* beside qpn: no padding (test_robust qp_memory) */
	uint64_t user_handle;
	struct emu_ring sq, rq;   /* rq.entries == 0 with an SRQ */
	uint32_t mcast_groups;    /* groups attached (UD) */
	int memfd;                /* -1: the rings are in the context's arena, at map */
	void *map;
	size_t map_size;
	uint64_t charged;         /* daemon memory charged to ctx (limits) */
	/* XRC TGT QP (IBV_QPT_XRC_RECV): its domain; it owns no PD, CQ or
	 * SRQ: pd, recv_cq and srq are those of the XRC SRQ the request
	 * being served names (the transport binds them per request and
	 * d->xops->xrc_tgt_unbind when that SRQ goes), NULL between */
	struct emu_xrcd_ref *xref;
};

/* ------------------------------------------------------------------ */
/* Context: one application connection                                 */
/* ------------------------------------------------------------------ */
struct emu_handle_slot {
	uint8_t type;   /* enum emu_obj_type, EMU_OBJ_NONE = free */
	void *obj;
};

struct emu_db_slot {
	uint8_t type;   /* EMU_OBJ_QP / EMU_OBJ_SRQ / NONE */
	void *obj;
};

struct emu_ctx {
	struct emu_dev *dev;
	struct emu_ctx *next, *prev;  /* dev->ctxs */
	pid_t pid;
	uid_t uid;                    /* SO_PEERCRED at connect */
	bool see_all;                 /* root or the daemon's uid: all QPs in stats */
	gid_t gid;                    /* SO_PEERCRED at connect */
	bool privileged;              /* CAP_NET_RAW or --privileged-uid (HELLO):
				       * controlled Q_Keys, sends to QP0/QP1 */
	int mem_fd;                   /* the client's /proc/<pid>/mem, -1 = none (tests) */
	int maps_fd;                  /* its /proc/<pid>/maps (vma.c), -1 = not open */
	int pidfd;                    /* the process bound at HELLO (mem.c), -1 = none */
	struct emu_pin *pin;          /* its memory channel (pin.c), NULL = none yet */
	int sock;                     /* control socket, -1 = none (tests) */
	int wake_fd;                  /* eventfd the shim kicks */
	int async_fd;                 /* async pipe write end, -1 = none */
	struct emu_evq async_q;
	int db_memfd;
	struct uroce_db_page *db;     /* NULL in tests without doorbells */
	struct emu_handle_slot *h;
	uint32_t nh, h_free_hint;
	struct emu_db_slot *dbs;      /* db_index -> QP/SRQ */
	uint32_t ndbs, db_free_hint;  /* no free slot below the hint */
	void *priv;                   /* control server state */
	void *ucma;                   /* rdma_cm state (emu/cm/ucma.c) */
	bool hello_done;
	bool dead;                    /* disconnected, being torn down */
	bool mem_stalled;             /* an access to its memory blocked: quarantined */
	bool ctl_busy;                /* a request is being executed: ctl_op/ctl_seq */
	uint32_t ctl_op, ctl_seq;
	uint32_t nobj[EMU_OBJ_NTYPES];
	int32_t uid_slot;             /* dev->uids index, -1 = not accounted (tests) */
	uint64_t mem;                 /* daemon memory charged (queues), bytes */
	uint32_t nmaps;               /* mapped MR pieces (mrmap.c) */
	uint64_t mr_mapped, mr_syscall; /* payload pieces by path (mem.c) */
	uint64_t mr_pinned, mr_unpinned;
	struct emu_arena *arena;      /* QP rings (arena.c), NULL until the first */
};

/* Resource limits (docs/running.md, --limit/--uid-limit): objects one
 * context, and all contexts of one uid on a device, may hold. Index
 * EMU_OBJ_NONE of the per-uid table is the number of contexts. */
extern uint32_t emu_lim_ctx[EMU_OBJ_NTYPES];
extern uint32_t emu_lim_uid[EMU_OBJ_NTYPES];
/* "qp=100" etc.; 0 or -EINVAL */
int emu_limit_set(const char *spec, bool per_uid);
/* 0 if c may create one more object of type, else -ENOMEM */
int emu_ctx_quota(const struct emu_ctx *c, enum emu_obj_type type);
/* daemon memory (queue rings, private copies) charged to c and its uid:
 * 0, or -ENOMEM past --limit mem= / --uid-limit mem= */
extern uint64_t emu_lim_ctx_mem, emu_lim_uid_mem;
int emu_ctx_charge(struct emu_ctx *c, uint64_t bytes);
void emu_ctx_uncharge(struct emu_ctx *c, uint64_t bytes);
/* account c to uid: 0, or -EAGAIN when the uid has its maximum of contexts */
int emu_ctx_set_uid(struct emu_ctx *c, uint32_t uid);
/* an object a layer above counts itself (rdma_cm ids, listens,
 * connections): 0 and counted for c and its uid, or -ENOMEM past a limit */
int emu_ctx_obj_add(struct emu_ctx *c, enum emu_obj_type type);
void emu_ctx_obj_del(struct emu_ctx *c, enum emu_obj_type type);
/* limit names ("pd", ..., "cm_conn"), NULL for none */
const char *emu_limit_name(enum emu_obj_type type);
/* UROCE_OP_QUERY_LIMITS of context c for uid (the CM table's fields are
 * the caller's) */
void emu_limits_fill(const struct emu_ctx *c, uint32_t uid, struct uroce_query_limits_rep *r);

struct emu_uid_use {
	uint32_t uid;
	uint32_t nobj[EMU_OBJ_NTYPES]; /* [EMU_OBJ_NONE]: contexts; 0 there = free slot */
	uint64_t mem;
};

/* ------------------------------------------------------------------ */
/* Contexts and objects (ctx.c, teardown.c and one file per object:    */
/* pd.c mr.c mw.c dm.c event.c cq.c srq.c qp.c ah.c mcast.c xrcd.c):   */
/* used by the control server and by tests that drive the core without */
/* a socket.                                                           */
/* ------------------------------------------------------------------ */
struct emu_ctx *emu_ctx_new(struct emu_dev *d, pid_t pid, int sock);
/* Destroy every object of c (QPs first), close its fds and unlink it. The
 * struct itself lingers as a dead zombie (emu_mem_* fail with -EFAULT)
 * until the device has no QP, so transport state pointing at it stays
 * safe. */
void emu_ctx_destroy(struct emu_ctx *c);
void emu_ctx_reap(struct emu_dev *d);
/* Object of type in c by handle, or NULL. */
void *emu_ctx_get(struct emu_ctx *c, uint32_t handle, enum emu_obj_type type);
/* Shared memory for a client (rings, the doorbell page): a sealed-size
 * memfd of size bytes, mapped shared; 0 or -errno. */
int emu_shm_create(const char *name, size_t size, int *fd, void **map);
void emu_shm_destroy(int fd, void *map, size_t size);

/* The context's QP ring arena (arena.c). A piece: chunk index, offset and
 * address there, and new_fd >= 0 when the chunk was made for it (the
 * caller sends it to the client and closes it). */
struct emu_arena;
struct emu_arena_piece {
	uint32_t chunk;
	uint64_t off;
	void *map;
	int new_fd;
};
/* size bytes (<= UROCE_ARENA_MAX_RINGS), zeroed: 0, -EINVAL, or -ENOMEM
 * when a new chunk would pass c's memory limit */
int emu_arena_alloc(struct emu_ctx *c, size_t size, struct emu_arena_piece *p);
/* the piece at at (size bytes) back to c's arena */
void emu_arena_free(struct emu_ctx *c, void *at, size_t size);
/* every chunk unmapped and uncharged (the context's QPs are gone) */
void emu_arena_fini(struct emu_ctx *c);

/* Object operations; each returns 0 or -errno and fills a reply. */
int emu_pd_alloc(struct emu_ctx *c, uint32_t *handle);
int emu_pd_dealloc(struct emu_ctx *c, uint32_t handle);
int emu_mr_reg(struct emu_ctx *c, const struct uroce_reg_mr_req *q, struct uroce_reg_mr_rep *r);
int emu_mr_rereg(struct emu_ctx *c, const struct uroce_rereg_mr_req *q, struct uroce_reg_mr_rep *r);
int emu_mr_dereg(struct emu_ctx *c, uint32_t handle);
/* odp.c: an implicit ODP registration (the whole address space)? */
bool emu_mr_implicit(uint64_t addr, uint64_t len, unsigned access);
/* ibv_advise_mr: check the list and say where its entries are */
int emu_mr_advise(struct emu_ctx *c, const struct uroce_advise_mr_req *q,
		  struct uroce_advise_mr_rep *r);
int emu_obj_import(struct emu_ctx *c, const struct uroce_import_req *q,
		   struct uroce_import_rep *r);
/* Device memory (dm.c; its MRs: mr.c). *memfd_out: still owned by the
 * DM (send it). */
int emu_dm_alloc(struct emu_ctx *c, const struct uroce_alloc_dm_req *q,
		 struct uroce_alloc_dm_rep *r, int *memfd_out);
int emu_dm_free(struct emu_ctx *c, uint32_t handle);
int emu_dm_reg_mr(struct emu_ctx *c, const struct uroce_reg_dm_mr_req *q,
		  struct uroce_reg_mr_rep *r);
int emu_dm_import(struct emu_ctx *c, uint32_t handle, uint64_t *length, int *memfd_out);
/* largest allocation the limits allow (ibv_query_device_ex max_dm_size;
 * ctx.c, with the limits) */
uint32_t emu_dm_max_size(void);
int emu_mw_alloc(struct emu_ctx *c, const struct uroce_alloc_mw_req *q, struct uroce_alloc_mw_rep *r);
int emu_mw_dealloc(struct emu_ctx *c, uint32_t handle);
int emu_channel_create(struct emu_ctx *c, int wfd, uint32_t *handle); /* takes wfd */
int emu_channel_destroy(struct emu_ctx *c, uint32_t handle);
/* *memfd_out: the ring memfd, still owned by the CQ (send it, don't close) */
int emu_cq_create(struct emu_ctx *c, const struct uroce_create_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out);
int emu_cq_resize(struct emu_ctx *c, const struct uroce_resize_cq_req *q,
		  struct uroce_create_cq_rep *r, int *memfd_out);
int emu_cq_destroy(struct emu_ctx *c, uint32_t handle);
int emu_srq_create(struct emu_ctx *c, const struct uroce_create_srq_req *q,
		   struct uroce_create_srq_rep *r, int *memfd_out);
int emu_srq_modify(struct emu_ctx *c, const struct uroce_modify_srq_req *q);
/* With r and IBV_SRQ_MAX_WR: beyond the ring, the SRQ moves to a new one;
 * r and *memfd_out describe the ring in use either way. */
int emu_srq_modify_ex(struct emu_ctx *c, const struct uroce_modify_srq_req *q,
		      struct uroce_create_srq_rep *r, int *memfd_out);
int emu_srq_query(struct emu_ctx *c, uint32_t handle, struct ibv_srq_attr *a);
int emu_srq_destroy(struct emu_ctx *c, uint32_t handle);
int emu_qp_create(struct emu_ctx *c, const struct uroce_create_qp_req *q,
		  struct uroce_create_qp_rep *r, int *memfd_out);
/* The rings in c's arena, or (larger than UROCE_ARENA_MAX_RINGS) a memfd
 * of their own; *fd_out: a descriptor to send with the reply or -1, and
 * *fd_close whether the caller closes it after sending (an arena chunk's)
 * or it stays the QP's (its own memfd). */
int emu_qp_create_arena(struct emu_ctx *c, const struct uroce_create_qp_req *q,
			struct uroce_create_qp_arena_rep *r, int *fd_out, bool *fd_close);
int emu_qp_modify_op(struct emu_ctx *c, const struct uroce_modify_qp_req *q);
int emu_qp_query_op(struct emu_ctx *c, const struct uroce_query_qp_req *q,
		    struct uroce_query_qp_rep *r);
int emu_qp_destroy(struct emu_ctx *c, uint32_t handle);
int emu_ah_create(struct emu_ctx *c, const struct uroce_create_ah_req *q, uint32_t *handle);
int emu_ah_destroy(struct emu_ctx *c, uint32_t handle);
int emu_mcast_op(struct emu_ctx *c, const struct uroce_mcast_req *q, bool attach);

/* XRC (xrcd.c). fd: the file naming a shared domain, or -1. */
#define EMU_SRQN_TABLE 65536u
int emu_xrcd_open(struct emu_ctx *c, const struct uroce_open_xrcd_req *q, int fd,
		  struct uroce_open_xrcd_rep *r);
int emu_xrcd_close(struct emu_ctx *c, uint32_t handle);
int emu_xsrq_create(struct emu_ctx *c, const struct uroce_create_xsrq_req *q,
		    struct uroce_create_xsrq_rep *r, int *memfd_out);
int emu_xrc_tgt_create(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		       struct uroce_xrc_qp_rep *r);
int emu_xrc_qp_open(struct emu_ctx *c, const struct uroce_xrc_qp_req *q,
		    struct uroce_xrc_qp_rep *r);
/* the QP a QP handle or an opened-QP handle of c names, or NULL */
struct emu_qp *emu_qp_of_handle(struct emu_ctx *c, uint32_t handle);

/* Multicast group membership for UD QPs. */
int emu_mcast_attach(struct emu_qp *qp, const union ibv_gid *gid);
int emu_mcast_detach(struct emu_qp *qp, const union ibv_gid *gid);

/* Leave every group (QP destroy). */
void emu_mcast_detach_all(struct emu_qp *qp);

#endif /* EMU_OBJ_H */
