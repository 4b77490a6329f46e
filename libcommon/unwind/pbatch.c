/* SPDX-License-Identifier: MIT
 * The parallel driver's batches (parallel-int.h): the memory they keep
 * for reuse, and each record copied in with its parsed map, so that the
 * workers and the writer read it after the reader has moved on.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/rawmap.h"
#include "unwind/parallel-int.h"
#include "util/alloc.h"

void sp_batch_free(struct sp_batch *b, unsigned jobs)
{
	if (!b)
		return;
	for (unsigned j = 0; b->slots && j < jobs; j++) {
		free(b->slots[j].frames);
		sp_census_free(b->slots[j].census);
	}
	free(b->slots);
	free(b->results);
	free(b->items);
	sp_arena_release(&b->arena);
	free(b);
}

/* Where a string of the record lies in the copy of its bytes, or a copy of it. */
static const char *relocate(struct sp_arena *z, const char *s, size_t n, const struct sp_record *rec,
			    const char *raw)
{
	if (!s || !n)
		return s;
	if (s >= rec->raw && s + n <= rec->raw + rec->raw_len)
		return raw + (s - rec->raw);
	char *c = sp_arena_alloc(z, n);
	return c ? memcpy(c, s, n) : NULL;
}

/* A deep copy of o into the zone, its strings in the copy of the record's bytes. */
static int copy_obj(struct sp_arena *z, const msgpack_object *o, msgpack_object *d,
		    const struct sp_record *rec, const char *raw)
{
	*d = *o;
	switch (o->type) {
	case MSGPACK_OBJECT_STR:
	case MSGPACK_OBJECT_BIN:
	case MSGPACK_OBJECT_EXT: {
		const char **ptr = o->type == MSGPACK_OBJECT_STR ? &d->via.str.ptr :
				   o->type == MSGPACK_OBJECT_BIN ? &d->via.bin.ptr : &d->via.ext.ptr;
		uint32_t size = o->type == MSGPACK_OBJECT_STR ? o->via.str.size :
				o->type == MSGPACK_OBJECT_BIN ? o->via.bin.size : o->via.ext.size;
		*ptr = relocate(z, *ptr, size, rec, raw);
		return size && !*ptr ? -1 : 0;
	}
	case MSGPACK_OBJECT_ARRAY: {
		uint32_t n = o->via.array.size;
		msgpack_object *a = n ? sp_arena_alloc(z, n * sizeof(*a)) : NULL;
		if (n && !a)
			return -1;
		d->via.array.ptr = a;
		for (uint32_t i = 0; i < n; i++)
			if (copy_obj(z, &o->via.array.ptr[i], &a[i], rec, raw) < 0)
				return -1;
		return 0;
	}
	case MSGPACK_OBJECT_MAP: {
		uint32_t n = o->via.map.size;
		msgpack_object_kv *kv = n ? sp_arena_alloc(z, n * sizeof(*kv)) : NULL;
		if (n && !kv)
			return -1;
		d->via.map.ptr = kv;
		for (uint32_t i = 0; i < n; i++)
			if (copy_obj(z, &o->via.map.ptr[i].key, &kv[i].key, rec, raw) < 0 ||
			    copy_obj(z, &o->via.map.ptr[i].val, &kv[i].val, rec, raw) < 0)
				return -1;
		return 0;
	}
	default:
		return 0;
	}
}

/* A value of the record at from, moved into the copy of its bytes at to. */
static void move_val(struct sp_rawval *v, const char *from, const char *to)
{
	const unsigned char *f = (const unsigned char *)from, *t = (const unsigned char *)to;
	v->p = t + (v->p - f);
	v->at = t + (v->at - f);
	v->end = t + (v->end - f);
}

/* The pairs of a record read undecoded, pointing into the copy of its bytes. */
static const struct sp_rawpair *copy_pairs(struct sp_arena *z, const struct sp_record *rec,
					   const char *raw)
{
	struct sp_rawpair *pr = sp_arena_alloc(z, (rec->npairs ? rec->npairs : 1) * sizeof(*pr));
	if (!pr)
		return NULL;
	for (uint32_t i = 0; i < rec->npairs; i++) {
		pr[i] = rec->pairs[i];
		move_val(&pr[i].key, rec->raw, raw);
		move_val(&pr[i].val, rec->raw, raw);
	}
	return pr;
}

int sp_batch_add(struct sp_batch *b, const struct sp_record *rec, const struct sp_header *hdr)
{
	if (SP_ALLOC_GROW(b->items, b->nitems + 1, b->allocitems) < 0)
		return -1;
	struct sp_item *it = &b->items[b->nitems];
	char *raw = sp_arena_alloc(&b->arena, rec->raw_len ? rec->raw_len : 1);
	msgpack_object *map = sp_arena_alloc(&b->arena, sizeof(*map));
	if (!raw || !map)
		return -1;
	memcpy(raw, rec->raw, rec->raw_len);
	*it = (struct sp_item){ .rec = *rec, .sample = SP_PAR_NO_SAMPLE };
	it->rec.raw = raw;
	it->rec.type_name = relocate(&b->arena, rec->type_name, rec->type_len, rec, raw);
	if (rec->pairs) {
		/* Read undecoded: its pairs, moved to the copy of its bytes. */
		it->rec.pairs = copy_pairs(&b->arena, rec, raw);
		if (!it->rec.pairs)
			return -1;
	} else if (copy_obj(&b->arena, rec->map, map, rec, raw) < 0) {
		return -1;
	} else {
		it->rec.map = map;
	}
	b->bytes += rec->raw_len;
	if (rec->type == SP_R_HEADER) {
		it->hdr = *hdr;
		it->hdr.map = map;
	} else if (rec->type == SP_R_SAMPLE) {
		it->sample = b->nsamples++;
	}
	b->nitems++;
	return 0;
}
