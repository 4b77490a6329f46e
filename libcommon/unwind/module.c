/* SPDX-License-Identifier: MIT
 * The files behind mapped objects: found by build-id (util/modfile.h),
 * opened once with libelf and libdw, their PT_LOAD headers and CFI kept
 * on the object for the rest of the segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/buildid.h"
#include "util/modfile.h"
#include "unwind/gopclntab.h"
#include "unwind/internal.h"

void sp_unwinder_free_object(void *priv)
{
	struct modstate *ms = priv;
	if (!ms)
		return;
	sp_unwind_rules_free(ms);
	sp_gopclntab_free(ms->gotab);
	sp_u64map_release(&ms->goframes, NULL);
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

/*
 * A vDSO from a copy of its image: the stream's, or this process's.  An
 * image that is not ELF, or not of the build-id recorded for the object,
 * is not used.
 */
static bool load_vdso_image(struct modstate *ms, const struct sp_object *obj, const void *img,
			    size_t size)
{
	unsigned char bid[SP_BUILD_ID_MAX];
	if (!img || !size || !(ms->image = malloc(size)))
		return false;
	/* libelf may convert the image in place: the build-id is read first. */
	memcpy(ms->image, img, size);
	int n = sp_build_id_mem(ms->image, size, bid);
	if (n >= 0 && (obj->build_id_len <= 0 || (n == obj->build_id_len &&
						  memcmp(bid, obj->build_id, (size_t)n) == 0))) {
		memcpy(ms->image, img, size);
		ms->elf = elf_memory(ms->image, size);
		if (ms->elf && elf_kind(ms->elf) == ELF_K_ELF)
			return true;
	}
	if (ms->elf)
		elf_end(ms->elf);
	ms->elf = NULL;
	free(ms->image);
	ms->image = NULL;
	return false;
}

/*
 * The vDSO: the stream's image of it, or for a stream of this boot (whose
 * image is missing or unusable) this process's own, which the kernel
 * maps into every process of its ABI.
 */
static bool load_vdso(struct sp_unwinder *u, struct modstate *ms, const struct sp_object *obj)
{
	size_t size = 0;
	const void *own;
	ms->image_tried = obj->image;
	if (obj->image && load_vdso_image(ms, obj, obj->image, obj->image_len))
		return true;
	return u->o.this_host && (own = sp_vdso_image(&size)) &&
	       load_vdso_image(ms, obj, own, size);
}

struct modstate *sp_unwind_module_open(struct sp_unwinder *u, struct sp_object *obj)
{
	struct modstate *ms = obj->priv;
	if (ms) {
		/* An image record that came after the vDSO's first frame. */
		if (obj->vdso && ms->state != M_OK && obj->image && obj->image != ms->image_tried &&
		    load_vdso(u, ms, obj)) {
			ms->state = M_OK;
			setup_elf(ms);
		}
		return ms;
	}
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return NULL;
	ms->fd = -1;
	ms->state = M_MISSING;
	sp_u64map_init(&ms->rules);
	sp_u64map_init(&ms->goframes);
	obj->priv = ms;
	if (obj->anon)
		return ms;
	if (obj->vdso) {
		if (load_vdso(u, ms, obj)) {
			ms->state = M_OK;
			setup_elf(ms);
		}
		return ms;
	}
	struct sp_modfile_search search = { u->o.module_dirs, u->o.nmodule_dirs, u->o.root,
					    u->o.this_host };
	struct sp_modfile_proc live = { obj->last_pid, obj->last_start, obj->last_end };
	char found[4096];
	bool mismatch;
	int fd = sp_modfile_open_proc(&search, obj->path, obj->build_id, obj->build_id_len,
				      obj->content_id, &live, found, sizeof(found), &mismatch);
	if (fd < 0 && live.pid && (errno == EACCES || errno == EPERM) && !u->denied) {
		u->denied_pid = live.pid;
		u->denied_err = errno;
		u->denied = strdup(obj->path);
	}
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
