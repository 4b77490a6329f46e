/*
 * The speedscope exporter (see fold.h): speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per thread with its samples in time order, weights in
 * nanoseconds.  The frames every profile refers to are shared.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fold/fold.h"
#include "stream/json.h"


/*
 * A JSON string: quotes, backslashes and control characters escaped, and
 * each byte that is not part of valid UTF-8 replaced by U+FFFD.
 */
static void json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	putc('"', out);
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			putc('\\', out);
			putc(c, out);
			i++;
		} else if (c < 0x20) {
			switch (c) {
			case '\n': fputs("\\n", out); break;
			case '\t': fputs("\\t", out); break;
			case '\r': fputs("\\r", out); break;
			case '\b': fputs("\\b", out); break;
			case '\f': fputs("\\f", out); break;
			default: fprintf(out, "\\u%04x", c);
			}
			i++;
		} else {
			size_t k = sp_utf8_len(p + i, n - i);
			if (k) {
				fwrite(p + i, 1, k, out);
				i += k;
			} else {
				fputs("\\ufffd", out);
				i++;
			}
		}
	}
	putc('"', out);
}

/* The weight of a sample in nanoseconds. */
static uint64_t weight_ns(const struct sp_fold_view *v, const struct sp_fold_sample *s)
{
	return v->weight_period ? s->weight : s->weight * v->sample_period_ns;
}

static void write_profile(const struct sp_fold_view *v, const struct sp_fold_thread *t,
			  const uint32_t *index, FILE *out)
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
	fputs("{\"type\":\"sampled\",\"name\":", out);
	json_string(out, name);
	fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%llu,\"endValue\":%llu,\"samples\":[",
		(unsigned long long)start, (unsigned long long)(start + total));
	for (size_t i = 0; i < t->nseq; i++) {
		const struct sp_fold_stack *st = &v->stacks[t->seq[i].stack];
		fputs(i ? ",[" : "[", out);
		for (size_t k = 0; k < st->n; k++)
			fprintf(out, k ? ",%u" : "%u", index[st->frames[k]]);
		putc(']', out);
	}
	fputs("],\"weights\":[", out);
	for (size_t i = 0; i < t->nseq; i++)
		fprintf(out, i ? ",%llu" : "%llu", (unsigned long long)weight_ns(v, &t->seq[i]));
	fputs("]}", out);
}

int sp_fold_write_speedscope(const struct sp_fold_view *v, FILE *out, char *err, size_t errlen)
{
	/* Only the frames the samples use are written: index maps view to file. */
	uint32_t *index = malloc((v->nframes ? v->nframes : 1) * sizeof(*index));
	if (!index) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
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

	/* The group is named after its process when there is one. */
	const char *group = v->nthreads ? v->threads[0].comm : "stackpulse";
	for (size_t t = 1; t < v->nthreads; t++)
		if (strcmp(v->threads[t].comm, group) != 0)
			group = "stackpulse";

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"sp-fold@" SP_VERSION "\",\"name\":", out);
	json_string(out, group);
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
	bool first = true;
	for (size_t i = 0; i < v->nframes; i++) {
		const struct sp_fold_frame *fr = &v->frames[i];
		if (index[i] == UINT32_MAX)
			continue;
		fputs(first ? "\n{\"name\":" : ",\n{\"name\":", out);
		first = false;
		json_string(out, fr->name);
		if (fr->file) {
			fputs(",\"file\":", out);
			json_string(out, fr->file);
		}
		if (fr->line)
			fprintf(out, ",\"line\":%u", fr->line);
		putc('}', out);
	}
	fputs("]},\"profiles\":[", out);
	for (size_t t = 0; t < v->nthreads; t++) {
		fputs(t ? ",\n" : "\n", out);
		write_profile(v, &v->threads[t], index, out);
	}
	fputs("]}\n", out);
	free(index);
	/* A write error is the caller's to report, from ferror(out). */
	return 0;
}
