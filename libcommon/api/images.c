/* SPDX-License-Identifier: MIT
 * The exact images a file-backed recorder keeps for its tail
 * (internal.h): a descriptor on each file with a build-id the targets
 * map, opened as the recorder writes its map record, and a private
 * directory in build-id layout whose entries are links to those
 * descriptors through /proc/self/fd.  The links resolve only in this
 * process, which is where the tail reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/images.h"
#include "util/alloc.h"
#include "util/buildid.h"
#include "util/modfile.h"

/* Files kept at most: each holds a descriptor. */
#define MAX_IMAGES 4096

struct sp_images {
	unsigned refs;		/* the recorder's, and its tail's */
	char *dir;
	int *fds;
	size_t nfds, allocfds;
	/* The links made, by their path, so that each build-id is kept once. */
	char **links;
	size_t nlinks, alloclinks;
	uint64_t failed;
};

struct sp_images *sp_images_new(struct sp_error *err)
{
	struct sp_images *im = calloc(1, sizeof(*im));
	const char *tmp = getenv("TMPDIR");
	char tmpl[4096];
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/libstackpulse-images.XXXXXX", tmp);
	if (!im || !mkdtemp(tmpl)) {
		sp_error_errno(err, "cannot create a directory for the exact images in '%s'", tmp);
		free(im);
		return NULL;
	}
	im->refs = 1;
	im->dir = strdup(tmpl);
	if (!im->dir) {
		rmdir(tmpl);
		free(im);
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	return im;
}

const char *sp_images_dir(const struct sp_images *im)
{
	return im ? im->dir : NULL;
}

static bool have_link(const struct sp_images *im, const char *link)
{
	for (size_t i = 0; i < im->nlinks; i++)
		if (strcmp(im->links[i], link) == 0)
			return true;
	return false;
}

/* Opens the file the target maps: its map_files entry, else inside its root. */
static int open_image(pid_t pid, uint64_t start, uint64_t end, const char *path, bool deleted)
{
	char p[4200];
	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || deleted)
		return fd;
	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd;
}

/* Makes DIR/.build-id/xx, then the link. */
static int make_link(struct sp_images *im, const char *link, int fd)
{
	char dir[4200], target[64];
	snprintf(dir, sizeof(dir), "%s/.build-id", im->dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	snprintf(dir, sizeof(dir), "%s", link);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	return symlink(target, link);
}

void sp_images_note(void *arg, pid_t pid, uint64_t start, uint64_t end, const char *path,
		    bool deleted, const unsigned char *bid, int bidlen)
{
	struct sp_images *im = arg;
	char link[4200];
	unsigned char got[SP_BUILD_ID_MAX];
	if (bidlen <= 0 || !path[0] || path[0] != '/')
		return;
	sp_build_id_path_in(im->dir, bid, bidlen, "", link, sizeof(link));
	if (have_link(im, link) || im->nfds >= MAX_IMAGES)
		return;
	int fd = open_image(pid, start, end, path, deleted);
	/* Only the file that was sampled: a path replaced since does not count. */
	if (fd < 0 || sp_build_id_fd(fd, got) != bidlen || memcmp(got, bid, (size_t)bidlen)) {
		if (fd >= 0)
			close(fd);
		im->failed++;
		return;
	}
	char *copy = strdup(link);
	if (!copy || SP_ALLOC_GROW(im->fds, im->nfds + 1, im->allocfds) < 0 ||
	    SP_ALLOC_GROW(im->links, im->nlinks + 1, im->alloclinks) < 0 ||
	    make_link(im, link, fd) < 0) {
		free(copy);
		close(fd);
		im->failed++;
		return;
	}
	im->fds[im->nfds++] = fd;
	im->links[im->nlinks++] = copy;
}

struct sp_images *sp_images_ref(struct sp_images *im)
{
	im->refs++;
	return im;
}

void sp_images_free(struct sp_images *im)
{
	if (!im || --im->refs > 0)
		return;
	char dir[4200];
	for (size_t i = 0; i < im->nlinks; i++) {
		unlink(im->links[i]);
		snprintf(dir, sizeof(dir), "%s", im->links[i]);
		*strrchr(dir, '/') = '\0';
		rmdir(dir);	/* fails while another link is in it; the last one empties it */
		free(im->links[i]);
	}
	for (size_t i = 0; i < im->nfds; i++)
		close(im->fds[i]);
	snprintf(dir, sizeof(dir), "%s/.build-id", im->dir);
	rmdir(dir);
	rmdir(im->dir);
	free(im->links);
	free(im->fds);
	free(im->dir);
	free(im);
}
