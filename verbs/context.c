/* SPDX-License-Identifier: MIT */
/* Contexts of uroce devices: ibv_open_device (a connection to the daemon,
 * HELLO, the doorbell page, the ops of struct verbs_context) and
 * ibv_close_device; the contexts this process opened, for
 * ibv_import_device. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "urv_base.h"
#include "urv_dev.h"
#include "urv_obj.h"
#include "urv_mem.h"

/* the contexts this process opened, for ibv_import_device */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urv_context *contexts;

static void ctx_register(struct urv_context *c)
{
	struct stat st;

	c->refs = 1;
	c->pid = getpid();
	if (fstat(c->sock, &st) == 0) {
		c->sock_dev = st.st_dev;
		c->sock_ino = st.st_ino;
	}
	pthread_mutex_lock(&ctx_lock);
	c->next = contexts;
	contexts = c;
	pthread_mutex_unlock(&ctx_lock);
}

struct ibv_context *urv_open_device(struct ibv_device *ibdev)
{
	struct urv_device *d = urv_container_of(ibdev, struct urv_device, ibdev);
	struct urv_context *c;
	int fds[2] = { -1, -1 }, ard = -1, ret;
	void *db;

	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->sock = urv_connect(d->sock_path);
	if (c->sock < 0) {
		ret = errno;
		free(c);
		errno = ret == EPERM ? EPERM : ENODEV;
		return NULL;
	}
	urv_sock_timeout(c->sock, 30);
	ret = urv_dev_hello(d->sock_path, c->sock, &c->info, &ard, fds);
	if (ret) {
		close(c->sock);
		free(c);
		errno = ret == -EPROTO || ret == -EACCES || ret == -EPROTONOSUPPORT ? -ret : ENODEV;
		return NULL;
	}
	db = mmap(NULL, UROCE_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		  fds[0], 0);
	close(fds[0]);
	if (db == MAP_FAILED) {
		ret = errno;
		close(fds[1]);
		close(ard);
		close(c->sock);
		free(c);
		errno = ret;
		return NULL;
	}
	c->db = db;
	c->wake_fd = fds[1];
	c->dev = d;
	pthread_mutex_init(&c->ctl_lock, NULL);
	pthread_mutex_init(&c->async_lock, NULL);
	pthread_mutex_init(&c->pin_lock, NULL);

	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.device = ibdev;
	c->vctx.context.cmd_fd = c->sock;
	c->vctx.context.async_fd = ard;
	c->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	urv_set_ops(c);
	ctx_register(c);
	return &c->vctx.context;
}

/* The context's connection outlives ibv_close_device while contexts
 * imported from it are open (as the kernel's uverbs file does). */
void urv_ctx_put(struct urv_context *c)
{
	struct urv_context **pp;

	pthread_mutex_lock(&ctx_lock);
	if (--c->refs) {
		pthread_mutex_unlock(&ctx_lock);
		return;
	}
	for (pp = &contexts; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx_lock);
	for (uint32_t i = 0; i < c->narena; i++)
		if (c->arena[i])
			munmap(c->arena[i], UROCE_ARENA_CHUNK);
	free(c->arena);
	urv_pin_close(c);
	munmap(c->db, UROCE_DB_PAGE_SIZE);
	close(c->wake_fd);
	close(c->vctx.context.async_fd);
	close(c->sock);
	pthread_mutex_destroy(&c->ctl_lock);
	pthread_mutex_destroy(&c->async_lock);
	pthread_mutex_destroy(&c->pin_lock);
	pthread_mutex_destroy(&c->vctx.context.mutex);
	free(c);
}

/* The open context of this process whose control socket is (dev, ino),
 * with a reference taken, or NULL. */
struct urv_context *urv_ctx_by_sock(dev_t dev, ino_t ino)
{
	struct urv_context *c;

	pthread_mutex_lock(&ctx_lock);
	for (c = contexts; c; c = c->next)
		if (c->sock_dev == dev && c->sock_ino == ino)
			break;
	if (c)
		c->refs++;
	pthread_mutex_unlock(&ctx_lock);
	return c;
}

int urv_close_device(struct ibv_context *ibctx)
{
	struct urv_context *c = to_uctx(ibctx);

	if (c->origin) {
		struct urv_context *o = c->origin;

		close(c->sock);
		pthread_mutex_destroy(&c->ctl_lock);
		pthread_mutex_destroy(&c->async_lock);
		pthread_mutex_destroy(&ibctx->mutex);
		free(c);
		urv_ctx_put(o);
		return 0;
	}
	urv_ctx_put(c);
	return 0;
}
