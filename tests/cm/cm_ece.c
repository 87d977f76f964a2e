/* SPDX-License-Identifier: MIT */
/* ECE (enhanced connection establishment) end to end, as librdmacm 44
 * and the kernel carry it (docs/cm.md "ECE"): rdma_set_local_ece() on the
 * active side reaches the passive side's CONNECT_REQUEST
 * (rdma_get_remote_ece), the passive side's answer reaches the active
 * side's CONNECT_RESPONSE, librdmacm's own handling of QPs it creates
 * (ibv_query_ece / ibv_set_ece on uroce QPs, the vendor mismatch rules of
 * both sides), a REP whose vendor ID is not ours failing the connection
 * (CONNECT_ERROR), rdma_reject_ece() giving REJECTED 35 with its private
 * data, and the provider's ibv_query_ece / ibv_set_ece answers.
 *
 *   cm_ece PORT    (run by cm.py with a private daemon, through its IB CM
 *                   engine)
 * Each case uses its own rdma_cm port (PORT, PORT+1, ...). The values
 * below are what cm.py then looks for in the capture. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>

#include "cm_check.h"

#define UROCE_ECE_VENDOR 0x001ace  /* the uroce device's vendor ID */
#define OPT_REQ 0x5a5a5a5au        /* the active side's options */
#define OPT_REP 0x00000077u        /* the passive side's */
#define OTHER_VENDOR 0xabcdefu     /* a vendor that is not uroce */
#define FORGED_VENDOR 0x999999u

#define CHECK_ECE(e, v, o) CHECK((e).vendor_id == (v) && (e).options == (o),  \
				 "ece %#x/%#x, want %#x/%#x", (e).vendor_id,   \
				 (e).options, (unsigned)(v), (unsigned)(o))

/* the next event of ch, which must be @p want (bounded wait) */
static struct rdma_cm_event *next_ev(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	if (poll(&p, 1, 15000) != 1) {
		CHECK(0, "no event (wanted %s)", rdma_event_str(want));
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev)) {
		CHECK(0, "rdma_get_cm_event: %s", strerror(errno));
		return NULL;
	}
	CHECK(ev->event == want, "event %s (status %d), want %s", rdma_event_str(ev->event),
	      ev->status, rdma_event_str(want));
	return ev;
}

static void ack(struct rdma_cm_event *ev)
{
	if (ev)
		rdma_ack_cm_event(ev);
}

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;     /* listener (server) / connecting id (client) */
	struct rdma_cm_id *conn;   /* server: the request's id */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;         /* the application's own QP (not id->qp) */
};

static struct side srv, cli;

static void listen_on(int port)
{
	struct sockaddr_in a = lo_addr(port);

	memset(&srv, 0, sizeof(srv));
	srv.ch = rdma_create_event_channel();
	CHECK(srv.ch && !rdma_create_id(srv.ch, &srv.id, NULL, RDMA_PS_TCP), "server id");
	CHECK(!rdma_bind_addr(srv.id, (struct sockaddr *)&a), "bind: %s", strerror(errno));
	CHECK(!rdma_listen(srv.id, 4), "listen: %s", strerror(errno));
}

/* the client's id up to ROUTE_RESOLVED */
static void resolve_to(int port)
{
	struct sockaddr_in a = lo_addr(port);

	memset(&cli, 0, sizeof(cli));
	cli.ch = rdma_create_event_channel();
	CHECK(cli.ch && !rdma_create_id(cli.ch, &cli.id, NULL, RDMA_PS_TCP), "client id");
	CHECK(!rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&a, 2000), "resolve_addr");
	ack(next_ev(cli.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(!rdma_resolve_route(cli.id, 2000), "resolve_route");
	ack(next_ev(cli.ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
}

/* an RC QP of the application's own on id's device (librdmacm leaves
 * local_ece as rdma_set_local_ece() set it) */
static void own_qp(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->pd = ibv_alloc_pd(id->verbs);
	s->cq = s->pd ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = s->cq ? ibv_create_qp(s->pd, &qa) : NULL;
	CHECK(s->qp != NULL, "own QP: %s", strerror(errno));
}

/* librdmacm's QP (rdma_create_qp: its ECE handling runs) */
static void cm_qp(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->pd = ibv_alloc_pd(id->verbs);
	CHECK(s->pd && !rdma_create_qp(id, s->pd, &qa), "rdma_create_qp: %s", strerror(errno));
}

static struct rdma_conn_param conn_param(const struct side *s)
{
	struct rdma_conn_param p = {
		.responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
		.rnr_retry_count = 7, .qp_num = s->qp ? s->qp->qp_num : 0,
	};
	return p;
}

static void free_side(struct side *s)
{
	if (s->conn) {
		if (s->conn->qp)
			rdma_destroy_qp(s->conn);
		rdma_destroy_id(s->conn);
	}
	if (s->id) {
		if (s->id->qp)
			rdma_destroy_qp(s->id);
		rdma_destroy_id(s->id);
	}
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	memset(s, 0, sizeof(*s));
}

/* the server's CONNECT_REQUEST: its new id, the ECE it carried */
static struct ibv_ece take_request(void)
{
	struct rdma_cm_event *ev = next_ev(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct ibv_ece e = { 0 };

	if (!ev)
		return e;
	srv.conn = ev->id;
	ack(ev);
	CHECK(!rdma_get_remote_ece(srv.conn, &e), "get_remote_ece: %s", strerror(errno));
	return e;
}

/* ---- both sides choose their ECE: it crosses as set -------------------- */

static void case_exchange(int port)
{
	struct ibv_ece e = { .vendor_id = UROCE_ECE_VENDOR, .options = OPT_REQ };
	struct ibv_ece got = { 0 };

	listen_on(port);
	resolve_to(port);
	/* librdmacm's argument checks */
	CHECK(rdma_set_local_ece(cli.id, &(struct ibv_ece){ .options = 1 }) && errno == EINVAL,
	      "vendor 0 accepted");
	CHECK(rdma_set_local_ece(cli.id, &(struct ibv_ece){ .vendor_id = 1, .comp_mask = 1 }) &&
	      errno == EINVAL, "comp_mask accepted");
	CHECK(!rdma_set_local_ece(cli.id, &e), "set_local_ece: %s", strerror(errno));
	own_qp(&cli, cli.id);
	struct rdma_conn_param cp = conn_param(&cli);
	CHECK(!rdma_connect(cli.id, &cp), "connect: %s", strerror(errno));

	got = take_request();
	CHECK_ECE(got, UROCE_ECE_VENDOR, OPT_REQ);
	own_qp(&srv, srv.conn);
	CHECK(!rdma_set_local_ece(srv.conn, &(struct ibv_ece){ .vendor_id = UROCE_ECE_VENDOR,
							      .options = OPT_REP }), "srv set");
	cp = conn_param(&srv);
	CHECK(!rdma_accept(srv.conn, &cp), "accept: %s", strerror(errno));

	/* no QP in the id: librdmacm hands the response over as it is */
	struct rdma_cm_event *ev = next_ev(cli.ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ack(ev);
	CHECK(!rdma_get_remote_ece(cli.id, &got), "cli get_remote_ece: %s", strerror(errno));
	CHECK_ECE(got, UROCE_ECE_VENDOR, OPT_REP);
	CHECK(!rdma_establish(cli.id), "establish: %s", strerror(errno));
	ack(next_ev(srv.ch, RDMA_CM_EVENT_ESTABLISHED));
	/* the DREQ, and the peer's DREP when it disconnects too */
	CHECK(!rdma_disconnect(cli.id), "disconnect");
	ack(next_ev(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	CHECK(!rdma_disconnect(srv.conn), "disconnect");
	ack(next_ev(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
	free_side(&cli);
	free_side(&srv);
}

/* ---- librdmacm's QPs: what the provider reports goes and comes back ---- */

static void case_cm_qps(int port)
{
	struct ibv_ece q;

	listen_on(port);
	resolve_to(port);
	cm_qp(&cli, cli.id);
	struct rdma_conn_param cp = conn_param(&cli);
	CHECK(!rdma_connect(cli.id, &cp), "connect: %s", strerror(errno));
	/* rdma_create_qp took the QP's ECE as the id's: the REQ carries it */
	q = take_request();
	CHECK_ECE(q, UROCE_ECE_VENDOR, 0);
	cm_qp(&srv, srv.conn);
	CHECK(srv.conn->qp && !ibv_query_ece(srv.conn->qp, &q), "query_ece");
	CHECK_ECE(q, UROCE_ECE_VENDOR, 0);
	cp = conn_param(&srv);
	CHECK(!rdma_accept(srv.conn, &cp), "accept: %s", strerror(errno));
	/* the REP's vendor ID is ours: librdmacm sets it on the QP and
	 * completes (else CONNECT_ERROR) */
	ack(next_ev(cli.ch, RDMA_CM_EVENT_ESTABLISHED));
	ack(next_ev(srv.ch, RDMA_CM_EVENT_ESTABLISHED));
	CHECK(!ibv_query_ece(cli.id->qp, &q), "cli query_ece");
	CHECK_ECE(q, UROCE_ECE_VENDOR, 0);
	/* rdma_get_remote_ece is refused once the id has a QP (librdmacm) */
	CHECK(rdma_get_remote_ece(cli.id, &q) && errno == EINVAL, "get_remote_ece with a QP");
	CHECK(!rdma_disconnect(srv.conn), "disconnect");
	ack(next_ev(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
	CHECK(!rdma_disconnect(cli.id), "disconnect");
	ack(next_ev(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	free_side(&cli);
	free_side(&srv);
}

/* ---- another vendor asks: the passive side clears the options ---------- */

static void case_other_vendor(int port)
{
	struct ibv_ece e = { .vendor_id = OTHER_VENDOR, .options = 0xff };

	listen_on(port);
	resolve_to(port);
	CHECK(!rdma_set_local_ece(cli.id, &e), "set_local_ece");
	own_qp(&cli, cli.id);
	struct rdma_conn_param cp = conn_param(&cli);
	CHECK(!rdma_connect(cli.id, &cp), "connect: %s", strerror(errno));
	e = take_request();
	CHECK_ECE(e, OTHER_VENDOR, 0xff);
	/* init_ece: the vendors differ, so librdmacm sets our vendor with no
	 * options on the QP; the REP answers with the peer's vendor ID
	 * ("the same ID as received") and the options we take: none */
	cm_qp(&srv, srv.conn);
	cp = conn_param(&srv);
	CHECK(!rdma_accept(srv.conn, &cp), "accept: %s", strerror(errno));
	ack(next_ev(cli.ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	CHECK(!rdma_get_remote_ece(cli.id, &e), "get_remote_ece");
	CHECK_ECE(e, OTHER_VENDOR, 0);
	CHECK(!rdma_establish(cli.id), "establish: %s", strerror(errno));
	ack(next_ev(srv.ch, RDMA_CM_EVENT_ESTABLISHED));
	free_side(&cli);
	free_side(&srv);
}

/* ---- a REP with a vendor ID that is not ours: CONNECT_ERROR ------------ */

static int raw_write(int fd, const void *c, size_t n)
{
	ssize_t r = write(fd, c, n);

	CHECK(r == (ssize_t)n, "raw command %u: %s", *(const uint32_t *)c, strerror(errno));
	return r == (ssize_t)n ? 0 : -1;
}

/* A passive side that is not librdmacm (a kernel ULP could answer so):
 * the raw rdma_cm ABI, listening on port; returns the fd and the listener */
static int raw_listen(int port, uint32_t *lid)
{
	struct ucma_abi_create_id_resp cr = { 0 };
	struct ucma_abi_create_id c;
	struct ucma_abi_bind_ip b;
	struct ucma_abi_listen l;
	struct sockaddr_in a = lo_addr(port);
	int fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);

	CHECK(fd >= 0, "open rdma_cm: %s", strerror(errno));
	INIT(c, UCMA_CMD_CREATE_ID, sizeof(cr));
	c.response = (uintptr_t)&cr;
	c.ps = RDMA_PS_TCP;
	c.qp_type = IBV_QPT_RC;
	raw_write(fd, &c, sizeof(c));
	INIT(b, UCMA_CMD_BIND_IP, 0);
	memcpy(&b.addr, &a, sizeof(a));
	b.id = cr.id;
	raw_write(fd, &b, sizeof(b));
	INIT(l, UCMA_CMD_LISTEN, 0);
	l.id = cr.id;
	l.backlog = 4;
	raw_write(fd, &l, sizeof(l));
	*lid = cr.id;
	return fd;
}

static struct ucma_abi_event_resp raw_event(int fd)
{
	struct ucma_abi_event_resp r;
	struct ucma_abi_get_event g;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	memset(&r, 0, sizeof(r));
	CHECK(poll(&p, 1, 15000) == 1, "raw: no event");
	INIT(g, UCMA_CMD_GET_EVENT, sizeof(r));
	g.response = (uintptr_t)&r;
	raw_write(fd, &g, sizeof(g));
	return r;
}

/* the raw side accepts the request with the given ECE */
static void raw_accept(int fd, uint32_t id, uint32_t vendor, uint32_t attr_mod)
{
	struct ucma_abi_accept a;

	INIT(a, UCMA_CMD_ACCEPT, 0);
	a.id = id;
	a.uid = 1;
	a.conn_param.valid = 1;
	a.conn_param.qp_num = 0x1234;
	a.conn_param.responder_resources = 1;
	a.conn_param.initiator_depth = 1;
	a.conn_param.rnr_retry_count = 7;
	a.ece.vendor_id = vendor;
	a.ece.attr_mod = attr_mod;
	raw_write(fd, &a, sizeof(a));
}

static void case_rep_vendor(int port, uint32_t vendor)
{
	uint32_t lid;
	int fd = raw_listen(port, &lid);
	struct ucma_abi_event_resp r;
	struct ibv_ece q;

	resolve_to(port);
	cm_qp(&cli, cli.id);
	struct rdma_conn_param cp = conn_param(&cli);
	CHECK(!rdma_connect(cli.id, &cp), "connect: %s", strerror(errno));
	r = raw_event(fd);
	CHECK(r.event == RDMA_CM_EVENT_CONNECT_REQUEST, "raw event %u", r.event);
	/* the event's ece as the kernel's ucma writes it */
	CHECK(r.ece.vendor_id == UROCE_ECE_VENDOR && r.ece.attr_mod == 0,
	      "request ece %#x/%#x", r.ece.vendor_id, r.ece.attr_mod);
	raw_accept(fd, r.id, vendor, OPT_REP);
	if (vendor && vendor != UROCE_ECE_VENDOR) {
		/* ucma_process_conn_resp_ece: the handshake went wrong */
		ack(next_ev(cli.ch, RDMA_CM_EVENT_CONNECT_ERROR));
		/* the application gives up: cm_destroy_id rejects the REP */
		rdma_destroy_qp(cli.id);
		rdma_destroy_id(cli.id);
		cli.id = NULL;
		r = raw_event(fd);
		CHECK(r.event == RDMA_CM_EVENT_REJECTED && r.status == 28,
		      "raw side: event %u status %d, want REJECTED 28", r.event, (int)r.status);
	} else {
		/* a peer without ECE (vendor ID 0): librdmacm clears the QP's
		 * options and connects */
		ack(next_ev(cli.ch, RDMA_CM_EVENT_ESTABLISHED));
		CHECK(!ibv_query_ece(cli.id->qp, &q), "query_ece");
		CHECK_ECE(q, UROCE_ECE_VENDOR, 0);
		r = raw_event(fd);
		CHECK(r.event == RDMA_CM_EVENT_ESTABLISHED, "raw side: event %u", r.event);
	}
	free_side(&cli);
	close(fd);
}

/* ---- rdma_reject_ece: REJECTED 35 with the private data ---------------- */

static void case_reject(int port)
{
	static const char why[] = "no such option";

	listen_on(port);
	resolve_to(port);
	cm_qp(&cli, cli.id);
	struct rdma_conn_param cp = conn_param(&cli);
	CHECK(!rdma_connect(cli.id, &cp), "connect: %s", strerror(errno));
	take_request();
	CHECK(!rdma_reject_ece(srv.conn, why, sizeof(why)), "reject_ece: %s", strerror(errno));
	struct rdma_cm_event *ev = next_ev(cli.ch, RDMA_CM_EVENT_REJECTED);
	if (ev) {
		CHECK(ev->status == 35, "status %d, want 35 (vendor option not supported)",
		      ev->status);
		CHECK(ev->param.conn.private_data &&
		      !memcmp(ev->param.conn.private_data, why, sizeof(why)), "private data");
	}
	ack(ev);
	free_side(&cli);
	free_side(&srv);
}

/* ---- the provider's verbs on a uroce QP -------------------------------- */

static void case_verbs(int port)
{
	struct ibv_ece q;

	resolve_to(port);
	own_qp(&cli, cli.id);
	if (!cli.qp)
		return;
	memset(&q, 0xff, sizeof(q));
	CHECK(!ibv_query_ece(cli.qp, &q), "query_ece");
	CHECK(q.vendor_id == UROCE_ECE_VENDOR && q.options == 0 && q.comp_mask == 0,
	      "query %#x/%#x/%#x", q.vendor_id, q.options, q.comp_mask);
	CHECK(ibv_set_ece(cli.qp, &(struct ibv_ece){ .options = 1 }) == EOPNOTSUPP,
	      "vendor 0: not EOPNOTSUPP");
	CHECK(ibv_set_ece(cli.qp, &(struct ibv_ece){ .vendor_id = UROCE_ECE_VENDOR,
						     .comp_mask = 1 }) == EINVAL, "comp_mask");
	CHECK(ibv_set_ece(cli.qp, &(struct ibv_ece){ .vendor_id = 0x15b3 }) == EINVAL,
	      "another vendor");
	CHECK(ibv_set_ece(cli.qp, &(struct ibv_ece){ .vendor_id = UROCE_ECE_VENDOR,
						     .options = OPT_REQ }) == 0, "set");
	/* no optional feature: none of the requested options is granted */
	CHECK(!ibv_query_ece(cli.qp, &q) && q.options == 0, "options after set %#x", q.options);
	free_side(&cli);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cm_ece PORT\n");
		return 2;
	}
	int port = atoi(argv[1]);
	if (port < 1024 || port > 65000)
		port = 20000 + port % 40000;

	setvbuf(stdout, NULL, _IONBF, 0); /* in order with the failures */
	printf("exchange\n");
	case_exchange(port);
	printf("cm-qps\n");
	case_cm_qps(port + 1);
	printf("other-vendor\n");
	case_other_vendor(port + 2);
	printf("rep-vendor-forged\n");
	case_rep_vendor(port + 3, FORGED_VENDOR);
	printf("rep-vendor-none\n");
	case_rep_vendor(port + 4, 0);
	printf("reject\n");
	case_reject(port + 5);
	printf("verbs\n");
	case_verbs(port + 6);
	printf("cm_ece: %d failures\n", failures);
	return failures ? 1 : 0;
}
