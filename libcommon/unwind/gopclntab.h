/* SPDX-License-Identifier: MIT
 * Go's function table, .gopclntab: the names, extents, file:line tables
 * and inlining trees that every Go binary keeps for the runtime's own
 * tracebacks, even when built with -ldflags="-s -w" (no .symtab, no
 * DWARF).  The unwind layer, as the unwinder steps through Go code
 * without CFI by the table's stack-pointer deltas, and sym names frames
 * from it; no state is kept across lookups but the strings of the last
 * result.
 *
 * Layouts, by the table's magic: 0xfffffffb (Go 1.2 to 1.15),
 * 0xfffffffa (1.16, 1.17), 0xfffffff0 (1.18, 1.19) and 0xfffffff1
 * (1.20 and later), either byte order, pointers of 4 or 8 bytes.
 */
#ifndef SP_UNWIND_GOPCLNTAB_H
#define SP_UNWIND_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_gopclntab;

/* One inlined call at an address: the function inlined, and where in it. */
struct sp_goinline {
	const char *name, *file;
	unsigned line;
};

struct sp_gofunc {
	uint64_t entry, end;	/* ELF virtual addresses, [entry, end) */
	const char *name;	/* as Go prints it: main.(*Server).handle */
	/*
	 * The position in the physical function: the call site of the
	 * outermost inlined call when there is one.  NULL and 0 when not
	 * asked for (no SP_GOPCLN_LINES) or not known.
	 */
	const char *file;
	unsigned line;
	/* Inlined calls at the address, innermost first (SP_GOPCLN_INLINE). */
	const struct sp_goinline *inl;
	size_t ninl;
};

/* The parts of a lookup wanted beyond the name and extent. */
#define SP_GOPCLN_LINES		0x1u	/* file and line */
#define SP_GOPCLN_INLINE	0x2u	/* inlined calls (implies lines) */

/* A piece of the program's image: a section's bytes at its address. */
struct sp_goregion {
	uint64_t vaddr;
	const unsigned char *p;
	size_t len;
	bool data;		/* writable data, where moduledata may be */
};

/*
 * What a table needs of the rest of the image: funcdata (inlining
 * trees) live outside the table, and from Go 1.18 on they are offsets
 * from moduledata.gofunc, found by looking for moduledata in the data
 * regions.  Every field may be zero.
 */
struct sp_goimage {
	const struct sp_goregion *regions;
	size_t nregions;
	/* The .text section's address, for a table whose textStart is 0
	   in the file (a position-independent build fills it in at run
	   time). */
	uint64_t text;
	/* Go's minor version if known (from .go.buildinfo), else 0: the
	   1.2 layout's inline-tree indices changed between releases, so
	   its inline frames are read only for 1.15. */
	int go_minor;
};

/*
 * The table of an ELF file (libelf handle, not consumed; the table
 * points into the handle's section data, so the handle must outlive
 * it).  Returns NULL when the file has no Go table (*why = NULL) or
 * when it is unusable (*why = a static string saying why: "truncated",
 * "function table not sorted", "offset out of range", "unknown magic
 * 0x...").  The table is found by its section (.gopclntab, or
 * .data.rel.ro.gopclntab in a position-independent executable) or, in
 * a program the system's linker linked, between the symbols
 * runtime.pclntab and runtime.epclntab; so an ELF file without section
 * headers has no table here.  The "0x..." reason is kept per thread
 * until the next such failure.
 */
struct sp_gopclntab *sp_gopclntab_open(Elf *elf, const char **why);

/*
 * The same from the section's bytes p[0..len) at vaddr, plus (img may
 * be NULL) other parts of the image.  The table points into p and the
 * regions' bytes (the array of regions is copied): they must outlive it.
 */
struct sp_gopclntab *sp_gopclntab_from_bytes(const unsigned char *p, size_t len,
		uint64_t vaddr, const struct sp_goimage *img, const char **why);

void sp_gopclntab_free(struct sp_gopclntab *t);

/*
 * The function containing addr (an ELF vaddr, already minus one for a
 * return address): 1 with *out filled, valid until the next lookup or
 * free; 0 when no function holds addr or its entry is damaged.  flags:
 * SP_GOPCLN_LINES, SP_GOPCLN_INLINE, or 0 for the name alone (fastest).
 * A lookup writes the table's result storage: one thread at a time.
 */
int sp_gopclntab_lookup(struct sp_gopclntab *t, uint64_t addr, unsigned flags,
			struct sp_gofunc *out);

/*
 * How far the stack pointer at addr (an ELF vaddr, of an instruction
 * that was interrupted, not a return address) lies below its value at
 * the function's entry, from the function's pc-sp table: where the
 * return address is, on a machine whose call pushes it.  1 with *delta
 * set; 0 when no function holds addr or its table says nothing there.
 */
int sp_gopclntab_spdelta(const struct sp_gopclntab *t, uint64_t addr, int64_t *delta);

/*
 * Whether the function holding addr is one where Go's own tracebacks
 * stop: the first frame of a goroutine (runtime.goexit), of a thread
 * (runtime.mstart) or of the program (runtime.rt0_go).
 */
bool sp_gopclntab_topframe(const struct sp_gopclntab *t, uint64_t addr);

/* The number of functions, and the i-th one's extent (for dumping). */
size_t sp_gopclntab_count(const struct sp_gopclntab *t);
int sp_gopclntab_extent(const struct sp_gopclntab *t, size_t i,
			uint64_t *entry, uint64_t *end);

/* Go version layout detected, "1.2", "1.16", "1.18" or "1.20". */
const char *sp_gopclntab_layout(const struct sp_gopclntab *t);

/* Whether inline frames can be read (moduledata found, for 1.18+). */
bool sp_gopclntab_has_inline(const struct sp_gopclntab *t);

/*
 * A Go symbol name as Go's traceback prints it: the linker's .abi0 or
 * .abiinternal suffix dropped, a generic instantiation's shape
 * arguments shown as [...].  A new string (free it), or NULL when the
 * name needs no change or memory ran out.
 */
char *sp_go_name(const char *s);

#endif
