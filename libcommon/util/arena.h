/* SPDX-License-Identifier: MIT */
/*
 * An arena: many small allocations that live and die together (a
 * segment's frames, a module's results), taken from large blocks and
 * freed all at once, instead of one malloc and free each.
 */
#ifndef SP_UTIL_ARENA_H
#define SP_UTIL_ARENA_H

#include <stddef.h>

struct sp_arena {
	struct sp_arena_block *head;	/* the block allocations come from */
	size_t used, cap;		/* in head */
};

#define SP_ARENA_INIT { NULL, 0, 0 }

/* n bytes, 16-byte aligned, not zeroed; NULL when memory runs out. */
void *sp_arena_alloc(struct sp_arena *a, size_t n);

/* Frees every allocation; the arena is empty and can be used again. */
void sp_arena_release(struct sp_arena *a);

#endif
