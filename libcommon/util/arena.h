/* SPDX-License-Identifier: MIT */
/*
 * An arena: many small allocations that live and die together (a
 * segment's frames, a module's results, a batch's records), taken in
 * order from large blocks and taken back all at once, instead of one
 * malloc and free each.  The blocks of a reset arena are kept for reuse.
 */
#ifndef SP_UTIL_ARENA_H
#define SP_UTIL_ARENA_H

#include <stddef.h>

struct sp_arena_block {
	struct sp_arena_block *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

struct sp_arena {
	struct sp_arena_block *used, *spare;
};

#define SP_ARENA_INIT { NULL, NULL }

/* n bytes, 16-byte aligned, not zeroed; NULL when memory runs out. */
void *sp_arena_alloc(struct sp_arena *a, size_t n);

/* Takes every allocation back, keeping the blocks for the next ones. */
void sp_arena_reset(struct sp_arena *a);

/* Frees every allocation and block; the arena is empty and can be used again. */
void sp_arena_release(struct sp_arena *a);

#endif
