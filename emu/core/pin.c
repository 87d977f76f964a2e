/* SPDX-License-Identifier: MIT */
/* Registered memory with the semantics of pinned pages (docs/verbs.md,
 * "Registered memory"; the alternatives measured: docs/performance.md).
 *
 * The client makes an io_uring for its context and registers each MR's
 * range into that ring's buffer table (IORING_REGISTER_BUFFERS_UPDATE):
 * the kernel pins the pages as ib_umem_get does for an HCA (FOLL_WRITE |
 * FOLL_LONGTERM, charged to the client's RLIMIT_MEMLOCK and its memory
 * cgroup). The daemon takes the ring from the process bound at HELLO with
 * pidfd_getfd (io_uring descriptors cannot travel with SCM_RIGHTS) and
 * moves payload with IORING_OP_READ_FIXED / WRITE_FIXED between those
 * pinned pages and pipes of its own: placement vmsplices (or, when
 * short, writes) the payload into one pipe and reads it into the pinned
 * buffer, one copy; a gather writes from the pinned buffer into the other
 * and reads it into the frames. Two pipes, because a pipe end that was
 * vmspliced into loses FMODE_NOWAIT (Linux 6.5 and later), and every
 * operation here must complete at once or fail. Whatever the application does to its
 * mappings afterwards, the device reaches the pages it registered, never
 * a new mapping at the same address, as an HCA does.
 *
 * The ring is the client's: it can map the submission queue and rewrite
 * what the daemon queues, submit on it itself, or lie about its layout.
 * So before the ring is enabled the daemon registers the restrictions
 * itself (IORING_REGISTER_RESTRICTIONS works once, on a disabled ring:
 * a client that set its own is refused): only READ_FIXED and WRITE_FIXED,
 * only on fixed files, whose table is the read end of one of these pipes
 * and the write end of the other; the client may only
 * update buffers, and buffers are pages it pinned in its own address space.
 * Whatever a hostile client makes the daemon's submissions do, they can
 * only move bytes between this client's own pages and this client's own
 * pipes. The daemon reads nothing from the rings but bounded, masked
 * indices and results it checks, never waits for a completion (RWF_NOWAIT:
 * an operation that cannot complete at once fails at once), and empties
 * the pipe before the frames whose pages it vmspliced can be reused. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu_obj.h"
#include "emu_mem.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define EMU_PIN_SQ_MAX 4096u
#define EMU_PIN_CQ_MAX 16384u
#define EMU_PIN_OFF_MAX (1u << 20)  /* ring offsets are a few KB at most */
#define EMU_PIN_PIPE (1u << 20)     /* what we ask for; pipe-max-size by default */
#define EMU_PIN_COPY_MAX 8192u      /* up to this, write() the payload: a copy costs
				     * less than vmsplice's page references and the
				     * check that none is left behind */
#define EMU_PIN_SQE_BATCH 64u       /* submissions per io_uring_enter */
#define EMU_PIN_PIECE (32u << 10)   /* largest piece: 9 pages, a 16-page pipe takes it */

struct emu_pin {
	int ring;                  /* our copy of the client's io_uring */
	int pr, pw;                /* placement pipe; its read end is fixed file 0 */
	int gr, gw;                /* gather pipe; its write end is fixed file 1 */
	uint32_t nslots;           /* the smaller pipe's capacity in pages */
	uint32_t nbufs;            /* the ring's buffer table */
	uint8_t *sq, *sqes;        /* the rings (one mapping, IORING_FEAT_SINGLE_MMAP) */
	size_t sq_len, sqes_len;
	uint32_t *sq_tail_p, *sq_array, *cq_head_p, *cq_tail_p;
	struct io_uring_cqe *cqes;
	uint32_t sq_entries, cq_entries;
	uint32_t sq_tail;          /* ours: the shared one is the client's to spoil */
	uint64_t seq;              /* user_data of our submissions */
	bool broken;               /* the ring stopped behaving: every access fails */
	uint8_t scratch[4096];     /* a pipe drained of what must not stay there */
};

static int emu_uring_register(int fd, unsigned op, const void *arg, unsigned n)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

static int emu_uring_enter(int fd, unsigned to_submit, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, to_submit, 0, flags, NULL, 0);
}

/* ---------------- attaching the client's ring ---------------- */

static bool emu_pin_pow2(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* The layout the client says io_uring_setup gave it, within sane bounds.
 * Lies cost only the client: we map what we compute, the kernel refuses
 * a mapping larger than the ring, and every index we use is masked. */
static int emu_pin_layout_ok(const struct uroce_mem_chan_req *q)
{
	if (!emu_pin_pow2(q->sq_entries, 8, EMU_PIN_SQ_MAX) ||
	    !emu_pin_pow2(q->cq_entries, q->sq_entries, EMU_PIN_CQ_MAX) ||
	    q->nbufs < 2 || q->nbufs > 16384)
		return -EINVAL;
	const uint32_t o[] = { q->sq_head, q->sq_tail, q->sq_mask, q->sq_array,
			       q->cq_head, q->cq_tail, q->cq_mask, q->cq_cqes };
	for (unsigned i = 0; i < sizeof(o) / sizeof(o[0]); i++)
		if (o[i] > EMU_PIN_OFF_MAX || (o[i] & 3))
			return -EINVAL;
	return 0;
}

/* fd is an io_uring instance (an anonymous inode by that name), no SQ
 * polling thread (the kernel would run our submissions later, on the
 * client's own thread), with the entries and buffers the client said. */
static int emu_pin_ring_ok(int fd, const struct uroce_mem_chan_req *q)
{
	char path[64], buf[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EINVAL;
	buf[n] = 0;
	if (strcmp(buf, "anon_inode:[io_uring]"))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return -EINVAL;
	int rc = 0;
	/* only the head: the buffer table follows, a line per entry */
	for (unsigned lines = 0; !rc && lines < 64 && fgets(buf, sizeof(buf), f); lines++) {
		unsigned v;
		int t;

		if (sscanf(buf, "SqMask: %x", &v) == 1 && v != q->sq_entries - 1)
			rc = -EINVAL;
		else if (sscanf(buf, "CqMask: %x", &v) == 1 && v != q->cq_entries - 1)
			rc = -EINVAL;
		else if (sscanf(buf, "SqThread: %d", &t) == 1 && t != -1)
			rc = -EINVAL;
		else if (sscanf(buf, "UserFiles: %u", &v) == 1 && v != 0)
			rc = -EINVAL;
		else if (sscanf(buf, "UserBufs: %u", &v) == 1) {
			if (v != q->nbufs)
				rc = -EINVAL;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Our pipes' ends, the ring's only files, and the restrictions: set while
 * the ring is still disabled, by us. */
static int emu_pin_restrict(struct emu_pin *p)
{
	int fds[2] = { p->pr, p->gw };
	struct io_uring_restriction r[6];
	unsigned n = 0;

	memset(r, 0, sizeof(r));
	r[n].opcode = IORING_RESTRICTION_SQE_OP;
	r[n++].sqe_op = IORING_OP_READ_FIXED;
	r[n].opcode = IORING_RESTRICTION_SQE_OP;
	r[n++].sqe_op = IORING_OP_WRITE_FIXED;
	r[n].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	r[n++].sqe_flags = IOSQE_FIXED_FILE | IOSQE_IO_LINK;
	r[n].opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED;
	r[n++].sqe_flags = IOSQE_FIXED_FILE;
	r[n].opcode = IORING_RESTRICTION_REGISTER_OP;
	r[n++].register_op = IORING_REGISTER_BUFFERS_UPDATE;
	r[n].opcode = IORING_RESTRICTION_REGISTER_OP;
	r[n++].register_op = IORING_REGISTER_SYNC_CANCEL;
	if (emu_uring_register(p->ring, IORING_REGISTER_FILES, fds, 2) ||
	    emu_uring_register(p->ring, IORING_REGISTER_RESTRICTIONS, r, n) ||
	    emu_uring_register(p->ring, IORING_REGISTER_ENABLE_RINGS, NULL, 0))
		return -EINVAL;
	return 0;
}

static int emu_pin_map(struct emu_pin *p, const struct uroce_mem_chan_req *q)
{
	size_t sq = (size_t)q->sq_array + q->sq_entries * sizeof(uint32_t);
	size_t cq = (size_t)q->cq_cqes + q->cq_entries * sizeof(struct io_uring_cqe);
	const uint32_t ends[] = { q->sq_tail, q->cq_head, q->cq_tail };

	p->sq_len = sq > cq ? sq : cq;
	for (unsigned i = 0; i < 3; i++)
		if (ends[i] + sizeof(uint32_t) > p->sq_len)
			return -EINVAL;
	p->sq = mmap(NULL, p->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, p->ring,
		     IORING_OFF_SQ_RING);
	if (p->sq == MAP_FAILED) {
		p->sq = NULL;
		return -EINVAL;
	}
	p->sqes_len = q->sq_entries * sizeof(struct io_uring_sqe);
	p->sqes = mmap(NULL, p->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       p->ring, IORING_OFF_SQES);
	if (p->sqes == MAP_FAILED) {
		p->sqes = NULL;
		return -EINVAL;
	}
	p->sq_tail_p = (uint32_t *)(p->sq + q->sq_tail);
	p->sq_array = (uint32_t *)(p->sq + q->sq_array);
	p->cq_head_p = (uint32_t *)(p->sq + q->cq_head);
	p->cq_tail_p = (uint32_t *)(p->sq + q->cq_tail);
	p->cqes = (struct io_uring_cqe *)(p->sq + q->cq_cqes);
	p->sq_entries = q->sq_entries;
	p->cq_entries = q->cq_entries;
	p->sq_tail = __atomic_load_n(p->sq_tail_p, __ATOMIC_ACQUIRE);
	return 0;
}

static void emu_pin_free(struct emu_pin *p)
{
	if (p->sq)
		munmap(p->sq, p->sq_len);
	if (p->sqes)
		munmap(p->sqes, p->sqes_len);
	if (p->ring >= 0)
		close(p->ring);
	const int fds[] = { p->pr, p->pw, p->gr, p->gw };
	for (unsigned i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(p);
}

/* Try the whole path on the probe page (buffer 0): bytes in, bytes out. */
static int emu_pin_selftest(struct emu_ctx *c, uint64_t probe)
{
	static const char pat[16] = "uroce pin probe";
	uint8_t back[sizeof(pat)];
	struct emu_pin_io io = { (uint8_t *)(uintptr_t)pat, probe, sizeof(pat), 0 };

	if (emu_pin_xfer(c, &io, 1, true))
		return -EINVAL;
	io.local = back;
	if (emu_pin_xfer(c, &io, 1, false) || memcmp(back, pat, sizeof(pat)))
		return -EINVAL;
	return 0;
}

/* A non-blocking pipe of (ideally) EMU_PIN_PIPE bytes; its size in pages,
 * 0 on failure. */
static uint32_t emu_pin_pipe(int *r, int *w)
{
	int fds[2];

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return 0;
	*r = fds[0];
	*w = fds[1];
	(void)fcntl(*w, F_SETPIPE_SZ, EMU_PIN_PIPE); /* best effort: limits per user */
	int sz = fcntl(*w, F_GETPIPE_SZ);
	return sz > 0 ? (uint32_t)sz / 4096 : 0;
}

int emu_pin_attach(struct emu_ctx *c, const struct uroce_mem_chan_req *q)
{
	struct emu_pin *p;

	if (c->pin)
		return -EBUSY;
	if (c->pidfd < 0 || emu_pin_layout_ok(q))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pr = p->pw = p->gr = p->gw = -1;
	p->nbufs = q->nbufs;
	/* the process bound at HELLO, still running the image that said
	 * HELLO: taken first, checked after, so an exec in between is seen */
	p->ring = (int)syscall(SYS_pidfd_getfd, c->pidfd, q->ring_fd, 0);
	if (p->ring < 0 || !emu_mem_alive(c) || emu_pin_ring_ok(p->ring, q)) {
		emu_pin_free(p);
		return -EINVAL;
	}
	uint32_t a = emu_pin_pipe(&p->pr, &p->pw), b = emu_pin_pipe(&p->gr, &p->gw);
	p->nslots = a < b ? a : b;
	if (p->nslots < 16 || emu_pin_restrict(p) || emu_pin_map(p, q)) {
		emu_pin_free(p);
		return -EINVAL;
	}
	c->pin = p;
	if (emu_pin_selftest(c, q->probe)) {
		c->pin = NULL;
		emu_pin_free(p);
		return -EINVAL;
	}
	return 0;
}

void emu_pin_detach(struct emu_ctx *c)
{
	if (!c->pin)
		return;
	emu_pin_free(c->pin);
	c->pin = NULL;
}

bool emu_pin_slots_ok(const struct emu_ctx *c, uint32_t slot, uint64_t len)
{
	uint64_t n = len ? ((len - 1) >> UROCE_PIN_BUF_SHIFT) + 1 : 1;

	/* buffer 0 is the probe page */
	return c->pin && slot >= 1 && slot < c->pin->nbufs && n <= c->pin->nbufs - slot;
}

/* ---------------- moving payload ---------------- */

static void emu_pin_sqe(struct emu_pin *p, uint8_t op, uint32_t slot, uint64_t addr,
			uint32_t len, bool link)
{
	uint32_t i = p->sq_tail & (p->sq_entries - 1);
	struct io_uring_sqe *s = (struct io_uring_sqe *)p->sqes + i;

	memset(s, 0, sizeof(*s));
	s->opcode = op;
	s->flags = IOSQE_FIXED_FILE | (link ? IOSQE_IO_LINK : 0);
	s->fd = op == IORING_OP_READ_FIXED ? 0 : 1; /* from the read end, to the write end */
	s->off = (uint64_t)-1;                      /* a pipe has no position */
	s->addr = addr;
	s->len = len;
	s->buf_index = (uint16_t)slot;
	s->rw_flags = RWF_NOWAIT; /* never queued: complete now or fail */
	s->user_data = ++p->seq;
	p->sq_array[i] = i;
	p->sq_tail++;
}

/* Submit n queued operations and check that each completed with its full
 * length, in order. The completion ring is the client's too: a result we
 * do not recognise is a failure, and we read at most what we queued. */
static int emu_pin_run(struct emu_ctx *c, unsigned n, const uint32_t *lens)
{
	struct emu_pin *p = c->pin;
	uint64_t first = p->seq - n + 1;
	unsigned seen = 0;
	int rc;

	__atomic_store_n(p->sq_tail_p, p->sq_tail, __ATOMIC_RELEASE);
	do {
		rc = emu_uring_enter(p->ring, n, IORING_ENTER_GETEVENTS);
	} while (rc < 0 && errno == EINTR);
	if (rc != (int)n) {
		/* the ring refused our submissions (or some of them, which
		 * then wait in its queue): we no longer know what it will run,
		 * so it runs nothing more of ours. Only a client that meddles
		 * with its ring gets here. */
		p->broken = true;
		return -EFAULT;
	}
	uint32_t head = __atomic_load_n(p->cq_head_p, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(p->cq_tail_p, __ATOMIC_ACQUIRE);
	bool ok = true;
	for (uint32_t k = 0; head != tail && k < p->cq_entries; k++, head++) {
		const struct io_uring_cqe *e = &p->cqes[head & (p->cq_entries - 1)];
		uint64_t ud = e->user_data;
		int32_t res = e->res;

		if (ud < first || ud >= first + n || ud - first != seen ||
		    res != (int32_t)lens[seen]) {
			ok = false;
		}
		else
			seen++;
	}
	__atomic_store_n(p->cq_head_p, head, __ATOMIC_RELEASE);
	return ok && seen == n ? 0 : -EFAULT;
}

/* Empty the pipe of whatever a failure (or the client) left in it, at
 * least what it held when we looked: nothing we vmspliced may outlive the
 * frame it points into. A pipe that will not empty ends the channel. */
static void emu_pin_drain(struct emu_pin *p, int fd)
{
	int left = 0;

	if (ioctl(fd, FIONREAD, &left) || left <= 0)
		return;
	while (left > 0) {
		ssize_t r = read(fd, p->scratch, sizeof(p->scratch));

		if (r <= 0)
			break;
		left -= (int)r;
	}
	if (left > 0)
		p->broken = true;
}

/* Pages io spans in daemon memory: vmsplice takes a pipe slot per page */
static uint32_t emu_pin_pages(const struct emu_pin_io *io)
{
	uintptr_t s = (uintptr_t)io->local, e = s + io->len;

	return (uint32_t)(((e + 4095) >> 12) - (s >> 12));
}

/* Queue the pieces as operations op, linked, contiguous pieces of one
 * buffer merged (up to 4 pieces' worth); their lengths in lens. */
static unsigned emu_pin_queue(struct emu_pin *p, uint8_t op, const struct emu_pin_io *io,
			      unsigned n, uint32_t *lens)
{
	unsigned ns = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t addr = io[i].addr;
		uint32_t len = io[i].len;

		while (i + 1 < n && io[i + 1].slot == io[i].slot && io[i + 1].addr == addr + len &&
		       len + io[i + 1].len <= EMU_PIN_PIECE * 4)
			len += io[++i].len;
		lens[ns++] = len;
		emu_pin_sqe(p, op, io[i].slot, addr, len, i + 1 < n);
	}
	return ns;
}

/* The daemon-side buffers of the pieces, as iovecs */
static void emu_pin_iovs(const struct emu_pin_io *io, unsigned n, struct iovec *v)
{
	for (unsigned i = 0; i < n; i++)
		v[i] = (struct iovec){ io[i].local, io[i].len };
}

/* One round of a placement: the payload of io[0..n) into the pipe, then
 * read into the pinned buffers (remote-contiguous pieces of one buffer in
 * one submission). n and the pipe's capacity were checked by the caller. */
static int emu_pin_place(struct emu_ctx *c, const struct emu_pin_io *io, unsigned n,
			 uint64_t total)
{
	struct emu_pin *p = c->pin;
	struct iovec v[EMU_PIN_SQE_BATCH];
	uint32_t lens[EMU_PIN_SQE_BATCH];
	bool spliced = total > EMU_PIN_COPY_MAX;
	ssize_t w;

	emu_pin_iovs(io, n, v);
	do {
		w = spliced ? vmsplice(p->pw, v, n, SPLICE_F_NONBLOCK) : writev(p->pw, v, (int)n);
	} while (w < 0 && errno == EINTR);
	if (w != (ssize_t)total) {
		emu_pin_drain(p, p->pr);
		return -EFAULT;
	}
	int rc = emu_pin_run(c, emu_pin_queue(p, IORING_OP_READ_FIXED, io, n, lens), lens);
	/* write() copied: a leftover holds only this client's own bytes, and
	 * the next placement's result shows it. vmsplice lent our pages. */
	if (rc || spliced)
		emu_pin_drain(p, p->pr);
	return rc;
}

/* One round of a gather: the pinned pieces into the pipe, then read out
 * into our buffers. */
static int emu_pin_gather(struct emu_ctx *c, const struct emu_pin_io *io, unsigned n,
			  uint64_t total)
{
	struct emu_pin *p = c->pin;
	struct iovec v[EMU_PIN_SQE_BATCH];
	uint32_t lens[EMU_PIN_SQE_BATCH];

	emu_pin_iovs(io, n, v);
	int rc = emu_pin_run(c, emu_pin_queue(p, IORING_OP_WRITE_FIXED, io, n, lens), lens);
	ssize_t r = 0;
	if (!rc) {
		do {
			r = readv(p->gr, v, (int)n);
		} while (r < 0 && errno == EINTR);
	}
	if (rc || r != (ssize_t)total) {
		emu_pin_drain(p, p->gr);
		return -EFAULT;
	}
	return 0;
}

int emu_pin_xfer(struct emu_ctx *c, const struct emu_pin_io *io, unsigned n, bool write)
{
	struct emu_pin *p = c->pin;

	if (!p || p->broken)
		return -EFAULT;
	/* rounds that fit the pipe and one batch of submissions; each piece
	 * is at most EMU_PIN_PIECE (the caller splits) */
	while (n) {
		uint64_t total = 0;
		uint32_t slots = 0;
		unsigned k = 0;

		while (k < n && k < EMU_PIN_SQE_BATCH && k < p->sq_entries) {
			uint32_t s = write ? emu_pin_pages(&io[k]) : (io[k].len + 4095) / 4096 + 1;

			if (k && slots + s > p->nslots)
				break;
			slots += s;
			total += io[k++].len;
		}
		int rc = write ? emu_pin_place(c, io, k, total) : emu_pin_gather(c, io, k, total);
		if (rc)
			return rc;
		io += k;
		n -= k;
	}
	return 0;
}
