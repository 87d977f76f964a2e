/* SPDX-License-Identifier: MIT */
/* The next definition of a libc function the shim interposes on
 * (dlsym(RTLD_NEXT)), looked up once per function: sysfs.c and ucma.c. */
#ifndef URV_REAL_FN_H
#define URV_REAL_FN_H

#include <dlfcn.h>
#include <errno.h>

/* file scope: static __typeof__(fn) *real_fn */
#define REAL_PTR(fn) static __typeof__(fn) *real_##fn
/* real_fn loaded if it is not yet; without one, errno ENOSYS and
 * return err from the calling function */
#define LOAD(fn, err)                                                         \
	do {                                                                  \
		if (!__atomic_load_n(&real_##fn, __ATOMIC_ACQUIRE))           \
			__atomic_store_n(&real_##fn,                          \
					 (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn), \
					 __ATOMIC_RELEASE);                   \
		if (!real_##fn) {                                             \
			errno = ENOSYS;                                       \
			return err;                                           \
		}                                                             \
	} while (0)

#endif
