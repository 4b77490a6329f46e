/* SPDX-License-Identifier: MIT
 * linecheck: sym/lines.c's line tables against libdw's, for
 * tests/063-line-tables.bats.
 *
 *	linecheck FILE...
 *
 * For every compile unit of each file (or of the debug file libdwfl
 * finds for it), decodes the unit's line table with sp_linetab_decode()
 * and compares it with what libdw gives:
 *   - every row (address, line, end of sequence, file name) with
 *     dwarf_getsrclines() and dwarf_linesrc(), in order;
 *   - the file names with dwarf_getsrcfiles();
 *   - for each row's address, one byte before and one after, the
 *     position dwfl_module_getsrc() and dwfl_lineinfo() give, with
 *     sp_linetab_find(), where libdwfl finds the address in this unit.
 * And the unit sym/aranges.c finds by .debug_aranges, with the unit
 * dwfl_module_addrdie() finds, at each row's address and the bytes
 * around it, and at both ends of every run of ranges.
 * And the functions of every unit (sym/dies.h) found by our walk of its
 * DIEs' bytes with those found through libdw, walked as a C unit and as
 * a unit of another language.
 * And the scopes of each of those functions (sym/scopes.h) read from the
 * DIEs' bytes with those read through libdw: the same DIEs and ranges.
 * Prints per file "FILE: U units, D decoded, L to libdw, A addresses,
 * R by aranges, W walked, F functions, S scopes by bytes, N differences"
 * (R: addresses whose unit our aranges reader found; 0 when it leaves
 * the file to libdwfl; W: units whose DIEs our walk read rather than
 * leaving them to libdw; S: functions whose scopes were read from the
 * bytes) and the
 * first differences; exits 0, 1 on a difference, 2 when a file cannot be
 * read.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/aranges.h"
#include "sym/dies.h"
#include "sym/lines.h"
#include "sym/scopes.h"
#include "util/alloc.h"

static unsigned long differences;

/* The row addresses of a file's units, probed again by check_aranges(). */
static uint64_t *probes;
static size_t nprobes, alloc_probes;

static void probe(uint64_t addr)
{
	if (SP_ALLOC_GROW(probes, nprobes + 1, alloc_probes) == 0)
		probes[nprobes++] = addr;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void differ(const char *file, Dwarf_Off cu, const char *what, uint64_t at,
		   const char *ours, long our_line, const char *libdw, long libdw_line)
{
	if (differences++ < 20)
		printf("%s: unit 0x%" PRIx64 ": %s 0x%" PRIx64 ": ours %s:%ld, libdw %s:%ld\n", file,
		       (uint64_t)cu, what, at, ours ? ours : "(none)", our_line,
		       libdw ? libdw : "(none)", libdw_line);
}

/* The position dwfl_module_getsrc() gives addr, when it finds it in unit cu. */
static bool libdwfl_at(Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Off cu, uint64_t addr,
		       bool *found, const char **file, int *line)
{
	Dwarf_Addr b;
	Dwarf_Die *die = dwfl_module_addrdie(mod, addr + bias, &b);
	if (!die || dwarf_dieoffset(die) != cu)
		return false;
	Dwfl_Line *l = dwfl_module_getsrc(mod, addr + bias);
	*found = l != NULL;
	*file = NULL;
	*line = 0;
	if (l)
		*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return true;
}

static void check_unit(const char *name, Dwfl_Module *mod, Dwarf_Addr bias, Dwarf_Die *cu,
		       const struct sp_linesecs *secs, unsigned long *decoded,
		       unsigned long *to_libdw, unsigned long *addrs)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	uint8_t asize, osize;
	Dwarf_Die cudie;
	Dwarf_Off cuoff = dwarf_dieoffset(cu);
	if (!dwarf_diecu(cu, &cudie, &asize, &osize) || !dwarf_attr(cu, DW_AT_stmt_list, &a) ||
	    dwarf_formudata(&a, &off) != 0)
		return;
	const char *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	struct sp_linetab t;
	int rc = sp_linetab_decode(&t, secs, off, comp_dir, asize);
	Dwarf_Lines *lines;
	size_t n;
	int lrc = dwarf_getsrclines(cu, &lines, &n);
	if (rc != SP_LINES_OK) {
		++*to_libdw;
		return;
	}
	++*decoded;
	if (lrc != 0) {
		differ(name, cuoff, "table libdw refuses", off, "decoded", 0, dwarf_errmsg(-1), 0);
		sp_linetab_free(&t);
		return;
	}
	if (n != t.nrows)
		differ(name, cuoff, "rows", n, "count", (long)t.nrows, "count", (long)n);
	for (size_t i = 0; i < n && i < t.nrows; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		int line;
		bool end;
		dwarf_lineaddr(l, &addr);
		dwarf_lineno(l, &line);
		dwarf_lineendsequence(l, &end);
		const char *src = dwarf_linesrc(l, NULL, NULL);
		const struct sp_linerow *r = &t.rows[i];
		const char *ours = r->file < t.nfiles ? t.files[r->file] : NULL;
		if (addr != r->addr || line != r->line || end != r->end || !same(src, ours))
			differ(name, cuoff, end ? "end row" : "row", addr, ours, r->line, src, line);
	}
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || nfiles != t.nfiles) {
		differ(name, cuoff, "file count", 0, "", (long)t.nfiles, "", (long)nfiles);
	} else {
		for (size_t i = 0; i < nfiles; i++)
			if (!same(dwarf_filesrc(files, i, NULL, NULL), t.files[i]))
				differ(name, cuoff, "file", i, t.files[i], 0,
				       dwarf_filesrc(files, i, NULL, NULL), 0);
	}
	for (size_t i = 0; i < t.nrows; i++) {
		probe(t.rows[i].addr);
		for (int d = -1; d <= 1; d++) {
			uint64_t at = t.rows[i].addr + (uint64_t)(int64_t)d;
			bool found, ours;
			const char *file, *ofile = NULL;
			int line, oline = 0;
			if (!libdwfl_at(mod, bias, cuoff, at, &found, &file, &line))
				continue;
			++*addrs;
			ours = sp_linetab_find(&t, at, &ofile, &oline);
			if (ours != found || (found && (line != oline || !same(file, ofile))))
				differ(name, cuoff, "address", at, ours ? ofile : "(not found)",
				       oline, found ? file : "(not found)", line);
		}
	}
	sp_linetab_free(&t);
}

/*
 * The unit of every probe, of both ends of every run and of the end of
 * the last range, ours against libdwfl's; returns the addresses compared.
 */
static unsigned long check_aranges(const char *name, Dwfl_Module *mod, Dwarf *dw,
				   Dwarf_Addr bias, const struct sp_linesecs *secs)
{
	struct sp_aranges a;
	unsigned long n = 0;
	if (sp_aranges_read(&a, dw, secs) != SP_ARANGES_OK)
		return 0;
	for (size_t i = 0; i < a.nruns; i++) {
		probe(a.runs[i].lo);
		probe(a.runs[i].lo - 1);
		if (i + 1 < a.nruns)
			probe(a.runs[i + 1].lo - 1);
	}
	probe(a.last_end);
	probe(a.last_end + 1);
	for (size_t i = 0; i < nprobes; i++) {
		for (int d = -1; d <= 1; d++) {
			uint64_t at = probes[i] + (uint64_t)(int64_t)d, die = 0;
			Dwarf_Addr b;
			Dwarf_Die *cu = dwfl_module_addrdie(mod, at + bias, &b);
			bool ours = sp_aranges_find(&a, at, &die);
			n++;
			if (ours != (cu != NULL) || (cu && (die != dwarf_dieoffset(cu) || b != bias)))
				differ(name, cu ? dwarf_dieoffset(cu) : 0, "unit of address", at,
				       ours ? "found" : "(not found)", (long)die,
				       cu ? "found" : "(not found)",
				       cu ? (long)dwarf_dieoffset(cu) : 0);
		}
	}
	sp_aranges_free(&a);
	return n;
}

/*
 * The scopes of every function of unit cu (the DIEs in fns) read from the
 * bytes against those read through libdw.  Adds to *nfns the functions
 * and to *nbytes those read from the bytes.
 */
static void check_scopes(const char *name, Dwarf *dw, Dwarf_Die *cu,
			 const struct sp_linesecs *secs, const struct sp_unit_fns *fns,
			 unsigned long *nfns, unsigned long *nbytes)
{
	Dwarf_Half version;
	uint8_t unit_type;
	struct sp_dies_unit *u = NULL;
	if (dwarf_cu_getdwarf(cu->cu) == dw &&
	    dwarf_cu_info(cu->cu, &version, &unit_type, NULL, NULL, NULL, NULL, NULL) == 0 &&
	    (unit_type == DW_UT_compile || unit_type == DW_UT_partial) &&
	    sp_dies_unit_open(&u, secs, dwarf_dieoffset(cu) - dwarf_cuoffset(cu)) == SP_DIES_NOMEM) {
		fprintf(stderr, "linecheck: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < fns->n; i++) {
		Dwarf_Die fn;
		/* A function of several ranges is listed once a range. */
		if ((i && fns->v[i].die == fns->v[i - 1].die) || !dwarf_offdie(dw, fns->v[i].die, &fn))
			continue;
		struct sp_fn_scopes *theirs = sp_fn_scopes_read(&fn, cu, NULL);
		struct sp_fn_scopes *ours = u ? sp_fn_scopes_read_bytes(dw, u, &fn, cu, NULL) : NULL;
		if (!theirs || (u && !ours)) {
			fprintf(stderr, "linecheck: out of memory\n");
			exit(2);
		}
		(*nfns)++;
		*nbytes += ours && !sp_fn_scopes_by_libdw(ours);
		if (ours && !sp_fn_scopes_same(ours, theirs) && differences++ < 20)
			printf("%s: unit 0x%" PRIx64 ": scopes of the function at 0x%" PRIx64
			       " differ\n", name, (uint64_t)dwarf_dieoffset(cu), fns->v[i].die);
		sp_fn_scopes_free(ours);
		sp_fn_scopes_free(theirs);
	}
	sp_dies_unit_free(u);
}

/*
 * The functions of unit cu by sym/dies.c's walk against the walk through
 * libdw, as a C unit and as another: the same ranges in the same order,
 * the same other_pc.  Returns whether our walk took the unit.
 */
static bool check_functions(const char *name, Dwarf *dw, Dwarf_Die *cu,
			    const struct sp_linesecs *secs, unsigned long *nfns,
			    unsigned long *nbytes)
{
	bool walked = true;
	for (int c_only = 0; c_only <= 1; c_only++) {
		struct sp_unit_fns ours, theirs;
		if (sp_unit_fns_find(&ours, dw, cu, secs, c_only, false) < 0 ||
		    sp_unit_fns_find(&theirs, dw, cu, secs, c_only, true) < 0) {
			fprintf(stderr, "linecheck: out of memory\n");
			exit(2);
		}
		walked = walked && !ours.by_libdw;
		bool same_fns = ours.n == theirs.n && ours.other_pc == theirs.other_pc;
		for (size_t i = 0; same_fns && i < ours.n; i++)
			same_fns = ours.v[i].lo == theirs.v[i].lo && ours.v[i].hi == theirs.v[i].hi &&
				   ours.v[i].die == theirs.v[i].die;
		if (!same_fns && differences++ < 20)
			printf("%s: unit 0x%" PRIx64 ": functions (%s): ours %zu%s, libdw %zu%s\n", name,
			       (uint64_t)dwarf_dieoffset(cu), c_only ? "C" : "any language", ours.n,
			       ours.other_pc ? " and others with pc" : "", theirs.n,
			       theirs.other_pc ? " and others with pc" : "");
		if (!c_only)
			check_scopes(name, dw, cu, secs, &theirs, nfns, nbytes);
		sp_unit_fns_free(&ours);
		sp_unit_fns_free(&theirs);
	}
	return walked;
}

static int check_file(const char *name)
{
	static char *debuginfo_path = NULL;
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	Dwfl_Module *mod = dwfl ? dwfl_report_offline(dwfl, name, name, -1) : NULL;
	Dwarf_Addr bias;
	Dwarf *dw;
	if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0 ||
	    !(dw = dwfl_module_getdwarf(mod, &bias))) {
		fprintf(stderr, "linecheck: %s: no DWARF (%s)\n", name, dwfl_errmsg(-1));
		dwfl_end(dwfl);
		return 2;
	}
	struct sp_linesecs secs;
	if (!sp_linesecs_read(dwarf_getelf(dw), &secs)) {
		fprintf(stderr, "linecheck: %s: no .debug_line our reader takes\n", name);
		dwfl_end(dwfl);
		return 2;
	}
	unsigned long units = 0, decoded = 0, to_libdw = 0, addrs = 0, walked = 0, nfns = 0;
	unsigned long nbytes = 0;
	unsigned long before = differences;
	Dwarf_Die *cu = NULL;
	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		units++;
		check_unit(name, mod, bias, cu, &secs, &decoded, &to_libdw, &addrs);
		walked += check_functions(name, dw, cu, &secs, &nfns, &nbytes);
	}
	unsigned long ranged = check_aranges(name, mod, dw, bias, &secs);
	nprobes = 0;
	printf("%s: %lu units, %lu decoded, %lu to libdw, %lu addresses, %lu by aranges, "
	       "%lu walked, %lu functions, %lu scopes by bytes, %lu differences\n",
	       name, units, decoded, to_libdw, addrs, ranged, walked, nfns, nbytes,
	       differences - before);
	dwfl_end(dwfl);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: linecheck FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		int r = check_file(argv[i]);
		if (r > rc)
			rc = r;
	}
	return differences ? 1 : rc;
}
