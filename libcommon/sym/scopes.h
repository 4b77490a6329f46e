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
 * The scopes of pc (a DWARF address) in f, innermost first, the function
 * last, into out (room for SP_SCOPES_MAX): from the function down through
 * the first scope at each level whose ranges hold pc, as walking the DIEs
 * would find them.  Returns their number, at least 1.
 */
int sp_fn_scopes_of(struct sp_fn_scopes *f, uint64_t pc, struct sp_scope *out);

/* A DIE as a scope (for scopes found by libdw's own walk); lt as above. */
void sp_scope_from_die(Dwarf_Die *die, Dwarf_Die *cu, const struct sp_linetab *lt,
		       struct sp_scope *out);

#endif
