/* SPDX-License-Identifier: MIT
 * Names, inline frames and lines for addresses of one ELF module, with
 * libdwfl finding its separate debug file (build-id directories,
 * .gnu_debuglink, debuginfod when DEBUGINFOD_URLS is set) and reading
 * MiniDebugInfo; for a stripped module, a Go module's .gopclntab, then
 * the function starts of .eh_frame.  Symbols are searched in a table
 * sorted once; every result is cached by address.  The sym layer.
 */
#ifndef SP_ELFSYM_H
#define SP_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/records.h"

struct sp_elfsym_options {
	const char *debuginfo_path;	/* libdwfl's search path, e.g. "-:.debug:/usr/lib/debug" */
	bool inline_frames, lines, demangle;
	/*
	 * A directory in build-id layout where a separate debug file with
	 * compressed sections is kept decompressed, so that later runs need
	 * not inflate it again; it should come first in debuginfo_path.
	 * NULL: none.
	 */
	const char *cache_dir;
	/* Whether a debug file not found here is asked of debuginfod's servers. */
	bool debuginfod;
};

struct sp_symres {
	const char *name;	/* NULL: no symbol covers the address */
	uint64_t offset;	/* from the symbol's (or function's) start */
	/* "symtab", "dynsym", "debuginfo", "gopclntab" or "function-start" */
	const char *origin;
	/*
	 * With no name: the function the address lies in starts at this
	 * offset in the file (its .eh_frame FDE says so).  Origin
	 * "function-start".
	 */
	bool has_start;
	uint64_t start_off;
	const char *file;	/* NULL when unknown */
	unsigned line;
	struct sp_inline *inl;	/* innermost first */
	size_t ninl;
};

struct sp_elfsym;

/*
 * Opens a module from its file (fd, consumed; path names it).  Returns
 * NULL when the file is not usable ELF or memory runs out.
 */
struct sp_elfsym *sp_elfsym_open(int fd, const char *path,
				 const struct sp_elfsym_options *o);
void sp_elfsym_free(struct sp_elfsym *e);

/*
 * Resolves an ELF virtual address (already minus one for a return
 * address).  The result stays valid until sp_elfsym_free().
 */
const struct sp_symres *sp_elfsym_lookup(struct sp_elfsym *e, uint64_t addr);

/* Whether DWARF debug information was found (in the file or elsewhere). */
bool sp_elfsym_has_debuginfo(struct sp_elfsym *e);

/*
 * Why a table of the module that names functions (its .eh_frame_hdr, a
 * Go module's .gopclntab) was found unusable and is ignored, e.g.
 * ".eh_frame_hdr: table not sorted"; NULL when none was.
 */
const char *sp_elfsym_problem(const struct sp_elfsym *e);

/* A demangled copy of a C++ or Rust name (malloc'd), or NULL. */
char *sp_demangle(const char *name);

#endif
