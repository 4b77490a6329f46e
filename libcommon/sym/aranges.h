/* SPDX-License-Identifier: MIT */
/*
 * Which compile unit holds an address, by .debug_aranges, found as
 * libdwfl's dwfl_module_addrdie() finds it (elfutils 0.188) but without
 * its cost: libdw's dwarf_getaranges() keeps every range in a list node
 * of its own and sorts them by qsort, which for glibc's debug file was a
 * quarter of a warm sp-symbolize and most of its page faults.
 *
 * The table is taken only when it reads exactly as libdw reads it; any
 * set libdw would refuse (a version other than 2, a segment selector, a
 * range past the end, a unit offset in no unit) ends with
 * SP_ARANGES_ASK_LIBDW, and the caller asks libdwfl, whose answer then
 * is the one given.
 */
#ifndef SP_SYM_ARANGES_H
#define SP_SYM_ARANGES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/lines.h"

/* A unit of .debug_info: where its header starts, where it ends, its DIE. */
struct sp_unit_span {
	uint64_t start, end, die;
};

/* A run of ranges, by address, that all belong to one unit. */
struct sp_arange_run {
	uint64_t lo;		/* the first range's start */
	uint64_t die;		/* the offset of the unit's DIE in .debug_info */
};

struct sp_aranges {
	struct sp_arange_run *runs;
	size_t nruns;
	uint64_t last_end;	/* the end of the range with the highest start */
};

enum {
	SP_ARANGES_OK = 0,
	SP_ARANGES_ASK_LIBDW = -1,	/* not a table read here as libdw reads it */
	SP_ARANGES_NOMEM = -2,
};

/*
 * Decodes .debug_aranges (data, len: in the host's byte order) of a file
 * whose .debug_info is info_len bytes long and holds the units in
 * units[0..nunits), by start.  Returns SP_ARANGES_OK with *a filled (no
 * runs when the section holds no range; free with sp_aranges_free), or a
 * negative SP_ARANGES_* with *a empty.
 */
int sp_aranges_decode(struct sp_aranges *a, const unsigned char *data, size_t len,
		      uint64_t info_len, const struct sp_unit_span *units, size_t nunits);
void sp_aranges_free(struct sp_aranges *a);

/*
 * The table of dw, a file libdw has opened, from its sections s
 * (sp_linesecs_read): its units walked by dwarf_next_unit(), then
 * sp_aranges_decode().  SP_ARANGES_ASK_LIBDW too when the file has no
 * .debug_aranges or it cannot be read here.
 */
int sp_aranges_read(struct sp_aranges *a, Dwarf *dw, const struct sp_linesecs *s);

/*
 * The DIE offset of the unit holding addr (a DWARF address), as
 * libdwfl's search picks it: the run that starts at or below addr, a gap
 * after a run counting as the run's.  False when addr lies below the
 * first run or past the last range.
 */
bool sp_aranges_find(const struct sp_aranges *a, uint64_t addr, uint64_t *die);

#endif
