/* SPDX-License-Identifier: MIT
 * The unwinding stage: a raw stream's records in, the unwound stream's
 * records out to a writer (format/sp-stream.md, SEGMENTS AND STAGES).
 * Each raw sample becomes its kernel frames and the user frames unwound
 * from its registers and stack copy, interned as stack records with the
 * module records they need written just before; every other record is
 * passed through.  sp-unwind is a loop over it, and libstackpulse
 * unwinds raw stacks with it.  Core layer: no printing.
 */
#ifndef SP_UNWIND_STAGE_H
#define SP_UNWIND_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "stream/stream.h"
#include "stream/vocab.h"
#include "util/error.h"
#include "unwind/unwind.h"

struct sp_unwind_stage;

/*
 * Another engine that steps from frame to frame in place of unwind.c's,
 * as sp_unwind() does (sp-unwind --engine=libunwind): made for each
 * segment over the segment's unwinder, which finds the modules.  It is
 * given from outside, so that only a program that links libunwind
 * refers to unwind/libunwind.h.
 */
struct sp_unwind_engine {
	const char *name;		/* the unwind record's "engine" */
	/* Given the engine itself, which may lie in a larger struct; NULL: err set. */
	void *(*segment)(const struct sp_unwind_engine *e, struct sp_unwinder *u,
			 struct sp_error *err);
	void (*free)(void *engine);
	enum sp_unwind_end (*unwind)(void *engine, struct sp_addrspaces *a, uint32_t pid,
				     const uint64_t *regs, size_t nregs,
				     const unsigned char *stack, size_t len, bool full,
				     struct sp_uframe *out, size_t max, size_t *n);
	/*
	 * Optional, for an engine that serves a stage with stacks unwound
	 * elsewhere (unwind/parallel.h); NULL: the stage's own unwinder does
	 * it.  chain resolves a frame-pointer callchain as sp_unwind_chain()
	 * does; copy_used is sp_unwinder_copy_used() of the last stack;
	 * stats and denied give the unwind record's unwinder counters and
	 * the module denied.  With copy_status, the stage rebuilds no stack
	 * copy (the engine is given none): it returns what sp_ustack_decode()
	 * returned for the sample where it was unwound.
	 */
	enum sp_unwind_end (*chain)(void *engine, struct sp_addrspaces *a, uint32_t pid,
				    const uint64_t *ips, size_t nips, bool full,
				    struct sp_uframe *out, size_t max, size_t *n);
	uint64_t (*copy_used)(void *engine);
	void (*stats)(void *engine, struct sp_unwind_stats *st);
	const char *(*denied)(void *engine, uint32_t *pid, int *err);
	int (*copy_status)(void *engine);
};

struct sp_unwind_stage_options {
	/* root, module_dirs, max_depth and fp_fallback; the rest is per segment. */
	struct sp_unwind_options uo;
	const struct sp_unwind_engine *engine;	/* NULL: unwind.c's */
	/* What the derived header's tools entry says: the program and its arguments. */
	const char *tool;
	int argc;
	char **argv;
};

/*
 * A stage writing to w (not owned).  The options are copied, except the
 * strings they point to, which must outlive the stage.  NULL when memory
 * runs out.
 */
struct sp_unwind_stage *sp_unwind_stage_new(const struct sp_unwind_stage_options *o,
					    struct sp_writer *w);
void sp_unwind_stage_free(struct sp_unwind_stage *s);

/*
 * Takes the next record of the raw stream read by r (its header is the
 * segment's).  Returns 0, or -1 with the reason in *err: the segment is
 * not raw (SP_ERR_BAD_INPUT), its architecture or register set cannot
 * be unwound, the engine cannot serve it, or memory ran out
 * (SP_ERR_NOMEM).  A write error stays on the writer.
 */
int sp_unwind_stage_record(struct sp_unwind_stage *s, const struct sp_record *rec,
			   const struct sp_header *hdr, struct sp_error *err);

/*
 * How the current segment's stacks ended: *n samples with user frames
 * walked, ends[SP_END_COUNT] by reason (valid until the next record).
 */
const uint64_t *sp_unwind_stage_ends(const struct sp_unwind_stage *s, uint64_t *n);

/*
 * How much of their stack copies DWARF stacks needed
 * (sp_unwinder_copy_used()), counted by 512-byte buckets: hist[i] holds
 * the complete stacks that needed more than 512 (i - 1) and at most
 * 512 i bytes.  A stack that ended truncated needed more than its copy.
 */
#define SP_COPY_BUCKET 512u
#define SP_COPY_BUCKETS (65536u / SP_COPY_BUCKET + 1)
struct sp_copy_used {
	uint64_t hist[SP_COPY_BUCKETS];
	uint64_t n;		/* complete stacks counted */
	uint64_t max;		/* the most bytes one of them needed */
	uint64_t truncated;	/* stacks that ended truncated */
};

/* Counts one stack: complete and needing used bytes, or truncated. */
void sp_copy_used_add(struct sp_copy_used *c, bool complete, uint64_t used);

/*
 * The bytes within which a share q (0 < q <= 1) of the complete stacks
 * fit: a bucket's upper bound, at most the largest need; 0 when no
 * stack was counted.
 */
uint64_t sp_copy_used_quantile(const struct sp_copy_used *c, double q);

/*
 * The smallest window that keeps a share keep of the stacks counted
 * complete (truncated ones count as needing more than max): a multiple
 * of 512 bytes, at least floor, at most max.  max when the truncated
 * ones alone are more than 1 - keep of them all, or none was counted.
 */
uint32_t sp_copy_used_window(const struct sp_copy_used *c, double keep, uint32_t floor,
			     uint32_t max);

/* The current segment's counts, DWARF stacks of unwind.c's engine only. */
const struct sp_copy_used *sp_unwind_stage_copy_used(const struct sp_unwind_stage *s);

/* Every segment's samples and frames so far, for a tool's throughput. */
void sp_unwind_stage_totals(const struct sp_unwind_stage *s, uint64_t *samples, uint64_t *frames);

/*
 * The most threads' last stack copies the stage has kept at once (for
 * "ustack_shared"): they grow with the threads alive, and with those that
 * exited only in streams whose exit records lack "ustack_reset".  0 for
 * the stage of sp_unwind_par_stage(), whose workers keep the copies.
 */
size_t sp_unwind_stage_copies_peak(const struct sp_unwind_stage *s);

/*
 * The frames of every segment so far taken from a thread's previous walk
 * (sp_unwind_thread()); 0 for the stage of sp_unwind_par_stage(), whose
 * workers walk every frame.
 */
uint64_t sp_unwind_stage_frames_taken(const struct sp_unwind_stage *s);

/*
 * A module file the unwinder was denied (sp_unwinder_denied()), once
 * per stage: the tool says how to grant it.  NULL when none.
 */
const char *sp_unwind_stage_denied(const struct sp_unwind_stage *s, uint32_t *pid, int *err);

#endif
