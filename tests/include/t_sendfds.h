/* SPDX-License-Identifier: MIT */
/* The tests' one sender of a control-socket message with descriptors
 * (SCM_RIGHTS), as the shim sends them (verbs/ctl.c): emu_test.h's
 * client, the control fuzzer and the verbs tests that pass fds. */
#ifndef UROCE_TEST_SENDFDS_H
#define UROCE_TEST_SENDFDS_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#define T_SENDFDS_MAX 8

/* sendmsg() of msg with nfds (at most T_SENDFDS_MAX) descriptors; its
 * return value (-1 and errno on failure). */
static inline ssize_t t_sendfds(int sock, const void *msg, size_t len, const int *fds,
				unsigned nfds, int flags)
{
	union { struct cmsghdr c; uint8_t b[CMSG_SPACE(sizeof(int) * T_SENDFDS_MAX)]; } cb;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > T_SENDFDS_MAX)
		nfds = T_SENDFDS_MAX;
	if (nfds) {
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &mh, flags);
}

#endif
