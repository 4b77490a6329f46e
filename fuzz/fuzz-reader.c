/* SPDX-License-Identifier: MIT
 * fuzz-reader: feeds the input to sp_reader as a stream and checks what
 * comes out.
 *
 * For every input it
 *   - checks the contract of sp_msgpack_frame() on the raw bytes: a
 *     positive length never exceeds the bytes given, those bytes unpack
 *     exactly, a shorter prefix is incomplete, and the answer does not
 *     depend on bytes after the object, and the quick framing of a flat
 *     map (sp_msgpack_frame_flat()) agrees wherever it answers;
 *   - at the input's start and at every record boundary, reads the bytes
 *     as each record type with sp_record_scan_raw() and with the general
 *     scan it falls back to (sp_record_scan_general()): the same length
 *     and pairs;
 *   - reads the input through sp_reader (from a memfd) until END or ERROR,
 *     once with a 64 KiB record limit and once with the smallest limit
 *     (64 bytes) so that small inputs reach the size checks too, and once
 *     passing every type through undecoded (sp_reader_pass_through()),
 *     where each record passed on must name its type in its first key,
 *     and twice reading every type from its bytes (sp_reader_undecoded()),
 *     which must give the same records, each one's pairs (stream/rawmap.h)
 *     those of the record decoded and valid against the schema;
 *   - for every record, calls the typed accessors on each key the schema
 *     knows for its type, renders it with sp_json_render(), parses that
 *     rendering back with sp_json_parse() and compares the MessagePack
 *     with the record's canonical encoding (msgpack_pack_object()), which
 *     must equal the raw bytes whenever the raw bytes are canonical;
 *   - from a record boundary where a zstd frame begins, checks records
 *     against their own bytes, since they are decompressed;
 *   - compresses the input into zstd frames through the writer, flushing
 *     where the input's first bytes say, and reads it back: the records,
 *     offsets and final status must be those of the plain input; then
 *     the same with the compressed bytes cut short, which must give a
 *     prefix of those records and an error.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stream/json.h"
#include "stream/rawmap.h"
#include "stream/record.h"
#include "stream/records.h"
#include "stream/stream.h"
#include "stream/zstd.h"

/* Keeps the reads of string and binary bytes from being optimised away. */
static volatile unsigned sink;

static void touch(const void *p, size_t n)
{
	const unsigned char *c = p;
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += c[i];
	sink += s;
}

static void check(int cond)
{
	if (!cond)
		abort();
}

/*
 * Frames len bytes at the given depth and checks the contract of
 * sp_msgpack_frame().
 */
static void check_frame(const unsigned char *p, size_t len, int depth)
{
	const char *why = NULL;
	long n = sp_msgpack_frame(p, len, depth, &why);

	check(n >= -1);
	if (n < 0) {
		check(why != NULL && why[0] != '\0');
		return;
	}
	check((size_t)n <= len);
	if (n == 0)
		return;

	/* The object must not depend on what follows it. */
	check(sp_msgpack_frame(p, (size_t)n, depth, &why) == n);
	/* One byte less is incomplete. */
	check(sp_msgpack_frame(p, (size_t)n - 1, depth, &why) == 0);
	/* A deeper limit accepts the same object. */
	check(sp_msgpack_frame(p, len, SP_MAX_DEPTH, &why) == n);
	/* The flat map's quick framing, where it answers, answers the same. */
	size_t flat = sp_msgpack_frame_flat(p, len);
	check(!flat || flat == (size_t)n);

	/*
	 * A heap copy of exactly n bytes, so that an unpack reading past the
	 * frame is caught by AddressSanitizer.
	 */
	char *copy = malloc((size_t)n);
	check(copy != NULL);
	memcpy(copy, p, (size_t)n);
	msgpack_zone zone;
	msgpack_object obj;
	size_t off = 0;
	check(msgpack_zone_init(&zone, 2048));
	check(msgpack_unpack(copy, (size_t)n, &off, &zone, &obj) ==
	      MSGPACK_UNPACK_SUCCESS);
	check(off == (size_t)n);
	msgpack_zone_destroy(&zone);
	free(copy);
}

/*
 * Whether o holds a NaN other than the one sp_json_parse() produces for
 * "nan".  The JSON rendering has a single spelling for every NaN, so the
 * sign and payload of such a NaN cannot survive a round trip.
 */
static int has_odd_nan(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32: {
		float f = (float)o->via.f64, q = __builtin_nanf("");
		return f != f && memcmp(&f, &q, sizeof(f)) != 0;
	}
	case MSGPACK_OBJECT_FLOAT64: {
		double d = o->via.f64, q = __builtin_nan("");
		return d != d && memcmp(&d, &q, sizeof(d)) != 0;
	}
	case MSGPACK_OBJECT_ARRAY:
		for (uint32_t i = 0; i < o->via.array.size; i++)
			if (has_odd_nan(&o->via.array.ptr[i]))
				return 1;
		return 0;
	case MSGPACK_OBJECT_MAP:
		for (uint32_t i = 0; i < o->via.map.size; i++)
			if (has_odd_nan(&o->via.map.ptr[i].key) ||
			    has_odd_nan(&o->via.map.ptr[i].val))
				return 1;
		return 0;
	default:
		return 0;
	}
}

/* Calls the accessor for one schema key and checks it agrees with sp_map_get(). */
static void check_key(const msgpack_object *map, const struct sp_key_schema *s,
		      int validated)
{
	const msgpack_object *v = sp_map_get(map, s->key);
	uint64_t u;
	int64_t i;
	bool b;
	const char *str;
	const void *bin;
	size_t len;
	const msgpack_object_array *a;

	if (!v) {
		check(!validated || !s->required);
		check(!sp_map_u64(map, s->key, &u) && !sp_map_i64(map, s->key, &i) &&
		      !sp_map_bool(map, s->key, &b) &&
		      !sp_map_str(map, s->key, &str, &len) &&
		      !sp_map_bin(map, s->key, &bin, &len) &&
		      !sp_map_array(map, s->key));
		return;
	}
	switch (s->vtype) {
	case SP_V_UINT:
		check(sp_map_u64(map, s->key, &u) ==
		      (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER));
		check(!validated || v->type == MSGPACK_OBJECT_POSITIVE_INTEGER);
		if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			check(u == v->via.u64);
		break;
	case SP_V_INT:
		if (sp_map_i64(map, s->key, &i))
			check(v->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
			      v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER);
		break;
	case SP_V_STR:
		if (sp_map_str(map, s->key, &str, &len)) {
			check(v->type == MSGPACK_OBJECT_STR && len == v->via.str.size);
			touch(str, len);
		} else {
			check(!validated && v->type != MSGPACK_OBJECT_STR);
		}
		break;
	case SP_V_BIN:
		if (sp_map_bin(map, s->key, &bin, &len)) {
			check(v->type == MSGPACK_OBJECT_BIN && len == v->via.bin.size);
			touch(bin, len);
		} else {
			check(!validated && v->type != MSGPACK_OBJECT_BIN);
		}
		break;
	case SP_V_BOOL:
		check(sp_map_bool(map, s->key, &b) == (v->type == MSGPACK_OBJECT_BOOLEAN));
		check(!validated || v->type == MSGPACK_OBJECT_BOOLEAN);
		break;
	case SP_V_ARRAY:
		a = sp_map_array(map, s->key);
		check(!validated || a != NULL);
		if (a) {
			for (uint32_t k = 0; k < a->size; k++) {
				const msgpack_object *e = &a->ptr[k];
				if (e->type == MSGPACK_OBJECT_STR)
					touch(e->via.str.ptr, e->via.str.size);
				(void)sp_obj_str_eq(e, s->key);
			}
		}
		break;
	case SP_V_MAP:
		check(!validated || v->type == MSGPACK_OBJECT_MAP);
		if (v->type == MSGPACK_OBJECT_MAP)
			(void)sp_map_get(v, "name");
		break;
	case SP_V_UINT_OR_NIL:
		check(!validated || v->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
		      v->type == MSGPACK_OBJECT_NIL);
		break;
	}
	check(sp_vtype_name(s->vtype) != NULL);
}

/* Renders o, parses the rendering back and packs it into out. */
static void json_round_trip(const msgpack_object *o, struct sp_buf *json,
			    msgpack_sbuffer *out)
{
	msgpack_packer pk;
	struct sp_error err;

	check(sp_json_render(o, json) == 0);
	check(json->len > 0 && strlen(json->p) == json->len);
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	check(sp_json_parse(json->p, json->len, &pk, &err) == 0);
}

/* A value read from its bytes against the same value decoded. */
static void check_rawval(const struct sp_rawval *v, const msgpack_object *o)
{
	check(v->at < v->end);
	switch (o->type) {
	case MSGPACK_OBJECT_NIL: check(v->kind == SP_RAW_NIL); break;
	case MSGPACK_OBJECT_BOOLEAN: check(v->kind == SP_RAW_BOOL && v->u == o->via.boolean); break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		check(v->kind == SP_RAW_UINT && v->u == o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		check(v->kind == SP_RAW_NEG && (int64_t)v->u == o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32: case MSGPACK_OBJECT_FLOAT64:
		check(v->kind == SP_RAW_FLOAT);
		break;
	case MSGPACK_OBJECT_STR:
		check(v->kind == SP_RAW_STR && v->u == o->via.str.size &&
		      memcmp(v->p, o->via.str.ptr, o->via.str.size) == 0);
		break;
	case MSGPACK_OBJECT_BIN:
		check(v->kind == SP_RAW_BIN && v->u == o->via.bin.size &&
		      memcmp(v->p, o->via.bin.ptr, o->via.bin.size) == 0);
		break;
	case MSGPACK_OBJECT_ARRAY: {
		check(v->kind == SP_RAW_ARRAY && v->u == o->via.array.size);
		uint64_t u[8];
		size_t n = sp_rawarr_u64(v, u, 8);
		check(n == (o->via.array.size < 8 ? o->via.array.size : 8));
		for (size_t i = 0; i < n; i++)
			check(u[i] == (o->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
				       o->via.array.ptr[i].via.u64 : 0));
		break;
	}
	case MSGPACK_OBJECT_MAP: check(v->kind == SP_RAW_MAP && v->u == o->via.map.size); break;
	case MSGPACK_OBJECT_EXT: check(v->kind == SP_RAW_EXT); break;
	}
}

/*
 * A record read undecoded: its pairs are those of the record decoded,
 * each value's bytes in place, and the record passes the schema.
 */
static void check_pairs(const struct sp_record *rec)
{
	const char *why = NULL, *key = NULL;
	check(rec->map == NULL && rec->type != SP_R_UNKNOWN && rec->type != SP_R_HEADER &&
	      rec->type != SP_R_SUMMARY);
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	check(msgpack_unpack_next(&u, rec->raw, rec->raw_len, &off) == MSGPACK_UNPACK_SUCCESS);
	check(off == rec->raw_len && u.data.type == MSGPACK_OBJECT_MAP);
	check(u.data.via.map.size == rec->npairs);
	check(sp_record_validate(rec->type, &u.data, &why, &key) == 0);
	const unsigned char *at = (const unsigned char *)rec->raw;
	for (uint32_t i = 0; i < rec->npairs; i++) {
		const struct sp_rawpair *pr = &rec->pairs[i];
		check(pr->key.at >= at && pr->key.end == pr->val.at);
		check_rawval(&pr->key, &u.data.via.map.ptr[i].key);
		check_rawval(&pr->val, &u.data.via.map.ptr[i].val);
		/* The key's id is its index in the type's schema. */
		int id = SP_KEY_OTHER;
		if (pr->key.kind == SP_RAW_STR && !memchr(pr->key.p, 0, pr->key.u)) {
			char *k = strndup((const char *)pr->key.p, pr->key.u);
			check(k != NULL);
			id = sp_record_key_index(rec->type, k);
			free(k);
		}
		check(pr->id == id);
		at = pr->val.end;
	}
	check(at == (const unsigned char *)rec->raw + rec->raw_len);
	msgpack_unpacked_destroy(&u);
}

static void check_record(struct sp_reader *r, const struct sp_record *rec,
			 const unsigned char *data, size_t size, uint64_t expect_offset,
			 uint64_t expect_index)
{
	const char *why = NULL, *key = NULL;

	/* The record is the next bytes of the input (decompressed: data NULL), exactly framed. */
	check(rec->offset == expect_offset && rec->index == expect_index);
	check(rec->raw_len > 0);
	if (data) {
		check(rec->offset + rec->raw_len <= size);
		check(memcmp(rec->raw, data + rec->offset, rec->raw_len) == 0);
		check(sp_msgpack_frame(data + rec->offset, size - rec->offset, SP_MAX_DEPTH,
				       &why) == (long)rec->raw_len);
	} else {
		check(sp_msgpack_frame((const unsigned char *)rec->raw, rec->raw_len,
				       SP_MAX_DEPTH, &why) == (long)rec->raw_len);
	}
	check(sp_reader_offset(r) == rec->offset + rec->raw_len);
	check(sp_reader_records(r) == rec->index + 1);
	if (rec->pairs) {
		check_pairs(rec);
		return;
	}
	if (!rec->map) {
		/* Passed through: a known type, its bytes a map whose "t" names it. */
		check(rec->type != SP_R_UNKNOWN && rec->type != SP_R_HEADER &&
		      rec->type != SP_R_SUMMARY);
		msgpack_unpacked u;
		msgpack_unpacked_init(&u);
		size_t off = 0;
		check(msgpack_unpack_next(&u, rec->raw, rec->raw_len, &off) == MSGPACK_UNPACK_SUCCESS);
		const msgpack_object *t = sp_map_get(&u.data, "t");
		check(t && t->type == MSGPACK_OBJECT_STR &&
		      sp_rtype_from_name(t->via.str.ptr, t->via.str.size) == rec->type);
		msgpack_unpacked_destroy(&u);
		return;
	}
	check(rec->map->type == MSGPACK_OBJECT_MAP);

	/* The type key and the type. */
	const msgpack_object *t = sp_map_get(rec->map, "t");
	check(t != NULL && t->type == MSGPACK_OBJECT_STR);
	check(t->via.str.ptr == rec->type_name && t->via.str.size == rec->type_len);
	check(rec->type >= SP_R_UNKNOWN && rec->type < SP_R_COUNT);
	check(sp_rtype_from_name(rec->type_name, rec->type_len) == rec->type);
	if (rec->type != SP_R_UNKNOWN) {
		check(sp_obj_str_eq(t, sp_rtype_name(rec->type)));
		check(sp_record_validate(rec->type, rec->map, &why, &key) == 0);
	}

	/*
	 * The typed accessors on every key the schema knows for this type;
	 * for an unknown type, on every key of the schema (nothing is
	 * validated then).
	 */
	for (size_t i = 0; i < sp_key_schema_len; i++) {
		const struct sp_key_schema *s = &sp_key_schema[i];
		if (rec->type == SP_R_UNKNOWN || s->type == rec->type)
			check_key(rec->map, s, rec->type != SP_R_UNKNOWN &&
					       s->type == rec->type);
	}

	/* The segment state. */
	const struct sp_header *h = sp_reader_header(r);
	check(h != NULL);
	check(h->major == SP_FORMAT_MAJOR);
	check(sp_stage_name(h->stage) != NULL);
	if (rec->type == SP_R_SUMMARY)
		check(sp_reader_saw_summary(r));

	/*
	 * Render and parse back.  The result must be the canonical encoding
	 * of the record, which is its raw bytes when those are canonical.
	 */
	msgpack_sbuffer canon, back;
	msgpack_packer pk;
	struct sp_buf json;
	msgpack_sbuffer_init(&canon);
	msgpack_sbuffer_init(&back);
	sp_buf_init(&json);
	msgpack_packer_init(&pk, &canon, msgpack_sbuffer_write);
	check(msgpack_pack_object(&pk, *rec->map) == 0);
	json_round_trip(rec->map, &json, &back);
	if (!has_odd_nan(rec->map)) {
		check(back.size == canon.size &&
		      memcmp(back.data, canon.data, canon.size) == 0);
		if (canon.size == rec->raw_len &&
		    memcmp(canon.data, rec->raw, rec->raw_len) == 0)
			check(back.size == rec->raw_len &&
			      memcmp(back.data, rec->raw, rec->raw_len) == 0);
	}

	/* A header is kept as an exact copy. */
	if (rec->type == SP_R_HEADER) {
		struct sp_buf hjson;
		sp_buf_init(&hjson);
		check(sp_json_render(h->map, &hjson) == 0);
		check(hjson.len == json.len && memcmp(hjson.p, json.p, json.len) == 0);
		check(!sp_reader_saw_summary(r));
		sp_buf_release(&hjson);
	}

	sp_buf_release(&json);
	msgpack_sbuffer_destroy(&canon);
	msgpack_sbuffer_destroy(&back);
}

static bool same_rawval(const struct sp_rawval *a, const struct sp_rawval *b)
{
	return a->kind == b->kind && a->u == b->u && a->p == b->p && a->at == b->at &&
	       a->end == b->end;
}

/*
 * sp_record_scan_raw() with its fast path for keys in the schema's order
 * against the general scan, as each record type, on the bytes at p: the
 * same length and the same pairs.  Also the quick framing of a flat map,
 * which must never answer where sp_msgpack_frame() does not agree.
 */
/*
 * A stack record the scan read: its frames from the pairs (as
 * sp-symbolize reads them) and from the record decoded are the same, and
 * a malformed frame is one alike.
 */
static void check_stack(const unsigned char *p, size_t len, const struct sp_rawpair *pairs,
			uint32_t npairs)
{
	msgpack_unpacked u;
	size_t off = 0;
	msgpack_unpacked_init(&u);
	check(msgpack_unpack_next(&u, (const char *)p, len, &off) == MSGPACK_UNPACK_SUCCESS);
	struct sp_record raw = { .type = SP_R_STACK, .pairs = pairs, .npairs = npairs };
	struct sp_record dec = { .type = SP_R_STACK, .map = &u.data };
	uint64_t ida, idb;
	struct sp_stack_frame *fa, *fb;
	size_t na, nb;
	int ra = sp_stack_of(&raw, &ida, &fa, &na), rb = sp_stack_of(&dec, &idb, &fb, &nb);
	check(ra == rb);
	if (ra == 0)
		check(ida == idb && na == nb && (!na || memcmp(fa, fb, na * sizeof(*fa)) == 0));
	free(fa);
	free(fb);
	msgpack_unpacked_destroy(&u);
}

static void check_scan(const unsigned char *p, size_t len)
{
	static struct sp_rawpair a[64], b[64];
	for (int t = 1; t < SP_R_COUNT; t++) {
		uint32_t na = 0, nb = 0;
		size_t la = sp_record_scan_raw((enum sp_rtype)t, p, len, a, 64, &na);
		size_t lb = sp_record_scan_general((enum sp_rtype)t, p, len, b, 64, &nb);
		check(la == lb);
		if (!la)
			continue;
		check(na == nb && la <= len);
		for (uint32_t i = 0; i < na; i++)
			check(a[i].id == b[i].id && same_rawval(&a[i].key, &b[i].key) &&
			      same_rawval(&a[i].val, &b[i].val));
		if (t == SP_R_STACK)
			check_stack(p, la, a, na);
	}
	size_t flat = sp_msgpack_frame_flat(p, len);
	if (flat) {
		const char *why;
		check(sp_msgpack_frame(p, len, SP_MAX_DEPTH, &why) == (long)flat);
	}
}

/*
 * Reads the whole input from fd through a reader with the given limit,
 * passing the types of pass_through on undecoded.  Returns whether it
 * was all plain (no zstd frame at a record boundary).
 */
static bool read_stream(int fd, const unsigned char *data, size_t size,
			size_t max_record, uint64_t pass_through, uint64_t undecoded,
			uint64_t *records)
{
	struct sp_record rec;
	uint64_t offset = 0, index = 0;
	enum sp_read_status st;

	check(lseek(fd, 0, SEEK_SET) == 0);
	struct sp_reader *r = sp_reader_new(fd, "fuzz");
	check(r != NULL);
	sp_reader_set_max_record(r, max_record);
	sp_reader_pass_through(r, pass_through);
	sp_reader_undecoded(r, undecoded);
	check(sp_reader_header(r) == NULL);

	const unsigned char *plain = data;
	for (;;) {
		/* Where a frame's magic number stands, the reader decompresses. */
		if (plain && offset < size && sp_zstd_magic(data + offset, size - offset) != 0)
			plain = NULL;
		if ((st = sp_reader_next(r, &rec)) != SP_READ_RECORD)
			break;
		check(rec.raw_len <= max_record);
		check_record(r, &rec, plain, size, offset, index);
		if (plain && max_record > 64 && !pass_through && !undecoded)
			check_scan(data + offset, size - offset);
		offset += rec.raw_len;
		index++;
	}
	if (st == SP_READ_END && !plain) {
		check(sp_reader_offset(r) == offset);
	} else if (st == SP_READ_END) {
		/* A clean end only at the end of the input. */
		check(offset == size && sp_reader_offset(r) == size);
	} else {
		check(st == SP_READ_ERROR);
		check(sp_reader_error(r)[0] != '\0');
		check(sp_reader_offset(r) == offset);
		/* The error is sticky. */
		check(sp_reader_next(r, &rec) == SP_READ_ERROR);
	}
	check(sp_reader_records(r) == index);
	sp_reader_free(r);
	*records = index;
	return plain != NULL;
}

/* Writes data into a new memfd through a compressing writer, flushing every step bytes. */
static int compress_into_memfd(const unsigned char *data, size_t size, size_t step)
{
	int fd = memfd_create("fuzz-reader-zstd", MFD_CLOEXEC);
	check(fd >= 0);
	struct sp_writer *w = sp_writer_new(fd, "fuzz");
	check(w != NULL && sp_writer_compress(w, 1) == 0);
	for (size_t at = 0; at < size; at += step) {
		size_t n = size - at < step ? size - at : step;
		check(sp_writer_raw(w, data + at, n) == 0);
		check(sp_writer_flush(w) == 0);
	}
	check(sp_writer_close(w) == 0);
	return fd;
}

/*
 * Reads the plain input (pfd) and its compressed form (zfd, of which only
 * the first zlen bytes when cut) in step: the same records, and when not
 * cut the same end; when cut, a prefix of them and an error.
 */
static void read_compressed(int pfd, int zfd, size_t max_record, bool cut)
{
	struct sp_record prec, zrec;
	enum sp_read_status ps, zs;
	check(lseek(pfd, 0, SEEK_SET) == 0 && lseek(zfd, 0, SEEK_SET) == 0);
	struct sp_reader *p = sp_reader_new(pfd, "plain"), *z = sp_reader_new(zfd, "zstd");
	check(p && z);
	sp_reader_set_max_record(p, max_record);
	sp_reader_set_max_record(z, max_record);
	for (;;) {
		zs = sp_reader_next(z, &zrec);
		ps = sp_reader_next(p, &prec);
		if (zs != SP_READ_RECORD)
			break;
		check(ps == SP_READ_RECORD);
		check(zrec.offset == prec.offset && zrec.index == prec.index);
		check(zrec.raw_len == prec.raw_len && memcmp(zrec.raw, prec.raw, prec.raw_len) == 0);
	}
	if (cut) {
		/* Cut to nothing, the input is empty. */
		check(zs == (lseek(zfd, 0, SEEK_END) > 0 ? SP_READ_ERROR : SP_READ_END));
	} else {
		check(zs == ps);
		check(sp_reader_offset(z) == sp_reader_offset(p));
	}
	check(zs != SP_READ_ERROR || sp_reader_error(z)[0] != '\0');
	sp_reader_free(p);
	sp_reader_free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The framing contract, on the whole input and on prefixes. */
	check_frame(data, size, SP_MAX_DEPTH);
	check_frame(data, size / 2, SP_MAX_DEPTH);
	if (size > 0)
		check_frame(data, size - 1, SP_MAX_DEPTH);
	check_frame(data, size < 9 ? size : 9, SP_MAX_DEPTH);
	check_frame(data, size, 0);
	check_frame(data, size, 2);
	check_frame(data, size, 1000);
	check_scan(data, size);

	/* The input as a stream. */
	int fd = memfd_create("fuzz-reader", MFD_CLOEXEC);
	check(fd >= 0);
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, data + done, size - done);
		check(k > 0);
		done += (size_t)k;
	}
	uint64_t n64k, n64, n;
	bool plain = read_stream(fd, data, size, 64u << 10, 0, 0, &n64k);
	read_stream(fd, data, size, 64, 0, 0, &n64);
	/* Every type a stage may pass on undecoded. */
	read_stream(fd, data, size, 64u << 10, ~0ull, 0, &n);
	/* Every type read from its bytes: the same records, no more, no fewer. */
	read_stream(fd, data, size, 64u << 10, 0, ~0ull, &n);
	check(n == n64k);
	read_stream(fd, data, size, 64, 0, ~0ull, &n);
	check(n == n64);

	/* The same input compressed: what the reader gives must not change. */
	if (plain && size > 0) {
		size_t step = 1 + (size_t)data[0] * 3 + (size > 1 ? data[1] : 0);
		int zfd = compress_into_memfd(data, size, step);
		read_compressed(fd, zfd, 64u << 10, false);
		read_compressed(fd, zfd, 64, false);
		off_t zlen = lseek(zfd, 0, SEEK_END);
		check(zlen > 0 && ftruncate(zfd, zlen - 1 - (off_t)(data[size - 1] % zlen)) == 0);
		read_compressed(fd, zfd, 64u << 10, true);
		close(zfd);
	}
	close(fd);
	return 0;
}
