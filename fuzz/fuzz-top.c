/* SPDX-License-Identifier: MIT
 * fuzz-top: feeds the input to sp_reader as a stream, folds every record
 * it reads and makes top reports (fold/top.c) of what was folded: every
 * 16 records with the counts halved as weights (a window), and at the
 * end with the counts themselves, by self and by total, with a filter,
 * and of the callers of each of the first rows.
 *
 * With frames at their addresses, the view is also written as pprof and
 * speedscope, which must succeed.
 *
 * Checked for every report: no row's self exceeds its total, no total
 * exceeds the report's samples, the self column adds up to at most the
 * samples, the rows are sorted, and the callers of a function add up to
 * its total.  Any broken invariant calls abort().
 */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fold/fold.h"
#include "stream/stream.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static uint64_t key(const struct sp_top_row *r, enum sp_top_sort s)
{
	return s == SP_TOP_SELF ? r->self : r->total;
}

static void check_rows(const struct sp_top *t, enum sp_top_sort sort)
{
	uint64_t self = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct sp_top_row *r = &t->rows[i];
		check(r->self <= r->total || r->frame == SP_TOP_ROOT);
		check(r->total <= t->samples);
		self += r->self;
		if (i)
			check(key(&t->rows[i - 1], sort) >= key(r, sort));
	}
	check(self <= t->samples);
}

/* Reports of the fold with these weights (NULL: its counts). */
static void reports(struct sp_fold *f, const uint64_t *w, size_t nw)
{
	struct sp_fold_view v;
	struct sp_top t, c;
	struct sp_error err = { 0 };
	if (sp_fold_view_get(f, &v) < 0)
		return;
	sp_top_init(&t);
	sp_top_init(&c);
	for (int s = SP_TOP_SELF; s <= SP_TOP_TOTAL; s++) {
		struct sp_top_options o = { .sort = s, .weights = w, .nweights = nw,
					    .callers_of = SP_TOP_NONE,
					    .filter = s == SP_TOP_TOTAL ? "a" : NULL };
		if (sp_top_compute(&t, &v, &o, &err) < 0)
			break;
		check_rows(&t, o.sort);
		for (size_t i = 0; i < t.nrows && i < 3; i++) {
			struct sp_top_options co = o;
			co.callers_of = t.rows[i].frame;
			co.filter = NULL;
			if (sp_top_compute(&c, &v, &co, &err) < 0)
				break;
			check_rows(&c, co.sort);
			uint64_t sum = 0;
			for (size_t j = 0; j < c.nrows; j++)
				sum += c.rows[j].total;
			check(sum == c.function_samples && sum == t.rows[i].total);
			check(sp_top_name(&v, &c.rows[0]) != NULL || !c.nrows);
		}
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			sp_top_write(&t, &v, 5, null);
			fclose(null);
		}
	}
	sp_top_release(&c);
	sp_top_release(&t);
	sp_fold_view_release(&v);
}

/* The counts halved: a window's weights. */
static void window_reports(struct sp_fold *f)
{
	struct sp_fold_view v;
	if (sp_fold_view_get(f, &v) < 0)
		return;
	uint64_t *w = calloc(v.ncounts ? v.ncounts : 1, sizeof(*w));
	size_t n = v.ncounts;
	for (size_t i = 0; w && i < n; i++)
		w[i] = v.counts[i].samples / 2;
	sp_fold_view_release(&v);
	if (!w)
		return;
	reports(f, w, n);
	free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-top", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return 0;
	}
	/*
	 * The input's length picks the modes: inline frames, off-CPU time
	 * alone or wall-clock time, and frames at their addresses (as pprof
	 * folds them), which are then also written as pprof and speedscope.
	 */
	struct sp_fold_options fo = { .format = SP_FOLD_FOLDED, .to = INFINITY,
				      .inline_frames = size & 1, .kernel = true,
				      .off_cpu = size & 2, .wall = (size & 6) == 4,
				      .locations = size & 8 };
	struct sp_reader *r = sp_reader_new(fd, "fuzz");
	struct sp_fold *f = sp_fold_new(&fo);
	struct sp_record rec;
	unsigned n = 0;
	while (r && f && sp_reader_next(r, &rec) == SP_READ_RECORD) {
		if (sp_fold_record(f, &rec) < 0)
			break;
		if (++n % 16 == 0)
			window_reports(f);
	}
	if (f)
		reports(f, NULL, 0);
	if (f && fo.locations) {
		struct sp_fold_view v;
		struct sp_error err = { 0 };
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		check(out != NULL);
		if (sp_fold_view_get(f, &v) == 0) {
			check(sp_fold_write_pprof(&v, out, &err) == 0 || err.code == SP_ERR_NOMEM);
			check(sp_fold_write_speedscope(&v, out, &err) == 0 || err.code == SP_ERR_NOMEM);
			sp_fold_view_release(&v);
		}
		fclose(out);
		free(buf);
	}
	sp_fold_free(f);
	sp_reader_free(r);
	close(fd);
	return 0;
}
