/* SPDX-License-Identifier: MIT
 * fuzz-dies: the input as an ELF file with DWARF, opened by libdw from
 * memory; for each of its compile units, the functions sym/dies.c's walk
 * of the DIEs' bytes finds against those the walk through libdw finds
 * (sp_unit_fns_find() both ways), as a C unit and as a unit of another
 * language.
 *
 * It checks that
 *   - both give the same ranges, in the same order, with the same DIE
 *     offsets, and the same verdict on other top-level DIEs with an
 *     address, whenever our walk took the unit;
 *   - every range found has its end above its start;
 *   - each function's scopes (its inlined calls and blocks) read from the
 *     bytes (sp_fn_scopes_read_bytes()) are those read through libdw:
 *     the same DIEs with the same ranges, in the same order;
 *   - sp_dies_walk() alone on the input as .debug_info (and the same
 *     bytes as .debug_abbrev) returns one of its codes, visits DIEs at
 *     increasing offsets inside the bytes, and never more than the bytes
 *     could hold.
 *
 * Seeds: the module files of fuzz-elf-symbolize (gcc's DWARF 4 and 5,
 * compressed sections, a C++ program).  Any broken invariant calls
 * abort().  Nothing is printed on success and everything is freed before
 * returning.
 */
#include <elfutils/libdw.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/dies.h"
#include "sym/lines.h"
#include "sym/scopes.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* Each function's scopes read from the bytes and through libdw: the same. */
static void compare_scopes(Dwarf *dw, Dwarf_Die *cu, const struct sp_linesecs *s,
			   const struct sp_unit_fns *fns)
{
	uint64_t unit_off;
	struct sp_dies_unit *u = NULL;
	if (!sp_dies_unit_of(dw, cu, s, &unit_off) || sp_dies_unit_open(&u, s, unit_off) != SP_DIES_OK)
		return;
	for (size_t i = 0; i < fns->n && i < 64; i++) {
		Dwarf_Die fn;
		if (!dwarf_offdie(dw, fns->v[i].die, &fn))
			continue;
		struct sp_fn_scopes *a = sp_fn_scopes_read_bytes(dw, u, &fn, cu, NULL);
		struct sp_fn_scopes *b = sp_fn_scopes_read(&fn, cu, NULL);
		check(!a || !b || sp_fn_scopes_same(a, b));
		sp_fn_scopes_free(a);
		sp_fn_scopes_free(b);
	}
	sp_dies_unit_free(u);
}

static void compare(Dwarf *dw, Dwarf_Die *cu, const struct sp_linesecs *s, bool c_only)
{
	struct sp_unit_fns ours, theirs;
	if (sp_unit_fns_find(&ours, dw, cu, s, c_only, false) < 0 ||
	    sp_unit_fns_find(&theirs, dw, cu, s, c_only, true) < 0) {
		sp_unit_fns_free(&ours);
		return;	/* out of memory: nothing to compare */
	}
	check(theirs.by_libdw);
	check(ours.n == theirs.n && ours.other_pc == theirs.other_pc);
	for (size_t i = 0; i < ours.n; i++) {
		check(ours.v[i].lo == theirs.v[i].lo && ours.v[i].hi == theirs.v[i].hi &&
		      ours.v[i].die == theirs.v[i].die);
		check(ours.v[i].hi > ours.v[i].lo);
	}
	if (!c_only)
		compare_scopes(dw, cu, s, &theirs);
	sp_unit_fns_free(&ours);
	sp_unit_fns_free(&theirs);
}

struct seen {
	uint64_t last;
	size_t n, len;
};

static int visit(void *arg, const struct sp_die_seen *d)
{
	struct seen *s = arg;
	check(d->off < s->len && (s->n == 0 || d->off > s->last));
	check(!d->plain_range || d->tag == 0x2e /* DW_TAG_subprogram */);
	s->last = d->off;
	s->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The bytes alone, as both sections. */
	struct seen sn = { .len = size };
	int rc = sp_dies_walk(data, size, 0, data, size, size & 1, visit, &sn);
	check(rc == SP_DIES_OK || rc == SP_DIES_ASK_LIBDW || rc == SP_DIES_NOMEM);
	check(sn.n <= size);

	/* The bytes as an ELF file. */
	elf_version(EV_CURRENT);
	char *copy = malloc(size ? size : 1);
	check(copy != NULL);
	memcpy(copy, data, size);
	Elf *elf = elf_memory(copy, size);
	Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	struct sp_linesecs s;
	if (dw) {
		sp_linesecs_read(elf, &s);
		Dwarf_CU *cu = NULL;
		Dwarf_Half version;
		uint8_t type;
		Dwarf_Die die, sub;
		unsigned units = 0;
		while (units++ < 64 &&
		       dwarf_get_units(dw, cu, &cu, &version, &type, &die, &sub) == 0) {
			compare(dw, &die, &s, true);
			compare(dw, &die, &s, false);
		}
		dwarf_end(dw);
	}
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
