/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the shared rings: a hostile application writes the
 * SQ/RQ/SRQ/CQ headers (prod, cons, entries, stride, arm, flags) and WQEs
 * (every field: opcode, num_sge, send_flags, inline_len, keys, AH handles,
 * addresses, raw slot bytes) while the engine runs: doorbell scan,
 * requester, responder receiving into an RQ or an SRQ, CQ production, and
 * flushes when a QP goes to ERR.
 *
 * Harness: tests/xport's simulated two-device wire with a virtual clock (no
 * DPDK); every input gets fresh devices, so inputs are independent and a
 * crash reproduces from its input alone.
 *
 * The input is a script: one command byte, then its operands; operands
 * past the end of the input read as zero.
 *
 * Command 241 or 252 (the "arm a CQ" command's two values from 0xf0) has
 * the wire rewrite one frame in flight instead (fz_tamper): the nth next
 * frame to a node gets its opcode, pad count, payload length, AETH
 * syndrome or PSN changed and is rebuilt with a good ICRC - the
 * malformed-but-parsable packets the transport judges (docs/transport.md,
 * "Checks on received packets").
 *
 * Properties (a violation traps, so libFuzzer keeps the input):
 *   - no crash, no out-of-bounds access, no undefined behaviour, no leak
 *     (ASan/UBSan/LSan in the clang build);
 *   - bounded work: after the script the engine must go idle within
 *     FZ_IDLE_STEPS passes of the poll loop and FZ_IDLE_NS of virtual time;
 *   - the daemon publishes exactly the CQ producer index it keeps, and never
 *     writes outside a CQ's slots (the rest of the CQ mapping stays as the
 *     application left it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rte_log.h>

#include "sim.h"
#include "xport_int.h"
#include "fz_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MRLEN (64u * 1024)
#define FZ_NQP 6           /* RC, UC, UD on each node */
#define FZ_MAX_CMDS 96
#define FZ_RUN_STEPS 4096  /* poll-loop passes per "run" command */
#define FZ_IDLE_STEPS 200000
#define FZ_IDLE_NS (30ull * 1000000000ull)

#define fz_assert(c) do { if (!(c)) { \
	fprintf(stderr, "fuzz_rings: property failed: %s (line %d)\n", #c, __LINE__); \
	__builtin_trap(); } } while (0)

struct fz {
	struct sim s;
	struct sim_qp q[FZ_NQP];   /* 0..2 on node 0, 3..5 on node 1; i and i+3 are peers */
	struct sim_mr m[2];
	uint32_t ah[2];            /* node i's AH towards the other node */
	int srq;                   /* node 1's SRQ handle (used by its RC QP) */
	void *db[2];
};

/* Small retry counts and short timers: a hostile script must not keep the
 * engine busy for long in virtual time, and rnr_retry 7 (infinite) would. */
static int fz_connect(struct sim_qp *a, struct sim_qp *b)
{
	const struct sim_conn c = {
		.mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE | UROCE_ACCESS_FLUSH,
		.psn = 0x100, .rd_atomic = 2, .timeout = 8, .retry_cnt = 2, .rnr_retry = 2,
	};

	return sim_connect_with(a, b, &c);
}

static int fz_ah(struct sim_node *n, struct sim_node *peer, uint32_t *h)
{
	struct uroce_create_ah_req q;

	memset(&q, 0, sizeof(q));
	q.pd = n->pd;
	q.attr.is_global = 1;
	q.attr.port_num = 1;
	q.attr.grh.sgid_index = 1;
	q.attr.grh.dgid = peer->dev.gids[1];
	q.attr.grh.hop_limit = 64;
	return emu_ah_create(n->ctx, &q, h);
}

/* One frame in flight to rewrite (command 241/252). */
static struct {
	uint8_t on, to, skip, kind, val;
} fz_tp;

/* Payload of a rewritten frame: the original's, then zeros (a grown one). */
static uint8_t fz_tp_pay[8192];

static void fz_tp_edit(struct wire_pkt *p)
{
	switch (fz_tp.kind % 6) {
	case 0: /* another opcode of the same transport (an undefined one does not build) */
		p->bth.opcode = (uint8_t)((p->bth.opcode & 0xe0) | (fz_tp.val % 0x1e));
		break;
	case 1: /* a pad count of its own */
		p->bth.pad = fz_tp.val & 3;
		break;
	case 2: /* shorter: the pad stays what it was */
		p->payload_len = p->payload_len > fz_tp.val ? p->payload_len - fz_tp.val : 0;
		break;
	case 3: /* longer: payload where an opcode has none, MIDDLEs over the MTU */
		p->payload_len += fz_tp.val;
		break;
	case 4:
		p->aeth.syndrome = fz_tp.val;
		break;
	default:
		p->bth.psn = (p->bth.psn + (uint32_t)(int8_t)fz_tp.val) & WIRE_PSN_MASK;
		break;
	}
}

static bool fz_tamper(struct sim *s, int to, uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;
	enum wire_reason r;
	uint8_t *b;
	size_t n = 0;

	(void)s;
	if (!fz_tp.on || to != fz_tp.to)
		return true;
	if (fz_tp.skip) {
		fz_tp.skip--;
		return true;
	}
	fz_tp.on = 0;
	r = wire_parse(frame, len, &p);
	if ((r != WIRE_OK && !wire_reason_is_transport(r)) ||
	    p.payload_len + 256u > sizeof(fz_tp_pay))
		return true;
	memset(fz_tp_pay, 0, sizeof(fz_tp_pay));
	memcpy(fz_tp_pay, p.payload, p.payload_len);
	p.payload = fz_tp_pay;
	fz_tp_edit(&p);
	b = malloc(len + 512);
	if (!b || wire_build(&p, b, len + 512, WIRE_BUILD_KEEP_PAD, &n)) {
		free(b);
		return true; /* not a frame any more: the original goes */
	}
	sim_deliver(to, b, (uint32_t)n);
	return false;
}

static int fz_setup(struct fz *f)
{
	static const enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct ibv_qp_cap cap = {
		.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 4,
		.max_recv_sge = 4, .max_inline_data = 64,
	};

	static bool quiet;

	/* Overruns and lost events are logged per input: FUZZ_LOG=1 keeps that. */
	if (!quiet && !getenv("FUZZ_LOG"))
		rte_log_set_global_level(RTE_LOG_ERR);
	quiet = true;
	memset(f, 0, sizeof(*f));
	memset(&fz_tp, 0, sizeof(fz_tp));
	sim_hook = fz_tamper;
	sim_now = 1000000;
	if (sim_init(&f->s))
		return -1;
	for (int i = 0; i < 2; i++) {
		/* A doorbell page, as HELLO maps one (the context unmaps it). */
		f->db[i] = mmap(NULL, UROCE_DB_PAGE_SIZE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (f->db[i] == MAP_FAILED)
			return -1;
		f->s.n[i].ctx->db = f->db[i];
		if (sim_mr(&f->s.n[i], FZ_MRLEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				UROCE_ACCESS_FLUSH_GLOBAL, &f->m[i]))
			return -1;
		if (fz_ah(&f->s.n[i], &f->s.n[1 - i], &f->ah[i]))
			return -1;
	}
	f->srq = sim_srq(&f->s.n[1], 8, 4);
	if (f->srq < 0)
		return -1;
	for (int i = 0; i < FZ_NQP; i++) {
		/* 8-entry CQs: a few WRs overrun them. */
		if (sim_qp_cap(&f->s.n[i / 3], types[i % 3], &cap, 8, &f->q[i],
			       i == 3 ? f->srq : -1))
			return -1;
	}
	for (int i = 0; i < FZ_NQP; i++)
		if (fz_connect(&f->q[i], &f->q[(i + 3) % FZ_NQP]))
			return -1;
	return 0;
}

static void fz_fini(struct fz *f)
{
	sim_fini(&f->s);
	free(f->m[0].buf);
	free(f->m[1].buf);
}

/* One pass of the engine: deliver queued frames, poll both devices, then
 * advance the virtual clock to the next deadline if it is before end.
 * Returns false when idle (nothing queued, no deadline before end). */
static bool fz_step(struct fz *f, uint64_t end)
{
	uint64_t t = UINT64_MAX, u;

	for (int i = 0; i < 2; i++)
		emu_ctx_doorbells(f->s.n[i].ctx);
	sim_run(&f->s, 0); /* delivers every queued frame, polls, no time passes */
	for (int i = 0; i < 2; i++) {
		u = emu_xport_next_deadline(&f->s.n[i].dev);
		if (u < t)
			t = u;
		u = emu_port_next_deadline(&f->s.n[i].dev);
		if (u < t)
			t = u;
	}
	if (t == UINT64_MAX || t > end)
		return false;
	if (t > sim_now)
		sim_now = t;
	return true;
}

static struct emu_ring *fz_ring(struct fz *f, uint8_t sel)
{
	struct sim_qp *q = &f->q[(sel >> 2) % FZ_NQP];

	switch (sel & 3) {
	case 0:
		return &q->qp->sq;
	case 1:
		return q->qp->rq.entries ? &q->qp->rq : NULL;
	default: {
		struct emu_srq *srq = emu_ctx_get(f->s.n[1].ctx, (uint32_t)f->srq, EMU_OBJ_SRQ);

		return srq ? &srq->rq : NULL;
	}
	}
}

static struct emu_cq *fz_cq(struct fz *f, uint8_t sel)
{
	struct sim_qp *q = &f->q[(sel >> 1) % FZ_NQP];

	return sel & 1 ? q->rcq : q->scq;
}

/* Ring a doorbell the way the shim does (bit, summary bit), so the scan in
 * emu_ctx_doorbells() finds it; sometimes a random bit instead. */
static void fz_doorbell(struct fz *f, struct fz_in *in)
{
	uint8_t sel = fz_u8(in);
	struct sim_node *n = &f->s.n[sel & 1];
	struct uroce_db_page *db = n->ctx->db;
	uint32_t idx;

	if (sel & 2)
		idx = fz_u16(in) % UROCE_DB_MAX;
	else if (sel & 4 && n == &f->s.n[1])
		idx = ((struct emu_srq *)emu_ctx_get(n->ctx, (uint32_t)f->srq, EMU_OBJ_SRQ))->db_index;
	else
		idx = f->q[(sel & 1) * 3 + (sel >> 3) % 3].qp->db_index;
	__atomic_fetch_or(&db->bits[idx / 64], 1ull << (idx % 64), __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->summary[idx / 64 / 64], 1ull << (idx / 64 % 64), __ATOMIC_RELEASE);
}

/* A send WQE: every field from the input, but addresses, keys and handles
 * are usually plausible ones so the fuzzer gets past the first checks. */
static void fz_post_send(struct fz *f, struct fz_in *in)
{
	static const uint8_t ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW,
		IBV_WR_ATOMIC_WRITE, UROCE_WR_OP_FLUSH,
	};
	uint8_t qs = fz_u8(in), mode = fz_u8(in);
	struct sim_qp *q = &f->q[qs % FZ_NQP];
	int me = (qs % FZ_NQP) / 3;
	struct sim_mr *mine = &f->m[me], *theirs = &f->m[1 - me];
	struct emu_ring *r = &q->qp->sq;
	struct uroce_send_wqe w;
	uint8_t *slot;
	uint32_t room, nsge;

	memset(&w, 0, sizeof(w));
	w.wr_id = fz_u16(in);
	w.opcode = mode & 1 ? fz_u8(in) : ops[fz_u8(in) % sizeof(ops)];
	w.num_sge = mode & 2 ? fz_u8(in) : fz_u8(in) % 5;
	w.send_flags = mode & 4 ? fz_u16(in) : (uint16_t)(fz_u8(in) & 0x1f);
	w.inline_len = mode & 8 ? fz_u32(in) : fz_u8(in);
	w.imm_or_inv = mode & 16 ? fz_u32(in) : theirs->rkey;
	if (mode & 32) {
		w.atomic.remote_addr = fz_u64(in);
		w.atomic.compare_add = fz_u64(in);
		w.atomic.swap = fz_u64(in);
		w.atomic.rkey = fz_u32(in);
	} else if (q->qp->type == IBV_QPT_UD) {
		w.ud.ah = mode & 64 ? fz_u32(in) : f->ah[me];
		w.ud.remote_qpn = mode & 128 ? fz_u32(in) : f->q[(qs % FZ_NQP + 3) % FZ_NQP].qp->qpn;
		w.ud.remote_qkey = 0x11111111;
	} else if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.atomic.remote_addr = (uintptr_t)theirs->buf + (fz_u16(in) & ~7u);
		w.atomic.compare_add = fz_u8(in);
		w.atomic.swap = fz_u8(in);
		w.atomic.rkey = mode & 64 ? fz_u32(in) : theirs->rkey;
	} else {
		w.rdma.remote_addr = (uintptr_t)theirs->buf + fz_u16(in);
		w.rdma.rkey = mode & 64 ? fz_u32(in) : theirs->rkey;
		if (w.opcode == UROCE_WR_OP_FLUSH) {
			/* mostly executable (global), sometimes persistent (the
			 * MR lacks that flag) or a type/level nobody executes */
			w.flush.length = fz_u16(in);
			w.flush.type = fz_u8(in) % 5;
			w.flush.level = fz_u8(in) % 3;
		}
	}
	slot = emu_ring_slot(r, __atomic_load_n(&r->hdr->prod, __ATOMIC_RELAXED));
	room = r->stride - UROCE_SEND_WQE_HDR;
	memcpy(slot, &w, sizeof(w));
	nsge = room / sizeof(struct uroce_sge);
	if (w.send_flags & IBV_SEND_INLINE) {
		for (uint32_t i = 0; i < room; i++)
			slot[UROCE_SEND_WQE_HDR + i] = fz_u8(in);
	} else {
		for (uint32_t i = 0; i < w.num_sge && i < nsge; i++) {
			struct uroce_sge sg;

			if (mode & 128 && q->qp->type != IBV_QPT_UD) {
				sg.addr = fz_u64(in);
				sg.length = fz_u32(in);
				sg.lkey = fz_u32(in);
			} else {
				sg.addr = (uintptr_t)mine->buf + fz_u16(in);
				sg.length = fz_u16(in) % 3000;
				sg.lkey = mine->lkey;
			}
			memcpy(slot + UROCE_SEND_WQE_HDR + i * sizeof(sg), &sg, sizeof(sg));
		}
	}
	__atomic_fetch_add(&r->hdr->prod, 1, __ATOMIC_RELEASE);
	if (qs & 0x80)
		emu_xport_sq_kick(q->qp);
}

static void fz_post_recv(struct fz *f, struct fz_in *in)
{
	uint8_t sel = fz_u8(in), mode = fz_u8(in);
	struct sim_qp *q = &f->q[sel % FZ_NQP];
	int me = (sel % FZ_NQP) / 3;
	bool to_srq = (sel & 0x40) || q->qp->srq;
	struct emu_srq *srq = emu_ctx_get(f->s.n[1].ctx, (uint32_t)f->srq, EMU_OBJ_SRQ);
	struct emu_ring *r = to_srq ? &srq->rq : &q->qp->rq;
	struct uroce_recv_wqe h;
	uint8_t *slot = emu_ring_slot(r, __atomic_load_n(&r->hdr->prod, __ATOMIC_RELAXED));
	uint32_t nsge = (r->stride - UROCE_RECV_WQE_HDR) / sizeof(struct uroce_sge);

	if (to_srq)
		me = 1;
	h.wr_id = fz_u16(in);
	h.num_sge = mode & 1 ? fz_u32(in) : fz_u8(in) % 5;
	h.rsvd = 0;
	memcpy(slot, &h, sizeof(h));
	for (uint32_t i = 0; i < h.num_sge && i < nsge; i++) {
		struct uroce_sge sg;

		if (mode & 2) {
			sg.addr = fz_u64(in);
			sg.length = fz_u32(in);
			sg.lkey = fz_u32(in);
		} else {
			sg.addr = (uintptr_t)f->m[me].buf + fz_u16(in);
			sg.length = fz_u16(in) % 4096;
			sg.lkey = f->m[me].lkey;
		}
		memcpy(slot + UROCE_RECV_WQE_HDR + i * sizeof(sg), &sg, sizeof(sg));
	}
	__atomic_fetch_add(&r->hdr->prod, 1, __ATOMIC_RELEASE);
	if (sel & 0x80) {
		if (to_srq)
			emu_xport_srq_kick(srq);
		else
			emu_xport_rq_kick(q->qp);
	}
}

/* Whatever the application may write in a ring header. */
static bool fz_poke_hdr(struct uroce_ring_hdr *h, struct fz_in *in)
{
	uint8_t how = fz_u8(in);
	uint32_t *fld[] = { &h->prod, &h->cons, &h->entries, &h->stride, &h->arm, &h->flags };
	uint32_t *p = fld[(how & 7) % 6];
	bool prod = p == &h->prod;

	if (how & 8)
		*p = fz_u32(in);
	else
		*p += (uint32_t)(int32_t)(int8_t)fz_u8(in);
	return prod;
}

static void fz_run(struct fz *f, uint64_t ns, unsigned steps)
{
	uint64_t end = sim_now + ns;

	for (unsigned i = 0; i < steps && fz_step(f, end); i++)
		;
}

/* Bytes of a CQ's mapping past its slots, which the daemon must never
 * write; the fuzzer fills them with a pattern at setup. */
static uint8_t *fz_cq_tail(struct emu_cq *cq, size_t *len)
{
	uint8_t *end = (uint8_t *)(cq->inl + cq->entries);
	uint8_t *map_end = (uint8_t *)cq->map + cq->map_size;

	*len = end < map_end ? (size_t)(map_end - end) : 0;
	return end;
}

/* CQs whose producer index the application overwrote: the daemon only
 * republishes it with its next CQE. */
static uint32_t fz_cq_prod_poked;

static void fz_check_cqs(struct fz *f)
{
	for (int i = 0; i < FZ_NQP; i++) {
		struct emu_cq *cqs[2] = { f->q[i].scq, f->q[i].rcq };

		for (int k = 0; k < 2; k++) {
			size_t len;
			uint8_t *t = fz_cq_tail(cqs[k], &len);

			for (size_t j = 0; j < len; j++)
				fz_assert(t[j] == 0x5a);
			if (!(fz_cq_prod_poked & (1u << (i * 2 + k))))
				fz_assert(cqs[k]->hdr->prod == cqs[k]->prod);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	struct fz f;
	unsigned steps = 0;

	fz_cq_prod_poked = 0;
	if (fz_setup(&f)) {
		fprintf(stderr, "fuzz_rings: setup failed\n");
		__builtin_trap();
	}
	for (int i = 0; i < FZ_NQP; i++) {
		size_t len;
		uint8_t *t = fz_cq_tail(f.q[i].scq, &len);

		memset(t, 0x5a, len);
		t = fz_cq_tail(f.q[i].rcq, &len);
		memset(t, 0x5a, len);
	}
	for (int c = 0; c < FZ_MAX_CMDS && in.pos < in.n; c++) {
		uint8_t cmd = fz_u8(&in);

		switch (cmd % 11) {
		case 0:
		case 1:
			fz_post_send(&f, &in);
			break;
		case 2:
			fz_post_recv(&f, &in);
			break;
		case 3: { /* a ring header field */
			struct emu_ring *r = fz_ring(&f, fz_u8(&in));

			if (r)
				fz_poke_hdr(r->hdr, &in);
			break;
		}
		case 4: { /* a CQ header field (cons, arm, ...) */
			uint8_t sel = fz_u8(&in);

			if (fz_poke_hdr(fz_cq(&f, sel)->hdr, &in))
				fz_cq_prod_poked |= 1u << ((sel >> 1) % FZ_NQP * 2 + (sel & 1));
			break;
		}
		case 5: /* run the engine for a while */
			fz_run(&f, (uint64_t)fz_u8(&in) * 100000, FZ_RUN_STEPS);
			break;
		case 6: { /* consume completions as an application does */
			struct uroce_cqe cqe[16];

			sim_poll(fz_cq(&f, fz_u8(&in)), cqe, 1 + fz_u8(&in) % 16);
			break;
		}
		case 7: { /* a QP to ERR: flushes */
			struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };

			emu_qp_modify(f.q[fz_u8(&in) % FZ_NQP].qp, &at, IBV_QP_STATE);
			break;
		}
		case 8: { /* raw bytes anywhere in a ring slot */
			struct emu_ring *r = fz_ring(&f, fz_u8(&in));
			uint32_t idx = fz_u16(&in);
			uint32_t off = fz_u16(&in);
			uint8_t n = fz_u8(&in) % 32;

			if (!r)
				break;
			for (uint8_t k = 0; k < n; k++) {
				uint8_t v = fz_u8(&in);

				emu_ring_slot(r, idx)[(off + k) % r->stride] = v;
			}
			break;
		}
		case 9:
			fz_doorbell(&f, &in);
			break;
		default:
			if (cmd >= 0xf0) { /* rewrite a frame in flight */
				fz_tp.on = 1;
				fz_tp.to = fz_u8(&in) & 1;
				fz_tp.skip = fz_u8(&in) % 8;
				fz_tp.kind = fz_u8(&in);
				fz_tp.val = fz_u8(&in);
				break;
			}
			/* arm a CQ */
			__atomic_fetch_or(&fz_cq(&f, fz_u8(&in))->hdr->arm, fz_u8(&in) & 3,
					  __ATOMIC_RELEASE);
			break;
		}
	}
	/* Drain: the engine must go idle in bounded work. */
	{
		uint64_t end = sim_now + FZ_IDLE_NS;

		while (fz_step(&f, end)) {
			steps++;
			fz_assert(steps < FZ_IDLE_STEPS);
		}
	}
	fz_check_cqs(&f);
	fz_fini(&f);
	return 0;
}
