/* SPDX-License-Identifier: MIT */
/* The run-to-completion loop: control messages, doorbells, RX burst,
 * transport timers. When there is nothing to do for a while it publishes
 * need_wakeup, re-checks, and sleeps in epoll on the control sockets and
 * the wake eventfds (and an af_packet or af_xdp port's RX sockets, port_wake.c), with a timeout bounded by the next transport deadline and,
 * for other ports, the RX poll interval (the ring PMD has no interrupt). */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>

#include "daemon.h"
#include "spin.h"
#include "cm/ucma.h"
#include "pcapw.h"
#include "cm/ibcm.h"

#define EMU_RX_POLL_NS   1000000ull  /* sleeping: look at RX at least this often */
#define EMU_LOOP_SLEEP_NS 200000000ull /* loopback: only the stop flag needs it */
#define EMU_RX_ACTIVE_NS 20000000ull  /* a port is "active" this long after a frame */
#define EMU_CTL_POLL_ITERS 256        /* busy: check control sockets this often */
/* ... and every iteration this long after a control request: a verbs
 * program setting up QPs sends the next one within microseconds, and
 * waiting up to 256 iterations (or a sleep) for each was most of the time
 * of a QP's create and connect (docs/performance.md, "QP setup") */
#define EMU_CTL_HOT_NS 200000ull
#define EMU_EVQ_RETRY_NS 1000000ull   /* event pipe backlog: retry this often */
#define EMU_IDLE_CLOCK_ITERS 8        /* idle: read the clock, run timers this often */
/* a turn that polls the control sockets is never skipped */
_Static_assert(EMU_CTL_POLL_ITERS % EMU_IDLE_CLOCK_ITERS == 0, "ctl turns read the clock");

static unsigned emu_doorbells(struct emu_daemon *dm);

/* Woken from a sleep: the post that woke us (if a doorbell did) is served
 * first, the wake pipe read and the control work after it: they took ~4 us
 * after epoll's return here, which the first completion no longer waits
 * for (docs/performance.md, "Idle-to-wake"). */
static unsigned emu_wake_first(struct emu_daemon *dm)
{
	emu_ctl_need_wakeup(dm, 0);
	if (!emu_doorbells(dm))
		return 0;
	emu_tx_flush(&dm->dev);
	(void)emu_port_rx(dm);
	emu_tx_flush(&dm->dev);
	return 1;
}

/* Before control requests: what was posted before them, and the frames
 * on their way through the loopback port, go through first, as with a
 * NIC, whose doorbell is faster than any command (a CQ resized or a QP
 * destroyed right after a post sees those WRs complete; an accept after
 * the peer's REJ was sent sees the REJ). Polling the sockets only every
 * 256 iterations gave the engine that time by accident. Bounded: a few
 * bursts. */
static void emu_settle(struct emu_daemon *dm)
{
	(void)emu_doorbells(dm);
	for (int i = 0; i < 8; i++) {
		emu_tx_flush(&dm->dev);
		if (!emu_port_rx(dm))
			break;
	}
	emu_tx_flush(&dm->dev);
}

/* the number of control requests answered; *posted (if given) is set
 * when a doorbell woke the sleep (timeout_ns > 0). The two are kept
 * apart: a control request makes the engine poll the control sockets
 * every turn for a while (EMU_CTL_HOT_NS), a post does not: counted as
 * one, every doorbell that woke a sleeping sender cost an epoll_wait per
 * turn for 200 us, 0.57 million per GB sent (docs/performance.md,
 * "CPU per byte over a link"). */
static unsigned emu_ctl_poll(struct emu_daemon *dm, int timeout_ns, bool *posted)
{
	/* epoll_pwait2 needs Linux 5.11 (and valgrind >= 3.20); without it the
	 * loop would spin and never see a control message: fall back to
	 * epoll_wait with the timeout rounded up to whole milliseconds. */
	static bool no_pwait2;
	struct epoll_event ev[16];
	int n = -1;

	if (timeout_ns <= 0) {
		n = epoll_wait(dm->epfd, ev, 16, 0);
	} else {
		if (!__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
			struct timespec ts = { timeout_ns / 1000000000, timeout_ns % 1000000000 };
			n = epoll_pwait2(dm->epfd, ev, 16, &ts, NULL);
			if (n < 0 && errno == ENOSYS)
				__atomic_store_n(&no_pwait2, true, __ATOMIC_RELAXED);
		}
		if (__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED))
			n = epoll_wait(dm->epfd, ev, 16, (timeout_ns + 999999) / 1000000);
	}
	unsigned served = 0;

	if (n > 0 && timeout_ns > 0 && emu_wake_first(dm) && posted)
		*posted = true;
	if (n > 0)
		emu_settle(dm);
	for (int i = 0; i < n; i++)
		served += emu_ctl_event(dm, ev[i].data.ptr, ev[i].events);
	emu_ctl_reap(dm);
	return served;
}

void emu_stats_dump(struct emu_dev *d)
{
	struct emu_port_counters *c = &d->cnt;

	EMU_LOG(NOTICE, "%s: tx %lu pkts %lu bytes, rx %lu pkts %lu bytes, roce %lu, "
		"icrc-err %lu, hdr-err %lu, arp %lu/%lu, icmp %lu/%lu, nd %lu/%lu, ctx %u, qp %u\n",
		d->name, c->tx_pkts, c->tx_bytes, c->rx_pkts, c->rx_bytes, c->rx_roce,
		c->icrc_errors, c->hdr_errors, c->rx_arp, c->tx_arp, c->rx_icmp, c->tx_icmp,
		c->rx_nd, c->tx_nd, d->nctx, d->nqp);
	EMU_LOG(NOTICE, "%s: engine sleeps %lu, of them to poll RX %lu\n", d->name,
		c->idle_sleeps, c->idle_sleeps_rx_poll);
	if (c->tx_stalls)
		EMU_LOG(NOTICE, "%s: tx back-pressure stalls %lu\n", d->name, c->tx_stalls);
	if (c->evq_lost)
		EMU_LOG(NOTICE, "%s: event records lost %lu\n", d->name, c->evq_lost);
	if (emu_log_suppressed())
		EMU_LOG(NOTICE, "%s: rate-limited log lines suppressed %lu\n", d->name,
			(unsigned long)emu_log_suppressed());
	for (int i = 0; i < EMU_DROP_NUM; i++)
		if (c->drops[i])
			EMU_LOG(NOTICE, "%s: drop %s %lu\n", d->name, emu_drop_name[i], c->drops[i]);
	for (int i = 1; i < WIRE_R_NUM; i++)
		if (c->rx_reason[i])
			EMU_LOG(NOTICE, "%s: rx %s %lu\n", d->name, wire_reason_str(i), c->rx_reason[i]);
	if (c->fault_drop + c->fault_dup + c->fault_reorder + c->fault_corrupt + c->fault_delay)
		EMU_LOG(NOTICE, "%s: fault drop %lu dup %lu reorder %lu corrupt %lu delay %lu\n",
			d->name, c->fault_drop, c->fault_dup, c->fault_reorder, c->fault_corrupt,
			c->fault_delay);
	if (c->fault_corrupt)
		EMU_LOG(NOTICE, "%s: fault corrupt fates: icrc %lu hdr %lu other %lu masked %lu "
			"passed %lu unseen %lu\n", d->name, c->fault_corrupt_icrc, c->fault_corrupt_hdr,
			c->fault_corrupt_other, c->fault_corrupt_masked, c->fault_corrupt_passed,
			c->fault_corrupt_unseen);
	if (d->x->dcqcn_cnt.ce_rcvd + d->x->dcqcn_cnt.cnp_rcvd)
		EMU_LOG(NOTICE, "%s: dcqcn ce %lu, cnp sent %lu rcvd %lu, rate cuts %lu\n", d->name,
			d->x->dcqcn_cnt.ce_rcvd, d->x->dcqcn_cnt.cnp_sent, d->x->dcqcn_cnt.cnp_rcvd,
			d->x->dcqcn_cnt.rate_cuts);
	emu_ibcm_dump(d);
	for (uint32_t q = 0; q < EMU_QPN_TABLE; q++) {
		struct emu_qp *qp = d->qpn[q];
		if (!qp)
			continue;
		struct emu_xport_counters *x = &qp->x->cnt;
		EMU_LOG(NOTICE, "qp 0x%x (pid %d) state %d: tx %lu rx %lu retrans %lu timeouts %lu "
			"dup %lu oos %lu naks %lu/%lu rnr %lu/%lu\n", qp->qpn, (int)qp->ctx->pid,
			qp->attr.qp_state, x->tx_pkts, x->rx_pkts, x->retransmits, x->timeouts,
			x->dup_requests, x->out_of_seq, x->naks_sent + x->seq_naks_sent,
			x->naks_rcvd + x->seq_naks_rcvd, x->rnr_naks_sent, x->rnr_naks_rcvd);
	}
}

static unsigned emu_doorbells(struct emu_daemon *dm)
{
	unsigned work = 0;
	struct emu_ctx *c = dm->dev.ctxs;

	while (c) {
		struct emu_ctx *next = c->next;
		if (c->db) {
			for (unsigned s = 0; s < UROCE_DB_MAX / 64 / 64; s++) {
				if (__atomic_load_n(&c->db->summary[s], __ATOMIC_RELAXED)) {
					work++;
					emu_ctx_doorbells(c);
					break;
				}
			}
		}
		c = next;
	}
	return work;
}

void emu_engine_adopt(struct emu_daemon *dm)
{
	struct emu_mem_guard *old = dm->adopt;
	struct emu_ctx *c = __atomic_load_n(&old->ctx, __ATOMIC_ACQUIRE);

	dm->adopt = NULL;
	EMU_LOG(WARNING, "%s: access to the memory of pid %d blocked for %u ms: its QPs "
		"are quarantined, a new engine thread serves the device\n", dm->o.dev,
		c ? (int)c->pid : -1, dm->o.mem_stall_ms);
	emu_rx_burst_adopt(&dm->dev, c);
	if (c) {
		emu_xport_quarantine(c);
		emu_ctl_abandoned(c, -EFAULT);
	}
	emu_tx_flush(&dm->dev);
	/* old is never freed: the abandoned thread still looks at its token
	 * when its system call returns */
}

/* on the loopback port frames only appear because we sent them, and
 * everything sent was flushed and re-checked before a sleep; a port whose
 * RX sockets are in the epoll set wakes us itself (port_wake.c), but not
 * when it has room again for frames still waiting in our TX backlog */
static bool emu_rx_wakes(struct emu_daemon *dm)
{
	return dm->dev.loopback || (dm->wake.nfds && !dm->dev.tx_backlog);
}

/* How long an idle engine may sleep: until the nearest timer of the
 * transport, the core or rdma_cm, at most until the port must be polled. */
/* (counted: the engine's sleeps, and those that end to poll RX) */
static uint64_t emu_engine_sleep_ns(struct emu_daemon *dm)
{
	struct emu_dev *d = &dm->dev;
	uint64_t dl = emu_xport_next_deadline(d);
	uint64_t cdl = emu_port_next_deadline(d);
	uint64_t udl = emu_ucma_next_deadline(d);
	uint64_t now;

	if (cdl < dl)
		dl = cdl;
	if (udl < dl)
		dl = udl;
	now = emu_now_ns();
	/* frames still waiting in our TX backlog are retried as often as
	 * RX is polled elsewhere */
	bool rx_wakes = emu_rx_wakes(dm);
	uint64_t wait = rx_wakes ? EMU_LOOP_SLEEP_NS : EMU_RX_POLL_NS;
	if (dl != UINT64_MAX)
		wait = dl <= now ? 0 : (dl - now < wait ? dl - now : wait);
	if (d->evq_pend && wait > EMU_EVQ_RETRY_NS)
		wait = EMU_EVQ_RETRY_NS;
	/* a sleep that ends to poll RX, not for a timer: what an idle daemon
	 * on a port that wakes it must never do (tests/net counts these) */
	d->cnt.idle_sleeps++;
	d->cnt.idle_sleeps_rx_poll += !rx_wakes && wait == EMU_RX_POLL_NS;
	return wait;
}

/* Go to sleep: publish need_wakeup, then look once more so a doorbell
 * rung just before the flag was visible is not lost. Returns the time
 * it woke. */
static uint64_t emu_engine_sleep(struct emu_daemon *dm, struct emu_spin *sp,
				 uint64_t *idle_since, uint64_t *ctl_last)
{
	uint64_t now;

	emu_ctl_need_wakeup(dm, 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (emu_ctl_db_pending(dm) || emu_port_rx(dm)) {
		emu_ctl_need_wakeup(dm, 0);
		return *idle_since = emu_now_ns();
	}
	uint64_t wait = emu_engine_sleep_ns(dm);
	/* a post woke us: spin for the rest of its exchange (the reply, the
	 * ACK) as after any work, instead of sleeping at the first idle turn
	 * that reads the clock; a control request: the next one of its setup
	 * sequence is likely near */
	bool posted = false;
	uint64_t slept = emu_now_ns();
	unsigned served = emu_ctl_poll(dm, (int)wait, &posted);

	now = emu_now_ns();
	emu_spin_adapt(sp, now - slept);
	if (served)
		*ctl_last = *idle_since = now;
	else if (posted)
		*idle_since = now;
	if (dm->pcap)
		pcapw_flush(dm->pcap);
	emu_ctl_need_wakeup(dm, 0);
	return now;
}

/* An idle engine's yielding spin after RX, up to EMU_RX_POLL_NS, while
 * frames keep arriving: a port without RX wake-up (PCI, pcap) would be
 * polled only that often, and on one that wakes us (af_xdp, af_packet) a
 * wake-up waits for the core that a spinning application (perftest)
 * holds (docs/performance.md, "CPU per byte over a link"). On a port
 * that wakes us it stops when the cores are contended and the last
 * packet announced nothing more (spin.h, emu_yield_spin): qperf rc_lat
 * over af_xdp, the daemons' CPU per round trip 0.30 -> 0.12 ms (medians
 * at load 4-8.5); where a core is free the spin stays, it costs no one
 * anything ("Latency over a link: spins, sleeps and probes"). */
static uint64_t emu_rx_spin(struct emu_daemon *dm, uint64_t spin, uint64_t now,
			    uint64_t last_rx, struct emu_yield *y)
{
	struct emu_dev *d = &dm->dev;

	emu_yield_seen(y, now);
	if (d->loopback || now - last_rx >= EMU_RX_ACTIVE_NS || spin >= EMU_RX_POLL_NS)
		return spin;
	if (!emu_yield_spin(y, now, emu_rx_wakes(dm), emu_xport_rx_expected(d)))
		return spin;
	return EMU_RX_POLL_NS;
}

/* the port's timers (neighbours, delayed fault frames) and its device's
 * link (an LSC event, or the periodic look) */
static void emu_engine_timers(struct emu_daemon *dm, uint64_t now)
{
	emu_port_poll(&dm->dev, now);
	emu_nic_poll(dm, now);
}

int emu_engine_run(struct emu_daemon *dm)
{
	struct emu_dev *d = &dm->dev;
	struct emu_spin sp = { (uint64_t)dm->o.spin_us * 1000, (uint64_t)dm->o.spin_us * 1000 };
	uint64_t idle_since = emu_now_ns();
	uint64_t iter = 0;
	uint64_t last_rx = 0;
	uint64_t last_evq = 0;
	uint64_t ctl_last = 0; /* when a control request was last answered */
	struct emu_yield yl = { 0, 0 };
	uint64_t now = idle_since;

	/* transport deadlines are slept to the nanosecond (epoll_pwait2);
	 * the default 50 us timer slack of a thread would add up to that to
	 * every RNR wait (8% of perftest's 0.64 ms RNR timer) */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

	/* QP1: the IB CM engine (rdma_cm's wire protocol); a thread that
	 * adopts the device (emu_engine_adopt) keeps the one it has */
	struct emu_ibcm_cfg cmc = { .loss = dm->o.fault.cm_drop, .loss_seed = dm->o.fault.seed };

	if (!emu_ibcm_get(d) && emu_ibcm_attach(d, &cmc))
		EMU_LOG(WARNING, "%s: no CM engine: QP1 MADs are dropped\n", d->name);

	while (!dm->stop) {
		unsigned work = 0;

		if ((++iter % EMU_CTL_POLL_ITERS) == 0 || now - ctl_last < EMU_CTL_HOT_NS) {
			unsigned served = emu_ctl_poll(dm, 0, NULL);

			if (served)
				ctl_last = emu_now_ns();
			work += served;
		}
		if (emu_ctl_mbox_ready(dm)) {
			emu_settle(dm);
			if (emu_ctl_mbox_poll(dm)) {
				ctl_last = emu_now_ns();
				work++;
			}
		}
		work += emu_doorbells(dm);
		/* frames a doorbell produced go out before this turn's RX
		 * poll: on the ring port they come back in it, so a hop
		 * costs one engine turn, not two */
		if (d->tx_backlog)
			emu_tx_flush(d);
		unsigned rx = emu_port_rx(dm);
		work += rx;
		/* a clock read (~110 ns here) was half of an idle turn: an
		 * idle turn reads it only every EMU_IDLE_CLOCK_ITERS, so
		 * timers fire up to that many (sub-microsecond) turns late;
		 * delayed fault frames keep their per-turn accuracy */
		if (!work && !d->fault && (iter % EMU_IDLE_CLOCK_ITERS) != 0)
			continue;
		now = emu_now_ns();
		if (rx)
			last_rx = now;
		emu_xport_poll(d, now);
		/* neighbour retries are milliseconds apart: a scan of the table
		 * every iteration only slowed the busy loop; delayed fault
		 * frames want microsecond accuracy */
		if (d->fault || (iter & 63) == 0)
			emu_engine_timers(dm, now);
		emu_ucma_poll(d, now); /* rdma_cm timers: nothing to do unless armed */
		emu_tx_flush(d);
		/* event records waiting for their reader to make room: at
		 * most one write attempt per backlogged pipe per millisecond */
		if (d->evq_pend && now - last_evq >= EMU_EVQ_RETRY_NS) {
			last_evq = now;
			emu_evq_flush(d, now);
		}
		if (dm->dump) {
			dm->dump = 0;
			emu_stats_dump(d);
			emu_port_link_drops_log(dm);
		}
		if (work) {
			idle_since = now;
			yl.at = 0;
			continue;
		}
		uint64_t spin = emu_rx_spin(dm, sp.cur, now, last_rx, &yl);
		/* the next control request of a setup sequence is likely near */
		if (now - ctl_last < EMU_CTL_HOT_NS && spin < EMU_CTL_HOT_NS)
			spin = EMU_CTL_HOT_NS;
		if (dm->o.busy_poll || now - idle_since < sp.cur)
			continue;
		if (now - idle_since < spin) {
			/* let the applications (and a peer daemon) run: on a
			 * small machine a pure spin would starve them */
			yl.at = now;
			sched_yield();
			continue;
		}
		now = emu_engine_sleep(dm, &sp, &idle_since, &ctl_last);
	}
	emu_ibcm_detach(d);
	return 0;
}
