/* SPDX-License-Identifier: MIT
 * fuzz-kallsyms: the input as a saved kallsyms file: sp_kallsyms_load()
 * reads it from /proc/self/fd/N of a memfd holding it, then addresses
 * are looked up in the table.
 *
 * It checks that
 *   - the result is 0 or -1, with an error code of the table and a
 *     message exactly when it is not 0;
 *   - a loaded table is sorted, no name holds a blank, and every
 *     symbol covers at least its first byte (but for one starting at
 *     the last address, which covers none);
 *   - sp_symtab_find() returns a symbol containing the address, and for
 *     a table of at most 64 symbols exactly the latest added of those
 *     containing it (none when none does).
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/symtab.h"

static void check(int cond)
{
	if (!cond)
		abort();
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
	int fd = memfd_create("fuzz-kallsyms", MFD_CLOEXEC);
	check(fd >= 0);
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, data + done, size - done);
		check(k > 0);
		done += (size_t)k;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	struct sp_symtab t;
	struct sp_error err;
	sp_symtab_init(&t);
	memset(&err, 'x', sizeof(err));
	int rc = sp_kallsyms_load(path, &t, &err);
	check(rc == 0 || rc == -1);
	if (rc != 0) {
		check(err.code == SP_ERR_PERMISSION || err.code == SP_ERR_BAD_INPUT ||
		      err.code == SP_ERR_ERRNO || err.code == SP_ERR_NOMEM);
		check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL && err.msg[0] != '\0');
	} else {
		check(t.sorted);
		for (size_t i = 0; i < t.n; i++) {
			const struct sp_sym *s = &t.v[i];
			check(strpbrk(s->name, " \t\n") == NULL);
			check(s->end > s->start || (s->start == UINT64_MAX && s->end == 0));
			if (i > 0)
				check(t.v[i - 1].start < s->start ||
				      (t.v[i - 1].start == s->start &&
				       t.v[i - 1].order < s->order));
		}
		for (size_t i = 0; i < t.n && i < 16; i++) {
			lookup(&t, t.v[i].start);
			lookup(&t, t.v[i].start - 1);
			lookup(&t, t.v[i].end - 1);
			lookup(&t, t.v[i].end);
		}
		lookup(&t, 0);
		lookup(&t, UINT64_MAX);
		if (size >= 8) {
			uint64_t a;
			memcpy(&a, data + size - 8, 8);
			lookup(&t, a);
		}
	}
	sp_symtab_release(&t);
	close(fd);
	return 0;
}
