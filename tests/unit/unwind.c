/* SPDX-License-Identifier: MIT
 * Unit tests of the unwind layer: the architecture backends' register
 * maps, the choice of a backend from a stream header, and the per-module
 * rule cache, on this very process's stack (x86_64 only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pack.h"
#include "unit.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "unwind/addrspace.h"
#include "unwind/arch.h"
#include "unwind/internal.h"
#include "unwind/stage.h"
#include "unwind/unwind.h"

/* A MessagePack object built by a packer, and the buffer it lives in. */
struct obj {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
};

static msgpack_packer *obj_begin(struct obj *o)
{
	msgpack_sbuffer_init(&o->sb);
	msgpack_packer_init(&o->pk, &o->sb, msgpack_sbuffer_write);
	msgpack_unpacked_init(&o->up);
	return &o->pk;
}

static const msgpack_object *obj_end(struct obj *o)
{
	size_t off = 0;
	if (msgpack_unpack_next(&o->up, o->sb.data, o->sb.size, &off) != MSGPACK_UNPACK_SUCCESS)
		return NULL;
	return &o->up.data;
}

static void obj_release(struct obj *o)
{
	msgpack_unpacked_destroy(&o->up);
	msgpack_sbuffer_destroy(&o->sb);
}

/* A header naming arch, with names as its reg_names (none when n is 0). */
static const msgpack_object *header(struct obj *o, const char *arch, const char *const *names,
				    size_t n)
{
	msgpack_packer *pk = obj_begin(o);
	msgpack_pack_map(pk, n ? 3 : 2);
	sp_pack_kv_str(pk, "t", "header");
	sp_pack_key(pk, "host");
	msgpack_pack_map(pk, 1);
	sp_pack_kv_str(pk, "arch", arch);
	if (n) {
		sp_pack_key(pk, "reg_names");
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++)
			sp_pack_str(pk, names[i]);
	}
	return obj_end(o);
}

/* Adds this process's executable file mappings to a, as map records would. */
static int map_self(struct sp_addrspaces *a, uint32_t pid, uint64_t *stack_end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], path[4096] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perms, &off,
			   path) < 4)
			continue;
		if (strcmp(path, "[stack]") == 0)
			*stack_end = end;
		if (perms[2] != 'x' || path[0] != '/')
			continue;
		struct obj o;
		msgpack_packer *pk = obj_begin(&o);
		msgpack_pack_map(pk, 6);
		sp_pack_kv_str(pk, "t", "map");
		sp_pack_kv_u64(pk, "pid", pid);
		sp_pack_kv_u64(pk, "start", start);
		sp_pack_kv_u64(pk, "len", end - start);
		sp_pack_kv_u64(pk, "pgoff", off);
		sp_pack_kv_str(pk, "path", path);
		const msgpack_object *rec = obj_end(&o);
		if (rec && sp_addrspaces_apply(a, SP_R_MAP, rec) == 0)
			n++;
		obj_release(&o);
	}
	fclose(f);
	return n;
}

/* A function of this driver, whose code has CFI. */
__attribute__((noinline)) void unwind_frame_record_helper(void);
__attribute__((noinline)) void unwind_frame_record_helper(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
}

SP_TEST(unwind_arch_find_by_exact_name)
{
	SP_CHECK(sp_unwind_arch_find("x86_64", 6) == &sp_arch_x86_64);
	SP_CHECK(sp_unwind_arch_find("aarch64", 7) == &sp_arch_aarch64);
	SP_CHECK(sp_unwind_arch_find("x86", 3) == NULL);
	SP_CHECK(sp_unwind_arch_find("x86_64x", 7) == NULL);
	SP_CHECK(sp_unwind_arch_find("riscv64", 7) == NULL);
}

SP_TEST(unwind_x86_64_perf_order_to_dwarf)
{
	const struct sp_unwind_arch *a = &sp_arch_x86_64;
	static const char *const perf[] = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
	SP_CHECK(a->nreg_names == 17);
	for (size_t i = 0; i < 17 && i < a->nreg_names; i++)
		SP_CHECK_STR(a->reg_names[i], perf[i]);
	SP_CHECK(a->nregs == 17 && a->sp == 7 && a->fp == 6 && a->ra == 16);
	uint64_t v[17];
	for (int i = 0; i < 17; i++)
		v[i] = 100 + (uint64_t)i;
	struct sp_arch_regs r = { 0 };
	a->load(v, &r);
	/* DWARF: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, 16 the return address. */
	SP_CHECK(r.reg[0] == 100 && r.reg[3] == 101 && r.reg[2] == 102 && r.reg[1] == 103);
	SP_CHECK(r.reg[4] == 104 && r.reg[5] == 105 && r.reg[6] == 106 && r.reg[7] == 107);
	for (int i = 8; i <= 15; i++)
		SP_CHECK(r.reg[i] == 101 + (uint64_t)i);
	SP_CHECK(r.pc == 108 && r.reg[16] == 108);
	SP_CHECK(r.valid == 0x1ffff);
	SP_CHECK(a->usable && a->ra_mask == ~0ull);
	SP_CHECK(a->fp_prev == 0 && a->fp_ra == 8 && a->fp_cfa == 16);
}

SP_TEST(unwind_aarch64_perf_order_to_dwarf)
{
	const struct sp_unwind_arch *a = &sp_arch_aarch64;
	char name[8];
	SP_CHECK(a->nreg_names == 33);
	for (int i = 0; i < 30 && i < (int)a->nreg_names; i++) {
		snprintf(name, sizeof(name), "x%d", i);
		SP_CHECK_STR(a->reg_names[i], name);
	}
	SP_CHECK_STR(a->reg_names[30], "lr");
	SP_CHECK_STR(a->reg_names[31], "sp");
	SP_CHECK_STR(a->reg_names[32], "pc");
	/* x0-x30 are DWARF 0-30, sp 31; the return address is in x30. */
	SP_CHECK(a->nregs == 32 && a->sp == 31 && a->fp == 29 && a->ra == 30);
	uint64_t v[33];
	for (int i = 0; i < 33; i++)
		v[i] = 1000 + (uint64_t)i;
	struct sp_arch_regs r = { 0 };
	a->load(v, &r);
	for (int i = 0; i < 32; i++)
		SP_CHECK(r.reg[i] == 1000 + (uint64_t)i);
	SP_CHECK(r.pc == 1032);
	SP_CHECK(r.valid == 0xffffffffu);
	/* A pointer-authentication code in the top bits is not address. */
	SP_CHECK((0x002d0000f7a01234ull & a->ra_mask) == 0x0000f7a01234ull);
	SP_CHECK(a->fp_prev == 0 && a->fp_ra == 8 && a->fp_cfa == 16);
	SP_CHECK(!a->usable && a->unusable_why);
}

SP_TEST(unwind_regmap_finds_registers_by_name)
{
	/* The x86_64 names reversed, behind one the unwinder does not read. */
	const char *names[18];
	names[0] = "flags";
	for (int i = 0; i < 17; i++)
		names[1 + i] = sp_arch_x86_64.reg_names[16 - i];
	struct obj o;
	const msgpack_object *h = header(&o, "x86_64", names, 18);
	struct sp_unwind_regmap m;
	struct sp_error err = { 0 };
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) == 0);
	SP_CHECK(m.arch == &sp_arch_x86_64 && m.need == 18);
	uint64_t regs[18], v[17];
	regs[0] = 0x246;
	for (int i = 0; i < 17; i++)
		v[i] = 500 + (uint64_t)i;
	for (int i = 0; i < 17; i++)
		regs[1 + i] = v[16 - i];
	struct sp_arch_regs a = { 0 }, b = { 0 };
	SP_CHECK(sp_unwind_regmap_load(&m, regs, 18, &a) == 0);
	sp_arch_x86_64.load(v, &b);
	SP_CHECK(a.pc == b.pc && a.valid == b.valid);
	SP_CHECK_MEM(a.reg, b.reg, 17 * sizeof(a.reg[0]));
	/* Too few registers in a sample. */
	SP_CHECK(sp_unwind_regmap_load(&m, regs, 17, &a) < 0);
	obj_release(&o);

	/* No reg_names: the backend's own order. */
	h = header(&o, "x86_64", NULL, 0);
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) == 0);
	SP_CHECK(m.need == 17 && m.pos[0] == 0 && m.pos[16] == 16);
	obj_release(&o);
}

SP_TEST(unwind_regmap_refuses_what_it_cannot_unwind)
{
	struct obj o;
	struct sp_unwind_regmap m;
	struct sp_error err = { 0 };
	const msgpack_object *h = header(&o, "riscv64", NULL, 0);
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) < 0);
	SP_CHECK(err.code == SP_ERR_UNSUPPORTED);
	SP_CHECK_STR(sp_error_message(&err), "cannot unwind riscv64 stacks: no backend for this architecture");
	obj_release(&o);

	h = header(&o, "aarch64", sp_arch_aarch64.reg_names, sp_arch_aarch64.nreg_names);
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) < 0);
	SP_CHECK(strncmp(sp_error_message(&err), "cannot unwind aarch64 stacks: ", 30) == 0);
	obj_release(&o);

	/* x86_64 names without r15 (the aarch64 ones, say). */
	h = header(&o, "x86_64", sp_arch_aarch64.reg_names, sp_arch_aarch64.nreg_names);
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) < 0);
	SP_CHECK_STR(sp_error_message(&err), "cannot unwind x86_64 stacks: the header's reg_names have no 'ax'");
	obj_release(&o);

	msgpack_packer *pk = obj_begin(&o);
	msgpack_pack_map(pk, 1);
	sp_pack_kv_str(pk, "t", "header");
	h = obj_end(&o);
	SP_CHECK(h && sp_unwind_regmap_select(&m, h, &err) < 0);
	SP_CHECK(strstr(sp_error_message(&err), "names no architecture") != NULL);
	obj_release(&o);
}

/*
 * An aarch64 program, 1136 bytes, whose CFI its compiler wrote, made from
 *
 *	__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
 *	__attribute__((noinline)) long middle(long x) { volatile long b = x; return leaf(b) + 2; }
 *	__attribute__((noinline)) long top(long x) { return middle(x + 1) * 5; }
 *	void _start(void) { __asm__ volatile(".cfi_undefined x30"); top(7); for (;;); }
 *
 * by clang --target=aarch64-linux-gnu -O2 -mbranch-protection=pac-ret
 * -fno-omit-frame-pointer -fasynchronous-unwind-tables -nostdlib -static
 * -fuse-ld=lld -Wl,-s -Wl,--build-id=none -Wl,-z,norelro
 * -Wl,-z,separate-code -Wl,--no-rosegment -Wl,-N, then llvm-objcopy
 * --remove-section=.comment.  Its code: leaf at 0x20023c (no frame; x30
 * keeps the return address), middle at 0x200248 (paciasp; sub sp, #32;
 * stp x29, x30, [sp, #16]; add x29, sp, #16), top at 0x200278 and _start
 * at 0x20029c (paciasp; stp x29, x30, [sp, #-16]!; mov x29, sp); the
 * calls return to 0x200264, 0x20028c and 0x2002b0.  The CFI of each
 * signing function has DW_CFA_AARCH64_negate_ra_state.
 */
static const unsigned char aarch64_program[] = {
	0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0xb7, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x9c, 0x02, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0xf0, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x38, 0x00, 0x05, 0x00, 0x40, 0x00,
	0x06, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
	0x58, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x5c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5c, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x50, 0xe5, 0x74, 0x64, 0x04, 0x00, 0x00, 0x00, 0x78, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x78, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x78, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x51, 0xe5, 0x74, 0x64,
	0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x53, 0xe5, 0x74, 0x64, 0x04, 0x00, 0x00, 0x00,
	0x58, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x58, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x58, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
	0x10, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x47, 0x4e, 0x55, 0x00,
	0x00, 0x00, 0x00, 0xc0, 0x04, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x1b, 0x03, 0x3b, 0x2c, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x00, 0x00, 0xc4, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00,
	0xd0, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x80, 0x00, 0x00, 0x00, 0x24, 0x01, 0x00, 0x00, 0xa0, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x7a, 0x52, 0x00, 0x01, 0x7c, 0x1e, 0x01, 0x1b, 0x0c, 0x1f, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00,
	0x74, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00,
	0x68, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x44, 0x2d, 0x4c,
	0x0c, 0x1d, 0x10, 0x9e, 0x02, 0x9d, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x1c, 0x00, 0x00, 0x00, 0x54, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00,
	0x24, 0x00, 0x00, 0x00, 0x00, 0x44, 0x2d, 0x48, 0x0c, 0x1d, 0x10, 0x9e,
	0x02, 0x9d, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00,
	0x74, 0x00, 0x00, 0x00, 0x7c, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00,
	0x00, 0x44, 0x2d, 0x48, 0x0c, 0x1d, 0x10, 0x9e, 0x02, 0x9d, 0x04, 0x44,
	0x07, 0x1e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x04, 0x00, 0x8b,
	0x00, 0x05, 0x00, 0x91, 0xc0, 0x03, 0x5f, 0xd6, 0x3f, 0x23, 0x03, 0xd5,
	0xff, 0x83, 0x00, 0xd1, 0xfd, 0x7b, 0x01, 0xa9, 0xfd, 0x43, 0x00, 0x91,
	0xe0, 0x07, 0x00, 0xf9, 0xe0, 0x07, 0x40, 0xf9, 0xf7, 0xff, 0xff, 0x97,
	0xfd, 0x7b, 0x41, 0xa9, 0x00, 0x08, 0x00, 0x91, 0xff, 0x83, 0x00, 0x91,
	0xbf, 0x23, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6, 0x3f, 0x23, 0x03, 0xd5,
	0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x00, 0x04, 0x00, 0x91,
	0xf0, 0xff, 0xff, 0x97, 0x00, 0x08, 0x00, 0x8b, 0xfd, 0x7b, 0xc1, 0xa8,
	0xbf, 0x23, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6, 0x3f, 0x23, 0x03, 0xd5,
	0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xe0, 0x00, 0x80, 0x52,
	0xf3, 0xff, 0xff, 0x97, 0x00, 0x00, 0x00, 0x14, 0x00, 0x2e, 0x6e, 0x6f,
	0x74, 0x65, 0x2e, 0x67, 0x6e, 0x75, 0x2e, 0x70, 0x72, 0x6f, 0x70, 0x65,
	0x72, 0x74, 0x79, 0x00, 0x2e, 0x74, 0x65, 0x78, 0x74, 0x00, 0x2e, 0x65,
	0x68, 0x5f, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x5f, 0x68, 0x64, 0x72, 0x00,
	0x2e, 0x65, 0x68, 0x5f, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x00, 0x2e, 0x73,
	0x68, 0x73, 0x74, 0x72, 0x74, 0x61, 0x62, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x58, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x58, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x1a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x01, 0x20, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x78, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x2c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xa8, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa8, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x94, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x14, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x3c, 0x02, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x3c, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x32, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0xb4, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x3c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/*
 * The aarch64 backend over real aarch64 CFI: a sample in leaf, with the
 * stack that middle, top and _start built, unwinds to _start through the
 * link register and two frame records with signed return addresses; a
 * leaf's caller has the leaf's stack pointer.
 */
SP_TEST(unwind_aarch64_cfi_of_a_compiled_program)
{
	const struct sp_unwind_arch *arch = &sp_arch_aarch64;
	const uint32_t pid = 99;
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/sp-unit-aarch64-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(path);
	SP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	SP_CHECK(write(fd, aarch64_program, sizeof(aarch64_program)) == sizeof(aarch64_program));
	close(fd);

	struct sp_addrspaces *a = sp_addrspaces_new();
	struct obj o;
	msgpack_packer *pk = obj_begin(&o);
	msgpack_pack_map(pk, 5);
	sp_pack_kv_u64(pk, "pid", pid);
	sp_pack_kv_u64(pk, "start", 0x200000);
	sp_pack_kv_u64(pk, "len", 4096);
	sp_pack_kv_u64(pk, "pgoff", 0);
	sp_pack_kv_str(pk, "path", path);
	SP_CHECK(a && sp_addrspaces_apply(a, SP_R_MAP, obj_end(&o)) == 0);
	obj_release(&o);
	struct sp_unwind_regmap map;
	sp_unwind_regmap_native(&map, arch);
	/* A file recorded without a build-id is used when the stream is of this boot. */
	struct sp_unwind_options opt = { .max_depth = 16, .fp_fallback = false,
					 .this_host = true, .regs = &map };
	struct sp_unwinder *u = sp_unwinder_new(&opt);

	/* In leaf: x29 is middle's frame record, x30 returns into middle. */
	const uint64_t S = 0x7ff0000000ull;
	uint64_t regs[33] = { 0 };
	regs[29] = S + 16;
	regs[30] = 0x200264;
	regs[31] = S;
	regs[32] = 0x200240;
	/* The frame records, with the return addresses as paciasp signed them. */
	uint64_t stack[8] = {
		0, 0,
		S + 32, 0x20028c | 0x0023000000000000ull,	/* middle's: top's x29 and lr */
		S + 48, 0x2002b0 | 0x005e000000000000ull,	/* top's */
		0, 0,						/* _start's */
	};
	struct sp_uframe f[16];
	size_t n = 0;
	enum sp_unwind_end end = SP_END_BAD_CFA;
	if (a && u)
		end = sp_unwind(u, a, pid, regs, 33, (const unsigned char *)stack, sizeof(stack),
				false, f, 16, &n);
	static const uint64_t want[] = { 0x200240, 0x200264, 0x20028c, 0x2002b0 };
	SP_CHECK(end == SP_END_COMPLETE);
	SP_CHECK(n == 4);
	for (size_t i = 0; i < n && i < 4; i++) {
		SP_CHECK(f[i].addr == want[i] && f[i].rel == want[i]);
		SP_CHECK(!!(f[i].flags & SP_FRAME_RETADDR) == (i > 0));
	}
	struct sp_unwind_stats st = { 0 };
	if (u)
		sp_unwinder_stats(u, &st);
	SP_CHECK(st.cache_misses == 4 && st.fp_frames == 0 && st.scan_frames == 0);
	sp_unwinder_free(u);
	sp_addrspaces_free(a, sp_unwinder_free_object);
	unlink(path);
}

#if defined(__x86_64__)

/* This thread's registers (perf's x86_64 order) and a copy of its stack. */
struct snapshot {
	uint64_t regs[17];
	unsigned char stack[65536];
	size_t len;
};

/* Reads our own stack, redzones of AddressSanitizer included. */
__attribute__((no_sanitize_address)) static void copy_stack(unsigned char *to, uint64_t from,
							      size_t len)
{
	const volatile unsigned char *p = (const volatile unsigned char *)(uintptr_t)from;
	for (size_t i = 0; i < len; i++)
		to[i] = p[i];
}

__attribute__((noinline)) static void take_snapshot(struct snapshot *s, uint64_t stack_end)
{
	uint64_t sp, ip, bx, bp, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbx, %2\n\t"
			 "mov %%rbp, %3\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7"
			 : "=m"(ip), "=m"(sp), "=m"(bx), "=m"(bp), "=m"(r12), "=m"(r13),
			   "=m"(r14), "=m"(r15) : : "rax");
	memset(s->regs, 0, sizeof(s->regs));
	s->regs[1] = bx;
	s->regs[6] = bp;
	s->regs[7] = sp;
	s->regs[8] = ip;
	s->regs[13] = r12;
	s->regs[14] = r13;
	s->regs[15] = r14;
	s->regs[16] = r15;
	s->len = stack_end > sp && stack_end - sp < sizeof(s->stack) ? stack_end - sp : sizeof(s->stack);
	copy_stack(s->stack, sp, s->len);
}

/* A few frames of our own between the test and the snapshot. */
__attribute__((noinline)) static void nest(struct snapshot *s, uint64_t stack_end, int depth)
{
	if (depth > 0)
		nest(s, stack_end, depth - 1);
	else
		take_snapshot(s, stack_end);
	__asm__ volatile("" ::: "memory");	/* no tail call */
}

SP_TEST(unwind_own_stack_then_from_the_rule_cache)
{
	const uint32_t pid = 4242;
	uint64_t stack_end = 0;
	struct sp_addrspaces *a = sp_addrspaces_new();
	SP_CHECK(a && map_self(a, pid, &stack_end) > 0 && stack_end);
	struct sp_unwind_options o = { .max_depth = 256, .fp_fallback = false, .this_host = true };
	struct sp_unwinder *u = sp_unwinder_new(&o);
	SP_CHECK(u && sp_unwinder_arch(u) == &sp_arch_x86_64);
	struct snapshot *s = malloc(sizeof(*s));
	struct sp_uframe f1[256], f2[256];
	size_t n1 = 0, n2 = 0;
	if (!a || !u || !s || !stack_end)
		goto out;
	nest(s, stack_end, 3);

	enum sp_unwind_end e1 = sp_unwind(u, a, pid, s->regs, 17, s->stack, s->len, false, f1,
					  256, &n1);
	struct sp_unwind_stats st1, st2;
	sp_unwinder_stats(u, &st1);
	/* take_snapshot, nest x 4, this test, the driver, libc: to _start. */
	SP_CHECK(e1 == SP_END_COMPLETE);
	SP_CHECK(n1 >= 8);
	SP_CHECK(f1[0].addr == s->regs[8] && !(f1[0].flags & SP_FRAME_RETADDR));
	for (size_t i = 1; i < n1; i++)
		SP_CHECK(f1[i].flags & SP_FRAME_RETADDR);
	/* The four frames of nest() return to the same place but the first. */
	SP_CHECK(n1 >= 5 && f1[2].addr == f1[3].addr && f1[3].addr == f1[4].addr);
	SP_CHECK(st1.cache_misses > 0 && st1.cache_misses <= n1);

	/* The same stack again: every rule comes from the cache. */
	enum sp_unwind_end e2 = sp_unwind(u, a, pid, s->regs, 17, s->stack, s->len, false, f2,
					  256, &n2);
	sp_unwinder_stats(u, &st2);
	SP_CHECK(e2 == e1 && n2 == n1);
	for (size_t i = 0; i < n1 && i < n2; i++)
		SP_CHECK(f1[i].addr == f2[i].addr && f1[i].obj == f2[i].obj &&
			 f1[i].rel == f2[i].rel && f1[i].flags == f2[i].flags);
	SP_CHECK(st2.cache_misses == st1.cache_misses);
	SP_CHECK(st2.cache_hits - st1.cache_hits == n1);

	/*
	 * What the walk needed of the copy is a window that gives the same
	 * stack; a copy of half of it ends truncated, and says 0.
	 */
	uint64_t used = sp_unwinder_copy_used(u);
	SP_CHECK(used >= 64 && used <= s->len && used % 8 == 0);
	if (used >= 64 && used <= s->len) {
		n2 = 0;
		e2 = sp_unwind(u, a, pid, s->regs, 17, s->stack, used, true, f2, 256, &n2);
		SP_CHECK(e2 == SP_END_COMPLETE && n2 == n1);
		SP_CHECK(sp_unwinder_copy_used(u) == used);
		e2 = sp_unwind(u, a, pid, s->regs, 17, s->stack, used / 2, true, f2, 256, &n2);
		SP_CHECK(e2 == SP_END_TRUNCATED);
		SP_CHECK(sp_unwinder_copy_used(u) == 0);
	}

	/* One rule looked up twice: the same compiled rule, from the table. */
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, f1[1].addr);
	SP_CHECK(m != NULL);
	if (m) {
		struct modstate *ms = sp_unwind_module(u, m->obj);
		uint64_t rel = sp_unwind_rel(u, m, f1[1].addr) - 1;
		SP_CHECK(ms && ms->state == M_OK);
		sp_unwinder_stats(u, &st1);
		const struct rule *r1 = sp_unwind_rule(u, ms, rel);
		const struct rule *r2 = sp_unwind_rule(u, ms, rel);
		sp_unwinder_stats(u, &st2);
		SP_CHECK(r1 && r1 == r2 && !r1->none && r1->cfa_simple);
		/* CFA = rsp + n, or rbp + 16 in a build with frame pointers. */
		SP_CHECK(r1 && (r1->cfa_reg == sp_arch_x86_64.sp || r1->cfa_reg == sp_arch_x86_64.fp) &&
			 r1->cfa_off >= 16);
		SP_CHECK(r1 && r1->kind[16] == R_OFFSET && r1->off[16] == -8);
		SP_CHECK(st2.cache_hits - st1.cache_hits == 2 && st2.cache_misses == st1.cache_misses);
	}

	/* Without the stack copy's end: a truncated copy ends as truncated. */
	n2 = 0;
	e2 = sp_unwind(u, a, pid, s->regs, 17, s->stack, 64, true, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_TRUNCATED && n2 >= 1 && n2 < n1);
	/* Too few registers. */
	e2 = sp_unwind(u, a, pid, s->regs, 16, s->stack, s->len, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_BAD_CFA && n2 == 0);

	/*
	 * The same addresses as a frame-pointer chain (--call-graph fp): the
	 * same frames, complete since the last is _start's.
	 */
	uint64_t chain[256];
	for (size_t i = 0; i < n1; i++)
		chain[i] = f1[i].addr;
	e2 = sp_unwind_chain(u, a, pid, chain, n1, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_COMPLETE && n2 == n1);
	for (size_t i = 0; i < n1 && i < n2; i++)
		SP_CHECK(f1[i].addr == f2[i].addr && f1[i].obj == f2[i].obj &&
			 f1[i].rel == f2[i].rel && f1[i].flags == f2[i].flags);
	/* Stopped short of the entry, cut at the kernel's limit, or at ours. */
	e2 = sp_unwind_chain(u, a, pid, chain, 3, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_BAD_FP && n2 == 3);
	e2 = sp_unwind_chain(u, a, pid, chain, 3, true, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_TRUNCATED && n2 == 3);
	e2 = sp_unwind_chain(u, a, pid, chain, n1, false, f2, 2, &n2);
	SP_CHECK(e2 == SP_END_MAX_DEPTH && n2 == 2);
	/* A return address in no mapping: the walk went astray, it is dropped. */
	chain[2] = 8;
	e2 = sp_unwind_chain(u, a, pid, chain, n1, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_BAD_FP && n2 == 2);
	/* The interrupted instruction in no mapping is kept. */
	e2 = sp_unwind_chain(u, a, pid, chain + 2, 1, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_NO_MAPPING && n2 == 1 && f2[0].obj == NULL && f2[0].rel == 8);
	e2 = sp_unwind_chain(u, a, pid, chain, 0, false, f2, 256, &n2);
	SP_CHECK(e2 == SP_END_NO_USER_STACK && n2 == 0);
out:
	free(s);
	sp_unwinder_free(u);
	sp_addrspaces_free(a, sp_unwinder_free_object);
}

/*
 * A sample between the pops of an epilogue whose CFI still says where the
 * popped registers were saved (as GCC's often does): the slots lie below
 * the stack pointer, outside the copy, and the registers already hold
 * what they held.  epilogue_probe() takes its snapshot there, after its
 * pops, copying the stack up to epilogue_top itself, at most 64 KiB (a
 * call would write over the stack it copies); its caller finds its CFA through rbp alone,
 * having aligned its stack pointer, so losing rbp would end the walk.
 */
uint64_t epilogue_regs[17];
unsigned char epilogue_stack[65536];
uint64_t epilogue_top, epilogue_len;
void epilogue_caller(void);

__asm__(
	".text\n"
	".type epilogue_probe, @function\n"
	"epilogue_probe:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	push %rbx\n"
	".cfi_def_cfa_offset 24\n"
	".cfi_offset %rbx, -24\n"
	"	mov $0x1111, %rbx\n"
	"	mov $0x2222, %rbp\n"
	"	pop %rbx\n"
	".cfi_def_cfa_offset 16\n"
	"	pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"	lea 0(%rip), %rax\n"
	"	mov %rax, epilogue_regs+64(%rip)\n"
	"	mov %rsp, epilogue_regs+56(%rip)\n"
	"	mov %rbx, epilogue_regs+8(%rip)\n"
	"	mov %rbp, epilogue_regs+48(%rip)\n"
	"	mov %r12, epilogue_regs+104(%rip)\n"
	"	mov %r13, epilogue_regs+112(%rip)\n"
	"	mov %r14, epilogue_regs+120(%rip)\n"
	"	mov %r15, epilogue_regs+128(%rip)\n"
	"	mov epilogue_top(%rip), %rcx\n"
	"	sub %rsp, %rcx\n"
	"	cmp $65536, %rcx\n"
	"	jbe 1f\n"
	"	mov $65536, %rcx\n"
	"1:	mov %rcx, epilogue_len(%rip)\n"
	"	mov %rsp, %rsi\n"
	"	lea epilogue_stack(%rip), %rdi\n"
	"	rep movsb\n"
	"	ret\n"
	".cfi_endproc\n"
	".size epilogue_probe, .-epilogue_probe\n"
	".globl epilogue_caller\n"
	".type epilogue_caller, @function\n"
	"epilogue_caller:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"	and $-64, %rsp\n"
	"	call epilogue_probe\n"
	"	leave\n"
	".cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size epilogue_caller, .-epilogue_caller\n");

SP_TEST(unwind_epilogue_between_pops_keeps_the_popped_registers)
{
	const uint32_t pid = 4243;
	uint64_t stack_end = 0;
	struct sp_addrspaces *a = sp_addrspaces_new();
	SP_CHECK(a && map_self(a, pid, &stack_end) > 0 && stack_end);
	struct sp_unwind_options o = { .max_depth = 256, .fp_fallback = false, .this_host = true };
	struct sp_unwinder *u = sp_unwinder_new(&o);
	struct sp_uframe f[256];
	size_t n = 0;
	if (!a || !u || !stack_end)
		goto out;
	epilogue_top = stack_end;
	epilogue_caller();
	enum sp_unwind_end e = sp_unwind(u, a, pid, epilogue_regs, 17, epilogue_stack,
					 epilogue_len, false, f, 256, &n);
	/* epilogue_probe, epilogue_caller, this test, the driver, libc: to _start. */
	SP_CHECK(e == SP_END_COMPLETE);
	SP_CHECK(n >= 5);
	SP_CHECK(n > 0 && f[0].addr == epilogue_regs[8]);
	SP_CHECK(n > 1 && f[1].addr > (uint64_t)(uintptr_t)epilogue_caller &&
		 f[1].addr < (uint64_t)(uintptr_t)epilogue_caller + 32);
out:
	sp_unwinder_free(u);
	sp_addrspaces_free(a, sp_unwinder_free_object);
}

#endif

/*
 * The frame-record walk of each backend through code without CFI: the pc
 * in anonymous memory, the frame pointer at a record [caller's fp, return
 * address].  On x86_64 the return address lies in this driver's code,
 * which has CFI (so the fallback accepts it once that CFI steps on); on
 * aarch64, whose backend cannot read this driver's x86_64 CFI, it lies
 * in the JIT memory again, and the record links to an older one higher
 * up (so the fallback accepts it as a JIT-to-JIT return), and carries a
 * pointer-authentication code, which the walk strips.  What follows that
 * frame is not checked.
 */
SP_TEST(unwind_frame_record_walk_of_each_backend)
{
	const struct sp_unwind_arch *arches[] = { &sp_arch_x86_64, &sp_arch_aarch64 };
	const uint32_t pid = 77;
	const uint64_t jit = 0x10000000, base = 0x7ffd0000, fp = base + 16;
	for (size_t k = 0; k < 2; k++) {
		const struct sp_unwind_arch *arch = arches[k];
		const uint64_t ra = k ? jit + 0x84 :
				    (uint64_t)(uintptr_t)&unwind_frame_record_helper + 4;
		uint64_t stack_end = 0;
		struct sp_addrspaces *a = sp_addrspaces_new();
		SP_CHECK(a && map_self(a, pid, &stack_end) > 0);
		struct obj o;
		msgpack_packer *pk = obj_begin(&o);
		msgpack_pack_map(pk, 5);
		sp_pack_kv_u64(pk, "pid", pid);
		sp_pack_kv_u64(pk, "start", jit);
		sp_pack_kv_u64(pk, "len", 4096);
		sp_pack_kv_u64(pk, "pgoff", 0);
		sp_pack_kv_str(pk, "path", "//anon");
		SP_CHECK(a && sp_addrspaces_apply(a, SP_R_MAP, obj_end(&o)) == 0);
		obj_release(&o);

		struct sp_unwind_regmap map;
		sp_unwind_regmap_native(&map, arch);
		struct sp_unwind_options opt = { .max_depth = 8, .fp_fallback = true,
						 .this_host = true, .regs = &map };
		struct sp_unwinder *u = sp_unwinder_new(&opt);
		SP_CHECK(u && sp_unwinder_arch(u) == arch);

		/* The sampled registers, by name. */
		uint64_t regs[SP_ARCH_MAX_NAMES] = { 0 };
		for (size_t i = 0; i < arch->nreg_names; i++) {
			const char *n = arch->reg_names[i];
			if (!strcmp(n, "sp"))
				regs[i] = base;
			else if (!strcmp(n, "ip") || !strcmp(n, "pc"))
				regs[i] = jit + 0x40;
			else if (!strcmp(n, "bp") || !strcmp(n, "x29"))
				regs[i] = fp;
		}
		uint64_t stack[16] = { 0 };
		stack[2] = base + 0x60;		/* at fp: the caller's fp */
		stack[3] = ra | (k ? 0x002d000000000000ull : 0);
		struct sp_uframe f[8];
		size_t n = 0;
		if (a && u)
			sp_unwind(u, a, pid, regs, arch->nreg_names, (const unsigned char *)stack,
				  sizeof(stack), false, f, 8, &n);
		struct sp_unwind_stats st;
		if (u)
			sp_unwinder_stats(u, &st);
		SP_CHECK(n >= 2);
		SP_CHECK(n >= 1 && f[0].addr == jit + 0x40 && (f[0].flags & SP_FRAME_JIT));
		SP_CHECK(n >= 2 && f[1].addr == ra && (f[1].flags & SP_FRAME_RETADDR));
		SP_CHECK(u && st.fp_frames == 1 && st.scan_frames == 0);
		sp_unwinder_free(u);
		sp_addrspaces_free(a, sp_unwinder_free_object);
	}
}

/* Applies a map record of [start, start + len) at file offset pgoff of path. */
static int apply_map(struct sp_addrspaces *a, uint32_t pid, uint64_t start, uint64_t len,
		     uint64_t pgoff, const char *path)
{
	struct obj o;
	msgpack_packer *pk = obj_begin(&o);
	msgpack_pack_map(pk, 5);
	sp_pack_kv_u64(pk, "pid", pid);
	sp_pack_kv_u64(pk, "start", start);
	sp_pack_kv_u64(pk, "len", len);
	sp_pack_kv_u64(pk, "pgoff", pgoff);
	sp_pack_kv_str(pk, "path", path);
	int rc = sp_addrspaces_apply(a, SP_R_MAP, obj_end(&o));
	obj_release(&o);
	return rc;
}

/*
 * Random mappings over 256 pages, overlapping, in random order: after
 * each, every page maps as a page-by-page model of "the latest mapping
 * wins" says, with the file offset it had in that mapping.
 */
static void page_model(unsigned PAGES, unsigned ROUNDS, unsigned maxlen, unsigned every);

SP_TEST(unwind_addrspace_overlapping_mappings_match_a_page_model)
{
	page_model(256, 2000, 8, 1);
	/* Thousands of mappings: many chunks, split and emptied. */
	page_model(8192, 30000, 3, 500);
}

static void page_model(unsigned PAGES, unsigned ROUNDS, unsigned maxlen, unsigned every)
{
	static const char *const paths[] = { "/lib/a.so", "/lib/b.so", "/lib/c.so" };
	struct { int path; uint64_t off; } *model = malloc(PAGES * sizeof(*model));
	SP_CHECK(model != NULL);
	if (!model)
		return;
	memset(model, 0xff, PAGES * sizeof(*model));
	struct sp_addrspaces *a = sp_addrspaces_new();
	SP_CHECK(a != NULL);
	uint64_t seed = 12345;
	const uint64_t base = 0x10000000, page = 4096;
	int bad = 0;
	for (int r = 0; r < ROUNDS && a && !bad; r++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned first = (unsigned)(seed >> 33) % PAGES;
		unsigned n = 1 + (unsigned)(seed >> 50) % maxlen;
		if (first + n > PAGES)
			n = PAGES - first;
		int path = (int)((seed >> 20) % 3);
		uint64_t pgoff = ((seed >> 40) % 64) * page;
		SP_CHECK(apply_map(a, 7, base + first * page, n * page, pgoff, paths[path]) == 0);
		for (unsigned k = 0; k < n; k++) {
			model[first + k].path = path;
			model[first + k].off = pgoff + k * page;
		}
		for (unsigned pg = 0; pg < PAGES && !bad && (r % every == 0 || r == ROUNDS - 1); pg++) {
			uint64_t addr = base + pg * page + 100;
			const struct sp_mapping *m = sp_addrspaces_find(a, 7, addr);
			if (model[pg].path < 0) {
				bad = m != NULL;
				continue;
			}
			bad = !m || strcmp(m->obj->path, paths[model[pg].path]) != 0 ||
			      addr - m->start + m->pgoff != model[pg].off + 100;
		}
	}
	SP_CHECK(!bad);
	sp_addrspaces_free(a, NULL);
	free(model);
}

/* --stack-size auto's choice from the needs counted by 512-byte bucket. */
SP_TEST(unwind_copy_used_window_keeps_the_share_asked)
{
	struct sp_copy_used c;
	memset(&c, 0, sizeof(c));
	/* Nothing counted: the largest window, no quantile. */
	SP_CHECK(sp_copy_used_window(&c, 0.995, 4096, 65528) == 65528);
	SP_CHECK(sp_copy_used_quantile(&c, 0.5) == 0);
	/* 995 shallow stacks and 5 deep ones: the shallow ones decide. */
	for (int i = 0; i < 995; i++)
		sp_copy_used_add(&c, true, 1000 + (uint64_t)i);
	for (int i = 0; i < 5; i++)
		sp_copy_used_add(&c, true, 20000);
	SP_CHECK(c.n == 1000 && c.max == 20000 && c.truncated == 0);
	SP_CHECK(sp_copy_used_window(&c, 0.995, 1024, 65528) == 2048);
	SP_CHECK(sp_copy_used_window(&c, 0.995, 4096, 65528) == 4096);
	SP_CHECK(sp_copy_used_quantile(&c, 0.5) == 1536);
	SP_CHECK(sp_copy_used_quantile(&c, 1.0) == 20000);
	/* One more deep stack: 99.5% needs the deep ones, rounded up to 512. */
	sp_copy_used_add(&c, true, 20000);
	SP_CHECK(sp_copy_used_window(&c, 0.995, 4096, 65528) == 20480);
	/* Truncated stacks needed more than any window: 1% of them keeps the largest. */
	for (int i = 0; i < 11; i++)
		sp_copy_used_add(&c, false, 0);
	SP_CHECK(c.truncated == 11 && c.n == 1001);
	SP_CHECK(sp_copy_used_window(&c, 0.995, 4096, 65528) == 65528);
	/* A need at the kernel's limit stays within it. */
	memset(&c, 0, sizeof(c));
	sp_copy_used_add(&c, true, 65528);
	SP_CHECK(sp_copy_used_window(&c, 0.995, 4096, 65528) == 65528);
	SP_CHECK(sp_copy_used_quantile(&c, 0.995) == 65528);
}
