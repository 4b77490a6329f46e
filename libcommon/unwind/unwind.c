/*
 * Offline DWARF CFI unwinding (see unwind.h): the frame loop, the
 * application of a compiled rule (cfi.c) to one frame's registers, and
 * the fallbacks where no CFI covers an address (a frame-pointer step and
 * a scan for a return address).  What differs between architectures
 * comes from the backend (arch.h); the modules' files from module.c.
 */
#include <stdlib.h>

#include "unwind/internal.h"

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
	elf_version(EV_CURRENT);
	return u;
}

void sp_unwinder_free(struct sp_unwinder *u)
{
	free(u);
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
 * Returns 0 or an end reason.
 */
static int apply(const struct sp_unwind_arch *arch, const struct rule *r,
		 const struct stackcopy *c, const struct sp_arch_regs *s,
		 struct sp_arch_regs *next, bool *outermost)
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
	uint32_t valid = 0;
	*outermost = r->kind[arch->ra] == R_UNDEF;
	for (unsigned reg = 0; reg < arch->nregs; reg++) {
		uint64_t v;
		switch (r->kind[reg]) {
		case R_UNDEF:
			continue;
		case R_SAME:
			if (!(s->valid & (1u << reg)))
				continue;
			v = s->reg[reg];
			break;
		case R_OFFSET:
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

/* Whether pc can be a return address: in a file mapping with CFI for pc - 1. */
static bool plausible_ra(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			 uint64_t pc)
{
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
	if (!m || m->obj->anon)
		return false;
	struct modstate *ms = sp_unwind_module(u, m->obj);
	if (!ms || ms->state != M_OK)
		return false;
	const struct rule *r = sp_unwind_rule(u, ms, sp_unwind_rel(u, m, pc) - 1);
	return r && !r->none;
}

/*
 * One frame-pointer step through the frame record at the frame pointer.
 * The frame pointer of the frame being left lies a little above its
 * stack pointer; one far away belongs to no frame of this code.
 */
static int fp_step(const struct sp_unwind_arch *arch, const struct stackcopy *c,
		   const struct sp_arch_regs *s, struct sp_arch_regs *next)
{
	uint64_t fp = s->reg[arch->fp], sp = s->reg[arch->sp], nfp, ra;
	int rc;
	if (!(s->valid & (1u << arch->fp)) || fp < sp || (fp & 7) || fp - sp > 65536)
		return SP_END_NO_CFI;
	if ((rc = sp_stack_read8(c, fp + arch->fp_prev, &nfp)) != 0 ||
	    (rc = sp_stack_read8(c, fp + arch->fp_ra, &ra)) != 0)
		return rc == SP_END_BAD_CFA ? SP_END_NO_CFI : rc;
	next->reg[arch->fp] = nfp;
	next->reg[arch->sp] = fp + arch->fp_cfa;
	next->reg[arch->ra] = ra;
	next->valid = (1u << arch->fp) | (1u << arch->sp) | (1u << arch->ra);
	return 0;
}

/*
 * For code with neither CFI nor a frame pointer, such as CPython 3.12's
 * perf trampolines ("sub $8, %rsp; call *%rcx; add $8, %rsp; ret"): the
 * first of the next few stack words that is a plausible return address.
 * The code in between is taken to save no registers.
 */
static int scan_step(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
		     const struct stackcopy *c, const struct sp_arch_regs *s,
		     struct sp_arch_regs *next)
{
	const struct sp_unwind_arch *arch = u->arch;
	uint64_t sp = s->reg[arch->sp];
	for (int i = 0; i < 16; i++) {
		uint64_t v;
		int rc = sp_stack_read8(c, sp + 8 * (uint64_t)i, &v);
		if (rc)
			return rc == SP_END_BAD_CFA ? SP_END_NO_CFI : rc;
		if (v && plausible_ra(u, a, pid, v & arch->ra_mask)) {
			next->valid = s->valid;
			memcpy(next->reg, s->reg, arch->nregs * sizeof(*s->reg));
			next->reg[arch->sp] = sp + 8 * (uint64_t)i + 8;
			next->reg[arch->ra] = v;
			return 0;
		}
	}
	return SP_END_NO_CFI;
}

enum sp_unwind_end sp_unwind(struct sp_unwinder *u, struct sp_addrspaces *a,
			     uint32_t pid, const uint64_t *regs, size_t nregs,
			     const unsigned char *stack, size_t len, bool full,
			     struct sp_uframe *out, size_t max, size_t *n)
{
	const struct sp_unwind_arch *arch = u->arch;
	struct sp_arch_regs frames[2], *s = &frames[0], *next = &frames[1];
	*n = 0;
	if (sp_unwind_regmap_load(&u->regs, regs, nregs, s) < 0)
		return SP_END_BAD_CFA;
	struct stackcopy c = { stack, s->reg[arch->sp], len, full };
	if (max > u->o.max_depth)
		max = u->o.max_depth;
	bool retaddr = false;
	for (;;) {
		uint64_t pc = s->pc;
		if (*n >= max)
			return SP_END_MAX_DEPTH;
		const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
		struct sp_uframe *f = &out[(*n)++];
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

		bool outermost = false;
		int rc;
		const struct rule *r = NULL;
		if (!m->obj->anon) {
			struct modstate *ms = sp_unwind_module(u, m->obj);
			if (!ms || ms->state == M_MISSING)
				return SP_END_MISSING_MODULE;
			if (ms->state == M_MISMATCH)
				return SP_END_BUILD_ID_MISMATCH;
			r = sp_unwind_rule(u, ms, f->rel - (retaddr ? 1 : 0));
		}
		if (r && !r->none) {
			rc = apply(arch, r, &c, s, next, &outermost);
			if (rc)
				return (enum sp_unwind_end)rc;
			if (outermost)
				return SP_END_COMPLETE;
			retaddr = !r->signal;
		} else {
			if (!u->o.fp_fallback)
				return SP_END_NO_CFI;
			rc = fp_step(arch, &c, s, next);
			if (rc == 0 && plausible_ra(u, a, pid, next->reg[arch->ra] & arch->ra_mask)) {
				u->st.fp_frames++;
			} else if ((rc = scan_step(u, a, pid, &c, s, next)) == 0) {
				u->st.scan_frames++;
			} else {
				return (enum sp_unwind_end)rc;
			}
			retaddr = true;
		}
		next->pc = next->reg[arch->ra] & arch->ra_mask;
		if (!(next->valid & (1u << arch->ra)) || next->pc == 0)
			return SP_END_COMPLETE;
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
