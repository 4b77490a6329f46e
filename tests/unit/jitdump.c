/* SPDX-License-Identifier: MIT */
/* The jitdump reader (stream/jitdump.h). */
#include <byteswap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "stream/jitdump.h"
#include "stream/record.h"
#include "sym/jitdump.h"
#include "util/strbuf.h"
#include "unit.h"

/* A jitdump file built in memory, in this host's byte order or the other. */
struct jd {
	struct sp_buf b;
	int swap;
};

static void put32(struct jd *d, uint32_t v)
{
	if (d->swap)
		v = bswap_32(v);
	sp_buf_add(&d->b, &v, 4);
}

static void put64(struct jd *d, uint64_t v)
{
	if (d->swap)
		v = bswap_64(v);
	sp_buf_add(&d->b, &v, 8);
}

static void header(struct jd *d, uint32_t total)
{
	put32(d, SP_JITDUMP_MAGIC);
	put32(d, 1);
	put32(d, total);
	put32(d, 62);		/* EM_X86_64 */
	put32(d, 0);
	put32(d, 4242);
	put64(d, 1000);
	put64(d, 0);
	for (uint32_t i = SP_JITDUMP_HEADER_SIZE; i < total; i++)
		sp_buf_addc(&d->b, 'x');
}

static void code_load(struct jd *d, uint64_t addr, uint64_t size, const char *name, uint64_t idx)
{
	size_t n = strlen(name) + 1;
	put32(d, SP_JIT_CODE_LOAD);
	put32(d, (uint32_t)(56 + n + size));
	put64(d, 2000 + idx);
	put32(d, 4242);
	put32(d, 4243);
	put64(d, addr);
	put64(d, addr);
	put64(d, size);
	put64(d, idx);
	sp_buf_add(&d->b, name, n);
	for (uint64_t i = 0; i < size; i++)
		sp_buf_addc(&d->b, (char)0xcc);
}

static void code_move(struct jd *d, uint64_t from, uint64_t to, uint64_t size)
{
	put32(d, SP_JIT_CODE_MOVE);
	put32(d, 64);
	put64(d, 3000);
	put32(d, 4242);
	put32(d, 4243);
	put64(d, to);
	put64(d, from);
	put64(d, to);
	put64(d, size);
	put64(d, 7);
}

static void debug_info(struct jd *d, uint64_t addr)
{
	static const char f1[] = "a.js", rep[] = "\xff";
	put32(d, SP_JIT_CODE_DEBUG_INFO);
	put32(d, 32 + 3 * 16 + sizeof(f1) * 2 + sizeof(rep));
	put64(d, 4000);
	put64(d, addr);
	put64(d, 3);
	put64(d, addr);
	put32(d, 10);
	put32(d, 1);
	sp_buf_add(&d->b, f1, sizeof(f1));
	put64(d, addr + 4);
	put32(d, 11);
	put32(d, 0);
	sp_buf_add(&d->b, rep, sizeof(rep));
	put64(d, addr + 8);
	put32(d, 12);
	put32(d, 0);
	sp_buf_add(&d->b, f1, sizeof(f1));
}

static void unwinding_info(struct jd *d)
{
	put32(d, SP_JIT_CODE_UNWINDING_INFO);
	put32(d, 40 + 24);
	put64(d, 5000);
	put64(d, 20);
	put64(d, 8);
	put64(d, 20);
	for (int i = 0; i < 24; i++)
		sp_buf_addc(&d->b, (char)i);
}

static void other(struct jd *d, uint32_t id, uint32_t size)
{
	put32(d, id);
	put32(d, size);
	put64(d, 6000);
	for (uint32_t i = 16; i < size; i++)
		sp_buf_addc(&d->b, 'z');
}

static void build(struct jd *d, int swap)
{
	sp_buf_init(&d->b);
	d->swap = swap;
	header(d, 48);
	unwinding_info(d);
	code_load(d, 0x1000, 16, "JS:*hot a.js:1", 1);
	debug_info(d, 0x1000);
	other(d, 99, 24);
	code_move(d, 0x1000, 0x2000, 16);
	other(d, SP_JIT_CODE_CLOSE, 16);
}

/* Feeds the file step bytes at a time; checks every record; returns how many. */
static int read_all(const struct jd *d, size_t step)
{
	struct sp_jitdump *j = sp_jitdump_new();
	struct sp_jit_rec r;
	int n = 0, ret;
	SP_CHECK(j != NULL);
	for (size_t at = 0; at < d->b.len; at += step) {
		size_t k = d->b.len - at < step ? d->b.len - at : step;
		SP_CHECK(sp_jitdump_feed(j, d->b.p + at, k) == 0);
		while ((ret = sp_jitdump_next(j, &r)) == 1) {
			switch (n++) {
			case 0:
				SP_CHECK(r.type == SP_JIT_CODE_UNWINDING_INFO);
				SP_CHECK(r.off == 48 && r.timestamp == 5000);
				SP_CHECK(r.u.unwind.unwinding_size == 20);
				SP_CHECK(r.u.unwind.eh_frame_hdr_size == 8);
				SP_CHECK(r.u.unwind.data[19] == 19);
				break;
			case 1:
				SP_CHECK(r.type == SP_JIT_CODE_LOAD);
				SP_CHECK(r.u.load.code_addr == 0x1000 && r.u.load.code_size == 16);
				SP_CHECK(r.u.load.pid == 4242 && r.u.load.tid == 4243);
				SP_CHECK(r.u.load.code_index == 1);
				SP_CHECK_STR(r.u.load.name, "JS:*hot a.js:1");
				SP_CHECK(r.u.load.code[15] == 0xcc);
				break;
			case 2:
				SP_CHECK(r.type == SP_JIT_CODE_DEBUG_INFO);
				SP_CHECK(r.u.debug.code_addr == 0x1000 && r.u.debug.nlines == 3);
				SP_CHECK(r.u.debug.lines[1].addr == 0x1004);
				SP_CHECK(r.u.debug.lines[1].line == 11);
				SP_CHECK(r.u.debug.lines[1].filelen == 4);
				SP_CHECK(memcmp(r.u.debug.lines[1].file, "a.js", 4) == 0);
				SP_CHECK(r.u.debug.lines[2].line == 12);
				break;
			case 3:
				SP_CHECK(r.type == SP_JIT_UNKNOWN && r.id == 99 && r.size == 24);
				break;
			case 4:
				SP_CHECK(r.type == SP_JIT_CODE_MOVE);
				SP_CHECK(r.u.move.old_code_addr == 0x1000);
				SP_CHECK(r.u.move.new_code_addr == 0x2000);
				SP_CHECK(r.u.move.code_index == 7);
				break;
			case 5:
				SP_CHECK(r.type == SP_JIT_CODE_CLOSE);
				break;
			}
		}
		SP_CHECK(ret == 0);
	}
	const struct sp_jitdump_header *h = sp_jitdump_header(j);
	SP_CHECK(h && h->pid == 4242 && h->elf_mach == 62 && h->total_size == 48);
	SP_CHECK(h && h->swapped == d->swap);
	SP_CHECK(sp_jitdump_offset(j) == d->b.len && sp_jitdump_fed(j) == d->b.len);
	sp_jitdump_free(j);
	return n;
}

SP_TEST(jitdump_records_in_pieces_both_byte_orders)
{
	for (int swap = 0; swap < 2; swap++) {
		struct jd d;
		build(&d, swap);
		SP_CHECK(read_all(&d, d.b.len) == 6);
		SP_CHECK(read_all(&d, 1) == 6);
		SP_CHECK(read_all(&d, 7) == 6);
		sp_buf_release(&d.b);
	}
}

/* Reads until the reader stops; returns the records read and the error. */
static int read_bad(const struct sp_buf *b, char *err, size_t errlen)
{
	struct sp_jitdump *j = sp_jitdump_new();
	struct sp_jit_rec r;
	int n = 0, ret;
	sp_jitdump_feed(j, b->p, b->len);
	while ((ret = sp_jitdump_next(j, &r)) == 1)
		n++;
	snprintf(err, errlen, "%s", ret < 0 ? sp_jitdump_error(j) : "");
	SP_CHECK(ret < 0 || !sp_jitdump_failed(j));
	/* A failed reader stays failed. */
	if (ret < 0)
		SP_CHECK(sp_jitdump_next(j, &r) == -1 && sp_jitdump_feed(j, "x", 1) == -1);
	sp_jitdump_free(j);
	return n;
}

SP_TEST(jitdump_bad_sizes_stop_naming_the_offset)
{
	struct jd d;
	char err[600];

	/* A record size below the record's fields. */
	build(&d, 0);
	size_t load = 48 + 64;
	uint32_t small = 20;
	memcpy(d.b.p + load + 4, &small, 4);
	SP_CHECK(read_bad(&d.b, err, sizeof(err)) == 1);
	SP_CHECK(strstr(err, "bad record size (20) at offset 116") != NULL);
	sp_buf_release(&d.b);

	/* A code size larger than its record. */
	build(&d, 1);
	uint64_t big = bswap_64(1 << 20);
	memcpy(d.b.p + load + 40, &big, 8);
	SP_CHECK(read_bad(&d.b, err, sizeof(err)) == 1);
	SP_CHECK(strstr(err, "at offset 152") != NULL);
	sp_buf_release(&d.b);

	/* Not a jitdump; a header size too small. */
	sp_buf_init(&d.b);
	sp_buf_adds(&d.b, "PERFILE2 and more bytes than a header needs, surely");
	SP_CHECK(read_bad(&d.b, err, sizeof(err)) == 0);
	SP_CHECK(strstr(err, "bad magic") != NULL);
	sp_buf_release(&d.b);
	d.swap = 0;
	header(&d, 40);
	uint32_t h = 12;
	memcpy(d.b.p + 8, &h, 4);
	SP_CHECK(read_bad(&d.b, err, sizeof(err)) == 0);
	SP_CHECK(strstr(err, "bad header size (12) at offset 8") != NULL);
	sp_buf_release(&d.b);

	/* A debug-info count no record could hold. */
	build(&d, 0);
	size_t dbg = load + 56 + 15 + 16;
	uint64_t many = UINT64_MAX / 2;
	memcpy(d.b.p + dbg + 24, &many, 8);
	SP_CHECK(read_bad(&d.b, err, sizeof(err)) == 2);
	SP_CHECK(strstr(err, "debug-info entries") != NULL);
	sp_buf_release(&d.b);
}

SP_TEST(jitdump_cut_file_waits_for_more)
{
	struct jd d;
	build(&d, 0);
	struct sp_jitdump *j = sp_jitdump_new();
	struct sp_jit_rec r;
	/* Up to the middle of the code load: one record, then a wait. */
	sp_jitdump_feed(j, d.b.p, 48 + 64 + 30);
	SP_CHECK(sp_jitdump_next(j, &r) == 1);
	SP_CHECK(sp_jitdump_next(j, &r) == 0);
	SP_CHECK(sp_jitdump_offset(j) == 48 + 64);
	SP_CHECK(sp_jitdump_fed(j) == 48 + 64 + 30);
	SP_CHECK(!sp_jitdump_failed(j));
	sp_jitdump_free(j);
	sp_buf_release(&d.b);
}

#if defined(__x86_64__)
#include "unwind/addrspace.h"
#include "unwind/internal.h"

/*
 * The unwinding information V8 (node --perf-prof-unwinding-info) wrote
 * for a function of 708 bytes at 0x7efd84005b80: an .eh_frame (one CIE,
 * one FDE) and its .eh_frame_hdr.  The FDE says: push rbp at +15, rbp is
 * the CFA register from +18 to +104, then rsp again, and from +123 rbp.
 */
static const char v8_unwind_hex[] =
	"1800000000000000037a4c520001781002ff1b0c0708900100000000"
	"200000002000000014fdffffc1020000004f0e108602430d0602560d"
	"07410e08520c061000000000011b033bb8ffffff01000000f4fcffff"
	"d8ffffff";

static void unwind_file(struct jd *d, uint64_t code)
{
	unsigned char eh[88];
	for (size_t i = 0; i < sizeof(eh); i++)
		sscanf(v8_unwind_hex + 2 * i, "%2hhx", &eh[i]);
	sp_buf_init(&d->b);
	d->swap = 0;
	header(d, 40);
	put32(d, SP_JIT_CODE_UNWINDING_INFO);
	put32(d, 40 + sizeof(eh));
	put64(d, 1);
	put64(d, sizeof(eh));
	put64(d, 20);
	put64(d, sizeof(eh));
	sp_buf_add(&d->b, eh, sizeof(eh));
	code_load(d, code, 708, "JS:*hotLoop a.js:1:17", 1);
}

/* Gives a the jitdump record of pid holding n bytes of the file from off. */
static int apply_jitdump(struct sp_addrspaces *a, uint32_t pid, const void *p, size_t off,
			 size_t n)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_unpacked_init(&up);
	msgpack_pack_map(&pk, 5);
	sp_pack_kv_str(&pk, "t", "jitdump");
	sp_pack_kv_u64(&pk, "pid", pid);
	sp_pack_kv_str(&pk, "path", "/tmp/jit-4242.dump");
	sp_pack_kv_u64(&pk, "off", off);
	sp_pack_kv_bin(&pk, "data", (const char *)p + off, n);
	size_t used = 0;
	int rc = -1;
	if (msgpack_unpack_next(&up, sb.data, sb.size, &used) == MSGPACK_UNPACK_SUCCESS)
		rc = sp_addrspaces_apply(a, SP_R_JITDUMP, &up.data);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

SP_TEST(jitdump_unwinding_info_gives_rules)
{
	const uint64_t code = 0x7efd84005b80;
	struct jd d;
	unwind_file(&d, code);
	struct sp_addrspaces *a = sp_addrspaces_new();
	struct sp_unwind_regmap map;
	sp_unwind_regmap_native(&map, &sp_arch_x86_64);
	struct sp_unwind_options opt = { .max_depth = 8, .this_host = true, .regs = &map };
	struct sp_unwinder *u = sp_unwinder_new(&opt);
	SP_CHECK(a && u);
	/* In two records, cut inside the code load. */
	SP_CHECK(apply_jitdump(a, 4242, d.b.p, 0, 200) == 0);
	SP_CHECK(sp_unwind_jit_rule(u, a, 4242, code + 0x20) == NULL);
	SP_CHECK(apply_jitdump(a, 4242, d.b.p, 200, d.b.len - 200) == 0);

	const struct rule *r = sp_unwind_jit_rule(u, a, 4242, code);
	SP_CHECK(r && r->cfa_simple && r->cfa_reg == 7 && r->cfa_off == 8);
	SP_CHECK(r && r->kind[16] == R_OFFSET && r->off[16] == -8);
	r = sp_unwind_jit_rule(u, a, 4242, code + 0x20);
	SP_CHECK(r && r->cfa_simple && r->cfa_reg == 6 && r->cfa_off == 16);
	SP_CHECK(r && r->kind[6] == R_OFFSET && r->off[6] == -16);
	r = sp_unwind_jit_rule(u, a, 4242, code + 104);
	SP_CHECK(r && r->cfa_simple && r->cfa_reg == 7 && r->cfa_off == 16);
	SP_CHECK(sp_unwind_jit_rule(u, a, 4242, code + 708 + 64) == NULL);
	SP_CHECK(sp_unwind_jit_rule(u, a, 4243, code + 0x20) == NULL);

	/* Code loaded again over it, without unwinding information: none. */
	size_t had = d.b.len;
	code_load(&d, code, 708, "JS:*other a.js:9:1", 2);
	SP_CHECK(apply_jitdump(a, 4242, d.b.p, had, d.b.len - had) == 0);
	SP_CHECK(sp_unwind_jit_rule(u, a, 4242, code + 0x20) == NULL);
	sp_unwinder_free(u);
	sp_addrspaces_free(a, NULL);
	sp_buf_release(&d.b);
}
#endif

static void collect(void *arg, const char *msg)
{
	snprintf(arg, 600, "%s", msg);
}

/* Gives jd the record of pid 42 holding the file's bytes [off, off + n). */
static int note_sym(struct sp_jitdumps *jd, const struct sp_buf *b, size_t off, size_t n)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_unpacked_init(&up);
	msgpack_pack_map(&pk, 5);
	sp_pack_kv_str(&pk, "t", "jitdump");
	sp_pack_kv_u64(&pk, "pid", 42);
	sp_pack_kv_str(&pk, "path", "/tmp/jit-42.dump");
	sp_pack_kv_u64(&pk, "off", off);
	sp_pack_kv_bin(&pk, "data", b->p + off, n);
	size_t used = 0;
	int rc = -1;
	if (msgpack_unpack_next(&up, sb.data, sb.size, &used) == MSGPACK_UNPACK_SUCCESS) {
		struct sp_record rec = { .type = SP_R_JITDUMP, .map = &up.data };
		rc = sp_jitdumps_note(jd, &rec);
	}
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

SP_TEST(jitdump_names_lines_moves_for_the_symbolizer)
{
	struct jd d;
	char warned[600] = "";
	sp_buf_init(&d.b);
	d.swap = 0;
	header(&d, 40);
	debug_info(&d, 0x1000);
	code_load(&d, 0x1000, 16, "JS:*hot a.js:1", 1);
	size_t first = d.b.len;
	code_move(&d, 0x1000, 0x2000, 16);
	code_load(&d, 0x1004, 4, "JS:*inner", 2);
	struct sp_jitdumps *jd = sp_jitdumps_new(collect, warned);
	struct sp_jitdump_sym s;
	SP_CHECK(jd && note_sym(jd, &d.b, 0, first - 3) == 0);
	SP_CHECK(!sp_jitdumps_find(jd, 42, 0x1005, &s));
	SP_CHECK(sp_jitdumps_generation(jd, 42) == 0);
	SP_CHECK(note_sym(jd, &d.b, first - 3, 3) == 0);
	SP_CHECK(sp_jitdumps_generation(jd, 42) == 1);
	SP_CHECK(sp_jitdumps_find(jd, 42, 0x1005, &s));
	SP_CHECK_STR(s.name, "JS:*hot a.js:1");
	SP_CHECK(s.start == 0x1000 && s.line == 11);
	SP_CHECK_STR(s.file, "a.js");
	SP_CHECK(!sp_jitdumps_find(jd, 42, 0x1010, &s) && !sp_jitdumps_find(jd, 43, 0x1005, &s));

	/* A repeated record is skipped; the move names the new place, lines moved. */
	SP_CHECK(note_sym(jd, &d.b, 0, first) == 0);
	SP_CHECK(note_sym(jd, &d.b, first, d.b.len - first) == 0);
	SP_CHECK(sp_jitdumps_generation(jd, 42) == 2);
	SP_CHECK(sp_jitdumps_find(jd, 42, 0x2009, &s) && s.start == 0x2000 && s.line == 12);
	SP_CHECK_STR(s.name, "JS:*hot a.js:1");
	/* The later load wins where it overlaps, without lines of its own. */
	SP_CHECK(sp_jitdumps_find(jd, 42, 0x1005, &s) && s.start == 0x1004 && !s.file);
	SP_CHECK_STR(s.name, "JS:*inner");
	SP_CHECK(sp_jitdumps_find(jd, 42, 0x1001, &s) && s.start == 0x1000);
	SP_CHECK(warned[0] == '\0');

	/* Bytes missing: a warning, later records ignored, earlier names kept. */
	SP_CHECK(note_sym(jd, &d.b, d.b.len + 10, 4) == 0);
	SP_CHECK(strstr(warned, "bytes ") && strstr(warned, "are missing"));
	SP_CHECK(sp_jitdumps_find(jd, 42, 0x2009, &s));
	sp_jitdumps_free(jd);
	sp_buf_release(&d.b);
}
