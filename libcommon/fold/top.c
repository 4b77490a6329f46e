/* SPDX-License-Identifier: MIT
 * Top-N reports (fold.h): self and total samples per function, or per
 * caller of one function, over the counts of a folded view, each count
 * weighed as the caller says (a sliding window is a difference of
 * counts).
 */
#include <stdlib.h>
#include <string.h>

#include "fold/internal.h"
#include "util/alloc.h"

int sp_fold_view_get(struct sp_fold *f, struct sp_fold_view *v)
{
	/* Stacks may all be empty, with no arena yet. */
	for (size_t k = 0; k < f->nstacks; k++)
		f->stacks[k].frames = f->arena ? f->arena + f->stack_off[k] : NULL;
	struct sp_fold_thread *tv = calloc(f->nthreads ? f->nthreads : 1, sizeof(*tv));
	if (!tv)
		return fold_nomem(f);
	for (size_t i = 0; i < f->nthreads; i++) {
		const struct fold_thread *t = &f->threads[i];
		tv[i] = (struct sp_fold_thread){ t->pid, t->tid, t->comm, t->thread_comm, t->seq, t->nseq };
	}
	*v = (struct sp_fold_view){
		.frames = f->frames, .nframes = f->nframes,
		.stacks = f->stacks, .nstacks = f->nstacks,
		.threads = tv, .nthreads = f->nthreads,
		.counts = f->counts, .ncounts = f->ncounts,
		.start_ns = f->first_ns, .end_ns = f->last_ns,
		.wall_start_ns = f->wall_start,
		.sample_period_ns = f->period_n ? f->period_sum / f->period_n : 0,
		.weight_period = f->o.period,
		.time_name = f->o.off_cpu ? "off-cpu" : f->o.wall ? "wall" : "cpu",
		.mappings = f->mappings, .nmappings = f->nmappings,
		.marks = f->marks, .nmarks = f->nmarks,
	};
	return 0;
}

void sp_fold_view_release(struct sp_fold_view *v)
{
	free((void *)v->threads);
	v->threads = NULL;
}

void sp_top_init(struct sp_top *t)
{
	memset(t, 0, sizeof(*t));
}

void sp_top_release(struct sp_top *t)
{
	free(t->rows);
	free(t->self);
	free(t->total);
	free(t->seen);
	free(t->pids);
	sp_top_init(t);
}

const char *sp_top_name(const struct sp_fold_view *v, const struct sp_top_row *r)
{
	if (r->frame >= v->nframes)
		return "[process]";
	return v->frames[r->frame].name;
}

const char *sp_top_module(const struct sp_fold_view *v, const struct sp_top_row *r)
{
	if (r->frame >= v->nframes)
		return NULL;
	const struct sp_fold_frame *fr = &v->frames[r->frame];
	if (fr->module) {
		const char *slash = strrchr(fr->module, '/');
		return slash ? slash + 1 : fr->module;
	}
	if (fr->kind == SP_FOLD_KERNEL)
		return "[kernel]";
	if (fr->kind == SP_FOLD_JIT)
		return "[jit]";
	return NULL;
}

static uint64_t weight(const struct sp_fold_view *v, const struct sp_top_options *o, size_t i)
{
	if (o->weights)
		return i < o->nweights ? o->weights[i] : 0;
	return v->weight_period ? v->counts[i].period : v->counts[i].samples;
}

/*
 * Adds one stack of weight w: to its leaf's self and, once each, to the
 * total of every frame on it.  stamp tells frames seen on this stack.  A
 * stack with no frame left to show counts for the process itself (slot
 * nframes), so that the self column adds up to every sample.
 */
static void add_functions(struct sp_top *t, const struct sp_fold_stack *s, uint64_t w,
			  uint32_t stamp, size_t nframes)
{
	if (!s->n) {
		t->self[nframes] += w;
		t->total[nframes] += w;
		return;
	}
	t->self[s->frames[s->n - 1]] += w;
	for (size_t j = 0; j < s->n; j++) {
		uint32_t fr = s->frames[j];
		if (t->seen[fr] == stamp)
			continue;
		t->seen[fr] = stamp;
		t->total[fr] += w;
	}
}

/*
 * Adds one stack to the caller of the outermost call of function fn (the
 * way into it, which recursion below does not change).  The slot past
 * the frames is the process, the caller of a root frame.
 */
static void add_callers(struct sp_top *t, const struct sp_fold_stack *s, uint64_t w,
			uint32_t fn, size_t nframes)
{
	for (size_t j = 0; j < s->n; j++) {
		if (s->frames[j] != fn)
			continue;
		size_t caller = j ? s->frames[j - 1] : nframes;
		t->total[caller] += w;
		if (s->frames[s->n - 1] == fn)
			t->self[caller] += w;
		t->function_samples += w;
		return;
	}
}

/* Counts the distinct processes and threads of the samples weighed. */
static int count_who(struct sp_top *t, const struct sp_fold_view *v, const uint8_t *busy)
{
	t->threads = t->processes = 0;
	if (SP_ALLOC_GROW(t->pids, v->nthreads, t->allocpids) < 0)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < v->nthreads; i++)
		if (busy[i]) {
			t->threads++;
			t->pids[n++] = v->threads[i].pid;
		}
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < i && t->pids[j] != t->pids[i])
			j++;
		if (j == i)
			t->processes++;
		if (t->processes > 4096)
			break;	/* enough to say "many" without a quadratic wait */
	}
	return 0;
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct sp_top_row *x = a, *y = b;
	const struct sp_fold_view *v = ((const void **)arg)[0];
	enum sp_top_sort sort = *(const enum sp_top_sort *)((const void **)arg)[1];
	uint64_t kx = sort == SP_TOP_SELF ? x->self : x->total;
	uint64_t ky = sort == SP_TOP_SELF ? y->self : y->total;
	uint64_t lx = sort == SP_TOP_SELF ? x->total : x->self;
	uint64_t ly = sort == SP_TOP_SELF ? y->total : y->self;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(sp_top_name(v, x), sp_top_name(v, y));
}

/* Makes the rows of the slots with samples that the filter keeps, sorted. */
static int make_rows(struct sp_top *t, const struct sp_fold_view *v, const struct sp_top_options *o,
		     size_t nslots)
{
	t->nrows = 0;
	for (size_t i = 0; i < nslots; i++) {
		if (!t->total[i] && !t->self[i])
			continue;
		struct sp_top_row r = { i < v->nframes ? (uint32_t)i : SP_TOP_ROOT,
					t->self[i], t->total[i] };
		if (o->filter && *o->filter && !strstr(sp_top_name(v, &r), o->filter))
			continue;
		if (SP_ALLOC_GROW(t->rows, t->nrows + 1, t->allocrows) < 0)
			return -1;
		t->rows[t->nrows++] = r;
	}
	const void *arg[2] = { v, &o->sort };
	if (t->nrows)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), row_cmp, arg);
	return 0;
}

int sp_top_compute(struct sp_top *t, const struct sp_fold_view *v, const struct sp_top_options *o,
		   struct sp_error *err)
{
	size_t nslots = v->nframes + 1;
	uint8_t *busy = calloc(v->nthreads ? v->nthreads : 1, 1);
	if (!busy || SP_ALLOC_GROW(t->self, nslots, t->allocself) < 0 ||
	    SP_ALLOC_GROW(t->total, nslots, t->alloctotal) < 0 ||
	    SP_ALLOC_GROW(t->seen, nslots, t->allocseen) < 0)
		goto nomem;
	memset(t->self, 0, nslots * sizeof(*t->self));
	memset(t->total, 0, nslots * sizeof(*t->total));
	memset(t->seen, 0, nslots * sizeof(*t->seen));
	t->samples = t->function_samples = 0;

	for (size_t i = 0; i < v->ncounts; i++) {
		const struct sp_fold_count *c = &v->counts[i];
		uint64_t w = weight(v, o, i);
		if (!w || (o->pid && v->threads[c->thread].pid != o->pid))
			continue;
		busy[c->thread] = 1;
		t->samples += w;
		const struct sp_fold_stack *s = &v->stacks[c->stack];
		if (o->callers_of == SP_TOP_NONE)
			add_functions(t, s, w, (uint32_t)i + 1, v->nframes);
		else if (o->callers_of < v->nframes)
			add_callers(t, s, w, o->callers_of, v->nframes);
	}
	int rc = count_who(t, v, busy);
	free(busy);
	busy = NULL;
	if (rc < 0 || make_rows(t, v, o, nslots) < 0)
		goto nomem;
	return 0;
nomem:
	free(busy);
	return sp_error_set(err, SP_ERR_NOMEM, "out of memory for the top report");
}

int sp_top_write(const struct sp_top *t, const struct sp_fold_view *v, size_t n, FILE *out)
{
	fprintf(out, "# %llu samples\n", (unsigned long long)t->samples);
	fprintf(out, "# %7s %9s %7s %9s  %s\n", "self%", "self", "total%", "total",
		"function (module)");
	double all = t->samples ? (double)t->samples : 1;
	for (size_t i = 0; i < t->nrows && (!n || i < n); i++) {
		const struct sp_top_row *r = &t->rows[i];
		const char *mod = sp_top_module(v, r);
		fprintf(out, "  %6.2f%% %9llu %6.2f%% %9llu  %s", 100.0 * r->self / all,
			(unsigned long long)r->self, 100.0 * r->total / all,
			(unsigned long long)r->total, sp_top_name(v, r));
		if (mod)
			fprintf(out, " (%s)", mod);
		fputc('\n', out);
	}
	return 0;
}
