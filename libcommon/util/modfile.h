/* SPDX-License-Identifier: MIT
 * Finding the file of a recorded module: in build-id directories, under a
 * root, at its recorded path; a file is used only when its build-id is
 * the recorded one.  The util layer.
 */
#ifndef SP_MODFILE_H
#define SP_MODFILE_H

#include <stdbool.h>
#include <stddef.h>

struct sp_modfile_search {
	const char *const *dirs;	/* build-id layout: DIR/.build-id/xx/rest */
	size_t ndirs;
	const char *root;		/* recorded paths are under it; NULL: / */
	/*
	 * Whether a module recorded without any identity may be used as
	 * found: only for a stream of this host and boot, where the file at
	 * the path is most likely the one that was mapped.
	 */
	bool trust_unidentified;
	/* The array dirs points to when filled by sp_modfile_search_add_dir(). */
	const char **own_dirs;
	size_t alloc_dirs;
};

/*
 * The module-search options the tools share, so that --root and
 * --module-dir (and --archive, which is a module dir) mean the same in
 * each: sp_modfile_search_init() empties s; sp_modfile_search_set_root()
 * takes a --root DIR ("/" is no root at all); sp_modfile_search_add_dir()
 * appends a --module-dir DIR and returns 0, or -1 when memory runs out.
 * The strings are not copied: they must outlive s (option arguments do).
 * sp_modfile_search_release() frees what add_dir allocated.
 */
void sp_modfile_search_init(struct sp_modfile_search *s);
void sp_modfile_search_set_root(struct sp_modfile_search *s, const char *root);
int sp_modfile_search_add_dir(struct sp_modfile_search *s, const char *dir);
void sp_modfile_search_release(struct sp_modfile_search *s);

/*
 * Opens the file of a module recorded at path with build-id bid (bidlen
 * bytes, 0 when unknown).  Candidates, in order: each DIR/.build-id/xx/rest,
 * root + path, and path itself when root is set and a build-id can vouch
 * for it.  With content set, bid is not a build-id but the SHA-1 of the
 * whole file (the identity of a file without one).
 * Only regular files are used (a FIFO or a device named by a stream is
 * skipped without blocking).
 * Returns an open fd and the path used in found, or -1: then
 * *mismatch says whether a candidate existed with another build-id.
 */
int sp_modfile_open(const struct sp_modfile_search *s, const char *path,
		    const unsigned char *bid, int bidlen, bool content, char *found,
		    size_t foundlen, bool *mismatch);

/*
 * A process that mapped the module when it was recorded: its pid and the
 * mapping's [start, end) (end 0: unknown), in this host's PID namespace.
 */
struct sp_modfile_proc {
	unsigned pid;
	unsigned long long start, end;
};

/*
 * sp_modfile_open(), and then, when no candidate matched, for a stream of
 * this host and boot (s->trust_unidentified) and a module with an
 * identity, the file as that process still maps it: /proc/PID/map_files/
 * START-END, then PATH inside /proc/PID/root (a process in a container
 * maps files that only its own mount namespace has).  These candidates,
 * too, are used only when their identity is the recorded one.  proc may be
 * NULL: then this is sp_modfile_open().  When it returns -1, errno is
 * EACCES or EPERM if one of the process's candidates could not be opened
 * for lack of permission (a container's root needs ptrace access and
 * search rights to its directories; map_files needs CAP_SYS_ADMIN).
 */
int sp_modfile_open_proc(const struct sp_modfile_search *s, const char *path,
			 const unsigned char *bid, int bidlen, bool content,
			 const struct sp_modfile_proc *proc, char *found, size_t foundlen,
			 bool *mismatch);

/*
 * This process's vDSO image, mapped by the kernel: in the boot a stream
 * was recorded in, the image its processes had.  Returns its address and
 * sets *size (the ELF headers, sections and loaded segments), or NULL
 * when there is none or it does not look like 64-bit ELF.  The memory
 * stays valid for the life of the process and is read-only.
 */
const void *sp_vdso_image(size_t *size);

/* DIR/.build-id/xx/rest plus suffix ("" or ".debug") into out. */
void sp_build_id_path_in(const char *dir, const unsigned char *bid, int bidlen,
			 const char *suffix, char *out, size_t len);

#endif
