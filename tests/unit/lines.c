/* SPDX-License-Identifier: MIT
 * Unit tests of sym/lines.c on line tables built here: DWARF 4 and 5
 * headers, sequences out of order, an end row and a start at one
 * address, file names joined as libdw joins them, and the tables the
 * reader leaves to libdw.  tests/063-line-tables.bats compares the
 * reader with libdw on real programs.
 */
#include <dwarf.h>
#include <stdio.h>
#include <string.h>

#include "sym/lines.h"
#include "unit.h"

struct lb {
	unsigned char b[1024];
	size_t len;
};

static void u8(struct lb *l, unsigned v)
{
	l->b[l->len++] = (unsigned char)v;
}

static void le(struct lb *l, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		u8(l, (unsigned)(v >> (8 * i)) & 0xff);
}

static void uleb(struct lb *l, uint64_t v)
{
	do {
		unsigned b = v & 0x7f;
		v >>= 7;
		u8(l, b | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct lb *l, int64_t v)
{
	for (;;) {
		unsigned b = (unsigned)v & 0x7f;
		v >>= 7;
		bool done = (v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40));
		u8(l, b | (done ? 0 : 0x80));
		if (done)
			return;
	}
}

static void str(struct lb *l, const char *s)
{
	memcpy(l->b + l->len, s, strlen(s) + 1);
	l->len += strlen(s) + 1;
}

/* Where the header's lengths go, filled in by end_header and end_unit. */
struct marks {
	size_t unit, header, header_start;
};

/* A header up to its standard opcode lengths (opcode_base 13). */
static struct marks begin(struct lb *l, unsigned version, unsigned max_ops)
{
	struct marks m;
	m.unit = l->len;
	le(l, 0, 4);
	le(l, version, 2);
	if (version >= 5) {
		u8(l, 8);	/* address size */
		u8(l, 0);	/* segment selector size */
	}
	m.header = l->len;
	le(l, 0, 4);
	m.header_start = l->len;
	u8(l, 1);		/* minimum instruction length */
	if (version >= 4)
		u8(l, max_ops);
	u8(l, 1);		/* default is_stmt */
	u8(l, (unsigned char)-5);	/* line base */
	u8(l, 14);		/* line range */
	u8(l, 13);		/* opcode base */
	static const unsigned char lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	for (int i = 0; i < 12; i++)
		u8(l, lengths[i]);
	return m;
}

static void end_header(struct lb *l, const struct marks *m)
{
	uint64_t n = l->len - m->header_start;
	for (unsigned i = 0; i < 4; i++)
		l->b[m->header + i] = (unsigned char)(n >> (8 * i));
}

static void end_unit(struct lb *l, const struct marks *m)
{
	uint64_t n = l->len - m->unit - 4;
	for (unsigned i = 0; i < 4; i++)
		l->b[m->unit + i] = (unsigned char)(n >> (8 * i));
}

static void set_address(struct lb *l, uint64_t a)
{
	u8(l, 0);
	u8(l, 9);
	u8(l, DW_LNE_set_address);
	le(l, a, 8);
}

static void end_sequence(struct lb *l)
{
	u8(l, 0);
	u8(l, 1);
	u8(l, DW_LNE_end_sequence);
}

/* A row at line, addr_advance bytes on: a special opcode. */
static void special(struct lb *l, int line_advance, unsigned addr_advance)
{
	u8(l, (unsigned)(line_advance + 5) + 14 * addr_advance + 13);
}

/* DWARF 4: directories inc and /abs; files a.c, b.h, /x/c.h, d.h. */
static struct marks v4_lists(struct lb *l, unsigned max_ops)
{
	struct marks m = begin(l, 4, max_ops);
	str(l, "inc");
	str(l, "/abs");
	u8(l, 0);
	const char *names[] = { "a.c", "b.h", "/x/c.h", "d.h" };
	const unsigned dirs[] = { 0, 1, 2, 2 };
	for (int i = 0; i < 4; i++) {
		str(l, names[i]);
		uleb(l, dirs[i]);
		uleb(l, 0);
		uleb(l, 0);
	}
	u8(l, 0);
	end_header(l, &m);
	return m;
}

static int decode(struct sp_linetab *t, const struct lb *l, const char *comp_dir)
{
	struct sp_linesecs s = { .line = l->b, .line_len = l->len };
	return sp_linetab_decode(t, &s, 0, comp_dir, 8);
}

SP_TEST(lines_v4_sequences_sorted_and_files_joined)
{
	struct lb l = { .len = 0 };
	struct marks m = v4_lists(&l, 1);
	/* A sequence at 0x2000 first, then 0x1000-0x1010, then one from 0x1010. */
	set_address(&l, 0x2000);
	u8(&l, DW_LNS_set_file);
	uleb(&l, 2);
	u8(&l, DW_LNS_advance_line);
	sleb(&l, 9);
	u8(&l, DW_LNS_copy);		/* 0x2000 b.h:10 */
	special(&l, 2, 4);		/* 0x2004 b.h:12 */
	u8(&l, DW_LNS_advance_pc);
	uleb(&l, 8);
	end_sequence(&l);		/* 0x200c end */
	set_address(&l, 0x1000);
	u8(&l, DW_LNS_copy);		/* 0x1000 a.c:1 */
	u8(&l, DW_LNS_set_file);
	uleb(&l, 4);
	special(&l, -1 + 1, 6);		/* 0x1006 d.h:1 */
	u8(&l, DW_LNS_fixed_advance_pc);
	le(&l, 10, 2);
	end_sequence(&l);		/* 0x1010 end */
	set_address(&l, 0x1010);
	u8(&l, DW_LNS_set_file);
	uleb(&l, 3);
	u8(&l, DW_LNS_advance_line);
	sleb(&l, 99);
	u8(&l, DW_LNS_copy);		/* 0x1010 /x/c.h:100 */
	special(&l, -3, 2);		/* 0x1012 /x/c.h:97 */
	u8(&l, DW_LNS_const_add_pc);	/* (255 - 13) / 14 = 17 */
	end_sequence(&l);		/* 0x1023 end */
	end_unit(&l, &m);

	struct sp_linetab t;
	SP_CHECK(decode(&t, &l, "/src") == SP_LINES_OK);
	SP_CHECK(t.nfiles == 5);
	if (t.nfiles == 5) {
		SP_CHECK_STR(t.files[0], "???");
		SP_CHECK_STR(t.files[1], "/src/a.c");
		SP_CHECK_STR(t.files[2], "inc/b.h");
		SP_CHECK_STR(t.files[3], "/x/c.h");
		SP_CHECK_STR(t.files[4], "/abs/d.h");
	}
	const struct { uint64_t addr; int line; bool end; } want[] = {
		{ 0x1000, 1, false }, { 0x1006, 1, false }, { 0x1010, 1, true },
		{ 0x1010, 100, false }, { 0x1012, 97, false }, { 0x1023, 97, true },
		{ 0x2000, 10, false }, { 0x2004, 12, false }, { 0x200c, 12, true },
	};
	SP_CHECK(t.nrows == sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < t.nrows && i < sizeof(want) / sizeof(want[0]); i++)
		SP_CHECK(t.rows[i].addr == want[i].addr && t.rows[i].line == want[i].line &&
			 t.rows[i].end == want[i].end);

	const char *file;
	int line;
	SP_CHECK(!sp_linetab_find(&t, 0xfff, &file, &line));
	SP_CHECK(sp_linetab_find(&t, 0x1005, &file, &line) && line == 1);
	SP_CHECK_STR(file, "/src/a.c");
	/* At an end and a start at once, the start's row. */
	SP_CHECK(sp_linetab_find(&t, 0x1010, &file, &line) && line == 100);
	SP_CHECK_STR(file, "/x/c.h");
	SP_CHECK(sp_linetab_find(&t, 0x1022, &file, &line) && line == 97);
	/* Between sequences, and past the last. */
	SP_CHECK(!sp_linetab_find(&t, 0x1023, &file, &line));
	SP_CHECK(!sp_linetab_find(&t, 0x1fff, &file, &line));
	SP_CHECK(sp_linetab_find(&t, 0x200b, &file, &line) && line == 12);
	SP_CHECK_STR(file, "inc/b.h");
	SP_CHECK(!sp_linetab_find(&t, 0x200c, &file, &line));
	sp_linetab_free(&t);

	/* Without a compilation directory, a name in directory 0 stays alone. */
	SP_CHECK(decode(&t, &l, NULL) == SP_LINES_OK);
	if (t.nfiles == 5)
		SP_CHECK_STR(t.files[1], "a.c");
	sp_linetab_free(&t);
}

SP_TEST(lines_last_row_is_an_end_and_a_file_past_the_list_has_no_name)
{
	struct lb l = { .len = 0 };
	struct marks m = v4_lists(&l, 1);
	set_address(&l, 0x3000);
	u8(&l, DW_LNS_copy);
	u8(&l, DW_LNS_set_file);
	uleb(&l, 9);
	special(&l, 1, 3);	/* 0x3003, file 9 of 5; no end_sequence follows */
	special(&l, 1, 3);	/* 0x3006: made the end */
	end_unit(&l, &m);
	struct sp_linetab t;
	SP_CHECK(decode(&t, &l, "/src") == SP_LINES_OK);
	SP_CHECK(t.nrows == 3 && t.rows[2].end);
	const char *file = "x";
	int line = 0;
	SP_CHECK(sp_linetab_find(&t, 0x3004, &file, &line) && line == 2 && file == NULL);
	SP_CHECK(!sp_linetab_find(&t, 0x3006, &file, &line));
	sp_linetab_free(&t);
}

SP_TEST(lines_v5_line_strp_paths_and_md5)
{
	unsigned char strs[64];
	size_t ns = 0;
	const char *pool[] = { "/src", "sub", "main.c", "x.h" };
	size_t at[4];
	for (int i = 0; i < 4; i++) {
		at[i] = ns;
		memcpy(strs + ns, pool[i], strlen(pool[i]) + 1);
		ns += strlen(pool[i]) + 1;
	}
	struct lb l = { .len = 0 };
	struct marks m = begin(&l, 5, 1);
	u8(&l, 1);			/* directory format: path as line_strp */
	uleb(&l, DW_LNCT_path);
	uleb(&l, DW_FORM_line_strp);
	uleb(&l, 2);
	le(&l, at[0], 4);
	le(&l, at[1], 4);
	u8(&l, 3);			/* file format: path, directory, MD5 */
	uleb(&l, DW_LNCT_path);
	uleb(&l, DW_FORM_line_strp);
	uleb(&l, DW_LNCT_directory_index);
	uleb(&l, DW_FORM_udata);
	uleb(&l, DW_LNCT_MD5);
	uleb(&l, DW_FORM_data16);
	uleb(&l, 2);
	for (int i = 0; i < 2; i++) {
		le(&l, at[2 + i], 4);
		uleb(&l, (uint64_t)i);
		le(&l, 0x1122334455667788ull, 8);
		le(&l, 0x99aabbccddeeff00ull, 8);
	}
	end_header(&l, &m);
	set_address(&l, 0x4000);
	u8(&l, DW_LNS_set_file);
	uleb(&l, 0);
	u8(&l, DW_LNS_copy);
	u8(&l, DW_LNS_set_file);
	uleb(&l, 1);
	special(&l, 4, 5);
	u8(&l, DW_LNS_advance_pc);
	uleb(&l, 1);
	end_sequence(&l);
	end_unit(&l, &m);
	struct sp_linesecs s = { .line = l.b, .line_len = l.len, .line_str = strs,
				 .line_str_len = ns };
	struct sp_linetab t;
	SP_CHECK(sp_linetab_decode(&t, &s, 0, "/ignored", 8) == SP_LINES_OK);
	SP_CHECK(t.nfiles == 2);
	if (t.nfiles == 2) {
		SP_CHECK_STR(t.files[0], "/src/main.c");
		SP_CHECK_STR(t.files[1], "sub/x.h");
	}
	const char *file;
	int line;
	SP_CHECK(sp_linetab_find(&t, 0x4005, &file, &line) && line == 5);
	SP_CHECK_STR(file, "sub/x.h");
	sp_linetab_free(&t);
	/* Another address size than the header's is libdw's to refuse. */
	SP_CHECK(sp_linetab_decode(&t, &s, 0, NULL, 4) == SP_LINES_ASK_LIBDW);
	/* A path past the string section. */
	s.line_str_len = 3;
	SP_CHECK(sp_linetab_decode(&t, &s, 0, NULL, 8) == SP_LINES_ASK_LIBDW);
}

/* A one-row table whose program is the bytes given, after a v4 header. */
static int with_program(unsigned max_ops, const unsigned char *prog, size_t n)
{
	struct lb l = { .len = 0 };
	struct marks m = v4_lists(&l, max_ops);
	set_address(&l, 0x5000);
	if (n)
		memcpy(l.b + l.len, prog, n);
	l.len += n;
	u8(&l, DW_LNS_copy);
	end_sequence(&l);
	end_unit(&l, &m);
	struct sp_linetab t;
	int rc = decode(&t, &l, "/src");
	sp_linetab_free(&t);
	return rc;
}

SP_TEST(lines_leaves_to_libdw_what_it_does_not_read_alike)
{
	SP_CHECK(with_program(1, NULL, 0) == SP_LINES_OK);
	/* Several operations per instruction. */
	SP_CHECK(with_program(2, NULL, 0) == SP_LINES_ASK_LIBDW);
	/* NVIDIA's extended opcodes. */
	const unsigned char nvidia[] = { 0, 3, DW_LNE_lo_user, 1, 1 };
	SP_CHECK(with_program(1, nvidia, sizeof(nvidia)) == SP_LINES_ASK_LIBDW);
	/* A column libdw keeps in 16 bits, a discriminator in 24. */
	const unsigned char column[] = { DW_LNS_set_column, 0x80, 0x80, 0x04 };
	SP_CHECK(with_program(1, column, sizeof(column)) == SP_LINES_ASK_LIBDW);
	const unsigned char discr[] = { 0, 5, DW_LNE_set_discriminator, 0x80, 0x80, 0x80, 0x08 };
	SP_CHECK(with_program(1, discr, sizeof(discr)) == SP_LINES_ASK_LIBDW);
	/* A line past an int. */
	const unsigned char far[] = { DW_LNS_advance_line, 0xff, 0xff, 0xff, 0xff, 0x07,
				      DW_LNS_advance_line, 0xff, 0xff, 0xff, 0xff, 0x07 };
	SP_CHECK(with_program(1, far, sizeof(far)) == SP_LINES_ASK_LIBDW);
	/* An unknown extended opcode of length 0, which libdw steps back over. */
	const unsigned char zero[] = { 0, 0, 0x42 };
	SP_CHECK(with_program(1, zero, sizeof(zero)) == SP_LINES_ASK_LIBDW);
	/* An unknown one with a length is skipped. */
	const unsigned char skip[] = { 0, 3, 0x42, 7, 7 };
	SP_CHECK(with_program(1, skip, sizeof(skip)) == SP_LINES_OK);

	/* A header whose length does not end at the program, cut tables. */
	struct lb l = { .len = 0 };
	struct marks m = v4_lists(&l, 1);
	end_unit(&l, &m);
	l.b[m.header] += 1;
	struct sp_linetab t;
	SP_CHECK(decode(&t, &l, NULL) == SP_LINES_ASK_LIBDW);
	l.b[m.header] -= 1;
	SP_CHECK(decode(&t, &l, NULL) == SP_LINES_OK);
	sp_linetab_free(&t);
	for (size_t cut = 0; cut < l.len; cut++) {
		struct sp_linesecs s = { .line = l.b, .line_len = cut };
		SP_CHECK(sp_linetab_decode(&t, &s, 0, NULL, 8) == SP_LINES_ASK_LIBDW);
	}
	/* An offset past the section. */
	struct sp_linesecs s = { .line = l.b, .line_len = l.len };
	SP_CHECK(sp_linetab_decode(&t, &s, l.len, NULL, 8) == SP_LINES_ASK_LIBDW);
}
