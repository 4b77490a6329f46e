/*
 * Offline unwinding of user stacks: DWARF CFI (.eh_frame and
 * .debug_frame, read with libdw) over a copy of the stack, with a
 * per-module cache of compiled rules so that a frame seen before costs a
 * table lookup, and a frame-pointer walk where no CFI covers an address.
 * Core layer: no printing.
 */
#ifndef SP_UNWIND_H
#define SP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrspace.h"

/* Why a stack ends: 0 for a complete stack, else the marker's code. */
#define SP_UNWIND_ENDS(X) \
	X(COMPLETE, 0, "complete", "the stack reached the thread's entry") \
	X(TRUNCATED, 1, "truncated", "the unwinder ran out of stack copy: raise sp-capture --stack-size") \
	X(NO_CFI, 2, "no_cfi", "no unwind information for the address, and the frame-pointer walk failed") \
	X(MISSING_MODULE, 3, "missing_module", "the module's file was not found") \
	X(BUILD_ID_MISMATCH, 4, "build_id_mismatch", "the module file found has another build-id; it was not used") \
	X(BAD_CFA, 5, "bad_cfa", "the unwind information gave an impossible frame or an unrecoverable register") \
	X(MAX_DEPTH, 6, "max_depth", "the stack reached the frame limit (--max-depth)") \
	X(NO_USER_STACK, 7, "no_user_stack", "the sample has no stack copy: only the interrupted instruction is known") \
	X(OUTSIDE_COPY, 8, "outside_copy", "a read fell outside the stack copy, which did not fill its window") \
	X(CYCLE, 9, "cycle", "the stack pointer did not move up: the walk would loop") \
	X(NO_MAPPING, 10, "no_mapping", "the address lies in no mapping the stream describes")

enum sp_unwind_end {
#define SP_X_END(e, n, s, d) SP_END_##e = n,
	SP_UNWIND_ENDS(SP_X_END)
#undef SP_X_END
	SP_END_COUNT
};

const char *sp_unwind_end_name(enum sp_unwind_end e);
const char *sp_unwind_end_description(enum sp_unwind_end e);

struct sp_unwind_options {
	const char *root;		/* look recorded paths up under it; NULL: / */
	const char *const *module_dirs;	/* build-id layout, tried first */
	size_t nmodule_dirs;
	unsigned max_depth;		/* user frames */
	bool fp_fallback;
	bool this_host;			/* the stream was recorded in this boot */
};

/* One user frame. */
struct sp_uframe {
	uint64_t addr;
	struct sp_object *obj;	/* NULL: in no mapping */
	uint64_t rel;		/* see format/sp-stream.md, FRAMES */
	uint32_t flags;		/* SP_FRAME_* */
};

struct sp_unwind_stats {
	uint64_t cache_hits, cache_misses, fp_frames, scan_frames;
	uint64_t modules_opened, modules_missing, modules_mismatched;
};

struct sp_unwinder;

/* Returns NULL only when memory runs out. */
struct sp_unwinder *sp_unwinder_new(const struct sp_unwind_options *o);
void sp_unwinder_free(struct sp_unwinder *u);

/* Frees the state the unwinder hung on an object (sp_addrspaces_free()). */
void sp_unwinder_free_object(void *priv);

/*
 * Unwinds one user stack.  regs are in the order of the stream's x86_64
 * reg_names (ax bx cx dx si di bp sp ip r8-r15); stack is the full copy,
 * starting at the stack pointer; full says it filled its window.
 * Stores at most max frames in out and their number in *n, the first
 * being the interrupted instruction, and returns why the stack ends.
 */
enum sp_unwind_end sp_unwind(struct sp_unwinder *u, struct sp_addrspaces *a,
			     uint32_t pid, const uint64_t *regs, size_t nregs,
			     const unsigned char *stack, size_t len, bool full,
			     struct sp_uframe *out, size_t max, size_t *n);

/*
 * The module-relative address of addr in a mapping (the ELF virtual
 * address when the file's program headers are known).
 */
uint64_t sp_unwind_rel(struct sp_unwinder *u, const struct sp_mapping *m, uint64_t addr);

void sp_unwinder_stats(const struct sp_unwinder *u, struct sp_unwind_stats *s);

#endif
