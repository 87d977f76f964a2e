/* SPDX-License-Identifier: MIT */
/* The system view of uroce devices: programs that probe the system instead
 * of asking verbs (UCX, libfabric, infiniband-diags, ibstatus) read
 * /sys/class/infiniband/<dev>/... and stat /dev/infiniband/uverbs_<dev>.
 * Each daemon writes a sysfs-shaped tree of its device into the run
 * directory (emu/sysfs.c); these libc interposers redirect exactly
 *   /sys/class/infiniband/<uroce dev>[/...]  -> <run>/class/infiniband/<dev>[/...]
 *   /sys/class/infiniband (listing)          -> the real entries, then ours
 *   /dev/infiniband/uverbs_<uroce dev>       -> /dev/null (a character device
 *                                               that is never opened for verbs)
 * and, when uroce serves rdma_cm (verbs/ucma.c, docs/cm.md),
 *   /dev/infiniband/rdma_cm                  -> an rdma_cm file of the daemon
 *                                               (open), /dev/null (stat)
 *   /sys/class/misc/rdma_cm[/...]            -> <run>/class/misc/rdma_cm[/...]
 * and nothing else. A name is a uroce device when its tree and its control
 * socket exist and no real device of that name does. A path with a ".."
 * component under a uroce device is refused (EACCES): it cannot escape the
 * tree. Every other path goes to libc untouched after one prefix compare. */
/* Both the plain and the 64-bit names are defined here, each forwarding to
 * its own libc function: no <fcntl.h>/<sys/stat.h> redirection wanted. */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "urv_dev.h"
#include "real_fn.h"
#include "sysfs.h"
#include "ucma.h"

#ifdef URV_SYSFS_TEST_CLASS
/* tests/stack/sysfs_merge.c builds this file alone: no rdma_cm there */
#define urv_ucma_open(p, f, r) ((void)(p), (void)(f), (void)(r), 0)
#define urv_ucma_served(r, l) ((void)(r), (void)(l), false)
#endif

#define URV_EXPORT __attribute__((visibility("default")))

/* tests/stack/sysfs_merge.c compiles this file with its own class
 * directory, to check the listing merged with real devices */
#ifdef URV_SYSFS_TEST_CLASS
#define SYS_IB URV_SYSFS_TEST_CLASS
#else
#define SYS_IB "/sys/class/infiniband"
#endif
#define DEV_IB "/dev/infiniband/"
#define UVERBS "uverbs_"

/* A path exists, without going through our own interposers. */
static bool raw_exists(const char *p)
{
	return syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
}

static bool name_ok(const char *n, size_t len)
{
	return len > 0 && len < UROCE_DEV_NAME_MAX && !(n[0] == '.' && (len == 1 ||
		(len == 2 && n[1] == '.')));
}

/* Is NAME (len bytes) a live uroce device: its tree and socket exist. */
static bool dev_is_ours(const char *run, const char *name, size_t len)
{
	char p[PATH_MAX];
	int n;

	if (!name_ok(name, len) || memchr(name, '/', len))
		return false;
	n = snprintf(p, sizeof(p), "%s/%.*s%s", run, (int)len, name, UROCE_SOCK_SUFFIX);
	if (n < 0 || (size_t)n >= sizeof(p) || !raw_exists(p))
		return false;
	n = snprintf(p, sizeof(p), "%s/" UROCE_SYSFS_CLASS "/%.*s", run, (int)len, name);
	return n > 0 && (size_t)n < sizeof(p) && raw_exists(p);
}

/* true if any component of s is ".." */
static bool has_dotdot(const char *s)
{
	for (const char *c = s; (c = strstr(c, "..")); c += 2)
		if ((c == s || c[-1] == '/') && (c[2] == 0 || c[2] == '/'))
			return true;
	return false;
}

/* rdma_cm's paths when uroce serves it (ucma.h): 0 when not */
static int ucma_map(const char *path, char *out, size_t len)
{
	const size_t sl = sizeof(URV_UCMA_SYSFS) - 1;
	char run[PATH_MAX];
	int n;

	if (!strcmp(path, URV_UCMA_DEV)) {
		if (!urv_ucma_served(run, sizeof(run)) || raw_exists(path))
			return 0;
		snprintf(out, len, "/dev/null");
		return 1;
	}
	if (strncmp(path, URV_UCMA_SYSFS, sl) || (path[sl] && path[sl] != '/'))
		return 0;
	if (raw_exists(URV_UCMA_SYSFS) || !urv_ucma_served(run, sizeof(run)))
		return 0;
	if (has_dotdot(path + sl))
		return -EACCES;
	n = snprintf(out, len, "%s/" URV_UCMA_SYSFS_REL "%s", run, path + sl);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 1;
}

int urv_sysfs_map(const char *path, char *out, size_t len)
{
	char run[PATH_MAX], real[PATH_MAX];
	const char *rest, *slash;
	size_t nlen;
	int n;

	if (!path || path[0] != '/')
		return 0;
	n = ucma_map(path, out, len);
	if (n)
		return n;
	if (!strncmp(path, DEV_IB UVERBS, sizeof(DEV_IB UVERBS) - 1)) {
		rest = path + sizeof(DEV_IB UVERBS) - 1;
		urv_run_dir(run, sizeof(run));
		if (!run[0] || raw_exists(path) || !dev_is_ours(run, rest, strlen(rest)))
			return 0;
		snprintf(out, len, "/dev/null");
		return 1;
	}
	if (strncmp(path, SYS_IB, sizeof(SYS_IB) - 1))
		return 0;
	rest = path + sizeof(SYS_IB) - 1;
	if (*rest != '/' && *rest != 0)
		return 0;                     /* /sys/class/infiniband_verbs, ... */
	while (*rest == '/')
		rest++;
	urv_run_dir(run, sizeof(run));
	if (!run[0])
		return 0;
	if (*rest == 0) {
		/* the class directory itself: the real one when there is one */
		if (raw_exists(SYS_IB))
			return 0;
		n = snprintf(out, len, "%s/" UROCE_SYSFS_CLASS, run);
		return n > 0 && (size_t)n < len && raw_exists(out) ? 1 : 0;
	}
	slash = strchr(rest, '/');
	nlen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (!dev_is_ours(run, rest, nlen))
		return 0;
	n = snprintf(real, sizeof(real), SYS_IB "/%.*s", (int)nlen, rest);
	if (n > 0 && (size_t)n < sizeof(real) && raw_exists(real))
		return 0;                     /* a real device of that name wins */
	if (slash && has_dotdot(slash))
		return -EACCES;
	n = snprintf(out, len, "%s/" UROCE_SYSFS_CLASS "/%s", run, rest);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 1;
}

/* Map PATH into buf; *p is the path to use. false (errno set) = refused. */
static bool map(const char **p, char *buf, size_t len)
{
	int r = urv_sysfs_map(*p, buf, len);

	if (r < 0) {
		errno = -r;
		return false;
	}
	if (r > 0)
		*p = buf;
	return true;
}

/* ---- open and stat families ---------------------------------------- */

/* open() of rdma_cm's node is urv_ucma_open's or libc's: never the
 * /dev/null that stat() sees when no daemon took the open */
static bool map_for_open(const char **p, char *buf, size_t len)
{
	if (!strcmp(*p, URV_UCMA_DEV))
		return true;
	return map(p, buf, len);
}

/* Could PATH be one of ours: the only test every other path pays. */
static inline bool maybe_ours(const char *p)
{
	return p && p[0] == '/' &&
	       ((p[1] == SYS_IB[1] && (!strncmp(p, SYS_IB, sizeof(SYS_IB) - 1) ||
				       !strncmp(p, URV_UCMA_SYSFS, sizeof(URV_UCMA_SYSFS) - 1))) ||
		(p[1] == DEV_IB[1] && (!strncmp(p, DEV_IB UVERBS, sizeof(DEV_IB UVERBS) - 1) ||
				       !strcmp(p, URV_UCMA_DEV))));
}

/* fn(decl) forwards args to libc; a path under our prefixes goes through
 * fn_slow, out of line, so that only it carries the PATH_MAX buffer. */
#define PATH_FN(ret, fn, err, decl, args)                                     \
	REAL_PTR(fn);                                                         \
	static __attribute__((noinline)) ret fn##_slow decl                   \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		if (!map(&path, buf, sizeof(buf)))                            \
			return err;                                           \
		return real_##fn args;                                        \
	}                                                                     \
	URV_EXPORT ret fn decl                                                \
	{                                                                     \
		LOAD(fn, err);                                                \
		if (!maybe_ours(path))                                        \
			return real_##fn args;                                \
		return fn##_slow args;                                        \
	}

static bool open_has_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* open(2) and openat(2) take a mode only with O_CREAT/O_TMPFILE */
#define OPEN_MODE(mode, flags) do {                                           \
		if (open_has_mode(flags)) {                                   \
			va_list ap;                                           \
			va_start(ap, flags);                                  \
			mode = va_arg(ap, mode_t);                            \
			va_end(ap);                                           \
		}                                                             \
	} while (0)

#define OPEN_LIKE(fn)                                                         \
	REAL_PTR(fn);                                                         \
	static __attribute__((noinline)) int fn##_slow(const char *path, int flags, \
						       mode_t mode)           \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		int cm_fd;                                                    \
		if (urv_ucma_open(path, flags, &cm_fd))                       \
			return cm_fd;                                         \
		if (!map_for_open(&path, buf, sizeof(buf)))                   \
			return -1;                                            \
		return real_##fn(path, flags, mode);                          \
	}                                                                     \
	URV_EXPORT int fn(const char *path, int flags, ...)                   \
	{                                                                     \
		mode_t mode = 0;                                              \
		LOAD(fn, -1);                                                 \
		OPEN_MODE(mode, flags);                                       \
		if (!maybe_ours(path))                                        \
			return real_##fn(path, flags, mode);                  \
		return fn##_slow(path, flags, mode);                          \
	}
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(fn)                                                       \
	REAL_PTR(fn);                                                         \
	static __attribute__((noinline)) int fn##_slow(int dfd, const char *path, \
						       int flags, mode_t mode) \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		int cm_fd;                                                    \
		if (urv_ucma_open(path, flags, &cm_fd))                       \
			return cm_fd;                                         \
		if (!map_for_open(&path, buf, sizeof(buf)))                   \
			return -1;                                            \
		return real_##fn(dfd, path, flags, mode);                     \
	}                                                                     \
	URV_EXPORT int fn(int dfd, const char *path, int flags, ...)          \
	{                                                                     \
		mode_t mode = 0;                                              \
		LOAD(fn, -1);                                                 \
		OPEN_MODE(mode, flags);                                       \
		if (!maybe_ours(path))                                        \
			return real_##fn(dfd, path, flags, mode);             \
		return fn##_slow(dfd, path, flags, mode);                     \
	}
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

/* _FORTIFY_SOURCE versions */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dfd, const char *path, int flags);
int __openat64_2(int dfd, const char *path, int flags);
/* like PATH_FN, rdma_cm first */
#define OPEN2_FN(fn, decl, args)                                              \
	REAL_PTR(fn);                                                         \
	static __attribute__((noinline)) int fn##_slow decl                   \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		int cm_fd;                                                    \
		if (urv_ucma_open(path, flags, &cm_fd))                       \
			return cm_fd;                                         \
		if (!map_for_open(&path, buf, sizeof(buf)))                   \
			return -1;                                            \
		return real_##fn args;                                        \
	}                                                                     \
	URV_EXPORT int fn decl                                                \
	{                                                                     \
		LOAD(fn, -1);                                                 \
		if (!maybe_ours(path))                                        \
			return real_##fn args;                                \
		return fn##_slow args;                                        \
	}
OPEN2_FN(__open_2, (const char *path, int flags), (path, flags))
OPEN2_FN(__open64_2, (const char *path, int flags), (path, flags))
OPEN2_FN(__openat_2, (int dfd, const char *path, int flags), (dfd, path, flags))
OPEN2_FN(__openat64_2, (int dfd, const char *path, int flags), (dfd, path, flags))

PATH_FN(FILE *, fopen, NULL, (const char *path, const char *mode), (path, mode))
PATH_FN(FILE *, fopen64, NULL, (const char *path, const char *mode), (path, mode))
PATH_FN(int, stat, -1, (const char *path, struct stat *st), (path, st))
PATH_FN(int, stat64, -1, (const char *path, struct stat64 *st), (path, st))
PATH_FN(int, lstat, -1, (const char *path, struct stat *st), (path, st))
PATH_FN(int, lstat64, -1, (const char *path, struct stat64 *st), (path, st))
PATH_FN(int, fstatat, -1, (int dfd, const char *path, struct stat *st, int fl),
	(dfd, path, st, fl))
PATH_FN(int, fstatat64, -1, (int dfd, const char *path, struct stat64 *st, int fl),
	(dfd, path, st, fl))
PATH_FN(int, statx, -1, (int dfd, const char *path, int fl, unsigned mask,
			 struct statx *st), (dfd, path, fl, mask, st))
PATH_FN(int, access, -1, (const char *path, int mode), (path, mode))
PATH_FN(int, eaccess, -1, (const char *path, int mode), (path, mode))
PATH_FN(int, euidaccess, -1, (const char *path, int mode), (path, mode))
PATH_FN(int, faccessat, -1, (int dfd, const char *path, int mode, int fl),
	(dfd, path, mode, fl))
PATH_FN(ssize_t, readlink, -1, (const char *path, char *restrict b, size_t l),
	(path, b, l))
PATH_FN(int, chdir, -1, (const char *path), (path))
/* ls -l asks for ACLs and security labels */
PATH_FN(ssize_t, getxattr, -1, (const char *path, const char *name, void *v, size_t l),
	(path, name, v, l))
PATH_FN(ssize_t, lgetxattr, -1, (const char *path, const char *name, void *v, size_t l),
	(path, name, v, l))
PATH_FN(ssize_t, listxattr, -1, (const char *path, char *list, size_t l), (path, list, l))
PATH_FN(ssize_t, llistxattr, -1, (const char *path, char *list, size_t l), (path, list, l))
/* UCX finds the device's sysfs directory with realpath() of
 * .../<dev>/device; glibc resolves it with internal calls we do not see. */
PATH_FN(char *, realpath, NULL, (const char *path, char *resolved), (path, resolved))

/* Programs built against glibc < 2.33 call the __xstat family. glibc
 * 2.33+ keeps those only as compat symbols, which dlsym does not return:
 * they are served by fstatat/fstatat64 (the same struct stat for every
 * `ver` the x86-64 and arm64 ABIs use). */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dfd, const char *path, struct stat *st, int fl);
int __fxstatat64(int ver, int dfd, const char *path, struct stat64 *st, int fl);
URV_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return fstatat(AT_FDCWD, path, st, 0);
}
URV_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return fstatat64(AT_FDCWD, path, st, 0);
}
URV_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}
URV_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return fstatat64(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}
URV_EXPORT int __fxstatat(int ver, int dfd, const char *path, struct stat *st, int fl)
{
	(void)ver;
	return fstatat(dfd, path, st, fl);
}
URV_EXPORT int __fxstatat64(int ver, int dfd, const char *path, struct stat64 *st, int fl)
{
	(void)ver;
	return fstatat64(dfd, path, st, fl);
}

/* ---- the class directory listing ------------------------------------- */

/* A listing of /sys/class/infiniband in progress: the real directory
 * (when there is one), then the run directory's, whose entries are shown
 * only for live devices. */
struct urv_ls {
	DIR *handle;      /* what the program holds */
	DIR *ours;        /* second stream (NULL when handle is ours already) */
	bool on_ours;     /* reading the run directory's entries now */
	char run[PATH_MAX];
};

#define URV_MAX_LS 16
static struct urv_ls *ls_tab[URV_MAX_LS];
static int ls_count;
static pthread_mutex_t ls_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_class_dir(const char *p)
{
	size_t l = sizeof(SYS_IB) - 1;

	if (!p || strncmp(p, SYS_IB, l))
		return false;
	while (p[l] == '/')
		l++;
	return p[l] == 0;
}

/* The listing slot of d, NULL when d is not a class directory listing. */
static struct urv_ls *ls_find(DIR *d, int *slot)
{
	if (!__atomic_load_n(&ls_count, __ATOMIC_ACQUIRE))
		return NULL;                  /* every other directory: no lock */
	for (int i = 0; i < URV_MAX_LS; i++)
		if (ls_tab[i] && ls_tab[i]->handle == d) {
			if (slot)
				*slot = i;
			return ls_tab[i];
		}
	return NULL;
}

REAL_PTR(opendir);
REAL_PTR(closedir);

/* A device directory of ours (or a refused path). */
static __attribute__((noinline)) DIR *opendir_mapped(const char *path)
{
	char buf[PATH_MAX];

	if (!map(&path, buf, sizeof(buf)))
		return NULL;
	return real_opendir(path);
}

/* The class directory: a listing slot with both streams. */
static __attribute__((noinline)) DIR *opendir_class(const char *path)
{
	char ours_path[PATH_MAX];
	struct urv_ls *l;
	DIR *real, *ours;
	int i;

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	urv_run_dir(l->run, sizeof(l->run));
	if (!l->run[0] ||
	    snprintf(ours_path, sizeof(ours_path), "%s/" UROCE_SYSFS_CLASS, l->run) >=
	    (int)sizeof(ours_path))
		ours_path[0] = 0;      /* no such directory */
	real = real_opendir(path);
	int err = errno;
	ours = real_opendir(ours_path);
	if (!real && !ours) {
		free(l);
		errno = err;
		return NULL;
	}
	l->handle = real ? real : ours;
	l->ours = real ? ours : NULL;
	l->on_ours = !real;
	pthread_mutex_lock(&ls_lock);
	for (i = 0; i < URV_MAX_LS && ls_tab[i]; i++)
		;
	if (i < URV_MAX_LS) {
		ls_tab[i] = l;
		__atomic_add_fetch(&ls_count, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ls_lock);
	if (i == URV_MAX_LS) {          /* too many at once: the real listing only */
		if (l->ours)
			real_closedir(l->ours);
		DIR *h = l->handle;
		free(l);
		if (h == ours) {
			real_closedir(h);
			errno = err;
			return NULL;
		}
		return h;
	}
	return l->handle;
}

URV_EXPORT DIR *opendir(const char *path)
{
	LOAD(opendir, NULL);
	LOAD(closedir, NULL);
	if (!maybe_ours(path))
		return real_opendir(path);
	if (is_class_dir(path))
		return opendir_class(path);
	return opendir_mapped(path);
}

/* Entries of the run directory's class dir: live devices only. */
static bool ls_keep(struct urv_ls *l, const char *name)
{
	char real[PATH_MAX];
	int n;

	if (name[0] == '.')
		return !l->ours && (!strcmp(name, ".") || !strcmp(name, ".."));
	if (!dev_is_ours(l->run, name, strlen(name)))
		return false;
	if (!l->ours)
		return true;
	/* after the real entries: a real device of that name was listed */
	n = snprintf(real, sizeof(real), SYS_IB "/%s", name);
	return n > 0 && (size_t)n < sizeof(real) && !raw_exists(real);
}

#define READDIR_LIKE(fn, ent)                                            \
	REAL_PTR(fn);                                                    \
	URV_EXPORT struct ent *fn(DIR *d)                                \
	{                                                                \
		struct urv_ls *l;                                        \
		struct ent *e;                                           \
		LOAD(fn, NULL);                                                \
		if (!__atomic_load_n(&ls_count, __ATOMIC_ACQUIRE))       \
			return real_##fn(d);  /* no listing open: fast */\
		pthread_mutex_lock(&ls_lock);                            \
		l = ls_find(d, NULL);                                    \
		pthread_mutex_unlock(&ls_lock);                          \
		if (!l)                                                  \
			return real_##fn(d);                             \
		for (;;) {                                               \
			DIR *cur = l->on_ours && l->ours ? l->ours : d;  \
			e = real_##fn(cur);                              \
			if (!e && !l->on_ours && l->ours) {              \
				l->on_ours = true;                       \
				continue;                                \
			}                                                \
			if (!e || !l->on_ours || ls_keep(l, e->d_name))  \
				return e;                                \
		}                                                        \
	}
READDIR_LIKE(readdir, dirent)
READDIR_LIKE(readdir64, dirent64)

URV_EXPORT int closedir(DIR *d)
{
	struct urv_ls *l;
	int slot = -1;

	LOAD(closedir, -1);
	pthread_mutex_lock(&ls_lock);
	l = ls_find(d, &slot);
	if (l) {
		ls_tab[slot] = NULL;
		__atomic_sub_fetch(&ls_count, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ls_lock);
	if (l) {
		if (l->ours)
			real_closedir(l->ours);
		free(l);
	}
	return real_closedir(d);
}

/* glibc's scandir reads through its internal readdir, which we do not
 * see: the class directory is listed here with ours. */
#define SCANDIR_LIKE(fn, ent, rd)                                                \
	REAL_PTR(fn);                                                            \
	static __attribute__((noinline)) int fn##_mapped(const char *path,       \
			  struct ent ***list, int (*sel)(const struct ent *),    \
			  int (*cmp)(const struct ent **, const struct ent **))  \
	{                                                                        \
		char buf[PATH_MAX];                                              \
		if (!map(&path, buf, sizeof(buf)))                               \
			return -1;                                               \
		return real_##fn(path, list, sel, cmp);                          \
	}                                                                        \
	URV_EXPORT int fn(const char *path, struct ent ***list,                  \
			  int (*sel)(const struct ent *),                        \
			  int (*cmp)(const struct ent **, const struct ent **))  \
	{                                                                        \
		struct ent **v = NULL, *e;                                       \
		size_t n = 0, cap = 0;                                           \
		DIR *d;                                                          \
		LOAD(fn, -1);                                                    \
		if (!maybe_ours(path))                                           \
			return real_##fn(path, list, sel, cmp);                  \
		if (!is_class_dir(path))                                         \
			return fn##_mapped(path, list, sel, cmp);                \
		d = opendir(path);                                               \
		if (!d)                                                          \
			return -1;                                               \
		while ((e = rd(d))) {                                            \
			if (sel && !sel(e))                                      \
				continue;                                        \
			if (n == cap) {                                          \
				cap = cap ? 2 * cap : 16;                        \
				void *nv = realloc(v, cap * sizeof(*v));         \
				if (!nv)                                         \
					goto fail;                               \
				v = nv;                                          \
			}                                                        \
			v[n] = malloc(e->d_reclen);                              \
			if (!v[n])                                               \
				goto fail;                                       \
			memcpy(v[n++], e, e->d_reclen);                          \
		}                                                                \
		closedir(d);                                                     \
		if (cmp && n > 1)                                                \
			qsort(v, n, sizeof(*v),                                  \
			      (int (*)(const void *, const void *))(void (*)(void))cmp);         \
		*list = v;                                                       \
		return (int)n;                                                   \
	fail:                                                                    \
		while (n)                                                        \
			free(v[--n]);                                            \
		free(v);                                                         \
		closedir(d);                                                     \
		errno = ENOMEM;                                                  \
		return -1;                                                       \
	}
SCANDIR_LIKE(scandir, dirent, readdir)
SCANDIR_LIKE(scandir64, dirent64, readdir64)
