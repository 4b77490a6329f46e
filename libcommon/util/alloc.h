/* SPDX-License-Identifier: MIT
 * Growing arrays, in the manner of git's ALLOC_GROW: the one way the
 * library makes room in an array.
 *
 *	struct item *items = NULL;
 *	size_t nitems = 0, alloc = 0;
 *	if (SP_ALLOC_GROW(items, nitems + 1, alloc) < 0)
 *		return -1;			(items and alloc are unchanged)
 *	items[nitems++] = x;
 *
 * alloc counts elements, not bytes, and must be a size_t.  The array grows
 * by half again its size (at least to need), so n appends cost O(n).
 */
#ifndef SP_UTIL_ALLOC_H
#define SP_UTIL_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes *p hold at least need elements of elem bytes.  Returns 0, or -1
 * (errno ENOMEM) with *p and *alloc untouched when memory runs out or the
 * size would overflow.  New elements are not initialised.
 */
int sp_alloc_grow(void **p, size_t elem, size_t need, size_t *alloc);

#define SP_ALLOC_GROW(p, need, alloc) \
	((need) <= (alloc) ? 0 : sp_alloc_grow((void **)&(p), sizeof(*(p)), (need), &(alloc)))

/*
 * Makes index id valid in an array of *n elements that grows on demand
 * (a table indexed by an id the input gives): grows it when id >= *n,
 * zeroing the new elements, and sets *n to id + 1.  Returns 0, or -1 as
 * sp_alloc_grow() (nothing changed).
 */
int sp_alloc_slot(void **p, size_t elem, uint64_t id, size_t *n, size_t *alloc);

#define SP_ALLOC_SLOT(p, id, n, alloc) \
	((id) < (n) ? 0 : sp_alloc_slot((void **)&(p), sizeof(*(p)), (id), &(n), &(alloc)))

/*
 * A test hook: when set to n > 0, the nth growth from now fails as if
 * memory had run out (and the counter stops).  0, the default, never
 * fails.  For the unit tests' out-of-memory paths only.
 */
extern unsigned long sp_alloc_fail_after;

#endif
