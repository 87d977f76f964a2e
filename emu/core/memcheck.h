/* SPDX-License-Identifier: MIT */
/* Under valgrind: bytes leaving the daemon through shared memory, where
 * memcheck cannot follow them to the application, must all be defined
 * (a CQE with an uninitialised field or padding is reported here, at the
 * write). A few instructions, no system call, when not under valgrind;
 * nothing at all when valgrind's header is not installed. */
#ifndef EMU_MEMCHECK_H
#define EMU_MEMCHECK_H

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define EMU_CHECK_DEFINED(p, n) ((void)VALGRIND_CHECK_MEM_IS_DEFINED((p), (n)))
#endif
#endif
#ifndef EMU_CHECK_DEFINED
#define EMU_CHECK_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#endif
