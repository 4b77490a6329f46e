/* SPDX-License-Identifier: MIT */
/* Record types, the schema, and typed access to record values. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "stream/rawmap.h"
#include "stream/record.h"
#include "stream/stream.h"

static const char *const rtype_names[SP_R_COUNT] = {
	[SP_R_UNKNOWN] = "unknown",
#define SP_X_NAME(e, s) [SP_R_##e] = s,
	SP_RECORD_TYPES(SP_X_NAME)
#undef SP_X_NAME
};

const struct sp_key_schema sp_key_schema[] = {
#define SP_X_KEY(rt, k, vt, req) { SP_R_##rt, k, SP_V_##vt, req },
	SP_RECORD_KEYS(SP_X_KEY)
#undef SP_X_KEY
};
const size_t sp_key_schema_len = sizeof(sp_key_schema) / sizeof(sp_key_schema[0]);

/*
 * The schema by record type: the entries of type t are
 * by_type[type_start[t] ... type_start[t + 1]), each with its key's length.
 */
static const struct sp_key_schema *by_type[sizeof(sp_key_schema) / sizeof(sp_key_schema[0])];
static size_t key_len[sizeof(sp_key_schema) / sizeof(sp_key_schema[0])];
static size_t type_start[SP_R_COUNT + 1];
/*
 * Each key as a writer puts it, its fixstr head and bytes, as two words
 * loaded from memory, and the mask of the bytes it takes (a head no key
 * has for one of 16 bytes or more); the value kinds its class takes, a
 * bit each.
 */
static uint64_t key_word[sizeof(sp_key_schema) / sizeof(sp_key_schema[0])][2];
static uint64_t key_mask[sizeof(sp_key_schema) / sizeof(sp_key_schema[0])][2];
static unsigned kinds_of[sizeof(sp_key_schema) / sizeof(sp_key_schema[0])];
static uint64_t type_required[SP_R_COUNT];	/* bit i: by_type[type_start[t] + i] */
static size_t name_len[SP_R_COUNT];
/* Type names by a hash of their first and last bytes and length; COLLIDED: look through all. */
#define NAME_SLOTS 128
#define COLLIDED 0xff
static unsigned char by_name[NAME_SLOTS];

static unsigned name_slot(const char *name, size_t len)
{
	return ((unsigned char)name[0] * 33u + (unsigned)len * 5u + (unsigned char)name[len - 1]) %
	       NAME_SLOTS;
}
static pthread_once_t by_type_once = PTHREAD_ONCE_INIT;
/*
 * Each type's keys by a hash of their length and end bytes: 1 + the
 * key's index in the type, 0 for none, KEY_COLLIDED where two share a
 * slot (then the type's keys are searched in turn).
 */
#define KEY_SLOTS 64
#define KEY_COLLIDED 0xff
static unsigned char key_slot[SP_R_COUNT][KEY_SLOTS];

static unsigned key_hash(const unsigned char *k, size_t n)
{
	return ((unsigned)n * 7u + k[0] * 3u + k[n - 1]) % KEY_SLOTS;
}

static inline bool raw_vtype_matches(enum sp_vtype v, enum sp_rawkind k);

static void index_schema(void)
{
	size_t k = 0;
	for (int t = 0; t < SP_R_COUNT; t++) {
		type_start[t] = k;
		for (size_t i = 0; i < sp_key_schema_len; i++) {
			if (sp_key_schema[i].type != (enum sp_rtype)t)
				continue;
			if (sp_key_schema[i].required && k - type_start[t] < 64)
				type_required[t] |= 1ull << (k - type_start[t]);
			key_len[k] = strlen(sp_key_schema[i].key);
			if (key_len[k]) {
				unsigned char *slot = &key_slot[t][key_hash(
					(const unsigned char *)sp_key_schema[i].key, key_len[k])];
				*slot = *slot || k - type_start[t] + 1 >= KEY_COLLIDED ?
					KEY_COLLIDED : (unsigned char)(k - type_start[t] + 1);
			}
			if (key_len[k] < 16) {
				unsigned char enc[16] = { (unsigned char)(0xa0 | key_len[k]) }, m[16] = { 0 };
				memcpy(enc + 1, sp_key_schema[i].key, key_len[k]);
				memset(m, 0xff, key_len[k] + 1);
				memcpy(key_word[k], enc, 16);
				memcpy(key_mask[k], m, 16);
			} else {
				/* Never matched by words: an impossible head byte. */
				key_word[k][0] = 0xc1;
				key_mask[k][0] = 0xff;
			}
			for (unsigned kind = 0; kind <= SP_RAW_EXT; kind++)
				if (raw_vtype_matches(sp_key_schema[i].vtype, (enum sp_rawkind)kind))
					kinds_of[k] |= 1u << kind;
			by_type[k++] = &sp_key_schema[i];
		}
		name_len[t] = strlen(rtype_names[t]);
		if (t > 0) {
			unsigned slot = name_slot(rtype_names[t], name_len[t]);
			by_name[slot] = by_name[slot] ? COLLIDED : (unsigned char)t;
		}
	}
	type_start[SP_R_COUNT] = k;
}




const char *sp_vtype_name(enum sp_vtype v)
{
	switch (v) {
	case SP_V_UINT: return "uint";
	case SP_V_INT: return "int";
	case SP_V_STR: return "str";
	case SP_V_BIN: return "bin";
	case SP_V_BOOL: return "bool";
	case SP_V_ARRAY: return "array";
	case SP_V_MAP: return "map";
	case SP_V_UINT_OR_NIL: return "uint or nil";
	}
	return "unknown";
}

enum sp_rtype sp_rtype_from_name(const char *name, size_t len)
{
	pthread_once(&by_type_once, index_schema);
	if (len == 0)
		return SP_R_UNKNOWN;
	unsigned t0 = by_name[name_slot(name, len)];
	if (t0 != COLLIDED)
		return t0 && name_len[t0] == len && memcmp(rtype_names[t0], name, len) == 0 ?
		       (enum sp_rtype)t0 : SP_R_UNKNOWN;
	for (int t = 1; t < SP_R_COUNT; t++)
		if (name_len[t] == len && rtype_names[t][0] == name[0] &&
		    memcmp(rtype_names[t], name, len) == 0)
			return (enum sp_rtype)t;
	return SP_R_UNKNOWN;
}

const char *sp_rtype_name(enum sp_rtype t)
{
	return t < SP_R_COUNT ? rtype_names[t] : "unknown";
}

static bool vtype_matches(enum sp_vtype v, const msgpack_object *o)
{
	switch (v) {
	case SP_V_UINT:
		return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
	case SP_V_INT:
		return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
		       o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
	case SP_V_STR:
		return o->type == MSGPACK_OBJECT_STR;
	case SP_V_BIN:
		return o->type == MSGPACK_OBJECT_BIN;
	case SP_V_BOOL:
		return o->type == MSGPACK_OBJECT_BOOLEAN;
	case SP_V_ARRAY:
		return o->type == MSGPACK_OBJECT_ARRAY;
	case SP_V_MAP:
		return o->type == MSGPACK_OBJECT_MAP;
	case SP_V_UINT_OR_NIL:
		return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
		       o->type == MSGPACK_OBJECT_NIL;
	}
	return false;
}

static const msgpack_object *map_get_n(const msgpack_object *map, const char *key, size_t n)
{
	const msgpack_object_kv *kv = map->via.map.ptr;
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object *k = &kv[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
		    memcmp(k->via.str.ptr, key, n) == 0)
			return &kv[i].val;
	}
	return NULL;
}

/*
 * Whether map is plainly valid for type t: each key at most once, of its
 * type, every required one there.  Looks at each key of the map once,
 * seeking it in the schema from where the last one was found (writers put
 * them in the schema's order).  False also when unsure: the caller's
 * ordered check then finds the first problem.
 */
static bool plainly_valid(enum sp_rtype t, const msgpack_object *map)
{
	size_t first = type_start[t], n = type_start[t + 1] - first;
	if (n > 64 || !map || map->type != MSGPACK_OBJECT_MAP)
		return false;
	uint64_t found = 0;
	size_t at = 0;
	const msgpack_object_kv *kv = map->via.map.ptr;
	for (uint32_t j = 0; j < map->via.map.size; j++) {
		const msgpack_object *k = &kv[j].key;
		/* The type key is every record's, in no type's schema. */
		if (k->type != MSGPACK_OBJECT_STR || (k->via.str.size == 1 && k->via.str.ptr[0] == 't'))
			continue;
		for (size_t tries = 0; tries < n; tries++, at = at + 1 < n ? at + 1 : 0) {
			size_t i = first + at;
			if (key_len[i] != k->via.str.size ||
			    memcmp(by_type[i]->key, k->via.str.ptr, key_len[i]) != 0)
				continue;
			if ((found & (1ull << at)) || !vtype_matches(by_type[i]->vtype, &kv[j].val))
				return false;
			found |= 1ull << at;
			break;
		}
	}
	return (type_required[t] & ~found) == 0;
}

static inline bool raw_vtype_matches(enum sp_vtype v, enum sp_rawkind k)
{
	switch (v) {
	case SP_V_UINT: return k == SP_RAW_UINT;
	case SP_V_INT: return k == SP_RAW_UINT || k == SP_RAW_NEG;
	case SP_V_STR: return k == SP_RAW_STR;
	case SP_V_BIN: return k == SP_RAW_BIN;
	case SP_V_BOOL: return k == SP_RAW_BOOL;
	case SP_V_ARRAY: return k == SP_RAW_ARRAY;
	case SP_V_MAP: return k == SP_RAW_MAP;
	case SP_V_UINT_OR_NIL: return k == SP_RAW_UINT || k == SP_RAW_NIL;
	}
	return false;
}

int sp_record_key_index(enum sp_rtype t, const char *key)
{
	pthread_once(&by_type_once, index_schema);
	if ((unsigned)t >= SP_R_COUNT)
		return SP_KEY_OTHER;
	if (strcmp(key, "t") == 0)
		return SP_KEY_TYPE;
	for (size_t i = type_start[t]; i < type_start[t + 1]; i++)
		if (strcmp(by_type[i]->key, key) == 0)
			return (int)(i - type_start[t]);
	return SP_KEY_OTHER;
}

/*
 * A value as sp_raw_value() reads it, the kinds a writer's records hold
 * read at once: unsigned integers, short strings, booleans, binaries and
 * arrays of integers.  Anything else goes to sp_raw_value().
 */
static inline bool ordered_value(const unsigned char *p, const unsigned char *end,
				 struct sp_rawval *v)
{
	size_t room = (size_t)(end - p);
	if (!room)
		return false;
	unsigned char b = *p;
	if (b <= 0x7f) {
		*v = (struct sp_rawval){ SP_RAW_UINT, b, p + 1, p, p + 1 };
		return true;
	}
	if (b >= 0xcc && b <= 0xcf) {
		uint64_t u;
		size_t took = sp_raw_uint_at(p, end, &u);
		if (!took)
			return false;
		*v = (struct sp_rawval){ SP_RAW_UINT, u, p + 1, p, p + took };
		return true;
	}
	if (b >= 0xa0 && b <= 0xbf) {
		size_t n = b & 0x1f;
		if (room <= n)
			return false;
		*v = (struct sp_rawval){ SP_RAW_STR, n, p + 1, p, p + 1 + n };
		return true;
	}
	if (b == 0xc2 || b == 0xc3) {
		*v = (struct sp_rawval){ SP_RAW_BOOL, b == 0xc3, p + 1, p, p + 1 };
		return true;
	}
	if (b == 0xc4 || b == 0xc5) {
		size_t h = b == 0xc4 ? 2 : 3;
		if (room < h)
			return false;
		size_t n = b == 0xc4 ? p[1] : (size_t)p[1] << 8 | p[2];
		if (room - h < n)
			return false;
		*v = (struct sp_rawval){ SP_RAW_BIN, n, p + h, p, p + h + n };
		return true;
	}
	if ((b & 0xf0) == 0x90 || b == 0xdc) {
		/* An array of integers, each of one to nine bytes. */
		size_t h = b == 0xdc ? 3 : 1;
		if (room < h)
			return false;
		size_t n = b == 0xdc ? (size_t)p[1] << 8 | p[2] : b & 0x0f;
		const unsigned char *q = p + h;
		if (n > (size_t)(end - q))
			return false;
		for (size_t i = 0; i < n && q; i++) {
			unsigned char e = q < end ? *q : 0xc1;
			if (e <= 0x7f || e >= 0xe0)
				q++;
			else if (e >= 0xcc && e <= 0xcf && (size_t)(end - q) > (1u << (e - 0xcc)))
				q += 1 + (1u << (e - 0xcc));
			else
				q = NULL;
		}
		if (q) {
			*v = (struct sp_rawval){ SP_RAW_ARRAY, n, p + h, p, q };
			return true;
		}
	}
	return sp_raw_value(p, end, v);
}

/*
 * The common case of sp_record_scan_raw(): a short map whose keys are
 * short strings the schema gives t, in the schema's order.  Returns the
 * record's length, as the general scan would find it with the same
 * pairs; 0 for anything else, which the general scan then reads.
 */
static size_t scan_ordered(enum sp_rtype t, const unsigned char *p, size_t len,
			   struct sp_rawpair *pairs, uint32_t max, uint32_t *npairs)
{
	const unsigned char *end = p + len, *q;
	uint32_t count;
	if (len >= 1 && (p[0] & 0xf0) == 0x80) {
		count = p[0] & 0x0f;
		q = p + 1;
	} else if (len >= 3 && p[0] == 0xde) {
		count = (uint32_t)p[1] << 8 | p[2];
		q = p + 3;
	} else {
		return 0;
	}
	size_t first = type_start[t], n = type_start[t + 1] - first, at = 0;
	if (count > max || n > 64)
		return 0;
	uint64_t found = 0;
	for (uint32_t j = 0; j < count; j++) {
		struct sp_rawpair *pr = &pairs[j];
		if (q >= end || (*q & 0xe0) != 0xa0)
			return 0;
		size_t kn = *q & 0x1f;
		if ((size_t)(end - q) <= kn)
			return 0;
		pr->key = (struct sp_rawval){ SP_RAW_STR, kn, q + 1, q, q + 1 + kn };
		const unsigned char *k = q + 1;
		if (!ordered_value(k + kn, end, &pr->val))
			return 0;
		q = pr->val.end;
		if (kn == 1 && k[0] == 't') {
			pr->id = SP_KEY_TYPE;
			continue;
		}
		size_t i = at;
		if (kn < 16 && (size_t)(end - (k - 1)) >= 16) {
			/* The key with its head, as one or two words. */
			uint64_t w0, w1;
			memcpy(&w0, k - 1, 8);
			memcpy(&w1, k + 7, 8);
#define KEY_AT(i) ((w0 & key_mask[first + (i)][0]) == key_word[first + (i)][0] && \
		   (w1 & key_mask[first + (i)][1]) == key_word[first + (i)][1])
			if (i < n && !KEY_AT(i)) {
				/* Not the next key of the schema: the one its hash names, else each in turn. */
				unsigned h = kn ? key_slot[t][key_hash(k, kn)] : 0;
				if (h && h != KEY_COLLIDED && h - 1 > i && KEY_AT(h - 1))
					i = h - 1;
				else
					while (i < n && !KEY_AT(i))
						i++;
			}
#undef KEY_AT
		} else {
			while (i < n && (key_len[first + i] != kn ||
					 !sp_raw_bytes_eq(by_type[first + i]->key, k, kn)))
				i++;
		}
		if (i == n || !(kinds_of[first + i] & 1u << pr->val.kind))
			return 0;
		found |= 1ull << i;
		pr->id = (int)i;
		at = i + 1;
	}
	if ((type_required[t] & ~found) != 0)
		return 0;
	*npairs = count;
	return (size_t)(q - p);
}

size_t sp_record_scan_raw(enum sp_rtype t, const void *p, size_t len,
			  struct sp_rawpair *pairs, uint32_t max, uint32_t *npairs)
{
	pthread_once(&by_type_once, index_schema);
	if ((unsigned)t >= SP_R_COUNT)
		return 0;
	size_t quick = scan_ordered(t, p, len, pairs, max, npairs);
	return quick ? quick : sp_record_scan_general(t, p, len, pairs, max, npairs);
}

size_t sp_record_scan_general(enum sp_rtype t, const void *p, size_t len,
			      struct sp_rawpair *pairs, uint32_t max, uint32_t *npairs)
{
	pthread_once(&by_type_once, index_schema);
	if ((unsigned)t >= SP_R_COUNT)
		return 0;
	size_t first = type_start[t], n = type_start[t + 1] - first;
	struct sp_rawmap m;
	if (n > 64 || !sp_rawmap_open(&m, p, len) || m.left > max)
		return 0;
	uint64_t found = 0;
	size_t at = 0;
	uint32_t count = m.left;
	for (uint32_t j = 0; j < count; j++) {
		struct sp_rawval *k = &pairs[j].key, *v = &pairs[j].val;
		if (sp_rawmap_next(&m, k, v) <= 0)
			return 0;
		pairs[j].id = SP_KEY_OTHER;
		if (k->kind != SP_RAW_STR)
			continue;
		if (k->u == 1 && k->p[0] == 't') {
			pairs[j].id = SP_KEY_TYPE;
			continue;
		}
		unsigned h = k->u ? key_slot[t][key_hash(k->p, k->u)] : 0;
		if (h != KEY_COLLIDED) {
			/* At most the one key of the type in that slot. */
			size_t i = first + h - 1;
			if (!h || key_len[i] != k->u || !sp_raw_bytes_eq(by_type[i]->key, k->p, k->u))
				continue;
			at = h - 1;
			if ((found & (1ull << at)) || !raw_vtype_matches(by_type[i]->vtype, v->kind))
				return 0;
			found |= 1ull << at;
			pairs[j].id = (int)at;
			continue;
		}
		for (size_t tries = 0; tries < n; tries++, at = at + 1 < n ? at + 1 : 0) {
			size_t i = first + at;
			if (key_len[i] != k->u || !sp_raw_bytes_eq(by_type[i]->key, k->p, key_len[i]))
				continue;
			if ((found & (1ull << at)) || !raw_vtype_matches(by_type[i]->vtype, v->kind))
				return 0;
			found |= 1ull << at;
			pairs[j].id = (int)at;
			break;
		}
	}
	if ((type_required[t] & ~found) != 0)
		return 0;
	*npairs = count;
	return (size_t)(m.p - (const unsigned char *)p);
}

int sp_record_validate(enum sp_rtype t, const msgpack_object *map,
		       const char **why, const char **key)
{
	pthread_once(&by_type_once, index_schema);
	if ((unsigned)t >= SP_R_COUNT || plainly_valid(t, map))
		return 0;
	bool is_map = map && map->type == MSGPACK_OBJECT_MAP;
	for (size_t i = type_start[t]; i < type_start[t + 1]; i++) {
		const struct sp_key_schema *s = by_type[i];
		const msgpack_object *v = is_map ? map_get_n(map, s->key, key_len[i]) : NULL;
		if (!v) {
			if (s->required) {
				*why = "required key missing";
				*key = s->key;
				return -1;
			}
			continue;
		}
		if (!vtype_matches(s->vtype, v)) {
			*why = "key has the wrong type";
			*key = s->key;
			return -1;
		}
	}
	return 0;
}

bool sp_obj_str_eq(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, s, n) == 0;
}

const msgpack_object *sp_map_get(const msgpack_object *map, const char *key)
{
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	return map_get_n(map, key, strlen(key));
}

bool sp_map_u64(const msgpack_object *map, const char *key, uint64_t *out)
{
	const msgpack_object *v = sp_map_get(map, key);
	if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*out = v->via.u64;
	return true;
}

bool sp_map_i64(const msgpack_object *map, const char *key, int64_t *out)
{
	const msgpack_object *v = sp_map_get(map, key);
	if (!v)
		return false;
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = v->via.i64;
		return true;
	}
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX) {
		*out = (int64_t)v->via.u64;
		return true;
	}
	return false;
}

bool sp_map_bool(const msgpack_object *map, const char *key, bool *out)
{
	const msgpack_object *v = sp_map_get(map, key);
	if (!v || v->type != MSGPACK_OBJECT_BOOLEAN)
		return false;
	*out = v->via.boolean;
	return true;
}

/* The bytes of a string or bin value under key, when it has type t. */
static bool map_bytes(const msgpack_object *map, const char *key, msgpack_object_type t,
		      const char **p, size_t *len)
{
	const msgpack_object *v = sp_map_get(map, key);
	if (!v || v->type != t)
		return false;
	*p = t == MSGPACK_OBJECT_STR ? v->via.str.ptr : v->via.bin.ptr;
	*len = t == MSGPACK_OBJECT_STR ? v->via.str.size : v->via.bin.size;
	return true;
}

bool sp_map_str(const msgpack_object *map, const char *key,
		const char **p, size_t *len)
{
	return map_bytes(map, key, MSGPACK_OBJECT_STR, p, len);
}

bool sp_map_bin(const msgpack_object *map, const char *key,
		const void **p, size_t *len)
{
	const char *b;
	if (!map_bytes(map, key, MSGPACK_OBJECT_BIN, &b, len))
		return false;
	*p = b;
	return true;
}

const msgpack_object_array *sp_map_array(const msgpack_object *map,
					 const char *key)
{
	const msgpack_object *v = sp_map_get(map, key);
	if (!v || v->type != MSGPACK_OBJECT_ARRAY)
		return NULL;
	return &v->via.array;
}

/* The keys of a sample's head, and where each goes. */
static const struct { const char *k; uint32_t n; size_t at; } head_keys[] = {
	{ "pid", 3, offsetof(struct sp_sample_head, pid) },
	{ "tid", 3, offsetof(struct sp_sample_head, tid) },
	{ "time", 4, offsetof(struct sp_sample_head, time) },
	{ "period", 6, offsetof(struct sp_sample_head, period) },
	{ "stack", 5, offsetof(struct sp_sample_head, stack) },
	{ "event", 5, offsetof(struct sp_sample_head, event) },
};
#define HEAD_KEYS (sizeof(head_keys) / sizeof(head_keys[0]))
#define HEAD_PREEMPTED HEAD_KEYS

/* Which head key the n bytes at k are: HEAD_PREEMPTED for "preempted", -1 for none. */
static int head_key(const char *k, size_t n)
{
	for (unsigned i = 0; i < HEAD_KEYS; i++)
		if (head_keys[i].n == n && sp_raw_bytes_eq(head_keys[i].k, k, n))
			return (int)i;
	return n == 9 && sp_raw_bytes_eq(k, "preempted", 9) ? HEAD_PREEMPTED : -1;
}

void sp_sample_head_read(const msgpack_object *map, struct sp_sample_head *s)
{
	*s = (struct sp_sample_head){ .period = 1, .stack = UINT64_MAX };
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return;
	/* One pass over the map; each key's first value counts, as sp_map_u64() reads it. */
	unsigned seen = 0;
	const msgpack_object_kv *kv = map->via.map.ptr;
	for (uint32_t j = 0; j < map->via.map.size; j++) {
		const msgpack_object *k = &kv[j].key, *v = &kv[j].val;
		int i = k->type == MSGPACK_OBJECT_STR ? head_key(k->via.str.ptr, k->via.str.size) : -1;
		if (i < 0 || (seen & 1u << i))
			continue;
		seen |= 1u << i;
		if (i == HEAD_PREEMPTED)
			s->preempted = v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean;
		else if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			*(uint64_t *)(void *)((char *)s + head_keys[i].at) = v->via.u64;
	}
}

/* The head's keys by their index in the sample's schema (a pair's id). */
#define HEAD_IDS 64
static signed char head_by_id[HEAD_IDS];
static pthread_once_t head_once = PTHREAD_ONCE_INIT;

static void index_head(void)
{
	for (int i = 0; i < HEAD_IDS; i++)
		head_by_id[i] = -1;
	for (unsigned i = 0; i <= HEAD_KEYS; i++) {
		int id = sp_record_key_index(SP_R_SAMPLE, i < HEAD_KEYS ? head_keys[i].k : "preempted");
		if (id >= 0 && id < HEAD_IDS)
			head_by_id[id] = (signed char)i;
	}
}

void sp_sample_head_of(const struct sp_record *rec, struct sp_sample_head *s)
{
	if (!rec->pairs || rec->type != SP_R_SAMPLE) {
		sp_sample_head_read(rec->map, s);
		return;
	}
	*s = (struct sp_sample_head){ .period = 1, .stack = UINT64_MAX };
	pthread_once(&head_once, index_head);
	/* The reader refused duplicates of known keys: each is here once at most. */
	for (uint32_t j = 0; j < rec->npairs; j++) {
		const struct sp_rawval *v = &rec->pairs[j].val;
		int id = rec->pairs[j].id, i = id >= 0 && id < HEAD_IDS ? head_by_id[id] : -1;
		if (i < 0)
			continue;
		if (i == HEAD_PREEMPTED)
			s->preempted = v->kind == SP_RAW_BOOL && v->u;
		else if (v->kind == SP_RAW_UINT)
			*(uint64_t *)(void *)((char *)s + head_keys[i].at) = v->u;
	}
}
