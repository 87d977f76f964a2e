/* SPDX-License-Identifier: MIT */
/* Command arguments into the daemon's option syntax. */
#include <stdio.h>

#include "ctl.h"

int ctl_join(char *buf, size_t len, int argc, char **argv)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < argc; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", argv[i]);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	return used ? 0 : -1;
}
