/* SPDX-License-Identifier: MIT
 * api-recorder-images: a tail taken from a file-backed recorder reads the
 * files the targets mapped as they were sampled, even once they are
 * deleted; a tail opened on the same path afterwards has only the paths.
 *
 *   api-recorder-images OUT.sps PROGRAM [ARG...]
 *
 * Launches PROGRAM, and while it runs tails the stream; PROGRAM may
 * delete its own file meanwhile (the test deletes it).  Prints
 * "recorder-tail STACKS COMPLETE" for the tail taken from the recorder,
 * then "path-tail STACKS COMPLETE" for a tail opened on OUT.sps after
 * the recording.
 */
#include <stdio.h>
#include <stdlib.h>

#include <stackpulse.h>

struct count {
	size_t stacks, complete;
};

/* Reads what the tail has; returns 0 once the stream has ended, 1, or -1. */
static int drain(struct sp_tail *t, struct count *c)
{
	for (;;) {
		const struct sp_batch *b;
		int k = sp_tail_poll(t, &b);
		if (k <= 0)
			return k;
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			c->stacks++;
			c->complete += sp_stack_end(sp_batch_stack(b, i)) == 0;
		}
		if (!sp_batch_has_more(b))
			return 1;
	}
}

static int die(const char *what)
{
	fprintf(stderr, "api-recorder-images: %s: %s\n", what, sp_errmsg(-1));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: api-recorder-images OUT.sps PROGRAM [ARG...]\n");
		return 2;
	}
	struct sp_options *o = sp_options_new();
	struct sp_recorder *r = o ? sp_recorder_new(o, argv[1]) : NULL;
	sp_options_free(o);
	pid_t pid;
	if (!r || sp_recorder_attach_command(r, argv + 2, &pid) < 0)
		return die("recorder");
	if (sp_recorder_flush(r) < 0)
		return die("flush");
	struct sp_tail *t = sp_recorder_tail(r);
	if (!t)
		return die("tail");
	if (sp_recorder_tail(r) || sp_errno() != SP_ERR_STATE) {
		fprintf(stderr, "api-recorder-images: a second tail was given\n");
		return 1;
	}
	struct count live = { 0, 0 }, later = { 0, 0 };
	while (sp_recorder_process_is_active(r, pid) == 1) {
		if (sp_recorder_poll(r, 100) < 0 || sp_recorder_flush(r) < 0)
			return die("poll");
		if (drain(t, &live) < 0)
			return die("tail poll");
	}
	if (sp_recorder_finish(r, NULL) < 0)
		return die("finish");
	int k;
	while ((k = drain(t, &live)) == 1)
		;
	if (k < 0)
		return die("tail poll");
	/* The recorder and its tail both held the images: now neither does. */
	sp_recorder_free(r);
	sp_tail_close(t);
	printf("recorder-tail %zu %zu\n", live.stacks, live.complete);

	t = sp_tail_open(argv[1]);
	if (!t)
		return die(argv[1]);
	while ((k = drain(t, &later)) == 1)
		;
	if (k < 0)
		return die("tail poll");
	sp_tail_close(t);
	printf("path-tail %zu %zu\n", later.stacks, later.complete);
	return 0;
}
