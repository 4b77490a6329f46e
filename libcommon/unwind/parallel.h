/* SPDX-License-Identifier: MIT
 * The unwinding stage on several threads (sp-unwind -j N), writing
 * exactly what one stage (stage.h) writes for the same records.
 *
 * The caller's thread reads: it hands each record over, copied into a
 * batch.  Each of N workers owns a complete unwinder and its own address
 * spaces; every worker is given every record, in order, so that each
 * follows the processes, maps and segments, and unwinds its share of the
 * samples (a batch's samples are dealt out in turn).  One writer thread
 * runs a stage over the batches in order, taking each sample's stack from
 * the worker that unwound it: stacks and modules are interned, and
 * records written, as by one stage.  At a summary the workers' counters
 * are merged as one unwinder would have counted them (census.h).  No
 * lock is taken per sample: only to hand a batch over and back.
 *
 *	p = sp_unwind_par_new(&o, jobs, w, &err);
 *	for each record: sp_unwind_par_record(p, &rec, hdr, &err);
 *	input idle: sp_unwind_par_flush(p);
 *	sp_unwind_par_finish(p, &err); sp_unwind_par_free(p);
 *
 * Core layer: no printing.
 */
#ifndef SP_UNWIND_PARALLEL_H
#define SP_UNWIND_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

#include "stream/stream.h"
#include "unwind/stage.h"
#include "util/error.h"

struct sp_unwind_par;

/* Called on the writer thread after the stage took each record, in order. */
typedef void sp_unwind_par_taken_fn(void *arg, const struct sp_record *rec,
				    const struct sp_unwind_stage *s);

/*
 * A driver of jobs (at least 1) workers over o, writing to w (not
 * owned; only the writer thread uses it until sp_unwind_par_finish()
 * returns).  o's engine must be NULL: the workers step with unwind.c.
 * taken (may be NULL) is called with arg after each record.  NULL
 * with the reason in *err when memory or threads run out.
 */
struct sp_unwind_par *sp_unwind_par_new(const struct sp_unwind_stage_options *o, unsigned jobs,
					struct sp_writer *w, sp_unwind_par_taken_fn *taken,
					void *arg, struct sp_error *err);

/*
 * Hands over the next record of a raw stream (hdr is the segment's
 * header, as sp_reader_header() gives it).  The record is copied: rec
 * may change after the call.  Returns 0; 1 when the writer stopped at a
 * failed write (the caller stops reading; the error is the writer's);
 * -1 with the reason in *err when the stage refused a record written
 * before (see sp_unwind_stage_record()) or memory ran out.
 */
int sp_unwind_par_record(struct sp_unwind_par *p, const struct sp_record *rec,
			 const struct sp_header *hdr, struct sp_error *err);

/* The input is idle: the records handed over so far go out now. */
void sp_unwind_par_flush(struct sp_unwind_par *p);

/*
 * Waits until every record handed over is written (or the writer
 * stopped), and ends the threads.  Returns 0, or -1 with the reason in
 * *err as sp_unwind_par_record() does.
 */
int sp_unwind_par_finish(struct sp_unwind_par *p, struct sp_error *err);

/* The writer's stage, for its totals; valid after sp_unwind_par_finish(). */
const struct sp_unwind_stage *sp_unwind_par_stage(const struct sp_unwind_par *p);

/* Ends the threads if needed and frees everything. */
void sp_unwind_par_free(struct sp_unwind_par *p);

#endif
