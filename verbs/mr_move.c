/* SPDX-License-Identifier: MIT */
/* Private anonymous memory under a registration, moved onto a memfd for
 * the life of the registration so the daemon can map it (mr_map.c):
 * the whole pages of the range are copied into a sealed memfd that is
 * then mapped MAP_FIXED|MAP_SHARED over them, and put back (copied into
 * fresh private anonymous pages that mremap puts in place) when the last
 * registration over them goes. The application must not notice:
 *
 * - no write is lost: the range is read-only while it is copied, and a
 *   thread that writes meanwhile faults into our SIGSEGV handler, which
 *   waits for the move to end and lets the write run again (any other
 *   fault goes to the handler that was there before us);
 * - fork(): the child gets a private copy, as copy-on-write would give it
 *   (the moved range is MADV_DONTFORK across fork, a snapshot taken in
 *   prepare is mremap'ed into place in the child), unless ibv_fork_init /
 *   RDMAV_FORK_SAFE asked for the verbs semantics: the range is then not
 *   inherited at all, as rdma-core does;
 * - munmap/mremap of such a range (or of any daemon-mapped MR) drop the
 *   daemon's mapping first, so later operations fail as before.
 *
 * Copies go through the kernel (pwrite/pread on the memfd): the range may
 * hold allocator or sanitizer metadata the process itself must not read. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <uroce/procmaps.h>

#include "urv_dev.h"
#include "urv_ctl.h"
#include "urv_obj.h"
#include "urv_mem.h"

#define URV_EXPORT __attribute__((visibility("default")))

struct urv_moved {
	uintptr_t start, end;
	int memfd;
	unsigned refs;
	void *snap;               /* fork: the pages for the child */
	struct urv_moved *next;
};

static pthread_mutex_t mv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urv_moved *mv_list;
static struct urv_mr *mv_mapped;  /* MRs the daemon maps (any kind) */
static int mv_nmapped;            /* read without the lock by munmap */
static bool mv_fork_safe;

/* the range being moved and the one moved last: a writer that faulted
 * in either waits / retries (it may be scheduled after the move ended) */
static uintptr_t mv_busy_s, mv_busy_e, mv_last_s, mv_last_e;
static struct sigaction mv_prev;

static void mv_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	if (si->si_code == SEGV_ACCERR) {
		bool busy = a >= __atomic_load_n(&mv_busy_s, __ATOMIC_ACQUIRE) &&
			    a < __atomic_load_n(&mv_busy_e, __ATOMIC_ACQUIRE);
		if (busy) {
			while (a >= __atomic_load_n(&mv_busy_s, __ATOMIC_ACQUIRE) &&
			       a < __atomic_load_n(&mv_busy_e, __ATOMIC_ACQUIRE))
				sched_yield();
			return;
		}
		if (a >= __atomic_load_n(&mv_last_s, __ATOMIC_ACQUIRE) &&
		    a < __atomic_load_n(&mv_last_e, __ATOMIC_ACQUIRE))
			return;
	}
	if (mv_prev.sa_flags & SA_SIGINFO) {
		mv_prev.sa_sigaction(sig, si, uc);
	} else if (mv_prev.sa_handler != SIG_DFL && mv_prev.sa_handler != SIG_IGN) {
		mv_prev.sa_handler(sig);
	} else {
		/* the fault happens again with the default action */
		signal(sig, SIG_DFL);
	}
}

/* ours, in front of whatever the application installed since */
static void mv_segv_install(void)
{
	struct sigaction cur, sa;

	if (sigaction(SIGSEGV, NULL, &cur) || ((cur.sa_flags & SA_SIGINFO) &&
					       cur.sa_sigaction == mv_segv))
		return;
	mv_prev = cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mv_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

static void mv_busy(uintptr_t s, uintptr_t e)
{
	__atomic_store_n(&mv_busy_s, s, __ATOMIC_RELEASE);
	__atomic_store_n(&mv_busy_e, e, __ATOMIC_RELEASE);
}

static void mv_done(uintptr_t s, uintptr_t e)
{
	__atomic_store_n(&mv_last_s, s, __ATOMIC_RELEASE);
	__atomic_store_n(&mv_last_e, e, __ATOMIC_RELEASE);
	mv_busy(0, 0);
}

/* userfaultfd on a mapping in [s, e) (VmFlags um/uw/ui in smaps): its
 * faults are the application's to serve, and a mapping of ours in its
 * place would end that. smaps is read only up to e. */
static bool mv_uffd(uintptr_t s, uintptr_t e)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false, seen = false;

	if (!f)
		return true; /* unreadable: do not move */
	while (fgets(line, sizeof(line), f)) {
		struct uroce_vma v;

		if (uroce_vma_parse(line, &v)) {
			if (v.start >= e)
				break;
			in = v.end > s;
			continue;
		}
		if (!in || strncmp(line, "VmFlags:", 8))
			continue;
		seen = true;
		if (strstr(line, " um") || strstr(line, " uw") || strstr(line, " ui")) {
			seen = false;
			break;
		}
	}
	fclose(f);
	return !seen;
}

/* Copy the pages of [s, s + len) that hold data (present or swapped, from
 * pagemap) into fd; the others were never touched and stay holes, which
 * read as zeros as they would have: a large untouched buffer costs no
 * memory. false on any failure. */
static bool mv_copy_used(int fd, uintptr_t s, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = len / pg;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t ent[512];
	bool ok = pm >= 0;

	for (size_t i = 0; ok && i < n;) {
		size_t k = n - i < 512 ? n - i : 512;
		ok = pread(pm, ent, k * 8, (off_t)((s / pg + i) * 8)) == (ssize_t)(k * 8);
		for (size_t j = 0; ok && j < k;) {
			size_t r = j;
			while (r < k && (ent[r] >> 62))
				r++; /* a run of present (bit 63) or swapped (62) pages */
			if (r > j) {
				size_t b = (r - j) * pg;
				ok = syscall(SYS_pwrite64, fd, (void *)(s + (i + j) * pg), b,
					     (off_t)((i + j) * pg)) == (long)b;
				j = r;
			} else {
				j++;
			}
		}
		i += k;
	}
	if (pm >= 0)
		close(pm);
	return ok;
}

/* [s, e) private anonymous read-write pages -> a sealed memfd mapped
 * shared in their place. The memfd, or -1 (nothing changed). */
static int mv_to_memfd(uintptr_t s, uintptr_t e)
{
	size_t len = e - s;
	int fd = memfd_create("uroce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (mv_uffd(s, e) || ftruncate(fd, (off_t)len) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return -1;
	}
	mv_segv_install();
	mv_busy(s, e);
	bool ok = !mprotect((void *)s, len, PROT_READ) && mv_copy_used(fd, s, len) &&
		  mmap((void *)s, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, fd, 0) !=
			  MAP_FAILED;
	if (!ok)
		mprotect((void *)s, len, PROT_READ | PROT_WRITE);
	else if (mv_fork_safe)
		madvise((void *)s, len, MADV_DONTFORK); /* as ibv_fork_init would */
	mv_done(s, e);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Back to private anonymous pages with the same bytes; false if it could
 * not be done (the range then stays on the memfd). */
static bool mv_to_private(struct urv_moved *m)
{
	size_t len = m->end - m->start;
	void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp == MAP_FAILED)
		return false;
	mv_busy(m->start, m->end);
	bool ok = !mprotect((void *)m->start, len, PROT_READ) &&
		  syscall(SYS_pread64, m->memfd, tmp, len, 0) == (long)len &&
		  syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			  (void *)m->start) != (long)MAP_FAILED;
	if (!ok) {
		mprotect((void *)m->start, len, PROT_READ | PROT_WRITE);
		syscall(SYS_munmap, tmp, len);
	}
	mv_done(m->start, m->end);
	return ok;
}

static struct urv_moved *mv_find(uintptr_t s, uintptr_t e)
{
	for (struct urv_moved *m = mv_list; m; m = m->next)
		if (m->start <= s && e <= m->end)
			return m;
	return NULL;
}

static void mv_unlink(struct urv_moved *m)
{
	for (struct urv_moved **p = &mv_list; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	close(m->memfd);
	free(m);
}

void urv_mv_lock(void)
{
	pthread_mutex_lock(&mv_lock);
}

void urv_mv_unlock(void)
{
	pthread_mutex_unlock(&mv_lock);
}

/* (under urv_mv_lock) a reference to the moved range holding [s, e),
 * moving it first; its memfd in *fd. NULL: not possible. */
struct urv_moved *urv_mv_get(uintptr_t s, uintptr_t e, int *fd)
{
	struct urv_moved *m = mv_find(s, e);

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->memfd = mv_to_memfd(s, e);
		if (m->memfd < 0) {
			free(m);
			return NULL;
		}
		m->start = s;
		m->end = e;
		m->next = mv_list;
		mv_list = m;
	}
	m->refs++;
	*fd = m->memfd;
	return m;
}

/* (under urv_mv_lock) the moved range whose memfd is the file dev/ino of
 * a shared mapping, for a registration over pages already moved */
struct urv_moved *urv_mv_of_file(unsigned maj, unsigned min, uint64_t ino)
{
	for (struct urv_moved *m = mv_list; m; m = m->next) {
		struct stat st;

		if (!fstat(m->memfd, &st) && (uint64_t)st.st_ino == ino &&
		    major(st.st_dev) == maj && minor(st.st_dev) == min) {
			m->refs++;
			return m;
		}
	}
	return NULL;
}

/* (under urv_mv_lock) drop umr's reference; the last one puts the pages
 * back as private anonymous memory (the daemon no longer maps them) */
static void mv_put(struct urv_moved *m)
{
	if (!m || --m->refs)
		return;
	if (mv_to_private(m))
		mv_unlink(m);
	else
		m->refs = 1; /* kept shared: better than losing the bytes */
}

/* (under urv_mv_lock) umr is mapped by the daemon: munmap/mremap watch it */
void urv_mv_track(struct urv_mr *umr)
{
	umr->mv_next = mv_mapped;
	mv_mapped = umr;
	__atomic_add_fetch(&mv_nmapped, 1, __ATOMIC_RELEASE);
}

/* umr's registration ends or changes (the daemon has dropped its
 * mapping): forget it and release its moved pages */
void urv_mv_release(struct urv_mr *umr)
{
	urv_mv_lock();
	for (struct urv_mr **p = &mv_mapped; *p; p = &(*p)->mv_next)
		if (*p == umr) {
			*p = umr->mv_next;
			__atomic_sub_fetch(&mv_nmapped, 1, __ATOMIC_RELEASE);
			break;
		}
	umr->mv_next = NULL;
	mv_put(umr->mv);
	umr->mv = NULL;
	urv_mv_unlock();
}

/* ---------------- munmap / mremap ---------------- */

static bool mv_overlaps(uintptr_t s, uintptr_t e, uintptr_t a, uintptr_t b)
{
	return s < b && a < e;
}

/* [a, b) is going away: the daemon stops using every MR mapped there
 * (later accesses take the old path and fail as they always did), and
 * moved pages there are forgotten, never put back over whatever comes
 * next at those addresses. */
static void mv_forget(uintptr_t a, uintptr_t b)
{
	urv_mv_lock();
	for (struct urv_mr **p = &mv_mapped; *p;) {
		struct urv_mr *u = *p;
		uintptr_t s = (uintptr_t)u->ibmr.addr, e = s + u->ibmr.length;

		if (!mv_overlaps(s, e, a, b) &&
		    !(u->mv && mv_overlaps(u->mv->start, u->mv->end, a, b))) {
			p = &u->mv_next;
			continue;
		}
		if (u->mapped) {
			struct uroce_handle_msg q = { .handle = u->ibmr.handle };
			(void)urv_ctl(to_uctx(u->ibmr.context), UROCE_OP_UNMAP_MR, &q, sizeof(q),
				      NULL, 0, NULL, 0, NULL, 0);
			u->mapped = false;
		}
		/* its moved pages are forgotten below if they go too; else it
		 * keeps its reference, to put them back at deregistration */
		if (u->mv && mv_overlaps(u->mv->start, u->mv->end, a, b))
			u->mv = NULL;
		if (u->mv) {
			p = &u->mv_next;
			continue;
		}
		*p = u->mv_next;
		u->mv_next = NULL;
		__atomic_sub_fetch(&mv_nmapped, 1, __ATOMIC_RELEASE);
	}
	for (struct urv_moved **p = &mv_list; *p;) {
		struct urv_moved *m = *p;

		if (!mv_overlaps(m->start, m->end, a, b)) {
			p = &m->next;
			continue;
		}
		*p = m->next;
		close(m->memfd);
		free(m);
	}
	urv_mv_unlock();
}

URV_EXPORT int munmap(void *addr, size_t len)
{
	if (__atomic_load_n(&mv_nmapped, __ATOMIC_ACQUIRE))
		mv_forget((uintptr_t)addr, (uintptr_t)addr + len);
	return (int)syscall(SYS_munmap, addr, len);
}

URV_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;

	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (__atomic_load_n(&mv_nmapped, __ATOMIC_ACQUIRE))
		mv_forget((uintptr_t)old, (uintptr_t)old + old_len);
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

/* ---------------- fork ---------------- */

static void mv_prepare(void)
{
	urv_mv_lock();
	if (mv_fork_safe)
		return;
	for (struct urv_moved *m = mv_list; m; m = m->next) {
		size_t len = m->end - m->start;
		void *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		m->snap = NULL;
		if (s == MAP_FAILED)
			continue; /* the child sees nothing there, as with the verbs semantics */
		if (syscall(SYS_pread64, m->memfd, s, len, 0) != (long)len) {
			syscall(SYS_munmap, s, len);
			continue;
		}
		m->snap = s;
		madvise((void *)m->start, len, MADV_DONTFORK);
	}
}

static void mv_parent(void)
{
	for (struct urv_moved *m = mv_list; !mv_fork_safe && m; m = m->next) {
		if (!m->snap)
			continue;
		madvise((void *)m->start, m->end - m->start, MADV_DOFORK);
		syscall(SYS_munmap, m->snap, m->end - m->start);
		m->snap = NULL;
	}
	urv_mv_unlock();
}

/* the child's own private copy, where the parent's memfd was; nothing of
 * the parent's registrations is the child's */
static void mv_child(void)
{
	while (mv_list) {
		struct urv_moved *m = mv_list;
		size_t len = m->end - m->start;

		if (m->snap)
			syscall(SYS_mremap, m->snap, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
				(void *)m->start);
		mv_list = m->next;
		close(m->memfd);
		free(m);
	}
	mv_mapped = NULL;
	mv_nmapped = 0;
	pthread_mutex_init(&mv_lock, NULL);
}

static void mv_init(void)
{
	const char *e = getenv("RDMAV_FORK_SAFE"), *f = getenv("IBV_FORK_SAFE");

	if ((e && *e && strcmp(e, "0")) || (f && *f && strcmp(f, "0")))
		mv_fork_safe = true;
	pthread_atfork(mv_prepare, mv_parent, mv_child);
}

void urv_mv_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, mv_init);
}

void urv_mv_fork_init(void)
{
	urv_mv_setup();
	mv_fork_safe = true;
}
