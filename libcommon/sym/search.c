/* SPDX-License-Identifier: MIT */
/* The symbolizer's settings from command-line options (see search.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/search.h"
#include "util/alloc.h"
#include "util/strbuf.h"

const struct sp_sym_option sp_sym_options[SP_SYM_OPT_COUNT] = {
	[SP_SYM_OPT_KALLSYMS] = { "kallsyms", "FILE|none",
		"kernel names from a saved kallsyms, or none;\n"
		"default: /proc/kallsyms if recorded in this boot" },
	[SP_SYM_OPT_ROOT] = { "root", "DIR", "look recorded module paths up under DIR" },
	[SP_SYM_OPT_MODULE_DIR] = { "module-dir", "DIR",
		"build-id layout (DIR/.build-id/xx/rest); repeatable" },
	[SP_SYM_OPT_ARCHIVE] = { "archive", "DIR",
		"an archive of sp-capture --archive: module and debug\n"
		"files, perf maps (by pid and start) and kallsyms" },
	[SP_SYM_OPT_DEBUG_DIR] = { "debug-dir", "DIR",
		"debug files in build-id layout (xx/rest.debug) or by\n"
		".gnu_debuglink; repeatable (default /usr/lib/debug)" },
	[SP_SYM_OPT_NO_DEBUGINFOD] = { "no-debuginfod", NULL,
		"do not ask DEBUGINFOD_URLS servers for debug files" },
	[SP_SYM_OPT_PERF_MAP_DIR] = { "perf-map-dir", "DIR",
		"read perf-PID.map files from DIR (default /tmp)" },
	[SP_SYM_OPT_PERF_MAPS_FOR] = { "perf-maps-for", "all|python|PID[,PID...]",
		"whose perf maps to use (default all)" },
	[SP_SYM_OPT_NO_PERF_MAPS] = { "no-perf-maps", NULL, "use no perf maps" },
	[SP_SYM_OPT_FORCE_PERF_MAPS] = { "force-perf-maps", NULL,
		"use perf maps owned by other users too" },
	[SP_SYM_OPT_NO_INLINE] = { "no-inline", NULL, "no inline frames" },
	[SP_SYM_OPT_NO_LINES] = { "no-lines", NULL, "no source files and lines" },
	[SP_SYM_OPT_NO_DEMANGLE] = { "no-demangle", NULL, "keep C++ and Rust names mangled" },
	[SP_SYM_OPT_NO_CACHE] = { "no-cache", NULL,
		"do not keep inflated copies of compressed debug files\n"
		"(in $XDG_CACHE_HOME/stackpulse or ~/.cache/stackpulse)" },
};

void sp_sym_search_init(struct sp_sym_search *s)
{
	memset(s, 0, sizeof(*s));
	sp_modfile_search_init(&s->modules);
	s->perf_map_dir = "/tmp";
	s->perf_maps = SP_PERF_MAPS_ALL;
	s->elf.inline_frames = true;
	s->elf.lines = true;
	s->elf.demangle = true;
}

void sp_sym_search_release(struct sp_sym_search *s)
{
	sp_modfile_search_release(&s->modules);
	free(s->debug_dirs);
	free(s->perf_map_pids);
	free(s->debuginfo_path);
	free(s->cache_dir);
	free(s->archived_kallsyms);
	memset(s, 0, sizeof(*s));
}

static int add_debug_dir(struct sp_sym_search *s, const char *dir)
{
	if (SP_ALLOC_GROW(s->debug_dirs, s->ndebug_dirs + 1, s->alloc_debug_dirs) < 0)
		return sp_error_errno(&s->err, "cannot add '%s'", dir);
	s->debug_dirs[s->ndebug_dirs++] = dir;
	return 0;
}

/* all, python, or a list of pids: PID[,PID...]. */
static int set_perf_maps_for(struct sp_sym_search *s, const char *arg)
{
	if (strcmp(arg, "all") == 0 || strcmp(arg, "python") == 0) {
		s->perf_maps = arg[0] == 'a' ? SP_PERF_MAPS_ALL : SP_PERF_MAPS_PYTHON;
		return 0;
	}
	s->perf_maps = SP_PERF_MAPS_PIDS;
	for (const char *p = arg; *p; p++) {
		char *end;
		errno = 0;
		unsigned long long v = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
		if (v == 0 || v > UINT32_MAX || errno || (*end != ',' && *end != '\0') ||
		    (*end == ',' && end[1] == '\0'))
			return sp_error_set(&s->err, SP_ERR_BAD_INPUT, "invalid --perf-maps-for '%s': "
					    "all, python or PID[,PID...]", arg);
		if (SP_ALLOC_GROW(s->perf_map_pids, s->nperf_map_pids + 1, s->alloc_perf_map_pids) < 0)
			return sp_error_errno(&s->err, "--perf-maps-for");
		s->perf_map_pids[s->nperf_map_pids++] = (uint32_t)v;
		p = *end ? end : end - 1;
	}
	if (!s->nperf_map_pids)
		return sp_error_set(&s->err, SP_ERR_BAD_INPUT, "invalid --perf-maps-for '%s'", arg);
	return 0;
}

int sp_sym_search_set(struct sp_sym_search *s, enum sp_sym_opt opt, const char *arg)
{
	if ((unsigned)opt >= SP_SYM_OPT_COUNT)
		return sp_error_set(&s->err, SP_ERR_BAD_INPUT, "no such option");
	if (sp_sym_options[opt].arg && (!arg || !*arg))
		return sp_error_set(&s->err, SP_ERR_BAD_INPUT, "--%s needs %s",
				    sp_sym_options[opt].name, sp_sym_options[opt].arg);
	switch (opt) {
	case SP_SYM_OPT_KALLSYMS: s->kallsyms = arg; break;
	case SP_SYM_OPT_ROOT: sp_modfile_search_set_root(&s->modules, arg); break;
	case SP_SYM_OPT_ARCHIVE:
		/* A module dir and a debug dir at once; maps and kallsyms at finish. */
		s->archive = arg;
		if (add_debug_dir(s, arg) < 0)
			return -1;
		/* fall through */
	case SP_SYM_OPT_MODULE_DIR:
		if (sp_modfile_search_add_dir(&s->modules, arg) < 0)
			return sp_error_errno(&s->err, "cannot add '%s'", arg);
		break;
	case SP_SYM_OPT_DEBUG_DIR: return add_debug_dir(s, arg);
	case SP_SYM_OPT_NO_DEBUGINFOD: s->no_debuginfod = true; break;
	case SP_SYM_OPT_PERF_MAP_DIR: s->perf_map_dir = arg; break;
	case SP_SYM_OPT_PERF_MAPS_FOR: return set_perf_maps_for(s, arg);
	case SP_SYM_OPT_NO_PERF_MAPS: s->perf_maps = SP_PERF_MAPS_NONE; break;
	case SP_SYM_OPT_FORCE_PERF_MAPS: s->force_perf_maps = true; break;
	case SP_SYM_OPT_NO_INLINE: s->elf.inline_frames = false; break;
	case SP_SYM_OPT_NO_LINES: s->elf.lines = false; break;
	case SP_SYM_OPT_NO_DEMANGLE: s->elf.demangle = false; break;
	case SP_SYM_OPT_NO_CACHE: s->no_cache = true; break;
	case SP_SYM_OPT_COUNT: break;
	}
	return 0;
}

/* $XDG_CACHE_HOME/stackpulse or ~/.cache/stackpulse, created; NULL: none. */
static char *cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct sp_buf b = SP_BUF_INIT;
	if (xdg && *xdg)
		sp_buf_addf(&b, "%s/stackpulse", xdg);
	else if (home && *home)
		sp_buf_addf(&b, "%s/.cache/stackpulse", home);
	if (!b.len || b.oom) {
		sp_buf_release(&b);
		return NULL;
	}
	char *slash = strrchr(b.p, '/');
	*slash = '\0';
	mkdir(b.p, 0755);	/* ~/.cache may not exist yet */
	*slash = '/';
	if (mkdir(b.p, 0755) < 0 && errno != EEXIST) {
		sp_buf_release(&b);
		return NULL;
	}
	return sp_buf_detach(&b, NULL);
}

int sp_sym_search_finish(struct sp_sym_search *s)
{
	struct sp_buf b = SP_BUF_INIT;
	if (s->archive && !s->kallsyms) {
		sp_buf_addf(&b, "%s/kallsyms", s->archive);
		if (!b.oom && access(b.p, R_OK) == 0) {
			s->archived_kallsyms = sp_buf_detach(&b, NULL);
			s->kallsyms = s->archived_kallsyms;
			s->kallsyms_archived = true;
		}
		sp_buf_release(&b);
	}

	/* libdwfl's debug-file search path: "-" (no CRC check), .debug, the cache, the dirs. */
	s->cache_dir = s->no_cache ? NULL : cache_dir();
	sp_buf_adds(&b, "-:.debug");
	if (s->cache_dir)
		sp_buf_addf(&b, ":%s", s->cache_dir);
	/*
	 * libdwfl takes a relative directory as relative to the module's
	 * own; a user means the current one.
	 */
	char cwd[4096];
	for (size_t i = 0; i < s->ndebug_dirs; i++)
		if (s->debug_dirs[i][0] != '/' && getcwd(cwd, sizeof(cwd)))
			sp_buf_addf(&b, ":%s/%s", cwd, s->debug_dirs[i]);
		else
			sp_buf_addf(&b, ":%s", s->debug_dirs[i]);
	if (!s->ndebug_dirs)
		sp_buf_adds(&b, ":/usr/lib/debug");
	if (b.oom) {
		sp_buf_release(&b);
		errno = ENOMEM;
		return sp_error_errno(&s->err, "the debug-file path");
	}
	s->debuginfo_path = sp_buf_detach(&b, NULL);
	s->elf.debuginfo_path = s->debuginfo_path;
	s->elf.cache_dir = s->cache_dir;

	/*
	 * debuginfod: off on request; otherwise bounded in time, with a
	 * progress bar only where a person sees it (a log is no terminal).
	 */
	const char *urls = getenv("DEBUGINFOD_URLS");
	s->debuginfod = !s->no_debuginfod && urls && *urls;
	s->elf.debuginfod = s->debuginfod;
	if (s->no_debuginfod) {
		unsetenv("DEBUGINFOD_URLS");
	} else {
		setenv("DEBUGINFOD_TIMEOUT", "5", 0);
		setenv("DEBUGINFOD_MAXTIME", "30", 0);
		if (isatty(STDERR_FILENO))
			setenv("DEBUGINFOD_PROGRESS", "1", 0);
	}
	return 0;
}
