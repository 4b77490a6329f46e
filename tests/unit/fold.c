/* SPDX-License-Identifier: MIT
 * Unit tests of the fold layer: aggregation of a few stacks into folded
 * lines, segments that define the same frames under other ids, and every
 * out-of-memory path of folding and writing, forced one growth at a time
 * through sp_alloc_fail_after (util/alloc.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"
#include "fold/fold.h"
#include "stream/json.h"
#include "util/alloc.h"

/* Records made from JSON lines, kept unpacked so that feeding them allocates nothing. */
struct records {
	msgpack_sbuffer sb[1024];
	msgpack_unpacked up[1024];
	struct sp_record rec[1024];
	size_t n;
};

static void add(struct records *r, const char *json)
{
	struct sp_error err;
	msgpack_packer pk;
	SP_CHECK(r->n < 1024);
	msgpack_sbuffer *sb = &r->sb[r->n];
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	SP_CHECK(sp_json_parse(json, strlen(json), &pk, &err) == 0);
	msgpack_unpacked_init(&r->up[r->n]);
	SP_CHECK(msgpack_unpack_next(&r->up[r->n], sb->data, sb->size, NULL) == MSGPACK_UNPACK_SUCCESS);
	const msgpack_object *m = &r->up[r->n].data;
	const char *t = "";
	size_t tl = 0;
	sp_map_str(m, "t", &t, &tl);
	r->rec[r->n] = (struct sp_record){ .type = sp_rtype_from_name(t, tl), .type_name = t,
					   .type_len = tl, .map = m, .index = r->n };
	r->n++;
}

static void addf(struct records *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct records *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	add(r, line);
}

static void records_free(struct records *r)
{
	for (size_t i = 0; i < r->n; i++) {
		msgpack_unpacked_destroy(&r->up[i]);
		msgpack_sbuffer_destroy(&r->sb[i]);
	}
	r->n = 0;
}

/* Feeds every record; returns the first failure's result (0: none). */
static int feed(struct sp_fold *f, const struct records *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (sp_fold_record(f, &r->rec[i]) < 0)
			return -1;
	return 0;
}

/* Folds r with o; the output (NUL-terminated, malloc'd) or NULL on an error. */
static char *fold_text(const struct records *r, const struct sp_fold_options *o)
{
	struct sp_fold *f = sp_fold_new(o);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int rc = feed(f, r);
	if (rc == 0)
		rc = sp_fold_write(f, out);
	fclose(out);
	sp_fold_free(f);
	if (rc < 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* A process of two threads; main;work;leaf three times, main;work twice. */
static void two_threads(struct records *r, int segment)
{
	add(r, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	add(r, "{\"t\":\"process\",\"pid\":10,\"comm\":\"app\"}");
	add(r, "{\"t\":\"thread\",\"pid\":10,\"tid\":11,\"comm\":\"worker\"}");
	/* The second segment numbers the same frames the other way round. */
	const char *names[] = { "main", "work", "le;af" };
	for (int i = 0; i < 3; i++)
		addf(r, "{\"t\":\"frame\",\"id\":%d,\"name\":\"%s\",\"flags\":0}", segment ? 2 - i : i,
		     names[i]);
	if (segment) {
		add(r, "{\"t\":\"symstack\",\"id\":0,\"frames\":[0,1,2]}");
		add(r, "{\"t\":\"symstack\",\"id\":1,\"frames\":[1,2]}");
	} else {
		add(r, "{\"t\":\"symstack\",\"id\":0,\"frames\":[2,1,0]}");
		add(r, "{\"t\":\"symstack\",\"id\":1,\"frames\":[1,0]}");
	}
	for (int i = 0; i < 3; i++)
		addf(r, "{\"t\":\"sample\",\"pid\":10,\"tid\":%d,\"time\":%d,\"stack\":0,\"period\":1000}",
		     10 + i % 2, 100 + i);
	add(r, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":200,\"stack\":1,\"period\":1}");
}

SP_TEST(fold_aggregates_stacks_into_sorted_lines)
{
	static struct records r;
	two_threads(&r, 0);
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":11,\"time\":300,\"stack\":1,\"period\":1}");
	struct sp_fold_options o = { .to = 1e9 };
	char *text = fold_text(&r, &o);
	/* ';' inside a name becomes ':'; the process name is the root. */
	SP_CHECK_STR(text, "app;main;work 2\napp;main;work;le:af 3\n");
	free(text);
	o.root = SP_ROOT_TID;
	text = fold_text(&r, &o);
	SP_CHECK_STR(text, "app-10/10;main;work 1\napp-10/10;main;work;le:af 2\n"
			   "app-10/11;main;work 1\napp-10/11;main;work;le:af 1\n");
	free(text);
	o.root = SP_ROOT_COMM;
	o.period = true;
	text = fold_text(&r, &o);
	SP_CHECK_STR(text, "app;main;work 2\napp;main;work;le:af 3000\n");
	free(text);
	o.period = false;
	uint64_t tid = 11;
	o.tids = &tid;
	o.ntids = 1;
	text = fold_text(&r, &o);
	SP_CHECK_STR(text, "app;main;work 1\napp;main;work;le:af 1\n");
	free(text);
	records_free(&r);
}

SP_TEST(fold_segments_define_frames_anew)
{
	/* Two segments, ids reused for other frames: the counts add up by name. */
	static struct records r;
	two_threads(&r, 0);
	two_threads(&r, 1);
	struct sp_fold_options o = { .to = 1e9 };
	char *text = fold_text(&r, &o);
	SP_CHECK_STR(text, "app;main;work 2\napp;main;work;le:af 6\n");
	free(text);
	records_free(&r);
}

SP_TEST(fold_refuses_undefined_references)
{
	static struct records r;
	add(&r, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	add(&r, "{\"t\":\"symstack\",\"id\":0,\"frames\":[7]}");
	struct sp_fold_options o = { .to = 1e9 };
	struct sp_fold *f = sp_fold_new(&o);
	SP_CHECK(feed(f, &r) < 0);
	SP_CHECK_STR(sp_fold_error(f), "symstack 0 refers to an undefined frame");
	sp_fold_free(f);
	records_free(&r);
	add(&r, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	add(&r, "{\"t\":\"sample\",\"pid\":1,\"tid\":1,\"time\":1,\"stack\":3}");
	f = sp_fold_new(&o);
	SP_CHECK(feed(f, &r) < 0);
	SP_CHECK_STR(sp_fold_error(f), "sample refers to undefined stack 3");
	sp_fold_free(f);
	records_free(&r);
}

/*
 * Enough distinct stacks, frames, threads and samples that every table
 * grows several times, so that a growth that fails can follow one that
 * moved another array (the case of a double free once).
 */
static void many_stacks(struct records *r)
{
	add(r, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	add(r, "{\"t\":\"process\",\"pid\":10,\"comm\":\"app\"}");
	for (int i = 0; i < 40; i++)
		addf(r, "{\"t\":\"frame\",\"id\":%d,\"name\":\"%s%d\",\"flags\":0,\"file\":\"x.c\","
			"\"line\":%d,\"inline\":[{\"name\":\"in%d\",\"line\":3}]}", i, i < 30 ? "f" : "g", i, i + 1, i);
	for (int i = 0; i < 300; i++)
		addf(r, "{\"t\":\"symstack\",\"id\":%d,\"frames\":[%d,%d]}", i, i % 30, 30 + i / 30);
	for (int i = 0; i < 300; i++)
		addf(r, "{\"t\":\"sample\",\"pid\":10,\"tid\":%d,\"time\":%d,\"stack\":%d}",
		     10 + i % 7, 1000 + i, i);
}

/*
 * Folds r with o, the nth growth from now failing.  Returns 1 when it
 * failed as it should (out of memory), 0 when the growths ran out before
 * the nth, and -1 for anything else.
 */
static int fold_failing(const struct records *r, const struct sp_fold_options *o, unsigned long n)
{
	FILE *out = fopen("/dev/null", "w");
	struct sp_fold *f = sp_fold_new(o);
	sp_alloc_fail_after = n;
	int rc = feed(f, r);
	if (rc == 0)
		rc = sp_fold_write(f, out);
	bool fired = sp_alloc_fail_after == 0;
	sp_alloc_fail_after = 0;
	int result = !fired && rc == 0 ? 0 :
		     fired && rc < 0 && strcmp(sp_fold_error(f), "out of memory") == 0 ? 1 : -1;
	/* With the old intern_stack this freed a stack array twice. */
	sp_fold_free(f);
	fclose(out);
	return result;
}

SP_TEST(fold_out_of_memory_at_every_growth)
{
	static struct records r;
	many_stacks(&r);
	static const enum sp_fold_format formats[] = { SP_FOLD_FOLDED, SP_FOLD_PPROF,
						       SP_FOLD_SPEEDSCOPE };
	for (size_t k = 0; k < 3; k++) {
		struct sp_fold_options o = { .format = formats[k], .to = 1e9, .inline_frames = true };
		unsigned long n = 1;
		int got;
		while ((got = fold_failing(&r, &o, n)) == 1)
			n++;
		/* Every growth failed once, then a run with none failing completes. */
		SP_CHECK(got == 0);
		SP_CHECK(n > 20);
	}
	records_free(&r);
}

SP_TEST(fold_a_renamed_process_is_another_root)
{
	/* Names change between samples of one thread: each sample takes the name of its time. */
	static struct records r;
	add(&r, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	add(&r, "{\"t\":\"frame\",\"id\":0,\"name\":\"main\",\"flags\":0}");
	add(&r, "{\"t\":\"symstack\",\"id\":0,\"frames\":[0]}");
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":1,\"stack\":0}");
	add(&r, "{\"t\":\"process\",\"pid\":10,\"comm\":\"before\"}");
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":2,\"stack\":0}");
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":3,\"stack\":0}");
	add(&r, "{\"t\":\"comm\",\"pid\":10,\"tid\":10,\"comm\":\"after\"}");
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":4,\"stack\":0}");
	/* A thread's own new name changes nothing in the folded lines. */
	add(&r, "{\"t\":\"comm\",\"pid\":10,\"tid\":12,\"comm\":\"helper\"}");
	add(&r, "{\"t\":\"sample\",\"pid\":10,\"tid\":12,\"time\":5,\"stack\":0}");
	struct sp_fold_options o = { .to = 1e9 };
	char *text = fold_text(&r, &o);
	SP_CHECK_STR(text, "after;main 2\nbefore;main 2\npid-10;main 1\n");
	free(text);
	const char *only[] = { "before" };
	o.comms = (char **)only;
	o.ncomms = 1;
	text = fold_text(&r, &o);
	SP_CHECK_STR(text, "before;main 2\n");
	free(text);
	records_free(&r);
}
