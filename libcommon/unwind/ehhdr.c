/*
 * The header of an .eh_frame_hdr section (LSB, "Exception Frame Header"):
 * where its sorted table of FDEs starts and how many entries it has, for
 * the libunwind engine (libunwind.h).  Bytes from a module's file, so
 * every field is checked against the section's length.
 */
#include <string.h>

#include "unwind/libunwind.h"

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
