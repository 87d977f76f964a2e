/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "pair.h"

int pair_setup(struct pair *p, enum ibv_qp_type t, enum ibv_mtu mtu, size_t mrlen)
{
	return pair_setup_cap(p, t, mtu, mrlen, NULL);
}

/* a QP of node n of p: 256 deep, or of capabilities cap */
static int pair_qp(struct pair *p, int n, enum ibv_qp_type t, const struct ibv_qp_cap *cap,
		   struct sim_qp *q)
{
	return cap ? sim_qp_cap(&p->s.n[n], t, cap, 0, q, -1) : sim_qp(&p->s.n[n], t, 256, q, -1);
}

int pair_setup_cap(struct pair *p, enum ibv_qp_type t, enum ibv_mtu mtu, size_t mrlen,
		   const struct ibv_qp_cap *cap)
{
	memset(p, 0, sizeof(*p));
	if (sim_init(&p->s) || pair_qp(p, 0, t, cap, &p->a) || pair_qp(p, 1, t, cap, &p->b) ||
	    sim_mr(&p->s.n[0], mrlen, ALL_ACCESS, &p->ma) ||
	    sim_mr(&p->s.n[1], mrlen, ALL_ACCESS, &p->mb) ||
	    sim_connect(&p->a, &p->b, mtu) || sim_connect(&p->b, &p->a, mtu)) {
		fprintf(stderr, "setup failed\n");
		return -1;
	}
	return 0;
}

void pair_fini(struct pair *p)
{
	sim_hook = NULL;
	sim_fini(&p->s);
	free(p->ma.buf);
	free(p->mb.buf);
}

int pair_ah(struct pair *p, uint8_t tclass, uint32_t *ahh)
{
	struct uroce_create_ah_req ah;

	memset(&ah, 0, sizeof(ah));
	ah.pd = p->s.n[0].pd;
	ah.attr.is_global = 1;
	ah.attr.port_num = 1;
	ah.attr.grh.sgid_index = 1;
	ah.attr.grh.dgid = p->s.n[1].dev.gids[1];
	ah.attr.grh.traffic_class = tclass;
	if (emu_ah_create(p->s.n[0].ctx, &ah, ahh)) {
		fprintf(stderr, "address handle failed\n");
		return -1;
	}
	return 0;
}

void xt_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

bool xt_zero(const void *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (((const uint8_t *)b)[i])
			return false;
	return true;
}

struct uroce_sge xt_sge(struct sim_mr *m, size_t off, uint32_t len)
{
	struct uroce_sge s = { (uintptr_t)m->buf + off, len, m->lkey };
	return s;
}

void xt_wqe(struct uroce_send_wqe *w, uint64_t wr_id, uint8_t op, unsigned nsge)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = op;
	w->num_sge = (uint8_t)nsge;
	w->send_flags = IBV_SEND_SIGNALED;
}

void xt_post(struct pair *p, uint64_t id, uint8_t op, uint32_t off, uint32_t len,
	     uint32_t roff)
{
	struct uroce_send_wqe w;
	struct uroce_sge s = xt_sge(&p->ma, off, len);

	xt_wqe(&w, id, op, 1);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.atomic.remote_addr = (uintptr_t)p->mb.buf + roff;
		w.atomic.rkey = p->mb.rkey;
		w.atomic.compare_add = 1;
	} else {
		w.rdma.remote_addr = (uintptr_t)p->mb.buf + roff;
		w.rdma.rkey = p->mb.rkey;
	}
	sim_post_send(&p->a, &w, &s, NULL);
}

int xt_events(struct sim_node *n, enum ibv_event_type t)
{
	struct uroce_async_event e[64];
	int k = sim_events(n, e, 64), i, hit = 0;

	for (i = 0; i < k; i++)
		if (e[i].event_type == (uint32_t)t)
			hit++;
	return hit;
}

uint32_t xt_rng(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return (uint32_t)(*st >> 11);
}

bool xt_parse(const uint8_t *frame, uint32_t len, struct wire_pkt *pkt)
{
	return wire_parse(frame, len, pkt) == WIRE_OK;
}

void xt_rebuild(uint8_t *frame, uint32_t len, struct wire_pkt *pkt)
{
	uint8_t tmp[4096];
	size_t fl;

	/* the payload points into frame: build elsewhere, then copy back */
	if (len <= sizeof(tmp) && !wire_build(pkt, tmp, sizeof(tmp), 0, &fl) && fl == len)
		memcpy(frame, tmp, len);
	else
		CHECK(!"rebuild failed");
}

int xt_main(const struct xt_test *t, unsigned n, int argc, char **argv)
{
	unsigned i;
	int ran = 0;

	for (i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], t[i].name))
			continue;
		ran++;
		if (t[i].fn())
			sim_failures++;
		fprintf(stderr, "%s: %s\n", t[i].name, sim_failures ? "FAIL" : "ok");
	}
	if (!ran) {
		fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "?");
		return 1;
	}
	return sim_failures ? 1 : 0;
}
