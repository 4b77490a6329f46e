/* SPDX-License-Identifier: MIT
 * fuzz-ehhdr: what the libunwind engine reads of a module's unwind
 * sections itself (unwind/ehhdr.c): the header of an .eh_frame_hdr
 * section (sp_eh_frame_hdr_table()), the check that its table may name
 * function starts (sp_eh_frame_hdr_check()) and the rewrite of a
 * .debug_frame section (sp_debug_frame_to_eh()).  The input is taken as
 * each.
 *
 * It checks that an accepted header puts its table after the header's
 * four bytes and the whole table, count entries of 8 bytes, inside the
 * input, and that the input cut one byte short of that table is refused;
 * that a table found trustworthy is sorted and points into .eh_frame
 * (placed right after the input, as big as the input);
 * and that a rewritten region holds its table and, for every entry, an
 * FDE's first 24 bytes, with the entries sorted by address.
 *
 * Any broken invariant calls abort().  Nothing is printed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/ehhdr.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t off = 0, n = 0;
	if (sp_eh_frame_hdr_table(data, size, &off, &n) == 0) {
		check(off >= 4 && off <= size);
		check(n <= (size - off) / 8);
		uint64_t off2, n2;
		check(sp_eh_frame_hdr_table(data, (size_t)(off + n * 8) - 1, &off2, &n2) < 0);
		if (!sp_eh_frame_hdr_check(data, size, 0x10000, 0x10000 + size, size)) {
			int32_t prev = INT32_MIN;
			for (uint64_t i = 0; i < n; i++) {
				int32_t e[2];
				memcpy(e, data + off + 8 * i, 8);
				check(e[0] >= prev && (uint64_t)e[1] >= size &&
				      (uint64_t)e[1] - size + 8 <= size);
				prev = e[0];
			}
		}
	}
	unsigned char *r;
	size_t len;
	if (sp_debug_frame_to_eh(data, size, 0x400000, 0, &r, &len, &n) == 0) {
		check(n > 0 && n <= len / 8);
		int32_t prev = INT32_MIN;
		for (uint64_t i = 0; i < n; i++) {
			int32_t e[2];
			memcpy(e, r + 8 * i, 8);
			check(e[0] >= prev && e[1] >= 0 && (size_t)e[1] <= len &&
			      len - (size_t)e[1] >= 24);
			prev = e[0];
		}
		free(r);
	}
	return 0;
}
