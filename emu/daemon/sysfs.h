/* SPDX-License-Identifier: MIT */
/* sysfs.c: the device's sysfs-shaped tree in the run directory. */
#ifndef EMU_SYSFS_H
#define EMU_SYSFS_H

#include "emu.h"

/* Write <run_dir>/UROCE_SYSFS_CLASS/<dev>, replacing a stale one. Only
 * once the control socket is ours (the run directory is checked private
 * then). Call again when the GID table or the port state changes.
 * 0 or -errno. */
int emu_sysfs_write(const char *run_dir, const struct emu_dev *d);
/* Remove it (at exit). */
void emu_sysfs_remove(const char *run_dir, const char *name);
/* Remove the tree at path (files and directories; a symlink anywhere,
 * even one swapped in while we walk, is removed, never followed; a
 * directory not ours is left); best effort. */
void emu_rm_tree(const char *path);
/* the same for entry name of the directory open as at */
void emu_rm_at(int at, const char *name);

#endif
