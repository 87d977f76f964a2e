/* SPDX-License-Identifier: MIT */
/* liburoce: uroce devices and their contexts (device.c, context.c), the
 * real libibverbs (real.c), the ops of a context (ops.c). */
#ifndef URV_DEV_H
#define URV_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <uroce/abi.h>
#include "urv_base.h"

struct urv_device {
	struct ibv_device ibdev;
	char sock_path[512];
	uint64_t node_guid;     /* network order, from the listing HELLO */
	int index;
};

struct urv_context {
	struct verbs_context vctx;
	struct urv_device *dev;
	/* ibv_import_device: a second context on the connection of origin
	 * (its socket, lock and seq carry every control call; sock is then
	 * the descriptor the import was given, closed with this context) */
	struct urv_context *origin;
	struct urv_context *next; /* contexts opened here (context.c) */
	unsigned refs;          /* the context itself and its imports */
	pid_t pid;              /* the process that opened it */
	dev_t sock_dev;         /* the control socket's identity (fstat) */
	ino_t sock_ino;
	int sock;
	pthread_mutex_t ctl_lock;
	uint32_t seq;
	bool dead;              /* control socket failed: the daemon is gone */
	struct uroce_db_page *db;
	int wake_fd;
	struct uroce_hello_rep info;
	pthread_mutex_t async_lock;
	bool fatal_reported;
	/* the daemon's QP arena chunks (abi.h UROCE_OP_CREATE_QP_ARENA),
	 * mapped once each, by chunk index; under ctl_lock */
	uint8_t **arena;
	uint32_t narena;
	/* the memory channel (mr_pin.c): the io_uring through which this
	 * connection's registrations are pinned; made at the first one */
	struct urv_pin *pin;
	pthread_mutex_t pin_lock;
};

static inline struct urv_context *to_uctx(struct ibv_context *c)
{
	return urv_container_of(c, struct urv_context, vctx.context);
}

/* real.c: the real libibverbs */
void *urv_real_sym(const char *name, const char *version);
bool urv_called_from_libibverbs(const void *ret_addr);

/* device.c */
bool urv_dev_ours(const struct ibv_device *d);
/* The run directory (UROCE_RUN_DIR or the default), into buf. */
void urv_run_dir(char *buf, size_t len);
static inline bool urv_ctx_ours(const struct ibv_context *c)
{
	return c && urv_dev_ours(c->device);
}
struct ibv_device **urv_get_device_list(struct ibv_device **real, int nreal,
					int *num);
/* HELLO on a fresh connection to path (fds: doorbell memfd, wake pipe;
 * *async_rd: the async event pipe), with send and receive timeouts */
int urv_dev_hello(const char *path, int sock, struct uroce_hello_rep *rep, int *async_rd,
		  int fds[2]);
void urv_sock_timeout(int fd, int secs);
/* context.c */
struct ibv_context *urv_open_device(struct ibv_device *d);
void urv_ctx_put(struct urv_context *c);
struct urv_context *urv_ctx_by_sock(dev_t dev, ino_t ino);
int urv_close_device(struct ibv_context *c);

/* device.c */
int urv_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int urv_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *a, size_t len);
int urv_query_port(struct ibv_context *c, uint8_t port,
		   struct ibv_port_attr *a, size_t len);
int urv_query_gid(struct ibv_context *c, uint8_t port, int idx,
		  union ibv_gid *gid);
int urv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t idx,
		     struct ibv_gid_entry *e, uint32_t flags, size_t esz);
ssize_t urv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e,
			    size_t max, uint32_t flags, size_t esz);
int urv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned idx,
		       uint32_t *type);
int urv_query_pkey(struct ibv_context *c, uint8_t port, int idx,
		   __be16 *pkey);
int urv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey);

/* ops.c: the verbs_context ops of a uroce context */
void urv_set_ops(struct urv_context *c);

#endif /* URV_DEV_H */
