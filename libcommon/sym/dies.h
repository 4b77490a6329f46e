/* SPDX-License-Identifier: MIT */
/*
 * A compile unit's functions, found by walking its DIEs from the bytes of
 * .debug_info and .debug_abbrev instead of through libdw.
 *
 * The index sp-symbolize keeps per unit (sym/elfsym.c) lists the address
 * ranges of the functions at the unit's top level, and inside namespaces
 * and types for languages other than C, and notes whether any other
 * top-level DIE may hold an address.  Through libdw that walk costs a
 * scan of every attribute of every top-level DIE (dwarf_siblingof() and
 * dwarf_hasattr()): CPython's units each carry thousands of declarations
 * from its headers, and the walk was a third of sp-symbolize on it.
 *
 * The walk here reads a unit's abbreviations once and skips each DIE by
 * its forms.  It visits the DIEs libdw's walk would visit, in its order,
 * and only when the unit reads exactly as libdw reads it: a version 2 to
 * 5 compile or partial unit, every form one of DWARF 5's or GNU's with a
 * known size, no DW_FORM_indirect, every DW_AT_sibling pointing where
 * the walk of the children ends, every list of children ended by a null
 * entry inside the unit.  Anything else is SP_DIES_ASK_LIBDW and the
 * unit is walked through libdw.  A function's range is read here when
 * its DW_AT_low_pc is an address and its DW_AT_high_pc an address or a
 * constant, as dwarf_ranges() reads them first; any other function with
 * DW_AT_high_pc or DW_AT_ranges gets libdw's dwarf_ranges() on its DIE,
 * and one with neither has none, as dwarf_ranges() finds.
 */
#ifndef SP_SYM_DIES_H
#define SP_SYM_DIES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/lines.h"

enum {
	SP_DIES_OK = 0,
	SP_DIES_ASK_LIBDW = -1,	/* not a unit walked here as libdw walks it */
	SP_DIES_NOMEM = -2,
};

/* What the walk found: the ranges of functions, in the order found. */
struct sp_unit_fns {
	struct sp_unit_fn {
		uint64_t lo, hi;	/* [lo, hi), hi > lo */
		uint64_t die;		/* the function's DIE, by its .debug_info offset */
	} *v;
	size_t n, alloc;
	/*
	 * A DIE at the top level other than a function has DW_AT_low_pc or
	 * DW_AT_ranges, or is an imported unit.
	 */
	bool other_pc;
	bool by_libdw;		/* the unit was walked through libdw */
};

/*
 * The functions of unit cu (a unit's DIE from dw), of whose file s holds
 * the sections (sp_linesecs_read()), into *f (zeroed first; free with
 * sp_unit_fns_free()).  c_only: the unit is C, whose types hold no
 * function, and only its top level is walked.  libdw_only: walk through
 * libdw whatever the unit (the reference the walk here is checked with).
 * Returns SP_DIES_OK or SP_DIES_NOMEM.
 */
int sp_unit_fns_find(struct sp_unit_fns *f, Dwarf *dw, Dwarf_Die *cu,
		     const struct sp_linesecs *s, bool c_only, bool libdw_only);
void sp_unit_fns_free(struct sp_unit_fns *f);

/*
 * Whether unit cu is one the walk here may read (a compile or partial
 * unit of dw's own .debug_info, with s holding it): *unit_off, where its
 * header starts, for sp_dies_unit_open().
 */
bool sp_dies_unit_of(Dwarf *dw, Dwarf_Die *cu, const struct sp_linesecs *s, uint64_t *unit_off);

/*
 * sp_unit_fns_find() over a unit already read (NULL: walk through
 * libdw), which it shares with the unit's scopes.
 */
struct sp_dies_unit;
int sp_unit_fns_find_in(struct sp_unit_fns *f, Dwarf *dw, Dwarf_Die *cu,
			const struct sp_dies_unit *u, bool c_only);

/*
 * The walk alone, on the unit whose header starts at unit_off of the
 * len bytes of .debug_info at info, with .debug_abbrev at abbrev: each
 * DIE the walk visits is passed to visit().  Returns SP_DIES_OK,
 * SP_DIES_ASK_LIBDW or SP_DIES_NOMEM, or what visit returned when it was
 * not 0.  For sp_unit_fns_find() and the fuzz harness.
 */
enum {
	SP_DIE_LOW_PC = 1,	/* its abbreviation has DW_AT_low_pc */
	SP_DIE_HIGH_PC = 2,
	SP_DIE_RANGES = 4,
	SP_DIE_TOP = 8,		/* a DIE at the unit's top level */
};
struct sp_die_seen {
	uint64_t off;		/* from the unit's header */
	unsigned tag, flags;	/* flags: SP_DIE_* */
	/*
	 * A function whose range reads plainly (DW_AT_low_pc an address,
	 * DW_AT_high_pc an address or a constant): [lo, hi) is the one
	 * dwarf_ranges() gives.
	 */
	bool plain_range;
	uint64_t lo, hi;
};
int sp_dies_walk(const unsigned char *info, size_t len, uint64_t unit_off,
		 const unsigned char *abbrev, size_t abbrev_len, bool c_only,
		 int (*visit)(void *arg, const struct sp_die_seen *d), void *arg);

/*
 * A unit read once (its header and abbreviations) for reading its DIEs
 * by offset, as the walk above reads them: for a function's scopes
 * (scopes.h).  Offsets are from the start of .debug_info.  Open returns
 * SP_DIES_OK with *u, SP_DIES_ASK_LIBDW for a unit not read here, or
 * SP_DIES_NOMEM.
 */
int sp_dies_unit_open(struct sp_dies_unit **u, const struct sp_linesecs *s, uint64_t unit_off);
void sp_dies_unit_free(struct sp_dies_unit *u);

/* sp_dies_walk() over a unit already read. */
int sp_dies_walk_unit(const struct sp_dies_unit *u, bool c_only,
		      int (*visit)(void *arg, const struct sp_die_seen *d), void *arg);

/* The DIE at off (d->off is off): its tag, the attributes its abbreviation has, its plain range (any tag). */
int sp_dies_read(const struct sp_dies_unit *u, uint64_t off, struct sp_die_seen *d);

/*
 * Its first child and the DIE after it on its level, as dwarf_child()
 * and dwarf_siblingof() find them: 0 with the offset, 1 for none,
 * SP_DIES_ASK_LIBDW where the bytes do not read as libdw reads them.
 */
int sp_dies_child(const struct sp_dies_unit *u, uint64_t off, uint64_t *child);
int sp_dies_sibling(const struct sp_dies_unit *u, uint64_t off, uint64_t *next);

#endif
