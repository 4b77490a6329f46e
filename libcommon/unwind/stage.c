/* SPDX-License-Identifier: MIT
 * The unwinding stage (stage.h): raw samples to interned stacks, the
 * module records they need, and the unwind record before the summary.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream/header.h"
#include "stream/rawmap.h"
#include "stream/records.h"
#include "stream/ustack.h"
#include "unwind/addrspace.h"
#include "unwind/arch.h"
#include "unwind/rawsample.h"
#include "unwind/stage.h"
#include "util/alloc.h"
#include "util/hashmap.h"

#define MAX_KERNEL_FRAMES 512

/* An interned stack: n frames at off in the arena, and its id. */
struct ostack {
	struct sp_hashmap_entry ent;
	size_t off, n, id;
};

/* The frames of a stack looked up, and the arena the stored ones lie in. */
struct stackkey {
	const struct sp_stack_frame *f, *arena;
	size_t n;
};

static int stack_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	const struct ostack *s = sp_container_of(a, const struct ostack, ent);
	const struct stackkey *k = keydata;
	(void)b;
	return s->n != k->n || memcmp(k->arena + s->off, k->f, k->n * sizeof(*k->f)) != 0;
}

static void free_stack(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct ostack, ent));
}

struct sp_unwind_stage {
	struct sp_writer *w;
	struct sp_addrspaces *as;
	struct sp_unwinder *u;
	const struct sp_unwind_engine *engine;	/* another engine, or NULL */
	void *lu;			/* its state for the segment */
	const char *tool;
	int argc;
	char **argv;
	struct sp_unwind_options uo;
	struct sp_unwind_regmap regs;	/* the segment's architecture */
	struct sp_object kernel;	/* the pseudo-module of kernel frames */
	uint64_t next_module;
	bool oom;			/* memory ran out within the record */
	bool bad_sample;		/* a sample's bytes were not a map */

	struct sp_ustack_cache copies;	/* the last full stack copy of each thread */
	/* tid -> struct sp_walk_memo: the walk of that copy (sp_unwind_thread()). */
	struct sp_u64map walks;

	/* Interned stacks: frames in one arena, a map of struct ostack. */
	struct sp_stack_frame *arena;
	size_t narena, allocarena;
	struct sp_hashmap stacks;
	size_t nstacks;

	struct sp_uframe *uframes;
	struct sp_stack_frame *frames;
	uint64_t *chain;		/* a sample's uchain, max_depth + 1 entries */

	/* Counters for the unwind record. */
	uint64_t samples, user_samples, frames_out, bad_copies;
	uint64_t ends[SP_END_COUNT];
	uint64_t max_depth_full;	/* max_depth ends of copies that filled their window */
	uint64_t total_samples, total_frames;	/* of every segment */
	uint64_t taken;			/* frames taken from earlier walks, earlier segments */
	struct sp_copy_used used;	/* what complete stacks needed of their copies */
};

static void free_walk(void *wm)
{
	sp_walk_memo_free(wm);
}

static void reset_segment(struct sp_unwind_stage *s)
{
	sp_addrspaces_reset(s->as, sp_unwinder_free_object);
	sp_ustack_cache_release(&s->copies);
	sp_u64map_release(&s->walks, free_walk);
	s->narena = s->nstacks = 0;
	sp_hashmap_release(&s->stacks, free_stack);
	sp_hashmap_init(&s->stacks, stack_cmp);
	s->kernel.out_id = UINT64_MAX;
	s->next_module = 0;
	s->samples = s->user_samples = s->frames_out = s->bad_copies = 0;
	s->max_depth_full = 0;
	memset(s->ends, 0, sizeof(s->ends));
	memset(&s->used, 0, sizeof(s->used));
}

struct sp_unwind_stage *sp_unwind_stage_new(const struct sp_unwind_stage_options *o,
					    struct sp_writer *w)
{
	struct sp_unwind_stage *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->w = w;
	s->uo = o->uo;
	s->engine = o->engine;
	s->tool = o->tool;
	s->argc = o->argc;
	s->argv = o->argv;
	sp_unwind_regmap_native(&s->regs, &sp_arch_x86_64);
	sp_ustack_cache_init(&s->copies);
	sp_hashmap_init(&s->stacks, stack_cmp);
	s->kernel.path = "[kernel.kallsyms]";
	s->kernel.out_id = UINT64_MAX;
	s->as = sp_addrspaces_new();
	s->u = sp_unwinder_new(&s->uo);
	s->uframes = malloc((s->uo.max_depth + 1) * sizeof(*s->uframes));
	s->frames = malloc((s->uo.max_depth + MAX_KERNEL_FRAMES + 2) * sizeof(*s->frames));
	s->chain = malloc((s->uo.max_depth + 1) * sizeof(*s->chain));
	if (!s->as || !s->u || !s->uframes || !s->frames || !s->chain) {
		sp_unwind_stage_free(s);
		return NULL;
	}
	return s;
}

void sp_unwind_stage_free(struct sp_unwind_stage *s)
{
	if (!s)
		return;
	if (s->lu)
		s->engine->free(s->lu);
	if (s->as)
		sp_addrspaces_free(s->as, sp_unwinder_free_object);
	sp_unwinder_free(s->u);
	sp_ustack_cache_release(&s->copies);
	sp_u64map_release(&s->walks, free_walk);
	free(s->arena);
	sp_hashmap_release(&s->stacks, free_stack);
	free(s->uframes);
	free(s->frames);
	free(s->chain);
	free(s);
}

static const char *object_kind(const struct sp_object *o)
{
	if (o->vdso)
		return "vdso";
	if (o->anon)
		return "jit";
	return o->path[0] == '[' ? "anon" : "elf";
}

/* Writes the module record of an object the first time a stack uses it. */
static uint64_t module_id(struct sp_unwind_stage *s, struct sp_object *o)
{
	if (o->out_id != UINT64_MAX)
		return o->out_id;
	o->out_id = s->next_module++;
	struct sp_module_rec m = {
		.id = o->out_id, .path = o->path,
		.kind = o == &s->kernel ? "kernel" : object_kind(o),
		.ident = o->build_id, .identlen = o->build_id_len, .content = o->content_id,
		.pid = o->anon_pid,
	};
	sp_write_module(s->w, &m);
	return o->out_id;
}

static uint64_t hash_frames(const struct sp_stack_frame *f, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ f[i].addr) * 1099511628211ull;
		h = (h ^ (f[i].module + (f[i].flags << 40))) * 1099511628211ull;
	}
	h ^= h >> 29;
	return h ^ (h >> 32);
}

/* Returns the id of a stack, writing its record when it is new. */
static uint64_t intern(struct sp_unwind_stage *s, const struct sp_stack_frame *f, size_t n)
{
	struct stackkey key = { f, s->arena, n };
	struct sp_hashmap_entry probe = { NULL, (uint32_t)hash_frames(f, n) };
	struct sp_hashmap_entry *e = sp_hashmap_get(&s->stacks, &probe, &key);
	if (e)
		return sp_container_of(e, struct ostack, ent)->id;
	struct ostack *os = malloc(sizeof(*os));
	if (!os || SP_ALLOC_GROW(s->arena, s->narena + n, s->allocarena) < 0) {
		free(os);
		s->oom = true;
		return 0;
	}
	memcpy(s->arena + s->narena, f, n * sizeof(*f));
	*os = (struct ostack){ probe, s->narena, n, s->nstacks++ };
	if (sp_hashmap_add(&s->stacks, &os->ent) < 0) {
		free(os);
		s->nstacks--;
		s->oom = true;
		return 0;
	}
	s->narena += n;
	sp_write_stack(s->w, os->id, f, n);
	return os->id;
}

/* The kernel's frames: the unsigned integers of kstack, at most MAX_KERNEL_FRAMES. */
static size_t kernel_frames(struct sp_unwind_stage *s, const struct sp_raw_sample *m)
{
	const struct sp_rawval *ks = &m->v[RK_KSTACK];
	size_t n = 0;
	if (ks->kind != SP_RAW_ARRAY)
		return 0;
	const unsigned char *p = ks->p;
	struct sp_rawval e;
	for (uint64_t i = 0; i < ks->u && n < MAX_KERNEL_FRAMES; i++) {
		uint64_t a;
		size_t took = sp_raw_uint_at(p, ks->end, &a);
		if (!took) {
			/* Another kind of value, skipped. */
			if (!sp_raw_value(p, ks->end, &e))
				break;
			p = e.end;
			continue;
		}
		p += took;
		uint64_t flags = SP_FRAME_KERNEL | (n ? SP_FRAME_RETADDR : 0);
		s->frames[n] = (struct sp_stack_frame){ a, module_id(s, &s->kernel), a, flags };
		n++;
	}
	return n;
}

/*
 * Kernel frames, then the user frames; returns how many are in s->frames.
 * A copy walked by this stage's own unwinder is walked with its thread's
 * memo (sp_unwind_thread()): shared is how many of its last bytes are
 * those of the thread's previous copy.  The memo of a copy not walked so
 * is dropped, as it no longer holds the walk of the thread's last copy.
 */
static size_t unwind_frames(struct sp_unwind_stage *s, const struct sp_raw_sample *m, uint64_t pid,
			    uint64_t tid, const unsigned char *copy, size_t len, bool full,
			    uint64_t shared)
{
	struct sp_walk_memo *wm = sp_u64map_get(&s->walks, tid);
	bool walked = false;
	unsigned max_depth = s->uo.max_depth;
	size_t n = kernel_frames(s, m);
	uint64_t abi = 0;
	sp_rs_u64(m, RK_ABI, &abi);
	uint64_t nregs = sp_rs_count(m, RK_REGS), nuc = sp_rs_count(m, RK_UCHAIN);
	bool stack_copy = abi && m->v[RK_REGS].kind == SP_RAW_ARRAY && nregs >= s->regs.need;
	if (!stack_copy && !nuc) {
		if (wm)
			sp_walk_memo_free(sp_u64map_remove(&s->walks, tid));
		return n;
	}
	uint64_t r[256];
	size_t nr = 0, nu = 0;
	enum sp_unwind_end end;
	if (!stack_copy) {
		/* The kernel's frame-pointer chain (--call-graph fp), at most max_depth + 1 read. */
		bool ufull = sp_rs_bool(m, RK_UCHAIN_FULL);
		nr = sp_rawarr_u64(&m->v[RK_UCHAIN], s->chain, (size_t)max_depth + 1);
		end = s->lu && s->engine->chain ?
			s->engine->chain(s->lu, s->as, (uint32_t)pid, s->chain, nr, ufull,
					 s->uframes, max_depth, &nu) :
			sp_unwind_chain(s->u, s->as, (uint32_t)pid, s->chain, nr, ufull,
					s->uframes, max_depth, &nu);
		goto frames;
	}
	nr = sp_rawarr_u64(&m->v[RK_REGS], r, 256);
	if (s->lu) {
		end = s->engine->unwind(s->lu, s->as, (uint32_t)pid, r, nr, copy, len, full,
					s->uframes, max_depth, &nu);
	} else {
		struct sp_walk_memo *was = wm;
		end = sp_unwind_thread(s->u, s->as, (uint32_t)pid, r, nr, copy, len, full, shared,
				       &wm, s->uframes, max_depth, &nu);
		/* A memo is only a shortcut: one that cannot be kept costs time. */
		walked = wm == was || sp_u64map_put(&s->walks, tid, wm) == 0;
		if (!walked)
			sp_walk_memo_free(wm);
	}
	if ((!s->lu || s->engine->copy_used) && (end == SP_END_COMPLETE || end == SP_END_TRUNCATED))
		sp_copy_used_add(&s->used, end == SP_END_COMPLETE,
				 s->lu ? s->engine->copy_used(s->lu) : sp_unwinder_copy_used(s->u));
frames:
	s->user_samples++;
	s->ends[end]++;
	/* The walk stopped before the copy's end, which may be too short as well. */
	s->max_depth_full += end == SP_END_MAX_DEPTH && full;
	for (size_t i = 0; i < nu; i++) {
		const struct sp_uframe *f = &s->uframes[i];
		s->frames[n++] = (struct sp_stack_frame){ f->addr,
			f->obj ? module_id(s, f->obj) : UINT64_MAX, f->rel, f->flags };
	}
	if (end != SP_END_COMPLETE)
		s->frames[n++] = (struct sp_stack_frame){ 0, UINT64_MAX, (uint64_t)end, SP_FRAME_MARKER };
	if (!walked && wm)
		sp_walk_memo_free(sp_u64map_remove(&s->walks, tid));
	return n;
}

static void unwind_sample(struct sp_unwind_stage *s, const struct sp_record *rec)
{
	struct sp_raw_sample rs;
	if (!sp_raw_sample_read(rec, &rs)) {
		s->bad_sample = true;
		return;
	}
	uint64_t pid = 0, tid = 0, shared = 0, v;
	sp_rs_u64(&rs, RK_PID, &pid);
	sp_rs_u64(&rs, RK_TID, &tid);
	sp_rs_u64(&rs, RK_USTACK_SHARED, &shared);
	bool full = sp_rs_bool(&rs, RK_USTACK_FULL);
	size_t uslen;
	const void *us = sp_rs_ustack(&rs, &uslen);
	s->samples++;

	/* The full copy: this sample's bytes, then the shared tail. */
	const unsigned char *copy = NULL;
	size_t len = 0;
	int rc = s->lu && s->engine->copy_status ? s->engine->copy_status(s->lu) :
		 sp_ustack_decode(&s->copies, (uint32_t)tid, us, uslen, shared, &copy, &len);
	if (rc < 0) {
		s->oom = true;
		return;
	}
	if (rc == SP_USTACK_BAD_SHARE)
		s->bad_copies++;
	size_t n = unwind_frames(s, &rs, pid, tid, copy, len, full, rc == SP_USTACK_OK ? shared : 0);
	s->frames_out += n;
	s->total_samples++;
	s->total_frames += n;

	/* Module and stack records first, then the sample that uses them. */
	uint64_t id = n ? intern(s, s->frames, n) : 0;
	struct sp_mapw out;
	sp_mapw_begin(&out, s->w);
	sp_mapw_str(&out, "t", "sample");
	sp_mapw_u64(&out, "pid", pid);
	sp_mapw_u64(&out, "tid", tid);
	if (sp_rs_u64(&rs, RK_TIME, &v))
		sp_mapw_u64(&out, "time", v);
	if (sp_rs_u64(&rs, RK_CPU, &v))
		sp_mapw_u64(&out, "cpu", v);
	if (sp_rs_u64(&rs, RK_PERIOD, &v))
		sp_mapw_u64(&out, "period", v);
	sp_raw_sample_others(&rs, &out);
	if (n)
		sp_mapw_u64(&out, "stack", id);
	sp_mapw_end(&out);
}

/* The unwinder's counters, written just before the capture summary. */
static void write_unwind_record(struct sp_unwind_stage *s)
{
	struct sp_unwind_stats us;
	if (s->lu && s->engine->stats)
		s->engine->stats(s->lu, &us);
	else
		sp_unwinder_stats(s->u, &us);
	struct sp_unwind_rec u = {
		.samples = s->samples, .user_samples = s->user_samples,
		.frames = s->frames_out, .stacks = s->nstacks, .modules = s->next_module,
		.ends = s->ends, .bad_shared_copies = s->bad_copies,
		.cache_hits = us.cache_hits, .cache_misses = us.cache_misses,
		.fp_frames = us.fp_frames, .scan_frames = us.scan_frames,
		.modules_opened = us.modules_opened, .modules_missing = us.modules_missing,
		.modules_mismatched = us.modules_mismatched,
		.max_depth_full = s->max_depth_full,
		.copy_used_stacks = s->used.n,
		.copy_used_p50 = sp_copy_used_quantile(&s->used, 0.5),
		.copy_used_p995 = sp_copy_used_quantile(&s->used, 0.995),
		.copy_used_max = s->used.max,
		.engine = s->lu ? s->engine->name : "stackpulse",
	};
	sp_write_unwind(s->w, &u);
}

/* The capture summary with this stage's truncation count. */
static void write_summary(struct sp_unwind_stage *s, const msgpack_object *m)
{
	msgpack_packer *pk = sp_writer_packer(s->w);
	const msgpack_object_map *mm = &m->via.map;
	msgpack_pack_map(pk, mm->size);
	for (uint32_t i = 0; i < mm->size; i++) {
		msgpack_pack_object(pk, mm->ptr[i].key);
		if (sp_obj_str_eq(&mm->ptr[i].key, "truncated_frame_markers"))
			msgpack_pack_uint64(pk, s->ends[SP_END_TRUNCATED]);
		else
			msgpack_pack_object(pk, mm->ptr[i].val);
	}
}

/* A new segment: its architecture, a fresh unwinder, the derived header. */
static int begin_segment(struct sp_unwind_stage *s, const struct sp_record *rec,
			 const struct sp_header *hdr, struct sp_error *err)
{
	if (hdr->stage != SP_STAGE_RAW)
		return sp_error_set(err, SP_ERR_BAD_INPUT, "the stream is already %s, not raw",
				    sp_stage_name(hdr->stage));
	if (sp_unwind_regmap_select(&s->regs, rec->map, err) < 0)
		return -1;
	reset_segment(s);
	if (s->lu)
		s->engine->free(s->lu);
	s->lu = NULL;
	if (s->u) {
		struct sp_unwind_stats us;
		sp_unwinder_stats(s->u, &us);
		s->taken += us.frames_taken;
	}
	sp_unwinder_free(s->u);
	s->uo.this_host = sp_header_same_boot(rec->map);
	s->uo.regs = &s->regs;
	s->u = sp_unwinder_new(&s->uo);
	if (!s->u)
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	if (s->engine && !(s->lu = s->engine->segment(s->engine, s->u, err)))
		return -1;
	sp_pack_derived_header(s->w, rec->map, SP_STAGE_UNWOUND, s->tool, s->argc, s->argv);
	return 0;
}

int sp_unwind_stage_record(struct sp_unwind_stage *s, const struct sp_record *rec,
			   const struct sp_header *hdr, struct sp_error *err)
{
	switch (rec->type) {
	case SP_R_HEADER:
		return begin_segment(s, rec, hdr, err);
	case SP_R_SAMPLE:
		unwind_sample(s, rec);
		break;
	case SP_R_SUMMARY:
		write_unwind_record(s);
		write_summary(s, rec->map);
		break;
	case SP_R_RUNTIME: {
		uint64_t pid = 0;
		bool cpython = false;
		if (sp_map_u64(rec->map, "pid", &pid) && pid <= UINT32_MAX &&
		    sp_map_bool(rec->map, "cpython", &cpython) &&
		    sp_unwinder_set_cpython(s->u, (uint32_t)pid, cpython) < 0)
			s->oom = true;
		sp_writer_raw(s->w, rec->raw, rec->raw_len);
		break;
	}
	case SP_R_PROCESS: case SP_R_MAP: case SP_R_FORK: case SP_R_EXEC: case SP_R_EXIT:
	case SP_R_IMAGE: case SP_R_JITDUMP:
		if (rec->type == SP_R_EXIT) {
			uint64_t tid;
			sp_ustack_note_exit(&s->copies, rec->map);
			if (sp_map_u64(rec->map, "tid", &tid))
				sp_walk_memo_free(sp_u64map_remove(&s->walks, tid));
		}
		if (sp_addrspaces_apply(s->as, rec->type, rec->map) < 0)
			s->oom = true;
		sp_writer_raw(s->w, rec->raw, rec->raw_len);
		break;
	default:
		sp_writer_raw(s->w, rec->raw, rec->raw_len);
		break;
	}
	if (s->oom) {
		s->oom = false;
		return sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	}
	if (s->bad_sample) {
		s->bad_sample = false;
		return sp_error_set(err, SP_ERR_BAD_INPUT, "sample record is not a map");
	}
	return 0;
}

const uint64_t *sp_unwind_stage_ends(const struct sp_unwind_stage *s, uint64_t *n)
{
	*n = s->user_samples;
	return s->ends;
}

const char *sp_unwind_stage_denied(const struct sp_unwind_stage *s, uint32_t *pid, int *err)
{
	if (s->lu && s->engine->denied)
		return s->engine->denied(s->lu, pid, err);
	return sp_unwinder_denied(s->u, pid, err);
}

void sp_unwind_stage_totals(const struct sp_unwind_stage *s, uint64_t *samples, uint64_t *frames)
{
	*samples = s->total_samples;
	*frames = s->total_frames;
}

size_t sp_unwind_stage_copies_peak(const struct sp_unwind_stage *s)
{
	return s->copies.peak;
}

uint64_t sp_unwind_stage_frames_taken(const struct sp_unwind_stage *s)
{
	struct sp_unwind_stats us;
	sp_unwinder_stats(s->u, &us);
	return s->taken + us.frames_taken;
}

const struct sp_copy_used *sp_unwind_stage_copy_used(const struct sp_unwind_stage *s)
{
	return &s->used;
}

void sp_copy_used_add(struct sp_copy_used *c, bool complete, uint64_t used)
{
	if (!complete) {
		c->truncated++;
		return;
	}
	uint64_t b = (used + SP_COPY_BUCKET - 1) / SP_COPY_BUCKET;
	c->hist[b < SP_COPY_BUCKETS ? b : SP_COPY_BUCKETS - 1]++;
	c->n++;
	if (used > c->max)
		c->max = used;
}

/* The upper bound of the bucket where the k-th smallest need (from 1) lies. */
static uint64_t kth_bound(const struct sp_copy_used *c, uint64_t k)
{
	uint64_t seen = 0;
	for (size_t i = 0; i < SP_COPY_BUCKETS; i++) {
		seen += c->hist[i];
		if (seen >= k)
			return (uint64_t)i * SP_COPY_BUCKET;
	}
	return (uint64_t)(SP_COPY_BUCKETS - 1) * SP_COPY_BUCKET;
}

/* ceil(q n), at least 1. */
static uint64_t share_of(double q, uint64_t n)
{
	double x = q * (double)n;
	uint64_t k = (uint64_t)x;
	if ((double)k < x)
		k++;
	return k ? k : 1;
}

uint64_t sp_copy_used_quantile(const struct sp_copy_used *c, double q)
{
	if (!c->n)
		return 0;
	uint64_t b = kth_bound(c, share_of(q, c->n));
	return b < c->max ? b : c->max;
}

uint32_t sp_copy_used_window(const struct sp_copy_used *c, double keep, uint32_t floor,
			     uint32_t max)
{
	uint64_t all = c->n + c->truncated;
	uint64_t k = share_of(keep, all);
	if (!c->n || k > c->n)
		return max;
	uint64_t w = kth_bound(c, k);
	if (w < floor)
		w = floor;
	if (w % SP_COPY_BUCKET)
		w += SP_COPY_BUCKET - w % SP_COPY_BUCKET;
	return w < max ? (uint32_t)w : max;
}
