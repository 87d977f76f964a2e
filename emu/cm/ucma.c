/* SPDX-License-Identifier: MIT */
/* The kernel's rdma_ucm (drivers/infiniband/core/ucma.c) and rdma_cm
 * (cma.c) semantics, for librdmacm running unmodified on uroce: files with
 * their event queues, ids with the kernel's state machine, port spaces and
 * bind rules, address and route resolution, connection establishment with
 * the values the kernel returns from INIT_QP_ATTR, and teardown when a file
 * or its client goes away. docs/cm.md says what differs from the kernel.
 *
 * Connections go over the wire through the IB CM engine (emu/cm/ibcm.c:
 * MADs on QP1), to an address of this device too: its frames come back
 * through the port's receive path, as the kernel's rxe_loopback does
 * (ucma_conn.c, docs/cm.md).
 *
 * This file: the command table and the entry points of the daemon (open,
 * command, close, a client gone, timers, device gone); the commands and
 * what they share are in ucma_*.c, by concern (ucma_int.h). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

static int ucma_cmd_nosys(struct ucma_call *k)
{
	(void)k;
	return -ENOSYS;
}

static int (*const ucma_cmds[])(struct ucma_call *k) = {
	[RDMA_USER_CM_CMD_CREATE_ID] = ucma_cmd_create_id,
	[RDMA_USER_CM_CMD_DESTROY_ID] = ucma_cmd_destroy_id,
	[RDMA_USER_CM_CMD_BIND_IP] = ucma_cmd_bind_ip,
	[RDMA_USER_CM_CMD_RESOLVE_IP] = ucma_cmd_resolve_ip,
	[RDMA_USER_CM_CMD_RESOLVE_ROUTE] = ucma_cmd_resolve_route,
	[RDMA_USER_CM_CMD_QUERY_ROUTE] = ucma_cmd_query_route,
	[RDMA_USER_CM_CMD_CONNECT] = ucma_cmd_connect,
	[RDMA_USER_CM_CMD_LISTEN] = ucma_cmd_listen,
	[RDMA_USER_CM_CMD_ACCEPT] = ucma_cmd_accept,
	[RDMA_USER_CM_CMD_REJECT] = ucma_cmd_reject,
	[RDMA_USER_CM_CMD_DISCONNECT] = ucma_cmd_disconnect,
	[RDMA_USER_CM_CMD_INIT_QP_ATTR] = ucma_cmd_init_qp_attr,
	[RDMA_USER_CM_CMD_GET_EVENT] = ucma_cmd_get_event,
	[RDMA_USER_CM_CMD_GET_OPTION] = ucma_cmd_nosys,
	[RDMA_USER_CM_CMD_SET_OPTION] = ucma_cmd_set_option,
	[RDMA_USER_CM_CMD_NOTIFY] = ucma_cmd_notify,
	[RDMA_USER_CM_CMD_JOIN_IP_MCAST] = ucma_cmd_join_ip_mcast,
	[RDMA_USER_CM_CMD_LEAVE_MCAST] = ucma_cmd_leave_mcast,
	[RDMA_USER_CM_CMD_MIGRATE_ID] = ucma_cmd_migrate_id,
	[RDMA_USER_CM_CMD_QUERY] = ucma_cmd_query,
	[RDMA_USER_CM_CMD_BIND] = ucma_cmd_bind,
	[RDMA_USER_CM_CMD_RESOLVE_ADDR] = ucma_cmd_resolve_addr,
	[RDMA_USER_CM_CMD_JOIN_MCAST] = ucma_cmd_join_mcast,
};

int emu_ucma_open(struct emu_ctx *c, uint32_t *handle, int *rfd)
{
	struct ucma_dev *u = ucma_dev(c->dev, true);
	struct ucma_ctx *x = ucma_cx(c);

	if (!u || !x)
		return -ENOMEM;
	if (x->nfiles >= EMU_UCMA_MAX_FILES)
		return -EMFILE;
	struct ucma_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	int rc = emu_evq_pipe(rfd, &f->wfd);
	if (rc) {
		free(f);
		return rc;
	}
	f->ctx = c;
	f->tail = &f->head;
	f->q.fd = f->wfd;
	f->handle = u->next_file++;
	if (!u->next_file)
		u->next_file = 1;
	f->next = u->files;
	u->files = f;
	x->nfiles++;
	*handle = f->handle;
	return 0;
}

int emu_ucma_cmd(struct emu_ctx *c, const void *body, size_t len, void *out, size_t *olen)
{
	struct uroce_ucma_cmd_req h;
	struct ucma_dev *u = ucma_dev(c->dev, false);

	*olen = 0;
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, body, sizeof(h));
	if (h.in > UROCE_UCMA_MAX_IN || len != sizeof(h) + h.in)
		return -EINVAL;
	struct ucma_file *f = ucma_file_get(u, c, h.file);
	if (!f)
		return -EBADF;
	if (h.cmd >= sizeof(ucma_cmds) / sizeof(ucma_cmds[0]) || !ucma_cmds[h.cmd])
		return -ENOSYS;
	struct ucma_call k = {
		.u = u, .f = f, .in = (const uint8_t *)body + sizeof(h), .in_len = h.in,
		.out_len = h.out < UROCE_UCMA_MAX_OUT ? h.out : UROCE_UCMA_MAX_OUT,
		.out = out, .olen = olen,
	};
	int rc = ucma_cmds[h.cmd](&k);
	if (rc)
		*olen = 0;
	return rc;
}

int emu_ucma_close(struct emu_ctx *c, uint32_t handle)
{
	struct ucma_dev *u = ucma_dev(c->dev, false);
	struct ucma_file *f = ucma_file_get(u, c, handle);

	if (!f)
		return -EBADF;
	ucma_file_destroy(u, f);
	return 0;
}

void emu_ucma_ctx_gone(struct emu_ctx *c)
{
	struct ucma_dev *u = ucma_dev(c->dev, false);

	if (!u)
		return;
	/* a file's ids may take other files' requests with them: restart
	 * the walk after each destroy */
	for (struct ucma_file *f = u->files; f;) {
		if (f->ctx == c) {
			ucma_file_destroy(u, f);
			f = u->files;
			continue;
		}
		f = f->next;
	}
	free(c->ucma);
	c->ucma = NULL;
}

void emu_ucma_poll(struct emu_dev *d, uint64_t now)
{
	struct ucma_dev *u = ucma_dev(d, false);

	/* called every engine iteration: the table is scanned only when a
	 * deadline is due, and at most once a millisecond while a neighbour
	 * is being resolved (the only timer of ours: the exchange's are the
	 * IB CM engine's) */
	if (!u || !u->timers || now < u->next_ns)
		return;
	uint64_t next = UINT64_MAX;
	for (uint32_t i = 0; i < u->nids; i++) {
		struct ucma_id *id = u->ids[i];
		if (!id || !id->deadline || id->state != S_ADDR_QUERY)
			continue;
		int rc = ucma_addr_try(u, id);
		if (rc <= 0)
			ucma_addr_done(u, id, rc);
		else if (now >= id->deadline)
			ucma_addr_done(u, id, -ETIMEDOUT);
		else if (now + 1000000 < next)
			next = now + 1000000;
	}
	u->next_ns = next;
}

uint64_t emu_ucma_next_deadline(struct emu_dev *d)
{
	struct ucma_dev *u = ucma_dev(d, false);

	return u && u->timers ? u->next_ns : UINT64_MAX;
}

void emu_ucma_dev_fini(struct emu_dev *d)
{
	struct ucma_dev *u = ucma_dev(d, false);

	if (!u)
		return;
	while (u->files)
		ucma_file_destroy(u, u->files);
	free(u->ids);
	free(u->mcs);
	free(u);
	d->ucma = NULL;
}
