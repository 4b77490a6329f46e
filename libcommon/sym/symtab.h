/* SPDX-License-Identifier: MIT
 * Address-sorted symbol tables, built once and searched by bisection:
 * for ELF symbols, a saved kallsyms, and JIT perf maps.  The sym layer.
 */
#ifndef SP_SYMTAB_H
#define SP_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct sp_sym {
	uint64_t start, end;	/* [start, end); end is start + size, or the next start */
	const char *name;	/* into the table's string storage */
	uint32_t order;		/* insertion order: a later symbol wins an overlap */
	bool sized;		/* end is start + size, not a guess */
	uint64_t limit;		/* for a symbol without a size: where it ends at most */
};

struct sp_symtab {
	struct sp_sym *v;
	size_t n, cap;		/* cap: elements of v allocated */
	char **chunks;		/* string storage */
	size_t nchunks, alloc_chunks, chunk_used, chunk_cap;
	bool sorted;
	/*
	 * reach[i]: the largest end of v[0..i], so that a lookup stops going
	 * back once no symbol before could hold the address.  NULL until
	 * sp_symtab_finish(), or when memory ran out.
	 */
	uint64_t *reach;
};

void sp_symtab_init(struct sp_symtab *t);
void sp_symtab_release(struct sp_symtab *t);

/*
 * Adds a symbol; size 0 means "up to the next symbol".  The name is
 * copied.  Returns 0, or -1 when memory runs out.
 */
int sp_symtab_add(struct sp_symtab *t, uint64_t start, uint64_t size,
		  const char *name, size_t namelen);

/* The same, for a symbol without a size that cannot reach past limit. */
int sp_symtab_add_limited(struct sp_symtab *t, uint64_t start, uint64_t limit,
			  const char *name, size_t namelen);

/* Sorts the table; sizes of 0 become the distance to the next symbol. */
void sp_symtab_finish(struct sp_symtab *t);

/* The symbol containing addr (the latest added, on an overlap), or NULL. */
const struct sp_sym *sp_symtab_find(const struct sp_symtab *t, uint64_t addr);

/*
 * Loads a kallsyms file ("ADDR TYPE NAME [MODULE]" lines; text symbols
 * kept) into t and sorts it.  Returns 0, or -1 with the reason in *err:
 * SP_ERR_PERMISSION when every address is zero (it was read without
 * privilege), SP_ERR_BAD_INPUT when it holds no kallsyms line, else
 * SP_ERR_ERRNO or SP_ERR_NOMEM.
 */
int sp_kallsyms_load(const char *path, struct sp_symtab *t, struct sp_error *err);

/*
 * Loads a perf map ("START SIZE NAME" lines, hexadecimal with or without
 * 0x, names with spaces) from fd, which it closes: the caller opens and
 * checks the file once, so it cannot be swapped in between.  Malformed
 * lines are skipped and counted in *skipped.  Returns 0 or -1 (errno set).
 */
int sp_perfmap_load_fd(int fd, struct sp_symtab *t, uint64_t *skipped);

/* Parses one perf-map line; returns false for a malformed one. */
bool sp_perfmap_parse_line(const char *line, size_t len, uint64_t *start,
			   uint64_t *size, const char **name, size_t *namelen);

#endif
