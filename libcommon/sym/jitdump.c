/* SPDX-License-Identifier: MIT */
/* JIT names from a stream's jitdump records (see jitdump.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/jitdump.h"
#include "sym/jitdump.h"
#include "sym/symtab.h"
#include "util/alloc.h"
#include "util/hashmap.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* One line-table entry; file is an offset into its table's names, or NONE. */
struct lent {
	uint64_t addr;
	uint32_t line;
	size_t file;
};
#define NONE SIZE_MAX

/* The line table of one piece of code, from a debug-info record. */
struct lines {
	uint64_t code_addr;
	struct lent *v;
	size_t n;
	struct sp_buf names;	/* NUL-separated file names */
};

struct jitproc {
	uint32_t pid;
	struct sp_jitdump_files files;	/* a gap or an error stops a file for good */
	struct sp_symtab code;	/* the loads and moves, a later one winning */
	bool dirty;		/* code has grown since it was sorted */
	struct sp_u64map lines;	/* code address -> struct lines */
	struct lines *pending;	/* a debug-info record waiting for its load */
	unsigned gen;
	struct sp_buf name;	/* scratch: a load's name made valid UTF-8 */
};

struct sp_jitdumps {
	sp_sym_warn_fn *warn;
	void *warn_arg;
	struct sp_u64map procs;	/* pid -> struct jitproc */
	bool ended;		/* the segment's cut files were told of */
};

static void warnf(struct sp_jitdumps *jd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warnf(struct sp_jitdumps *jd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!jd->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jd->warn(jd->warn_arg, msg);
}

static void lines_free(void *v)
{
	struct lines *l = v;
	if (!l)
		return;
	free(l->v);
	sp_buf_release(&l->names);
	free(l);
}

static void proc_free(void *v)
{
	struct jitproc *p = v;
	sp_jitdump_files_release(&p->files);
	sp_symtab_release(&p->code);
	sp_u64map_release(&p->lines, lines_free);
	lines_free(p->pending);
	sp_buf_release(&p->name);
	free(p);
}

struct sp_jitdumps *sp_jitdumps_new(sp_sym_warn_fn *warn, void *warn_arg)
{
	struct sp_jitdumps *jd = calloc(1, sizeof(*jd));
	if (!jd)
		return NULL;
	jd->warn = warn;
	jd->warn_arg = warn_arg;
	sp_u64map_init(&jd->procs);
	return jd;
}

void sp_jitdumps_end(struct sp_jitdumps *jd)
{
	if (jd->ended)
		return;
	size_t i = 0;
	uint64_t pid;
	void *v;
	while (sp_u64map_next(&jd->procs, &i, &pid, &v)) {
		struct jitproc *p = v;
		for (size_t k = 0; k < p->files.n; k++) {
			const struct sp_jitdump_file *f = &p->files.v[k];
			if (!sp_jitdump_failed(f->rd) && sp_jitdump_offset(f->rd) < sp_jitdump_fed(f->rd))
				warnf(jd, "jitdump '%s' of pid %" PRIu64 " ends inside a record at "
				      "offset %" PRIu64, f->path, pid, sp_jitdump_offset(f->rd));
		}
	}
	jd->ended = true;
}

void sp_jitdumps_reset(struct sp_jitdumps *jd)
{
	sp_jitdumps_end(jd);
	sp_u64map_release(&jd->procs, proc_free);
	sp_u64map_init(&jd->procs);
	jd->ended = false;
}

void sp_jitdumps_free(struct sp_jitdumps *jd)
{
	if (!jd)
		return;
	sp_jitdumps_reset(jd);
	sp_u64map_release(&jd->procs, proc_free);
	free(jd);
}

static struct jitproc *proc_get(struct sp_jitdumps *jd, uint32_t pid)
{
	struct jitproc *p = sp_u64map_get(&jd->procs, pid);
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	sp_symtab_init(&p->code);
	sp_u64map_init(&p->lines);
	if (sp_u64map_put(&jd->procs, pid, p) < 0) {
		proc_free(p);
		return NULL;
	}
	return p;
}

/* A file name worth showing: UTF-8 without control characters (V8 has written garbage). */
static bool good_file(const char *s, size_t n)
{
	if (!n || !sp_utf8_valid(s, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static int cmp_lent(const void *a, const void *b)
{
	const struct lent *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The line table of a debug-info record, or NULL when memory runs out. */
static struct lines *lines_new(const struct sp_jit_rec *r)
{
	struct lines *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->code_addr = r->u.debug.code_addr;
	l->v = calloc(r->u.debug.nlines ? r->u.debug.nlines : 1, sizeof(*l->v));
	if (!l->v) {
		free(l);
		return NULL;
	}
	const char *last = NULL;
	size_t lastlen = 0, lastoff = NONE;
	for (size_t i = 0; i < r->u.debug.nlines; i++) {
		const struct sp_jit_line *e = &r->u.debug.lines[i];
		size_t off = NONE;
		if (e->file == last && e->filelen == lastlen) {
			off = lastoff;
		} else if (good_file(e->file, e->filelen)) {
			off = l->names.len;
			sp_buf_add(&l->names, e->file, e->filelen);
			sp_buf_addc(&l->names, '\0');
		}
		last = e->file;
		lastlen = e->filelen;
		lastoff = off;
		l->v[l->n++] = (struct lent){ e->addr, e->line, off };
	}
	if (l->names.oom) {
		lines_free(l);
		return NULL;
	}
	qsort(l->v, l->n, sizeof(*l->v), cmp_lent);
	return l;
}

/* Sets the line table of the code at addr (NULL: none). */
static int lines_set(struct jitproc *p, uint64_t addr, struct lines *l)
{
	lines_free(sp_u64map_remove(&p->lines, addr));
	if (l && sp_u64map_put(&p->lines, addr, l) < 0) {
		lines_free(l);
		return -1;
	}
	return 0;
}

static int apply_load(struct jitproc *p, const struct sp_jit_rec *r)
{
	struct lines *l = NULL;
	if (p->pending && p->pending->code_addr == r->u.load.code_addr) {
		l = p->pending;
		p->pending = NULL;
	}
	if (!r->u.load.code_size) {
		lines_free(l);
		return 0;
	}
	sp_utf8_sanitize(&p->name, r->u.load.name, r->u.load.namelen);
	if (p->name.oom || sp_symtab_add(&p->code, r->u.load.code_addr, r->u.load.code_size,
					 p->name.len ? p->name.p : "?",
					 p->name.len ? p->name.len : 1) < 0) {
		lines_free(l);
		return -1;
	}
	p->dirty = true;
	return lines_set(p, r->u.load.code_addr, l);
}

static const struct sp_sym *code_find(struct jitproc *p, uint64_t addr)
{
	if (p->dirty) {
		sp_symtab_finish(&p->code);
		p->dirty = false;
	}
	return sp_symtab_find(&p->code, addr);
}

static int apply_move(struct jitproc *p, const struct sp_jit_rec *r)
{
	uint64_t from = r->u.move.old_code_addr, to = r->u.move.new_code_addr;
	const struct sp_sym *s = code_find(p, from);
	if (!s || !r->u.move.code_size)
		return 0;
	char *name = strdup(s->name);
	if (!name || sp_symtab_add(&p->code, to, r->u.move.code_size, name, strlen(name)) < 0) {
		free(name);
		return -1;
	}
	free(name);
	p->dirty = true;
	/* Its lines move with it. */
	const struct lines *old = sp_u64map_get(&p->lines, from);
	struct lines *l = NULL;
	if (old) {
		l = calloc(1, sizeof(*l));
		if (!l || !(l->v = calloc(old->n ? old->n : 1, sizeof(*l->v)))) {
			free(l);
			return -1;
		}
		l->code_addr = to;
		l->n = old->n;
		for (size_t i = 0; i < old->n; i++)
			l->v[i] = (struct lent){ old->v[i].addr - from + to, old->v[i].line,
						 old->v[i].file };
		sp_buf_add(&l->names, old->names.p, old->names.len);
		if (l->names.oom) {
			lines_free(l);
			return -1;
		}
	}
	return lines_set(p, to, l);
}

/* Applies the records the bytes fed to f complete; -1 only when memory runs out. */
static int apply(struct sp_jitdumps *jd, struct jitproc *p, struct sp_jitdump_file *f)
{
	struct sp_jit_rec r;
	int ret, changed = 0;
	while ((ret = sp_jitdump_next(f->rd, &r)) == 1) {
		int rc = 0;
		if (r.type == SP_JIT_CODE_LOAD) {
			rc = apply_load(p, &r);
			changed = 1;
		} else if (r.type == SP_JIT_CODE_MOVE) {
			rc = apply_move(p, &r);
			changed = 1;
		} else if (r.type == SP_JIT_CODE_DEBUG_INFO) {
			lines_free(p->pending);
			if (!(p->pending = lines_new(&r)))
				rc = -1;
		}
		if (rc < 0)
			return -1;
	}
	p->gen += changed;
	if (ret < 0)
		warnf(jd, "jitdump '%s' of pid %" PRIu32 ": %s; its later records are ignored",
		      f->path, p->pid, sp_jitdump_error(f->rd));
	return 0;
}

int sp_jitdumps_note(struct sp_jitdumps *jd, const struct sp_record *rec)
{
	struct sp_jitdump_piece pc;
	struct sp_jitdump_file *f;
	if (!sp_jitdump_piece_read(rec->map, &pc))
		return 0;
	struct jitproc *p = proc_get(jd, (uint32_t)pc.pid);
	if (!p)
		return -1;
	switch (sp_jitdump_files_feed(&p->files, &pc, &f)) {
	case 1:
		return apply(jd, p, f);
	case 2:
		warnf(jd, "jitdump '%s' of pid %" PRIu64 ": %s; its later records are ignored",
		      f->path, pc.pid, sp_jitdump_error(f->rd));
		return 0;
	case 0:
		return 0;
	default:
		return -1;
	}
}

unsigned sp_jitdumps_generation(const struct sp_jitdumps *jd, uint32_t pid)
{
	const struct jitproc *p = sp_u64map_get(&jd->procs, pid);
	return p ? p->gen : 0;
}

bool sp_jitdumps_find(struct sp_jitdumps *jd, uint32_t pid, uint64_t addr,
		      struct sp_jitdump_sym *out)
{
	struct jitproc *p = sp_u64map_get(&jd->procs, pid);
	const struct sp_sym *s = p ? code_find(p, addr) : NULL;
	if (!s)
		return false;
	out->name = s->name;
	out->start = s->start;
	out->file = NULL;
	out->line = 0;
	const struct lines *l = sp_u64map_get(&p->lines, s->start);
	if (!l || !l->n || addr < l->v[0].addr)
		return true;
	size_t lo = 0, hi = l->n;	/* the last entry at or before addr */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (l->v[lo].file != NONE) {
		out->file = l->names.p + l->v[lo].file;
		out->line = l->v[lo].line;
	}
	return true;
}
