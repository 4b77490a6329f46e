/* SPDX-License-Identifier: MIT
 * symbolize-profile: the recipe "Resolve symbols".  Opens a finished
 * recording (a raw stream of sp-capture, or an unwound one), keeps one
 * symbolizer for the whole profile and prints each distinct stack once
 * as a folded line, root first, with its number of samples:
 *
 *	main;work;leaf 123
 *
 * Frames hidden in a profiler's default view (start-up scaffolding) are
 * left out, as sp-fold leaves them out; inlined calls are frames of
 * their own.
 *
 * With -l it lists each distinct frame instead, once, by its compact id:
 *
 *	7 outer_work /src/inlined.c:21 debuginfo
 *	8 inner_step /src/inlined.c:15 debuginfo inline
 *
 *	symbolize-profile [-l] FILE
 */
#define _POSIX_C_SOURCE 200809L	/* strdup() */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

/* A folded line and its count, in a table of open addressing. */
struct line {
	char *text;
	unsigned long count;
};

static struct line *table;
static size_t table_size, table_used;

static unsigned long hash(const char *s)
{
	unsigned long h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static int grow(void);

/* Counts one sample of the stack whose folded text is s. */
static int count(const char *s)
{
	if ((table_used + 1) * 2 > table_size && grow() < 0)
		return -1;
	size_t i = hash(s) & (table_size - 1);
	while (table[i].text && strcmp(table[i].text, s) != 0)
		i = (i + 1) & (table_size - 1);
	if (!table[i].text) {
		if (!(table[i].text = strdup(s)))
			return -1;
		table_used++;
	}
	table[i].count++;
	return 0;
}

static int grow(void)
{
	size_t old = table_size;
	struct line *t = table;
	table_size = old ? old * 2 : 1024;
	if (!(table = calloc(table_size, sizeof(*table))))
		return -1;
	for (size_t i = 0; i < old; i++) {
		if (!t[i].text)
			continue;
		size_t j = hash(t[i].text) & (table_size - 1);
		while (table[j].text)
			j = (j + 1) & (table_size - 1);
		table[j] = t[i];
	}
	free(t);
	return 0;
}

/* The folded text of resolved frames (leaf first) into buf, root first. */
static void fold(const struct sp_symbol *f, size_t n, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = n; i-- > 0;) {
		if (f[i].flags & SP_SYM_HIDDEN)
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? ";" : "", f[i].name);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

/* Prints each frame of f not printed before (ids are compact: a bitmap does). */
static int list(const struct sp_symbol *f, size_t n)
{
	static unsigned char *seen;
	static size_t nseen;
	for (size_t i = 0; i < n; i++) {
		if (f[i].id >= nseen * 8) {
			size_t more = f[i].id / 8 + 4096;
			unsigned char *p = realloc(seen, more);
			if (!p)
				return -1;
			memset(p + nseen, 0, more - nseen);
			seen = p;
			nseen = more;
		}
		if (seen[f[i].id / 8] & 1u << f[i].id % 8)
			continue;
		seen[f[i].id / 8] |= (unsigned char)(1u << f[i].id % 8);
		printf("%u %s %s:%u %s%s%s\n", (unsigned)f[i].id, f[i].name,
		       f[i].file ? f[i].file : "", f[i].line, f[i].source,
		       f[i].flags & SP_SYM_INLINE ? " inline" : "",
		       f[i].flags & SP_SYM_HIDDEN ? " hidden" : "");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char text[65536];
	bool frames_only = argc == 3 && strcmp(argv[1], "-l") == 0;
	if (argc != 2 + frames_only) {
		fprintf(stderr, "usage: symbolize-profile [-l] FILE\n");
		return 2;
	}
	struct sp_snapshot *snap = sp_snapshot_open(argv[1 + frames_only]);
	struct sp_symbolizer *sym = snap ? sp_symbolizer_new(snap, NULL, NULL) : NULL;
	if (!sym) {
		fprintf(stderr, "symbolize-profile: %s\n", sp_errmsg(-1));
		sp_snapshot_close(snap);
		return 1;
	}
	const struct sp_batch *b;
	int rc;
	while ((rc = sp_snapshot_next(snap, &b)) == 1) {
		if (sp_symbolizer_update(sym, b, NULL) < 0)
			break;
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_symbol *frames;
			ssize_t n = sp_symbolizer_resolve(sym, sp_batch_stack(b, i), &frames);
			if (n < 0)
				goto failed;
			if (frames_only) {
				if (list(frames, (size_t)n) < 0)
					goto oom;
				continue;
			}
			fold(frames, (size_t)n, text, sizeof(text));
			if (text[0] && count(text) < 0)
				goto oom;
		}
	}
failed:
	if (rc != 0)
		fprintf(stderr, "symbolize-profile: %s\n", sp_errmsg(-1));
	for (size_t i = 0; i < table_size; i++)
		if (table[i].text)
			printf("%s %lu\n", table[i].text, table[i].count);
	sp_symbolizer_free(sym);
	sp_snapshot_close(snap);
	return rc != 0;
oom:
	fprintf(stderr, "symbolize-profile: out of memory\n");
	return 1;
}
