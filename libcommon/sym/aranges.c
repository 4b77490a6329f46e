/* SPDX-License-Identifier: MIT */
/* A module's units by address, from .debug_aranges, as libdwfl finds them (see aranges.h). */
#include <stdlib.h>
#include <string.h>

#include "sym/aranges.h"
#include "util/alloc.h"
#include "util/search.h"

/* One range as read, with its place in the section for a stable sort. */
struct range {
	uint64_t addr, len, die;
	size_t seq;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* n bytes at *p, host order, if they lie before end. */
static bool take(const unsigned char **p, const unsigned char *end, unsigned n, uint64_t *v)
{
	if ((size_t)(end - *p) < n)
		return false;
	if (n == 4) {
		uint32_t w;
		memcpy(&w, *p, 4);
		*v = w;
	} else {
		memcpy(v, *p, 8);
	}
	*p += n;
	return true;
}

/* The DIE of the unit holding offset off of .debug_info, as libdw finds it; false: none. */
static bool unit_die(const struct sp_unit_span *units, size_t nunits, uint64_t off, uint64_t *die)
{
	size_t k = SP_PARTITION_POINT(nunits, i, units[i].start <= off);
	if (k == 0 || off >= units[k - 1].end)
		return false;
	*die = units[k - 1].die;
	return true;
}

/*
 * Reads every set of ranges as dwarf_getaranges() does: a set runs to
 * its pair of zeros, whatever its length says, and the next one starts
 * after them.  Returns the ranges read, or ASK_LIBDW where libdw would
 * fail the whole section.
 */
static int read_ranges(const unsigned char *p, const unsigned char *end, uint64_t info_len,
		       const struct sp_unit_span *units, size_t nunits, struct range **out,
		       size_t *n)
{
	size_t alloc = 0;
	*out = NULL;
	*n = 0;
	while (p < end) {
		const unsigned char *set = p;
		uint64_t length, off, die;
		unsigned osize = 4;
		if (!take(&p, end, 4, &length))
			return SP_ARANGES_ASK_LIBDW;
		if (length == 0xffffffff) {
			if (!take(&p, end, 8, &length))
				return SP_ARANGES_ASK_LIBDW;
			osize = 8;
		} else if (length >= 0xfffffff0) {
			return SP_ARANGES_ASK_LIBDW;
		}
		if (end - p < 2)
			return SP_ARANGES_ASK_LIBDW;
		uint16_t version;
		memcpy(&version, p, 2);
		p += 2;
		if (version != 2 || !take(&p, end, osize, &off) || off > info_len ||
		    info_len - off < 4 || end - p < 2)
			return SP_ARANGES_ASK_LIBDW;
		unsigned asize = p[0], ssize = p[1];
		p += 2;
		if ((asize != 4 && asize != 8) || ssize != 0)
			return SP_ARANGES_ASK_LIBDW;
		/* The ranges start at a multiple of twice the address size from the set's start. */
		size_t pad = (2 * asize - (size_t)(p - set) % (2 * asize)) % (2 * asize);
		if ((size_t)(end - p) < pad)
			return SP_ARANGES_ASK_LIBDW;
		p += pad;
		for (;;) {
			uint64_t addr, len;
			if (!take(&p, end, asize, &addr) || !take(&p, end, asize, &len))
				return SP_ARANGES_ASK_LIBDW;
			if (addr == 0 && len == 0)
				break;
			if (!unit_die(units, nunits, off, &die) || die >= info_len)
				return SP_ARANGES_ASK_LIBDW;
			if (SP_ALLOC_GROW(*out, *n + 1, alloc) < 0)
				return SP_ARANGES_NOMEM;
			(*out)[*n] = (struct range){ addr, len, die, *n };
			(*n)++;
		}
	}
	return SP_ARANGES_OK;
}

int sp_aranges_decode(struct sp_aranges *a, const unsigned char *data, size_t len,
		      uint64_t info_len, const struct sp_unit_span *units, size_t nunits)
{
	struct range *r;
	size_t n;
	memset(a, 0, sizeof(*a));
	int rc = read_ranges(data, data + len, info_len, units, nunits, &r, &n);
	if (rc != SP_ARANGES_OK || n == 0) {
		free(r);
		return rc;
	}
	/*
	 * libdw sorts by address, keeping the section's order among equal
	 * ones; most sections are in order already.
	 */
	size_t k = 1;
	while (k < n && r[k - 1].addr <= r[k].addr)
		k++;
	if (k < n)
		qsort(r, n, sizeof(*r), range_cmp);
	/* libdwfl keeps one entry for each run of ranges of one unit. */
	size_t runs = 0;
	for (size_t i = 0; i < n; i++)
		runs += i == 0 || r[i].die != r[i - 1].die;
	if (!(a->runs = malloc(runs * sizeof(*a->runs)))) {
		free(r);
		return SP_ARANGES_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (i == 0 || r[i].die != r[i - 1].die)
			a->runs[a->nruns++] = (struct sp_arange_run){ r[i].addr, r[i].die };
	a->last_end = r[n - 1].addr + r[n - 1].len;
	free(r);
	return SP_ARANGES_OK;
}

int sp_aranges_read(struct sp_aranges *a, Dwarf *dw, const struct sp_linesecs *s)
{
	struct sp_unit_span *units = NULL;
	size_t n = 0, alloc = 0, hsize;
	Dwarf_Off off = 0, next;
	memset(a, 0, sizeof(*a));
	if (!s->aranges || !s->info_len)
		return SP_ARANGES_ASK_LIBDW;
	while (dwarf_next_unit(dw, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) == 0) {
		if (SP_ALLOC_GROW(units, n + 1, alloc) < 0) {
			free(units);
			return SP_ARANGES_NOMEM;
		}
		units[n++] = (struct sp_unit_span){ off, next, off + hsize };
		if (next <= off)
			break;
		off = next;
	}
	int rc = sp_aranges_decode(a, s->aranges, s->aranges_len, s->info_len, units, n);
	free(units);
	return rc;
}

void sp_aranges_free(struct sp_aranges *a)
{
	free(a->runs);
	memset(a, 0, sizeof(*a));
}

/*
 * libdwfl's bisection, step for step: where runs share a start, the one
 * it lands on is the one it gives.
 */
bool sp_aranges_find(const struct sp_aranges *a, uint64_t addr, uint64_t *die)
{
	size_t l = 0, u = a->nruns;
	while (l < u) {
		size_t i = (l + u) / 2;
		uint64_t start = a->runs[i].lo;
		if (addr < start) {
			u = i;
			continue;
		}
		if (addr > start) {
			if (i + 1 < a->nruns) {
				if (addr >= a->runs[i + 1].lo) {
					l = i + 1;
					continue;
				}
			} else if (addr > a->last_end) {
				return false;
			}
		}
		*die = a->runs[i].die;
		return true;
	}
	return false;
}
