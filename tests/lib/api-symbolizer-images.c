/* SPDX-License-Identifier: MIT
 * api-symbolizer-images: a symbolizer of a tail taken from a recorder
 * names the functions of a file deleted while it was sampled, from the
 * image the recorder kept; a symbolizer of a tail opened on the path
 * afterwards has only the path, and cannot.
 *
 *   api-symbolizer-images OUT.sps FUNCTION PROGRAM [ARG...]
 *
 * Launches PROGRAM, takes a tail of its recording, and reads the tail
 * only once PROGRAM has exited, so that nothing of it can be read through
 * /proc any more; the test deletes PROGRAM's file while it runs.  Prints
 * "recorder-tail STACKS NAMED", then "path-tail STACKS NAMED": the
 * stacks, and those with a frame named FUNCTION by a symbol (not an
 * address-only frame).
 */
#include <stdio.h>
#include <string.h>

#include <stackpulse.h>

struct count {
	size_t stacks, named;
};

/* Names what the tail has; returns 0 once the stream has ended, 1, or -1. */
static int drain(struct sp_tail *t, struct sp_symbolizer *sym, const char *fn, struct count *c)
{
	for (;;) {
		const struct sp_batch *b;
		int k = sp_tail_poll(t, &b);
		if (k <= 0)
			return k;
		if (sp_symbolizer_update(sym, b, NULL) < 0)
			return -1;
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_symbol *f;
			ssize_t n = sp_symbolizer_resolve(sym, sp_batch_stack(b, i), &f);
			if (n < 0)
				return -1;
			bool named = false;
			for (ssize_t j = 0; j < n && !named; j++)
				named = f[j].origin == SP_SYMBOL_RESOLVED && strcmp(f[j].name, fn) == 0;
			c->stacks++;
			c->named += named;
		}
		if (!sp_batch_has_more(b))
			return 1;
	}
}

static int die(const char *what)
{
	fprintf(stderr, "api-symbolizer-images: %s: %s\n", what, sp_errmsg(-1));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: api-symbolizer-images OUT.sps FUNCTION PROGRAM [ARG...]\n");
		return 2;
	}
	const char *fn = argv[2];
	struct sp_options *o = sp_options_new();
	struct sp_recorder *r = o ? sp_recorder_new(o, argv[1]) : NULL;
	sp_options_free(o);
	pid_t pid;
	if (!r || sp_recorder_attach_command(r, argv + 3, &pid) < 0)
		return die("recorder");
	if (sp_recorder_flush(r) < 0)
		return die("flush");
	struct sp_tail *t = sp_recorder_tail(r);
	struct sp_symbolizer *sym = t ? sp_symbolizer_new(NULL, t, NULL) : NULL;
	if (!sym)
		return die("tail");
	struct count live = { 0, 0 }, later = { 0, 0 };
	while (sp_recorder_process_is_active(r, pid) == 1)
		if (sp_recorder_poll(r, 100) < 0)
			return die("poll");
	if (sp_recorder_finish(r, NULL) < 0)
		return die("finish");
	int k;
	while ((k = drain(t, sym, fn, &live)) == 1)
		;
	if (k < 0)
		return die("tail poll");
	sp_symbolizer_free(sym);
	sp_recorder_free(r);
	sp_tail_close(t);
	printf("recorder-tail %zu %zu\n", live.stacks, live.named);

	t = sp_tail_open(argv[1]);
	sym = t ? sp_symbolizer_new(NULL, t, NULL) : NULL;
	if (!sym)
		return die(argv[1]);
	while ((k = drain(t, sym, fn, &later)) == 1)
		;
	if (k < 0)
		return die("tail poll");
	sp_symbolizer_free(sym);
	sp_tail_close(t);
	printf("path-tail %zu %zu\n", later.stacks, later.named);
	return 0;
}
