/* SPDX-License-Identifier: MIT
 * An archive of the exact files a recording needs, in build-id layout:
 * DIR/.build-id/xx/rest (the module), DIR/.build-id/xx/rest.debug (its
 * separate debug file), DIR/perf-maps/perf-PID-START.map,
 * DIR/jitdump/jit-PID-START.dump, DIR/kallsyms.
 * Core layer: returns codes, keeps messages on the handle.
 */
#ifndef SP_ARCHIVE_H
#define SP_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_archive;

/* Creates DIR (and its subdirectories) as needed; NULL with errno set. */
struct sp_archive *sp_archive_new(const char *dir);
void sp_archive_free(struct sp_archive *a);
const char *sp_archive_error(const struct sp_archive *a);
const char *sp_archive_dir(const struct sp_archive *a);

/*
 * Keeps the file mapped at [start, end) in pid, read through
 * /proc/PID/map_files (the exact file, even deleted or replaced) or, failing
 * that, at path; verified against id (a build-id, or with content set a
 * SHA-1 of the whole file).  Stores its name relative to the archive in
 * rel.  Returns 1 when it was copied now, 0 when it already was, -1 on
 * failure.  *debug is set when a separate debug file was copied beside it.
 */
int sp_archive_module(struct sp_archive *a, pid_t pid, uint64_t start, uint64_t end,
		      const char *path, const unsigned char *id, int idlen, bool content,
		      char *rel, size_t rellen, bool *debug);

/*
 * The content identity of a mapped file without a build-id: SHA-1 of the
 * whole file, read as sp_archive_module() would.  Returns 0 or -1.
 */
int sp_archive_content_id(pid_t pid, uint64_t start, uint64_t end, const char *path,
			  unsigned char out[20]);

/*
 * Copies src to rel inside the archive (perf maps, kallsyms), with mode.
 * src must be a regular file reached without a symlink; with owner_check
 * it must also belong to root or uid and not be writable by every user
 * (the trust rules of perf maps).  Returns 0 or -1.
 */
int sp_archive_copy(struct sp_archive *a, const char *src, const char *rel, mode_t mode,
		    bool owner_check, uid_t uid);

/* Copies the whole of an open file (a jitdump the caller checked) to rel: 0 or -1. */
int sp_archive_copy_fd(struct sp_archive *a, int fd, const char *rel, mode_t mode);

#endif
