/* SPDX-License-Identifier: MIT
 * A worker of the parallel driver (parallel-int.h): its own address
 * spaces and unwinder, following every record as the stage does, and
 * unwinding the samples dealt to it, as stage.c's unwind_frames() would,
 * into frames that name their objects by index.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/header.h"
#include "stream/ustack.h"
#include "unwind/addrspace.h"
#include "unwind/arch.h"
#include "unwind/census.h"
#include "unwind/parallel-int.h"
#include "unwind/rawsample.h"
#include "util/alloc.h"

struct sp_pworker {
	unsigned id, jobs;
	struct sp_addrspaces *as;
	struct sp_unwinder *u;
	struct sp_unwind_options uo;
	struct sp_unwind_regmap regs;	/* the segment's architecture */
	struct sp_ustack_cache copies;	/* the last full stack copy of each thread */
	bool refused;			/* the stage refuses the segment: nothing to unwind */
	struct sp_uframe *uframes;
	uint64_t *chain;
};

struct sp_pworker *sp_pworker_new(const struct sp_unwind_options *o, unsigned id, unsigned jobs)
{
	struct sp_pworker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->id = id;
	w->jobs = jobs;
	w->uo = *o;
	sp_ustack_cache_init(&w->copies);
	sp_unwind_regmap_native(&w->regs, &sp_arch_x86_64);
	w->as = sp_addrspaces_new();
	w->u = sp_unwinder_new(&w->uo);
	w->uframes = malloc((w->uo.max_depth + 1) * sizeof(*w->uframes));
	w->chain = malloc((w->uo.max_depth + 1) * sizeof(*w->chain));
	if (!w->as || !w->u || !w->uframes || !w->chain) {
		sp_pworker_free(w);
		return NULL;
	}
	return w;
}

void sp_pworker_free(struct sp_pworker *w)
{
	if (!w)
		return;
	if (w->as)
		sp_addrspaces_free(w->as, sp_unwinder_free_object);
	sp_unwinder_free(w->u);
	sp_ustack_cache_release(&w->copies);
	free(w->uframes);
	free(w->chain);
	free(w);
}

void sp_census_free(struct sp_census *c)
{
	if (!c)
		return;
	free(c->objs);
	free(c->keys);
	free(c->denied);
	free(c);
}

/* A new segment, as stage.c's begin_segment() makes it. */
static int begin_segment(struct sp_pworker *w, const struct sp_item *it)
{
	struct sp_error err = { 0 };
	w->refused = it->hdr.stage != SP_STAGE_RAW ||
		     sp_unwind_regmap_select(&w->regs, it->rec.map, &err) < 0;
	if (w->refused)
		return 0;
	sp_addrspaces_reset(w->as, sp_unwinder_free_object);
	sp_ustack_cache_release(&w->copies);
	sp_unwinder_free(w->u);
	w->uo.this_host = sp_header_same_boot(it->rec.map);
	w->uo.regs = &w->regs;
	w->u = sp_unwinder_new(&w->uo);
	return w->u ? 0 : -1;
}

/*
 * A sample's full stack copy: every worker rebuilds every sample's, in
 * input order, since a copy shares its tail with the thread's last one.
 */
static int rebuild_copy(struct sp_pworker *w, const struct sp_raw_sample *rs,
			const unsigned char **copy, size_t *len)
{
	uint64_t tid = 0, shared = 0;
	size_t uslen;
	sp_rs_u64(rs, RK_TID, &tid);
	sp_rs_u64(rs, RK_USTACK_SHARED, &shared);
	const void *us = sp_rs_ustack(rs, &uslen);
	return sp_ustack_decode(&w->copies, (uint32_t)tid, us, uslen, shared, copy, len);
}

/* The user frames of a sample, into its result and the worker's slot. */
static int unwind_sample(struct sp_pworker *w, struct sp_batch *b, const struct sp_item *it)
{
	struct sp_raw_sample rs;
	const unsigned char *copy;
	size_t len;
	if (!sp_raw_sample_read(&it->rec, &rs))
		return 0;	/* the stage refuses it, in the writer */
	int rc = rebuild_copy(w, &rs, &copy, &len);
	if (it->sample % w->jobs != w->id || rc < 0)
		return rc;
	struct sp_presult *res = &b->results[it->sample];
	struct sp_slot *slot = &b->slots[w->id];
	unsigned max_depth = w->uo.max_depth;
	uint64_t pid = 0, abi = 0;
	size_t nr, nu = 0;
	*res = (struct sp_presult){ SP_END_COMPLETE, slot->nframes, 0, 0, rc };
	sp_rs_u64(&rs, RK_PID, &pid);
	sp_rs_u64(&rs, RK_ABI, &abi);
	bool full = sp_rs_bool(&rs, RK_USTACK_FULL);
	uint64_t nregs = sp_rs_count(&rs, RK_REGS), nuc = sp_rs_count(&rs, RK_UCHAIN);
	bool stack_copy = abi && rs.v[RK_REGS].kind == SP_RAW_ARRAY && nregs >= w->regs.need;
	if (w->refused || (!stack_copy && !nuc))
		return 0;
	if (!stack_copy) {
		bool ufull = sp_rs_bool(&rs, RK_UCHAIN_FULL);
		nr = sp_rawarr_u64(&rs.v[RK_UCHAIN], w->chain, (size_t)max_depth + 1);
		res->end = sp_unwind_chain(w->u, w->as, (uint32_t)pid, w->chain, nr, ufull,
					   w->uframes, max_depth, &nu);
	} else {
		uint64_t r[256];
		nr = sp_rawarr_u64(&rs.v[RK_REGS], r, 256);
		res->end = sp_unwind(w->u, w->as, (uint32_t)pid, r, nr, copy, len, full,
				     w->uframes, max_depth, &nu);
		res->used = sp_unwinder_copy_used(w->u);
	}
	if (SP_ALLOC_GROW(slot->frames, slot->nframes + nu, slot->allocframes) < 0)
		return -1;
	for (size_t i = 0; i < nu; i++) {
		const struct sp_uframe *f = &w->uframes[i];
		slot->frames[slot->nframes++] = (struct sp_pframe){ f->addr, f->rel,
			f->obj ? f->obj->index : SP_PAR_NO_OBJ, f->flags };
	}
	res->n = nu;
	return 0;
}

static void add_key(struct sp_census *c, uint64_t a, uint64_t b, uint64_t addr)
{
	if (SP_ALLOC_GROW(c->keys, c->nkeys + 1, c->allockeys) == 0)
		c->keys[c->nkeys++] = (struct sp_rkey){ a, b, addr };
}

struct objkeys {
	struct sp_census *c;
	uint64_t index;
};

static void object_key(void *arg, uint64_t addr)
{
	struct objkeys *k = arg;
	add_key(k->c, k->index, 0, addr);
}

static void jit_key(void *arg, uint64_t pid, uint64_t start, uint64_t addr)
{
	add_key(arg, pid | SP_RKEY_JIT, start, addr);
}

/* What the worker's unwinder did in the segment so far, for the writer to merge. */
static struct sp_census *take_census(struct sp_pworker *w)
{
	struct sp_census *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	sp_unwinder_stats(w->u, &c->st);
	while (sp_addrspaces_object(w->as, c->nobjs))
		c->nobjs++;
	c->objs = malloc(c->nobjs ? c->nobjs : 1);
	if (!c->objs) {
		sp_census_free(c);
		return NULL;
	}
	for (size_t i = 0; i < c->nobjs; i++) {
		struct sp_object *o = sp_addrspaces_object(w->as, i);
		struct objkeys k = { c, i };
		c->objs[i] = (unsigned char)sp_unwinder_object_census(o);
		sp_unwinder_object_rules(o, object_key, &k);
	}
	sp_unwinder_jit_rules(w->as, jit_key, c);
	const char *d = sp_unwinder_denied(w->u, &c->denied_pid, &c->denied_err);
	if (d)
		c->denied = strdup(d);
	return c;
}

static int follow(struct sp_pworker *w, struct sp_batch *b, const struct sp_item *it)
{
	const struct sp_record *rec = &it->rec;
	uint64_t pid = 0;
	bool cpython = false;
	switch (rec->type) {
	case SP_R_HEADER:
		return begin_segment(w, it);
	case SP_R_SAMPLE:
		return unwind_sample(w, b, it);
	case SP_R_SUMMARY:
		b->slots[w->id].census = take_census(w);
		return b->slots[w->id].census ? 0 : -1;
	case SP_R_RUNTIME:
		if (sp_map_u64(rec->map, "pid", &pid) && pid <= UINT32_MAX &&
		    sp_map_bool(rec->map, "cpython", &cpython))
			return sp_unwinder_set_cpython(w->u, (uint32_t)pid, cpython);
		return 0;
	case SP_R_PROCESS: case SP_R_MAP: case SP_R_FORK: case SP_R_EXEC: case SP_R_EXIT:
	case SP_R_IMAGE: case SP_R_JITDUMP:
		if (rec->type == SP_R_EXIT)
			sp_ustack_note_exit(&w->copies, rec->map);
		return sp_addrspaces_apply(w->as, rec->type, rec->map);
	default:
		return 0;
	}
}

void sp_pworker_batch(struct sp_pworker *w, struct sp_batch *b)
{
	for (size_t i = 0; i < b->nitems; i++)
		if (follow(w, b, &b->items[i]) < 0)
			b->slots[w->id].oom = true;
}
