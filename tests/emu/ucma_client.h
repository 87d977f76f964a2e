/* SPDX-License-Identifier: MIT */
/* A client of the daemon's rdma_ucm (emu/cm/ucma.c) through the control
 * socket, as the shim drives it for librdmacm: UROCE_OP_UCMA_OPEN/CMD with
 * the kernel's command structs, events through the file's pipe. Shared by
 * test_ucma.c and test_attack.c (with emu_test.h). */
#ifndef UROCE_TEST_UCMA_CLIENT_H
#define UROCE_TEST_UCMA_CLIENT_H

#include <poll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stddef.h>
#include <rdma/rdma_user_cm.h>

#include "emu_test.h"

enum {
	EV_ADDR_RESOLVED, EV_ADDR_ERROR, EV_ROUTE_RESOLVED, EV_ROUTE_ERROR, EV_CONNECT_REQUEST,
	EV_CONNECT_RESPONSE, EV_CONNECT_ERROR, EV_UNREACHABLE, EV_REJECTED, EV_ESTABLISHED,
	EV_DISCONNECTED, EV_DEVICE_REMOVAL, EV_MULTICAST_JOIN, EV_MULTICAST_ERROR,
	EV_ADDR_CHANGE, EV_TIMEWAIT_EXIT,
};

struct cmf {
	struct t_client *c;
	uint32_t h;
	int ev;
};

static inline int cm_open(struct t_client *c, struct cmf *f)
{
	struct uroce_ucma_open_rep r;
	int fds[4];
	unsigned nf = 0;

	f->c = c;
	int rc = t_call(c, UROCE_OP_UCMA_OPEN, NULL, 0, NULL, 0, &r, sizeof(r), fds, &nf);
	if (rc)
		return rc;
	if (nf != 1)
		return -EPROTO;
	f->h = r.handle;
	f->ev = fds[0];
	return 0;
}

/* one command: status, response copied to out, its length in *got */
static inline int cm_cmd_raw(struct t_client *c, uint32_t file, uint32_t cmd, const void *in,
		      size_t inlen, uint32_t outlen, void *out, size_t *got)
{
	uint8_t buf[UROCE_MAX_MSG], rep[UROCE_MAX_MSG];
	struct uroce_ucma_cmd_req q = { .file = file, .cmd = cmd, .out = outlen,
					.in = (uint32_t)inlen };
	struct uroce_msg_hdr h = { .op = UROCE_OP_UCMA_CMD,
				   .len = (uint32_t)(sizeof(h) + sizeof(q) + inlen), .seq = ++c->seq };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &q, sizeof(q));
	memcpy(buf + sizeof(h) + sizeof(q), in, inlen);
	int n = t_raw(c->fd, buf, h.len, NULL, 0, rep, sizeof(rep), NULL, NULL);
	if (n < (int)sizeof(h))
		return n < 0 ? n : -EPROTO;
	struct uroce_msg_hdr r;
	memcpy(&r, rep, sizeof(r));
	if (r.seq != h.seq || r.op != h.op)
		return -EPROTO;
	if (got)
		*got = (size_t)n - sizeof(h);
	if (out && r.status == 0)
		memcpy(out, rep + sizeof(h), (size_t)n - sizeof(h));
	return r.status;
}

static inline int cm_cmd(struct cmf *f, uint32_t cmd, const void *in, size_t inlen, void *out,
		  size_t outlen)
{
	size_t got = 0;
	int rc = cm_cmd_raw(f->c, f->h, cmd, in, inlen, (uint32_t)outlen, out, &got);
	if (!rc && got != outlen && cmd != RDMA_USER_CM_CMD_QUERY)
		return -EPROTO;
	return rc;
}

/* next event of f within ms, as the shim gets it: a byte, then GET_EVENT
 * (a byte whose event was removed is stale: -EAGAIN, next byte) */
static inline int cm_event(struct cmf *f, struct rdma_ucm_event_resp *e, int ms)
{
	uint64_t end = t_now_ms() + (uint64_t)ms;

	for (;;) {
		struct pollfd p = { .fd = f->ev, .events = POLLIN };
		int left = (int)(end - t_now_ms());
		if (left < 0 || poll(&p, 1, left) <= 0)
			return -ETIMEDOUT;
		uint8_t b;
		if (read(f->ev, &b, 1) != 1)
			return -EIO;
		int rc = cm_cmd(f, RDMA_USER_CM_CMD_GET_EVENT, &(struct rdma_ucm_get_event){ 0 },
				sizeof(struct rdma_ucm_get_event), e, sizeof(*e));
		if (rc != -EAGAIN)
			return rc;
	}
}

/* an event of the given type is next (fails the test otherwise) */
static inline void cm_expect(struct cmf *f, uint32_t type, struct rdma_ucm_event_resp *e, int line)
{
	int rc = cm_event(f, e, 30000);
	if (rc || e->event != type) {
		fprintf(stderr, "FAIL line %d: expected event %u, got rc %d event %u status %d\n",
			line, type, rc, rc ? 0 : e->event, rc ? 0 : (int)e->status);
		t_failures++;
		t_exit(1);
	}
}
#define EXPECT(f, type, e) cm_expect(f, type, e, __LINE__)

/* no event pending right now (the daemon has answered everything before) */
static inline bool cm_quiet(struct cmf *f)
{
	struct pollfd p = { .fd = f->ev, .events = POLLIN };
	return poll(&p, 1, 0) == 0;
}

static inline int cm_create(struct cmf *f, uint64_t uid, uint16_t ps, uint32_t *id)
{
	struct rdma_ucm_create_id q = { .uid = uid, .ps = ps, .qp_type = IBV_QPT_RC };
	struct rdma_ucm_create_id_resp r;
	int rc = cm_cmd(f, RDMA_USER_CM_CMD_CREATE_ID, &q, sizeof(q), &r, sizeof(r));
	if (!rc)
		*id = r.id;
	return rc;
}

static inline int cm_destroy(struct cmf *f, uint32_t id, uint32_t *reported)
{
	struct rdma_ucm_destroy_id q = { .id = id };
	struct rdma_ucm_destroy_id_resp r = { 0 };
	int rc = cm_cmd(f, RDMA_USER_CM_CMD_DESTROY_ID, &q, sizeof(q), &r, sizeof(r));
	if (!rc && reported)
		*reported = r.events_reported;
	return rc;
}

static inline void sin_set(struct sockaddr_in6 *s6, const char *ip, uint16_t port)
{
	memset(s6, 0, sizeof(*s6));
	struct sockaddr_in *s = (struct sockaddr_in *)s6;
	if (strchr(ip, ':')) {
		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
		s6->sin6_port = htons(port);
	} else {
		s->sin_family = AF_INET;
		inet_pton(AF_INET, ip, &s->sin_addr);
		s->sin_port = htons(port);
	}
}

static inline int cm_bind(struct cmf *f, uint32_t id, const char *ip, uint16_t port)
{
	struct rdma_ucm_bind_ip q = { .id = id };
	sin_set(&q.addr, ip, port);
	return cm_cmd(f, RDMA_USER_CM_CMD_BIND_IP, &q, sizeof(q), NULL, 0);
}

static inline int cm_resolve(struct cmf *f, uint32_t id, const char *ip, uint16_t port, uint32_t ms)
{
	struct rdma_ucm_resolve_ip q = { .id = id, .timeout_ms = ms };
	sin_set(&q.dst_addr, ip, port);
	return cm_cmd(f, RDMA_USER_CM_CMD_RESOLVE_IP, &q, sizeof(q), NULL, 0);
}

static inline int cm_route(struct cmf *f, uint32_t id)
{
	struct rdma_ucm_resolve_route q = { .id = id, .timeout_ms = 2000 };
	return cm_cmd(f, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &q, sizeof(q), NULL, 0);
}

static inline int cm_listen(struct cmf *f, uint32_t id, uint32_t backlog)
{
	struct rdma_ucm_listen q = { .id = id, .backlog = backlog };
	return cm_cmd(f, RDMA_USER_CM_CMD_LISTEN, &q, sizeof(q), NULL, 0);
}

static inline int cm_query_route(struct cmf *f, uint32_t id, struct rdma_ucm_query_route_resp *r)
{
	struct rdma_ucm_query q = { .id = id };
	return cm_cmd(f, RDMA_USER_CM_CMD_QUERY_ROUTE, &q, sizeof(q), r, sizeof(*r));
}

static inline uint16_t cm_port(struct cmf *f, uint32_t id)
{
	struct rdma_ucm_query_route_resp r;
	if (cm_query_route(f, id, &r))
		return 0;
	return ntohs(r.src_addr.sin6_port); /* same offset in sockaddr_in */
}

static inline int cm_qp_attr(struct cmf *f, uint32_t id, uint32_t state, struct ib_uverbs_qp_attr *a)
{
	struct rdma_ucm_init_qp_attr q = { .id = id, .qp_state = state };
	return cm_cmd(f, RDMA_USER_CM_CMD_INIT_QP_ATTR, &q, sizeof(q), a, sizeof(*a));
}

static inline int cm_connect(struct cmf *f, uint32_t id, uint32_t qpn, const char *pd)
{
	struct rdma_ucm_connect q = { .id = id };
	q.conn_param.valid = 1;
	q.conn_param.qp_num = qpn;
	q.conn_param.responder_resources = 4;
	q.conn_param.initiator_depth = 2;
	q.conn_param.retry_count = 5;
	q.conn_param.rnr_retry_count = 6;
	q.conn_param.private_data_len = (uint8_t)strlen(pd);
	memcpy(q.conn_param.private_data, pd, strlen(pd));
	return cm_cmd(f, RDMA_USER_CM_CMD_CONNECT, &q, sizeof(q), NULL, 0);
}

static inline int cm_accept(struct cmf *f, uint32_t id, uint64_t uid, uint32_t qpn, const char *pd)
{
	struct rdma_ucm_accept q = { .id = id, .uid = uid };
	if (pd) {
		q.conn_param.valid = 1;
		q.conn_param.qp_num = qpn;
		q.conn_param.responder_resources = 2;
		q.conn_param.initiator_depth = 4;
		q.conn_param.rnr_retry_count = 7;
		q.conn_param.private_data_len = (uint8_t)strlen(pd);
		memcpy(q.conn_param.private_data, pd, strlen(pd));
	}
	return cm_cmd(f, RDMA_USER_CM_CMD_ACCEPT, &q, sizeof(q), NULL, 0);
}

static inline int cm_disconnect(struct cmf *f, uint32_t id)
{
	struct rdma_ucm_disconnect q = { .id = id };
	return cm_cmd(f, RDMA_USER_CM_CMD_DISCONNECT, &q, sizeof(q), NULL, 0);
}

/* resolve addr + route to ip:port, events checked */
static inline void cm_resolve_all(struct cmf *f, uint32_t id, uint64_t uid, const char *ip, uint16_t port)
{
	struct rdma_ucm_event_resp e;

	REQUIRE(cm_resolve(f, id, ip, port, 2000) == 0, "resolve %s", ip);
	EXPECT(f, EV_ADDR_RESOLVED, &e);
	CHECK(e.status == 0 && e.uid == uid && e.id == id, "addr event %d %llx %u", (int)e.status,
	      (unsigned long long)e.uid, e.id);
	REQUIRE(cm_route(f, id) == 0, "route");
	EXPECT(f, EV_ROUTE_RESOLVED, &e);
	CHECK(e.uid == uid, "route uid");
}

#endif
