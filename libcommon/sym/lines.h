/* SPDX-License-Identifier: MIT */
/*
 * A compile unit's line table (.debug_line), decoded in one pass into a
 * flat array: the rows libdw's dwarf_getsrclines() gives, in its order,
 * and the file names it makes.  libdw keeps each row in a list node of
 * its own and sorts the whole table by qsort, which made reading the
 * tables of a big program (CPython's) most of sp-symbolize's time.
 *
 * The decoder takes only the tables it can read exactly as libdw 0.188
 * does: DWARF 2 to 5, one operation per instruction, the common forms
 * of DWARF 5's file lists.  Anything else (a value libdw would find
 * invalid, a vendor extension, a form it does not know) ends with
 * SP_LINES_ASK_LIBDW, and the caller asks libdw, whose answer then is
 * the one given: the result is the same either way.
 */
#ifndef SP_SYM_LINES_H
#define SP_SYM_LINES_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row: an address and its source position. */
struct sp_linerow {
	uint64_t addr;
	uint32_t file;		/* index into the table's files */
	int32_t line;
	bool end;		/* an end_sequence row: the first address after a sequence */
};

struct sp_linetab {
	struct sp_linerow *rows;	/* by address, end rows first, then in program order */
	size_t nrows;
	const char **files;		/* index 0: "???" before DWARF 5, as libdw names it */
	size_t nfiles;
	char *names;			/* the files' names made from a directory and a name */
};

/* The sections a table and its strings may come from (NULL, 0: absent). */
struct sp_linesecs {
	const unsigned char *line;
	size_t line_len;
	const unsigned char *line_str;	/* .debug_line_str */
	size_t line_str_len;
	const unsigned char *str;	/* .debug_str */
	size_t str_len;
	/*
	 * Not the tables': the units' address ranges and the units
	 * (aranges.h), and their DIEs (dies.h); each NULL when it cannot be
	 * read.
	 */
	const unsigned char *aranges;	/* .debug_aranges */
	size_t aranges_len;
	const unsigned char *info;	/* .debug_info */
	size_t info_len;
	const unsigned char *abbrev;	/* .debug_abbrev */
	size_t abbrev_len;
};

/*
 * The sections of elf, a file libdw has opened (its debug sections are
 * then decompressed in place).  False when there is no .debug_line or
 * the file is one our reader does not take: not in the host's byte
 * order, a section still compressed, or a relocatable file whose
 * addresses need relocating.
 */
bool sp_linesecs_read(Elf *elf, struct sp_linesecs *s);

enum {
	SP_LINES_OK = 0,
	SP_LINES_ASK_LIBDW = -1,	/* not a table this decoder reads as libdw does */
	SP_LINES_NOMEM = -2,
};

/*
 * Decodes the table at offset off of s->line for a unit whose
 * DW_AT_comp_dir is comp_dir (NULL: none) and whose addresses take
 * address_size bytes.  Returns SP_LINES_OK with *t filled (free it with
 * sp_linetab_free), or a negative SP_LINES_* with *t empty.  The whole
 * program is run even for the files alone, as DW_LNE_define_file may
 * add some.
 */
int sp_linetab_decode(struct sp_linetab *t, const struct sp_linesecs *s, uint64_t off,
		      const char *comp_dir, unsigned address_size);
void sp_linetab_free(struct sp_linetab *t);

/*
 * The row for addr as dwfl_module_getsrc() finds it: the last row at or
 * below addr, unless that row ends a sequence.  Returns true with *line
 * and *file (NULL when the row's file index is past the files, as
 * dwfl_lineinfo() gives it), or false when no row covers addr.
 */
bool sp_linetab_find(const struct sp_linetab *t, uint64_t addr, const char **file, int *line);

#endif
