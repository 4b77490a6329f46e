/* SPDX-License-Identifier: MIT */
/*
 * A pool of strings kept for the pool's lifetime, each once: the same
 * text asked for twice gives the same pointer, and what is derived from
 * it (a demangled name) is made the first time only.
 */
#ifndef SP_UTIL_STRPOOL_H
#define SP_UTIL_STRPOOL_H

#include "util/hashmap.h"

/*
 * Makes what the pool keeps for s: a malloc'd string the pool then owns,
 * or NULL to keep a copy of s itself.
 */
typedef char *(*sp_strpool_make_fn)(const char *s, void *arg);

struct sp_strpool {
	struct sp_hashmap map;
	sp_strpool_make_fn make;
	void *arg;
};

/* make NULL: the pool keeps copies. */
void sp_strpool_init(struct sp_strpool *p, sp_strpool_make_fn make, void *arg);
void sp_strpool_release(struct sp_strpool *p);

/*
 * What the pool keeps for s (see sp_strpool_make_fn), valid until the
 * pool is released.  NULL stays NULL; NULL also when memory runs out.
 */
const char *sp_strpool_get(struct sp_strpool *p, const char *s);

#endif
