/* SPDX-License-Identifier: MIT */
/* The archive of exact files (see archive.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/archive.h"
#include "util/buildid.h"
#include "util/error.h"
#include "util/modfile.h"
#include "util/procns.h"
#include "util/sha1.h"

struct sp_archive {
	char *dir;
	struct sp_error err;
};


/* mkdir -p for the directories of path (not its last component). */
static int make_parents(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

struct sp_archive *sp_archive_new(const char *dir)
{
	char probe[4096];
	snprintf(probe, sizeof(probe), "%s/perf-maps/x", dir);
	if (make_parents(probe) < 0)
		return NULL;
	snprintf(probe, sizeof(probe), "%s/.build-id/x", dir);
	if (make_parents(probe) < 0)
		return NULL;
	struct sp_archive *a = calloc(1, sizeof(*a));
	if (!a || !(a->dir = strdup(dir))) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void sp_archive_free(struct sp_archive *a)
{
	if (a) {
		free(a->dir);
		free(a);
	}
}

const char *sp_archive_error(const struct sp_archive *a)
{
	return sp_error_message(&a->err);
}

const char *sp_archive_dir(const struct sp_archive *a)
{
	return a->dir;
}

/*
 * The mapped file: through map_files first, then the path as the process
 * sees it (inside its root: in a container, the host's file at that path
 * is another one), then the path.  The caller checks the identity.
 */
static int open_mapped(pid_t pid, uint64_t start, uint64_t end, const char *path)
{
	char mf[128];
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	int fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fd = sp_proc_open_in_root(pid, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat sb;
	if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int sp_archive_content_id(pid_t pid, uint64_t start, uint64_t end, const char *path,
			  unsigned char out[20])
{
	int fd = open_mapped(pid, start, end, path);
	if (fd < 0)
		return -1;
	int rc = sp_sha1_fd(fd, out);
	close(fd);
	return rc;
}

/* Copies fd's contents to dst through a temporary file and a rename. */
static int copy_to(struct sp_archive *a, int fd, const char *dst, mode_t mode)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", dst, (int)getpid());
	if (make_parents(dst) < 0)
		return sp_error_errno(&a->err, "cannot create the directories of '%s'", dst);
	/* A fresh file: a planted symlink or file under that name is not written through. */
	unlink(tmp);
	int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0)
		return sp_error_errno(&a->err, "cannot create '%s'", tmp);
	char buf[65536];
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0) {
				int e = errno;
				close(out);
				unlink(tmp);
				return (errno = e, sp_error_errno(&a->err, "cannot write '%s'", tmp));
			}
			off += w;
		}
	if (n < 0 || close(out) < 0 || rename(tmp, dst) < 0) {
		int e = errno;
		unlink(tmp);
		return (errno = e, sp_error_errno(&a->err, "cannot archive '%s'", dst));
	}
	return 0;
}

int sp_archive_module(struct sp_archive *a, pid_t pid, uint64_t start, uint64_t end,
		      const char *path, const unsigned char *id, int idlen, bool content,
		      char *rel, size_t rellen, bool *debug)
{
	*debug = false;
	if (idlen < 2)
		return sp_error_set(&a->err, SP_ERR_NOT_FOUND,
				    "'%s' has no identity to archive it under", path);
	char dst[4096];
	sp_build_id_path_in(a->dir, id, idlen, "", dst, sizeof(dst));
	snprintf(rel, rellen, "%s", dst + strlen(a->dir) + 1);
	struct stat sb;
	if (stat(dst, &sb) == 0)
		return 0;	/* nothing is stored twice */
	int fd = open_mapped(pid, start, end, path);
	if (fd < 0)
		return sp_error_errno(&a->err, "cannot read the mapped file '%s'", path);
	/* The copy must be the file that was sampled. */
	unsigned char got[SP_BUILD_ID_MAX];
	int n = content ? (sp_sha1_fd(fd, got) == 0 ? 20 : -1) : sp_build_id_fd(fd, got);
	if (n != idlen || memcmp(got, id, (size_t)idlen) != 0) {
		close(fd);
		return sp_error_set(&a->err, SP_ERR_MISMATCH,
				    "'%s' is not the file that was mapped (its identity differs)", path);
	}
	int rc = copy_to(a, fd, dst, 0644);
	close(fd);
	if (rc < 0)
		return -1;
	/* Its separate debug file, when one is installed here. */
	char dbg[4096], dbgdst[4200];
	sp_build_id_path_in("/usr/lib/debug", id, idlen, ".debug", dbg, sizeof(dbg));
	int dfd = content ? -1 : open(dbg, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (dfd >= 0) {
		snprintf(dbgdst, sizeof(dbgdst), "%s.debug", dst);
		*debug = copy_to(a, dfd, dbgdst, 0644) == 0;
		close(dfd);
	}
	return 1;
}

int sp_archive_copy(struct sp_archive *a, const char *src, const char *rel, mode_t mode,
		    bool owner_check, uid_t uid)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return sp_error_errno(&a->err, "cannot read '%s'", src);
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (owner_check && ((sb.st_uid != 0 && sb.st_uid != uid) || (sb.st_mode & S_IWOTH)))) {
		close(fd);
		return sp_error_set(&a->err, SP_ERR_PERMISSION,
				    "'%s' is not a regular file of root or the process's user", src);
	}
	char dst[4096];
	snprintf(dst, sizeof(dst), "%s/%s", a->dir, rel);
	int rc = copy_to(a, fd, dst, mode);
	close(fd);
	return rc;
}

int sp_archive_copy_fd(struct sp_archive *a, int fd, const char *rel, mode_t mode)
{
	char dst[4096];
	snprintf(dst, sizeof(dst), "%s/%s", a->dir, rel);
	return copy_to(a, fd, dst, mode);
}
