/* SPDX-License-Identifier: MIT
 * The parallel driver (parallel.h): records copied into batches by the
 * reader, the queue the workers and the writer take them from, and the
 * writer's stage, whose engine replays the workers' stacks.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/parallel-int.h"
#include "util/alloc.h"

/*
 * A batch goes to the workers when it holds this many samples or bytes,
 * at a summary, and whenever the input is idle (sp_unwind_par_flush()),
 * so that a live stream flows at once.
 */
#define BATCH_SAMPLES 128
#define BATCH_BYTES (4u << 20)
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
	struct sp_replay replay;	/* the writer stage's engine */
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
};

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
	sp_arena_reset(&b->arena);
	b->next = NULL;
	b->nitems = b->nsamples = b->bytes = 0;
	return b;
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
			sp_replay_merge(&p->replay, b, p->jobs);
		if (it->sample != SP_PAR_NO_SAMPLE) {
			p->replay.res = &b->results[it->sample];
			p->replay.frames = b->slots[it->sample % p->jobs].frames;
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
	if (sp_batch_add(p->cur, rec, hdr) < 0)
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
	sp_replay_init(&p->replay);
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
	so.engine = &p->replay.engine;
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
		sp_batch_free(b, p->jobs);
	}
	for (struct sp_batch *b = p->spare, *next; b; b = next) {
		next = b->next;
		sp_batch_free(b, p->jobs);
	}
	sp_batch_free(p->cur, p->jobs);
	for (unsigned j = 0; p->workers && j < p->jobs; j++)
		sp_pworker_free(p->workers[j].pw);
	free(p->workers);
	sp_unwind_stage_free(p->stage);
	sp_replay_release(&p->replay);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->room);
	free(p);
}
