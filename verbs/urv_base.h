/* SPDX-License-Identifier: MIT */
/* liburoce: what every file of the shim may use (container_of, the data
 * path's spinlock). */
#ifndef URV_BASE_H
#define URV_BASE_H

#include <stdatomic.h>
#include <stddef.h>

#define URV_MAX_DEVICES 32

#define urv_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#if defined(__x86_64__) || defined(__i386__)
#define urv_cpu_relax() __builtin_ia32_pause()
#else
#define urv_cpu_relax() do { } while (0)
#endif

/* Spinlock for the data path: posts and polls hold it for a few hundred
 * nanoseconds at most, and a mutex could cost a system call. */
typedef struct { atomic_int v; } urv_spin_t;
static inline void urv_spin_init(urv_spin_t *s) { atomic_init(&s->v, 0); }
static inline void urv_spin_lock(urv_spin_t *s)
{
	while (atomic_exchange_explicit(&s->v, 1, memory_order_acquire))
		while (atomic_load_explicit(&s->v, memory_order_relaxed))
			urv_cpu_relax();
}
static inline void urv_spin_unlock(urv_spin_t *s)
{
	atomic_store_explicit(&s->v, 0, memory_order_release);
}

#endif /* URV_BASE_H */
