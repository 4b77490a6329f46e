/* SPDX-License-Identifier: MIT
 * The header of an .eh_frame_hdr section (LSB, "Exception Frame Header"):
 * where its sorted table of FDEs starts and how many entries it has, and
 * whether that table can be trusted (see ehhdr.h).  Bytes from a module's
 * file, so every field is checked against the section's length.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/ehhdr.h"

/* DWARF pointer encodings: the value's format in the low four bits. */
#define PE_OMIT 0xff
#define PE_UDATA4 0x03
#define PE_SDATA4 0x0b
#define PE_UDATA8 0x04
#define PE_SDATA8 0x0c
#define PE_DATAREL 0x30

/* The size of a value of encoding enc, 0 for one this reader does not take. */
static size_t pe_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case PE_UDATA4: case PE_SDATA4: return 4;
	case PE_UDATA8: case PE_SDATA8: return 8;
	default: return 0;
	}
}

int sp_eh_frame_hdr_table(const unsigned char *p, size_t len, uint64_t *table_off,
			  uint64_t *count)
{
	if (len < 4 || p[0] != 1)
		return -1;
	unsigned ptr_enc = p[1], count_enc = p[2], table_enc = p[3];
	size_t off = 4;
	if (ptr_enc != PE_OMIT) {
		size_t s = pe_size(ptr_enc);
		if (!s)
			return -1;
		off += s;
	}
	/* The count is a plain number; a table needs both. */
	size_t cs = pe_size(count_enc);
	if (count_enc == PE_OMIT || (count_enc & 0x70) || !cs ||
	    table_enc != (PE_DATAREL | PE_SDATA4) || len < off + cs)
		return -1;
	uint64_t n = 0;
	if (cs == 4) {
		uint32_t v;
		memcpy(&v, p + off, 4);
		n = v;
	} else {
		memcpy(&n, p + off, 8);
	}
	off += cs;
	if (n > (len - off) / 8)
		return -1;
	*table_off = off;
	*count = n;
	return 0;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Whether a .debug_frame CIE at off is one the rewrite takes. */
static bool plain_cie(const unsigned char *p, size_t len, uint64_t off)
{
	if (off > len || len - off < 10)
		return false;
	uint32_t l = rd32(p + off);
	if (l < 6 || l > len - off - 4 || rd32(p + off + 4) != 0xffffffff)
		return false;
	return (p[off + 8] == 1 || p[off + 8] == 3) && p[off + 9] == 0;
}

static int cmp_entry(const void *a, const void *b)
{
	int32_t x = (int32_t)rd32(a), y = (int32_t)rd32(b);
	return (x > y) - (x < y);
}

int sp_debug_frame_to_eh(const unsigned char *p, size_t len, uint64_t base, uint64_t bias,
			 unsigned char **out, size_t *outlen, uint64_t *count)
{
	uint64_t n = 0, off;
	uint32_t l;
	/* First the FDEs, to lay the table out before the entries. */
	for (off = 0; len - off >= 8; off += 4 + (uint64_t)l) {
		l = rd32(p + off);
		if (l == 0 || l == 0xffffffff || l > len - off - 4 || l < 4)
			break;
		if (rd32(p + off + 4) != 0xffffffff)
			n++;
	}
	size_t tab = (size_t)n * 8, size = tab + (size_t)off;
	if (!n || size > INT32_MAX)
		return -1;
	unsigned char *r = malloc(size);
	if (!r)
		return -1;
	memcpy(r + tab, p, (size_t)off);
	uint64_t end = off, k = 0;
	for (off = 0; off < end; off += 4 + (uint64_t)l) {
		l = rd32(p + off);
		uint32_t id = rd32(p + off + 4);
		unsigned char *e = r + tab + off;
		if (id == 0xffffffff) {
			memset(e + 4, 0, 4);	/* an .eh_frame CIE's id */
			continue;
		}
		uint64_t pc, span;
		if (l < 20 || !plain_cie(p, end, id) || id >= off)
			continue;
		memcpy(&pc, p + off + 8, 8);
		memcpy(&span, p + off + 16, 8);
		pc += bias;
		int64_t rel = (int64_t)(pc - base);
		if (!span || rel < INT32_MIN || rel > INT32_MAX)
			continue;
		/* .eh_frame's CIE pointer: back from the field to the CIE. */
		uint32_t back = (uint32_t)(off + 4 - id);
		memcpy(e + 4, &back, 4);
		memcpy(e + 8, &pc, 8);
		int32_t v[2] = { (int32_t)rel, (int32_t)(tab + off) };
		memcpy(r + 8 * k++, v, 8);
	}
	if (!k) {
		free(r);
		return -1;
	}
	/* An FDE left out keeps its place, and its slot at the table's end. */
	qsort(r, (size_t)k, 8, cmp_entry);
	memset(r + 8 * k, 0, (size_t)(n - k) * 8);
	*out = r;
	*outlen = size;
	*count = k;
	return 0;
}

const char *sp_eh_frame_hdr_check(const unsigned char *p, size_t len, uint64_t hdr_addr,
				  uint64_t eh_addr, uint64_t eh_len)
{
	uint64_t off, n;
	if (sp_eh_frame_hdr_table(p, len, &off, &n) < 0)
		return len < 4 ? "truncated" : "no table, or one in an encoding not read";
	if (!n)
		return "empty table";
	int64_t prev = INT64_MIN;
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *e = p + off + 8 * i;
		int64_t start = (int32_t)rd32(e);
		/* Where the FDE lies, and its length word, inside .eh_frame. */
		uint64_t fde = hdr_addr + (uint64_t)(int64_t)(int32_t)rd32(e + 4);
		if (start < prev)
			return "table not sorted";
		if (fde < eh_addr || fde - eh_addr >= eh_len || eh_len - (fde - eh_addr) < 8)
			return "FDE offset out of range";
		prev = start;
	}
	return NULL;
}
