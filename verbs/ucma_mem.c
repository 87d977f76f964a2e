/* SPDX-License-Identifier: MIT */
/* The application's memory, read and written without faulting: a bad
 * pointer in a command is EFAULT, as the kernel's copy_to/from_user. */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "urv_ctl.h"
#include "ucma_int.h"

/* Copy through a pipe: the kernel reports a bad address as EFAULT. */
static int pipe_copy(void *dst, const void *src, size_t n)
{
	int p[2], ret = 0;
	ssize_t k;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	k = syscall(SYS_write, p[1], src, n);
	if (k != (ssize_t)n)
		ret = -EFAULT;
	else if (syscall(SYS_read, p[0], dst, n) != (long)n)
		ret = -EFAULT;
	syscall(SYS_close, p[0]);
	syscall(SYS_close, p[1]);
	return ret;
}

/* dst <- src where either may be a bad address of the application:
 * 0 or -EFAULT, never a fault of our own. */
int ucma_mem_copy(void *dst, const void *src, size_t n, bool to_app)
{
	struct iovec l, r;
	ssize_t k;

	if (!n)
		return 0;
	l.iov_len = r.iov_len = n;
	if (to_app) {
		l.iov_base = (void *)src;
		r.iov_base = dst;
		k = process_vm_writev(getpid(), &l, 1, &r, 1, 0);
	} else {
		l.iov_base = dst;
		r.iov_base = (void *)src;
		k = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	}
	if (k == (ssize_t)n)
		return 0;
	/* a sandbox that forbids process_vm_* (seccomp): the slow way */
	if (k < 0 && (errno == ENOSYS || errno == EPERM))
		return pipe_copy(dst, src, n);
	return -EFAULT;
}

/* Is [p, p+n) writable memory of the application: 0 or -EFAULT. Checked
 * before a command runs, so that a bad `response` does not lose an event
 * or leave an id behind (the kernel undoes those on EFAULT). */
int ucma_mem_writable(uint64_t p, size_t n)
{
	uint8_t tmp[UROCE_UCMA_MAX_OUT];
	void *a = (void *)(uintptr_t)p;

	if (!n)
		return 0;
	if (n > sizeof(tmp))
		n = sizeof(tmp);
	if (ucma_mem_copy(tmp, a, n, false) || ucma_mem_copy(a, tmp, n, true))
		return -EFAULT;
	return 0;
}
