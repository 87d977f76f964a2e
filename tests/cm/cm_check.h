/* SPDX-License-Identifier: MIT */
/* What the C tests of the cm suite share: a non-fatal CHECK counting
 * failures, the loopback address, and librdmacm's copy of the rdma_cm
 * uAPI command header for the tests that write commands themselves. */
#ifndef TESTS_CM_CHECK_H
#define TESTS_CM_CHECK_H

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma_abi.h>

static int failures;
#define T_FAILURES failures
#include "../include/check.h"

/* each command struct starts with the header (cmd, in, out) */
#define HDR_SZ sizeof(struct ucma_abi_cmd_hdr)
#define INIT(c, op, outsz) do {                                               \
		memset(&(c), 0, sizeof(c));                                   \
		(c).cmd = (op);                                               \
		(c).in = (uint16_t)(sizeof(c) - HDR_SZ);                      \
		(c).out = (uint16_t)(outsz);                                  \
	} while (0)

static inline struct sockaddr_in lo_addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

#endif
