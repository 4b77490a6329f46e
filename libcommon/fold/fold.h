/* SPDX-License-Identifier: MIT
 * Folding: the aggregation behind sp-fold.  Records of a symbolized (or
 * unwound) stream go in (fold.c); distinct display frames, distinct
 * stacks of them and per-thread counts come out (aggregate.c), for the
 * folded text writer (folded.c) and the pprof, speedscope and Firefox
 * Profiler exporters (export_pprof.c, export_speedscope.c,
 * export_firefox.c).  The library never prints or
 * exits: errors are kept on the handle (util/error.h).
 */
#ifndef SP_FOLD_H
#define SP_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stream/stream.h"
#include "util/error.h"

enum sp_fold_format { SP_FOLD_FOLDED, SP_FOLD_PPROF, SP_FOLD_SPEEDSCOPE, SP_FOLD_FIREFOX };
/*
 * The root frames of a line: the process name, every pid of a name
 * merged (the default, --by-process); comm-PID; comm-PID/TID; the process
 * name then the thread's name, every thread of a name merged (--by-thread).
 */
enum sp_fold_root { SP_ROOT_COMM, SP_ROOT_PID, SP_ROOT_TID, SP_ROOT_THREAD };

struct sp_fold_options {
	enum sp_fold_format format;
	enum sp_fold_root root;
	bool kernel, jit, inline_frames, addrs, show_hidden;
	bool period;			/* weight by period, not by samples */
	uint64_t *pids, *tids;		/* filters; NULL: all */
	size_t npids, ntids;
	char **comms;
	size_t ncomms;
	double from, to;		/* seconds from the recording's start */
	const char *event;		/* fold only this event's samples; NULL: the first */
	/*
	 * Off-CPU time (sp-capture --off-cpu, the "off-cpu" event): off_cpu
	 * folds only it, wall the event folded (a clock) and it; either way
	 * by period (nanoseconds), each off-CPU stack ending in an [off-cpu]
	 * frame, or [preempted] for a thread that was runnable meanwhile.
	 */
	bool off_cpu, wall;
	/*
	 * Frames at their addresses (pprof): a display frame per address and
	 * module mapping, the physical frame followed by its inline frames
	 * whatever inline_frames says, so that each can be a Location.
	 */
	bool locations;
	const char *per_thread_dir;	/* NULL: none */
	/*
	 * How the per-thread files are opened and finished, so that a tool
	 * writes them as it writes its output; NULL: fopen() and fclose().
	 * close_file is told whether the file is complete, and returns 0,
	 * or -1 with errno set.
	 */
	FILE *(*open_file)(const char *path);
	int (*close_file)(FILE *f, bool complete);
};

/* Frame kinds of a display frame. */
#define SP_FOLD_USER 0
#define SP_FOLD_KERNEL 1
#define SP_FOLD_JIT 2

/* One distinct display frame (after the options are applied). */
struct sp_fold_frame {
	const char *name;	/* as shown, annotations (_[k], _[i]) included */
	const char *function;	/* the bare function name */
	const char *file;	/* NULL when unknown */
	unsigned line;		/* 0 when unknown */
	const char *module;	/* the module's path, NULL when none */
	const unsigned char *build_id;
	int build_id_len;
	unsigned kind;		/* SP_FOLD_USER, _KERNEL or _JIT */
	bool inlined;		/* an inline entry, not a physical frame */
	bool address_only;
	bool function_start;	/* named only by where its function starts */
	uint64_t addr;		/* an address of the frame (the first seen) */
	uint64_t rel;		/* its module-relative address */
	bool has_rel;		/* rel is known (a symbolized frame of format 1.2 on) */
	uint32_t mapping;	/* with locations: the view's mapping + 1 holding addr; 0 none */
};

/* A file mapped where samples were taken (with locations): a map record's range. */
struct sp_fold_mapping {
	uint64_t start, limit, offset;	/* [start, limit) maps the file from offset */
	const char *path;
	const unsigned char *build_id;
	int build_id_len;
};

/* One distinct stack: display frame indices, root first. */
struct sp_fold_stack {
	const uint32_t *frames;
	size_t n;
};

/* A sample as speedscope and firefox keep them: in time order per thread. */
struct sp_fold_sample {
	uint32_t stack;
	uint64_t weight;	/* samples or period, per the options */
	uint64_t time;		/* ns on the stream's clock */
};

struct sp_fold_thread {
	uint32_t pid, tid;
	const char *comm;	/* the process's name */
	const char *thread_comm;	/* the thread's own name, or comm */
	const struct sp_fold_sample *seq;	/* speedscope and firefox only */
	size_t nseq;
};

/* Samples and period of one stack in one thread. */
struct sp_fold_count {
	uint32_t thread, stack;
	uint64_t samples, period;
};

/*
 * What the timeline marks besides samples (firefox only): records of the
 * stream kept in stream order, those of the --from/--to window.
 */
enum sp_fold_mark_kind {
	SP_MARK_LOST,		/* lost records or samples: count, cpu */
	SP_MARK_THROTTLE,	/* sampling throttled on cpu ... */
	SP_MARK_UNTHROTTLE,	/* ... until this */
	SP_MARK_FORK,		/* pid/tid born (a process when pid == tid) */
	SP_MARK_EXIT,		/* pid/tid ended (the process when pid == tid) */
};

struct sp_fold_mark {
	enum sp_fold_mark_kind kind;
	uint32_t pid, tid, cpu;	/* cpu: UINT32_MAX when unknown */
	uint64_t time;		/* ns on the stream's clock */
	uint64_t since;		/* lost: the time of the sample before it, or time */
	uint64_t count;		/* lost: what was dropped */
	bool samples;		/* lost: samples (PERF_RECORD_LOST_SAMPLES), not records */
};

/* Everything folded, for the exporters. */
struct sp_fold_view {
	const struct sp_fold_frame *frames;
	size_t nframes;
	const struct sp_fold_stack *stacks;
	size_t nstacks;
	const struct sp_fold_thread *threads;
	size_t nthreads;
	const struct sp_fold_count *counts;
	size_t ncounts;
	uint64_t start_ns, end_ns;	/* first and last sample, stream clock */
	uint64_t wall_start_ns;		/* start_ns on CLOCK_REALTIME, 0 unknown */
	uint64_t sample_period_ns;	/* a typical on-CPU period (median-free: mean) */
	bool weight_period;
	const char *time_name;		/* what the period weighs: "cpu", "off-cpu" or "wall" */
	const struct sp_fold_mapping *mappings;	/* with locations */
	size_t nmappings;
	const struct sp_fold_mark *marks;	/* firefox only */
	size_t nmarks;
};

struct sp_fold;

/*
 * A folding handle for the options o (copied; the arrays it points to
 * must outlive the handle).  NULL when memory ran out.
 */
struct sp_fold *sp_fold_new(const struct sp_fold_options *o);
void sp_fold_free(struct sp_fold *f);

/*
 * Takes one record (it need not outlive the call).  Returns 0, or -1 with
 * sp_fold_error() set: SP_ERR_BAD_INPUT for a record that refers to what
 * its segment did not define, SP_ERR_NOMEM.
 */
int sp_fold_record(struct sp_fold *f, const struct sp_record *rec);

/*
 * Writes the result in the chosen format to out (and the per-thread
 * files).  Returns 0, or -1 with sp_fold_error() set; a failed write to
 * out is the caller's to find with ferror(out).
 */
int sp_fold_write(struct sp_fold *f, FILE *out);

/*
 * Writes, as folded lines, only the weight folded since the last call
 * (sp-fold --follow): the sum of every call's lines is the whole result.
 * Returns 0, or -1 with sp_fold_error() set.
 */
int sp_fold_write_new(struct sp_fold *f, FILE *out);

/* The message of the last error; the string lives as long as f. */
const char *sp_fold_error(const struct sp_fold *f);

/*
 * The events of the last header read (its "events"; without that key,
 * the one event its options name, or cpu-clock): their number, with the
 * names into *names (valid until the next header).  *picked is the index
 * of the event folded (the first of that name: the samples of every
 * event of that name are folded), or -1 when o.event names none of them
 * (no sample is folded then).
 */
size_t sp_fold_events(const struct sp_fold *f, const char *const **names, long *picked);
/* The index of the recording's "off-cpu" event, or -1 when it has none. */
long sp_fold_off_cpu_event(const struct sp_fold *f);

/* The name of the leaf frame of off-CPU stacks: "[off-cpu]", or "[preempted]". */
#define SP_FOLD_OFF_CPU "[off-cpu]"
#define SP_FOLD_PREEMPTED "[preempted]"

/* Whether any sample was kept: false when the filters matched none. */
bool sp_fold_any_sample(const struct sp_fold *f);

/*
 * The exporters.  Each returns 0, or -1 with err set; a failed write to
 * out is the caller's to find with ferror(out).  pprof: a gzip-compressed
 * profile.proto; speedscope: the sampled JSON format, one profile per
 * thread, weights in nanoseconds; firefox: the Firefox Profiler's
 * processed profile (export_firefox.c says which version), gzipped when
 * gzip is set; sp_fold_write() does not write it: a tool gets the view and
 * calls sp_fold_write_firefox().
 */
int sp_fold_write_pprof(const struct sp_fold_view *v, FILE *out, struct sp_error *err);
int sp_fold_write_speedscope(const struct sp_fold_view *v, FILE *out, struct sp_error *err);
int sp_fold_write_firefox(const struct sp_fold_view *v, bool gzip, FILE *out, struct sp_error *err);

/*
 * Top-N reports (top.c): per function, the samples whose leaf (innermost
 * shown frame) it is, its self time, and the samples whose stack holds it
 * at least once, its total time; or, for one function, the same per
 * caller.  A function is a display frame, so the options that shape the
 * frames (--kernel, --inline, ...) shape the report.
 *
 *	struct sp_fold_view v;
 *	struct sp_top t;
 *	sp_fold_view_get(f, &v);
 *	sp_top_init(&t);
 *	sp_top_compute(&t, &v, &options, &err);	(as often as wanted)
 *	sp_top_write(&t, &v, 20, out);
 *	sp_top_release(&t);
 *	sp_fold_view_release(&v);
 */

enum sp_top_sort { SP_TOP_SELF, SP_TOP_TOTAL };

/* No frame: the report is of functions, not of one function's callers. */
#define SP_TOP_NONE UINT32_MAX
/* The caller of a root frame: the process itself. */
#define SP_TOP_ROOT (UINT32_MAX - 1)

struct sp_top_options {
	enum sp_top_sort sort;
	/*
	 * The weight of each count of the view, by index (a window of
	 * samples: now's counts less an earlier copy); counts past nweights
	 * weigh nothing.  NULL: the counts' own samples (or period).
	 */
	const uint64_t *weights;
	size_t nweights;
	uint32_t pid;		/* only this process; 0: every one */
	const char *filter;	/* only rows whose name holds this; NULL: all */
	uint32_t callers_of;	/* a frame: rows are its callers; or SP_TOP_NONE */
};

struct sp_top_row {
	uint32_t frame;		/* a display frame of the view, or SP_TOP_ROOT */
	uint64_t self;		/* samples with it as leaf (callers: with the
				   function as leaf, called from it) */
	uint64_t total;		/* samples with it on the stack (callers: of
				   the function called from it) */
};

struct sp_top {
	struct sp_top_row *rows;	/* sorted, largest first */
	size_t nrows;
	uint64_t samples;	/* every sample weighed (of the process): 100% */
	uint64_t function_samples;	/* callers: the function's total */
	size_t threads, processes;	/* those with samples in the report */
	/* Scratch kept between computations. */
	uint64_t *self, *total;
	uint32_t *seen;
	size_t allocself, alloctotal, allocseen, allocrows;
	uint32_t *pids;
	size_t allocpids;
};

/* An empty report. */
void sp_top_init(struct sp_top *t);
void sp_top_release(struct sp_top *t);

/*
 * Fills t from the view v (which must stay as it is while t's rows are
 * read).  Returns 0, or -1 with err set when memory ran out.
 */
int sp_top_compute(struct sp_top *t, const struct sp_fold_view *v, const struct sp_top_options *o,
		   struct sp_error *err);

/*
 * The name of a row's function as the report shows it ("[process]" for
 * SP_TOP_ROOT: the caller of a root frame, or the samples whose stacks
 * have no frame to show), and its module's file name (NULL when none).
 */
const char *sp_top_name(const struct sp_fold_view *v, const struct sp_top_row *r);
const char *sp_top_module(const struct sp_fold_view *v, const struct sp_top_row *r);

/*
 * Writes at most n rows (0: all) as text, perf report's way: a line with
 * the samples, the column heads, then "self% self total% total function
 * (module)" a row.  Returns 0; a failed write is the caller's to find with
 * ferror(out).
 */
int sp_top_write(const struct sp_top *t, const struct sp_fold_view *v, size_t n, FILE *out);

/*
 * The view of everything folded so far, as the exporters get it; valid
 * until the next record is folded.  Returns 0, or -1 with sp_fold_error()
 * set.  sp_fold_view_release() frees what the view owns.
 */
int sp_fold_view_get(struct sp_fold *f, struct sp_fold_view *v);
void sp_fold_view_release(struct sp_fold_view *v);

#endif
