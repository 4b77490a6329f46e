/* SPDX-License-Identifier: MIT
 * The writer's side of the parallel driver (parallel-int.h): the engine
 * through which its stage takes each sample's stack as a worker unwound
 * it, and the workers' counters merged at a summary as one unwinder
 * would have counted them.
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/addrspace.h"
#include "unwind/census.h"
#include "unwind/parallel-int.h"
#include "util/hashmap.h"

static void *replay_segment(const struct sp_unwind_engine *e, struct sp_unwinder *u,
			    struct sp_error *err)
{
	(void)u;
	(void)err;
	return sp_container_of(e, struct sp_replay, engine);
}

static void replay_free(void *engine)
{
	(void)engine;
}

static enum sp_unwind_end replay(struct sp_replay *p, struct sp_addrspaces *a,
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
	return ((struct sp_replay *)engine)->res->used;
}

static void replay_stats(void *engine, struct sp_unwind_stats *st)
{
	*st = ((struct sp_replay *)engine)->merged;
}

static int replay_copy_status(void *engine)
{
	return ((struct sp_replay *)engine)->res->copy_status;
}

static const char *replay_denied(void *engine, uint32_t *pid, int *err)
{
	struct sp_replay *p = engine;
	*pid = p->denied_pid;
	*err = p->denied_err;
	return p->denied;
}

static const struct sp_unwind_engine engine = {
	"stackpulse", replay_segment, replay_free, replay_unwind,
	replay_chain, replay_copy_used, replay_stats, replay_denied, replay_copy_status,
};

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
		if (c->nkeys)
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
static void count_modules(struct sp_replay *p, struct sp_batch *b, unsigned jobs)
{
	size_t nobjs = 0;
	for (unsigned j = 0; j < jobs; j++)
		if (b->slots[j].census->nobjs > nobjs)
			nobjs = b->slots[j].census->nobjs;
	for (size_t i = 0; i < nobjs; i++) {
		enum sp_object_census st = SP_OBJ_UNTRIED;
		for (unsigned j = 0; j < jobs && st == SP_OBJ_UNTRIED; j++)
			if (i < b->slots[j].census->nobjs)
				st = b->slots[j].census->objs[i];
		p->merged.modules_opened += st == SP_OBJ_OPENED;
		p->merged.modules_missing += st == SP_OBJ_MISSING;
		p->merged.modules_mismatched += st == SP_OBJ_MISMATCHED;
	}
}

void sp_replay_merge(struct sp_replay *p, struct sp_batch *b, unsigned jobs)
{
	uint64_t lookups = 0;
	memset(&p->merged, 0, sizeof(p->merged));
	for (unsigned j = 0; j < jobs; j++) {
		const struct sp_census *c = b->slots[j].census;
		p->merged.fp_frames += c->st.fp_frames;
		p->merged.scan_frames += c->st.scan_frames;
		lookups += c->st.cache_hits + c->st.cache_misses;
	}
	p->merged.cache_misses = distinct_rules(b, jobs);
	p->merged.cache_hits = lookups - p->merged.cache_misses;
	count_modules(p, b, jobs);
	free(p->denied);
	p->denied = NULL;
	for (unsigned j = 0; j < jobs && !p->denied; j++) {
		const struct sp_census *c = b->slots[j].census;
		if (c->denied && (p->denied = strdup(c->denied))) {
			p->denied_pid = c->denied_pid;
			p->denied_err = c->denied_err;
		}
	}
}

void sp_replay_init(struct sp_replay *r)
{
	memset(r, 0, sizeof(*r));
	r->engine = engine;
}

void sp_replay_release(struct sp_replay *r)
{
	free(r->denied);
	r->denied = NULL;
}
