/*
 * The files behind mapped objects: found by build-id (util/modfile.h),
 * opened once with libelf and libdw, their PT_LOAD headers and CFI kept
 * on the object for the rest of the segment.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/modfile.h"
#include "unwind/internal.h"

void sp_unwinder_free_object(void *priv)
{
	struct modstate *ms = priv;
	if (!ms)
		return;
	sp_unwind_rules_free(ms);
	free(ms->loads);
	if (ms->dw)
		dwarf_end(ms->dw);
	if (ms->eh)
		dwarf_cfi_end(ms->eh);
	if (ms->elf)
		elf_end(ms->elf);
	if (ms->fd >= 0)
		close(ms->fd);
	free(ms->image);
	free(ms);
}

/* Reads the PT_LOAD headers and the CFI of an opened ELF file. */
static void setup_elf(struct modstate *ms)
{
	size_t nph = 0;
	if (elf_getphdrnum(ms->elf, &nph) == 0 && nph > 0) {
		ms->loads = calloc(nph, sizeof(*ms->loads));
		for (size_t i = 0; ms->loads && i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(ms->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				ms->loads[ms->nloads++] = (struct load){ ph.p_offset, ph.p_vaddr,
									 ph.p_filesz };
		}
	}
	ms->eh = dwarf_getcfi_elf(ms->elf);
	ms->dw = dwarf_begin_elf(ms->elf, DWARF_C_READ, NULL);
	if (ms->dw)
		ms->dbg = dwarf_getcfi(ms->dw);
}

/* This process's vDSO: the same image as the recording's, in this boot. */
static bool load_own_vdso(struct modstate *ms)
{
	size_t size;
	const void *img = sp_vdso_image(&size);
	if (!img || !(ms->image = malloc(size)))
		return false;
	memcpy(ms->image, img, size);
	ms->elf = elf_memory(ms->image, size);
	return ms->elf != NULL;
}

struct modstate *sp_unwind_module(struct sp_unwinder *u, struct sp_object *obj)
{
	if (obj->priv)
		return obj->priv;
	struct modstate *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return NULL;
	ms->fd = -1;
	ms->state = M_MISSING;
	sp_u64map_init(&ms->rules);
	obj->priv = ms;
	if (obj->anon)
		return ms;
	if (obj->vdso) {
		if (u->o.this_host && load_own_vdso(ms)) {
			ms->state = M_OK;
			setup_elf(ms);
		}
		return ms;
	}
	struct sp_modfile_search search = { u->o.module_dirs, u->o.nmodule_dirs, u->o.root,
					    u->o.this_host };
	char found[4096];
	bool mismatch;
	int fd = sp_modfile_open(&search, obj->path, obj->build_id, obj->build_id_len,
				 obj->content_id, found, sizeof(found), &mismatch);
	if (fd >= 0) {
		ms->fd = fd;
		ms->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (ms->elf && elf_kind(ms->elf) == ELF_K_ELF) {
			ms->state = M_OK;
			setup_elf(ms);
			u->st.modules_opened++;
			return ms;
		}
		if (ms->elf)
			elf_end(ms->elf);
		ms->elf = NULL;
		close(fd);
		ms->fd = -1;
	}
	ms->state = mismatch ? M_MISMATCH : M_MISSING;
	if (mismatch)
		u->st.modules_mismatched++;
	else
		u->st.modules_missing++;
	return ms;
}

uint64_t sp_unwind_rel(struct sp_unwinder *u, const struct sp_mapping *m, uint64_t addr)
{
	uint64_t off = addr - m->start + m->pgoff;
	if (m->obj->anon)
		return off;
	struct modstate *ms = sp_unwind_module(u, m->obj);
	if (ms)
		for (size_t i = 0; i < ms->nloads; i++)
			if (off >= ms->loads[i].off && off - ms->loads[i].off < ms->loads[i].filesz)
				return off - ms->loads[i].off + ms->loads[i].vaddr;
	return off;
}
