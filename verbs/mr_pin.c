/* SPDX-License-Identifier: MIT */
/* Registered memory with the semantics of pinned pages, shim side
 * (docs/verbs.md, "Registered memory"; daemon side: emu/core/pin.c).
 *
 * Each connection gets an io_uring of its own, made here, in the process
 * that owns the memory: registering an MR's range into that ring's buffer
 * table (IORING_REGISTER_BUFFERS_UPDATE) is the kernel pinning the pages
 * for us as it pins them for an HCA (FOLL_WRITE | FOLL_LONGTERM, charged
 * to this process's RLIMIT_MEMLOCK and memory cgroup), and the daemon,
 * which takes the ring from this process (UROCE_OP_MEM_CHANNEL), reaches
 * exactly those pages and nothing else. Whatever the application, its
 * allocator or libc then does to the mapping — munmap, madvise, mremap,
 * mprotect, fork, by any path — is the kernel's business alone; nothing
 * here watches it or needs to.
 *
 * Where the kernel will not pin (no io_uring: a seccomp profile, the
 * io_uring_disabled sysctl; memory io_uring cannot pin, such as a
 * read-only mapping for a read-only MR), the registration follows the
 * address as an ODP one does: said once on stderr, counted per MR and
 * shown by `uroce-ctl mrs`. UROCE_MR_PIN=require makes such a
 * registration fail instead; a refusal an HCA would also give (ENOMEM past
 * RLIMIT_MEMLOCK, EFAULT for a writable MR over memory the process cannot
 * write) fails ibv_reg_mr as it does there. */
#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"

#define URV_PIN_NBUFS 16384u /* the kernel's most (IORING_MAX_REG_BUFFERS) */
#define URV_PIN_SQ 64u

struct urv_pin {
	int ring;       /* -1: none (why says why) */
	int why;
	uint32_t hint;  /* no free slot below */
	uint8_t used[URV_PIN_NBUFS / 8];
	void *probe;    /* buffer 0: the page the daemon tries the ring on */
};

/* UROCE_MR_PIN: unset (pin; where the kernel will not, follow the
 * address), "require" (where it will not, fail), "off" (never pin: for
 * comparisons and tests). Read at each decision: a channel is made once
 * per connection, so a program may change it between contexts. */
static int urv_pin_mode(void)
{
	const char *e = getenv("UROCE_MR_PIN");

	return !e ? 0 : !strcmp(e, "require") ? 1 : !strcmp(e, "0") || !strcmp(e, "off") ? 2 : 0;
}

static void urv_pin_warn(struct urv_context *c, int why)
{
	static bool said;

	if (__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		return;
	fprintf(stderr, "uroce: %s: memory registrations cannot be pinned (%s): they follow "
		"the address as ODP registrations do (docs/verbs.md, \"Registered memory\"; "
		"UROCE_MR_PIN=require refuses them instead)\n",
		c->info.dev_name, strerror(why));
}

static int urv_uring_register(int fd, unsigned op, const void *arg, unsigned n)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

/* The ring: disabled (the daemon restricts and enables it), a sparse
 * buffer table, a probe page in buffer 0, handed over by its number. */
static int urv_pin_open(struct urv_context *c, struct urv_pin *p)
{
	struct io_uring_params par;
	struct io_uring_rsrc_register rr = { .nr = URV_PIN_NBUFS,
					     .flags = IORING_RSRC_REGISTER_SPARSE };

	memset(&par, 0, sizeof(par));
	par.flags = IORING_SETUP_R_DISABLED;
	p->ring = (int)syscall(__NR_io_uring_setup, URV_PIN_SQ, &par);
	if (p->ring < 0)
		return -errno;
	p->probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov = { p->probe, 4096 };
	struct io_uring_rsrc_update2 up = { .offset = 0, .data = (uintptr_t)&iov, .nr = 1 };
	if (p->probe == MAP_FAILED || !(par.features & IORING_FEAT_SINGLE_MMAP) ||
	    urv_uring_register(p->ring, IORING_REGISTER_BUFFERS2, &rr, sizeof(rr)) ||
	    urv_uring_register(p->ring, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up)) != 1)
		return errno ? -errno : -EINVAL;
	/* buffer updates are the only registrations allowed once the daemon
	 * has restricted the ring: this one is done while it is disabled */
	p->used[0] = 1;
	p->hint = 1;
	struct uroce_mem_chan_req q = {
		.ring_fd = p->ring, .sq_entries = par.sq_entries, .cq_entries = par.cq_entries,
		.nbufs = URV_PIN_NBUFS,
		.sq_head = par.sq_off.head, .sq_tail = par.sq_off.tail,
		.sq_mask = par.sq_off.ring_mask, .sq_array = par.sq_off.array,
		.cq_head = par.cq_off.head, .cq_tail = par.cq_off.tail,
		.cq_mask = par.cq_off.ring_mask, .cq_cqes = par.cq_off.cqes,
		.probe = (uintptr_t)p->probe,
	};
	int rc = urv_ctl(c, UROCE_OP_MEM_CHANNEL, &q, sizeof(q), NULL, 0, NULL, 0, NULL, 0);
	/* the daemon may not take it (not allowed to reach this process:
	 * ptrace rules; no io_uring in its own sandbox) */
	return rc == -EINVAL ? -EPERM : rc;
}

/* The connection's channel, made at the first registration that needs it */
static struct urv_pin *urv_pin_of(struct urv_context *c)
{
	struct urv_context *o = c->origin ? c->origin : c;
	struct urv_pin *p = __atomic_load_n(&o->pin, __ATOMIC_ACQUIRE);

	if (p)
		return p;
	pthread_mutex_lock(&o->pin_lock);
	if (!(p = o->pin) && (p = calloc(1, sizeof(*p)))) {
		int rc = urv_pin_mode() == 2 ? -EPERM : urv_pin_open(o, p);

		if (rc) {
			if (p->ring >= 0)
				close(p->ring);
			if (p->probe && p->probe != MAP_FAILED)
				munmap(p->probe, 4096);
			p->ring = -1;
			p->probe = NULL;
			p->why = -rc;
		}
		__atomic_store_n(&o->pin, p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&o->pin_lock);
	return p;
}

static uint32_t urv_pin_nslots(uint64_t len)
{
	return (uint32_t)(((len ? len - 1 : 0) >> UROCE_PIN_BUF_SHIFT) + 1);
}

/* n free consecutive slots, taken; 0 if none */
static uint32_t urv_pin_take(struct urv_pin *p, uint32_t n)
{
	for (uint32_t s = p->hint; s + n <= URV_PIN_NBUFS; s++) {
		uint32_t k = 0;

		while (k < n && !(p->used[(s + k) / 8] & (1u << ((s + k) % 8))))
			k++;
		if (k < n) {
			s += k;
			continue;
		}
		for (k = 0; k < n; k++)
			p->used[(s + k) / 8] |= (uint8_t)(1u << ((s + k) % 8));
		if (s == p->hint)
			p->hint = s + n;
		return s;
	}
	return 0;
}

static void urv_pin_give(struct urv_pin *p, uint32_t s, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		struct iovec none = { NULL, 0 };
		struct io_uring_rsrc_update2 up = { .offset = s + k, .data = (uintptr_t)&none,
						    .nr = 1 };

		/* unpinned once no operation of the daemon uses it (the
		 * daemon's use is synchronous: none is) */
		(void)urv_uring_register(p->ring, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
		p->used[(s + k) / 8] &= (uint8_t)~(1u << ((s + k) % 8));
	}
	if (s < p->hint)
		p->hint = s;
}

/* Pin [addr, addr + len) for a registration: r->pin = UROCE_PIN_RING and
 * its slots, or UROCE_PIN_NONE and why; or -errno for ibv_reg_mr. */
int urv_pin_reg(struct urv_context *c, void *addr, size_t len, unsigned access,
		struct urv_pin_ref *r)
{
	struct urv_context *o = c->origin ? c->origin : c;
	struct urv_pin *p;
	uint32_t n = urv_pin_nslots(len), s = 0;
	int why = ENOMEM;

	memset(r, 0, sizeof(*r));
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0; /* follows the address by definition */
	if (!(p = urv_pin_of(c)))
		return -ENOMEM;
	pthread_mutex_lock(&o->pin_lock);
	if (urv_pin_mode() == 2)
		why = EPERM; /* UROCE_MR_PIN=off */
	else if (p->ring < 0)
		why = p->why;
	else if (!(s = urv_pin_take(p, n)))
		why = ENOSPC; /* more registrations than the kernel's table */
	for (uint32_t k = 0; s && k < n; k++) {
		uint64_t off = (uint64_t)k << UROCE_PIN_BUF_SHIFT;
		uint64_t l = len - off < (1ull << UROCE_PIN_BUF_SHIFT) ? len - off
							       : 1ull << UROCE_PIN_BUF_SHIFT;
		struct iovec iov = { (uint8_t *)addr + off, (size_t)l };
		struct io_uring_rsrc_update2 up = { .offset = s + k, .data = (uintptr_t)&iov,
						    .nr = 1 };

		if (urv_uring_register(p->ring, IORING_REGISTER_BUFFERS_UPDATE, &up,
				       sizeof(up)) == 1)
			continue;
		why = errno;
		urv_pin_give(p, s, n); /* what was pinned, and the slots */
		s = 0;
	}
	pthread_mutex_unlock(&o->pin_lock);
	if (s) {
		*r = (struct urv_pin_ref){ UROCE_PIN_RING, s, n, 0 };
		return 0;
	}
	/* what an HCA refuses too: pinning past RLIMIT_MEMLOCK. Memory the
	 * kernel would not pin for writing (EFAULT) is either memory the
	 * process cannot write or read — the daemon's check of an unpinned
	 * registration refuses it with EFAULT, as ib_umem_get does — or
	 * memory no long-term pin may hold (a shared mapping of a file on a
	 * disk file system, Linux 6.5 and later; any file on 6.1), which an
	 * HCA reaches only through ODP: so it follows the address as ODP. */
	if ((why == ENOMEM && p->ring >= 0) || urv_pin_mode() == 1)
		return -why;
	urv_pin_warn(c, why);
	*r = (struct urv_pin_ref){ UROCE_PIN_NONE, 0, 0, why };
	return 0;
}

void urv_pin_unreg(struct urv_context *c, const struct urv_pin_ref *r)
{
	struct urv_context *o = c->origin ? c->origin : c;
	struct urv_pin *p = __atomic_load_n(&o->pin, __ATOMIC_ACQUIRE);

	if (r->pin != UROCE_PIN_RING || !p || p->ring < 0)
		return;
	pthread_mutex_lock(&o->pin_lock);
	urv_pin_give(p, r->slot, r->n);
	pthread_mutex_unlock(&o->pin_lock);
}

void urv_pin_close(struct urv_context *c)
{
	struct urv_pin *p = c->pin;

	if (!p)
		return;
	if (p->ring >= 0)
		close(p->ring); /* every page pinned through it is released */
	if (p->probe)
		munmap(p->probe, 4096);
	free(p);
	c->pin = NULL;
}
