/* SPDX-License-Identifier: MIT */
/* The uroced executable: options, control server, engine loop and the
 * DPDK port. Internal header (not part of emu_core). */
#ifndef EMU_DAEMON_H
#define EMU_DAEMON_H

#include <limits.h>
#include <net/if.h>
#include <signal.h>

#include "access.h"
#include "xport.h"

#define EMU_MAX_DEVS 8
#define EMU_NB_MBUF 8191 /* mbufs per pool of a device, by default (--mbufs) */
#define EMU_MIN_MBUF 16   /* fewer: not even one RX burst (tests use 16..64) */
/* Ring ports' small mbufs (port_dpdk.c): data room past the headroom, and
 * how many: two per zero-copy frame and one per small frame; when they run
 * out, payloads are copied and small frames take full mbufs; as many as
 * the other pools (--mbufs) */
#define EMU_SM_ROOM 256u

/* Options of one device (global ones are copied into every device's). */
struct emu_opts {
	char dev[UROCE_DEV_NAME_MAX];
	int cpu;                  /* pin the worker thread, -1 = no */
	char run_dir[PATH_MAX];
	char vdev[512];           /* --port/--vdev, "" = ring loopback, "link:NAME" ring pair */
	char eal[1024];           /* --eal passthrough */
	char pcap[PATH_MAX];
	char log_level[32];
	uint8_t mac[6];
	bool mac_set;
	bool shared;              /* --shared: af_xdp next to the kernel (shared.c) */
	char iface[IF_NAMESIZE];  /* the shared interface */
	uint32_t mtu;
	union ibv_gid ips[UROCE_MAX_GIDS - 1];
	uint32_t nips;
	bool busy_poll;
	bool no_zc;               /* --no-zc: no zero-copy TX (port_dpdk.c) */
	bool xdp_dpdk;            /* --xdp-driver dpdk: af_xdp through DPDK's PMD */
	/* derived (port_param.c): an af_xdp port driven by our own socket
	 * (port_xsk.c), its UMEM frame size and RX frames */
	bool xsk;
	uint32_t xsk_frame, xsk_rx_frames, xsk_tx_frames;
	bool fault_set;
	struct emu_fault_cfg fault;
	uint32_t spin_us;         /* empty-loop time before sleeping */
	uint32_t ack_hold_us;     /* --ack-hold-us (resp.c, resp_ack_hold) */
	uint32_t nb_mbuf;         /* mbufs per pool (--mbufs) */
	struct emu_access acc;    /* who may connect (access.c) */
	uint32_t mem_stall_ms;    /* an access to application memory blocked this
				   * long: quarantine its client (0 = never) */
	/* derived from the MTU by emu_port_param (port_param.c) */
	uint32_t mbuf_room;       /* RX mbuf data room, headroom included */
	uint32_t tx_mbuf_room;    /* TX mbufs' (real ports have two pools) */
	uint32_t nb_desc;         /* RX and TX descriptors asked of the port */
	uint32_t pool_mb;         /* EAL memory the mbuf pool needs */
	char port_info[96];       /* the derived ring geometry, for the log */
	uint16_t vlan_tci;        /* --vlan VID[:PCP]: PCP << 13 | VID (port_nic.c) */
	bool vlan;
	struct emu_dcqcn_cfg dcqcn; /* --dcqcn / dcqcn= (docs/dcqcn.md) */
};

struct emu_port;

/* The Ethernet device behind a device's port, as uroce drives it
 * (port_nic.c, docs/running.md "PCI NICs"): what DPDK says it offers,
 * what was asked of it, its link as last seen, and uroce's counters of it.
 * The engine thread owns it and alone touches the device: no LSC
 * interrupt is configured, the link is read every EMU_NIC_POLL_NS. */
struct emu_nic_counters {
	uint64_t link_down, link_up;     /* transitions seen */
	uint64_t tx_ip_csum;             /* frames whose IPv4 checksum the device computes */
	uint64_t rx_ip_csum_good, rx_ip_csum_bad; /* the device's verdicts */
	uint64_t vlan_tx_hw, vlan_tx_sw; /* tags inserted by the device / by us */
	uint64_t vlan_rx_hw, vlan_rx_sw; /* tags stripped by the device / by us */
	uint64_t tx_prepare_err;         /* frames rte_eth_tx_prepare refused (dropped) */
};
struct emu_nic {
	uint16_t port;
	bool real;                /* a device with a link of its own (not a ring port) */
	bool xsk;                 /* no ethdev: uroced's AF_XDP socket on ifname */
	char ifname[IF_NAMESIZE];
	bool pci;                 /* a PCI device (--port 0000:03:00.0) */
	char driver[32], device[64];
	uint16_t max_rxq, max_txq;
	uint32_t min_mtu, max_mtu;
	uint64_t rx_capa, tx_capa, rx_used, tx_used; /* RTE_ETH_{RX,TX}_OFFLOAD_* */
	bool lsc_offered;         /* the PMD could raise LSC interrupts (unused) */
	uint64_t next_link_poll_ns;
	bool link_up, full_duplex;
	uint32_t speed_mbps;
	/* per frame (port_dpdk.c asks only when one of these is set) */
	bool tx_any, rx_any;
	bool vlan, vlan_insert_hw, tx_ip_csum, rx_ip_csum, tx_prepare;
	uint16_t vlan_tci;
	struct emu_nic_counters cnt;
};

#define EMU_WAKE_MAX 8     /* RX sockets of one port watched */
#define EMU_WAKE_SCAN 1024 /* descriptors looked at */

/* epoll registrations carry one of these */
enum emu_ep_kind { EMU_EP_LISTEN, EMU_EP_SOCK, EMU_EP_WAKE, EMU_EP_SIGNAL,
		  EMU_EP_PORT /* a port's RX socket: the wake-up is all (port_wake.c) */ };
struct emu_ep {
	enum emu_ep_kind kind;
	void *p;
};

/* What an engine thread owns (main.c emu_engine_start): the guard of its
 * accesses to application memory (attached to its device, d->guard), the
 * RX burst it works through (emu_rx_burst_begin) and the buffer it
 * linearises multi-segment frames in (port_dpdk.c). An abandoned thread's
 * is never freed: it looks at its guard when its blocked call returns, and
 * the kernel may still be copying from its buffer; the thread that takes
 * the device over adopts the burst it left (emu_engine_adopt). */
#define EMU_RX_LIN_MAX 16384
struct emu_worker {
	struct emu_mem_guard guard;
	struct emu_burst burst;
	uint8_t rx_lin[EMU_RX_LIN_MAX];
};

/* One device with its port, control socket and engine loop: one worker
 * thread each (the only one when there is a single device), sharing no
 * mutable state with the others. */
struct emu_client;
struct emu_daemon {
	struct emu_opts o;
	struct emu_dev dev;
	unsigned index;
	int epfd;
	int listen_fd;
	char sock_path[PATH_MAX];
	struct emu_ep ep_listen;
	volatile sig_atomic_t stop;
	volatile sig_atomic_t dump;
	uint16_t port_id;
	bool port_up;
	struct emu_port *port;    /* port_dpdk.c */
	struct emu_nic nic;       /* port_nic.c */
	const struct emu_nic_ops *nic_ops;
	int pci_lock_fd;          /* pci_check.c: held while we drive the device, -1 = none */
	bool link_second;         /* link:NAME already opened by an earlier device */
	/* the device that receives what this one sends when that never
	 * leaves the daemon: itself (loopback ring), the other end of
	 * link:NAME, else NULL (main.c emu_icrc_plan) */
	struct emu_daemon *icrc_peer;
	void *pcap;
	uint64_t refused_log_ms;  /* last "refused" log line (rate limit) */
	uint64_t refused_unlogged;
	struct emu_worker *worker; /* the engine thread's (main.c watchdog) */
	struct emu_mem_guard *adopt; /* set: the new engine takes over from it */
	uint64_t accept_resume_ns; /* accept paused on EMFILE & co until then; 0 = not */
	/* control server (ctl.c): clients closed in the current epoll batch,
	 * freed after it (a later event of the batch may still name them);
	 * the request being read from a socket (one extra byte detects an
	 * oversized message) or copied out of a mailbox */
	struct emu_client *dead_clients;
	uint8_t ctl_buf[UROCE_MAX_MSG + 1];
	uint8_t ctl_mbox_buf[UROCE_MBOX_MAX];
	struct {                  /* port_wake.c */
		struct emu_ep ep;
		int fds[EMU_WAKE_MAX]; /* the port's RX sockets in epfd */
		unsigned nfds;     /* 0: RX polled while asleep */
		int domain;        /* theirs: AF_PACKET or AF_XDP */
	} wake;
	struct {                  /* port_drops.c */
		/* PACKET_STATISTICS clears the kernel's counts at every read:
		 * what was read so far */
		uint64_t pkt_drops;
		/* an af_xdp port on our own socket (port_dpdk.c, port_xsk.c):
		 * what it counted that the kernel does not, by the engine */
		bool xsk;
		uint64_t xsk_rx_nombuf, xsk_rx_bad, xsk_tx_long;
	} link;
};

extern struct emu_daemon *emu_ds[EMU_MAX_DEVS];
extern unsigned emu_nds;

/* ctl.c */
int emu_ctl_open(struct emu_daemon *dm);
void emu_ctl_close(struct emu_daemon *dm);
/* The request c's engine was executing when it was abandoned gets its
 * reply now (status), so the client does not wait for its timeout. */
void emu_ctl_abandoned(struct emu_ctx *c, int status);
/* one epoll event: the number of control requests it answered */
unsigned emu_ctl_event(struct emu_daemon *dm, struct emu_ep *ep, uint32_t events);
/* requests in the contexts' control mailboxes (abi.h): is one waiting,
 * and serve them (the number served) */
bool emu_ctl_mbox_ready(struct emu_daemon *dm);
unsigned emu_ctl_mbox_poll(struct emu_daemon *dm);
/* free clients closed during the last epoll batch */
void emu_ctl_reap(struct emu_daemon *dm);
/* set/clear need_wakeup in every context's doorbell page */
void emu_ctl_need_wakeup(struct emu_daemon *dm, uint32_t v);
/* true if some context has a doorbell or a mailbox request pending */
bool emu_ctl_db_pending(struct emu_daemon *dm);
/* mark every ring of every context dead (shutdown) */
void emu_ctl_mark_dead(struct emu_daemon *dm);

/* port_param.c: the port parameters from o->mtu (af_packet ring, mbuf
 * room, descriptors, pool memory) before EAL starts; 0, or -1 after one
 * line when the port type cannot carry that MTU */
int emu_port_param(struct emu_opts *o);
/* the value of ",key=" in a port's arguments (up to the next ','), or NULL */
const char *emu_vdev_arg(const char *vdev, const char *key);

/* shared.c: --shared. opts: the interface's MTU and addresses into o,
 * the XDP program into its port arguments (0, or -1 after one line);
 * attach/detach: the kernel's neighbour table for the device */
int emu_shared_opts(struct emu_opts *o);
/* the XDP object uroce_xdp.o: next to uroced, else installed (0, or -1
 * after one line) */
int emu_xdp_prog_path(const struct emu_opts *o, char *out, size_t sz);
int emu_shared_attach(struct emu_daemon *dm);
void emu_shared_detach(struct emu_daemon *dm);

/* port_wake.c: after epfd exists, put an af_packet port's RX sockets into
 * it: how many (0: the engine polls RX while it sleeps) */
int emu_port_wake_arm(struct emu_daemon *dm);

/* port_drops.c: what the port lost where the daemon cannot see it (the
 * PMD's and the kernel socket's misses, the interface's drops), as named
 * values for UROCE_OP_QUERY_DROPS: how many were written (at most max) */
#define EMU_LINK_DROPS_MAX 16
unsigned emu_port_link_drops(struct emu_daemon *dm, struct emu_named *v, unsigned max);
/* the same into the log (SIGUSR1), the non-zero ones */
void emu_port_link_drops_log(struct emu_daemon *dm);

/* port_dpdk.c */
/* EAL started with its runtime directory in run_dir/dpdk (our checked
 * run directory) */
int emu_eal_init(int argc, char **argv, const char *run_dir);
void emu_eal_fini(void);
/* the device's port (after emu_eal_init): 0, or -1 after one error line */
int emu_port_init(struct emu_daemon *dm);
unsigned emu_port_rx(struct emu_daemon *dm);
void emu_port_fini(struct emu_daemon *dm);
void emu_port_attach(struct emu_daemon *dm);
/* an af_xdp port on uroced's own socket (port_xsk.c): its descriptor,
 * else -1 */
int emu_port_xsk_fd(const struct emu_daemon *dm);
/* a worker thread becomes a DPDK thread (mempool cache) */
void emu_port_thread_init(void);

/* port_nic.c: the device behind the port (link, offloads, queues, MTU,
 * statistics). Before rte_eth_dev_configure: what to ask of the device,
 * into conf (0, or -1 after one line when it cannot carry the MTU); after
 * rte_eth_dev_start: link events on, the link awaited a few seconds and
 * the bring-up logged */
struct rte_eth_conf;
struct rte_mbuf;
int emu_nic_conf(struct emu_daemon *dm, uint16_t port, struct rte_eth_conf *conf);
void emu_nic_started(struct emu_daemon *dm);
/* the same for an af_xdp port on our own socket: no ethdev, the
 * interface's link (IFF_RUNNING) and MTU range up to max_mtu */
void emu_nic_xsk(struct emu_daemon *dm, const char *ifname, uint32_t max_mtu);
/* after emu_dev_init: the port state from the link */
void emu_nic_attach(struct emu_daemon *dm);
void emu_nic_fini(struct emu_daemon *dm);
/* the engine's: the device's link read (every 100 ms) and a change applied */
void emu_nic_poll(struct emu_daemon *dm, uint64_t now_ns);
/* per frame (n->tx_any / n->rx_any): the tag, the checksum offload, the
 * link; false = dropped (counted; the caller frees it). TX may replace *m. */
bool emu_nic_tx(struct emu_nic *n, struct emu_dev *d, struct rte_mbuf **m);
bool emu_nic_rx(struct emu_nic *n, struct emu_dev *d, struct rte_mbuf *m);
/* UROCE_OP_QUERY_NIC and UROCE_OP_SET_MTU (0 or -errno, nothing changed
 * on an error), reached through dm->nic_ops (set with the port; NULL: the
 * control server runs without one, tests/fuzz) */
struct emu_nic_ops {
	void (*query)(struct emu_daemon *dm, uint32_t first, struct uroce_query_nic_rep *r);
	int (*set_mtu)(struct emu_daemon *dm, uint32_t mtu);
};
extern const struct emu_nic_ops emu_nic_ops;

/* pci_check.c: before EAL starts, every PCI port: the device exists, is
 * bound to a driver DPDK can use, its IOMMU group is usable and free, no
 * other uroced drives it (a lock held until exit: dm->pci_lock_fd), and
 * the hugepages it needs are there. 0, or -1 after one line naming what
 * to do. hugepages: EAL will run on hugepages, mb: the memory it needs. */
bool emu_is_pci(const char *port);
int emu_pci_check(const struct emu_opts *o, bool hugepages, unsigned mb, int *lock_fd);
/* after EAL: one line saying why no ethdev came of the PCI device */
void emu_pci_no_port(const struct emu_opts *o);

/* main.c */

/* admin.c: what uroce-ctl asks beyond the verbs (docs/running.md) */
/* the capture hook: frames to dm->pcap (d->capture_priv) */
void emu_capture(struct emu_dev *d, const uint8_t *f, uint32_t len, bool tx);
/* Whether dm may skip ICRC work (docs/performance.md), from its own and
 * its icrc_peer's capture and fault injection: at start, and again for
 * both ends whenever either changes. */
void emu_icrc_update(struct emu_daemon *dm);
/* fault injection and capture: root and the daemon's own uid only */
bool emu_admin_allowed(const struct emu_ctx *c);
void emu_admin_dev_info(struct emu_daemon *dm, struct uroce_dev_info *r);
void emu_admin_fault_get(struct emu_daemon *dm, struct uroce_fault_info *r);
int emu_admin_fault_set(struct emu_daemon *dm, const struct uroce_fault_set_req *q,
			struct uroce_fault_info *r);
void emu_admin_fault_clear(struct emu_daemon *dm, struct uroce_fault_info *r);
/* DCQCN's parameters at run time (--dcqcn syntax): r is QUERY_CC's first
 * page as c sees it */
int emu_admin_cc_set(struct emu_daemon *dm, struct emu_ctx *c, const struct uroce_cc_set_req *q,
		     struct uroce_query_cc_rep *r);
/* *fd: the client's file, taken (set to -1) on success */
int emu_admin_capture_start(struct emu_daemon *dm, int *fd);
int emu_admin_capture_stop(struct emu_daemon *dm, struct uroce_capture_rep *r);

/* engine.c */
int emu_engine_run(struct emu_daemon *dm);
/* A fresh engine thread takes the device over from the abandoned one whose
 * guard is dm->adopt: the CQEs of other clients its burst held go out
 * (emu_rx_burst_adopt), the client whose memory blocked is quarantined
 * (emu_xport_quarantine). */
void emu_engine_adopt(struct emu_daemon *dm);
void emu_stats_dump(struct emu_dev *d);

#endif
