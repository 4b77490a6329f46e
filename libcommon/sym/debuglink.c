/* SPDX-License-Identifier: MIT */
/* A module's separate debug file by its .gnu_debuglink (see debuglink.h). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/debuglink.h"
#include "util/buildid.h"

/* Whether the file open at fd may be mod's debug file. */
static bool same_build(Dwfl_Module *mod, int fd)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &want, &vaddr);
	if (n <= 0)
		return true;
	unsigned char id[SP_BUILD_ID_MAX];
	return sp_build_id_fd(fd, id) == n && memcmp(id, want, (size_t)n) == 0;
}

/* Tries dir/name; 1 with *found and *fd set when it is the one. */
static int try_one(Dwfl_Module *mod, const char *dir, size_t dirlen, const char *name,
		   const char *file_name, char **found, int *fd)
{
	char *p = NULL;
	if (asprintf(&p, "%.*s/%s", (int)dirlen, dir, name) < 0)
		return 0;
	/* Not the module's own file, when it is named as its debug file would be. */
	if (strcmp(p, file_name) == 0) {
		free(p);
		return 0;
	}
	int f = open(p, O_RDONLY | O_CLOEXEC);
	if (f >= 0 && same_build(mod, f)) {
		*found = p;
		*fd = f;
		return 1;
	}
	if (f >= 0)
		close(f);
	free(p);
	return 0;
}

int sp_debuglink_find(Dwfl_Module *mod, const char *path, const char *file_name,
		      const char *debuglink, char **found)
{
	*found = NULL;
	if (!file_name || !path)
		return -1;
	const char *slash = strrchr(file_name, '/');
	const char *fdir = slash ? file_name : ".";
	size_t fdirlen = slash ? (size_t)(slash - file_name) : 1;
	char *own = NULL;
	if (!debuglink) {
		if (asprintf(&own, "%s.debug", slash ? slash + 1 : file_name) < 0)
			return -1;
		debuglink = own;
	}
	/* A leading "+" or "-" says whether to check CRCs: build-ids are checked here. */
	if (*path == '+' || *path == '-')
		path++;
	int fd = -1;
	for (const char *el = path; fd < 0;) {
		const char *end = strchr(el, ':');
		size_t len = end ? (size_t)(end - el) : strlen(el);
		char *dir = NULL;
		int n = len == 0 ? asprintf(&dir, "%.*s", (int)fdirlen, fdir) :
			el[0] == '/' ? asprintf(&dir, "%.*s%s%.*s", (int)len, el,
						fdir[0] == '/' ? "" : "/", (int)fdirlen, fdir) :
			asprintf(&dir, "%.*s/%.*s", (int)fdirlen, fdir, (int)len, el);
		if (n >= 0) {
			try_one(mod, dir, strlen(dir), debuglink, file_name, found, &fd);
			free(dir);
		}
		if (!end)
			break;
		el = end + 1;
	}
	free(own);
	return fd;
}
