/* SPDX-License-Identifier: MIT */
/* Hardening through the shim (issue 7): descriptors the application gets
 * from the daemon, used as an application might misuse them, with the
 * verbs semantics intact and another context still served.
 *
 *   event_backlog  the channel fd made blocking and one page small, and
 *                  not read while events are generated past its capacity:
 *                  another context is served meanwhile, and every event
 *                  then arrives through ibv_get_cq_event, none extra */
#include <fcntl.h>

#include "vt.h"

/* one verified SEND qa -> qb of t, a fresh pattern each time */
static void traffic(struct vt *t, unsigned seed)
{
	struct ibv_wc wc;

	for (unsigned i = 0; i < 256; i++)
		t->buf[8192 + i] = (uint8_t)(seed * 131 + i * 7);
	memset(t->buf, 0, 256);
	vt_post_recv(t->qb, t->mr, 0, 4096, seed);
	CHECK(!vt_post_send(t->qa, t->mr, IBV_WR_SEND, 8192, 256, IBV_SEND_SIGNALED, 0, 0, 0,
			    seed));
	vt_poll_n(t->scq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS);
	vt_poll_n(t->rcq, 1, &wc);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 256);
	CHECK(!memcmp(t->buf, t->buf + 8192, 256));
}

static void event_backlog(void)
{
	struct vt_opts o = { .channel = true };
	struct ibv_cq *cq;
	void *cc;
	struct vt t, t2;
	int i, n, fl, cap;

	vt_init(&t, &o);
	fl = fcntl(t.ch->fd, F_GETFL);
	CHECK(fl >= 0 && !fcntl(t.ch->fd, F_SETFL, fl & ~O_NONBLOCK));
	cap = fcntl(t.ch->fd, F_SETPIPE_SZ, 4096);
	CHECK(cap > 0);
	n = cap / 8 + 50; /* 50 events more than the pipe holds */
	for (i = 0; i < n; i++) {
		CHECK(!ibv_req_notify_cq(t.rcq, 0));
		traffic(&t, (unsigned)i);
	}
	/* the daemon holds 50 records for us and still serves others */
	vt_init(&t2, NULL);
	for (i = 0; i < 8; i++)
		traffic(&t2, 1000u + (unsigned)i);
	vt_fini(&t2);
	for (i = 0; i < n; i++) {
		vt_get_event(t.ch, &cq, &cc);
		CHECK(cq == t.rcq && cc == (void *)0x7c);
	}
	ibv_ack_cq_events(t.rcq, (unsigned)n);
	CHECK(!vt_readable(t.ch->fd, 300)); /* no more than were triggered */
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "event_backlog", event_backlog },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
