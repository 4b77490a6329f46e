/* SPDX-License-Identifier: MIT
 * The speedscope exporter (see fold.h): speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json).  Each thread has
 * two profiles: a "sampled" one, its samples in time order weighted in
 * nanoseconds, which speedscope lays end to end (its left-heavy and
 * sandwich views sum them), and an "evented" one on the recording's real
 * timeline, where a sample of weight w taken at t spans [t - w, t] and the
 * time between samples is empty.  The file opens on the sampled profile of
 * the thread with the most weight.  The frames every profile refers to are
 * shared.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fold/internal.h"
#include "util/jsonw.h"
#include "util/utf8.h"

/* Bytes of JSON gathered before they are written out. */
#define FLUSH_AT (64u << 10)

/* Writes what b holds to out and empties it; -1 when memory ran out before. */
static int flush(struct sp_buf *b, FILE *out)
{
	if (b->oom)
		return -1;
	/* A write error is the caller's to report, from ferror(out). */
	if (b->len)
		fwrite(b->p, 1, b->len, out);
	sp_buf_reset(b);
	return 0;
}

/* A string member; its bytes made valid UTF-8 as pprof's are, so both name a frame alike. */
static void jw_kv_name(struct sp_jw *j, struct sp_buf *tmp, const char *key, const char *s)
{
	sp_utf8_sanitize(tmp, s, strlen(s));
	if (tmp->oom)
		j->b->oom = 1;
	sp_jw_key(j, key);
	sp_jw_strn(j, tmp->len ? tmp->p : "", tmp->len);
}

/* The weight of a sample in nanoseconds. */
static uint64_t weight_ns(const struct sp_fold_view *v, const struct sp_fold_sample *s)
{
	return v->weight_period ? s->weight : s->weight * v->sample_period_ns;
}

static int write_profile(const struct sp_fold_view *v, const struct sp_fold_thread *t,
			 const uint32_t *index, struct sp_jw *j, struct sp_buf *tmp, FILE *out)
{
	char name[512];
	snprintf(name, sizeof(name), "%s %u/%u", t->comm, t->pid, t->tid);
	/*
	 * speedscope lays sampled stacks end to end by weight, so the profile
	 * spans the sum of its weights, starting when the thread was first
	 * sampled (nanoseconds since the first sample of the view).
	 */
	uint64_t first = UINT64_MAX, total = 0;
	for (size_t i = 0; i < t->nseq; i++) {
		if (t->seq[i].time < first)
			first = t->seq[i].time;
		total += weight_ns(v, &t->seq[i]);
	}
	uint64_t start = t->nseq && first > v->start_ns ? first - v->start_ns : 0;
	sp_jw_object_begin(j);
	sp_jw_kv_str(j, "type", "sampled");
	jw_kv_name(j, tmp, "name", name);
	sp_jw_kv_str(j, "unit", "nanoseconds");
	sp_jw_kv_u64(j, "startValue", start);
	sp_jw_kv_u64(j, "endValue", start + total);
	sp_jw_key(j, "samples");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < t->nseq; i++) {
		const struct sp_fold_stack *st = &v->stacks[t->seq[i].stack];
		sp_jw_array_begin(j);
		for (size_t k = 0; k < st->n; k++)
			sp_jw_u64(j, index[st->frames[k]]);
		sp_jw_array_end(j);
		if (j->b->len >= FLUSH_AT && flush(j->b, out) < 0)
			return -1;
	}
	sp_jw_array_end(j);
	sp_jw_key(j, "weights");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < t->nseq; i++) {
		sp_jw_u64(j, weight_ns(v, &t->seq[i]));
		if (j->b->len >= FLUSH_AT && flush(j->b, out) < 0)
			return -1;
	}
	sp_jw_array_end(j);
	sp_jw_object_end(j);
	return flush(j->b, out);
}

/* An "O" (open) or "C" (close) event of frame f at ns. */
static void event(struct sp_jw *j, const char *type, uint32_t f, uint64_t at)
{
	sp_jw_object_begin(j);
	sp_jw_kv_str(j, "type", type);
	sp_jw_kv_u64(j, "frame", f);
	sp_jw_kv_u64(j, "at", at);
	sp_jw_object_end(j);
}

/*
 * Thread t's timeline as an evented profile, times in nanoseconds from
 * origin: each sample's frames open at the start of its span (or where the
 * previous span ended, when the two overlap or all but touch) and stay open
 * while the next sample keeps them; a gap closes them all.
 */
static int write_timeline(const struct sp_fold_view *v, const struct sp_fold_thread *t,
			  const uint32_t *index, uint64_t origin, struct sp_jw *j,
			  struct sp_buf *tmp, FILE *out)
{
	char name[512];
	snprintf(name, sizeof(name), "%s %u/%u timeline", t->comm, t->pid, t->tid);
	uint64_t first = UINT64_MAX, last = 0;
	for (size_t i = 0; i < t->nseq; i++) {
		uint64_t w = weight_ns(v, &t->seq[i]), end = t->seq[i].time - origin;
		if (end - (w < end ? w : end) < first)
			first = end - (w < end ? w : end);
		if (end > last)
			last = end;
	}
	if (!t->nseq)
		first = 0;
	sp_jw_object_begin(j);
	sp_jw_kv_str(j, "type", "evented");
	jw_kv_name(j, tmp, "name", name);
	sp_jw_kv_str(j, "unit", "nanoseconds");
	sp_jw_kv_u64(j, "startValue", first);
	sp_jw_kv_u64(j, "endValue", last);
	sp_jw_key(j, "events");
	sp_jw_array_begin(j);
	const struct sp_fold_stack *open = NULL;	/* the frames open, root first */
	uint64_t at = 0;			/* where the open span ends */
	for (size_t i = 0; i < t->nseq; i++) {
		const struct sp_fold_stack *st = &v->stacks[t->seq[i].stack];
		uint64_t end = t->seq[i].time - origin, w = weight_ns(v, &t->seq[i]);
		uint64_t start = end - (w < end ? w : end);
		if (end < at)
			continue;	/* out of order: no span of its own */
		/*
		 * Timer jitter of an eighth of an on-CPU sample is no gap in the
		 * thread's running; an off-CPU interval (--wall: weighed by its
		 * own length) is exact, and its jitter is still the timer's.
		 */
		uint64_t jitter = (v->sample_period_ns && v->sample_period_ns < w ?
				   v->sample_period_ns : w) / 8;
		if (start < at || (open && start - at < jitter))
			start = at;
		size_t keep = 0;
		if (open && start == at)
			while (keep < open->n && keep < st->n && open->frames[keep] == st->frames[keep])
				keep++;
		for (size_t k = open ? open->n : 0; k > keep; k--)
			event(j, "C", index[open->frames[k - 1]], at);
		for (size_t k = keep; k < st->n; k++)
			event(j, "O", index[st->frames[k]], start);
		open = st;
		at = end;
		if (j->b->len >= FLUSH_AT && flush(j->b, out) < 0)
			return -1;
	}
	for (size_t k = open ? open->n : 0; k > 0; k--)
		event(j, "C", index[open->frames[k - 1]], at);
	sp_jw_array_end(j);
	sp_jw_object_end(j);
	return flush(j->b, out);
}

/* The frames the samples use, numbered in view order; UINT32_MAX for the others. */
static uint32_t *frame_index(const struct sp_fold_view *v)
{
	uint32_t *index = malloc((v->nframes ? v->nframes : 1) * sizeof(*index));
	if (!index)
		return NULL;
	for (size_t i = 0; i < v->nframes; i++)
		index[i] = UINT32_MAX;
	for (size_t t = 0; t < v->nthreads; t++)
		for (size_t i = 0; i < v->threads[t].nseq; i++) {
			const struct sp_fold_stack *st = &v->stacks[v->threads[t].seq[i].stack];
			for (size_t k = 0; k < st->n; k++)
				index[st->frames[k]] = 0;
		}
	uint32_t used = 0;
	for (size_t i = 0; i < v->nframes; i++)
		if (index[i] != UINT32_MAX)
			index[i] = used++;
	return index;
}

int sp_fold_write_speedscope(const struct sp_fold_view *v, FILE *out, struct sp_error *err)
{
	uint32_t *index = frame_index(v);
	if (!index)
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");

	/* The group is named after its process when there is one. */
	const char *group = v->nthreads ? v->threads[0].comm : "stackpulse";
	for (size_t t = 1; t < v->nthreads; t++)
		if (strcmp(v->threads[t].comm, group) != 0)
			group = "stackpulse";
	/* The busiest thread is shown first; the timelines start where the first span does. */
	uint64_t most = 0, origin = UINT64_MAX;
	size_t busiest = 0;
	for (size_t t = 0; t < v->nthreads; t++) {
		uint64_t sum = 0;
		for (size_t i = 0; i < v->threads[t].nseq; i++) {
			const struct sp_fold_sample *x = &v->threads[t].seq[i];
			uint64_t w = weight_ns(v, x);
			sum += w;
			if (x->time - (w < x->time ? w : x->time) < origin)
				origin = x->time - (w < x->time ? w : x->time);
		}
		if (sum > most) {
			most = sum;
			busiest = t;
		}
	}
	if (origin == UINT64_MAX)
		origin = 0;

	struct sp_buf b = SP_BUF_INIT, tmp = SP_BUF_INIT;
	struct sp_jw j;
	sp_jw_init(&j, &b);
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "$schema", "https://www.speedscope.app/file-format-schema.json");
	sp_jw_kv_str(&j, "exporter", "sp-fold@" SP_VERSION);
	jw_kv_name(&j, &tmp, "name", group);
	sp_jw_kv_u64(&j, "activeProfileIndex", busiest);
	sp_jw_key(&j, "shared");
	sp_jw_object_begin(&j);
	sp_jw_key(&j, "frames");
	sp_jw_array_begin(&j);
	int rc = 0;
	for (size_t i = 0; i < v->nframes && rc == 0; i++) {
		const struct sp_fold_frame *fr = &v->frames[i];
		if (index[i] == UINT32_MAX)
			continue;
		/* A frame a line, for people reading the file. */
		sp_buf_addc(&b, '\n');
		sp_jw_object_begin(&j);
		jw_kv_name(&j, &tmp, "name", fr->name);
		if (fr->file)
			jw_kv_name(&j, &tmp, "file", fr->file);
		if (fr->line)
			sp_jw_kv_u64(&j, "line", fr->line);
		sp_jw_object_end(&j);
		if (b.len >= FLUSH_AT)
			rc = flush(&b, out);
	}
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	sp_jw_key(&j, "profiles");
	sp_jw_array_begin(&j);
	/* The sampled profiles first, so that a thread's index is its profile's. */
	for (size_t t = 0; t < v->nthreads && rc == 0; t++) {
		sp_buf_addc(&b, '\n');
		rc = write_profile(v, &v->threads[t], index, &j, &tmp, out);
	}
	for (size_t t = 0; t < v->nthreads && rc == 0; t++) {
		sp_buf_addc(&b, '\n');
		rc = write_timeline(v, &v->threads[t], index, origin, &j, &tmp, out);
	}
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	sp_buf_addc(&b, '\n');
	if (rc == 0)
		rc = flush(&b, out);
	sp_buf_release(&b);
	sp_buf_release(&tmp);
	free(index);
	return rc < 0 ? sp_error_set(err, SP_ERR_NOMEM, "out of memory") : 0;
}
