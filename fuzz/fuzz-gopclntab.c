/* SPDX-License-Identifier: MIT
 * fuzz-gopclntab: Go's function table (unwind/gopclntab.c) from arbitrary
 * bytes.  The input is 4 bytes (little endian) giving the table's
 * length, the table, at 0x500000, and the rest, an image region of
 * writable data at 0x600000 (moduledata and inline trees may be there).
 * The seeds are the synthetic tables of tests/unit/gopclntab.c, one
 * per layout, byte order and pointer size (fuzz/make-corpus).
 *
 * It checks that a refused table says why; that an accepted one has a
 * layout name and its functions' extents are sorted and non-empty; and
 * that every lookup (at each function's entry and last byte, between
 * them, outside them, with and without lines and inline frames) either
 * finds nothing or finds the function whose extent holds the address,
 * with a name, and inline frames that each have a name; and that the
 * stack-pointer delta and the top-frame test, which the unwinder asks
 * of every Go frame without CFI, answer only inside a function.
 *
 * Any broken invariant calls abort().  Nothing is printed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/gopclntab.h"

#define TABLE	0x500000u
#define IMAGE	0x600000u

static void check(int cond)
{
	if (!cond)
		abort();
}

static void look(struct sp_gopclntab *t, uint64_t addr)
{
	static const unsigned flags[] = { 0, SP_GOPCLN_LINES, SP_GOPCLN_INLINE };
	for (int i = 0; i < 3; i++) {
		struct sp_gofunc f;
		if (!sp_gopclntab_lookup(t, addr, flags[i], &f)) {
			check(f.name == NULL && f.ninl == 0);
			continue;
		}
		check(f.name != NULL && f.entry <= addr && addr < f.end);
		check(f.ninl <= 64 && (f.ninl == 0 || flags[i] == SP_GOPCLN_INLINE));
		for (size_t k = 0; k < f.ninl; k++)
			check(f.inl[k].name != NULL && strlen(f.inl[k].name) < (1u << 30));
		check(strlen(f.name) < (1u << 30));
	}
	int64_t d = 0;
	struct sp_gofunc g;
	int in = sp_gopclntab_lookup(t, addr, 0, &g);
	if (sp_gopclntab_spdelta(t, addr, &d) == 1)
		check(in == 1);
	if (sp_gopclntab_topframe(t, addr))
		check(in == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	size_t n = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
		   (size_t)data[3] << 24;
	if (n > size - 4)
		n = size - 4;
	const unsigned char *p = data + 4, *rest = p + n;
	struct sp_goregion r = { IMAGE, rest, size - 4 - n, true };
	struct sp_goimage img = { &r, 1, 0x401000, 15 };
	const char *why = NULL;
	struct sp_gopclntab *t = sp_gopclntab_from_bytes(p, n, TABLE, &img, &why);
	if (!t) {
		check(why != NULL);
		return 0;
	}
	check(why == NULL && sp_gopclntab_layout(t) != NULL);
	size_t nf = sp_gopclntab_count(t);
	uint64_t prev_end = 0;
	for (size_t i = 0; i < nf && i < 256; i++) {
		uint64_t entry, end;
		check(sp_gopclntab_extent(t, i, &entry, &end) == 0);
		check(entry < end && entry >= prev_end);
		prev_end = end;
		look(t, entry);
		look(t, end - 1);
		look(t, entry + (end - entry) / 2);
		look(t, entry - 1);
	}
	look(t, 0);
	look(t, UINT64_MAX);
	sp_gopclntab_free(t);
	return 0;
}
