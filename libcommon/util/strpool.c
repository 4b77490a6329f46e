/* SPDX-License-Identifier: MIT */
/* A pool of strings kept once each (see strpool.h). */
#include <stdlib.h>
#include <string.h>

#include "util/strpool.h"

struct pooled {
	struct sp_hashmap_entry e;
	char *made;		/* what make() gave; NULL: the text itself */
	size_t len;
	char text[];
};

struct pool_key {
	const char *s;
	size_t len;
};

static int pooled_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		      const void *keydata)
{
	const struct pooled *x = sp_container_of(a, struct pooled, e);
	if (keydata) {
		const struct pool_key *k = keydata;
		return x->len != k->len || memcmp(x->text, k->s, k->len) != 0;
	}
	const struct pooled *y = sp_container_of(b, struct pooled, e);
	return x->len != y->len || memcmp(x->text, y->text, x->len) != 0;
}

void sp_strpool_init(struct sp_strpool *p, sp_strpool_make_fn make, void *arg)
{
	sp_hashmap_init(&p->map, pooled_cmp);
	p->make = make;
	p->arg = arg;
}

static void pooled_free(struct sp_hashmap_entry *e)
{
	struct pooled *x = sp_container_of(e, struct pooled, e);
	free(x->made);
	free(x);
}

void sp_strpool_release(struct sp_strpool *p)
{
	sp_hashmap_release(&p->map, pooled_free);
}

const char *sp_strpool_get(struct sp_strpool *p, const char *s)
{
	if (!s)
		return NULL;
	struct pool_key k = { s, strlen(s) };
	struct sp_hashmap_entry probe = { .hash = sp_hash_bytes(s, k.len) };
	struct sp_hashmap_entry *hit = sp_hashmap_get(&p->map, &probe, &k);
	if (hit) {
		struct pooled *x = sp_container_of(hit, struct pooled, e);
		return x->made ? x->made : x->text;
	}
	struct pooled *x = malloc(sizeof(*x) + k.len + 1);
	if (!x)
		return NULL;
	x->e.hash = probe.hash;
	x->len = k.len;
	memcpy(x->text, s, k.len + 1);
	x->made = p->make ? p->make(x->text, p->arg) : NULL;
	if (sp_hashmap_add(&p->map, &x->e) < 0) {
		pooled_free(&x->e);
		return NULL;
	}
	return x->made ? x->made : x->text;
}
