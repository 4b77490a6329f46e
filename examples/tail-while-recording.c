/* SPDX-License-Identifier: MIT
 * tail-while-recording: records a command into a file and reads the
 * file's stacks while the recording goes on, as a live view would:
 * poll the recorder, flush it, take every batch the tail has.  At the
 * end it prints
 *
 *   stacks N                    every stack the tail read
 *   complete N                  those that reached the thread's entry
 *   while_running N             those read before the command exited
 *   polls_with_stacks N         polls, while it ran, that brought stacks
 *   samples N                   the recording's summary says
 *
 *   tail-while-recording [-F HZ] OUT.sps COMMAND [ARG...]
 *
 * With -f it records nothing: it follows FILE, which another program
 * (sp-capture -o FILE) writes, polling every 100 ms until the stream's
 * summary, and prints stacks, complete and polls_with_stacks.
 *
 *   tail-while-recording -f FILE
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stackpulse.h>

struct counts {
	unsigned long long stacks, complete;
};

static int die(const char *what)
{
	fprintf(stderr, "tail-while-recording: %s: %s\n", what, sp_errmsg(-1));
	return 1;
}

/*
 * Takes every batch the tail holds now; returns the stacks read, or -1.
 * *ended is set once the tail has read the summary.
 */
static long long drain(struct sp_tail *t, struct counts *c, int *ended)
{
	const struct sp_batch *b;
	long long n = 0;
	int rc;
	do {
		rc = sp_tail_poll(t, &b);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			*ended = 1;
			break;
		}
		for (size_t i = 0; i < sp_batch_count(b); i++)
			c->complete += sp_stack_end(sp_batch_stack(b, i)) == 0;
		n += (long long)sp_batch_count(b);
	} while (sp_batch_has_more(b));
	c->stacks += (unsigned long long)n;
	return n;
}

/* Follows a file written elsewhere until its summary. */
static int follow(const char *path)
{
	struct sp_tail *t = sp_tail_open(path);
	struct counts c = { 0, 0 };
	unsigned long long polls = 0;
	int ended = 0;
	if (!t)
		return die(path);
	while (!ended) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		long long n = drain(t, &c, &ended);
		if (n < 0)
			return die(path);
		polls += n > 0;
		if (!ended)
			nanosleep(&ts, NULL);
	}
	printf("stacks %llu\ncomplete %llu\npolls_with_stacks %llu\n", c.stacks, c.complete,
	       polls);
	sp_tail_close(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct sp_options *o = sp_options_new();
	int i = 1, ended = 0;
	if (!o)
		return die("options");
	if (argc == 3 && strcmp(argv[1], "-f") == 0) {
		sp_options_free(o);
		return follow(argv[2]);
	}
	if (i + 1 < argc && strcmp(argv[i], "-F") == 0) {
		if (sp_options_set_rate(o, strtoull(argv[i + 1], NULL, 10)) < 0)
			return die("-F");
		i += 2;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: tail-while-recording [-F HZ] OUT.sps COMMAND [ARG...]\n");
		return 2;
	}
	struct sp_recorder *r = sp_recorder_new(o, argv[i]);
	sp_options_free(o);
	if (!r)
		return die(argv[i]);
	pid_t pid;
	if (sp_recorder_attach_command(r, argv + i + 1, &pid) < 0)
		return die(argv[i + 1]);
	struct sp_tail *t = sp_recorder_tail(r);
	if (!t)
		return die("tail");

	struct counts c = { 0, 0 };
	unsigned long long while_running = 0, polls = 0;
	for (;;) {
		if (sp_recorder_poll(r, 100) < 0 || sp_recorder_flush(r) < 0)
			return die("poll");
		int active = sp_recorder_process_is_active(r, pid);
		if (active < 0)
			return die("process");
		long long n = drain(t, &c, &ended);
		if (n < 0)
			return die("tail");
		/* Read while the command was still running: it has not exited yet. */
		if (active && sp_recorder_process_is_active(r, pid) == 1) {
			while_running += (unsigned long long)n;
			polls += n > 0;
		}
		if (!active)
			break;
	}
	struct sp_summary s;
	if (sp_recorder_finish(r, &s) < 0)
		return die("finish");
	/* The file is complete now: a few polls read the rest, up to the summary. */
	for (int k = 0; !ended && k < 100000; k++)
		if (drain(t, &c, &ended) < 0)
			return die("tail");
	printf("stacks %llu\ncomplete %llu\nwhile_running %llu\npolls_with_stacks %llu\n"
	       "samples %llu\n", c.stacks, c.complete, while_running, polls,
	       (unsigned long long)s.samples);
	sp_tail_close(t);
	sp_recorder_free(r);
	return 0;
}
