/* SPDX-License-Identifier: MIT
 * libstackpulse's public API (include/stackpulse.h): how its files divide
 * the work, and the structures they share.  Private to the api layer.
 *
 *   error.c       sp_version(); the argument checks every entry point
 *                 makes (SP_API_CHECK), publishing a failure (util/error.h)
 *   options.c     struct sp_options: the recording options
 *   recorder.c    struct sp_recorder over capture/recorder.h
 *   images.c      the exact images a recorder keeps for its tail
 *   source.c      what a snapshot and a tail share: reading records,
 *                 unwinding raw stacks (unwind/stage.h), cutting batches
 *   snapshot.c    struct sp_snapshot; tail.c: struct sp_tail
 *   symbolizer.c  struct sp_symbolizer over sym/symbolizer.h (sp_namer)
 *   calibrate.c   sp-capture --stack-size auto's calibration
 *
 * sp-symbolize takes its options and its symbolizer from the public API
 * (sp_symbolizer_new_tool() below) but names the stream through the
 * symbolizer's sp_namer: it rewrites the stream, and what it writes is
 * the namer's, not a display frame's: a frame record per interned frame
 * under the segment's frame id, with rel, offset and the inline array as
 * one record; the symstack of each stack where the stack record was, in
 * the input's order; a stack named again under the same id once a
 * jitdump record names its JIT code (sp_namer_keep_stack()); the
 * symbolize record's counters.  The public symbolizer gives inlined
 * calls as entries of their own, ids of its own, and batches whose
 * stacks are apart from their records.
 *
 * The library is compiled with -fvisibility=hidden; the public header
 * gives what it declares default visibility, and libstackpulse.map
 * exports exactly that.
 *
 * Every public function checks its handles first and, on any failure,
 * publishes the handle's error (sp_error_publish()) before returning -1
 * or NULL, so that sp_errno() and sp_errmsg(-1) say what went wrong.
 */
#ifndef SP_API_INTERNAL_H
#define SP_API_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse.h>

#include "stream/records.h"
#include "stream/stream.h"
#include "sym/perfmaps.h"
#include "util/error.h"

/* Fails the calling function with SP_ERR_INVALID when p is NULL. */
#define SP_API_CHECK(p, ret) \
	do { \
		if (!(p)) { \
			sp_error_publish_new(SP_ERR_INVALID, "%s: %s is NULL", __func__, #p); \
			return ret; \
		} \
	} while (0)

/*
 * A batch: the records a source read since its last batch, in stream
 * order, and the stacks of its samples.  Every record is a copy, valid
 * as long as the batch (until the source's next call).  A batch never
 * spans two segments: a header record is always a batch's first record.
 *
 * records holds every record but the stack records (headers, modules,
 * samples, processes, maps, runtime markers, jitdump records, ...),
 * as an unwound stream has them: what a symbolizer learns from.
 */
struct sp_batch {
	const void *profile;		/* the snapshot or tail it came from */
	uint32_t segment;		/* of that profile, from 0 */
	const struct sp_record *records;
	size_t nrecords;
	struct sp_stack *stacks;
	size_t nstacks;
	bool has_more;
};

/* One sample's stack. */
struct sp_stack {
	const void *profile;		/* as its batch's */
	uint32_t segment;
	uint64_t id;			/* the stack record's id in its segment */
	struct sp_sample_info info;
	int end;			/* enum sp_unwind_end */
	/* The stack record's frames as decoded, the end marker included. */
	const struct sp_stack_frame *raw;
	size_t nraw;
	/* The public view: no marker, module indices of the profile. */
	const struct sp_frame *frames;
	size_t nframes;
	/* The profile's module table, for sp_stack_context(). */
	const struct sp_module *modules;
	size_t nmodules;
};

/*
 * source.c: reading one stream for a snapshot or a tail, in batches.
 * The source reads fd (a snapshot: to its end, blocking as the input
 * does) or, with follow, the regular file open at fd as it grows,
 * taking only what is complete and never waiting.  A raw segment's
 * records go through an unwinding stage (unwind/stage.h), module_dir
 * (NULL: none) added to its search, so that batches always hold the
 * records of an unwound or symbolized stream.  name is how messages
 * name the input.  NULL with *err set on failure; fd stays the
 * caller's.
 */
struct sp_source;
struct sp_source *sp_source_new(const void *profile, int fd, const char *name, bool follow,
				const char *module_dir, struct sp_error *err);
void sp_source_free(struct sp_source *s);

/*
 * Reads the first record now, so that an input that is no stream is
 * refused at open (SP_ERR_BAD_INPUT, naming what it looks like).
 * 0, or -1 with the message on the source.
 */
int sp_source_check(struct sp_source *s);

/*
 * The next batch in *b: 1 (it may hold nothing when following), 0 at
 * the end (a snapshot: the end of the input; following: after the
 * summary record), -1 with the message on the source (the batches
 * before held every record before the error).
 */
int sp_source_next(struct sp_source *s, const struct sp_batch **b);
const struct sp_error *sp_source_error(const struct sp_source *s);
int sp_source_metadata(struct sp_source *s, struct sp_metadata *m);
int sp_source_summary(struct sp_source *s, struct sp_summary *sum);
size_t sp_source_runtimes(struct sp_source *s, const struct sp_runtime **r);

/*
 * The exact images a file-backed recorder keeps: a private directory in
 * build-id layout (DIR/.build-id/xx/rest), each entry a link to a
 * descriptor the recorder holds on a file a target mapped, so that a file
 * deleted or replaced since is still read as it was sampled.  A tail
 * taken from the recorder owns it and hands dir to its unwinder and to
 * its symbolizers as a module directory.
 */
struct sp_images;
const char *sp_images_dir(const struct sp_images *im);
void sp_images_free(struct sp_images *im);

/*
 * The recorder's side of sp_recorder_tail(): its file's path, and its
 * images, which are taken once.  take_images fails (the message on r,
 * published: SP_ERR_STATE) when r writes to a descriptor or a tail was
 * taken before; else *im gets the images (NULL when it keeps none) and
 * the tail owns them.
 */
const char *sp_recorder_path(const struct sp_recorder *r);
int sp_recorder_take_images(struct sp_recorder *r, struct sp_images **im);

/*
 * The symbolizer's side of its source: the module directory a tail
 * taken from a recorder adds to the search (NULL: none), the runtime
 * markers read so far.
 */
const char *sp_tail_images_dir(const struct sp_tail *t);

/* options.c: the recording options as the capture layer takes them. */
struct sp_capture_options;
int sp_options_to_capture(const struct sp_options *o, struct sp_capture_options *co,
			  struct sp_error *err);

/*
 * The tools' door (recorder.c).  sp-capture drives its recording through
 * the public recorder, made here from the capture layer's own options
 * (what only the tool has: --archive, --mmap-pages, --kallsyms-out, the
 * header's record of its command line argc/argv, copied), writing to fd
 * (not closed) under name.  What only the tool needs after that (-t
 * threads, the status line's counters, the command's status) it reads
 * from the capture handle.  NULL on failure, published.
 */
struct sp_capture;
struct sp_writer;
struct sp_recorder *sp_recorder_new_tool(const struct sp_capture_options *co, int fd,
					 const char *name, int argc, char **argv);
struct sp_capture *sp_recorder_capture(struct sp_recorder *r);
struct sp_writer *sp_recorder_writer(struct sp_recorder *r);

/*
 * The tools' door (symbolizer.c).  sp-symbolize gives each of its
 * symbolizer options to sp_symbolizer_options_set() and makes its
 * symbolizer here from them: one with no snapshot or tail, whose
 * namer's warnings (a perf map refused, ...) go to warn with warn_arg,
 * and which refuses, before anything is read, a --kallsyms file that
 * cannot be read (SP_ERR_ERRNO).  A bad option is SP_ERR_INVALID, the
 * tool's usage error.  NULL on failure, published.  The tool feeds the
 * stream to the namer itself (sp_symbolizer_namer(): frame records,
 * symstacks, kept stacks and counters are the namer's); the namer is
 * the symbolizer's, freed by sp_symbolizer_free().
 */
struct sp_namer;
struct sp_symbolizer *sp_symbolizer_new_tool(const struct sp_symbolizer_options *o,
					     sp_sym_warn_fn *warn, void *warn_arg);
struct sp_namer *sp_symbolizer_namer(struct sp_symbolizer *sym);

/*
 * sp-capture --stack-size auto (calibrate.c).  sp_calib_new() makes a
 * memory file and a descriptor onto it, sp_calib_fd(), which the
 * recorder writes to instead of out (the tool's output, not owned).
 * sp_calib_switch() ends the calibration: flushes w, copies what the
 * memory file holds to out, points sp_calib_fd() at out, and unwinds
 * the memory file's stream in a thread of its own as sp-unwind would,
 * counting what complete stacks needed of their copies.  Once
 * sp_calib_ready(), sp_calib_result() gives the counts (valid until
 * sp_calib_free()), the samples seen, and in *err why the unwinding
 * stopped short (NULL when it did not).  sp_calib_new() and
 * sp_calib_switch() return NULL or -1 with the message in err;
 * sp_calib_fd() stays open until sp_calib_free().
 */
struct sp_calib;
struct sp_copy_used;
struct sp_error;
struct sp_calib *sp_calib_new(int out, struct sp_error *err);
int sp_calib_fd(const struct sp_calib *c);
int sp_calib_switch(struct sp_calib *c, struct sp_writer *w, struct sp_error *err);
bool sp_calib_ready(const struct sp_calib *c);
const struct sp_copy_used *sp_calib_result(struct sp_calib *c, uint64_t *samples,
					   const struct sp_error **err);
void sp_calib_free(struct sp_calib *c);

#endif
