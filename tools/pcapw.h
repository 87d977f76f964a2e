/* SPDX-License-Identifier: MIT */
/**
 * @file pcapw.h
 * Minimal pcap file writer for packet capture from the daemon and the tools.
 *
 * Files are classic pcap (not pcapng), link type DLT_EN10MB, snaplen 65535,
 * with microsecond or nanosecond time stamps. Built on libpcap's
 * pcap_open_dead() + pcap_dump_fopen(), so any libpcap reader accepts them.
 *
 * Not thread-safe: one writer belongs to one thread (the daemon writes from
 * one lcore). No allocation happens after pcapw_open(): the scatter buffer
 * for pcapw_writev() is allocated once at open.
 *
 * Every function that can fail returns 0 on success or a negative errno.
 */
#ifndef UROCE_PCAPW_H
#define UROCE_PCAPW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Snapshot length written to the file header; longer frames are cut. */
#define PCAPW_SNAPLEN 65535u

/** pcapw_open() flag: write nanosecond time stamps (magic 0xa1b23c4d). */
#define PCAPW_NSEC 0x1u

struct pcapw;

/**
 * Create (truncate) @p path and write the pcap file header. The file is
 * made (or, if it existed, set) 0600: a capture holds every frame's
 * payload; a symlink at @p path is refused (-ELOOP).
 * @param out    receives the writer on success
 * @param path   file name; "-" is not special
 * @param flags  0 or PCAPW_NSEC
 * @return 0, or -errno (-EINVAL for bad arguments, -ENOMEM, open/write errors)
 */
int pcapw_open(struct pcapw **out, const char *path, unsigned flags);

/**
 * Same on a descriptor opened for writing by someone else (the daemon's
 * run-time capture: the client opens the file). The descriptor belongs to
 * the writer from the call on, also when it fails.
 */
int pcapw_open_fd(struct pcapw **out, int fd, unsigned flags);

/**
 * Append one Ethernet frame.
 * @param ts_ns  time stamp in nanoseconds since the Unix epoch
 *               (see pcapw_now_ns()); rounded down to microseconds
 *               unless the file was opened with PCAPW_NSEC
 * @return 0 or -errno (-EINVAL for a NULL frame with len > 0; write errors)
 *
 * Frames longer than PCAPW_SNAPLEN are truncated in the file; the record
 * still carries the original length.
 */
int pcapw_write(struct pcapw *w, const void *frame, size_t len, uint64_t ts_ns);

/** Append one frame given as @p cnt segments (e.g. an mbuf chain). */
int pcapw_writev(struct pcapw *w, const struct iovec *iov, unsigned cnt, uint64_t ts_ns);

/** Push buffered records to the file. @return 0 or -errno */
int pcapw_flush(struct pcapw *w);

/**
 * Flush, close and free the writer (always freed, even on error).
 * @return 0, or -errno from the final flush/close
 */
int pcapw_close(struct pcapw *w);

/** Current CLOCK_REALTIME in nanoseconds, convenient for @p ts_ns. */
uint64_t pcapw_now_ns(void);

/** Number of frames written so far. */
uint64_t pcapw_count(const struct pcapw *w);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_PCAPW_H */
