/* SPDX-License-Identifier: MIT */
/* An arena of small allocations freed together (see arena.h). */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/arena.h"

#define BLOCK (64u * 1024)

struct sp_arena_block {
	struct sp_arena_block *next;
	alignas(16) unsigned char data[];
};

void *sp_arena_alloc(struct sp_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!a->head || a->cap - a->used < n) {
		size_t cap = n > BLOCK ? n : BLOCK;
		struct sp_arena_block *b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = a->head;
		a->head = b;
		a->used = 0;
		a->cap = cap;
	}
	void *p = a->head->data + a->used;
	a->used += n;
	return p;
}

void sp_arena_release(struct sp_arena *a)
{
	while (a->head) {
		struct sp_arena_block *b = a->head;
		a->head = b->next;
		free(b);
	}
	a->used = a->cap = 0;
}
