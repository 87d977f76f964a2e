/* SPDX-License-Identifier: MIT */
/* uroce-stat: print the counters of a running uroced device (port, drops by
 * reason, fault injection, and per QP) through UROCE_OP_QUERY_STATS, and
 * its DCQCN settings and per-QP rates through UROCE_OP_QUERY_CC.
 *
 *   uroce-stat [-d DEV] [-r RUN_DIR] [-q]
 *
 * One "name value" line per counter, grouped under "port DEV" and
 * "qp 0xQPN pid PID TYPE STATE" headers, every counter shown (also zeros) so
 * scripts can read them. -q: port counters only. The daemon shows the QPs
 * of the caller's uid only (every QP to root and to its own uid). Exit 0,
 * 1 when the daemon cannot be reached or refuses us, 2 on a usage error. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <uroce/abi.h>

static int st_sock = -1;
static uint32_t st_seq;
static int st_fds[1], st_nfds; /* fds sent with the next request */

/* One request, one reply; received fds are closed (HELLO's doorbell page
 * and eventfd mean nothing to us). Returns the reply body length or -errno. */
static int st_call(uint32_t op, const void *req, size_t rlen, void *rep, size_t replen)
{
	uint8_t buf[UROCE_MAX_MSG];
	struct uroce_msg_hdr *h = (struct uroce_msg_hdr *)buf;

	if (sizeof(*h) + rlen > sizeof(buf))
		return -EINVAL;
	h->op = op;
	h->len = (uint32_t)(sizeof(*h) + rlen);
	h->seq = ++st_seq;
	h->status = 0;
	memcpy(buf + sizeof(*h), req, rlen);
	struct iovec siov = { buf, h->len };
	struct msghdr smh = { .msg_iov = &siov, .msg_iovlen = 1 };
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * 1)];
	} scb;
	if (st_nfds) { /* HELLO: our /proc/self/mem */
		memset(&scb, 0, sizeof(scb));
		smh.msg_control = scb.b;
		smh.msg_controllen = CMSG_SPACE(sizeof(int) * st_nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&smh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * st_nfds);
		memcpy(CMSG_DATA(cm), st_fds, sizeof(int) * st_nfds);
	}
	if (sendmsg(st_sock, &smh, MSG_NOSIGNAL) < 0) {
		int e = errno;
		/* a refused connection: the daemon's one message, then EOF */
		ssize_t k = -1;
		for (int i = 0; i < 2 && k < 0; i++) /* past an ECONNRESET */
			k = recv(st_sock, buf, sizeof(*h), MSG_DONTWAIT);
		if (k == (ssize_t)sizeof(*h) && h->seq == UROCE_REFUSED_SEQ &&
		    h->status == -EACCES)
			return -EACCES;
		return -e;
	}

	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * 4)];
	} cb;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	ssize_t n = recvmsg(st_sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0 && errno == ECONNRESET) /* refused with our request unread */
		n = recvmsg(st_sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int nf = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < nf; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
	if ((size_t)n >= sizeof(*h) && h->seq == UROCE_REFUSED_SEQ && h->status == -EACCES)
		return -EACCES;
	if ((size_t)n < sizeof(*h) || h->seq != st_seq)
		return -EPROTO;
	if (h->status)
		return h->status;
	size_t body = (size_t)n - sizeof(*h);
	memcpy(rep, buf + sizeof(*h), body < replen ? body : replen);
	return (int)body;
}

static const char *st_type(uint32_t t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	default: return "?";
	}
}

static const char *st_state(uint32_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

#define P(name, v) printf("  %-20s %llu\n", name, (unsigned long long)(v))

static void st_port(const char *dev, const struct uroce_port_stats *p)
{
	printf("port %s\n", dev);
	P("tx_pkts", p->tx_pkts);
	P("tx_bytes", p->tx_bytes);
	P("rx_pkts", p->rx_pkts);
	P("rx_bytes", p->rx_bytes);
	P("rx_roce", p->rx_roce);
	P("rx_arp", p->rx_arp);
	P("tx_arp", p->tx_arp);
	P("rx_icmp", p->rx_icmp);
	P("tx_icmp", p->tx_icmp);
	P("rx_nd", p->rx_nd);
	P("tx_nd", p->tx_nd);
	P("icrc_errors", p->icrc_errors);
	P("hdr_errors", p->hdr_errors);
	P("tx_stalls", p->tx_stalls);
	P("fault_drop", p->fault_drop);
	P("fault_dup", p->fault_dup);
	P("fault_reorder", p->fault_reorder);
	P("fault_corrupt", p->fault_corrupt);
	P("fault_delay", p->fault_delay);
	for (uint32_t i = 0; i < p->ndrops && i < UROCE_STATS_DROP_MAX; i++) {
		char name[UROCE_STATS_NAME_LEN + 8];
		snprintf(name, sizeof(name), "drop.%.*s", UROCE_STATS_NAME_LEN, p->drop_name[i]);
		P(name, p->drops[i]);
	}
	P("qps", p->nqp);
	P("contexts", p->nctx);
	P("clients_refused", p->clients_refused);
	P("evq_lost", p->evq_lost);
	P("cqe_inline", p->cqe_inline);
	P("icrc_skipped", p->icrc_skipped);
}

/* The reply as the daemon laid it out: port record, then nqps QP
 * records, then the transport drops, at the sizes the reply states (a
 * daemon older or newer than us may have shorter or longer records).
 * Fields we know and it does not stay 0. 0 or -EPROTO. */
static int st_unpack(const uint8_t *raw, size_t len, struct uroce_query_stats_rep *r)
{
	const size_t hdr = offsetof(struct uroce_query_stats_rep, port);

	memset(r, 0, sizeof(*r));
	if (len < hdr)
		return -EPROTO;
	memcpy(r, raw, hdr);
	size_t ps = r->port_stats_size, qs = r->qp_stats_size;
	if (r->nqps > UROCE_STATS_QP_PER_MSG || ps > len || qs > len ||
	    hdr + ps + (size_t)UROCE_STATS_QP_PER_MSG * qs > len)
		return -EPROTO;
	memcpy(&r->port, raw + hdr, ps < sizeof(r->port) ? ps : sizeof(r->port));
	const uint8_t *q = raw + hdr + ps;
	for (uint32_t i = 0; i < r->nqps; i++, q += qs)
		memcpy(&r->qps[i], q, qs < sizeof(r->qps[0]) ? qs : sizeof(r->qps[0]));
	q = raw + hdr + ps + (size_t)UROCE_STATS_QP_PER_MSG * qs;
	size_t tail = sizeof(*r) - offsetof(struct uroce_query_stats_rep, nxdrops);
	size_t have = len - (size_t)(q - raw);
	memcpy(&r->nxdrops, q, have < tail ? have : tail);
	return 0;
}

/* The transport's drops of the port, by reason (newer daemons only). */
static void st_xdrops(const struct uroce_query_stats_rep *r)
{
	for (uint32_t i = 0; i < r->nxdrops && i < UROCE_STATS_XDROP_MAX; i++) {
		char name[UROCE_STATS_NAME_LEN + 16];
		snprintf(name, sizeof(name), "xport_drop.%.*s", UROCE_STATS_NAME_LEN,
			 r->xdrop_name[i]);
		P(name, r->xdrops[i]);
	}
}

/* ---- DCQCN (UROCE_OP_QUERY_CC, docs/dcqcn.md) ---- */
static struct uroce_cc_dev st_ccdev;
static struct uroce_cc_qp *st_ccqp;  /* by ascending QPN, as the daemon pages them */
static uint32_t st_nccqp;
static bool st_cc;                   /* the daemon answered */

/* Every page of the DCQCN reply, at the sizes it states. A daemon without
 * the request leaves st_cc false. */
static void st_cc_load(void)
{
	struct uroce_query_stats_req q = { 0, 0 };
	static uint8_t raw[UROCE_MAX_MSG];
	const size_t hdr = offsetof(struct uroce_query_cc_rep, dev);

	do {
		struct uroce_query_cc_rep r;
		int n = st_call(UROCE_OP_QUERY_CC, &q, sizeof(q), raw, sizeof(raw));

		if (n < (int)hdr)
			return;
		memcpy(&r, raw, hdr);
		if (r.nqps > UROCE_CC_QP_PER_MSG || hdr + r.dev_size + (size_t)r.nqps * r.qp_size >
							    (size_t)n)
			return;
		memcpy(&st_ccdev, raw + hdr, r.dev_size < sizeof(st_ccdev) ? r.dev_size
									  : sizeof(st_ccdev));
		struct uroce_cc_qp *m = realloc(st_ccqp, (st_nccqp + r.nqps) * sizeof(*m));
		if (!m)
			return;
		st_ccqp = m;
		for (uint32_t i = 0; i < r.nqps; i++) {
			memset(&m[st_nccqp], 0, sizeof(*m));
			memcpy(&m[st_nccqp++], raw + hdr + r.dev_size + (size_t)i * r.qp_size,
			       r.qp_size < sizeof(*m) ? r.qp_size : sizeof(*m));
		}
		st_cc = true;
		if (r.next_qpn && r.next_qpn <= q.first_qpn)
			return;
		q.first_qpn = r.next_qpn;
	} while (q.first_qpn);
}

static void st_cc_port(void)
{
	const struct uroce_cc_dev *c = &st_ccdev;

	if (!st_cc)
		return;
	P("dcqcn.ect", c->ect);
	P("dcqcn.np", c->np);
	P("dcqcn.rp", c->rp);
	P("dcqcn.line_rate_mbps", c->line_rate_mbps);
	P("dcqcn.min_time_between_cnps", c->min_time_between_cnps);
	P("dcqcn.cnp_dscp", c->cnp_dscp);
	P("dcqcn.rpg_time_reset", c->rpg_time_reset);
	P("dcqcn.rpg_byte_reset", c->rpg_byte_reset);
	P("dcqcn.rpg_threshold", c->rpg_threshold);
	P("dcqcn.rpg_ai_rate", c->rpg_ai_rate);
	P("dcqcn.rpg_hai_rate", c->rpg_hai_rate);
	P("dcqcn.rpg_min_rate", c->rpg_min_rate);
	P("dcqcn.rpg_min_dec_fac", c->rpg_min_dec_fac);
	P("dcqcn.rpg_gd", c->rpg_gd);
	P("dcqcn.rate_reduce_monitor_period", c->rate_reduce_monitor_period);
	P("dcqcn.rate_to_set_on_first_cnp", c->rate_to_set_on_first_cnp);
	P("dcqcn.initial_alpha_value", c->initial_alpha_value);
	P("dcqcn.dce_tcp_g", c->dce_tcp_g);
	P("dcqcn.dce_tcp_rtt", c->dce_tcp_rtt);
	P("dcqcn.clamp_tgt_rate", c->clamp_tgt_rate);
	P("dcqcn.clamp_tgt_rate_after_time_inc", c->clamp_tgt_rate_after_time_inc);
	P("dcqcn.ce_rcvd", c->ce_rcvd);
	P("dcqcn.cnp_sent", c->cnp_sent);
	P("dcqcn.cnp_rcvd", c->cnp_rcvd);
	P("dcqcn.rate_cuts", c->rate_cuts);
}

static int st_cc_cmp(const void *k, const void *e)
{
	uint32_t a = *(const uint32_t *)k, b = ((const struct uroce_cc_qp *)e)->qpn;

	return a < b ? -1 : a > b;
}

/* The QP's reaction point: rate, target, alpha (1/1024), stage (0 line
 * rate, 1 fast recovery, 2 additive, 3 hyper), cuts, pacer waits. */
static void st_cc_qp(uint32_t qpn)
{
	const struct uroce_cc_qp *c = st_nccqp ? bsearch(&qpn, st_ccqp, st_nccqp, sizeof(*c),
							 st_cc_cmp) : NULL;

	if (!c)
		return;
	P("rate_mbps", c->rate_mbps);
	P("target_mbps", c->target_mbps);
	P("alpha", c->alpha);
	P("dcqcn_stage", c->stage);
	P("paced", c->paced);
	P("rate_cuts", c->rate_cuts);
	P("pacer_waits", c->pacer_waits);
}
/* ---- end DCQCN ---- */

static void st_qp(const struct uroce_qp_stats *s)
{
	printf("qp 0x%x pid %u %s %s\n", s->qpn, s->pid, st_type(s->qp_type),
	       st_state(s->qp_state));
	P("tx_pkts", s->tx_pkts);
	P("tx_bytes", s->tx_bytes);
	P("rx_pkts", s->rx_pkts);
	P("rx_bytes", s->rx_bytes);
	P("retransmits", s->retransmits);
	P("timeouts", s->timeouts);
	P("dup_requests", s->dup_requests);
	P("out_of_seq", s->out_of_seq);
	P("seq_naks_sent", s->seq_naks_sent);
	P("seq_naks_rcvd", s->seq_naks_rcvd);
	P("rnr_naks_sent", s->rnr_naks_sent);
	P("rnr_naks_rcvd", s->rnr_naks_rcvd);
	P("naks_sent", s->naks_sent);
	P("naks_rcvd", s->naks_rcvd);
	P("retry_exceeded", s->retry_exceeded);
	P("rnr_retry_exceeded", s->rnr_retry_exceeded);
	P("rx_dropped", s->rx_dropped);
	P("tx_no_buf", s->tx_no_buf);
	P("ce_rcvd", s->ce_rcvd);
	P("cnp_sent", s->cnp_sent);
	P("cnp_rcvd", s->cnp_rcvd);
	st_cc_qp(s->qpn);
}


static void st_usage(FILE *f)
{
	fprintf(f, "usage: uroce-stat [-d DEV] [-r RUN_DIR] [-q]\n"
		   "  -d DEV      device (default uroce0)\n"
		   "  -r RUN_DIR  socket directory (default $" UROCE_ENV_RUN_DIR
		   ", else $XDG_RUNTIME_DIR/uroce, else /tmp/uroce-<euid>)\n"
		   "  -q          port counters only\n");
}

int main(int argc, char **argv)
{
	const char *dev = "uroce0";
	char run_dir[108];
	bool port_only = false;
	int c;

	if (uroce_run_dir(run_dir, sizeof(run_dir))) {
		fprintf(stderr, "uroce-stat: run directory name too long\n");
		return 2;
	}
	while ((c = getopt(argc, argv, "d:r:qh")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'r': snprintf(run_dir, sizeof(run_dir), "%s", optarg); break;
		case 'q': port_only = true; break;
		case 'h': st_usage(stdout); return 0;
		default: st_usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		st_usage(stderr);
		return 2;
	}

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s%s", run_dir, dev,
			     UROCE_SOCK_SUFFIX) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "uroce-stat: socket path too long\n");
		return 2;
	}
	st_sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (st_sock < 0 || connect(st_sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "uroce-stat: %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}
	/* only this user's or root's daemon: another user's could be anything */
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(st_sock, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 ||
	    (cr.uid != 0 && cr.uid != geteuid())) {
		fprintf(stderr, "uroce-stat: %s: the daemon is not run by this user or root\n",
			sa.sun_path);
		return 1;
	}
	struct timeval tv = { 5, 0 }; /* a wedged daemon must not hang us */
	setsockopt(st_sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	struct uroce_hello_req hq = { .abi_version = UROCE_ABI_VERSION, .pid = (uint32_t)getpid() };
	static struct uroce_hello_rep hr;
	if ((st_fds[0] = open("/proc/self/mem", O_RDWR | O_CLOEXEC)) < 0) {
		fprintf(stderr, "uroce-stat: %s\n", strerror(errno));
		return 1;
	}
	st_nfds = 1;
	int r = st_call(UROCE_OP_HELLO, &hq, sizeof(hq), &hr, sizeof(hr));
	st_nfds = 0;
	close(st_fds[0]);
	if (r < 0) {
		fprintf(stderr, "uroce-stat: %s: hello: %s\n", dev, strerror(-r));
		return 1;
	}
	static struct uroce_query_stats_rep rep;
	struct uroce_query_stats_req q = { 0, 0 };
	bool first = true;

	st_cc_load();
	do {
		static uint8_t raw[UROCE_MAX_MSG];
		r = st_call(UROCE_OP_QUERY_STATS, &q, sizeof(q), raw, sizeof(raw));
		if (r < 0) {
			fprintf(stderr, "uroce-stat: %s: query stats: %s\n", dev, strerror(-r));
			return 1;
		}
		if (st_unpack(raw, (size_t)r, &rep) < 0) {
			fprintf(stderr, "uroce-stat: %s: unexpected reply\n", dev);
			return 1;
		}
		if (first) {
			st_port(dev, &rep.port);
			st_xdrops(&rep);
			st_cc_port();
		}
		first = false;
		if (port_only)
			break;
		for (uint32_t i = 0; i < rep.nqps; i++)
			st_qp(&rep.qps[i]);
		if (rep.next_qpn && rep.next_qpn <= q.first_qpn)
			break; /* never loop on a confused daemon */
		q.first_qpn = rep.next_qpn;
	} while (q.first_qpn);
	close(st_sock);
	free(st_ccqp);
	return 0;
}
