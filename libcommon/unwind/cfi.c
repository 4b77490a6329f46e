/* SPDX-License-Identifier: MIT
 * Compiled CFI rules and their cache.
 *
 * libdw interprets the CFI of an address once (dwarf_cfi_addrframe); the
 * result is compiled into a small rule (CFA = register + offset, each
 * register undefined, unchanged, saved at CFA + offset, ...) kept in the
 * module's table keyed by the looked-up address.  A CPU-bound program
 * revisits few addresses, so almost every frame after the first samples
 * is a table lookup.  Rules that need a DWARF expression (PLT entries,
 * signal frames) keep the expression, which a small stack machine
 * evaluates.
 */
#include <dwarf.h>
#include <stdlib.h>

#include "unwind/internal.h"

static bool is_breg(const Dwarf_Op *op, uint8_t *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = (uint8_t)(op->atom - DW_OP_breg0);
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx && op->number < 256) {
		*reg = (uint8_t)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

static void free_rule(void *v)
{
	struct rule *r = v;
	free(r->frame);
	free(r->owned);
	free(r->expr);
	free(r);
}

void sp_unwind_rules_free(struct modstate *ms)
{
	sp_u64map_release(&ms->rules, free_rule);
}

/* Keeps an expression of a column; short ones are copied out of mem. */
static bool keep_expr(struct rule *r, const struct sp_unwind_arch *arch, int reg,
		      const Dwarf_Op *mem, const Dwarf_Op *rops, size_t rn, size_t *owned_used)
{
	if (!r->expr && !(r->expr = calloc(arch->nregs, sizeof(*r->expr))))
		return false;
	if (rops == mem) {
		if (!r->owned && !(r->owned = malloc(arch->nregs * 3 * sizeof(Dwarf_Op))))
			return false;
		if (rn > 3)
			return false;
		memcpy(r->owned + *owned_used, mem, rn * sizeof(*mem));
		rops = r->owned + *owned_used;
		*owned_used += rn;
	}
	r->expr[reg] = (struct rule_expr){ rops, rn };	/* else lives as long as the CFI */
	return true;
}

static void compile(struct rule *r, Dwarf_Frame *f, const struct sp_unwind_arch *arch)
{
	Dwarf_Op *ops;
	size_t nops = 0, owned_used = 0;
	bool keep_frame = false;
	dwarf_frame_info(f, NULL, NULL, &r->signal);
	if (dwarf_frame_cfa(f, &ops, &nops) == 0 && nops == 1 &&
	    is_breg(&ops[0], &r->cfa_reg, &r->cfa_off)) {
		r->cfa_simple = true;
	} else if (nops > 0) {
		r->cfa = (struct rule_expr){ ops, nops };
		keep_frame = true;
	}
	for (int reg = 0; reg < (int)arch->nregs; reg++) {
		Dwarf_Op mem[3], *rops = NULL;
		size_t rn = 0;
		if (dwarf_frame_register(f, reg, mem, &rops, &rn) != 0) {
			r->kind[reg] = reg == arch->ra ? R_UNDEF : R_SAME;
			continue;
		}
		if (rn == 0) {
			r->kind[reg] = rops ? R_UNDEF : R_SAME;
			continue;
		}
		bool value = rops[rn - 1].atom == DW_OP_stack_value;
		size_t core = value ? rn - 1 : rn;
		if (core >= 1 && core <= 2 && rops[0].atom == DW_OP_call_frame_cfa &&
		    (core == 1 || rops[1].atom == DW_OP_plus_uconst)) {
			r->kind[reg] = value ? R_VAL_OFFSET : R_OFFSET;
			r->off[reg] = core == 2 ? (int64_t)rops[1].number : 0;
			continue;
		}
		r->kind[reg] = keep_expr(r, arch, reg, mem, rops, rn, &owned_used) ? R_EXPR : R_UNDEF;
	}
	for (unsigned reg = 0; reg < arch->nregs; reg++) {
		if (r->kind[reg] == R_SAME)
			r->same |= 1u << reg;
		else if (r->kind[reg] != R_UNDEF)
			r->moved[r->nmoved++] = (uint8_t)reg;
	}
	if (owned_used == 0) {
		free(r->owned);
		r->owned = NULL;
	}
	if (keep_frame)
		r->frame = f;
	else
		free(f);
}

const struct rule *sp_unwind_rule_miss(struct sp_unwinder *u, struct modstate *ms, uint64_t addr)
{
	u->st.cache_misses++;
	struct rule *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	Dwarf_Frame *f = NULL;
	if (!ms->eh || dwarf_cfi_addrframe(ms->eh, addr, &f) != 0) {
		f = NULL;
		if (ms->dbg && dwarf_cfi_addrframe(ms->dbg, addr, &f) != 0)
			f = NULL;
	}
	if (f)
		compile(r, f, u->arch);
	else
		r->none = true;
	if (sp_u64map_put(&ms->rules, addr, r) < 0) {
		free_rule(r);
		return NULL;
	}
	return r;
}

/* Evaluating DWARF expressions over the stack copy. */

int sp_unwind_eval(const struct rule_expr *e, const struct sp_arch_regs *r,
		   const struct stackcopy *c, unsigned nregs, uint64_t cfa, bool have_cfa,
		   uint64_t *out, bool *is_value)
{
	uint64_t st[16];
	int sp = 0, rc;
	*is_value = false;
#define PUSH(v) do { if (sp == 16) return SP_END_BAD_CFA; st[sp++] = (v); } while (0)
#define NEED(k) do { if (sp < (k)) return SP_END_BAD_CFA; } while (0)
	for (size_t i = 0; i < e->nops; i++) {
		const Dwarf_Op *op = &e->ops[i];
		uint8_t a = op->atom, reg;
		int64_t off;
		uint64_t x, y;
		if (is_breg(op, &reg, &off)) {
			if (reg >= nregs || !(r->valid & (1u << reg)))
				return SP_END_BAD_CFA;
			PUSH(r->reg[reg] + (uint64_t)off);
			continue;
		}
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			PUSH((uint64_t)(a - DW_OP_lit0));
			continue;
		}
		switch (a) {
		case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
		case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts:
			PUSH(op->number);
			break;
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return SP_END_BAD_CFA;
			PUSH(cfa);
			break;
		case DW_OP_dup: NEED(1); x = st[sp - 1]; PUSH(x); break;
		case DW_OP_drop: NEED(1); sp--; break;
		case DW_OP_over: NEED(2); x = st[sp - 2]; PUSH(x); break;
		case DW_OP_swap: NEED(2); x = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = x; break;
		case DW_OP_deref:
			NEED(1);
			if ((rc = sp_stack_read8(c, st[sp - 1], &x)) != 0)
				return rc;
			st[sp - 1] = x;
			break;
		case DW_OP_plus_uconst: NEED(1); st[sp - 1] += op->number; break;
		case DW_OP_neg: NEED(1); st[sp - 1] = -st[sp - 1]; break;
		case DW_OP_not: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
		case DW_OP_stack_value: *is_value = true; break;
		case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and:
		case DW_OP_or: case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
		case DW_OP_eq: case DW_OP_ne: case DW_OP_lt: case DW_OP_gt: case DW_OP_le: case DW_OP_ge:
			NEED(2);
			y = st[--sp];
			x = st[sp - 1];
			switch (a) {
			case DW_OP_plus: x += y; break;
			case DW_OP_minus: x -= y; break;
			case DW_OP_mul: x *= y; break;
			case DW_OP_and: x &= y; break;
			case DW_OP_or: x |= y; break;
			case DW_OP_xor: x ^= y; break;
			case DW_OP_shl: x = y < 64 ? x << y : 0; break;
			case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
			case DW_OP_shra: x = y < 64 ? (uint64_t)((int64_t)x >> y) : 0; break;
			case DW_OP_eq: x = x == y; break;
			case DW_OP_ne: x = x != y; break;
			case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
			case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
			case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
			case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
			}
			st[sp - 1] = x;
			break;
		case DW_OP_nop:
			break;
		default:
			return SP_END_BAD_CFA;
		}
	}
#undef PUSH
#undef NEED
	if (sp < 1)
		return SP_END_BAD_CFA;
	*out = st[sp - 1];
	return 0;
}
