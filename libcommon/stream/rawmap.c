/* SPDX-License-Identifier: MIT */
/* Keys and values read in place from a record's MessagePack bytes. */
#include <string.h>

#include "stream/rawmap.h"
#include "stream/stream.h"

/* A big-endian unsigned integer of n (1, 2, 4 or 8) bytes. */
static uint64_t be(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A container's elements: past them, or NULL when cut or malformed. */
static const unsigned char *skip_elements(const unsigned char *p, const unsigned char *end,
					  uint64_t n)
{
	struct sp_rawval v;
	for (uint64_t i = 0; i < n; i++) {
		if (p >= end)
			return NULL;
		unsigned char b = *p;
		if (b <= 0x7f || b >= 0xe0) {
			p++;
			continue;
		}
		if (b >= 0xcc && b <= 0xcf) {
			/* An unsigned integer (registers and addresses are). */
			p += 1 + (1u << (b - 0xcc));
			if (p > end)
				return NULL;
			continue;
		}
		if (b >= 0x90 && b <= 0x9f) {
			/* A short array of integers and nils (a stack's frame) at once. */
			const unsigned char *q = p + 1;
			unsigned k = b & 0x0f;
			for (; k && q < end; k--) {
				unsigned char e = *q;
				if (e <= 0x7f || e >= 0xe0 || e == 0xc0)
					q++;
				else if (e >= 0xcc && e <= 0xd3)
					q += 1 + (1u << ((e - 0xcc) & 3));
				else
					break;
			}
			if (!k && q <= end) {
				p = q;
				continue;
			}
		}
		if ((b >= 0x80 && b <= 0x9f) || (b >= 0xdc && b <= 0xdf)) {
			/*
			 * A container in a record's value: framed without
			 * recursion, to the depth the reader allows a record.
			 */
			const char *why;
			long len = sp_msgpack_frame(p, (size_t)(end - p), SP_MAX_DEPTH - 2, &why);
			if (len <= 0)
				return NULL;
			p += len;
			continue;
		}
		if (!sp_raw_value(p, end, &v))
			return NULL;
		p = v.end;
	}
	return p;
}

/* A string, binary or extension body of n bytes after a head of h. */
static bool body(const unsigned char *p, const unsigned char *end, unsigned h, uint64_t n,
		 struct sp_rawval *v)
{
	if (n > (uint64_t)(end - p) || h > (uint64_t)(end - p) - n)
		return false;
	v->u = n;
	v->p = p + h;
	v->end = p + h + n;
	return true;
}

/* A container of n elements after a head of h. */
static bool container(const unsigned char *p, const unsigned char *end, unsigned h, uint64_t n,
		      uint64_t elements, struct sp_rawval *v)
{
	if (h > (size_t)(end - p))
		return false;
	v->u = n;
	v->p = p + h;
	/* Every element takes a byte at least. */
	if (elements > (uint64_t)(end - v->p))
		return false;
	v->end = skip_elements(v->p, end, elements);
	return v->end != NULL;
}

/* A fixed-size value of n bytes, the type byte included. */
static bool fixed(const unsigned char *p, const unsigned char *end, unsigned n,
		  enum sp_rawkind kind, struct sp_rawval *v)
{
	if (n > (size_t)(end - p))
		return false;
	v->kind = kind;
	v->p = p + 1;
	v->end = p + n;
	return true;
}

static bool sized_head(const unsigned char *p, const unsigned char *end, unsigned n)
{
	return (size_t)(end - p) > n;
}

bool sp_raw_value(const unsigned char *p, const unsigned char *end, struct sp_rawval *v)
{
	if (p >= end)
		return false;
	unsigned char b = *p;
	v->at = p;
	v->p = p + 1;
	v->end = p + 1;
	if (b <= 0x7f) {
		v->kind = SP_RAW_UINT;
		v->u = b;
		return true;
	}
	if (b >= 0xe0) {
		v->kind = SP_RAW_NEG;
		v->u = (uint64_t)(int64_t)(int8_t)b;
		return true;
	}
	if (b <= 0x8f) {
		v->kind = SP_RAW_MAP;
		return container(p, end, 1, b & 0x0f, 2u * (b & 0x0f), v);
	}
	if (b <= 0x9f) {
		v->kind = SP_RAW_ARRAY;
		return container(p, end, 1, b & 0x0f, b & 0x0f, v);
	}
	if (b <= 0xbf) {
		v->kind = SP_RAW_STR;
		return body(p, end, 1, b & 0x1f, v);
	}
	switch (b) {
	case 0xc0:
		v->kind = SP_RAW_NIL;
		return true;
	case 0xc2: case 0xc3:
		v->kind = SP_RAW_BOOL;
		v->u = b == 0xc3;
		return true;
	case 0xc4: case 0xc5: case 0xc6: {
		unsigned n = 1u << (b - 0xc4);
		v->kind = SP_RAW_BIN;
		return sized_head(p, end, n) && body(p, end, 1 + n, be(p + 1, n), v);
	}
	case 0xc7: case 0xc8: case 0xc9: {
		unsigned n = 1u << (b - 0xc7);
		v->kind = SP_RAW_EXT;
		return sized_head(p, end, n + 1) && body(p, end, 2 + n, be(p + 1, n), v);
	}
	case 0xca:
		return fixed(p, end, 5, SP_RAW_FLOAT, v);
	case 0xcb:
		return fixed(p, end, 9, SP_RAW_FLOAT, v);
	case 0xcc: case 0xcd: case 0xce: case 0xcf: {
		unsigned n = 1u << (b - 0xcc);
		if (!fixed(p, end, 1 + n, SP_RAW_UINT, v))
			return false;
		v->u = be(p + 1, n);
		return true;
	}
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
		unsigned n = 1u << (b - 0xd0);
		if (!fixed(p, end, 1 + n, SP_RAW_NEG, v))
			return false;
		/* Sign-extend; a non-negative value is an unsigned integer, as msgpack-c reads it. */
		uint64_t u = be(p + 1, n);
		unsigned shift = 64 - 8 * n;
		int64_t s = shift ? (int64_t)(u << shift) >> shift : (int64_t)u;
		v->u = (uint64_t)s;
		if (s >= 0)
			v->kind = SP_RAW_UINT;
		return true;
	}
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
		return fixed(p, end, 2 + (1u << (b - 0xd4)), SP_RAW_EXT, v);
	case 0xd9: case 0xda: case 0xdb: {
		unsigned n = 1u << (b - 0xd9);
		v->kind = SP_RAW_STR;
		return sized_head(p, end, n) && body(p, end, 1 + n, be(p + 1, n), v);
	}
	case 0xdc: case 0xdd: {
		unsigned n = b == 0xdc ? 2 : 4;
		v->kind = SP_RAW_ARRAY;
		if (!sized_head(p, end, n))
			return false;
		uint64_t c = be(p + 1, n);
		return container(p, end, 1 + n, c, c, v);
	}
	case 0xde: case 0xdf: {
		unsigned n = b == 0xde ? 2 : 4;
		v->kind = SP_RAW_MAP;
		if (!sized_head(p, end, n))
			return false;
		uint64_t c = be(p + 1, n);
		return container(p, end, 1 + n, c, 2 * c, v);
	}
	}
	return false;	/* 0xc1 */
}

bool sp_rawmap_open(struct sp_rawmap *m, const void *p, size_t len)
{
	const unsigned char *b = p;
	m->end = b + len;
	if (len >= 1 && b[0] >= 0x80 && b[0] <= 0x8f) {
		m->left = b[0] & 0x0f;
		m->p = b + 1;
	} else if (len >= 3 && b[0] == 0xde) {
		m->left = (uint32_t)be(b + 1, 2);
		m->p = b + 3;
	} else if (len >= 5 && b[0] == 0xdf) {
		m->left = (uint32_t)be(b + 1, 4);
		m->p = b + 5;
	} else {
		return false;
	}
	return true;
}

/* A short string or an unsigned integer, the commonest keys and values, read at once. */
static inline bool quick_value(const unsigned char *p, const unsigned char *end,
			       struct sp_rawval *v)
{
	if (p >= end)
		return false;
	unsigned char b = *p;
	if (b >= 0xa0 && b <= 0xbf) {
		size_t n = b & 0x1f;
		if ((size_t)(end - p) <= n)
			return false;
		*v = (struct sp_rawval){ SP_RAW_STR, n, p + 1, p, p + 1 + n };
		return true;
	}
	uint64_t u;
	size_t took = sp_raw_uint_at(p, end, &u);
	if (!took)
		return false;
	*v = (struct sp_rawval){ SP_RAW_UINT, u, p + 1, p, p + took };
	return true;
}

int sp_rawmap_next(struct sp_rawmap *m, struct sp_rawval *key, struct sp_rawval *val)
{
	if (!m->left)
		return 0;
	if ((!quick_value(m->p, m->end, key) && !sp_raw_value(m->p, m->end, key)) ||
	    (!quick_value(key->end, m->end, val) && !sp_raw_value(key->end, m->end, val))) {
		m->left = 0;
		return -1;
	}
	m->p = val->end;
	m->left--;
	return 1;
}

size_t sp_rawarr_u64(const struct sp_rawval *a, uint64_t *out, size_t max)
{
	if (a->kind != SP_RAW_ARRAY)
		return 0;
	size_t n = a->u < max ? (size_t)a->u : max;
	const unsigned char *p = a->p;
	struct sp_rawval v;
	for (size_t i = 0; i < n; i++) {
		size_t took = sp_raw_uint_at(p, a->end, &out[i]);
		if (took) {
			p += took;
			continue;
		}
		if (!sp_raw_value(p, a->end, &v))
			return i;
		out[i] = v.kind == SP_RAW_UINT ? v.u : 0;
		p = v.end;
	}
	return n;
}
