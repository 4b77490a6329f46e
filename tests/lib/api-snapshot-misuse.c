/* SPDX-License-Identifier: MIT
 * api-snapshot-misuse: snapshots, tails, batches and stacks used wrongly
 * or given bad input must fail with their error code and a message,
 * never crash.  Prints "ok WHAT: MESSAGE" for each check, "FAIL ..." for
 * one that does not hold; exits 1 after a failure.
 *
 *   api-snapshot-misuse DIR GOOD.sps OUT.sps COMMAND [ARG...]
 *
 * DIR holds the bad inputs the test made: missing.sps (absent),
 * perf.data, random.bin, cut.sps (GOOD.sps cut in the middle of a
 * record).  OUT.sps is written by a recorder of COMMAND, from which a
 * tail is taken twice.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse.h>

static int failures;

static void expect(const char *what, long rc, int code, const char *wording)
{
	int got = sp_errno();
	const char *msg = sp_errmsg(-1);
	if (rc != -1 || got != code || !msg || !*msg || (wording && !strstr(msg, wording))) {
		printf("FAIL %s: returned %ld, code %d (%s), wanted -1, code %d%s%s\n", what,
		       rc, got, msg ? msg : "(null)", code, wording ? " and " : "",
		       wording ? wording : "");
		failures++;
		return;
	}
	printf("ok %s: %s\n", what, msg);
}

static void expect_null(const char *what, const void *p, int code, const char *wording)
{
	expect(what, p ? 0 : -1, code, wording);
}

static void null_handles(void)
{
	const struct sp_batch *b;
	const struct sp_frame *f;
	const struct sp_runtime *rt;
	struct sp_metadata m;
	struct sp_summary s;
	struct sp_frame_context c;
	struct sp_sample_info info;

	expect_null("sp_snapshot_open(NULL)", sp_snapshot_open(NULL), SP_ERR_INVALID, NULL);
	expect("sp_snapshot_next(NULL)", sp_snapshot_next(NULL, &b), SP_ERR_INVALID, NULL);
	expect("sp_snapshot_metadata(NULL)", sp_snapshot_metadata(NULL, &m), SP_ERR_INVALID,
	       NULL);
	expect("sp_snapshot_summary(NULL)", sp_snapshot_summary(NULL, &s), SP_ERR_INVALID,
	       NULL);
	expect("sp_snapshot_runtimes(NULL)", sp_snapshot_runtimes(NULL, &rt) ? 0 : -1,
	       SP_ERR_INVALID, NULL);
	sp_snapshot_close(NULL);
	expect_null("sp_tail_open(NULL)", sp_tail_open(NULL), SP_ERR_INVALID, NULL);
	expect_null("sp_recorder_tail(NULL)", sp_recorder_tail(NULL), SP_ERR_INVALID, NULL);
	expect("sp_tail_poll(NULL)", sp_tail_poll(NULL, &b), SP_ERR_INVALID, NULL);
	expect("sp_tail_metadata(NULL)", sp_tail_metadata(NULL, &m), SP_ERR_INVALID, NULL);
	expect("sp_tail_runtimes(NULL)", sp_tail_runtimes(NULL, &rt) ? 0 : -1, SP_ERR_INVALID,
	       NULL);
	sp_tail_close(NULL);
	expect("sp_batch_count(NULL)", sp_batch_count(NULL) ? 0 : -1, SP_ERR_INVALID, NULL);
	expect_null("sp_batch_stack(NULL)", sp_batch_stack(NULL, 0), SP_ERR_INVALID, NULL);
	expect("sp_batch_has_more(NULL)", sp_batch_has_more(NULL) ? 0 : -1, SP_ERR_INVALID,
	       NULL);
	expect("sp_stack_frames(NULL)", sp_stack_frames(NULL, &f) ? 0 : -1, SP_ERR_INVALID,
	       NULL);
	expect("sp_stack_context(NULL)", sp_stack_context(NULL, 0, &c), SP_ERR_INVALID, NULL);
	sp_stack_sample(NULL, &info);
	expect("sp_stack_sample(NULL)", info.pid == 0 ? -1 : 0, SP_ERR_INVALID, NULL);
	expect("sp_stack_end(NULL)", sp_stack_end(NULL), SP_ERR_INVALID, NULL);
	expect("sp_stack_id(NULL)", sp_stack_id(NULL) == UINT64_MAX ? -1 : 0, SP_ERR_INVALID,
	       NULL);
	if (strcmp(sp_stack_end_name(12345), "unknown") != 0) {
		printf("FAIL sp_stack_end_name(12345) is '%s'\n", sp_stack_end_name(12345));
		failures++;
	}
}

static char *path(const char *dir, const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static void bad_inputs(const char *dir)
{
	expect_null("sp_snapshot_open(missing)", sp_snapshot_open(path(dir, "missing.sps")),
		    SP_ERR_NOT_FOUND, "missing.sps");
	expect_null("sp_tail_open(missing)", sp_tail_open(path(dir, "missing.sps")),
		    SP_ERR_NOT_FOUND, "missing.sps");
	expect_null("sp_snapshot_open(perf.data)", sp_snapshot_open(path(dir, "perf.data")),
		    SP_ERR_BAD_INPUT, "is a perf.data file");
	expect_null("sp_snapshot_open(random)", sp_snapshot_open(path(dir, "random.bin")),
		    SP_ERR_BAD_INPUT, "not a stackpulse stream");
	expect_null("sp_snapshot_open(a directory)", sp_snapshot_open(dir), SP_ERR_BAD_INPUT,
		    "directory");
}

/* A stream cut short: whole batches, then -1 naming the offset; no summary. */
static void cut_stream(const char *dir)
{
	struct sp_snapshot *s = sp_snapshot_open(path(dir, "cut.sps"));
	const struct sp_batch *b;
	struct sp_summary sum;
	size_t stacks = 0;
	int rc;
	if (!s) {
		printf("FAIL sp_snapshot_open(cut.sps): %s\n", sp_errmsg(-1));
		failures++;
		return;
	}
	while ((rc = sp_snapshot_next(s, &b)) > 0)
		stacks += sp_batch_count(b);
	if (stacks == 0) {
		printf("FAIL cut.sps: no stack before the cut\n");
		failures++;
	}
	printf("ok cut.sps: %zu stacks before the cut\n", stacks);
	expect("sp_snapshot_next(cut.sps)", rc, SP_ERR_BAD_INPUT, "byte offset");
	expect("sp_snapshot_next(cut.sps) again", sp_snapshot_next(s, &b), SP_ERR_BAD_INPUT,
	       "byte offset");
	expect("sp_snapshot_summary(cut.sps)", sp_snapshot_summary(s, &sum), SP_ERR_STATE,
	       NULL);
	sp_snapshot_close(s);
}

/* A good stream, its accessors used out of range. */
static void good_stream(const char *good)
{
	struct sp_snapshot *s = sp_snapshot_open(good);
	const struct sp_batch *b;
	struct sp_summary sum;
	struct sp_frame_context c;
	if (!s) {
		printf("FAIL sp_snapshot_open(%s): %s\n", good, sp_errmsg(-1));
		failures++;
		return;
	}
	expect("sp_snapshot_summary(before the end)", sp_snapshot_summary(s, &sum),
	       SP_ERR_STATE, NULL);
	expect("sp_snapshot_next(b NULL)", sp_snapshot_next(s, NULL), SP_ERR_INVALID, NULL);
	if (sp_snapshot_next(s, &b) != 1 || sp_batch_count(b) == 0) {
		printf("FAIL %s: no first batch\n", good);
		failures++;
		sp_snapshot_close(s);
		return;
	}
	size_t n = sp_batch_count(b);
	expect_null("sp_batch_stack(past the end)", sp_batch_stack(b, n), SP_ERR_INVALID, NULL);
	const struct sp_stack *st = sp_batch_stack(b, 0);
	const struct sp_frame *f;
	size_t nf = sp_stack_frames(st, &f);
	expect("sp_stack_context(past the end)", sp_stack_context(st, nf, &c), SP_ERR_INVALID,
	       NULL);
	expect("sp_stack_context(c NULL)", sp_stack_context(st, 0, NULL), SP_ERR_INVALID, NULL);
	while (sp_snapshot_next(s, &b) > 0)
		;
	if (sp_snapshot_summary(s, &sum) < 0) {
		printf("FAIL sp_snapshot_summary at the end: %s\n", sp_errmsg(-1));
		failures++;
	} else {
		printf("ok sp_snapshot_summary at the end: %llu samples\n",
		       (unsigned long long)sum.samples);
	}
	if (sp_snapshot_next(s, &b) != 0) {
		printf("FAIL sp_snapshot_next after the end is not 0\n");
		failures++;
	}
	/* The recorder marks each process it sees: spin is no CPython. */
	const struct sp_runtime *rt;
	size_t nrt = sp_snapshot_runtimes(s, &rt);
	if (nrt == 0 || rt[0].cpython || rt[0].pid == 0) {
		printf("FAIL sp_snapshot_runtimes: %zu markers\n", nrt);
		failures++;
	} else {
		printf("ok sp_snapshot_runtimes: %zu markers, pid %u not CPython\n", nrt,
		       (unsigned)rt[0].pid);
	}
	sp_snapshot_close(s);
}

/* A tail taken twice from one recorder; a recorder on a descriptor has none. */
static void second_tail(const char *out, char **argv)
{
	struct sp_options *o = sp_options_new();
	struct sp_recorder *r = sp_recorder_new(o, out);
	pid_t pid;
	if (!r || sp_recorder_attach_command(r, argv, &pid) < 0) {
		printf("FAIL recorder of %s: %s\n", argv[0], sp_errmsg(-1));
		failures++;
		sp_recorder_free(r);
		sp_options_free(o);
		return;
	}
	struct sp_tail *t = sp_recorder_tail(r);
	if (!t) {
		printf("FAIL sp_recorder_tail: %s\n", sp_errmsg(-1));
		failures++;
	}
	expect_null("sp_recorder_tail(a second time)", sp_recorder_tail(r), SP_ERR_STATE,
		    NULL);
	sp_recorder_finish(r, NULL);
	const struct sp_batch *b;
	int rc, polls = 0;
	while ((rc = sp_tail_poll(t, &b)) > 0 && polls++ < 100000)
		;
	if (rc != 0) {
		printf("FAIL the tail did not end at the summary: %d %s\n", rc, sp_errmsg(-1));
		failures++;
	} else {
		printf("ok the tail ended at the summary\n");
	}
	if (sp_tail_poll(t, &b) != 0) {
		printf("FAIL sp_tail_poll after the end is not 0\n");
		failures++;
	}
	sp_tail_close(t);
	sp_recorder_free(r);

	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct sp_recorder *rfd = sp_recorder_new_fd(o, fd);
	expect_null("sp_recorder_tail(a recorder on a descriptor)", sp_recorder_tail(rfd),
		    SP_ERR_STATE, NULL);
	sp_recorder_free(rfd);
	close(fd);
	sp_options_free(o);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: api-snapshot-misuse DIR GOOD.sps OUT.sps COMMAND [ARG...]\n");
		return 2;
	}
	null_handles();
	bad_inputs(argv[1]);
	cut_stream(argv[1]);
	good_stream(argv[2]);
	second_tail(argv[3], argv + 4);
	return failures ? 1 : 0;
}
