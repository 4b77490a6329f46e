/* SPDX-License-Identifier: MIT
 * Architecture backends of the unwinder, in the manner of elfutils'
 * backends/ and perf's arch/: what the DWARF CFI engine (unwind.c) and
 * the frame-pointer walk need to know about one instruction set, as data
 * and one function.  One file per architecture under unwind/arch/.
 *
 * The engine tracks DWARF register columns 0 .. nregs - 1 and the program
 * counter beside them.  The caller's pc is the value a CFI rule recovers
 * for the return-address column ra (on x86_64 a column of its own, 16; on
 * aarch64 the link register x30).  The CFA is the caller's stack pointer.
 * Core layer: no printing.
 */
#ifndef SP_UNWIND_ARCH_H
#define SP_UNWIND_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#include "util/error.h"

#define SP_ARCH_MAX_REGS 32	/* DWARF columns a backend tracks, at most */
/* Columns of the smaller backends (x86_64's 17): a copy of them is inlined. */
#define SP_ARCH_FEW_REGS 17
#define SP_ARCH_MAX_NAMES 40	/* sampled registers a backend reads, at most */

/* The sampled registers of one frame, as the engine keeps them. */
struct sp_arch_regs {
	uint64_t pc;
	uint32_t valid;			/* bit per DWARF column in reg */
	uint64_t reg[SP_ARCH_MAX_REGS];
};

struct sp_unwind_arch {
	const char *name;		/* the header's host.arch: uname(2) machine */
	unsigned nregs;			/* DWARF columns tracked, at most SP_ARCH_MAX_REGS */
	uint8_t sp, fp, ra;		/* stack pointer, frame pointer, return-address column */
	/* The stream's reg_names for this architecture (format/sp-stream.md, REGISTERS). */
	const char *const *reg_names;
	size_t nreg_names;
	/* The bits of a return address that are address (pointer signatures stripped). */
	uint64_t ra_mask;
	/*
	 * The frame record the frame-pointer walk follows: the caller's frame
	 * pointer is at fp + fp_prev, its return address at fp + fp_ra, and
	 * its stack pointer is fp + fp_cfa (exactly on x86_64; at least, on
	 * aarch64, where the record sits at the bottom of the frame).
	 */
	uint8_t fp_prev, fp_ra, fp_cfa;
	/*
	 * Whether a call leaves the stack pointer as it was (the return
	 * address goes to a register): a function that saved nothing then
	 * has its caller's stack pointer, which is no loop as long as the pc
	 * moves.  On x86_64 a call pushes, so a caller's sp is always higher.
	 */
	bool call_keeps_sp;
	/*
	 * Whether sp-unwind unwinds this architecture's streams.  A backend
	 * that has not been checked against recordings of its machine is
	 * kept for its unit tests, and streams of it are refused.
	 */
	bool usable;
	const char *unusable_why;	/* when not usable: the reason, a sentence part */
	/*
	 * Whether the n code bytes at p, which end at a return address, end
	 * with a direct call (one whose target is in the instruction).  A
	 * direct call from a file's code never targets JIT memory, so such a
	 * return address found on a stack does not belong to a JIT frame.
	 */
	bool (*direct_call)(const unsigned char *p, size_t n);
	/*
	 * Loads one sample's registers: v[i] is the value of reg_names[i].
	 * Sets out->pc and the DWARF columns the sample determines.
	 */
	void (*load)(const uint64_t *v, struct sp_arch_regs *out);
};

extern const struct sp_unwind_arch sp_arch_x86_64;
extern const struct sp_unwind_arch sp_arch_aarch64;

/* The backend for an architecture name (host.arch), or NULL. */
const struct sp_unwind_arch *sp_unwind_arch_find(const char *name, size_t len);

/*
 * How a stream's samples hold the registers of a backend: pos[i] is the
 * index in a sample's regs of the backend's reg_names[i], and a sample's
 * regs must have at least need elements.
 */
struct sp_unwind_regmap {
	const struct sp_unwind_arch *arch;
	uint8_t pos[SP_ARCH_MAX_NAMES];
	size_t need;
};

/* The map of a stream that has the backend's own reg_names, in its order. */
void sp_unwind_regmap_native(struct sp_unwind_regmap *m, const struct sp_unwind_arch *arch);

/*
 * Chooses the backend for a segment from its header record: host.arch
 * names it, and the header's reg_names (when present; else the
 * backend's own order) must name every register the backend reads.
 * Returns 0 and fills *m, or -1 with err set (SP_ERR_UNSUPPORTED) to a
 * message such as "cannot unwind riscv64 stacks: no backend for this
 * architecture".
 */
int sp_unwind_regmap_select(struct sp_unwind_regmap *m, const msgpack_object *hdr,
			    struct sp_error *err);

/*
 * Gathers one sample's registers (regs in the stream's order, nregs of
 * them) into out.  Returns 0, or -1 when the sample has too few.
 */
int sp_unwind_regmap_load(const struct sp_unwind_regmap *m, const uint64_t *regs, size_t nregs,
			  struct sp_arch_regs *out);

#endif
