/* SPDX-License-Identifier: MIT */
/* ece_peer: one side of an ECE exchange through librdmacm, for the
 * interop rig (runcases.sh; the same binary on the host through liburoce
 * and in the rxe VM on the kernel's rdma_cm, docs/interop.md).
 *
 *   ece_peer server ADDR PORT    listen, read the REQ's ECE, accept with ours
 *   ece_peer client ADDR PORT    connect with our ECE, read the REP's
 *
 * Both sides create their QPs themselves (ibv_create_qp): librdmacm keeps
 * what rdma_set_local_ece() set only for ids without a QP of its own, and
 * rdma_rxe has no ECE verbs. The client sends VENDOR/OPT_REQ; the server
 * must see exactly that, and answers with OPT_REP (librdmacm puts the
 * peer's vendor ID in the REP); the client must see VENDOR/OPT_REP. Prints
 * "ece-peer: ok" when its side saw what it must, exits 0; else 1. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#define VENDOR 0x0c0ffeu
#define OPT_REQ 0x11223344u
#define OPT_REP 0x00000055u

static struct rdma_event_channel *ch;

static struct rdma_cm_event *next_ev(enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 30000) != 1 || rdma_get_cm_event(ch, &ev)) {
		fprintf(stderr, "ece-peer: no event (wanted %s)\n", rdma_event_str(want));
		exit(1);
	}
	if (ev->event != want) {
		fprintf(stderr, "ece-peer: %s (status %d), wanted %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static void ack(enum rdma_cm_event_type want)
{
	rdma_ack_cm_event(next_ev(want));
}

static uint32_t own_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 2, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp) {
		fprintf(stderr, "ece-peer: QP: %s\n", strerror(errno));
		exit(1);
	}
	return qp->qp_num;
}

static int check(const char *what, struct rdma_cm_id *id, uint32_t opt)
{
	struct ibv_ece e = { 0 };

	if (rdma_get_remote_ece(id, &e)) {
		fprintf(stderr, "ece-peer: rdma_get_remote_ece: %s\n", strerror(errno));
		return 1;
	}
	printf("ece-peer: %s ece 0x%06x/0x%08x\n", what, e.vendor_id, e.options);
	return e.vendor_id != VENDOR || e.options != opt;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *id, *conn;
	struct rdma_cm_event *ev;
	int server, bad;

	if (argc != 4) {
		fprintf(stderr, "usage: ece_peer server|client ADDR PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	server = !strcmp(argv[1], "server");
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	ch = rdma_create_event_channel();
	if (!ch || rdma_getaddrinfo(argv[2], argv[3], &hints, &ai) ||
	    rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "ece-peer: setup: %s\n", strerror(errno));
		return 1;
	}
	if (server) {
		if (rdma_bind_addr(id, ai->ai_src_addr) || rdma_listen(id, 1)) {
			fprintf(stderr, "ece-peer: listen: %s\n", strerror(errno));
			return 1;
		}
		ev = next_ev(RDMA_CM_EVENT_CONNECT_REQUEST);
		conn = ev->id;
		rdma_ack_cm_event(ev);
		bad = check("request", conn, OPT_REQ);
		rdma_set_local_ece(conn, &(struct ibv_ece){ .vendor_id = VENDOR, .options = OPT_REP });
		cp.qp_num = own_qp(conn);
		if (rdma_accept(conn, &cp)) {
			fprintf(stderr, "ece-peer: accept: %s\n", strerror(errno));
			return 1;
		}
		ack(RDMA_CM_EVENT_ESTABLISHED);
		ack(RDMA_CM_EVENT_DISCONNECTED);
		rdma_disconnect(conn);
	} else {
		if (rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 2000))
			return 1;
		ack(RDMA_CM_EVENT_ADDR_RESOLVED);
		if (rdma_resolve_route(id, 2000))
			return 1;
		ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
		rdma_set_local_ece(id, &(struct ibv_ece){ .vendor_id = VENDOR, .options = OPT_REQ });
		cp.qp_num = own_qp(id);
		if (rdma_connect(id, &cp)) {
			fprintf(stderr, "ece-peer: connect: %s\n", strerror(errno));
			return 1;
		}
		/* REJECTED here (no listener yet) is what runcases.sh retries on */
		ack(RDMA_CM_EVENT_CONNECT_RESPONSE);
		bad = check("response", id, OPT_REP);
		if (rdma_establish(id))
			return 1;
		rdma_disconnect(id);
		ack(RDMA_CM_EVENT_DISCONNECTED);
	}
	printf("ece-peer: %s\n", bad ? "MISMATCH" : "ok");
	return bad;
}
