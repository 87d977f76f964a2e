/* SPDX-License-Identifier: MIT */
/* Live traffic for the uroce-ctl test (ctl_test.py): an RC pair in one
 * process sends 4 KB messages both ways, every byte checked, until its
 * stdin closes. Prints "ready QPN_A QPN_B" once connected, and at the end
 * "done ITERATIONS" (exit 0), or fails (exit 1) on the first wrong byte,
 * failed completion or a wait past VT_WAIT_S. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt.h"

#define MSG 4096u
#define RX_OFF 32768u

static uint8_t pat(uint64_t i, size_t k)
{
	return (uint8_t)(i * 131 + k * 7 + (k >> 8));
}

static bool stdin_closed(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char b[64];

	return poll(&p, 1, 0) == 1 && read(0, b, sizeof(b)) <= 0;
}

int main(void)
{
	struct vt t;
	struct ibv_wc wc;
	uint64_t i;

	vt_init(&t, NULL);
	printf("ready %u %u\n", t.qa->qp_num, t.qb->qp_num);
	fflush(stdout);
	for (i = 0; !stdin_closed(); i++) {
		struct ibv_qp *src = i & 1 ? t.qb : t.qa, *dst = i & 1 ? t.qa : t.qb;

		for (size_t k = 0; k < MSG; k++)
			t.buf[k] = pat(i, k);
		memset(t.buf + RX_OFF, 0, MSG);
		vt_post_recv(dst, t.mr, RX_OFF, MSG, i);
		REQUIRE(!vt_post_send(src, t.mr, IBV_WR_SEND, 0, MSG, IBV_SEND_SIGNALED, 0, 0, 0, i));
		vt_poll_n(t.scq, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == i);
		vt_poll_n(t.rcq, 1, &wc);
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.byte_len == MSG);
		for (size_t k = 0; k < MSG; k++) {
			if (t.buf[RX_OFF + k] != pat(i, k)) {
				fprintf(stderr, "message %llu byte %zu: 0x%02x, want 0x%02x\n",
					(unsigned long long)i, k, t.buf[RX_OFF + k], pat(i, k));
				return 1;
			}
		}
	}
	vt_fini(&t);
	printf("done %llu\n", (unsigned long long)i);
	return 0;
}
