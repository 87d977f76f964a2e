/* SPDX-License-Identifier: MIT */
/* test_pcapw: the pcap writer round-trips through libpcap's reader. */
#include "pcapw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pcap/pcap.h>

#define tool_fail(...) do { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define tool_check(c) do { if (!(c)) tool_fail("%s", #c); } while (0)

static unsigned char tool_big[70000];

static void tool_roundtrip(const char *path, unsigned flags)
{
	const uint64_t ts0 = 1700000000ull * 1000000000ull + 123456789ull;
	unsigned char small[60];
	struct iovec iov[3];
	struct pcapw *w;
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	pcap_t *p;
	size_t i;

	for (i = 0; i < sizeof(small); i++)
		small[i] = (unsigned char)i;
	for (i = 0; i < sizeof(tool_big); i++)
		tool_big[i] = (unsigned char)(i * 7);

	tool_check(pcapw_open(&w, path, flags) == 0);
	tool_check(pcapw_write(w, small, sizeof(small), ts0) == 0);
	tool_check(pcapw_write(w, tool_big, sizeof(tool_big), ts0 + 1000) == 0);
	iov[0] = (struct iovec){ small, 14 };
	iov[1] = (struct iovec){ NULL, 0 };
	iov[2] = (struct iovec){ small + 14, 46 };
	tool_check(pcapw_writev(w, iov, 3, ts0 + 2000) == 0);
	tool_check(pcapw_write(w, NULL, 0, ts0 + 3000) == 0);
	tool_check(pcapw_write(w, NULL, 5, ts0) == -EINVAL);
	tool_check(pcapw_count(w) == 4);
	tool_check(pcapw_flush(w) == 0);
	tool_check(pcapw_close(w) == 0);

	/* Read back at nanosecond precision so both file kinds compare exactly. */
	p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!p)
		tool_fail("open %s: %s", path, errbuf);
	tool_check(pcap_datalink(p) == DLT_EN10MB);
	tool_check(pcap_snapshot(p) == (int)PCAPW_SNAPLEN);
	tool_check(pcap_next_ex(p, &h, &data) == 1);
	tool_check(h->caplen == 60 && h->len == 60 && memcmp(data, small, 60) == 0);
	tool_check(h->ts.tv_sec == 1700000000);
	tool_check(h->ts.tv_usec == ((flags & PCAPW_NSEC) ? 123456789 : 123456000));
	tool_check(pcap_next_ex(p, &h, &data) == 1);
	tool_check(h->caplen == PCAPW_SNAPLEN && h->len == sizeof(tool_big));
	tool_check(memcmp(data, tool_big, PCAPW_SNAPLEN) == 0);
	tool_check(pcap_next_ex(p, &h, &data) == 1);
	tool_check(h->caplen == 60 && h->len == 60 && memcmp(data, small, 60) == 0);
	tool_check(h->ts.tv_usec == ((flags & PCAPW_NSEC) ? 123458789 : 123458000));
	tool_check(pcap_next_ex(p, &h, &data) == 1);
	tool_check(h->caplen == 0 && h->len == 0);
	tool_check(pcap_next_ex(p, &h, &data) == PCAP_ERROR_BREAK);
	pcap_close(p);
}

int main(void)
{
	char dir[] = "/tmp/test_pcapw.XXXXXX";
	char path[64];
	struct pcapw *w = (struct pcapw *)1;

	if (!mkdtemp(dir))
		tool_fail("mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/us.pcap", dir);
	tool_roundtrip(path, 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ns.pcap", dir);
	tool_roundtrip(path, PCAPW_NSEC);
	unlink(path);

	/* Errors come back as negative errno and leave *out NULL. */
	snprintf(path, sizeof(path), "%s/no/such/dir.pcap", dir);
	tool_check(pcapw_open(&w, path, 0) == -ENOENT && w == NULL);
	tool_check(pcapw_open(&w, dir, 0) == -EISDIR);
	tool_check(pcapw_open(&w, "/tmp/x.pcap", 0x80) == -EINVAL);
	tool_check(pcapw_open(NULL, "/tmp/x.pcap", 0) == -EINVAL);
	tool_check(pcapw_close(NULL) == -EINVAL);
#ifdef __linux__
	/* /dev/full accepts open and fails every write with ENOSPC. */
	if (access("/dev/full", W_OK) == 0) {
		int rc = pcapw_open(&w, "/dev/full", 0);

		if (rc == 0) {
			int i;

			rc = 0;
			for (i = 0; i < 10000 && rc == 0; i++)
				rc = pcapw_write(w, tool_big, 1000, 0);
			if (rc == 0)
				rc = pcapw_flush(w);
			tool_check(rc == -ENOSPC);
			tool_check(pcapw_write(w, tool_big, 10, 0) == -ENOSPC);
			tool_check(pcapw_close(w) == -ENOSPC);
		} else {
			tool_check(rc == -ENOSPC);
		}
	}
#endif
	rmdir(dir);
	printf("test_pcapw: ok\n");
	return 0;
}
