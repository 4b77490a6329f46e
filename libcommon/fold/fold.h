/*
 * Folding: the aggregation behind sp-fold.  Records of a symbolized (or
 * unwound) stream go in (fold.c); distinct display frames, distinct
 * stacks of them and per-thread counts come out (aggregate.c), for the
 * folded text writer (folded.c) and the pprof and speedscope exporters
 * (export_pprof.c, export_speedscope.c).  The library never prints or
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

enum sp_fold_format { SP_FOLD_FOLDED, SP_FOLD_PPROF, SP_FOLD_SPEEDSCOPE };
enum sp_fold_root { SP_ROOT_COMM, SP_ROOT_PID, SP_ROOT_TID };

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
	const char *per_thread_dir;	/* NULL: none */
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
};

/* One distinct stack: display frame indices, root first. */
struct sp_fold_stack {
	const uint32_t *frames;
	size_t n;
};

/* A sample as speedscope keeps them: in time order per thread. */
struct sp_fold_sample {
	uint32_t stack;
	uint64_t weight;	/* samples or period, per the options */
	uint64_t time;		/* ns on the stream's clock */
};

struct sp_fold_thread {
	uint32_t pid, tid;
	const char *comm;	/* the process's name */
	const char *thread_comm;	/* the thread's own name, or comm */
	const struct sp_fold_sample *seq;	/* speedscope only */
	size_t nseq;
};

/* Samples and period of one stack in one thread. */
struct sp_fold_count {
	uint32_t thread, stack;
	uint64_t samples, period;
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
	uint64_t sample_period_ns;	/* a typical period (median-free: mean) */
	bool weight_period;
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

/* The message of the last error; the string lives as long as f. */
const char *sp_fold_error(const struct sp_fold *f);

/* Whether any sample was kept: false when the filters matched none. */
bool sp_fold_any_sample(const struct sp_fold *f);

/*
 * The exporters.  Each returns 0, or -1 with err set; a failed write to
 * out is the caller's to find with ferror(out).  pprof: a gzip-compressed
 * profile.proto; speedscope: the sampled JSON format, one profile per
 * thread, weights in nanoseconds.
 */
int sp_fold_write_pprof(const struct sp_fold_view *v, FILE *out, struct sp_error *err);
int sp_fold_write_speedscope(const struct sp_fold_view *v, FILE *out, struct sp_error *err);

#endif
