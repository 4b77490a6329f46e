/* SPDX-License-Identifier: MIT
 * Unit tests of the top report (fold/top.c): self and total samples of a
 * recursive stack, the order of both sorts, the callers of a function,
 * the process and name filters, and weights that stand for a window.
 */
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"
#include "fold/fold.h"
#include "stream/json.h"

/* Folds one record given as JSON. */
static void fold_json(struct sp_fold *f, const char *json)
{
	struct sp_error err;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	SP_CHECK(sp_json_parse(json, strlen(json), &pk, &err) == 0);
	msgpack_unpacked_init(&up);
	SP_CHECK(msgpack_unpack_next(&up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
	const char *t = "";
	size_t tl = 0;
	sp_map_str(&up.data, "t", &t, &tl);
	struct sp_record rec = { .type = sp_rtype_from_name(t, tl), .type_name = t,
				 .type_len = tl, .map = &up.data };
	SP_CHECK(sp_fold_record(f, &rec) == 0);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
}

/*
 * Process 10: main;rec;rec;leaf three times, main;rec once; process 20:
 * main;x once.  Counts in that order: (10, stack 0), (10, stack 1), (20, stack 2).
 */
static struct sp_fold *recursive(void)
{
	struct sp_fold_options o = { .to = 1e9 };
	struct sp_fold *f = sp_fold_new(&o);
	SP_CHECK(f != NULL);
	fold_json(f, "{\"t\":\"header\",\"format\":\"stackpulse\",\"stage\":\"symbolized\"}");
	fold_json(f, "{\"t\":\"process\",\"pid\":10,\"comm\":\"app\"}");
	fold_json(f, "{\"t\":\"process\",\"pid\":20,\"comm\":\"other\"}");
	const char *names[] = { "main", "rec", "leaf", "x" };
	char line[256];
	for (int i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "{\"t\":\"frame\",\"id\":%d,\"name\":\"%s\",\"flags\":0}",
			 i, names[i]);
		fold_json(f, line);
	}
	/* Frames of a symstack are leaf first. */
	fold_json(f, "{\"t\":\"symstack\",\"id\":0,\"frames\":[2,1,1,0]}");
	fold_json(f, "{\"t\":\"symstack\",\"id\":1,\"frames\":[1,0]}");
	fold_json(f, "{\"t\":\"symstack\",\"id\":2,\"frames\":[3,0]}");
	for (int i = 0; i < 3; i++) {
		snprintf(line, sizeof(line),
			 "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":%d,\"stack\":0}", 100 + i);
		fold_json(f, line);
	}
	fold_json(f, "{\"t\":\"sample\",\"pid\":10,\"tid\":10,\"time\":200,\"stack\":1}");
	fold_json(f, "{\"t\":\"sample\",\"pid\":20,\"tid\":20,\"time\":300,\"stack\":2}");
	return f;
}

/* The report as "name self total" lines. */
static char *rows(const struct sp_top *t, const struct sp_fold_view *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	for (size_t i = 0; i < t->nrows; i++)
		fprintf(out, "%s %llu %llu\n", sp_top_name(v, &t->rows[i]),
			(unsigned long long)t->rows[i].self, (unsigned long long)t->rows[i].total);
	fclose(out);
	return text;
}

static char *report(struct sp_fold *f, const struct sp_top_options *o, uint64_t *samples)
{
	struct sp_fold_view v;
	struct sp_top t;
	struct sp_error err = { 0 };
	SP_CHECK(sp_fold_view_get(f, &v) == 0);
	sp_top_init(&t);
	SP_CHECK(sp_top_compute(&t, &v, o, &err) == 0);
	char *text = rows(&t, &v);
	*samples = t.samples;
	sp_top_release(&t);
	sp_fold_view_release(&v);
	return text;
}

SP_TEST(top_self_and_total_count_a_recursive_stack_once)
{
	struct sp_fold *f = recursive();
	struct sp_top_options o = { .sort = SP_TOP_SELF, .callers_of = SP_TOP_NONE };
	uint64_t n;
	char *text = report(f, &o, &n);
	SP_CHECK(n == 5);
	/* rec is on four stacks, twice on three of them: a total of 4. */
	SP_CHECK_STR(text, "leaf 3 3\nrec 1 4\nx 1 1\nmain 0 5\n");
	free(text);
	o.sort = SP_TOP_TOTAL;
	text = report(f, &o, &n);
	SP_CHECK_STR(text, "main 0 5\nrec 1 4\nleaf 3 3\nx 1 1\n");
	free(text);
	sp_fold_free(f);
}

SP_TEST(top_callers_filters_and_weights)
{
	struct sp_fold *f = recursive();
	uint64_t n;
	/* rec's callers: main, by its outermost call; the root's is the process. */
	struct sp_top_options o = { .sort = SP_TOP_TOTAL, .callers_of = 1 };
	struct sp_fold_view v;
	SP_CHECK(sp_fold_view_get(f, &v) == 0);
	SP_CHECK_STR(v.frames[1].name, "rec");
	SP_CHECK_STR(v.frames[0].name, "main");
	sp_fold_view_release(&v);
	char *text = report(f, &o, &n);
	SP_CHECK_STR(text, "main 1 4\n");
	free(text);
	o.callers_of = 0;
	text = report(f, &o, &n);
	SP_CHECK_STR(text, "[process] 0 5\n");
	free(text);
	/* One process; a name filter keeps the shares of every sample. */
	struct sp_top_options p = { .sort = SP_TOP_SELF, .callers_of = SP_TOP_NONE, .pid = 20 };
	text = report(f, &p, &n);
	SP_CHECK(n == 1);
	SP_CHECK_STR(text, "x 1 1\nmain 0 1\n");
	free(text);
	p.pid = 0;
	p.filter = "ec";
	text = report(f, &p, &n);
	SP_CHECK(n == 5);
	SP_CHECK_STR(text, "rec 1 4\n");
	free(text);
	/* A window: one of the three deep samples, none of process 20. */
	uint64_t w[] = { 1, 1, 0 };
	struct sp_top_options win = { .sort = SP_TOP_SELF, .callers_of = SP_TOP_NONE,
				      .weights = w, .nweights = 3 };
	text = report(f, &win, &n);
	SP_CHECK(n == 2);
	/* Equal self: the larger total first. */
	SP_CHECK_STR(text, "rec 1 2\nleaf 1 1\nmain 0 2\n");
	free(text);
	/* Counts past the weights weigh nothing. */
	win.nweights = 1;
	text = report(f, &win, &n);
	SP_CHECK(n == 1);
	SP_CHECK_STR(text, "leaf 1 1\nmain 0 1\nrec 0 1\n");
	free(text);
	sp_fold_free(f);
}
