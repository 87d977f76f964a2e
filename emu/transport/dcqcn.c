/* SPDX-License-Identifier: MIT */
/* DCQCN (docs/dcqcn.md): the device's parameters and the reaction point of
 * each QP, as ConnectX runs it by default. A QP is never paced until a CNP
 * arrives; then its rate rc is cut (alpha), recovers towards the target rt
 * by timer and byte-counter events (fast recovery, additive, hyper
 * increase) and the requester is paced to rc until rc is back at the line
 * rate (where it stays paced, at the line rate).
 *
 * The algorithm's timers are not engine timers: the 1 us alpha period, the
 * deferred cut and the 300 us increase timer are caught up, in time order,
 * whenever the QP's state is looked at (a CNP, a requester turn), so a
 * paced QP costs the engine nothing between its packets. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xport_int.h"

#define NS_PER_US 1000ull
/* What ConnectX means by line rate here: the speed the port reports
 * (ibv_port_attr: EDR, 1X = 25 Gb/s). */
#define DCQCN_PORT_MBPS 25000u
/* A paced QP that fell behind (an engine turn later than its next packet)
 * may catch up this much at once, no more: coarse engine turns do not
 * lower the rate, an idle QP does not burst. */
#define DCQCN_BURST_NS 10000ull
/* rp->alpha: 1/1024 as mlx5's, with this many more fraction bits */
#define DCQCN_ALPHA_FRAC 10
#define DCQCN_ALPHA_MAX ((1023u << DCQCN_ALPHA_FRAC) | ((1u << DCQCN_ALPHA_FRAC) - 1))
/* Timer events one catch-up handles before it gives up and lets the QP go
 * at line rate (only after hours of idleness). */
#define DCQCN_CATCHUP_MAX 100000u

void emu_dcqcn_defaults(struct emu_dcqcn_cfg *c)
{
	/* mlx5 firmware defaults (NVIDIA "DCQCN parameters", ConnectX-4 on) */
	*c = (struct emu_dcqcn_cfg){
		.ect = 1, .np = 1, .rp = 1,
		.clamp_tgt_rate = 0,
		.clamp_tgt_rate_after_time_inc = 1,
		.min_time_between_cnps = EMU_XPORT_CNP_INTERVAL_NS / 1000,
		.cnp_dscp = 48,
		.rpg_max_rate = 0,
		.rpg_time_reset = 300,
		.rpg_byte_reset = 32767,
		.rpg_threshold = 1,
		.rpg_ai_rate = 5,
		.rpg_hai_rate = 50,
		.rpg_min_rate = 1,
		.rpg_min_dec_fac = 50,
		.rpg_gd = 11,
		.rate_reduce_monitor_period = 4,
		.rate_to_set_on_first_cnp = 0,
		.initial_alpha_value = 1023,
		.dce_tcp_g = 1019,
		.dce_tcp_rtt = 1,
	};
}

/* The keys of emu_dcqcn_parse: a field, its range; on/off keys are flags. */
struct dcqcn_key {
	const char *name;
	size_t off;
	uint32_t min, max;
	bool flag;
};
#define K(f, lo, hi) { #f, offsetof(struct emu_dcqcn_cfg, f), lo, hi, false }
#define F(n, f) { n, offsetof(struct emu_dcqcn_cfg, f), 0, 1, true }
static const struct dcqcn_key dcqcn_keys[] = {
	F("ect", ect), F("np", np), F("rp", rp),
	F("clamp_tgt_rate", clamp_tgt_rate),
	F("clamp_tgt_rate_after_time_inc", clamp_tgt_rate_after_time_inc),
	K(min_time_between_cnps, 0, 1000000),
	K(cnp_dscp, 0, 63),
	K(rpg_max_rate, 0, 400000),
	K(rpg_time_reset, 1, 131071),
	K(rpg_byte_reset, 0, 32767),
	K(rpg_threshold, 1, 31),
	K(rpg_ai_rate, 1, 400000),
	K(rpg_hai_rate, 1, 400000),
	K(rpg_min_rate, 1, 400000),
	K(rpg_min_dec_fac, 0, 100),
	K(rpg_gd, 1, 15),
	K(rate_reduce_monitor_period, 1, 1000000),
	K(rate_to_set_on_first_cnp, 0, 400000),
	K(initial_alpha_value, 0, 1023),
	K(dce_tcp_g, 0, 1023),
	K(dce_tcp_rtt, 1, 131071),
};
#undef K
#undef F

static int dcqcn_flag(const char *v)
{
	if (!strcmp(v, "on") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "off") || !strcmp(v, "0"))
		return 0;
	return -1;
}

/* One "key=value" (or "on"/"off" for the whole) into c. */
static int dcqcn_item(struct emu_dcqcn_cfg *c, char *t, char *err, size_t errlen)
{
	char *eq = strchr(t, '=');
	int f;

	if (!eq) {
		f = dcqcn_flag(t);
		if (f < 0)
			goto bad;
		c->ect = c->np = c->rp = (uint8_t)f;
		return 0;
	}
	*eq = 0;
	for (size_t i = 0; i < sizeof(dcqcn_keys) / sizeof(dcqcn_keys[0]); i++) {
		const struct dcqcn_key *k = &dcqcn_keys[i];
		char *end;
		unsigned long n;

		if (strcmp(k->name, t))
			continue;
		if (k->flag) {
			f = dcqcn_flag(eq + 1);
			if (f < 0)
				break;
			*((uint8_t *)c + k->off) = (uint8_t)f;
			return 0;
		}
		n = strtoul(eq + 1, &end, 10);
		if (*end || end == eq + 1 || eq[1] == '-' || n < k->min || n > k->max) {
			snprintf(err, errlen, "%s=%s (%u..%u)", t, eq + 1, k->min, k->max);
			return -EINVAL;
		}
		memcpy((uint8_t *)c + k->off, &(uint32_t){ (uint32_t)n }, sizeof(uint32_t));
		return 0;
	}
	*eq = '=';
bad:
	snprintf(err, errlen, "%s", t);
	return -EINVAL;
}

int emu_dcqcn_parse(struct emu_dcqcn_cfg *c, const char *spec, char *err, size_t errlen)
{
	char buf[512], *save = NULL;

	if (!spec || !*spec || strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "empty or too long");
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (dcqcn_item(c, t, err, errlen))
			return -EINVAL;
	if (c->rpg_min_rate > emu_dcqcn_line_mbps(c)) {
		snprintf(err, errlen, "rpg_min_rate above the line rate");
		return -EINVAL;
	}
	return 0;
}

uint32_t emu_dcqcn_line_mbps(const struct emu_dcqcn_cfg *c)
{
	return c->rpg_max_rate ? c->rpg_max_rate : DCQCN_PORT_MBPS;
}

/* Line rate, kb/s. */
static uint64_t rp_max(const struct emu_dcqcn_cfg *c)
{
	return (uint64_t)emu_dcqcn_line_mbps(c) * 1000;
}

const char *const emu_dcqcn_stage_name[EMU_DCQCN_NSTAGES] = {
	[EMU_DCQCN_LINE_RATE] = "line-rate",
	[EMU_DCQCN_FAST_RECOVERY] = "fast-recovery",
	[EMU_DCQCN_ADDITIVE] = "additive",
	[EMU_DCQCN_HYPER] = "hyper",
};

/* The stage the next increase event runs in (mlx5: stage threshold on the
 * timer and byte counts since the last cut). */
static enum emu_dcqcn_stage rp_stage(const struct emu_dcqcn_cfg *c, const struct emu_dcqcn_rp *rp)
{
	uint32_t lo = rp->t_stage < rp->b_stage ? rp->t_stage : rp->b_stage;
	uint32_t hi = rp->t_stage < rp->b_stage ? rp->b_stage : rp->t_stage;

	if (!rp->active || rp->recovered)
		return EMU_DCQCN_LINE_RATE;
	if (lo > c->rpg_threshold)
		return EMU_DCQCN_HYPER;
	if (hi >= c->rpg_threshold)
		return EMU_DCQCN_ADDITIVE;
	return EMU_DCQCN_FAST_RECOVERY;
}

enum emu_dcqcn_stage emu_dcqcn_stage(const struct emu_qp *qp)
{
	return qp->x->rp ? rp_stage(&qp->dev->x->dcqcn, qp->x->rp) : EMU_DCQCN_LINE_RATE;
}

uint64_t emu_dcqcn_rate_kbps(const struct emu_qp *qp)
{
	return xp_rp_active(qp->x) ? qp->x->rp->rc : rp_max(&qp->dev->x->dcqcn);
}

/* Back at line rate: the next CNP starts afresh (alpha at its initial
 * value), as ConnectX releases the QP from its rate limiter. The QP stays
 * paced at the line rate: unpaced, it would put everything it has
 * outstanding into the port's TX ring at once, a burst no CNP can stop
 * (ConnectX's scheduler never runs a QP faster than the wire). */
static void rp_release(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp)
{
	rp->recovered = 1;
	rp->rc = rp->rt = rp_max(c);
	rp->cut_pending = 0;
	rp->cnp_alpha = 0;
	rp->alpha_at = UINT64_MAX;
	rp->inc_at = UINT64_MAX;
}

/* The rate changed from old to rp->rc at t: a packet held back at the old
 * rate waits what is left of its time at the new one (from 1 Mb/s, one
 * frame's wait is milliseconds; a recovery must not sit it out). */
static void rp_rescale(struct emu_dcqcn_rp *rp, uint64_t t, uint64_t old)
{
	if (rp->pace_next > t && old != rp->rc) {
		rp->pace_next = t + (rp->pace_next - t) * old / rp->rc;
		rp->pace_ps = 0;
	}
}

/* End of an alpha period: up if a CNP came during it, else down. */
static void rp_alpha_tick(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp)
{
	uint64_t a = (uint64_t)rp->alpha * c->dce_tcp_g / 1024;

	if (rp->cnp_alpha)
		a += (uint64_t)(1024 - c->dce_tcp_g) << DCQCN_ALPHA_FRAC;
	rp->alpha = (uint32_t)(a > DCQCN_ALPHA_MAX ? DCQCN_ALPHA_MAX : a);
	rp->cnp_alpha = 0;
	if (rp->alpha)
		rp->alpha_at += (uint64_t)c->dce_tcp_rtt * NS_PER_US;
	else
		rp->alpha_at = UINT64_MAX; /* nothing to decay until a CNP */
}

/* Rate cut at t: rc <- rc (1 - alpha / 2), bounded by rpg_min_dec_fac and
 * rpg_min_rate; the target keeps the rate before a run of cuts. */
static void rp_cut(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp, uint64_t t)
{
	uint64_t dec = (rp->rc * rp->alpha) >> (c->rpg_gd + DCQCN_ALPHA_FRAC);
	uint64_t most = rp->rc * (100 - c->rpg_min_dec_fac) / 100;
	uint64_t old = rp->rc;

	if (c->clamp_tgt_rate || rp->b_stage ||
	    (c->clamp_tgt_rate_after_time_inc && rp->t_stage))
		rp->rt = rp->rc;
	rp->rc -= dec < most ? dec : most;
	if (rp->rc < (uint64_t)c->rpg_min_rate * 1000)
		rp->rc = (uint64_t)c->rpg_min_rate * 1000;
	rp_rescale(rp, t, old);
	rp->t_stage = rp->b_stage = 0;
	rp->bytes = 0;
	rp->inc_at = t + (uint64_t)c->rpg_time_reset * NS_PER_US;
	rp->cut_at = t + (uint64_t)c->rate_reduce_monitor_period * NS_PER_US;
	rp->cut_pending = 0;
	rp->cuts++;
}

/* An increase event (timer or byte counter): the target grows by the
 * stage's step, the rate halves its distance to it (rounded up, so it
 * reaches it). */
static void rp_increase(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp, uint64_t t)
{
	uint64_t max = rp_max(c), old = rp->rc;

	switch (rp_stage(c, rp)) {
	case EMU_DCQCN_HYPER:
		rp->rt += (uint64_t)c->rpg_hai_rate * 1000;
		break;
	case EMU_DCQCN_ADDITIVE:
		rp->rt += (uint64_t)c->rpg_ai_rate * 1000;
		break;
	default:
		break; /* fast recovery: towards the target as it is */
	}
	if (rp->rt > max)
		rp->rt = max;
	rp->rc = (rp->rc + rp->rt + 1) / 2;
	if (rp->rc >= max)
		rp_release(c, rp);
	else
		rp_rescale(rp, t, old);
}

static void rp_catch_up(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp, uint64_t now);

void xp_rp_advance(struct emu_qp *qp, uint64_t now)
{
	struct emu_dcqcn_rp *rp = qp->x->rp;

	if (rp) {
		uint64_t cuts = rp->cuts;

		rp_catch_up(&qp->dev->x->dcqcn, rp, now);
		qp->dev->x->dcqcn_cnt.rate_cuts += rp->cuts - cuts;
	}
}

/* xp_rp_advance: every event due by now, in time order. */
static void rp_catch_up(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp, uint64_t now)
{

	for (unsigned n = 0; rp->active; n++) {
		uint64_t tc = rp->cut_pending ? rp->cut_at : UINT64_MAX;
		uint64_t t = rp->alpha_at;

		if (tc < t)
			t = tc;
		if (rp->inc_at < t)
			t = rp->inc_at;
		if (t > now)
			return;
		if (n == DCQCN_CATCHUP_MAX) {
			rp_release(c, rp);
			return;
		}
		if (t == rp->alpha_at) {
			rp_alpha_tick(c, rp);
		} else if (t == tc) {
			rp_cut(c, rp, t);
		} else {
			rp->inc_at = t + (uint64_t)c->rpg_time_reset * NS_PER_US;
			rp_increase(c, rp, t);
			rp->t_stage++;
		}
	}
}

/* The first CNP (or the first since the rate recovered): into the rate
 * limiter at line rate, alpha at its initial value (this CNP does not
 * raise it again), cut at once. */
static void rp_start(const struct emu_dcqcn_cfg *c, struct emu_dcqcn_rp *rp, uint64_t now)
{
	rp->active = 1;
	rp->recovered = 0;
	rp->rc = rp->rt = rp_max(c);
	rp->alpha = c->initial_alpha_value << DCQCN_ALPHA_FRAC;
	rp->alpha_at = rp->alpha ? now + (uint64_t)c->dce_tcp_rtt * NS_PER_US : UINT64_MAX;
	rp->t_stage = rp->b_stage = 0;
	rp->bytes = 0;
	if (rp->pace_next < now) {
		rp->pace_next = now;
		rp->pace_ps = 0;
	}
	if (c->rate_to_set_on_first_cnp) {
		uint64_t r = (uint64_t)c->rate_to_set_on_first_cnp * 1000;

		rp->rc = rp->rt = r < rp->rc ? r : rp->rc;
		rp->inc_at = now + (uint64_t)c->rpg_time_reset * NS_PER_US;
		rp->cut_at = now + (uint64_t)c->rate_reduce_monitor_period * NS_PER_US;
		rp->cuts++;
	} else {
		rp_cut(c, rp, now);
	}
}

void xp_rp_cnp(struct emu_qp *qp, uint64_t now)
{
	const struct emu_dcqcn_cfg *c = &qp->dev->x->dcqcn;
	struct emu_dcqcn_rp *rp;
	uint64_t cuts;

	if (!c->rp)
		return;
	if (!qp->x->rp) {
		qp->x->rp = calloc(1, sizeof(*qp->x->rp));
		if (!qp->x->rp) {
			EMU_LOG_RL(WARNING, "qp %u: no memory for DCQCN: not rate-limited\n",
				   qp->qpn);
			return;
		}
	}
	rp = qp->x->rp;
	xp_rp_advance(qp, now);
	cuts = rp->cuts;
	if (!rp->active || rp->recovered) {
		rp_start(c, rp, now);
	} else {
		rp->cnp_alpha = 1;
		if (rp->alpha_at == UINT64_MAX)
			rp->alpha_at = now + (uint64_t)c->dce_tcp_rtt * NS_PER_US;
		if (now >= rp->cut_at)
			rp_cut(c, rp, now);
		else
			rp->cut_pending = 1; /* at most one cut per monitor period */
	}
	qp->dev->x->dcqcn_cnt.rate_cuts += rp->cuts - cuts;
}

int xp_rp_pace(struct emu_qp *qp, uint64_t now)
{
	struct emu_dcqcn_rp *rp = qp->x->rp;

	if (rp->pace_next <= now)
		return 0;
	rp->pace_wait = 1;
	rp->paced++;
	return -EBUSY;
}

void xp_rp_turn(struct emu_qp *qp, uint64_t now)
{
	struct emu_dcqcn_rp *rp = qp->x->rp;

	xp_rp_advance(qp, now);
	if (rp->active && rp->pace_next + DCQCN_BURST_NS < now) {
		rp->pace_next = now - DCQCN_BURST_NS;
		rp->pace_ps = 0;
	}
}

void xp_rp_sent(struct emu_qp *qp, uint64_t bytes)
{
	const struct emu_dcqcn_cfg *c = &qp->dev->x->dcqcn;
	struct emu_dcqcn_rp *rp = qp->x->rp;
	uint64_t ps;

	if (!rp || !rp->active)
		return;
	/* the packet's time on a link of rate rc (kb/s), in picoseconds */
	ps = rp->pace_ps + bytes * 8000000000ull / rp->rc;
	rp->pace_next += ps / 1000;
	rp->pace_ps = (uint32_t)(ps % 1000);
	if (!c->rpg_byte_reset || rp->recovered)
		return;
	rp->bytes += bytes;
	if (rp->bytes >= (uint64_t)c->rpg_byte_reset * 64) {
		rp->bytes -= (uint64_t)c->rpg_byte_reset * 64;
		/* the byte event counts from the packet's own slot */
		rp_increase(c, rp, rp->pace_next);
		rp->b_stage++;
	}
}

/* A running QP under new parameters: its timers caught up under the old
 * ones first; then rp=off or a line rate at or below its rate releases it
 * (paced at the new line rate, as a recovered QP), and a recovered QP or a
 * target above the new line rate moves to it. The pacer's wait is
 * rescaled, so a QP held back at the old rate is not stranded. */
static void rp_reconfigure(struct emu_qp *qp, uint64_t now)
{
	const struct emu_dcqcn_cfg *c = &qp->dev->x->dcqcn;
	struct emu_dcqcn_rp *rp = qp->x->rp;
	uint64_t max = rp_max(c), was = rp->rc;

	if (!rp->active)
		return;
	if (!c->rp || rp->recovered || rp->rc >= max)
		rp_release(c, rp);
	else if (rp->rt > max)
		rp->rt = max;
	rp_rescale(rp, now, was);
}

int emu_dcqcn_set(struct emu_dev *d, const char *spec, char *err, size_t errlen)
{
	struct emu_dcqcn_cfg c = d->x->dcqcn;
	uint64_t now = emu_now_ns();
	int rc = emu_dcqcn_parse(&c, spec, err, errlen);

	if (rc)
		return rc;
	for (uint32_t q = 0; q < EMU_QPN_TABLE; q++)
		if (d->qpn[q] && d->qpn[q]->x->rp)
			xp_rp_advance(d->qpn[q], now);
	d->x->dcqcn = c;
	for (uint32_t q = 0; q < EMU_QPN_TABLE; q++)
		if (d->qpn[q] && d->qpn[q]->x->rp)
			rp_reconfigure(d->qpn[q], now);
	return 0;
}

void xp_rp_reset(struct emu_qp *qp)
{
	free(qp->x->rp);
	qp->x->rp = NULL;
}
