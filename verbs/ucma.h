/* SPDX-License-Identifier: MIT */
/* ucma.c: the kernel's rdma_ucm character device, emulated for librdmacm. */
#ifndef URV_UCMA_H
#define URV_UCMA_H

#include <stdbool.h>

#define URV_UCMA_DEV "/dev/infiniband/rdma_cm"
#define URV_UCMA_SYSFS "/sys/class/misc/rdma_cm"
/* under the run directory, written by each daemon (emu/daemon/sysfs.c) */
#define URV_UCMA_SYSFS_REL "class/misc/rdma_cm"

/* Does uroce serve /dev/infiniband/rdma_cm in this process: no kernel node
 * (or UROCE_CM=uroce) and a run directory with a daemon's rdma_cm tree.
 * run (PATH_MAX) gets the run directory. Cheap: no daemon is contacted. */
bool urv_ucma_served(char *run, unsigned long len);

/* open() of PATH with FLAGS: 0 when it is not ours to serve (the caller
 * goes on to libc), else 1 with *ret the fd or -1 (errno set). */
int urv_ucma_open(const char *path, int flags, int *ret);

#endif
