/* SPDX-License-Identifier: MIT */
/* No access to application memory may stall the engine (docs/security.md,
 * "A blocked access costs only its client").
 *
 * stall_uffd: one context registers an ODP MR over memory backed by
 * userfaultfd whose middle page is missing and never served, and WRITEs
 * into that page through its own QP pair. The daemon's access (through
 * /proc/<pid>/mem, which does not wait for userfaultfd) fails at once: the
 * responder QP reports IBV_EVENT_QP_ACCESS_ERR, and a second context's pair
 * gets verified traffic within a bounded time. (With process_vm_writev the
 * engine thread waited in the fault handler until the client exited.)
 * Needs userfaultfd for kernel faults (root, or vm.unprivileged_userfaultfd
 * = 1; UFFD_USER_MODE_ONLY never blocks remote access); skipped otherwise.
 *
 * stall_fuse: a child registers an unpinned MR (UROCE_MR_PIN=off) over a
 * mapping of a file on a FUSE file system whose server never answers
 * READ: the daemon's access really
 * blocks in the kernel. The watchdog (--mem-stall-ms, default 2000) hands
 * the device to a fresh engine thread: a second context is served within a
 * bounded time; after the child is gone, new contexts are served too.
 * Needs root (mount in a private mount namespace) and /dev/fuse; skipped
 * otherwise. */
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "vt.h"

#define PG 4096u

static void traffic(struct vt *t, uint32_t seed)
{
	struct ibv_wc wc;
	uint32_t len = 8192;

	for (uint32_t i = 0; i < len; i++)
		t->buf[i] = (uint8_t)(seed * 31 + i * 7);
	memset(t->buf + 16384, 0, len);
	REQUIRE(!vt_post_send(t->qa, t->mr, IBV_WR_RDMA_WRITE, 0, len, IBV_SEND_SIGNALED, 0,
			    (uintptr_t)t->buf + 16384, t->mr->rkey, 42));
	vt_poll_n(t->scq, 1, &wc); /* bounded: VT_WAIT_S */
	REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 42);
	REQUIRE(!memcmp(t->buf, t->buf + 16384, len));
}

/* Async events of type ev within ms. */
static int async_events(struct ibv_context *ctx, enum ibv_event_type ev, int want, int ms)
{
	int got = 0;
	int fl = fcntl(ctx->async_fd, F_GETFL);
	double end = vt_now() + ms / 1000.0;

	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	while (got < want && vt_now() < end) {
		struct ibv_async_event e;
		if (!vt_readable(ctx->async_fd, 50))
			continue;
		if (ibv_get_async_event(ctx, &e))
			continue;
		if (e.event_type == ev)
			got++;
		ibv_ack_async_event(&e);
	}
	return got;
}

static void stall_uffd(void)
{
	struct vt bad, good, late;
	struct ibv_wc wc;
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0) {
		fprintf(stderr, "userfaultfd: %s: skipped\n", strerror(errno));
		exit(VT_SKIP);
	}
	struct uffdio_api api = { .api = UFFD_API };
	REQUIRE(!ioctl(uffd, UFFDIO_API, &api));
	uint8_t *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	m[0] = 1;          /* first and last page present: the registration */
	m[2 * PG] = 1;     /* probe passes; the middle one stays missing */
	struct uffdio_register reg = {
		.range = { (uintptr_t)m, 3 * PG }, .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	REQUIRE(!ioctl(uffd, UFFDIO_REGISTER, &reg));

	vt_init(&bad, NULL);
	/* ODP: a registration that pins faults every page in first, in the
	 * client, as ib_umem_get does, and would wait here for the page
	 * nobody serves; an ODP one is reached through /proc/<pid>/mem */
	struct ibv_mr *umr = ibv_reg_mr(bad.pd, m, 3 * PG, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	REQUIRE(umr);
	memset(bad.buf, 0x5a, 64);
	REQUIRE(!vt_post_send(bad.qa, bad.mr, IBV_WR_RDMA_WRITE, 0, 64, IBV_SEND_SIGNALED, 0,
			    (uintptr_t)m + PG, umr->rkey, 7));

	/* a well-behaved client is served meanwhile */
	double t0 = vt_now();
	vt_init(&good, NULL);
	traffic(&good, 1);
	traffic(&good, 2);
	fprintf(stderr, "second client served after %.0f ms\n", (vt_now() - t0) * 1000);

	/* the blocked one's responder QP is in error, nothing else */
	REQUIRE(async_events(bad.ctx, IBV_EVENT_QP_ACCESS_ERR, 1, VT_WAIT_S * 1000) == 1);
	vt_poll_n(bad.scq, 1, &wc);
	REQUIRE(wc.wr_id == 7);

	close(uffd);
	vt_init(&late, NULL);
	traffic(&late, 3);
	traffic(&good, 4);
	vt_fini(&late);
	vt_fini(&good);
	ibv_dereg_mr(umr);
	vt_fini(&bad);
	munmap(m, 3 * PG);
}

/* ---- a FUSE file system that never answers READ ---- */
static int fuse_fd = -1;

static void fuse_reply(const struct fuse_in_header *in, int err, const void *body, size_t len)
{
	uint8_t buf[512];
	struct fuse_out_header *o = (struct fuse_out_header *)buf;

	o->len = (uint32_t)(sizeof(*o) + (err ? 0 : len));
	o->error = err;
	o->unique = in->unique;
	if (!err && len)
		memcpy(buf + sizeof(*o), body, len);
	if (write(fuse_fd, buf, o->len) < 0) { /* connection gone */ }
}

static void fuse_attr(uint64_t node, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->nlink = 1;
	a->blksize = PG;
	if (node == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
	} else {
		a->mode = S_IFREG | 0666;
		a->size = 4 * PG;
		a->blocks = 4 * PG / 512;
	}
}

static void *fuse_serve(void *arg)
{
	static uint8_t buf[1 << 20];

	(void)arg;
	for (;;) {
		ssize_t n = read(fuse_fd, buf, sizeof(buf));
		/* EPERM: the child has not mounted it yet */
		if (n < 0 && (errno == EINTR || errno == EPERM)) {
			if (errno == EPERM)
				usleep(1000);
			continue;
		}
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return NULL;
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		const void *arg0 = buf + sizeof(*in);
		switch (in->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *ii = arg0;
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
				.minor = FUSE_KERNEL_MINOR_VERSION,
				.max_readahead = ii->max_readahead, .max_background = 16,
				.congestion_threshold = 12, .max_write = PG, .time_gran = 1 };
			fuse_reply(in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { .nodeid = 2, .generation = 1,
				.entry_valid = 3600, .attr_valid = 3600 };
			if (strcmp((const char *)arg0, "f")) {
				fuse_reply(in, -ENOENT, NULL, 0);
				break;
			}
			fuse_attr(2, &o.attr);
			fuse_reply(in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { .attr_valid = 3600 };
			fuse_attr(in->nodeid, &o.attr);
			fuse_reply(in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = { .fh = 1 };
			fuse_reply(in, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ:       /* never: whoever faults on the file waits */
		case FUSE_INTERRUPT:  /* no reply expected */
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_ACCESS:
			fuse_reply(in, 0, NULL, 0);
			break;
		default:
			fuse_reply(in, -ENOSYS, NULL, 0);
			break;
		}
	}
}

/* Child: private mount namespace, FUSE mount served by the parent, MR
 * over a page of the file (the registration's probe blocks the daemon's
 * engine). Exits only when killed. */
static void fuse_client(int ready, const char *dir)
{
	char opts[128], path[64];
	char v = 's';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		fprintf(stderr, "fuse setup: %s: skipped\n", strerror(errno));
		goto out;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse_fd);
	if (mount("uroce-test", dir, "fuse", MS_NODEV | MS_NOSUID, opts)) {
		fprintf(stderr, "fuse mount: %s: skipped\n", strerror(errno));
		goto out;
	}
	/* only the parent serves (and, by closing its copy, aborts) it */
	close(fuse_fd);
	snprintf(path, sizeof(path), "%s/f", dir);
	int fd = open(path, O_RDWR);
	REQUIRE(fd >= 0);
	uint8_t *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	REQUIRE(m != MAP_FAILED);
	/* a registration whose pages cannot be pinned for it (a pin would
	 * block here, in this process, on the page the server never sends):
	 * the daemon's probe of it is what blocks */
	setenv("UROCE_MR_PIN", "off", 1);
	struct ibv_context *ctx = vt_open();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	v = 'r';
	if (write(ready, &v, 1) != 1)
		_exit(1);
	/* the daemon probes the page: its engine blocks in the kernel; the
	 * engine that takes over fails the request (-EFAULT) */
	struct ibv_mr *mr = ibv_reg_mr(pd, m, PG, IBV_ACCESS_LOCAL_WRITE);
	v = mr ? 'o' : errno == EFAULT ? 'f' : 'e';
	if (write(ready, &v, 1) != 1)
		_exit(1);
	pause();
out:
	if (write(ready, &v, 1) != 1) { /* parent gone */ }
	pause();
	_exit(0);
}

static char fuse_dir[] = "/tmp/uroce-fuse-XXXXXX";

/* also when a CHECK fails (our child, and its namespace, die with us) */
static void fuse_dir_rm(void)
{
	if (rmdir(fuse_dir) && errno == EBUSY) {
		usleep(100000);
		rmdir(fuse_dir);
	}
}

static void stall_fuse(void)
{
	struct vt good, late;
	pthread_t th;
	int p[2];
	char v = 0;
	/* the mount point: the child mounts on it in its own namespace, we
	 * remove it once the child (and its namespace) is gone */
	char *dir = fuse_dir;

	if (geteuid() != 0) {
		fprintf(stderr, "not root: skipped\n");
		exit(VT_SKIP);
	}
	fuse_fd = open("/dev/fuse", O_RDWR);
	if (fuse_fd < 0) {
		fprintf(stderr, "/dev/fuse: %s: skipped\n", strerror(errno));
		exit(VT_SKIP);
	}
	/* the well-behaved client connects first: a blocked daemon would
	 * not even be listed to a newcomer */
	vt_init(&good, NULL);
	traffic(&good, 1);
	REQUIRE(!pipe(p) && mkdtemp(dir));
	atexit(fuse_dir_rm);
	pid_t kid = fork();
	REQUIRE(kid >= 0);
	if (kid == 0) {
		close(p[0]);
		fuse_client(p[1], dir);
	}
	close(p[1]);
	REQUIRE(!pthread_create(&th, NULL, fuse_serve, NULL));
	/* the child writes one byte or dies (EOF); PR_SET_PDEATHSIG and the
	 * runner's timeout bound it */
	ssize_t rn;
	do {
		rn = read(p[0], &v, 1);
	} while (rn < 0 && errno == EINTR);
	REQUIRE(rn == 1);
	if (v != 'r') {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
		exit(VT_SKIP);
	}
	usleep(200000); /* let the registration reach the daemon and block */

	double t0 = vt_now();
	traffic(&good, 2);
	fprintf(stderr, "second client served after %.0f ms\n", (vt_now() - t0) * 1000);
	/* bounded by vt_poll_n (VT_WAIT_S): without the watchdog the engine
	 * stays blocked until the FUSE server answers, i.e. forever */

	/* the blocked registration was answered (-EFAULT) by the new engine,
	 * well before the library's own 30 s timeout */
	double end = vt_now() + 10;
	v = 0;
	while (vt_now() < end) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		if (poll(&pf, 1, 100) == 1) {
			REQUIRE(read(p[0], &v, 1) == 1);
			break;
		}
	}
	REQUIRE(v == 'f');

	/* abort the file system: the blocked access returns and the old
	 * engine thread leaves; then the client can exit */
	close(fuse_fd);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	close(p[0]);
	fuse_dir_rm();
	vt_init(&late, NULL);
	traffic(&late, 3);
	traffic(&good, 4);
	vt_fini(&late);
	vt_fini(&good);
}

static const struct vt_case cases[] = {
	{ "stall_uffd", stall_uffd },
	{ "stall_fuse", stall_fuse },
};

int main(int argc, char **argv)
{
	return vt_main(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
