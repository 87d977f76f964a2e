/* SPDX-License-Identifier: MIT */
/* The kernel's rdma_ucm (drivers/infiniband/core/ucma.c) and rdma_cm
 * (cma.c) semantics, for librdmacm running unmodified on uroce: files with
 * their event queues, ids with the kernel's state machine, port spaces and
 * bind rules, address and route resolution, connection establishment with
 * the values the kernel returns from INIT_QP_ATTR, and teardown when a file
 * or its client goes away. docs/cm.md says what differs from the kernel.
 *
 * Connections go over the wire through the IB CM engine (emu/cm/ibcm.c:
 * MADs on QP1; to an address of this device they loop back to it, as the
 * kernel's do). Without the engine (or with UROCE_CM_NO_WIRE) the same
 * REQ/REP/RTU/REJ/DREQ/DREP/SIDR exchange between two ids of this device
 * is carried by direct calls with the parameters the MADs would carry
 * (docs/cm.md). */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
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
	struct ucma_id *peer;
	enum ucma_cp cp;
	uint32_t seq_num;         /* our starting PSN: sent in REQ/REP, rq_psn at RTR */
	uint32_t sq_psn;          /* the peer's (REQ/REP starting PSN): sq_psn at RTS */
	uint32_t rqpn, qkey;
	uint8_t resp_res, init_depth, retry, rnr_retry, srq, flow_control;
	uint8_t path_mtu, hop_limit, tclass;
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
	uint32_t nfiles, nids, nev, nmcs;
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
	bool no_wire;             /* UROCE_CM_NO_WIRE: the direct exchange only */
};

/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */

static uint32_t ucma_rand(struct ucma_dev *u)
{
	u->rnd ^= u->rnd << 13;
	u->rnd ^= u->rnd >> 7;
	u->rnd ^= u->rnd << 17;
	return (uint32_t)(u->rnd >> 11);
}

static struct ucma_dev *ucma_dev(struct emu_dev *d, bool create)
{
	struct ucma_dev *u = d->ucma;

	if (u || !create)
		return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->d = d;
	u->next_file = 1;
	/* tests of the exchange without MADs (docs/cm.md) */
	u->no_wire = getenv("UROCE_CM_NO_WIRE") != NULL;
	u->rnd = emu_now_ns() ^ (uintptr_t)u ^ 0x9e3779b97f4a7c15ull;
	if (!u->rnd)
		u->rnd = 1;
	d->ucma = u;
	return u;
}

static socklen_t ucma_addr_size(const struct sockaddr_storage *a)
{
	switch (a->ss_family) {
	case AF_INET: return sizeof(struct sockaddr_in);
	case AF_INET6: return sizeof(struct sockaddr_in6);
	case AF_IB: return sizeof(struct ucma_sib);
	default: return 0;
	}
}

static uint16_t ucma_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

static void ucma_set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

/* the address as a GID (IPv4-mapped for IPv4), as rdma_ip2gid */
static void ucma_gid(const struct sockaddr_storage *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (a->ss_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(g->raw + 12, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a->ss_family == AF_INET6) {
		memcpy(g->raw, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
	}
}

static void ucma_gid_to_addr(const union ibv_gid *g, sa_family_t fam, struct sockaddr_storage *a)
{
	uint16_t port = ucma_port(a);

	memset(a, 0, sizeof(*a));
	a->ss_family = fam;
	if (fam == AF_INET)
		memcpy(&((struct sockaddr_in *)a)->sin_addr, g->raw + 12, 4);
	else
		memcpy(&((struct sockaddr_in6 *)a)->sin6_addr, g->raw, 16);
	ucma_set_port(a, port);
}

static bool ucma_any(const struct sockaddr_storage *a)
{
	static const uint8_t z[16];

	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == 0;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, z, 16);
	return true;
}

static bool ucma_is_loop(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] == 127;
	if (a->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return false;
}

static bool ucma_is_mcast(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] & 0xf0) == 0xe0;
	if (a->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr[0] == 0xff;
	return false;
}

/* same address (ports not compared), as cma_addr_cmp == 0 */
static bool ucma_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	union ibv_gid ga, gb;

	if (a->ss_family != b->ss_family)
		return false;
	ucma_gid(a, &ga);
	ucma_gid(b, &gb);
	return !memcmp(ga.raw, gb.raw, 16);
}

static bool gid_v4(const union ibv_gid *g)
{
	static const uint8_t p[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(g->raw, p, 12);
}

/* GID index serving address a of this device, or -1: an address in the
 * GID table; on the loopback port also 127/8 and ::1 */
static int ucma_local_index(const struct emu_dev *d, const struct sockaddr_storage *a)
{
	union ibv_gid g;

	ucma_gid(a, &g);
	int i = emu_gid_find(d, &g);
	if (i >= 0)
		return i;
	if (!d->loopback || !ucma_is_loop(a))
		return -1;
	for (uint32_t k = 0; k < d->gid_count; k++)
		if (gid_v4(&d->gids[k]) == (a->ss_family == AF_INET))
			return (int)k;
	return 0;
}

/* first GID of the family to source traffic to a remote address, or -1 */
static int ucma_src_index(const struct emu_dev *d, sa_family_t fam)
{
	int ll = -1;

	for (uint32_t k = 0; k < d->gid_count; k++) {
		if (gid_v4(&d->gids[k]) != (fam == AF_INET))
			continue;
		if (fam == AF_INET6 && d->gids[k].raw[0] == 0xfe && (d->gids[k].raw[1] & 0xc0) == 0x80) {
			if (ll < 0)
				ll = (int)k;
			continue;
		}
		return (int)k;
	}
	return ll;
}

/* ------------------------------------------------------------------ */
/* files, ids and events                                               */
/* ------------------------------------------------------------------ */

static struct ucma_file *ucma_file_get(struct ucma_dev *u, struct emu_ctx *c, uint32_t h)
{
	for (struct ucma_file *f = u ? u->files : NULL; f; f = f->next)
		if (f->handle == h && f->ctx == c)
			return f;
	return NULL;
}

/* the context's counters (allocated at its first file) */
static struct ucma_ctx *ucma_cx(struct emu_ctx *c)
{
	if (!c->ucma)
		c->ucma = calloc(1, sizeof(struct ucma_ctx));
	return c->ucma;
}

static void ucma_nev(struct ucma_file *f, int d)
{
	struct ucma_ctx *x = f->ctx->ucma;

	f->nev += (uint32_t)d;
	if (x)
		x->nev += (uint32_t)d;
}

static bool ucma_ev_room(const struct ucma_file *f)
{
	const struct ucma_ctx *x = f->ctx->ucma;

	return !x || x->nev < EMU_UCMA_MAX_EVENTS;
}

static int ucma_handle_alloc(struct ucma_dev *u, struct ucma_id *id)
{
	for (uint32_t k = 0; k < u->nids; k++) {
		uint32_t i = (u->hint + k) % u->nids;
		if (!u->ids[i]) {
			u->ids[i] = id;
			id->handle = i;
			u->hint = i + 1;
			return 0;
		}
	}
	uint32_t n = u->nids ? u->nids * 2 : 64;
	struct ucma_id **t = realloc(u->ids, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + u->nids, 0, (n - u->nids) * sizeof(*t));
	u->ids = t;
	id->handle = u->nids;
	t[u->nids] = id;
	u->hint = u->nids + 1;
	u->nids = n;
	return 0;
}

static struct ucma_id *ucma_id_new(struct ucma_dev *u, struct ucma_file *f, uint16_t ps,
				   uint8_t qp_type, int *err)
{
	struct ucma_ctx *x = f->ctx->ucma;
	if (!x || x->nids >= EMU_UCMA_MAX_IDS) {
		*err = -ENOMEM;
		return NULL;
	}
	struct ucma_id *id = calloc(1, sizeof(*id));
	if (!id) {
		*err = -ENOMEM;
		return NULL;
	}
	if ((*err = ucma_handle_alloc(u, id))) {
		free(id);
		return NULL;
	}
	x->nids++;
	id->file = f;
	id->ps = ps;
	id->qp_type = qp_type;
	id->state = S_IDLE;
	id->seq_num = ucma_rand(u) & 0xffffff;
	id->hop_limit = UCMA_HOP_LIMIT;
	return id;
}

/* the kernel's _ucma_find_context: -ENOENT unknown, -EINVAL another file's */
static struct ucma_id *ucma_id_get(struct ucma_dev *u, struct ucma_file *f, uint32_t h, int *err)
{
	struct ucma_id *id = h < u->nids ? u->ids[h] : NULL;

	if (!id || id->hidden) {
		*err = -ENOENT;
		return NULL;
	}
	if (id->file != f) {
		*err = -EINVAL;
		return NULL;
	}
	return id;
}

static void ucma_wake(struct ucma_dev *u, struct ucma_file *f)
{
	static const uint8_t b = 1;

	emu_evq_put(u->d, &f->q, f->wfd, &b, 1);
}

static struct ucma_ev *ucma_ev_new(struct ucma_id *id, uint32_t event, int32_t status)
{
	struct ucma_file *f = id->file;

	/* ucma_event_handler: events of an id the application has not given
	 * its context yet (a request not accepted) are dropped */
	if (!id->uid && event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return NULL;

	if (!ucma_ev_room(f)) {
		EMU_LOG_RL(WARNING, "pid %d: rdma_cm: %u events unread, dropping one\n",
			   (int)f->ctx->pid, EMU_UCMA_MAX_EVENTS);
		return NULL;
	}
	struct ucma_ev *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->id = id;
	e->resp.uid = id->uid;
	e->resp.id = id->handle;
	e->resp.event = event;
	e->resp.status = (uint32_t)status;
	return e;
}

static void ucma_ev_post(struct ucma_dev *u, struct ucma_ev *e)
{
	struct ucma_file *f = e->id->file;

	e->next = NULL;
	*f->tail = e;
	f->tail = &e->next;
	ucma_nev(f, 1);
	ucma_wake(u, f);
}

static void ucma_event(struct ucma_dev *u, struct ucma_id *id, uint32_t event, int32_t status)
{
	struct ucma_ev *e = ucma_ev_new(id, event, status);
	if (e)
		ucma_ev_post(u, e);
}

/* an event carrying the IB CM's private data, as ucma copies it: the
 * whole private data field of the MAD (IB does not carry its length) */
static void ucma_event_pdata(struct ucma_dev *u, struct ucma_id *id, uint32_t event,
			     int32_t status, const uint8_t *pd, unsigned plen, unsigned field)
{
	struct ucma_ev *e = ucma_ev_new(id, event, status);
	if (!e)
		return;
	if (id->qp_type == IBV_QPT_UD) {
		if (plen)
			memcpy(e->resp.param.ud.private_data, pd, plen);
		e->resp.param.ud.private_data_len = (uint8_t)field;
	} else {
		if (plen)
			memcpy(e->resp.param.conn.private_data, pd, plen);
		e->resp.param.conn.private_data_len = (uint8_t)field;
	}
	ucma_ev_post(u, e);
}

static void ucma_timer(struct ucma_dev *u, struct ucma_id *id, uint64_t deadline)
{
	if (!id->deadline && deadline)
		u->timers++;
	else if (id->deadline && !deadline)
		u->timers--;
	id->deadline = deadline;
	if (deadline && deadline < u->next_ns)
		u->next_ns = deadline;
	if (id->state == S_ADDR_QUERY)
		u->next_ns = 0; /* neighbour answers are looked for at once */
}

/* ------------------------------------------------------------------ */
/* port spaces (cma_get_port, cma_check_port)                         */
/* ------------------------------------------------------------------ */

static int ucma_check_port(struct ucma_dev *u, struct ucma_id *id, uint16_t port, bool reuse)
{
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *cur = u->ids[i];
		if (!cur || cur == id || !cur->bound || cur->ps != id->ps || ucma_port(&cur->src) != port)
			continue;
		if (reuse && cur->reuseaddr)
			continue;
		if (id->afonly && cur->afonly && id->src.ss_family != cur->src.ss_family)
			continue;
		if (ucma_any(&id->src) || ucma_any(&cur->src))
			return -EADDRNOTAVAIL;
		if (ucma_same_addr(&id->src, &cur->src))
			return -EADDRINUSE;
	}
	return 0;
}

static bool ucma_port_free(struct ucma_dev *u, uint16_t ps, uint16_t port)
{
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *cur = u->ids[i];
		if (cur && cur->bound && cur->ps == ps && ucma_port(&cur->src) == port)
			return false;
	}
	return true;
}

static int ucma_get_port(struct ucma_dev *u, struct ucma_id *id, uid_t uid)
{
	uint16_t port = ucma_port(&id->src);

	if (!port) {
		uint32_t range = UCMA_EPHEMERAL_HI - UCMA_EPHEMERAL_LO + 1;
		uint32_t start = ucma_rand(u) % range;
		for (uint32_t k = 0; k < range; k++) {
			uint16_t p = (uint16_t)(UCMA_EPHEMERAL_LO + (start + k) % range);
			if (ucma_port_free(u, id->ps, p)) {
				ucma_set_port(&id->src, p);
				id->bound = true;
				return 0;
			}
		}
		return -EADDRNOTAVAIL;
	}
	if (port < 1024 && uid != 0)
		return -EACCES;
	int rc = ucma_check_port(u, id, port, id->reuseaddr);
	if (!rc)
		id->bound = true;
	return rc;
}

/* rdma_bind_addr */
static int ucma_bind(struct ucma_dev *u, struct ucma_id *id, const struct sockaddr_storage *a)
{
	socklen_t sz = ucma_addr_size(a);

	if (a->ss_family != AF_INET && a->ss_family != AF_INET6)
		return -EAFNOSUPPORT; /* AF_IB: docs/cm.md (librdmacm then uses IP commands) */
	if (id->state != S_IDLE)
		return -EINVAL;
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !s6->sin6_scope_id)
			return -EINVAL;
	}
	struct sockaddr_storage save = id->src;
	memset(&id->src, 0, sizeof(id->src));
	memcpy(&id->src, a, sz);
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)&id->src)->sin6_scope_id = 0;
	if (!ucma_any(a)) {
		int i = ucma_local_index(u->d, a);
		if (i < 0) {
			id->src = save;
			return -EADDRNOTAVAIL;
		}
		id->sgid_index = (uint8_t)i;
		id->sgid = u->d->gids[i];
		id->has_dev = true;
	}
	if (!id->afonly_set)
		id->afonly = a->ss_family == AF_INET;
	memset(&id->dst, 0, sizeof(id->dst));
	id->dst.ss_family = a->ss_family;
	int rc = ucma_get_port(u, id, id->file->ctx->uid);
	if (rc) {
		id->src = save;
		id->has_dev = false;
		return rc;
	}
	id->state = S_ADDR_BOUND;
	return 0;
}

/* ------------------------------------------------------------------ */
/* address and route resolution                                        */
/* ------------------------------------------------------------------ */

static void ucma_addr_done(struct ucma_dev *u, struct ucma_id *id, int status)
{
	ucma_timer(u, id, 0);
	if (status) {
		id->state = S_ADDR_BOUND;
		ucma_event(u, id, RDMA_CM_EVENT_ADDR_ERROR, status);
		return;
	}
	id->state = S_ADDR_RESOLVED;
	ucma_event(u, id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

/* the source of an id whose destination is known: its own bound address,
 * or the device's address for that destination */
static int ucma_pick_src(struct ucma_dev *u, struct ucma_id *id, int local_dst)
{
	if (id->has_dev)
		return 0;
	int i = local_dst >= 0 ? local_dst : ucma_src_index(u->d, id->dst.ss_family);
	if (i < 0)
		return -ENETUNREACH;
	if (local_dst >= 0 && ucma_is_loop(&id->dst)) {
		/* 127.0.0.1 / ::1 talk to themselves from the same address */
		uint16_t p = ucma_port(&id->src);
		memcpy(&id->src, &id->dst, sizeof(id->src));
		ucma_set_port(&id->src, p);
	} else {
		ucma_gid_to_addr(&u->d->gids[i], id->dst.ss_family, &id->src);
	}
	id->sgid_index = (uint8_t)i;
	id->sgid = u->d->gids[i];
	id->has_dev = true;
	return 0;
}

/* 0: resolved now, 1: pending (neighbour), <0: error status */
static int ucma_addr_try(struct ucma_dev *u, struct ucma_id *id)
{
	int li = ucma_local_index(u->d, &id->dst);

	if (li >= 0 || ucma_is_mcast(&id->dst))
		return ucma_pick_src(u, id, li);
	/* on the loopback port every frame comes back to us: an address
	 * that is not ours has nobody to answer for it */
	if (u->d->loopback)
		return 1;
	union ibv_gid g;
	uint8_t mac[6];
	ucma_gid(&id->dst, &g);
	if (emu_neigh_lookup(u->d, &g, mac) == 0)
		return ucma_pick_src(u, id, -1);
	return 1;
}

static int ucma_resolve_addr(struct ucma_dev *u, struct ucma_id *id,
			     const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
			     uint32_t timeout_ms)
{
	int rc;

	if (dst->ss_family != AF_INET && dst->ss_family != AF_INET6)
		return dst->ss_family == AF_IB ? -EAFNOSUPPORT : -EINVAL;
	if (id->state == S_IDLE) {
		struct sockaddr_storage s;
		memset(&s, 0, sizeof(s));
		if (src && src->ss_family)
			memcpy(&s, src, ucma_addr_size(src));
		else
			s.ss_family = dst->ss_family;
		if (s.ss_family == AF_INET6 && dst->ss_family == AF_INET6)
			((struct sockaddr_in6 *)&s)->sin6_scope_id =
				((const struct sockaddr_in6 *)dst)->sin6_scope_id;
		rc = ucma_bind(u, id, &s);
		if (rc)
			return rc;
	}
	if (id->src.ss_family != dst->ss_family)
		return -EINVAL;
	if (id->state != S_ADDR_BOUND)
		return -EINVAL;
	memcpy(&id->dst, dst, ucma_addr_size(dst));
	id->state = S_ADDR_QUERY;
	if (ucma_any(&id->dst)) {
		/* cma_resolve_loopback: the destination is our own source */
		int i = id->has_dev ? id->sgid_index : ucma_src_index(u->d, id->dst.ss_family);
		if (i < 0)
			i = 0;
		if (!id->has_dev) {
			ucma_gid_to_addr(&u->d->gids[i], id->dst.ss_family, &id->src);
			id->sgid_index = (uint8_t)i;
			id->sgid = u->d->gids[i];
			id->has_dev = true;
		}
		uint16_t p = ucma_port(&id->dst);
		memcpy(&id->dst, &id->src, sizeof(id->dst));
		ucma_set_port(&id->dst, p);
		ucma_addr_done(u, id, 0);
		return 0;
	}
	rc = ucma_addr_try(u, id);
	if (rc <= 0) {
		ucma_addr_done(u, id, rc);
		return 0;
	}
	ucma_timer(u, id, emu_now_ns() + (uint64_t)(timeout_ms ? timeout_ms : 1) * 1000000ull);
	return 0;
}

static void ucma_path_init(struct ucma_dev *u, struct ucma_id *id)
{
	ucma_gid(&id->dst, &id->dgid);
	if (ucma_is_loop(&id->dst) || ucma_any(&id->dst))
		id->dgid = id->sgid; /* loopback: our own GID */
	id->path_mtu = (uint8_t)u->d->active_mtu;
	id->tclass = id->tos;
	id->hop_limit = UCMA_HOP_LIMIT;
	id->route = true;
}

static int ucma_resolve_route(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->state != S_ADDR_RESOLVED)
		return -EINVAL;
	ucma_path_init(u, id);
	id->state = S_ROUTE_RESOLVED;
	ucma_event(u, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* connections (the IB CM exchange between two ids of this device)     */
/* ------------------------------------------------------------------ */

static void ucma_id_destroy(struct ucma_dev *u, struct ucma_id *id);
static bool ucma_wire_dst(struct ucma_dev *u, const struct ucma_id *a);
static int ucma_wire_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q);
static void ucma_wire_listen(struct ucma_dev *u, struct ucma_id *l);
static void ucma_wire_destroy(struct ucma_dev *u, struct ucma_id *id);

static bool ucma_listen_match(const struct ucma_id *l, const struct ucma_id *a)
{
	if (l->state != S_LISTEN || l->ps != a->ps || ucma_port(&l->src) != ucma_port(&a->dst))
		return false;
	if (ucma_any(&l->src))
		return l->src.ss_family == a->dst.ss_family ||
		       (l->src.ss_family == AF_INET6 && !l->afonly);
	return ucma_same_addr(&l->src, &a->dst) ||
	       (ucma_is_loop(&a->dst) && ucma_is_loop(&l->src) && l->src.ss_family == a->dst.ss_family);
}

static struct ucma_id *ucma_find_listener(struct ucma_dev *u, const struct ucma_id *a)
{
	struct ucma_id *wild = NULL;

	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *l = u->ids[i];
		if (!l || !ucma_listen_match(l, a))
			continue;
		if (!ucma_any(&l->src))
			return l;
		if (!wild)
			wild = l;
	}
	return wild;
}

static uint64_t ucma_timewait_ns(const struct ucma_id *id)
{
	unsigned t = id->timeout_set ? id->timeout : UCMA_DEF_ACK_TIMEOUT;

	if (t > 24)
		t = 24;
	/* 4.096 us << timeout, as cm_convert_to_ms, plus a margin */
	return (4096ull << t) + 100000000ull;
}

static void ucma_enter_timewait(struct ucma_dev *u, struct ucma_id *id)
{
	id->cp = CP_TIMEWAIT;
	ucma_timer(u, id, emu_now_ns() + ucma_timewait_ns(id));
}

/* the peer's REJ reached id */
static void ucma_rej_rcvd(struct ucma_dev *u, struct ucma_id *id, int reason,
			  const uint8_t *pd, unsigned plen)
{
	id->peer = NULL;
	id->cp = CP_DONE;
	if (id->qp_type == IBV_QPT_UD) {
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, reason);
		return;
	}
	ucma_event_pdata(u, id, RDMA_CM_EVENT_REJECTED, reason, pd, plen, UCMA_REJ_PDATA);
}

/* the peer's DREQ reached id */
static void ucma_dreq_rcvd(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->state != S_CONNECT)
		return;
	id->state = S_DISCONNECT;
	id->cp = CP_DREQ_RCVD;
	ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, 0);
}

/* the peer's DREP reached id (it had sent a DREQ) */
static void ucma_drep_rcvd(struct ucma_dev *u, struct ucma_id *id, int status)
{
	id->peer = NULL;
	ucma_enter_timewait(u, id);
	if (id->state == S_CONNECT) {
		id->state = S_DISCONNECT;
		ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, status);
	}
}

/* what cm_destroy_id sends for the state the id is in */
static void ucma_conn_abort(struct ucma_dev *u, struct ucma_id *id)
{
	struct ucma_id *p = id->peer;

	id->peer = NULL;
	if (!p)
		return;
	switch (id->cp) {
	case CP_REQ_SENT:
		if (p->qp_type == IBV_QPT_UD) {
			p->peer = NULL; /* a SIDR request just goes unanswered */
			break;
		}
		ucma_rej_rcvd(u, p, REJ_TIMEOUT, NULL, 0);
		break;
	case CP_REQ_RCVD:
	case CP_REP_SENT:
	case CP_REP_RCVD:
		ucma_rej_rcvd(u, p, p->qp_type == IBV_QPT_UD ? SIDR_REJECT : REJ_CONSUMER_DEFINED,
			      NULL, 0);
		break;
	case CP_ESTABLISHED:
		ucma_dreq_rcvd(u, p);
		p->peer = NULL; /* nobody will answer its DREP */
		ucma_enter_timewait(u, p);
		break;
	case CP_DREQ_RCVD:
		ucma_drep_rcvd(u, p, 0);
		break;
	default:
		p->peer = NULL;
		break;
	}
}

static void ucma_copy_req_event(struct rdma_ucm_conn_param *cp, const struct ucma_id *a,
				const struct rdma_ucm_conn_param *q)
{
	/* from the passive side's point of view, as cma_set_req_event_data */
	cp->qp_num = q->qp_num;
	cp->srq = q->srq;
	cp->responder_resources = a->init_depth;
	cp->initiator_depth = a->resp_res;
	cp->flow_control = q->flow_control;
	cp->retry_count = q->retry_count;
	cp->rnr_retry_count = q->rnr_retry_count;
	memcpy(cp->private_data, q->private_data, q->private_data_len);
	cp->private_data_len = UCMA_REQ_PDATA;
}

/* REQ / SIDR_REQ from active id a to whoever listens on its destination
 * on this device, without MADs (the engine's path: ucma_wire_req). */
static void ucma_send_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q)
{
	bool ud = a->qp_type == IBV_QPT_UD;
	struct ucma_id *l = ucma_find_listener(u, a);

	a->cp = CP_REQ_SENT;
	if (!l || l->qp_type != a->qp_type) {
		a->cp = CP_DONE;
		if (ud)
			ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, SIDR_UNSUPPORTED);
		else
			ucma_event_pdata(u, a, RDMA_CM_EVENT_REJECTED, REJ_INVALID_SERVICE_ID,
					 NULL, 0, UCMA_REJ_PDATA);
		return;
	}
	int err = 0;
	struct ucma_id *n = NULL;
	struct ucma_ev *e = NULL;
	if (l->pending < l->backlog && ucma_ev_room(l->file))
		n = ucma_id_new(u, l->file, l->ps, l->qp_type, &err);
	if (n)
		e = ucma_ev_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		/* the listener cannot take it: the kernel's handler fails and
		 * ib_cm rejects the REQ */
		if (n) {
			u->ids[n->handle] = NULL;
			((struct ucma_ctx *)n->file->ctx->ucma)->nids--;
			free(n);
		}
		a->cp = CP_DONE;
		if (ud)
			ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, SIDR_REJECT);
		else
			ucma_event_pdata(u, a, RDMA_CM_EVENT_REJECTED, REJ_CONSUMER_DEFINED,
					 NULL, 0, UCMA_REJ_PDATA);
		return;
	}
	n->hidden = true;
	n->listen = l;
	l->pending++;
	n->state = S_CONNECT;
	n->cp = CP_REQ_RCVD;
	n->peer = a;
	a->peer = n;
	/* addresses: ours is where the request went, the peer's where it came
	 * from (cma_save_net_info) */
	n->src = a->dst;
	n->dst = a->src;
	n->has_dev = true;
	int li = ucma_local_index(u->d, &a->dst);
	n->sgid_index = (uint8_t)(li >= 0 ? li : a->sgid_index);
	n->sgid = a->dgid;
	n->dgid = a->sgid;
	n->route = true;
	n->path_mtu = a->path_mtu;
	n->tclass = a->tclass;
	n->hop_limit = a->hop_limit;
	n->tos = a->tos;
	n->afonly = l->afonly;
	n->reuseaddr = l->reuseaddr;
	n->timeout_set = l->timeout_set;
	n->timeout = a->timeout_set ? a->timeout : UCMA_DEF_ACK_TIMEOUT;
	n->timeout_set = true; /* the REQ's local ACK timeout */
	n->rqpn = q->qp_num;
	/* each side receives from its own PSN and sends from the peer's
	 * (cm_req_handler / cm_rep_handler with rdma_init_qp_attr) */
	n->sq_psn = a->seq_num;
	n->resp_res = a->init_depth;
	n->init_depth = a->resp_res;
	n->retry = q->retry_count;
	n->rnr_retry = q->rnr_retry_count;
	n->flow_control = q->flow_control;
	e->conn = n;
	e->resp.id = n->handle;
	if (ud) {
		memcpy(e->resp.param.ud.private_data, q->private_data, q->private_data_len);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REQ_PDATA;
	} else {
		ucma_copy_req_event(&e->resp.param.conn, a, q);
	}
	ucma_ev_post(u, e);
}

static void ucma_ah_attr(const struct ucma_id *id, struct ib_uverbs_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, id->dgid.raw, 16);
	ah->grh.sgid_index = id->sgid_index;
	ah->grh.hop_limit = id->hop_limit;
	ah->grh.traffic_class = id->tclass;
	ah->is_global = 1;
	ah->port_num = 1;
}

/* the passive side accepts (REP, or SIDR_REP for UD) */
static int ucma_send_rep(struct ucma_dev *u, struct ucma_id *n, const struct rdma_ucm_conn_param *q)
{
	struct ucma_id *a = n->peer;

	if (n->qp_type == IBV_QPT_UD) {
		if (q && q->private_data_len > UCMA_SIDR_REP_PDATA)
			return -EINVAL;
		if (n->cp != CP_REQ_RCVD)
			return -EINVAL;
		uint32_t qkey = q && q->qkey ? q->qkey : UCMA_UDP_QKEY;
		if (n->cm) {
			struct emu_ibcm_sidr_rep_param r = {
				.qp_num = q ? q->qp_num : 0, .qkey = qkey,
				.status = WIRE_CM_SIDR_SUCCESS,
				.private_data = q ? q->private_data : NULL,
				.private_data_len = q ? q->private_data_len : 0,
			};
			int rc = emu_ibcm_send_sidr_rep(n->cm, &r);
			if (!rc)
				n->cp = CP_DONE;
			return rc;
		}
		n->cp = CP_DONE;
		n->peer = NULL;
		if (!a)
			return 0;
		a->peer = NULL;
		a->cp = CP_DONE;
		struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return 0;
		e->resp.param.ud.qp_num = q ? q->qp_num : 0;
		e->resp.param.ud.qkey = qkey;
		a->qkey = qkey;
		ucma_ah_attr(a, &e->resp.param.ud.ah_attr);
		if (q)
			memcpy(e->resp.param.ud.private_data, q->private_data, q->private_data_len);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REP_PDATA;
		ucma_ev_post(u, e);
		return 0;
	}
	if (n->cp != CP_REQ_RCVD)
		return -EINVAL;
	if (q->private_data_len > UCMA_REP_PDATA)
		return -EINVAL;
	if (n->cm) {
		struct emu_ibcm_rep_param r = {
			.qp_num = q->qp_num, .starting_psn = n->seq_num,
			.private_data = q->private_data, .private_data_len = q->private_data_len,
			.responder_resources = q->responder_resources,
			.initiator_depth = q->initiator_depth, .flow_control = q->flow_control,
			.rnr_retry_count = q->rnr_retry_count, .srq = q->srq,
		};
		int rc = emu_ibcm_send_rep(n->cm, &r);
		if (rc)
			return rc;
	}
	n->resp_res = q->responder_resources;
	n->init_depth = q->initiator_depth;
	n->cp = CP_REP_SENT;
	if (!a)
		return 0;
	a->cp = CP_REP_RCVD;
	a->rqpn = q->qp_num;
	a->sq_psn = n->seq_num;
	a->resp_res = q->initiator_depth;
	a->init_depth = q->responder_resources;
	a->rnr_retry = q->rnr_retry_count;
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (!e)
		return 0;
	struct rdma_ucm_conn_param *cp = &e->resp.param.conn;
	cp->qp_num = q->qp_num;
	cp->srq = q->srq;
	/* from the receiver's side, as cm_format_rep_event */
	cp->responder_resources = q->initiator_depth;
	cp->initiator_depth = q->responder_resources;
	cp->flow_control = q->flow_control;
	cp->rnr_retry_count = q->rnr_retry_count;
	memcpy(cp->private_data, q->private_data, q->private_data_len);
	cp->private_data_len = UCMA_REP_PDATA;
	ucma_ev_post(u, e);
	return 0;
}

/* the active side's RTU after its CONNECT_RESPONSE, or NOTIFY(COMM_EST) */
static void ucma_establish(struct ucma_dev *u, struct ucma_id *n)
{
	n->cp = CP_ESTABLISHED;
	ucma_event(u, n, RDMA_CM_EVENT_ESTABLISHED, 0);
}

static int ucma_send_rtu(struct ucma_dev *u, struct ucma_id *a)
{
	if (a->cp != CP_REP_RCVD)
		return -EINVAL;
	if (a->cm) {
		int rc = emu_ibcm_send_rtu(a->cm, NULL, 0);
		if (rc)
			return rc;
	}
	a->cp = CP_ESTABLISHED;
	if (a->peer && a->peer->cp == CP_REP_SENT)
		ucma_establish(u, a->peer);
	return 0;
}

static int ucma_disconnect(struct ucma_dev *u, struct ucma_id *id)
{
	struct ucma_id *p = id->peer;

	if (id->cm) {
		/* rdma_disconnect: a DREQ, or else a DREP; 0 either way */
		if (id->cp == CP_DREQ_RCVD) {
			if (!emu_ibcm_send_drep(id->cm, NULL, 0))
				id->cp = CP_TIMEWAIT;
		} else if (!emu_ibcm_send_dreq(id->cm, NULL, 0)) {
			id->cp = CP_DREQ_SENT;
		}
		return 0;
	}

	switch (id->cp) {
	case CP_NONE:
		return -EINVAL;
	case CP_ESTABLISHED:
	case CP_REP_SENT:
	case CP_REP_RCVD:
		id->cp = CP_DREQ_SENT;
		if (p) {
			ucma_dreq_rcvd(u, p);
		} else {
			/* nobody to answer: the DREQ times out */
			ucma_drep_rcvd(u, id, -ETIMEDOUT);
		}
		return 0;
	case CP_DREQ_RCVD:
		id->peer = NULL;
		ucma_enter_timewait(u, id);
		if (p)
			ucma_drep_rcvd(u, p, 0);
		return 0;
	default:
		return 0; /* neither a DREQ nor a DREP can go: the kernel says 0 too */
	}
}


/* ------------------------------------------------------------------ */
/* the wire: the exchange through the IB CM engine (emu/cm/ibcm.c)     */
/* ------------------------------------------------------------------ */

/* REQ, REP, RTU, REJ, DREQ, DREP as MADs on QP1, with what the engine
 * reports turned into the same rdma_cm events as the direct exchange;
 * UD ids use SIDR_REQ / SIDR_REP. */
static bool ucma_wire_dst(struct ucma_dev *u, const struct ucma_id *a)
{
	/* every destination on the loopback port (its frames come back to
	 * our engine); on a real port our own addresses stay inside the
	 * daemon: a frame to our own MAC would leave and not return */
	return !u->no_wire && emu_ibcm_get(u->d) &&
	       (u->d->loopback || ucma_local_index(u->d, &a->dst) < 0);
}

/* the engine an id's wire pointers belong to is still there (it is
 * detached when the engine loop ends, before the clients are closed) */
static bool ucma_wire_live(struct ucma_dev *u)
{
	return u->cm && emu_ibcm_get(u->d) == u->cm;
}

static int ucma_wire_handler(struct emu_ibcm_id *c, const struct emu_ibcm_event *ev);

static void ucma_wire_path(const struct ucma_id *a, struct emu_ibcm_path *p)
{
	memset(p, 0, sizeof(*p));
	p->sgid = a->sgid;
	p->dgid = a->dgid;
	p->traffic_class = a->tclass;
	p->hop_limit = a->hop_limit;
	p->mtu = (enum ibv_mtu)a->path_mtu;
	p->port = 1;
	p->packet_life_time = UCMA_PKT_LIFETIME;
}

/* UD: the SIDR_REQ, as cma_resolve_ib_udp (4 s a try, 15 retries) */
static int ucma_wire_sidr_req(struct ucma_dev *u, struct ucma_id *a, struct emu_ibcm_id *c,
			      const struct rdma_ucm_conn_param *q, const uint8_t *pd)
{
	struct emu_ibcm_sidr_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.timeout_ms = emu_ibcm_time_ms(20),
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.max_cm_retries = 15,
	};
	ucma_wire_path(a, &r.path);
	int rc = emu_ibcm_send_sidr_req(c, &r);
	if (rc) {
		emu_ibcm_destroy_id(c);
		return rc;
	}
	u->cm = emu_ibcm_get(u->d);
	a->cm = c;
	a->cp = CP_REQ_SENT;
	return 0;
}

static int ucma_wire_req(struct ucma_dev *u, struct ucma_id *a, const struct rdma_ucm_conn_param *q)
{
	struct emu_ibcm *cm = emu_ibcm_get(u->d);
	uint8_t pd[WIRE_CM_SIDR_REQ_PDATA];
	struct wire_cma_hdr h = {
		.cma_version = WIRE_CMA_VERSION,
		.ip_version = a->dst.ss_family == AF_INET ? 4 : 6,
		.src_port = ucma_port(&a->src),
	};
	union ibv_gid g;

	ucma_gid(&a->src, &g);
	memcpy(h.src.raw, g.raw, 16);
	ucma_gid(&a->dst, &g);
	memcpy(h.dst.raw, g.raw, 16);
	memset(pd, 0, sizeof(pd));
	if (wire_cma_hdr_encode(pd, &h))
		return -EINVAL;
	memcpy(pd + WIRE_CMA_HDR_LEN, q->private_data, q->private_data_len);
	struct emu_ibcm_id *c = emu_ibcm_create_id(cm, ucma_wire_handler, a);
	if (!c)
		return -ENOMEM;
	if (a->qp_type == IBV_QPT_UD)
		return ucma_wire_sidr_req(u, a, c, q, pd);
	struct emu_ibcm_req_param r = {
		.service_id = (uint64_t)a->ps << 16 | ucma_port(&a->dst),
		.qp_num = q->qp_num,
		.qp_type = a->qp_type,
		.starting_psn = a->seq_num,
		.private_data = pd,
		.private_data_len = (uint8_t)(WIRE_CMA_HDR_LEN + q->private_data_len),
		.responder_resources = a->resp_res,
		.initiator_depth = a->init_depth,
		.remote_cm_response_timeout = 20, /* CMA_CM_RESPONSE_TIMEOUT */
		.local_cm_response_timeout = 20,
		.flow_control = q->flow_control,
		.retry_count = a->retry,
		.rnr_retry_count = a->rnr_retry,
		.max_cm_retries = 15,             /* CMA_MAX_CM_RETRIES */
		.srq = q->srq,
	};
	ucma_wire_path(a, &r.primary_path);
	int rc = emu_ibcm_send_req(c, &r);
	if (rc) {
		emu_ibcm_destroy_id(c);
		return rc;
	}
	u->cm = cm;
	a->cm = c;
	a->cp = CP_REQ_SENT;
	return 0;
}

/* a REQ from the wire for one of our listeners: the new id, as
 * cma_ib_req_handler makes it from the cma_hdr and the path */
static int ucma_wire_req_rcvd(struct ucma_dev *u, struct emu_ibcm_id *c,
			      const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_req_event_param *p = &ev->param.req_rcvd;
	bool sidr = ev->event == EMU_IBCM_SIDR_REQ_RECEIVED;
	uint64_t sid = sidr ? ev->param.sidr_req_rcvd.service_id : p->service_id;
	const struct emu_ibcm_path *path = sidr ? &ev->param.sidr_req_rcvd.path : &p->primary_path;
	struct wire_cma_hdr h;
	struct ucma_id probe;
	uint16_t ps, port;

	if (wire_cma_service_parse(sid, &ps, &port) || !ev->private_data ||
	    ev->private_data_len < WIRE_CMA_HDR_LEN ||
	    wire_cma_hdr_decode(ev->private_data, ev->private_data_len, &h))
		return -EINVAL;
	sa_family_t fam = h.ip_version == 4 ? AF_INET : AF_INET6;
	union ibv_gid hsrc, hdst; /* aligned copies */
	memcpy(hsrc.raw, h.src.raw, 16);
	memcpy(hdst.raw, h.dst.raw, 16);
	memset(&probe, 0, sizeof(probe));
	probe.ps = ps;
	ucma_gid_to_addr(&hdst, fam, &probe.dst);
	ucma_set_port(&probe.dst, port);
	struct ucma_id *l = ucma_find_listener(u, &probe);
	if (!l || (sidr ? l->qp_type != IBV_QPT_UD : l->qp_type != p->qp_type) ||
	    l->pending >= l->backlog || !ucma_ev_room(l->file))
		return -ENOMEM; /* the engine rejects the REQ (consumer defined) */
	int err = 0;
	struct ucma_id *n = ucma_id_new(u, l->file, l->ps, l->qp_type, &err);
	if (!n)
		return err;
	struct ucma_ev *e = ucma_ev_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		u->ids[n->handle] = NULL;
		((struct ucma_ctx *)n->file->ctx->ucma)->nids--;
		free(n);
		return -ENOMEM;
	}
	n->hidden = true;
	n->listen = l;
	l->pending++;
	n->state = S_CONNECT;
	n->cp = CP_REQ_RCVD;
	n->cm = c;
	c->context = n;
	u->cm = emu_ibcm_get(u->d);
	n->src = probe.dst;
	ucma_gid_to_addr(&hsrc, fam, &n->dst);
	ucma_set_port(&n->dst, h.src_port);
	n->has_dev = true;
	n->sgid = path->sgid;
	int si = emu_gid_find(u->d, &n->sgid);
	n->sgid_index = (uint8_t)(si >= 0 ? si : 0);
	n->dgid = path->dgid;
	n->route = true;
	n->path_mtu = (uint8_t)(path->mtu && path->mtu < u->d->active_mtu ? path->mtu :
				u->d->active_mtu);
	n->tclass = path->traffic_class;
	n->hop_limit = path->hop_limit ? path->hop_limit : UCMA_HOP_LIMIT;
	e->conn = n;
	e->resp.id = n->handle;
	unsigned plen = ev->private_data_len - WIRE_CMA_HDR_LEN;
	if (sidr) {
		if (plen > UCMA_SIDR_REQ_PDATA)
			plen = UCMA_SIDR_REQ_PDATA;
		memcpy(e->resp.param.ud.private_data, ev->private_data + WIRE_CMA_HDR_LEN, plen);
		e->resp.param.ud.private_data_len = UCMA_SIDR_REQ_PDATA;
		ucma_ev_post(u, e);
		return 0;
	}
	n->timeout = p->local_ack_timeout;
	n->timeout_set = true;
	n->afonly = l->afonly;
	n->rqpn = p->remote_qpn;
	n->sq_psn = p->starting_psn; /* cm_req_handler; seq_num stays our own */
	/* the engine reports the REQ's fields as sent; rdma_cm sees them
	 * from the receiving side (cm_format_req_event swaps them) */
	n->resp_res = p->initiator_depth;
	n->init_depth = p->responder_resources;
	n->retry = p->retry_count;
	n->rnr_retry = p->rnr_retry_count;
	n->flow_control = p->flow_control;
	n->srq = p->srq;
	struct rdma_ucm_conn_param *cp = &e->resp.param.conn;
	cp->qp_num = p->remote_qpn;
	cp->srq = p->srq;
	cp->responder_resources = n->resp_res;
	cp->initiator_depth = n->init_depth;
	cp->flow_control = p->flow_control;
	cp->retry_count = p->retry_count;
	cp->rnr_retry_count = p->rnr_retry_count;
	if (plen > UCMA_REQ_PDATA)
		plen = UCMA_REQ_PDATA;
	memcpy(cp->private_data, ev->private_data + WIRE_CMA_HDR_LEN, plen);
	cp->private_data_len = UCMA_REQ_PDATA;
	ucma_ev_post(u, e);
	return 0;
}

static void ucma_wire_rep_rcvd(struct ucma_dev *u, struct ucma_id *a, const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_rep_event_param *p = &ev->param.rep_rcvd;

	a->cp = CP_REP_RCVD;
	a->rqpn = p->remote_qpn;
	a->sq_psn = p->starting_psn; /* cm_rep_handler */
	/* the REP's fields as sent, seen from the receiving side (as
	 * cm_rep_handler / cm_format_rep_event) */
	a->resp_res = p->initiator_depth;
	a->init_depth = p->responder_resources;
	a->rnr_retry = p->rnr_retry_count;
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (!e)
		return;
	struct rdma_ucm_conn_param *cp = &e->resp.param.conn;
	cp->qp_num = p->remote_qpn;
	cp->srq = p->srq;
	cp->responder_resources = a->resp_res;
	cp->initiator_depth = a->init_depth;
	cp->flow_control = p->flow_control;
	cp->rnr_retry_count = p->rnr_retry_count;
	if (ev->private_data)
		memcpy(cp->private_data, ev->private_data,
		       ev->private_data_len < UCMA_REP_PDATA ? ev->private_data_len : UCMA_REP_PDATA);
	cp->private_data_len = UCMA_REP_PDATA;
	ucma_ev_post(u, e);
}

/* the SIDR_REP: the UD peer's QPN and Q_Key, or why not */
static void ucma_wire_sidr_rep_rcvd(struct ucma_dev *u, struct ucma_id *a,
				    const struct emu_ibcm_event *ev)
{
	const struct emu_ibcm_sidr_rep_event_param *p = &ev->param.sidr_rep_rcvd;

	a->cp = CP_DONE;
	if (p->status != WIRE_CM_SIDR_SUCCESS) {
		ucma_event(u, a, RDMA_CM_EVENT_UNREACHABLE, (int32_t)p->status);
		return;
	}
	struct ucma_ev *e = ucma_ev_new(a, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!e)
		return;
	a->qkey = p->qkey;
	e->resp.param.ud.qp_num = p->qpn;
	e->resp.param.ud.qkey = p->qkey;
	ucma_ah_attr(a, &e->resp.param.ud.ah_attr);
	if (ev->private_data)
		memcpy(e->resp.param.ud.private_data, ev->private_data,
		       ev->private_data_len < UCMA_SIDR_REP_PDATA ? ev->private_data_len :
								     UCMA_SIDR_REP_PDATA);
	e->resp.param.ud.private_data_len = UCMA_SIDR_REP_PDATA;
	ucma_ev_post(u, e);
}

/* the engine's DREP (or its DREQ timing out): the originator is
 * disconnected; TIMEWAIT_EXIT comes from the engine */
static void ucma_wire_drep(struct ucma_dev *u, struct ucma_id *id, int status)
{
	id->cp = CP_TIMEWAIT;
	if (id->state == S_CONNECT) {
		id->state = S_DISCONNECT;
		ucma_event(u, id, RDMA_CM_EVENT_DISCONNECTED, status);
	}
}

static int ucma_wire_handler(struct emu_ibcm_id *c, const struct emu_ibcm_event *ev)
{
	if (ev->event == EMU_IBCM_REQ_RECEIVED || ev->event == EMU_IBCM_SIDR_REQ_RECEIVED)
		return ucma_wire_req_rcvd(c->context, c, ev);
	struct ucma_id *id = c->context;
	if (!id)
		return 0;
	struct ucma_dev *u = ucma_dev(emu_ibcm_dev(c->cm), false);
	switch (ev->event) {
	case EMU_IBCM_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_wire_rep_rcvd(u, id, ev);
		break;
	case EMU_IBCM_RTU_RECEIVED:
	case EMU_IBCM_USER_ESTABLISHED:
		if (id->cp == CP_REP_SENT)
			ucma_establish(u, id);
		break;
	case EMU_IBCM_REJ_RECEIVED:
		ucma_rej_rcvd(u, id, ev->param.rej_rcvd.reason, ev->private_data,
			      ev->private_data && ev->private_data_len < UCMA_REJ_PDATA ?
			      ev->private_data_len : ev->private_data ? UCMA_REJ_PDATA : 0);
		break;
	case EMU_IBCM_REQ_ERROR:
	case EMU_IBCM_REP_ERROR:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case EMU_IBCM_DREQ_RECEIVED:
		ucma_dreq_rcvd(u, id);
		break;
	case EMU_IBCM_DREP_RECEIVED:
		ucma_wire_drep(u, id, 0);
		break;
	case EMU_IBCM_DREQ_ERROR:
		ucma_wire_drep(u, id, -ETIMEDOUT);
		break;
	case EMU_IBCM_TIMEWAIT_EXIT:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case EMU_IBCM_SIDR_REP_RECEIVED:
		if (id->cp == CP_REQ_SENT)
			ucma_wire_sidr_rep_rcvd(u, id, ev);
		break;
	case EMU_IBCM_SIDR_REQ_ERROR:
		id->cp = CP_DONE;
		ucma_event(u, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	default:
		break;
	}
	return 0;
}

/* a listener's service on the wire (shared per port space and port) */
static void ucma_wire_listen(struct ucma_dev *u, struct ucma_id *l)
{
	struct emu_ibcm *cm = emu_ibcm_get(u->d);
	uint16_t port = ucma_port(&l->src);

	if (!cm || u->no_wire)
		return;
	for (struct ucma_wl *w = u->wls; w; w = w->next)
		if (w->ps == l->ps && w->port == port) {
			w->refs++;
			l->wl = w;
			return;
		}
	struct ucma_wl *w = calloc(1, sizeof(*w));
	struct emu_ibcm_id *c = w ? emu_ibcm_create_id(cm, ucma_wire_handler, u) : NULL;
	if (!c || emu_ibcm_listen(c, (uint64_t)l->ps << 16 | port, 0, UCMA_MAX_BACKLOG)) {
		if (c)
			emu_ibcm_destroy_id(c);
		free(w);
		EMU_LOG_RL(INFO, "%s: rdma_cm port %u listens inside the daemon only\n",
			   u->d->name, port);
		return;
	}
	u->cm = cm;
	w->ps = l->ps;
	w->port = port;
	w->refs = 1;
	w->cm = c;
	w->next = u->wls;
	u->wls = w;
	l->wl = w;
}

static void ucma_wire_unlisten(struct ucma_dev *u, struct ucma_id *l)
{
	struct ucma_wl *w = l->wl;

	l->wl = NULL;
	if (!w || --w->refs)
		return;
	for (struct ucma_wl **pp = &u->wls; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (ucma_wire_live(u))
		emu_ibcm_destroy_id(w->cm);
	free(w);
}

/* the id goes: the engine sends what ib_destroy_cm_id sends */
static void ucma_wire_destroy(struct ucma_dev *u, struct ucma_id *id)
{
	if (id->wl)
		ucma_wire_unlisten(u, id);
	if (id->cm) {
		/* after the engine's detach its ids are gone: touch nothing */
		if (ucma_wire_live(u)) {
			id->cm->context = NULL;
			emu_ibcm_destroy_id(id->cm);
		}
		id->cm = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* destroy                                                             */
/* ------------------------------------------------------------------ */

/* another full member of mc's group on this device */
static bool ucma_mc_shared(const struct ucma_dev *u, const struct ucma_mc *mc)
{
	for (uint32_t i = 0; i < u->nmcs; i++) {
		const struct ucma_mc *o = u->mcs[i];
		if (o && o != mc && !o->send_only && !memcmp(o->mgid.raw, mc->mgid.raw, 16))
			return true;
	}
	return false;
}

/* the port joins the group with its first member and leaves it with the
 * last, as ip_mc_inc_group/ip_mc_dec_group count a netdev's members */
static void ucma_mc_report(struct ucma_dev *u, struct ucma_mc *mc, bool join)
{
	if (mc->send_only || ucma_mc_shared(u, mc))
		return;
	const struct ucma_id *id = mc->id;
	sa_family_t fam = gid_v4(&mc->mgid) ? AF_INET : AF_INET6;
	int i = -1;
	if (fam == AF_INET && gid_v4(&id->sgid))
		i = id->sgid_index;
	else if (fam == AF_INET)
		i = ucma_src_index(u->d, AF_INET);
	else
		i = 0; /* MLD: the link-local address (RFC 2710) */
	if (i < 0 || (uint32_t)i >= u->d->gid_count ||
	    emu_cma_mcast_report(u->d, &mc->mgid, &u->d->gids[i], join))
		EMU_LOG_RL(INFO, "%s: no %s report for a multicast group\n", u->d->name,
			   fam == AF_INET ? "IGMP" : "MLD");
}

static void ucma_mc_free(struct ucma_dev *u, struct ucma_mc *mc)
{
	if (mc->handle < u->nmcs && u->mcs[mc->handle] == mc)
		u->mcs[mc->handle] = NULL;
	ucma_mc_report(u, mc, false);
	((struct ucma_ctx *)mc->id->file->ctx->ucma)->nmcs--;
	free(mc);
}

/* drop queued events of id (or only those of mc); pending connection
 * requests die with their listener, as ucma_cleanup_ctx_events */
static void ucma_drop_events(struct ucma_dev *u, struct ucma_file *f, struct ucma_id *id,
			     struct ucma_mc *mc)
{
	struct ucma_ev **pp = &f->head, *gone = NULL;

	/* unlink first: destroying a request's id below may queue events
	 * (a REJ to its active side) on this same file */
	f->tail = &f->head;
	while (*pp) {
		struct ucma_ev *e = *pp;
		if ((mc && e->mc == mc) || (!mc && e->id == id)) {
			*pp = e->next;
			ucma_nev(f, -1);
			e->next = gone;
			gone = e;
			continue;
		}
		f->tail = &e->next;
		pp = &e->next;
	}
	while (gone) {
		struct ucma_ev *e = gone;
		gone = e->next;
		if (e->conn && u->ids[e->conn->handle] == e->conn) {
			e->conn->listen = NULL;
			ucma_id_destroy(u, e->conn);
		}
		free(e);
	}
}

/* a request not fetched yet dies with its CONNECT_REQUEST event */
static void ucma_forget_request(struct ucma_id *id)
{
	struct ucma_file *f = id->file;

	f->tail = &f->head;
	for (struct ucma_ev **pp = &f->head; *pp;) {
		struct ucma_ev *e = *pp;
		if (e->conn == id) {
			*pp = e->next;
			ucma_nev(f, -1);
			free(e);
			continue;
		}
		f->tail = &e->next;
		pp = &e->next;
	}
}

static void ucma_id_destroy(struct ucma_dev *u, struct ucma_id *id)
{
	ucma_wire_destroy(u, id);
	if (id->hidden)
		ucma_forget_request(id);
	ucma_conn_abort(u, id);
	ucma_timer(u, id, 0);
	if (id->listen) {
		id->listen->pending--;
		id->listen = NULL;
	}
	/* requests of a listener that is going away lose their listener */
	for (uint32_t i = 0; i < u->nids; i++)
		if (u->ids[i] && u->ids[i]->listen == id)
			u->ids[i]->listen = NULL;
	while (id->mcs) {
		struct ucma_mc *mc = id->mcs;
		id->mcs = mc->next;
		ucma_mc_free(u, mc);
	}
	u->ids[id->handle] = NULL;
	ucma_drop_events(u, id->file, id, NULL);
	((struct ucma_ctx *)id->file->ctx->ucma)->nids--;
	free(id);
}

static void ucma_file_destroy(struct ucma_dev *u, struct ucma_file *f)
{
	for (uint32_t i = 0; i < u->nids; i++)
		if (u->ids[i] && u->ids[i]->file == f)
			ucma_id_destroy(u, u->ids[i]);
	while (f->head) {
		struct ucma_ev *e = f->head;
		f->head = e->next;
		free(e);
	}
	for (struct ucma_file **pp = &u->files; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	emu_evq_drop(u->d, &f->q);
	((struct ucma_ctx *)f->ctx->ucma)->nfiles--;
	if (f->wfd >= 0)
		close(f->wfd);
	free(f);
}

/* ------------------------------------------------------------------ */
/* commands                                                            */
/* ------------------------------------------------------------------ */

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

static void ucma_out(struct ucma_call *k, const void *p, size_t n)
{
	if (n > k->out_len)
		n = k->out_len;
	memcpy(k->out, p, n);
	*k->olen = n;
}

static int ucma_get(struct ucma_call *k, uint32_t h, struct ucma_id **id)
{
	int err = 0;
	*id = ucma_id_get(k->u, k->f, h, &err);
	return err;
}

/* ucma_get_ctx_dev: the id must be bound to the device */
static int ucma_get_dev(struct ucma_call *k, uint32_t h, struct ucma_id **id)
{
	int rc = ucma_get(k, h, id);
	if (!rc && !(*id)->has_dev)
		rc = -EINVAL;
	return rc;
}

static int c_create_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_create_id, q, sizeof(q));
	struct rdma_ucm_create_id_resp r = { 0 };
	uint8_t qpt;
	int err = 0;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	switch (q.ps) {
	case RDMA_PS_TCP: qpt = IBV_QPT_RC; break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB: qpt = IBV_QPT_UD; break;
	case RDMA_PS_IB: qpt = q.qp_type; break;
	default: return -EINVAL;
	}
	if (qpt != IBV_QPT_RC && qpt != IBV_QPT_UC && qpt != IBV_QPT_UD)
		return -EINVAL;
	struct ucma_id *id = ucma_id_new(k->u, k->f, q.ps, qpt, &err);
	if (!id)
		return err;
	id->uid = q.uid;
	r.id = id->handle;
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_destroy_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_destroy_id, q, sizeof(q));
	struct rdma_ucm_destroy_id_resp r = { 0 };
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	r.events_reported = id->events_reported;
	ucma_id_destroy(k->u, id);
	ucma_out(k, &r, sizeof(r));
	return 0;
}

/* rdma_addr_size_in6: an IPv4 or IPv6 address in a sockaddr_in6 field */
static int ucma_in6_size(const struct sockaddr_in6 *a)
{
	return a->sin6_family == AF_INET || a->sin6_family == AF_INET6;
}

static int c_bind_ip(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_bind_ip, q, sizeof(q));
	struct sockaddr_storage a;
	struct ucma_id *id;

	if (!ucma_in6_size(&q.addr))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(q.addr));
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_bind(k->u, id, &a);
}

static int c_bind(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_bind, q, sizeof(q));
	struct sockaddr_storage a;
	struct ucma_id *id;

	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(a));
	if (q.reserved || !q.addr_size || q.addr_size != ucma_addr_size(&a))
		return -EINVAL;
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_bind(k->u, id, &a);
}

static int c_resolve_ip(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_ip, q, sizeof(q));
	struct sockaddr_storage s, d;
	struct ucma_id *id;

	if ((q.src_addr.sin6_family && !ucma_in6_size(&q.src_addr)) || !ucma_in6_size(&q.dst_addr))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	memcpy(&s, &q.src_addr, sizeof(q.src_addr));
	memcpy(&d, &q.dst_addr, sizeof(q.dst_addr));
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_resolve_addr(k->u, id, &s, &d, q.timeout_ms);
}

static int c_resolve_addr(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_addr, q, sizeof(q));
	struct sockaddr_storage s, d;
	struct ucma_id *id;

	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	memcpy(&s, &q.src_addr, sizeof(s));
	memcpy(&d, &q.dst_addr, sizeof(d));
	if (q.reserved || (q.src_size && q.src_size != ucma_addr_size(&s)) || !q.dst_size ||
	    q.dst_size != ucma_addr_size(&d))
		return -EINVAL;
	int rc = ucma_get(k, q.id, &id);
	return rc ? rc : ucma_resolve_addr(k->u, id, q.src_size ? &s : NULL, &d, q.timeout_ms);
}

static int c_resolve_route(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_resolve_route, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);
	return rc ? rc : ucma_resolve_route(k->u, id);
}

static void ucma_user_path(const struct ucma_id *id, struct ib_user_path_rec *p)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, id->dgid.raw, 16);
	memcpy(p->sgid, id->sgid.raw, 16);
	p->reversible = 1;
	p->mtu = id->path_mtu;
	p->pkey = htons(0xffff);
	p->hop_limit = id->hop_limit;
	p->traffic_class = id->tclass;
	p->numb_path = 1;
	p->mtu_selector = 2;
	p->rate_selector = 2;
	p->rate = 3;
	p->packet_life_time_selector = 2;
	p->packet_life_time = UCMA_PKT_LIFETIME;
}

static void ucma_copy_addr(void *dst, size_t room, const struct sockaddr_storage *a)
{
	size_t n = ucma_addr_size(a);
	memcpy(dst, a, n < room ? n : room);
}

static int c_query_route(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_query, q, sizeof(q));
	struct rdma_ucm_query_route_resp r;
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	ucma_copy_addr(&r.src_addr, sizeof(r.src_addr), &id->src);
	ucma_copy_addr(&r.dst_addr, sizeof(r.dst_addr), &id->dst);
	if (id->has_dev) {
		r.node_guid = k->u->d->node_guid;
		r.ibdev_index = UINT32_MAX; /* librdmacm then matches the GUID alone */
		r.port_num = 1;
		if (id->route) {
			r.num_paths = 1;
			ucma_user_path(id, &r.ib_route[0]);
		} else {
			union ibv_gid dg;
			ucma_gid(&id->dst, &dg);
			memcpy(r.ib_route[0].sgid, id->sgid.raw, 16);
			memcpy(r.ib_route[0].dgid, dg.raw, 16);
			r.ib_route[0].pkey = htons(0xffff);
		}
	}
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static uint64_t ucma_sid(const struct ucma_id *id, const struct sockaddr_storage *a)
{
	uint64_t sid = (uint64_t)id->ps << 16 | ucma_port(a);
	return htobe64(sid);
}

static void ucma_sib(const struct ucma_id *id, const union ibv_gid *g,
		     const struct sockaddr_storage *a, struct ucma_sib *s)
{
	memset(s, 0, sizeof(*s));
	s->sib_family = AF_IB;
	s->sib_pkey = htons(0xffff);
	memcpy(s->sib_addr, g->raw, 16);
	s->sib_sid = ucma_sid(id, a);
	s->sib_sid_mask = UINT64_MAX;
}

static int c_query(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_query, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	switch (q.option) {
	case RDMA_USER_CM_QUERY_ADDR:
	case RDMA_USER_CM_QUERY_GID: {
		struct rdma_ucm_query_addr_resp r;
		if (k->out_len < sizeof(r))
			return -ENOSPC;
		memset(&r, 0, sizeof(r));
		r.ibdev_index = UINT32_MAX;
		if (id->has_dev) {
			r.node_guid = k->u->d->node_guid;
			r.port_num = 1;
			r.pkey = htons(0xffff);
		}
		if (q.option == RDMA_USER_CM_QUERY_ADDR) {
			r.src_size = (uint16_t)ucma_addr_size(&id->src);
			r.dst_size = (uint16_t)ucma_addr_size(&id->dst);
			memcpy(&r.src_addr, &id->src, r.src_size);
			memcpy(&r.dst_addr, &id->dst, r.dst_size);
		} else {
			struct ucma_sib s;
			union ibv_gid dg;
			ucma_gid(&id->dst, &dg);
			if (id->route)
				dg = id->dgid;
			ucma_sib(id, &id->sgid, &id->src, &s);
			memcpy(&r.src_addr, &s, sizeof(s));
			ucma_sib(id, &dg, &id->dst, &s);
			memcpy(&r.dst_addr, &s, sizeof(s));
			r.src_size = r.dst_size = sizeof(s);
		}
		ucma_out(k, &r, sizeof(r));
		return 0;
	}
	case RDMA_USER_CM_QUERY_PATH: {
		union {
			struct rdma_ucm_query_path_resp r;
			uint8_t b[sizeof(struct rdma_ucm_query_path_resp) + sizeof(struct ib_path_rec_data)];
		} m;
		if (k->out_len < sizeof(m.r))
			return -ENOSPC;
		memset(&m, 0, sizeof(m));
		m.r.num_paths = id->route ? 1 : 0;
		size_t n = sizeof(m.r);
		if (id->route && k->out_len - sizeof(m.r) > sizeof(struct ib_path_rec_data)) {
			/* the SA PathRecord, packed as ib_sa_pack_path */
			struct ib_path_rec_data *pd = &m.r.path_data[0];
			uint8_t *p = (uint8_t *)pd->path_rec;
			pd->flags = 1u << 0 | 1u << 2 | 1u << 1; /* GMP | PRIMARY | BIDIRECTIONAL */
			memcpy(p + 8, id->dgid.raw, 16);
			memcpy(p + 24, id->sgid.raw, 16);
			uint32_t flhop = htobe32(id->hop_limit);
			memcpy(p + 44, &flhop, 4);
			p[48] = id->tclass;
			p[49] = 0x80 | 1;               /* reversible, numb_path 1 */
			p[50] = 0xff;
			p[51] = 0xff;                   /* pkey */
			p[54] = (uint8_t)(2 << 6 | id->path_mtu);
			p[55] = 2 << 6 | 3;             /* rate */
			p[56] = 2 << 6 | UCMA_PKT_LIFETIME;
			n += sizeof(struct ib_path_rec_data);
		}
		ucma_out(k, &m, n);
		return 0;
	}
	default:
		return -ENOSYS;
	}
}

static int c_connect(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_connect, q, offsetof(struct rdma_ucm_connect, ece));
	struct ucma_id *id;

	if (!q.conn_param.valid)
		return -EINVAL;
	int rc = ucma_get_dev(k, q.id, &id);
	if (rc)
		return rc;
	if (id->state != S_ROUTE_RESOLVED)
		return -EINVAL;
	unsigned max = id->qp_type == IBV_QPT_UD ? UCMA_SIDR_REQ_PDATA : UCMA_REQ_PDATA;
	if (q.conn_param.private_data_len > max)
		return -EINVAL;
	id->state = S_CONNECT;
	id->resp_res = q.conn_param.responder_resources;
	id->init_depth = q.conn_param.initiator_depth;
	/* cma_connect_ib: the REQ carries 3-bit counts, clamped */
	if (q.conn_param.retry_count > 7)
		q.conn_param.retry_count = 7;
	if (q.conn_param.rnr_retry_count > 7)
		q.conn_param.rnr_retry_count = 7;
	id->retry = q.conn_param.retry_count;
	id->rnr_retry = q.conn_param.rnr_retry_count;
	id->srq = q.conn_param.srq;
	id->flow_control = q.conn_param.flow_control;
	if (ucma_wire_dst(k->u, id)) {
		rc = ucma_wire_req(k->u, id, &q.conn_param);
		if (rc)
			id->state = S_ROUTE_RESOLVED;
		return rc;
	}
	ucma_send_req(k->u, id, &q.conn_param);
	return 0;
}

static int c_listen(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_listen, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	uint32_t backlog = (int32_t)q.backlog > 0 && q.backlog < UCMA_MAX_BACKLOG ?
			   q.backlog : UCMA_MAX_BACKLOG;
	if (id->state == S_IDLE) {
		struct sockaddr_storage any;
		memset(&any, 0, sizeof(any));
		any.ss_family = AF_INET;
		rc = ucma_bind(k->u, id, &any);
		if (rc)
			return rc;
	}
	if (id->state != S_ADDR_BOUND)
		return -EINVAL;
	if (id->reuseaddr) {
		/* rdma_listen: a listener takes its port for itself, and is no
		 * longer reusable */
		rc = ucma_check_port(k->u, id, ucma_port(&id->src), false);
		if (rc)
			return rc;
		id->reuseaddr = false;
	}
	id->backlog = backlog;
	id->state = S_LISTEN;
	ucma_wire_listen(k->u, id);
	return 0;
}

static int c_accept(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_accept, q, offsetof(struct rdma_ucm_accept, ece));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);

	if (rc)
		return rc;
	if (id->state != S_CONNECT)
		return -EINVAL;
	if (q.conn_param.valid) {
		if (id->cp == CP_REP_RCVD)
			return -EINVAL; /* ib_send_cm_rep in the wrong state */
		if (q.conn_param.rnr_retry_count > 7) /* cma_accept_ib: 3 bits */
			q.conn_param.rnr_retry_count = 7;
		uint64_t old = id->uid;
		id->uid = q.uid; /* before the REP, as ucma_accept */
		rc = ucma_send_rep(k->u, id, &q.conn_param);
		if (rc)
			id->uid = old;
		return rc;
	}
	if (id->qp_type == IBV_QPT_UD)
		return ucma_send_rep(k->u, id, NULL);
	return ucma_send_rtu(k->u, id);
}

static int c_reject(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_reject, q, offsetof(struct rdma_ucm_reject, private_data));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);

	if (rc)
		return rc;
	if (!q.reason)
		q.reason = REJ_CONSUMER_DEFINED;
	if (q.reason != REJ_CONSUMER_DEFINED && q.reason != REJ_VENDOR_OPTION_NOT_SUPPORTED)
		return -EINVAL;
	bool ud = id->qp_type == IBV_QPT_UD;
	if (q.private_data_len > (ud ? UCMA_SIDR_REP_PDATA : UCMA_REJ_PDATA))
		return -EINVAL;
	if (id->cp != CP_REQ_RCVD && id->cp != CP_REP_RCVD && id->cp != CP_REP_SENT &&
	    id->cp != CP_REQ_SENT)
		return -EINVAL;
	if (id->cm && ud) {
		struct emu_ibcm_sidr_rep_param r = {
			.status = WIRE_CM_SIDR_REJECT, .private_data = q.private_data,
			.private_data_len = q.private_data_len,
		};
		int rc = emu_ibcm_send_sidr_rep(id->cm, &r);
		if (!rc)
			id->cp = CP_DONE;
		return rc;
	}
	if (id->cm) {
		int rc = emu_ibcm_send_rej(id->cm, (enum wire_cm_rej_reason)q.reason, NULL, 0,
					   q.private_data, q.private_data_len);
		if (!rc)
			id->cp = CP_DONE;
		return rc;
	}
	struct ucma_id *p = id->peer;
	id->peer = NULL;
	id->cp = CP_DONE;
	if (p)
		ucma_rej_rcvd(k->u, p, ud ? SIDR_REJECT : q.reason, q.private_data,
			      q.private_data_len);
	return 0;
}

static int c_disconnect(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_disconnect, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get_dev(k, q.id, &id);
	return rc ? rc : ucma_disconnect(k->u, id);
}

static int c_init_qp_attr(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_init_qp_attr, q, sizeof(q));
	struct ib_uverbs_qp_attr r;
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	if (q.qp_state > IBV_QPS_ERR)
		return -EINVAL;
	int rc = ucma_get_dev(k, q.id, &id);
	if (rc)
		return rc;
	memset(&r, 0, sizeof(r));
	r.qp_state = q.qp_state;
	r.port_num = 1;
	r.pkey_index = 0;
	if (id->cp == CP_NONE || id->qp_type == IBV_QPT_UD) {
		/* cma_ib_init_qp_attr */
		r.qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			r.qkey = id->qkey ? id->qkey : UCMA_UDP_QKEY;
			r.qp_attr_mask |= IBV_QP_QKEY;
		} else {
			r.qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
	} else {
		/* ib_cm_init_qp_attr */
		bool rc_qp = id->qp_type == IBV_QPT_RC;
		bool ok;
		switch (q.qp_state) {
		case IBV_QPS_INIT:
			ok = id->cp >= CP_REQ_SENT && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
					 IBV_QP_PORT;
			r.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (id->resp_res)
				r.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			break;
		case IBV_QPS_RTR:
			ok = id->cp >= CP_REQ_RCVD && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
			ucma_ah_attr(id, &r.ah_attr);
			r.path_mtu = id->path_mtu;
			r.dest_qp_num = id->rqpn;
			if (rc_qp) {
				r.qp_attr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
				r.max_dest_rd_atomic = id->resp_res;
				r.min_rnr_timer = 0;
			}
			break;
		case IBV_QPS_RTS:
			ok = id->cp >= CP_REQ_RCVD && id->cp <= CP_ESTABLISHED;
			if (!ok)
				return -EINVAL;
			r.qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
			r.sq_psn = id->sq_psn;
			if (rc_qp) {
				r.qp_attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						  IBV_QP_MAX_QP_RD_ATOMIC;
				r.timeout = id->timeout_set ? id->timeout : UCMA_DEF_ACK_TIMEOUT;
				r.retry_cnt = id->retry;
				r.rnr_retry = id->rnr_retry;
				r.max_rd_atomic = id->init_depth;
			}
			break;
		default:
			return -EINVAL;
		}
	}
	if (q.qp_state == IBV_QPS_RTR)
		r.rq_psn = id->seq_num; /* rdma_init_qp_attr */
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_get_event(struct ucma_call *k)
{
	struct ucma_file *f = k->f;
	struct rdma_ucm_event_resp r;

	if (k->out_len < sizeof(r) - sizeof(r.reserved) - sizeof(r.ece))
		return -ENOSPC;
	struct ucma_ev *e = f->head;
	if (!e)
		return -EAGAIN; /* the shim's byte was for an event since removed */
	f->head = e->next;
	if (!f->head)
		f->tail = &f->head;
	ucma_nev(f, -1);
	r = e->resp;
	if (e->conn) {
		struct ucma_id *n = e->conn;
		n->hidden = false;
		if (n->listen) {
			n->listen->pending--;
			n->listen = NULL;
		}
	}
	if (e->mc)
		e->mc->events_reported++;
	e->id->events_reported++;
	free(e);
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_set_option(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_set_option, q, sizeof(q));
	const uint8_t *val = k->in + sizeof(q);
	struct ucma_id *id;

	if (k->in_len - sizeof(q) < q.optlen)
		return -EFAULT; /* the value did not come with it */
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	if (q.level == RDMA_OPTION_IB) {
		if (q.optname != RDMA_OPTION_IB_PATH)
			return -ENOSYS;
		if (!q.optlen || q.optlen % sizeof(struct ib_path_rec_data))
			return -EINVAL;
		/* RoCE: the kernel resolves the route itself from the addresses */
		if (id->state != S_ADDR_RESOLVED)
			return -EINVAL;
		return ucma_resolve_route(k->u, id);
	}
	if (q.level != RDMA_OPTION_ID)
		return -ENOSYS;
	int v;
	switch (q.optname) {
	case RDMA_OPTION_ID_TOS:
		if (q.optlen != 1)
			return -EINVAL;
		id->tos = val[0];
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (q.optlen != sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(v));
		if ((v && id->state != S_LISTEN) || id->state == S_IDLE) {
			id->reuseaddr = v != 0;
			return 0;
		}
		return -EINVAL;
	case RDMA_OPTION_ID_AFONLY:
		if (q.optlen != sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(v));
		if (id->state != S_IDLE && id->state != S_ADDR_BOUND)
			return -EINVAL;
		id->afonly = v != 0;
		id->afonly_set = true;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (q.optlen != 1)
			return -EINVAL;
		if (id->qp_type != IBV_QPT_RC)
			return -EINVAL;
		id->timeout = val[0];
		id->timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}

static int c_notify(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_notify, q, sizeof(q));
	struct ucma_id *id;
	int rc = ucma_get(k, q.id, &id);

	if (rc)
		return rc;
	if (!id->has_dev || id->state != S_CONNECT)
		return -EINVAL;
	if (q.event != IBV_EVENT_COMM_EST)
		return -EINVAL;
	if (id->cm)
		return emu_ibcm_notify(id->cm, IBV_EVENT_COMM_EST);
	if (id->cp == CP_ESTABLISHED)
		return -EISCONN;
	if (id->cp != CP_REP_SENT)
		return -EINVAL;
	ucma_establish(k->u, id);
	return 0;
}

static int ucma_mc_alloc(struct ucma_dev *u, struct ucma_mc *mc)
{
	for (uint32_t i = 0; i < u->nmcs; i++)
		if (!u->mcs[i]) {
			u->mcs[i] = mc;
			mc->handle = i;
			return 0;
		}
	uint32_t n = u->nmcs ? u->nmcs * 2 : 16;
	struct ucma_mc **t = realloc(u->mcs, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + u->nmcs, 0, (n - u->nmcs) * sizeof(*t));
	u->mcs = t;
	mc->handle = u->nmcs;
	t[u->nmcs] = mc;
	u->nmcs = n;
	return 0;
}

/* the RoCE MGID of an IP multicast address (cma_iboe_set_mgid, RoCEv2) */
static void ucma_mgid(const struct sockaddr_storage *a, union ibv_gid *g)
{
	ucma_gid(a, g);
}

static int ucma_join(struct ucma_call *k, uint32_t h, uint64_t uid,
		     const struct sockaddr_storage *a, uint16_t flags)
{
	struct rdma_ucm_create_id_resp r = { 0 };
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	if (flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return -EINVAL;
	int rc = ucma_get_dev(k, h, &id);
	if (rc)
		return rc;
	if (id->state != S_ADDR_BOUND && id->state != S_ADDR_RESOLVED)
		return -EINVAL;
	if (id->qp_type != IBV_QPT_UD || !ucma_is_mcast(a))
		return -EINVAL;
	struct ucma_ctx *x = id->file->ctx->ucma;
	if (x->nmcs >= EMU_UCMA_MAX_MCS)
		return -ENOMEM;
	struct ucma_mc *mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	if (ucma_mc_alloc(k->u, mc)) {
		free(mc);
		return -ENOMEM;
	}
	x->nmcs++;
	mc->id = id;
	mc->uid = uid;
	memcpy(&mc->addr, a, ucma_addr_size(a));
	ucma_mgid(a, &mc->mgid);
	mc->send_only = flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	ucma_mc_report(k->u, mc, true);
	mc->next = id->mcs;
	id->mcs = mc;
	struct ucma_ev *e = ucma_ev_new(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (e) {
		e->mc = mc;
		e->resp.uid = mc->uid;
		e->resp.id = mc->handle;
		struct rdma_ucm_ud_param *ud = &e->resp.param.ud;
		ud->qp_num = 0xffffff;
		ud->qkey = UCMA_UDP_QKEY;
		memcpy(ud->ah_attr.grh.dgid, mc->mgid.raw, 16);
		ud->ah_attr.grh.sgid_index = id->sgid_index;
		ud->ah_attr.grh.hop_limit = UCMA_HOP_LIMIT;
		ud->ah_attr.grh.traffic_class = id->tos;
		ud->ah_attr.is_global = 1;
		ud->ah_attr.port_num = 1;
		ucma_ev_post(k->u, e);
	}
	r.id = mc->handle;
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_join_ip_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_join_ip_mcast, q, sizeof(q));
	struct sockaddr_storage a;

	if (!ucma_in6_size(&q.addr))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(q.addr));
	return ucma_join(k, q.id, q.uid, &a, RDMA_MC_JOIN_FLAG_FULLMEMBER);
}

static int c_join_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_join_mcast, q, sizeof(q));
	struct sockaddr_storage a;

	memset(&a, 0, sizeof(a));
	memcpy(&a, &q.addr, sizeof(a));
	if (!q.addr_size || q.addr_size != ucma_addr_size(&a))
		return -EINVAL;
	return ucma_join(k, q.id, q.uid, &a, q.join_flags);
}

static int c_leave_mcast(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_destroy_id, q, sizeof(q));
	struct rdma_ucm_destroy_id_resp r = { 0 };
	struct ucma_dev *u = k->u;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	struct ucma_mc *mc = q.id < u->nmcs ? u->mcs[q.id] : NULL;
	if (!mc)
		return -ENOENT;
	if (mc->id->file != k->f)
		return -EINVAL;
	r.events_reported = mc->events_reported;
	for (struct ucma_mc **pp = &mc->id->mcs; *pp; pp = &(*pp)->next)
		if (*pp == mc) {
			*pp = mc->next;
			break;
		}
	ucma_drop_events(u, k->f, NULL, mc);
	ucma_mc_free(u, mc);
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_migrate_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_migrate_id, q, sizeof(q));
	struct rdma_ucm_migrate_resp r = { 0 };
	struct ucma_dev *u = k->u;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	struct ucma_file *cur = ucma_file_get(u, k->f->ctx, q.fd);
	if (!cur)
		return -ENOENT;
	int err = 0;
	struct ucma_id *id = ucma_id_get(u, cur, q.id, &err);
	if (!id)
		return err;
	r.events_reported = id->events_reported;
	if (cur != k->f) {
		/* the id and its queued events move; the old pipe keeps stale
		 * bytes (GET_EVENT answers -EAGAIN), the new one gets one per
		 * event moved */
		struct ucma_ev **pp = &cur->head, *moved = NULL, **mt = &moved;
		unsigned n = 0;
		cur->tail = &cur->head;
		while (*pp) {
			struct ucma_ev *e = *pp;
			if (e->id == id) {
				*pp = e->next;
				ucma_nev(cur, -1);
				e->next = NULL;
				*mt = e;
				mt = &e->next;
				n++;
				continue;
			}
			cur->tail = &e->next;
			pp = &e->next;
		}
		id->file = k->f;
		while (moved) {
			struct ucma_ev *e = moved;
			moved = e->next;
			ucma_ev_post(u, e);
		}
		(void)n;
	}
	ucma_out(k, &r, sizeof(r));
	return 0;
}

static int c_nosys(struct ucma_call *k)
{
	(void)k;
	return -ENOSYS;
}

static int (*const ucma_cmds[])(struct ucma_call *k) = {
	[RDMA_USER_CM_CMD_CREATE_ID] = c_create_id,
	[RDMA_USER_CM_CMD_DESTROY_ID] = c_destroy_id,
	[RDMA_USER_CM_CMD_BIND_IP] = c_bind_ip,
	[RDMA_USER_CM_CMD_RESOLVE_IP] = c_resolve_ip,
	[RDMA_USER_CM_CMD_RESOLVE_ROUTE] = c_resolve_route,
	[RDMA_USER_CM_CMD_QUERY_ROUTE] = c_query_route,
	[RDMA_USER_CM_CMD_CONNECT] = c_connect,
	[RDMA_USER_CM_CMD_LISTEN] = c_listen,
	[RDMA_USER_CM_CMD_ACCEPT] = c_accept,
	[RDMA_USER_CM_CMD_REJECT] = c_reject,
	[RDMA_USER_CM_CMD_DISCONNECT] = c_disconnect,
	[RDMA_USER_CM_CMD_INIT_QP_ATTR] = c_init_qp_attr,
	[RDMA_USER_CM_CMD_GET_EVENT] = c_get_event,
	[RDMA_USER_CM_CMD_GET_OPTION] = c_nosys,
	[RDMA_USER_CM_CMD_SET_OPTION] = c_set_option,
	[RDMA_USER_CM_CMD_NOTIFY] = c_notify,
	[RDMA_USER_CM_CMD_JOIN_IP_MCAST] = c_join_ip_mcast,
	[RDMA_USER_CM_CMD_LEAVE_MCAST] = c_leave_mcast,
	[RDMA_USER_CM_CMD_MIGRATE_ID] = c_migrate_id,
	[RDMA_USER_CM_CMD_QUERY] = c_query,
	[RDMA_USER_CM_CMD_BIND] = c_bind,
	[RDMA_USER_CM_CMD_RESOLVE_ADDR] = c_resolve_addr,
	[RDMA_USER_CM_CMD_JOIN_MCAST] = c_join_mcast,
};

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

int emu_ucma_open(struct emu_ctx *c, uint32_t *handle, int *rfd)
{
	struct ucma_dev *u = ucma_dev(c->dev, true);
	struct ucma_ctx *x = ucma_cx(c);

	if (!u || !x)
		return -ENOMEM;
	if (x->nfiles >= EMU_UCMA_MAX_FILES)
		return -EMFILE;
	struct ucma_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	int rc = emu_evq_pipe(rfd, &f->wfd);
	if (rc) {
		free(f);
		return rc;
	}
	f->ctx = c;
	f->tail = &f->head;
	f->q.fd = f->wfd;
	f->handle = u->next_file++;
	if (!u->next_file)
		u->next_file = 1;
	f->next = u->files;
	u->files = f;
	x->nfiles++;
	*handle = f->handle;
	return 0;
}

int emu_ucma_cmd(struct emu_ctx *c, const void *body, size_t len, void *out, size_t *olen)
{
	struct uroce_ucma_cmd_req h;
	struct ucma_dev *u = ucma_dev(c->dev, false);

	*olen = 0;
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, body, sizeof(h));
	if (h.in > UROCE_UCMA_MAX_IN || len != sizeof(h) + h.in)
		return -EINVAL;
	struct ucma_file *f = ucma_file_get(u, c, h.file);
	if (!f)
		return -EBADF;
	if (h.cmd >= sizeof(ucma_cmds) / sizeof(ucma_cmds[0]) || !ucma_cmds[h.cmd])
		return -ENOSYS;
	struct ucma_call k = {
		.u = u, .f = f, .in = (const uint8_t *)body + sizeof(h), .in_len = h.in,
		.out_len = h.out < UROCE_UCMA_MAX_OUT ? h.out : UROCE_UCMA_MAX_OUT,
		.out = out, .olen = olen,
	};
	int rc = ucma_cmds[h.cmd](&k);
	if (rc)
		*olen = 0;
	return rc;
}

int emu_ucma_close(struct emu_ctx *c, uint32_t handle)
{
	struct ucma_dev *u = ucma_dev(c->dev, false);
	struct ucma_file *f = ucma_file_get(u, c, handle);

	if (!f)
		return -EBADF;
	ucma_file_destroy(u, f);
	return 0;
}

void emu_ucma_ctx_gone(struct emu_ctx *c)
{
	struct ucma_dev *u = ucma_dev(c->dev, false);

	if (!u)
		return;
	/* a file's ids may take other files' requests with them: restart
	 * the walk after each destroy */
	for (struct ucma_file *f = u->files; f;) {
		if (f->ctx == c) {
			ucma_file_destroy(u, f);
			f = u->files;
			continue;
		}
		f = f->next;
	}
	free(c->ucma);
	c->ucma = NULL;
}

void emu_ucma_poll(struct emu_dev *d, uint64_t now)
{
	struct ucma_dev *u = ucma_dev(d, false);

	/* called every engine iteration: the table is scanned only when a
	 * deadline is due, and at most once a millisecond while a neighbour
	 * is being resolved */
	if (!u || !u->timers || now < u->next_ns)
		return;
	uint64_t next = UINT64_MAX;
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *id = u->ids[i];
		if (!id || !id->deadline)
			continue;
		if (id->state == S_ADDR_QUERY) {
			int rc = ucma_addr_try(u, id);
			if (rc <= 0)
				ucma_addr_done(u, id, rc);
			else if (now >= id->deadline)
				ucma_addr_done(u, id, -ETIMEDOUT);
			else if (now + 1000000 < next)
				next = now + 1000000;
			continue;
		}
		if (now < id->deadline) {
			if (id->deadline < next)
				next = id->deadline;
			continue;
		}
		ucma_timer(u, id, 0);
		if (id->cp == CP_TIMEWAIT) {
			id->cp = CP_DONE;
			ucma_event(u, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		}
	}
	u->next_ns = next;
}

void emu_ucma_dev_fini(struct emu_dev *d)
{
	struct ucma_dev *u = ucma_dev(d, false);

	if (!u)
		return;
	while (u->files)
		ucma_file_destroy(u, u->files);
	free(u->ids);
	free(u->mcs);
	free(u);
	d->ucma = NULL;
}
