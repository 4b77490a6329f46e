/* SPDX-License-Identifier: MIT */
/* ELF and DWARF symbolization of one module (see elfsym.h). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/aranges.h"
#include "sym/debuglink.h"
#include "sym/dies.h"
#include "sym/elfsym.h"
#include "sym/lines.h"
#include "sym/scopes.h"
#include "unwind/gopclntab.h"
#include "sym/symtab.h"
#include "unwind/ehhdr.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buildid.h"
#include "util/hashmap.h"
#include "util/modfile.h"
#include "util/search.h"
#include "util/strpool.h"

struct sp_elfsym {
	struct sp_elfsym_options o;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dw;
	Dwarf_Addr bias;
	bool tried_dwarf;
	bool go;		/* a Go program: names as Go shows them */
	struct sp_gopclntab *gotab;	/* its .gopclntab; NULL: none to trust */
	/*
	 * The file's .eh_frame, for function starts: the table of
	 * .eh_frame_hdr (ntable entries at table, addresses from table_base)
	 * says where they are, libdw's CFI whether an FDE covers an address.
	 * NULL: none to trust.
	 */
	Dwarf_CFI *cfi;
	const unsigned char *table;
	uint64_t ntable, table_base;
	/* Its loadable segments, to turn an address into a file offset. */
	struct { uint64_t vaddr, memsz, offset; } loads[8];
	size_t nloads;
	const char *problem;	/* see sp_elfsym_problem() */
	char problem_buf[160];
	struct sp_symtab syms;
	const char *sym_origin;
	struct sp_u64map cache;	/* address -> struct sp_symres */
	struct sp_arena results;	/* where the cache's results are */
	/*
	 * Per compile unit (by its DIE's offset), its functions' address
	 * ranges, sorted, made the first time an address falls in it: a
	 * lookup then walks one function's scopes, not the unit's every DIE.
	 */
	struct sp_u64map cu_funcs;	/* CU offset -> struct cu_funcs */
	/* A function's scopes, read the first time an address falls in it. */
	struct sp_u64map fn_scopes;	/* function DIE offset -> struct sp_fn_scopes */
	/*
	 * Line tables, decoded by our own reader (see lines.h), by their
	 * offset in .debug_line, as libdw keeps them; the sections they
	 * are read from, found once.
	 */
	struct sp_u64map linetabs;	/* .debug_line offset -> struct cu_lines */
	struct sp_u64map cu_lines;	/* CU offset -> its struct cu_lines, or &no_lines */
	struct sp_linesecs secs;
	bool secs_tried;
	/*
	 * Units by the address ranges their DIEs give, for a module whose
	 * units libdwfl cannot find by address (no .debug_aranges: clang's
	 * default); made the first time it cannot.
	 */
	struct unit_range { uint64_t lo, hi; Dwarf_Off off; } *units;
	size_t nunits, alloc_units;
	bool units_made;
	/*
	 * Units by .debug_aranges, read by our reader (aranges.h) the first
	 * time an address is looked up; libdwfl's search where aranges_rc
	 * says ours would not find the same.
	 */
	struct sp_aranges aranges;
	int aranges_rc;
	bool aranges_made;
	Dwarf_Die unit;		/* the unit found last */
	/* Every string a result points to: names demangled, the rest as they are. */
	struct sp_strpool names, texts;
};

/* A function's address range, [lo, hi), and its DIE's offset. */
struct fn_range {
	uint64_t lo, hi;
	Dwarf_Off die;
	uint64_t reach;		/* the highest hi of this range and those before it */
};

struct cu_funcs {
	struct fn_range *v;
	size_t n, alloc;
	bool oom;
	/*
	 * A DIE at the unit's top level other than a function may hold an
	 * address (it has DW_AT_low_pc or DW_AT_ranges), or an imported
	 * unit brings DIEs in: dwarf_getscopes() may find what the index
	 * does not.
	 */
	bool other_pc;
	/* The unit read for its functions' scopes (sym/dies.h), once tried; NULL: libdw's to read. */
	struct sp_dies_unit *dies;
	bool dies_tried;
};

static void cu_funcs_free(void *p)
{
	struct cu_funcs *c = p;
	free(c->v);
	sp_dies_unit_free(c->dies);
	free(c);
}

static void fn_scopes_free(void *p)
{
	sp_fn_scopes_free(p);
}

/* A line table as decoded, or why libdw reads it instead. */
struct cu_lines {
	int rc;			/* SP_LINES_OK: t holds it */
	const char *comp_dir;	/* the unit's it was decoded for */
	struct sp_linetab t;
};

/* A unit whose table libdw reads. */
static struct cu_lines no_lines;

static void cu_lines_free(void *p)
{
	struct cu_lines *c = p;
	sp_linetab_free(&c->t);
	free(c);
}

char *sp_demangle(const char *name)
{
	if (!name || (strncmp(name, "_Z", 2) != 0 && strncmp(name, "_R", 2) != 0))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

/* What the names pool keeps for a symbol's name: its demangled form. */
static char *demangled(const char *s, void *arg)
{
	const struct sp_elfsym *e = arg;
	if (!e->o.demangle)
		return NULL;
	return e->go ? sp_go_name(s) : sp_demangle(s);
}

/*
 * Keeps a string for the module's lifetime, demangled when it is a name;
 * NULL stays NULL.  Each text is kept (and demangled) once.
 */
static const char *keep(struct sp_elfsym *e, const char *s, bool demangle)
{
	return sp_strpool_get(demangle ? &e->names : &e->texts, s);
}

static bool elf_has_section(Elf *elf, GElf_Word type, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (type && sh.sh_type == type)
			return true;
		const char *n = name ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/*
 * Names the PLT entries of an x86_64 module NAME@plt, as perf and gdb
 * do: no symbol covers them, and a call through one is a frame of its own
 * in every stack that calls a shared library.  The relocations of
 * .rela.plt are in the order of the entries, 16 bytes each, in .plt.sec
 * when the module has one (indirect-branch tracking), else in .plt after
 * its 16-byte first entry.  Added before the symbols, which win an
 * overlap.
 */
static void add_plt_symbols(struct sp_elfsym *e, Elf *elf)
{
	GElf_Ehdr eh;
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rela, *dyn;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    !(rela = sp_elf_section(elf, ".rela.plt", &rsh)) || rsh.sh_type != SHT_RELA ||
	    !(dyn = elf_getscn(elf, rsh.sh_link)) || !gelf_getshdr(dyn, &dsh))
		return;
	uint64_t first;
	if (sp_elf_section(elf, ".plt.sec", &psh))
		first = psh.sh_addr;
	else if (sp_elf_section(elf, ".plt", &psh))
		first = psh.sh_addr + 16;
	else
		return;
	Elf_Data *rd = elf_getdata(rela, NULL), *dd = elf_getdata(dyn, NULL);
	if (!rd || !dd || !rsh.sh_entsize)
		return;
	size_t n = rsh.sh_size / rsh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		uint64_t at = first + 16 * (uint64_t)i;
		if (at + 16 > psh.sh_addr + psh.sh_size)
			break;
		const char *name;
		if (!gelf_getrela(rd, (int)i, &r) || !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(elf, dsh.sh_link, sym.st_name)) || !*name)
			continue;
		char buf[512];
		int len = snprintf(buf, sizeof(buf), "%.*s@plt", (int)strcspn(name, "@"), name);
		if (len > 0 && (size_t)len < sizeof(buf))
			sp_symtab_add(&e->syms, at, 16, buf, (size_t)len);
	}
}

/* Reads the module's symbols once into a sorted table. */
static void build_symtab(struct sp_elfsym *e)
{
	sp_symtab_init(&e->syms);
	GElf_Addr mb;
	add_plt_symbols(e, dwfl_module_getelf(e->mod, &mb));
	int n = dwfl_module_getsymtab(e->mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr, bias = 0;
		GElf_Word shndx = 0;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(e->mod, i, &sym, &addr, &shndx, &elf, &bias);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC) || addr == 0)
			continue;
		/*
		 * A symbol without a size ends with its section at the latest,
		 * so that _init does not swallow the .plt that follows it.
		 */
		GElf_Shdr sh;
		Elf_Scn *scn = elf && shndx && shndx < SHN_LORESERVE ? elf_getscn(elf, shndx) : NULL;
		uint64_t limit = sym.st_size == 0 && scn && gelf_getshdr(scn, &sh) ?
				 sh.sh_addr + bias + sh.sh_size : 0;
		/* glibc's internal aliases (__GI_x) stand beside the public name. */
		if (strncmp(name, "__GI_", 5) == 0)
			continue;
		/* A versioned name (memcpy@GLIBC_2.14) is shown without its version. */
		size_t len = strcspn(name, "@");
		if (limit)
			sp_symtab_add_limited(&e->syms, addr, limit, name, len);
		else
			sp_symtab_add(&e->syms, addr, sym.st_size, name, len);
	}
	sp_symtab_finish(&e->syms);
	/* Where the names come from: a full symbol table, or only .dynsym. */
	GElf_Addr b;
	Elf *main = dwfl_module_getelf(e->mod, &b);
	Dwarf_Addr db;
	Dwarf *dw = dwfl_module_getdwarf(e->mod, &db);
	e->sym_origin = elf_has_section(main, SHT_SYMTAB, NULL) ||
			(dw && elf_has_section(dwarf_getelf(dw), SHT_SYMTAB, NULL)) ||
			elf_has_section(main, 0, ".gnu_debugdata") ? "symtab" : "dynsym";
}

/*
 * Function starts: libdw's reading of .eh_frame, once .eh_frame_hdr's
 * table has been checked, since a search in a table out of order finds
 * the wrong function.  A file with .eh_frame but no header is searched
 * by libdw from the start.  The loadable segments translate a start to
 * an offset in the file.
 */
static void open_function_starts(struct sp_elfsym *e, Elf *elf)
{
	GElf_Shdr hsh, fsh;
	Elf_Scn *hdr = sp_elf_section(elf, ".eh_frame_hdr", &hsh);
	Elf_Scn *frame = sp_elf_section(elf, ".eh_frame", &fsh);
	if (!frame || fsh.sh_type == SHT_NOBITS || !hdr || hsh.sh_type == SHT_NOBITS)
		return;
	Elf_Data *d = elf_getdata(hdr, NULL);
	uint64_t off;
	const char *why = !d || !d->d_buf ? "unreadable" :
			  sp_eh_frame_hdr_check(d->d_buf, d->d_size, hsh.sh_addr, fsh.sh_addr,
						fsh.sh_size);
	if (why || sp_eh_frame_hdr_table(d->d_buf, d->d_size, &off, &e->ntable) < 0) {
		snprintf(e->problem_buf, sizeof(e->problem_buf), ".eh_frame_hdr: %s",
			 why ? why : "unreadable");
		e->problem = e->problem_buf;
		return;
	}
	e->table = (const unsigned char *)d->d_buf + off;
	e->table_base = hsh.sh_addr;
	size_t nph = 0;
	if (elf_getphdrnum(elf, &nph) != 0)
		return;
	for (size_t i = 0; i < nph && e->nloads < sizeof(e->loads) / sizeof(*e->loads); i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			e->loads[e->nloads++] = (typeof(e->loads[0])){ ph.p_vaddr, ph.p_memsz,
								       ph.p_offset };
	}
	e->cfi = e->nloads ? dwarf_getcfi_elf(elf) : NULL;
}

/* The address of the function start at entry i of the table. */
static uint64_t table_start(const struct sp_elfsym *e, uint64_t i)
{
	int32_t v;
	memcpy(&v, e->table + 8 * i, 4);
	return e->table_base + (uint64_t)(int64_t)v;
}

/*
 * Where the function addr lies in starts, by its FDE: the last entry of
 * the table at or before addr, when an FDE covers addr at all (libdw
 * checks the FDE's range).  false: none does.
 */
static bool function_start(struct sp_elfsym *e, uint64_t addr, uint64_t *start)
{
	if (!e->cfi)
		return false;
	size_t i = SP_PARTITION_POINT((size_t)e->ntable, k, table_start(e, k) <= addr);
	Dwarf_Frame *f;
	if (i == 0 || dwarf_cfi_addrframe(e->cfi, addr, &f) != 0)
		return false;
	Dwarf_Addr s, en;
	bool signal;
	int rc = dwarf_frame_info(f, &s, &en, &signal);
	free(f);
	/* The row found lies in the FDE the table points at. */
	*start = table_start(e, i - 1);
	return rc >= 0 && s >= *start && s <= addr && addr < en;
}

/* The offset in the file of address addr of executable code; false: none. */
static bool file_offset(const struct sp_elfsym *e, uint64_t addr, uint64_t *off)
{
	for (size_t i = 0; i < e->nloads; i++)
		if (addr >= e->loads[i].vaddr && addr - e->loads[i].vaddr < e->loads[i].memsz) {
			*off = addr - e->loads[i].vaddr + e->loads[i].offset;
			return true;
		}
	return false;
}

const char *sp_elfsym_problem(const struct sp_elfsym *e)
{
	return e->problem;
}

static void inflate_ahead(const struct sp_elfsym *e, Dwfl_Module *mod);

/*
 * libdwfl's search for a module's debug file, by build-id then by
 * .gnu_debuglink, without its last resort, a debuginfod server: asking
 * one loads libdebuginfod and its HTTP client, milliseconds of every run,
 * even when no server is set.  A dwz file (named by a path) is left to
 * libdwfl.  *userdata is the module's struct sp_elfsym.
 */
static int find_debuginfo_here(Dwfl_Module *mod, void **userdata, const char *modname,
			       Dwarf_Addr base, const char *file_name, const char *debuglink,
			       GElf_Word crc, char **found)
{
	const struct sp_elfsym *e = *userdata;
	if (!e || (debuglink && strchr(debuglink, '/')))
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink, crc, found);
	inflate_ahead(e, mod);
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink, crc, found);
	return fd >= 0 ? fd : sp_debuglink_find(mod, e->debuginfo_path, file_name, debuglink, found);
}

struct sp_elfsym *sp_elfsym_open(int fd, const char *path,
				 const struct sp_elfsym_options *o)
{
	struct sp_elfsym *e = calloc(1, sizeof(*e));
	if (!e) {
		close(fd);
		return NULL;
	}
	e->o = *o;
	sp_u64map_init(&e->cache);
	sp_u64map_init(&e->cu_funcs);
	sp_u64map_init(&e->fn_scopes);
	sp_u64map_init(&e->linetabs);
	sp_u64map_init(&e->cu_lines);
	sp_strpool_init(&e->names, demangled, e);
	sp_strpool_init(&e->texts, NULL, NULL);
	e->debuginfo_path = strdup(o->debuginfo_path ? o->debuginfo_path : "-:.debug:/usr/lib/debug");
	e->cb.find_elf = dwfl_build_id_find_elf;
	e->cb.find_debuginfo = o->debuginfod ? dwfl_standard_find_debuginfo : find_debuginfo_here;
	e->cb.section_address = dwfl_offline_section_address;
	e->cb.debuginfo_path = &e->debuginfo_path;
	e->dwfl = dwfl_begin(&e->cb);
	if (!e->dwfl || !e->debuginfo_path) {
		close(fd);
		sp_elfsym_free(e);
		return NULL;
	}
	/*
	 * libdwfl owns fd only once it has reported the module: when it
	 * fails, fd is still ours to close.  It is handed ELF only, as a
	 * compressed file would be unpacked and fd closed by libdwfl itself.
	 */
	Elf *probe = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool is_elf = probe && elf_kind(probe) == ELF_K_ELF;
	elf_end(probe);
	/* At address 0, so that dwfl's addresses are the ELF's own. */
	e->mod = is_elf ? dwfl_report_elf(e->dwfl, path, path, fd, 0, false) : NULL;
	dwfl_report_end(e->dwfl, NULL, NULL);
	void **userdata = NULL;
	if (e->mod && dwfl_module_info(e->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL) &&
	    userdata)
		*userdata = e;
	if (!e->mod) {
		close(fd);
		sp_elfsym_free(e);
		return NULL;
	}
	/* Go's linker writes these sections, also under -ldflags=-s. */
	GElf_Addr b;
	Elf *elf = dwfl_module_getelf(e->mod, &b);
	e->go = elf_has_section(elf, 0, ".gopclntab") || elf_has_section(elf, 0, ".go.buildinfo") ||
		elf_has_section(elf, 0, ".note.go.buildid");
	build_symtab(e);
	open_function_starts(e, elf);
	const char *why = NULL;
	if (e->go && !(e->gotab = sp_gopclntab_open(elf, &why)) && why && !e->problem) {
		snprintf(e->problem_buf, sizeof(e->problem_buf), ".gopclntab: %s", why);
		e->problem = e->problem_buf;
	}
	return e;
}

/* A result's own memory; the result is in the arena. */
static void symres_free(void *v)
{
	struct sp_symres *r = v;
	free(r->inl);
}

void sp_elfsym_free(struct sp_elfsym *e)
{
	if (!e)
		return;
	sp_gopclntab_free(e->gotab);
	if (e->cfi)
		dwarf_cfi_end(e->cfi);
	if (e->dwfl)
		dwfl_end(e->dwfl);
	sp_symtab_release(&e->syms);
	sp_u64map_release(&e->cache, symres_free);
	sp_arena_release(&e->results);
	sp_u64map_release(&e->cu_funcs, cu_funcs_free);
	sp_u64map_release(&e->fn_scopes, fn_scopes_free);
	sp_u64map_release(&e->linetabs, cu_lines_free);
	sp_u64map_release(&e->cu_lines, NULL);
	free(e->units);
	sp_aranges_free(&e->aranges);
	sp_strpool_release(&e->names);
	sp_strpool_release(&e->texts);
	free(e->debuginfo_path);
	free(e);
}

/* Whether the ELF file src has a compressed section (its headers only are read). */
static bool has_compressed(const char *src)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	bool any = false;
	for (Elf_Scn *scn = NULL; elf && !any && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		any = gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED);
	}
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return any;
}

/* A section inflated here: its bytes and what its header says of them. */
struct inflated {
	void *buf;
	size_t size;
	uint64_t align;
};

/*
 * Inflates a zlib-compressed section of ie with libdeflate, which takes
 * a fraction of zlib's time for a whole buffer.  False when the section
 * is compressed otherwise or its data does not inflate to the size its
 * header gives: libelf is then left to inflate it.
 */
static bool deflate_section(Elf *ie, Elf_Scn *scn, struct libdeflate_decompressor **dc,
			    struct inflated *out)
{
	GElf_Chdr ch;
	Elf_Data *raw = elf_rawdata(scn, NULL);
	size_t head = gelf_getclass(ie) == ELFCLASS32 ? sizeof(Elf32_Chdr) : sizeof(Elf64_Chdr);
	/*
	 * DEFLATE expands at most about 1032 times: a header claiming more
	 * is false, and its size is not allocated here.
	 */
	if (!raw || !raw->d_buf || raw->d_size < head || !gelf_getchdr(scn, &ch) ||
	    ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > SIZE_MAX / 2 ||
	    ch.ch_size / 1032 > raw->d_size)
		return false;
	if (!*dc && !(*dc = libdeflate_alloc_decompressor()))
		return false;
	void *buf = malloc(ch.ch_size ? ch.ch_size : 1);
	size_t got = 0;
	if (!buf || libdeflate_zlib_decompress(*dc, (const char *)raw->d_buf + head,
					       raw->d_size - head, buf, ch.ch_size,
					       &got) != LIBDEFLATE_SUCCESS ||
	    got != ch.ch_size) {
		free(buf);
		return false;
	}
	*out = (struct inflated){ buf, ch.ch_size, ch.ch_addralign };
	return true;
}

/*
 * Writes the ELF file src to dst with every compressed section inflated.
 * ie is src as read by libelf: sections still compressed are inflated
 * here (by libdeflate, else libelf); those libdw inflated in memory
 * already are not read and inflated a second time.  Returns 1 when
 * written, 0 when src had nothing compressed, -1 on failure.
 */
/*
 * Whether sh, a section of the debug file ie, holds what sp-symbolize
 * never reads: location lists (.debug_loc, .debug_loclists), which say
 * where variables live.  Its cached copy leaves them out, uninflated:
 * glibc's are a seventh of its debug data.
 */
static bool unused_section(Elf *ie, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(ie, shstrndx, sh->sh_name);
	return name && sh->sh_type != SHT_NOBITS &&
	       (strcmp(name, ".debug_loc") == 0 || strcmp(name, ".debug_loclists") == 0);
}

static int write_inflated(Elf *ie, const char *src, const char *dst)
{
	int rc = -1, out = -1;
	Elf *oe = NULL;
	char tmp[4200];
	size_t nsec = 0;
	struct inflated *inf = NULL;
	struct libdeflate_decompressor *dc = NULL;
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", dst, (int)getpid());
	if (!ie || elf_kind(ie) != ELF_K_ELF || elf_getshdrnum(ie, &nsec) != 0 ||
	    !(inf = calloc(nsec ? nsec : 1, sizeof(*inf))))
		goto done;
	if (!has_compressed(src)) {
		rc = 0;
		goto done;
	}
	size_t nph = 0, shstrndx;
	if (elf_getshdrstrndx(ie, &shstrndx) != 0 || shstrndx >= SHN_LORESERVE)
		goto done;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ie, scn));) {
		GElf_Shdr sh;
		size_t i = elf_ndxscn(scn);
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && i < nsec &&
		    !unused_section(ie, shstrndx, &sh) && !deflate_section(ie, scn, &dc, &inf[i]) &&
		    elf_compress(scn, 0, 0) < 0)
			goto done;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	oe = out >= 0 ? elf_begin(out, ELF_C_WRITE, NULL) : NULL;
	GElf_Ehdr eh;
	if (!oe || !gelf_getehdr(ie, &eh) || !gelf_newehdr(oe, gelf_getclass(ie)) ||
	    !gelf_update_ehdr(oe, &eh) || elf_getphdrnum(ie, &nph) != 0)
		goto done;
	if (nph && !gelf_newphdr(oe, nph))
		goto done;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(ie, (int)i, &ph) || !gelf_update_phdr(oe, (int)i, &ph))
			goto done;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ie, scn));) {
		Elf_Scn *os = elf_newscn(oe);
		GElf_Shdr sh;
		const struct inflated *f = &inf[elf_ndxscn(scn) < nsec ? elf_ndxscn(scn) : 0];
		if (!os || !gelf_getshdr(scn, &sh))
			goto done;
		if (unused_section(ie, shstrndx, &sh)) {
			/* No contents: libdw ignores a section of type SHT_NOBITS. */
			sh.sh_type = SHT_NOBITS;
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
			sh.sh_size = 0;
			if (!gelf_update_shdr(os, &sh))
				goto done;
			continue;
		}
		if (f->buf) {
			Elf_Data *od = elf_newdata(os);
			if (!od)
				goto done;
			*od = (Elf_Data){ .d_buf = f->buf, .d_type = ELF_T_BYTE, .d_size = f->size,
					  .d_align = f->align, .d_version = EV_CURRENT };
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
			sh.sh_size = f->size;
			sh.sh_addralign = f->align;
		}
		for (Elf_Data *d = NULL; !f->buf && (d = elf_getdata(scn, d));) {
			Elf_Data *od = elf_newdata(os);
			if (!od)
				goto done;
			*od = *d;
		}
		if (!gelf_update_shdr(os, &sh))
			goto done;
	}
	/* Program headers of a debug file describe no file contents: libelf lays out. */
	if (elf_update(oe, ELF_C_WRITE) < 0)
		goto done;
	rc = 1;
done:
	if (oe)
		elf_end(oe);
	if (out >= 0 && close(out) < 0)
		rc = -1;
	if (rc == 1 && rename(tmp, dst) < 0)
		rc = -1;
	if (rc != 1)
		unlink(tmp);
	for (size_t i = 0; inf && i < nsec; i++)
		free(inf[i].buf);
	free(inf);
	if (dc)
		libdeflate_free_decompressor(dc);
	return rc;
}

/* The cache's name for the debug file of build-id bid (n bytes), its folders made. */
static void cache_slot(const char *cache_dir, const unsigned char *bid, int n, char *dst,
		       size_t size)
{
	char dir[4096];
	sp_build_id_path_in(cache_dir, bid, n, ".debug", dst, size);
	snprintf(dir, sizeof(dir), "%s/.build-id/%02x", cache_dir, bid[0]);
	char *slash = dir;
	while ((slash = strchr(slash + 1, '/'))) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	mkdir(dir, 0755);
}

/* Keeps an inflated copy of the module's compressed debug file, once. */
static void cache_debug_file(struct sp_elfsym *e)
{
	const char *debugfile = NULL, *mainfile = NULL;
	const unsigned char *bid;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(e->mod, &bid, &vaddr);
	dwfl_module_info(e->mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	if (!e->o.cache_dir || n < 2 || !debugfile || (mainfile && strcmp(mainfile, debugfile) == 0) ||
	    strncmp(debugfile, e->o.cache_dir, strlen(e->o.cache_dir)) == 0)
		return;
	char dst[4096];
	cache_slot(e->o.cache_dir, bid, n, dst, sizeof(dst));
	if (access(dst, F_OK) == 0)
		return;
	write_inflated(dwarf_getelf(e->dw), debugfile, dst);
}

/*
 * Before libdwfl looks for the module's debug file by build-id: when the
 * one its search would find after the cache has compressed sections, an
 * inflated copy is written to the cache (libdeflate inflates in a
 * fraction of the time libelf's zlib takes), where the search, which
 * looks in the cache first, then finds it; libdw reads its sections as
 * they are, in this run and the next.
 */
static void inflate_ahead(const struct sp_elfsym *e, Dwfl_Module *mod)
{
	const unsigned char *bid;
	GElf_Addr vaddr;
	const char *cache = e->o.cache_dir;
	int n = cache ? dwfl_module_build_id(mod, &bid, &vaddr) : 0;
	char dst[4096], src[4096];
	if (n < 2 || !e->debuginfo_path)
		return;
	sp_build_id_path_in(cache, bid, n, ".debug", dst, sizeof(dst));
	if (access(dst, F_OK) == 0)
		return;
	size_t clen = strlen(cache);
	for (const char *p = e->debuginfo_path; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (p[0] == '/' && len < sizeof(src) - 100 && !(len == clen && !memcmp(p, cache, len))) {
			char dir[4096];
			memcpy(dir, p, len);
			dir[len] = '\0';
			sp_build_id_path_in(dir, bid, n, ".debug", src, sizeof(src));
			int fd = open(src, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				/* The first found is the one libdwfl takes. */
				Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
				if (elf && elf_kind(elf) == ELF_K_ELF) {
					cache_slot(cache, bid, n, dst, sizeof(dst));
					write_inflated(elf, src, dst);
				}
				elf_end(elf);
				close(fd);
				return;
			}
		}
		p += len + (end ? 1 : 0);
	}
}

bool sp_elfsym_has_debuginfo(struct sp_elfsym *e)
{
	if (!e->tried_dwarf) {
		e->tried_dwarf = true;
		e->dw = dwfl_module_getdwarf(e->mod, &e->bias);
		if (e->dw)
			cache_debug_file(e);
	}
	return e->dw != NULL;
}

/*
 * A Go function without DWARF: its name, when no symbol gave one, and
 * its file, line and inlined calls from the Go table.
 */
static void from_go_table(struct sp_elfsym *e, uint64_t addr, struct sp_symres *r)
{
	unsigned flags = (e->o.lines ? SP_GOPCLN_LINES : 0) |
			 (e->o.inline_frames ? SP_GOPCLN_INLINE : 0);
	struct sp_gofunc gf;
	if (sp_gopclntab_lookup(e->gotab, addr, flags, &gf) != 1)
		return;
	if (!r->name && gf.name) {
		r->name = keep(e, gf.name, true);
		r->offset = addr - gf.entry;
		r->origin = "gopclntab";
	}
	r->file = keep(e, gf.file, false);
	r->line = gf.line;
	if (gf.ninl && (r->inl = calloc(gf.ninl, sizeof(*r->inl)))) {
		for (size_t i = 0; i < gf.ninl; i++)
			r->inl[i] = (struct sp_inline){ .name = keep(e, gf.inl[i].name, true),
							.file = keep(e, gf.inl[i].file, false),
							.line = gf.inl[i].line };
		r->ninl = gf.ninl;
	}
}

/* The debug sections line tables are read from, found once. */
static bool line_sections(struct sp_elfsym *e)
{
	if (!e->secs_tried && e->dw) {
		e->secs_tried = true;
		sp_linesecs_read(dwarf_getelf(e->dw), &e->secs);
	}
	return e->secs.line != NULL;
}

/*
 * Unit cu read once (sym/dies.h) for its functions and their scopes from
 * the bytes of its DIEs: only a compile or partial unit of the module's
 * own DWARF; NULL when it is not read so.
 */
static const struct sp_dies_unit *dies_unit(struct sp_elfsym *e, Dwarf_Die *cu, struct cu_funcs *c)
{
	uint64_t unit_off;
	if (c->dies_tried)
		return c->dies;
	c->dies_tried = true;
	if (line_sections(e) && sp_dies_unit_of(e->dw, cu, &e->secs, &unit_off))
		sp_dies_unit_open(&c->dies, &e->secs, unit_off);
	return c->dies;
}

/*
 * Indexes the functions of unit cu (sym/dies.h): through namespaces and
 * classes; in a C unit, where a type holds no function, the types'
 * members are not walked.
 */
static void index_functions(struct sp_elfsym *e, Dwarf_Die *cu, struct cu_funcs *c)
{
	int lang = dwarf_srclang(cu);
	bool c_only = lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
		      lang == DW_LANG_C11 || lang == 0x2c /* DW_LANG_C17 */;
	struct sp_unit_fns f;
	if (sp_unit_fns_find_in(&f, e->dw, cu, dies_unit(e, cu, c), c_only) < 0 ||
	    !(c->v = malloc((f.n ? f.n : 1) * sizeof(*c->v)))) {
		c->oom = true;
		sp_unit_fns_free(&f);
		return;
	}
	for (size_t i = 0; i < f.n; i++)
		c->v[i] = (struct fn_range){ f.v[i].lo, f.v[i].hi, f.v[i].die, 0 };
	c->n = c->alloc = f.n;
	c->other_pc = f.other_pc;
	sp_unit_fns_free(&f);
}

static int fn_range_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The decoded table of unit cu, or &no_lines (NULL: out of memory). */
static struct cu_lines *find_cu_lines(struct sp_elfsym *e, Dwarf_Die *cu)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	Dwarf_Half version;
	uint8_t unit_type, asize, osize;
	Dwarf_Die cudie;
	if (!line_sections(e) || dwarf_cu_getdwarf(cu->cu) != e->dw ||
	    dwarf_cu_info(cu->cu, &version, &unit_type, NULL, NULL, NULL, NULL, NULL) != 0 ||
	    unit_type == DW_UT_split_compile || unit_type == DW_UT_split_type ||
	    !dwarf_diecu(cu, &cudie, &asize, &osize) || !dwarf_attr(cu, DW_AT_stmt_list, &a) ||
	    dwarf_formudata(&a, &off) != 0)
		return &no_lines;
	const char *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	struct cu_lines *c = sp_u64map_get(&e->linetabs, off);
	if (!c) {
		if (!(c = calloc(1, sizeof(*c))))
			return NULL;
		c->comp_dir = comp_dir;
		c->rc = sp_linetab_decode(&c->t, &e->secs, off, comp_dir, asize);
		if (sp_u64map_put(&e->linetabs, off, c) < 0) {
			cu_lines_free(c);
			return NULL;
		}
	}
	/* Units sharing a table with another directory are libdw's to tell apart. */
	if (c->rc != SP_LINES_OK ||
	    (c->comp_dir != comp_dir && (!c->comp_dir || !comp_dir || strcmp(c->comp_dir, comp_dir))))
		return &no_lines;
	return c;
}

/*
 * The line table of unit cu, decoded by our reader; NULL when libdw is
 * to read it (see lines.h), so that the answer is libdw's either way.
 * Found once a unit: asking libdw a unit's attributes costs more than
 * a lookup in the table.
 */
static const struct sp_linetab *cu_linetab(struct sp_elfsym *e, Dwarf_Die *cu)
{
	Dwarf_Off cuoff = dwarf_dieoffset(cu);
	struct cu_lines *c = sp_u64map_get(&e->cu_lines, cuoff);
	if (!c && (c = find_cu_lines(e, cu)) && sp_u64map_put(&e->cu_lines, cuoff, c) < 0)
		return NULL;
	return c && c != &no_lines ? &c->t : NULL;
}

static int unit_range_cmp(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The compile unit holding pc (a DWARF address) by its DIE's ranges,
 * in a module without .debug_aranges, by which libdwfl finds units
 * (clang does not write it unless asked).  NULL when no unit's range
 * holds pc, or the module has .debug_aranges.
 */
static Dwarf_Die *unit_by_ranges(struct sp_elfsym *e, uint64_t pc)
{
	if (!e->units_made) {
		e->units_made = true;
		/* A module with .debug_aranges: libdwfl's answer stands. */
		if (elf_has_section(dwarf_getelf(e->dw), 0, ".debug_aranges"))
			return NULL;
		Dwarf_CU *cu = NULL;
		Dwarf_Half version;
		uint8_t type;
		Dwarf_Die die, sub;
		while (dwarf_get_units(e->dw, cu, &cu, &version, &type, &die, &sub) == 0) {
			if (type != DW_UT_compile && type != DW_UT_skeleton)
				continue;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (SP_ALLOC_GROW(e->units, e->nunits + 1, e->alloc_units) < 0) {
					e->nunits = 0;
					return NULL;
				}
				e->units[e->nunits++] = (struct unit_range){ lo, hi,
									     dwarf_dieoffset(&die) };
			}
		}
		if (e->nunits)
			qsort(e->units, e->nunits, sizeof(*e->units), unit_range_cmp);
	}
	/* The last range starting at or below pc, or one of the few before it. */
	size_t k = SP_PARTITION_POINT(e->nunits, i, e->units[i].lo <= pc);
	for (size_t back = 0; k > 0 && pc >= e->units[k - 1].hi && back < 8; back++)
		k--;
	if (k == 0 || pc >= e->units[k - 1].hi || !dwarf_offdie(e->dw, e->units[k - 1].off, &e->unit))
		return NULL;
	return &e->unit;
}

/*
 * The unit holding addr, as dwfl_module_addrdie() finds it, with *bias:
 * by our reading of .debug_aranges (aranges.h), else by libdwfl's.
 */
static Dwarf_Die *unit_of(struct sp_elfsym *e, Dwarf_Addr addr, Dwarf_Addr *bias)
{
	if (!e->aranges_made) {
		e->aranges_made = true;
		e->aranges_rc = line_sections(e) ? sp_aranges_read(&e->aranges, e->dw, &e->secs)
						 : SP_ARANGES_ASK_LIBDW;
	}
	if (e->aranges_rc != SP_ARANGES_OK)
		return dwfl_module_addrdie(e->mod, addr, bias);
	uint64_t die;
	*bias = e->bias;
	if (!sp_aranges_find(&e->aranges, addr - e->bias, &die))
		return NULL;
	return dwarf_offdie(e->dw, die, &e->unit);
}

/* The scopes of the function whose DIE is at off in unit cu (c: its index), read once. */
static struct sp_fn_scopes *function_scopes(struct sp_elfsym *e, Dwarf_Die *cu, struct cu_funcs *c,
					    Dwarf_Off off)
{
	struct sp_fn_scopes *f = sp_u64map_get(&e->fn_scopes, off);
	Dwarf_Die fn;
	if (f || !dwarf_offdie(e->dw, off, &fn))
		return f;
	const struct sp_dies_unit *u = dies_unit(e, cu, c);
	if ((f = u ? sp_fn_scopes_read_bytes(e->dw, u, &fn, cu, cu_linetab(e, cu)) :
		     sp_fn_scopes_read(&fn, cu, cu_linetab(e, cu))) &&
	    sp_u64map_put(&e->fn_scopes, off, f) < 0) {
		sp_fn_scopes_free(f);
		f = NULL;
	}
	return f;
}

/*
 * The scopes of pc (a DWARF address) in cu, innermost first, as
 * dwarf_getscopes() gives them, found in the one function whose range
 * holds pc; the whole unit's search when the index has none (an address
 * outside every function, or an index memory could not hold).  Returns
 * their number (into out, room for SP_SCOPES_MAX), or 0.
 */
static int scopes_of(struct sp_elfsym *e, Dwarf_Die *cu, Dwarf_Addr pc, struct sp_scope *out)
{
	Dwarf_Off cuoff = dwarf_dieoffset(cu);
	struct cu_funcs *c = sp_u64map_get(&e->cu_funcs, cuoff);
	if (!c && (c = calloc(1, sizeof(*c)))) {
		index_functions(e, cu, c);
		if (c->n)
			qsort(c->v, c->n, sizeof(*c->v), fn_range_cmp);
		for (size_t i = 0; i < c->n; i++)
			c->v[i].reach = i && c->v[i - 1].reach > c->v[i].hi ? c->v[i - 1].reach
									   : c->v[i].hi;
		if (sp_u64map_put(&e->cu_funcs, cuoff, c) < 0) {
			cu_funcs_free(c);
			c = NULL;
		}
	}
	if (c && !c->oom && e->dw) {
		/*
		 * The last range starting at or below pc, or one of the few
		 * before it (a function of several ranges may reach past the
		 * next one's start).
		 */
		size_t k = SP_PARTITION_POINT(c->n, i, c->v[i].lo <= pc);
		for (size_t back = 0; k > 0 && pc >= c->v[k - 1].hi && back < 8; back++)
			k--;
		struct sp_fn_scopes *f;
		if (k > 0 && pc < c->v[k - 1].hi && (f = function_scopes(e, cu, c, c->v[k - 1].die)))
			return sp_fn_scopes_of(f, pc, out);
		/*
		 * No range of a function reaches pc, and no other DIE at the
		 * top level has an address: dwarf_getscopes(), which looks for
		 * pc among the unit's top-level DIEs first, finds nothing (in
		 * a big unit, after a walk of every one of them).
		 */
		k = SP_PARTITION_POINT(c->n, i, c->v[i].lo <= pc);
		if (!c->other_pc && (k == 0 || c->v[k - 1].reach <= pc))
			return 0;
	}
	Dwarf_Die *dies = NULL;
	int n = dwarf_getscopes(cu, pc, &dies);
	if (n > SP_SCOPES_MAX)
		n = SP_SCOPES_MAX;
	for (int i = 0; i < n; i++)
		sp_scope_from_die(&dies[i], cu, cu_linetab(e, cu), &out[i]);
	free(dies);
	return n > 0 ? n : 0;
}

/* The last resort for an address no name covers: its function's start. */
static void name_function_start(struct sp_elfsym *e, uint64_t addr, bool in_fde,
				uint64_t fstart, struct sp_symres *r)
{
	if (r->name || !in_fde || !file_offset(e, fstart, &r->start_off))
		return;
	r->has_start = true;
	r->offset = addr - fstart;
	r->origin = "function-start";
}

static void resolve(struct sp_elfsym *e, uint64_t addr, struct sp_symres *r)
{
	memset(r, 0, sizeof(*r));
	const struct sp_sym *s = sp_symtab_find(&e->syms, addr);
	uint64_t fstart = 0;
	struct sp_gofunc gf;
	bool in_go = e->gotab && sp_gopclntab_lookup(e->gotab, addr, 0, &gf) == 1;
	bool in_fde = !in_go && (!s || !s->sized) && function_start(e, addr, &fstart);
	/*
	 * A symbol without a size reaches addr only because no other symbol
	 * starts in between (a stripped module keeps a few in .dynsym): it
	 * does not name a function that starts after it.  Nor does a C
	 * symbol of a cgo program name Go code.
	 */
	if (s && ((in_fde && fstart > s->start) ||
		  (in_go && gf.entry != s->start && (!s->sized || gf.entry > s->start))))
		s = NULL;
	if (s) {
		r->name = keep(e, s->name, true);
		r->offset = addr - s->start;
		r->origin = e->sym_origin;
	}
	if (!(e->o.lines || e->o.inline_frames) || !sp_elfsym_has_debuginfo(e)) {
		if (in_go)
			from_go_table(e, addr, r);
		name_function_start(e, addr, in_fde, fstart, r);
		return;
	}

	/*
	 * The source position of the address itself: in the unit libdw
	 * finds for it, from the line table our reader decoded, else from
	 * libdw's (dwfl_module_getsrc() finds the same unit).
	 */
	const char *file = NULL;
	int line = 0;
	Dwarf_Addr bias;
	Dwarf_Die *cu = unit_of(e, addr, &bias);
	if (!cu && in_go) {
		/* Go writes no .debug_aranges either: its own table, as stripped. */
		from_go_table(e, addr, r);
		name_function_start(e, addr, in_fde, fstart, r);
		return;
	}
	if (!cu && (cu = unit_by_ranges(e, addr - e->bias)))
		bias = e->bias;
	const struct sp_linetab *lt = cu && e->o.lines ? cu_linetab(e, cu) : NULL;
	Dwfl_Line *dl;
	if (lt)
		sp_linetab_find(lt, addr - bias, &file, &line);
	else if (cu && e->o.lines && (dl = dwfl_module_getsrc(e->mod, addr)))
		file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

	struct sp_scope scopes[SP_SCOPES_MAX];
	int n = cu ? scopes_of(e, cu, addr - bias, scopes) : 0;
	int inl = 0, sub = -1;
	for (int i = 0; i < n && sub < 0; i++) {
		if (scopes[i].inlined)
			inl++;
		else if (scopes[i].subprogram)
			sub = i;
	}
	if (n > 0)
		r->origin = "debuginfo";
	if (sub >= 0 && !r->name) {
		r->name = keep(e, scopes[sub].name, true);
		if (scopes[sub].has_entry)
			r->offset = addr - bias - scopes[sub].entry;
	}
	const char *pos_file = file;
	unsigned pos_line = line > 0 ? (unsigned)line : 0;
	if (e->o.inline_frames && inl > 0) {
		r->inl = calloc((size_t)inl, sizeof(*r->inl));
		for (int i = 0; r->inl && i < (sub >= 0 ? sub : n); i++) {
			/* The inlined scopes below the function, innermost first. */
			if (!scopes[i].inlined)
				continue;
			struct sp_inline *x = &r->inl[r->ninl++];
			x->name = keep(e, scopes[i].name, true);
			x->file = keep(e, pos_file, false);
			x->line = pos_line;
			pos_file = scopes[i].call_file;
			pos_line = scopes[i].call_line;
		}
	}
	r->file = keep(e, pos_file, false);
	r->line = pos_line;
	name_function_start(e, addr, in_fde, fstart, r);
}

const struct sp_symres *sp_elfsym_lookup(struct sp_elfsym *e, uint64_t addr)
{
	struct sp_symres *r = sp_u64map_get(&e->cache, addr);
	if (r)
		return r;
	if (!(r = sp_arena_alloc(&e->results, sizeof(*r))))
		return NULL;
	resolve(e, addr, r);
	if (sp_u64map_put(&e->cache, addr, r) < 0) {
		free(r->inl);
		return NULL;
	}
	return r;
}
