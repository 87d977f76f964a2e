/* SPDX-License-Identifier: MIT */
/* Zero-copy TX and the lifetime of a mapping frames point into
 * (docs/performance.md, "Zero-copy TX"). Node A's MR lies in a memfd the
 * "daemon" (this process) maps as it maps a client's shared memory
 * (emu_mr_map, checked against /proc/self); A's port chains payloads
 * (tx_send_ext) and, like a NIC that has not sent them yet, keeps every
 * frame's reference on the mapping until the test lets it go. A
 * deregistration (or the context's end) with frames still held must
 * leave the mapping in place, and the last frame freed unmaps it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pair.h"

#define LEN (64u * 1024u)  /* 64 packets at MTU 1024 */
#define NHOLD 128

static struct emu_mrmap_hold *held[NHOLD];
static const uint8_t *held_at[NHOLD];
static unsigned nheld;
static struct emu_port_ops zops;

/* the wire gets the frame whole (the sim delivers buffers); the payload
 * stays referenced as if a NIC still had to read it */
static int zc_send(struct emu_dev *d, struct emu_txbuf *b, uint32_t hl, const uint8_t *ext,
		   uint32_t len, struct emu_mrmap_hold *h, const uint8_t *trailer, uint32_t tl)
{
	uint8_t *f = malloc(hl + len + tl);

	(void)d;
	if (!f || nheld == NHOLD) {
		free(f);
		return -ENOBUFS;
	}
	memcpy(f, b->data, hl);
	memcpy(f + hl, ext, len);
	memcpy(f + hl + len, trailer, tl);
	emu_mrmap_get(h);
	held[nheld] = h;
	held_at[nheld++] = ext;
	free(b->data);
	sim_deliver(1, f, hl + len + tl);
	return 0;
}

static bool mapped(const void *p)
{
	unsigned char v;
	uintptr_t pg = (uintptr_t)p & ~(uintptr_t)4095;

	return mincore((void *)pg, 4096, &v) == 0;
}

struct zmr {
	int fd;
	uint8_t *buf;
	uint32_t handle, lkey;
};

/* A's MR over a memfd mapping, mapped into the daemon */
static int zmr_setup(struct sim_node *n, struct zmr *m)
{
	struct uroce_reg_mr_req q;
	struct uroce_reg_mr_rep r;
	int memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

	m->fd = memfd_create("zc-test", MFD_CLOEXEC);
	if (memfd < 0 || m->fd < 0 || ftruncate(m->fd, LEN) || emu_mem_attach(n->ctx, memfd, -1))
		return -1;
	m->buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->buf == MAP_FAILED)
		return -1;
	memset(&q, 0, sizeof(q));
	q.pd = n->pd;
	q.access = ALL_ACCESS;
	q.addr = q.iova = (uintptr_t)m->buf;
	q.length = LEN;
	q.pin = UROCE_PIN_NONE; /* at the address, as a client whose pages cannot be pinned */
	if (emu_mr_reg(n->ctx, &q, &r))
		return -1;
	m->handle = r.handle;
	m->lkey = r.lkey;
	/* the file's pages exist before the daemon maps it, as the shim's
	 * registration leaves them (it never brings one into being itself) */
	memset(m->buf, 0, LEN);
	struct uroce_map_mr_req mq = { .handle = r.handle, .addr = q.addr, .length = LEN };
	return emu_mr_map(n->ctx, &mq, m->fd);
}

/* 64 KB WRITE from A's mapped MR: want packets zero-copy and held (every
 * one, but those from pages the daemon's mapping lacks) */
static int zc_write_n(struct pair *p, struct zmr *m, unsigned want)
{
	struct uroce_send_wqe w;
	struct uroce_sge s = { (uintptr_t)m->buf, LEN, m->lkey };
	struct uroce_cqe c;

	p->s.n[0].dev.tx_zc = true;
	p->s.n[0].dev.icrc_tx_skip = true;
	p->s.n[1].dev.icrc_rx_skip = true; /* its ICRC is 0, as on the ring */
	zops = *p->s.n[0].dev.ops;
	zops.tx_send_ext = zc_send;
	p->s.n[0].dev.ops = &zops;
	xt_fill(m->buf, LEN, 7);
	xt_wqe(&w, 1, IBV_WR_RDMA_WRITE, 1);
	w.rdma.remote_addr = (uintptr_t)p->mb.buf;
	w.rdma.rkey = p->mb.rkey;
	sim_post_send(&p->a, &w, &s, NULL);
	sim_run(&p->s, 1000000000ull);
	CHECK(sim_poll(p->a.scq, &c, 1) == 1 && c.status == IBV_WC_SUCCESS);
	CHECK(!memcmp(p->mb.buf, m->buf, LEN));
	CHECK_EQ(nheld, want);
	CHECK_EQ(p->s.n[0].dev.cnt.tx_zc, want);
	CHECK_EQ(p->s.n[0].dev.cnt.tx_zc_bytes, want * 1024u);
	return nheld == want ? 0 : -1;
}

static int zc_write(struct pair *p, struct zmr *m)
{
	return zc_write_n(p, m, LEN / 1024);
}

/* the held frames let go, one by one: mapped until the last */
static void release_all(void)
{
	const uint8_t *at = held_at[0];

	for (unsigned i = 0; i < nheld; i++) {
		CHECK(mapped(at));
		emu_mrmap_put(held[i]);
	}
	CHECK(!mapped(at));
	nheld = 0;
}

static int t_hold_dereg(void)
{
	struct pair p;
	struct zmr m;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, LEN) || zmr_setup(&p.s.n[0], &m) ||
	    zc_write(&p, &m))
		return -1;
	CHECK(!emu_mr_dereg(p.s.n[0].ctx, m.handle));
	/* the registration is gone, the frames still read the bytes it had */
	CHECK_EQ(p.s.n[0].dev.cnt.zc_unmap_deferred, 1);
	CHECK(mapped(held_at[0]));
	uint8_t want[1024];
	xt_fill(want, sizeof(want), 7);
	CHECK(!memcmp(held_at[0], want, sizeof(want)));
	release_all();
	munmap(m.buf, LEN);
	close(m.fd);
	pair_fini(&p);
	return 0;
}

/* the context goes (a client's exit) with its frames still held */
static int t_hold_ctx_exit(void)
{
	struct pair p;
	struct zmr m;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, LEN) || zmr_setup(&p.s.n[0], &m) ||
	    zc_write(&p, &m))
		return -1;
	sim_fini(&p.s); /* destroys both contexts, their MRs and mappings */
	CHECK(mapped(held_at[0]));
	release_all();
	munmap(m.buf, LEN);
	close(m.fd);
	free(p.ma.buf);
	free(p.mb.buf);
	return 0;
}

/* no reference is left behind: the mapping goes at the dereg */
static int t_no_hold(void)
{
	struct pair p;
	struct zmr m;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, LEN) || zmr_setup(&p.s.n[0], &m) ||
	    zc_write(&p, &m))
		return -1;
	const uint8_t *at = held_at[0];
	for (unsigned i = 0; i < nheld; i++)
		emu_mrmap_put(held[i]);
	nheld = 0;
	CHECK(mapped(at));
	CHECK(!emu_mr_dereg(p.s.n[0].ctx, m.handle));
	CHECK_EQ(p.s.n[0].dev.cnt.zc_unmap_deferred, 0);
	CHECK(!mapped(at));
	munmap(m.buf, LEN);
	close(m.fd);
	pair_fini(&p);
	return 0;
}

/* A page punched out of the file after the daemon mapped it, and filled
 * again by the client: the daemon's mapping lacks it (and may not fault
 * it in: docs/security.md, "Whose memory"). Its frames are not sent from
 * the mapping, where a port would read it unguarded, but copied through
 * the registration's own route; the WRITE carries every byte. */
static int t_missing(void)
{
	struct pair p;
	struct zmr m;

	if (pair_setup(&p, IBV_QPT_RC, IBV_MTU_1024, LEN) || zmr_setup(&p.s.n[0], &m))
		return -1;
	CHECK(!fallocate(m.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5 * 4096, 4096));
	if (zc_write_n(&p, &m, LEN / 1024 - 4))
		return -1;
	for (unsigned i = 0; i < nheld; i++)
		emu_mrmap_put(held[i]);
	nheld = 0;
	CHECK(!emu_mr_dereg(p.s.n[0].ctx, m.handle));
	munmap(m.buf, LEN);
	close(m.fd);
	pair_fini(&p);
	return 0;
}

static const struct xt_test tests[] = {
	{ "zc_hold_dereg", t_hold_dereg },
	{ "zc_hold_ctx_exit", t_hold_ctx_exit },
	{ "zc_no_hold", t_no_hold },
	{ "zc_missing", t_missing },
};

int main(int argc, char **argv)
{
	return xt_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
