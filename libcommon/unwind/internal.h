/* SPDX-License-Identifier: MIT
 * What the unwinder's files share and nobody else sees: the state hung
 * on a module (its ELF file, its CFI and the cache of compiled rules),
 * the compiled rule, and the stack copy frames are read from.
 */
#ifndef SP_UNWIND_INTERNAL_H
#define SP_UNWIND_INTERNAL_H

#include <elfutils/libdw.h>
#include <string.h>

#include "util/hashmap.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"

struct sp_unwinder {
	struct sp_unwind_options o;
	struct sp_unwind_regmap regs;
	const struct sp_unwind_arch *arch;
	struct sp_unwind_stats st;
	struct sp_u64map cpython;	/* pid -> non-NULL: a CPython process */
	char *denied;			/* see sp_unwinder_denied() */
	uint32_t denied_pid;
	int denied_err;
	uint64_t last_used;		/* see sp_unwinder_copy_used() */
	struct frame_memo *memo;	/* SP_MEMO_SLOTS of them; NULL: none */
	struct ra_memo *ra_memo;	/* SP_RA_MEMO_SLOTS of them; NULL: none */
	struct sp_walk_memo *spare;	/* sp_unwind_thread()'s memo for the next walk */
};

/*
 * What a frame of a module found, kept by its pc: the mapping, the
 * module's state, the frame's module-relative address and its rule.
 * Valid while the address spaces keep their generation (a mapping moves
 * or goes only when a record is applied); a frame of the vDSO, whose
 * state may change, or of JIT code is not kept.
 */
struct frame_memo {
	uint64_t pc, gen, rel;
	uint32_t pid;
	bool retaddr;
	const struct sp_mapping *m;
	struct modstate *ms;
	const struct rule *r;
};

#define SP_MEMO_SLOTS 2048	/* a power of two */

/*
 * What a candidate return address in a module's file (not the vDSO's)
 * lands in, and whether a direct call precedes it, kept by the address
 * while the address spaces keep their generation: a frame without CFI
 * (CPython's trampolines, JIT code) asks both of the same few addresses
 * at every sample.
 */
struct ra_memo {
	uint64_t pc, gen;
	uint32_t pid;
	int8_t kind;		/* enum ra_kind (unwind.c); -1: not known */
	bool by_rule;		/* a rule was looked up to find kind */
	int8_t direct;		/* whether a direct call precedes pc; -1: not known */
};

#define SP_RA_MEMO_SLOTS 1024	/* a power of two */

/* How a rule recovers one register of the caller. */
enum { R_UNDEF, R_SAME, R_OFFSET, R_VAL_OFFSET, R_EXPR };

/* A DWARF expression a rule keeps: it lives as long as the CFI, or in owned. */
struct rule_expr {
	const Dwarf_Op *ops;
	size_t nops;
};

/*
 * libdw's answer for one address, compiled: CFA = register + offset (or
 * an expression), and for each DWARF column of the architecture a kind
 * and an offset from the CFA.
 */
struct rule {
	bool none;		/* no CFI covers the address */
	bool signal;		/* a signal frame: its caller's pc is exact */
	bool cfa_simple;
	uint8_t cfa_reg;
	int64_t cfa_off;
	struct rule_expr cfa;
	uint8_t kind[SP_ARCH_MAX_REGS];
	int64_t off[SP_ARCH_MAX_REGS];
	/* The columns of kind R_SAME, a bit each: apply() copies them together. */
	uint32_t same;
	/* The columns of the other kinds but R_UNDEF, in order: all apply() visits. */
	uint8_t moved[SP_ARCH_MAX_REGS];
	uint8_t nmoved;
	struct rule_expr *expr;	/* per column, NULL when no column has R_EXPR */
	Dwarf_Frame *frame;	/* kept while cfa.ops point into it */
	Dwarf_Op *owned;	/* copies of short expressions */
};

struct load {
	uint64_t off, vaddr, filesz;
};

enum { M_OK, M_MISSING, M_MISMATCH };

struct modstate {
	int state;
	int fd;
	void *image;		/* a copy of the vDSO's image: the stream's or this process's */
	const void *image_tried;	/* the stream's image of the vDSO last tried */
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh, *dbg;
	struct load *loads;
	size_t nloads;
	struct sp_u64map rules;	/* looked-up address -> struct rule */
	uint64_t entry;		/* the ELF entry point, when has_entry */
	bool entry_read, has_entry;
	struct sp_gopclntab *gotab;	/* a Go module's table, once go_read */
	bool go_read;
	struct sp_u64map goframes;	/* looked-up address -> what the table says, coded */
};

/* The stack copy: it covers [base, base + len). */
struct stackcopy {
	const unsigned char *stack;
	uint64_t base, len;
	bool full;
	uint64_t *low;		/* lowered to each address read, when not NULL */
};

/* Reads 8 bytes of the copy; returns 0 or the end reason. */
static inline int sp_stack_read8(const struct stackcopy *c, uint64_t addr, uint64_t *v)
{
	if (c->low && addr < *c->low)
		*c->low = addr;
	if (addr < c->base)
		return SP_END_BAD_CFA;
	if (addr - c->base > c->len || c->len - (addr - c->base) < 8)
		return c->full ? SP_END_TRUNCATED : SP_END_OUTSIDE_COPY;
	memcpy(v, c->stack + (addr - c->base), 8);
	return 0;
}


/* module.c: opens the state of an object on first use (NULL: out of memory). */
struct modstate *sp_unwind_module_open(struct sp_unwinder *u, struct sp_object *obj);

/*
 * The state of an object: a pointer once it is open, as it is for every
 * frame but the first of a module.  A vDSO not loaded yet is asked again,
 * as its image may have come since.
 */
static inline struct modstate *sp_unwind_module(struct sp_unwinder *u, struct sp_object *obj)
{
	struct modstate *ms = obj->priv;
	if (ms && (!obj->vdso || ms->state == M_OK))
		return ms;
	return sp_unwind_module_open(u, obj);
}

/*
 * Fills the frame at pc (its address, module, rel and flags) and sets
 * *mp to its mapping and *msp to its module's opened state (NULL for JIT
 * code).  Returns 0, or the end reason when no walk goes on from this
 * frame: no mapping, no stack copy, a module missing or mismatched.  Both
 * engines begin each frame with it; inline, as it runs for every frame.
 */
static inline int sp_unwind_frame_begin(struct sp_unwinder *u, struct sp_addrspaces *a,
					uint32_t pid, uint64_t pc, bool retaddr, size_t len,
					struct sp_uframe *f, const struct sp_mapping **mp,
					struct modstate **msp)
{
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
	*mp = m;
	*msp = NULL;
	f->addr = pc;
	f->flags = retaddr ? SP_FRAME_RETADDR : 0;
	if (!m) {
		f->obj = NULL;
		f->rel = pc;
		return SP_END_NO_MAPPING;
	}
	f->obj = m->obj;
	f->rel = sp_unwind_rel(u, m, pc);
	if (m->obj->anon)
		f->flags |= SP_FRAME_JIT;
	if (len == 0)
		return SP_END_NO_USER_STACK;
	if (m->obj->anon)
		return 0;
	struct modstate *ms = sp_unwind_module(u, m->obj);
	if (!ms || ms->state == M_MISSING)
		return SP_END_MISSING_MODULE;
	if (ms->state == M_MISMATCH)
		return SP_END_BUILD_ID_MISMATCH;
	*msp = ms;
	return 0;
}

/*
 * cfi.c: compiles and caches the rule for a module-relative address not
 * in the cache yet.  Returns NULL when memory runs out.
 */
const struct rule *sp_unwind_rule_miss(struct sp_unwinder *u, struct modstate *ms, uint64_t addr);

/* The rule for a module-relative address: a table lookup once it is cached. */
static inline const struct rule *sp_unwind_rule(struct sp_unwinder *u, struct modstate *ms,
						uint64_t addr)
{
	const struct rule *r = sp_u64map_get(&ms->rules, addr);
	if (r) {
		u->st.cache_hits++;
		return r;
	}
	return sp_unwind_rule_miss(u, ms, addr);
}

/*
 * jitcfi.c: unwinding information of JIT code from the jitdump records
 * of a stream.  sp_jitcfi_note() takes a jitdump record (creating *jc on
 * the first); 0, or -1 when memory runs out.  sp_unwind_jit_rule() is the
 * compiled rule for addr in pid's JIT code, or NULL when no unwinding-info
 * record covers it (then the frame-pointer walk is the way on).  The rule
 * stays valid until the address spaces are reset.
 */
struct sp_jitcfi;
int sp_jitcfi_note(struct sp_jitcfi **jc, const msgpack_object *rec);
void sp_jitcfi_free(struct sp_jitcfi *jc);
const struct rule *sp_unwind_jit_rule(struct sp_unwinder *u, struct sp_addrspaces *a,
				      uint32_t pid, uint64_t addr);

/* jitcfi.c: fn with each cached rule's process, code start and address (census.h). */
void sp_jitcfi_rules(const struct sp_jitcfi *jc,
		     void (*fn)(void *arg, uint64_t pid, uint64_t start, uint64_t addr), void *arg);

/* addrspace.c: the address spaces' JIT unwinding information; NULL: none yet. */
struct sp_jitcfi *sp_addrspaces_jitcfi(struct sp_addrspaces *a);

/* cfi.c: frees a module's rules. */
void sp_unwind_rules_free(struct modstate *ms);

/*
 * cfi.c: evaluates a DWARF expression over registers r and the copy;
 * *is_value is set when it ends with DW_OP_stack_value.  Returns 0 or an
 * end reason.
 */
int sp_unwind_eval(const struct rule_expr *e, const struct sp_arch_regs *r,
		   const struct stackcopy *c, unsigned nregs, uint64_t cfa, bool have_cfa,
		   uint64_t *out, bool *is_value);

#endif
