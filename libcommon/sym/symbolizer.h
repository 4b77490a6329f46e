/* SPDX-License-Identifier: MIT
 * Naming the frames of an unwound stream: a symbolizer follows the
 * stream's segments, modules and processes, interns each distinct frame
 * once per segment, and resolves it from the source its kind calls for:
 * the module's ELF and DWARF files (found by sym/search.h's settings),
 * this process's vDSO in the same boot, a kallsyms file for the kernel,
 * the process's perf map for JIT code.  A frame without a name still
 * gets one that says where it is (module+0xOFFSET).
 *
 *	struct sp_namer *sym = sp_namer_new(&search, warn, arg, &err);
 *	for each record: header -> sp_namer_begin_segment(),
 *	    module -> sp_namer_add_module(), stack -> for each frame
 *	    sp_stack_frame_decode(), sp_namer_intern() and, for a new one,
 *	    sp_namer_resolve(); others -> sp_namer_note().
 */
#ifndef SP_SYM_SYMBOLIZER_H
#define SP_SYM_SYMBOLIZER_H

#include <stdbool.h>
#include <stdint.h>
#include <msgpack.h>

#include "stream/records.h"
#include "stream/stream.h"
#include "sym/elfsym.h"
#include "sym/jitdump.h"
#include "sym/perfmaps.h"
#include "sym/search.h"
#include "util/error.h"

/* Where a name came from: X(enum suffix, the frame record's origin). */
#define SP_SYM_ORIGINS(X) \
	X(SYMTAB, "symtab") \
	X(DYNSYM, "dynsym") \
	X(DEBUGINFO, "debuginfo") \
	X(PERF_MAP, "perf-map") \
	X(JITDUMP, "jitdump") \
	X(KALLSYMS, "kallsyms") \
	X(GOPCLNTAB, "gopclntab") \
	X(FUNCTION_START, "function-start") \
	X(ADDRESS_ONLY, "address-only")

enum sp_sym_origin {
#define SP_X_ORIGIN(e, s) SP_ORIGIN_##e,
	SP_SYM_ORIGINS(SP_X_ORIGIN)
#undef SP_X_ORIGIN
	SP_ORIGIN_COUNT
};

const char *sp_sym_origin_name(enum sp_sym_origin o);

/* A frame of a stack record, as sp-unwind wrote it. */

/* A resolved frame.  Its pointers stay valid until the next resolve. */
struct sp_symframe {
	const char *name;		/* never NULL */
	enum sp_sym_origin origin;
	uint64_t offset;		/* from the symbol's start to the address */
	bool has_offset;		/* a named frame, or an offset that is not 0 */
	bool has_module;
	uint64_t module;
	const char *file;		/* NULL when unknown */
	unsigned line;			/* 0 when unknown */
	const struct sp_inline *inl;	/* innermost first */
	size_t ninl;
	uint32_t flags;			/* SP_SYM_* */
	char buf[512];			/* a made-up name */
};

struct sp_sym_stats {
	uint64_t frames;		/* interned in this segment */
	uint64_t by_origin[SP_ORIGIN_COUNT];
	uint64_t modules_missing, modules_mismatched, debuginfo_modules;
	struct sp_perfmaps_stats perf_maps;
	const char *kallsyms;		/* the kallsyms read, or "none" */
};

struct sp_namer;

/*
 * A symbolizer with the settings s (finished; they must outlive it).
 * warn (may be NULL) hears what a tool may want to show: a perf map
 * refused, kernel frames left unnamed.  A kallsyms file given is read
 * now: NULL with the reason in *err when it is unusable (unless it is
 * the archive's own: then a warning) or memory runs out.
 */
struct sp_namer *sp_namer_new(const struct sp_sym_search *s, sp_sym_warn_fn *warn,
			      void *warn_arg, struct sp_error *err);
void sp_namer_free(struct sp_namer *sym);

/*
 * The end of the stream: what only its end tells (a jitdump cut inside a
 * record) is warned about.  sp_namer_free() does it too; a tool that
 * leaves the namer to the exit calls this.
 */
void sp_namer_end(struct sp_namer *sym);

/* The last error of sym. */
const char *sp_namer_error(const struct sp_namer *sym);

/*
 * A new segment begins with the header hdr: its modules, processes and
 * frame ids are forgotten; whether it was recorded in this boot decides
 * the default kallsyms, the vDSO and trust in modules without an identity.
 */
void sp_namer_begin_segment(struct sp_namer *sym, const msgpack_object *hdr);

/*
 * A module record: an ELF module's file is found and opened now (once
 * per path and identity across segments).  Returns 0, or -1 when memory
 * runs out.
 */
int sp_namer_add_module(struct sp_namer *sym, const struct sp_record *rec);

/* Any other record: what the perf-map rules need.  0, or -1 out of memory. */
int sp_namer_note(struct sp_namer *sym, const struct sp_record *rec);

/*
 * The segment's id of frame f in *id.  Returns 1 when f is new (resolve
 * it and write its record), 0 when it was interned before, -1 when
 * memory runs out.  A JIT frame is new again once its perf map is read
 * again.
 */
int sp_namer_intern(struct sp_namer *sym, const struct sp_stack_frame *f, uint64_t *id);

/*
 * JIT code is often named after its first samples: a JIT writes its
 * jitdump file after the code runs, and buffers it.  So a stack with a
 * JIT frame left unnamed, of a process whose map records announced a
 * jitdump file, is kept (a copy of its frames, at most 2^20 frames in
 * all), and once a jitdump record has brought code loads or moves,
 * sp_namer_next_stale() hands each kept stack back, to be interned
 * and resolved again and its symstack written again under the same id
 * (a stack still unnamed is kept again).  The frames stay valid until
 * the next call.  keep returns 0, or -1 when memory runs out.
 * sp_namer_unnamed() tells whether frame id (of this segment) is JIT
 * code that was left unnamed, for a stack whose frames were interned
 * before.
 */
bool sp_namer_unnamed(const struct sp_namer *sym, uint64_t id);
int sp_namer_keep_stack(struct sp_namer *sym, uint64_t id,
			const struct sp_stack_frame *f, size_t n);
bool sp_namer_next_stale(struct sp_namer *sym, uint64_t *id,
			 const struct sp_stack_frame **f, size_t *n);
/*
 * The generation of process pid's JIT names: it changes whenever its
 * perf map is read again or a jitdump record brings code loads or moves,
 * so a name of its JIT code resolved before may no longer hold.
 */
uint64_t sp_namer_jit_generation(const struct sp_namer *sym, uint32_t pid);

/* Names frame f into *out (see struct sp_symframe) and counts its origin. */
void sp_namer_resolve(struct sp_namer *sym, const struct sp_stack_frame *f,
		      struct sp_symframe *out);

/*
 * Naming split in two, for naming on threads (sym/parallel.h): the
 * lookup of an address in a module's ELF and DWARF files, the costly
 * part, apart from everything that depends on the stream's order.
 * sp_namer_elf_job() tells whether frame f is an ELF module's and fills
 * *q with the lookup it needs (es NULL: the module's file is missing);
 * sp_elf_job_run() runs it, touching nothing but q->es, so on any one
 * thread at a time per es; sp_namer_resolve_job() then names f as
 * sp_namer_resolve() does, from q when f is an ELF module's (q NULL
 * otherwise).  The modules must not change in between (the records of
 * a module or a header come after the names).
 */
struct sp_elf_job {
	struct sp_elfsym *es;
	uint64_t rel;
	unsigned back;			/* 1 for a return address; 0 once run when a trampoline */
	const struct sp_symres *r;	/* the result, valid until es is freed */
};

bool sp_namer_elf_job(struct sp_namer *sym, const struct sp_stack_frame *f,
		      struct sp_elf_job *q);
void sp_elf_job_run(struct sp_elf_job *q);
void sp_namer_resolve_job(struct sp_namer *sym, const struct sp_stack_frame *f,
			  const struct sp_elf_job *q, struct sp_symframe *out);

/*
 * For naming on threads: a module file opened from now on has its DWARF
 * found and read by the first lookup (on the worker that owns the file),
 * not when its module record comes; sp_namer_stats(), called when no
 * worker runs, reads what no lookup did, to count it.
 */
void sp_namer_defer_debuginfo(struct sp_namer *sym);

/* This segment's counters; with deferred DWARF, only while no worker runs. */
void sp_namer_stats(const struct sp_namer *sym, struct sp_sym_stats *st);

#endif
