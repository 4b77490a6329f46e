/* SPDX-License-Identifier: MIT
 * sp-symbolize: names the frames of an unwound stackpulse stream:
 * functions, inline frames and source lines from ELF and DWARF files
 * (found by build-id, .gnu_debuglink or debuginfod), kernel functions
 * from a saved kallsyms, JIT functions from perf maps.  Every frame is
 * resolved once and interned; each stack becomes a symstack with the
 * same id, so samples pass through unchanged.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/internal.h"
#include "stream/advice.h"
#include "stream/header.h"
#include "stream/records.h"
#include "stream/stream.h"
#include "sym/parallel.h"
#include "sym/search.h"
#include "sym/symbolizer.h"
#include "tool.h"

/* Options of the tool itself; the symbolizer's follow from SYM_OPT. */
enum { MAX_RECORD = 256, ALLOW_EMPTY, COMPRESS, STATS, SYM_OPT };

/* See the end of main(). */
static struct sp_symbolizer *volatile left_to_exit;

/* JIT frames seen for the first time, and those left without a name. */
static uint64_t jit_frames, jit_unnamed;

/* For --stats: the frame addresses named (each stack's), and those resolved. */
static uint64_t addresses, resolved;

/* With -j N above 1: the N - 1 workers and the records that wait for them. */
static struct sp_sympar *par;

/*
 * Whose JIT code the segment may hold, for the warning on JIT code left
 * without names: CPython (-X perf writes a map, so none read means it
 * was moved), Node or a JVM, and whether a command line asked for a map.
 */
static struct {
	bool cpython, map_asked;
	unsigned runtimes;	/* 1 << enum sp_jit_runtime, by executable */
} jit_owners;

static void note_map_flags(const msgpack_object_array *args)
{
	for (uint32_t i = 0; args && i < args->size; i++)
		if (args->ptr[i].type == MSGPACK_OBJECT_STR &&
		    sp_jit_map_flag(args->ptr[i].via.str.ptr, args->ptr[i].via.str.size))
			jit_owners.map_asked = true;
}

static void note_jit_owner(const struct sp_record *rec)
{
	const msgpack_object *o;
	const char *s;
	size_t n;
	bool b;
	switch (rec->type) {
	case SP_R_HEADER:
		if ((o = sp_map_get(rec->map, "options")))
			note_map_flags(sp_map_array(o, "command"));
		break;
	case SP_R_PROCESS:
		note_map_flags(sp_map_array(rec->map, "cmdline"));
		break;
	case SP_R_MAP:
		if (sp_map_str(rec->map, "path", &s, &n) && sp_jit_runtime_of_exe(s, n) != SP_JIT_UNKNOWN)
			jit_owners.runtimes |= 1u << sp_jit_runtime_of_exe(s, n);
		break;
	case SP_R_RUNTIME:
		if (sp_map_bool(rec->map, "cpython", &b) && b)
			jit_owners.cpython = true;
		break;
	default:
		break;
	}
}

/* The runtime the JIT code is of: one seen alone, else unknown. */
static enum sp_jit_runtime jit_owner(void)
{
	if (jit_owners.runtimes == 1u << SP_JIT_NODE)
		return SP_JIT_NODE;
	if (jit_owners.runtimes == 1u << SP_JIT_JVM)
		return SP_JIT_JVM;
	return SP_JIT_UNKNOWN;
}

/*
 * The default for -j: one.  On two CPUs shared with other work, two jobs
 * took 0.94 of one job's time on figure 18's 100,000 addresses of one
 * module and were no faster in the pipeline (figure 4g): the reading
 * thread does more than half of the work, and a module's lookups stay
 * on one worker (docs/PERFORMANCE.md).
 */
static unsigned default_jobs(void)
{
	return 1;
}

#define HELP_COLUMN 28

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "Name the frames of an unwound stackpulse stream.\n"
	       "\n"
	       "  -o, --output FILE         write the symbolized stream to FILE\n"
	       "  -z, --compress[=LEVEL]    write it in zstd frames (level 1 to 22, default 1)\n",
	       sp_progname);
	for (int i = 0; i < SP_SYM_OPT_COUNT; i++) {
		const struct sp_sym_option *o = &sp_sym_options[i];
		int w = printf("      --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* The help starts in HELP_COLUMN, on a line of its own after a long option. */
		if (w >= HELP_COLUMN) {
			putchar('\n');
			w = 0;
		}
		for (const char *p = o->help, *nl; p; p = nl ? nl + 1 : NULL, w = 0) {
			nl = strchr(p, '\n');
			printf("%*s%.*s\n", HELP_COLUMN - w, "", nl ? (int)(nl - p) : (int)strlen(p), p);
		}
	}
	printf("  -f, --follow              read a file still being written; end at its summary\n"
	       "      --max-record BYTES    largest input record accepted (default %u)\n"
	       "      --allow-empty         exit 0 even when no frame could be named\n"
	       "  -j, --jobs N              name on N threads (default %u);\n"
	       "                            the output is the same for every N\n"
	       "      --stats               at the end, print the addresses named per second\n"
	       "                            and the jobs used\n"
	       "  -h, --help                show this help\n"
	       "  -V, --version             show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       SP_DEFAULT_MAX_RECORD, default_jobs());
}

/*
 * The frame record of a frame seen for the first time, now or, with
 * workers, in its turn.  Returns 1 when its name is left to a worker
 * (then not in *sf: never for JIT code), 0 when it is in *sf.
 */
static int name_frame(struct sp_namer *sym, struct sp_writer *w, uint64_t id,
		      const struct sp_stack_frame *f, struct sp_symframe *sf)
{
	int later = 0;
	if (par)
		later = sp_sympar_frame(par, id, f, sf);
	else
		sp_namer_resolve(sym, f, sf);
	if (later < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	if (!par)
		sp_symframe_write(w, id, f, sf);
	return later;
}

/* A record passed through as it is, now or in its turn. */
static void pass_record(struct sp_writer *w, const struct sp_record *rec)
{
	if (!par)
		sp_writer_raw(w, rec->raw, rec->raw_len);
	else if (sp_sympar_raw(par, rec->raw, rec->raw_len) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
}

/*
 * The frame records a stack needs and its symstack; a stack with a JIT
 * frame left unnamed is kept, to be named again after a jitdump record.
 */
static void name_stack(struct sp_namer *sym, struct sp_writer *w, uint64_t id,
		       const struct sp_stack_frame *refs, size_t n)
{
	uint64_t *ids = sp_xmalloc((n ? n : 1) * sizeof(*ids));
	struct sp_symframe sf;
	bool unnamed = false;
	for (size_t i = 0; i < n; i++) {
		int fresh = sp_namer_intern(sym, &refs[i], &ids[i]);
		if (fresh < 0)
			sp_die(SP_EXIT_FATAL, "%s", sp_namer_error(sym));
		if (fresh) {
			resolved++;
			name_frame(sym, w, ids[i], &refs[i], &sf);
			if ((refs[i].flags & SP_FRAME_KIND_MASK) == SP_FRAME_JIT) {
				jit_frames++;
				jit_unnamed += sf.origin == SP_ORIGIN_ADDRESS_ONLY;
			}
		}
		if ((refs[i].flags & SP_FRAME_KIND_MASK) == SP_FRAME_JIT &&
		    (fresh ? sf.origin == SP_ORIGIN_ADDRESS_ONLY : sp_namer_unnamed(sym, ids[i])))
			unnamed = true;
	}
	addresses += n;
	if (!par)
		sp_write_symstack(w, id, ids, n);
	else if (sp_sympar_symstack(par, id, ids, n) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	if (unnamed && sp_namer_keep_stack(sym, id, refs, n) < 0)
		sp_die(SP_EXIT_FATAL, "%s", sp_namer_error(sym));
	free(ids);
}

/*
 * A stack becomes the frame records it needs and a symstack of the same
 * id.  Returns 0, or -1 for a malformed frame (nothing written then).
 */
static int symbolize_stack(struct sp_namer *sym, struct sp_writer *w,
			   const struct sp_record *rec)
{
	uint64_t id;
	struct sp_stack_frame *refs;
	size_t n;
	int rc = sp_stack_of(rec, &id, &refs, &n);
	if (rc == -2)
		sp_die(SP_EXIT_FATAL, "out of memory");
	if (rc == 0)
		name_stack(sym, w, id, refs, n);
	free(refs);
	return rc;
}

/* The symbolize record: this stage's counters, just before the summary. */
static void write_counters(struct sp_namer *sym, struct sp_writer *w)
{
	struct sp_sym_stats st;
	const char *names[SP_ORIGIN_COUNT];
	sp_namer_stats(sym, &st);
	for (int i = 0; i < SP_ORIGIN_COUNT; i++)
		names[i] = sp_sym_origin_name((enum sp_sym_origin)i);
	struct sp_symbolize_rec s = {
		.frames = st.frames, .origin_names = names, .origin_counts = st.by_origin,
		.norigins = SP_ORIGIN_COUNT, .address_only = st.by_origin[SP_ORIGIN_ADDRESS_ONLY],
		.modules_missing = st.modules_missing, .modules_mismatched = st.modules_mismatched,
		.debuginfo_modules = st.debuginfo_modules, .perf_maps_loaded = st.perf_maps.loaded,
		.perf_maps_refused = st.perf_maps.refused,
		.perf_map_lines_skipped = st.perf_maps.lines_skipped, .kallsyms = st.kallsyms,
	};
	sp_write_symbolize(w, &s);
}

/*
 * At the end of a segment: a result without a single name is unusable
 * (SP_EXIT_PARTIAL unless allow_empty); JIT code without any name means
 * its perf map is gone.  Each is one line with the cause and the fix.
 */
static int check_names(struct sp_namer *sym, bool allow_empty)
{
	struct sp_sym_stats st;
	sp_namer_stats(sym, &st);
	uint64_t none = st.by_origin[SP_ORIGIN_ADDRESS_ONLY];
	int status = SP_EXIT_OK;
	if (st.frames && none == st.frames) {
		sp_warn("no frame could be named: all %llu are address-only (module files "
			"missing: %llu); symbolize on the host that recorded, or give --archive "
			"DIR, --module-dir DIR or DEBUGINFOD_URLS", (unsigned long long)none,
			(unsigned long long)st.modules_missing);
		status = allow_empty ? SP_EXIT_OK : SP_EXIT_PARTIAL;
	} else if (jit_frames && jit_unnamed == jit_frames && !st.perf_maps.loaded &&
		   !st.perf_maps.refused) {
		/* sp-stat's words (stream/advice.h): the warning and the diagnosis read alike. */
		struct sp_finding f;
		if (jit_owners.cpython || jit_owners.map_asked)
			sp_finding_perf_map_moved(&f, jit_unnamed, jit_frames, "the", NULL);
		else
			sp_finding_jit_no_map(&f, jit_unnamed, jit_frames, jit_owner());
		sp_warn("warning: %s; %s", f.what, f.fix);
	}
	jit_frames = jit_unnamed = 0;
	memset(&jit_owners, 0, sizeof(jit_owners));
	return status;
}

/* --stats: this stage's throughput, on standard error, and the jobs it named on. */
static void print_stats(double seconds, unsigned jobs)
{
	if (seconds <= 0)
		seconds = 1e-9;
	fprintf(stderr, "%s: %llu addresses (%llu resolved) in %.3f s: %.0f addresses/s, "
		"%u job%s\n", sp_progname, (unsigned long long)addresses,
		(unsigned long long)resolved, seconds, (double)addresses / seconds, jobs,
		jobs == 1 ? "" : "s");
}

/* The tool's own long options, then the symbolizer's. */
static const struct option *long_options(void)
{
	enum { OWN = 9 };	/* the entries below; the last one of all stays zero */
	static struct option longopts[OWN + SP_SYM_OPT_COUNT + 1] = {
		{ "output", required_argument, NULL, 'o' },
		{ "compress", optional_argument, NULL, COMPRESS },
		{ "follow", no_argument, NULL, 'f' },
		{ "max-record", required_argument, NULL, MAX_RECORD },
		{ "allow-empty", no_argument, NULL, ALLOW_EMPTY },
		{ "stats", no_argument, NULL, STATS },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	for (int i = 0; i < SP_SYM_OPT_COUNT; i++)
		longopts[OWN + i] = (struct option){ sp_sym_options[i].name,
			sp_sym_options[i].arg ? required_argument : no_argument, NULL, SYM_OPT + i };
	return longopts;
}

/* The public API's last failure: a bad option argument is a usage error. */
static _Noreturn void symbolizer_failed(void)
{
	if (sp_errno() == SP_ERR_INVALID)
		sp_usage_error("%s", sp_errmsg(-1));
	sp_die(SP_EXIT_FATAL, "%s", sp_errmsg(-1));
}

/* An end before the symbolizer is made: its options freed, status returned. */
static int options_done(struct sp_symbolizer_options *opts, int status)
{
	sp_symbolizer_options_free(opts);
	return status;
}


/* With more than one job, the workers that look up ELF and DWARF names. */
static void start_workers(struct sp_namer *sym, struct sp_writer *w, unsigned jobs)
{
	struct sp_error err = { 0 };
	if (jobs > 1 && !(par = sp_sympar_new(sym, w, jobs - 1, &err)))
		sp_die(SP_EXIT_FATAL, "%s", sp_error_message(&err));
}

/* The input is idle: what was named so far leaves now (a write error stays on w). */
static void flush_out(void *w)
{
	if (par)
		sp_sympar_drain(par);
	sp_writer_flush(w);
}

int main(int argc, char **argv)
{
	const struct option *longopts = long_options();
	struct sp_symbolizer_options *opts = sp_symbolizer_options_new();
	const char *output = NULL, *input;
	size_t max_record = SP_DEFAULT_MAX_RECORD;
	bool allow_empty = false, follow = false, stats = false;
	unsigned jobs = default_jobs();
	int c, compress = 0;

	sp_tool_init(argv[0]);
	if (!opts)
		symbolizer_failed();
	while ((c = getopt_long(argc, argv, "o:zfj:hV", longopts, NULL)) != -1) {
		if (c >= SYM_OPT && c < SYM_OPT + SP_SYM_OPT_COUNT) {
			if (sp_symbolizer_options_set(opts, sp_sym_options[c - SYM_OPT].name, optarg) < 0)
				symbolizer_failed();
			continue;
		}
		switch (c) {
		case 'o': output = optarg; break;
		case 'z': compress = sp_parse_compress(NULL); break;
		case COMPRESS: compress = sp_parse_compress(optarg); break;
		case 'f': follow = true; break;
		case MAX_RECORD: max_record = sp_parse_max_record(optarg); break;
		case ALLOW_EMPTY: allow_empty = true; break;
		case STATS: stats = true; break;
		case 'j': jobs = sp_parse_jobs(optarg); break;
		case 'h': usage(); return options_done(opts, SP_EXIT_OK);
		case 'V': return options_done(opts, sp_show_version());
		default: return options_done(opts, sp_bad_option());
		}
	}
	input = sp_single_input(argc, argv, optind);
	/*
	 * Before any output, so that a pipe's other tools do not run for
	 * nothing: the options completed, a --kallsyms file that cannot be
	 * read refused.  The stream is the namer's to name (api/internal.h).
	 */
	struct sp_symbolizer *api = sp_symbolizer_new_tool(opts, sp_note_warn, NULL);
	if (!api)
		symbolizer_failed();
	sp_symbolizer_options_free(opts);
	struct sp_namer *sym = sp_symbolizer_namer(api);
	/* Following a file opens it when it appears; a pipe needs no following. */
	if (follow && (!input || strcmp(input, "-") == 0))
		follow = false;
	int infd = follow ? sp_follow_input(input) : sp_open_input(input);
	int outfd = sp_open_output(output, true);
	struct sp_writer *w = sp_writer_new(outfd, output ? output : "-");
	struct sp_reader *r = follow ? sp_reader_follow(input, &sp_interrupted, sp_note_warn, NULL)
				     : sp_reader_new(infd, input ? input : "-");
	if (!w || !r)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_compress_output(w, compress);
	start_workers(sym, w, jobs);
	sp_reader_set_max_record(r, max_record);
	/* Samples are copied as they are: the stage after this one reads them. */
	sp_reader_pass_through(r, 1ull << SP_R_SAMPLE);
	sp_reader_undecoded(r, 1ull << SP_R_STACK);	/* read from their bytes */
	sp_reader_set_idle(r, flush_out, w);
	if (follow) {
		struct sigaction sa = { .sa_handler = sp_on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}

	int nargs;
	char **args = sp_output_args(argc, argv, &nargs);
	double start = sp_now();
	int status = SP_EXIT_OK;
	struct sp_record rec;
	enum sp_read_status rs;
	while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		int rc = 0;
		note_jit_owner(&rec);
		/* What changes the modules or ends a segment waits for the names before it. */
		if (par && (rec.type == SP_R_HEADER || rec.type == SP_R_MODULE ||
			    rec.type == SP_R_SUMMARY))
			sp_sympar_drain(par);
		switch (rec.type) {
		case SP_R_HEADER: {
			const struct sp_header *h = sp_reader_header(r);
			if (h->stage != SP_STAGE_UNWOUND) {
				sp_warn("'%s': byte offset %llu, record %llu: the stream is %s; sp-symbolize "
					"reads unwound streams: %s", input ? input : "-",
					(unsigned long long)rec.offset, (unsigned long long)rec.index,
					sp_stage_name(h->stage), h->stage == SP_STAGE_RAW ?
					"run sp-unwind first" : "it is already symbolized");
				status = SP_EXIT_FATAL;
				goto done;
			}
			sp_namer_begin_segment(sym, rec.map);
			sp_pack_derived_header(w, rec.map, SP_STAGE_SYMBOLIZED,
					       "sp-symbolize", nargs, args);
			break;
		}
		case SP_R_MODULE:
			rc = sp_namer_add_module(sym, &rec);
			sp_writer_raw(w, rec.raw, rec.raw_len);
			break;
		case SP_R_STACK:
			if (symbolize_stack(sym, w, &rec) < 0) {
				sp_warn("'%s': byte offset %llu, record %llu: malformed frame in a stack record",
					input ? input : "-", (unsigned long long)rec.offset,
					(unsigned long long)rec.index);
				status = SP_EXIT_PARTIAL;
				goto done;
			}
			break;
		case SP_R_SUMMARY:
			write_counters(sym, w);
			sp_writer_raw(w, rec.raw, rec.raw_len);
			if (check_names(sym, allow_empty) != SP_EXIT_OK && status == SP_EXIT_OK)
				status = SP_EXIT_PARTIAL;
			break;
		default: {
			rc = sp_namer_note(sym, &rec);
			pass_record(w, &rec);
			uint64_t id;
			const struct sp_stack_frame *f;
			size_t n;
			while (rc == 0 && sp_namer_next_stale(sym, &id, &f, &n))
				name_stack(sym, w, id, f, n);
			break;
		}
		}
		if (rc < 0)
			sp_die(SP_EXIT_FATAL, "%s", sp_namer_error(sym));
		if (par && sp_sympar_step(par) < 0)
			sp_die(SP_EXIT_FATAL, "out of memory");
		if (sp_writer_failed(w))
			break;
	}
	if (sp_report_input_end(r, rs, input ? input : "-", "symbolized") != SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
done:
	/* Every complete record read is written, also before a fault. */
	if (par)
		sp_sympar_drain(par);
	if (stats)
		print_stats(sp_now() - start, jobs);
	sp_sympar_free(par);
	if (sp_writer_close(w) < 0)
		status = sp_write_failed(errno);
	free(args);
	sp_reader_free(r);
	/*
	 * The symbolizer is left to the exit: freeing each module's DWARF
	 * and indexes piece by piece took a fifth of a cold run (its own
	 * flame graph, docs/PERFORMANCE.md).  Kept in a global, it stays
	 * reachable, which leak checkers do not report.
	 */
	sp_namer_end(sym);
	left_to_exit = api;
	if (infd >= 0 && infd != STDIN_FILENO)
		close(infd);
	return status;
}
