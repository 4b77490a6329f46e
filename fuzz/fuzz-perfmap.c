/* SPDX-License-Identifier: MIT
 * fuzz-perfmap: feeds the input to the perf-map reader, line by line
 * through sp_perfmap_parse_line() and whole through sp_perfmap_load_fd()
 * (from a memfd), then looks addresses up in the table it built.
 *
 * It checks that
 *   - a parsed line has a nonzero size that does not wrap, and a
 *     nonempty name inside the line without the line's end;
 *   - the loader keeps exactly the lines that parse, in order, with the
 *     same fields, and counts the others as skipped;
 *   - the finished table is sorted and every symbol covers its range;
 *   - sp_symtab_find() returns a symbol containing the address, and for
 *     a table of at most 64 symbols exactly the latest added of those
 *     containing it (none when none does).
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/symtab.h"

struct parsed {
	uint64_t start, size;
	char *name;
	size_t namelen;
};

static void check(int cond)
{
	if (!cond)
		abort();
}

/*
 * Parses one line from a heap copy of exactly its bytes; when it parses,
 * stores the fields (the name copied) in *out and returns true.
 */
static bool parse_line(const char *p, size_t len, struct parsed *out)
{
	char *line = malloc(len ? len : 1);
	check(line != NULL);
	memcpy(line, p, len);
	uint64_t start = 0, size = 0;
	const char *name = NULL;
	size_t nl = 0;
	bool ok = sp_perfmap_parse_line(line, len, &start, &size, &name, &nl);
	if (ok) {
		check(size != 0 && start + size > start);
		check(name > line && name + nl <= line + len && nl > 0);
		check(name[0] != ' ');
		check(name[nl - 1] != '\n' && name[nl - 1] != '\r');
		/* The same line without its newline parses the same. */
		size_t l2 = len;
		while (l2 > 0 && (line[l2 - 1] == '\n' || line[l2 - 1] == '\r'))
			l2--;
		uint64_t s2, z2;
		const char *n2;
		size_t nl2;
		check(sp_perfmap_parse_line(line, l2, &s2, &z2, &n2, &nl2));
		check(s2 == start && z2 == size && n2 == name && nl2 == nl);
		out->start = start;
		out->size = size;
		out->namelen = nl;
		out->name = malloc(nl);
		check(out->name != NULL);
		memcpy(out->name, name, nl);
	}
	free(line);
	return ok;
}

/* The latest added symbol containing addr, by brute force. */
static const struct sp_sym *find_slow(const struct sp_symtab *t, uint64_t addr)
{
	const struct sp_sym *best = NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].start <= addr && addr < t->v[i].end &&
		    (!best || t->v[i].order > best->order))
			best = &t->v[i];
	return best;
}

static void lookup(const struct sp_symtab *t, uint64_t addr)
{
	const struct sp_sym *s = sp_symtab_find(t, addr);
	if (s)
		check(s->start <= addr && addr < s->end);
	if (t->n <= 64)
		check(s == find_slow(t, addr));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct parsed *good = NULL;
	size_t ngood = 0, lines = 0;

	/* Line by line, each with its newline, as getline() splits them. */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		struct parsed x;
		if (parse_line(p, len, &x)) {
			good = realloc(good, (ngood + 1) * sizeof(*good));
			check(good != NULL);
			good[ngood++] = x;
		}
		lines++;
		p += len;
	}

	/* The whole input through the loader. */
	int fd = memfd_create("fuzz-perfmap", MFD_CLOEXEC);
	check(fd >= 0);
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, data + done, size - done);
		check(k > 0);
		done += (size_t)k;
	}
	check(lseek(fd, 0, SEEK_SET) == 0);
	struct sp_symtab t;
	uint64_t skipped = 0;
	sp_symtab_init(&t);
	check(sp_perfmap_load_fd(fd, &t, &skipped) == 0);
	check(t.sorted && t.n == ngood && skipped == lines - ngood);

	/* Sorted by start, then by order; the order is the line's rank. */
	for (size_t i = 0; i < t.n; i++) {
		const struct sp_sym *s = &t.v[i];
		check(s->order < ngood);
		const struct parsed *g = &good[s->order];
		check(s->start == g->start && s->end == g->start + g->size);
		check(strlen(s->name) <= g->namelen &&
		      memcmp(s->name, g->name, strlen(s->name)) == 0);
		if (i > 0)
			check(t.v[i - 1].start < s->start ||
			      (t.v[i - 1].start == s->start && t.v[i - 1].order < s->order));
	}

	/* Lookups at the edges of each symbol (the first few) and around. */
	for (size_t i = 0; i < ngood && i < 16; i++) {
		lookup(&t, good[i].start);
		lookup(&t, good[i].start - 1);
		lookup(&t, good[i].start + good[i].size - 1);
		lookup(&t, good[i].start + good[i].size);
		lookup(&t, good[i].start + good[i].size / 2);
	}
	lookup(&t, 0);
	lookup(&t, UINT64_MAX);
	if (size >= 8) {
		uint64_t a;
		memcpy(&a, data + size - 8, 8);
		lookup(&t, a);
	}

	sp_symtab_release(&t);
	for (size_t i = 0; i < ngood; i++)
		free(good[i].name);
	free(good);
	return 0;
}
