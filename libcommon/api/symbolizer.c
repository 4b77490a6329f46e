/* SPDX-License-Identifier: MIT
 * The public symbolizer (include/stackpulse.h): its options, which are
 * sp-symbolize's (sym/search.h), and struct sp_symbolizer over the
 * stream symbolizer of sym/symbolizer.h (sp_namer).
 *
 * The namer interns each distinct frame of a segment once; here each
 * interned frame is resolved once into its display entries (its inlined
 * calls first, then the physical function), whose strings are kept in
 * a pool until the segment ends.  A stack resolves into a copy of its
 * frames' entries: kept by stack id with SP_CACHE_INTERNAL, a scratch
 * array with SP_CACHE_EXTERNAL.
 *
 * JIT names change as a process's perf map is read again or jitdump
 * records bring code: the namer's generation of each process whose JIT
 * frames were resolved is noted, and an update that changes it
 * invalidates that process (the namer interns its frames afresh).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/internal.h"
#include "stream/vocab.h"
#include "sym/search.h"
#include "sym/symbolizer.h"
#include "util/alloc.h"
#include "util/hashmap.h"

/* An option of the generic list, applied in the order given. */
struct optval {
	enum sp_sym_opt opt;
	char *value;		/* NULL for an option without argument */
};

struct sp_symbolizer_options {
	struct optval *list;
	size_t nlist, alloc_list;
	char *kallsyms;			/* NULL: the default */
	bool no_debuginfod;
	enum sp_perf_map_policy policy;
	uint32_t *pids;
	size_t npids, alloc_pids;
	enum sp_stack_cache cache;
	struct sp_error err;
};

/* A string kept until the segment ends, once per distinct text. */
struct pooled {
	struct sp_hashmap_entry e;
	char s[];
};

/* A module record of the segment: what a resolved frame shows of it. */
struct modinfo {
	const char *path;		/* pooled; NULL: no such module */
	uint32_t pid;
	bool jit;
};

/* An interned frame of the namer (by its id): entries [first, first + n) of syms. */
struct symframe {
	uint32_t first, n;
	uint32_t pid;			/* of a JIT module */
	bool resolved, jit;
};

/*
 * A stack kept by the internal cache, with the frames it was resolved
 * from: a stream may define a stack id again (sp-symbolize writes a stack
 * named anew under its id), and a kept stack holds only for its frames.
 */
struct cached {
	struct sp_symbol *syms;
	size_t n;
	struct sp_stack_frame *raw;
	size_t nraw;
	bool cacheable;
	uint32_t pid;			/* of its JIT frames; ANY_PID: several */
	bool jit;
};

#define ANY_PID UINT32_MAX

struct sp_symbolizer {
	const void *profile;
	struct sp_symbolizer_options o;	/* a copy: the search points into it */
	char *images_dir, *pidlist;
	struct sp_sym_search search;
	struct sp_namer *namer;
	struct sp_error err;

	bool in_segment;
	uint32_t segment;
	struct sp_hashmap pool;		/* struct pooled, this segment */
	struct modinfo *mods;
	size_t nmods, alloc_mods;
	struct symframe *frames;	/* by namer id */
	size_t nframes, alloc_frames;
	struct sp_symbol *syms;		/* every entry of every frame */
	size_t nsyms, alloc_syms;
	uint32_t next_id;		/* never reused, across segments */
	struct sp_u64map stacks;	/* struct cached by stack id (internal cache) */
	struct cached **retired;	/* replaced since the last update: freed by the next */
	size_t nretired, alloc_retired;
	struct sp_symbol *scratch;
	size_t alloc_scratch;
	struct sp_u64map jitgen;	/* pid -> uint64_t *: generation last seen */
	uint32_t *inv;
	size_t ninv, alloc_inv;
	bool cacheable;
};

/* ---- options ------------------------------------------------------------ */

struct sp_symbolizer_options *sp_symbolizer_options_new(void)
{
	struct sp_symbolizer_options *o = calloc(1, sizeof(*o));
	if (!o)
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
	return o;
}

static void options_release(struct sp_symbolizer_options *o)
{
	for (size_t i = 0; i < o->nlist; i++)
		free(o->list[i].value);
	free(o->list);
	free(o->kallsyms);
	free(o->pids);
	memset(o, 0, sizeof(*o));
}

void sp_symbolizer_options_free(struct sp_symbolizer_options *o)
{
	if (!o)
		return;
	options_release(o);
	free(o);
}

static int options_nomem(struct sp_symbolizer_options *o)
{
	sp_error_set(&o->err, SP_ERR_NOMEM, "out of memory");
	return sp_error_publish(&o->err);
}

static int set_pids(struct sp_symbolizer_options *o, const uint32_t *pids, size_t n, bool add)
{
	if (!add)
		o->npids = 0;
	if (SP_ALLOC_GROW(o->pids, o->npids + n, o->alloc_pids) < 0)
		return options_nomem(o);
	if (n)
		memcpy(o->pids + o->npids, pids, n * sizeof(*pids));
	o->npids += n;
	o->policy = SP_PERF_MAP_PIDS;
	return 0;
}

/* Whose perf maps sp-symbolize's --perf-maps-for ARG means, as a policy. */
static int set_perf_maps_for(struct sp_symbolizer_options *o, const struct sp_sym_search *s)
{
	if (s->perf_maps == SP_PERF_MAPS_PIDS)
		return set_pids(o, s->perf_map_pids, s->nperf_map_pids, true);
	o->policy = s->perf_maps == SP_PERF_MAPS_PYTHON ? SP_PERF_MAP_PYTHON : SP_PERF_MAP_ANY;
	return 0;
}

/*
 * Applies one option of sp_sym_options[]; the argument is checked by
 * the search itself, on settings made for the purpose.
 */
static int apply_option(struct sp_symbolizer_options *o, enum sp_sym_opt opt, const char *value)
{
	struct sp_sym_search s;
	int rc = 0;
	if (!sp_sym_options[opt].arg && value)
		return sp_error_publish_new(SP_ERR_INVALID, "symbolizer option '%s' takes no value",
					    sp_sym_options[opt].name);
	sp_sym_search_init(&s);
	if (sp_sym_search_set(&s, opt, value) < 0) {
		sp_error_set(&o->err, s.err.code == SP_ERR_BAD_INPUT ? SP_ERR_INVALID : s.err.code,
			     "%s", sp_error_message(&s.err));
		sp_sym_search_release(&s);
		return sp_error_publish(&o->err);
	}
	switch (opt) {
	case SP_SYM_OPT_KALLSYMS:
		free(o->kallsyms);
		if (!(o->kallsyms = strdup(value)))
			rc = options_nomem(o);
		break;
	case SP_SYM_OPT_NO_DEBUGINFOD: o->no_debuginfod = true; break;
	case SP_SYM_OPT_NO_PERF_MAPS: o->policy = SP_PERF_MAP_OFF; break;
	case SP_SYM_OPT_PERF_MAPS_FOR: rc = set_perf_maps_for(o, &s); break;
	default: {
		struct optval v = { opt, value ? strdup(value) : NULL };
		if ((value && !v.value) || SP_ALLOC_GROW(o->list, o->nlist + 1, o->alloc_list) < 0) {
			free(v.value);
			rc = options_nomem(o);
			break;
		}
		o->list[o->nlist++] = v;
	}
	}
	sp_sym_search_release(&s);
	return rc;
}

int sp_symbolizer_options_set(struct sp_symbolizer_options *o, const char *name,
			      const char *value)
{
	SP_API_CHECK(o, -1);
	SP_API_CHECK(name, -1);
	if (strncmp(name, "--", 2) == 0)
		name += 2;
	for (int i = 0; i < SP_SYM_OPT_COUNT; i++)
		if (strcmp(sp_sym_options[i].name, name) == 0)
			return apply_option(o, (enum sp_sym_opt)i, value);
	return sp_error_publish_new(SP_ERR_INVALID, "unknown symbolizer option '%s'", name);
}

int sp_symbolizer_options_perf_maps(struct sp_symbolizer_options *o, enum sp_perf_map_policy policy)
{
	SP_API_CHECK(o, -1);
	if ((unsigned)policy > SP_PERF_MAP_OFF)
		return sp_error_publish_new(SP_ERR_INVALID, "unknown perf-map policy %d", (int)policy);
	o->policy = policy;
	return 0;
}

int sp_symbolizer_options_perf_map_pids(struct sp_symbolizer_options *o,
					const uint32_t *pids, size_t n)
{
	SP_API_CHECK(o, -1);
	if (n)
		SP_API_CHECK(pids, -1);
	for (size_t i = 0; i < n; i++)
		if (!pids[i])
			return sp_error_publish_new(SP_ERR_INVALID, "pid 0 in the perf-map pids");
	return set_pids(o, pids, n, false);
}

int sp_symbolizer_options_perf_map_dir(struct sp_symbolizer_options *o, const char *dir)
{
	SP_API_CHECK(o, -1);
	SP_API_CHECK(dir, -1);
	return apply_option(o, SP_SYM_OPT_PERF_MAP_DIR, dir);
}

int sp_symbolizer_options_kallsyms(struct sp_symbolizer_options *o, const char *path)
{
	SP_API_CHECK(o, -1);
	if (path && *path)
		return apply_option(o, SP_SYM_OPT_KALLSYMS, path);
	free(o->kallsyms);
	o->kallsyms = NULL;
	return 0;
}

int sp_symbolizer_options_debuginfod(struct sp_symbolizer_options *o, bool on)
{
	SP_API_CHECK(o, -1);
	o->no_debuginfod = !on;
	return 0;
}

int sp_symbolizer_options_stack_cache(struct sp_symbolizer_options *o, enum sp_stack_cache c)
{
	SP_API_CHECK(o, -1);
	if (c != SP_CACHE_INTERNAL && c != SP_CACHE_EXTERNAL)
		return sp_error_publish_new(SP_ERR_INVALID, "unknown stack cache %d", (int)c);
	o->cache = c;
	return 0;
}

/* A deep copy of o (NULL: the defaults) into *to. */
static int options_copy(struct sp_symbolizer_options *to, const struct sp_symbolizer_options *o)
{
	memset(to, 0, sizeof(*to));
	if (!o)
		return 0;
	to->no_debuginfod = o->no_debuginfod;
	to->policy = o->policy;
	to->cache = o->cache;
	if ((o->kallsyms && !(to->kallsyms = strdup(o->kallsyms))) ||
	    SP_ALLOC_GROW(to->list, o->nlist, to->alloc_list) < 0 ||
	    SP_ALLOC_GROW(to->pids, o->npids, to->alloc_pids) < 0)
		return -1;
	if (o->npids)
		memcpy(to->pids, o->pids, o->npids * sizeof(*o->pids));
	to->npids = o->npids;
	for (size_t i = 0; i < o->nlist; i++) {
		struct optval v = { o->list[i].opt, NULL };
		if (o->list[i].value && !(v.value = strdup(o->list[i].value)))
			return -1;
		to->list[to->nlist++] = v;
	}
	return 0;
}

/* ---- building ------------------------------------------------------------ */

/* "PID,PID,..." for --perf-maps-for. */
static char *pid_list(const uint32_t *pids, size_t n)
{
	char *s = malloc(n * 11 + 1), *p = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%u", i ? "," : "", pids[i]);
	*p = '\0';
	return s;
}

/* The search settings of the options, completed, as sp-symbolize makes them. */
static int build_search(struct sp_symbolizer *sym)
{
	struct sp_sym_search *s = &sym->search;
	const struct sp_symbolizer_options *o = &sym->o;
	int rc = 0;
	sp_sym_search_init(s);
	for (size_t i = 0; i < o->nlist && rc == 0; i++)
		rc = sp_sym_search_set(s, o->list[i].opt, o->list[i].value);
	if (rc == 0 && sym->images_dir)
		rc = sp_sym_search_set(s, SP_SYM_OPT_MODULE_DIR, sym->images_dir);
	if (rc == 0 && o->kallsyms)
		rc = sp_sym_search_set(s, SP_SYM_OPT_KALLSYMS, o->kallsyms);
	if (rc == 0 && o->no_debuginfod)
		rc = sp_sym_search_set(s, SP_SYM_OPT_NO_DEBUGINFOD, NULL);
	if (rc == 0 && o->policy == SP_PERF_MAP_PYTHON)
		rc = sp_sym_search_set(s, SP_SYM_OPT_PERF_MAPS_FOR, "python");
	else if (rc == 0 && (o->policy == SP_PERF_MAP_OFF ||
			     (o->policy == SP_PERF_MAP_PIDS && !o->npids)))
		rc = sp_sym_search_set(s, SP_SYM_OPT_NO_PERF_MAPS, NULL);
	else if (rc == 0 && o->policy == SP_PERF_MAP_PIDS) {
		if (!(sym->pidlist = pid_list(o->pids, o->npids)))
			return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
		rc = sp_sym_search_set(s, SP_SYM_OPT_PERF_MAPS_FOR, sym->pidlist);
	}
	if (rc == 0)
		rc = sp_sym_search_finish(s);
	if (rc < 0)
		sp_error_set(&sym->err, s->err.code == SP_ERR_BAD_INPUT ? SP_ERR_INVALID : s->err.code,
			     "%s", sp_error_message(&s->err));
	return rc;
}

static int pooled_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		      const void *keydata)
{
	const struct pooled *x = sp_container_of(a, struct pooled, e);
	const struct pooled *y = sp_container_of(b, struct pooled, e);
	return strcmp(x->s, keydata ? keydata : y->s);
}

static void pooled_free(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct pooled, e));
}

static void cached_free(void *p)
{
	struct cached *c = p;
	free(c->syms);
	free(c->raw);
	free(c);
}

/* Frees the stacks whose ids were defined again: the update after their resolve. */
static void free_retired(struct sp_symbolizer *sym)
{
	for (size_t i = 0; i < sym->nretired; i++)
		cached_free(sym->retired[i]);
	sym->nretired = 0;
}

/* Forgets what the segment resolved: its frames, its stacks, its strings. */
static void reset_segment(struct sp_symbolizer *sym)
{
	free_retired(sym);
	sp_u64map_release(&sym->stacks, cached_free);
	sp_u64map_release(&sym->jitgen, free);
	sp_hashmap_release(&sym->pool, pooled_free);
	sp_hashmap_init(&sym->pool, pooled_cmp);
	sym->nmods = sym->nframes = sym->nsyms = 0;
}

/*
 * sp-symbolize's check, before any output: a kallsyms file it was given
 * (not an archive's own, whose fault is no failure) must be readable.
 */
static int check_kallsyms(struct sp_symbolizer *sym)
{
	const char *k = sym->search.kallsyms;
	if (!k || strcmp(k, "none") == 0 || sym->search.kallsyms_archived || access(k, R_OK) == 0)
		return 0;
	int e = errno;
	sp_error_set(&sym->err, SP_ERR_ERRNO, "cannot read the --kallsyms file '%s': %s (save one "
		     "with sp-capture --kallsyms-out FILE, or give --kallsyms none)", k, strerror(e));
	sym->err.errnum = e;
	return -1;
}

/*
 * What both doors share: a copy of o, the search settings made from it
 * (images: a module directory added to them), and the namer.  NULL on
 * failure, published.
 */
static struct sp_symbolizer *make(const struct sp_symbolizer_options *o, const char *images,
				  bool tool, sp_sym_warn_fn *warn, void *warn_arg)
{
	struct sp_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym || options_copy(&sym->o, o) < 0 || (images && !(sym->images_dir = strdup(images)))) {
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
		sp_symbolizer_free(sym);
		return NULL;
	}
	sp_hashmap_init(&sym->pool, pooled_cmp);
	sp_u64map_init(&sym->stacks);
	sp_u64map_init(&sym->jitgen);
	if (build_search(sym) < 0 || (tool && check_kallsyms(sym) < 0) ||
	    !(sym->namer = sp_namer_new(&sym->search, warn, warn_arg, &sym->err))) {
		sp_error_publish(&sym->err);
		sp_symbolizer_free(sym);
		return NULL;
	}
	return sym;
}

struct sp_symbolizer *sp_symbolizer_new(struct sp_snapshot *s, struct sp_tail *t,
					const struct sp_symbolizer_options *o)
{
	if (!s == !t) {
		sp_error_publish_new(SP_ERR_INVALID, "%s: give one source, a snapshot or a tail",
				     __func__);
		return NULL;
	}
	struct sp_symbolizer *sym = make(o, t ? sp_tail_images_dir(t) : NULL, false, NULL, NULL);
	if (sym)
		sym->profile = s ? (const void *)s : (const void *)t;
	return sym;
}

/*
 * The tools' door.  The symbolizer is its own profile: no batch or stack
 * of a snapshot or a tail is of it, so the public entries refuse them and
 * the tool feeds the namer the stream itself.
 */
struct sp_symbolizer *sp_symbolizer_new_tool(const struct sp_symbolizer_options *o,
					     sp_sym_warn_fn *warn, void *warn_arg)
{
	struct sp_symbolizer *sym = make(o, NULL, true, warn, warn_arg);
	if (sym)
		sym->profile = sym;
	return sym;
}

struct sp_namer *sp_symbolizer_namer(struct sp_symbolizer *sym)
{
	return sym->namer;
}

void sp_symbolizer_free(struct sp_symbolizer *sym)
{
	if (!sym)
		return;
	reset_segment(sym);
	sp_hashmap_release(&sym->pool, NULL);
	sp_namer_free(sym->namer);
	sp_sym_search_release(&sym->search);
	options_release(&sym->o);
	free(sym->images_dir);
	free(sym->pidlist);
	free(sym->mods);
	free(sym->frames);
	free(sym->syms);
	free(sym->scratch);
	free(sym->inv);
	free(sym->retired);
	free(sym);
}

/* ---- update ------------------------------------------------------------- */

static int nomem(struct sp_symbolizer *sym)
{
	sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	return sp_error_publish(&sym->err);
}

/* The pooled copy of s (NULL stays NULL). */
static const char *pool(struct sp_symbolizer *sym, const char *s, bool *oom)
{
	if (!s)
		return NULL;
	struct pooled key = { .e.hash = sp_hash_str(s) };
	struct sp_hashmap_entry *e = sp_hashmap_get(&sym->pool, &key.e, s);
	if (e)
		return sp_container_of(e, struct pooled, e)->s;
	size_t len = strlen(s);
	struct pooled *p = malloc(sizeof(*p) + len + 1);
	if (p) {
		p->e.hash = key.e.hash;
		memcpy(p->s, s, len + 1);
	}
	if (!p || sp_hashmap_add(&sym->pool, &p->e) < 0) {
		free(p);
		*oom = true;
		return NULL;
	}
	return p->s;
}

/* A module record: its path, and the process of a JIT module. */
static int note_module(struct sp_symbolizer *sym, const struct sp_record *rec)
{
	uint64_t id = 0, pid = 0;
	const char *p = "", *k = "";
	size_t pl = 0, kl = 0;
	char path[4096];
	bool oom = false;
	if (!sp_map_u64(rec->map, "id", &id) || id > 1000000)
		return 0;	/* as the namer: a corrupt id names nothing */
	sp_map_u64(rec->map, "pid", &pid);
	sp_map_str(rec->map, "path", &p, &pl);
	sp_map_str(rec->map, "kind", &k, &kl);
	if (SP_ALLOC_SLOT(sym->mods, id, sym->nmods, sym->alloc_mods) < 0)
		return -1;
	snprintf(path, sizeof(path), "%.*s", (int)(pl < sizeof(path) ? pl : sizeof(path) - 1), p);
	struct modinfo *m = &sym->mods[id];
	m->path = pool(sym, path, &oom);
	m->pid = (uint32_t)pid;
	m->jit = kl == 3 && memcmp(k, "jit", 3) == 0;
	return oom ? -1 : 0;
}

/* Processes whose JIT names changed since their frames were resolved. */
static int check_jit(struct sp_symbolizer *sym)
{
	size_t i = 0;
	uint64_t pid;
	void *v;
	while (sp_u64map_next(&sym->jitgen, &i, &pid, &v)) {
		uint64_t *seen = v, now = sp_namer_jit_generation(sym->namer, (uint32_t)pid);
		if (now == *seen)
			continue;
		*seen = now;
		if (SP_ALLOC_GROW(sym->inv, sym->ninv + 1, sym->alloc_inv) < 0)
			return -1;
		sym->inv[sym->ninv++] = (uint32_t)pid;
	}
	if (!sym->ninv || !sym->stacks.count)
		return 0;
	/* The internal cache lets go of the stacks with JIT frames of those. */
	uint64_t *drop = malloc(sym->stacks.count * sizeof(*drop));
	size_t ndrop = 0;
	if (!drop)
		return -1;
	for (i = 0; sp_u64map_next(&sym->stacks, &i, &pid, &v);) {
		const struct cached *c = v;
		for (size_t j = 0; c->jit && j < sym->ninv; j++)
			if (c->pid == ANY_PID || c->pid == sym->inv[j]) {
				drop[ndrop++] = pid;
				break;
			}
	}
	for (i = 0; i < ndrop; i++)
		cached_free(sp_u64map_remove(&sym->stacks, drop[i]));
	free(drop);
	return 0;
}

int sp_symbolizer_update(struct sp_symbolizer *sym, const struct sp_batch *b,
			 struct sp_invalidation *inv)
{
	SP_API_CHECK(sym, -1);
	SP_API_CHECK(b, -1);
	if (b->profile != sym->profile) {
		sp_error_set(&sym->err, SP_ERR_MISMATCH, "the batch is not of this symbolizer's profile");
		return sp_error_publish(&sym->err);
	}
	bool header = b->nrecords && b->records[0].type == SP_R_HEADER, all = false;
	bool empty = !b->nrecords && !b->nstacks;	/* a tail's, before anything was written */
	if (!header && !empty && (!sym->in_segment || b->segment != sym->segment)) {
		sp_error_set(&sym->err, SP_ERR_STATE, "a batch of segment %u without its header: "
			     "every batch must be given, in order", b->segment);
		return sp_error_publish(&sym->err);
	}
	sym->ninv = 0;
	free_retired(sym);
	for (size_t i = 0; i < b->nrecords; i++) {
		const struct sp_record *rec = &b->records[i];
		int rc = 0;
		switch (rec->type) {
		case SP_R_HEADER:
			all = sym->in_segment;
			reset_segment(sym);
			sp_namer_begin_segment(sym->namer, rec->map);
			sym->segment = b->segment;
			sym->in_segment = true;
			break;
		case SP_R_MODULE:
			if (note_module(sym, rec) < 0)
				return nomem(sym);
			rc = sp_namer_add_module(sym->namer, rec);
			break;
		default:
			rc = sp_namer_note(sym->namer, rec);
			break;
		}
		if (rc < 0) {
			sp_error_set(&sym->err, SP_ERR_NOMEM, "%s", sp_namer_error(sym->namer));
			return sp_error_publish(&sym->err);
		}
	}
	if (!all && check_jit(sym) < 0)
		return nomem(sym);
	if (inv) {
		inv->all = all;
		inv->pids = all ? NULL : sym->inv;
		inv->npids = all ? 0 : sym->ninv;
	}
	return 0;
}

/* ---- resolve ------------------------------------------------------------ */

static enum sp_symbol_origin public_origin(enum sp_sym_origin o)
{
	return o == SP_ORIGIN_ADDRESS_ONLY || o == SP_ORIGIN_FUNCTION_START ?
	       SP_SYMBOL_ADDRESS_ONLY : SP_SYMBOL_RESOLVED;
}

/*
 * Resolves frame f, interned as namer id nid, into its entries: the
 * inlined calls, innermost first, then the physical function.
 */
static int expand(struct sp_symbolizer *sym, uint64_t nid, const struct sp_stack_frame *f)
{
	struct sp_symframe sf;
	bool oom = false;
	if (SP_ALLOC_SLOT(sym->frames, nid, sym->nframes, sym->alloc_frames) < 0)
		return -1;
	sp_namer_resolve(sym->namer, f, &sf);
	size_t n = sf.ninl + 1;
	if (SP_ALLOC_GROW(sym->syms, sym->nsyms + n, sym->alloc_syms) < 0)
		return -1;
	const struct modinfo *m = f->module < sym->nmods ? &sym->mods[f->module] : NULL;
	uint32_t kind = sf.flags & (SP_SYM_KERNEL | SP_SYM_JIT);
	struct sp_symbol *out = &sym->syms[sym->nsyms];
	for (size_t i = 0; i < n; i++) {
		bool phys = i == sf.ninl;
		const struct sp_inline *in = phys ? NULL : &sf.inl[i];
		out[i] = (struct sp_symbol){
			.name = pool(sym, phys ? sf.name : in->name ? in->name : "??", &oom),
			.module = m ? m->path : NULL,
			.file = pool(sym, phys ? sf.file : in->file, &oom),
			.line = phys ? sf.line : in->line,
			.ip = f->addr,
			.id = sym->next_id++,
			.flags = phys ? kind | (sf.flags & SP_SYM_HIDDEN) : kind | SP_SYM_INLINE,
			.origin = public_origin(sf.origin),
			.source = sp_sym_origin_name(sf.origin),
		};
	}
	if (oom)
		return -1;
	sym->frames[nid] = (struct symframe){
		.first = (uint32_t)sym->nsyms, .n = (uint32_t)n, .resolved = true,
		.jit = m && m->jit, .pid = m ? m->pid : 0,
	};
	sym->nsyms += n;
	return 0;
}

/* Notes the generation of a process whose JIT frame was resolved. */
static int watch_jit(struct sp_symbolizer *sym, uint32_t pid)
{
	if (sp_u64map_get(&sym->jitgen, pid))
		return 0;
	uint64_t *g = malloc(sizeof(*g));
	if (!g || sp_u64map_put(&sym->jitgen, pid, g) < 0) {
		free(g);
		return -1;
	}
	*g = sp_namer_jit_generation(sym->namer, pid);
	return 0;
}

/* The entries of st into sym->scratch; *c gets what caching needs. */
static ssize_t resolve_frames(struct sp_symbolizer *sym, const struct sp_stack *st,
			      struct cached *c)
{
	size_t n = 0;
	for (size_t i = 0; i < st->nraw; i++) {
		const struct sp_stack_frame *f = &st->raw[i];
		uint64_t nid;
		if (f->flags & SP_FRAME_MARKER)
			continue;
		int fresh = sp_namer_intern(sym->namer, f, &nid);
		if (fresh < 0 || ((fresh || nid >= sym->nframes || !sym->frames[nid].resolved) &&
				  expand(sym, nid, f) < 0))
			return -1;
		const struct symframe *fr = &sym->frames[nid];
		if (SP_ALLOC_GROW(sym->scratch, n + fr->n, sym->alloc_scratch) < 0)
			return -1;
		memcpy(sym->scratch + n, sym->syms + fr->first, fr->n * sizeof(*sym->scratch));
		n += fr->n;
		if (sym->syms[fr->first].flags & SP_SYM_JIT)
			c->cacheable = false;
		if (fr->jit) {
			if (watch_jit(sym, fr->pid) < 0)
				return -1;
			c->pid = c->jit && c->pid != fr->pid ? ANY_PID : fr->pid;
			c->jit = true;
		}
	}
	c->n = n;
	return (ssize_t)n;
}

static bool same_frames(const struct cached *c, const struct sp_stack *st)
{
	return c->nraw == st->nraw &&
	       (!c->nraw || memcmp(c->raw, st->raw, c->nraw * sizeof(*c->raw)) == 0);
}

/*
 * A kept stack whose id now has other frames: out of the cache, and freed
 * at the next update, as the frames of a stack are valid until an update.
 */
static int retire(struct sp_symbolizer *sym, uint64_t id)
{
	if (SP_ALLOC_GROW(sym->retired, sym->nretired + 1, sym->alloc_retired) < 0)
		return -1;
	sym->retired[sym->nretired++] = sp_u64map_remove(&sym->stacks, id);
	return 0;
}

/* Keeps stack st, resolved into sym->scratch; its copy goes to *frames. */
static ssize_t keep(struct sp_symbolizer *sym, const struct sp_stack *st, struct cached *got,
		    const struct sp_symbol **frames)
{
	struct cached *c = malloc(sizeof(*c));
	got->syms = malloc((got->n ? got->n : 1) * sizeof(*got->syms));
	got->raw = malloc((st->nraw ? st->nraw : 1) * sizeof(*got->raw));
	got->nraw = st->nraw;
	if (!c || !got->syms || !got->raw || sp_u64map_put(&sym->stacks, st->id, c) < 0) {
		free(c);
		free(got->syms);
		free(got->raw);
		return nomem(sym);
	}
	if (got->n)
		memcpy(got->syms, sym->scratch, got->n * sizeof(*got->syms));
	if (st->nraw)
		memcpy(got->raw, st->raw, st->nraw * sizeof(*got->raw));
	*c = *got;
	*frames = c->syms;
	return (ssize_t)c->n;
}

ssize_t sp_symbolizer_resolve(struct sp_symbolizer *sym, const struct sp_stack *st,
			      const struct sp_symbol **frames)
{
	SP_API_CHECK(sym, -1);
	SP_API_CHECK(st, -1);
	SP_API_CHECK(frames, -1);
	if (st->profile != sym->profile) {
		sp_error_set(&sym->err, SP_ERR_MISMATCH, "the stack is not of this symbolizer's profile");
		return sp_error_publish(&sym->err);
	}
	if (!sym->in_segment || st->segment != sym->segment) {
		if (!sym->in_segment)
			sp_error_set(&sym->err, SP_ERR_STATE, "no batch was given to the symbolizer: "
				     "give it each batch (sp_symbolizer_update) before its stacks");
		else
			sp_error_set(&sym->err, SP_ERR_STATE, "a stack of segment %u, the symbolizer "
				     "is at segment %u: give it each batch (sp_symbolizer_update) "
				     "before its stacks", st->segment, sym->segment);
		return sp_error_publish(&sym->err);
	}
	bool internal = sym->o.cache == SP_CACHE_INTERNAL;
	struct cached *c = internal ? sp_u64map_get(&sym->stacks, st->id) : NULL;
	if (c && same_frames(c, st)) {
		sym->cacheable = c->cacheable;
		*frames = c->syms;
		return (ssize_t)c->n;
	}
	if (c && retire(sym, st->id) < 0)
		return nomem(sym);
	struct cached got = { .cacheable = true };
	if (resolve_frames(sym, st, &got) < 0)
		return nomem(sym);
	sym->cacheable = got.cacheable;
	*frames = sym->scratch;
	return internal ? keep(sym, st, &got, frames) : (ssize_t)got.n;
}

bool sp_symbolizer_is_cacheable(const struct sp_symbolizer *sym)
{
	if (!sym) {
		sp_error_publish_new(SP_ERR_INVALID, "%s: sym is NULL", __func__);
		return false;
	}
	return sym->cacheable;
}
