/* SPDX-License-Identifier: MIT
 * Unit tests of sym/aranges.c on .debug_aranges sections built here:
 * sets read to their pair of zeros as libdw reads them, ranges sorted
 * and merged into runs of one unit, libdwfl's search (gaps count as the
 * run before, the end of the last range included), and the sections
 * left to libdwfl.  tests/063-line-tables.bats compares the reader with
 * libdwfl on real programs.
 */
#include <string.h>

#include "sym/aranges.h"
#include "unit.h"

struct ab {
	unsigned char b[512];
	size_t len;
};

static void le(struct ab *a, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		a->b[a->len++] = (unsigned char)(v >> (8 * i));
}

/* A DWARF 32 set's header for the unit at cu, 8-byte addresses, padded to 16. */
static void set(struct ab *a, uint64_t cu, unsigned version)
{
	le(a, 0, 4);	/* the length: libdw does not read it */
	le(a, version, 2);
	le(a, cu, 4);
	le(a, 8, 1);
	le(a, 0, 1);
	le(a, 0, 4);
}

static void range(struct ab *a, uint64_t addr, uint64_t len)
{
	le(a, addr, 8);
	le(a, len, 8);
}

/* Three units of 0x100 bytes, DIEs after an 11-byte header. */
static const struct sp_unit_span units[] = {
	{ 0x000, 0x100, 0x00b },
	{ 0x100, 0x200, 0x10b },
	{ 0x200, 0x300, 0x20b },
};

static int decode(struct sp_aranges *r, const struct ab *a)
{
	return sp_aranges_decode(r, a->b, a->len, 0x300, units, 3);
}

static uint64_t unit_at(const struct sp_aranges *r, uint64_t addr)
{
	uint64_t die = 0;
	return sp_aranges_find(r, addr, &die) ? die : 0;
}

SP_TEST(aranges_sorted_merged_and_found_as_libdwfl_finds)
{
	struct ab a = { .len = 0 };
	/* Unit 2's ranges first, out of order; unit 0's two around unit 1's. */
	set(&a, 0x200, 2);
	range(&a, 0x3000, 0x100);
	range(&a, 0x2800, 0x100);
	range(&a, 0, 0);
	set(&a, 0x000, 2);
	range(&a, 0x1000, 0x10);
	range(&a, 0x1020, 0x10);	/* a gap, then the same unit: one run */
	range(&a, 0x2000, 0x10);
	range(&a, 0, 0);
	set(&a, 0x100, 2);
	range(&a, 0x1800, 0x100);
	range(&a, 0, 0);
	struct sp_aranges r;
	SP_CHECK(decode(&r, &a) == SP_ARANGES_OK);
	/* 0x1000 unit 0, 0x1800 unit 1, 0x2000 unit 0, 0x2800 unit 2 (with 0x3000). */
	SP_CHECK(r.nruns == 4);
	SP_CHECK(r.last_end == 0x3100);
	SP_CHECK(unit_at(&r, 0xfff) == 0);
	SP_CHECK(unit_at(&r, 0x1000) == 0x00b);
	SP_CHECK(unit_at(&r, 0x1015) == 0x00b);	/* the gap inside the run */
	SP_CHECK(unit_at(&r, 0x17ff) == 0x00b);	/* the gap after it */
	SP_CHECK(unit_at(&r, 0x1800) == 0x10b);
	SP_CHECK(unit_at(&r, 0x2000) == 0x00b);
	SP_CHECK(unit_at(&r, 0x2900) == 0x20b);
	SP_CHECK(unit_at(&r, 0x3100) == 0x20b);	/* the last range's end is in */
	SP_CHECK(unit_at(&r, 0x3101) == 0);
	sp_aranges_free(&r);
}

SP_TEST(aranges_a_unit_offset_inside_a_unit_is_that_unit)
{
	struct ab a = { .len = 0 };
	set(&a, 0x180, 2);
	range(&a, 0x1000, 0x10);
	range(&a, 0, 0);
	struct sp_aranges r;
	SP_CHECK(decode(&r, &a) == SP_ARANGES_OK);
	SP_CHECK(unit_at(&r, 0x1000) == 0x10b);
	sp_aranges_free(&r);
	/* No ranges at all: found nowhere. */
	a.len = 0;
	set(&a, 0, 2);
	range(&a, 0, 0);
	SP_CHECK(decode(&r, &a) == SP_ARANGES_OK && r.nruns == 0);
	SP_CHECK(unit_at(&r, 0x1000) == 0);
}

SP_TEST(aranges_leaves_to_libdwfl_what_libdw_refuses)
{
	struct ab a = { .len = 0 };
	struct sp_aranges r;
	set(&a, 0, 3);		/* version 3 */
	range(&a, 0x1000, 0x10);
	range(&a, 0, 0);
	SP_CHECK(decode(&r, &a) == SP_ARANGES_ASK_LIBDW && r.runs == NULL);
	a.len = 0;
	set(&a, 0x300, 2);	/* a unit past the units */
	range(&a, 0x1000, 0x10);
	range(&a, 0, 0);
	SP_CHECK(decode(&r, &a) == SP_ARANGES_ASK_LIBDW);
	a.len = 0;
	set(&a, 0, 2);
	range(&a, 0x1000, 0x10);	/* no pair of zeros before the end */
	SP_CHECK(decode(&r, &a) == SP_ARANGES_ASK_LIBDW);
	a.len = 0;
	set(&a, 0, 2);
	a.b[11] = 1;		/* a segment selector */
	range(&a, 0x1000, 0x10);
	range(&a, 0, 0);
	SP_CHECK(decode(&r, &a) == SP_ARANGES_ASK_LIBDW);
	a.len = 0;
	le(&a, 0xfffffff0, 4);	/* a reserved length */
	SP_CHECK(decode(&r, &a) == SP_ARANGES_ASK_LIBDW);
}
