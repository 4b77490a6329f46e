/* SPDX-License-Identifier: MIT
 * Hash maps: the two the library needs, instead of a table per file.
 *
 * struct sp_u64map maps a uint64_t key (a pid, an address, an id) to a
 * non-NULL pointer by open addressing with linear probing.  It is the
 * one for hot paths: a lookup is a multiply, a mask and usually one
 * probe, inline.  Invariants: cap is 0 or a power of two; fewer than
 * three quarters of the slots are used; a slot is used exactly when its
 * value is non-NULL (so NULL can never be stored); removal shifts the
 * following run back, so there are no tombstones.
 *
 * struct sp_hashmap is intrusive and chained, in the manner of git's
 * hashmap.h, for keys that are not one integer (strings, byte runs,
 * tuples): embed a struct sp_hashmap_entry in your own struct, set its
 * hash with sp_hash_*(), and give the map a comparison function.  The
 * map owns no entries; sp_hashmap_release() can free them for you.
 */
#ifndef SP_UTIL_HASHMAP_H
#define SP_UTIL_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hashes: 64-bit mixing (a multiply and shifts) and FNV-1a over bytes. */
static inline uint64_t sp_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}
uint32_t sp_hash_bytes(const void *p, size_t n);
uint32_t sp_hash_str(const char *s);

#define sp_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---- uint64_t -> pointer ---- */

struct sp_u64map {
	uint64_t *keys;
	void **vals;
	size_t cap, count;
};

#define SP_U64MAP_INIT { NULL, NULL, 0, 0 }

void sp_u64map_init(struct sp_u64map *m);

/*
 * Frees the table, calling free_val (when not NULL) on every value, and
 * leaves m empty.
 */
void sp_u64map_release(struct sp_u64map *m, void (*free_val)(void *));

/* The value stored under key, or NULL. */
static inline void *sp_u64map_get(const struct sp_u64map *m, uint64_t key)
{
	if (!m->count)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = sp_hash_u64(key) & mask;; i = (i + 1) & mask) {
		if (!m->vals[i])
			return NULL;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

/*
 * Stores val (non-NULL) under key, replacing what was there.  Returns 0,
 * or -1 when memory runs out (the map is then unchanged).
 */
int sp_u64map_put(struct sp_u64map *m, uint64_t key, void *val);

/* Removes key; returns the value it had, or NULL. */
void *sp_u64map_remove(struct sp_u64map *m, uint64_t key);

/*
 * Iteration: size_t i = 0; while (sp_u64map_next(m, &i, &k, &v)) ...
 * Returns false after the last entry.  The map must not change meanwhile.
 */
bool sp_u64map_next(const struct sp_u64map *m, size_t *i, uint64_t *key, void **val);

/* ---- intrusive, chained ---- */

struct sp_hashmap_entry {
	struct sp_hashmap_entry *next;
	uint32_t hash;
};

/*
 * Returns 0 when the entries are equal.  keydata is what the caller gave
 * sp_hashmap_get() (e.g. a key that the lookup entry does not hold), or
 * NULL when the map compares two stored entries.
 */
typedef int (*sp_hashmap_cmp_fn)(const struct sp_hashmap_entry *a,
				 const struct sp_hashmap_entry *b, const void *keydata);

struct sp_hashmap {
	struct sp_hashmap_entry **table;
	size_t size, count;	/* size: buckets, 0 or a power of two */
	sp_hashmap_cmp_fn cmp;
};

void sp_hashmap_init(struct sp_hashmap *m, sp_hashmap_cmp_fn cmp);

/* Frees the table; calls free_entry (when not NULL) on every entry. */
void sp_hashmap_release(struct sp_hashmap *m, void (*free_entry)(struct sp_hashmap_entry *));

/* The stored entry equal to key (whose hash is set), or NULL. */
struct sp_hashmap_entry *sp_hashmap_get(const struct sp_hashmap *m,
					const struct sp_hashmap_entry *key,
					const void *keydata);

/*
 * Adds e (its hash set; not already in a map).  Duplicates are not
 * checked.  Returns 0, or -1 when memory runs out (e is not added).
 */
int sp_hashmap_add(struct sp_hashmap *m, struct sp_hashmap_entry *e);

/* Unlinks and returns the entry equal to key, or NULL. */
struct sp_hashmap_entry *sp_hashmap_remove(struct sp_hashmap *m,
					   const struct sp_hashmap_entry *key,
					   const void *keydata);

struct sp_hashmap_iter {
	const struct sp_hashmap *m;
	size_t bucket;
	struct sp_hashmap_entry *next;
};

void sp_hashmap_iter_init(const struct sp_hashmap *m, struct sp_hashmap_iter *it);

/* The next entry, or NULL after the last.  Removing the entry just returned is allowed. */
struct sp_hashmap_entry *sp_hashmap_iter_next(struct sp_hashmap_iter *it);

#endif
