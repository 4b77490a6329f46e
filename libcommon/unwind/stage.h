/*
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
	void *(*segment)(struct sp_unwinder *u, struct sp_error *err);	/* NULL: err set */
	void (*free)(void *engine);
	enum sp_unwind_end (*unwind)(void *engine, struct sp_addrspaces *a, uint32_t pid,
				     const uint64_t *regs, size_t nregs,
				     const unsigned char *stack, size_t len, bool full,
				     struct sp_uframe *out, size_t max, size_t *n);
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
 * A module file the unwinder was denied (sp_unwinder_denied()), once
 * per stage: the tool says how to grant it.  NULL when none.
 */
const char *sp_unwind_stage_denied(const struct sp_unwind_stage *s, uint32_t *pid, int *err);

#endif
