/* SPDX-License-Identifier: MIT
 * The libunwind engine (libunwind.h): one remote address space of
 * libunwind per engine, whose accessors serve a sample's registers, its
 * stack copy, and the bytes of the modules' files through the recorded
 * mappings and each file's program headers.  The unwind information of
 * a module is its .eh_frame_hdr table, handed to libunwind's
 * dwarf_search_unwind_table() as a remote table; libunwind reads the
 * FDEs and CIEs themselves through access_mem.  Modules are those of
 * module.c, opened once and kept on the address spaces' objects.
 */
#include <gelf.h>
#include <libunwind.h>
#include <stdlib.h>

#include "util/hashmap.h"
#include "unwind/internal.h"
#include "unwind/libunwind.h"

/* Not in libunwind's public headers, but exported (perf declares it too). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* libunwind-generic unwinds the machine it was built for. */
#ifdef __x86_64__
#define HOST_X86_64 true
#else
#define HOST_X86_64 false
#endif

/* What the engine knows of a module beyond module.c's state. */
struct luobj {
	bool table;			/* an .eh_frame_hdr table libunwind can search */
	uint64_t hdr_vaddr, table_off, count;
	/*
	 * Else its .debug_frame (dbg, dbglen), rewritten for one bias as a
	 * region that access_mem serves at an address of no mapping, just
	 * past the module's last segment (sp_debug_frame_to_eh()).
	 */
	const unsigned char *dbg;
	size_t dbglen;
	uint64_t vend;			/* the end of the highest PT_LOAD */
	bool tried;
	unsigned char *region;
	size_t rlen;
	uint64_t raddr, rbias, rcount;
};

/* A module a sample's unwind has touched, with where it is loaded. */
struct lumod {
	struct modstate *ms;
	const struct luobj *lo;
	uint64_t bias;			/* address = bias + ELF virtual address */
	uint64_t lo_addr, hi_addr;	/* the addresses of its PT_LOAD file bytes */
	const unsigned char *file;	/* its bytes (elf_rawfile()) */
	size_t size;
};

#define MAX_MODS 8

/* One sample, as the accessors see it (the "arg" of every accessor). */
struct lusample {
	struct sp_lunwinder *l;
	struct sp_addrspaces *a;
	uint32_t pid;
	struct sp_arch_regs regs;
	struct stackcopy c;
	int fail;			/* why the last read failed: an end reason */
	int info;			/* find_proc_info's first answer in a step */
	bool asked;
	/*
	 * Whether libunwind has stepped by its own heuristics (code without
	 * unwind information), and from JIT code.
	 */
	bool guessed, guessed_jit;
	struct lumod mods[MAX_MODS];
	unsigned nmods, next_mod, last;	/* last: the module read last */
};

struct sp_lunwinder {
	struct sp_unwinder *u;
	unw_addr_space_t as;
	struct sp_u64map objs;		/* struct sp_object * -> struct luobj */
};

/* The bias of the module a mapping maps: its start minus its ELF address. */
static uint64_t map_bias(struct sp_unwinder *u, const struct sp_mapping *m)
{
	return m->start - sp_unwind_rel(u, m, m->start);
}

static void luobj_free(void *p)
{
	struct luobj *lo = p;
	if (lo)
		free(lo->region);
	free(lo);
}

/* A module's .debug_frame, decompressed (libdw may have done it already). */
static void find_debug_frame(Elf *elf, struct luobj *lo)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".debug_frame") != 0)
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size) {
			lo->dbg = d->d_buf;
			lo->dbglen = d->d_size;
		}
		return;
	}
}

/* Reads the engine's facts about a module once: its .eh_frame_hdr table. */
static struct luobj *luobj_get(struct sp_lunwinder *l, struct sp_object *obj,
			       struct modstate *ms)
{
	struct luobj *lo = sp_u64map_get(&l->objs, (uintptr_t)obj);
	if (lo)
		return lo;
	if (!(lo = calloc(1, sizeof(*lo))))
		return NULL;
	if (sp_u64map_put(&l->objs, (uintptr_t)obj, lo) < 0) {
		free(lo);
		return NULL;
	}
	size_t nph = 0, size = 0;
	const unsigned char *file = (const unsigned char *)elf_rawfile(ms->elf, &size);
	if (!file || elf_getphdrnum(ms->elf, &nph) != 0)
		return lo;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(ms->elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > lo->vend)
			lo->vend = ph.p_vaddr + ph.p_memsz;
		if (ph.p_type != PT_GNU_EH_FRAME || lo->table ||
		    ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		if (sp_eh_frame_hdr_table(file + ph.p_offset, ph.p_filesz, &lo->table_off,
					  &lo->count) == 0 && lo->count) {
			lo->table = true;
			lo->hdr_vaddr = ph.p_vaddr;
		}
	}
	if (!lo->table)
		find_debug_frame(ms->elf, lo);
	return lo;
}

/*
 * The region made of a module's .debug_frame for a bias, made on first
 * use (again if the module turns up at another bias); false if none.
 */
static bool debug_region(struct luobj *lo, uint64_t bias)
{
	if (lo->region && lo->rbias == bias)
		return true;
	if (!lo->dbg || (lo->tried && lo->rbias == bias))
		return false;
	free(lo->region);
	lo->region = NULL;
	lo->tried = true;
	lo->rbias = bias;
	/* Past the module's last page, where no byte of it is read. */
	lo->raddr = bias + ((lo->vend + 0xffff) & ~0xffffull) + 0x10000;
	return sp_debug_frame_to_eh(lo->dbg, lo->dbglen, lo->raddr, bias, &lo->region,
				    &lo->rlen, &lo->rcount) == 0;
}

/* Remembers a module the unwind reads from, the oldest making room. */
static void remember(struct lusample *s, struct modstate *ms, const struct luobj *lo,
		     uint64_t bias)
{
	for (unsigned i = 0; i < s->nmods; i++)
		if (s->mods[i].ms == ms && s->mods[i].bias == bias) {
			if (lo)
				s->mods[i].lo = lo;
			return;
		}
	unsigned i = s->nmods < MAX_MODS ? s->nmods++ : s->next_mod++ % MAX_MODS;
	struct lumod *md = &s->mods[i];
	*md = (struct lumod){ ms, lo, bias, UINT64_MAX, 0, NULL, 0 };
	md->file = (const unsigned char *)elf_rawfile(ms->elf, &md->size);
	for (size_t k = 0; md->file && k < ms->nloads; k++) {
		const struct load *ld = &ms->loads[k];
		if (bias + ld->vaddr < md->lo_addr)
			md->lo_addr = bias + ld->vaddr;
		if (bias + ld->vaddr + ld->filesz > md->hi_addr)
			md->hi_addr = bias + ld->vaddr + ld->filesz;
	}
}

/*
 * Reads 8 bytes at addr of a module: of the region made of its
 * .debug_frame, or of its file through its PT_LOAD headers.  0 or -1.
 */
static int read_module(const struct lumod *md, uint64_t addr, uint64_t *v)
{
	const struct luobj *lo = md->lo;
	if (lo && lo->region && addr >= lo->raddr && addr - lo->raddr < lo->rlen &&
	    lo->rlen - (addr - lo->raddr) >= 8) {
		memcpy(v, lo->region + (addr - lo->raddr), 8);
		return 0;
	}
	if (addr < md->lo_addr || addr >= md->hi_addr)
		return -1;
	uint64_t vaddr = addr - md->bias;
	for (size_t i = 0; i < md->ms->nloads; i++) {
		const struct load *ld = &md->ms->loads[i];
		if (vaddr < ld->vaddr || vaddr - ld->vaddr >= ld->filesz ||
		    ld->filesz - (vaddr - ld->vaddr) < 8)
			continue;
		uint64_t off = vaddr - ld->vaddr + ld->off;
		if (off > md->size || md->size - off < 8)
			return -1;
		memcpy(v, md->file + off, 8);
		return 0;
	}
	return -1;
}

/* Reads 8 bytes at addr of the modules the sample has read, last first. */
static int read_modules(struct lusample *s, uint64_t addr, uint64_t *v)
{
	if (s->last < s->nmods && read_module(&s->mods[s->last], addr, v) == 0)
		return 0;
	for (unsigned i = 0; i < s->nmods; i++)
		if (i != s->last && read_module(&s->mods[i], addr, v) == 0) {
			s->last = i;
			return 0;
		}
	return -1;
}

/* The module state of the file mapped at addr, or NULL. */
static struct modstate *module_at(struct lusample *s, uint64_t addr,
				  const struct sp_mapping **mp)
{
	const struct sp_mapping *m = sp_addrspaces_find(s->a, s->pid, addr);
	if (!m || m->obj->anon)
		return NULL;
	struct modstate *ms = sp_unwind_module(s->l->u, m->obj);
	if (!ms || ms->state != M_OK || !ms->elf)
		return NULL;
	*mp = m;
	return ms;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
		      void *arg)
{
	struct lusample *s = arg;
	uint64_t v;
	(void)as;
	if (write)
		return -UNW_EINVAL;
	int rc = sp_stack_read8(&s->c, addr, &v);
	if (rc == 0) {
		*valp = v;
		return 0;
	}
	/*
	 * Not in the copy: the bytes of a module, which may lie in a part
	 * of it the stream has no mapping for (only executable mappings are
	 * recorded), such as .eh_frame in a read-only segment.
	 */
	if (read_modules(s, addr, &v) == 0) {
		*valp = v;
		return 0;
	}
	const struct sp_mapping *m;
	struct modstate *ms = module_at(s, addr, &m);
	if (ms) {
		remember(s, ms, NULL, map_bias(s->l->u, m));
		if (read_modules(s, addr, &v) == 0) {
			*valp = v;
			return 0;
		}
	}
	s->fail = rc;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
		      void *arg)
{
	struct lusample *s = arg;
	const struct sp_unwind_arch *arch = sp_unwinder_arch(s->l->u);
	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	/* libunwind's x86_64 register numbers are the DWARF columns; RIP is 16. */
	if (regnum < 0 || (unsigned)regnum >= arch->nregs || !(s->regs.valid & (1u << regnum)))
		return -UNW_EBADREG;
	*valp = s->regs.reg[regnum];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t regnum, unw_fpreg_t *val,
			int write, void *arg)
{
	(void)as; (void)regnum; (void)val; (void)write; (void)arg;
	return -UNW_EINVAL;	/* samples carry no floating-point registers */
}

static int find_info(struct lusample *s, unw_addr_space_t as, unw_word_t ip,
		     unw_proc_info_t *pi, int need_unwind_info);

/*
 * The unwind information for ip, noting whether the step that asked had
 * any: where it had none, libunwind's own heuristics took the step.
 */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct lusample *s = arg;
	int rc = find_info(s, as, ip, pi, need_unwind_info);
	if (!s->asked) {
		s->asked = true;
		s->info = rc;
	}
	return rc;
}

static int find_info(struct lusample *s, unw_addr_space_t as, unw_word_t ip,
		     unw_proc_info_t *pi, int need_unwind_info)
{
	const struct sp_mapping *m;
	struct modstate *ms = module_at(s, ip, &m);
	if (!ms)
		return -UNW_ENOINFO;
	struct luobj *lo = luobj_get(s->l, m->obj, ms);
	if (!lo)
		return -UNW_ENOMEM;
	uint64_t bias = map_bias(s->l->u, m);
	unw_dyn_info_t di = { 0 };
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	if (lo->table) {
		di.u.rti.segbase = bias + lo->hdr_vaddr;
		di.u.rti.table_data = bias + lo->hdr_vaddr + lo->table_off;
		di.u.rti.table_len = lo->count * 8 / sizeof(unw_word_t);
	} else if (debug_region(lo, bias)) {
		di.u.rti.segbase = lo->raddr;
		di.u.rti.table_data = lo->raddr;
		di.u.rti.table_len = lo->rcount * 8 / sizeof(unw_word_t);
	} else {
		return -UNW_ENOINFO;
	}
	remember(s, ms, lo, bias);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, s);
}

/* The proc info of find_proc_info is libunwind's to free (its mempool). */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as; (void)pi; (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as; (void)dilap; (void)arg;
	return -UNW_ENOINFO;	/* no process to read a registration list from */
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as; (void)cu; (void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			 unw_word_t *offp, void *arg)
{
	(void)as; (void)addr; (void)buf; (void)len; (void)offp; (void)arg;
	return -UNW_ENOINFO;	/* naming is sp-symbolize's */
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

struct sp_lunwinder *sp_lunwinder_new(struct sp_unwinder *u, struct sp_error *err)
{
	const struct sp_unwind_arch *arch = sp_unwinder_arch(u);
	if (arch != &sp_arch_x86_64 || !HOST_X86_64) {
		sp_error_set(err, SP_ERR_UNSUPPORTED,
			     "cannot unwind %s stacks with libunwind: it unwinds x86_64 only here",
			     arch->name);
		return NULL;
	}
	struct sp_lunwinder *l = calloc(1, sizeof(*l));
	if (!l) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	l->u = u;
	sp_u64map_init(&l->objs);
	l->as = unw_create_addr_space(&accessors, 0);
	if (!l->as) {
		free(l);
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	/*
	 * libunwind caches unwind rules by address alone, while one engine
	 * serves every process of a stream, where one address may hold
	 * different code; and even within one process its cached rule for a
	 * PLT stub (whose CFA is a DWARF expression) failed at once.  No
	 * cache.
	 */
	unw_set_caching_policy(l->as, UNW_CACHE_NONE);
	return l;
}

void sp_lunwinder_free(struct sp_lunwinder *l)
{
	if (!l)
		return;
	unw_destroy_addr_space(l->as);
	sp_u64map_release(&l->objs, luobj_free);
	free(l);
}

/*
 * Why a stack ends where unw_step() returned rc, 0 or an error, from
 * frame f whose frame pointer was fp.  libunwind also returns 0 where
 * its heuristics for a frame without unwind information (the frame-
 * pointer chain) found nothing more, which is no thread entry unless
 * the frame pointer was 0, the chain's end (glibc's _start and Go's
 * goroutines start so): otherwise only an end that the unwind
 * information gave counts as complete.
 */
static enum sp_unwind_end step_end(const struct lusample *s, const struct sp_uframe *f, int rc,
				   uint64_t fp)
{
	if (rc < 0 && s->fail)
		return (enum sp_unwind_end)s->fail;
	if (rc == -UNW_ENOINFO || (s->asked && s->info < 0 && (rc < 0 || fp != 0)))
		return f->flags & SP_FRAME_JIT ? SP_END_JIT_NO_MAP : SP_END_NO_CFI;
	return rc == 0 ? SP_END_COMPLETE : SP_END_BAD_CFA;
}

/* The frame loop of sp_lunwind(), over the sample s and its cursor. */
static enum sp_unwind_end walk(struct lusample *s, unw_cursor_t *cursor, size_t len,
			       struct sp_uframe *out, size_t max, size_t *n)
{
	struct sp_unwinder *u = s->l->u;
	bool retaddr = false;
	uint64_t prev_sp = 0;
	for (;;) {
		unw_word_t pc, sp;
		if (unw_get_reg(cursor, UNW_REG_IP, &pc) < 0 ||
		    unw_get_reg(cursor, UNW_REG_SP, &sp) < 0)
			return SP_END_BAD_CFA;
		/* A caller's frame lies above, except below a signal frame. */
		if (*n && sp <= prev_sp && retaddr)
			return SP_END_CYCLE;
		if (*n >= max)
			return SP_END_MAX_DEPTH;
		struct sp_uframe *f = &out[(*n)++];
		const struct sp_mapping *m;
		struct modstate *ms;
		int end = sp_unwind_frame_begin(u, s->a, s->pid, pc, retaddr, len, f, &m, &ms);
		if (end)
			return (enum sp_unwind_end)end;
		s->fail = 0;
		s->asked = false;
		unw_word_t fp = 1, next = 0;
		unw_get_reg(cursor, UNW_TDEP_BP, &fp);
		int rc = unw_step(cursor);
		bool guess = s->asked && s->info < 0;
		/* --no-fp-fallback: no step without unwind information. */
		if (guess && !u->o.fp_fallback)
			return SP_END_NO_CFI;
		/* A return address of 0 ends a stack, as the format says. */
		if (rc > 0 && unw_get_reg(cursor, UNW_REG_IP, &next) == 0 && next == 0)
			rc = 0;
		if (rc <= 0)
			return step_end(s, f, rc, fp);
		if (guess) {
			/* Its frame-pointer walk found a return address in nothing mapped. */
			if (!sp_addrspaces_find(s->a, s->pid, next))
				return SP_END_BAD_FP;
			if (!s->guessed)
				s->guessed_jit = f->flags & SP_FRAME_JIT;
			s->guessed = true;
		}
		/*
		 * libunwind 1.6's x86_64 cursor says "signal frame" once it has
		 * stepped through one (a signal trampoline, by its CFI or its
		 * code): the pc it reached is the interrupted instruction.
		 */
		retaddr = unw_is_signal_frame(cursor) <= 0;
		prev_sp = sp;
	}
}

enum sp_unwind_end sp_lunwind(struct sp_lunwinder *l, struct sp_addrspaces *a,
			      uint32_t pid, const uint64_t *regs, size_t nregs,
			      const unsigned char *stack, size_t len, bool full,
			      struct sp_uframe *out, size_t max, size_t *n)
{
	struct sp_unwinder *u = l->u;
	const struct sp_unwind_arch *arch = sp_unwinder_arch(u);
	struct lusample s = { .l = l, .a = a, .pid = pid };
	unw_cursor_t cursor;
	*n = 0;
	if (sp_unwind_regmap_load(&u->regs, regs, nregs, &s.regs) < 0)
		return SP_END_BAD_CFA;
	s.c = (struct stackcopy){ stack, s.regs.reg[arch->sp], len, full };
	if (max > u->o.max_depth)
		max = u->o.max_depth;
	if (unw_init_remote(&cursor, l->as, &s) < 0)
		return SP_END_BAD_CFA;
	enum sp_unwind_end end = walk(&s, &cursor, len, out, max, n);
	/*
	 * Once libunwind has stepped by its own heuristics it may have
	 * followed a stale return address (it does on CPython's trampolines):
	 * what it reaches after that, an end it calls complete or an
	 * unmapped address, says nothing about the stack but that the guess
	 * was made.
	 */
	if (s.guessed && (end == SP_END_COMPLETE || end == SP_END_NO_MAPPING))
		return s.guessed_jit ? SP_END_JIT_NO_MAP : SP_END_NO_CFI;
	return end;
}
