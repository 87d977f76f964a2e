/* SPDX-License-Identifier: MIT */
/* The DPDK ethdev behind a device: EAL start, the embedded loopback port
 * (one rte_ring used as both RX and TX queue of a ring PMD, so every frame
 * sent is received back), a "link:NAME" ring pair joining two devices of
 * this daemon back to back, or any vdev/PCI port given with --port. Each
 * device has its own port, mbuf pool and TX backlog (one worker each). */
#include <dirent.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <net/if.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "daemon.h"
#include "port_xsk.h"
#include "sysfs.h"

#define EMU_BURST 32
#define EMU_RING_SIZE 4096
/* Frames the NIC has not taken yet wait here instead of being dropped
 * (UC cannot recover a lost packet, and RC should not pay a retransmit
 * timeout for our own congestion). Every queued frame holds an mbuf, so
 * a backlog as large as the pool can never overflow. */
#define EMU_TXQ_SIZE 8192u

struct emu_port {
	struct rte_mempool *mp;    /* what we send */
	struct rte_mempool *rx_mp; /* what the NIC fills; mp on ring ports */
	/* small mbufs: the two more segments of a zero-copy frame (the
	 * payload's, whose own room holds its rte_mbuf_ext_shared_info, and
	 * pad + ICRC); NULL: no zero-copy TX on this port */
	struct rte_mempool *sm_mp;
	/* mbufs taken from the pools EMU_BURST at a time: one bulk call
	 * resets their headers together (the misses overlap), and the next
	 * one's data is prefetched while the current frame is built */
	uint16_t nfree, nsm_free;
	struct rte_mbuf *free[EMU_BURST], *sm_free[EMU_BURST];
	struct rte_ring *ring;
	/* frames to our own MAC on a port that would not bring them back:
	 * received from here like the port's own (emu_dpdk_to_self) */
	struct rte_ring *self;
	struct emu_nic *nic;       /* the device's tags, offloads, link (port_nic.c) */
	/* an af_xdp port on our own AF_XDP socket (port_xsk.c): no ethdev */
	struct emu_xsk *xsk;
	bool promisc_set;          /* we set the interface's IFF_PROMISC */
	uint16_t port;
	uint32_t txq_head, txq_tail; /* backlog: [head, tail) */
	struct rte_mbuf *txq[EMU_TXQ_SIZE];
};


static struct rte_mbuf *emu_dpdk_mbuf(struct rte_mempool *mp, struct rte_mbuf **c,
				      uint16_t *n)
{
	if (!*n) {
		if (rte_pktmbuf_alloc_bulk(mp, c, EMU_BURST))
			return rte_pktmbuf_alloc(mp); /* the pool runs low: one */
		*n = EMU_BURST;
	}
	struct rte_mbuf *m = c[--*n];
	if (*n)
		rte_prefetch0(rte_pktmbuf_mtod(c[*n - 1], void *));
	return m;
}

static int emu_dpdk_txbuf(struct emu_txbuf *b, struct rte_mbuf *m)
{
	if (!m)
		return -ENOBUFS;
	b->priv = m;
	b->data = rte_pktmbuf_mtod(m, uint8_t *);
	b->cap = rte_pktmbuf_tailroom(m);
	return 0;
}

static int emu_dpdk_tx_alloc(struct emu_dev *d, struct emu_txbuf *b)
{
	struct emu_port *p = d->port_priv;

	return emu_dpdk_txbuf(b, emu_dpdk_mbuf(p->mp, p->free, &p->nfree));
}

static int emu_dpdk_tx_alloc_small(struct emu_dev *d, struct emu_txbuf *b)
{
	struct emu_port *p = d->port_priv;

	if (!p->sm_mp)
		return -ENOBUFS;
	return emu_dpdk_txbuf(b, emu_dpdk_mbuf(p->sm_mp, p->sm_free, &p->nsm_free));
}

/* READ responses wait for room (emu_tx_room): the pool's free mbufs, an
 * eighth of it kept for what cannot wait (ACKs, NAKs, CNPs, requests). On
 * ring ports the frames queued to the peer (or to ourselves) hold theirs
 * until received, so this is also the receiver's backlog. */
static uint32_t emu_dpdk_tx_room(struct emu_dev *d)
{
	struct emu_port *p = d->port_priv;
	uint32_t keep = p->mp->size / 8;
	uint32_t avail = rte_mempool_avail_count(p->mp) + p->nfree;

	return avail > keep ? avail - keep : 0;
}

static void emu_dpdk_tx_flush(struct emu_dev *d)
{
	struct emu_port *p = d->port_priv;

	while (p->txq_head != p->txq_tail) {
		uint32_t h = p->txq_head & (EMU_TXQ_SIZE - 1);
		uint32_t n = p->txq_tail - p->txq_head;

		if (n > EMU_TXQ_SIZE - h)
			n = EMU_TXQ_SIZE - h; /* up to the wrap */
		if (n > UINT16_MAX)
			n = UINT16_MAX;
		uint16_t done = p->xsk ? (uint16_t)emu_xsk_tx(p->xsk, p->txq + h, n)
				       : rte_eth_tx_burst(p->port, 0, p->txq + h, (uint16_t)n);
		p->txq_head += done;
		if (done < n)
			break; /* NIC full: the rest waits for the next flush */
	}
	d->tx_backlog = p->txq_tail - p->txq_head;
	/* what our AF_XDP socket's TX ring holds unsent keeps the engine
	 * flushing (and kicking) instead of sleeping on it */
	if (p->xsk)
		d->tx_backlog += emu_xsk_tx_poll(p->xsk);
}

static void emu_dpdk_txq_put(struct emu_dev *d, struct emu_port *p, struct rte_mbuf *m);

/* a frame to the device's own MAC (emu_dpdk_to_self): it never reaches
 * the device, so nothing of the device's may be asked for it - no tag to
 * insert, no checksum left to compute, no link to be up */
static inline bool emu_dpdk_self_dst(const struct emu_dev *d, const struct emu_port *p,
				     const struct rte_mbuf *m)
{
	return p->self && !memcmp(rte_pktmbuf_mtod(m, const uint8_t *), d->mac, 6);
}

static void emu_dpdk_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	struct emu_port *p = d->port_priv;
	struct rte_mbuf *m = b->priv;

	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	if (p->nic->tx_any && !emu_dpdk_self_dst(d, p, m) && !emu_nic_tx(p->nic, d, &m)) {
		rte_pktmbuf_free(m); /* counted */
		return;
	}
	emu_dpdk_txq_put(d, p, m);
}

/* A frame to the device's own MAC: a NIC, af_packet or a link ring would
 * carry it away (and a switch not send it back to the port it came from),
 * so it goes to the port's self ring and comes in with the next RX burst,
 * through the same receive path as a frame from the wire: what the
 * kernel's rxe_loopback does with a local frame (rxe_rcv), and what an
 * HCA's internal loopback does. One path for local and remote peers
 * (rdma_cm between two ids of this device included, docs/cm.md). A full
 * ring drops the frame as a congested wire would (counted: tx-nobuf). */
static bool emu_dpdk_to_self(struct emu_dev *d, struct emu_port *p, struct rte_mbuf *m)
{
	if (!emu_dpdk_self_dst(d, p, m))
		return false;
	if (rte_ring_sp_enqueue(p->self, m)) {
		d->cnt.drops[EMU_DROP_TX_NOBUF]++;
		rte_pktmbuf_free(m);
	}
	return true;
}

static void emu_dpdk_txq_put(struct emu_dev *d, struct emu_port *p, struct rte_mbuf *m)
{
	if (emu_dpdk_to_self(d, p, m))
		return;
	p->txq[p->txq_tail++ & (EMU_TXQ_SIZE - 1)] = m;
	d->tx_backlog = p->txq_tail - p->txq_head;
	if (d->tx_backlog >= EMU_BURST)
		emu_dpdk_tx_flush(d);
}

/* the port (or the receiver, on a ring port: possibly the other device
 * of a link:NAME pair, on its own thread) let go of a zero-copy payload */
static void emu_dpdk_zc_free(void *addr, void *opaque)
{
	(void)addr;
	emu_mrmap_put(opaque);
}

static int emu_dpdk_tx_send_ext(struct emu_dev *d, struct emu_txbuf *b, uint32_t hl,
				const uint8_t *ext, uint32_t len, struct emu_mrmap_hold *h,
				const uint8_t *trailer, uint32_t tl)
{
	struct emu_port *p = d->port_priv;
	struct rte_mbuf *m = b->priv, *s[2];

	if (!p->sm_mp || len > UINT16_MAX || tl > EMU_SM_ROOM)
		return -ENOBUFS;
	s[0] = emu_dpdk_mbuf(p->sm_mp, p->sm_free, &p->nsm_free);
	s[1] = s[0] ? emu_dpdk_mbuf(p->sm_mp, p->sm_free, &p->nsm_free) : NULL;
	if (!s[1]) {
		rte_pktmbuf_free(s[0]);
		return -ENOBUFS;
	}
	/* the shared info lives in the payload mbuf's own (unused) room,
	 * so it is freed with it: one reference on the mapping per frame */
	struct rte_mbuf_ext_shared_info *si = rte_pktmbuf_mtod(s[0], void *);
	si->free_cb = emu_dpdk_zc_free;
	si->fcb_opaque = h;
	rte_mbuf_ext_refcnt_set(si, 1);
	emu_mrmap_get(h);
	/* no IOVA: only ring ports, which never DMA, chain these */
	rte_pktmbuf_attach_extbuf(s[0], (void *)(uintptr_t)ext, RTE_BAD_IOVA, (uint16_t)len, si);
	s[0]->data_len = (uint16_t)len;
	memcpy(rte_pktmbuf_mtod(s[1], void *), trailer, tl);
	s[1]->data_len = (uint16_t)tl;
	m->data_len = (uint16_t)hl;
	m->pkt_len = hl + len + tl;
	m->nb_segs = 3;
	m->next = s[0];
	s[0]->next = s[1];
	if (p->nic->tx_any && !emu_dpdk_self_dst(d, p, m) && !emu_nic_tx(p->nic, d, &m)) {
		rte_pktmbuf_free(m); /* counted; the mapping's reference goes with it */
		return 0;
	}
	emu_dpdk_txq_put(d, p, m);
	return 0;
}

static void emu_dpdk_tx_free(struct emu_dev *d, struct emu_txbuf *b)
{
	(void)d;
	rte_pktmbuf_free(b->priv);
}

static const struct emu_port_ops emu_dpdk_ops = {
	.tx_alloc = emu_dpdk_tx_alloc,
	.tx_send = emu_dpdk_tx_send,
	.tx_free = emu_dpdk_tx_free,
	.tx_flush = emu_dpdk_tx_flush,
	.tx_send_ext = emu_dpdk_tx_send_ext,
	.tx_alloc_small = emu_dpdk_tx_alloc_small,
	.tx_room = emu_dpdk_tx_room,
};

/* A zero-copy frame (emu_dpdk_tx_send_ext) delivered from its three
 * segments; the headers are parsed in place, which may read WIRE_HDRS_MAX
 * bytes of the first segment's buffer. */
static bool emu_port_rx_segs(struct emu_dev *d, const struct rte_mbuf *b)
{
	const struct rte_mbuf *s1 = b->next, *s2 = s1 ? s1->next : NULL;

	if (b->nb_segs != 3 || !s2 ||
	    (uint32_t)b->data_len + rte_pktmbuf_tailroom(b) < WIRE_HDRS_MAX)
		return false;
	return emu_port_rx_split(d, rte_pktmbuf_mtod(b, const uint8_t *), b->data_len,
				 rte_pktmbuf_mtod(s1, const uint8_t *), s1->data_len,
				 rte_pktmbuf_mtod(s2, const uint8_t *), s2->data_len);
}

/* Any other multi-segment frame, or one a capture or faults want whole:
 * copied into one buffer first, the engine thread's own (struct
 * emu_worker: a thread abandoned while the kernel still copies from it, a
 * blocked access, must not see the next thread reuse it). A segment may be
 * a client's mapping that the client shrank: the copy turns that SIGBUS
 * into a dropped frame. */
static void emu_port_rx_lin(struct emu_dev *d, uint8_t *lin, const struct rte_mbuf *b)
{
	uint32_t off = 0;

	if (b->pkt_len > EMU_RX_LIN_MAX)
		return;
	for (const struct rte_mbuf *s = b; s; s = s->next) {
		if (s->data_len > EMU_RX_LIN_MAX - off ||
		    emu_mrmap_copy(lin + off, rte_pktmbuf_mtod(s, const void *), s->data_len))
			return;
		off += s->data_len;
	}
	d->cnt.rx_lin++;
	emu_port_rx_frame(d, lin, off);
	emu_mem_flush(d); /* lin is reused by the next frame */
}

/* One received mbuf to the device. */
static inline void emu_port_rx_mbuf(struct emu_daemon *dm, struct emu_port *p,
				    struct rte_mbuf *b, bool self)
{
	dm->dev.rx_self = self;
	/* another VLAN's frame (dropped, counted), or its tag and the
	 * device's checksum verdict taken; the self ring's never left
	 * the daemon (untagged, checksummed: emu_dpdk_self_dst) */
	if (p->nic->rx_any && !self && !emu_nic_rx(p->nic, &dm->dev, b))
		return;
	if (b->nb_segs == 1)
		emu_port_rx_frame(&dm->dev, rte_pktmbuf_mtod(b, const uint8_t *), b->data_len);
	else if (!emu_port_rx_segs(&dm->dev, b))
		emu_port_rx_lin(&dm->dev, dm->worker->rx_lin, b);
	dm->dev.rx_l3_csum_ok = false;
}

/* A frame of our AF_XDP socket, read in place in the UMEM; one that the
 * port's tag or checksum work needs as an mbuf (--vlan) is copied into
 * one of the RX pool first (*cp, freed after the burst). */
static inline void emu_port_rx_umem(struct emu_daemon *dm, struct emu_port *p,
				    const uint8_t *f, uint32_t len, struct rte_mbuf **cp)
{
	*cp = NULL;
	if (!len || len > dm->o.mbuf_room - RTE_PKTMBUF_HEADROOM) {
		dm->link.xsk_rx_bad++;
		return;
	}
	dm->dev.rx_self = false;
	if (!p->nic->rx_any) {
		emu_port_rx_frame(&dm->dev, f, len);
		return;
	}
	struct rte_mbuf *b = rte_pktmbuf_alloc(p->rx_mp);
	if (!b) {
		dm->link.xsk_rx_nombuf++;
		return;
	}
	memcpy(rte_pktmbuf_mtod(b, void *), f, len);
	b->data_len = (uint16_t)len;
	b->pkt_len = len;
	*cp = b;
	emu_port_rx_mbuf(dm, p, b, false);
}

/* RX on our own AF_XDP socket: the self ring's frames first, as below,
 * then up to a burst read in place; the UMEM frames go back to the fill
 * ring once the burst's payloads are written (emu_rx_burst_end). */
static unsigned emu_port_rx_xsk(struct emu_daemon *dm, struct emu_port *p)
{
	struct rte_mbuf *m[EMU_BURST], *cp[EMU_BURST];
	const uint8_t *f[EMU_BURST];
	uint32_t len[EMU_BURST];
	unsigned nself = rte_ring_sc_dequeue_burst(p->self, (void **)m, EMU_BURST / 2, NULL);
	unsigned nx = emu_xsk_rx(p->xsk, f, len, EMU_BURST - nself);
	unsigned n = nself + nx;

	if (n == EMU_BURST || !rte_ring_empty(p->self))
		dm->dev.rx_more++;
	else
		dm->dev.rx_more = 0;
	if (!n)
		return 0;
	if (!dm->dev.fault)
		emu_rx_burst_begin(&dm->dev, &dm->worker->burst);
	for (unsigned i = 0; i < nself; i++)
		emu_port_rx_mbuf(dm, p, m[i], true);
	for (unsigned i = 0; i < nx; i++) {
		if (i + 1 < nx)
			rte_prefetch0(f[i + 1]);
		emu_port_rx_umem(dm, p, f[i], len[i], &cp[i]);
	}
	dm->dev.rx_self = false;
	emu_rx_burst_end(&dm->dev); /* before the frames holding the payloads go */
	rte_pktmbuf_free_bulk(m, nself);
	for (unsigned i = 0; i < nx; i++)
		rte_pktmbuf_free(cp[i]);
	emu_xsk_rx_done(p->xsk, nx);
	return n;
}

unsigned emu_port_rx(struct emu_daemon *dm)
{
	struct emu_port *p = dm->port;
	if (p->xsk)
		return emu_port_rx_xsk(dm, p);
	struct rte_mbuf *m[EMU_BURST];
	/* our own frames first, up to half a burst: the port cannot starve them */
	uint16_t nself = p->self ? (uint16_t)rte_ring_sc_dequeue_burst(p->self, (void **)m,
								      EMU_BURST / 2, NULL) : 0;
	uint16_t n = nself;

	n += rte_eth_rx_burst(p->port, 0, m + n, (uint16_t)(EMU_BURST - n));
	/* a full burst or a self ring not yet empty: more frames wait, and
	 * after a long descheduling the ACKs a timer waits for are among
	 * them (emu_xport_poll holds expired timers meanwhile) */
	if (n == EMU_BURST || (p->self && !rte_ring_empty(p->self)))
		dm->dev.rx_more++;
	else
		dm->dev.rx_more = 0;
	if (!n)
		return 0;
	/* payloads of the burst go to application memory in one system
	 * call per process; the fault layer keeps frames in buffers of its
	 * own that it reuses, so it gets immediate writes */
	struct emu_worker *w = dm->worker;
	if (!dm->dev.fault)
		emu_rx_burst_begin(&dm->dev, &w->burst);
	/* the burst's mbuf headers (both lines: nb_segs, next) come in
	 * together, and each zero-copy frame's second segment one frame
	 * ahead, instead of one dependent miss after another */
	for (uint16_t i = 0; i < n; i++) {
		rte_prefetch0(m[i]);
		rte_prefetch0(&m[i]->next);
	}
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n && m[i + 1]->next) {
			rte_prefetch0(m[i + 1]->next);
			rte_prefetch0(&m[i + 1]->next->next);
		}
		emu_port_rx_mbuf(dm, p, m[i], i < nself); /* the self ring's come first */
	}
	dm->dev.rx_self = false;
	emu_rx_burst_end(&dm->dev); /* before the mbufs holding the payloads go */
	rte_pktmbuf_free_bulk(m, n);
	return n;
}

/* EAL keeps a runtime directory per file prefix (ours: "uroce<pid>")
 * under $RUNTIME_DIRECTORY/dpdk, which we point at our own run
 * directory (checked ours, not a symlink, not writable by others:
 * emu_run_dir_prepare), never at a directory others share (/tmp/dpdk,
 * where another user could swap entries under a removal); DPDK never
 * removes it. We remove ours on a clean exit and, at start, those of our
 * daemons that died without one. */
static char emu_eal_rundir[PATH_MAX];

/* "uroce<digits>" with the pid of no live process, and not ours */
static bool emu_eal_dir_stale(const char *name)
{
	if (strncmp(name, "uroce", 5) || !name[5])
		return false;
	char *end;
	errno = 0;
	unsigned long v = strtoul(name + 5, &end, 10);
	if (*end || errno || name[5] < '1' || name[5] > '9' || v > INT_MAX)
		return false;
	pid_t pid = (pid_t)v;
	return pid != getpid() && kill(pid, 0) < 0 && errno == ESRCH;
}

/* stale directories in own's parent: only directories of ours, removed
 * through the parent's descriptor (emu_rm_at) */
static void emu_eal_clean_stale(const char *own)
{
	char base[PATH_MAX];
	const char *slash = strrchr(own, '/');
	struct stat st;

	if (!slash || (size_t)(slash - own) >= sizeof(base))
		return;
	memcpy(base, own, (size_t)(slash - own));
	base[slash - own] = 0;
	int bfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return;
	DIR *dir = fstat(bfd, &st) == 0 && st.st_uid == geteuid() ? fdopendir(bfd) : NULL;
	if (!dir) {
		close(bfd);
		return;
	}
	for (struct dirent *e; (e = readdir(dir)) != NULL;) {
		if (!emu_eal_dir_stale(e->d_name) ||
		    fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    st.st_uid != geteuid() || (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)))
			continue;
		EMU_LOG(INFO, "removing stale DPDK runtime directory %s/%s\n", base, e->d_name);
		emu_rm_at(dirfd(dir), e->d_name); /* a symlink: the link alone */
	}
	closedir(dir);
}

int emu_eal_init(int argc, char **argv, const char *run_dir)
{
	/* EAL's runtime directory under our run directory (DPDK reads
	 * RUNTIME_DIRECTORY, systemd's, at init only: restored after) */
	const char *prev = getenv("RUNTIME_DIRECTORY");
	char *saved = prev ? strdup(prev) : NULL;
	setenv("RUNTIME_DIRECTORY", run_dir, 1);
	int rc = rte_eal_init(argc, argv);
	if (saved)
		setenv("RUNTIME_DIRECTORY", saved, 1);
	else
		unsetenv("RUNTIME_DIRECTORY");
	free(saved);
	if (rc < 0) {
		fprintf(stderr, "uroced: EAL init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	const char *rd = rte_eal_get_runtime_dir();
	if (rd && strlen(rd) < sizeof(emu_eal_rundir) && strstr(rd, "/uroce")) {
		strcpy(emu_eal_rundir, rd);
		emu_eal_clean_stale(emu_eal_rundir);
	}
	return 0;
}

void emu_eal_fini(void)
{
	rte_eal_cleanup();
	if (emu_eal_rundir[0])
		emu_rm_tree(emu_eal_rundir);
	emu_eal_rundir[0] = 0;
}

void emu_port_thread_init(void)
{
	/* an lcore id gives the thread its mempool cache; without one DPDK
	 * still works, only slower */
	if (rte_lcore_id() == LCORE_ID_ANY)
		(void)rte_thread_register();
}

/* The ethdev EAL created for a --port: vdev name (up to the first comma)
 * or PCI address, as given or in the 0000: domain form. */
static int emu_port_find(const char *spec, uint16_t *port)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	size_t n = strcspn(spec, ",");

	if (n >= sizeof(name))
		return -1;
	memcpy(name, spec, n);
	name[n] = 0;
	if (rte_eth_dev_get_port_by_name(name, port) == 0)
		return 0;
	char full[RTE_ETH_NAME_MAX_LEN + 8];
	snprintf(full, sizeof(full), "0000:%s", name);
	return rte_eth_dev_get_port_by_name(full, port) == 0 ? 0 : -1;
}

/* link:NAME: rings "<NAME>.0" and "<NAME>.1"; the first device of the pair
 * receives on .0 and sends on .1, the second the other way round. */
static int emu_port_link(struct emu_daemon *dm, struct emu_port *p)
{
	const char *ln = dm->o.vdev + 5;
	char rn[2][RTE_RING_NAMESIZE], pn[RTE_ETH_NAME_MAX_LEN];
	struct rte_ring *r[2];
	bool first = !dm->link_second;

	for (int k = 0; k < 2; k++) {
		snprintf(rn[k], sizeof(rn[k]), "ul%.20s.%d", ln, k);
		r[k] = first ? rte_ring_create(rn[k], EMU_RING_SIZE, (int)rte_socket_id(),
					       RING_F_SP_ENQ | RING_F_SC_DEQ)
			     : rte_ring_lookup(rn[k]);
		if (!r[k]) {
			fprintf(stderr, "uroced: %s: ring %s: %s\n", dm->o.dev, rn[k],
				rte_strerror(rte_errno));
			return -1;
		}
	}
	struct rte_ring *rx = first ? r[0] : r[1], *tx = first ? r[1] : r[0];
	snprintf(pn, sizeof(pn), "uroce_link%u", dm->index);
	int rc = rte_eth_from_rings(pn, &rx, 1, &tx, 1, (unsigned)rte_socket_id());
	if (rc < 0) {
		fprintf(stderr, "uroced: %s: ring port: %s\n", dm->o.dev, rte_strerror(rte_errno));
		return -1;
	}
	p->port = (uint16_t)rc;
	return 0;
}

/* One RX and one TX queue with the descriptor count the MTU asked for
 * (within what the port allows), the port's MTU set, then started. A real
 * port that refuses the MTU is a port that cannot be used: its frames
 * would be dropped by the NIC or the kernel. 0, or -1 after one line. */
static int emu_port_setup(struct emu_daemon *dm, struct emu_port *p, bool real)
{
	struct rte_eth_conf conf;
	uint16_t nrx = (uint16_t)dm->o.nb_desc, ntx = (uint16_t)dm->o.nb_desc;
	int sock = rte_eth_dev_socket_id(p->port);
	const char *what = "configure";

	memset(&conf, 0, sizeof(conf));
	if (emu_nic_conf(dm, p->port, &conf))
		return -1;
	int rc = rte_eth_dev_configure(p->port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port, &nrx, &ntx);
	if (rc == 0) {
		what = "rx queue";
		rc = rte_eth_rx_queue_setup(p->port, 0, nrx, (unsigned)sock, NULL, p->rx_mp);
	}
	if (rc == 0) {
		what = "tx queue";
		rc = rte_eth_tx_queue_setup(p->port, 0, ntx, (unsigned)sock, NULL);
	}
	if (rc == 0 && real) {
		what = "mtu";
		rc = rte_eth_dev_set_mtu(p->port, (uint16_t)dm->o.mtu);
		/* af_packet's own limit is its ring slot, which port_param.c
		 * sized; DPDK still checks a 1518-byte maximum frame first.
		 * A PMD without an MTU (pcap, null) carries any frame. */
		if ((rc == -EINVAL && !strncmp(dm->o.vdev + 4, "af_packet", 9)) || rc == -ENOTSUP)
			rc = 0;
	}
	if (rc == 0) {
		what = "start";
		rc = rte_eth_dev_start(p->port);
	}
	if (rc < 0) {
		fprintf(stderr, "uroced: %s: port %u %s (mtu %u): %s\n", dm->o.dev, p->port, what,
			dm->o.mtu, rte_strerror(-rc));
		return -1;
	}
	EMU_LOG(NOTICE, "%s: port %u: mtu %u, mbuf data room %u, rx/tx descriptors %u/%u%s%s\n",
		dm->o.dev, p->port, dm->o.mtu, dm->o.mbuf_room, nrx, ntx,
		dm->o.port_info[0] ? ", " : "", dm->o.port_info);
	emu_nic_started(dm);
	return 0;
}

/* the interface's flags (SIOCGIFFLAGS) changed by set/clear: 0 or -errno */
static int emu_if_flags(const char *ifname, short set, short clear, short *before)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		rc = -errno;
	if (rc == 0 && before)
		*before = ifr.ifr_flags;
	if (rc == 0 && (set || clear)) {
		ifr.ifr_flags = (short)((ifr.ifr_flags | set) & ~clear);
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

/* An af_xdp port on our own AF_XDP socket (port_xsk.c), no ethdev: the
 * socket, UMEM and XDP program, the interface's MAC, and promiscuous mode
 * when uroce answers to a MAC not the interface's (--mac without
 * --shared; cleared again at exit, as the PMD never did). */
static int emu_port_xsk_open(struct emu_daemon *dm, struct emu_port *p)
{
	struct emu_xsk_cfg c = {
		.queue = 0,
		.rx_frames = dm->o.xsk_rx_frames,
		.tx_frames = dm->o.xsk_tx_frames,
		.frame_size = dm->o.xsk_frame,
		.steer_all = !dm->o.shared,
		.tx_long = &dm->link.xsk_tx_long,
	};
	const char *v = emu_vdev_arg(dm->o.vdev, "iface");
	size_t k = v ? strcspn(v, ",") : 0;
	char prog[PATH_MAX];

	if (!k || k >= sizeof(c.ifname)) {
		fprintf(stderr, "uroced: %s: af_xdp: iface= missing or too long\n", dm->o.dev);
		return -1;
	}
	memcpy(c.ifname, v, k);
	v = emu_vdev_arg(dm->o.vdev, "start_queue");
	c.queue = v ? (uint32_t)strtoul(v, NULL, 10) : 0; /* checked by port_param.c */
	v = emu_vdev_arg(dm->o.vdev, "force_copy");
	c.force_copy = v && *v == '1';
	v = emu_vdev_arg(dm->o.vdev, "xdp_prog");
	k = v ? strcspn(v, ",") : 0;
	if (k && k < sizeof(prog)) {
		memcpy(prog, v, k);
		prog[k] = 0;
		c.steer_all = false; /* the user's program steers */
	} else if (emu_xdp_prog_path(&dm->o, prog, sizeof(prog))) {
		return -1;
	}
	c.prog = prog;
	p->xsk = emu_xsk_open(dm->o.dev, &c);
	if (!p->xsk)
		return -1;
	p->port = UINT16_MAX;
	dm->link.xsk = true;
	if (!dm->o.mac_set) {
		struct ifreq ifr;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, c.ifname, strlen(c.ifname));
		if (fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
			memcpy(dm->o.mac, ifr.ifr_hwaddr.sa_data, 6);
		if (fd >= 0)
			close(fd);
	} else if (!dm->o.shared) {
		short fl = 0;
		if (emu_if_flags(c.ifname, 0, 0, &fl) == 0 && !(fl & IFF_PROMISC) &&
		    emu_if_flags(c.ifname, IFF_PROMISC, 0, NULL) == 0)
			p->promisc_set = true;
	}
	EMU_LOG(NOTICE, "%s: af_xdp on %s queue %u through uroced's own socket: %s\n",
		dm->o.dev, c.ifname, c.queue, dm->o.port_info);
	emu_nic_xsk(dm, c.ifname, emu_xsk_max_mtu(c.frame_size));
	return 0;
}

int emu_port_xsk_fd(const struct emu_daemon *dm)
{
	return dm->port && dm->port->xsk ? emu_xsk_fd(dm->port->xsk) : -1;
}

/* The per-thread cache of a pool: 256, less for a small pool (--mbufs),
 * whose objects a cache would hide (DPDK wants it below n / 1.5). */
static unsigned emu_pool_cache(const struct emu_daemon *dm)
{
	unsigned c = dm->o.nb_mbuf / 4;

	return c < 256 ? c : 256;
}

int emu_port_init(struct emu_daemon *dm)
{
	struct emu_port *p = rte_zmalloc("uroce_port", sizeof(*p), 0);
	char name[RTE_MEMPOOL_NAMESIZE];
	int rc;

	if (!p) {
		fprintf(stderr, "uroced: %s: out of memory\n", dm->o.dev);
		return -1;
	}
	dm->port = p;
	p->nic = &dm->nic;
	dm->nic_ops = &emu_nic_ops;
	/* A real port receives into a pool of its own: a requester that
	 * queues a window of frames for a slow link holds every mbuf of its
	 * pool, and the ACKs that would free them must still be received
	 * (af_xdp's fill ring, af_packet's copies). On ring ports the frames
	 * received are the frames sent, so one pool. */
	bool ring = dm->o.vdev[0] == 0 || !strncmp(dm->o.vdev, "link:", 5);
	snprintf(name, sizeof(name), "uroce_mb%u", dm->index);
	p->mp = rte_pktmbuf_pool_create(name, dm->o.nb_mbuf, emu_pool_cache(dm), 0,
					(uint16_t)(ring ? dm->o.mbuf_room : dm->o.tx_mbuf_room),
					(int)rte_socket_id());
	p->rx_mp = p->mp;
	if (p->mp && !ring) {
		snprintf(name, sizeof(name), "uroce_rx%u", dm->index);
		p->rx_mp = rte_pktmbuf_pool_create(name, dm->o.nb_mbuf, emu_pool_cache(dm), 0,
						   (uint16_t)dm->o.mbuf_room, (int)rte_socket_id());
	}
	if (!p->mp || !p->rx_mp) {
		fprintf(stderr, "uroced: %s: mbuf pool: %s (more memory: --eal \"-m N\")\n",
			dm->o.dev, rte_strerror(rte_errno));
		return -1;
	}
	/* Zero-copy TX only on ring ports: a real port computes the ICRC
	 * over the payload anyway (as costly as the copy), its PMD would read
	 * a client's mapping outside our SIGBUS guard, and a NIC would need
	 * the mapping registered for DMA */
	if (ring && !dm->o.no_zc) {
		snprintf(name, sizeof(name), "uroce_sm%u", dm->index);
		p->sm_mp = rte_pktmbuf_pool_create(name, dm->o.nb_mbuf, emu_pool_cache(dm), 0,
						   (uint16_t)(RTE_PKTMBUF_HEADROOM + EMU_SM_ROOM),
						   (int)rte_socket_id());
		if (!p->sm_mp)
			EMU_LOG(NOTICE, "%s: no small mbufs (%s): payloads are copied\n",
				dm->o.dev, rte_strerror(rte_errno));
	}
	bool loop = dm->o.vdev[0] == 0;
	if (loop) {
		snprintf(name, sizeof(name), "uroce_loop%u", dm->index);
		p->ring = rte_ring_create(name, EMU_RING_SIZE, (int)rte_socket_id(),
					  RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!p->ring) {
			fprintf(stderr, "uroced: %s: ring: %s\n", dm->o.dev, rte_strerror(rte_errno));
			return -1;
		}
		rc = rte_eth_from_ring(p->ring);
		if (rc < 0) {
			fprintf(stderr, "uroced: %s: ring port: %s\n", dm->o.dev,
				rte_strerror(rte_errno));
			return -1;
		}
		p->port = (uint16_t)rc;
	} else if (!strncmp(dm->o.vdev, "link:", 5)) {
		if (emu_port_link(dm, p))
			return -1;
	} else if (dm->o.xsk) {
		if (emu_port_xsk_open(dm, p))
			return -1;
	} else if (emu_port_find(dm->o.vdev, &p->port)) {
		if (emu_is_pci(dm->o.vdev))
			emu_pci_no_port(&dm->o); /* checked bound before EAL: no PMD */
		else
			fprintf(stderr, "uroced: %s: no usable port for '%s' (see the EAL messages "
				"above)\n", dm->o.dev, dm->o.vdev);
		return -1;
	}
	if (!p->xsk && emu_port_setup(dm, p, !loop && strncmp(dm->o.vdev, "link:", 5)))
		return -1;
	if (!loop) {
		/* room for every frame the pools can hold (each holds an mbuf
		 * of mp, or a small one of sm_mp): the enqueue never fails, so
		 * a frame to ourselves waits for mbufs as one to the wire does
		 * and is never lost here - a UD datagram has no retransmit
		 * (issue 22: a 4096 ring lost 3633 of 8192 datagrams) */
		unsigned nself = dm->o.nb_mbuf * (p->sm_mp ? 2u : 1u) + 1;
		snprintf(name, sizeof(name), "uroce_self%u", dm->index);
		p->self = rte_ring_create(name, rte_align32pow2(nself), (int)rte_socket_id(),
					  RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!p->self) {
			fprintf(stderr, "uroced: %s: ring: %s\n", dm->o.dev, rte_strerror(rte_errno));
			return -1;
		}
	}
	dm->port_up = true;
	dm->port_id = p->port;
	if (!loop && !p->xsk) {
		(void)rte_eth_promiscuous_enable(p->port);
		/* the port's own MAC, unless it has none (ring ports): then
		 * our default 02:00:00:00:00:<device number> */
		if (!dm->o.mac_set) {
			struct rte_ether_addr a;
			if (rte_eth_macaddr_get(p->port, &a) == 0 && !rte_is_zero_ether_addr(&a))
				memcpy(dm->o.mac, a.addr_bytes, 6);
		}
	}
	return 0;
}

/* Called after emu_dev_init: attach the port to the device. */
void emu_port_attach(struct emu_daemon *dm)
{
	dm->dev.ops = &emu_dpdk_ops;
	dm->dev.port_priv = dm->port;
	dm->dev.loopback = dm->o.vdev[0] == 0;
	dm->dev.tx_zc = dm->port->sm_mp != NULL;
}

void emu_port_fini(struct emu_daemon *dm)
{
	struct emu_port *p = dm->port;

	if (dm->port_up) {
		dm->dev.port_priv = p;
		emu_dpdk_tx_flush(&dm->dev);
		while (p->txq_head != p->txq_tail)
			rte_pktmbuf_free(p->txq[p->txq_head++ & (EMU_TXQ_SIZE - 1)]);
		rte_pktmbuf_free_bulk(p->free, p->nfree);
		rte_pktmbuf_free_bulk(p->sm_free, p->nsm_free);
		for (void *f; p->self && rte_ring_sc_dequeue(p->self, &f) == 0;)
			rte_pktmbuf_free(f);
		p->nfree = p->nsm_free = 0;
		/* frames sent to us and never received may hold client
		 * mappings (zero-copy): let them go */
		struct rte_mbuf *m[EMU_BURST];
		uint16_t n;
		for (unsigned k = 0; p->sm_mp && k <= EMU_RING_SIZE / EMU_BURST &&
				     (n = rte_eth_rx_burst(dm->port_id, 0, m, EMU_BURST)) > 0; k++)
			rte_pktmbuf_free_bulk(m, n);
		if (!p->xsk) {
			rte_eth_dev_stop(dm->port_id);
			rte_eth_dev_close(dm->port_id);
		}
		dm->port_up = false;
	}
	if (p && p->xsk) {
		if (p->promisc_set)
			(void)emu_if_flags(dm->nic.ifname, 0, IFF_PROMISC, NULL);
		emu_xsk_close(p->xsk); /* the program detached, the UMEM gone */
		p->xsk = NULL;
	}
}
