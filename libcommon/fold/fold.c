/* SPDX-License-Identifier: MIT
 * Folding samples into stacks (see fold.h): the records of a stream, and
 * the definitions of the current segment (modules, frames, stacks,
 * process and thread names) that samples refer to.  What outlives a
 * segment is in aggregate.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold/internal.h"
#include "util/alloc.h"

/* Ids past these are taken for corrupt input, not grown to. */
#define MAX_FRAME_ID 10000000u
#define MAX_STACK_ID 10000000u
#define MAX_MODULE_ID 1000000u

const char *sp_fold_error(const struct sp_fold *f)
{
	return sp_error_message(&f->err);
}

bool sp_fold_any_sample(const struct sp_fold *f)
{
	return f->any_sample;
}

struct sp_fold *sp_fold_new(const struct sp_fold_options *o)
{
	struct sp_fold *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->o = *o;
	/* Time off the CPU is known as a duration only. */
	f->o.period = o->period || o->off_cpu || o->wall;
	/* A Location holds its inline frames as Lines, whatever the folded text shows. */
	f->o.inline_frames = o->inline_frames || o->locations;
	f->ev_off_cpu = -1;
	sp_u64map_init(&f->off_stacks);
	f->filtered = o->npids || o->ntids || o->ncomms;
	f->windowed = o->from > 0 || o->to < INFINITY;
	f->names_gen = 1;
	fold_tables_init(f);
	sp_u64map_init(&f->procs);
	sp_u64map_init(&f->tcomms);
	sp_u64map_init(&f->kthreads);
	return f;
}

/* Frees the names of a pid- or tid-keyed map and empties it. */
static void names_release(struct sp_u64map *m)
{
	sp_u64map_release(m, free);
}

static void reset_segment(struct sp_fold *f)
{
	f->nsegframes = 0;
	f->nseg_disp = 0;
	if (f->nsymstacks)
		memset(f->symstacks, 0, f->nsymstacks * sizeof(*f->symstacks));
	for (size_t i = 0; i < f->nmods; i++) {
		free(f->mods[i].path);
		f->mods[i].path = NULL;
		f->mods[i].defined = false;
	}
	for (size_t i = 0; i < f->nsegmaps; i++)
		free(f->segmaps[i].path);
	f->nsegmaps = 0;
	names_release(&f->procs);
	names_release(&f->tcomms);
	sp_u64map_release(&f->kthreads, NULL);
	sp_u64map_init(&f->kthreads);
	f->names_gen++;
	f->have_start = false;
	f->anchor_clock = f->anchor_real = 0;
}

static void events_release(struct sp_fold *f)
{
	for (size_t i = 0; i < f->nevnames; i++)
		free(f->evnames[i]);
	free(f->evnames);
	f->evnames = NULL;
	f->nevnames = 0;
}

void sp_fold_free(struct sp_fold *f)
{
	if (!f)
		return;
	reset_segment(f);
	fold_tables_release(f);
	events_release(f);
	sp_u64map_release(&f->off_stacks, NULL);
	free(f->segmaps);
	free(f->mappings);
	free(f->marks);
	free(f->segframes);
	free(f->seg_disp);
	free(f->symstacks);
	free(f->mods);
	free(f->scratch);
	free(f);
}

/* Appends display frame d to the segment's list. */
static int seg_disp_push(struct sp_fold *f, uint32_t d)
{
	if (SP_ALLOC_GROW(f->seg_disp, f->nseg_disp + 1, f->allocseg_disp) < 0)
		return fold_nomem(f);
	f->seg_disp[f->nseg_disp++] = d;
	return 0;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* "[name]" for a module: its file name in brackets, or its own "[vdso]". */
static void bracketed(char *buf, size_t len, unsigned kind, const char *path)
{
	const char *b = kind == SP_FOLD_KERNEL ? "kernel" : path ? basename_of(path) : "unknown";
	snprintf(buf, len, b[0] == '[' ? "%s" : "[%s]", b);
}

static const char *kind_suffix(const struct sp_fold *f, unsigned kind)
{
	return kind == SP_FOLD_KERNEL && f->o.kernel ? "_[k]" :
	       kind == SP_FOLD_JIT && f->o.jit ? "_[j]" : "";
}

static struct segmod *segmod_get(struct sp_fold *f, uint64_t id)
{
	if (id >= f->nmods || !f->mods[id].defined)
		return NULL;
	return &f->mods[id];
}

/* The inline entries of a frame record, outermost call first, after the physical frame. */
static int take_inlines(struct sp_fold *f, const struct sp_fold_frame *phys,
			const msgpack_object_array *inl)
{
	for (uint32_t i = inl->size; i-- > 0;) {
		const msgpack_object *e = &inl->ptr[i];
		const char *in = "??", *ifile = NULL;
		size_t inl_n = 2, ifl = 0;
		uint64_t il = 0;
		sp_map_str(e, "name", &in, &inl_n);
		sp_map_str(e, "file", &ifile, &ifl);
		sp_map_u64(e, "line", &il);
		char ib[4096], ifn[4096], iff[4096];
		fold_shown_name(ib, sizeof(ib), in, inl_n, "_[i]");
		snprintf(ifn, sizeof(ifn), "%.*s", (int)(inl_n < 4000 ? inl_n : 4000), in);
		snprintf(iff, sizeof(iff), "%.*s", (int)(ifl < 4000 ? ifl : 4000), ifile ? ifile : "");
		struct sp_fold_frame ip = *phys;
		ip.name = ib;
		ip.function = ifn;
		ip.file = ifile ? iff : NULL;
		ip.line = (unsigned)il;
		ip.inlined = true;
		uint32_t d;
		if (fold_frame(f, &ip, &d) < 0 || seg_disp_push(f, d) < 0)
			return -1;
	}
	return 0;
}

/* With locations: a map record of the segment, kept to place frames in. */
static int take_map(struct sp_fold *f, const msgpack_object *m)
{
	struct segmap sm = { 0 };
	const char *path;
	const void *bid;
	size_t n, bl;
	if (!sp_map_str(m, "path", &path, &n) || !sp_map_u64(m, "start", &sm.start) ||
	    !sp_map_u64(m, "len", &sm.len))
		return 0;
	sp_map_u64(m, "pgoff", &sm.pgoff);
	if (sp_map_bin(m, "build_id", &bid, &bl) && bl) {
		sm.bidlen = (int)(bl > sizeof(sm.bid) ? sizeof(sm.bid) : bl);
		memcpy(sm.bid, bid, (size_t)sm.bidlen);
	}
	if (!(sm.path = strndup(path, n)) ||
	    SP_ALLOC_GROW(f->segmaps, f->nsegmaps + 1, f->allocsegmaps) < 0) {
		free(sm.path);
		return fold_nomem(f);
	}
	f->segmaps[f->nsegmaps++] = sm;
	return 0;
}

/*
 * The mapping + 1 of the module file at path that holds addr: the latest
 * map record of the segment that does, added to the mappings when new; 0
 * when none does.  Processes that share an address share the mapping.
 */
static int mapping_at(struct sp_fold *f, const char *path, uint64_t addr, uint32_t *out)
{
	*out = 0;
	for (size_t i = f->nsegmaps; i-- > 0;) {
		const struct segmap *sm = &f->segmaps[i];
		if (addr < sm->start || addr - sm->start >= sm->len || strcmp(sm->path, path) != 0)
			continue;
		for (size_t k = 0; k < f->nmappings; k++) {
			const struct sp_fold_mapping *x = &f->mappings[k];
			if (x->start == sm->start && x->limit == sm->start + sm->len &&
			    x->offset == sm->pgoff && strcmp(x->path, path) == 0) {
				*out = (uint32_t)k + 1;
				return 0;
			}
		}
		if (SP_ALLOC_GROW(f->mappings, f->nmappings + 1, f->allocmappings) < 0)
			return fold_nomem(f);
		struct sp_fold_mapping *x = &f->mappings[f->nmappings];
		*x = (struct sp_fold_mapping){ .start = sm->start, .limit = sm->start + sm->len,
					       .offset = sm->pgoff, .build_id_len = sm->bidlen };
		x->path = fold_keep(f, path, strlen(path));
		x->build_id = sm->bidlen ? (const unsigned char *)fold_keep(f, (const char *)sm->bid,
									   (size_t)sm->bidlen) : NULL;
		if (!x->path || (sm->bidlen && !x->build_id))
			return fold_nomem(f);
		*out = (uint32_t)++f->nmappings;
		return 0;
	}
	return 0;
}

/* A symbolized frame record: its display frames, root first. */
static int take_frame(struct sp_fold *f, const msgpack_object *m)
{
	uint64_t id = 0, flags = 0, line = 0, addr = 0, rel = 0, mid = UINT64_MAX;
	const char *name = "??", *origin = "", *file = NULL;
	size_t nl = 2, ol = 0, fl = 0;
	sp_map_u64(m, "id", &id);
	sp_map_u64(m, "flags", &flags);
	sp_map_u64(m, "line", &line);
	sp_map_u64(m, "addr", &addr);
	sp_map_u64(m, "module", &mid);
	bool has_rel = sp_map_u64(m, "rel", &rel);
	sp_map_str(m, "name", &name, &nl);
	sp_map_str(m, "origin", &origin, &ol);
	sp_map_str(m, "file", &file, &fl);
	if (id >= MAX_FRAME_ID)
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "frame id %llu out of range",
				    (unsigned long long)id);
	if (SP_ALLOC_SLOT(f->segframes, id, f->nsegframes, f->allocsegframes) < 0)
		return fold_nomem(f);
	struct segframe *sf = &f->segframes[id];
	*sf = (struct segframe){ (uint32_t)f->nseg_disp, 0, true };
	if ((flags & SP_SYM_HIDDEN) && !f->o.show_hidden)
		return 0;

	unsigned kind = flags & SP_SYM_KERNEL ? SP_FOLD_KERNEL : flags & SP_SYM_JIT ? SP_FOLD_JIT : SP_FOLD_USER;
	bool addr_only = ol == 12 && memcmp(origin, "address-only", 12) == 0 && !(flags & SP_SYM_MARKER);
	struct segmod *mod = mid != UINT64_MAX ? segmod_get(f, mid) : NULL;
	char buf[4096], fn[4096], fbuf[4096];
	if (addr_only && !f->o.addrs) {
		/* Address-only frames of one module fold together. */
		bracketed(fn, sizeof(fn), kind, mod ? mod->path : NULL);
		name = fn;
		nl = strlen(fn);
	}
	fold_shown_name(buf, sizeof(buf), name, nl, kind_suffix(f, kind));
	snprintf(fn, sizeof(fn), "%.*s", (int)(nl < 4000 ? nl : 4000), name);
	snprintf(fbuf, sizeof(fbuf), "%.*s", (int)(fl < 4000 ? fl : 4000), file ? file : "");
	struct sp_fold_frame proto = {
		.name = buf, .function = fn, .file = file ? fbuf : NULL, .line = (unsigned)line,
		.module = mod ? mod->path : NULL, .build_id = mod ? mod->bid : NULL,
		.build_id_len = mod ? mod->bidlen : 0, .kind = kind, .address_only = addr_only,
		.function_start = ol == 14 && memcmp(origin, "function-start", 14) == 0,
		.addr = addr, .rel = rel, .has_rel = has_rel,
	};
	if (f->o.locations && mod && kind != SP_FOLD_KERNEL &&
	    mapping_at(f, mod->path, addr, &proto.mapping) < 0)
		return -1;
	/* With --inline: the physical function, called at the outermost inline call's line. */
	const msgpack_object_array *inl = f->o.inline_frames ? sp_map_array(m, "inline") : NULL;
	uint32_t d;
	if (fold_frame(f, &proto, &d) < 0 || seg_disp_push(f, d) < 0)
		return -1;
	if (inl && inl->size > 0 && take_inlines(f, &proto, inl) < 0)
		return -1;
	sf->n = (uint32_t)(f->nseg_disp - sf->off);
	return 0;
}

/* An unwound stack frame, named by module and address. */
static int unwound_frame(struct sp_fold *f, const msgpack_object *fr, uint32_t *out)
{
	const msgpack_object *e = fr->via.array.ptr;
	uint64_t addr = e[0].via.u64, rel = e[2].via.u64, flags = e[3].via.u64;
	struct segmod *mod = e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
			     segmod_get(f, e[1].via.u64) : NULL;
	uint64_t fk = flags & SP_FRAME_KIND_MASK;
	unsigned kind = fk == SP_FRAME_KERNEL ? SP_FOLD_KERNEL : fk == SP_FRAME_JIT ? SP_FOLD_JIT : SP_FOLD_USER;
	bool marker = flags & SP_FRAME_MARKER;
	char name[4096], shown[4200];
	if (marker)
		snprintf(name, sizeof(name), "[%s]", sp_unwind_end_name((enum sp_unwind_end)rel));
	else if (!f->o.addrs)
		bracketed(name, sizeof(name), kind, mod ? mod->path : NULL);
	else if (kind == SP_FOLD_KERNEL)
		snprintf(name, sizeof(name), "[kernel]+0x%llx", (unsigned long long)addr);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", mod ? basename_of(mod->path) : "",
			 (unsigned long long)rel);
	fold_shown_name(shown, sizeof(shown), name, strlen(name), kind_suffix(f, kind));
	struct sp_fold_frame proto = {
		.name = shown, .function = name, .module = mod ? mod->path : NULL,
		.build_id = mod ? mod->bid : NULL, .build_id_len = mod ? mod->bidlen : 0,
		.kind = kind, .address_only = !marker, .addr = addr, .rel = rel,
		.has_rel = !marker && mod,
	};
	return fold_frame(f, &proto, out);
}

/* Appends the display frames of one frame of a stack record to the scratch stack. */
static int stack_frame(struct sp_fold *f, const msgpack_object *e, bool symbolized, uint64_t id)
{
	const uint32_t *v;
	uint32_t n, d;
	if (symbolized) {
		if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER || e->via.u64 >= f->nsegframes ||
		    !f->segframes[e->via.u64].defined)
			return sp_error_set(&f->err, SP_ERR_BAD_INPUT,
					    "symstack %llu refers to an undefined frame",
					    (unsigned long long)id);
		const struct segframe *sf = &f->segframes[e->via.u64];
		/* A frame may name nothing (no display frames, no table yet). */
		n = sf->n;
		v = n ? f->seg_disp + sf->off : NULL;
	} else {
		if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size < 4)
			return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "malformed frame in stack %llu",
					    (unsigned long long)id);
		if (unwound_frame(f, e, &d) < 0)
			return -1;
		v = &d;
		n = 1;
	}
	if (SP_ALLOC_GROW(f->scratch, f->nscratch + n, f->allocscratch) < 0)
		return fold_nomem(f);
	if (n)
		memcpy(f->scratch + f->nscratch, v, n * sizeof(*v));
	f->nscratch += n;
	return 0;
}

/* A symstack (symbolized) or stack (unwound) record. */
static int take_stack(struct sp_fold *f, const msgpack_object *m, bool symbolized)
{
	uint64_t id = 0;
	sp_map_u64(m, "id", &id);
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	if (id >= MAX_STACK_ID)
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "stack id %llu out of range",
				    (unsigned long long)id);
	/* Leaf first in the stream; root first here. */
	f->nscratch = 0;
	for (uint32_t i = fr ? fr->size : 0; i-- > 0;)
		if (stack_frame(f, &fr->ptr[i], symbolized, id) < 0)
			return -1;
	uint32_t k;
	if (fold_stack(f, f->scratch, f->nscratch, &k) < 0)
		return -1;
	if (SP_ALLOC_SLOT(f->symstacks, id, f->nsymstacks, f->allocsymstacks) < 0)
		return fold_nomem(f);
	f->symstacks[id] = k + 1;
	return 0;
}

static int take_module(struct sp_fold *f, const msgpack_object *m)
{
	uint64_t id = 0;
	const void *bid = NULL;
	const char *s = NULL;
	size_t n = 0, bl = 0;
	sp_map_u64(m, "id", &id);
	if (id >= MAX_MODULE_ID)
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "module id %llu out of range",
				    (unsigned long long)id);
	if (SP_ALLOC_SLOT(f->mods, id, f->nmods, f->allocmods) < 0)
		return fold_nomem(f);
	struct segmod *sm = &f->mods[id];
	free(sm->path);
	sm->path = sp_map_str(m, "path", &s, &n) ? strndup(s, n) : NULL;
	sm->bidlen = 0;
	if (sp_map_bin(m, "build_id", &bid, &bl)) {
		sm->bidlen = (int)(bl > sizeof(sm->bid) ? sizeof(sm->bid) : bl);
		if (sm->bidlen)	/* msgpack-c gives an empty bin a NULL pointer */
			memcpy(sm->bid, bid, (size_t)sm->bidlen);
	}
	sm->defined = sm->path != NULL;
	return 0;
}

/* Names a pid or tid; a name that cannot be kept leaves the old one. */
static void set_name(struct sp_fold *f, struct sp_u64map *m, uint64_t id, const char *s, size_t len)
{
	f->names_gen++;
	char *name = strndup(s, len);
	void *old = sp_u64map_get(m, id);
	if (!name || sp_u64map_put(m, id, name) < 0) {
		free(name);
		return;
	}
	free(old);
}

/*
 * Whether event index ev has the name of the one folded: a recording may
 * list a name twice (--event-fallback's cpu-clock beside cpu-clock).
 */
static bool same_event(const struct sp_fold *f, uint64_t ev)
{
	return f->ev_picked >= 0 && ev < f->nevnames &&
	       strcmp(f->evnames[ev], f->evnames[f->ev_picked]) == 0;
}

/*
 * Stack k of an off-CPU sample, with the frame that says so as its leaf:
 * [off-cpu] for a thread that waited, [preempted] for one that could
 * have run.
 */
static int off_cpu_stack(struct sp_fold *f, uint32_t *k, bool preempted)
{
	uint64_t key = (uint64_t)*k << 1 | preempted;
	uintptr_t hit = (uintptr_t)sp_u64map_get(&f->off_stacks, key);
	if (hit) {
		*k = (uint32_t)(hit - 1);
		return 0;
	}
	struct sp_fold_frame proto = {
		.name = preempted ? SP_FOLD_PREEMPTED : SP_FOLD_OFF_CPU, .address_only = true,
	};
	uint32_t d, nk;
	if (fold_frame(f, &proto, &d) < 0)
		return -1;
	/* The stack's frames live in the arena, which grows: copied first. */
	size_t n = f->stacks[*k].n;
	if (SP_ALLOC_GROW(f->scratch, n + 1, f->allocscratch) < 0)
		return fold_nomem(f);
	if (n)
		memcpy(f->scratch, f->arena + f->stack_off[*k], n * sizeof(*f->scratch));
	f->scratch[n] = d;
	if (fold_stack(f, f->scratch, n + 1, &nk) < 0)
		return -1;
	if (sp_u64map_put(&f->off_stacks, key, (void *)(uintptr_t)(nk + 1)) < 0)
		return fold_nomem(f);
	*k = nk;
	return 0;
}

/* Whether a sample of event ev is folded, and whether as off-CPU time. */
static bool wanted_event(const struct sp_fold *f, uint64_t ev, bool *off)
{
	*off = false;
	if (f->o.off_cpu || f->o.wall) {
		*off = f->ev_off_cpu >= 0 && ev < f->nevnames &&
		       strcmp(f->evnames[ev], "off-cpu") == 0;
		if (*off || f->o.off_cpu)
			return *off;
	}
	return ev == (uint64_t)f->ev_picked || same_event(f, ev);
}

static int take_sample(struct sp_fold *f, const struct sp_record *rec)
{
	struct sp_sample_head h;
	sp_sample_head_of(rec, &h);
	uint64_t pid = h.pid, tid = h.tid, time = h.time, period = h.period, stack = h.stack;
	if (!f->have_start) {
		f->seg_start = time;
		f->have_start = true;
	}
	f->prev_time = time;
	f->have_prev = true;
	if (f->windowed && !fold_in_range(f, time))
		return 0;
	bool off;
	if (!wanted_event(f, h.event, &off))
		return 0;
	uint32_t t, k;
	bool known = fold_thread_cached(f, (uint32_t)pid, (uint32_t)tid, &t);
	const char *comm = NULL;
	char fallback[32];
	if (!known) {
		comm = sp_u64map_get(&f->procs, pid);
		if (!comm && pid == 0)
			comm = "swapper";	/* the idle task has no /proc entry to name it */
		if (!comm) {
			snprintf(fallback, sizeof(fallback), "pid-%llu", (unsigned long long)pid);
			comm = fallback;
		}
		if (f->filtered && !fold_wanted(f, pid, tid, comm))
			return 0;
	}
	if (stack == UINT64_MAX) {
		/*
		 * No frame: the idle task's samples are [idle], a kernel
		 * thread's (kernel frames not recorded) [kernel].
		 */
		uint32_t d;
		const char *what = pid == 0 ? "[idle]" :
				   sp_u64map_get(&f->kthreads, pid) ? "[kernel]" : "[no frames]";
		struct sp_fold_frame proto = { .name = what, .address_only = true };
		if (fold_frame(f, &proto, &d) < 0 || fold_stack(f, &d, 1, &k) < 0)
			return -1;
	} else if (stack < f->nsymstacks && f->symstacks[stack]) {
		k = f->symstacks[stack] - 1;
	} else {
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "sample refers to undefined stack %llu",
				    (unsigned long long)stack);
	}
	if (off) {
		if (off_cpu_stack(f, &k, h.preempted) < 0)
			return -1;
	}
	if (!known) {
		const char *tcomm = sp_u64map_get(&f->tcomms, tid);
		if (fold_thread(f, (uint32_t)pid, (uint32_t)tid, comm, tcomm ? tcomm : comm, &t) < 0)
			return -1;
	}
	if (fold_count(f, t, k, period, time) < 0)
		return -1;
	if (!f->any_sample || time < f->first_ns)
		f->first_ns = time;
	if (!f->any_sample || time > f->last_ns)
		f->last_ns = time;
	if (!f->any_sample && f->anchor_clock)
		f->wall_start = f->anchor_real + (time - f->anchor_clock);
	f->any_sample = true;
	if (!off) {
		f->period_sum += period;
		f->period_n++;
	}
	return 0;
}

/* Adds an event's name; false when memory runs out. */
static bool event_add(struct sp_fold *f, const char *s, size_t n)
{
	char **v = realloc(f->evnames, (f->nevnames + 1) * sizeof(*v));
	if (!v)
		return false;
	f->evnames = v;
	if (!(v[f->nevnames] = strndup(s, n)))
		return false;
	f->nevnames++;
	return true;
}

/*
 * The header's events (format 1.3), or the one a 1.2 header's options
 * name, and the one to fold: o.event, or the first.
 */
static void take_events(struct sp_fold *f, const msgpack_object *m)
{
	events_release(f);
	const msgpack_object_array *a = sp_map_array(m, "events");
	const msgpack_object *opts = sp_map_get(m, "options");
	const char *s = "cpu-clock";
	size_t n = 9;
	for (uint32_t i = 0; a && i < a->size; i++) {
		const msgpack_object *e = &a->ptr[i];
		if (e->type == MSGPACK_OBJECT_STR)
			event_add(f, e->via.str.ptr, e->via.str.size);
		else
			event_add(f, "?", 1);
	}
	if (f->nevnames == 0) {
		if (opts && opts->type == MSGPACK_OBJECT_MAP)
			sp_map_str(opts, "event", &s, &n);
		event_add(f, s, n);
	}
	f->ev_off_cpu = -1;
	for (size_t i = 0; i < f->nevnames && f->ev_off_cpu < 0; i++)
		if (strcmp(f->evnames[i], "off-cpu") == 0)
			f->ev_off_cpu = (long)i;
	f->ev_picked = f->o.event ? -1 : 0;
	for (size_t i = 0; f->o.event && i < f->nevnames; i++)
		if (strcmp(f->evnames[i], f->o.event) == 0) {
			f->ev_picked = (long)i;
			break;
		}
}

long sp_fold_off_cpu_event(const struct sp_fold *f)
{
	return f->ev_off_cpu;
}

size_t sp_fold_events(const struct sp_fold *f, const char *const **names, long *picked)
{
	*names = (const char *const *)f->evnames;
	*picked = f->ev_picked;
	return f->nevnames;
}

static void take_header(struct sp_fold *f, const msgpack_object *m)
{
	const char *st = "";
	size_t n = 0;
	reset_segment(f);
	take_events(f, m);
	sp_map_str(m, "stage", &st, &n);
	f->stage = n == 7 && memcmp(st, "unwound", 7) == 0 ? SP_STAGE_UNWOUND : SP_STAGE_SYMBOLIZED;
	const msgpack_object *host = sp_map_get(m, "host");
	if (host && sp_map_u64(host, "anchor_clock_ns", &f->anchor_clock) &&
	    sp_map_u64(host, "anchor_realtime_ns", &f->anchor_real)) {
		/* The recording starts when the header was written. */
		f->seg_start = f->anchor_clock;
		f->have_start = true;
	}
}

/* Notes that pid is a kernel thread (its process record says so). */
static void note_kthread(struct sp_fold *f, uint64_t pid)
{
	static char mark;	/* the value of every entry: the map needs one */
	sp_u64map_put(&f->kthreads, pid, &mark);
}

/* Process, exec, comm, thread and fork records: who is called what. */
static void take_names(struct sp_fold *f, const struct sp_record *rec)
{
	const msgpack_object *m = rec->map;
	uint64_t pid = 0, tid = 0, t;
	const char *s;
	size_t n;
	sp_map_u64(m, "pid", &pid);
	switch (rec->type) {
	case SP_R_PROCESS:
	case SP_R_EXEC: {
		bool kthread = false;
		if (rec->type == SP_R_PROCESS && sp_map_bool(m, "kernel_thread", &kthread) && kthread)
			note_kthread(f, pid);
		if (sp_map_str(m, "comm", &s, &n)) {
			set_name(f, &f->procs, pid, s, n);
			/* The main thread takes the new program's name too. */
			set_name(f, &f->tcomms, pid, s, n);
		}
		if (!f->have_start && sp_map_u64(m, "time", &t)) {
			f->seg_start = t;
			f->have_start = true;
		}
		break;
	}
	case SP_R_COMM:
	case SP_R_THREAD:
		sp_map_u64(m, "tid", &tid);
		if (sp_map_str(m, "comm", &s, &n)) {
			set_name(f, &f->tcomms, tid, s, n);
			if (pid == tid && rec->type == SP_R_COMM)
				set_name(f, &f->procs, pid, s, n);
		}
		break;
	case SP_R_FORK:
		/* A child process starts with its parent's name. */
		if (sp_map_u64(m, "ppid", &t) && t != pid && (s = sp_u64map_get(&f->procs, t)))
			set_name(f, &f->procs, pid, s, strlen(s));
		/* kthreadd's children are kernel threads too. */
		if (sp_map_u64(m, "ppid", &t) && t != pid && sp_u64map_get(&f->kthreads, t))
			note_kthread(f, pid);
		break;
	default:
		break;
	}
}

/*
 * Lost, throttle, unthrottle, fork and exit records, kept for the
 * firefox exporter's markers when their time is in the window.  Records
 * without a time are left out: they cannot be placed.
 */
static int take_mark(struct sp_fold *f, const struct sp_record *rec)
{
	const msgpack_object *m = rec->map;
	struct sp_fold_mark k = { .cpu = UINT32_MAX };
	uint64_t pid = 0, tid = 0, cpu = UINT32_MAX;
	if (!sp_map_u64(m, "time", &k.time) || (f->windowed && !fold_in_range(f, k.time)))
		return 0;
	sp_map_u64(m, "pid", &pid);
	sp_map_u64(m, "tid", &tid);
	sp_map_u64(m, "cpu", &cpu);
	k.pid = (uint32_t)pid;
	k.tid = (uint32_t)tid;
	k.cpu = cpu < UINT32_MAX ? (uint32_t)cpu : UINT32_MAX;
	k.since = k.time;
	switch (rec->type) {
	case SP_R_LOST: {
		const char *s;
		size_t n;
		k.kind = SP_MARK_LOST;
		sp_map_u64(m, "lost", &k.count);
		k.samples = sp_map_str(m, "kind", &s, &n) && n == 7 && memcmp(s, "samples", 7) == 0;
		if (f->have_prev && f->prev_time < k.time)
			k.since = f->prev_time;
		break;
	}
	case SP_R_THROTTLE: k.kind = SP_MARK_THROTTLE; break;
	case SP_R_UNTHROTTLE: k.kind = SP_MARK_UNTHROTTLE; break;
	case SP_R_FORK: k.kind = SP_MARK_FORK; break;
	default: k.kind = SP_MARK_EXIT; break;
	}
	if (SP_ALLOC_GROW(f->marks, f->nmarks + 1, f->allocmarks) < 0)
		return fold_nomem(f);
	f->marks[f->nmarks++] = k;
	return 0;
}

int sp_fold_record(struct sp_fold *f, const struct sp_record *rec)
{
	if (f->o.format == SP_FOLD_FIREFOX &&
	    (rec->type == SP_R_LOST || rec->type == SP_R_THROTTLE || rec->type == SP_R_UNTHROTTLE ||
	     rec->type == SP_R_FORK || rec->type == SP_R_EXIT) &&
	    take_mark(f, rec) < 0)
		return -1;
	switch (rec->type) {
	case SP_R_HEADER:
		take_header(f, rec->map);
		return 0;
	case SP_R_PROCESS:
	case SP_R_EXEC:
	case SP_R_COMM:
	case SP_R_THREAD:
	case SP_R_FORK:
		take_names(f, rec);
		return 0;
	case SP_R_MODULE:
		return take_module(f, rec->map);
	case SP_R_MAP:
		return f->o.locations ? take_map(f, rec->map) : 0;
	case SP_R_FRAME:
		return take_frame(f, rec->map);
	case SP_R_SYMSTACK:
		return take_stack(f, rec->map, true);
	case SP_R_STACK:
		return f->stage == SP_STAGE_UNWOUND ? take_stack(f, rec->map, false) : 0;
	case SP_R_SAMPLE:
		return take_sample(f, rec);
	default:
		return 0;
	}
}
