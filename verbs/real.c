/* SPDX-License-Identifier: MIT */
/* Finding the real libibverbs behind the interposer. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "urv_dev.h"

static void *libibverbs_handle(void)
{
	static void *h;
	void *p = __atomic_load_n(&h, __ATOMIC_ACQUIRE);

	/* Programs that load verbs with RTLD_LOCAL (Python extension modules)
	 * keep libibverbs out of RTLD_NEXT's reach; NOLOAD never loads a
	 * second copy. */
	if (!p) {
		p = dlopen("libibverbs.so.1", RTLD_NOLOAD | RTLD_LAZY);
		if (p)
			__atomic_store_n(&h, p, __ATOMIC_RELEASE);
	}
	return p;
}

void *urv_real_sym(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);
	void *h;

	if (p)
		return p;
	h = libibverbs_handle();
	return h ? dlvsym(h, name, version) : NULL;
}

/* libibverbs calls its own exports through its PLT, so they reach us;
 * such calls must see only real devices. */
bool urv_called_from_libibverbs(const void *ret_addr)
{
	static void *base;
	void *b = __atomic_load_n(&base, __ATOMIC_ACQUIRE);
	Dl_info info;

	if (!b) {
		void *sym = urv_real_sym("ibv_get_device_list", "IBVERBS_1.1");

		if (!sym || !dladdr(sym, &info))
			return false;
		b = info.dli_fbase;
		__atomic_store_n(&base, b, __ATOMIC_RELEASE);
	}
	if (!dladdr(ret_addr, &info))
		return false;
	return info.dli_fbase == b;
}
