/* SPDX-License-Identifier: MIT
 * fuzz-snapshot: reads the input as a recording through libstackpulse's
 * snapshot and tail (libcommon/api/source.c): raw segments through the
 * unwinding stage, the stacks of unwound and symbolized segments joined
 * from their module, stack, frame and symstack records.
 *
 * For every input it opens a snapshot of it (from a memfd), reads every
 * batch to the end or the error, and checks each stack: frames and
 * contexts within their counts, a module index within the module table
 * or SP_MODULE_NONE, an end reason that has a name; then it reads the
 * same bytes with a tail, fed to the file in two pieces (a record cut
 * across two polls must come out whole), and checks that the tail,
 * which stops at the first summary, reads no more stacks than the
 * snapshot did.  Any broken invariant calls abort().
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stackpulse.h>

static volatile unsigned sink;

static void check(int cond)
{
	if (!cond)
		abort();
}

static void touch(const char *s)
{
	check(s != NULL);
	for (; *s; s++)
		sink += (unsigned char)*s;
}

static size_t check_batch(const struct sp_batch *b)
{
	size_t n = sp_batch_count(b);
	for (size_t i = 0; i < n; i++) {
		const struct sp_stack *st = sp_batch_stack(b, i);
		const struct sp_frame *f;
		struct sp_sample_info info;
		struct sp_frame_context c;
		check(st != NULL);
		size_t nf = sp_stack_frames(st, &f);
		for (size_t j = 0; j < nf; j++) {
			check(sp_stack_context(st, j, &c) == 0);
			check(c.frame == &f[j]);
			touch(c.module.path);
			touch(c.module.kind);
			for (size_t k = 0; c.module.build_id && k < c.module.build_id_len; k++)
				sink += c.module.build_id[k];
			check(f[j].module == SP_MODULE_NONE || c.module.kind != NULL);
		}
		check(sp_stack_context(st, nf, &c) == -1);
		sp_stack_sample(st, &info);
		touch(sp_stack_end_name(sp_stack_end(st)));
		sink += (unsigned)sp_stack_id(st);
	}
	check(sp_batch_stack(b, n) == NULL);
	return n;
}

/* Reads a snapshot to its end; returns the stacks, *rc the last return. */
static size_t read_snapshot(const char *path, int *rc)
{
	struct sp_snapshot *s = sp_snapshot_open(path);
	const struct sp_batch *b;
	const struct sp_runtime *rt;
	struct sp_metadata m;
	struct sp_summary sum;
	size_t stacks = 0;
	*rc = -2;
	if (!s)
		return 0;
	if (sp_snapshot_metadata(s, &m) == 0) {
		touch(m.stage);
		touch(m.arch);
	}
	while ((*rc = sp_snapshot_next(s, &b)) > 0)
		stacks += check_batch(b);
	check(*rc == 0 || *rc == -1);
	check(sp_snapshot_next(s, &b) == *rc);
	if (sp_snapshot_summary(s, &sum) == 0)
		check(sum.nerrors <= SP_ERROR_KINDS_MAX);
	size_t nrt = sp_snapshot_runtimes(s, &rt);
	for (size_t i = 0; i < nrt; i++)
		sink += rt[i].pid;
	sp_snapshot_close(s);
	return stacks;
}

/* The same bytes through a tail, written to the file in two pieces. */
static size_t read_tail(int fd, const char *path, const uint8_t *data, size_t size, int *rc)
{
	struct sp_tail *t = sp_tail_open(path);
	const struct sp_batch *b;
	size_t stacks = 0, half = size / 2;
	*rc = -2;
	if (!t)
		return 0;
	check(pwrite(fd, data, half, 0) == (ssize_t)half);
	for (int k = 0; k < 3 && (*rc = sp_tail_poll(t, &b)) > 0; k++)
		stacks += check_batch(b);
	if (*rc > 0) {
		check(pwrite(fd, data + half, size - half, (off_t)half) == (ssize_t)(size - half));
		/* Everything is there now: a few polls read it to the end, or stop at an error. */
		for (int k = 0; k < 64 && (*rc = sp_tail_poll(t, &b)) > 0; k++)
			stacks += check_batch(b);
	}
	sp_tail_close(t);
	return stacks;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("fuzz-snapshot", MFD_CLOEXEC);
	int rc;
	if (fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	size_t snap = read_snapshot(path, &rc);
	if (ftruncate(fd, 0) == 0) {
		int trc;
		size_t tail = read_tail(fd, path, data, size, &trc);
		/* The tail reads the same records, up to the first summary at most. */
		if (rc == 0)
			check(tail <= snap);
	}
	close(fd);
	return 0;
}
