/* SPDX-License-Identifier: MIT */
/* Naming on threads: windows of records in order, ELF lookups on workers (see parallel.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "stream/records.h"
#include "sym/parallel.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/hashmap.h"

/*
 * A window holds this many lookups, or this many bytes passed through:
 * enough that a worker is woken a few times per thousand stacks, little
 * enough that records wait a few milliseconds at most.
 */
#define WINDOW_JOBS 2048
#define WINDOW_BYTES (1u << 20)

enum op_kind { OP_RAW, OP_NAMED, OP_JOB, OP_SYMSTACK };

/* One record to write, in input order. */
struct op {
	enum op_kind kind;
	uint64_t id;
	size_t at, n;			/* raw: bytes; symstack: ids; job: the job */
	struct sp_stack_frame f;	/* named, job */
	struct sp_symframe *sf;		/* named: a copy, in the window's arena */
};

struct window {
	struct op *ops;
	size_t nops, allocops;
	unsigned char *bytes;
	size_t nbytes, allocbytes;
	uint64_t *ids;
	size_t nids, allocids;
	struct sp_elf_job *jobs;
	unsigned *owner;		/* by job: the worker that runs it */
	size_t njobs, allocjobs, allocowner;
	struct sp_arena arena;
};

struct worker {
	struct sp_sympar *p;
	unsigned index;
	pthread_t th;
	bool started;
};

struct sp_sympar {
	struct sp_namer *sym;
	struct sp_writer *w;
	struct window win[2];
	struct window *fill, *flight;	/* filling; with the workers (NULL: none) */
	struct sp_u64map owners;	/* struct sp_elfsym * -> its worker + 1 */
	unsigned next_owner;

	struct worker *workers;
	unsigned nworkers;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	uint64_t seq;			/* windows handed over so far */
	unsigned finished;		/* workers done with the window seq */
	bool stop;
};

/* Runs the jobs of the window given last that are worker i's. */
static void run_jobs(struct window *win, unsigned i)
{
	for (size_t j = 0; j < win->njobs; j++)
		if (win->owner[j] == i)
			sp_elf_job_run(&win->jobs[j]);
}

static void *work(void *arg)
{
	struct worker *me = arg;
	struct sp_sympar *p = me->p;
	uint64_t seen = 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->seq == seen)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		seen = p->seq;
		struct window *win = p->flight;
		pthread_mutex_unlock(&p->lock);
		run_jobs(win, me->index);
		pthread_mutex_lock(&p->lock);
		if (++p->finished == p->nworkers)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Hands the window being filled to the workers; the other one is filled next. */
static void submit(struct sp_sympar *p)
{
	pthread_mutex_lock(&p->lock);
	p->flight = p->fill;
	p->finished = 0;
	p->seq++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	p->fill = p->fill == &p->win[0] ? &p->win[1] : &p->win[0];
}

/* Waits until the workers are done with the window they have, if any: they are idle then. */
static void quiesce(struct sp_sympar *p)
{
	if (!p->flight)
		return;
	pthread_mutex_lock(&p->lock);
	while (p->finished < p->nworkers)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* The window the workers had, once they are done with it. */
static struct window *wait_flight(struct sp_sympar *p)
{
	struct window *win = p->flight;
	quiesce(p);
	p->flight = NULL;
	return win;
}

void sp_symframe_write(struct sp_writer *w, uint64_t id, const struct sp_stack_frame *f,
		       const struct sp_symframe *sf)
{
	struct sp_frame_rec r = {
		.id = id, .addr = f->addr, .origin = sp_sym_origin_name(sf->origin),
		.name = sf->name, .has_module = sf->has_module, .module = sf->module, .rel = f->rel,
		.has_offset = sf->has_offset, .offset = sf->offset, .file = sf->file,
		.line = sf->line, .inl = sf->inl, .ninl = sf->ninl, .flags = sf->flags,
	};
	sp_write_frame(w, &r);
}

/* Writes a window's records in order, the names of its lookups made now; empties it. */
static void emit(struct sp_sympar *p, struct window *win)
{
	struct sp_symframe sf;
	for (size_t i = 0; i < win->nops; i++) {
		const struct op *o = &win->ops[i];
		switch (o->kind) {
		case OP_RAW:
			sp_writer_raw(p->w, win->bytes + o->at, o->n);
			break;
		case OP_NAMED:
			sp_symframe_write(p->w, o->id, &o->f, o->sf);
			break;
		case OP_JOB:
			sp_namer_resolve_job(p->sym, &o->f, &win->jobs[o->at], &sf);
			sp_symframe_write(p->w, o->id, &o->f, &sf);
			break;
		case OP_SYMSTACK:
			sp_write_symstack(p->w, o->id, win->ids + o->at, o->n);
			break;
		}
	}
	win->nops = win->nbytes = win->nids = win->njobs = 0;
	sp_arena_reset(&win->arena);
}

static struct op *new_op(struct window *win, enum op_kind kind, uint64_t id)
{
	if (SP_ALLOC_GROW(win->ops, win->nops + 1, win->allocops) < 0)
		return NULL;
	struct op *o = &win->ops[win->nops++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->id = id;
	return o;
}

int sp_sympar_raw(struct sp_sympar *p, const void *bytes, size_t n)
{
	struct window *win = p->fill;
	if (SP_ALLOC_GROW(win->bytes, win->nbytes + n, win->allocbytes) < 0)
		return -1;
	struct op *o = new_op(win, OP_RAW, 0);
	if (!o)
		return -1;
	o->at = win->nbytes;
	o->n = n;
	if (n)
		memcpy(win->bytes + win->nbytes, bytes, n);
	win->nbytes += n;
	return 0;
}

int sp_sympar_symstack(struct sp_sympar *p, uint64_t id, const uint64_t *frames, size_t n)
{
	struct window *win = p->fill;
	if (SP_ALLOC_GROW(win->ids, win->nids + n, win->allocids) < 0)
		return -1;
	struct op *o = new_op(win, OP_SYMSTACK, id);
	if (!o)
		return -1;
	o->at = win->nids;
	o->n = n;
	if (n)
		memcpy(win->ids + win->nids, frames, n * sizeof(*frames));
	win->nids += n;
	return 0;
}

/* A copy of s in the window's arena; NULL stays NULL. */
static const char *keep(struct window *win, const char *s, bool *oom)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *c = sp_arena_alloc(&win->arena, n);
	if (!c) {
		*oom = true;
		return NULL;
	}
	return memcpy(c, s, n);
}

/* A copy of a frame named now, whose strings may not outlive the next record. */
static struct sp_symframe *copy_named(struct window *win, const struct sp_symframe *sf)
{
	bool oom = false;
	struct sp_symframe *c = sp_arena_alloc(&win->arena, sizeof(*c));
	struct sp_inline *inl = sf->ninl ? sp_arena_alloc(&win->arena, sf->ninl * sizeof(*inl)) : NULL;
	if (!c || (sf->ninl && !inl))
		return NULL;
	*c = *sf;
	c->name = keep(win, sf->name, &oom);
	c->file = keep(win, sf->file, &oom);
	for (size_t i = 0; i < sf->ninl; i++)
		inl[i] = (struct sp_inline){ .name = keep(win, sf->inl[i].name, &oom),
					     .file = keep(win, sf->inl[i].file, &oom),
					     .line = sf->inl[i].line };
	c->inl = inl;
	return oom ? NULL : c;
}

/* The worker that owns module file es: the next in turn when it is new. */
static int owner_of(struct sp_sympar *p, const struct sp_elfsym *es, unsigned *owner)
{
	uintptr_t v = (uintptr_t)sp_u64map_get(&p->owners, (uintptr_t)es);
	if (!v) {
		v = p->next_owner++ % p->nworkers + 1;
		if (sp_u64map_put(&p->owners, (uintptr_t)es, (void *)v) < 0)
			return -1;
	}
	*owner = (unsigned)(v - 1);
	return 0;
}

/* Queues frame f's lookup q. */
static int queue_job(struct sp_sympar *p, uint64_t id, const struct sp_stack_frame *f,
		     const struct sp_elf_job *q)
{
	struct window *win = p->fill;
	unsigned owner = (unsigned)-1;	/* no file: nothing to run */
	if (SP_ALLOC_GROW(win->jobs, win->njobs + 1, win->allocjobs) < 0 ||
	    SP_ALLOC_GROW(win->owner, win->njobs + 1, win->allocowner) < 0 ||
	    (q->es && owner_of(p, q->es, &owner) < 0))
		return -1;
	struct op *o = new_op(win, OP_JOB, id);
	if (!o)
		return -1;
	o->f = *f;
	o->at = win->njobs;
	win->jobs[win->njobs] = *q;
	win->owner[win->njobs++] = owner;
	return 1;
}

int sp_sympar_frame(struct sp_sympar *p, uint64_t id, const struct sp_stack_frame *f,
		    struct sp_symframe *sf)
{
	struct sp_elf_job q;
	bool elf = sp_namer_elf_job(p->sym, f, &q);
	if (elf && (f->flags & SP_FRAME_KIND_MASK) != SP_FRAME_JIT)
		return queue_job(p, id, f, &q);
	if (elf) {
		/*
		 * JIT code in a module file: whether it has a name decides
		 * now whether its stack is kept (sp_namer_keep_stack()), so
		 * it is looked up here, the workers idle.  Rare.
		 */
		quiesce(p);
		sp_elf_job_run(&q);
	}
	sp_namer_resolve_job(p->sym, f, elf ? &q : NULL, sf);
	struct op *o = new_op(p->fill, OP_NAMED, id);
	if (!o || !(o->sf = copy_named(p->fill, sf)))
		return -1;
	o->f = *f;
	return 0;
}

int sp_sympar_step(struct sp_sympar *p)
{
	struct window *win = p->fill;
	/* Nothing to look up and nothing before it: written now. */
	if (!p->flight && !win->njobs) {
		emit(p, win);
		return 0;
	}
	if (win->njobs < WINDOW_JOBS && win->nbytes < WINDOW_BYTES)
		return 0;
	if (p->flight)
		emit(p, wait_flight(p));
	submit(p);
	return 0;
}

void sp_sympar_drain(struct sp_sympar *p)
{
	if (p->flight)
		emit(p, wait_flight(p));
	if (p->fill->njobs) {
		submit(p);
		emit(p, wait_flight(p));
	} else {
		emit(p, p->fill);
	}
}

/* Starts the workers with every signal blocked: signals are the reading thread's. */
static int start(struct sp_sympar *p)
{
	sigset_t all, old;
	int rc = 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < p->nworkers && rc == 0; i++) {
		struct worker *w = &p->workers[i];
		*w = (struct worker){ .p = p, .index = i };
		if ((rc = pthread_create(&w->th, NULL, work, w)) == 0)
			w->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

struct sp_sympar *sp_sympar_new(struct sp_namer *sym, struct sp_writer *w,
				unsigned workers, struct sp_error *err)
{
	struct sp_sympar *p = calloc(1, sizeof(*p));
	if (p && !(p->workers = calloc(workers, sizeof(*p->workers)))) {
		free(p);
		p = NULL;
	}
	if (!p) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	p->sym = sym;
	p->w = w;
	sp_namer_defer_debuginfo(sym);
	p->fill = &p->win[0];
	p->nworkers = workers;
	sp_u64map_init(&p->owners);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	int rc = start(p);
	if (rc) {
		sp_sympar_free(p);
		errno = rc;
		sp_error_errno(err, "cannot start a naming thread");
		return NULL;
	}
	return p;
}

static void window_release(struct window *win)
{
	free(win->ops);
	free(win->bytes);
	free(win->ids);
	free(win->jobs);
	free(win->owner);
	sp_arena_release(&win->arena);
}

void sp_sympar_free(struct sp_sympar *p)
{
	if (!p)
		return;
	if (p->flight)
		wait_flight(p);
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nworkers; i++)
		if (p->workers[i].started)
			pthread_join(p->workers[i].th, NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	window_release(&p->win[0]);
	window_release(&p->win[1]);
	sp_u64map_release(&p->owners, NULL);
	free(p->workers);
	free(p);
}
