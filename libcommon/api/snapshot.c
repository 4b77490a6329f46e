/* SPDX-License-Identifier: MIT
 * struct sp_snapshot: a finished stream of any stage, read in batches
 * (source.c), and the accessors of the batches and stacks it and a tail
 * hand out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"
#include "stream/vocab.h"

struct sp_snapshot {
	struct sp_source *src;
	int fd;			/* ours to close, or -1 (standard input) */
	bool ended;		/* next returned 0 */
	struct sp_error err;
};

static int open_stream(const char *path, struct sp_error *err)
{
	if (strcmp(path, "-") == 0)
		return STDIN_FILENO;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		sp_error_errno(err, "cannot open '%s'", path);
		if (e == ENOENT)
			err->code = SP_ERR_NOT_FOUND;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		sp_error_set(err, SP_ERR_BAD_INPUT, "'%s' is a directory, not a stream", path);
		return -1;
	}
	return fd;
}

struct sp_snapshot *sp_snapshot_open(const char *path)
{
	SP_API_CHECK(path, NULL);
	struct sp_error err = { 0 };
	struct sp_snapshot *s = calloc(1, sizeof(*s));
	if (!s) {
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->fd = open_stream(path, &err);
	if (s->fd < 0) {
		free(s);
		sp_error_publish(&err);
		return NULL;
	}
	s->src = sp_source_new(s, s->fd, strcmp(path, "-") == 0 ? "standard input" : path,
			       false, NULL, &err);
	if (!s->src) {
		sp_snapshot_close(s);
		sp_error_publish(&err);
		return NULL;
	}
	if (sp_source_check(s->src) < 0) {
		err = *sp_source_error(s->src);
		sp_snapshot_close(s);
		sp_error_publish(&err);
		return NULL;
	}
	return s;
}

void sp_snapshot_close(struct sp_snapshot *s)
{
	if (!s)
		return;
	sp_source_free(s->src);
	if (s->fd > STDIN_FILENO)
		close(s->fd);
	free(s);
}

int sp_snapshot_next(struct sp_snapshot *s, const struct sp_batch **b)
{
	SP_API_CHECK(s, -1);
	SP_API_CHECK(b, -1);
	int rc = sp_source_next(s->src, b);
	if (rc < 0)
		return sp_error_publish(sp_source_error(s->src));
	s->ended = rc == 0;
	return rc;
}

int sp_snapshot_metadata(struct sp_snapshot *s, struct sp_metadata *m)
{
	SP_API_CHECK(s, -1);
	SP_API_CHECK(m, -1);
	if (sp_source_metadata(s->src, m) < 0)
		return sp_error_publish(sp_source_error(s->src));
	return 0;
}

int sp_snapshot_summary(struct sp_snapshot *s, struct sp_summary *sum)
{
	SP_API_CHECK(s, -1);
	SP_API_CHECK(sum, -1);
	if (sp_source_summary(s->src, sum) < 0)
		return sp_error_publish(sp_source_error(s->src));
	return 0;
}

size_t sp_snapshot_runtimes(struct sp_snapshot *s, const struct sp_runtime **r)
{
	if (r)
		*r = NULL;
	SP_API_CHECK(s, 0);
	SP_API_CHECK(r, 0);
	return sp_source_runtimes(s->src, r);
}

/* ---- batches and stacks --------------------------------------------------- */

size_t sp_batch_count(const struct sp_batch *b)
{
	SP_API_CHECK(b, 0);
	return b->nstacks;
}

const struct sp_stack *sp_batch_stack(const struct sp_batch *b, size_t i)
{
	SP_API_CHECK(b, NULL);
	if (i >= b->nstacks) {
		sp_error_publish_new(SP_ERR_INVALID, "%s: stack %zu of a batch of %zu",
				     __func__, i, b->nstacks);
		return NULL;
	}
	return &b->stacks[i];
}

bool sp_batch_has_more(const struct sp_batch *b)
{
	SP_API_CHECK(b, false);
	return b->has_more;
}

size_t sp_stack_frames(const struct sp_stack *st, const struct sp_frame **frames)
{
	if (frames)
		*frames = NULL;
	SP_API_CHECK(st, 0);
	SP_API_CHECK(frames, 0);
	*frames = st->frames;
	return st->nframes;
}

int sp_stack_context(const struct sp_stack *st, size_t i, struct sp_frame_context *c)
{
	SP_API_CHECK(st, -1);
	SP_API_CHECK(c, -1);
	if (i >= st->nframes)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: frame %zu of a stack of %zu",
					    __func__, i, st->nframes);
	c->frame = &st->frames[i];
	uint32_t m = st->frames[i].module;
	if (m < st->nmodules)
		c->module = st->modules[m];
	else
		c->module = (struct sp_module){ "", NULL, 0, "anon" };
	return 0;
}

void sp_stack_sample(const struct sp_stack *st, struct sp_sample_info *info)
{
	if (!st || !info) {
		sp_error_publish_new(SP_ERR_INVALID, "%s: %s is NULL", __func__,
				     st ? "info" : "st");
		if (info)
			memset(info, 0, sizeof(*info));
		return;
	}
	*info = st->info;
}

int sp_stack_end(const struct sp_stack *st)
{
	SP_API_CHECK(st, -1);
	return st->end;
}

const char *sp_stack_end_name(int end)
{
	if (end < 0 || end >= SP_END_COUNT)
		return "unknown";
	return sp_unwind_end_name((enum sp_unwind_end)end);
}

uint64_t sp_stack_id(const struct sp_stack *st)
{
	SP_API_CHECK(st, UINT64_MAX);
	return st->id;
}
