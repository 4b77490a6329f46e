/* SPDX-License-Identifier: MIT */
/* Address-sorted symbol tables (see symtab.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/symtab.h"
#include "util/search.h"
#include "util/alloc.h"

#define CHUNK (64u * 1024)

void sp_symtab_init(struct sp_symtab *t)
{
	memset(t, 0, sizeof(*t));
}

void sp_symtab_release(struct sp_symtab *t)
{
	for (size_t i = 0; i < t->nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	free(t->v);
	free(t->reach);
	sp_symtab_init(t);
}

static const char *store(struct sp_symtab *t, const char *s, size_t n)
{
	if (t->nchunks == 0 || t->chunk_used + n + 1 > t->chunk_cap) {
		size_t cap = n + 1 > CHUNK ? n + 1 : CHUNK;
		if (SP_ALLOC_GROW(t->chunks, t->nchunks + 1, t->alloc_chunks) < 0 ||
		    !(t->chunks[t->nchunks] = malloc(cap)))
			return NULL;
		t->nchunks++;
		t->chunk_used = 0;
		t->chunk_cap = cap;
	}
	char *p = t->chunks[t->nchunks - 1] + t->chunk_used;
	memcpy(p, s, n);
	p[n] = '\0';
	t->chunk_used += n + 1;
	return p;
}

int sp_symtab_add(struct sp_symtab *t, uint64_t start, uint64_t size,
		  const char *name, size_t namelen)
{
	if (SP_ALLOC_GROW(t->v, t->n + 1, t->cap) < 0)
		return -1;
	const char *s = store(t, name, namelen);
	if (!s)
		return -1;
	t->v[t->n] = (struct sp_sym){ .start = start, .end = size ? start + size : 0, .name = s,
				      .order = (uint32_t)t->n, .sized = size != 0 };
	t->n++;
	t->sorted = false;
	free(t->reach);
	t->reach = NULL;
	return 0;
}

int sp_symtab_add_limited(struct sp_symtab *t, uint64_t start, uint64_t limit,
			  const char *name, size_t namelen)
{
	if (sp_symtab_add(t, start, 0, name, namelen) < 0)
		return -1;
	t->v[t->n - 1].limit = limit;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sp_sym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Sorts by start, keeping the order of symbols that start together: a
 * radix sort of the starts, a byte at a time from the lowest, skipping
 * the bytes every start shares.  Since a symbol's order is its place of
 * insertion and symbols added after a sort come later, this is the
 * order of cmp_sym().  False when memory runs out.
 */
static bool radix_sort(struct sp_symtab *t)
{
	size_t n = t->n;
	uint64_t *key = malloc(2 * n * sizeof(*key));
	uint32_t *idx = malloc(2 * n * sizeof(*idx));
	struct sp_sym *out = malloc(n * sizeof(*out));
	if (!key || !idx || !out) {
		free(key);
		free(idx);
		free(out);
		return false;
	}
	uint64_t same = ~0ull, first = t->v[0].start;
	for (size_t i = 0; i < n; i++) {
		key[i] = t->v[i].start;
		idx[i] = (uint32_t)i;
		same &= ~(key[i] ^ first);
	}
	uint64_t *k = key, *k2 = key + n;
	uint32_t *x = idx, *x2 = idx + n;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		if (((same >> shift) & 0xff) == 0xff)
			continue;	/* every start has this byte */
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((k[i] >> shift) & 0xff) + 1]++;
		for (unsigned b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++) {
			size_t at = count[(k[i] >> shift) & 0xff]++;
			k2[at] = k[i];
			x2[at] = x[i];
		}
		uint64_t *tk = k;
		k = k2;
		k2 = tk;
		uint32_t *tx = x;
		x = x2;
		x2 = tx;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = t->v[x[i]];
	free(t->v);
	t->v = out;
	t->cap = n;
	free(key);
	free(idx);
	return true;
}

void sp_symtab_finish(struct sp_symtab *t)
{
	/* Often added in order already (kallsyms, a perf map). */
	size_t k = 1;
	while (k < t->n && cmp_sym(&t->v[k - 1], &t->v[k]) < 0)
		k++;
	if (k < t->n && !radix_sort(t))
		qsort(t->v, t->n, sizeof(*t->v), cmp_sym);
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].end == 0 || t->v[i].end <= t->v[i].start) {
			/* Up to the next symbol that starts later, or one byte. */
			size_t j = i + 1;
			while (j < t->n && t->v[j].start == t->v[i].start)
				j++;
			t->v[i].end = j < t->n ? t->v[j].start : t->v[i].start + 1;
			if (t->v[i].limit > t->v[i].start && t->v[i].end > t->v[i].limit)
				t->v[i].end = t->v[i].limit;
		}
	t->sorted = true;
	free(t->reach);
	if ((t->reach = t->n ? malloc(t->n * sizeof(*t->reach)) : NULL))
		for (size_t i = 0; i < t->n; i++)
			t->reach[i] = i && t->reach[i - 1] > t->v[i].end ? t->reach[i - 1] : t->v[i].end;
}

/* Overlapping symbols are few; this many are examined before the match. */
#define MAX_BACK 64

const struct sp_sym *sp_symtab_find(const struct sp_symtab *t, uint64_t addr)
{
	if (!t->n)
		return NULL;
	size_t lo = SP_PARTITION_POINT(t->n, i, t->v[i].start <= addr);
	/* t->v[lo - 1] is the last symbol starting at or before addr. */
	const struct sp_sym *best = NULL;
	for (size_t i = lo, k = 0; i > 0 && k < MAX_BACK; i--, k++) {
		if (t->reach && t->reach[i - 1] <= addr)
			break;	/* neither it nor any before it reaches addr */
		const struct sp_sym *s = &t->v[i - 1];
		if (addr < s->end && (!best || s->order > best->order))
			best = s;
	}
	return best;
}

/* A kallsyms address: up to 16 hex digits; the end of them, or NULL. */
static const char *kallsyms_hex(const char *p, const char *end, uint64_t *v)
{
	static const signed char val[256] = {
		['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
		['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13,
		['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13,
		['D'] = 14, ['E'] = 15, ['F'] = 16,
	};
	uint64_t x = 0;
	const char *s = p;
	for (; s < end && val[(unsigned char)*s]; s++) {
		if (s - p == 16)
			return NULL;
		x = x << 4 | (uint64_t)(val[(unsigned char)*s] - 1);
	}
	*v = x;
	return s > p ? s : NULL;
}

/*
 * One line of kallsyms, "ADDRESS TYPE NAME[\t[MODULE]]": 1 when it is
 * one (*text: a function's), 0 when it is not.
 */
static int kallsyms_line(const char *p, const char *end, uint64_t *a, bool *text,
			 const char **name, size_t *nl)
{
	const char *s = kallsyms_hex(p, end, a);
	/* The type, between two spaces. */
	if (!s || end - s < 3 || s[0] != ' ' || s[2] != ' ')
		return 0;
	char type = s[1];
	*text = type == 't' || type == 'T' || type == 'w' || type == 'W';
	*name = s + 3;
	const char *n = *name;
	while (n < end && *n != ' ' && *n != '\t' && *n != '\n')
		n++;
	*nl = (size_t)(n - *name);
	return 1;
}

/* The whole of fd (a /proc file has no size to go by), NUL-ended, or NULL. */
static char *read_whole(int fd, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (cap - n < 65536) {
			char *b = realloc(buf, cap *= 2);
			if (!b)
				break;
			buf = b;
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == 0) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	free(buf);
	return NULL;
}

int sp_kallsyms_load(const char *path, struct sp_symtab *t, struct sp_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sp_error_errno(err, "cannot open '%s'", path);
	size_t len = 0;
	char *buf = read_whole(fd, &len);
	int e = errno;
	close(fd);
	if (!buf) {
		errno = e;
		return sp_error_errno(err, "cannot read '%s'", path);
	}
	bool nonzero = false;
	size_t lines = 0;
	/* Lines of over 1023 bytes are read as fgets() would split them. */
	for (const char *p = buf, *end = buf + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl + 1 : end;
		if (eol - p > 1023)
			eol = p + 1023;
		uint64_t a;
		bool text;
		const char *name;
		size_t namelen;
		if (kallsyms_line(p, eol, &a, &text, &name, &namelen)) {
			lines++;
			nonzero |= a != 0;
			if (text && sp_symtab_add(t, a, 0, name, namelen) < 0) {
				free(buf);
				return sp_error_errno(err, "'%s'", path);
			}
		}
		p = eol;
	}
	free(buf);
	if (lines && !nonzero)
		return sp_error_set(err, SP_ERR_PERMISSION, "every address in '%s' is zero: it was "
				    "saved without privilege (kernel.kptr_restrict); save it as root",
				    path);
	if (!lines)
		return sp_error_set(err, SP_ERR_BAD_INPUT, "'%s' holds no kallsyms lines", path);
	sp_symtab_finish(t);
	return 0;
}

static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t x = 0;
	int digits = 0;
	for (; s < end && isxdigit((unsigned char)*s); s++, digits++) {
		if (digits == 16)
			return false;
		int c = (unsigned char)*s;
		x = x << 4 | (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
	}
	if (!digits)
		return false;
	*v = x;
	*p = s;
	return true;
}

bool sp_perfmap_parse_line(const char *line, size_t len, uint64_t *start,
			   uint64_t *size, const char **name, size_t *namelen)
{
	const char *p = line, *end = line + len;
	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	if (!parse_hex(&p, end, start) || p == end || *p != ' ')
		return false;
	while (p < end && *p == ' ')
		p++;
	if (!parse_hex(&p, end, size) || p == end || *p != ' ' || *size == 0)
		return false;
	while (p < end && *p == ' ')
		p++;
	if (p == end || *start + *size < *start)
		return false;
	*name = p;
	*namelen = (size_t)(end - p);
	return true;
}

int sp_perfmap_load_fd(int fd, struct sp_symtab *t, uint64_t *skipped)
{
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		uint64_t start, size;
		const char *name;
		size_t nl;
		if (!sp_perfmap_parse_line(line, (size_t)n, &start, &size, &name, &nl)) {
			(*skipped)++;
			continue;
		}
		if (sp_symtab_add(t, start, size, name, nl) < 0) {
			free(line);
			fclose(f);
			errno = ENOMEM;	/* sp_symtab_add() failed only for memory */
			return -1;
		}
	}
	free(line);
	fclose(f);
	sp_symtab_finish(t);
	return 0;
}
