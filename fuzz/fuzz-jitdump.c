/* SPDX-License-Identifier: MIT
 * fuzz-jitdump: feeds the input to the jitdump reader twice, whole and
 * in pieces whose sizes the input's first byte chooses, reading every
 * record after each piece.
 *
 * It checks that
 *   - both readings return the same records (offset, id, size) and stop
 *     the same way, at the same offset, with the same message;
 *   - records are contiguous: each starts where the previous ended, the
 *     first right after the header, and none runs past the bytes fed;
 *   - every pointer of a record lies inside it: a code load's name and
 *     code, the unwinding data, each debug-info line's file name;
 *   - a reader that failed stays failed;
 * and it gives the input, as two jitdump records of a stream, to
 * sp-symbolize's table (sym/jitdump.h) and to the unwinder's address
 * spaces (unwind/jitcfi.c), then looks up the start and end of every
 * code load: a name found lies in a code load, a rule is one libdw
 * compiled from the input's unwinding information, and nothing crashes.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "stream/jitdump.h"
#include "stream/stream.h"
#include "sym/jitdump.h"
#include "unwind/addrspace.h"
#include "unwind/internal.h"

struct seen {
	uint64_t off;
	uint32_t id, size;
};

struct run {
	struct seen *v;
	size_t n;
	int failed;
	uint64_t stop;
	char err[600];
};

static void check(int cond)
{
	if (!cond)
		abort();
}

static int inside(const void *p, size_t n, const unsigned char *lo, const unsigned char *hi)
{
	const unsigned char *q = p;
	return q >= lo && q <= hi && n <= (size_t)(hi - q);
}

static void check_rec(const struct sp_jit_rec *r, const unsigned char *base, uint64_t fed)
{
	const unsigned char *lo = base, *hi = base + r->size;
	check(r->off + r->size <= fed);
	switch (r->type) {
	case SP_JIT_CODE_LOAD:
		check(inside(r->u.load.name, r->u.load.namelen + 1, lo, hi));
		check(r->u.load.name[r->u.load.namelen] == '\0');
		check(inside(r->u.load.code, r->u.load.code_size, lo, hi));
		check((const unsigned char *)r->u.load.name + r->u.load.namelen < r->u.load.code);
		break;
	case SP_JIT_CODE_UNWINDING_INFO:
		check(inside(r->u.unwind.data, r->u.unwind.unwinding_size, lo, hi));
		check(r->u.unwind.eh_frame_hdr_size <= r->u.unwind.unwinding_size);
		break;
	case SP_JIT_CODE_DEBUG_INFO:
		for (size_t i = 0; i < r->u.debug.nlines; i++)
			check(inside(r->u.debug.lines[i].file, r->u.debug.lines[i].filelen, lo, hi));
		break;
	default:
		check(r->type == SP_JIT_CODE_MOVE || r->type == SP_JIT_CODE_CLOSE ||
		      r->type == SP_JIT_UNKNOWN);
	}
}

/*
 * The record's first byte, found from a pointer at a fixed place in it: a
 * code load's name starts 56 bytes in, the unwinding data 40, the first
 * debug-info line's file name 48.  NULL for a record without one.
 */
static const unsigned char *rec_base(const struct sp_jit_rec *r)
{
	switch (r->type) {
	case SP_JIT_CODE_LOAD: return (const unsigned char *)r->u.load.name - 56;
	case SP_JIT_CODE_UNWINDING_INFO: return r->u.unwind.data - 40;
	case SP_JIT_CODE_DEBUG_INFO:
		if (r->u.debug.nlines)
			return (const unsigned char *)r->u.debug.lines[0].file - 48;
		return NULL;
	default: return NULL;
	}
}

static void read_in(const uint8_t *data, size_t size, size_t step, struct run *out)
{
	struct sp_jitdump *j = sp_jitdump_new();
	struct sp_jit_rec r;
	size_t alloc = 0;
	int ret = 0;
	check(j != NULL);
	memset(out, 0, sizeof(*out));
	for (size_t at = 0; at < size && ret >= 0; at += step) {
		size_t k = size - at < step ? size - at : step;
		if (sp_jitdump_feed(j, data + at, k) < 0) {
			ret = -1;
			break;
		}
		while ((ret = sp_jitdump_next(j, &r)) == 1) {
			const unsigned char *b = rec_base(&r);
			if (b)
				check_rec(&r, b, sp_jitdump_fed(j));
			const struct sp_jitdump_header *h = sp_jitdump_header(j);
			check(h != NULL);
			uint64_t expect = out->n ? out->v[out->n - 1].off + out->v[out->n - 1].size
						 : h->total_size;
			check(r.off == expect);
			if (out->n == alloc) {
				alloc = alloc ? 2 * alloc : 16;
				out->v = realloc(out->v, alloc * sizeof(*out->v));
				check(out->v != NULL);
			}
			out->v[out->n++] = (struct seen){ r.off, r.id, r.size };
		}
	}
	out->failed = ret < 0;
	out->stop = sp_jitdump_offset(j);
	check(out->stop <= size);
	if (out->failed) {
		check(sp_jitdump_failed(j));
		check(sp_jitdump_next(j, &r) == -1);
		strncpy(out->err, sp_jitdump_error(j), sizeof(out->err) - 1);
	}
	sp_jitdump_free(j);
}

/* The input's bytes [off, off + n) as the jitdump record of pid 7. */
static void jitdump_record(msgpack_sbuffer *sb, const uint8_t *data, size_t off, size_t n)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	sp_pack_str(&pk, "t");
	sp_pack_str(&pk, "jitdump");
	sp_pack_str(&pk, "pid");
	msgpack_pack_uint64(&pk, 7);
	sp_pack_str(&pk, "path");
	sp_pack_str(&pk, "/tmp/jit-7.dump");
	sp_pack_str(&pk, "off");
	msgpack_pack_uint64(&pk, off);
	sp_pack_str(&pk, "data");
	msgpack_pack_bin(&pk, n);
	msgpack_pack_bin_body(&pk, data + off, n);
}

static void ignore(void *arg, const char *msg)
{
	(void)arg;
	check(msg && *msg);
}

/* The consumers of the stream's records: names and unwinding rules. */
static void consumers(const uint8_t *data, size_t size, const struct run *whole)
{
	struct sp_jitdumps *jd = sp_jitdumps_new(ignore, NULL);
	struct sp_addrspaces *a = sp_addrspaces_new();
	struct sp_unwind_regmap map;
	sp_unwind_regmap_native(&map, &sp_arch_x86_64);
	struct sp_unwind_options opt = { .max_depth = 8, .regs = &map };
	struct sp_unwinder *u = sp_unwinder_new(&opt);
	check(jd && a && u);
	size_t half = size / 2;
	for (int k = 0; k < 2; k++) {
		msgpack_sbuffer sb;
		msgpack_unpacked up;
		msgpack_sbuffer_init(&sb);
		msgpack_unpacked_init(&up);
		jitdump_record(&sb, data, k ? half : 0, k ? size - half : half);
		size_t used = 0;
		check(msgpack_unpack_next(&up, sb.data, sb.size, &used) == MSGPACK_UNPACK_SUCCESS);
		struct sp_record rec = { .type = SP_R_JITDUMP, .map = &up.data };
		check(sp_jitdumps_note(jd, &rec) == 0);
		check(sp_addrspaces_apply(a, SP_R_JITDUMP, &up.data) == 0);
		msgpack_unpacked_destroy(&up);
		msgpack_sbuffer_destroy(&sb);
	}
	/* The code loads, read again: look up their edges. */
	struct sp_jitdump *j = sp_jitdump_new();
	struct sp_jit_rec r;
	check(j != NULL);
	sp_jitdump_feed(j, data, size);
	for (size_t i = 0; i < whole->n && sp_jitdump_next(j, &r) == 1; i++) {
		if (r.type != SP_JIT_CODE_LOAD)
			continue;
		uint64_t at[3] = { r.u.load.code_addr, r.u.load.code_addr + r.u.load.code_size / 2,
				   r.u.load.code_addr + r.u.load.code_size - 1 };
		for (int k = 0; k < 3; k++) {
			struct sp_jitdump_sym js;
			if (sp_jitdumps_find(jd, 7, at[k], &js))
				check(js.name != NULL && js.start <= at[k]);
			const struct rule *rule = sp_unwind_jit_rule(u, a, 7, at[k]);
			check(!rule || !rule->none);
		}
	}
	sp_jitdump_free(j);
	sp_unwinder_free(u);
	sp_addrspaces_free(a, NULL);
	sp_jitdumps_free(jd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run whole, pieces;
	size_t step = size ? (size_t)data[0] % 61 + 1 : 1;

	read_in(data, size, size ? size : 1, &whole);
	read_in(data, size, step, &pieces);
	check(whole.n == pieces.n && whole.failed == pieces.failed);
	check(whole.stop == pieces.stop);
	check(strcmp(whole.err, pieces.err) == 0);
	for (size_t i = 0; i < whole.n; i++)
		check(memcmp(&whole.v[i], &pieces.v[i], sizeof(whole.v[i])) == 0);
	consumers(data, size, &whole);
	free(whole.v);
	free(pieces.v);
	return 0;
}
