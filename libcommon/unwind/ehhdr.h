/* SPDX-License-Identifier: MIT
 * What stackpulse reads of a module's unwind sections itself, with no
 * unwinding library: the binary-search table of .eh_frame_hdr (for the
 * libunwind engine, and for the function starts that name the frames of
 * a stripped module), and .debug_frame rewritten in .eh_frame's form.
 * Bytes from a module's file, so every field is checked.  The unwind
 * layer; ehhdr.c.
 */
#ifndef SP_UNWIND_EHHDR_H
#define SP_UNWIND_EHHDR_H

#include <stddef.h>
#include <stdint.h>

/*
 * The binary-search table of an .eh_frame_hdr section (the bytes of its
 * PT_GNU_EH_FRAME segment), in the one form libunwind's remote tables
 * take: entries of two signed 32-bit offsets from the section's start
 * (DW_EH_PE_datarel | DW_EH_PE_sdata4).  Returns 0 and the table's
 * offset in the section and its number of entries, which all lie in the
 * len bytes; -1 for any other version or encoding, or a short section.
 */
int sp_eh_frame_hdr_table(const unsigned char *p, size_t len, uint64_t *table_off,
			  uint64_t *count);

/*
 * For a module with .debug_frame but no .eh_frame_hdr (Go's binaries):
 * the section's len bytes rewritten as a region libunwind can search as
 * a remote table when it is read at address base.  The region holds a
 * table of *count entries (two signed 32-bit offsets from base: an
 * FDE's start address plus bias, and the FDE) sorted by address, then
 * the section's entries in .eh_frame's form: CIE ids 0, CIE pointers
 * relative, start addresses plus bias.  Only 32-bit DWARF CIEs of
 * version 1 or 3 without augmentation are taken, and FDEs after their
 * CIE; the others are left out of the table.  Returns 0 and the region
 * in *out (the caller frees it, *outlen bytes), or -1 when no FDE could
 * be taken or memory ran out.
 */
int sp_debug_frame_to_eh(const unsigned char *p, size_t len, uint64_t base, uint64_t bias,
			 unsigned char **out, size_t *outlen, uint64_t *count);

/*
 * Whether the .eh_frame_hdr section p (len bytes, at address hdr_addr)
 * can be trusted to say where functions start: a table as
 * sp_eh_frame_hdr_table() takes it, whose entries are sorted by address
 * and point at FDEs inside the .eh_frame section at [eh_addr, eh_addr +
 * eh_len).  Returns NULL when it can, else the reason (a static string).
 */
const char *sp_eh_frame_hdr_check(const unsigned char *p, size_t len, uint64_t hdr_addr,
				  uint64_t eh_addr, uint64_t eh_len);

#endif
