/* SPDX-License-Identifier: MIT
 * The Firefox Profiler exporter (see fold.h): the profiler's "processed
 * profile" JSON, version FX_VERSION (meta.preprocessedProfileVersion), the
 * version samply writes; the profiler upgrades it to its own on loading.
 *
 * At that version the stack, frame, function, resource, native symbol,
 * source and string tables are shared by the threads (profile.shared) and
 * the libraries are profile.libs; a thread has its samples and markers.
 * Here:
 *
 * - a thread of the view is a thread of the profile, its samples in time
 *   order, times in milliseconds from the earliest instant the profile
 *   shows (meta.startTime is that instant on the wall clock, from the
 *   header's anchor);
 * - a display frame is a frame and a function of the same index, named as
 *   the folded lines name it; its module a resource, and a library when
 *   the module has a build-id (breakpadId: the build-id's first 16 bytes
 *   as a GUID, then age 0, as breakpad and samply spell it; codeId: the
 *   whole build-id in hex);
 * - stacks are the prefix tree of the view's stacks (prefixOffset: how
 *   far back the parent is, 0 for a root);
 * - the categories are Other (the default the format requires, grey),
 *   User, Kernel, JIT and Off-CPU, a frame's by its kind;
 * - an off-CPU sample (its leaf [off-cpu] or [preempted]) is placed when
 *   its thread left the CPU, its time less its period, so it spans the
 *   interval the thread was off; weights are milliseconds ("tracing-ms")
 *   with --wall and --off-cpu, the periods as counts with --weight period,
 *   and absent (one sample each) otherwise;
 * - markers: "Process start", "Thread start", "Process exit" and "Thread
 *   exit" on the thread concerned, and "Lost" (from the sample before the
 *   loss was reported to the report) and "Throttled" (until the
 *   unthrottle of its CPU, or the end) on the first thread of every
 *   process.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fold/internal.h"
#include "util/alloc.h"
#include "util/jsonw.h"
#include "util/utf8.h"

#define FX_VERSION 66

/* Bytes of JSON gathered before they are written out. */
#define FLUSH_AT (64u << 10)

enum { CAT_OTHER, CAT_USER, CAT_KERNEL, CAT_JIT, CAT_OFF_CPU, NCATS };

static const struct {
	const char *name, *color;
} categories[NCATS] = {
	{ "Other", "grey" }, { "User", "yellow" }, { "Kernel", "orange" },
	{ "JIT", "green" },  { "Off-CPU", "blue" },
};

/* Where the JSON goes: out as it is, or through deflate. */
struct sink {
	FILE *out;
	bool gzip, zinit;
	z_stream zs;
	const char *zerr;	/* zlib's complaint, or NULL */
};

static int sink_put(struct sink *s, const void *p, size_t n, bool finish)
{
	if (!s->gzip) {
		/* A write error is the caller's to report, from ferror(out). */
		if (n)
			fwrite(p, 1, n, s->out);
		return 0;
	}
	unsigned char chunk[16384];
	s->zs.next_in = (unsigned char *)p;
	s->zs.avail_in = (uInt)n;
	int zrc;
	do {
		s->zs.next_out = chunk;
		s->zs.avail_out = sizeof(chunk);
		zrc = deflate(&s->zs, finish ? Z_FINISH : Z_NO_FLUSH);
		if (zrc == Z_STREAM_ERROR) {
			s->zerr = s->zs.msg ? s->zs.msg : "deflate failed";
			return -1;
		}
		fwrite(chunk, 1, sizeof(chunk) - s->zs.avail_out, s->out);
		if (ferror(s->out))
			return 0;
	} while (s->zs.avail_out == 0 || (finish && zrc != Z_STREAM_END));
	return 0;
}

/* Writes what b holds and empties it; -1 when memory ran out before, or zlib failed. */
static int flush(struct sp_buf *b, struct sink *s)
{
	if (b->oom)
		return -1;
	int rc = sink_put(s, b->p, b->len, false);
	sp_buf_reset(b);
	return rc;
}

/* ---- the shared string table ---- */

struct str_ent {
	struct sp_hashmap_entry e;
	const char *s;
	uint32_t idx;
};

struct strings {
	struct sp_hashmap map;
	const char **v;
	size_t n, alloc;
	bool oom;
};

static int str_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata)
{
	(void)keydata;
	return strcmp(sp_container_of(a, struct str_ent, e)->s, sp_container_of(b, struct str_ent, e)->s);
}

/* The index of s (which must outlive the table) in the string array. */
static uint32_t str_index(struct strings *t, const char *s)
{
	struct str_ent key = { .s = s };
	key.e.hash = sp_hash_str(s);
	struct sp_hashmap_entry *hit = sp_hashmap_get(&t->map, &key.e, NULL);
	if (hit)
		return sp_container_of(hit, struct str_ent, e)->idx;
	struct str_ent *e = malloc(sizeof(*e));
	if (!e || SP_ALLOC_GROW(t->v, t->n + 1, t->alloc) < 0) {
		free(e);
		t->oom = true;
		return 0;
	}
	*e = key;
	e->idx = (uint32_t)t->n;
	if (sp_hashmap_add(&t->map, &e->e) < 0) {
		free(e);
		t->oom = true;
		return 0;
	}
	t->v[t->n++] = s;
	return e->idx;
}

static void free_str_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct str_ent, e));
}

/* ---- resources and libraries ---- */

/* A module (path and build-id) of the frames: a resource, and a lib when it has a build-id. */
struct res_ent {
	struct sp_hashmap_entry e;
	const struct sp_fold_frame *fr;	/* the first frame of it */
	uint32_t idx;
	int32_t lib;			/* -1: none */
};

static int res_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata)
{
	const struct sp_fold_frame *x = sp_container_of(a, struct res_ent, e)->fr;
	const struct sp_fold_frame *y = sp_container_of(b, struct res_ent, e)->fr;
	(void)keydata;
	return strcmp(x->module, y->module) != 0 || x->build_id_len != y->build_id_len ||
	       (x->build_id_len && memcmp(x->build_id, y->build_id, (size_t)x->build_id_len) != 0);
}

static void free_res_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct res_ent, e));
}

/* ---- the exporter's state ---- */

struct fx {
	const struct sp_fold_view *v;
	struct strings str;
	/* Per display frame: its resource (-1: none), its source (-1: none). */
	int32_t *frame_res, *frame_src;
	const struct sp_fold_frame **res;	/* a frame of each resource */
	int32_t *res_lib;
	size_t nres;
	const struct sp_fold_frame **libs;	/* a frame of each lib */
	size_t nlibs;
	uint32_t *src_name;			/* per source: its file's string */
	size_t nsrc;
	/* The prefix tree of stacks. */
	uint32_t *node_prefix, *node_frame;	/* prefix: node + 1, 0 for a root */
	size_t nnodes, allocprefix, allocframe;
	uint32_t *stack_node;			/* per view stack: node + 1, 0: none */
	uint64_t zero;				/* the profile's time 0, stream clock */
	uint32_t *by_ids;			/* thread indices by pid, tid, index */
	uint32_t *rank;				/* per thread: its place in by_ids */
	bool *first_of_process;			/* per thread */
	long *mark_thread;			/* per mark: see place_marks() */
	uint64_t *mark_end;
	bool oom;
};

static int nomem(struct fx *x)
{
	x->oom = true;
	return -1;
}

static bool is_off_cpu_frame(const struct sp_fold_frame *fr)
{
	return !fr->module && fr->address_only &&
	       (strcmp(fr->name, SP_FOLD_OFF_CPU) == 0 || strcmp(fr->name, SP_FOLD_PREEMPTED) == 0);
}

static unsigned frame_category(const struct sp_fold_frame *fr)
{
	if (is_off_cpu_frame(fr))
		return CAT_OFF_CPU;
	if (fr->kind == SP_FOLD_KERNEL)
		return CAT_KERNEL;
	if (fr->kind == SP_FOLD_JIT)
		return CAT_JIT;
	/* [idle], [no frames] and the like name no code. */
	if (!fr->module && fr->address_only)
		return strcmp(fr->name, "[kernel]") == 0 ? CAT_KERNEL : CAT_OTHER;
	return CAT_USER;
}

/* Resources, libraries and sources of the frames. */
static int build_modules(struct fx *x)
{
	const struct sp_fold_view *v = x->v;
	size_t n = v->nframes ? v->nframes : 1, allocres = 0, allocreslib = 0, alloclibs = 0;
	size_t allocsrc = 0;
	struct sp_hashmap map;
	struct sp_u64map srcmap;
	int rc = 0;
	x->frame_res = malloc(n * sizeof(*x->frame_res));
	x->frame_src = malloc(n * sizeof(*x->frame_src));
	if (!x->frame_res || !x->frame_src)
		return nomem(x);
	sp_hashmap_init(&map, res_cmp);
	sp_u64map_init(&srcmap);
	for (size_t i = 0; i < v->nframes && rc == 0; i++) {
		const struct sp_fold_frame *fr = &v->frames[i];
		x->frame_res[i] = x->frame_src[i] = -1;
		if (fr->file && fr->file[0]) {
			uint32_t s = str_index(&x->str, fr->file);
			uintptr_t hit = (uintptr_t)sp_u64map_get(&srcmap, (uint64_t)s + 1);
			if (!hit) {
				if (SP_ALLOC_GROW(x->src_name, x->nsrc + 1, allocsrc) < 0 ||
				    sp_u64map_put(&srcmap, (uint64_t)s + 1, (void *)(uintptr_t)(x->nsrc + 1)) < 0) {
					rc = nomem(x);
					break;
				}
				x->src_name[x->nsrc] = s;
				hit = ++x->nsrc;
			}
			x->frame_src[i] = (int32_t)(hit - 1);
		}
		if (!fr->module)
			continue;
		struct res_ent key = { .fr = fr };
		key.e.hash = sp_hash_str(fr->module) ^
			     (fr->build_id_len ? sp_hash_bytes(fr->build_id, (size_t)fr->build_id_len) : 0);
		struct sp_hashmap_entry *hit = sp_hashmap_get(&map, &key.e, NULL);
		if (hit) {
			x->frame_res[i] = (int32_t)sp_container_of(hit, struct res_ent, e)->idx;
			continue;
		}
		struct res_ent *e = malloc(sizeof(*e));
		if (!e || SP_ALLOC_GROW(x->res, x->nres + 1, allocres) < 0 ||
		    SP_ALLOC_GROW(x->res_lib, x->nres + 1, allocreslib) < 0) {
			free(e);
			rc = nomem(x);
			break;
		}
		*e = key;
		e->idx = (uint32_t)x->nres;
		e->lib = -1;
		if (fr->build_id_len > 0) {
			if (SP_ALLOC_GROW(x->libs, x->nlibs + 1, alloclibs) < 0) {
				free(e);
				rc = nomem(x);
				break;
			}
			x->libs[x->nlibs] = fr;
			e->lib = (int32_t)x->nlibs++;
		}
		if (sp_hashmap_add(&map, &e->e) < 0) {
			free(e);
			rc = nomem(x);
			break;
		}
		x->res[x->nres] = fr;
		x->res_lib[x->nres] = e->lib;
		x->frame_res[i] = (int32_t)x->nres++;
	}
	sp_hashmap_release(&map, free_res_ent);
	sp_u64map_release(&srcmap, NULL);
	return rc;
}

/* The node of view stack k in the prefix tree, added with its prefixes; 0: the empty stack. */
static int stack_node(struct fx *x, struct sp_u64map *tree, uint32_t k, uint32_t *out)
{
	if (x->stack_node[k]) {
		*out = x->stack_node[k];
		return 0;
	}
	const struct sp_fold_stack *st = &x->v->stacks[k];
	uint32_t node = 0;	/* node + 1 */
	for (size_t i = 0; i < st->n; i++) {
		uint64_t key = (uint64_t)node << 32 | st->frames[i];
		uintptr_t hit = (uintptr_t)sp_u64map_get(tree, key + 1);
		if (!hit) {
			if (SP_ALLOC_GROW(x->node_prefix, x->nnodes + 1, x->allocprefix) < 0 ||
			    SP_ALLOC_GROW(x->node_frame, x->nnodes + 1, x->allocframe) < 0)
				return nomem(x);
			x->node_prefix[x->nnodes] = node;
			x->node_frame[x->nnodes] = st->frames[i];
			hit = ++x->nnodes;
			if (sp_u64map_put(tree, key + 1, (void *)hit) < 0)
				return nomem(x);
		}
		node = (uint32_t)hit;
	}
	x->stack_node[k] = node;
	*out = node;
	return 0;
}

/* ---- threads ---- */

/* A sample of a thread as the profile places it. */
struct fx_sample {
	uint64_t time;		/* stream clock: when it starts */
	uint64_t weight;
	uint32_t node;		/* + 1; 0: the empty stack */
	uint32_t order;		/* its place in the thread's sequence, for a stable sort */
};

static int sample_order(const void *a, const void *b)
{
	const struct fx_sample *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether sample s of the view is off the CPU (its leaf says so). */
static bool off_cpu_sample(const struct sp_fold_view *v, const struct sp_fold_sample *s)
{
	const struct sp_fold_stack *st = &v->stacks[s->stack];
	return v->weight_period && st->n && is_off_cpu_frame(&v->frames[st->frames[st->n - 1]]);
}

static uint64_t sample_start(const struct sp_fold_view *v, const struct sp_fold_sample *s)
{
	if (off_cpu_sample(v, s))
		return s->time > s->weight ? s->time - s->weight : 0;
	return s->time;
}

static double ms(const struct fx *x, uint64_t t)
{
	return t >= x->zero ? (double)(t - x->zero) / 1e6 : -((double)(x->zero - t) / 1e6);
}

/* Thread indices sorted by pid, tid, then index: to find a thread by its ids. */
static int by_ids(const void *a, const void *b, void *view)
{
	const struct sp_fold_view *v = view;
	const struct sp_fold_thread *x = &v->threads[*(const uint32_t *)a];
	const struct sp_fold_thread *y = &v->threads[*(const uint32_t *)b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * The thread of the view with pid and tid, the first or the last of them
 * (a tid seen under several names is several threads), or -1.
 */
static long find_thread(const struct fx *x, uint32_t pid, uint32_t tid, bool last)
{
	const struct sp_fold_view *v = x->v;
	size_t lo = 0, hi = v->nthreads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sp_fold_thread *t = &v->threads[x->by_ids[mid]];
		if (t->pid < pid || (t->pid == pid && t->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == v->nthreads || v->threads[x->by_ids[lo]].pid != pid ||
	    v->threads[x->by_ids[lo]].tid != tid)
		return -1;
	while (last && lo + 1 < v->nthreads && v->threads[x->by_ids[lo + 1]].pid == pid &&
	       v->threads[x->by_ids[lo + 1]].tid == tid)
		lo++;
	return x->by_ids[lo];
}

/*
 * Where each mark goes: mark_thread[i] the thread of a fork or exit (the
 * first of its ids for a fork, the last for an exit), -1 for none, -2 for
 * the first thread of every process (losses); mark_end[i] when a throttle
 * ends.  And first_of_process per thread.
 */
static int place_marks(struct fx *x)
{
	const struct sp_fold_view *v = x->v;
	size_t nt = v->nthreads ? v->nthreads : 1, nm = v->nmarks ? v->nmarks : 1;
	x->by_ids = malloc(nt * sizeof(*x->by_ids));
	x->rank = malloc(nt * sizeof(*x->rank));
	x->first_of_process = calloc(nt, sizeof(*x->first_of_process));
	x->mark_thread = malloc(nm * sizeof(*x->mark_thread));
	x->mark_end = malloc(nm * sizeof(*x->mark_end));
	if (!x->by_ids || !x->rank || !x->first_of_process || !x->mark_thread || !x->mark_end)
		return nomem(x);
	for (size_t t = 0; t < v->nthreads; t++)
		x->by_ids[t] = (uint32_t)t;
	qsort_r(x->by_ids, v->nthreads, sizeof(*x->by_ids), by_ids, (void *)v);
	for (size_t i = 0; i < v->nthreads; i++)
		x->rank[x->by_ids[i]] = (uint32_t)i;
	/* The first thread of a process: the lowest index of its pid. */
	for (size_t i = 0; i < v->nthreads;) {
		uint32_t pid = v->threads[x->by_ids[i]].pid, first = x->by_ids[i];
		size_t k = i;
		for (; k < v->nthreads && v->threads[x->by_ids[k]].pid == pid; k++)
			if (x->by_ids[k] < first)
				first = x->by_ids[k];
		x->first_of_process[first] = true;
		i = k;
	}
	for (size_t i = 0; i < v->nmarks; i++) {
		const struct sp_fold_mark *m = &v->marks[i];
		x->mark_end[i] = m->time;
		switch (m->kind) {
		case SP_MARK_FORK:
		case SP_MARK_EXIT:
			x->mark_thread[i] = find_thread(x, m->pid, m->tid, m->kind == SP_MARK_EXIT);
			break;
		case SP_MARK_LOST:
			x->mark_thread[i] = -2;
			break;
		case SP_MARK_THROTTLE:
			x->mark_thread[i] = -2;
			x->mark_end[i] = v->end_ns > m->time ? v->end_ns : m->time;
			/* Throttling is rare: a scan for its end is cheap. */
			for (size_t j = i + 1; j < v->nmarks; j++)
				if (v->marks[j].kind == SP_MARK_UNTHROTTLE && v->marks[j].cpu == m->cpu) {
					x->mark_end[i] = v->marks[j].time;
					break;
				}
			break;
		default:
			x->mark_thread[i] = -1;
			break;
		}
	}
	return 0;
}

/* A marker of a thread, gathered before it is written. */
struct fx_marker {
	const char *name;
	uint64_t start, end;
	bool interval;
	char detail[128];
};

/*
 * The markers of thread t: its own births and deaths, and, when it is the
 * first of its process, losses and throttling.
 */
static int thread_markers(const struct fx *x, size_t t, struct fx_marker **out, size_t *nout)
{
	const struct sp_fold_view *v = x->v;
	const struct sp_fold_thread *th = &v->threads[t];
	bool first_of_process = x->first_of_process[t];
	struct fx_marker *mk = NULL;
	size_t n = 0, alloc = 0;
	for (size_t i = 0; i < v->nmarks; i++) {
		const struct sp_fold_mark *m = &v->marks[i];
		struct fx_marker k = { .start = m->time, .end = m->time };
		switch (m->kind) {
		case SP_MARK_FORK:
		case SP_MARK_EXIT:
			if (x->mark_thread[i] != (long)t)
				continue;
			k.name = m->kind == SP_MARK_FORK ? (m->pid == m->tid ? "Process start" : "Thread start") :
				 (m->pid == m->tid ? "Process exit" : "Thread exit");
			snprintf(k.detail, sizeof(k.detail), "%s %u/%u", th->comm, m->pid, m->tid);
			break;
		case SP_MARK_LOST:
			if (!first_of_process)
				continue;
			k.name = "Lost";
			k.start = m->since;
			k.interval = true;
			if (m->cpu != UINT32_MAX)
				snprintf(k.detail, sizeof(k.detail), "%llu %s lost on CPU %u",
					 (unsigned long long)m->count, m->samples ? "samples" : "records", m->cpu);
			else
				snprintf(k.detail, sizeof(k.detail), "%llu %s lost",
					 (unsigned long long)m->count, m->samples ? "samples" : "records");
			break;
		case SP_MARK_THROTTLE:
			if (!first_of_process)
				continue;
			k.name = "Throttled";
			k.interval = true;
			k.end = x->mark_end[i];
			if (m->cpu != UINT32_MAX)
				snprintf(k.detail, sizeof(k.detail), "sampling throttled on CPU %u", m->cpu);
			else
				snprintf(k.detail, sizeof(k.detail), "sampling throttled");
			break;
		default:
			continue;
		}
		if (SP_ALLOC_GROW(mk, n + 1, alloc) < 0) {
			free(mk);
			return -1;
		}
		mk[n++] = k;
	}
	*out = mk;
	*nout = n;
	return 0;
}

/* The time of the first mark of kind for pid/tid, or UINT64_MAX. */
static uint64_t mark_time(const struct sp_fold_view *v, enum sp_fold_mark_kind kind, uint32_t pid,
			  uint32_t tid)
{
	for (size_t i = 0; i < v->nmarks; i++)
		if (v->marks[i].kind == kind && v->marks[i].pid == pid && v->marks[i].tid == tid)
			return v->marks[i].time;
	return UINT64_MAX;
}

/*
 * The member key, an array of n values, value i written by body (with
 * size_t i in scope); the JSON gathered is written out as it grows, and
 * *rc set to -1 when that fails.
 */
#define COLUMN(j, s, rc, key, n, body) \
	do { \
		sp_jw_key(j, key); \
		sp_jw_array_begin(j); \
		for (size_t i = 0; i < (n) && *(rc) == 0; i++) { \
			body; \
			if ((j)->b->len >= FLUSH_AT) \
				*(rc) = flush((j)->b, s); \
		} \
		sp_jw_array_end(j); \
	} while (0)

/* The member key, an empty array. */
static void jw_empty(struct sp_jw *j, const char *key)
{
	sp_jw_key(j, key);
	sp_jw_array_begin(j);
	sp_jw_array_end(j);
}

/* An index, or null when it is negative (none). */
static void jw_index(struct sp_jw *j, int64_t v)
{
	if (v < 0)
		sp_jw_null(j);
	else
		sp_jw_u64(j, (uint64_t)v);
}

/* A string member, made valid UTF-8 as the other exporters make names. */
static void jw_kv_text(struct sp_jw *j, struct sp_buf *tmp, const char *key, const char *s)
{
	sp_utf8_sanitize(tmp, s, strlen(s));
	if (tmp->oom)
		j->b->oom = 1;
	sp_jw_key(j, key);
	sp_jw_strn(j, tmp->len ? tmp->p : "", tmp->len);
}

static void jw_time_or_null(struct sp_jw *j, const struct fx *x, const char *key, uint64_t t)
{
	sp_jw_key(j, key);
	if (t == UINT64_MAX)
		sp_jw_null(j);
	else
		sp_jw_double(j, ms(x, t));
}

static int write_thread(struct fx *x, size_t t, struct sp_jw *j, struct sp_buf *tmp,
			struct sink *s)
{
	const struct sp_fold_view *v = x->v;
	const struct sp_fold_thread *th = &v->threads[t];
	struct fx_sample *smp = malloc((th->nseq ? th->nseq : 1) * sizeof(*smp));
	struct fx_marker *mk = NULL;
	size_t nmk = 0;
	if (!smp || thread_markers(x, t, &mk, &nmk) < 0) {
		free(smp);
		return nomem(x);
	}
	for (size_t i = 0; i < th->nseq; i++) {
		const struct sp_fold_sample *q = &th->seq[i];
		smp[i] = (struct fx_sample){ sample_start(v, q), q->weight, x->stack_node[q->stack],
					     (uint32_t)i };
	}
	qsort(smp, th->nseq, sizeof(*smp), sample_order);

	char num[32];
	bool main_thread = th->pid == th->tid;
	sp_buf_addc(j->b, '\n');
	sp_jw_object_begin(j);
	jw_kv_text(j, tmp, "name", main_thread ? th->comm : th->thread_comm);
	sp_jw_kv_bool(j, "isMainThread", main_thread);
	jw_kv_text(j, tmp, "processName", th->comm);
	sp_jw_kv_str(j, "processType", "default");
	snprintf(num, sizeof(num), "%u", th->pid);
	sp_jw_kv_str(j, "pid", num);
	/* A tid seen under several names (an exec) is several threads: "TID.N" after the first. */
	unsigned again = 0;
	for (long u = find_thread(x, th->pid, th->tid, false); u >= 0 && u != (long)t; again++)
		u = x->by_ids[x->rank[u] + 1];
	if (again)
		snprintf(num, sizeof(num), "%u.%u", th->tid, again);
	else
		snprintf(num, sizeof(num), "%u", th->tid);
	sp_jw_kv_str(j, "tid", num);
	uint64_t pstart = mark_time(v, SP_MARK_FORK, th->pid, th->pid);
	uint64_t tstart = mark_time(v, SP_MARK_FORK, th->pid, th->tid);
	sp_jw_kv_double(j, "processStartupTime", pstart == UINT64_MAX ? 0 : ms(x, pstart));
	jw_time_or_null(j, x, "processShutdownTime", mark_time(v, SP_MARK_EXIT, th->pid, th->pid));
	sp_jw_kv_double(j, "registerTime", tstart == UINT64_MAX ? 0 : ms(x, tstart));
	jw_time_or_null(j, x, "unregisterTime", mark_time(v, SP_MARK_EXIT, th->pid, th->tid));
	jw_empty(j, "pausedRanges");
	sp_jw_kv_bool(j, "showMarkersInTimeline", nmk > 0);

	/* Samples, one column after another. */
	bool tracing = v->weight_period && strcmp(v->time_name, "cpu") != 0;
	int rc = 0;
	sp_jw_key(j, "samples");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", th->nseq);
	sp_jw_kv_str(j, "weightType", tracing ? "tracing-ms" : "samples");
	COLUMN(j, s, &rc, "stack", th->nseq, jw_index(j, (int64_t)smp[i].node - 1));
	COLUMN(j, s, &rc, "time", th->nseq, sp_jw_double(j, ms(x, smp[i].time)));
	if (!v->weight_period) {
		/* One sample each. */
		sp_jw_key(j, "weight");
		sp_jw_null(j);
	} else if (tracing)
		COLUMN(j, s, &rc, "weight", th->nseq, sp_jw_double(j, (double)smp[i].weight / 1e6));
	else
		COLUMN(j, s, &rc, "weight", th->nseq, sp_jw_u64(j, smp[i].weight));
	sp_jw_object_end(j);

	/* Markers: of category Other and of the one schema, with their detail. */
	sp_jw_key(j, "markers");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", nmk);
	COLUMN(j, s, &rc, "category", nmk, sp_jw_u64(j, CAT_OTHER));
	COLUMN(j, s, &rc, "data", nmk, {
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "type", "stackpulse");
		jw_kv_text(j, tmp, "detail", mk[i].detail);
		sp_jw_object_end(j);
	});
	/* An instant has no end: null. */
	COLUMN(j, s, &rc, "endTime", nmk, {
		if (mk[i].interval)
			sp_jw_double(j, ms(x, mk[i].end));
		else
			sp_jw_null(j);
	});
	COLUMN(j, s, &rc, "name", nmk, sp_jw_u64(j, str_index(&x->str, mk[i].name)));
	/* 1: INTERVAL, 0: INSTANT. */
	COLUMN(j, s, &rc, "phase", nmk, sp_jw_u64(j, mk[i].interval ? 1 : 0));
	COLUMN(j, s, &rc, "startTime", nmk, sp_jw_double(j, ms(x, mk[i].start)));
	sp_jw_object_end(j);
	sp_jw_object_end(j);
	free(smp);
	free(mk);
	if (rc == 0)
		rc = flush(j->b, s);
	return rc;
}

/* ---- the profile ---- */

/*
 * The breakpad debug id of a build-id: its first 16 bytes as a GUID (the
 * first three fields byte-swapped), then age 0.
 */
static void breakpad_id(const struct sp_fold_frame *fr, char *out, size_t len)
{
	unsigned char g[16] = { 0 };
	memcpy(g, fr->build_id, fr->build_id_len < 16 ? (size_t)fr->build_id_len : 16);
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15 };
	size_t o = 0;
	for (int i = 0; i < 16 && o + 3 <= len; i++)
		o += (size_t)snprintf(out + o, len - o, "%02X", g[order[i]]);
	if (o + 2 <= len)
		snprintf(out + o, len - o, "0");
}

static const char *base_name(const char *path)
{
	const char *sl = strrchr(path, '/');
	return sl && sl[1] ? sl + 1 : path;
}

static void write_meta(const struct fx *x, uint64_t wall_ns, bool have_wall, struct sp_jw *j,
		       struct sp_buf *tmp)
{
	const struct sp_fold_view *v = x->v;
	sp_jw_key(j, "meta");
	sp_jw_object_begin(j);
	sp_jw_key(j, "categories");
	sp_jw_array_begin(j);
	for (int c = 0; c < NCATS; c++) {
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "name", categories[c].name);
		sp_jw_kv_str(j, "color", categories[c].color);
		sp_jw_key(j, "subcategories");
		sp_jw_array_begin(j);
		sp_jw_str(j, "Other");
		sp_jw_array_end(j);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
	sp_jw_kv_bool(j, "debug", false);
	sp_jw_key(j, "extensions");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", 0);
	jw_empty(j, "baseURL");
	jw_empty(j, "id");
	jw_empty(j, "name");
	sp_jw_object_end(j);
	sp_jw_kv_double(j, "interval", v->sample_period_ns ? (double)v->sample_period_ns / 1e6 : 1.0);
	sp_jw_kv_u64(j, "preprocessedProfileVersion", FX_VERSION);
	sp_jw_kv_u64(j, "processType", 0);
	/* Named after the process when there is one name. */
	const char *product = v->nthreads ? v->threads[0].comm : "stackpulse";
	for (size_t t = 1; t < v->nthreads; t++)
		if (strcmp(v->threads[t].comm, product) != 0)
			product = "stackpulse";
	jw_kv_text(j, tmp, "product", product);
	sp_jw_kv_str(j, "importedFrom", "stackpulse");
	sp_jw_kv_double(j, "startTime", have_wall ? (double)wall_ns / 1e6 : 0);
	sp_jw_kv_bool(j, "symbolicated", true);
	jw_empty(j, "pausedRanges");
	/* The Gecko format's version, which the profiler ignores here. */
	sp_jw_kv_u64(j, "version", 24);
	sp_jw_kv_bool(j, "usesOnlyOneStackType", true);
	sp_jw_kv_bool(j, "sourceCodeIsNotOnSearchfox", true);
	sp_jw_key(j, "markerSchema");
	sp_jw_array_begin(j);
	sp_jw_object_begin(j);
	sp_jw_kv_str(j, "name", "stackpulse");
	sp_jw_key(j, "display");
	sp_jw_array_begin(j);
	sp_jw_str(j, "marker-chart");
	sp_jw_str(j, "marker-table");
	sp_jw_str(j, "timeline-overview");
	sp_jw_array_end(j);
	sp_jw_kv_str(j, "chartLabel", "{marker.data.detail}");
	sp_jw_kv_str(j, "tooltipLabel", "{marker.name}: {marker.data.detail}");
	sp_jw_kv_str(j, "tableLabel", "{marker.data.detail}");
	sp_jw_kv_str(j, "description", "A record of the stackpulse stream: a process or thread "
		     "born or ended, records lost, sampling throttled");
	sp_jw_key(j, "fields");
	sp_jw_array_begin(j);
	sp_jw_object_begin(j);
	sp_jw_kv_str(j, "key", "detail");
	sp_jw_kv_str(j, "label", "Detail");
	sp_jw_kv_str(j, "format", "string");
	sp_jw_object_end(j);
	sp_jw_array_end(j);
	sp_jw_object_end(j);
	sp_jw_array_end(j);
	sp_jw_object_end(j);
}

static void write_libs(const struct fx *x, struct sp_jw *j, struct sp_buf *tmp)
{
	sp_jw_key(j, "libs");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < x->nlibs; i++) {
		const struct sp_fold_frame *fr = x->libs[i];
		char id[40], code[2 * 64 + 1];
		breakpad_id(fr, id, sizeof(id));
		for (int k = 0; k < fr->build_id_len && k < 64; k++)
			snprintf(code + 2 * k, 3, "%02x", fr->build_id[k]);
		code[2 * (fr->build_id_len < 64 ? fr->build_id_len : 64)] = '\0';
		sp_buf_addc(j->b, '\n');
		sp_jw_object_begin(j);
		jw_kv_text(j, tmp, "name", base_name(fr->module));
		jw_kv_text(j, tmp, "path", fr->module);
		jw_kv_text(j, tmp, "debugName", base_name(fr->module));
		jw_kv_text(j, tmp, "debugPath", fr->module);
		sp_jw_kv_str(j, "breakpadId", id);
		sp_jw_kv_str(j, "codeId", code);
		sp_jw_key(j, "arch");
		sp_jw_null(j);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

static int write_shared(struct fx *x, struct sp_jw *j, struct sp_buf *tmp, struct sink *s)
{
	const struct sp_fold_view *v = x->v;
	const struct sp_fold_frame *fr = v->frames;
	size_t nf = v->nframes;
	int rc = 0;
	sp_jw_key(j, "shared");
	sp_jw_object_begin(j);

	/* Parents come first: node i's parent is node_prefix[i] - 1, before i. */
	sp_jw_key(j, "stackTable");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", x->nnodes);
	COLUMN(j, s, &rc, "prefixOffset", x->nnodes,
	       sp_jw_u64(j, x->node_prefix[i] ? i - (x->node_prefix[i] - 1) : 0));
	COLUMN(j, s, &rc, "frame", x->nnodes, sp_jw_u64(j, x->node_frame[i]));
	sp_jw_object_end(j);

	/* Frames and functions: one of each per display frame, of its index. */
	sp_jw_key(j, "frameTable");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", nf);
	COLUMN(j, s, &rc, "func", nf, sp_jw_u64(j, i));
	COLUMN(j, s, &rc, "category", nf, sp_jw_u64(j, frame_category(&fr[i])));
	COLUMN(j, s, &rc, "subcategory", nf, sp_jw_u64(j, 0));
	COLUMN(j, s, &rc, "line", nf, jw_index(j, fr[i].line ? (int64_t)fr[i].line : -1));
	COLUMN(j, s, &rc, "column", nf, sp_jw_null(j));
	/*
	 * Library-relative, when the frame has a library; the profiler keeps
	 * addresses in 32 bits (an Int32Array from version 67 on), so a larger
	 * one (a kernel's) is left out: -1.
	 */
	COLUMN(j, s, &rc, "address", nf,
	       sp_jw_i64(j, fr[i].has_rel && fr[i].rel <= INT32_MAX && x->frame_res[i] >= 0 &&
			     x->res_lib[x->frame_res[i]] >= 0 ? (int64_t)fr[i].rel : -1));
	COLUMN(j, s, &rc, "nativeSymbol", nf, sp_jw_null(j));
	COLUMN(j, s, &rc, "inlineDepth", nf, sp_jw_u64(j, 0));
	COLUMN(j, s, &rc, "innerWindowID", nf, sp_jw_u64(j, 0));
	COLUMN(j, s, &rc, "originalLocation", nf, sp_jw_null(j));
	sp_jw_object_end(j);

	sp_jw_key(j, "funcTable");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", nf);
	COLUMN(j, s, &rc, "name", nf, sp_jw_u64(j, str_index(&x->str, fr[i].name)));
	COLUMN(j, s, &rc, "isJS", nf, sp_jw_bool(j, false));
	COLUMN(j, s, &rc, "relevantForJS", nf, sp_jw_bool(j, false));
	COLUMN(j, s, &rc, "resource", nf, sp_jw_i64(j, x->frame_res[i]));
	COLUMN(j, s, &rc, "source", nf, jw_index(j, x->frame_src[i]));
	COLUMN(j, s, &rc, "lineNumber", nf, sp_jw_null(j));
	COLUMN(j, s, &rc, "columnNumber", nf, sp_jw_null(j));
	COLUMN(j, s, &rc, "originalLocation", nf, sp_jw_null(j));
	sp_jw_object_end(j);

	/* No native symbols: the frames are named already. */
	sp_jw_key(j, "nativeSymbols");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", 0);
	jw_empty(j, "address");
	jw_empty(j, "functionSize");
	jw_empty(j, "libIndex");
	jw_empty(j, "name");
	sp_jw_object_end(j);

	/* Resource types: 1 a library, 0 unknown (a module without a build-id). */
	sp_jw_key(j, "resourceTable");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", x->nres);
	COLUMN(j, s, &rc, "lib", x->nres, jw_index(j, x->res_lib[i]));
	COLUMN(j, s, &rc, "name", x->nres,
	       sp_jw_u64(j, str_index(&x->str, base_name(x->res[i]->module))));
	COLUMN(j, s, &rc, "host", x->nres, sp_jw_null(j));
	COLUMN(j, s, &rc, "type", x->nres, sp_jw_u64(j, x->res_lib[i] >= 0 ? 1 : 0));
	sp_jw_object_end(j);

	sp_jw_key(j, "sources");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", x->nsrc);
	COLUMN(j, s, &rc, "id", x->nsrc, sp_jw_null(j));
	COLUMN(j, s, &rc, "filename", x->nsrc, sp_jw_u64(j, x->src_name[i]));
	COLUMN(j, s, &rc, "startLine", x->nsrc, sp_jw_u64(j, 1));
	COLUMN(j, s, &rc, "startColumn", x->nsrc, sp_jw_u64(j, 1));
	COLUMN(j, s, &rc, "sourceMapURL", x->nsrc, sp_jw_null(j));
	COLUMN(j, s, &rc, "content", x->nsrc, sp_jw_null(j));
	sp_jw_object_end(j);

	sp_jw_key(j, "sourceLocationTable");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "length", 0);
	jw_empty(j, "source");
	jw_empty(j, "line");
	jw_empty(j, "column");
	sp_jw_object_end(j);

	/* The strings last: every table before added its own. */
	COLUMN(j, s, &rc, "stringArray", x->str.n, {
		sp_buf_addc(j->b, '\n');
		sp_utf8_sanitize(tmp, x->str.v[i], strlen(x->str.v[i]));
		if (tmp->oom)
			j->b->oom = 1;
		sp_jw_strn(j, tmp->len ? tmp->p : "", tmp->len);
	});
	sp_jw_object_end(j);
	return rc;
}

static void fx_release(struct fx *x)
{
	sp_hashmap_release(&x->str.map, free_str_ent);
	free(x->str.v);
	free(x->frame_res);
	free(x->frame_src);
	free(x->res);
	free(x->res_lib);
	free(x->libs);
	free(x->src_name);
	free(x->node_prefix);
	free(x->node_frame);
	free(x->stack_node);
	free(x->by_ids);
	free(x->rank);
	free(x->first_of_process);
	free(x->mark_thread);
	free(x->mark_end);
}

int sp_fold_write_firefox(const struct sp_fold_view *v, bool gzip, FILE *out, struct sp_error *err)
{
	struct fx x = { .v = v };
	struct sp_u64map tree;
	sp_hashmap_init(&x.str.map, str_cmp);
	sp_u64map_init(&tree);
	int rc = build_modules(&x);
	x.stack_node = calloc(v->nstacks ? v->nstacks : 1, sizeof(*x.stack_node));
	if (!x.stack_node)
		rc = nomem(&x);
	if (rc == 0)
		rc = place_marks(&x);

	/* The prefix tree of the stacks samples use, and time 0: the earliest instant shown. */
	x.zero = v->start_ns;
	for (size_t t = 0; t < v->nthreads && rc == 0; t++)
		for (size_t i = 0; i < v->threads[t].nseq && rc == 0; i++) {
			const struct sp_fold_sample *q = &v->threads[t].seq[i];
			uint32_t node;
			uint64_t st = sample_start(v, q);
			if (st < x.zero)
				x.zero = st;
			rc = stack_node(&x, &tree, q->stack, &node);
		}
	for (size_t i = 0; i < v->nmarks && v->nthreads; i++) {
		uint64_t st = v->marks[i].kind == SP_MARK_LOST ? v->marks[i].since : v->marks[i].time;
		if (st < x.zero)
			x.zero = st;
	}
	sp_u64map_release(&tree, NULL);
	bool have_wall = v->wall_start_ns != 0;
	uint64_t wall = have_wall ? v->wall_start_ns - (v->start_ns - x.zero) : 0;

	struct sink s = { .out = out, .gzip = gzip };
	if (rc == 0 && gzip) {
		/* 16 + MAX_WBITS: a gzip wrapper, not zlib's own. */
		if (deflateInit2(&s.zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK) {
			fx_release(&x);
			return sp_error_set(err, SP_ERR_NOMEM, "cannot compress: %s",
					    s.zs.msg ? s.zs.msg : "deflateInit2 failed");
		}
		s.zinit = true;
	}

	struct sp_buf b = SP_BUF_INIT, tmp = SP_BUF_INIT;
	struct sp_jw j;
	sp_jw_init(&j, &b);
	if (rc == 0) {
		sp_jw_object_begin(&j);
		write_meta(&x, wall, have_wall, &j, &tmp);
		sp_buf_addc(&b, '\n');
		write_libs(&x, &j, &tmp);
		sp_buf_addc(&b, '\n');
		sp_jw_key(&j, "threads");
		sp_jw_array_begin(&j);
		for (size_t t = 0; t < v->nthreads && rc == 0; t++)
			rc = write_thread(&x, t, &j, &tmp, &s);
		sp_jw_array_end(&j);
		sp_buf_addc(&b, '\n');
		if (rc == 0)
			rc = write_shared(&x, &j, &tmp, &s);
		jw_empty(&j, "pages");
		jw_empty(&j, "profilerOverhead");
		jw_empty(&j, "counters");
		sp_jw_object_end(&j);
		sp_buf_addc(&b, '\n');
		if (rc == 0)
			rc = flush(&b, &s);
		if (rc == 0 && gzip)
			rc = sink_put(&s, NULL, 0, true);
	}
	if (x.str.oom)
		x.oom = true;
	if (s.zinit)
		deflateEnd(&s.zs);
	sp_buf_release(&b);
	sp_buf_release(&tmp);
	fx_release(&x);
	if (rc < 0 || x.oom) {
		if (s.zerr)
			return sp_error_set(err, SP_ERR_NOMEM, "cannot compress: %s", s.zerr);
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	}
	return 0;
}
