/* SPDX-License-Identifier: MIT */

/* Private to emu/cm: the rdma_ucm's state (device, files, ids, events,
 * multicast joins) and the functions its files share (ucma.c and
 * ucma_*.c; docs/cm.md). */

#ifndef EMU_CM_UCMA_INT_H
#define EMU_CM_UCMA_INT_H


#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <rdma/rdma_user_cm.h>

#include "ibcm.h"
#include "ucma.h"

#ifndef AF_IB
#define AF_IB 27
#endif

#define UCMA_MAX_BACKLOG 1024
#define UCMA_UDP_QKEY 0x01234567u
#define UCMA_PKT_LIFETIME 18      /* CMA_IBOE_PACKET_LIFETIME */
#define UCMA_DEF_ACK_TIMEOUT 19   /* packet lifetime + 1 (cm_ack_timeout) */
#define UCMA_HOP_LIMIT 64
#define UCMA_CM_RESPONSE_TIMEOUT 20 /* CMA_CM_RESPONSE_TIMEOUT: 4096 ms a try */
#define UCMA_MAX_CM_RETRIES 15      /* CMA_MAX_CM_RETRIES */
#define UCMA_EPHEMERAL_LO 32768
#define UCMA_EPHEMERAL_HI 60999

/* private data left to the application (IB CM sizes minus cma_hdr) */
#define UCMA_REQ_PDATA      (92 - 36)
#define UCMA_SIDR_REQ_PDATA (216 - 36)
#define UCMA_REP_PDATA      196
#define UCMA_REJ_PDATA      148
#define UCMA_SIDR_REP_PDATA 136
#define UCMA_DREQ_PDATA     220

/* IB CM reject reasons and SIDR statuses the kernel reports */
#define REJ_TIMEOUT 4
#define REJ_INVALID_SERVICE_ID 8
#define REJ_CONSUMER_DEFINED 28
#define REJ_VENDOR_OPTION_NOT_SUPPORTED 35
#define SIDR_UNSUPPORTED 1
#define SIDR_REJECT 2

/* enum rdma_cm_event_type (librdmacm's rdma_cma.h; the kernel's values) */
enum {
	RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED,
	RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_DEVICE_REMOVAL,
	RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,
};

/* rdma_cm id states (the kernel's enum rdma_cm_state) */
enum ucma_state {
	S_IDLE, S_ADDR_QUERY, S_ADDR_RESOLVED, S_ROUTE_QUERY, S_ROUTE_RESOLVED,
	S_CONNECT, S_DISCONNECT, S_ADDR_BOUND, S_LISTEN,
};

/* where the id's IB CM exchange stands (the ib_cm states that matter) */
enum ucma_cp {
	CP_NONE, CP_REQ_SENT, CP_REQ_RCVD, CP_REP_SENT, CP_REP_RCVD, CP_ESTABLISHED,
	CP_DREQ_SENT, CP_DREQ_RCVD, CP_TIMEWAIT, CP_DONE,
};

struct ucma_sib { /* struct sockaddr_ib */
	uint16_t sib_family;
	uint16_t sib_pkey;
	uint32_t sib_flowinfo;
	uint8_t sib_addr[16];
	uint64_t sib_sid;
	uint64_t sib_sid_mask;
	uint64_t sib_scope_id;
};

struct ucma_file;
struct ucma_id;

struct ucma_mc {
	struct ucma_mc *next;     /* id->mcs */
	struct ucma_id *id;
	uint32_t handle;
	uint64_t uid;
	uint32_t events_reported;
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	bool send_only;           /* no membership report (the kernel's rule) */
};

struct ucma_ev {
	struct ucma_ev *next;
	struct ucma_id *id;       /* the id it belongs to: removed with it */
	struct ucma_id *conn;     /* CONNECT_REQUEST: the new id */
	struct ucma_mc *mc;       /* multicast events */
	struct rdma_ucm_event_resp resp;
};

struct ucma_file {
	struct ucma_file *next;
	struct emu_ctx *ctx;
	uint32_t handle;
	int wfd;                  /* event pipe write end (ours, O_NONBLOCK) */
	struct emu_evq q;
	struct ucma_ev *head, **tail;
	uint32_t nev;
};

struct ucma_id {
	uint32_t handle;
	bool hidden;              /* a connection request not fetched yet */
	struct ucma_file *file;
	uint64_t uid;
	uint16_t ps;
	uint8_t qp_type;
	enum ucma_state state;
	struct sockaddr_storage src, dst;
	bool bound;               /* holds its port in the port space */
	bool has_dev;             /* bound to the device (an address of it) */
	uint8_t sgid_index;
	bool reuseaddr, afonly, afonly_set, tos_set, timeout_set;
	uint8_t tos, timeout;
	uint32_t backlog, pending;
	uint32_t events_reported;
	struct ucma_id *listen;   /* connection request: its listener until fetched */
	uint64_t deadline;        /* address resolution / timewait; 0 = none */
	bool route;               /* route resolved (a path record exists) */
	/* connection */
	enum ucma_cp cp;
	uint32_t seq_num;         /* our starting PSN: sent in REQ/REP, rq_psn at RTR */
	uint32_t sq_psn;          /* the peer's (REQ/REP starting PSN): sq_psn at RTS */
	uint32_t rqpn, qkey;
	uint8_t resp_res, init_depth, retry, rnr_retry, srq, flow_control;
	uint8_t path_mtu, hop_limit, tclass;
	struct rdma_ucm_ece ece;  /* what our REQ / REP carries (CONNECT's, ACCEPT's) */
	union ibv_gid sgid, dgid;
	struct ucma_mc *mcs;
	struct emu_ibcm_id *cm;   /* the exchange goes over the wire (QP1) */
	struct ucma_wl *wl;       /* listener: its service on the wire */
};

/* A service listened on over the wire: the IB CM has one listener per
 * service ID, shared by the rdma_cm listeners of that port space and port
 * (the kernel shares them the same way); requests then find their rdma_cm
 * listener by the cma_hdr's destination address. */
struct ucma_wl {
	struct ucma_wl *next;
	uint16_t ps, port;
	uint32_t refs;
	struct emu_ibcm_id *cm;
};

/* what one client context holds (emu_ctx.ucma): the limits' counters */
struct ucma_ctx {
	uint32_t nfiles, nev, nmcs;
};

struct ucma_dev {
	struct emu_dev *d;
	struct ucma_file *files;
	struct ucma_id **ids;
	uint32_t nids, hint;
	struct ucma_mc **mcs;
	uint32_t nmcs;
	uint32_t next_file;
	uint64_t rnd;
	uint32_t timers;          /* ids with a deadline */
	uint64_t next_ns;         /* nothing to do before (emu_ucma_poll) */
	struct ucma_wl *wls;      /* wire listeners */
	struct emu_ibcm *cm;      /* the engine the wire pointers belong to */
};

struct ucma_call {
	struct ucma_dev *u;
	struct ucma_file *f;
	const uint8_t *in;
	uint32_t in_len;
	uint32_t out_len;
	uint8_t *out;
	size_t *olen;
};

/* the command struct, zero-padded: the optional tail (ece) may be absent */
#define UCMA_IN(k, type, var, need) \
	type var; \
	do { \
		if ((k)->in_len < (need)) \
			return -EINVAL; \
		memset(&var, 0, sizeof(var)); \
		memcpy(&var, (k)->in, (k)->in_len < sizeof(var) ? (k)->in_len : sizeof(var)); \
	} while (0)

/* ucma_addr.c */
socklen_t ucma_addr_size(const struct sockaddr_storage *a);
uint16_t ucma_port(const struct sockaddr_storage *a);
void ucma_set_port(struct sockaddr_storage *a, uint16_t port);
void ucma_gid(const struct sockaddr_storage *a, union ibv_gid *g);
void ucma_gid_to_addr(const union ibv_gid *g, sa_family_t fam, struct sockaddr_storage *a);
bool ucma_any(const struct sockaddr_storage *a);
bool ucma_is_loop(const struct sockaddr_storage *a);
bool ucma_is_mcast(const struct sockaddr_storage *a);
bool ucma_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
bool ucma_gid_v4(const union ibv_gid *g);
int ucma_local_index(const struct emu_dev *d, const struct sockaddr_storage *a);
int ucma_src_index(const struct emu_dev *d, sa_family_t fam);
int ucma_in6_size(const struct sockaddr_in6 *a);
void ucma_copy_addr(void *dst, size_t room, const struct sockaddr_storage *a);

/* ucma_event.c */
uint32_t ucma_rand(struct ucma_dev *u);
struct ucma_dev *ucma_dev(struct emu_dev *d, bool create);
struct ucma_file *ucma_file_get(struct ucma_dev *u, struct emu_ctx *c, uint32_t h);
struct ucma_ctx *ucma_cx(struct emu_ctx *c);
bool ucma_ev_room(const struct ucma_file *f);
void *ucma_grow(void *tab, uint32_t *n, uint32_t first, size_t elem);
struct ucma_id *ucma_id_new(struct ucma_dev *u, struct ucma_file *f, uint16_t ps,
			    uint8_t qp_type, int *err);
void ucma_id_free(struct ucma_dev *u, struct ucma_id *id);
struct ucma_ev *ucma_ev_new(struct ucma_id *id, uint32_t event, int32_t status);
void ucma_ev_post(struct ucma_dev *u, struct ucma_ev *e);
void ucma_event(struct ucma_dev *u, struct ucma_id *id, uint32_t event, int32_t status);
void ucma_event_pdata(struct ucma_dev *u, struct ucma_id *id, uint32_t event,
		      int32_t status, const uint8_t *pd, unsigned plen, unsigned field);
struct ucma_ev *ucma_ev_take(struct ucma_file *f, const struct ucma_id *id,
			     const struct ucma_id *conn, const struct ucma_mc *mc);
void ucma_ev_free(struct ucma_ev *e);
void ucma_timer(struct ucma_dev *u, struct ucma_id *id, uint64_t deadline);
void ucma_out(struct ucma_call *k, const void *p, size_t n);
int ucma_get(struct ucma_call *k, uint32_t h, struct ucma_id **id);
int ucma_get_dev(struct ucma_call *k, uint32_t h, struct ucma_id **id);
int ucma_cmd_create_id(struct ucma_call *k);
int ucma_cmd_get_event(struct ucma_call *k);
int ucma_cmd_migrate_id(struct ucma_call *k);

/* ucma_bind.c */
int ucma_check_port(struct ucma_dev *u, struct ucma_id *id, uint16_t port, bool reuse);
int ucma_bind(struct ucma_dev *u, struct ucma_id *id, const struct sockaddr_storage *a);
int ucma_cmd_bind_ip(struct ucma_call *k);
int ucma_cmd_bind(struct ucma_call *k);

/* ucma_resolve.c */
void ucma_addr_done(struct ucma_dev *u, struct ucma_id *id, int status);
int ucma_addr_try(struct ucma_dev *u, struct ucma_id *id);
int ucma_resolve_route(struct ucma_dev *u, struct ucma_id *id);
int ucma_cmd_resolve_ip(struct ucma_call *k);
int ucma_cmd_resolve_addr(struct ucma_call *k);
int ucma_cmd_resolve_route(struct ucma_call *k);

/* ucma_conn.c: the exchange through the IB CM engine */
void ucma_ah_attr(const struct ucma_id *id, struct ib_uverbs_ah_attr *ah);
struct emu_ibcm *ucma_engine(struct ucma_dev *u);
struct emu_ibcm_id *ucma_cm_new(struct ucma_dev *u, struct ucma_id *a);
void ucma_cm_drop(struct ucma_id *a, struct emu_ibcm_id *c);
int ucma_cm_listen(struct ucma_dev *u, struct ucma_id *l);
void ucma_cm_destroy(struct ucma_dev *u, struct ucma_id *id);

/* ucma_mcast.c */
void ucma_mc_free(struct ucma_dev *u, struct ucma_mc *mc);
int ucma_cmd_join_ip_mcast(struct ucma_call *k);
int ucma_cmd_join_mcast(struct ucma_call *k);
int ucma_cmd_leave_mcast(struct ucma_call *k);

/* ucma_destroy.c */
void ucma_file_destroy(struct ucma_dev *u, struct ucma_file *f);
int ucma_cmd_destroy_id(struct ucma_call *k);

/* ucma_conn_cmd.c */
int ucma_cmd_connect(struct ucma_call *k);
int ucma_cmd_listen(struct ucma_call *k);
int ucma_cmd_accept(struct ucma_call *k);
int ucma_cmd_reject(struct ucma_call *k);
int ucma_cmd_disconnect(struct ucma_call *k);
int ucma_cmd_init_qp_attr(struct ucma_call *k);
int ucma_cmd_notify(struct ucma_call *k);

/* ucma_option.c */
int ucma_cmd_query_route(struct ucma_call *k);
int ucma_cmd_query(struct ucma_call *k);
int ucma_cmd_set_option(struct ucma_call *k);

#endif
