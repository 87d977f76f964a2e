/* SPDX-License-Identifier: MIT */
/* Destroying rdma_cm ids and files (DESTROY_ID, close, a client gone):
 * what the kernel sends for each state, and the events that go with them. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucma_int.h"

static void ucma_id_destroy(struct ucma_dev *u, struct ucma_id *id);

/* drop queued events of id; pending connection requests die with their
 * listener, as ucma_cleanup_ctx_events */
static void ucma_drop_events(struct ucma_dev *u, struct ucma_file *f, struct ucma_id *id)
{
	/* unlinked first: destroying a request's id below may queue events
	 * (a REJ to its active side) on this same file */
	struct ucma_ev *gone = ucma_ev_take(f, id, NULL, NULL);

	while (gone) {
		struct ucma_ev *e = gone;
		gone = e->next;
		if (e->conn && u->ids[e->conn->handle] == e->conn) {
			e->conn->listen = NULL;
			ucma_id_destroy(u, e->conn);
		}
		free(e);
	}
}

/* a request not fetched yet dies with its CONNECT_REQUEST event */
static void ucma_forget_request(struct ucma_id *id)
{
	ucma_ev_free(ucma_ev_take(id->file, NULL, id, NULL));
}

static void ucma_id_destroy(struct ucma_dev *u, struct ucma_id *id)
{
	ucma_cm_destroy(u, id);
	if (id->hidden)
		ucma_forget_request(id);
	ucma_timer(u, id, 0);
	if (id->listen) {
		id->listen->pending--;
		id->listen = NULL;
	}
	/* requests of a listener that is going away lose their listener */
	for (uint32_t i = 0; i < u->nids; i++)
		if (u->ids[i] && u->ids[i]->listen == id)
			u->ids[i]->listen = NULL;
	while (id->mcs) {
		struct ucma_mc *mc = id->mcs;
		id->mcs = mc->next;
		ucma_mc_free(u, mc);
	}
	u->ids[id->handle] = NULL;
	ucma_drop_events(u, id->file, id);
	ucma_id_free(u, id);
}

void ucma_file_destroy(struct ucma_dev *u, struct ucma_file *f)
{
	for (uint32_t i = 0; i < u->nids; i++)
		if (u->ids[i] && u->ids[i]->file == f)
			ucma_id_destroy(u, u->ids[i]);
	while (f->head) {
		struct ucma_ev *e = f->head;
		f->head = e->next;
		free(e);
	}
	for (struct ucma_file **pp = &u->files; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	emu_evq_drop(u->d, &f->q);
	((struct ucma_ctx *)f->ctx->ucma)->nfiles--;
	if (f->wfd >= 0)
		close(f->wfd);
	free(f);
}

int ucma_cmd_destroy_id(struct ucma_call *k)
{
	UCMA_IN(k, struct rdma_ucm_destroy_id, q, sizeof(q));
	struct rdma_ucm_destroy_id_resp r = { 0 };
	struct ucma_id *id;

	if (k->out_len < sizeof(r))
		return -ENOSPC;
	int rc = ucma_get(k, q.id, &id);
	if (rc)
		return rc;
	r.events_reported = id->events_reported;
	ucma_id_destroy(k->u, id);
	ucma_out(k, &r, sizeof(r));
	return 0;
}
