/* SPDX-License-Identifier: MIT */
/* Hash maps (hashmap.h). */
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

uint32_t sp_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

uint32_t sp_hash_str(const char *s)
{
	return sp_hash_bytes(s, strlen(s));
}

/* ---- uint64_t -> pointer ---- */

void sp_u64map_init(struct sp_u64map *m)
{
	memset(m, 0, sizeof(*m));
}

void sp_u64map_release(struct sp_u64map *m, void (*free_val)(void *))
{
	for (size_t i = 0; free_val && i < m->cap; i++)
		if (m->vals[i])
			free_val(m->vals[i]);
	free(m->keys);
	free(m->vals);
	sp_u64map_init(m);
}

/* Places key in a table known to have room and not to hold it. */
static void u64_place(uint64_t *keys, void **vals, size_t cap, uint64_t key, void *val)
{
	size_t i = sp_hash_u64(key) & (cap - 1);
	while (vals[i])
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = val;
}

static int u64_resize(struct sp_u64map *m, size_t cap)
{
	uint64_t *keys = malloc(cap * sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->vals[i])
			u64_place(keys, vals, cap, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int sp_u64map_put(struct sp_u64map *m, uint64_t key, void *val)
{
	if (m->count) {
		size_t mask = m->cap - 1;
		for (size_t i = sp_hash_u64(key) & mask; m->vals[i]; i = (i + 1) & mask) {
			if (m->keys[i] == key) {
				m->vals[i] = val;
				return 0;
			}
		}
	}
	if ((m->count + 1) * 4 > m->cap * 3 && u64_resize(m, m->cap ? m->cap * 2 : 16) < 0)
		return -1;
	u64_place(m->keys, m->vals, m->cap, key, val);
	m->count++;
	return 0;
}

void *sp_u64map_remove(struct sp_u64map *m, uint64_t key)
{
	if (!m->count)
		return NULL;
	size_t mask = m->cap - 1, i = sp_hash_u64(key) & mask;
	while (m->vals[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	void *old = m->vals[i];
	if (!old)
		return NULL;
	/* Shift back every entry of the run after i that may move to the hole. */
	for (size_t j = (i + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
		size_t home = sp_hash_u64(m->keys[j]) & mask;
		/* j may fill the hole at i unless its home lies in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->vals[i] = NULL;
	m->count--;
	return old;
}

bool sp_u64map_next(const struct sp_u64map *m, size_t *i, uint64_t *key, void **val)
{
	for (; *i < m->cap; (*i)++) {
		if (m->vals[*i]) {
			if (key)
				*key = m->keys[*i];
			if (val)
				*val = m->vals[*i];
			(*i)++;
			return true;
		}
	}
	return false;
}

/* ---- intrusive, chained ---- */

void sp_hashmap_init(struct sp_hashmap *m, sp_hashmap_cmp_fn cmp)
{
	memset(m, 0, sizeof(*m));
	m->cmp = cmp;
}

void sp_hashmap_release(struct sp_hashmap *m, void (*free_entry)(struct sp_hashmap_entry *))
{
	if (free_entry) {
		for (size_t b = 0; b < m->size; b++) {
			struct sp_hashmap_entry *e = m->table[b];
			while (e) {
				struct sp_hashmap_entry *next = e->next;
				free_entry(e);
				e = next;
			}
		}
	}
	free(m->table);
	sp_hashmap_init(m, m->cmp);
}

static struct sp_hashmap_entry **find(const struct sp_hashmap *m,
				      const struct sp_hashmap_entry *key, const void *keydata)
{
	struct sp_hashmap_entry **pp = &m->table[key->hash & (m->size - 1)];
	while (*pp && ((*pp)->hash != key->hash || m->cmp(*pp, key, keydata) != 0))
		pp = &(*pp)->next;
	return pp;
}

struct sp_hashmap_entry *sp_hashmap_get(const struct sp_hashmap *m,
					const struct sp_hashmap_entry *key,
					const void *keydata)
{
	return m->count ? *find(m, key, keydata) : NULL;
}

int sp_hashmap_add(struct sp_hashmap *m, struct sp_hashmap_entry *e)
{
	if (m->count + 1 > m->size) {
		size_t size = m->size ? m->size * 2 : 64;
		struct sp_hashmap_entry **table = calloc(size, sizeof(*table));
		if (!table)
			return -1;
		for (size_t b = 0; b < m->size; b++) {
			struct sp_hashmap_entry *x = m->table[b];
			while (x) {
				struct sp_hashmap_entry *next = x->next;
				x->next = table[x->hash & (size - 1)];
				table[x->hash & (size - 1)] = x;
				x = next;
			}
		}
		free(m->table);
		m->table = table;
		m->size = size;
	}
	struct sp_hashmap_entry **head = &m->table[e->hash & (m->size - 1)];
	e->next = *head;
	*head = e;
	m->count++;
	return 0;
}

struct sp_hashmap_entry *sp_hashmap_remove(struct sp_hashmap *m,
					   const struct sp_hashmap_entry *key,
					   const void *keydata)
{
	if (!m->count)
		return NULL;
	struct sp_hashmap_entry **pp = find(m, key, keydata), *e = *pp;
	if (e) {
		*pp = e->next;
		e->next = NULL;
		m->count--;
	}
	return e;
}

void sp_hashmap_iter_init(const struct sp_hashmap *m, struct sp_hashmap_iter *it)
{
	it->m = m;
	it->bucket = 0;
	it->next = NULL;
}

struct sp_hashmap_entry *sp_hashmap_iter_next(struct sp_hashmap_iter *it)
{
	while (!it->next) {
		if (it->bucket >= it->m->size)
			return NULL;
		it->next = it->m->table[it->bucket++];
	}
	struct sp_hashmap_entry *e = it->next;
	it->next = e->next;
	return e;
}
