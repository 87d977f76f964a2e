/* SPDX-License-Identifier: MIT */
/* Devices and contexts: attributes reported at HELLO, per-context handle
 * and doorbell tables, doorbell scanning, teardown of everything a context
 * owns when its application goes away. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "emu_log.h"
#include "emu_obj.h"
#include "emu_dev.h"
#include "emu_int.h"

/* Identifiers a remote peer must not guess (key bytes, the QPN start) come
 * from getrandom. UROCE_TEST_SEED (tests only) makes them reproducible. */
static uint64_t emu_rand_state;
static int emu_rand_mode; /* 0 getrandom, 1 seeded (emu_random_init) */

uint64_t emu_rand_next(uint64_t *state)
{
	/* splitmix64: tiny, seedable, good enough for coin flips */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t emu_rand_u32(void)
{
	return (uint32_t)(emu_rand_next(&emu_rand_state) >> 16);
}

/* Read at every device start, so each start (and each test device) picks
 * up the variable as it is then. */
void emu_random_init(const char *dev)
{
	const char *s = getenv("UROCE_TEST_SEED");

	emu_rand_mode = s && *s;
	if (emu_rand_mode) {
		emu_rand_state = strtoull(s, NULL, 0);
		EMU_LOG(NOTICE, "%s: UROCE_TEST_SEED=%s: predictable keys and QPNs\n", dev, s);
	}
}

uint32_t emu_random_u32(void)
{
	uint32_t v;

	if (emu_rand_mode)
		return emu_rand_u32();
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	/* no entropy yet (early boot): still differ per start */
	if (!emu_rand_state) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		emu_rand_state = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)getpid();
	}
	return emu_rand_u32();
}

/* Every memfd the daemon hands to a client comes from here. It is sealed
 * against any change of size before it leaves: a client that could shrink
 * the file would turn the daemon's next access to its mapping into SIGBUS,
 * and one that could grow it would charge the daemon's memory. F_SEAL_SEAL
 * keeps the client from removing or adding seals. */
int emu_shm_create(const char *name, size_t size, int *fd, void **map)
{
	int f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)size) < 0 ||
	    fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = -errno;
		close(f);
		return e;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close(f);
		return e;
	}
	*fd = f;
	*map = m;
	return 0;
}

void emu_shm_destroy(int fd, void *map, size_t size)
{
	if (map)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
}

static void emu_dev_attrs(struct emu_dev *d)
{
	struct ibv_device_attr *a = &d->dev_attr;
	struct ibv_port_attr *p = &d->port_attr;

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "uroce 0.1.0");
	a->node_guid = d->node_guid;
	a->sys_image_guid = d->node_guid;
	a->max_mr_size = EMU_MAX_MR_SIZE;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = UROCE_VENDOR_ID;
	a->vendor_part_id = UROCE_VENDOR_PART_ID;
	a->hw_ver = 0;
	a->max_qp = EMU_MAX_QP;
	a->max_qp_wr = EMU_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
			      IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS |
			      IBV_DEVICE_XRC;
	a->max_sge = EMU_MAX_SGE;
	a->max_sge_rd = EMU_MAX_SGE;
	a->max_cq = EMU_MAX_CQ;
	a->max_cqe = (int)EMU_MAX_CQE - 1;
	a->max_mr = EMU_MAX_MR;
	a->max_pd = EMU_MAX_PD;
	a->max_qp_rd_atom = EMU_MAX_RD_ATOMIC;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = EMU_MAX_QP * EMU_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = EMU_MAX_RD_ATOMIC;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = EMU_MAX_MW;
	a->max_ah = EMU_MAX_AH;
	a->max_srq = EMU_MAX_SRQ;
	a->max_srq_wr = EMU_MAX_SRQ_WR;
	a->max_srq_sge = EMU_MAX_SRQ_SGE;
	a->max_mcast_grp = EMU_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = EMU_MAX_MCAST_ATT;
	a->max_total_mcast_qp_attach = EMU_MAX_MCAST_GRP * EMU_MAX_MCAST_ATT;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;

	memset(p, 0, sizeof(*p));
	p->state = d->port_state;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = d->active_mtu;
	p->gid_tbl_len = UROCE_MAX_GIDS;
	p->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	p->max_msg_sz = 1u << 31;
	p->pkey_tbl_len = 1;
	p->max_vl_num = 1;
	p->active_width = 1;   /* 1X */
	p->active_speed = 32;  /* EDR: 25 Gb/s per lane */
	p->phys_state = 5;     /* LinkUp */
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int emu_dev_core_init(struct emu_dev *d, const char *name, const uint8_t mac[6],
		      uint32_t eth_mtu, const union ibv_gid *gids, uint32_t ngid)
{
	memset(d, 0, sizeof(*d));
	if (!name || strlen(name) >= sizeof(d->name) || ngid > UROCE_MAX_GIDS - 1)
		return -EINVAL;
	if (eth_mtu < 576 || eth_mtu > 9216)
		return -EINVAL;
	strcpy(d->name, name);
	memcpy(d->mac, mac, 6);
	/* IPv6 headers are 20 bytes longer; use the smaller result so one
	 * active MTU works for both GID types */
	d->active_mtu = (enum ibv_mtu)wire_mtu_active(eth_mtu, true);
	d->port_state = IBV_PORT_ACTIVE;
	uint8_t g[8] = { mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5] };
	memcpy(&d->node_guid, g, 8);
	/* GID 0: fe80:: from the MAC, as rxe and the IPv6 stack */
	wire_gid_from_mac((struct wire_gid *)d->gids[0].raw, mac);
	d->gid_count = 1;
	for (uint32_t i = 0; i < ngid; i++)
		d->gids[d->gid_count++] = gids[i];
	d->qpn = calloc(EMU_QPN_TABLE, sizeof(d->qpn[0]));
	d->mcast = calloc(EMU_MAX_MCAST_GRP, sizeof(d->mcast[0]));
	if (!d->qpn || !d->mcast) {
		free(d->qpn);
		free(d->mcast);
		return -ENOMEM;
	}
	emu_random_init(d->name);
	/* a random start per daemon so QPNs cannot be predicted from a
	 * restart; allocation then goes round robin from there */
	d->next_qpn = EMU_QPN_FIRST + emu_random_u32() % (EMU_QPN_TABLE - EMU_QPN_FIRST);
	emu_dev_attrs(d);
	return 0;
}

void emu_dev_hello(const struct emu_dev *d, struct uroce_hello_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->abi_version = UROCE_ABI_VERSION;
	r->daemon_pid = (uint32_t)getpid();
	strcpy(r->dev_name, d->name);
	r->dev_attr = d->dev_attr;
	/* as an HCA reports its limits: what this context may create */
	struct ibv_device_attr *at = &r->dev_attr;
	struct { int *v; enum emu_obj_type t; } lim[] = {
		{ &at->max_qp, EMU_OBJ_QP }, { &at->max_cq, EMU_OBJ_CQ },
		{ &at->max_mr, EMU_OBJ_MR }, { &at->max_pd, EMU_OBJ_PD },
		{ &at->max_mw, EMU_OBJ_MW }, { &at->max_ah, EMU_OBJ_AH },
		{ &at->max_srq, EMU_OBJ_SRQ },
	};
	for (unsigned i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		uint32_t m = emu_lim_ctx[lim[i].t] < emu_lim_uid[lim[i].t] ?
			     emu_lim_ctx[lim[i].t] : emu_lim_uid[lim[i].t];
		if (m < (uint32_t)*lim[i].v)
			*lim[i].v = (int)m;
	}
	r->port_attr = d->port_attr;
	r->port_attr.state = d->port_state;
	r->gid_count = d->gid_count;
	r->max_dm_size = emu_dm_max_size();
	for (uint32_t i = 0; i < d->gid_count; i++) {
		r->gids[i] = d->gids[i];
		r->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
	}
	r->pkeys[0] = 0xffff;
	memcpy(r->mac, d->mac, 6);
	r->node_guid = d->node_guid;
}

/* Defaults: a uid may take a quarter of the device, a context a quarter of
 * that, so a few users always fit whatever one of them does. Channels and
 * contexts cost the daemon descriptors (its limit is ~20000). */
uint32_t emu_lim_ctx[EMU_OBJ_NTYPES] = {
	[EMU_OBJ_PD] = EMU_MAX_PD / 16, [EMU_OBJ_MR] = EMU_MAX_MR / 16,
	[EMU_OBJ_MW] = EMU_MAX_MW / 16, [EMU_OBJ_CHANNEL] = 256,
	[EMU_OBJ_CQ] = EMU_MAX_CQ / 16, [EMU_OBJ_SRQ] = EMU_MAX_SRQ / 16,
	[EMU_OBJ_QP] = EMU_MAX_QP / 16, [EMU_OBJ_AH] = EMU_MAX_AH / 16,
	[EMU_OBJ_DM] = EMU_MAX_DM / 16,
	[EMU_OBJ_XRCD] = 256, [EMU_OBJ_XQP] = EMU_MAX_QP / 16,
	[EMU_OBJ_CM_ID] = 4096, [EMU_OBJ_CM_LISTEN] = EMU_MAX_CM_LISTEN / 16,
	[EMU_OBJ_CM_CONN] = EMU_MAX_CM_CONN / 16,
};
uint32_t emu_lim_uid[EMU_OBJ_NTYPES] = {
	[EMU_OBJ_NONE] = 128,
	[EMU_OBJ_PD] = EMU_MAX_PD / 4, [EMU_OBJ_MR] = EMU_MAX_MR / 4,
	[EMU_OBJ_MW] = EMU_MAX_MW / 4, [EMU_OBJ_CHANNEL] = 1024,
	[EMU_OBJ_CQ] = EMU_MAX_CQ / 4, [EMU_OBJ_SRQ] = EMU_MAX_SRQ / 4,
	[EMU_OBJ_QP] = EMU_MAX_QP / 4, [EMU_OBJ_AH] = EMU_MAX_AH / 4,
	[EMU_OBJ_DM] = EMU_MAX_DM / 4,
	[EMU_OBJ_XRCD] = 1024, [EMU_OBJ_XQP] = EMU_MAX_QP / 4,
	/* a quarter of the CM engine's table: three other users can always
	 * connect, whatever one of them does (docs/security.md) */
	[EMU_OBJ_CM_ID] = EMU_MAX_CM_ID / 4, [EMU_OBJ_CM_LISTEN] = EMU_MAX_CM_LISTEN / 4,
	[EMU_OBJ_CM_CONN] = EMU_MAX_CM_CONN / 4,
};
static const char *const emu_lim_name[EMU_OBJ_NTYPES] = {
	[EMU_OBJ_NONE] = "ctx", [EMU_OBJ_PD] = "pd", [EMU_OBJ_MR] = "mr",
	[EMU_OBJ_MW] = "mw", [EMU_OBJ_CHANNEL] = "channel", [EMU_OBJ_CQ] = "cq",
	[EMU_OBJ_SRQ] = "srq", [EMU_OBJ_QP] = "qp", [EMU_OBJ_AH] = "ah",
	[EMU_OBJ_DM] = "dm",
	[EMU_OBJ_XRCD] = "xrcd", [EMU_OBJ_XQP] = "xqp",
	[EMU_OBJ_CM_ID] = "cm_id", [EMU_OBJ_CM_LISTEN] = "cm_listen", [EMU_OBJ_CM_CONN] = "cm_conn",
};

const char *emu_limit_name(enum emu_obj_type type)
{
	return (unsigned)type < EMU_OBJ_NTYPES ? emu_lim_name[type] : NULL;
}

uint64_t emu_lim_ctx_mem = 256ull << 20;
uint64_t emu_lim_uid_mem = 1ull << 30;

/* device memory is daemon memory charged to the context (dm.c) */
uint32_t emu_dm_max_size(void)
{
	uint64_t m = emu_lim_ctx_mem < emu_lim_uid_mem ? emu_lim_ctx_mem : emu_lim_uid_mem;

	if (emu_lim_ctx[EMU_OBJ_DM] == 0 || emu_lim_uid[EMU_OBJ_DM] == 0)
		return 0;
	m &= ~(uint64_t)4095;
	return m < EMU_DM_MAX_SIZE ? (uint32_t)m : EMU_DM_MAX_SIZE;
}


/* "mem=N[KMG]" */
static int emu_limit_mem(const char *v, bool per_uid)
{
	char *end;

	errno = 0;
	unsigned long long n = strtoull(v, &end, 0);
	if (errno || end == v || *v == '-')
		return -EINVAL;
	unsigned sh = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	if (sh)
		end++;
	if (*end || n > (UINT64_MAX >> sh))
		return -EINVAL;
	*(per_uid ? &emu_lim_uid_mem : &emu_lim_ctx_mem) = (uint64_t)n << sh;
	return 0;
}

int emu_ctx_charge(struct emu_ctx *c, uint64_t bytes)
{
	struct emu_uid_use *u = c->uid_slot >= 0 ? &c->dev->uids[c->uid_slot] : NULL;

	if (bytes > emu_lim_ctx_mem || c->mem > emu_lim_ctx_mem - bytes)
		return -ENOMEM;
	if (u && (bytes > emu_lim_uid_mem || u->mem > emu_lim_uid_mem - bytes))
		return -ENOMEM;
	c->mem += bytes;
	if (u)
		u->mem += bytes;
	return 0;
}

void emu_ctx_uncharge(struct emu_ctx *c, uint64_t bytes)
{
	c->mem -= bytes;
	if (c->uid_slot >= 0)
		c->dev->uids[c->uid_slot].mem -= bytes;
}

int emu_limit_set(const char *spec, bool per_uid)
{
	const char *eq = strchr(spec, '=');
	char *end;

	if (!eq)
		return -EINVAL;
	if (eq - spec == 3 && !strncmp(spec, "mem", 3))
		return emu_limit_mem(eq + 1, per_uid);
	for (unsigned t = 0; t < EMU_OBJ_NTYPES; t++) {
		size_t l = strlen(emu_lim_name[t]);
		if (l != (size_t)(eq - spec) || strncmp(spec, emu_lim_name[t], l))
			continue;
		if (t == EMU_OBJ_NONE && !per_uid)
			return -EINVAL;
		errno = 0;
		unsigned long v = strtoul(eq + 1, &end, 0);
		if (errno || end == eq + 1 || *end || v > UINT32_MAX)
			return -EINVAL;
		(per_uid ? emu_lim_uid : emu_lim_ctx)[t] = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

int emu_ctx_quota(const struct emu_ctx *c, enum emu_obj_type type)
{
	if (c->nobj[type] >= emu_lim_ctx[type])
		return -ENOMEM;
	if (c->uid_slot >= 0 && c->dev->uids[c->uid_slot].nobj[type] >= emu_lim_uid[type])
		return -ENOMEM;
	return 0;
}

void emu_limits_fill(const struct emu_ctx *c, uint32_t uid, struct uroce_query_limits_rep *r)
{
	const struct emu_dev *d = c->dev;
	const struct emu_uid_use *u = NULL;

	memset(r, 0, sizeof(*r));
	for (uint32_t i = 0; i < d->nuids; i++)
		if (d->uids[i].nobj[EMU_OBJ_NONE] && d->uids[i].uid == uid)
			u = &d->uids[i];
	r->uid = uid;
	for (unsigned t = 0; t < EMU_OBJ_NTYPES && r->n < UROCE_LIMITS_MAX; t++) {
		struct uroce_limit *e = &r->e[r->n++];
		snprintf(e->name, sizeof(e->name), "%s", emu_lim_name[t]);
		e->ctx_max = t == EMU_OBJ_NONE ? 0 : emu_lim_ctx[t];
		e->uid_max = emu_lim_uid[t];
		e->ctx_used = t == EMU_OBJ_NONE ? 1 : c->nobj[t];
		e->uid_used = u ? u->nobj[t] : 0;
	}
	r->mem_ctx_max = emu_lim_ctx_mem;
	r->mem_uid_max = emu_lim_uid_mem;
	r->mem_ctx_used = c->mem;
	r->mem_uid_used = u ? u->mem : 0;
}

int emu_ctx_obj_add(struct emu_ctx *c, enum emu_obj_type type)
{
	int rc = emu_ctx_quota(c, type);

	if (rc)
		return rc;
	c->nobj[type]++;
	if (c->uid_slot >= 0)
		c->dev->uids[c->uid_slot].nobj[type]++;
	return 0;
}

void emu_ctx_obj_del(struct emu_ctx *c, enum emu_obj_type type)
{
	if (c->nobj[type])
		c->nobj[type]--;
	if (c->uid_slot >= 0 && c->dev->uids[c->uid_slot].nobj[type])
		c->dev->uids[c->uid_slot].nobj[type]--;
}

int emu_ctx_set_uid(struct emu_ctx *c, uint32_t uid)
{
	struct emu_dev *d = c->dev;
	int32_t free_slot = -1;
	uint32_t i;

	for (i = 0; i < d->nuids; i++) {
		if (d->uids[i].nobj[EMU_OBJ_NONE] && d->uids[i].uid == uid)
			break;
		if (!d->uids[i].nobj[EMU_OBJ_NONE] && free_slot < 0)
			free_slot = (int32_t)i;
	}
	if (i == d->nuids) {
		if (free_slot < 0) {
			struct emu_uid_use *t = realloc(d->uids, (d->nuids + 1) * sizeof(*t));
			if (!t)
				return -ENOMEM;
			d->uids = t;
			free_slot = (int32_t)d->nuids++;
		}
		i = (uint32_t)free_slot;
		memset(&d->uids[i], 0, sizeof(d->uids[i]));
		d->uids[i].uid = uid;
	}
	if (d->uids[i].nobj[EMU_OBJ_NONE] >= emu_lim_uid[EMU_OBJ_NONE])
		return -EAGAIN;
	d->uids[i].nobj[EMU_OBJ_NONE]++;
	c->uid_slot = (int32_t)i;
	return 0;
}

struct emu_ctx *emu_ctx_new(struct emu_dev *d, pid_t pid, int sock)
{
	struct emu_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->dev = d;
	c->pid = pid;
	c->sock = sock;
	c->wake_fd = -1;
	c->async_fd = -1;
	c->db_memfd = -1;
	c->mem_fd = -1;
	c->maps_fd = -1;
	c->pidfd = -1;
	c->uid_slot = -1;
	c->next = d->ctxs;
	if (d->ctxs)
		d->ctxs->prev = c;
	d->ctxs = c;
	d->nctx++;
	return c;
}

int emu_ctx_put(struct emu_ctx *c, enum emu_obj_type type, void *obj, uint32_t *handle)
{
	uint32_t i;

	if (type != EMU_OBJ_NONE && emu_ctx_quota(c, type))
		return -ENOMEM;
	for (i = c->h_free_hint; i < c->nh; i++)
		if (c->h[i].type == EMU_OBJ_NONE)
			goto found;
	for (i = 1; i < c->h_free_hint && i < c->nh; i++)
		if (c->h[i].type == EMU_OBJ_NONE)
			goto found;
	if (c->nh >= (1u << 22))
		return -ENOMEM;
	uint32_t nn = c->nh ? c->nh * 2 : 64;
	struct emu_handle_slot *t = realloc(c->h, nn * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + c->nh, 0, (nn - c->nh) * sizeof(*t));
	i = c->nh ? c->nh : 1; /* handle 0 stays unused: catches zeroed structs */
	c->h = t;
	c->nh = nn;
found:
	c->h[i].type = (uint8_t)type;
	c->h[i].obj = obj;
	c->h_free_hint = i + 1;
	c->nobj[type]++;
	if (c->uid_slot >= 0)
		c->dev->uids[c->uid_slot].nobj[type]++;
	*handle = i;
	return 0;
}

void emu_ctx_drop(struct emu_ctx *c, uint32_t handle)
{
	if (handle >= c->nh || c->h[handle].type == EMU_OBJ_NONE)
		return;
	c->nobj[c->h[handle].type]--;
	if (c->uid_slot >= 0)
		c->dev->uids[c->uid_slot].nobj[c->h[handle].type]--;
	c->h[handle].type = EMU_OBJ_NONE;
	c->h[handle].obj = NULL;
	if (handle < c->h_free_hint)
		c->h_free_hint = handle;
}

void *emu_ctx_get(struct emu_ctx *c, uint32_t handle, enum emu_obj_type type)
{
	if (handle >= c->nh || c->h[handle].type != type)
		return NULL;
	return c->h[handle].obj;
}

int emu_db_alloc(struct emu_ctx *c, enum emu_obj_type type, void *obj, uint32_t *idx)
{
	uint32_t i;

	/* from the hint: a scan from 0 made creating n QPs cost n^2 / 2 */
	for (i = c->db_free_hint; i < c->ndbs; i++)
		if (c->dbs[i].type == EMU_OBJ_NONE)
			goto found;
	if (c->ndbs >= UROCE_DB_MAX)
		return -ENOMEM;
	uint32_t nn = c->ndbs ? c->ndbs * 2 : 64;
	if (nn > UROCE_DB_MAX)
		nn = UROCE_DB_MAX;
	struct emu_db_slot *t = realloc(c->dbs, nn * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + c->ndbs, 0, (nn - c->ndbs) * sizeof(*t));
	i = c->ndbs;
	c->dbs = t;
	c->ndbs = nn;
found:
	c->dbs[i].type = (uint8_t)type;
	c->dbs[i].obj = obj;
	c->db_free_hint = i + 1;
	*idx = i;
	return 0;
}

void emu_db_free(struct emu_ctx *c, uint32_t idx)
{
	if (idx < c->ndbs) {
		c->dbs[idx].type = EMU_OBJ_NONE;
		c->dbs[idx].obj = NULL;
		if (idx < c->db_free_hint)
			c->db_free_hint = idx;
	}
}

static void emu_db_ring(struct emu_ctx *c, uint32_t idx)
{
	if (idx >= c->ndbs)
		return; /* a bit the application set for nothing */
	struct emu_db_slot *s = &c->dbs[idx];
	if (s->type == EMU_OBJ_QP) {
		struct emu_qp *qp = s->obj;
		c->dev->xops->sq_kick(qp);
		if (!qp->srq)
			c->dev->xops->rq_kick(qp);
	} else if (s->type == EMU_OBJ_SRQ) {
		c->dev->xops->srq_kick(s->obj);
	}
}

void emu_ctx_doorbells(struct emu_ctx *c)
{
	struct uroce_db_page *db = c->db;

	if (!db)
		return;
	for (unsigned s = 0; s < UROCE_DB_MAX / 64 / 64; s++) {
		if (!__atomic_load_n(&db->summary[s], __ATOMIC_RELAXED))
			continue;
		uint64_t sum = __atomic_exchange_n(&db->summary[s], 0, __ATOMIC_ACQ_REL);
		while (sum) {
			unsigned w = (unsigned)__builtin_ctzll(sum);
			sum &= sum - 1;
			unsigned word = s * 64 + w;
			uint64_t bits = __atomic_exchange_n(&db->bits[word], 0, __ATOMIC_ACQ_REL);
			while (bits) {
				unsigned b = (unsigned)__builtin_ctzll(bits);
				bits &= bits - 1;
				emu_db_ring(c, word * 64 + b);
				if (c->dead)
					return;
			}
		}
	}
}

void emu_ctx_reap(struct emu_dev *d)
{
	while (d->zombies) {
		struct emu_ctx *z = d->zombies;
		d->zombies = z->next;
		free(z);
	}
}
