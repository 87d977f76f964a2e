/* SPDX-License-Identifier: MIT */
/* libc's own read and close, past the shim's interposers (ucma.c
 * interposes close): for the event pipes and the daemon connection. The
 * bottom of the rdma_cm files: it needs none of them, so none of them
 * needs the interposers' file (no cycle between the ucma files). */
#include <stdbool.h>
#include <unistd.h>

#include "real_fn.h"
#include "ucma_int.h"

REAL_PTR(read);
REAL_PTR(close);

bool ucma_libc_ok(void)
{
	LOAD(close, false);
	LOAD(read, false);
	return true;
}

int ucma_real_close(int fd)
{
	LOAD(close, -1);
	return real_close(fd);
}

ssize_t ucma_real_read(int fd, void *buf, size_t len)
{
	LOAD(read, -1);
	return real_read(fd, buf, len);
}
