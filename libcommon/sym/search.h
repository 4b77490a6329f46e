/* SPDX-License-Identifier: MIT
 * The symbolizer's settings: where it looks for module files, debug
 * files, kernel names and perf maps, and what it produces.  In the manner
 * of libdwfl's dwfl_standard_argp, the options are the library's own: a
 * tool lists sp_sym_options[] among its command-line options, hands each
 * one it meets to sp_sym_search_set(), which checks its argument, calls
 * sp_sym_search_finish() once to complete them, and builds the
 * symbolizer from the result (sym/symbolizer.h).
 */
#ifndef SP_SYM_SEARCH_H
#define SP_SYM_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/elfsym.h"
#include "util/error.h"
#include "util/modfile.h"

/* The options, in the order a tool's --help lists them. */
enum sp_sym_opt {
	SP_SYM_OPT_KALLSYMS,
	SP_SYM_OPT_ROOT,
	SP_SYM_OPT_MODULE_DIR,
	SP_SYM_OPT_ARCHIVE,
	SP_SYM_OPT_DEBUG_DIR,
	SP_SYM_OPT_NO_DEBUGINFOD,
	SP_SYM_OPT_PERF_MAP_DIR,
	SP_SYM_OPT_PERF_MAPS_FOR,
	SP_SYM_OPT_NO_PERF_MAPS,
	SP_SYM_OPT_FORCE_PERF_MAPS,
	SP_SYM_OPT_NO_INLINE,
	SP_SYM_OPT_NO_LINES,
	SP_SYM_OPT_NO_DEMANGLE,
	SP_SYM_OPT_NO_CACHE,
	SP_SYM_OPT_COUNT
};

struct sp_sym_option {
	const char *name;	/* the long option, without "--" */
	const char *arg;	/* its argument's name; NULL: it takes none */
	const char *help;	/* lines separated by '\n', no final newline */
};

/* Indexed by enum sp_sym_opt. */
extern const struct sp_sym_option sp_sym_options[SP_SYM_OPT_COUNT];

/* Whose perf maps are read. */
enum sp_perf_maps {
	SP_PERF_MAPS_ALL,
	SP_PERF_MAPS_PYTHON,	/* processes whose runtime record says CPython */
	SP_PERF_MAPS_PIDS,	/* the pids listed */
	SP_PERF_MAPS_NONE,
};

struct sp_sym_search {
	struct sp_modfile_search modules;	/* --root, --module-dir, --archive */
	const char **debug_dirs;		/* --debug-dir, --archive */
	size_t ndebug_dirs, alloc_debug_dirs;
	const char *archive;		/* perf maps there are perf-PID-START.map */
	const char *kallsyms;		/* NULL: /proc/kallsyms in the same boot; "none" */
	bool kallsyms_archived;		/* the archive's own: a bad one is not fatal */
	const char *perf_map_dir;	/* default /tmp */
	enum sp_perf_maps perf_maps;
	uint32_t *perf_map_pids;
	size_t nperf_map_pids, alloc_perf_map_pids;
	bool force_perf_maps;		/* trust maps of other owners too */
	bool no_debuginfod;		/* --no-debuginfod */
	bool debuginfod;		/* after finish: a server will be asked */
	bool no_cache;			/* --no-cache */
	/*
	 * What sp_elfsym_open() is given.  Its debuginfo_path and cache_dir
	 * are set by sp_sym_search_finish() and point into strings below.
	 */
	struct sp_elfsym_options elf;
	char *debuginfo_path, *cache_dir, *archived_kallsyms;
	struct sp_error err;
};

/* Sets the defaults: inline frames, lines and demangled names; every perf map. */
void sp_sym_search_init(struct sp_sym_search *s);

/*
 * Applies one option with its argument (NULL for one that takes none).
 * The argument is not copied: it must outlive s.  Returns 0, or -1 with
 * the reason in s->err (SP_ERR_BAD_INPUT for an empty or malformed
 * argument: a usage error).
 */
int sp_sym_search_set(struct sp_sym_search *s, enum sp_sym_opt opt, const char *arg);

/*
 * Completes the settings once every option is in: the
 * archive's kallsyms when no other was given, the cache directory of
 * inflated debug files ($XDG_CACHE_HOME/stackpulse or
 * ~/.cache/stackpulse, created), libdwfl's debug-file search path, and
 * debuginfod's environment (DEBUGINFOD_URLS unset for --no-debuginfod;
 * otherwise time limits and progress, unless already set).  Of options
 * that overlap, the last given counts (--perf-maps-for, --no-perf-maps),
 * but the pids of every --perf-maps-for list are used together.
 * Returns 0, or -1 with the reason in s->err.
 */
int sp_sym_search_finish(struct sp_sym_search *s);

/* Frees what s allocated; the strings it was given stay the caller's. */
void sp_sym_search_release(struct sp_sym_search *s);

#endif
