/* SPDX-License-Identifier: MIT
 * Offline unwinding of user stacks: DWARF CFI (.eh_frame and
 * .debug_frame, read with libdw) over a copy of the stack, with a
 * per-module cache of compiled rules so that a frame seen before costs a
 * table lookup, and a frame-pointer walk where no CFI covers an address.
 * What differs between architectures comes from a backend (arch.h),
 * chosen per stream from its header.  Core layer: no printing.
 */
#ifndef SP_UNWIND_H
#define SP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/vocab.h"
#include "unwind/addrspace.h"
#include "unwind/arch.h"


struct sp_unwind_options {
	const char *root;		/* look recorded paths up under it; NULL: / */
	const char *const *module_dirs;	/* build-id layout, tried first */
	size_t nmodule_dirs;
	unsigned max_depth;		/* user frames */
	bool fp_fallback;
	bool this_host;			/* the stream was recorded in this boot */
	/*
	 * The architecture and how samples hold its registers
	 * (sp_unwind_regmap_select()); copied.  NULL: x86_64, the registers
	 * in its reg_names order.
	 */
	const struct sp_unwind_regmap *regs;
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
	/* Frames sp_unwind_thread() took from a thread's previous walk (not in the stream). */
	uint64_t frames_taken;
};

struct sp_unwinder;

/* Returns NULL only when memory runs out. */
struct sp_unwinder *sp_unwinder_new(const struct sp_unwind_options *o);
void sp_unwinder_free(struct sp_unwinder *u);

/* Frees the state the unwinder hung on an object (sp_addrspaces_free()). */
void sp_unwinder_free_object(void *priv);

/*
 * Tells the unwinder whether a process is a CPython runtime (a runtime
 * record).  CPython's perf trampolines push no frame record, so only in
 * such a process are JIT frames stepped over by a scan for a return
 * address.  Returns 0, or -1 when memory runs out.
 */
int sp_unwinder_set_cpython(struct sp_unwinder *u, uint32_t pid, bool cpython);

/* The backend the unwinder was made for. */
const struct sp_unwind_arch *sp_unwinder_arch(const struct sp_unwinder *u);

/*
 * Unwinds one user stack.  regs are one sample's registers in the order
 * of the stream's reg_names (the options' regs map them; too few end the
 * stack at once as SP_END_BAD_CFA); stack is the full copy, starting at
 * the stack pointer; full says it filled its window.  Stores at most max
 * frames in out and their number in *n, the first being the interrupted
 * instruction, and returns why the stack ends.
 */
enum sp_unwind_end sp_unwind(struct sp_unwinder *u, struct sp_addrspaces *a,
			     uint32_t pid, const uint64_t *regs, size_t nregs,
			     const unsigned char *stack, size_t len, bool full,
			     struct sp_uframe *out, size_t max, size_t *n);

/*
 * A thread's last walk, kept by sp_unwind_thread() so that the thread's
 * next sample can take the frames above the first point where nothing
 * the walk depends on has changed since.  Free with sp_walk_memo_free().
 */
struct sp_walk_memo;
void sp_walk_memo_free(struct sp_walk_memo *wm);

/*
 * sp_unwind() for a sample of one thread: shared is how many bytes at the
 * end of the copy are those of the thread's previous copy (the sample's
 * "ustack_shared", 0 when none or when they could not be had), and *wm
 * the thread's memo (NULL the first time: made here, NULL again when
 * memory runs out).  A frame whose registers equal those of a frame of
 * the previous walk at the same stack pointer, when the previous walk
 * went on from there by CFI alone, reading only shared bytes, in address
 * spaces unchanged since, has the previous walk's frames and end above
 * it.  Frames, end, the unwinder's counters and sp_unwinder_copy_used()
 * are what sp_unwind() gives.
 */
enum sp_unwind_end sp_unwind_thread(struct sp_unwinder *u, struct sp_addrspaces *a,
				    uint32_t pid, const uint64_t *regs, size_t nregs,
				    const unsigned char *stack, size_t len, bool full,
				    uint64_t shared, struct sp_walk_memo **wm,
				    struct sp_uframe *out, size_t max, size_t *n);

/*
 * How many bytes of its stack copy the last sp_unwind() needed, when it
 * ended complete: from the copy's start (the stack pointer) to the last
 * frame's caller's stack pointer, above every word the walk read (at
 * most the copy's length).  A window of that many bytes gives the same
 * stack.  0 after a stack that did not end complete.
 */
uint64_t sp_unwinder_copy_used(const struct sp_unwinder *u);

/*
 * Resolves a user callchain the kernel walked by frame pointers
 * (--call-graph fp): ips[0..nips), leaf first, the interrupted
 * instruction then return addresses, each to a frame as sp_unwind() makes
 * them.  full says the kernel stopped at its limit.  Stores at most max
 * frames in out and their number in *n, and returns why the stack ends:
 * complete when the last frame is the thread's outermost (by its module's
 * CFI or entry point), bad_fp when the chain stopped short of it or
 * left the mappings (that frame is dropped), truncated when full.
 */
enum sp_unwind_end sp_unwind_chain(struct sp_unwinder *u, struct sp_addrspaces *a,
				   uint32_t pid, const uint64_t *ips, size_t nips, bool full,
				   struct sp_uframe *out, size_t max, size_t *n);

/*
 * The module-relative address of addr in a mapping (the ELF virtual
 * address when the file's program headers are known).
 */
uint64_t sp_unwind_rel(struct sp_unwinder *u, const struct sp_mapping *m, uint64_t addr);

void sp_unwinder_stats(const struct sp_unwinder *u, struct sp_unwind_stats *s);

/*
 * The first module whose file a live process's candidates (its
 * map_files entry, its root: a container's files) could not give for want
 * of permission: its path, with the process in *pid and the error in
 * *err; NULL when there was none.  The module counts as missing.
 */
const char *sp_unwinder_denied(const struct sp_unwinder *u, uint32_t *pid, int *err);

#endif
