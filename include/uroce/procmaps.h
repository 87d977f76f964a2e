/* SPDX-License-Identifier: MIT */
/* One line of /proc/<pid>/maps, and a streaming reader over a descriptor
 * of such a file: the shim reads its own maps to find the file behind a
 * registration, the daemon reads the client's to check what the shim sent
 * (docs/security.md, "Daemon-mapped memory regions"). Header-only: both
 * sides need it and neither may depend on the other. */
#ifndef UROCE_PROCMAPS_H
#define UROCE_PROCMAPS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct uroce_vma {
	uint64_t start, end;  /* [start, end) */
	uint64_t off;         /* file offset of start */
	unsigned maj, min;    /* device of the file (0:0 anonymous) */
	uint64_t ino;
	char perms[5];        /* "rw-s" */
	char path[256];       /* "" anonymous; truncated past 255 bytes */
};

static inline bool uroce_vma_parse(const char *line, struct uroce_vma *v)
{
	unsigned long long s, e, o, ino;
	int n = 0;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu%n", &s, &e, v->perms, &o, &v->maj,
		   &v->min, &ino, &n) != 7)
		return false;
	v->start = s;
	v->end = e;
	v->off = o;
	v->ino = ino;
	line += n;
	while (*line == ' ')
		line++;
	size_t l = strcspn(line, "\n");
	if (l >= sizeof(v->path))
		l = sizeof(v->path) - 1;
	memcpy(v->path, line, l);
	v->path[l] = '\0';
	return true;
}

/* The mapping of fd (a maps file read from its start) that contains addr:
 * 0, -ENOENT if none, -errno on a read error. */
static inline int uroce_vma_find(int fd, uint64_t addr, struct uroce_vma *v)
{
	char buf[8192];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		have += (size_t)n;
		buf[have] = '\0';
		char *p = buf, *nl;
		while ((nl = strchr(p, '\n')) || (n == 0 && *p)) {
			if (nl)
				*nl = '\0';
			if (uroce_vma_parse(p, v) && v->start <= addr && addr < v->end)
				return 0;
			if (!nl)
				return -ENOENT;
			p = nl + 1;
		}
		if (n == 0)
			return -ENOENT;
		have = strlen(p);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not one we want */
		memmove(buf, p, have);
	}
}

#endif
