/* SPDX-License-Identifier: MIT
 * Naming on threads (sp-symbolize -j N).  The thread that reads the
 * stream keeps doing everything that depends on its order: interning,
 * perf maps, jitdump, kallsyms, the vDSO, and writing.  Only the lookup
 * of new addresses in modules' ELF and DWARF files is handed to worker
 * threads: each module's files are opened once and belong to one worker
 * (the first to get one of its addresses; libdw's handles are for one
 * thread at a time), so no DWARF is read twice.
 *
 * The records a stack makes (frame records, its symstack) and those
 * passed through after it wait in a window, in input order, until the
 * window's lookups are done.  A full window goes to the workers while
 * the next one fills; it is written when that one is full in turn, or
 * at a drain.  The output is the same, byte for byte, as without threads.
 *
 *	struct sp_sympar *p = sp_sympar_new(sym, w, workers, &err);
 *	for each record: header, module, summary -> sp_sympar_drain(), then
 *	    as without threads; a stack -> sp_sympar_frame() for each frame
 *	    new, sp_sympar_symstack(); others -> sp_sympar_raw();
 *	    then sp_sympar_step().
 *	at the end: sp_sympar_drain(), sp_sympar_free().
 */
#ifndef SP_SYM_PARALLEL_H
#define SP_SYM_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "stream/stream.h"
#include "sym/symbolizer.h"
#include "util/error.h"

struct sp_sympar;

/*
 * workers (at least 1) threads that name for sym and write to w, which
 * must outlive it.  NULL with the reason in *err when memory runs out
 * or a thread cannot be started.
 */
struct sp_sympar *sp_sympar_new(struct sp_namer *sym, struct sp_writer *w,
				unsigned workers, struct sp_error *err);

/* Stops and joins the workers; what was not drained is dropped. */
void sp_sympar_free(struct sp_sympar *p);

/*
 * Frame f, new in the segment with id: its frame record is queued.
 * Returns 1 when its name is left to a worker (an ELF module's frame:
 * *sf is not filled), 0 when it was named now into *sf, -1 when memory
 * runs out.
 */
int sp_sympar_frame(struct sp_sympar *p, uint64_t id, const struct sp_stack_frame *f,
		    struct sp_symframe *sf);

/* A symstack record queued.  0, or -1 when memory runs out. */
int sp_sympar_symstack(struct sp_sympar *p, uint64_t id, const uint64_t *frames, size_t n);

/* A record passed through as it is (its bytes copied).  0, or -1. */
int sp_sympar_raw(struct sp_sympar *p, const void *bytes, size_t n);

/*
 * At a record's end: a full window goes to the workers once the one
 * before it is done and written.  0, or -1 when memory runs out.
 */
int sp_sympar_step(struct sp_sympar *p);

/*
 * Everything queued is named and written: before a record that changes
 * the modules or the segment, at a summary, at the end and when the
 * input is idle.
 */
void sp_sympar_drain(struct sp_sympar *p);

/* The frame record of frame f named sf, with id. */
void sp_symframe_write(struct sp_writer *w, uint64_t id, const struct sp_stack_frame *f,
		       const struct sp_symframe *sf);

#endif
