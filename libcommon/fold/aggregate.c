/* SPDX-License-Identifier: MIT
 * Aggregation: the distinct display frames, the distinct stacks of them,
 * the threads and the per-(thread, stack) counts that every output is
 * made from (see internal.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fold/internal.h"
#include "util/alloc.h"

/* A display frame in frame_map: the key is what makes frames distinct. */
struct frame_ent {
	struct sp_hashmap_entry e;
	const char *name;	/* the kept copy */
	unsigned kind;
	bool inlined;
	uint64_t addr;		/* with locations: where it is, and in which mapping */
	uint32_t mapping;
	uint32_t idx;
};

/* A stack in stack_map; its frames are in the arena. */
struct stack_ent {
	struct sp_hashmap_entry e;
	uint32_t idx;
};

/* What a stack lookup compares with: f's arena and the frames sought. */
struct stack_key {
	const struct sp_fold *f;
	const uint32_t *v;
	size_t n;
};

int fold_nomem(struct sp_fold *f)
{
	return sp_error_set(&f->err, SP_ERR_NOMEM, "out of memory");
}

char *fold_keep(struct sp_fold *f, const char *s, size_t n)
{
	if (SP_ALLOC_GROW(f->strings, f->nstrings + 1, f->allocstrings) < 0)
		return NULL;
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	f->strings[f->nstrings++] = d;
	return d;
}

static int frame_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	const struct frame_ent *x = sp_container_of(a, struct frame_ent, e);
	const struct frame_ent *y = sp_container_of(b, struct frame_ent, e);
	(void)keydata;
	return x->kind != y->kind || x->inlined != y->inlined || x->addr != y->addr ||
	       x->mapping != y->mapping || strcmp(x->name, y->name) != 0;
}

static uint32_t frame_hash(const struct sp_fold_frame *proto, uint64_t addr)
{
	return sp_hash_str(proto->name) ^ (uint32_t)(proto->kind << 1 | proto->inlined) * 0x9e3779b1u ^
	       (uint32_t)sp_hash_u64(addr ^ (uint64_t)proto->mapping << 48);
}

/* Copies of a new frame's strings; -1 when memory ran out. */
static int keep_frame_strings(struct sp_fold *f, struct sp_fold_frame *x,
			      const struct sp_fold_frame *proto)
{
	x->name = fold_keep(f, proto->name, strlen(proto->name));
	x->function = proto->function ? fold_keep(f, proto->function, strlen(proto->function)) : x->name;
	x->file = proto->file ? fold_keep(f, proto->file, strlen(proto->file)) : NULL;
	x->module = proto->module ? fold_keep(f, proto->module, strlen(proto->module)) : NULL;
	x->build_id = NULL;
	if (proto->build_id_len > 0)
		x->build_id = (const unsigned char *)fold_keep(f, (const char *)proto->build_id,
							       (size_t)proto->build_id_len);
	if (!x->name || !x->function || (proto->file && !x->file) ||
	    (proto->module && !x->module) || (proto->build_id_len > 0 && !x->build_id))
		return -1;
	return 0;
}

int fold_frame(struct sp_fold *f, const struct sp_fold_frame *proto, uint32_t *out)
{
	/* Without locations a frame is its name: its address is only the first seen. */
	uint64_t addr = f->o.locations ? proto->addr : 0;
	struct frame_ent key = { .name = proto->name, .kind = proto->kind, .inlined = proto->inlined,
				 .addr = addr, .mapping = f->o.locations ? proto->mapping : 0 };
	key.e.hash = frame_hash(proto, addr);
	struct sp_hashmap_entry *hit = sp_hashmap_get(&f->frame_map, &key.e, NULL);
	if (hit) {
		*out = sp_container_of(hit, struct frame_ent, e)->idx;
		return 0;
	}
	struct frame_ent *e = malloc(sizeof(*e));
	if (!e || SP_ALLOC_GROW(f->frames, f->nframes + 1, f->allocframes) < 0)
		goto nomem;
	struct sp_fold_frame *x = &f->frames[f->nframes];
	*x = *proto;
	if (keep_frame_strings(f, x, proto) < 0)
		goto nomem;
	*e = key;
	e->name = x->name;
	e->idx = (uint32_t)f->nframes;
	if (sp_hashmap_add(&f->frame_map, &e->e) < 0)
		goto nomem;
	*out = (uint32_t)f->nframes++;
	return 0;
nomem:
	free(e);
	return fold_nomem(f);
}

static int stack_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	const struct stack_key *k = keydata;
	uint32_t idx = sp_container_of(a, struct stack_ent, e)->idx;
	(void)b;
	if (k->f->stacks[idx].n != k->n)
		return 1;
	return k->n && memcmp(k->f->arena + k->f->stack_off[idx], k->v, k->n * sizeof(*k->v)) != 0;
}

int fold_stack(struct sp_fold *f, const uint32_t *v, size_t n, uint32_t *out)
{
	struct stack_key sk = { f, v, n };
	struct stack_ent key;
	key.e.hash = sp_hash_bytes(v, n * sizeof(*v));
	struct sp_hashmap_entry *hit = sp_hashmap_get(&f->stack_map, &key.e, &sk);
	if (hit) {
		*out = sp_container_of(hit, struct stack_ent, e)->idx;
		return 0;
	}
	/*
	 * Each array keeps its own pointer and capacity whether or not the
	 * others could grow: a failure here frees nothing.
	 */
	size_t k = f->nstacks;
	struct stack_ent *e = malloc(sizeof(*e));
	if (!e || SP_ALLOC_GROW(f->stacks, k + 1, f->allocstacks) < 0 ||
	    SP_ALLOC_GROW(f->stack_off, k + 1, f->alloc_stack_off) < 0 ||
	    SP_ALLOC_GROW(f->arena, f->narena + n, f->allocarena) < 0) {
		free(e);
		return fold_nomem(f);
	}
	e->e.hash = key.e.hash;
	e->idx = (uint32_t)k;
	if (sp_hashmap_add(&f->stack_map, &e->e) < 0) {
		free(e);
		return fold_nomem(f);
	}
	f->stack_off[k] = f->narena;
	if (n)
		memcpy(f->arena + f->narena, v, n * sizeof(*v));
	f->narena += n;
	f->stacks[k] = (struct sp_fold_stack){ NULL, n };
	f->nstacks++;
	*out = (uint32_t)k;
	return 0;
}

int fold_thread(struct sp_fold *f, uint32_t pid, uint32_t tid, const char *comm,
		const char *thread_comm, uint32_t *out)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uintptr_t hit = (uintptr_t)sp_u64map_get(&f->thread_map, key);
	if (hit && strcmp(f->threads[hit - 1].comm, comm) == 0) {
		f->threads[hit - 1].names_gen = f->names_gen;
		*out = (uint32_t)(hit - 1);
		return 0;
	}
	/* A thread seen before under another name (after an exec), or a new one. */
	size_t i = f->nthreads;
	while (i-- > 0)
		if (f->threads[i].pid == pid && f->threads[i].tid == tid &&
		    strcmp(f->threads[i].comm, comm) == 0)
			break;
	if (i == SIZE_MAX) {
		if (SP_ALLOC_GROW(f->threads, f->nthreads + 1, f->allocthreads) < 0)
			return fold_nomem(f);
		struct fold_thread t = { .pid = pid, .tid = tid };
		t.comm = fold_keep(f, comm, strlen(comm));
		t.thread_comm = fold_keep(f, thread_comm, strlen(thread_comm));
		if (!t.comm || !t.thread_comm)
			return fold_nomem(f);
		i = f->nthreads++;
		f->threads[i] = t;
	}
	if (sp_u64map_put(&f->thread_map, key, (void *)(uintptr_t)(i + 1)) < 0)
		return fold_nomem(f);
	f->threads[i].names_gen = f->names_gen;
	*out = (uint32_t)i;
	return 0;
}

int fold_count(struct sp_fold *f, uint32_t t, uint32_t k, uint64_t period, uint64_t time)
{
	uint64_t key = (uint64_t)t << 32 | k;
	uintptr_t ci = (uintptr_t)sp_u64map_get(&f->count_map, key);
	if (!ci) {
		if (SP_ALLOC_GROW(f->counts, f->ncounts + 1, f->alloccounts) < 0 ||
		    sp_u64map_put(&f->count_map, key, (void *)(uintptr_t)(f->ncounts + 1)) < 0)
			return fold_nomem(f);
		f->counts[f->ncounts] = (struct sp_fold_count){ t, k, 0, 0 };
		ci = ++f->ncounts;
	}
	f->counts[ci - 1].samples++;
	f->counts[ci - 1].period += period;
	if (f->o.format == SP_FOLD_SPEEDSCOPE || f->o.format == SP_FOLD_FIREFOX) {
		struct fold_thread *th = &f->threads[t];
		if (SP_ALLOC_GROW(th->seq, th->nseq + 1, th->allocseq) < 0)
			return fold_nomem(f);
		th->seq[th->nseq++] = (struct sp_fold_sample){ k, f->o.period ? period : 1, time };
	}
	return 0;
}

static void free_frame_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct frame_ent, e));
}

static void free_stack_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct stack_ent, e));
}

void fold_tables_init(struct sp_fold *f)
{
	sp_hashmap_init(&f->frame_map, frame_cmp);
	sp_hashmap_init(&f->stack_map, stack_cmp);
	sp_u64map_init(&f->thread_map);
	sp_u64map_init(&f->count_map);
}

void fold_tables_release(struct sp_fold *f)
{
	sp_hashmap_release(&f->frame_map, free_frame_ent);
	sp_hashmap_release(&f->stack_map, free_stack_ent);
	sp_u64map_release(&f->thread_map, NULL);
	sp_u64map_release(&f->count_map, NULL);
	for (size_t i = 0; i < f->nstrings; i++)
		free(f->strings[i]);
	free(f->strings);
	free(f->frames);
	free(f->stacks);
	free(f->stack_off);
	free(f->arena);
	for (size_t i = 0; i < f->nthreads; i++)
		free(f->threads[i].seq);
	free(f->threads);
	free(f->counts);
	free(f->shown);
}
