/* SPDX-License-Identifier: MIT
 * gopcln-dump: what sym/gopclntab.c reads of a Go binary's .gopclntab,
 * for tests/037-gopclntab.bats.
 *
 *	gopcln-dump FILE              the layout, then every function:
 *	                              "ENTRY END NAME" (hex addresses)
 *	gopcln-dump FILE ADDR...      each address's function, position and
 *	                              inlined calls, innermost first:
 *	                              "ADDR NAME FILE:LINE" then "  inl NAME FILE:LINE"
 *
 * Exits 0, 1 when the file has no table or an address no function, 2
 * when the table is refused (the reason on stderr).
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unwind/gopclntab.h"

static int dump_all(struct sp_gopclntab *t)
{
	struct sp_gofunc f;
	for (size_t i = 0; i < sp_gopclntab_count(t); i++) {
		uint64_t entry, end;
		if (sp_gopclntab_extent(t, i, &entry, &end) < 0 ||
		    !sp_gopclntab_lookup(t, entry, 0, &f)) {
			printf("%" PRIx64 " ? ?\n", entry);
			continue;
		}
		printf("%" PRIx64 " %" PRIx64 " %s\n", f.entry, f.end, f.name);
	}
	return 0;
}

static int dump_addr(struct sp_gopclntab *t, uint64_t addr)
{
	struct sp_gofunc f;
	if (!sp_gopclntab_lookup(t, addr, SP_GOPCLN_INLINE, &f)) {
		printf("%" PRIx64 " ?\n", addr);
		return 1;
	}
	printf("%" PRIx64 " %s %s:%u\n", addr, f.name, f.file ? f.file : "?", f.line);
	for (size_t i = 0; i < f.ninl; i++)
		printf("  inl %s %s:%u\n", f.inl[i].name,
		       f.inl[i].file ? f.inl[i].file : "?", f.inl[i].line);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gopcln-dump FILE [ADDR...]\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	int fd = open(argv[1], O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!elf) {
		fprintf(stderr, "gopcln-dump: cannot open '%s'\n", argv[1]);
		return 2;
	}
	const char *why;
	struct sp_gopclntab *t = sp_gopclntab_open(elf, &why);
	int rc = 0;
	if (!t) {
		fprintf(stderr, "gopcln-dump: '%s': %s\n", argv[1], why ? why : "no Go table");
		rc = why ? 2 : 1;
	} else if (argc == 2) {
		printf("layout %s functions %zu inline %s\n", sp_gopclntab_layout(t),
		       sp_gopclntab_count(t), sp_gopclntab_has_inline(t) ? "yes" : "no");
		rc = dump_all(t);
	} else {
		for (int i = 2; i < argc; i++)
			rc |= dump_addr(t, strtoull(argv[i], NULL, 16));
	}
	sp_gopclntab_free(t);
	elf_end(elf);
	close(fd);
	return rc;
}
