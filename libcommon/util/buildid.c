/* Reading GNU build-id notes with libelf (see buildid.h). */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "util/buildid.h"

/* Looks for NT_GNU_BUILD_ID in one block of notes. */
static int note_build_id(Elf_Data *data, unsigned char *id)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;
	while (data && off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0) {
			size_t n = nh.n_descsz > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX : nh.n_descsz;
			memcpy(id, (char *)data->d_buf + desc_off, n);
			return (int)n;
		}
	}
	return 0;
}

static void init_libelf(void)
{
	static int initialised;
	if (!initialised) {
		elf_version(EV_CURRENT);
		initialised = 1;
	}
}

/* The build-id of an opened ELF, which it ends. */
static int elf_build_id(Elf *elf, unsigned char *id)
{
	if (!elf)
		return -1;
	int found = -1;
	if (elf_kind(elf) == ELF_K_ELF) {
		found = 0;
		/* Program headers first: what the loader maps. */
		size_t nph = 0;
		if (elf_getphdrnum(elf, &nph) == 0)
			for (size_t i = 0; i < nph && !found; i++) {
				GElf_Phdr ph;
				if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
					continue;
				Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
								   ph.p_filesz, ELF_T_NHDR);
				found = note_build_id(d, id);
			}
		/* Then note sections, for files without program headers. */
		Elf_Scn *scn = NULL;
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
				found = note_build_id(elf_getdata(scn, NULL), id);
		}
	}
	elf_end(elf);
	return found;
}

int sp_build_id_fd(int fd, unsigned char *id)
{
	init_libelf();
	return elf_build_id(elf_begin(fd, ELF_C_READ_MMAP, NULL), id);
}

int sp_build_id_mem(void *image, size_t size, unsigned char *id)
{
	init_libelf();
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
