/* SPDX-License-Identifier: MIT */
/*
 * The scopes of a function that an address can lie in (its inlined calls
 * and blocks), read from DWARF once per function and kept flat, so that
 * finding an address's chain of inlined calls walks an array, not DIEs.
 */
#ifndef SP_SYM_SCOPES_H
#define SP_SYM_SCOPES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "sym/lines.h"

/* One scope of an address, as a symbolizer names it. */
struct sp_scope {
	bool inlined;		/* an inlined call (else a block or the function) */
	bool subprogram;	/* the function itself */
	const char *name;	/* its linkage name, else its name; NULL: none */
	/* An inlined call: where it was called from (NULL, 0: unknown). */
	const char *call_file;
	unsigned call_line;
	bool has_entry;		/* the function: its entry address */
	uint64_t entry;
};

/* The most scopes an address has (deeper ones are not looked at). */
#define SP_SCOPES_MAX 64

struct sp_fn_scopes;

/*
 * Reads the scopes of the function fn (a DW_TAG_subprogram of unit cu):
 * their DIEs and ranges.  A scope is named the first time
 * sp_fn_scopes_of() returns it, an inlined call's file from lt, the
 * unit's line table (NULL: ask libdw), which must last as long as the
 * scopes.  NULL when memory runs out.
 */
struct sp_fn_scopes *sp_fn_scopes_read(Dwarf_Die *fn, Dwarf_Die *cu, const struct sp_linetab *lt);
void sp_fn_scopes_free(struct sp_fn_scopes *f);

/*
 * The same scopes, found by reading the DIEs' bytes of unit u (the unit
 * of fn, from dw: dies.h) instead of walking them through libdw, which
 * visits every attribute of every DIE below a function; where the bytes
 * do not read as libdw reads them, read as sp_fn_scopes_read() reads
 * them.  NULL when memory runs out.
 */
struct sp_dies_unit;
struct sp_fn_scopes *sp_fn_scopes_read_bytes(Dwarf *dw, const struct sp_dies_unit *u,
					     Dwarf_Die *fn, Dwarf_Die *cu,
					     const struct sp_linetab *lt);

/*
 * The scopes of pc (a DWARF address) in f, innermost first, the function
 * last, into out (room for SP_SCOPES_MAX): from the function down through
 * the first scope at each level whose ranges hold pc, as walking the DIEs
 * would find them.  Returns their number, at least 1.
 */
int sp_fn_scopes_of(struct sp_fn_scopes *f, uint64_t pc, struct sp_scope *out);

/*
 * For checks: whether a and b hold the same scopes (the same DIEs with
 * the same ranges, in the same order), and whether f was read through
 * libdw.
 */
bool sp_fn_scopes_same(const struct sp_fn_scopes *a, const struct sp_fn_scopes *b);
bool sp_fn_scopes_by_libdw(const struct sp_fn_scopes *f);

/* A DIE as a scope (for scopes found by libdw's own walk); lt as above. */
void sp_scope_from_die(Dwarf_Die *die, Dwarf_Die *cu, const struct sp_linetab *lt,
		       struct sp_scope *out);

#endif
