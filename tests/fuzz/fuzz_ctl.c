/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control protocol: the daemon's own control code
 * (emu/daemon/ctl.c: accept, read, dispatch, reply, close) runs in-process on a
 * device with no DPDK port, driven through its real unix SEQPACKET socket by
 * a hostile client: messages of every op and every length (exact, runt,
 * oversized, wrong len field, unknown op), with descriptors of every type
 * attached (memfd sealed / unsealed / empty / odd size, pipe ends, a full
 * pipe, eventfd, sockets, /dev/null, a directory, a regular file,
 * /proc/self/mem), and bodies built from the input around the handles and
 * QPNs earlier replies returned, so one input reaches create -> modify ->
 * destroy chains. The engine (timers, flushes, CQ events on the channels'
 * pipes) runs between messages on a virtual clock.
 *
 * Properties (a violation traps, so libFuzzer keeps the input):
 *   - no crash, no out-of-bounds access, no undefined behaviour, no leak
 *     (ASan/UBSan/LSan in the clang build);
 *   - every message gets exactly one well-formed reply: op and seq echoed,
 *     status 0 or a negative errno, on success the reply size and
 *     descriptor count of the op, on error an empty body (HELLO of another
 *     ABI version: the daemon's version) and no descriptor (HELLO takes the client's /proc/self/mem, CAPTURE_START a regular
 *     file, MAP_MR a mapping's file; any other descriptor passed must be
 *     refused, which the reply shows, and closed, which the descriptor
 *     count at the end shows);
 *   - after the client closes its socket the context is gone: no context,
 *     QP or memory key left on the device, and the process has exactly the
 *     descriptors it had before the input (nothing leaked by the daemon).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <arpa/inet.h>
#include <rdma/rdma_user_cm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_log.h>

#include "daemon.h"
#include "ibcm.h"
#include "ucma.h"
#include "emu_int.h"
#include "fz_in.h"
#include "../include/t_sendfds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_MSGS 48
#define FZ_MAX_HANDLES 64
#define FZ_MAX_FDS_OUT 6  /* more than the daemon takes (4); <= T_SENDFDS_MAX */

static void fz_cleanup_dir(void);

/* A failed property removes the run directory first: the trap skips exit. */
#define fz_assert(c) do { if (!(c)) { \
	fprintf(stderr, "fuzz_ctl: property failed: %s (line %d)\n", #c, __LINE__); \
	fz_cleanup_dir(); \
	__builtin_trap(); } } while (0)

static void fz_bytes(struct fz_in *in, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)p)[i] = fz_u8(in);
}

/* Request body sizes and reply shapes (status 0) per op, as the ABI says. */
static const struct { uint16_t req, rep; uint8_t fds_out; } fz_shape[UROCE_OP_MAX] = {
	/* fds out: doorbell memfd, wake pipe write end, async pipe read end */
	[UROCE_OP_HELLO] = { sizeof(struct uroce_hello_req), sizeof(struct uroce_hello_rep), 3 },
	[UROCE_OP_QUERY_PORT] = { sizeof(struct uroce_query_port_req),
				  sizeof(struct uroce_query_port_rep), 0 },
	[UROCE_OP_ALLOC_PD] = { 0, sizeof(struct uroce_handle_msg), 0 },
	[UROCE_OP_DEALLOC_PD] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_REG_MR] = { sizeof(struct uroce_reg_mr_req), sizeof(struct uroce_reg_mr_rep), 0 },
	[UROCE_OP_REREG_MR] = { sizeof(struct uroce_rereg_mr_req),
				sizeof(struct uroce_reg_mr_rep), 0 },
	[UROCE_OP_DEREG_MR] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_ALLOC_MW] = { sizeof(struct uroce_alloc_mw_req),
				sizeof(struct uroce_alloc_mw_rep), 0 },
	[UROCE_OP_DEALLOC_MW] = { sizeof(struct uroce_handle_msg), 0, 0 },
	/* fds out: the read end of the channel's pipe */
	[UROCE_OP_CREATE_COMP_CHANNEL] = { 0, sizeof(struct uroce_handle_msg), 1 },
	[UROCE_OP_DESTROY_COMP_CHANNEL] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_CREATE_CQ] = { sizeof(struct uroce_create_cq_req),
				 sizeof(struct uroce_create_cq_rep), 1 },
	[UROCE_OP_RESIZE_CQ] = { sizeof(struct uroce_resize_cq_req),
				 sizeof(struct uroce_create_cq_rep), 1 },
	[UROCE_OP_DESTROY_CQ] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_CREATE_SRQ] = { sizeof(struct uroce_create_srq_req),
				  sizeof(struct uroce_create_srq_rep), 1 },
	[UROCE_OP_MODIFY_SRQ] = { sizeof(struct uroce_modify_srq_req), 0, 0 }, /* see fz_reply */
	[UROCE_OP_QUERY_SRQ] = { sizeof(struct uroce_handle_msg), sizeof(struct ibv_srq_attr), 0 },
	[UROCE_OP_DESTROY_SRQ] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_CREATE_QP] = { sizeof(struct uroce_create_qp_req),
				 sizeof(struct uroce_create_qp_rep), 1 },
	[UROCE_OP_MODIFY_QP] = { sizeof(struct uroce_modify_qp_req), 0, 0 },
	[UROCE_OP_QUERY_QP] = { sizeof(struct uroce_query_qp_req),
				sizeof(struct uroce_query_qp_rep), 0 },
	[UROCE_OP_DESTROY_QP] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_CREATE_AH] = { sizeof(struct uroce_create_ah_req),
				 sizeof(struct uroce_handle_msg), 0 },
	[UROCE_OP_DESTROY_AH] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_ATTACH_MCAST] = { sizeof(struct uroce_mcast_req), 0, 0 },
	[UROCE_OP_DETACH_MCAST] = { sizeof(struct uroce_mcast_req), 0, 0 },
	[UROCE_OP_UCMA_OPEN] = { 0, sizeof(struct uroce_ucma_open_rep), 1 },
	/* an rdma_ucm command's reply is as long as the command's output: see fz_reply */
	[UROCE_OP_UCMA_CMD] = { sizeof(struct uroce_ucma_cmd_req), 0, 0 },
	[UROCE_OP_UCMA_CLOSE] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_QUERY_CM_STATS] = { 0, sizeof(struct uroce_cm_stats_rep), 0 },
	[UROCE_OP_QUERY_CC] = { sizeof(struct uroce_query_stats_req),
				sizeof(struct uroce_query_cc_rep), 0 },
	[UROCE_OP_QUERY_STATS] = { sizeof(struct uroce_query_stats_req),
				   sizeof(struct uroce_query_stats_rep), 0 },
	/* uroce-ctl's (the harness's uid is the daemon's: admin ops allowed) */
	[UROCE_OP_DEV_INFO] = { 0, sizeof(struct uroce_dev_info), 0 },
	[UROCE_OP_QUERY_QPS] = { sizeof(struct uroce_query_qps_req),
				 sizeof(struct uroce_query_qps_rep), 0 },
	[UROCE_OP_FAULT_GET] = { 0, sizeof(struct uroce_fault_info), 0 },
	[UROCE_OP_FAULT_SET] = { sizeof(struct uroce_fault_set_req),
				 sizeof(struct uroce_fault_info), 0 },
	[UROCE_OP_FAULT_CLEAR] = { 0, sizeof(struct uroce_fault_info), 0 },
	[UROCE_OP_CAPTURE_START] = { 0, 0, 0 },
	[UROCE_OP_CAPTURE_STOP] = { 0, sizeof(struct uroce_capture_rep), 0 },
	/* without the descriptor it needs (the fuzzer sends none): refused */
	[UROCE_OP_MAP_MR] = { sizeof(struct uroce_map_mr_req), 0, 0 },
	/* a ring number of the fuzzer's own descriptors: refused unless it
	 * is an io_uring of the process bound at HELLO (pin.c) */
	[UROCE_OP_MEM_CHANNEL] = { sizeof(struct uroce_mem_chan_req), 0, 0 },
	[UROCE_OP_QUERY_MRS] = { sizeof(struct uroce_query_mrs_req),
				 sizeof(struct uroce_query_mrs_rep), 0 },
	[UROCE_OP_IMPORT] = { sizeof(struct uroce_import_req), sizeof(struct uroce_import_rep), 0 },
	[UROCE_OP_ALLOC_DM] = { sizeof(struct uroce_alloc_dm_req),
				sizeof(struct uroce_alloc_dm_rep), 1 },
	[UROCE_OP_FREE_DM] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_REG_DM_MR] = { sizeof(struct uroce_reg_dm_mr_req),
				 sizeof(struct uroce_reg_mr_rep), 0 },
	/* XRC: a domain's file is any descriptor kind fz_make_fd makes, or none */
	[UROCE_OP_OPEN_XRCD] = { sizeof(struct uroce_open_xrcd_req),
				 sizeof(struct uroce_open_xrcd_rep), 0 },
	[UROCE_OP_CLOSE_XRCD] = { sizeof(struct uroce_handle_msg), 0, 0 },
	[UROCE_OP_CREATE_XSRQ] = { sizeof(struct uroce_create_xsrq_req),
				   sizeof(struct uroce_create_xsrq_rep), 1 },
	[UROCE_OP_CREATE_XTGT] = { sizeof(struct uroce_xrc_qp_req),
				   sizeof(struct uroce_xrc_qp_rep), 0 },
	[UROCE_OP_OPEN_QP] = { sizeof(struct uroce_xrc_qp_req), sizeof(struct uroce_xrc_qp_rep), 0 },
	[UROCE_OP_CC_SET] = { sizeof(struct uroce_cc_set_req), sizeof(struct uroce_query_cc_rep), 0 },
	[UROCE_OP_ADVISE_MR] = { sizeof(struct uroce_advise_mr_req),
				 sizeof(struct uroce_advise_mr_rep), 0 },
	/* fds out: the chunk's memfd when the reply says it is new (fz_reply) */
	[UROCE_OP_CREATE_QP_ARENA] = { sizeof(struct uroce_create_qp_req),
				       sizeof(struct uroce_create_qp_arena_rep), 0 },
	[UROCE_OP_QUERY_LIMITS] = { sizeof(struct uroce_query_limits_req),
				    sizeof(struct uroce_query_limits_rep), 0 },
	[UROCE_OP_QUERY_DROPS] = { sizeof(struct uroce_query_drops_req),
				   sizeof(struct uroce_query_drops_rep), 0 },
};

/* The simulated port is a loopback port: what the device sends comes
 * back through its receive path at the next fz_pump (at most FZ_LOOP
 * frames a round, the rest dropped as by a congested wire), so rdma_cm
 * commands run the IB CM engine's exchange as they do in the daemon. */
#define FZ_LOOP 16
static struct { uint32_t len; uint8_t f[2048]; } fz_loop[FZ_LOOP];
static unsigned fz_nloop;

static int fz_tx_alloc(struct emu_dev *d, struct emu_txbuf *b)
{
	(void)d;
	b->data = malloc(2048);
	b->cap = 2048;
	b->priv = NULL;
	return b->data ? 0 : -ENOBUFS;
}

static void fz_tx_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t len)
{
	(void)d;
	if (fz_nloop < FZ_LOOP && len <= sizeof(fz_loop[0].f)) {
		memcpy(fz_loop[fz_nloop].f, b->data, len);
		fz_loop[fz_nloop++].len = len;
	}
	free(b->data);
}

static void fz_tx_free(struct emu_dev *d, struct emu_txbuf *b)
{
	(void)d;
	free(b->data);
}

static void fz_tx_flush(struct emu_dev *d)
{
	(void)d;
}

/* the frames sent since the last round, received (they may send more) */
static void fz_loop_deliver(struct emu_dev *d)
{
	static struct { uint32_t len; uint8_t f[2048]; } in[FZ_LOOP];
	unsigned n = fz_nloop;

	memcpy(in, fz_loop, sizeof(in[0]) * n);
	fz_nloop = 0;
	for (unsigned i = 0; i < n; i++)
		emu_port_rx_frame(d, in[i].f, in[i].len);
}

static const struct emu_port_ops fz_ops = {
	.tx_alloc = fz_tx_alloc, .tx_send = fz_tx_send,
	.tx_free = fz_tx_free, .tx_flush = fz_tx_flush,
};

static uint64_t fz_now;
static bool fz_trace; /* FUZZ_CTL_TRACE=1: print every reply */

static uint64_t fz_clock(void)
{
	return fz_now;
}

/* Application memory the client registers (plausible addresses). */
static uint8_t fz_mem[64 * 1024] __attribute__((aligned(4096)));
static char fz_dir[64];

struct fz {
	struct emu_daemon *dm;
	int cl;                         /* client socket */
	int peer_mem;                   /* the helper's /proc/self/mem: HELLO's */
	uint32_t h[FZ_MAX_HANDLES];     /* handles (and QPNs) replies returned */
	unsigned nh;
	uint32_t lk[16];                /* lkeys REG_MR returned (ADVISE_MR) */
	unsigned nlk;
	int keep[64];                   /* read ends of pipes we passed, etc. */
	unsigned nkeep;
	uint32_t seq;
};

static int fz_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	fz_assert(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Objects of the device a context can leave behind: memory keys (MRs and
 * windows) and multicast memberships; QPs are d->nqp. */
static uint32_t fz_dev_objs(const struct emu_dev *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->nkeys; i++)
		n += d->keys[i].type != EMU_OBJ_NONE;
	for (uint32_t i = 0; d->mcast && i < EMU_MAX_MCAST_GRP; i++)
		n += d->mcast[i].nqp != 0;
	return n;
}

static void fz_keep(struct fz *f, int fd)
{
	if (fd < 0)
		return;
	if (f->nkeep < sizeof(f->keep) / sizeof(f->keep[0]))
		f->keep[f->nkeep++] = fd;
	else
		close(fd);
}

/* Let the daemon handle whatever its sockets have (as engine.c's loop
 * does), then run its engine for a millisecond of virtual time. */
static void fz_pump(struct fz *f)
{
	struct epoll_event ev[16];
	int n;

	for (int round = 0; round < 8; round++) {
		n = epoll_wait(f->dm->epfd, ev, 16, 0);
		if (n < 0 && errno == EINTR) {
			round--;
			continue;
		}
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			emu_ctl_event(f->dm, ev[i].data.ptr, ev[i].events);
		emu_ctl_reap(f->dm);
	}
	fz_now += 1000000;
	for (struct emu_ctx *c = f->dm->dev.ctxs; c; c = c->next)
		emu_ctx_doorbells(c);
	fz_loop_deliver(&f->dm->dev);
	emu_xport_poll(&f->dm->dev, fz_now);
	emu_port_poll(&f->dm->dev, fz_now);
	emu_ucma_poll(&f->dm->dev, fz_now);
}

/* The client is another process, as a real one is: a helper child (one
 * per input) that connects on request and hands the socket back. SO_PEERCRED then names the
 * helper, and the daemon reaches "application memory" in the helper (a
 * copy of ours made at fork: fz_mem is at the same address there) through
 * its ordinary cross-process path, never through the in-process shortcut
 * tests use. */
static int fz_helper = -1;

/* The client has no CAP_NET_RAW (a fuzzer running as root would give it
 * the capability): its controlled Q_Keys and sends to QP0 / QP1 take the
 * daemon's refusals (EPERM, error completions). */
static void fz_drop_net_raw(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return;
	d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
	d[CAP_NET_RAW / 32].permitted &= ~(1u << (CAP_NET_RAW % 32));
	(void)syscall(SYS_capset, &h, d);
}

static void fz_helper_main(int s)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fz_drop_net_raw();
	for (;;) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		union {
			struct cmsghdr c;
			uint8_t b[CMSG_SPACE(sizeof(int) * 2)];
		} cb;
		ssize_t n = recv(s, path, sizeof(path) - 1, 0);
		int c, fds[2];

		if (n <= 0)
			_exit(0);
		path[n] = 0;
		memcpy(sa.sun_path, path, (size_t)n + 1);
		c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(1);
		struct iovec iov = { path, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		/* with the socket, the descriptor HELLO needs: this process's
		 * own /proc/self/mem (the peer the daemon sees is us) */
		fds[0] = c;
		fds[1] = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		if (fds[1] < 0)
			_exit(1);
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
			_exit(1);
		/* our copy must be gone before the fuzzer goes on, or its
		 * close would not be the end of the connection */
		close(c);
		close(fds[1]);
		if (send(s, "k", 1, MSG_NOSIGNAL) != 1)
			_exit(1);
	}
}

static int fz_connect(struct fz *f)
{
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * 2)];
	} cb;
	int fds[2];
	char x;
	struct iovec iov = { &x, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	struct cmsghdr *cm;
	size_t l = strlen(f->dm->sock_path);

	fz_assert(l < sizeof(((struct sockaddr_un *)0)->sun_path));
	ssize_t n;

	while ((n = send(fz_helper, f->dm->sock_path, l, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	fz_assert(n == (ssize_t)l);
	while ((n = recvmsg(fz_helper, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	fz_assert(n == 1);
	cm = CMSG_FIRSTHDR(&mh);
	fz_assert(cm && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(fds)));
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	f->cl = fds[0];
	f->peer_mem = fds[1];
	while ((n = recv(fz_helper, &x, 1, 0)) < 0 && errno == EINTR)
		;
	fz_assert(n == 1 && x == 'k');
	fz_pump(f);
	return 0;
}

/* One descriptor of a kind the input picks; the caller sends then closes it. */
static int fz_make_fd(struct fz *f, uint8_t kind)
{
	int p[2], fd = -1;

	switch (kind % 16) {
	case 0: /* sealed memfd, a page */
	case 1: /* unsealed memfd, odd size */
	case 2: /* empty memfd */
		fd = memfd_create("fz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, kind % 16 == 0 ? 4096 : kind % 16 == 1 ? 4097 : 0))
			break;
		if (fd >= 0 && kind % 16 == 0)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		break;
	case 3: /* pipe read end */
		if (pipe2(p, O_CLOEXEC) == 0) {
			fz_keep(f, p[1]);
			fd = p[0];
		}
		break;
	case 4: /* pipe write end (we keep reading end open, unread) */
		if (pipe2(p, O_CLOEXEC) == 0) {
			fz_keep(f, p[0]);
			fd = p[1];
		}
		break;
	case 5: /* pipe write end of a full pipe */
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
			static const uint8_t junk[4096];

			fcntl(p[1], F_SETPIPE_SZ, 4096);
			while (write(p[1], junk, sizeof(junk)) > 0)
				;
			fz_keep(f, p[0]);
			fd = p[1];
		}
		break;
	case 6: /* pipe write end whose reader is gone */
		if (pipe2(p, O_CLOEXEC) == 0) {
			close(p[0]);
			fd = p[1];
		}
		break;
	case 7:
		fd = eventfd(0, EFD_CLOEXEC);
		break;
	case 8: /* a socket */
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, p) == 0) {
			fz_keep(f, p[1]);
			fd = p[0];
		}
		break;
	case 9:
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		break;
	case 10:
		fd = open(fz_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		break;
	case 11: /* a regular file */
		fd = open(fz_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		break;
	case 12: /* the client's own /proc/self/mem: what HELLO wants */
		fd = fcntl(f->peer_mem, F_DUPFD_CLOEXEC, 0);
		break;
	case 13: /* another process's /proc/self/mem (ours): refused */
		fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		break;
	case 14: /* another process's /proc/self/maps (ours) as HELLO's second: refused */
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		break;
	default: /* a stream socket */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) == 0) {
			fz_keep(f, p[1]);
			fd = p[0];
		}
		break;
	}
	return fd;
}

static uint32_t fz_handle(struct fz *f, struct fz_in *in)
{
	uint8_t b = fz_u8(in);

	if (b >= 0xf0 || !f->nh)
		return b >= 0xf8 ? fz_u32(in) : b & 7;
	return f->h[b % f->nh];
}

static uint32_t fz_access(struct fz_in *in)
{
	uint8_t b = fz_u8(in);

	return b & 0x80 ? fz_u32(in) : b & 0x7f; /* LOCAL_WRITE .. ON_DEMAND */
}

static void fz_gid(struct fz *f, struct fz_in *in, union ibv_gid *g)
{
	uint8_t b = fz_u8(in);

	if (b % 4 == 0)
		fz_bytes(in, g->raw, sizeof(g->raw));
	else if (b % 4 == 1) { /* IPv4 multicast / IPv6 multicast */
		memset(g, 0, sizeof(*g));
		g->raw[0] = 0xff;
		g->raw[1] = 0x0e;
		g->raw[15] = fz_u8(in);
	} else {
		*g = f->dm->dev.gids[b % f->dm->dev.gid_count];
	}
}

/* A body for op, built from the input around plausible values; returns
 * its size (the exact size the op wants). */
/* 127.0.0.1 or ::1 (the fuzz device's loopback addresses) and a port */
static void fz_sockaddr(struct fz_in *in, struct sockaddr_in6 *a, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	if (fz_u8(in) & 1) {
		a->sin6_family = AF_INET6;
		a->sin6_addr.s6_addr[15] = 1;
		a->sin6_port = htons(port);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)a;
		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(0x7f000001);
		s->sin_port = htons(port);
	}
}

/* An rdma_ucm command (UROCE_OP_UCMA_CMD) as librdmacm writes one, on a
 * file an earlier UCMA_OPEN made, naming ids 0..7 (the device numbers
 * them from 0) and ports 7000..7003 on the loopback addresses: enough
 * structure to get past the commands' checks into the IB CM engine
 * (listen, connect, accept, reject, disconnect, notify: MADs through the
 * looped port, timers on the virtual clock) and its limits. The raw
 * patches of fz_body do the rest. Returns the body's length. */
static size_t fz_ucma(struct fz *f, struct fz_in *in, uint8_t *b)
{
	static const uint32_t cmds[] = {
		RDMA_USER_CM_CMD_CREATE_ID, RDMA_USER_CM_CMD_BIND_IP, RDMA_USER_CM_CMD_RESOLVE_IP,
		RDMA_USER_CM_CMD_RESOLVE_ROUTE, RDMA_USER_CM_CMD_LISTEN, RDMA_USER_CM_CMD_CONNECT,
		RDMA_USER_CM_CMD_ACCEPT, RDMA_USER_CM_CMD_REJECT, RDMA_USER_CM_CMD_DISCONNECT,
		RDMA_USER_CM_CMD_GET_EVENT, RDMA_USER_CM_CMD_DESTROY_ID,
		RDMA_USER_CM_CMD_INIT_QP_ATTR, RDMA_USER_CM_CMD_NOTIFY,
		RDMA_USER_CM_CMD_JOIN_IP_MCAST, RDMA_USER_CM_CMD_QUERY_ROUTE,
	};
	struct uroce_ucma_cmd_req *h = (void *)b;
	union {
		struct rdma_ucm_create_id create;
		struct rdma_ucm_bind_ip bind;
		struct rdma_ucm_resolve_ip resolve;
		struct rdma_ucm_resolve_route route;
		struct rdma_ucm_listen listen;
		struct rdma_ucm_connect connect;
		struct rdma_ucm_accept accept;
		struct rdma_ucm_reject reject;
		struct rdma_ucm_join_ip_mcast join;
		struct rdma_ucm_init_qp_attr qp_attr;
		struct rdma_ucm_notify notify;
		struct rdma_ucm_disconnect disconnect;
		struct rdma_ucm_query query;
		struct rdma_ucm_destroy_id destroy;
	} q;

	h->file = fz_handle(f, in);
	h->cmd = cmds[fz_u8(in) % (sizeof(cmds) / sizeof(cmds[0]))];
	h->out = UROCE_UCMA_MAX_OUT;
	uint32_t id = fz_u8(in) % 8;
	uint16_t port = (uint16_t)(7000 + fz_u8(in) % 4);
	memset(&q, 0, sizeof(q));
	switch (h->cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		q.create.uid = id + 1;
		q.create.ps = fz_u8(in) & 1 ? RDMA_PS_UDP : RDMA_PS_TCP;
		q.create.qp_type = IBV_QPT_RC;
		h->in = sizeof(q.create);
		break;
	case RDMA_USER_CM_CMD_BIND_IP:
		q.bind.id = id;
		fz_sockaddr(in, &q.bind.addr, port);
		h->in = sizeof(q.bind);
		break;
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		q.resolve.id = id;
		q.resolve.timeout_ms = 1000;
		fz_sockaddr(in, &q.resolve.dst_addr, port);
		h->in = sizeof(q.resolve);
		break;
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		q.join.id = id;
		q.join.uid = 9;
		fz_sockaddr(in, &q.join.addr, 0);
		((struct sockaddr_in *)&q.join.addr)->sin_addr.s_addr = htonl(0xe0000101);
		h->in = sizeof(q.join);
		break;
	case RDMA_USER_CM_CMD_LISTEN:
		q.listen.id = id;
		q.listen.backlog = fz_u8(in);
		h->in = sizeof(q.listen);
		break;
	case RDMA_USER_CM_CMD_CONNECT:
	case RDMA_USER_CM_CMD_ACCEPT:
		/* same layout up to the conn_param and ece (id first) */
		q.connect.id = id;
		q.connect.conn_param.valid = fz_u8(in) & 1;
		q.connect.conn_param.qp_num = 0x100 + fz_u8(in);
		q.connect.conn_param.responder_resources = fz_u8(in) % 8;
		q.connect.conn_param.initiator_depth = fz_u8(in) % 8;
		q.connect.conn_param.retry_count = fz_u8(in);
		q.connect.conn_param.rnr_retry_count = fz_u8(in);
		q.connect.conn_param.private_data_len = fz_u8(in) % 64;
		if (h->cmd == RDMA_USER_CM_CMD_ACCEPT) {
			struct rdma_ucm_conn_param cp = q.connect.conn_param;
			memset(&q, 0, sizeof(q));
			q.accept.id = id;
			q.accept.uid = id + 0x10;
			q.accept.conn_param = cp;
			h->in = sizeof(q.accept);
		} else {
			h->in = sizeof(q.connect);
		}
		break;
	case RDMA_USER_CM_CMD_REJECT:
		q.reject.id = id;
		q.reject.reason = fz_u8(in) & 1 ? 28 : 35;
		h->in = sizeof(q.reject);
		break;
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		q.qp_attr.id = id;
		q.qp_attr.qp_state = fz_u8(in) % 5;
		h->in = sizeof(q.qp_attr);
		break;
	case RDMA_USER_CM_CMD_NOTIFY:
		q.notify.id = id;
		q.notify.event = IBV_EVENT_COMM_EST;
		h->in = sizeof(q.notify);
		break;
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		q.route.id = id;
		q.route.timeout_ms = 1000;
		h->in = sizeof(q.route);
		break;
	case RDMA_USER_CM_CMD_DISCONNECT:
		q.disconnect.id = id;
		h->in = sizeof(q.disconnect);
		break;
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		q.query.id = id;
		h->in = sizeof(q.query);
		break;
	case RDMA_USER_CM_CMD_DESTROY_ID:
		q.destroy.id = id;
		h->in = sizeof(q.destroy);
		break;
	default: /* GET_EVENT */
		h->in = sizeof(struct rdma_ucm_get_event);
		break;
	}
	memcpy(b + sizeof(*h), &q, h->in);
	return sizeof(*h) + h->in;
}

static size_t fz_body(struct fz *f, struct fz_in *in, uint32_t op, uint8_t *b)
{
	size_t len = op < UROCE_OP_MAX ? fz_shape[op].req : 0;

	memset(b, 0, UROCE_MAX_MSG);
	switch (op) {
	case UROCE_OP_HELLO: {
		struct uroce_hello_req *q = (void *)b;

		q->abi_version = fz_u8(in) & 1 ? fz_u32(in) : UROCE_ABI_VERSION;
		q->pid = fz_u32(in);
		break;
	}
	case UROCE_OP_QUERY_PORT:
		((struct uroce_query_port_req *)b)->port_num = fz_u8(in) % 3;
		break;
	case UROCE_OP_REG_MR:
	case UROCE_OP_REREG_MR: {
		struct uroce_reg_mr_req mr;
		uint8_t how = fz_u8(in);

		mr.pd = fz_handle(f, in);
		mr.access = fz_access(in);
		mr.addr = how & 1 ? fz_u64(in) : (uintptr_t)fz_mem + fz_u16(in) % sizeof(fz_mem);
		mr.length = how & 2 ? fz_u64(in) : fz_u16(in) % (sizeof(fz_mem) + 8192);
		mr.iova = how & 4 ? fz_u64(in) : mr.addr;
		if (how & 16) { /* implicit ODP: the whole address space */
			mr.addr = mr.iova = 0;
			mr.length = UINT64_MAX;
		}
		if (op == UROCE_OP_REG_MR) {
			memcpy(b, &mr, sizeof(mr));
		} else {
			struct uroce_rereg_mr_req *q = (void *)b;

			q->handle = fz_handle(f, in);
			q->flags = how & 8 ? fz_u32(in) : fz_u8(in) & 7;
			q->pd = mr.pd;
			q->access = mr.access;
			q->addr = mr.addr;
			q->length = mr.length;
			q->iova = mr.iova;
		}
		break;
	}
	case UROCE_OP_ADVISE_MR: {
		struct uroce_advise_mr_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->pd = fz_handle(f, in);
		q->advice = how & 1 ? fz_u32(in) : fz_u8(in) % 4;
		q->flags = how & 2 ? fz_u32(in) : fz_u8(in) & 1;
		q->num_sge = how & 4 ? fz_u32(in) : fz_u8(in) % (UROCE_ADVISE_MAX_SGE + 2);
		for (unsigned i = 0; i < UROCE_ADVISE_MAX_SGE && i < q->num_sge; i++) {
			uint8_t k = fz_u8(in);

			q->sge[i].lkey = k & 1 || !f->nlk ? fz_u32(in) : f->lk[(k >> 3) % f->nlk];
			q->sge[i].addr = k & 2 ? fz_u64(in) :
				(uintptr_t)fz_mem + fz_u16(in) % sizeof(fz_mem);
			q->sge[i].length = k & 4 ? fz_u32(in) : fz_u16(in);
		}
		break;
	}
	case UROCE_OP_ALLOC_MW: {
		struct uroce_alloc_mw_req *q = (void *)b;

		q->pd = fz_handle(f, in);
		q->type = fz_u8(in) % 4;
		break;
	}
	case UROCE_OP_CREATE_CQ: {
		struct uroce_create_cq_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->cqe = how & 1 ? fz_u32(in) : fz_u8(in);
		q->channel = how & 2 ? (int32_t)fz_handle(f, in) : -1;
		q->user_handle = fz_u8(in);
		q->comp_vector = how & 4 ? fz_u32(in) : 0;
		q->flags = how & 8 ? fz_u32(in) : (how >> 4) & 1;
		break;
	}
	case UROCE_OP_RESIZE_CQ: {
		struct uroce_resize_cq_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->handle = fz_handle(f, in);
		q->cqe = how & 1 ? fz_u32(in) : fz_u8(in);
		break;
	}
	case UROCE_OP_CREATE_SRQ:
	case UROCE_OP_CREATE_XSRQ: { /* an XRC SRQ: the same, then a domain and a CQ */
		struct uroce_create_xsrq_req *x = (void *)b;
		struct uroce_create_srq_req *q = &x->srq;
		uint8_t how = fz_u8(in);

		q->pd = fz_handle(f, in);
		q->max_wr = how & 1 ? fz_u32(in) : fz_u8(in);
		q->max_sge = how & 2 ? fz_u32(in) : fz_u8(in) % 8;
		q->srq_limit = fz_u8(in);
		q->user_handle = fz_u8(in);
		if (op == UROCE_OP_CREATE_XSRQ) {
			x->xrcd = fz_handle(f, in);
			x->cq = fz_handle(f, in);
		}
		break;
	}
	case UROCE_OP_OPEN_XRCD: {
		static const uint32_t oflags[] = { 0, O_CREAT, O_EXCL, O_CREAT | O_EXCL };
		uint8_t how = fz_u8(in);

		((struct uroce_open_xrcd_req *)b)->oflags = how & 0x80 ? fz_u32(in) : oflags[how % 4];
		break;
	}
	case UROCE_OP_CREATE_XTGT:
	case UROCE_OP_OPEN_QP: {
		struct uroce_xrc_qp_req *q = (void *)b;

		q->xrcd = fz_handle(f, in);
		q->qpn = fz_handle(f, in); /* the QPNs replies returned are handles too */
		q->user_handle = fz_u8(in);
		break;
	}
	case UROCE_OP_MODIFY_SRQ: {
		struct uroce_modify_srq_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->handle = fz_handle(f, in);
		q->attr_mask = how & 1 ? fz_u32(in) : how >> 1 & 3;
		q->attr.max_wr = how & 8 ? fz_u32(in) : fz_u8(in);
		q->attr.max_sge = fz_u8(in);
		q->attr.srq_limit = fz_u8(in);
		break;
	}
	case UROCE_OP_CREATE_QP:
	case UROCE_OP_CREATE_QP_ARENA: {
		struct uroce_create_qp_req *q = (void *)b;
		static const uint32_t types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
		uint8_t how = fz_u8(in);

		q->pd = fz_handle(f, in);
		q->send_cq = fz_handle(f, in);
		q->recv_cq = how & 1 ? q->send_cq : fz_handle(f, in);
		q->srq = how & 2 ? (int32_t)fz_handle(f, in) : -1;
		q->qp_type = how & 4 ? fz_u32(in) : types[fz_u8(in) % 3];
		q->sq_sig_all = fz_u8(in) & 1;
		if (how & 8) {
			fz_bytes(in, &q->cap, sizeof(q->cap));
		} else {
			q->cap.max_send_wr = fz_u8(in);
			q->cap.max_recv_wr = fz_u8(in);
			q->cap.max_send_sge = fz_u8(in) % 8;
			q->cap.max_recv_sge = fz_u8(in) % 8;
			q->cap.max_inline_data = fz_u8(in);
		}
		q->user_handle = fz_u8(in);
		break;
	}
	case UROCE_OP_MODIFY_QP: {
		struct uroce_modify_qp_req *q = (void *)b;
		struct ibv_qp_attr *a = &q->attr;
		static const uint32_t masks[] = {
			IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
			IBV_QP_STATE,
			IBV_QP_STATE | IBV_QP_SQ_PSN,
		};
		uint8_t how = fz_u8(in);

		q->handle = fz_handle(f, in);
		if (how & 1) {
			fz_bytes(in, a, sizeof(*a));
			q->attr_mask = fz_u32(in);
			break;
		}
		q->attr_mask = masks[(how >> 1) % 6];
		a->qp_state = fz_u8(in) % 8;
		a->cur_qp_state = fz_u8(in) % 8;
		a->port_num = 1;
		a->qkey = fz_u32(in);
		a->qp_access_flags = fz_access(in);
		a->path_mtu = fz_u8(in) % 7;
		a->dest_qp_num = fz_handle(f, in);
		a->rq_psn = fz_u32(in);
		a->sq_psn = fz_u32(in);
		a->max_dest_rd_atomic = fz_u8(in);
		a->max_rd_atomic = fz_u8(in);
		a->min_rnr_timer = fz_u8(in);
		a->timeout = fz_u8(in);
		a->retry_cnt = fz_u8(in) % 8;
		a->rnr_retry = fz_u8(in) % 8;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.sgid_index = fz_u8(in) % 4;
		a->ah_attr.grh.hop_limit = 64;
		fz_gid(f, in, &a->ah_attr.grh.dgid);
		if (how & 0x40)
			q->attr_mask |= fz_u32(in);
		break;
	}
	case UROCE_OP_QUERY_QP: {
		struct uroce_query_qp_req *q = (void *)b;

		q->handle = fz_handle(f, in);
		q->attr_mask = fz_u32(in);
		break;
	}
	case UROCE_OP_CREATE_AH: {
		struct uroce_create_ah_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->pd = fz_handle(f, in);
		if (how & 1) {
			fz_bytes(in, &q->attr, sizeof(q->attr));
			break;
		}
		q->attr.is_global = (how >> 1) & 1;
		q->attr.port_num = (how >> 2) & 1 ? fz_u8(in) : 1;
		q->attr.grh.sgid_index = fz_u8(in) % 4;
		q->attr.grh.hop_limit = fz_u8(in);
		q->attr.grh.traffic_class = fz_u8(in);
		q->attr.grh.flow_label = fz_u32(in);
		fz_gid(f, in, &q->attr.grh.dgid);
		break;
	}
	case UROCE_OP_ATTACH_MCAST:
	case UROCE_OP_DETACH_MCAST: {
		struct uroce_mcast_req *q = (void *)b;

		q->qp = fz_handle(f, in);
		q->lid = fz_u16(in);
		fz_gid(f, in, &q->gid);
		break;
	}
	case UROCE_OP_QUERY_STATS:
		((struct uroce_query_stats_req *)b)->first_qpn = fz_handle(f, in);
		break;
	case UROCE_OP_QUERY_QPS:
		((struct uroce_query_qps_req *)b)->first_qpn = fz_handle(f, in);
		break;
	case UROCE_OP_FAULT_SET: {
		/* a plausible spec (the keys --fault knows), or any bytes */
		static const char *const specs[] = { "drop=0.5,seed=3", "dup=1,qp=0x11",
						     "reorder=0.2,opcode=4", "corrupt=1",
						     "delay_us=10", "drop=2", "qp=0", "x=1" };
		uint8_t how = fz_u8(in);

		if (how & 1)
			fz_bytes(in, b, sizeof(struct uroce_fault_set_req));
		else
			snprintf((char *)b, UROCE_FAULT_SPEC_MAX, "%s", specs[(how >> 1) % 8]);
		break;
	}
	case UROCE_OP_QUERY_CC:
		((struct uroce_query_stats_req *)b)->first_qpn = fz_handle(f, in);
		break;
	case UROCE_OP_CC_SET: {
		/* --dcqcn's keys, in and out of range, or any bytes */
		static const char *const specs[] = { "rp=off", "on", "rpg_max_rate=1,rpg_min_rate=1",
						     "rpg_max_rate=100", "rpg_gd=99", "np=off,ect=off",
						     "rpg_min_rate=400000", "x=1,rp=on" };
		uint8_t how = fz_u8(in);

		if (how & 1)
			fz_bytes(in, b, sizeof(struct uroce_cc_set_req));
		else
			snprintf((char *)b, UROCE_CC_SPEC_MAX, "%s", specs[(how >> 1) % 8]);
		break;
	}
	case UROCE_OP_ALLOC_DM: {
		struct uroce_alloc_dm_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->length = how & 1 ? fz_u64(in) : fz_u32(in) % (EMU_DM_MAX_SIZE + 8192);
		q->log_align_req = how & 2 ? fz_u32(in) : fz_u8(in) % 16;
		q->comp_mask = how & 4 ? fz_u32(in) : 0;
		break;
	}
	case UROCE_OP_REG_DM_MR: {
		struct uroce_reg_dm_mr_req *q = (void *)b;
		uint8_t how = fz_u8(in);

		q->pd = fz_handle(f, in);
		q->dm = fz_handle(f, in);
		q->offset = how & 1 ? fz_u64(in) : fz_u16(in);
		q->length = how & 2 ? fz_u64(in) : fz_u16(in);
		q->access = fz_access(in) | (how & 4 ? 0 : IBV_ACCESS_ZERO_BASED);
		break;
	}
	case UROCE_OP_IMPORT: {
		struct uroce_import_req *q = (void *)b;

		q->type = fz_u8(in) % 5;
		q->handle = fz_handle(f, in);
		q->pd = fz_handle(f, in);
		break;
	}
	case UROCE_OP_UCMA_CMD:
		len = fz_ucma(f, in, b);
		break;
	case UROCE_OP_QUERY_LIMITS:
		((struct uroce_query_limits_req *)b)->uid = fz_u8(in) & 1 ? UROCE_LIMITS_SELF
									  : fz_u32(in);
		break;
	case UROCE_OP_FREE_DM:
	case UROCE_OP_DEALLOC_PD:
	case UROCE_OP_DEREG_MR:
	case UROCE_OP_DEALLOC_MW:
	case UROCE_OP_DESTROY_COMP_CHANNEL:
	case UROCE_OP_DESTROY_CQ:
	case UROCE_OP_QUERY_SRQ:
	case UROCE_OP_DESTROY_SRQ:
	case UROCE_OP_DESTROY_QP:
	case UROCE_OP_DESTROY_AH:
	case UROCE_OP_CLOSE_XRCD:
		((struct uroce_handle_msg *)b)->handle = fz_handle(f, in);
		break;
	default:
		break;
	}
	/* A few raw bytes anywhere in the body. */
	for (unsigned k = fz_u8(in) % 4; k && len; k--) {
		uint16_t off = fz_u16(in);

		b[off % len] = fz_u8(in);
	}
	return len;
}

/* Whether a successful reply of op starts with the handle of what it made
 * (queries, statistics and uroce-ctl's replies do not). */
static bool fz_rep_is_handle(uint32_t op)
{
	switch (op) {
	case UROCE_OP_HELLO:
	case UROCE_OP_QUERY_PORT:
	case UROCE_OP_QUERY_SRQ:
	case UROCE_OP_QUERY_QP:
	case UROCE_OP_QUERY_STATS:
	case UROCE_OP_UCMA_CMD:
	case UROCE_OP_QUERY_CM_STATS:
	case UROCE_OP_QUERY_LIMITS:
	case UROCE_OP_QUERY_DROPS:
	case UROCE_OP_DEV_INFO:
	case UROCE_OP_QUERY_QPS:
	case UROCE_OP_FAULT_GET:
	case UROCE_OP_FAULT_SET:
	case UROCE_OP_FAULT_CLEAR:
	case UROCE_OP_CAPTURE_STOP:
	case UROCE_OP_IMPORT:
	case UROCE_OP_QUERY_CC:
	case UROCE_OP_CC_SET:
	case UROCE_OP_ADVISE_MR:
		return false;
	default:
		return true;
	}
}

/* Receive the one reply to a message and check it. Returns false if the
 * daemon closed the connection instead. */
static bool fz_reply(struct fz *f, uint32_t op, uint32_t seq, size_t sent, uint32_t mask)
{
	static uint8_t buf[UROCE_MAX_MSG + 64];
	union {
		struct cmsghdr c;
		uint8_t b[CMSG_SPACE(sizeof(int) * 8)];
	} cb;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	struct uroce_msg_hdr h;
	int fds[8];
	unsigned nfds = 0;
	ssize_t n = recvmsg(f->cl, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n == 0)
		return false;
	fz_assert(n > 0); /* exactly one reply, already there */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		fz_assert(cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS);
		for (unsigned i = 0; i < k && nfds < 8; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	fz_assert(!(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)));
	fz_assert((size_t)n >= sizeof(h));
	memcpy(&h, buf, sizeof(h));
	if (fz_trace)
		fprintf(stderr, "fuzz_ctl: op %u seq %u -> status %d len %u fds %u\n", h.op, h.seq,
			h.status, h.len, nfds);
	fz_assert(h.len == (uint32_t)n && h.status <= 0 && h.status > -4096);
	if (sent >= sizeof(h)) { /* a runt's header is echoed as far as it went */
		fz_assert(h.op == op && h.seq == seq);
	}
	if (h.status == -EPROTONOSUPPORT && h.op == UROCE_OP_HELLO) {
		/* another ABI version: the refusal says the daemon's */
		uint32_t v;

		fz_assert(h.len == sizeof(h) + sizeof(v) && nfds == 0);
		memcpy(&v, buf + sizeof(h), sizeof(v));
		fz_assert(v == UROCE_ABI_VERSION);
	} else if (h.status) {
		fz_assert(h.len == sizeof(h) && nfds == 0);
	} else {
		size_t want = fz_shape[op].rep;
		unsigned wfds = fz_shape[op].fds_out;

		fz_assert(op > 0 && op < UROCE_OP_MAX);
		if (op == UROCE_OP_MODIFY_SRQ && (mask & IBV_SRQ_MAX_WR)) {
			want = sizeof(struct uroce_create_srq_rep);
			wfds = 1;
		}
		if (op == UROCE_OP_IMPORT && mask == UROCE_IMPORT_DM)
			wfds = 1; /* the device memory's memfd */
		if (op == UROCE_OP_UCMA_CMD) /* the command's own response, if any */
			want = h.len - sizeof(h) <= UROCE_UCMA_MAX_OUT ? h.len - sizeof(h) : ~(size_t)0;
		if (op == UROCE_OP_CREATE_QP_ARENA && (size_t)n >= sizeof(h) + want) {
			struct uroce_create_qp_arena_rep r;

			memcpy(&r, buf + sizeof(h), sizeof(r));
			wfds = r.flags & UROCE_ARENA_F_NEW ? 1 : 0;
			fz_assert(r.chunk == UROCE_ARENA_OWN ? r.chunk_size == r.qp.map_size :
				  r.chunk_size == UROCE_ARENA_CHUNK &&
				  r.qp.sq_offset + r.qp.map_size <= UROCE_ARENA_CHUNK);
		}
		fz_assert(h.len == sizeof(h) + want && nfds == wfds);
		/* Remember what it created, for later messages. */
		if (want >= 4 && f->nh < FZ_MAX_HANDLES && fz_rep_is_handle(op))
			memcpy(&f->h[f->nh++], buf + sizeof(h), 4);
		if (op == UROCE_OP_ADVISE_MR) {
			struct uroce_advise_mr_rep r;

			memcpy(&r, buf + sizeof(h), sizeof(r));
			fz_assert(r.n_ok <= UROCE_ADVISE_MAX_SGE && r.err <= 0);
		}
		if (op == UROCE_OP_REG_MR && f->nlk < 16)
			memcpy(&f->lk[f->nlk++], buf + sizeof(h) + 4, 4); /* the lkey */
		if ((op == UROCE_OP_CREATE_QP || op == UROCE_OP_CREATE_XTGT ||
		     op == UROCE_OP_OPEN_QP || op == UROCE_OP_CREATE_QP_ARENA) &&
		    f->nh < FZ_MAX_HANDLES)
			memcpy(&f->h[f->nh++], buf + sizeof(h) + 4, 4); /* the QPN */
	}
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	return true;
}

static void fz_message(struct fz *f, struct fz_in *in)
{
	static uint8_t msg[UROCE_MAX_MSG + 64];
	uint8_t kind = fz_u8(in), fk = fz_u8(in);
	/* op from the kind's low 5 bits plus the descriptor byte's 0x20 bit
	 * (ops up to 63, whether they exist or not) */
	uint32_t op = (kind & 0x1fu) | (fk & 0x20u), mask = 0;
	struct uroce_msg_hdr h;
	size_t blen, len;
	int fds[FZ_MAX_FDS_OUT];
	unsigned nfds = fk & 0x80 ? fk % (FZ_MAX_FDS_OUT + 1) : (fk & 0x40 ? 1 : 0);
	ssize_t sent;

	/* ops past 31 (those appended since): from the next word, or any
	 * number at all */
	if (op == 0 && (kind & 0x20)) {
		uint32_t v = fz_u32(in);

		op = v & 1 ? v >> 1 : 32 + (v >> 1) % (UROCE_OP_MAX - 31);
	}
	blen = fz_body(f, in, op, msg + sizeof(h));
	if (op == UROCE_OP_MODIFY_SRQ)
		mask = ((struct uroce_modify_srq_req *)(msg + sizeof(h)))->attr_mask;
	if (op == UROCE_OP_IMPORT)
		mask = ((struct uroce_import_req *)(msg + sizeof(h)))->type;
	len = sizeof(h) + blen;
	h.op = op;
	h.seq = ++f->seq;
	h.status = (int32_t)(kind & 0x40 ? fz_u32(in) : 0);
	switch (kind >> 6 & 3) {
	case 0:
	case 1:
		break;
	case 2: /* any length, up to past the largest message */
		len = fz_u16(in) % (sizeof(msg) + 1);
		break;
	default: /* right length, wrong len field, or a runt */
		if (fz_u8(in) & 1)
			len = fz_u8(in) % sizeof(h);
		break;
	}
	h.len = (kind >> 6) == 3 && (fk & 1) ? fz_u32(in) : (uint32_t)len;
	memcpy(msg, &h, sizeof(h));
	if (!len) {
		len = 1; /* an empty SEQPACKET message reads as EOF: see below */
		msg[0] = (uint8_t)op;
	}

	for (unsigned i = 0; i < nfds; i++) {
		fds[i] = fz_make_fd(f, fz_u8(in));
		if (fds[i] < 0)
			fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		fz_assert(fds[i] >= 0);
	}
	sent = t_sendfds(f->cl, msg, len, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	if (sent < 0) {
		/* only a closed connection may refuse a message */
		fz_assert(errno == EPIPE || errno == ECONNRESET);
		return;
	}
	fz_pump(f);
	if (!fz_reply(f, op, h.seq, len, mask)) {
		/* the daemon closed us: only after a message it could not
		 * parse as one may it do that, never silently; reconnect */
		close(f->cl);
		fz_connect(f);
		f->nh = 0;
	}
}

static void fz_setup_once(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	signal(SIGPIPE, SIG_IGN); /* as uroced's main() */
	/* The daemon logs every client and refusal: FUZZ_LOG=1 keeps that. */
	if (!getenv("FUZZ_LOG"))
		rte_log_set_global_level(RTE_LOG_ERR);
	fz_trace = getenv("FUZZ_CTL_TRACE") != NULL;
	snprintf(fz_dir, sizeof(fz_dir), "/tmp/uroce-fuzz-ctl-XXXXXX");
	fz_assert(mkdtemp(fz_dir));
	emu_clock_set(fz_clock);
}

/* A fresh client process per input: what the daemon did to the memory of
 * one (an application may register any of its memory, and RDMA may write
 * there) must not change the next input's run. */
static pid_t fz_helper_start(void)
{
	int sp[2];

	fz_assert(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	pid_t pid = fork();

	fz_assert(pid >= 0);
	if (pid == 0) {
		close(sp[0]);
		fz_helper_main(sp[1]);
	}
	close(sp[1]);
	fz_helper = sp[0];
	return pid;
}

static void fz_helper_stop(pid_t pid)
{
	int st;

	pid_t r;

	close(fz_helper); /* the helper exits on EOF */
	fz_helper = -1;
	/* libFuzzer's timeout alarm interrupts blocking calls */
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	fz_assert(r == pid);
}

static void fz_cleanup_dir(void) __attribute__((destructor));
static void fz_cleanup_dir(void)
{
	char p[sizeof(fz_dir) + 16];

	if (!fz_dir[0])
		return;
	snprintf(p, sizeof(p), "%s/fz0.sock", fz_dir);
	unlink(p);
	rmdir(fz_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x31 };
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 } };
	struct fz f;
	uint32_t nqp0, nobj0;
	pid_t helper;
	int fds0;

	fz_setup_once();
	fds0 = fz_count_fds();
	helper = fz_helper_start();
	memset(&f, 0, sizeof(f));
	fz_now = 1000000;
	f.dm = calloc(1, sizeof(*f.dm));
	fz_assert(f.dm);
	f.dm->listen_fd = -1;
	snprintf(f.dm->o.dev, sizeof(f.dm->o.dev), "fz0");
	snprintf(f.dm->o.run_dir, sizeof(f.dm->o.run_dir), "%s", fz_dir);
	fz_assert(emu_dev_init(&f.dm->dev, "fz0", mac, 1500, &g, 1) == 0);
	f.dm->dev.ops = &fz_ops;
	f.dm->dev.loopback = true;
	fz_nloop = 0;
	/* QP1's engine, as the daemon's engine loop attaches it (seeded: an
	 * input replays the same comm IDs), with a small table: a full table
	 * and the per-source budget (a quarter of it) are in an input's reach,
	 * and an input does not pay for clearing 4096 slots */
	struct emu_ibcm_cfg cmc = { .seed = 1, .max_ids = 64 };
	fz_assert(emu_ibcm_attach(&f.dm->dev, &cmc) == 0);
	f.dm->epfd = epoll_create1(EPOLL_CLOEXEC);
	fz_assert(f.dm->epfd >= 0);
	fz_assert(emu_ctl_open(f.dm) == 0);
	nqp0 = f.dm->dev.nqp;
	nobj0 = fz_dev_objs(&f.dm->dev);
	fz_connect(&f);

	for (int m = 0; m < FZ_MAX_MSGS && in.pos < in.n; m++)
		fz_message(&f, &in);

	/* The client goes away: everything it had must go with it. */
	close(f.cl);
	close(f.peer_mem);
	fz_pump(&f);
	fz_pump(&f);
	if (fz_trace)
		fprintf(stderr, "fuzz_ctl: after close: nctx %u nqp %u/%u objects %u/%u\n",
			f.dm->dev.nctx, f.dm->dev.nqp, nqp0, fz_dev_objs(&f.dm->dev), nobj0);
	for (struct emu_ctx *c = f.dm->dev.ctxs; c; c = c->next)
		fprintf(stderr, "fuzz_ctl: context left: pid %d sock %d dead %d nh %u\n",
			(int)c->pid, c->sock, (int)c->dead, c->nh);
	fz_assert(f.dm->dev.ctxs == NULL && f.dm->dev.nctx == 0);
	fz_assert(f.dm->dev.nqp == nqp0 && fz_dev_objs(&f.dm->dev) == nobj0);
	for (unsigned i = 0; i < f.nkeep; i++)
		close(f.keep[i]);
	/* a capture started at run time outlives its client by design (it is
	 * the device's); stop it as the daemon's teardown closes it */
	if (f.dm->pcap) {
		struct uroce_capture_rep cr;

		fz_assert(emu_admin_capture_stop(f.dm, &cr) == 0);
	}
	emu_ctl_close(f.dm);
	emu_ibcm_detach(&f.dm->dev);
	fz_nloop = 0;
	emu_dev_fini(&f.dm->dev);
	close(f.dm->epfd);
	free(f.dm);
	fz_helper_stop(helper);
	fz_assert(fz_count_fds() == fds0);
	return 0;
}
