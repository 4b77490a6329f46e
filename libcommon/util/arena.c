/* SPDX-License-Identifier: MIT */
/* An arena of small allocations taken back together (see arena.h). */
#include <stdlib.h>

#include "util/arena.h"

#define BLOCK (256u * 1024)

void *sp_arena_alloc(struct sp_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct sp_arena_block *b = a->used;
	if (b && b->size - b->used >= n) {
		void *m = b->data + b->used;
		b->used += n;
		return m;
	}
	if (a->spare && a->spare->size >= n) {
		b = a->spare;
		a->spare = b->next;
	} else {
		size_t size = n > BLOCK ? n : BLOCK;
		if (!(b = malloc(sizeof(*b) + size)))
			return NULL;
		b->size = size;
	}
	b->next = a->used;
	a->used = b;
	b->used = n;
	return b->data;
}

void sp_arena_reset(struct sp_arena *a)
{
	while (a->used) {
		struct sp_arena_block *b = a->used;
		a->used = b->next;
		b->next = a->spare;
		a->spare = b;
	}
}

void sp_arena_release(struct sp_arena *a)
{
	sp_arena_reset(a);
	while (a->spare) {
		struct sp_arena_block *b = a->spare;
		a->spare = b->next;
		free(b);
	}
}
