/* SPDX-License-Identifier: MIT
 * The x86_64 backend: perf's register order (PERF_REG_X86_*, without the
 * flags and segment registers) and the System V DWARF numbering, where
 * column 16 is the return address.  [rbp] holds the caller's rbp and
 * [rbp + 8] the return address that the call pushed.
 */
#include "unwind/arch.h"

enum { AX, DX, CX, BX, SI, DI, BP, SP, R8, R9, R10, R11, R12, R13, R14, R15, RA };

static const char *const names[] = {
	"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

/* Each name's DWARF column; ip is the pc, and column 16 starts as it. */
static const uint8_t to_dwarf[] = {
	AX, BX, CX, DX, SI, DI, BP, SP, RA,
	R8, R9, R10, R11, R12, R13, R14, R15,
};

static void load(const uint64_t *v, struct sp_arch_regs *out)
{
	for (unsigned i = 0; i < sizeof(to_dwarf); i++)
		out->reg[to_dwarf[i]] = v[i];
	out->valid = (1u << (RA + 1)) - 1;
	out->pc = v[8];
}

/* call rel32: e8 and four bytes of displacement. */
static bool direct_call(const unsigned char *p, size_t n)
{
	return n >= 5 && p[n - 5] == 0xe8;
}

const struct sp_unwind_arch sp_arch_x86_64 = {
	.name = "x86_64",
	.nregs = RA + 1,
	.sp = SP,
	.fp = BP,
	.ra = RA,
	.reg_names = names,
	.nreg_names = sizeof(names) / sizeof(names[0]),
	.ra_mask = ~0ull,
	.fp_prev = 0,
	.fp_ra = 8,
	.fp_cfa = 16,
	.usable = true,
	.direct_call = direct_call,
	.load = load,
};
