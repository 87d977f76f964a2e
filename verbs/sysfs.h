/* SPDX-License-Identifier: MIT */
/* sysfs.c: redirection of the system view of uroce devices. */
#ifndef URV_SYSFS_H
#define URV_SYSFS_H

#include <stddef.h>

/* 0: not a uroce path, use it as is; 1: use out instead; -errno: refuse. */
int urv_sysfs_map(const char *path, char *out, size_t len);

#endif
