/* Folding samples into stacks (see fold.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fold/fold.h"
#include "stream/vocab.h"

/* A growable array of uint32. */
struct u32v {
	uint32_t *v;
	size_t n, cap;
};

static int u32v_push(struct u32v *a, uint32_t x)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 64;
		uint32_t *nv = realloc(a->v, ncap * sizeof(*nv));
		if (!nv)
			return -1;
		a->v = nv;
		a->cap = ncap;
	}
	a->v[a->n++] = x;
	return 0;
}

/* An open-addressing hash from a 64-bit hash to an index, keys compared by callback. */
struct index {
	uint64_t *h;
	uint32_t *idx;	/* index + 1; 0: empty */
	size_t cap, n;
};

static int index_grow(struct index *x)
{
	if ((x->n + 1) * 2 <= x->cap)
		return 0;
	size_t ncap = x->cap ? x->cap * 2 : 1024;
	uint64_t *nh = calloc(ncap, sizeof(*nh));
	uint32_t *ni = calloc(ncap, sizeof(*ni));
	if (!nh || !ni) {
		free(nh);
		free(ni);
		return -1;
	}
	for (size_t i = 0; i < x->cap; i++) {
		if (!x->idx[i])
			continue;
		size_t j = x->h[i] & (ncap - 1);
		while (ni[j])
			j = (j + 1) & (ncap - 1);
		nh[j] = x->h[i];
		ni[j] = x->idx[i];
	}
	free(x->h);
	free(x->idx);
	x->h = nh;
	x->idx = ni;
	x->cap = ncap;
	return 0;
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

struct segframe {		/* a frame record of the current segment */
	uint32_t off, n;	/* display frames in seg_disp, root first */
	bool defined;
};

struct segmod {
	char *path;
	unsigned char bid[64];
	int bidlen;
	bool defined;
};

struct proc {
	uint32_t pid;
	char *comm;
};

struct thread {
	uint32_t pid, tid;
	char *comm, *thread_comm;
	struct sp_fold_sample *seq;
	size_t nseq, capseq;
};

struct sp_fold {
	struct sp_fold_options o;
	char err[512];

	/* Global: display frames, stacks, threads, counts. */
	struct sp_fold_frame *frames;
	size_t nframes, capframes;
	struct index fidx;
	struct sp_fold_stack *stacks;
	size_t nstacks, capstacks;
	struct u32v stack_arena;	/* offsets stored in stacks[].frames after finish */
	size_t *stack_off;
	struct index sidx;
	struct thread *threads;
	size_t nthreads, capthreads;
	struct sp_fold_count *counts;
	size_t ncounts, capcounts;
	struct index cidx;
	char **strings;
	size_t nstrings, capstrings;

	/* The current segment. */
	enum sp_stage stage;
	struct segframe *segframes;
	size_t nsegframes;
	struct u32v seg_disp;
	uint32_t *symstacks;	/* symstack/stack id -> global stack + 1 */
	size_t nsymstacks;
	struct segmod *mods;
	size_t nmods;
	struct proc *procs;
	size_t nprocs;
	struct proc *tcomms;	/* thread names by tid */
	size_t ntcomms;
	uint64_t seg_start;	/* stream clock of the recording's start */
	bool have_start;
	uint64_t anchor_clock, anchor_real;

	uint64_t first_ns, last_ns, period_sum, period_n;
	bool any_sample;
	uint64_t wall_start;
};

static int fail(struct sp_fold *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct sp_fold *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return -1;
}

const char *sp_fold_error(const struct sp_fold *f)
{
	return f->err;
}

static char *keep(struct sp_fold *f, const char *s, size_t n)
{
	if (f->nstrings == f->capstrings) {
		size_t ncap = f->capstrings ? f->capstrings * 2 : 256;
		char **ns = realloc(f->strings, ncap * sizeof(*ns));
		if (!ns)
			return NULL;
		f->strings = ns;
		f->capstrings = ncap;
	}
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	f->strings[f->nstrings++] = d;
	return d;
}

struct sp_fold *sp_fold_new(const struct sp_fold_options *o)
{
	struct sp_fold *f = calloc(1, sizeof(*f));
	if (f)
		f->o = *o;
	return f;
}

static void reset_segment(struct sp_fold *f)
{
	f->nsegframes = 0;
	f->seg_disp.n = 0;
	for (size_t i = 0; i < f->nsymstacks; i++)
		f->symstacks[i] = 0;
	for (size_t i = 0; i < f->nmods; i++) {
		free(f->mods[i].path);
		f->mods[i].path = NULL;
		f->mods[i].defined = false;
	}
	for (size_t i = 0; i < f->nprocs; i++)
		free(f->procs[i].comm);
	f->nprocs = 0;
	for (size_t i = 0; i < f->ntcomms; i++)
		free(f->tcomms[i].comm);
	f->ntcomms = 0;
	f->have_start = false;
	f->anchor_clock = f->anchor_real = 0;
}

void sp_fold_free(struct sp_fold *f)
{
	if (!f)
		return;
	reset_segment(f);
	for (size_t i = 0; i < f->nstrings; i++)
		free(f->strings[i]);
	free(f->strings);
	free(f->frames);
	free(f->fidx.h);
	free(f->fidx.idx);
	free(f->stacks);
	free(f->stack_off);
	free(f->stack_arena.v);
	free(f->sidx.h);
	free(f->sidx.idx);
	for (size_t i = 0; i < f->nthreads; i++)
		free(f->threads[i].seq);
	free(f->threads);
	free(f->counts);
	free(f->cidx.h);
	free(f->cidx.idx);
	free(f->segframes);
	free(f->seg_disp.v);
	free(f->symstacks);
	free(f->mods);
	free(f->procs);
	free(f->tcomms);
	free(f);
}

/* The index of a display frame, added when new. */
static int display_frame(struct sp_fold *f, const struct sp_fold_frame *proto, uint32_t *out)
{
	uint64_t h = hash_bytes(proto->name, strlen(proto->name), 1469598103934665603ull);
	h = hash_bytes(&proto->kind, sizeof(proto->kind), h) ^ proto->inlined;
	if (f->fidx.cap)
		for (size_t i = h & (f->fidx.cap - 1); f->fidx.idx[i]; i = (i + 1) & (f->fidx.cap - 1)) {
			const struct sp_fold_frame *x = &f->frames[f->fidx.idx[i] - 1];
			if (f->fidx.h[i] == h && x->kind == proto->kind && x->inlined == proto->inlined &&
			    strcmp(x->name, proto->name) == 0) {
				*out = f->fidx.idx[i] - 1;
				return 0;
			}
		}
	if (index_grow(&f->fidx) < 0)
		return fail(f, "out of memory");
	if (f->nframes == f->capframes) {
		size_t ncap = f->capframes ? f->capframes * 2 : 256;
		struct sp_fold_frame *nf = realloc(f->frames, ncap * sizeof(*nf));
		if (!nf)
			return fail(f, "out of memory");
		f->frames = nf;
		f->capframes = ncap;
	}
	struct sp_fold_frame *x = &f->frames[f->nframes];
	*x = *proto;
	x->name = keep(f, proto->name, strlen(proto->name));
	x->function = proto->function ? keep(f, proto->function, strlen(proto->function)) : x->name;
	x->file = proto->file ? keep(f, proto->file, strlen(proto->file)) : NULL;
	x->module = proto->module ? keep(f, proto->module, strlen(proto->module)) : NULL;
	if (proto->build_id_len > 0) {
		x->build_id = (const unsigned char *)keep(f, (const char *)proto->build_id,
							  (size_t)proto->build_id_len);
	}
	if (!x->name || !x->function)
		return fail(f, "out of memory");
	size_t i = h & (f->fidx.cap - 1);
	while (f->fidx.idx[i])
		i = (i + 1) & (f->fidx.cap - 1);
	f->fidx.h[i] = h;
	f->fidx.idx[i] = (uint32_t)++f->nframes;
	f->fidx.n++;
	*out = (uint32_t)(f->nframes - 1);
	return 0;
}

/* Builds a shown name: ';' replaced, an annotation appended. */
static void shown_name(char *buf, size_t len, const char *name, size_t n, const char *suffix)
{
	if (n > len - 8)
		n = len - 8;
	for (size_t i = 0; i < n; i++)
		buf[i] = name[i] == ';' ? ':' : name[i];
	snprintf(buf + n, len - n, "%s", suffix);
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

static struct segframe *segframe_at(struct sp_fold *f, uint64_t id)
{
	if (id >= 10000000)
		return NULL;
	if (id >= f->nsegframes) {
		struct segframe *n = realloc(f->segframes, (id + 1) * sizeof(*n));
		if (!n)
			return NULL;
		memset(n + f->nsegframes, 0, (id + 1 - f->nsegframes) * sizeof(*n));
		f->segframes = n;
		f->nsegframes = id + 1;
	}
	return &f->segframes[id];
}

static struct segmod *segmod_get(struct sp_fold *f, uint64_t id)
{
	if (id >= f->nmods || !f->mods[id].defined)
		return NULL;
	return &f->mods[id];
}

/* A symbolized frame record: its display frames, root first. */
static int take_frame(struct sp_fold *f, const msgpack_object *m)
{
	uint64_t id = 0, flags = 0, line = 0, addr = 0, mid = UINT64_MAX;
	const char *name = "??", *origin = "", *file = NULL;
	size_t nl = 2, ol = 0, fl = 0;
	sp_map_u64(m, "id", &id);
	sp_map_u64(m, "flags", &flags);
	sp_map_u64(m, "line", &line);
	sp_map_u64(m, "addr", &addr);
	sp_map_u64(m, "module", &mid);
	sp_map_str(m, "name", &name, &nl);
	sp_map_str(m, "origin", &origin, &ol);
	sp_map_str(m, "file", &file, &fl);
	struct segframe *sf = segframe_at(f, id);
	if (!sf)
		return fail(f, "frame id %llu out of range", (unsigned long long)id);
	sf->off = (uint32_t)f->seg_disp.n;
	sf->n = 0;
	sf->defined = true;
	if ((flags & SP_SYM_HIDDEN) && !f->o.show_hidden)
		return 0;

	unsigned kind = flags & SP_SYM_KERNEL ? SP_FOLD_KERNEL : flags & SP_SYM_JIT ? SP_FOLD_JIT : SP_FOLD_USER;
	bool addr_only = ol == 12 && memcmp(origin, "address-only", 12) == 0 && !(flags & 0x8);
	struct segmod *mod = mid != UINT64_MAX ? segmod_get(f, mid) : NULL;
	char buf[4096], fn[4096], fbuf[4096];
	const char *suffix = kind == SP_FOLD_KERNEL && f->o.kernel ? "_[k]" :
			     kind == SP_FOLD_JIT && f->o.jit ? "_[j]" : "";
	if (addr_only && !f->o.addrs) {
		/* Address-only frames of one module fold together. */
		bracketed(fn, sizeof(fn), kind, mod ? mod->path : NULL);
		name = fn;
		nl = strlen(fn);
	}
	shown_name(buf, sizeof(buf), name, nl, suffix);
	snprintf(fn, sizeof(fn), "%.*s", (int)(nl < 4000 ? nl : 4000), name);
	snprintf(fbuf, sizeof(fbuf), "%.*s", (int)(fl < 4000 ? fl : 4000), file ? file : "");
	struct sp_fold_frame proto = {
		.name = buf, .function = fn, .file = file ? fbuf : NULL, .line = (unsigned)line,
		.module = mod ? mod->path : NULL, .build_id = mod ? mod->bid : NULL,
		.build_id_len = mod ? mod->bidlen : 0, .kind = kind, .address_only = addr_only,
		.addr = addr,
	};
	const msgpack_object_array *inl = f->o.inline_frames ? sp_map_array(m, "inline") : NULL;
	if (inl && inl->size > 0) {
		/* The physical function called at the outermost inline call's line. */
		uint32_t d;
		if (display_frame(f, &proto, &d) < 0 || u32v_push(&f->seg_disp, d) < 0)
			return -1;
		for (uint32_t i = inl->size; i-- > 0;) {
			const msgpack_object *e = &inl->ptr[i];
			const char *in = "??", *ifile = NULL;
			size_t inl_n = 2, ifl = 0;
			uint64_t il = 0;
			sp_map_str(e, "name", &in, &inl_n);
			sp_map_str(e, "file", &ifile, &ifl);
			sp_map_u64(e, "line", &il);
			char ib[4096], ifn[4096], iff[4096];
			shown_name(ib, sizeof(ib), in, inl_n, "_[i]");
			snprintf(ifn, sizeof(ifn), "%.*s", (int)(inl_n < 4000 ? inl_n : 4000), in);
			snprintf(iff, sizeof(iff), "%.*s", (int)(ifl < 4000 ? ifl : 4000), ifile ? ifile : "");
			struct sp_fold_frame ip = proto;
			ip.name = ib;
			ip.function = ifn;
			ip.file = ifile ? iff : NULL;
			ip.line = (unsigned)il;
			ip.inlined = true;
			if (display_frame(f, &ip, &d) < 0 || u32v_push(&f->seg_disp, d) < 0)
				return -1;
		}
		sf->n = inl->size + 1;
		return 0;
	}
	uint32_t d;
	if (display_frame(f, &proto, &d) < 0 || u32v_push(&f->seg_disp, d) < 0)
		return -1;
	sf->n = 1;
	return 0;
}

/* An unwound stack frame, named by module and address. */
static int unwound_frame(struct sp_fold *f, const msgpack_object *fr, uint32_t *out, bool *skip)
{
	const msgpack_object *e = fr->via.array.ptr;
	uint64_t addr = e[0].via.u64, rel = e[2].via.u64, flags = e[3].via.u64;
	struct segmod *mod = e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
			     segmod_get(f, e[1].via.u64) : NULL;
	unsigned kind = (flags & 3) == 1 ? SP_FOLD_KERNEL : (flags & 3) == 2 ? SP_FOLD_JIT : SP_FOLD_USER;
	const char *suffix = kind == SP_FOLD_KERNEL && f->o.kernel ? "_[k]" :
			     kind == SP_FOLD_JIT && f->o.jit ? "_[j]" : "";
	char name[4096], shown[4200];
	*skip = false;
	if (flags & 0x8)
		snprintf(name, sizeof(name), "[%s]", sp_unwind_end_name((enum sp_unwind_end)rel));
	else if (!f->o.addrs)
		bracketed(name, sizeof(name), kind, mod ? mod->path : NULL);
	else if (kind == SP_FOLD_KERNEL)
		snprintf(name, sizeof(name), "[kernel]+0x%llx", (unsigned long long)addr);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", mod ? basename_of(mod->path) : "",
			 (unsigned long long)rel);
	shown_name(shown, sizeof(shown), name, strlen(name), suffix);
	struct sp_fold_frame proto = {
		.name = shown, .function = name, .module = mod ? mod->path : NULL,
		.build_id = mod ? mod->bid : NULL, .build_id_len = mod ? mod->bidlen : 0,
		.kind = kind, .address_only = !(flags & 0x8), .addr = addr, .rel = rel,
	};
	return display_frame(f, &proto, out);
}

/* The global index of a stack given root first. */
static int intern_stack(struct sp_fold *f, const uint32_t *v, size_t n, uint32_t *out)
{
	uint64_t h = hash_bytes(v, n * sizeof(*v), 1469598103934665603ull);
	if (f->sidx.cap)
		for (size_t i = h & (f->sidx.cap - 1); f->sidx.idx[i]; i = (i + 1) & (f->sidx.cap - 1)) {
			size_t k = f->sidx.idx[i] - 1;
			if (f->sidx.h[i] == h && f->stacks[k].n == n &&
			    (n == 0 || memcmp(f->stack_arena.v + f->stack_off[k], v, n * sizeof(*v)) == 0)) {
				*out = (uint32_t)k;
				return 0;
			}
		}
	if (index_grow(&f->sidx) < 0)
		return fail(f, "out of memory");
	if (f->nstacks == f->capstacks) {
		size_t ncap = f->capstacks ? f->capstacks * 2 : 256;
		struct sp_fold_stack *ns = realloc(f->stacks, ncap * sizeof(*ns));
		size_t *no = realloc(f->stack_off, ncap * sizeof(*no));
		if (!ns || !no) {
			free(ns == f->stacks ? NULL : ns);
			return fail(f, "out of memory");
		}
		f->stacks = ns;
		f->stack_off = no;
		f->capstacks = ncap;
	}
	size_t k = f->nstacks++;
	f->stack_off[k] = f->stack_arena.n;
	f->stacks[k].n = n;
	for (size_t i = 0; i < n; i++)
		if (u32v_push(&f->stack_arena, v[i]) < 0)
			return fail(f, "out of memory");
	size_t i = h & (f->sidx.cap - 1);
	while (f->sidx.idx[i])
		i = (i + 1) & (f->sidx.cap - 1);
	f->sidx.h[i] = h;
	f->sidx.idx[i] = (uint32_t)(k + 1);
	f->sidx.n++;
	*out = (uint32_t)k;
	return 0;
}

/* A symstack (symbolized) or stack (unwound) record. */
static int take_stack(struct sp_fold *f, const msgpack_object *m, bool symbolized)
{
	uint64_t id = 0;
	sp_map_u64(m, "id", &id);
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	if (id >= 10000000)
		return fail(f, "stack id %llu out of range", (unsigned long long)id);
	struct u32v v = { 0 };
	/* Leaf first in the stream; root first here. */
	for (uint32_t i = fr->size; i-- > 0;) {
		const msgpack_object *e = &fr->ptr[i];
		if (symbolized) {
			if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER || e->via.u64 >= f->nsegframes ||
			    !f->segframes[e->via.u64].defined) {
				free(v.v);
				return fail(f, "symstack %llu refers to an undefined frame",
					    (unsigned long long)id);
			}
			const struct segframe *sf = &f->segframes[e->via.u64];
			for (uint32_t k = 0; k < sf->n; k++)
				if (u32v_push(&v, f->seg_disp.v[sf->off + k]) < 0)
					return fail(f, "out of memory");
		} else {
			if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size < 4) {
				free(v.v);
				return fail(f, "malformed frame in stack %llu", (unsigned long long)id);
			}
			uint32_t d;
			bool skip;
			if (unwound_frame(f, e, &d, &skip) < 0 || (!skip && u32v_push(&v, d) < 0)) {
				free(v.v);
				return -1;
			}
		}
	}
	uint32_t k;
	int rc = intern_stack(f, v.v, v.n, &k);
	free(v.v);
	if (rc < 0)
		return -1;
	if (id >= f->nsymstacks) {
		size_t ncap = (id + 1) * 2;
		uint32_t *ns = realloc(f->symstacks, ncap * sizeof(*ns));
		if (!ns)
			return fail(f, "out of memory");
		memset(ns + f->nsymstacks, 0, (ncap - f->nsymstacks) * sizeof(*ns));
		f->symstacks = ns;
		f->nsymstacks = ncap;
	}
	f->symstacks[id] = k + 1;
	return 0;
}

static void set_comm(struct proc **v, size_t *n, uint32_t id, const char *s, size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].pid == id) {
			free((*v)[i].comm);
			(*v)[i].comm = strndup(s, len);
			return;
		}
	struct proc *nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return;
	*v = nv;
	nv[*n].pid = id;
	nv[*n].comm = strndup(s, len);
	(*n)++;
}

static const char *get_comm(struct proc *v, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == id)
			return v[i].comm;
	return NULL;
}

static bool wanted(const struct sp_fold *f, uint64_t pid, uint64_t tid, const char *comm)
{
	bool ok = !f->o.npids;
	for (size_t i = 0; i < f->o.npids && !ok; i++)
		ok = f->o.pids[i] == pid;
	if (!ok)
		return false;
	ok = !f->o.ntids;
	for (size_t i = 0; i < f->o.ntids && !ok; i++)
		ok = f->o.tids[i] == tid;
	if (!ok)
		return false;
	ok = !f->o.ncomms;
	for (size_t i = 0; i < f->o.ncomms && !ok; i++)
		ok = comm && strcmp(f->o.comms[i], comm) == 0;
	return ok;
}

static int thread_index(struct sp_fold *f, uint32_t pid, uint32_t tid, const char *comm,
			const char *tcomm, uint32_t *out)
{
	for (size_t i = f->nthreads; i-- > 0;)
		if (f->threads[i].pid == pid && f->threads[i].tid == tid &&
		    strcmp(f->threads[i].comm, comm) == 0) {
			*out = (uint32_t)i;
			return 0;
		}
	if (f->nthreads == f->capthreads) {
		size_t ncap = f->capthreads ? f->capthreads * 2 : 64;
		struct thread *nt = realloc(f->threads, ncap * sizeof(*nt));
		if (!nt)
			return fail(f, "out of memory");
		f->threads = nt;
		f->capthreads = ncap;
	}
	struct thread *t = &f->threads[f->nthreads];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->comm = keep(f, comm, strlen(comm));
	t->thread_comm = keep(f, tcomm, strlen(tcomm));
	*out = (uint32_t)f->nthreads++;
	return t->comm && t->thread_comm ? 0 : fail(f, "out of memory");
}

static int take_sample(struct sp_fold *f, const msgpack_object *m)
{
	uint64_t pid = 0, tid = 0, time = 0, period = 1, stack = UINT64_MAX;
	sp_map_u64(m, "pid", &pid);
	sp_map_u64(m, "tid", &tid);
	sp_map_u64(m, "time", &time);
	sp_map_u64(m, "period", &period);
	sp_map_u64(m, "stack", &stack);
	if (!f->have_start) {
		f->seg_start = time;
		f->have_start = true;
	}
	const char *comm = get_comm(f->procs, f->nprocs, (uint32_t)pid);
	char fallback[32];
	if (!comm) {
		snprintf(fallback, sizeof(fallback), "pid-%llu", (unsigned long long)pid);
		comm = fallback;
	}
	if (!wanted(f, pid, tid, comm))
		return 0;
	double rel = time >= f->seg_start ? (double)(time - f->seg_start) / 1e9 : 0;
	if (rel < f->o.from || rel >= f->o.to)
		return 0;
	uint32_t k;
	if (stack == UINT64_MAX) {
		uint32_t d;
		struct sp_fold_frame proto = { .name = "[no frames]", .address_only = true };
		if (display_frame(f, &proto, &d) < 0 || intern_stack(f, &d, 1, &k) < 0)
			return -1;
	} else if (stack < f->nsymstacks && f->symstacks[stack]) {
		k = f->symstacks[stack] - 1;
	} else {
		return fail(f, "sample refers to undefined stack %llu", (unsigned long long)stack);
	}
	const char *tcomm = get_comm(f->tcomms, f->ntcomms, (uint32_t)tid);
	uint32_t t = 0;
	if (thread_index(f, (uint32_t)pid, (uint32_t)tid, comm, tcomm ? tcomm : comm, &t) < 0)
		return -1;
	uint64_t key = (uint64_t)t << 32 | k, h = key * 0x9e3779b97f4a7c15ull;
	size_t ci = SIZE_MAX;
	if (f->cidx.cap)
		for (size_t i = h & (f->cidx.cap - 1); f->cidx.idx[i]; i = (i + 1) & (f->cidx.cap - 1))
			if (f->cidx.h[i] == key) {
				ci = f->cidx.idx[i] - 1;
				break;
			}
	if (ci == SIZE_MAX) {
		if (index_grow(&f->cidx) < 0)
			return fail(f, "out of memory");
		if (f->ncounts == f->capcounts) {
			size_t ncap = f->capcounts ? f->capcounts * 2 : 256;
			struct sp_fold_count *nc = realloc(f->counts, ncap * sizeof(*nc));
			if (!nc)
				return fail(f, "out of memory");
			f->counts = nc;
			f->capcounts = ncap;
		}
		ci = f->ncounts++;
		f->counts[ci] = (struct sp_fold_count){ t, k, 0, 0 };
		size_t i = h & (f->cidx.cap - 1);
		while (f->cidx.idx[i])
			i = (i + 1) & (f->cidx.cap - 1);
		f->cidx.h[i] = key;
		f->cidx.idx[i] = (uint32_t)(ci + 1);
		f->cidx.n++;
	}
	f->counts[ci].samples++;
	f->counts[ci].period += period;
	if (!f->any_sample || time < f->first_ns)
		f->first_ns = time;
	if (!f->any_sample || time > f->last_ns)
		f->last_ns = time;
	if (!f->any_sample && f->anchor_clock)
		f->wall_start = f->anchor_real + (time - f->anchor_clock);
	f->any_sample = true;
	f->period_sum += period;
	f->period_n++;
	if (f->o.format == SP_FOLD_SPEEDSCOPE) {
		struct thread *th = &f->threads[t];
		if (th->nseq == th->capseq) {
			size_t ncap = th->capseq ? th->capseq * 2 : 256;
			struct sp_fold_sample *ns = realloc(th->seq, ncap * sizeof(*ns));
			if (!ns)
				return fail(f, "out of memory");
			th->seq = ns;
			th->capseq = ncap;
		}
		th->seq[th->nseq++] = (struct sp_fold_sample){ k, f->o.period ? period : 1, time };
	}
	return 0;
}

int sp_fold_record(struct sp_fold *f, const struct sp_record *rec)
{
	const msgpack_object *m = rec->map;
	uint64_t pid = 0, tid = 0, t;
	const char *s;
	size_t n;
	switch (rec->type) {
	case SP_R_HEADER: {
		reset_segment(f);
		const char *st = "";
		sp_map_str(m, "stage", &st, &n);
		f->stage = n == 7 ? SP_STAGE_UNWOUND : SP_STAGE_SYMBOLIZED;
		const msgpack_object *host = sp_map_get(m, "host");
		if (host && sp_map_u64(host, "anchor_clock_ns", &f->anchor_clock) &&
		    sp_map_u64(host, "anchor_realtime_ns", &f->anchor_real)) {
			/* The recording starts when the header was written. */
			f->seg_start = f->anchor_clock;
			f->have_start = true;
		}
		return 0;
	}
	case SP_R_PROCESS:
	case SP_R_EXEC:
		sp_map_u64(m, "pid", &pid);
		if (sp_map_str(m, "comm", &s, &n)) {
			set_comm(&f->procs, &f->nprocs, (uint32_t)pid, s, n);
			/* The main thread takes the new program's name too. */
			set_comm(&f->tcomms, &f->ntcomms, (uint32_t)pid, s, n);
		}
		if (!f->have_start && sp_map_u64(m, "time", &t)) {
			f->seg_start = t;
			f->have_start = true;
		}
		return 0;
	case SP_R_COMM:
	case SP_R_THREAD:
		sp_map_u64(m, "pid", &pid);
		sp_map_u64(m, "tid", &tid);
		if (sp_map_str(m, "comm", &s, &n)) {
			set_comm(&f->tcomms, &f->ntcomms, (uint32_t)tid, s, n);
			if (pid == tid && rec->type == SP_R_COMM)
				set_comm(&f->procs, &f->nprocs, (uint32_t)pid, s, n);
		}
		return 0;
	case SP_R_FORK:
		/* A child process starts with its parent's name. */
		sp_map_u64(m, "pid", &pid);
		if (sp_map_u64(m, "ppid", &t) && t != pid &&
		    (s = get_comm(f->procs, f->nprocs, (uint32_t)t)))
			set_comm(&f->procs, &f->nprocs, (uint32_t)pid, s, strlen(s));
		return 0;
	case SP_R_MODULE: {
		uint64_t id = 0;
		const void *bid = NULL;
		size_t bl = 0;
		sp_map_u64(m, "id", &id);
		if (id >= 1000000)
			return fail(f, "module id %llu out of range", (unsigned long long)id);
		if (id >= f->nmods) {
			struct segmod *nm = realloc(f->mods, (id + 1) * sizeof(*nm));
			if (!nm)
				return fail(f, "out of memory");
			memset(nm + f->nmods, 0, (id + 1 - f->nmods) * sizeof(*nm));
			f->mods = nm;
			f->nmods = id + 1;
		}
		struct segmod *sm = &f->mods[id];
		sp_map_str(m, "path", &s, &n);
		free(sm->path);
		sm->path = strndup(s, n);
		sm->bidlen = 0;
		if (sp_map_bin(m, "build_id", &bid, &bl)) {
			sm->bidlen = (int)(bl > sizeof(sm->bid) ? sizeof(sm->bid) : bl);
			memcpy(sm->bid, bid, (size_t)sm->bidlen);
		}
		sm->defined = sm->path != NULL;
		return 0;
	}
	case SP_R_FRAME:
		return take_frame(f, m);
	case SP_R_SYMSTACK:
		return take_stack(f, m, true);
	case SP_R_STACK:
		return f->stage == SP_STAGE_UNWOUND ? take_stack(f, m, false) : 0;
	case SP_R_SAMPLE:
		return take_sample(f, m);
	default:
		return 0;
	}
}

/* The view the exporters read; stack frame pointers fixed up. */
static void make_view(struct sp_fold *f, struct sp_fold_view *v)
{
	for (size_t k = 0; k < f->nstacks; k++)
		f->stacks[k].frames = f->stack_arena.v + f->stack_off[k];
	struct sp_fold_thread *tv = calloc(f->nthreads ? f->nthreads : 1, sizeof(*tv));
	for (size_t i = 0; tv && i < f->nthreads; i++)
		tv[i] = (struct sp_fold_thread){ f->threads[i].pid, f->threads[i].tid,
						 f->threads[i].comm, f->threads[i].thread_comm,
						 f->threads[i].seq, f->threads[i].nseq };
	*v = (struct sp_fold_view){
		.frames = f->frames, .nframes = f->nframes,
		.stacks = f->stacks, .nstacks = f->nstacks,
		.threads = tv, .nthreads = tv ? f->nthreads : 0,
		.counts = f->counts, .ncounts = f->ncounts,
		.start_ns = f->first_ns, .end_ns = f->last_ns,
		.wall_start_ns = f->wall_start,
		.sample_period_ns = f->period_n ? f->period_sum / f->period_n : 0,
		.weight_period = f->o.period,
	};
}

/* One folded line: root;frames. */
static char *folded_line(struct sp_fold *f, const struct sp_fold_count *c, size_t *len)
{
	const struct thread *t = &f->threads[c->thread];
	struct sp_fold_stack st = { f->stack_arena.v + f->stack_off[c->stack], f->stacks[c->stack].n };
	const struct sp_fold_stack *s = &st;
	char root[512];
	char comm[256];
	shown_name(comm, sizeof(comm), t->comm, strlen(t->comm), "");
	if (f->o.root == SP_ROOT_PID)
		snprintf(root, sizeof(root), "%s-%u", comm, t->pid);
	else if (f->o.root == SP_ROOT_TID)
		snprintf(root, sizeof(root), "%s-%u/%u", comm, t->pid, t->tid);
	else
		snprintf(root, sizeof(root), "%s", comm);
	size_t total = strlen(root) + 1;
	for (size_t i = 0; i < s->n; i++)
		total += strlen(f->frames[s->frames[i]].name) + 1;
	char *line = malloc(total + 1);
	if (!line)
		return NULL;
	size_t p = strlen(root);
	memcpy(line, root, p);
	for (size_t i = 0; i < s->n; i++) {
		const char *nm = f->frames[s->frames[i]].name;
		size_t l = strlen(nm);
		line[p++] = ';';
		memcpy(line + p, nm, l);
		p += l;
	}
	line[p] = '\0';
	*len = p;
	return line;
}

struct fline {
	char *text;
	uint64_t count;
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

/* Folded lines of the counts accepted by keep(), merged and sorted. */
static int write_folded(struct sp_fold *f, FILE *out, bool (*keep_count)(const struct sp_fold_count *, const void *),
			const void *arg)
{
	struct fline *lines = NULL;
	size_t n = 0;
	struct index ix = { 0 };
	int rc = 0;
	for (size_t i = 0; i < f->ncounts && rc == 0; i++) {
		const struct sp_fold_count *c = &f->counts[i];
		if (keep_count && !keep_count(c, arg))
			continue;
		size_t len;
		char *text = folded_line(f, c, &len);
		if (!text || index_grow(&ix) < 0) {
			free(text);
			rc = fail(f, "out of memory");
			break;
		}
		uint64_t w = f->o.period ? c->period : c->samples;
		uint64_t h = hash_bytes(text, len, 1469598103934665603ull);
		size_t j = h & (ix.cap - 1);
		for (; ix.idx[j]; j = (j + 1) & (ix.cap - 1))
			if (ix.h[j] == h && strcmp(lines[ix.idx[j] - 1].text, text) == 0)
				break;
		if (ix.idx[j]) {
			lines[ix.idx[j] - 1].count += w;
			free(text);
			continue;
		}
		struct fline *nl = realloc(lines, (n + 1) * sizeof(*nl));
		if (!nl) {
			free(text);
			rc = fail(f, "out of memory");
			break;
		}
		lines = nl;
		lines[n] = (struct fline){ text, w };
		ix.h[j] = h;
		ix.idx[j] = (uint32_t)++n;
		ix.n++;
	}
	if (rc == 0 && n > 0) {
		qsort(lines, n, sizeof(*lines), cmp_fline);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)lines[i].count);
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	free(ix.h);
	free(ix.idx);
	return rc;
}

static bool count_of_thread(const struct sp_fold_count *c, const void *arg)
{
	return c->thread == *(const uint32_t *)arg;
}

int sp_fold_write(struct sp_fold *f, FILE *out)
{
	if (f->o.per_thread_dir) {
		for (uint32_t t = 0; t < f->nthreads; t++) {
			char path[4096], comm[256];
			shown_name(comm, sizeof(comm), f->threads[t].comm, strlen(f->threads[t].comm), "");
			for (char *p = comm; *p; p++)
				if (*p == '/')
					*p = '_';
			snprintf(path, sizeof(path), "%s/%s-%u-%u.folded", f->o.per_thread_dir, comm,
				 f->threads[t].pid, f->threads[t].tid);
			FILE *tf = fopen(path, "we");
			if (!tf)
				return fail(f, "cannot create '%s': %s", path, strerror(errno));
			int rc = write_folded(f, tf, count_of_thread, &t);
			if (fclose(tf) != 0 || rc < 0)
				return rc < 0 ? rc : fail(f, "cannot write '%s': %s", path, strerror(errno));
		}
	}
	if (f->o.format == SP_FOLD_FOLDED)
		return write_folded(f, out, NULL, NULL);
	struct sp_fold_view v;
	make_view(f, &v);
	int rc = f->o.format == SP_FOLD_PPROF ? sp_fold_write_pprof(&v, out, f->err, sizeof(f->err))
					      : sp_fold_write_speedscope(&v, out, f->err, sizeof(f->err));
	free((void *)v.threads);
	return rc;
}
