/* SPDX-License-Identifier: MIT
 * struct sp_tail: a stream read while it is written, in batches of what
 * is complete (source.c, following), from a path or from a file-backed
 * recorder, whose images it takes over.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"

struct sp_tail {
	struct sp_source *src;
	int fd;
	struct sp_images *images;	/* a recorder's, or NULL */
};

static struct sp_tail *tail_new(const char *path, struct sp_images *im)
{
	struct sp_error err = { 0 };
	struct sp_tail *t = calloc(1, sizeof(*t));
	if (!t) {
		sp_images_free(im);
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	t->images = im;
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (t->fd < 0) {
		int e = errno;
		sp_error_errno(&err, "cannot open '%s'", path);
		if (e == ENOENT)
			err.code = SP_ERR_NOT_FOUND;
	} else if (fstat(t->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sp_error_set(&err, SP_ERR_BAD_INPUT, "'%s' is not a regular file: a tail "
			     "follows a file as it grows", path);
	} else {
		t->src = sp_source_new(t, t->fd, path, true, im ? sp_images_dir(im) : NULL, &err);
	}
	if (!t->src) {
		sp_tail_close(t);
		sp_error_publish(&err);
		return NULL;
	}
	return t;
}

struct sp_tail *sp_tail_open(const char *path)
{
	SP_API_CHECK(path, NULL);
	return tail_new(path, NULL);
}

struct sp_tail *sp_recorder_tail(struct sp_recorder *r)
{
	SP_API_CHECK(r, NULL);
	struct sp_images *im = NULL;
	if (sp_recorder_take_images(r, &im) < 0)
		return NULL;
	const char *path = sp_recorder_path(r);
	if (!path) {
		sp_images_free(im);
		sp_error_publish_new(SP_ERR_STATE, "%s: the recorder writes to a descriptor, "
				     "not a file", __func__);
		return NULL;
	}
	return tail_new(path, im);
}

void sp_tail_close(struct sp_tail *t)
{
	if (!t)
		return;
	sp_source_free(t->src);
	if (t->fd >= 0)
		close(t->fd);
	sp_images_free(t->images);
	free(t);
}

int sp_tail_poll(struct sp_tail *t, const struct sp_batch **b)
{
	SP_API_CHECK(t, -1);
	SP_API_CHECK(b, -1);
	int rc = sp_source_next(t->src, b);
	if (rc < 0)
		return sp_error_publish(sp_source_error(t->src));
	return rc;
}

int sp_tail_metadata(struct sp_tail *t, struct sp_metadata *m)
{
	SP_API_CHECK(t, -1);
	SP_API_CHECK(m, -1);
	if (sp_source_metadata(t->src, m) < 0)
		return sp_error_publish(sp_source_error(t->src));
	return 0;
}

size_t sp_tail_runtimes(struct sp_tail *t, const struct sp_runtime **r)
{
	if (r)
		*r = NULL;
	SP_API_CHECK(t, 0);
	SP_API_CHECK(r, 0);
	return sp_source_runtimes(t->src, r);
}

const char *sp_tail_images_dir(const struct sp_tail *t)
{
	return t && t->images ? sp_images_dir(t->images) : NULL;
}
