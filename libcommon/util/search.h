/* SPDX-License-Identifier: MIT
 * Binary search over sorted arrays, written once.
 *
 *	size_t k = SP_PARTITION_POINT(n, i, v[i].start <= addr);
 *
 * For indices 0..n-1 where the condition holds for a prefix and fails
 * for the rest (v sorted by start, say), gives the first index where it
 * fails: n when it holds everywhere.  The condition is an expression of
 * the index variable named second; it is expanded inline, so a search on
 * a hot path costs no call.
 */
#ifndef SP_UTIL_SEARCH_H
#define SP_UTIL_SEARCH_H

#include <stddef.h>

#define SP_PARTITION_POINT(n, i, cond) __extension__({ \
	size_t sp_lo_ = 0, sp_hi_ = (n); \
	while (sp_lo_ < sp_hi_) { \
		size_t i = sp_lo_ + (sp_hi_ - sp_lo_) / 2; \
		if (cond) \
			sp_lo_ = i + 1; \
		else \
			sp_hi_ = i; \
	} \
	sp_lo_; \
})

#endif
