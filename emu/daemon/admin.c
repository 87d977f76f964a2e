/* SPDX-License-Identifier: MIT */
/* What uroce-ctl asks of a running daemon beyond the verbs: the device's
 * description, and fault injection, capture and DCQCN's parameters changed
 * at run time. The changes are administrative (root and the daemon's own uid only): they
 * affect every user's traffic. Run on the device's engine thread, as
 * every control request, so no frame is half through a change. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "pcapw.h"

/* Where the ICRC of RoCE frame f sits and what it should be, when the
 * frame carries 0 there: false for anything else. */
static bool emu_capture_icrc(const uint8_t *f, uint32_t len, uint32_t *off, uint32_t *icrc)
{
	struct wire_pkt p;

	if (len < 4 || wire_icrc_get(f + len - 4) ||
	    wire_parse_ex(f, len, WIRE_PARSE_NO_ICRC, &p) != WIRE_OK)
		return false;
	uint32_t l3 = p.vlan ? 18 : 14;
	uint32_t l3len = p.ip.version == 4 ? p.ip.total_len : 40u + p.ip.total_len;
	if (l3len < 4 || l3 + l3len > len || wire_icrc_get(f + l3 + l3len - 4))
		return false;
	*off = l3 + l3len - 4;
	return wire_icrc_calc(f + l3, l3len - 4, icrc);
}

void emu_capture(struct emu_dev *d, const uint8_t *f, uint32_t len, bool tx)
{
	struct emu_daemon *dm = (struct emu_daemon *)((char *)d - offsetof(struct emu_daemon, dev));
	uint64_t ts = pcapw_now_ns();
	uint32_t off, icrc;

	/* on the loopback port every received frame is one we sent: record
	 * the wire once (what was sent), not twice */
	if (!tx && d->loopback)
		return;
	/* between devices of this daemon, a frame built just before the
	 * capture started (or by the peer's engine before it saw it) skipped
	 * its ICRC: the file gets the ICRC it stands for, so a capture is
	 * valid from its first frame. Frames from a real wire are written as
	 * they came. */
	if (dm->icrc_peer && emu_capture_icrc(f, len, &off, &icrc)) {
		uint8_t b[4];
		wire_icrc_put(b, icrc);
		struct iovec iov[3] = { { (void *)f, off }, { b, 4 },
					{ (void *)(f + off + 4), len - off - 4 } };
		pcapw_writev(d->capture_priv, iov, 3, ts);
		return;
	}
	pcapw_write(d->capture_priv, f, len, ts);
}

void emu_icrc_update(struct emu_daemon *dm)
{
	struct emu_daemon *peer = dm->icrc_peer;
	/* at run time the other end of a link:NAME pair changes its capture
	 * or faults from its own engine thread while ours reads our flags:
	 * relaxed atomics; a frame or two of lag only costs an ICRC drop,
	 * which RC retransmits */
	bool cap = __atomic_load_n(&dm->pcap, __ATOMIC_RELAXED) != NULL;
	bool peer_cap = peer && __atomic_load_n(&peer->pcap, __ATOMIC_RELAXED) != NULL;
	bool peer_fault = peer && __atomic_load_n(&peer->dev.fault, __ATOMIC_RELAXED) != NULL;
	bool fault = __atomic_load_n(&dm->dev.fault, __ATOMIC_RELAXED) != NULL;

	__atomic_store_n(&dm->dev.icrc_tx_skip, peer && !cap && !peer_cap && !peer_fault,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dm->dev.icrc_rx_skip, peer && !fault, __ATOMIC_RELAXED);
}

/* after dm's capture or faults changed: both ends of its port */
static void emu_icrc_replan(struct emu_daemon *dm)
{
	emu_icrc_update(dm);
	if (dm->icrc_peer && dm->icrc_peer != dm)
		emu_icrc_update(dm->icrc_peer);
}

bool emu_admin_allowed(const struct emu_ctx *c)
{
	return c->uid == 0 || c->uid == geteuid();
}

void emu_admin_dev_info(struct emu_daemon *dm, struct uroce_dev_info *r)
{
	const struct emu_dev *d = &dm->dev;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", d->name);
	snprintf(r->port, sizeof(r->port), "%.*s", (int)sizeof(r->port) - 1, dm->o.vdev);
	memcpy(r->mac, d->mac, 6);
	r->mtu = dm->o.mtu;
	r->port_state = d->port_state;
	r->active_mtu = d->active_mtu;
	r->max_mtu = d->port_attr.max_mtu;
	r->gid_count = d->gid_count;
	for (uint32_t i = 0; i < d->gid_count && i < UROCE_MAX_GIDS; i++) {
		r->gids[i] = d->gids[i];
		r->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
	}
	r->flags = (d->loopback ? UROCE_DEV_F_LOOPBACK : 0) |
		   (dm->pcap ? UROCE_DEV_F_CAPTURE : 0) | (d->fault ? UROCE_DEV_F_FAULT : 0);
	r->nctx = d->nctx;
	r->nqp = d->nqp;
	r->daemon_pid = (uint32_t)getpid();
	r->daemon_uid = (uint32_t)geteuid();
	r->node_guid = d->node_guid;
}

void emu_admin_fault_get(struct emu_daemon *dm, struct uroce_fault_info *r)
{
	const struct emu_port_counters *c = &dm->dev.cnt;

	memset(r, 0, sizeof(*r));
	r->opcode = UROCE_FAULT_ANY_OPCODE;
	if (dm->dev.fault) {
		const struct emu_fault_cfg *f = emu_fault_cfg(dm->dev.fault);

		r->active = 1;
		r->drop = f->drop;
		r->dup = f->dup;
		r->reorder = f->reorder;
		r->corrupt = f->corrupt;
		r->delay_us = f->delay_us;
		r->seed = f->seed;
		r->qpn = f->qpn;
		r->opcode = f->by_opcode ? f->opcode : UROCE_FAULT_ANY_OPCODE;
	}
	r->n_drop = c->fault_drop;
	r->n_dup = c->fault_dup;
	r->n_reorder = c->fault_reorder;
	r->n_corrupt = c->fault_corrupt;
	r->n_delay = c->fault_delay;
}

int emu_admin_fault_set(struct emu_daemon *dm, const struct uroce_fault_set_req *q,
			struct uroce_fault_info *r)
{
	struct emu_fault_cfg cfg;

	if (!memchr(q->spec, 0, sizeof(q->spec)) || emu_fault_parse(q->spec, &cfg))
		return -EINVAL;
	int rc = emu_dev_fault_set(&dm->dev, &cfg);
	if (rc)
		return rc;
	emu_icrc_replan(dm); /* a corrupted frame must be caught from now on */
	EMU_LOG_RL(NOTICE, "%s: fault injection set: %s\n", dm->o.dev, q->spec);
	emu_admin_fault_get(dm, r);
	return 0;
}

void emu_admin_fault_clear(struct emu_daemon *dm, struct uroce_fault_info *r)
{
	if (dm->dev.fault) {
		emu_dev_fault_clear(&dm->dev);
		emu_icrc_replan(dm);
		EMU_LOG_RL(NOTICE, "%s: fault injection off\n", dm->o.dev);
	}
	emu_admin_fault_get(dm, r);
}

int emu_admin_cc_set(struct emu_daemon *dm, struct emu_ctx *c, const struct uroce_cc_set_req *q,
		     struct uroce_query_cc_rep *r)
{
	char err[96];

	if (!memchr(q->spec, 0, sizeof(q->spec)))
		return -EINVAL;
	if (emu_dcqcn_set(&dm->dev, q->spec, err, sizeof(err))) {
		EMU_LOG_RL(NOTICE, "%s: cc set '%s' refused: %s\n", dm->o.dev, q->spec, err);
		return -EINVAL;
	}
	EMU_LOG_RL(NOTICE, "%s: dcqcn set: %s\n", dm->o.dev, q->spec);
	emu_cc_fill(&dm->dev, c, 0, r);
	return 0;
}

int emu_admin_capture_start(struct emu_daemon *dm, int *fd)
{
	struct stat st;
	int fl;

	if (dm->pcap)
		return -EBUSY;
	if (*fd < 0)
		return -EBADF;
	/* a regular file only: a pipe or socket the client stops reading
	 * would block the engine in write() */
	if (fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	fl = fcntl(*fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	/* every user's payload goes in it: readable by its owner (the
	 * admin who started it) alone, whatever mode it was made with */
	if ((st.st_mode & 077) && fchmod(*fd, st.st_mode & 0600) < 0)
		return -EACCES;
	struct pcapw *w;
	int rc = pcapw_open_fd(&w, *fd, PCAPW_NSEC);
	*fd = -1; /* the writer's now, even on error */
	if (rc)
		return rc;
	dm->dev.capture_priv = w;
	dm->dev.capture = emu_capture;
	__atomic_store_n(&dm->pcap, (void *)w, __ATOMIC_RELAXED);
	emu_icrc_replan(dm); /* the capture wants valid ICRCs */
	EMU_LOG_RL(NOTICE, "%s: capture started\n", dm->o.dev);
	return 0;
}

int emu_admin_capture_stop(struct emu_daemon *dm, struct uroce_capture_rep *r)
{
	struct pcapw *w = dm->pcap;

	if (!w)
		return -ENOENT;
	dm->dev.capture = NULL;
	dm->dev.capture_priv = NULL;
	__atomic_store_n(&dm->pcap, NULL, __ATOMIC_RELAXED);
	emu_icrc_replan(dm);
	memset(r, 0, sizeof(*r));
	r->frames = pcapw_count(w);
	r->error = pcapw_close(w);
	EMU_LOG_RL(NOTICE, "%s: capture stopped: %llu frames%s%s\n", dm->o.dev,
		(unsigned long long)r->frames, r->error ? ", " : "",
		r->error ? strerror(-r->error) : "");
	return 0;
}
