/* SPDX-License-Identifier: MIT
 * A record's keys and values read in place from its MessagePack bytes,
 * without decoding it into objects: the hot records (samples) are read
 * this way by the stages that take them apart.  The bytes are a record
 * the reader framed (sp_msgpack_frame()), so they are well formed; every
 * read still stays inside them, and a malformed value ends the walk.
 */
#ifndef SP_STREAM_RAWMAP_H
#define SP_STREAM_RAWMAP_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sp_rawkind {
	SP_RAW_NONE,	/* no value: a key a record lacks */
	SP_RAW_NIL,
	SP_RAW_BOOL,
	SP_RAW_UINT,
	SP_RAW_NEG,	/* a negative integer */
	SP_RAW_FLOAT,
	SP_RAW_STR,
	SP_RAW_BIN,
	SP_RAW_ARRAY,
	SP_RAW_MAP,
	SP_RAW_EXT,
};

struct sp_rawval {
	enum sp_rawkind kind;
	/*
	 * UINT and BOOL: the value; NEG: the value as an int64_t; STR, BIN:
	 * the length in bytes; ARRAY: the elements; MAP: the pairs.
	 */
	uint64_t u;
	const unsigned char *p;		/* STR, BIN: the bytes; ARRAY, MAP: the first element */
	const unsigned char *at;	/* the value's first byte */
	const unsigned char *end;	/* just past the value */
};

/*
 * Reads the value at p, which ends before end, as a value of a record
 * (containers in it nest no deeper than the reader allows a record).
 * False when it is cut or malformed.
 */
bool sp_raw_value(const unsigned char *p, const unsigned char *end, struct sp_rawval *v);

/* A key and its value. */
struct sp_rawpair {
	struct sp_rawval key, val;
	/*
	 * Where the reader found them (sp_reader_undecoded()): the key's
	 * index among its record type's keys in the schema
	 * (sp_record_key_index()), SP_KEY_TYPE for "t", SP_KEY_OTHER for a
	 * key the schema does not know.
	 */
	int id;
};
#define SP_KEY_TYPE (-2)
#define SP_KEY_OTHER (-1)

/* A walk over a map's pairs. */
struct sp_rawmap {
	const unsigned char *p, *end;
	uint32_t left;
};

/* Starts a walk over the map that the len bytes at p hold; false when they are not one. */
bool sp_rawmap_open(struct sp_rawmap *m, const void *p, size_t len);

/*
 * The next pair: its key and value.  Returns 1, 0 after the last pair,
 * -1 when the bytes are malformed.
 */
int sp_rawmap_next(struct sp_rawmap *m, struct sp_rawval *key, struct sp_rawval *val);

/*
 * The first max elements of an array as unsigned integers, an element of
 * another kind as 0; returns how many were read.
 */
size_t sp_rawarr_u64(const struct sp_rawval *a, uint64_t *out, size_t max);

/* Whether the n bytes at a and b are equal: for short keys, without a call. */
static inline bool sp_raw_bytes_eq(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/*
 * The unsigned integer at p (a positive fixint or 0xcc to 0xcf), into
 * *u; returns the bytes it takes, or 0 for another kind or a cut one.
 */
static inline size_t sp_raw_uint_at(const unsigned char *p, const unsigned char *end, uint64_t *u)
{
	if (p >= end)
		return 0;
	if (*p <= 0x7f) {
		*u = *p;
		return 1;
	}
	if (*p < 0xcc || *p > 0xcf)
		return 0;
	size_t n = (size_t)1 << (*p - 0xcc);
	if ((size_t)(end - p) <= n)
		return 0;
	if (n == 1) {
		*u = p[1];
	} else if (n == 2) {
		uint16_t v;
		__builtin_memcpy(&v, p + 1, 2);
		*u = be16toh(v);
	} else if (n == 4) {
		uint32_t v;
		__builtin_memcpy(&v, p + 1, 4);
		*u = be32toh(v);
	} else {
		uint64_t v;
		__builtin_memcpy(&v, p + 1, 8);
		*u = be64toh(v);
	}
	return n + 1;
}

#endif
