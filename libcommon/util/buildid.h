/* SPDX-License-Identifier: MIT */
/* Reading the GNU build-id note of an ELF file, and finding its sections.  The util layer. */
#ifndef SP_BUILDID_H
#define SP_BUILDID_H

#include <stddef.h>
#include <gelf.h>

/* The longest build-id kept (SHA-1 is 20 bytes; a few linkers use more). */
#define SP_BUILD_ID_MAX 64

/*
 * Sets libelf's version, once in the process even when called on
 * several threads; every user of libelf calls it before its first Elf.
 */
void sp_libelf_init(void);

/*
 * Reads the build-id of the ELF file open on fd into id (at most
 * SP_BUILD_ID_MAX bytes).  Returns its length, 0 when the file has none,
 * -1 when it is not a readable ELF file.
 */
int sp_build_id_fd(int fd, unsigned char *id);

/*
 * The same for an ELF image in memory, such as a vDSO: size bytes at
 * image, which libelf may convert in place (give it a copy of bytes that
 * must stay as they are).
 */
int sp_build_id_mem(void *image, size_t size, unsigned char *id);

/* The same for a path; -1 also when the file cannot be opened. */
int sp_build_id_path(const char *path, unsigned char *id);

/*
 * The section of elf named name, its header in *sh; NULL when the file
 * has none (or no section headers).
 */
Elf_Scn *sp_elf_section(Elf *elf, const char *name, GElf_Shdr *sh);

#endif
