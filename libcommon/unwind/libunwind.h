/*
 * A second unwinding engine: libunwind's remote API over the same
 * inputs as sp_unwind() (unwind.h), the sample's registers, its stack
 * copy and the modules' files, so that sp-unwind --engine=libunwind can
 * be compared with the DWARF CFI engine of unwind.c on one stream.
 * Modules are found, and address spaces read, exactly as unwind.c does;
 * only the stepping from frame to frame is libunwind's.  Core layer: no
 * printing.  Only a program that links libunwind may call these.
 */
#ifndef SP_UNWIND_LIBUNWIND_H
#define SP_UNWIND_LIBUNWIND_H

#include "util/error.h"
#include "unwind/unwind.h"

struct sp_lunwinder;

/*
 * An engine over u, which finds and opens the modules (and keeps their
 * state on the address spaces' objects) and must outlive it.  Returns
 * NULL with err set: SP_ERR_UNSUPPORTED when libunwind was not built for
 * u's architecture, SP_ERR_NOMEM when memory runs out.
 */
struct sp_lunwinder *sp_lunwinder_new(struct sp_unwinder *u, struct sp_error *err);
void sp_lunwinder_free(struct sp_lunwinder *l);

/*
 * As sp_unwind(): stores at most max frames in out, leaf first, their
 * number in *n, and returns why the stack ends.  libunwind's errors are
 * mapped onto the format's end reasons; a stack is complete when
 * unw_step() says it reached the end.
 */
enum sp_unwind_end sp_lunwind(struct sp_lunwinder *l, struct sp_addrspaces *a,
			      uint32_t pid, const uint64_t *regs, size_t nregs,
			      const unsigned char *stack, size_t len, bool full,
			      struct sp_uframe *out, size_t max, size_t *n);

/*
 * The binary-search table of an .eh_frame_hdr section (the bytes of its
 * PT_GNU_EH_FRAME segment), in the one form libunwind's remote tables
 * take: entries of two signed 32-bit offsets from the section's start
 * (DW_EH_PE_datarel | DW_EH_PE_sdata4).  Returns 0 and the table's
 * offset in the section and its number of entries, which all lie in the
 * len bytes; -1 for any other version or encoding, or a short section.
 * In ehhdr.c, which needs no libunwind.
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
 * be taken or memory ran out.  In ehhdr.c.
 */
int sp_debug_frame_to_eh(const unsigned char *p, size_t len, uint64_t base, uint64_t bias,
			 unsigned char **out, size_t *outlen, uint64_t *count);

#endif
