/* SPDX-License-Identifier: MIT */
/* Finding module files (see modfile.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buildid.h"
#include "util/modfile.h"
#include "util/procns.h"
#include "util/sha1.h"

void sp_modfile_search_init(struct sp_modfile_search *s)
{
	memset(s, 0, sizeof(*s));
}

void sp_modfile_search_set_root(struct sp_modfile_search *s, const char *root)
{
	s->root = root && strcmp(root, "/") != 0 ? root : NULL;
}

int sp_modfile_search_add_dir(struct sp_modfile_search *s, const char *dir)
{
	if (SP_ALLOC_GROW(s->own_dirs, s->ndirs + 1, s->alloc_dirs) < 0)
		return -1;
	s->own_dirs[s->ndirs++] = dir;
	s->dirs = s->own_dirs;
	return 0;
}

void sp_modfile_search_release(struct sp_modfile_search *s)
{
	free(s->own_dirs);
	sp_modfile_search_init(s);
}

#define VDSO_MAX (1u << 20)

const void *sp_vdso_image(size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return NULL;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	size_t n = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > n)
			n = ph[i].p_offset + ph[i].p_filesz;
	/* A vDSO is a few pages; anything larger is not one. */
	if (n == 0 || n > VDSO_MAX)
		return NULL;
	*size = n;
	return eh;
}

void sp_build_id_path_in(const char *dir, const unsigned char *bid, int bidlen,
			 const char *suffix, char *out, size_t len)
{
	int k = snprintf(out, len, "%s/.build-id/%02x/", dir, bidlen > 0 ? bid[0] : 0);
	for (int i = 1; i < bidlen && k > 0 && (size_t)k + 3 < len; i++)
		k += snprintf(out + k, len - (size_t)k, "%02x", bid[i]);
	if (k > 0 && (size_t)k < len)
		snprintf(out + k, len - (size_t)k, "%s", suffix);
}

/*
 * Whether fd is a regular file of identity bid (any identity when bidlen
 * is 0); a readable identity that differs sets *mismatch.
 */
static bool identity_is(int fd, const unsigned char *bid, int bidlen, bool content,
			bool *mismatch)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return false;
	unsigned char id[SP_BUILD_ID_MAX];
	int n = content ? (sp_sha1_fd(fd, id) == 0 ? 20 : -1) : sp_build_id_fd(fd, id);
	lseek(fd, 0, SEEK_SET);
	if (n < 0 || (bidlen > 0 && (n != bidlen || memcmp(id, bid, (size_t)n) != 0))) {
		*mismatch |= n >= 0;
		return false;
	}
	return true;
}

int sp_modfile_open(const struct sp_modfile_search *s, const char *path,
		    const unsigned char *bid, int bidlen, bool content, char *found,
		    size_t foundlen, bool *mismatch)
{
	size_t ncand = s->ndirs + 1 + (s->root && bidlen > 0);
	*mismatch = false;
	if (bidlen <= 0 && !s->trust_unidentified)
		return -1;
	for (size_t c = 0; c < ncand; c++) {
		char cand[4096];
		if (c < s->ndirs) {
			if (bidlen < 2)
				continue;
			sp_build_id_path_in(s->dirs[c], bid, bidlen, "", cand, sizeof(cand));
		} else if (c == s->ndirs) {
			snprintf(cand, sizeof(cand), "%s%s", s->root ? s->root : "", path);
		} else {
			snprintf(cand, sizeof(cand), "%s", path);
		}
		int fd = open(cand, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (!identity_is(fd, bid, bidlen, content, mismatch)) {
			close(fd);
			continue;
		}
		snprintf(found, foundlen, "%s", cand);
		return fd;
	}
	return -1;
}

int sp_modfile_open_proc(const struct sp_modfile_search *s, const char *path,
			 const unsigned char *bid, int bidlen, bool content,
			 const struct sp_modfile_proc *proc, char *found, size_t foundlen,
			 bool *mismatch)
{
	int fd = sp_modfile_open(s, path, bid, bidlen, content, found, foundlen, mismatch);
	if (fd >= 0 || !proc || !proc->pid || bidlen <= 0 || !s->trust_unidentified ||
	    path[0] != '/')
		return fd;
	/* The pid may have been reused since: the identity decides. */
	int denied = 0;
	for (int c = proc->end ? 0 : 1; c < 2; c++) {
		char cand[4200];
		if (c == 0) {
			snprintf(cand, sizeof(cand), "/proc/%u/map_files/%llx-%llx", proc->pid,
				 proc->start, proc->end);
			fd = open(cand, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		} else {
			snprintf(cand, sizeof(cand), "/proc/%u/root%s", proc->pid, path);
			fd = sp_proc_open_in_root((pid_t)proc->pid, path, O_RDONLY | O_NONBLOCK);
		}
		if (fd < 0 && (errno == EACCES || errno == EPERM))
			denied = errno;
		if (fd < 0)
			continue;
		if (identity_is(fd, bid, bidlen, content, mismatch)) {
			snprintf(found, foundlen, "%s", cand);
			return fd;
		}
		close(fd);
	}
	errno = denied ? denied : ENOENT;
	return -1;
}
