/* SPDX-License-Identifier: MIT */
/* liburoce's system view (verbs/sysfs.c), without a daemon: a fake run
 * directory holds a tree for "uroce9" with its socket file, a stale tree
 * "uroce8" without a socket, and a half-written ".uroce7.new". Linked with
 * liburoce, so this program's libc calls go through the interposers.
 * Checks that uroce paths are redirected, that ".." out of a device tree
 * is refused, that stale devices and other names are not, and that real
 * paths (/proc, /etc, /sys, /dev/null) are untouched. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* exported by liburoce for old binaries (glibc keeps them as compat only) */
int __xstat(int ver, const char *path, struct stat *st);
int __lxstat(int ver, const char *path, struct stat *st);

static int failures;

#define T_FAILURES failures
#include "../include/check.h"

static char run[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", run, rel);
	f = fopen(p, "w");
	if (!f) {
		perror(p);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", run, rel);
	if (mkdir(p, 0755) && errno != EEXIST) {
		perror(p);
		exit(1);
	}
}

/* read a file through open() (interposed) */
static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	return (int)n;
}

static bool listed(const char *path, const char *name)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, name))
			found = true;
	closedir(d);
	return found;
}

int main(void)
{
	char buf[4096], buf2[4096];
	struct stat st, st2;
	struct dirent **nl;
	FILE *f;
	int n, fd;

	snprintf(run, sizeof(run), "/tmp/uroce-sysfs-unit-XXXXXX");
	if (!mkdtemp(run)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("UROCE_RUN_DIR", run, 1);
	dir("class");
	dir("class/infiniband");
	dir("class/infiniband/uroce9");
	dir("class/infiniband/uroce9/ports");
	dir("class/infiniband/uroce9/ports/1");
	put("class/infiniband/uroce9/ports/1/state", "4: ACTIVE\n");
	put("class/infiniband/uroce9/secret_sibling", "x\n");
	put("uroce9.sock", "");
	dir("class/infiniband/uroce8");
	put("class/infiniband/uroce8/node_type", "1: CA\n");
	dir("class/infiniband/.uroce7.new");
	put("outside", "outside the class tree\n");

	/* redirected: open, fopen, stat, access */
	n = slurp("/sys/class/infiniband/uroce9/ports/1/state", buf, sizeof(buf));
	CHECK(n > 0 && !strcmp(buf, "4: ACTIVE\n"), "open of a uroce attribute: %d", n);
	n = slurp("/sys/class/infiniband//uroce9/ports/1/state", buf, sizeof(buf));
	CHECK(n > 0, "doubled slash: %d", n);
	f = fopen("/sys/class/infiniband/uroce9/ports/1/state", "r");
	CHECK(f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "4: ACTIVE\n"), "fopen");
	if (f)
		fclose(f);
	CHECK(!stat("/sys/class/infiniband/uroce9/ports", &st) && S_ISDIR(st.st_mode), "stat dir");
	CHECK(!access("/sys/class/infiniband/uroce9/ports/1/state", R_OK), "access");
	CHECK(!stat("/dev/infiniband/uverbs_uroce9", &st) && S_ISCHR(st.st_mode),
	      "the device node of a uroce device is a character device");
	CHECK(!access("/dev/infiniband/uverbs_uroce9", R_OK | W_OK), "device node rw");
	/* ls -l: extended attributes of a redirected path exist (none set) */
	CHECK(listxattr("/sys/class/infiniband/uroce9/ports/1/state", NULL, 0) >= 0,
	      "listxattr: %s", strerror(errno));
	CHECK(lgetxattr("/sys/class/infiniband/uroce9/ports", "user.x", buf, sizeof(buf)) < 0 &&
	      errno != ENOENT, "lgetxattr: %s", strerror(errno));
	/* what programs built against glibc < 2.33 call */
	CHECK(!__xstat(1, "/sys/class/infiniband/uroce9/ports", &st) && S_ISDIR(st.st_mode),
	      "__xstat");
	CHECK(!__lxstat(1, "/dev/infiniband/uverbs_uroce9", &st) && S_ISCHR(st.st_mode),
	      "__lxstat");
	CHECK(__xstat(1, "/sys/class/infiniband/uroce9/../../outside", &st) && errno == EACCES,
	      "__xstat ..");
	CHECK(!__xstat(1, "/dev/null", &st) && S_ISCHR(st.st_mode), "__xstat real path");
	CHECK(realpath("/sys/class/infiniband/uroce9/ports", buf) &&
	      !strncmp(buf, run, strlen(run)), "realpath into the run directory");

	/* refused: out of the device tree */
	errno = 0;
	n = slurp("/sys/class/infiniband/uroce9/../../outside", buf, sizeof(buf));
	CHECK(n == -EACCES, ".. out of the tree: %d", n);
	n = slurp("/sys/class/infiniband/uroce9/ports/../../../../outside", buf, sizeof(buf));
	CHECK(n == -EACCES, "deeper ..: %d", n);
	CHECK(stat("/sys/class/infiniband/uroce9/..", &st) && errno == EACCES, "stat ..");
	CHECK(!fopen("/sys/class/infiniband/uroce9/ports/../../../outside", "r") &&
	      errno == EACCES, "fopen ..");

	/* not ours: stale tree (no socket), other names, hidden entries */
	n = slurp("/sys/class/infiniband/uroce8/node_type", buf, sizeof(buf));
	CHECK(n < 0, "a tree without a live socket is not a device: %d", n);
	CHECK(stat("/dev/infiniband/uverbs_uroce8", &st), "no device node for a stale tree");
	CHECK(stat("/dev/infiniband/uverbs_nosuch", &st), "no device node for other names");
	n = slurp("/sys/class/infiniband/.uroce7.new/x", buf, sizeof(buf));
	CHECK(n < 0, "half-written tree: %d", n);
	n = slurp("/sys/class/infiniband/../../../etc/hostname", buf, sizeof(buf));
	CHECK(n < 0 || !strstr(buf, "outside the class"), "class dir ..");
	CHECK(stat("/sys/class/infiniband_verbs/uverbs_uroce9", &st),
	      "a sibling class directory is not redirected");

	/* the listing: ours (live) only, real entries first when there are some */
	CHECK(listed("/sys/class/infiniband", "uroce9"), "listing has uroce9");
	CHECK(!listed("/sys/class/infiniband", "uroce8"), "listing hides the stale tree");
	CHECK(!listed("/sys/class/infiniband", ".uroce7.new"), "listing hides temp trees");
	n = scandir("/sys/class/infiniband", &nl, NULL, alphasort);
	CHECK(n > 0, "scandir: %d", n);
	{
		bool has9 = false, has8 = false;
		for (int i = 0; i < n; i++) {
			has9 |= !strcmp(nl[i]->d_name, "uroce9");
			has8 |= !strcmp(nl[i]->d_name, "uroce8");
			free(nl[i]);
		}
		if (n > 0)
			free(nl);
		CHECK(has9 && !has8, "scandir lists live devices only");
	}

	/* real paths untouched: same object as the raw system call sees */
	CHECK(!stat("/dev/null", &st) && !syscall(SYS_newfstatat, AT_FDCWD, "/dev/null", &st2, 0) &&
	      st.st_ino == st2.st_ino && st.st_rdev == st2.st_rdev, "/dev/null");
	CHECK(!stat("/sys/class", &st) && !syscall(SYS_newfstatat, AT_FDCWD, "/sys/class", &st2, 0) &&
	      st.st_ino == st2.st_ino && st.st_dev == st2.st_dev, "/sys/class");
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY);
	n = slurp("/proc/self/status", buf, sizeof(buf));
	CHECK(fd >= 0 && n > 0, "/proc/self/status");
	if (fd >= 0) {
		ssize_t m = read(fd, buf2, sizeof(buf2) - 1);
		close(fd);
		CHECK(m > 0 && !strncmp(buf, buf2, 10), "/proc content");
	}
	CHECK(listed("/proc/self", "status"), "listing of an unrelated directory");
	CHECK(!listed("/proc/self", "uroce9"), "ours appear in no other listing");

	/* gone: once the socket is removed the device disappears */
	snprintf(buf, sizeof(buf), "%s/uroce9.sock", run);
	unlink(buf);
	n = slurp("/sys/class/infiniband/uroce9/ports/1/state", buf, sizeof(buf));
	CHECK(n < 0, "a device whose daemon is gone: %d", n);

	snprintf(buf, sizeof(buf), "rm -rf '%s'", run);
	if (system(buf))
		fprintf(stderr, "cleanup of %s failed\n", run);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
