/* SPDX-License-Identifier: MIT */
/* The system view next to real RDMA devices: verbs/sysfs.c compiled into
 * this program with URV_SYSFS_TEST_CLASS = <build dir>/merge-root/class
 * (a stand-in for /sys/class/infiniband holding "realdev0" and "uroce8"),
 * and a run directory with live uroce8 and uroce9. The listing must show
 * the real entries, then uroce9 (uroce8 once: the real one wins), paths
 * of real devices must stay real, and chdir must go to the real directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "urv.h"

static int failures;

#define T_FAILURES failures
#include "../include/check.h"

/* what device.c provides in liburoce */
void urv_run_dir(char *buf, size_t len)
{
	snprintf(buf, len, "%s", getenv("UROCE_RUN_DIR"));
}

static void mk(const char *p)
{
	if (mkdir(p, 0755) && errno != EEXIST) {
		perror(p);
		exit(1);
	}
}

static void put(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror(p);
		exit(1);
	}
	close(fd);
}

static int count(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += !strcmp(e->d_name, name);
	closedir(d);
	return n;
}

static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return (int)n;
}

int main(void)
{
	const char *cls = URV_SYSFS_TEST_CLASS;
	char root[PATH_MAX], run[PATH_MAX + 8], p[PATH_MAX + 128], buf[256];
	struct dirent **nl;
	int n;

	/* <root>/class is the "real" class directory */
	snprintf(root, sizeof(root), "%.*s", (int)(strrchr(cls, '/') - cls), cls);
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	if (system(p))
		return 1;
	mk(root);
	mk(cls);
	snprintf(p, sizeof(p), "%s/realdev0", cls);
	mk(p);
	snprintf(p, sizeof(p), "%s/realdev0/node_type", cls);
	put(p, "1: CA real\n");
	snprintf(p, sizeof(p), "%s/uroce8", cls);
	mk(p);
	snprintf(p, sizeof(p), "%s/uroce8/node_type", cls);
	put(p, "1: CA real uroce8\n");

	snprintf(run, sizeof(run), "%s/run", root);
	mk(run);
	setenv("UROCE_RUN_DIR", run, 1);
	snprintf(p, sizeof(p), "%s/class", run);
	mk(p);
	snprintf(p, sizeof(p), "%s/class/infiniband", run);
	mk(p);
	for (int i = 8; i <= 9; i++) {
		snprintf(p, sizeof(p), "%s/class/infiniband/uroce%d", run, i);
		mk(p);
		snprintf(p, sizeof(p), "%s/class/infiniband/uroce%d/node_type", run, i);
		put(p, "1: CA uroce\n");
		snprintf(p, sizeof(p), "%s/uroce%d.sock", run, i);
		put(p, "");
	}

	CHECK(count(cls, "realdev0") == 1, "real entry listed once");
	CHECK(count(cls, "uroce9") == 1, "uroce entry listed once after the real ones");
	CHECK(count(cls, "uroce8") == 1, "a name both real and ours listed once");
	CHECK(count(cls, ".") == 1 && count(cls, "..") == 1, ". and .. once");
	n = scandir(cls, &nl, NULL, alphasort);
	CHECK(n == 5, "scandir: %d entries (., .., realdev0, uroce8, uroce9)", n);
	if (n == 5)
		CHECK(!strcmp(nl[2]->d_name, "realdev0") && !strcmp(nl[3]->d_name, "uroce8") &&
		      !strcmp(nl[4]->d_name, "uroce9"), "scandir order");
	for (int i = 0; i < n; i++)
		free(nl[i]);
	if (n > 0)
		free(nl);

	snprintf(p, sizeof(p), "%s/realdev0/node_type", cls);
	CHECK(slurp(p, buf, sizeof(buf)) > 0 && !strcmp(buf, "1: CA real\n"), "real device");
	snprintf(p, sizeof(p), "%s/uroce8/node_type", cls);
	CHECK(slurp(p, buf, sizeof(buf)) > 0 && !strcmp(buf, "1: CA real uroce8\n"),
	      "the real device of a shared name wins: %s", buf);
	snprintf(p, sizeof(p), "%s/uroce9/node_type", cls);
	CHECK(slurp(p, buf, sizeof(buf)) > 0 && !strcmp(buf, "1: CA uroce\n"), "ours");

	/* many listings at once (more than the shim tracks): none breaks */
	{
		DIR *ds[40];
		int ok = 0;

		for (int i = 0; i < 40; i++)
			ds[i] = opendir(cls);
		for (int i = 0; i < 40; i++) {
			struct dirent *e;
			bool real = false;

			if (!ds[i])
				continue;
			while ((e = readdir(ds[i])))
				real |= !strcmp(e->d_name, "realdev0");
			ok += real;
			closedir(ds[i]);
		}
		CHECK(ok == 40, "40 listings at once: %d show the real entries", ok);
		CHECK(count(cls, "uroce9") == 1, "tracking recovers after closedir");
	}

	CHECK(!chdir(cls), "chdir");
	CHECK(getcwd(buf, sizeof(buf)) && !strcmp(buf, cls), "chdir into the real directory: %s",
	      buf);
	if (chdir("/"))
		failures++;

	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	if (system(p))
		fprintf(stderr, "cleanup of %s failed\n", root);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
