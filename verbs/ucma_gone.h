/* SPDX-License-Identifier: MIT */
/* ucma_gone.c: the ids of an rdma_cm file as the shim sees them pass, and
 * the kernel's RDMA_CM_EVENT_DEVICE_REMOVAL for them when the daemon goes
 * away (docs/cm.md, "The rdma_cm device in the application"). */
#ifndef URV_UCMA_GONE_H
#define URV_UCMA_GONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma_user_cm.h>

struct urv_cm_id {
	uint32_t handle;
	uint64_t uid;          /* the application's context; 0: not accepted yet */
	uint32_t events;       /* events fetched (DESTROY_ID's events_reported) */
	bool dev;              /* on the device: gets DEVICE_REMOVAL */
	uint16_t ps;           /* CREATE_ID's port space and QP type */
	uint8_t qp_type;
	/* SET_OPTION's id options, for a wildcard listener's copies on the
	 * other devices (ucma_shadow.c) */
	bool tos_set, reuse_set, afonly_set;
	uint8_t tos;
	bool reuseaddr, afonly;
};

struct urv_cm_mc {
	uint32_t handle;
	uint64_t uid;
	uint32_t id;           /* the id that joined */
};

/* One per rdma_cm file; the caller serializes the calls. */
struct urv_cm_track {
	struct urv_cm_id *ids;
	uint32_t nids, cap;
	struct urv_cm_mc *mcs;
	uint32_t nmcs, mcap;
	struct rdma_ucm_event_resp *gone; /* DEVICE_REMOVAL events not fetched */
	uint32_t ngone, next;
	bool dead;             /* the daemon went away: commands answered here */
};

/* A command the daemon answered with success: what it did to the file's
 * ids (in: the command struct, rep: the reply). */
void urv_cm_track_cmd(struct urv_cm_track *t, uint32_t cmd, const uint8_t *in, uint32_t in_len,
		      const uint8_t *rep, size_t rep_len);
/* MIGRATE_ID moved id handle from src to dst. */
void urv_cm_track_move(struct urv_cm_track *src, struct urv_cm_track *dst, uint32_t handle);
/* The daemon is gone: queue DEVICE_REMOVAL for every id on the device that
 * has the application's context, as the kernel's cma_process_remove does;
 * returns how many (one pipe byte each). */
uint32_t urv_cm_track_gone(struct urv_cm_track *t);
/* A command after that, answered as the kernel answers it once the
 * device's ids are closed: GET_EVENT the queued events (-EAGAIN when none
 * is left), DESTROY_ID and LEAVE_MCAST succeed, a command naming a removed
 * id -ENXIO, anything else -ENODEV. *rep_len gets the reply's length. */
int urv_cm_track_dead_cmd(struct urv_cm_track *t, uint32_t cmd, const uint8_t *in,
			  uint32_t in_len, uint8_t *rep, size_t *rep_len);
void urv_cm_track_free(struct urv_cm_track *t);
/* the id of handle, or NULL */
struct urv_cm_id *urv_cm_track_id(struct urv_cm_track *t, uint32_t handle);
/* a sockaddr_in/in6 with the wildcard address (or another family) */
bool urv_cm_addr_any(const void *sa);
/* where a command names its id; -1: it names none */
long urv_cm_id_offset(uint32_t cmd);

#endif
