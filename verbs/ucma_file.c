/* SPDX-License-Identifier: MIT */
/* The rdma_cm files open in this process: found by fd (a bit per fd for
 * the interposers' fast path), by the daemon's handle, and what fork
 * makes of them. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ucma_int.h"

pthread_mutex_t ucma_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ucma_file *files;
int ucma_nfiles;
uint64_t ucma_fd_bits[UCMA_FD_BITS / 64];

static void bit_set(int fd, bool on)
{
	if (fd < 0 || fd >= UCMA_FD_BITS)
		return;
	if (on)
		__atomic_fetch_or(&ucma_fd_bits[fd / 64], 1ull << (fd % 64), __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&ucma_fd_bits[fd / 64], ~(1ull << (fd % 64)),
				   __ATOMIC_RELEASE);
}

/* The file of fd with a reference taken, or NULL. */
struct ucma_file *ucma_file_get(int fd)
{
	struct ucma_file *f;

	pthread_mutex_lock(&ucma_list_lock);
	for (f = files; f && f->fd != fd; f = f->next)
		;
	if (f)
		f->refs++;
	pthread_mutex_unlock(&ucma_list_lock);
	return f;
}

void ucma_file_put(struct ucma_file *f)
{
	bool last;

	pthread_mutex_lock(&ucma_list_lock);
	last = --f->refs == 0;
	pthread_mutex_unlock(&ucma_list_lock);
	if (last) {
		urv_cm_track_free(&f->t);
		if (f->gone_wfd >= 0)
			syscall(SYS_close, f->gone_wfd);
		free(f);
	}
}

/* Unlink fd's file (the caller gets the list's reference), or NULL. */
struct ucma_file *ucma_file_take(int fd)
{
	struct ucma_file **pp, *f = NULL;

	pthread_mutex_lock(&ucma_list_lock);
	for (pp = &files; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			f = *pp;
			*pp = f->next;
			__atomic_store_n(&f->closed, true, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&ucma_nfiles, 1, __ATOMIC_RELEASE);
			bit_set(fd, false);
			break;
		}
	pthread_mutex_unlock(&ucma_list_lock);
	return f;
}

void ucma_file_add(struct ucma_file *f)
{
	pthread_mutex_lock(&ucma_list_lock);
	f->refs = 1;
	f->next = files;
	files = f;
	bit_set(f->fd, true);
	__atomic_add_fetch(&ucma_nfiles, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ucma_list_lock);
}

/* Files of this process (not inherited) still open. ucma_list_lock held. */
bool ucma_own_files_left(void)
{
	for (struct ucma_file *f = files; f; f = f->next)
		if (!f->foreign)
			return true;
	return false;
}

struct ucma_file *ucma_file_by_handle(uint32_t h)
{
	struct ucma_file *f;

	for (f = files; f && (f->handle != h || f->foreign); f = f->next)
		;
	return f;
}

/* the file whose secondary k has daemon handle h (ucma_list_lock held) */
struct ucma_file *ucma_file_by_sec(unsigned k, uint32_t h)
{
	struct ucma_file *f;

	for (f = files; f && (f->foreign || !f->mux.sec[k].open || f->mux.sec[k].handle != h);
	     f = f->next)
		;
	return f;
}

/* fork: the inherited files are the parent's (ucma_open.c's handler) */
void ucma_files_atfork_child(void)
{
	pthread_mutex_init(&ucma_list_lock, NULL);
	for (struct ucma_file *f = files; f; f = f->next)
		f->foreign = true;
}
