/* SPDX-License-Identifier: MIT */
/* pcapw: pcap writer on top of libpcap's dump API. See pcapw.h. */
#include "pcapw.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

/* stdio buffer: big enough that a burst of full-size frames costs one write(). */
#define PCAPW_IOBUF (256u * 1024u)

struct pcapw {
	pcap_t *dead;           /* only carries link type, snaplen, precision */
	pcap_dumper_t *dump;
	FILE *fp;
	unsigned nsec;
	int err;                /* first write error (negative errno), sticky */
	uint64_t count;
	unsigned char *gather;  /* PCAPW_SNAPLEN bytes for pcapw_writev() */
	char *iobuf;
};

static int pcapw_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

uint64_t pcapw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pcapw_free(struct pcapw *w)
{
	if (w->dead)
		pcap_close(w->dead);
	free(w->gather);
	free(w->iobuf);
	free(w);
}

/* The writer around an open stream (fp: NULL when opening it failed,
 * errno set); the stream is the writer's from here on, even on error. */
static int pcapw_open_fp(struct pcapw **out, FILE *fp, unsigned flags)
{
	struct pcapw *w;
	int rc;

	*out = NULL;
	if (!fp)
		return pcapw_errno();
	w = calloc(1, sizeof(*w));
	if (!w) {
		fclose(fp);
		return -ENOMEM;
	}
	w->fp = fp;
	w->nsec = !!(flags & PCAPW_NSEC);
	w->gather = malloc(PCAPW_SNAPLEN);
	w->iobuf = malloc(PCAPW_IOBUF);
	w->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)PCAPW_SNAPLEN,
			w->nsec ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
	if (!w->gather || !w->iobuf || !w->dead) {
		fclose(fp);
		pcapw_free(w);
		return -ENOMEM;
	}
	setvbuf(w->fp, w->iobuf, _IOFBF, PCAPW_IOBUF);
	errno = 0;
	w->dump = pcap_dump_fopen(w->dead, w->fp);
	if (!w->dump) {
		/* Only a failed header write gets here (the link type is fixed),
		 * and libpcap has already fclose()d the stream in that case. */
		rc = pcapw_errno();
		pcapw_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int pcapw_open(struct pcapw **out, const char *path, unsigned flags)
{
	if (!out || !path || (flags & ~PCAPW_NSEC))
		return -EINVAL;
	/* A capture holds every frame's payload: its owner's alone (0600,
	 * also when it existed with another mode), never through a symlink.
	 * open() leaves a reliable errno, which pcap_dump_open() does not
	 * promise. */
	*out = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return pcapw_errno();
	if (fchmod(fd, 0600) < 0) {
		int rc = pcapw_errno();
		close(fd);
		*out = NULL;
		return rc;
	}
	return pcapw_open_fd(out, fd, flags);
}

int pcapw_open_fd(struct pcapw **out, int fd, unsigned flags)
{
	if (!out || fd < 0 || (flags & ~PCAPW_NSEC)) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	FILE *fp = fdopen(fd, "wb");
	if (!fp) {
		int rc = pcapw_errno();
		close(fd);
		*out = NULL;
		return rc;
	}
	return pcapw_open_fp(out, fp, flags);
}

/* One record: @caplen bytes of @data stored, @len recorded as the wire length. */
static int pcapw_record(struct pcapw *w, const void *data, size_t caplen, size_t len,
			uint64_t ts_ns)
{
	struct pcap_pkthdr h;
	uint64_t frac = ts_ns % 1000000000u;

	if (w->err)
		return w->err;
	memset(&h, 0, sizeof(h));
	/* The record holds 32-bit seconds; the dumper stores tv_usec as is, and
	 * it means µs or ns according to the precision of the dead handle. */
	h.ts.tv_sec = (time_t)(uint32_t)(ts_ns / 1000000000u);
	h.ts.tv_usec = (suseconds_t)(w->nsec ? frac : frac / 1000u);
	h.len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	h.caplen = (uint32_t)caplen;
	errno = 0;
	pcap_dump((u_char *)w->dump, &h, data);
	if (ferror(w->fp)) {
		w->err = pcapw_errno();
		return w->err;
	}
	w->count++;
	return 0;
}

int pcapw_write(struct pcapw *w, const void *frame, size_t len, uint64_t ts_ns)
{
	if (!w || (!frame && len))
		return -EINVAL;
	return pcapw_record(w, len ? frame : w->gather,
			    len > PCAPW_SNAPLEN ? PCAPW_SNAPLEN : len, len, ts_ns);
}

int pcapw_writev(struct pcapw *w, const struct iovec *iov, unsigned cnt, uint64_t ts_ns)
{
	size_t total = 0, off = 0;
	unsigned i;

	if (!w || (!iov && cnt))
		return -EINVAL;
	/* Gather into the buffer allocated at open: pcap_dump() wants one block. */
	for (i = 0; i < cnt; i++) {
		size_t n = iov[i].iov_len;

		if (n && !iov[i].iov_base)
			return -EINVAL;
		total += n;
		if (n > PCAPW_SNAPLEN - off)
			n = PCAPW_SNAPLEN - off;
		if (n)
			memcpy(w->gather + off, iov[i].iov_base, n);
		off += n;
	}
	return pcapw_record(w, w->gather, off, total, ts_ns);
}

int pcapw_flush(struct pcapw *w)
{
	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	errno = 0;
	if (pcap_dump_flush(w->dump) != 0 || ferror(w->fp))
		w->err = pcapw_errno();
	return w->err;
}

int pcapw_close(struct pcapw *w)
{
	int rc;

	if (!w)
		return -EINVAL;
	rc = pcapw_flush(w);
	/* pcap_dump_close() fcloses without reporting; the flush above already
	 * surfaced any write error, and close on a regular file adds none. */
	pcap_dump_close(w->dump);
	pcapw_free(w);
	return rc;
}

uint64_t pcapw_count(const struct pcapw *w)
{
	return w ? w->count : 0;
}
