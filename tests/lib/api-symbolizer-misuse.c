/* SPDX-License-Identifier: MIT
 * api-symbolizer-misuse: the symbolizer's answers to bad use, each an
 * error code and a message, never a crash.  Given a recording FILE
 * (any stage), it prints "ok" or "FAIL" with each case, and exits 1 when
 * one failed.
 *
 *	api-symbolizer-misuse FILE
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse.h>

static int failed;

/* One case: the call's result was a failure with code and, when given, a message with want. */
static void expect(const char *what, bool was_failure, int code, const char *want)
{
	bool ok = was_failure && sp_errno() == code && (!want || strstr(sp_errmsg(-1), want));
	printf("%s %s: %s (%s)\n", ok ? "ok" : "FAIL", what, sp_errmsg(-1), sp_errmsg(sp_errno()));
	failed |= !ok;
}

static void check(const char *what, bool ok)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	failed |= !ok;
}

/* The first batch of s that has a stack. */
static const struct sp_batch *batch_with_stack(struct sp_snapshot *s)
{
	const struct sp_batch *b;
	while (sp_snapshot_next(s, &b) == 1)
		if (sp_batch_count(b))
			return b;
	return NULL;
}

static void null_handles(void)
{
	const struct sp_symbol *f;
	struct sp_invalidation inv;
	expect("new without a source", !sp_symbolizer_new(NULL, NULL, NULL), SP_ERR_INVALID, "source");
	expect("update of NULL", sp_symbolizer_update(NULL, NULL, &inv) < 0, SP_ERR_INVALID, NULL);
	expect("resolve with NULL", sp_symbolizer_resolve(NULL, NULL, &f) < 0, SP_ERR_INVALID, NULL);
	expect("is_cacheable of NULL", !sp_symbolizer_is_cacheable(NULL), SP_ERR_INVALID, NULL);
	expect("options_set on NULL", sp_symbolizer_options_set(NULL, "no-inline", NULL) < 0,
	       SP_ERR_INVALID, NULL);
	expect("kallsyms on NULL", sp_symbolizer_options_kallsyms(NULL, "none") < 0, SP_ERR_INVALID, NULL);
	sp_symbolizer_free(NULL);
	sp_symbolizer_options_free(NULL);
}

static void bad_options(void)
{
	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	expect("an unknown option", sp_symbolizer_options_set(o, "no-such-option", NULL) < 0,
	       SP_ERR_INVALID, "no-such-option");
	expect("a bad --perf-maps-for", sp_symbolizer_options_set(o, "perf-maps-for", "12x") < 0,
	       SP_ERR_INVALID, "perf-maps-for");
	expect("a value for an option without one", sp_symbolizer_options_set(o, "no-inline", "yes") < 0,
	       SP_ERR_INVALID, "no-inline");
	expect("no value for an option with one", sp_symbolizer_options_set(o, "module-dir", NULL) < 0,
	       SP_ERR_INVALID, "module-dir");
	expect("an unknown perf-map policy", sp_symbolizer_options_perf_maps(o, (enum sp_perf_map_policy)9) < 0,
	       SP_ERR_INVALID, NULL);
	expect("an unknown stack cache", sp_symbolizer_options_stack_cache(o, (enum sp_stack_cache)7) < 0,
	       SP_ERR_INVALID, NULL);
	uint32_t zero = 0;
	expect("pid 0", sp_symbolizer_options_perf_map_pids(o, &zero, 1) < 0, SP_ERR_INVALID, NULL);
	check("good options are taken", sp_symbolizer_options_set(o, "--no-demangle", NULL) == 0 &&
	      sp_symbolizer_options_set(o, "perf-maps-for", "1,2") == 0 &&
	      sp_symbolizer_options_debuginfod(o, false) == 0);
	sp_symbolizer_options_free(o);
}

static void bad_kallsyms(const char *file)
{
	const char *path = "/nonexistent/saved.kallsyms";
	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	struct sp_snapshot *s = sp_snapshot_open(file);
	sp_symbolizer_options_kallsyms(o, path);
	struct sp_symbolizer *sym = sp_symbolizer_new(s, NULL, o);
	expect("a kallsyms file that does not exist", !sym, SP_ERR_ERRNO, path);
	sp_symbolizer_free(sym);
	sp_symbolizer_options_free(o);
	sp_snapshot_close(s);
}

/* A tail polled before its file holds a record: an empty batch is no error. */
static void early_tail(void)
{
	char path[] = "/tmp/api-symbolizer-misuse-XXXXXX";
	int fd = mkstemp(path);
	struct sp_tail *t = fd >= 0 ? sp_tail_open(path) : NULL;
	struct sp_symbolizer *sym = t ? sp_symbolizer_new(NULL, t, NULL) : NULL;
	const struct sp_batch *b;
	struct sp_invalidation inv;
	check("a symbolizer of a tail of an empty file", sym != NULL);
	check("an empty batch updates nothing", sym && sp_tail_poll(t, &b) == 1 &&
	      sp_batch_count(b) == 0 && sp_symbolizer_update(sym, b, &inv) == 0 &&
	      !inv.all && inv.npids == 0);
	sp_symbolizer_free(sym);
	sp_tail_close(t);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

/* Stacks and batches of another profile; a stack before its batch's update. */
static void wrong_profile(const char *file)
{
	struct sp_snapshot *a = sp_snapshot_open(file), *b = sp_snapshot_open(file);
	struct sp_symbolizer *sym = a ? sp_symbolizer_new(a, NULL, NULL) : NULL;
	const struct sp_batch *ba = a ? batch_with_stack(a) : NULL;
	const struct sp_batch *bb = b ? batch_with_stack(b) : NULL;
	const struct sp_symbol *f;
	struct sp_invalidation inv;
	check("two snapshots of the recording, with stacks", sym && ba && bb);
	if (!sym || !ba || !bb)
		goto out;
	expect("a stack before its batch's update", sp_symbolizer_resolve(sym, sp_batch_stack(ba, 0), &f) < 0,
	       SP_ERR_STATE, NULL);
	expect("a batch of another snapshot", sp_symbolizer_update(sym, bb, &inv) < 0, SP_ERR_MISMATCH, NULL);
	check("the batch of its own snapshot", sp_symbolizer_update(sym, ba, &inv) == 0);
	ssize_t n = sp_symbolizer_resolve(sym, sp_batch_stack(ba, 0), &f);
	check("a stack of its own snapshot", n > 0);
	const struct sp_symbol *again;
	check("the same stack again: the same frames", sp_symbolizer_resolve(sym, sp_batch_stack(ba, 0), &again) == n &&
	      again == f);
	expect("a stack of another snapshot", sp_symbolizer_resolve(sym, sp_batch_stack(bb, 0), &f) < 0,
	       SP_ERR_MISMATCH, NULL);
	expect("resolve into NULL", sp_symbolizer_resolve(sym, sp_batch_stack(ba, 0), NULL) < 0,
	       SP_ERR_INVALID, NULL);
	expect("update with a NULL batch", sp_symbolizer_update(sym, NULL, &inv) < 0, SP_ERR_INVALID, NULL);
out:
	sp_symbolizer_free(sym);
	sp_snapshot_close(a);
	sp_snapshot_close(b);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: api-symbolizer-misuse FILE\n");
		return 2;
	}
	null_handles();
	bad_options();
	bad_kallsyms(argv[1]);
	wrong_profile(argv[1]);
	early_tail();
	return failed;
}
