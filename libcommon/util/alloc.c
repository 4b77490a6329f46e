/* SPDX-License-Identifier: MIT */
/* Growing arrays (alloc.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

unsigned long sp_alloc_fail_after;

int sp_alloc_grow(void **p, size_t elem, size_t need, size_t *alloc)
{
	if (need <= *alloc)
		return 0;
	if (sp_alloc_fail_after && --sp_alloc_fail_after == 0) {
		errno = ENOMEM;
		return -1;
	}
	size_t n = (*alloc + 16) * 3 / 2;
	if (n < need || n < *alloc)
		n = need;
	if (elem && n > SIZE_MAX / elem) {
		errno = ENOMEM;
		return -1;
	}
	void *np = realloc(*p, n * elem);
	if (!np)
		return -1;
	*p = np;
	*alloc = n;
	return 0;
}

int sp_alloc_slot(void **p, size_t elem, uint64_t id, size_t *n, size_t *alloc)
{
	if (id < *n)
		return 0;
	if (id >= SIZE_MAX / (elem ? elem : 1) || sp_alloc_grow(p, elem, (size_t)id + 1, alloc) < 0) {
		errno = ENOMEM;
		return -1;
	}
	memset((char *)*p + *n * elem, 0, ((size_t)id + 1 - *n) * elem);
	*n = (size_t)id + 1;
	return 0;
}
