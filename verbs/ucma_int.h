/* SPDX-License-Identifier: MIT */
/* Private to verbs/ucma*.c: the emulated rdma_cm device's open files, the
 * process's connection to the daemon, and what the files of the device
 * share (docs/cm.md, "The rdma_cm device in the application"). */
#ifndef URV_UCMA_INT_H
#define URV_UCMA_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ucma_gone.h"
#include "ucma_mux.h"

struct uroce_ucma_cmd_req;

struct ucma_file {
	struct ucma_file *next;
	int fd;                 /* the pipe read end the application holds */
	uint32_t handle;        /* the daemon's file handle */
	bool foreign;           /* inherited through fork: the parent's */
	bool closed;            /* the application closed its fd */
	int refs;               /* the list's + calls in progress (ucma_list_lock) */
	struct urv_cm_track t;  /* its ids, for DEVICE_REMOVAL (ucma_list_lock) */
	int gone_wfd;           /* after the daemon: the new event pipe's write end */
	struct urv_mux mux;     /* other devices' files (wildcard listeners) */
};

/* fds below this are found with one bit test; others take the lock */
#define UCMA_FD_BITS 65536

/* ucma_file.c: the open files (ucma_list_lock) */
extern pthread_mutex_t ucma_list_lock;
extern int ucma_nfiles;              /* entries in files (atomic reads) */
extern uint64_t ucma_fd_bits[UCMA_FD_BITS / 64];

/* Might fd be an rdma_cm file: false for any other fd after one load and,
 * while a file is open, one bit test (every write/close of the
 * application asks). */
static inline bool ucma_maybe_fd(int fd)
{
	if (!__atomic_load_n(&ucma_nfiles, __ATOMIC_ACQUIRE) || fd < 0)
		return false;
	if (fd >= UCMA_FD_BITS)
		return true;
	return __atomic_load_n(&ucma_fd_bits[fd / 64], __ATOMIC_ACQUIRE) &
		(1ull << (fd % 64));
}

struct ucma_file *ucma_file_get(int fd);
void ucma_file_put(struct ucma_file *f);
struct ucma_file *ucma_file_take(int fd);
void ucma_file_add(struct ucma_file *f);
bool ucma_own_files_left(void);
struct ucma_file *ucma_file_by_handle(uint32_t h);
struct ucma_file *ucma_file_by_sec(unsigned k, uint32_t h);
void ucma_files_atfork_child(void);

/* ucma_mem.c: the application's memory, never faulting: 0 or -EFAULT */
int ucma_mem_copy(void *dst, const void *src, size_t n, bool to_app);
int ucma_mem_writable(uint64_t p, size_t n);

/* ucma_conn.c: the process's connection to the daemon */
int ucma_conn_open(void);
int ucma_ctl_call(uint32_t op, const void *req, size_t req_len, void *rep,
		  size_t rep_len, int *fds_out, int nfds_out);
void ucma_conn_drop_if_idle(void);
bool ucma_conn_is_dead(void);
const char *ucma_ctl_path(void);
void ucma_conn_atfork_child(void);

/* ucma_cmd.c: one command written */
ssize_t ucma_write(struct ucma_file *f, const void *buf, size_t len);

/* ucma_shadow.c: wildcard listeners' copies on the other devices */
void ucma_mux_tag(struct uroce_ucma_cmd_req *req, uint8_t *rep, unsigned src);
int ucma_mux_route(struct ucma_file *f, struct uroce_ucma_cmd_req *req, unsigned *src);
void ucma_mux_after(struct ucma_file *f, const struct uroce_ucma_cmd_req *req);

/* ucma_libc.c: libc's own close/read, past the interposers */
bool ucma_libc_ok(void);
int ucma_real_close(int fd);
ssize_t ucma_real_read(int fd, void *buf, size_t len);

#endif
