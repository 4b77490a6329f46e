/* SPDX-License-Identifier: MIT */
/*
 * A module's file from a debuginfod server, through libdebuginfod loaded
 * the first time one is asked for: its dependencies (an HTTP client and
 * its TLS and Kerberos libraries) cost every run milliseconds to load,
 * and most runs never ask.
 */
#ifndef SP_SYM_DEBUGINFOD_H
#define SP_SYM_DEBUGINFOD_H

#include <stddef.h>

/*
 * The executable of build-id bid (len bytes) from the servers of
 * DEBUGINFOD_URLS: an open fd, its path in *path (malloc'd, or NULL).
 * -ENOENT: no server has it; -ENOSYS: libdebuginfod is not installed or
 * no server is set; another -errno: the servers could not be asked.
 */
int sp_debuginfod_find_executable(const unsigned char *bid, int len, char **path);

#endif
