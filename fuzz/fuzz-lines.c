/* SPDX-License-Identifier: MIT
 * fuzz-lines: the input as a line table: byte 0 picks the address size
 * (bit 0: 8 bytes, else 4) and whether the unit has a compilation
 * directory (bit 1); bytes 1-2 (little-endian) say how many of the
 * bytes after them are the string section (.debug_line_str, also used
 * as .debug_str); the rest is .debug_line, decoded at offset 0 by
 * sp_linetab_decode().
 *
 * It checks that
 *   - the result is SP_LINES_OK, SP_LINES_ASK_LIBDW or SP_LINES_NOMEM,
 *     with an empty table unless it is SP_LINES_OK;
 *   - a decoded table has a file 0, every file a name, its rows in
 *     libdw's order (by address, an end row before another at its
 *     address) and its last row an end;
 *   - sp_linetab_find() gives, for each row's address and the bytes
 *     around it, the last row at or below the address unless that is
 *     an end, found here by a walk over every row.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/lines.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static void lookup(const struct sp_linetab *t, uint64_t addr)
{
	const struct sp_linerow *want = NULL;
	for (size_t i = 0; i < t->nrows; i++)
		if (t->rows[i].addr <= addr)
			want = &t->rows[i];
	if (want && want->end)
		want = NULL;
	const char *file = NULL;
	int line = 0;
	bool found = sp_linetab_find(t, addr, &file, &line);
	check(found == (want != NULL));
	if (found) {
		check(line == want->line);
		check(file == (want->file < t->nfiles ? t->files[want->file] : NULL));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	unsigned flags = data[0];
	size_t nstr = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	if (nstr > size)
		nstr = size;
	/* Copies, so that the sanitizer sees a read past either section. */
	unsigned char *str = malloc(nstr ? nstr : 1), *line = malloc(size - nstr + 1);
	check(str && line);
	memcpy(str, data, nstr);
	memcpy(line, data + nstr, size - nstr);
	struct sp_linesecs s = { .line = line, .line_len = size - nstr,
				 .line_str = nstr ? str : NULL, .line_str_len = nstr,
				 .str = nstr ? str : NULL, .str_len = nstr };
	struct sp_linetab t;
	int rc = sp_linetab_decode(&t, &s, 0, (flags & 2) ? "/comp/dir" : NULL,
				   (flags & 1) ? 8 : 4);
	check(rc == SP_LINES_OK || rc == SP_LINES_ASK_LIBDW || rc == SP_LINES_NOMEM);
	if (rc != SP_LINES_OK) {
		check(!t.rows && !t.files && !t.nrows && !t.nfiles);
	} else {
		check(t.nfiles >= 1);
		for (size_t i = 0; i < t.nfiles; i++)
			check(t.files[i] && strlen(t.files[i]) < 1 << 20);
		for (size_t i = 1; i < t.nrows; i++) {
			const struct sp_linerow *a = &t.rows[i - 1], *b = &t.rows[i];
			/* The last row is made an end after sorting, as libdw does. */
			check(a->addr < b->addr ||
			      (a->addr == b->addr && (a->end || !b->end || i == t.nrows - 1)));
		}
		check(!t.nrows || t.rows[t.nrows - 1].end);
		for (size_t i = 0; i < t.nrows && i < 256; i++)
			for (int d = -1; d <= 1; d++)
				lookup(&t, t.rows[i].addr + (uint64_t)(int64_t)d);
		lookup(&t, 0);
		lookup(&t, UINT64_MAX);
	}
	sp_linetab_free(&t);
	free(str);
	free(line);
	return 0;
}
