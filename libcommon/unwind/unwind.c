/*
 * Offline DWARF CFI unwinding (see unwind.h).
 *
 * libdw interprets the CFI of an address once (dwarf_cfi_addrframe); the
 * result is compiled into a small rule (CFA = register + offset, each
 * register undefined, unchanged, saved at CFA + offset, ...) kept in a
 * per-module hash table keyed by the looked-up address.  A CPU-bound
 * program revisits few addresses, so almost every frame after the first
 * samples is a table lookup and a few loads from the stack copy.
 * Rules that need a DWARF expression (PLT entries, signal frames) keep
 * the expression and are evaluated by a small stack machine.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "util/modfile.h"
#include "unwind/unwind.h"

#define NDW 17		/* x86_64 DWARF registers 0-15, and 16 the return address */
#define DW_SP 7
#define DW_BP 6
#define DW_RA 16


enum { R_UNDEF, R_SAME, R_OFFSET, R_VAL_OFFSET, R_EXPR };

struct rule {
	bool none;		/* no CFI covers the address */
	bool signal;		/* a signal frame: its caller's pc is exact */
	bool cfa_simple;
	uint8_t cfa_reg;
	int64_t cfa_off;
	const Dwarf_Op *cfa_ops;
	size_t cfa_nops;
	uint8_t kind[NDW];
	int64_t off[NDW];
	const Dwarf_Op *ops[NDW];
	size_t nops[NDW];
	Dwarf_Frame *frame;	/* kept while cfa_ops point into it */
	Dwarf_Op *owned;	/* copies of short expressions */
};

struct load {
	uint64_t off, vaddr, filesz;
};

enum { M_OK, M_MISSING, M_MISMATCH };

struct modstate {
	int state;
	int fd;
	void *image;		/* the vDSO read from this process */
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh, *dbg;
	struct load *loads;
	size_t nloads;
	struct rule *rules;
	size_t nrules, caprules;
	uint64_t *keys;		/* address + 1; 0 for an empty slot */
	uint32_t *idx;
	size_t capslots;
};

struct sp_unwinder {
	struct sp_unwind_options o;
	struct sp_unwind_stats st;
};

struct sp_unwinder *sp_unwinder_new(const struct sp_unwind_options *o)
{
	struct sp_unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->o = *o;
	if (!u->o.max_depth)
		u->o.max_depth = 512;
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

void sp_unwinder_free_object(void *priv)
{
	struct modstate *ms = priv;
	if (!ms)
		return;
	for (size_t i = 0; i < ms->nrules; i++) {
		free(ms->rules[i].frame);
		free(ms->rules[i].owned);
	}
	free(ms->rules);
	free(ms->keys);
	free(ms->idx);
	free(ms->loads);
	if (ms->dw)
		dwarf_end(ms->dw);
	if (ms->eh)
		dwarf_cfi_end(ms->eh);
	if (ms->elf)
		elf_end(ms->elf);
	if (ms->fd >= 0)
		close(ms->fd);
	free(ms->image);
	free(ms);
}

/* Reads the PT_LOAD headers and the CFI of an opened ELF file. */
static void setup_elf(struct modstate *ms)
{
	size_t nph = 0;
	if (elf_getphdrnum(ms->elf, &nph) == 0 && nph > 0) {
		ms->loads = calloc(nph, sizeof(*ms->loads));
		for (size_t i = 0; ms->loads && i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(ms->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				ms->loads[ms->nloads++] = (struct load){ ph.p_offset, ph.p_vaddr,
									 ph.p_filesz };
		}
	}
	ms->eh = dwarf_getcfi_elf(ms->elf);
	ms->dw = dwarf_begin_elf(ms->elf, DWARF_C_READ, NULL);
	if (ms->dw)
		ms->dbg = dwarf_getcfi(ms->dw);
}

/* This process's vDSO: the same image as the recording's, in this boot. */
static bool load_own_vdso(struct modstate *ms)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return false;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return false;
	size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > size)
			size = ph[i].p_offset + ph[i].p_filesz;
	if (size == 0 || size > (1u << 20))
		return false;
	ms->image = malloc(size);
	if (!ms->image)
		return false;
	memcpy(ms->image, (const void *)base, size);
	ms->elf = elf_memory(ms->image, size);
	return ms->elf != NULL;
}

static struct modstate *resolve(struct sp_unwinder *u, struct sp_object *obj)
{
	if (obj->priv)
		return obj->priv;
	struct modstate *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return NULL;
	ms->fd = -1;
	ms->state = M_MISSING;
	obj->priv = ms;
	if (obj->anon)
		return ms;
	if (obj->vdso) {
		if (u->o.this_host && load_own_vdso(ms)) {
			ms->state = M_OK;
			setup_elf(ms);
		}
		return ms;
	}
	struct sp_modfile_search search = { u->o.module_dirs, u->o.nmodule_dirs, u->o.root,
					    u->o.this_host };
	char found[4096];
	bool mismatch;
	int fd = sp_modfile_open(&search, obj->path, obj->build_id, obj->build_id_len,
				 obj->content_id, found, sizeof(found), &mismatch);
	if (fd >= 0) {
		ms->fd = fd;
		ms->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (ms->elf && elf_kind(ms->elf) == ELF_K_ELF) {
			ms->state = M_OK;
			setup_elf(ms);
			u->st.modules_opened++;
			return ms;
		}
		if (ms->elf)
			elf_end(ms->elf);
		ms->elf = NULL;
		close(fd);
		ms->fd = -1;
	}
	ms->state = mismatch ? M_MISMATCH : M_MISSING;
	if (mismatch)
		u->st.modules_mismatched++;
	else
		u->st.modules_missing++;
	return ms;
}

uint64_t sp_unwind_rel(struct sp_unwinder *u, const struct sp_mapping *m, uint64_t addr)
{
	uint64_t off = addr - m->start + m->pgoff;
	if (m->obj->anon)
		return off;
	struct modstate *ms = resolve(u, m->obj);
	if (ms)
		for (size_t i = 0; i < ms->nloads; i++)
			if (off >= ms->loads[i].off && off - ms->loads[i].off < ms->loads[i].filesz)
				return off - ms->loads[i].off + ms->loads[i].vaddr;
	return off;
}

/* Compiling libdw's view of a frame into a rule. */

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

static void compile(struct rule *r, Dwarf_Frame *f)
{
	Dwarf_Op *ops;
	size_t nops = 0;
	bool keep_frame = false;
	memset(r, 0, sizeof(*r));
	dwarf_frame_info(f, NULL, NULL, &r->signal);
	if (dwarf_frame_cfa(f, &ops, &nops) == 0 && nops == 1 &&
	    is_breg(&ops[0], &r->cfa_reg, &r->cfa_off)) {
		r->cfa_simple = true;
	} else if (nops > 0) {
		r->cfa_ops = ops;
		r->cfa_nops = nops;
		keep_frame = true;
	}
	size_t owned_used = 0;
	r->owned = malloc(NDW * 3 * sizeof(Dwarf_Op));
	for (int reg = 0; reg < NDW; reg++) {
		Dwarf_Op mem[3], *rops = NULL;
		size_t rn = 0;
		if (dwarf_frame_register(f, reg, mem, &rops, &rn) != 0) {
			r->kind[reg] = reg == DW_RA ? R_UNDEF : R_SAME;
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
		r->kind[reg] = R_EXPR;
		if (rops == mem) {
			/* A short expression in our own buffer: keep a copy. */
			if (!r->owned || rn > 3) {
				r->kind[reg] = R_UNDEF;
				continue;
			}
			memcpy(r->owned + owned_used, mem, rn * sizeof(*mem));
			r->ops[reg] = r->owned + owned_used;
			owned_used += rn;
		} else {
			r->ops[reg] = rops;	/* lives as long as the CFI */
		}
		r->nops[reg] = rn;
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

static const struct rule *rule_lookup(struct sp_unwinder *u, struct modstate *ms, uint64_t addr)
{
	uint64_t key = addr + 1;
	if (ms->capslots) {
		for (size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 32) & (ms->capslots - 1);;
		     h = (h + 1) & (ms->capslots - 1)) {
			if (ms->keys[h] == key) {
				u->st.cache_hits++;
				return &ms->rules[ms->idx[h]];
			}
			if (!ms->keys[h])
				break;
		}
	}
	u->st.cache_misses++;
	if ((ms->nrules + 1) * 2 > ms->capslots) {
		size_t ncap = ms->capslots ? ms->capslots * 2 : 256;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *ni = calloc(ncap, sizeof(*ni));
		if (!nk || !ni) {
			free(nk);
			free(ni);
			return NULL;
		}
		for (size_t i = 0; i < ms->capslots; i++) {
			if (!ms->keys[i])
				continue;
			size_t h = (size_t)(ms->keys[i] * 0x9e3779b97f4a7c15ull >> 32) & (ncap - 1);
			while (nk[h])
				h = (h + 1) & (ncap - 1);
			nk[h] = ms->keys[i];
			ni[h] = ms->idx[i];
		}
		free(ms->keys);
		free(ms->idx);
		ms->keys = nk;
		ms->idx = ni;
		ms->capslots = ncap;
	}
	if (ms->nrules == ms->caprules) {
		size_t ncap = ms->caprules ? ms->caprules * 2 : 64;
		struct rule *nr = realloc(ms->rules, ncap * sizeof(*nr));
		if (!nr)
			return NULL;
		ms->rules = nr;
		ms->caprules = ncap;
	}
	struct rule *r = &ms->rules[ms->nrules];
	Dwarf_Frame *f = NULL;
	if (!ms->eh || dwarf_cfi_addrframe(ms->eh, addr, &f) != 0) {
		f = NULL;
		if (ms->dbg && dwarf_cfi_addrframe(ms->dbg, addr, &f) != 0)
			f = NULL;
	}
	if (f) {
		compile(r, f);
	} else {
		memset(r, 0, sizeof(*r));
		r->none = true;
	}
	size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 32) & (ms->capslots - 1);
	while (ms->keys[h])
		h = (h + 1) & (ms->capslots - 1);
	ms->keys[h] = key;
	ms->idx[h] = (uint32_t)ms->nrules;
	ms->nrules++;
	return r;
}

/* Evaluation over the stack copy. */

struct state {
	uint64_t reg[NDW];
	uint32_t valid;		/* bit per register */
	const unsigned char *stack;
	uint64_t base, len;	/* the copy covers [base, base + len) */
	bool full;
};

/* Reads 8 bytes of the copy; returns 0 or the end reason. */
static int read8(const struct state *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->base)
		return SP_END_BAD_CFA;
	if (addr - s->base > s->len || s->len - (addr - s->base) < 8)
		return s->full ? SP_END_TRUNCATED : SP_END_OUTSIDE_COPY;
	memcpy(v, s->stack + (addr - s->base), 8);
	return 0;
}

/*
 * Evaluates a DWARF expression.  *is_value is set when it ends with
 * DW_OP_stack_value (the result is the value, not its location).
 */
static int eval(const Dwarf_Op *ops, size_t n, const struct state *s, uint64_t cfa,
		bool have_cfa, uint64_t *out, bool *is_value)
{
	uint64_t st[16];
	int sp = 0, rc;
	*is_value = false;
#define PUSH(v) do { if (sp == 16) return SP_END_BAD_CFA; st[sp++] = (v); } while (0)
#define NEED(k) do { if (sp < (k)) return SP_END_BAD_CFA; } while (0)
	for (size_t i = 0; i < n; i++) {
		const Dwarf_Op *op = &ops[i];
		uint8_t a = op->atom, reg;
		int64_t off;
		uint64_t x, y;
		if (is_breg(op, &reg, &off)) {
			if (reg >= NDW || !(s->valid & (1u << reg)))
				return SP_END_BAD_CFA;
			PUSH(s->reg[reg] + (uint64_t)off);
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
			if ((rc = read8(s, st[sp - 1], &x)) != 0)
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

/* Applies a rule: the caller's registers into *next.  Returns 0 or an end. */
static int apply(const struct rule *r, const struct state *s, struct state *next, bool *outermost)
{
	uint64_t cfa;
	bool isv;
	int rc;
	if (r->cfa_simple) {
		if (r->cfa_reg >= NDW || !(s->valid & (1u << r->cfa_reg)))
			return SP_END_BAD_CFA;
		cfa = s->reg[r->cfa_reg] + (uint64_t)r->cfa_off;
	} else if (r->cfa_nops) {
		if ((rc = eval(r->cfa_ops, r->cfa_nops, s, 0, false, &cfa, &isv)) != 0)
			return rc;
	} else {
		return SP_END_BAD_CFA;
	}
	*next = *s;
	next->valid = 0;
	*outermost = r->kind[DW_RA] == R_UNDEF;
	for (int reg = 0; reg < NDW; reg++) {
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
			if ((rc = read8(s, cfa + (uint64_t)r->off[reg], &v)) != 0) {
				if (reg == DW_RA)
					return rc;
				continue;	/* a callee-saved register lost, not fatal */
			}
			break;
		case R_VAL_OFFSET:
			v = cfa + (uint64_t)r->off[reg];
			break;
		default:
			if ((rc = eval(r->ops[reg], r->nops[reg], s, cfa, true, &v, &isv)) != 0 ||
			    (!isv && (rc = read8(s, v, &v)) != 0)) {
				if (reg == DW_RA)
					return rc;
				continue;
			}
			break;
		}
		next->reg[reg] = v;
		next->valid |= 1u << reg;
	}
	/* The CFA is the caller's stack pointer. */
	next->reg[DW_SP] = cfa;
	next->valid |= 1u << DW_SP;
	return 0;
}

/* Whether pc can be a return address: in a file mapping with CFI for pc - 1. */
static bool plausible_ra(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
			 uint64_t pc)
{
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, pc);
	if (!m || m->obj->anon)
		return false;
	struct modstate *ms = resolve(u, m->obj);
	if (!ms || ms->state != M_OK)
		return false;
	const struct rule *r = rule_lookup(u, ms, sp_unwind_rel(u, m, pc) - 1);
	return r && !r->none;
}

/*
 * One frame-pointer step: [bp] is the caller's bp, [bp + 8] its pc.  The
 * frame pointer of the frame being left lies a little above its stack
 * pointer; a bp far away belongs to no frame of this code.
 */
static int fp_step(const struct state *s, struct state *next)
{
	uint64_t bp = s->reg[DW_BP], nbp, ra;
	int rc;
	if (!(s->valid & (1u << DW_BP)) || bp < s->reg[DW_SP] || (bp & 7) ||
	    bp - s->reg[DW_SP] > 65536)
		return SP_END_NO_CFI;
	if ((rc = read8(s, bp, &nbp)) != 0 || (rc = read8(s, bp + 8, &ra)) != 0)
		return rc == SP_END_BAD_CFA ? SP_END_NO_CFI : rc;
	*next = *s;
	next->reg[DW_BP] = nbp;
	next->reg[DW_SP] = bp + 16;
	next->reg[DW_RA] = ra;
	next->valid = (1u << DW_BP) | (1u << DW_SP) | (1u << DW_RA);
	return 0;
}

/*
 * For code with neither CFI nor a frame pointer, such as CPython 3.12's
 * perf trampolines ("sub $8, %rsp; call *%rcx; add $8, %rsp; ret"): the
 * first of the next few stack words that is a plausible return address.
 * The code in between is taken to save no registers.
 */
static int scan_step(struct sp_unwinder *u, struct sp_addrspaces *a, uint32_t pid,
		     const struct state *s, struct state *next)
{
	uint64_t sp = s->reg[DW_SP];
	for (int i = 0; i < 16; i++) {
		uint64_t v;
		int rc = read8(s, sp + 8 * (uint64_t)i, &v);
		if (rc)
			return rc == SP_END_BAD_CFA ? SP_END_NO_CFI : rc;
		if (v && plausible_ra(u, a, pid, v)) {
			*next = *s;
			next->reg[DW_SP] = sp + 8 * (uint64_t)i + 8;
			next->reg[DW_RA] = v;
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
	/* perf's order (ax bx cx dx si di bp sp ip r8-r15) to DWARF's. */
	static const int8_t to_dwarf[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 16,
					     8, 9, 10, 11, 12, 13, 14, 15 };
	struct state s = { .stack = stack, .len = len, .full = full };
	*n = 0;
	if (nregs < 17)
		return SP_END_BAD_CFA;
	for (int i = 0; i < 17; i++) {
		s.reg[to_dwarf[i]] = regs[i];
		s.valid |= 1u << to_dwarf[i];
	}
	s.base = s.reg[DW_SP];
	if (max > u->o.max_depth)
		max = u->o.max_depth;
	bool retaddr = false;
	for (;;) {
		uint64_t pc = s.reg[DW_RA];
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

		struct state next;
		bool outermost = false;
		int rc;
		const struct rule *r = NULL;
		if (!m->obj->anon) {
			struct modstate *ms = resolve(u, m->obj);
			if (!ms || ms->state == M_MISSING)
				return SP_END_MISSING_MODULE;
			if (ms->state == M_MISMATCH)
				return SP_END_BUILD_ID_MISMATCH;
			r = rule_lookup(u, ms, f->rel - (retaddr ? 1 : 0));
		}
		if (r && !r->none) {
			rc = apply(r, &s, &next, &outermost);
			if (rc)
				return (enum sp_unwind_end)rc;
			if (outermost)
				return SP_END_COMPLETE;
			retaddr = !r->signal;
		} else {
			if (!u->o.fp_fallback)
				return SP_END_NO_CFI;
			rc = fp_step(&s, &next);
			if (rc == 0 && plausible_ra(u, a, pid, next.reg[DW_RA])) {
				u->st.fp_frames++;
			} else if ((rc = scan_step(u, a, pid, &s, &next)) == 0) {
				u->st.scan_frames++;
			} else {
				return (enum sp_unwind_end)rc;
			}
			retaddr = true;
		}
		if (!(next.valid & (1u << DW_RA)) || next.reg[DW_RA] == 0)
			return SP_END_COMPLETE;
		/* The stack grows down: a caller's frame lies above. */
		if (next.reg[DW_SP] <= s.reg[DW_SP] && !(r && r->signal))
			return SP_END_CYCLE;
		s = next;
	}
}
