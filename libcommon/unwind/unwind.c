/* SPDX-License-Identifier: MIT
 * Offline DWARF CFI unwinding (see unwind.h): the frame loop, the
 * application of a compiled rule (cfi.c) to one frame's registers, and
 * the fallbacks where no CFI covers an address (a frame-pointer step and
 * a scan for a return address).  What differs between architectures
 * comes from the backend (arch.h); the modules' files from module.c.
 */
#include <gelf.h>
#include <stdlib.h>

#include "unwind/gopclntab.h"
#include "unwind/internal.h"
#include "util/alloc.h"
#include "util/buildid.h"

struct sp_unwinder *sp_unwinder_new(const struct sp_unwind_options *o)
{
	struct sp_unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->o = *o;
	if (!u->o.max_depth)
		u->o.max_depth = 512;
	if (o->regs)
		u->regs = *o->regs;
	else
		sp_unwind_regmap_native(&u->regs, &sp_arch_x86_64);
	u->o.regs = NULL;
	u->arch = u->regs.arch;
	sp_u64map_init(&u->cpython);
	/* Without it every frame is looked up: slower, not wrong. */
	u->memo = calloc(SP_MEMO_SLOTS, sizeof(*u->memo));
	u->ra_memo = calloc(SP_RA_MEMO_SLOTS, sizeof(*u->ra_memo));
	sp_libelf_init();
	return u;
}

void sp_unwinder_free(struct sp_unwinder *u)
{
	if (!u)
		return;
	sp_u64map_release(&u->cpython, NULL);
	free(u->memo);
	free(u->ra_memo);
	sp_walk_memo_free(u->spare);
	free(u->denied);
	free(u);
}

const char *sp_unwinder_denied(const struct sp_unwinder *u, uint32_t *pid, int *err)
{
	*pid = u->denied_pid;
	*err = u->denied_err;
	return u->denied;
}

int sp_unwinder_set_cpython(struct sp_unwinder *u, uint32_t pid, bool cpython)
{
	if (!cpython) {
		sp_u64map_remove(&u->cpython, pid);
		return 0;
	}
	return sp_u64map_put(&u->cpython, pid, u) < 0 ? -1 : 0;
}

void sp_unwinder_stats(const struct sp_unwinder *u, struct sp_unwind_stats *s)
{
	*s = u->st;
}

const struct sp_unwind_arch *sp_unwinder_arch(const struct sp_unwinder *u)
{
	return u->arch;
}

/*
 * Applies a rule to the registers s of a frame: the caller's into next.
 * Returns 0 or an end reason.  The columns of R_OFFSET registers whose
 * slot lies below the stack pointer, whose value then depends on s's,
 * are added to *kept.
 */
static inline __attribute__((always_inline)) int
apply(const struct sp_unwind_arch *arch, const struct rule *r, const struct stackcopy *c,
      const struct sp_arch_regs *s, struct sp_arch_regs *next, bool *outermost, uint32_t *kept)
{
	uint64_t cfa;
	bool isv;
	int rc;
	if (r->cfa_simple) {
		if (r->cfa_reg >= arch->nregs || !(s->valid & (1u << r->cfa_reg)))
			return SP_END_BAD_CFA;
		cfa = s->reg[r->cfa_reg] + (uint64_t)r->cfa_off;
	} else if (r->cfa.nops) {
		if ((rc = sp_unwind_eval(&r->cfa, s, c, arch->nregs, 0, false, &cfa, &isv)) != 0)
			return rc;
	} else {
		return SP_END_BAD_CFA;
	}
	/*
	 * Registers the callee kept hold the same values: all of them are
	 * copied (a column not valid holds nothing anyone reads).
	 */
	if (arch->nregs <= SP_ARCH_FEW_REGS)
		memcpy(next->reg, s->reg, SP_ARCH_FEW_REGS * sizeof(*next->reg));
	else
		memcpy(next->reg, s->reg, sizeof(next->reg));
	uint32_t valid = s->valid & r->same;
	*outermost = r->kind[arch->ra] == R_UNDEF;
	/* Where the callee's stack pointer is known, slots below it were popped. */
	uint64_t sp = s->valid & (1u << arch->sp) ? s->reg[arch->sp] : 0;
	for (unsigned i = 0; i < r->nmoved; i++) {
		unsigned reg = r->moved[i];
		uint64_t v;
		switch (r->kind[reg]) {
		case R_OFFSET:
			/*
			 * In an epilogue GCC's CFI often still says a register
			 * is saved at its slot after the pop that restored it:
			 * a slot below the stack pointer was popped, and the
			 * register holds what the slot held.  (ld.so's
			 * _dl_lookup_symbol_x sampled between its pops lost
			 * rbp so, and its caller's CFA with it.)
			 */
			if (cfa + (uint64_t)r->off[reg] < sp) {
				*kept |= 1u << reg;
				if ((s->valid & (1u << reg)) && reg != arch->ra) {
					v = s->reg[reg];
					break;
				}
			}
			if ((rc = sp_stack_read8(c, cfa + (uint64_t)r->off[reg], &v)) != 0) {
				if (reg == arch->ra)
					return rc;
				continue;	/* a callee-saved register lost, not fatal */
			}
			break;
		case R_VAL_OFFSET:
			v = cfa + (uint64_t)r->off[reg];
			break;
		default:
			if ((rc = sp_unwind_eval(&r->expr[reg], s, c, arch->nregs, cfa, true, &v,
						 &isv)) != 0 ||
			    (!isv && (rc = sp_stack_read8(c, v, &v)) != 0)) {
				if (reg == arch->ra)
					return rc;
				continue;
			}
			break;
		}
		next->reg[reg] = v;
		valid |= 1u << reg;
	}
	/* The CFA is the caller's stack pointer. */
	next->reg[arch->sp] = cfa;
	next->valid = valid | 1u << arch->sp;
	return 0;
}

/* How far a return address may lie from what it is checked against. */
enum ra_kind {
	RA_NONE,	/* in no mapping, or in a file that cannot be read */
	RA_CFI,		/* in a module, with CFI for the calling instruction */
	RA_CODE,	/* in JIT memory, or in a module without CFI there */
};

/*
 * What a candidate return address lands in.  Code with CFI can be
 * trusted most: a stale word on the stack rarely points just after a
 * call in it.  JIT code and the builtins of a runtime have no CFI, and
 * are only believed when a frame record led to them.
 */
/*
 * The memo slot of pc in the address spaces as they are (NULL: none);
 * *fresh when it holds another address, which it now holds with nothing
 * known.
 */
static struct ra_memo *ra_slot(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			       uint64_t pc)
{
	if (!u->ra_memo)
		return NULL;
	uint64_t gen = sp_addrspaces_gen(a);
	struct ra_memo *rm = &u->ra_memo[(pc ^ pc >> 10) & (SP_RA_MEMO_SLOTS - 1)];
	if (rm->pc != pc || rm->gen != gen || rm->pid != pid)
		*rm = (struct ra_memo){ pc, gen, pid, -1, false, -1 };
	return rm;
}

static enum ra_kind ra_kind_of(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			       uint64_t pc, bool *keep, bool *by_rule)
{
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
	*keep = false;
	*by_rule = false;
	if (!m || pc == 0)
		return RA_NONE;
	if (m->obj->anon)
		return RA_CODE;
	struct modstate *ms = sp_unwind_module(u, m->obj);
	if (!ms || ms->state != M_OK)
		return RA_NONE;
	const struct rule *r = sp_unwind_rule(u, ms, sp_unwind_rel(u, m, pc) - 1);
	/* Kept where the next ask would find the same: a module's file, its rule cached. */
	*keep = r && !m->obj->vdso;
	*by_rule = true;
	return r && !r->none ? RA_CFI : RA_CODE;
}

static enum ra_kind ra_kind(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			    uint64_t pc)
{
	struct ra_memo *rm = ra_slot(u, a, pid, pc);
	if (rm && rm->kind >= 0) {
		/* The rule cache's hit counted, as the lookup would have. */
		u->st.cache_hits += rm->by_rule;
		return (enum ra_kind)rm->kind;
	}
	bool keep, by_rule;
	enum ra_kind k = ra_kind_of(u, a, pid, pc, &keep, &by_rule);
	if (rm && keep) {
		rm->kind = (int8_t)k;
		rm->by_rule = by_rule;
	}
	return k;
}

/*
 * Whether the frame a frame-pointer step led to, at a return address
 * into code with CFI, unwinds one step further by its CFI to a caller in
 * some code (or is the outermost frame).  Inside JIT code that does not
 * keep frame pointers, the register may point at stale frame records
 * left in the frame's slots by earlier calls; their return addresses are
 * real but not this stack's, and their CFI then gives an impossible
 * caller.
 */
static bool cfi_continues(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			  const struct stackcopy *c, struct sp_arch_regs *s)
{
	const struct sp_unwind_arch *arch = u->arch;
	uint64_t pc = s->reg[arch->ra] & arch->ra_mask;
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
	struct modstate *ms = m && !m->obj->anon ? sp_unwind_module(u, m->obj) : NULL;
	if (!ms || ms->state != M_OK)
		return false;
	const struct rule *r = sp_unwind_rule(u, ms, sp_unwind_rel(u, m, pc) - 1);
	struct sp_arch_regs next;
	bool outermost = false;
	if (!r || r->none)
		return false;
	s->pc = pc;
	uint32_t kept = 0;
	if (apply(arch, r, c, s, &next, &outermost, &kept) != 0)
		return false;
	if (outermost)
		return true;
	uint64_t npc = next.reg[arch->ra] & arch->ra_mask;
	return next.reg[arch->sp] > s->reg[arch->sp] &&
	       (npc == 0 || ra_kind(u, a, pid, npc) != RA_NONE);
}

/*
 * Whether rel, an instruction without CFI (for a return address, the
 * call before it), lies within the first bytes after the ELF entry point
 * of its module: the first instructions the kernel ran, as in ld.so's
 * _start ("mov %rsp, %rdi; call _dl_start") and _dl_start_user, which
 * calls _dl_init and jumps to the program.  No frame lies above them, so
 * a walk that reaches one is complete.
 */
static bool at_entry(struct modstate *ms, uint64_t rel)
{
	if (!ms->entry_read) {
		GElf_Ehdr eh;
		ms->entry_read = true;
		if (ms->elf && gelf_getehdr(ms->elf, &eh) &&
		    (eh.e_type == ET_DYN || eh.e_type == ET_EXEC)) {
			ms->entry = eh.e_entry;
			ms->has_entry = eh.e_entry != 0;
		}
	}
	return ms->has_entry && rel >= ms->entry && rel - ms->entry < 64;
}

/*
 * One frame-pointer step through the frame record at the frame pointer.
 * The record must lie in the copy, above the stack pointer and aligned;
 * any of these failing means the register is no frame pointer here
 * (SP_END_NO_CFI).  The caller judges the return address it yields.
 */
static int fp_step(const struct sp_unwind_arch *arch, const struct stackcopy *c,
		   const struct sp_arch_regs *s, struct sp_arch_regs *next)
{
	uint64_t fp = s->reg[arch->fp], sp = s->reg[arch->sp], nfp, ra;
	int rc;
	if (!(s->valid & (1u << arch->fp)) || fp < sp || (fp & 7))
		return SP_END_NO_CFI;
	if ((rc = sp_stack_read8(c, fp + arch->fp_prev, &nfp)) != 0 ||
	    (rc = sp_stack_read8(c, fp + arch->fp_ra, &ra)) != 0)
		return rc == SP_END_BAD_CFA || rc == SP_END_OUTSIDE_COPY ? SP_END_NO_CFI : rc;
	next->reg[arch->fp] = nfp;
	next->reg[arch->sp] = fp + arch->fp_cfa;
	next->reg[arch->ra] = ra;
	next->valid = (1u << arch->fp) | (1u << arch->sp) | (1u << arch->ra);
	return 0;
}

/* Whether the instruction before the return address ra is a direct call. */
static bool after_direct_call(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			      uint64_t ra)
{
	struct ra_memo *rm = ra_slot(u, a, pid, ra);
	if (rm && rm->direct >= 0)
		return rm->direct;
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, ra);
	struct modstate *ms = m && !m->obj->anon ? sp_unwind_module(u, m->obj) : NULL;
	size_t size = 0;
	const unsigned char *raw = ms && ms->elf ? (const void *)elf_rawfile(ms->elf, &size) : NULL;
	uint64_t off = ra - m->start + m->pgoff;
	if (!raw || off > size)
		return false;
	size_t n = off < 8 ? off : 8;
	bool direct = u->arch->direct_call(raw + off - n, n);
	/* A module's file: its bytes stay (the vDSO's image may come later). */
	if (rm && !m->obj->vdso)
		rm->direct = direct;
	return direct;
}

/*
 * For code with neither CFI nor a frame pointer, such as CPython 3.12's
 * perf trampolines ("sub $8, %rsp; call *%rcx; add $8, %rsp; ret"): the
 * first of the words [from, to) above the stack pointer that is a return
 * address into code with CFI.  The code in between is taken to save no
 * registers.  In a JIT frame the call must not have been a direct one:
 * native code reaches JIT code through a pointer, and a word that says
 * otherwise is a stale return address of an earlier call.
 */
static int scan_step(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
		     const struct stackcopy *c, const struct sp_arch_regs *s,
		     struct sp_arch_regs *next, int from, int to, bool jit)
{
	const struct sp_unwind_arch *arch = u->arch;
	uint64_t sp = s->reg[arch->sp];
	for (int i = from; i < to; i++) {
		uint64_t v;
		int rc = sp_stack_read8(c, sp + 8 * (uint64_t)i, &v);
		if (rc)
			return rc == SP_END_BAD_CFA ? SP_END_NO_CFI : rc;
		if (v && ra_kind(u, a, pid, v & arch->ra_mask) == RA_CFI &&
		    !(jit && after_direct_call(u, a, pid, v & arch->ra_mask))) {
			next->valid = s->valid;
			memcpy(next->reg, s->reg, arch->nregs * sizeof(*s->reg));
			next->reg[arch->sp] = sp + 8 * (uint64_t)i + 8;
			next->reg[arch->ra] = v;
			return 0;
		}
	}
	return SP_END_NO_CFI;
}

/* A module's Go table, read on first use; NULL: it has none. */
static struct sp_gopclntab *go_table(struct modstate *ms)
{
	if (!ms->go_read && ms->elf) {
		const char *why;
		ms->go_read = true;
		ms->gotab = sp_gopclntab_open(ms->elf, &why);
	}
	return ms->gotab;
}

/* What the Go table says of an address, coded for the cache (never 0). */
#define GO_KNOWN	1u
#define GO_TOP		2u	/* a function where Go's tracebacks stop */
#define GO_DELTA	4u	/* the stack-pointer delta, above the bits */
#define GO_SHIFT	3

/*
 * What a module's Go table says of the address looked up: read once per
 * address, as a walk meets the same few addresses again and again.  0
 * when the module has no Go table.
 */
static uint64_t go_frame(struct modstate *ms, uint64_t rel)
{
	if (!go_table(ms))
		return 0;
	uint64_t v = (uint64_t)(uintptr_t)sp_u64map_get(&ms->goframes, rel);
	if (v)
		return v;
	int64_t d;
	v = GO_KNOWN | (sp_gopclntab_topframe(ms->gotab, rel) ? GO_TOP : 0);
	if (sp_gopclntab_spdelta(ms->gotab, rel, &d) == 1 && d >= 0 && !(d & 7) && d <= (1 << 20))
		v |= GO_DELTA | (uint64_t)d << GO_SHIFT;
	sp_u64map_put(&ms->goframes, rel, (void *)(uintptr_t)v);	/* a cache: a failure costs time */
	return v;
}

/*
 * The innermost frame of Go code without CFI (a program linked with
 * -ldflags=-s -w): a Go leaf function with no locals keeps no frame
 * record, and one interrupted in its prologue or epilogue has none yet,
 * or no more, so the frame pointer still holds its caller's record, and
 * following it would drop the caller.  The stack-pointer delta of the Go
 * table at the pc says where the return address is: unless the frame
 * pointer points at this frame's own record (just below it), the return
 * address is read from there and the frame pointer kept.  Only where a
 * call pushes the return address (x86_64); returns 0 when it stepped, -1
 * when the frame-pointer walk should, or the end reason.
 */
static int go_leaf_step(struct sp_unwinder *u, struct modstate *ms, uint64_t rel,
			const struct stackcopy *c, const struct sp_arch_regs *s,
			struct sp_arch_regs *next)
{
	const struct sp_unwind_arch *arch = u->arch;
	uint64_t g = arch->call_keeps_sp ? 0 : go_frame(ms, rel);
	if (!(g & GO_DELTA))
		return -1;
	int64_t d = (int64_t)(g >> GO_SHIFT);
	uint64_t sp = s->reg[arch->sp], fp = s->reg[arch->fp], ra;
	if ((s->valid & (1u << arch->fp)) && d >= 8 && fp == sp + (uint64_t)d - 8)
		return -1;
	int rc = sp_stack_read8(c, sp + (uint64_t)d, &ra);
	if (rc)
		return rc == SP_END_BAD_CFA ? -1 : rc;
	next->valid = s->valid | (1u << arch->sp) | (1u << arch->ra);
	memcpy(next->reg, s->reg, arch->nregs * sizeof(*s->reg));
	next->reg[arch->sp] = sp + (uint64_t)d + 8;
	next->reg[arch->ra] = ra;
	return 0;
}

/*
 * Steps over a frame whose code has no CFI: JIT code, a runtime's
 * builtins, hand-written assembly.  In order of trust:
 *
 * 1. the frame record at the frame pointer, if it returns into code with
 *    CFI;
 * 2. the frame record, if it returns into JIT code or code without CFI
 *    (a JIT calling a JIT, or a builtin) and links to an older record
 *    higher up the stack, or ends the chain with 0: runtimes that keep
 *    frame pointers (V8 always, the JVM with -XX:+PreserveFramePointer)
 *    chain their frames this way, and the DWARF walk resumes as soon as a
 *    return address lands in code with CFI again;
 * 3. a return address into code with CFI in the first two words at the
 *    stack pointer: a trampoline that pushed nothing (CPython's, so only
 *    in processes that a runtime record says are CPython);
 * 4. for native code only, such a return address further up.  JIT frames
 *    are not scanned: their slots hold stale return addresses of calls
 *    made earlier from deeper frames.
 *
 * Returns 0 or why the walk ends here.
 */
static int nocfi_step(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
		      const struct stackcopy *c, const struct sp_arch_regs *s,
		      struct sp_arch_regs *next, bool jit, bool *by_record)
{
	*by_record = true;
	const struct sp_unwind_arch *arch = u->arch;
	uint64_t fp = s->reg[arch->fp];
	int fprc = fp_step(arch, c, s, next);
	if (fprc == 0) {
		uint64_t nfp = next->reg[arch->fp];
		switch (ra_kind(u, a, pid, next->reg[arch->ra] & arch->ra_mask)) {
		case RA_CFI:
			if (jit && (after_direct_call(u, a, pid, next->reg[arch->ra] & arch->ra_mask) ||
				    !cfi_continues(u, a, pid, c, next)))
				break;
			u->st.fp_frames++;
			return 0;
		case RA_CODE:
			if (nfp == 0 || (nfp > fp && !(nfp & 7))) {
				u->st.fp_frames++;
				return 0;
			}
			break;
		case RA_NONE:
			break;
		}
	}
	*by_record = false;
	int rc = SP_END_NO_CFI;
	if (!jit || sp_u64map_get(&u->cpython, pid))
		rc = scan_step(u, a, pid, c, s, next, 0, jit ? 2 : 16, jit);
	if (rc == 0) {
		u->st.scan_frames++;
		return 0;
	}
	if (fprc == SP_END_TRUNCATED || rc == SP_END_TRUNCATED)
		return SP_END_TRUNCATED;
	if (jit)
		return SP_END_JIT_NO_MAP;
	/* A frame record was read, but it leads nowhere. */
	return fprc == 0 ? SP_END_BAD_FP : SP_END_NO_CFI;
}

/*
 * One step of a walk, as a thread's memo keeps it: the registers it began
 * with, what it read and added to the counters, and its frame.
 */
struct walk_step {
	uint64_t reg[SP_ARCH_FEW_REGS];
	uint64_t pc;
	uint64_t low;		/* the lowest stack address it read */
	uint32_t valid;
	uint32_t lookups, fp, scan;	/* rule lookups, frame-pointer and scan steps */
	bool retaddr;
	const struct rule *r;	/* the rule it applied, or NULL */
	uint32_t kept;		/* R_OFFSET columns it took from the registers (apply()) */
	/* The columns whose values (and validity) the rest of the walk depends on. */
	uint32_t need;
	/* The lowest address the rest of the walk read; 0 when a step of it was not pure. */
	uint64_t tail_low;
	/*
	 * Stepped by the CFI of a module's file, or ended by the mappings:
	 * nothing but the registers, the stack it read, the files and the
	 * address spaces decided it.  A step by frame pointer or scan, by a
	 * DWARF expression, in JIT code or the vDSO (whose image and rules
	 * may come later) is not.
	 */
	bool pure;
	struct sp_uframe f;
};

struct sp_walk_memo {
	struct walk_step *v;	/* the steps of frames first to first + n - 1 */
	size_t first, n, alloc;
	size_t from;		/* the first step whose tail is pure: none before can be taken */
	bool ok;		/* the walk's last steps, taken from since */
	bool open;		/* v[n - 1] is still being stepped */
	bool full;
	uint32_t pid;
	uint64_t gen;		/* the address spaces' generation */
	uint64_t end;		/* the copy's end: its last shared byte's successor */
	uint64_t last_sp;	/* what complete() was given */
	enum sp_unwind_end why;
	uint64_t lookups0, fp0, scan0;	/* the counters as the open step began */
	uint64_t low;		/* the open step's lowest read */
};

/*
 * A walk that reached the thread's entry, where the last frame stepped
 * left the stack pointer at sp: what it needed of the copy goes to *hi.
 * Each step reads below its caller's stack pointer (a step by CFI reads
 * the saved registers and the return address below the CFA, a fallback
 * the frame record or the return address just below where it leaves the
 * stack pointer), and the stack pointer only grows from frame to frame,
 * so the last one bounds every read.  Noted once a walk, not at each
 * read, to keep the walk as fast.
 */
static inline enum sp_unwind_end complete(const struct stackcopy *c, uint64_t sp, uint64_t *hi,
					 struct sp_walk_memo *rec)
{
	if (rec)
		rec->last_sp = sp;
	uint64_t d = sp - c->base;
	*hi = sp < c->base ? 0 : d < c->len ? d : c->len;
	return SP_END_COMPLETE;
}

void sp_walk_memo_free(struct sp_walk_memo *wm)
{
	if (wm)
		free(wm->v);
	free(wm);
}

/* Closes the open step of rec, whose frame is f. */
static void close_step(struct sp_unwinder *u, struct sp_walk_memo *rec, const struct sp_uframe *f)
{
	struct walk_step *st = &rec->v[rec->n - 1];
	st->f = *f;
	st->low = rec->low;
	st->lookups = (uint32_t)(u->st.cache_hits + u->st.cache_misses - rec->lookups0);
	st->fp = (uint32_t)(u->st.fp_frames - rec->fp0);
	st->scan = (uint32_t)(u->st.scan_frames - rec->scan0);
	rec->open = false;
}

/*
 * Opens the step of frame k in rec at registers s (the first kept sets
 * rec->first); false when memory runs out.
 */
static bool open_step(struct sp_unwinder *u, struct sp_walk_memo *rec, const struct sp_uframe *out,
		      size_t k, const struct sp_arch_regs *s, bool retaddr)
{
	if (rec->open)
		close_step(u, rec, &out[k - 1]);
	if (!rec->n)
		rec->first = k;
	if (SP_ALLOC_GROW(rec->v, rec->n + 1, rec->alloc) < 0)
		return false;
	struct walk_step *st = &rec->v[rec->n++];
	memcpy(st->reg, s->reg, sizeof(st->reg));
	st->pc = s->pc;
	st->valid = s->valid;
	st->retaddr = retaddr;
	st->pure = false;
	st->r = NULL;
	st->kept = 0;
	rec->open = true;
	rec->lookups0 = u->st.cache_hits + u->st.cache_misses;
	rec->fp0 = u->st.fp_frames;
	rec->scan0 = u->st.scan_frames;
	rec->low = UINT64_MAX;
	return true;
}

/*
 * Takes the rest of the walk from prev when a step of it began where
 * this walk stands (registers s, frame *n), at the same stack pointer,
 * and it and every later one were pure and read only bytes at or above
 * lo, the first byte shared with prev's copy.  *pj: the first of prev's
 * steps not below this stack pointer, kept from frame to frame.
 */
static bool splice(struct sp_unwinder *u, const struct sp_walk_memo *prev, size_t *pj,
		   const struct sp_arch_regs *s, bool retaddr, uint64_t lo,
		   struct sp_walk_memo *rec, const struct stackcopy *c, struct sp_uframe *out,
		   size_t max, size_t *n, uint64_t *hi, enum sp_unwind_end *why)
{
	unsigned spc = u->arch->sp;
	uint64_t sp = s->reg[spc];
	size_t j = *pj;
	while (j < prev->n && prev->v[j].reg[spc] < sp)
		j++;
	*pj = j;
	for (; j < prev->n && prev->v[j].reg[spc] == sp; j++) {
		const struct walk_step *p = &prev->v[j];
		if (p->pc != s->pc || p->retaddr != retaddr || ((p->valid ^ s->valid) & p->need))
			continue;
		bool same = true;
		for (uint32_t m = s->valid & p->need; m && same; m &= m - 1)
			same = p->reg[__builtin_ctz(m)] == s->reg[__builtin_ctz(m)];
		if (!same)
			continue;
		if (p->tail_low < lo || *n + (prev->n - j) > max)
			return false;
		if (rec && rec->open)
			close_step(u, rec, &out[*n - 1]);
		if (rec && !rec->n)
			rec->first = *n;
		if (rec && SP_ALLOC_GROW(rec->v, rec->n + (prev->n - j), rec->alloc) < 0) {
			rec->ok = false;
			rec = NULL;
		}
		for (size_t k = j; k < prev->n; k++) {
			const struct walk_step *q = &prev->v[k];
			/* Every lookup the step made is cached now: each a hit. */
			u->st.cache_hits += q->lookups;
			u->st.fp_frames += q->fp;
			u->st.scan_frames += q->scan;
			if (rec)
				rec->v[rec->n++] = *q;
			out[(*n)++] = q->f;
		}
		u->st.frames_taken += prev->n - j;
		*why = prev->why;
		if (prev->why == SP_END_COMPLETE)
			complete(c, prev->last_sp, hi, rec);
		return true;
	}
	return false;
}

/*
 * sp_unwind()'s walk; a complete one sets *hi (complete()).  With rec,
 * each step is kept in it; with prev, a thread's previous walk, whose
 * copy shares the bytes from lo to the end of this one's, its steps may
 * be taken (splice()).
 */
static inline __attribute__((always_inline)) enum sp_unwind_end
walk(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid, const uint64_t *regs,
     size_t nregs, const unsigned char *stack, size_t len, bool full, struct sp_uframe *out,
     size_t max, size_t *n, uint64_t *hi, struct sp_walk_memo *rec,
     const struct sp_walk_memo *prev, uint64_t shared)
{
	const struct sp_unwind_arch *arch = u->arch;
	struct sp_arch_regs frames[2], *s = &frames[0], *next = &frames[1];
	*n = 0;
	if (sp_unwind_regmap_load(&u->regs, regs, nregs, s) < 0)
		return SP_END_BAD_CFA;
	struct stackcopy c = { stack, s->reg[arch->sp], len, full, NULL };
	if (max > u->o.max_depth)
		max = u->o.max_depth;
	bool retaddr = false, by_record = false;
	uint64_t gen = sp_addrspaces_gen(a);
	/* The copy's bytes from lo on are those of prev's copy, at the same addresses. */
	uint64_t lo = c.base + len - shared;
	size_t pj = prev ? prev->from : 0;
	if (rec) {
		rec->gen = gen;
		rec->end = c.base + len;
	}
	if (prev && !(prev->ok && prev->from < prev->n && shared && shared <= len &&
		      prev->pid == pid && prev->gen == gen && prev->full == full &&
		      prev->end == c.base + len))
		prev = NULL;
	for (;;) {
		uint64_t pc = s->pc;
		if (*n >= max)
			return SP_END_MAX_DEPTH;
		if (prev && s->reg[arch->sp] >= lo && (s->valid & (1u << arch->sp))) {
			enum sp_unwind_end why;
			if (splice(u, prev, &pj, s, retaddr, lo, rec, &c, out, max, n, hi, &why))
				return why;
		}
		/*
		 * The steps kept: those from where this copy's shared bytes
		 * begin (where the next sample of the thread is likely to
		 * share from too), or every one when it shares none.
		 */
		struct walk_step *st = NULL;
		if (rec && (rec->n || !shared || s->reg[arch->sp] >= lo)) {
			if (open_step(u, rec, out, *n, s, retaddr)) {
				st = &rec->v[rec->n - 1];
				c.low = &rec->low;	/* what the kept steps read */
			} else {
				rec->ok = false;
				rec = NULL;
				c.low = NULL;
			}
		}
		struct sp_uframe *f = &out[(*n)++];
		const struct sp_mapping *m;
		struct modstate *ms;
		const struct rule *r = NULL;
		int rc;
		/*
		 * A frame of a module at a pc met before, in the same
		 * address spaces: what the lookups found then (the rule
		 * cache's hit counted, as the lookup would have).
		 */
		struct frame_memo *fm =
			u->memo ? &u->memo[(pc ^ pc >> 11 ^ retaddr) & (SP_MEMO_SLOTS - 1)] : NULL;
		if (fm && fm->pc == pc && fm->gen == gen && fm->pid == pid &&
		    fm->retaddr == retaddr && len) {
			m = fm->m;
			ms = fm->ms;
			r = fm->r;
			*f = (struct sp_uframe){ .addr = pc, .obj = m->obj, .rel = fm->rel,
						 .flags = retaddr ? SP_FRAME_RETADDR : 0 };
			u->st.cache_hits++;
			if (st)
				st->pure = r && !r->none && r->cfa_simple && !r->expr;
		} else {
			if ((rc = sp_unwind_frame_begin(u, a, pid, pc, retaddr, len, f, &m, &ms))) {
				if (st)
					st->pure = !m || !m->obj->vdso;
				return (enum sp_unwind_end)rc;
			}
			if (ms) {
				r = sp_unwind_rule(u, ms, f->rel - (retaddr ? 1 : 0));
				if (st)
					st->pure = r && !r->none && r->cfa_simple && !r->expr &&
						   ms->state == M_OK && !m->obj->vdso;
				if (fm && r && ms->state == M_OK && !m->obj->vdso)
					*fm = (struct frame_memo){ pc, gen, f->rel, pid, retaddr, m,
								   ms, r };
			} else {
				/* JIT code with a jitdump's unwinding information. */
				r = sp_unwind_jit_rule(u, a, pid, pc - (retaddr ? 1 : 0));
			}
		}

		bool outermost = false;
		if (r && !r->none) {
			uint32_t kept = 0;
			rc = apply(arch, r, &c, s, next, &outermost, &kept);
			if (st) {
				st->r = r;
				st->kept = kept;
			}
			if (rc)
				return (enum sp_unwind_end)rc;
			if (outermost)
				return complete(&c, next->reg[arch->sp], hi, rec);
			retaddr = !r->signal;
			by_record = false;
		} else {
			if (ms && at_entry(ms, f->rel - (retaddr ? 1 : 0)))
				return complete(&c, s->reg[arch->sp], hi, rec);
			if (!u->o.fp_fallback)
				return SP_END_NO_CFI;
			/*
			 * A frame record that saved a frame pointer of 0
			 * was the outermost: the thread's first frame clears
			 * it (glibc's _start, Go's goroutines), and the
			 * frame it returned to is the entry.
			 */
			if (by_record && s->reg[arch->fp] == 0 && (s->valid & (1u << arch->fp)))
				return complete(&c, s->reg[arch->sp], hi, rec);
			/* Where Go's tracebacks end: a goroutine's or thread's first frame. */
			if (ms && (go_frame(ms, f->rel - (retaddr ? 1 : 0)) & GO_TOP))
				return complete(&c, s->reg[arch->sp], hi, rec);
			/* The registers are exact only in the innermost frame. */
			rc = !retaddr && ms ? go_leaf_step(u, ms, f->rel, &c, s, next) : -1;
			if (rc > 0)
				return (enum sp_unwind_end)rc;
			by_record = false;
			if (rc < 0 &&
			    (rc = nocfi_step(u, a, pid, &c, s, next, m->obj->anon, &by_record)) != 0)
				return (enum sp_unwind_end)rc;
			retaddr = true;
		}
		next->pc = next->reg[arch->ra] & arch->ra_mask;
		if (!(next->valid & (1u << arch->ra)) || next->pc == 0)
			return complete(&c, next->reg[arch->sp], hi, rec);
		/* The stack grows down: a caller's frame lies above. */
		if (next->reg[arch->sp] <= s->reg[arch->sp] && !(r && r->signal) &&
		    !(arch->call_keeps_sp && next->reg[arch->sp] == s->reg[arch->sp] &&
		      next->pc != s->pc))
			return SP_END_CYCLE;
		struct sp_arch_regs *t = s;
		s = next;
		next = t;
	}
}

enum sp_unwind_end sp_unwind(struct sp_unwinder *u, struct sp_addrspaces *a,
			     uint32_t pid, const uint64_t *regs, size_t nregs,
			     const unsigned char *stack, size_t len, bool full,
			     struct sp_uframe *out, size_t max, size_t *n)
{
	uint64_t hi = 0;
	enum sp_unwind_end end = walk(u, a, pid, regs, nregs, stack, len, full, out, max, n, &hi,
				      NULL, NULL, 0);
	u->last_used = hi;
	return end;
}

/*
 * The columns each step of rec depends on, from the last back (and the
 * lowest address the steps from it on read, tail_low): those
 * its rule reads (the CFA's register, the stack pointer, the registers
 * apply() kept) and those the steps after it depend on that its rule
 * passes on unchanged (R_SAME), with the return address, which makes
 * the next frame's pc.  After the last step, the return address and stack
 * pointer it leaves decide how the walk ends.
 */
static void find_needs(const struct sp_unwind_arch *arch, struct sp_walk_memo *rec)
{
	uint32_t after = 1u << arch->ra | 1u << arch->sp;
	uint64_t low = UINT64_MAX;
	rec->from = rec->n;
	for (size_t k = rec->n; k-- > 0;) {
		struct walk_step *st = &rec->v[k];
		low = st->pure && st->low < low ? st->low : st->pure ? low : 0;
		st->tail_low = low;
		const struct rule *r = st->r;
		uint32_t need = 1u << arch->sp;
		if (r) {
			/* A CFA register past the columns ends any walk alike (SP_END_BAD_CFA). */
			if (r->cfa_reg < arch->nregs)
				need |= 1u << r->cfa_reg;
			need |= st->kept | (after & r->same);
		} else if (st->pure) {
			need = 0;	/* ended where the mappings say: by its pc alone */
		}
		st->need = need;
		if (low)
			rec->from = k;
		/* The step before leaves this frame's pc in the return-address column. */
		after = need | 1u << arch->ra;
	}
}

enum sp_unwind_end sp_unwind_thread(struct sp_unwinder *u, struct sp_addrspaces *a,
				    uint32_t pid, const uint64_t *regs, size_t nregs,
				    const unsigned char *stack, size_t len, bool full,
				    uint64_t shared, struct sp_walk_memo **wm,
				    struct sp_uframe *out, size_t max, size_t *n)
{
	/* The walk is kept in the spare memo, which then becomes the thread's. */
	if (u->arch->nregs > SP_ARCH_FEW_REGS ||
	    (!u->spare && !(u->spare = calloc(1, sizeof(*u->spare)))) ||
	    (!*wm && !(*wm = calloc(1, sizeof(**wm)))))
		return sp_unwind(u, a, pid, regs, nregs, stack, len, full, out, max, n);
	struct sp_walk_memo *rec = u->spare;
	rec->n = 0;
	rec->ok = true;
	rec->open = false;
	rec->pid = pid;
	rec->full = full;
	uint64_t hi = 0;
	enum sp_unwind_end end = walk(u, a, pid, regs, nregs, stack, len, full, out, max, n, &hi,
				      rec, *wm, shared);
	u->last_used = hi;
	if (rec->open)
		close_step(u, rec, &out[*n - 1]);
	rec->why = end;
	rec->ok = rec->ok && end != SP_END_MAX_DEPTH && (!rec->n || rec->first + rec->n == *n);
	if (rec->ok)
		find_needs(u->arch, rec);
	/* The thread's memo keeps its address (a map holds it): contents swapped. */
	struct sp_walk_memo t = **wm;
	**wm = *rec;
	*rec = t;
	return end;
}

uint64_t sp_unwinder_copy_used(const struct sp_unwinder *u)
{
	return u->last_used;
}

/*
 * Whether the frame at rel (already adjusted for a return address) is the
 * thread's outermost: its CFI leaves the return address undefined (_start,
 * clone3's child), it lies just after its module's entry point, or Go's
 * tracebacks end there.
 */
static bool outermost_frame(struct sp_unwinder *u, struct modstate *ms, uint64_t rel)
{
	const struct rule *r = sp_unwind_rule(u, ms, rel);
	if (r && !r->none && r->kind[u->arch->ra] == R_UNDEF)
		return true;
	if ((!r || r->none) && at_entry(ms, rel))
		return true;
	return (go_frame(ms, rel) & GO_TOP) != 0;
}

enum sp_unwind_end sp_unwind_chain(struct sp_unwinder *u, struct sp_addrspaces *a,
				   uint32_t pid, const uint64_t *ips, size_t nips, bool full,
				   struct sp_uframe *out, size_t max, size_t *n)
{
	*n = 0;
	if (max > u->o.max_depth)
		max = u->o.max_depth;
	const struct sp_mapping *m = NULL;
	struct modstate *ms = NULL;
	int rc = SP_END_BAD_FP;
	for (size_t i = 0; i < nips; i++) {
		uint64_t pc = ips[i] & u->arch->ra_mask;
		if (*n >= max)
			return SP_END_MAX_DEPTH;
		struct sp_uframe f;
		/* A nonzero length: no stack copy is needed to resolve a frame. */
		rc = sp_unwind_frame_begin(u, a, pid, pc, i > 0, 1, &f, &m, &ms);
		/*
		 * A return address in no mapping came from a register that
		 * was no frame pointer: the walk went astray before it.
		 */
		if (rc == SP_END_NO_MAPPING && i > 0)
			return SP_END_BAD_FP;
		out[(*n)++] = f;
		if (rc == SP_END_NO_MAPPING)
			return SP_END_NO_MAPPING;
	}
	if (*n == 0)
		return SP_END_NO_USER_STACK;
	if (full)
		return SP_END_TRUNCATED;
	/* The module of the last frame decides; a missing one cannot tell. */
	if (rc)
		return (enum sp_unwind_end)rc;
	const struct sp_uframe *last = &out[*n - 1];
	uint64_t rel = last->rel - (last->flags & SP_FRAME_RETADDR ? 1 : 0);
	if (!ms)
		return SP_END_JIT_NO_MAP;
	return outermost_frame(u, ms, rel) ? SP_END_COMPLETE : SP_END_BAD_FP;
}
