/* SPDX-License-Identifier: MIT */
/* One case per sentence of the verbs man pages in shared/seeds/
 * (ibv_poll_cq, ibv_req_notify_cq, ibv_get_cq_event), against a running
 * uroced. usage: verbs_sem CASE */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/wait.h>

#include "vt.h"
#include "urv.h" /* the doorbell page: need_wakeup, the daemon asleep */

#define NO_EVENT_MS 300 /* a correct run never waits less; only false passes */

/* "returns the first num_entries (or all available completions if the CQ
 * contains fewer)"; "returns a non-negative value equal to the number of
 * completions found"; "Each polled completion is removed from the CQ". */
static void poll_count(void)
{
	struct vt t;
	struct ibv_wc wc[16];
	int i, got = 0, r;

	vt_init(&t, NULL);
	REQUIRE(ibv_poll_cq(t.rcq, 4, wc) == 0);
	for (i = 0; i < 5; i++)
		vt_post_recv(t.qb, t.mr, 1024 * (size_t)i, 1024, 100 + (uint64_t)i);
	for (i = 0; i < 5; i++)
		REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 16,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
	vt_poll_n(t.scq, 5, wc);  /* RC: all received once all are acked */
	r = ibv_poll_cq(t.rcq, 2, wc);
	REQUIRE(r >= 0 && r <= 2);
	got = r;
	vt_poll_n(t.rcq, 5 - got, wc + got);
	/* removed: nothing is returned twice, and the CQ is now empty */
	for (i = 0; i < 5; i++)
		REQUIRE(wc[i].wr_id == 100 + (uint64_t)i);
	REQUIRE(ibv_poll_cq(t.rcq, 16, wc) == 0);
	REQUIRE(ibv_poll_cq(t.scq, 16, wc) == 0);
	/* num_entries larger than available: all available */
	for (i = 0; i < 3; i++)
		vt_post_recv(t.qb, t.mr, 0, 1024, 200 + (uint64_t)i);
	for (i = 0; i < 3; i++)
		REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 16,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
	vt_poll_n(t.scq, 3, wc);
	for (got = 0; got < 3;) {
		r = ibv_poll_cq(t.rcq, 16, wc + got);
		REQUIRE(r >= 0 && r <= 3 - got);
		got += r;
	}
	vt_fini(&t);
}

/* every ibv_wc field, per opcode */
static void wc_fields(void)
{
	struct vt t;
	struct ibv_wc s, r;
	uint64_t *atom;

	vt_init(&t, NULL);
	/* SEND with immediate */
	memset(t.buf + 8192, 0xab, 100);
	vt_post_recv(t.qb, t.mr, 0, 4096, 7);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND_WITH_IMM, 8192, 100,
			    IBV_SEND_SIGNALED, htonl(0xdeadbeef), 0, 0, 1));
	vt_poll_n(t.scq, 1, &s);
	vt_poll_n(t.rcq, 1, &r);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.wr_id == 1 &&
	      s.opcode == IBV_WC_SEND && s.qp_num == t.qa->qp_num);
	REQUIRE(r.status == IBV_WC_SUCCESS && r.wr_id == 7 &&
	      r.opcode == IBV_WC_RECV && r.byte_len == 100 &&
	      (r.wc_flags & IBV_WC_WITH_IMM) && r.imm_data == htonl(0xdeadbeef) &&
	      r.qp_num == t.qb->qp_num && !(r.wc_flags & IBV_WC_WITH_INV));
	/* "IBV_WC_GRH GRH is present (valid only for UD QPs)"; IP_CSUM_OK only
	 * where device_cap_flags claim checksum offload */
	REQUIRE(!(r.wc_flags & IBV_WC_GRH));
	{
		struct ibv_device_attr da;

		REQUIRE(!ibv_query_device(t.ctx, &da));
		if (!(da.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM))
			REQUIRE(!(r.wc_flags & IBV_WC_IP_CSUM_OK));
	}
	REQUIRE(t.buf[0] == 0xab && t.buf[99] == 0xab);
	/* plain SEND: no immediate flag */
	vt_post_recv(t.qb, t.mr, 0, 4096, 8);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 0,
			    IBV_SEND_SIGNALED, 0, 0, 0, 2));
	vt_poll_n(t.scq, 1, &s);
	vt_poll_n(t.rcq, 1, &r);
	REQUIRE(r.opcode == IBV_WC_RECV && r.byte_len == 0 &&
	      !(r.wc_flags & IBV_WC_WITH_IMM));
	/* RDMA WRITE: only the sender completes */
	memset(t.buf + 8192, 0x5a, 300);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 8192, 300,
			    IBV_SEND_SIGNALED, 0, (uintptr_t)t.buf + 16384,
			    t.mr->rkey, 3));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_RDMA_WRITE &&
	      s.wr_id == 3);
	REQUIRE(t.buf[16384] == 0x5a && t.buf[16384 + 299] == 0x5a);
	REQUIRE(ibv_poll_cq(t.rcq, 1, &r) == 0);
	/* RDMA WRITE with immediate: consumes a receive */
	vt_post_recv(t.qb, t.mr, 0, 4096, 9);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE_WITH_IMM, 8192, 64,
			    IBV_SEND_SIGNALED, htonl(42), (uintptr_t)t.buf + 20000,
			    t.mr->rkey, 4));
	vt_poll_n(t.scq, 1, &s);
	vt_poll_n(t.rcq, 1, &r);
	REQUIRE(s.opcode == IBV_WC_RDMA_WRITE);
	REQUIRE(r.opcode == IBV_WC_RECV_RDMA_WITH_IMM && r.wr_id == 9 &&
	      (r.wc_flags & IBV_WC_WITH_IMM) && r.imm_data == htonl(42) &&
	      r.byte_len == 64);
	/* RDMA READ */
	memset(t.buf + 30000, 0x77, 200);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_READ, 32768, 200,
			    IBV_SEND_SIGNALED, 0, (uintptr_t)t.buf + 30000,
			    t.mr->rkey, 5));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_RDMA_READ &&
	      s.byte_len == 200 && t.buf[32768] == 0x77 && t.buf[32768 + 199] == 0x77);
	/* atomics */
	atom = (uint64_t *)(void *)(t.buf + 40960);
	*atom = 10;
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_ATOMIC_FETCH_AND_ADD, 41000, 8,
			    IBV_SEND_SIGNALED, 5, (uintptr_t)atom, t.mr->rkey, 6));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_FETCH_ADD &&
	      s.byte_len == 8 && *atom == 15);
	REQUIRE(*(uint64_t *)(void *)(t.buf + 41000) == 10);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_ATOMIC_CMP_AND_SWP, 41008, 8,
			    IBV_SEND_SIGNALED, 15, (uintptr_t)atom, t.mr->rkey, 7));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_COMP_SWAP &&
	      *atom == 0x1234 && *(uint64_t *)(void *)(t.buf + 41008) == 15);
	/* error: "only wr_id, status, qp_num and vendor_err are valid" — a
	 * receive too small fails both sides */
	vt_post_recv(t.qb, t.mr, 0, 8, 10);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 100,
			    IBV_SEND_SIGNALED, 0, 0, 0, 11));
	vt_poll_n(t.rcq, 1, &r);
	REQUIRE(r.status != IBV_WC_SUCCESS && r.wr_id == 10 &&
	      r.qp_num == t.qb->qp_num);
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status != IBV_WC_SUCCESS && s.wr_id == 11 &&
	      s.qp_num == t.qa->qp_num);
	vt_fini(&t);
}

static void send_one(struct vt *t, unsigned flags, uint64_t id)
{
	struct ibv_wc s;

	vt_post_recv(t->qb, t->mr, 0, 4096, id);
	REQUIRE(!vt_post_send(t->qa, t->mr, IBV_WR_SEND, 8192, 8,
			    IBV_SEND_SIGNALED | flags, 0, 0, 0, id));
	vt_poll_n(t->scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS);
}

/* t with a completion channel (vt_opts.channel) */
static void init_ch(struct vt *t)
{
	struct vt_opts o = { .channel = true };

	vt_init(t, &o);
}

/* t's receive CQ armed for the next completion, a SEND completing
 * receive id, and its event taken: the CQ it names, its context in *cc */
static struct ibv_cq *next_event(struct vt *t, uint64_t id, void **cc)
{
	struct ibv_cq *cq;

	REQUIRE(!ibv_req_notify_cq(t->rcq, 0));
	send_one(t, 0, id);
	vt_get_event(t->ch, &cq, cc);
	return cq;
}

/* "requests a notification when the next Work Completion ... is added";
 * get_cq_event "Fills the arguments cq with the CQ that got the event and
 * cq_context with the CQ's context". */
static void notify_next(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cc;
	struct vt t;

	init_ch(&t);
	cq = next_event(&t, 1, &cc);
	REQUIRE(cq == t.rcq && cc == (void *)0x7c);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.wr_id == 1);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* "Any Work Completions that existed in the CQ before calling
 * ibv_req_notify_cq() will not result in creating a Completion Notification" */
static void notify_existing(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc[2];
	void *cc;
	struct vt t;

	init_ch(&t);
	send_one(&t, 0, 1);             /* recv CQE now sits in rcq */
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	REQUIRE(!vt_readable(t.ch->fd, NO_EVENT_MS));
	send_one(&t, 0, 2);             /* a new one does notify */
	vt_get_event(t.ch, &cq, &cc);
	REQUIRE(cq == t.rcq);
	vt_poll_n(t.rcq, 2, wc);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* Solicited: only a message with the SE bit notifies. */
static void notify_solicited(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc[2];
	void *cc;
	struct vt t;

	init_ch(&t);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 1));
	send_one(&t, 0, 1);
	REQUIRE(!vt_readable(t.ch->fd, NO_EVENT_MS));
	send_one(&t, IBV_SEND_SOLICITED, 2);
	vt_get_event(t.ch, &cq, &cc);
	REQUIRE(cq == t.rcq);
	vt_poll_n(t.rcq, 2, wc);
	REQUIRE(wc[0].wr_id == 1 && wc[1].wr_id == 2);
	ibv_ack_cq_events(cq, 1);
	/* "... or RDMA Write with Immediate Data message with the Solicited
	 * Event indicator set" */
	REQUIRE(!ibv_req_notify_cq(t.rcq, 1));
	vt_post_recv(t.qb, t.mr, 0, 64, 3);
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE_WITH_IMM, 8192, 8,
			    IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 5,
			    (uintptr_t)t.buf + 16384, t.mr->rkey, 3));
	vt_get_event(t.ch, &cq, &cc);
	REQUIRE(cq == t.rcq);
	vt_poll_n(t.rcq, 1, wc);
	REQUIRE(wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	vt_poll_n(t.scq, 1, wc);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* Solicited arm: "any unsuccessful (either Send or Receive) Work
 * Completion" also notifies */
static void notify_solicited_error(void)
{
	struct vt_opts o = { .channel = true, .shared_cq = true };
	struct ibv_cq *cq;
	struct ibv_wc wc[2];
	void *cc;
	struct vt t;

	vt_init(&t, &o);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 1));
	vt_post_recv(t.qb, t.mr, 0, 4, 1);      /* too small: both sides fail */
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 64,
			    IBV_SEND_SIGNALED, 0, 0, 0, 2));
	vt_get_event(t.ch, &cq, &cc);
	REQUIRE(cq == t.rcq);
	vt_poll_n(t.rcq, 1, wc);
	REQUIRE(wc[0].status != IBV_WC_SUCCESS);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* "A Request Completion Notification for the next completion event takes
 * precedence over ... a solicited event completion" */
static void notify_precedence(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cc;
	struct vt t;

	init_ch(&t);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 1));
	cq = next_event(&t, 1, &cc); /* not solicited: NEXT still fires */
	REQUIRE(cq == t.rcq);
	vt_poll_n(t.rcq, 1, &wc);
	ibv_ack_cq_events(cq, 1);
	/* and the other order */
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	REQUIRE(!ibv_req_notify_cq(t.rcq, 1));
	send_one(&t, 0, 2);
	vt_get_event(t.ch, &cq, &cc);
	vt_poll_n(t.rcq, 1, &wc);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* "subsequent calls ... requesting the same Completion Event type will have
 * no effect; only one Completion Notification will be generated"; "Once a
 * Completion Notification occurred ... he has to call ibv_req_notify_cq()
 * again". */
static void notify_once(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc[3];
	void *cc;
	struct vt t;

	init_ch(&t);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	send_one(&t, 0, 1);
	send_one(&t, 0, 2);
	send_one(&t, 0, 3);
	vt_get_event(t.ch, &cq, &cc);
	REQUIRE(!vt_readable(t.ch->fd, NO_EVENT_MS));
	vt_poll_n(t.rcq, 3, wc);
	ibv_ack_cq_events(cq, 1);
	/* not re-armed: nothing */
	send_one(&t, 0, 4);
	REQUIRE(!vt_readable(t.ch->fd, NO_EVENT_MS));
	vt_poll_n(t.rcq, 1, wc);
	vt_fini(&t);
}

struct blk { struct ibv_comp_channel *ch; struct ibv_cq *cq; void *cc;
	     int ret; volatile int done; };

static void *blk_thread(void *p)
{
	struct blk *b = p;

	b->ret = ibv_get_cq_event(b->ch, &b->cq, &b->cc);
	b->done = 1;
	return NULL;
}

/* "waits for the next completion event": blocks until one arrives */
static void event_blocking(void)
{
	struct blk b = { 0 };
	struct ibv_wc wc;
	pthread_t th;
	struct vt t;

	init_ch(&t);
	b.ch = t.ch;
	REQUIRE(!ibv_req_notify_cq(t.scq, 0));
	REQUIRE(!pthread_create(&th, NULL, blk_thread, &b));
	usleep(100 * 1000);
	REQUIRE(!b.done);                 /* nothing to report yet */
	send_one(&t, 0, 1);             /* polls scq: the event is for scq */
	REQUIRE(!pthread_join(th, NULL));
	REQUIRE(b.ret == 0 && b.cq == t.scq && b.cc == (void *)0x5c);
	ibv_ack_cq_events(b.cq, 1);
	vt_poll_n(t.rcq, 1, &wc);
	vt_fini(&t);
}

/* "ibv_get_cq_event() returns 0 on success, and -1 on error": a signal
 * whose handler has no SA_RESTART ends a blocked wait with EINTR, as the
 * kernel's read of the channel does (programs stop a timed test with an
 * alarm: qperf's rc_lat hung here when the shim retried the read) */
static volatile sig_atomic_t intr_hits, intr_done;
static void intr_handler(int sig) { (void)sig; intr_hits++; }
static void *intr_kicker(void *p)
{
	pthread_t victim = *(pthread_t *)p;

	/* until the wait has returned: a signal that lands before the read
	 * starts is simply sent again */
	for (int i = 0; i < VT_WAIT_S * 10 && !intr_done; i++) {
		usleep(100 * 1000);
		pthread_kill(victim, SIGUSR1);
	}
	return NULL;
}

static void event_eintr(void)
{
	struct sigaction sa = { .sa_handler = intr_handler }, old;
	pthread_t self = pthread_self(), th;
	struct ibv_cq *cq;
	void *cc;
	struct vt t;

	init_ch(&t);
	REQUIRE(!ibv_req_notify_cq(t.scq, 0)); /* armed, nothing will come */
	sigemptyset(&sa.sa_mask);            /* sa_flags 0: no SA_RESTART */
	REQUIRE(!sigaction(SIGUSR1, &sa, &old));
	REQUIRE(!pthread_create(&th, NULL, intr_kicker, &self));
	errno = 0;
	int r = ibv_get_cq_event(t.ch, &cq, &cc);
	int e = errno;
	intr_done = 1;
	REQUIRE(!pthread_join(th, NULL));
	REQUIRE(!sigaction(SIGUSR1, &old, NULL));
	REQUIRE(r == -1 && e == EINTR && intr_hits >= 1);
	vt_fini(&t);
}

/* non-blocking channel: EAGAIN, then poll() and epoll see the event */
static void event_nonblock(void)
{
	struct epoll_event ee = { .events = EPOLLIN }, out;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cc;
	struct vt t;
	int ep, fl;

	init_ch(&t);
	fl = fcntl(t.ch->fd, F_GETFL);
	REQUIRE(fl >= 0 && !fcntl(t.ch->fd, F_SETFL, fl | O_NONBLOCK));
	errno = 0;
	REQUIRE(ibv_get_cq_event(t.ch, &cq, &cc) == -1 && errno == EAGAIN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0 && !epoll_ctl(ep, EPOLL_CTL_ADD, t.ch->fd, &ee));
	REQUIRE(epoll_wait(ep, &out, 1, 0) == 0);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	send_one(&t, 0, 1);
	REQUIRE(epoll_wait(ep, &out, 1, VT_WAIT_S * 1000) == 1);
	REQUIRE(vt_readable(t.ch->fd, 0));
	REQUIRE(!ibv_get_cq_event(t.ch, &cq, &cc) && cq == t.rcq);
	errno = 0;
	REQUIRE(ibv_get_cq_event(t.ch, &cq, &cc) == -1 && errno == EAGAIN);
	ibv_ack_cq_events(t.rcq, 1);
	vt_poll_n(t.rcq, 1, &wc);
	close(ep);
	vt_fini(&t);
}

/* acknowledge several events in one call; destroy then succeeds */
static void ack_batch(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cc;
	struct vt t;
	int i;

	init_ch(&t);
	for (i = 0; i < 5; i++) {
		cq = next_event(&t, (uint64_t)i, &cc);
		REQUIRE(cq == t.rcq);
		vt_poll_n(t.rcq, 1, &wc);
	}
	ibv_ack_cq_events(t.rcq, 5);
	vt_fini(&t);                    /* must not block */
}

struct dst { struct ibv_cq *cq; volatile int done; int ret; };
static void *destroy_thread(void *p)
{
	struct dst *d = p;

	d->ret = ibv_destroy_cq(d->cq);
	d->done = 1;
	return NULL;
}

/* "destroying a CQ will wait for all completion events to be acknowledged" */
static void destroy_waits(void)
{
	struct dst d = { 0 };
	struct ibv_cq *cq;
	struct ibv_wc wc;
	pthread_t th;
	void *cc;
	struct vt t;

	init_ch(&t);
	cq = next_event(&t, 1, &cc);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(!ibv_destroy_qp(t.qa));
	REQUIRE(!ibv_destroy_qp(t.qb));
	t.qa = t.qb = NULL;
	d.cq = t.rcq;
	REQUIRE(!pthread_create(&th, NULL, destroy_thread, &d));
	usleep(200 * 1000);
	REQUIRE(!d.done);                 /* still waiting for the ack */
	ibv_ack_cq_events(cq, 1);
	REQUIRE(!pthread_join(th, NULL));
	REQUIRE(d.ret == 0);
	t.rcq = NULL;
	vt_fini(&t);
}

/* "an extra event may be triggered without having a corresponding
 * completion entry in the CQ" — and polling it returns 0, harmlessly */
static void extra_event(void)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cc;
	struct vt t;

	init_ch(&t);
	cq = next_event(&t, 1, &cc);
	ibv_ack_cq_events(cq, 1);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));    /* step 4 */
	send_one(&t, 0, 2);                     /* added between 4 and 5 */
	vt_poll_n(t.rcq, 2, (struct ibv_wc[2]){ 0 }); /* step 5 empties */
	vt_get_event(t.ch, &cq, &cc);           /* the extra event */
	REQUIRE(cq == t.rcq);
	REQUIRE(ibv_poll_cq(t.rcq, 1, &wc) == 0);
	ibv_ack_cq_events(cq, 1);
	vt_fini(&t);
}

/* the man page's event loop under a burst: every completion is seen, no
 * wake-up is lost */
static void burst(void)
{
	struct vt_opts o = { .channel = true, .cqe = 256, .max_send_wr = 128,
			     .max_recv_wr = 128 };
	struct ibv_wc wc[32];
	struct ibv_cq *cq;
	void *cc;
	struct vt t;
	int sent = 0, got = 0, nev = 0, sdone = 0, i, n;
	const int total = 2000;

	vt_init(&t, &o);
	REQUIRE(!ibv_req_notify_cq(t.rcq, 0));
	while (got < total) {
		while (sent < total && sent - got < 48) {
			int r;

			/* an SQ slot is free once its WR completes: with ACKs
			 * behind the receives (a loaded machine) the 128 slots
			 * fill before 48 receives are outstanding */
			while (sent - sdone >= 128 - 16) {
				n = ibv_poll_cq(t.scq, 32, wc);
				REQUIRE(n >= 0);
				for (i = 0; i < n; i++) {
					REQUIRE(wc[i].status == IBV_WC_SUCCESS);
					sdone = (int)wc[i].wr_id + 1;
				}
			}
			vt_post_recv(t.qb, t.mr, 0, 64, (uint64_t)sent);
			r = vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 8,
					 (sent % 16 == 15) ? IBV_SEND_SIGNALED : 0,
					 0, 0, 0, (uint64_t)sent);
			if (r)
				fprintf(stderr, "post_send %d at %d (got %d)\n", r, sent, got);
			REQUIRE(!r);
			sent++;
		}
		vt_get_event(t.ch, &cq, &cc);
		nev++;
		REQUIRE(!ibv_req_notify_cq(cq, 0));
		do {
			n = ibv_poll_cq(t.rcq, 32, wc);
			REQUIRE(n >= 0);
			for (i = 0; i < n; i++)
				REQUIRE(wc[i].status == IBV_WC_SUCCESS &&
				      wc[i].wr_id == (uint64_t)got + (uint64_t)i);
			got += n;
		} while (n);
		while ((n = ibv_poll_cq(t.scq, 32, wc)) > 0)
			for (i = 0; i < n; i++) {
				REQUIRE(wc[i].status == IBV_WC_SUCCESS);
				sdone = (int)wc[i].wr_id + 1;
			}
	}
	ibv_ack_cq_events(t.rcq, (unsigned)nev);
	vt_fini(&t);
}

/* "In case of a CQ overrun, the async event IBV_EVENT_CQ_ERR will be
 * triggered, and the CQ cannot be used." */
static void overrun(void)
{
	struct vt_opts o = { .cqe = 4, .max_recv_wr = 64, .max_send_wr = 64 };
	struct ibv_async_event ev;
	struct ibv_wc wc[64];
	struct vt t;
	int i, cap;

	vt_init(&t, &o);
	cap = t.rcq->cqe;
	REQUIRE(cap >= 4 && cap < 30);
	/* twice the reported capacity: overruns even a generously sized ring */
	for (i = 0; i < 2 * cap + 2; i++)
		vt_post_recv(t.qb, t.mr, 0, 64, (uint64_t)i);
	for (i = 0; i < 2 * cap + 2; i++)
		REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 8, 0, 0, 0,
				    0, (uint64_t)i));
	REQUIRE(vt_readable(t.ctx->async_fd, VT_WAIT_S * 1000));
	REQUIRE(!ibv_get_async_event(t.ctx, &ev));
	REQUIRE(ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == t.rcq);
	ibv_ack_async_event(&ev);
	REQUIRE(ibv_poll_cq(t.rcq, 64, wc) < 0);
	REQUIRE(ibv_poll_cq(t.rcq, 64, wc) < 0);  /* and stays unusable */
	/* an unusable CQ can still be destroyed */
	vt_fini(&t);
}

struct mt { struct vt *t; struct ibv_qp *a, *b; struct ibv_cq *cq; int n; };
static void *mt_thread(void *p)
{
	struct mt *m = p;
	struct ibv_wc wc[16];
	int i, got = 0;

	for (i = 0; i < m->n; i++) {
		vt_post_recv(m->b, m->t->mr, 0, 64, (uint64_t)i);
		REQUIRE(!vt_post_send(m->a, m->t->mr, IBV_WR_SEND, 8192, 8,
				    IBV_SEND_SIGNALED, 0, 0, 0, (uint64_t)i));
		/* each thread's CQ gets a send and a receive completion */
		while (got < 2 * (i + 1)) {
			int r = ibv_poll_cq(m->cq, 16, wc);

			REQUIRE(r >= 0);
			for (int k = 0; k < r; k++)
				REQUIRE(wc[k].status == IBV_WC_SUCCESS);
			got += r;
		}
	}
	return NULL;
}

/* QPs driven from several threads at once share nothing */
static void multi_thread(void)
{
	struct vt t;
	struct mt m[4];
	pthread_t th[4];
	int i;

	vt_init(&t, NULL);
	for (i = 0; i < 4; i++) {
		m[i].t = &t;
		m[i].cq = ibv_create_cq(t.ctx, 64, NULL, NULL, 0);
		REQUIRE(m[i].cq);
		m[i].a = vt_qp(&t, IBV_QPT_RC, m[i].cq, m[i].cq, NULL, 32, 32);
		m[i].b = vt_qp(&t, IBV_QPT_RC, m[i].cq, m[i].cq, NULL, 32, 32);
		vt_connect(&t, m[i].a, m[i].b);
		m[i].n = 200;
	}
	for (i = 0; i < 4; i++)
		REQUIRE(!pthread_create(&th[i], NULL, mt_thread, &m[i]));
	for (i = 0; i < 4; i++)
		REQUIRE(!pthread_join(th[i], NULL));
	for (i = 0; i < 4; i++) {
		REQUIRE(!ibv_destroy_qp(m[i].a));
		REQUIRE(!ibv_destroy_qp(m[i].b));
		REQUIRE(!ibv_destroy_cq(m[i].cq));
	}
	vt_fini(&t);
}

static void *shared_poster(void *p)
{
	struct vt *t = p;

	for (int i = 0; i < 300; i++) {
		int r;

		do
			r = vt_post_send(t->qa, t->mr, IBV_WR_RDMA_WRITE, 8192, 8, 0,
					 0, (uintptr_t)t->buf + 16384, t->mr->rkey, 0);
		while (r == ENOMEM);
		REQUIRE(r == 0);
	}
	return NULL;
}

/* two threads posting on one QP: the per-QP lock keeps WQEs whole */
static void shared_qp(void)
{
	struct vt_opts o = { .max_send_wr = 16 };
	struct ibv_wc wc;
	pthread_t th[2];
	struct vt t;

	vt_init(&t, &o);
	for (int i = 0; i < 2; i++)
		REQUIRE(!pthread_create(&th[i], NULL, shared_poster, &t));
	for (int i = 0; i < 2; i++)
		REQUIRE(!pthread_join(th[i], NULL));
	/* a final signaled WR completes after all the others (RC order); the
	 * queue may still be full of the posters' WRs (a slow daemon): ENOMEM
	 * until the daemon has taken some, as the posters themselves do */
	int r;
	do
		r = vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 8192, 8, IBV_SEND_SIGNALED, 0,
				 (uintptr_t)t.buf + 16384, t.mr->rkey, 99);
	while (r == ENOMEM);
	REQUIRE(r == 0);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 99);
	vt_fini(&t);
}

/* fork(): the parent keeps working; our fds are close-on-exec */
static void fork_case(void)
{
	struct ibv_wc wc;
	struct vt t;
	pid_t pid;
	int st;

	REQUIRE(ibv_fork_init() == 0);
	init_ch(&t);
	REQUIRE(fcntl(t.ch->fd, F_GETFD) & FD_CLOEXEC);
	REQUIRE(fcntl(t.ctx->async_fd, F_GETFD) & FD_CLOEXEC);
	REQUIRE(fcntl(t.ctx->cmd_fd, F_GETFD) & FD_CLOEXEC);
	send_one(&t, 0, 1);
	vt_poll_n(t.rcq, 1, &wc);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0);
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	send_one(&t, 0, 2);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS);
	vt_fini(&t);
}

/* two processes, one QP each, talking through the daemon */
static void multi_process(void)
{
	int p2c[2], c2p[2];
	pid_t pid;
	int st;

	REQUIRE(!pipe(p2c) && !pipe(c2p));
	pid = fork();
	REQUIRE(pid >= 0);
	{
		struct vt t;
		struct ibv_qp_init_attr a;
		struct ibv_qp_attr m;
		struct ibv_wc wc;
		uint32_t mine[3], peer[3];
		struct ibv_qp *qp;
		int i;

		memset(&t, 0, sizeof(t));
		t.ctx = vt_open();
		t.gid_idx = vt_find_gid(t.ctx, &t.gid);
		t.pd = ibv_alloc_pd(t.ctx);
		t.buf = aligned_alloc(4096, VT_BUF);
		REQUIRE(t.buf);
		/* defined from the start: valgrind cannot see the daemon write it */
		memset(t.buf, 0, VT_BUF);
		t.mr = ibv_reg_mr(t.pd, t.buf, VT_BUF, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE);
		t.scq = ibv_create_cq(t.ctx, 256, NULL, NULL, 0);
		t.rcq = t.scq;
		REQUIRE(t.pd && t.mr && t.scq);
		qp = vt_qp(&t, IBV_QPT_RC, t.scq, t.scq, NULL, 64, 64);
		mine[0] = qp->qp_num;
		mine[1] = t.mr->rkey;
		mine[2] = (uint32_t)((uintptr_t)t.buf >> 32);
		REQUIRE(write(pid ? p2c[1] : c2p[1], mine, sizeof(mine)) == sizeof(mine));
		REQUIRE(read(pid ? c2p[0] : p2c[0], peer, sizeof(peer)) == sizeof(peer));
		(void)a;
		memset(&m, 0, sizeof(m));
		m.qp_state = IBV_QPS_RTR;
		m.path_mtu = IBV_MTU_1024;
		m.dest_qp_num = peer[0];
		m.rq_psn = 1;
		m.max_dest_rd_atomic = 1;
		m.min_rnr_timer = 1;
		m.ah_attr.is_global = 1;
		m.ah_attr.grh.dgid = t.gid;
		m.ah_attr.grh.sgid_index = (uint8_t)t.gid_idx;
		m.ah_attr.port_num = 1;
		REQUIRE(!ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER));
		memset(&m, 0, sizeof(m));
		m.qp_state = IBV_QPS_RTS;
		m.sq_psn = 1;
		m.timeout = 14;
		m.retry_cnt = 7;
		m.rnr_retry = 7;
		m.max_rd_atomic = 1;
		REQUIRE(!ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN |
				     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
		for (i = 0; i < 50; i++)
			vt_post_recv(qp, t.mr, 0, 256, (uint64_t)i);
		/* both ready before anyone sends */
		REQUIRE(write(pid ? p2c[1] : c2p[1], mine, 1) == 1);
		REQUIRE(read(pid ? c2p[0] : p2c[0], peer, 1) == 1);
		/* the CQ is shared: count both kinds until 50 of each */
		int sends = 0, recvs = 0;

		memset(t.buf + 8192, pid ? 'P' : 'C', 64);
		for (i = 0; i < 50; i++)
			REQUIRE(!vt_post_send(qp, t.mr, IBV_WR_SEND, 8192, 64,
					    IBV_SEND_SIGNALED, 0, 0, 0, 1000));
		while (sends < 50 || recvs < 50) {
			vt_poll_n(t.scq, 1, &wc);
			REQUIRE(wc.status == IBV_WC_SUCCESS);
			if (wc.opcode == IBV_WC_RECV)
				recvs++;
			else
				sends++;
		}
		REQUIRE(t.buf[0] == (pid ? 'C' : 'P'));
		REQUIRE(!ibv_destroy_qp(qp));
		t.qa = t.qb = NULL;
		t.rcq = NULL;
		vt_fini(&t);
		if (!pid)
			_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
}

static volatile sig_atomic_t traps;
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si; (void)uc;
	traps++;
}

/* design.md decision 3: post_send, post_recv, poll_cq and req_notify_cq
 * make no system call while the daemon is awake. Checked with a seccomp
 * filter that traps every system call in the measured loop (the daemon
 * runs with --busy-poll, so need_wakeup is never set). poll() alone is let
 * through: after 2 ms of polling an empty CQ the shim checks once per
 * millisecond that the daemon is still alive (a SIGKILLed daemon must not
 * leave a busy-polling application spinning on 0), and on a loaded machine
 * a completion can take that long. */
static void no_syscall(void)
{
#if defined(__x86_64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_poll, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct sigaction sa;
	pid_t pid;
	int st;

	if (!getenv("UROCE_TEST_BUSY_POLL")) {
		fprintf(stderr, "needs a --busy-poll daemon\n");
		exit(VT_SKIP);
	}
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct vt t;
		struct ibv_wc wc[4];
		int i, got;
		long spin;

		vt_init(&t, NULL);
		send_one(&t, 0, 0);     /* everything warmed up */
		vt_poll_n(t.rcq, 1, wc);
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO;
		REQUIRE(!sigaction(SIGSYS, &sa, NULL));
		REQUIRE(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
		REQUIRE(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
		for (i = 0; i < 200; i++) {
			struct ibv_sge sge = { (uintptr_t)t.buf, 64, t.mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &sge,
						  .num_sge = 1 }, *rbad;
			struct ibv_send_wr sw, *sbad;

			memset(&sw, 0, sizeof(sw));
			sw.sg_list = &sge;
			sw.num_sge = 1;
			sw.opcode = IBV_WR_SEND;
			sw.send_flags = IBV_SEND_SIGNALED;
			if (ibv_post_recv(t.qb, &rw, &rbad) ||
			    ibv_post_send(t.qa, &sw, &sbad) ||
			    ibv_req_notify_cq(t.rcq, 0))
				_exit(3);
			for (got = 0, spin = 0; got < 2 && spin < 2000000000L; spin++) {
				int r = ibv_poll_cq(t.scq, 1, wc) ;

				if (r < 0)
					_exit(4);
				got += r;
				r = ibv_poll_cq(t.rcq, 1, wc);
				if (r < 0)
					_exit(4);
				got += r;
			}
			if (got < 2)
				_exit(5);
		}
		_exit(traps ? 10 + (traps > 100 ? 100 : traps) : 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	if (WEXITSTATUS(st))
		fprintf(stderr, "child exit %d (10+N: N system calls)\n",
			WEXITSTATUS(st));
	REQUIRE(WEXITSTATUS(st) == 0);
#else
	exit(VT_SKIP);
#endif
}

/* "IBV_WC_WITH_INV Invalidated RKey data value is valid (cannot be
 * combined with IBV_WC_WITH_IMM)": SEND with invalidate of a bound type 2
 * window; the window is then unusable */
static void wc_with_inv(void)
{
	struct ibv_wc s, r;
	struct ibv_send_wr wr, *bad;
	struct ibv_mw *mw;
	struct ibv_mr *bmr;
	uint32_t rkey;
	struct vt t;

	vt_init(&t, NULL);
	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_2);
	REQUIRE(mw);
	bmr = ibv_reg_mr(t.pd, t.buf, VT_BUF, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	REQUIRE(bmr);
	rkey = ibv_inc_rkey(mw->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = bmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)t.buf + 4096;
	wr.bind_mw.bind_info.length = 4096;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	REQUIRE(!ibv_post_send(t.qb, &wr, &bad));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_BIND_MW);
	/* usable through the window */
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 8192, 8,
			    IBV_SEND_SIGNALED, 0, (uintptr_t)t.buf + 4096, rkey, 2));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_SUCCESS);
	/* SEND_WITH_INV invalidates it at the receiver */
	vt_post_recv(t.qb, t.mr, 0, 1024, 3);
	memset(&wr, 0, sizeof(wr));
	{
		struct ibv_sge sge = { (uintptr_t)t.buf + 8192, 16, t.mr->lkey };

		wr.wr_id = 4;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.invalidate_rkey = rkey;
		REQUIRE(!ibv_post_send(t.qa, &wr, &bad));
	}
	vt_poll_n(t.scq, 1, &s);
	vt_poll_n(t.rcq, 1, &r);
	REQUIRE(s.status == IBV_WC_SUCCESS && s.opcode == IBV_WC_SEND);
	REQUIRE(r.status == IBV_WC_SUCCESS && r.opcode == IBV_WC_RECV &&
	      (r.wc_flags & IBV_WC_WITH_INV) && !(r.wc_flags & IBV_WC_WITH_IMM) &&
	      r.invalidated_rkey == rkey && r.byte_len == 16);
	/* the invalidated window no longer admits access */
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_RDMA_WRITE, 8192, 8,
			    IBV_SEND_SIGNALED, 0, (uintptr_t)t.buf + 4096, rkey, 5));
	vt_poll_n(t.scq, 1, &s);
	REQUIRE(s.status == IBV_WC_REM_ACCESS_ERR);
	/* the error moved both QPs to ERR: tear down */
	REQUIRE(!ibv_dealloc_mw(mw));
	REQUIRE(!ibv_dereg_mr(bmr));
	vt_fini(&t);
}

/* write-family system calls this thread made (the wake pipe's write) */
static unsigned long thread_syscw(void)
{
	char line[128];
	unsigned long v = 0;
	FILE *f = fopen("/proc/thread-self/io", "r");

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "syscw: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The daemon says it sleeps: it sets need_wakeup in the context's
 * doorbell page before it blocks (abi.h). Waited for while the daemon
 * lives (its pid is in the page), VT_WAIT_S at most: an event, not a
 * pause that a loaded machine outlasts. */
static void wait_daemon_asleep(struct ibv_context *ctx)
{
	struct uroce_db_page *db = to_uctx(ctx)->db;

	for (long i = 0; i < VT_WAIT_S * 1000L; i++) {
		if (__atomic_load_n(&db->need_wakeup, __ATOMIC_ACQUIRE))
			return;
		REQUIRE(kill((pid_t)db->daemon_pid, 0) == 0); /* gone: it cannot sleep */
		usleep(1000);
	}
	REQUIRE(!"the daemon never went to sleep");
}

/* Posting receives rings no doorbell (the daemon takes them when a
 * message needs one), so it never wakes a sleeping daemon; a send does.
 * The send afterwards shows the daemon was asleep, so the first check
 * could fail. */
static void recv_no_wake(void)
{
	struct vt t;
	struct ibv_wc wc;

	vt_init(&t, NULL);
	send_one(&t, 0, 1);
	vt_poll_n(t.rcq, 1, &wc);
	wait_daemon_asleep(t.ctx); /* the default daemon sleeps after 50 us idle */
	unsigned long w0 = thread_syscw();
	for (int i = 0; i < 16; i++)
		vt_post_recv(t.qb, t.mr, 0, 4096, 100 + (uint64_t)i);
	unsigned long w1 = thread_syscw();
	REQUIRE(!vt_post_send(t.qa, t.mr, IBV_WR_SEND, 8192, 8, IBV_SEND_SIGNALED, 0, 0, 0, 2));
	unsigned long w2 = thread_syscw();
	fprintf(stderr, "writes: %lu for 16 receives, %lu for the send\n", w1 - w0, w2 - w1);
	REQUIRE(w1 == w0);
	REQUIRE(w2 > w1);
	vt_poll_n(t.scq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS);
	vt_poll_n(t.rcq, 1, &wc);
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100);
	vt_fini(&t);
}

/* Receives posted before and after the QP entered ERR all complete with
 * IBV_WC_WR_FLUSH_ERR, in order: the daemon flushes the first at the
 * transition, the later ones because the ring asks for their doorbell. */
static void recv_err_flush(void)
{
	struct vt t;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[6];

	vt_init(&t, NULL);
	for (int i = 0; i < 2; i++)
		vt_post_recv(t.qb, t.mr, 0, 4096, 10 + (uint64_t)i);
	REQUIRE(!ibv_modify_qp(t.qb, &a, IBV_QP_STATE));
	vt_poll_n(t.rcq, 2, wc);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 2; i++)
			vt_post_recv(t.qb, t.mr, 0, 4096, 20 + 2 * (uint64_t)round + (uint64_t)i);
		vt_poll_n(t.rcq, 2, wc + 2 + 2 * round);
	}
	for (int i = 0; i < 6; i++) {
		REQUIRE(wc[i].status == IBV_WC_WR_FLUSH_ERR);
		REQUIRE(wc[i].wr_id == (i < 2 ? 10 + (uint64_t)i : 20 + (uint64_t)i - 2));
	}
	vt_fini(&t);
}

static const struct vt_case cases[] = {
	{ "no_syscall", no_syscall },
	{ "recv_no_wake", recv_no_wake },
	{ "recv_err_flush", recv_err_flush },
	{ "wc_with_inv", wc_with_inv },
	{ "poll_count", poll_count },
	{ "wc_fields", wc_fields },
	{ "notify_next", notify_next },
	{ "notify_existing", notify_existing },
	{ "notify_solicited", notify_solicited },
	{ "notify_solicited_error", notify_solicited_error },
	{ "notify_precedence", notify_precedence },
	{ "notify_once", notify_once },
	{ "event_blocking", event_blocking },
	{ "event_nonblock", event_nonblock },
	{ "event_eintr", event_eintr },
	{ "ack_batch", ack_batch },
	{ "destroy_waits", destroy_waits },
	{ "extra_event", extra_event },
	{ "burst", burst },
	{ "overrun", overrun },
	{ "multi_thread", multi_thread },
	{ "shared_qp", shared_qp },
	{ "fork", fork_case },
	{ "multi_process", multi_process },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
