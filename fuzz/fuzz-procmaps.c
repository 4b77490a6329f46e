/* SPDX-License-Identifier: MIT
 * fuzz-procmaps: feeds each line of the input to
 * sp_proc_maps_parse_line(), the parser of /proc/PID/maps lines, as
 * sp_proc_maps() does (the bytes getline() gives: the line with its
 * newline, then a NUL).
 *
 * For every line that parses it checks that
 *   - the path points into the line and ends before its end;
 *   - the protection bits and the shared flag are those the permission
 *     field spells (taken apart here with a buffer of zeros), whatever
 *     lines came before;
 *   - " (deleted)" was cut only from a path that ended in it;
 *   - printing the mapping back as a maps line and parsing that gives
 *     the same mapping.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/procfs.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* A heap copy of exactly len bytes and a NUL, so that overreads are caught. */
static char *copy_line(const char *p, size_t len)
{
	char *s = malloc(len + 1);
	check(s != NULL);
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* The protection and sharing the permission field of a line spells. */
static void expected_perms(const char *line, int *prot, int *shared)
{
	char perms[8] = { 0 };
	unsigned long long a, b;

	check(sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3);
	*prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		(perms[2] == 'x' ? PROT_EXEC : 0);
	*shared = perms[3] == 's';
}

/* Prints m as a maps line and checks that it parses back to m. */
static void round_trip(const struct sp_proc_map *m)
{
	char *text = NULL;
	int k = asprintf(&text, "%" PRIx64 "-%" PRIx64 " %c%c%c%c %" PRIx64 " %x:%x %" PRIu64
			 " %s%s\n", m->start, m->end, m->prot & PROT_READ ? 'r' : '-',
			 m->prot & PROT_WRITE ? 'w' : '-', m->prot & PROT_EXEC ? 'x' : '-',
			 m->shared ? 's' : 'p', m->pgoff, m->maj, m->min, m->ino, m->path,
			 m->deleted ? " (deleted)" : "");
	check(k > 0);
	struct sp_proc_map b;
	check(sp_proc_maps_parse_line(text, (size_t)k, &b) == 0);
	check(b.start == m->start && b.end == m->end && b.pgoff == m->pgoff &&
	      b.maj == m->maj && b.min == m->min && b.ino == m->ino &&
	      b.prot == m->prot && b.shared == m->shared && b.deleted == m->deleted &&
	      strcmp(b.path, m->path) == 0);
	free(text);
}

static void parse_line(const char *p, size_t len)
{
	char *line = copy_line(p, len);
	char *orig = copy_line(p, len);
	struct sp_proc_map m;

	memset(&m, 0xa5, sizeof(m));
	int rc = sp_proc_maps_parse_line(line, len, &m);
	check(rc == 0 || rc == -1);
	if (rc == 0) {
		/* The path lies in the line, NUL-terminated before its end. */
		check(m.path >= line && m.path <= line + len);
		check(strlen(m.path) <= (size_t)(line + len - m.path));
		check(!isspace((unsigned char)m.path[0]));
		check((m.prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) == 0);

		int prot, shared;
		expected_perms(orig, &prot, &shared);
		check(m.prot == prot && m.shared == shared);

		/* What was cut is exactly " (deleted)". */
		size_t off = (size_t)(m.path - line), pl = strlen(m.path);
		if (m.deleted)
			check(strncmp(orig + off + pl, " (deleted)", 10) == 0);
		else
			check(strncmp(orig + off, m.path, pl) == 0);

		round_trip(&m);
	}
	free(orig);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	/* Line by line, each with its newline, as getline() splits them. */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		parse_line(p, len);
		p += len;
	}
	return 0;
}
