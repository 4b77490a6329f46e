/* SPDX-License-Identifier: MIT
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
#include "unwind/ehhdr.h"
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

#endif
