/* SPDX-License-Identifier: MIT */
/* Reading GNU build-id notes with elfutils (see buildid.h). */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "util/buildid.h"

static void set_version(void)
{
	elf_version(EV_CURRENT);
}

void sp_libelf_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, set_version);
}

/*
 * The build-id of an opened ELF, which it ends: elfutils' own note walk
 * (the loaded notes first, then note sections), the one eu-readelf and
 * debuginfod use, rather than one of ours.
 */
static int elf_build_id(Elf *elf, unsigned char *id)
{
	if (!elf)
		return -1;
	int found = -1;
	if (elf_kind(elf) == ELF_K_ELF) {
		const void *bid;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &bid);
		found = 0;
		if (n > 0) {
			found = n > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX : (int)n;
			memcpy(id, bid, (size_t)found);
		}
	}
	elf_end(elf);
	return found;
}

int sp_build_id_fd(int fd, unsigned char *id)
{
	sp_libelf_init();
	return elf_build_id(elf_begin(fd, ELF_C_READ_MMAP, NULL), id);
}

int sp_build_id_mem(void *image, size_t size, unsigned char *id)
{
	sp_libelf_init();
	return elf_build_id(elf_memory(image, size), id);
}

int sp_build_id_path(const char *path, unsigned char *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int n = sp_build_id_fd(fd, id);
	close(fd);
	return n;
}

Elf_Scn *sp_elf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		if (gelf_getshdr(scn, sh) && (n = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}
