/* SPDX-License-Identifier: MIT */
/* Completion queues: the daemon produces CQEs into a shared ring, the
 * shim consumes them. Polling and arming make no system call. */
#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "urv_base.h"
#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_verbs.h"

/* Liveness of the daemon while an application spins on an empty CQ: a
 * clock read (vDSO, no system call) every URV_EMPTY_CLOCK empty polls, and
 * one poll() of the control socket per URV_GONE_CHECK_NS of empty polling,
 * so a SIGKILLed daemon shows within about a millisecond for ~0.1% of a
 * core, and a CQ with work never pays anything. */
#define URV_EMPTY_CLOCK 256u
#define URV_GONE_CHECK_NS 1000000ull
#define URV_GONE_AFTER_NS 2000000ull  /* empty this long before the first check */

#define URV_CQ_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			 IBV_WC_EX_WITH_DLID_PATH_BITS | \
			 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)

static int map_ring(struct urv_cq *cq, int fd, const struct uroce_create_cq_rep *rep)
{
	void *p = mmap(NULL, rep->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	if (rep->entries == 0 || (rep->entries & (rep->entries - 1)) ||
	    rep->entries > UINT32_MAX / UROCE_CQE_INL_SIZE ||
	    UROCE_CQ_INL_OFFSET(rep->entries) +
	    (uint64_t)rep->entries * UROCE_CQE_INL_SIZE > rep->map_size) {
		munmap(p, rep->map_size);
		return -EPROTO;
	}
	cq->ring = p;
	cq->cqes = (struct uroce_cqe *)(void *)((char *)p + UROCE_RING_HDR_SIZE);
	cq->inl = (struct uroce_cqe_inl *)(void *)((char *)p + UROCE_CQ_INL_OFFSET(rep->entries));
	cq->map_size = rep->map_size;
	cq->entries = rep->entries;
	return 0;
}

static struct urv_cq *cq_create(struct ibv_context *ibctx, int cqe,
				void *cq_context, struct ibv_comp_channel *ch,
				int vec, uint64_t wc_flags)
{
	struct urv_context *c = to_uctx(ibctx);
	struct uroce_create_cq_req req;
	struct uroce_create_cq_rep rep;
	struct urv_cq *cq;
	int fd, ret;

	if (cqe < 1 || cqe > c->info.dev_attr.max_cqe || vec < 0 ||
	    vec >= ibctx->num_comp_vectors || (ch && ch->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	urv_obj_add(&cq->obj, URV_OBJ_CQ);
	memset(&req, 0, sizeof(req));
	req.cqe = (uint32_t)cqe;
	req.channel = ch ? (int32_t)to_uch(ch)->handle : -1;
	req.user_handle = cq->obj.id;
	req.comp_vector = (uint32_t)vec;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		req.flags = UROCE_CQ_F_TIMESTAMP;
	ret = urv_ctl(c, UROCE_OP_CREATE_CQ, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, &fd, 1);
	if (ret)
		goto err;
	ret = map_ring(cq, fd, &rep);
	close(fd);
	if (ret) {
		struct uroce_handle_msg d = { .handle = rep.handle };

		urv_ctl(c, UROCE_OP_DESTROY_CQ, &d, sizeof(d), NULL, 0, NULL,
			0, NULL, 0);
		goto err;
	}
	cq->ctx = c;
	urv_spin_init(&cq->lock);
	cq->wc_flags_ex = wc_flags;
	cq->ex.context = ibctx;
	cq->ex.channel = ch;
	cq->ex.cq_context = cq_context;
	cq->ex.handle = rep.handle;
	cq->ex.cqe = (int)rep.cqe;
	pthread_mutex_init(&cq->ex.mutex, NULL);
	pthread_cond_init(&cq->ex.cond, NULL);
	urv_cq_ex_init(cq);
	if (ch) {
		pthread_mutex_lock(&ibctx->mutex);
		ch->refcnt++;
		pthread_mutex_unlock(&ibctx->mutex);
	}
	return cq;
err:
	urv_obj_del(&cq->obj);
	free(cq);
	errno = -ret;
	return NULL;
}

struct ibv_cq *urv_create_cq(struct ibv_context *ibctx, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int vec)
{
	struct urv_cq *cq = cq_create(ibctx, cqe, cq_ctx, ch, vec,
				      IBV_WC_STANDARD_FLAGS);

	return cq ? (struct ibv_cq *)&cq->ex : NULL;
}

struct ibv_cq_ex *urv_create_cq_ex(struct ibv_context *ibctx,
				   struct ibv_cq_init_attr_ex *a)
{
	struct urv_cq *cq;

	if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
				       IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wc_flags & ~(uint64_t)URV_CQ_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* as mlx5: the PD mask names a parent domain of this context */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!a->parent_domain || a->parent_domain->context != ibctx ||
	     !to_upd(a->parent_domain)->inner)) {
		errno = EINVAL;
		return NULL;
	}
	/* SINGLE_THREADED is only a hint; IGNORE_OVERRUN would need the
	 * daemon to keep writing over unread CQEs, which it never does */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = cq_create(ibctx, (int)a->cqe, a->cq_context, a->channel,
		       (int)a->comp_vector, a->wc_flags);
	if (!cq)
		return NULL;
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		cq->pdom = urv_pdom_get(a->parent_domain);
	}
	return &cq->ex;
}

int urv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct urv_cq *cq = to_ucq(ibcq);
	struct uroce_resize_cq_req req = { .handle = ibcq->handle };
	struct uroce_create_cq_rep rep;
	struct uroce_ring_hdr *old = cq->ring;
	size_t old_size = cq->map_size;
	int fd, ret;

	if (cqe < 1 || cqe > cq->ctx->info.dev_attr.max_cqe)
		return EINVAL;
	req.cqe = (uint32_t)cqe;
	/* polls wait: the daemon copies what we have not consumed yet */
	urv_spin_lock(&cq->lock);
	ret = urv_ctl(cq->ctx, UROCE_OP_RESIZE_CQ, &req, sizeof(req), &rep,
		      sizeof(rep), NULL, 0, &fd, 1);
	if (!ret) {
		ret = map_ring(cq, fd, &rep);
		close(fd);
		if (!ret) {
			munmap(old, old_size);
			ibcq->cqe = (int)rep.cqe;
		}
	}
	urv_spin_unlock(&cq->lock);
	return -ret;
}

int urv_destroy_cq(struct ibv_cq *ibcq)
{
	struct urv_cq *cq = to_ucq(ibcq);
	struct uroce_handle_msg req = { .handle = ibcq->handle };
	int ret;

	ret = urv_ctl(cq->ctx, UROCE_OP_DESTROY_CQ, &req, sizeof(req), NULL, 0,
		      NULL, 0, NULL, 0);
	if (ret && ret != -ENODEV)
		return -ret;
	urv_obj_del(&cq->obj);
	if (ibcq->channel) {
		pthread_mutex_lock(&ibcq->context->mutex);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	/* every event handed out must be acknowledged first (verbs rule) */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_got ||
	       ibcq->async_events_completed != cq->obj.events_got)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	munmap(cq->ring, cq->map_size);
	urv_pdom_put(cq->pdom);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq);
	return 0;
}

/* A small receive payload the daemon left in the ring (abi.h,
 * uroce_cqe_inl): into the receive buffer before the completion is seen.
 * The pieces are the application's own receive SGEs, checked by the
 * daemon; the bounds here only keep a confused daemon inside the slot. */
static inline void cqe_scatter(const struct urv_cq *cq, const struct uroce_cqe *e, uint32_t idx)
{
	const struct uroce_cqe_inl *s = &cq->inl[idx];
	uint32_t left = e->byte_len, off = 0;
	unsigned n = e->inl_nseg;

	if (n > UROCE_CQE_INL_SEGS || left > UROCE_CQE_INL_DATA)
		return;
	for (unsigned i = 0; i < n && left; i++) {
		uint32_t l = s->seg[i].len < left ? s->seg[i].len : left;

		memcpy((void *)(uintptr_t)s->seg[i].addr, s->data + off, l);
		off += l;
		left -= l;
	}
}

static inline void cqe_to_wc(const struct uroce_cqe *e, struct ibv_wc *wc)
{
	wc->wr_id = e->wr_id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = (enum ibv_wc_opcode)e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm_or_inv;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

int urv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct urv_cq *cq = to_ucq(ibcq);
	struct uroce_ring_hdr *r;
	uint32_t prod, cons, avail;
	int i;

	if (n < 0)
		return -EINVAL;
	urv_spin_lock(&cq->lock);
	r = cq->ring;
	/* after an overrun "the CQ cannot be used" (ibv_poll_cq(3)) */
	if (__builtin_expect(__atomic_load_n(&r->flags, __ATOMIC_RELAXED) &
			     UROCE_RING_F_ERROR, 0)) {
		urv_spin_unlock(&cq->lock);
		return -EOVERFLOW;
	}
	cons = r->cons;
	prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);
	avail = prod - cons;
	if (avail == 0) {
		uint32_t f = __atomic_load_n(&r->flags, __ATOMIC_RELAXED);
		bool gone = false;

		/* an application busy-polling after the daemon died gets an
		 * error instead of 0 forever */
		if (__builtin_expect(++cq->empty_polls >= URV_EMPTY_CLOCK, 0)) {
			struct timespec ts;
			uint64_t now;

			cq->empty_polls = 0;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			if (!cq->empty_since_ns) {
				/* a completion that is merely on its way costs
				 * nothing: check only once the wait is long */
				cq->empty_since_ns = now;
				cq->gone_check_ns = now - URV_GONE_CHECK_NS + URV_GONE_AFTER_NS;
			} else if ((int64_t)(now - cq->gone_check_ns) >= (int64_t)URV_GONE_CHECK_NS) {
				cq->gone_check_ns = now;
				gone = urv_daemon_gone(cq->ctx);
			}
		}
		urv_spin_unlock(&cq->lock);
		if ((f & UROCE_RING_F_DEAD) || gone)
			return -ENODEV;
		return 0;
	}
	cq->empty_polls = 0;
	cq->empty_since_ns = 0;
	if (avail > cq->entries) {  /* overrun: the CQ is unusable */
		urv_spin_unlock(&cq->lock);
		return -EOVERFLOW;
	}
	if ((uint32_t)n > avail)
		n = (int)avail;
	for (i = 0; i < n; i++) {
		uint32_t idx = (cons + (uint32_t)i) & (cq->entries - 1);
		const struct uroce_cqe *e = &cq->cqes[idx];

		if (e->inl_nseg)
			cqe_scatter(cq, e, idx);
		cqe_to_wc(e, &wc[i]);
	}
	__atomic_store_n(&r->cons, cons + (uint32_t)n, __ATOMIC_RELEASE);
	urv_spin_unlock(&cq->lock);
	return n;
}

/* A QP moved to RESET takes its unpolled completions with it, as mlx4 and
 * mlx5 clean their CQs: the QP's next life must not poll the flushes of
 * its last one (rdma-core's test_mr restates QPs after an error). The
 * daemon published every CQE of the QP before it answered the modify;
 * only [cons, prod) is moved, which the producer never writes, the
 * survivors keep their order and move up by the number dropped. */
void urv_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct urv_cq *cq = to_ucq(ibcq);
	struct uroce_ring_hdr *r = cq->ring;
	uint32_t cons, prod, mask = cq->entries - 1, drop = 0;

	urv_spin_lock(&cq->lock);
	cons = r->cons;
	prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);
	if (prod - cons > cq->entries) { /* overrun: the CQ is unusable anyway */
		urv_spin_unlock(&cq->lock);
		return;
	}
	for (uint32_t i = prod; i != cons; i--) {
		uint32_t from = (i - 1) & mask, to = (i - 1 + drop) & mask;

		if (cq->cqes[from].qp_num == qpn) {
			drop++;
		} else if (drop) {
			cq->cqes[to] = cq->cqes[from];
			if (cq->cqes[from].inl_nseg)
				cq->inl[to] = cq->inl[from];
		}
	}
	if (drop)
		__atomic_store_n(&r->cons, cons + drop, __ATOMIC_RELEASE);
	urv_spin_unlock(&cq->lock);
}

int urv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct urv_cq *cq = to_ucq(ibcq);

	/* seq_cst: the arm must be visible before we (or the app) look at
	 * the ring again, or a CQE written in between would be missed */
	__atomic_fetch_or(&cq->ring->arm,
			  solicited_only ? UROCE_ARM_SOLICITED : UROCE_ARM_NEXT,
			  __ATOMIC_SEQ_CST);
	return 0;
}

/* ---- ibv_cq_ex ---- */

static inline struct urv_cq *ex_to_ucq(struct ibv_cq_ex *ex)
{
	return (struct urv_cq *)(void *)ex;
}

static int ex_load(struct urv_cq *cq)
{
	struct uroce_ring_hdr *r = cq->ring;
	uint32_t prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);

	if (prod == cq->cur_idx) {
		cq->cur = NULL;
		return ENOENT;
	}
	cq->cur = &cq->cqes[cq->cur_idx & (cq->entries - 1)];
	if (cq->cur->inl_nseg)
		cqe_scatter(cq, cq->cur, cq->cur_idx & (cq->entries - 1));
	cq->ex.wr_id = cq->cur->wr_id;
	cq->ex.status = (enum ibv_wc_status)cq->cur->status;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct urv_cq *cq = ex_to_ucq(ex);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;
	urv_spin_lock(&cq->lock);
	cq->cur_idx = cq->ring->cons;
	ret = ex_load(cq);
	if (ret) {
		uint32_t f = __atomic_load_n(&cq->ring->flags, __ATOMIC_RELAXED);

		urv_spin_unlock(&cq->lock);
		if (f & (UROCE_RING_F_ERROR | UROCE_RING_F_DEAD))
			return EIO;
	}
	return ret;
}

static int ex_next_poll(struct ibv_cq_ex *ex)
{
	struct urv_cq *cq = ex_to_ucq(ex);

	if (cq->cur) {
		cq->cur_idx++;
		__atomic_store_n(&cq->ring->cons, cq->cur_idx, __ATOMIC_RELEASE);
	}
	return ex_load(cq);
}

static void ex_end_poll(struct ibv_cq_ex *ex)
{
	struct urv_cq *cq = ex_to_ucq(ex);

	if (cq->cur) {
		cq->cur_idx++;
		__atomic_store_n(&cq->ring->cons, cq->cur_idx, __ATOMIC_RELEASE);
		cq->cur = NULL;
	}
	urv_spin_unlock(&cq->lock);
}

#define CUR(ex) (ex_to_ucq(ex)->cur)
static enum ibv_wc_opcode ex_opcode(struct ibv_cq_ex *ex)
{ return (enum ibv_wc_opcode)CUR(ex)->opcode; }
static uint32_t ex_vendor_err(struct ibv_cq_ex *ex) { return CUR(ex)->vendor_err; }
static uint32_t ex_byte_len(struct ibv_cq_ex *ex) { return CUR(ex)->byte_len; }
static __be32 ex_imm(struct ibv_cq_ex *ex) { return CUR(ex)->imm_or_inv; }
static uint32_t ex_qp_num(struct ibv_cq_ex *ex) { return CUR(ex)->qp_num; }
static uint32_t ex_src_qp(struct ibv_cq_ex *ex) { return CUR(ex)->src_qp; }
static unsigned int ex_wc_flags(struct ibv_cq_ex *ex) { return CUR(ex)->wc_flags; }
static uint32_t ex_slid(struct ibv_cq_ex *ex) { return CUR(ex)->slid; }
static uint8_t ex_sl(struct ibv_cq_ex *ex) { return CUR(ex)->sl; }
static uint8_t ex_dlid_path_bits(struct ibv_cq_ex *ex) { return CUR(ex)->dlid_path_bits; }
static uint64_t ex_ts(struct ibv_cq_ex *ex) { return CUR(ex)->timestamp_ns; }
static uint16_t ex_cvlan(struct ibv_cq_ex *ex) { (void)ex; return 0; }
static uint32_t ex_flow_tag(struct ibv_cq_ex *ex) { (void)ex; return 0; }
static void ex_tm_info(struct ibv_cq_ex *ex, struct ibv_wc_tm_info *t)
{ (void)ex; memset(t, 0, sizeof(*t)); }
static uint64_t ex_wallclock(struct ibv_cq_ex *ex) { (void)ex; return 0; }

void urv_cq_ex_init(struct urv_cq *cq)
{
	struct ibv_cq_ex *ex = &cq->ex;

	ex->start_poll = ex_start_poll;
	ex->next_poll = ex_next_poll;
	ex->end_poll = ex_end_poll;
	ex->read_opcode = ex_opcode;
	ex->read_vendor_err = ex_vendor_err;
	ex->read_byte_len = ex_byte_len;
	ex->read_imm_data = ex_imm;
	ex->read_qp_num = ex_qp_num;
	ex->read_src_qp = ex_src_qp;
	ex->read_wc_flags = ex_wc_flags;
	ex->read_slid = ex_slid;
	ex->read_sl = ex_sl;
	ex->read_dlid_path_bits = ex_dlid_path_bits;
	ex->read_completion_ts = ex_ts;
	ex->read_cvlan = ex_cvlan;
	ex->read_flow_tag = ex_flow_tag;
	ex->read_tm_info = ex_tm_info;
	ex->read_completion_wallclock_ns = ex_wallclock;
}
