/* SPDX-License-Identifier: MIT
 * The calibration of sp-capture --stack-size auto (internal.h): the
 * recording's first records are written into a memory file, then copied
 * to the output, which the recorder's descriptor is made to point at;
 * a thread unwinds the memory file with the unwinding stage, as
 * sp-unwind would, and counts how much of its stack copy each complete
 * stack needed (unwind/stage.h, struct sp_copy_used).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"
#include "stream/stream.h"
#include "unwind/stage.h"

/* Deeper than any stack a copy of 65528 bytes holds: the copy ends each walk. */
#define CALIB_MAX_DEPTH 8192

struct sp_calib {
	int mem;		/* the memory file */
	int fd;			/* the recorder's: the memory file, then the output */
	int out;		/* the output (not owned) */
	bool switched;
	bool thread;		/* the thread was started and not joined yet */
	pthread_t th;
	int done;		/* set by the thread when it ends (atomic) */
	struct sp_copy_used used;
	uint64_t samples;	/* samples the thread saw */
	struct sp_error err;	/* why the thread stopped short, if it did */
};

struct sp_calib *sp_calib_new(int out, struct sp_error *err)
{
	struct sp_calib *c = calloc(1, sizeof(*c));
	if (!c) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	c->out = out;
	c->fd = -1;
	c->mem = memfd_create("sp-capture-calibration", MFD_CLOEXEC);
	if (c->mem < 0 || (c->fd = fcntl(c->mem, F_DUPFD_CLOEXEC, 3)) < 0) {
		sp_error_errno(err, "cannot make a memory file for --stack-size auto's calibration");
		sp_calib_free(c);
		return NULL;
	}
	return c;
}

int sp_calib_fd(const struct sp_calib *c)
{
	return c->fd;
}

/* The thread: unwinds the memory file's stream into nothing, counting. */
static void *calibrate(void *arg)
{
	struct sp_calib *c = arg;
	char *no_args[] = { NULL };
	struct sp_unwind_stage_options o = {
		.uo = { .max_depth = CALIB_MAX_DEPTH, .fp_fallback = true },
		.tool = "sp-capture", .argc = 0, .argv = no_args,
	};
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct sp_writer *w = null >= 0 ? sp_writer_new(null, "/dev/null") : NULL;
	struct sp_unwind_stage *s = w ? sp_unwind_stage_new(&o, w) : NULL;
	struct sp_reader *r = lseek(c->mem, 0, SEEK_SET) == 0 ?
			      sp_reader_new(c->mem, "calibration") : NULL;
	if (!w || !s || !r) {
		sp_error_set(&c->err, SP_ERR_NOMEM, "cannot start the calibration: %s",
			     null < 0 ? strerror(errno) : "out of memory");
	} else {
		struct sp_record rec;
		while (sp_reader_next(r, &rec) == SP_READ_RECORD) {
			if (sp_unwind_stage_record(s, &rec, sp_reader_header(r), &c->err) < 0)
				break;
			c->samples += rec.type == SP_R_SAMPLE;
		}
		c->used = *sp_unwind_stage_copy_used(s);
	}
	sp_reader_free(r);
	sp_unwind_stage_free(s);
	if (w)
		sp_writer_close(w);
	else if (null >= 0)
		close(null);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Writes all of the memory file to the output. */
static int copy_out(struct sp_calib *c, struct sp_error *err)
{
	char buf[65536];
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(c->mem, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sp_error_errno(err, "cannot read the calibration's memory file");
		if (n == 0)
			return 0;
		off += n;
		for (ssize_t done = 0; done < n; ) {
			ssize_t k = write(c->out, buf + done, (size_t)(n - done));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return sp_error_errno(err, "write error");
			done += k;
		}
	}
}

int sp_calib_switch(struct sp_calib *c, struct sp_writer *w, struct sp_error *err)
{
	if (c->switched)
		return 0;
	c->switched = true;
	if (sp_writer_flush(w) < 0)
		return sp_error_set(err, SP_ERR_ERRNO, "%s", sp_writer_error(w));
	int rc = copy_out(c, err);
	/* From now on the recorder writes to the output, whatever happened. */
	if (dup3(c->out, c->fd, O_CLOEXEC) < 0 && rc == 0)
		rc = sp_error_errno(err, "cannot point the recording at its output");
	if (rc < 0)
		return -1;
	if (pthread_create(&c->th, NULL, calibrate, c) != 0)
		return sp_error_set(err, SP_ERR_NOMEM, "cannot start the calibration's thread");
	c->thread = true;
	return 0;
}

bool sp_calib_ready(const struct sp_calib *c)
{
	return c->thread && __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

const struct sp_copy_used *sp_calib_result(struct sp_calib *c, uint64_t *samples,
					   const struct sp_error **err)
{
	if (c->thread) {
		pthread_join(c->th, NULL);
		c->thread = false;
	}
	*samples = c->samples;
	*err = c->err.code ? &c->err : NULL;
	return &c->used;
}

void sp_calib_free(struct sp_calib *c)
{
	if (!c)
		return;
	if (c->thread)
		pthread_join(c->th, NULL);
	if (c->mem >= 0)
		close(c->mem);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}
