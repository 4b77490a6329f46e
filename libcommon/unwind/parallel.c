/* SPDX-License-Identifier: MIT
 * The parallel driver (parallel.h): records copied into batches by the
 * reader, the queue the workers and the writer take them from, and the
 * writer's stage, whose engine replays the workers' stacks.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/addrspace.h"
#include "unwind/census.h"
#include "unwind/parallel-int.h"
#include "util/alloc.h"
#include "util/hashmap.h"

/*
 * A batch goes to the workers when it holds this many samples or bytes,
 * at a summary, and whenever the input is idle (sp_unwind_par_flush()),
 * so that a live stream flows at once.
 */
#define BATCH_SAMPLES 128
#define BATCH_BYTES (4u << 20)
#define ARENA_BLOCK (256u << 10)
/* Batches queued at most, per worker: the reader waits for room beyond. */
#define QUEUED_PER_JOB 2

struct worker {
	struct sp_unwind_par *p;
	struct sp_pworker *pw;
	pthread_t th;
	bool started;
	uint64_t next;			/* the seq of its next batch */
};

struct sp_unwind_par {
	struct sp_unwind_engine engine;	/* the writer stage's: replays the workers' stacks */
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a batch queued, or closing: for the workers */
	pthread_cond_t done;		/* a batch gone through, or closing: for the writer */
	pthread_cond_t room;		/* a batch written: for the reader */
	struct sp_batch *head, *tail;	/* queued, oldest first */
	struct sp_batch *spare;		/* written, kept for reuse */
	size_t nqueued, max_queued;
	uint64_t next_seq;
	bool closing;
	int stopped;			/* the writer stopped: 1 failed write, -1 err */
	struct sp_error err;

	/* The reader's. */
	struct sp_batch *cur;		/* being filled */
	bool finished;

	unsigned jobs;
	struct worker *workers;
	pthread_t writer;
	bool writer_started;

	/* The writer's. */
	struct sp_writer *w;
	struct sp_unwind_stage *stage;
	sp_unwind_par_taken_fn *taken;
	void *arg;
	const struct sp_presult *res;	/* the sample being written */
	const struct sp_pframe *frames;	/* its worker's frames */
	struct sp_unwind_stats merged;	/* the workers' counters at the summary */
	char *denied;
	uint32_t denied_pid;
	int denied_err;
};

/* ---- the replaying engine, on the writer thread ---- */

static void *replay_segment(const struct sp_unwind_engine *e, struct sp_unwinder *u,
			    struct sp_error *err)
{
	(void)u;
	(void)err;
	return sp_container_of(e, struct sp_unwind_par, engine);
}

static void replay_free(void *engine)
{
	(void)engine;
}

static enum sp_unwind_end replay(struct sp_unwind_par *p, struct sp_addrspaces *a,
				 struct sp_uframe *out, size_t max, size_t *n)
{
	const struct sp_presult *r = p->res;
	const struct sp_pframe *f = p->frames + r->off;
	*n = r->n < max ? r->n : max;
	for (size_t i = 0; i < *n; i++)
		out[i] = (struct sp_uframe){ f[i].addr,
			f[i].obj == SP_PAR_NO_OBJ ? NULL : sp_addrspaces_object(a, f[i].obj),
			f[i].rel, f[i].flags };
	return r->end;
}

static enum sp_unwind_end replay_unwind(void *engine, struct sp_addrspaces *a, uint32_t pid,
					const uint64_t *regs, size_t nregs,
					const unsigned char *stack, size_t len, bool full,
					struct sp_uframe *out, size_t max, size_t *n)
{
	(void)pid, (void)regs, (void)nregs, (void)stack, (void)len, (void)full;
	return replay(engine, a, out, max, n);
}

static enum sp_unwind_end replay_chain(void *engine, struct sp_addrspaces *a, uint32_t pid,
				       const uint64_t *ips, size_t nips, bool full,
				       struct sp_uframe *out, size_t max, size_t *n)
{
	(void)pid, (void)ips, (void)nips, (void)full;
	return replay(engine, a, out, max, n);
}

static uint64_t replay_copy_used(void *engine)
{
	return ((struct sp_unwind_par *)engine)->res->used;
}

static void replay_stats(void *engine, struct sp_unwind_stats *st)
{
	*st = ((struct sp_unwind_par *)engine)->merged;
}

static int replay_copy_status(void *engine)
{
	return ((struct sp_unwind_par *)engine)->res->copy_status;
}

static const char *replay_denied(void *engine, uint32_t *pid, int *err)
{
	struct sp_unwind_par *p = engine;
	*pid = p->denied_pid;
	*err = p->denied_err;
	return p->denied;
}

static const struct sp_unwind_engine replay_engine = {
	"stackpulse", replay_segment, replay_free, replay_unwind,
	replay_chain, replay_copy_used, replay_stats, replay_denied, replay_copy_status,
};

/* ---- merging the workers' counters ---- */

static int key_cmp(const void *a, const void *b)
{
	const struct sp_rkey *x = a, *y = b;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->c < y->c ? -1 : x->c > y->c;
}

/* Rules cached by any worker, each once: the misses of one unwinder. */
static uint64_t distinct_rules(struct sp_batch *b, unsigned jobs)
{
	size_t n = 0, k = 0;
	for (unsigned j = 0; j < jobs; j++)
		n += b->slots[j].census->nkeys;
	struct sp_rkey *all = malloc((n ? n : 1) * sizeof(*all));
	if (!all)
		return 0;
	for (unsigned j = 0; j < jobs; j++) {
		const struct sp_census *c = b->slots[j].census;
		memcpy(all + k, c->keys, c->nkeys * sizeof(*all));
		k += c->nkeys;
	}
	qsort(all, n, sizeof(*all), key_cmp);
	uint64_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += i == 0 || key_cmp(&all[i - 1], &all[i]) != 0;
	free(all);
	return d;
}

/* Each object's file counted once, as the first worker that tried it found it. */
static void count_modules(struct sp_unwind_par *p, struct sp_batch *b)
{
	size_t nobjs = 0;
	for (unsigned j = 0; j < p->jobs; j++)
		if (b->slots[j].census->nobjs > nobjs)
			nobjs = b->slots[j].census->nobjs;
	for (size_t i = 0; i < nobjs; i++) {
		enum sp_object_census st = SP_OBJ_UNTRIED;
		for (unsigned j = 0; j < p->jobs && st == SP_OBJ_UNTRIED; j++)
			if (i < b->slots[j].census->nobjs)
				st = b->slots[j].census->objs[i];
		p->merged.modules_opened += st == SP_OBJ_OPENED;
		p->merged.modules_missing += st == SP_OBJ_MISSING;
		p->merged.modules_mismatched += st == SP_OBJ_MISMATCHED;
	}
}

static void merge_census(struct sp_unwind_par *p, struct sp_batch *b)
{
	uint64_t lookups = 0;
	memset(&p->merged, 0, sizeof(p->merged));
	for (unsigned j = 0; j < p->jobs; j++) {
		const struct sp_census *c = b->slots[j].census;
		p->merged.fp_frames += c->st.fp_frames;
		p->merged.scan_frames += c->st.scan_frames;
		lookups += c->st.cache_hits + c->st.cache_misses;
	}
	p->merged.cache_misses = distinct_rules(b, p->jobs);
	p->merged.cache_hits = lookups - p->merged.cache_misses;
	count_modules(p, b);
	free(p->denied);
	p->denied = NULL;
	for (unsigned j = 0; j < p->jobs && !p->denied; j++) {
		const struct sp_census *c = b->slots[j].census;
		if (c->denied && (p->denied = strdup(c->denied))) {
			p->denied_pid = c->denied_pid;
			p->denied_err = c->denied_err;
		}
	}
}

/* ---- batches ---- */

static void *arena_alloc(struct sp_arena *a, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	struct sp_arena_block *b = a->used;
	if (b && b->size - b->used >= n) {
		void *m = b->data + b->used;
		b->used += n;
		return m;
	}
	if (a->spare && a->spare->size >= n) {
		b = a->spare;
		a->spare = b->next;
	} else {
		size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		if (!(b = malloc(sizeof(*b) + size)))
			return NULL;
		b->size = size;
	}
	b->next = a->used;
	a->used = b;
	b->used = n;
	return b->data;
}

static void arena_reset(struct sp_arena *a)
{
	while (a->used) {
		struct sp_arena_block *b = a->used;
		a->used = b->next;
		b->next = a->spare;
		a->spare = b;
	}
}

static void arena_release(struct sp_arena *a)
{
	arena_reset(a);
	while (a->spare) {
		struct sp_arena_block *b = a->spare;
		a->spare = b->next;
		free(b);
	}
}

static void batch_free(struct sp_batch *b, unsigned jobs)
{
	if (!b)
		return;
	for (unsigned j = 0; b->slots && j < jobs; j++) {
		free(b->slots[j].frames);
		sp_census_free(b->slots[j].census);
	}
	free(b->slots);
	free(b->results);
	free(b->items);
	arena_release(&b->arena);
	free(b);
}

/* An empty batch: a written one again, its memory kept, or a new one. */
static struct sp_batch *batch_get(struct sp_unwind_par *p)
{
	pthread_mutex_lock(&p->lock);
	struct sp_batch *b = p->spare;
	if (b)
		p->spare = b->next;
	pthread_mutex_unlock(&p->lock);
	if (!b) {
		if (!(b = calloc(1, sizeof(*b))) || !(b->slots = calloc(p->jobs, sizeof(*b->slots)))) {
			free(b);
			return NULL;
		}
		return b;
	}
	for (unsigned j = 0; j < p->jobs; j++) {
		sp_census_free(b->slots[j].census);
		b->slots[j].census = NULL;
		b->slots[j].nframes = 0;
		b->slots[j].oom = false;
	}
	arena_reset(&b->arena);
	b->next = NULL;
	b->nitems = b->nsamples = b->bytes = 0;
	return b;
}

/* Where a string of the record lies in the copy of its bytes, or a copy of it. */
static const char *relocate(struct sp_arena *z, const char *s, size_t n, const struct sp_record *rec,
			    const char *raw)
{
	if (!s || !n)
		return s;
	if (s >= rec->raw && s + n <= rec->raw + rec->raw_len)
		return raw + (s - rec->raw);
	char *c = arena_alloc(z, n);
	return c ? memcpy(c, s, n) : NULL;
}

/* A deep copy of o into the zone, its strings in the copy of the record's bytes. */
static int copy_obj(struct sp_arena *z, const msgpack_object *o, msgpack_object *d,
		    const struct sp_record *rec, const char *raw)
{
	*d = *o;
	switch (o->type) {
	case MSGPACK_OBJECT_STR:
	case MSGPACK_OBJECT_BIN:
	case MSGPACK_OBJECT_EXT: {
		const char **ptr = o->type == MSGPACK_OBJECT_STR ? &d->via.str.ptr :
				   o->type == MSGPACK_OBJECT_BIN ? &d->via.bin.ptr : &d->via.ext.ptr;
		uint32_t size = o->type == MSGPACK_OBJECT_STR ? o->via.str.size :
				o->type == MSGPACK_OBJECT_BIN ? o->via.bin.size : o->via.ext.size;
		*ptr = relocate(z, *ptr, size, rec, raw);
		return size && !*ptr ? -1 : 0;
	}
	case MSGPACK_OBJECT_ARRAY: {
		uint32_t n = o->via.array.size;
		msgpack_object *a = n ? arena_alloc(z, n * sizeof(*a)) : NULL;
		if (n && !a)
			return -1;
		d->via.array.ptr = a;
		for (uint32_t i = 0; i < n; i++)
			if (copy_obj(z, &o->via.array.ptr[i], &a[i], rec, raw) < 0)
				return -1;
		return 0;
	}
	case MSGPACK_OBJECT_MAP: {
		uint32_t n = o->via.map.size;
		msgpack_object_kv *kv = n ? arena_alloc(z, n * sizeof(*kv)) : NULL;
		if (n && !kv)
			return -1;
		d->via.map.ptr = kv;
		for (uint32_t i = 0; i < n; i++)
			if (copy_obj(z, &o->via.map.ptr[i].key, &kv[i].key, rec, raw) < 0 ||
			    copy_obj(z, &o->via.map.ptr[i].val, &kv[i].val, rec, raw) < 0)
				return -1;
		return 0;
	}
	default:
		return 0;
	}
}

static int add_item(struct sp_batch *b, const struct sp_record *rec, const struct sp_header *hdr)
{
	if (SP_ALLOC_GROW(b->items, b->nitems + 1, b->allocitems) < 0)
		return -1;
	struct sp_item *it = &b->items[b->nitems];
	char *raw = arena_alloc(&b->arena, rec->raw_len ? rec->raw_len : 1);
	msgpack_object *map = arena_alloc(&b->arena, sizeof(*map));
	if (!raw || !map)
		return -1;
	memcpy(raw, rec->raw, rec->raw_len);
	*it = (struct sp_item){ .rec = *rec, .sample = SP_PAR_NO_SAMPLE };
	it->rec.raw = raw;
	it->rec.map = map;
	it->rec.type_name = relocate(&b->arena, rec->type_name, rec->type_len, rec, raw);
	if (copy_obj(&b->arena, rec->map, map, rec, raw) < 0)
		return -1;
	b->bytes += rec->raw_len;
	if (rec->type == SP_R_HEADER) {
		it->hdr = *hdr;
		it->hdr.map = map;
	} else if (rec->type == SP_R_SAMPLE) {
		it->sample = b->nsamples++;
	}
	b->nitems++;
	return 0;
}

/* ---- the queue ---- */

static struct sp_batch *find(struct sp_unwind_par *p, uint64_t seq)
{
	for (struct sp_batch *b = p->head; b; b = b->next)
		if (b->seq == seq)
			return b;
	return NULL;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct sp_unwind_par *p = w->p;
	for (;;) {
		struct sp_batch *b;
		pthread_mutex_lock(&p->lock);
		while (!(b = find(p, w->next)) && !p->closing)
			pthread_cond_wait(&p->work, &p->lock);
		pthread_mutex_unlock(&p->lock);
		if (!b)
			return NULL;
		sp_pworker_batch(w->pw, b);
		w->next++;
		pthread_mutex_lock(&p->lock);
		if (--b->pending == 0)
			pthread_cond_signal(&p->done);
		pthread_mutex_unlock(&p->lock);
	}
}

/* The writer stops: later batches are gone through but not written. */
static void stop(struct sp_unwind_par *p, int how, const struct sp_error *err)
{
	pthread_mutex_lock(&p->lock);
	if (err)
		p->err = *err;
	__atomic_store_n(&p->stopped, how, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
}

static void write_batch(struct sp_unwind_par *p, struct sp_batch *b)
{
	struct sp_error err = { 0 };
	for (unsigned j = 0; j < p->jobs; j++)
		if (b->slots[j].oom) {
			sp_error_set(&err, SP_ERR_NOMEM, "out of memory");
			stop(p, -1, &err);
			return;
		}
	for (size_t i = 0; i < b->nitems; i++) {
		const struct sp_item *it = &b->items[i];
		if (it->rec.type == SP_R_SUMMARY)
			merge_census(p, b);
		if (it->sample != SP_PAR_NO_SAMPLE) {
			p->res = &b->results[it->sample];
			p->frames = b->slots[it->sample % p->jobs].frames;
		}
		if (sp_unwind_stage_record(p->stage, &it->rec, &it->hdr, &err) < 0) {
			stop(p, -1, &err);
			return;
		}
		if (p->taken)
			p->taken(p->arg, &it->rec, p->stage);
		if (sp_writer_failed(p->w)) {
			stop(p, 1, NULL);
			return;
		}
	}
}

/* The next batch every worker has gone through, or NULL when all are written. */
static struct sp_batch *next_done(struct sp_unwind_par *p, bool *unflushed)
{
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct sp_batch *b = p->head;
		if ((b && b->pending == 0) || (!b && p->closing)) {
			pthread_mutex_unlock(&p->lock);
			return b;
		}
		if (*unflushed) {
			/* Nothing to write yet: what was written leaves now. */
			pthread_mutex_unlock(&p->lock);
			sp_writer_flush(p->w);
			*unflushed = false;
			pthread_mutex_lock(&p->lock);
			continue;
		}
		pthread_cond_wait(&p->done, &p->lock);
	}
}

static void *write_all(void *arg)
{
	struct sp_unwind_par *p = arg;
	bool unflushed = false;
	struct sp_batch *b;
	while ((b = next_done(p, &unflushed))) {
		if (!__atomic_load_n(&p->stopped, __ATOMIC_ACQUIRE)) {
			write_batch(p, b);
			unflushed = true;
		}
		pthread_mutex_lock(&p->lock);
		p->head = b->next;
		if (!p->head)
			p->tail = NULL;
		p->nqueued--;
		b->next = p->spare;
		p->spare = b;
		pthread_cond_signal(&p->room);
		pthread_mutex_unlock(&p->lock);
	}
	if (unflushed)
		sp_writer_flush(p->w);
	return NULL;
}

/* The batch being filled goes to the workers (waiting for room). */
static int send_batch(struct sp_unwind_par *p)
{
	struct sp_batch *b = p->cur;
	if (!b || !b->nitems)
		return 0;
	if (SP_ALLOC_GROW(b->results, b->nsamples, b->allocresults) < 0)
		return -1;
	b->pending = p->jobs;
	p->cur = NULL;
	pthread_mutex_lock(&p->lock);
	while (p->nqueued >= p->max_queued)
		pthread_cond_wait(&p->room, &p->lock);
	b->seq = p->next_seq++;
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	p->nqueued++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* ---- the reader's side ---- */

static int stopped(struct sp_unwind_par *p, struct sp_error *err)
{
	int how = __atomic_load_n(&p->stopped, __ATOMIC_ACQUIRE);
	if (how < 0) {
		pthread_mutex_lock(&p->lock);
		*err = p->err;
		pthread_mutex_unlock(&p->lock);
	}
	return how;
}

int sp_unwind_par_record(struct sp_unwind_par *p, const struct sp_record *rec,
			 const struct sp_header *hdr, struct sp_error *err)
{
	int how = stopped(p, err);
	if (how)
		return how;
	if (!p->cur && !(p->cur = batch_get(p)))
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	if (add_item(p->cur, rec, hdr) < 0)
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	if ((p->cur->nsamples >= BATCH_SAMPLES || p->cur->bytes >= BATCH_BYTES ||
	     rec->type == SP_R_SUMMARY) && send_batch(p) < 0)
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	return 0;
}

void sp_unwind_par_flush(struct sp_unwind_par *p)
{
	/* Out of memory here is found again at the next record or at the end. */
	(void)send_batch(p);
}

/* Ends the threads: every batch queued is gone through (and written, unless stopped). */
static void shut_down(struct sp_unwind_par *p)
{
	pthread_mutex_lock(&p->lock);
	p->closing = true;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->lock);
	for (unsigned j = 0; j < p->jobs; j++)
		if (p->workers[j].started)
			pthread_join(p->workers[j].th, NULL);
	if (p->writer_started)
		pthread_join(p->writer, NULL);
	p->writer_started = false;
	for (unsigned j = 0; j < p->jobs; j++)
		p->workers[j].started = false;
}

int sp_unwind_par_finish(struct sp_unwind_par *p, struct sp_error *err)
{
	int rc = p->finished || stopped(p, err) ? 0 : send_batch(p);
	p->finished = true;
	shut_down(p);
	if (rc < 0)
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	return stopped(p, err) < 0 ? -1 : 0;
}

const struct sp_unwind_stage *sp_unwind_par_stage(const struct sp_unwind_par *p)
{
	return p->stage;
}

/* Starts the threads with every signal blocked: the caller's thread takes them. */
static int start_threads(struct sp_unwind_par *p)
{
	sigset_t all, old;
	int rc = 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned j = 0; j < p->jobs && rc == 0; j++) {
		struct worker *w = &p->workers[j];
		if ((rc = pthread_create(&w->th, NULL, work, w)) == 0)
			w->started = true;
	}
	if (rc == 0 && (rc = pthread_create(&p->writer, NULL, write_all, p)) == 0)
		p->writer_started = true;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Makes the workers and starts the threads: 0, -1 out of memory, or pthread_create's error. */
static int start(struct sp_unwind_par *p, const struct sp_unwind_stage_options *o)
{
	for (unsigned j = 0; j < p->jobs; j++) {
		struct worker *w = &p->workers[j];
		w->p = p;
		if (!(w->pw = sp_pworker_new(&o->uo, j, p->jobs)))
			return -1;
	}
	return start_threads(p);
}

struct sp_unwind_par *sp_unwind_par_new(const struct sp_unwind_stage_options *o, unsigned jobs,
					struct sp_writer *w, sp_unwind_par_taken_fn *taken,
					void *arg, struct sp_error *err)
{
	struct sp_unwind_par *p = calloc(1, sizeof(*p));
	if (!p) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	p->engine = replay_engine;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	pthread_cond_init(&p->room, NULL);
	p->jobs = jobs ? jobs : 1;
	p->max_queued = (size_t)p->jobs * QUEUED_PER_JOB;
	p->w = w;
	p->taken = taken;
	p->arg = arg;
	struct sp_unwind_stage_options so = *o;
	so.engine = &p->engine;
	p->stage = sp_unwind_stage_new(&so, w);
	p->workers = calloc(p->jobs, sizeof(*p->workers));
	int rc = p->stage && p->workers ? start(p, o) : -1;
	if (rc != 0) {
		if (rc > 0)
			sp_error_set(err, SP_ERR_ERRNO, "cannot start a thread: %s", strerror(rc));
		else
			sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		sp_unwind_par_free(p);
		return NULL;
	}
	return p;
}

void sp_unwind_par_free(struct sp_unwind_par *p)
{
	if (!p)
		return;
	if (p->workers)
		shut_down(p);
	for (struct sp_batch *b = p->head, *next; b; b = next) {
		next = b->next;
		batch_free(b, p->jobs);
	}
	for (struct sp_batch *b = p->spare, *next; b; b = next) {
		next = b->next;
		batch_free(b, p->jobs);
	}
	batch_free(p->cur, p->jobs);
	for (unsigned j = 0; p->workers && j < p->jobs; j++)
		sp_pworker_free(p->workers[j].pw);
	free(p->workers);
	sp_unwind_stage_free(p->stage);
	free(p->denied);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->room);
	free(p);
}
