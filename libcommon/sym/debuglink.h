/* SPDX-License-Identifier: MIT */
/*
 * A module's separate debug file named by its .gnu_debuglink, sought on
 * this machine the way libdwfl seeks it, without libdwfl's last resort (a
 * debuginfod server, whose client library costs every run milliseconds
 * to load even when no server is set).
 */
#ifndef SP_SYM_DEBUGLINK_H
#define SP_SYM_DEBUGLINK_H

#include <elfutils/libdwfl.h>

/*
 * The debug file of mod, whose file is file_name, named debuglink (NULL:
 * the file's name with ".debug"), sought under each directory of path (a
 * libdwfl debuginfo_path: an empty element is the file's directory, a
 * relative one is under it, an absolute one has the file's directory
 * under it).  A candidate is taken when its build-id is the module's, or
 * when the module has none.  Returns an open fd with the path in *found
 * (malloc'd), or -1.
 */
int sp_debuglink_find(Dwfl_Module *mod, const char *path, const char *file_name,
		      const char *debuglink, char **found);

#endif
