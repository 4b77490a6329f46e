/* SPDX-License-Identifier: MIT
 * The aarch64 backend: perf's register order (PERF_REG_ARM64_*: x0-x29,
 * lr, sp, pc) and the AAPCS64 DWARF numbering (x0-x30 are 0-30, sp is
 * 31).  The return-address column is x30, the link register; pc has no
 * column.  A frame record at x29 holds the caller's x29 and then x30,
 * at the bottom of the frame, so the caller's sp is only known to lie
 * above it.  Return addresses may carry a pointer-authentication code in
 * their top bits: user addresses have 48 bits.
 *
 * A call leaves sp as it was (bl puts the return address in x30), so a
 * leaf that saved nothing has its caller's sp.
 *
 * Not yet usable: nothing here has been checked against a recording made
 * on an aarch64 machine (the kernel's sampled registers, its vDSO and
 * signal frames, real pointer-authentication keys), so sp-unwind refuses
 * such streams rather than give stacks nobody has verified.  The unit
 * tests cover the register map, the frame-record walk and the CFI of an
 * aarch64 program built with pointer authentication.
 */
#include "unwind/arch.h"

enum { X29 = 29, X30 = 30, SP = 31 };

static const char *const names[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
	"x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr",
	"sp", "pc",
};

static void load(const uint64_t *v, struct sp_arch_regs *out)
{
	/* x0-x30 and sp are DWARF 0-31 in the sampled order. */
	for (unsigned i = 0; i <= SP; i++)
		out->reg[i] = v[i];
	out->valid = ~0u;
	out->pc = v[32];
}

/* bl imm26: the instruction's top six bits are 100101. */
static bool direct_call(const unsigned char *p, size_t n)
{
	if (n < 4)
		return false;
	uint32_t insn = (uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 |
			(uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24;
	return insn >> 26 == 0x25;
}

const struct sp_unwind_arch sp_arch_aarch64 = {
	.name = "aarch64",
	.nregs = SP + 1,
	.sp = SP,
	.fp = X29,
	.ra = X30,
	.reg_names = names,
	.nreg_names = sizeof(names) / sizeof(names[0]),
	.ra_mask = (1ull << 48) - 1,
	.fp_prev = 0,
	.fp_ra = 8,
	.fp_cfa = 16,
	.call_keeps_sp = true,
	.usable = false,
	.unusable_why = "its backend has not been verified on recordings from an aarch64 machine",
	.direct_call = direct_call,
	.load = load,
};
