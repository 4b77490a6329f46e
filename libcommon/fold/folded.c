/* SPDX-License-Identifier: MIT
 * The outputs of a folding handle: the folded text ("root;frame;...;leaf
 * COUNT" a line, sorted, equal lines merged), the per-thread folded files,
 * and the view the pprof and speedscope exporters read.
 */
#include <stdlib.h>
#include <string.h>

#include "fold/internal.h"
#include "util/alloc.h"
#include "util/strbuf.h"

/* A distinct folded line. */
struct fline {
	struct sp_hashmap_entry e;
	char *text;
	uint64_t count;
};

static int fline_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	(void)keydata;
	return strcmp(sp_container_of(a, struct fline, e)->text,
		      sp_container_of(b, struct fline, e)->text);
}

static int fline_order(const void *a, const void *b)
{
	return strcmp((*(struct fline *const *)a)->text, (*(struct fline *const *)b)->text);
}

/* The root frame of a thread's lines, per the options. */
static void root_name(const struct sp_fold *f, const struct fold_thread *t, char *root, size_t len)
{
	char comm[256];
	fold_shown_name(comm, sizeof(comm), t->comm, strlen(t->comm), "");
	if (f->o.root == SP_ROOT_PID)
		snprintf(root, len, "%s-%u", comm, t->pid);
	else if (f->o.root == SP_ROOT_TID)
		snprintf(root, len, "%s-%u/%u", comm, t->pid, t->tid);
	else if (f->o.root == SP_ROOT_THREAD) {
		char tcomm[256];
		fold_shown_name(tcomm, sizeof(tcomm), t->thread_comm, strlen(t->thread_comm), "");
		snprintf(root, len, "%s;%s", comm, tcomm);
	}
	else
		snprintf(root, len, "%s", comm);
}

/* One folded line, root;frames, into line (emptied first). */
static void folded_line(const struct sp_fold *f, const struct sp_fold_count *c, struct sp_buf *line)
{
	char root[512];
	root_name(f, &f->threads[c->thread], root, sizeof(root));
	sp_buf_reset(line);
	sp_buf_adds(line, root);
	const uint32_t *v = f->arena + f->stack_off[c->stack];
	for (size_t i = 0; i < f->stacks[c->stack].n; i++) {
		sp_buf_addc(line, ';');
		sp_buf_adds(line, f->frames[v[i]].name);
	}
}

static void free_fline(struct sp_hashmap_entry *e)
{
	struct fline *l = sp_container_of(e, struct fline, e);
	free(l->text);
	free(l);
}

/* Adds a line's weight to its entry, made when new; -1 when memory ran out. */
static int add_line(struct sp_hashmap *lines, struct sp_buf *line, uint64_t w)
{
	struct fline key = { .text = line->p ? line->p : "" };
	key.e.hash = sp_hash_bytes(line->p, line->len);
	struct sp_hashmap_entry *hit = sp_hashmap_get(lines, &key.e, NULL);
	if (hit) {
		sp_container_of(hit, struct fline, e)->count += w;
		return 0;
	}
	struct fline *l = malloc(sizeof(*l));
	if (!l)
		return -1;
	*l = key;
	l->count = w;
	l->text = sp_buf_detach(line, NULL);
	if (!l->text || sp_hashmap_add(lines, &l->e) < 0) {
		free(l->text);
		free(l);
		return -1;
	}
	return 0;
}

/* Writes the entries of lines sorted; -1 when memory ran out. */
static int write_sorted(struct sp_hashmap *lines, FILE *out)
{
	struct fline **v = NULL;
	size_t n = 0, alloc = 0;
	if (SP_ALLOC_GROW(v, lines->count, alloc) < 0)
		return -1;
	struct sp_hashmap_iter it;
	struct sp_hashmap_entry *e;
	sp_hashmap_iter_init(lines, &it);
	while ((e = sp_hashmap_iter_next(&it)))
		v[n++] = sp_container_of(e, struct fline, e);
	if (n)
		qsort(v, n, sizeof(*v), fline_order);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %llu\n", v[i]->text, (unsigned long long)v[i]->count);
	free(v);
	return 0;
}

/* The folded lines of the counts of thread *only (NULL: all), merged and sorted. */
static int write_folded(struct sp_fold *f, FILE *out, const uint32_t *only)
{
	struct sp_hashmap lines;
	struct sp_buf line = SP_BUF_INIT;
	int rc = 0;
	sp_hashmap_init(&lines, fline_cmp);
	for (size_t i = 0; i < f->ncounts && rc == 0; i++) {
		const struct sp_fold_count *c = &f->counts[i];
		if (only && c->thread != *only)
			continue;
		folded_line(f, c, &line);
		if (line.oom || add_line(&lines, &line, f->o.period ? c->period : c->samples) < 0)
			rc = -1;
	}
	if (rc == 0)
		rc = write_sorted(&lines, out);
	sp_hashmap_release(&lines, free_fline);
	sp_buf_release(&line);
	return rc < 0 ? fold_nomem(f) : 0;
}

int sp_fold_write_new(struct sp_fold *f, FILE *out)
{
	struct sp_hashmap lines;
	struct sp_buf line = SP_BUF_INIT;
	size_t had = f->allocshown;
	int rc = 0;
	if (SP_ALLOC_GROW(f->shown, f->ncounts, f->allocshown) < 0)
		return fold_nomem(f);
	if (f->allocshown > had)
		memset(f->shown + had, 0, (f->allocshown - had) * sizeof(*f->shown));
	sp_hashmap_init(&lines, fline_cmp);
	for (size_t i = 0; i < f->ncounts && rc == 0; i++) {
		const struct sp_fold_count *c = &f->counts[i];
		uint64_t w = f->o.period ? c->period : c->samples;
		if (w == f->shown[i])
			continue;
		folded_line(f, c, &line);
		if (line.oom || add_line(&lines, &line, w - f->shown[i]) < 0)
			rc = -1;
		f->shown[i] = w;
	}
	if (rc == 0)
		rc = write_sorted(&lines, out);
	sp_hashmap_release(&lines, free_fline);
	sp_buf_release(&line);
	return rc < 0 ? fold_nomem(f) : 0;
}

/* One folded file per thread in the --per-thread folder. */
static int write_per_thread(struct sp_fold *f)
{
	for (uint32_t t = 0; t < f->nthreads; t++) {
		char path[4096], comm[256];
		const struct fold_thread *th = &f->threads[t];
		fold_shown_name(comm, sizeof(comm), th->comm, strlen(th->comm), "");
		for (char *p = comm; *p; p++)
			if (*p == '/')
				*p = '_';
		snprintf(path, sizeof(path), "%s/%s-%u-%u.folded", f->o.per_thread_dir, comm,
			 th->pid, th->tid);
		FILE *tf = f->o.open_file ? f->o.open_file(path) : fopen(path, "we");
		if (!tf)
			return sp_error_errno(&f->err, "cannot create '%s'", path);
		int rc = write_folded(f, tf, &t);
		int closed = f->o.close_file ? f->o.close_file(tf, rc == 0) : fclose(tf);
		if (closed != 0 && rc == 0)
			return sp_error_errno(&f->err, "cannot write '%s'", path);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sp_fold_write(struct sp_fold *f, FILE *out)
{
	if (f->o.per_thread_dir && write_per_thread(f) < 0)
		return -1;
	if (f->o.format == SP_FOLD_FOLDED)
		return write_folded(f, out, NULL);
	struct sp_fold_view v;
	if (sp_fold_view_get(f, &v) < 0)
		return -1;
	int rc = f->o.format == SP_FOLD_PPROF ? sp_fold_write_pprof(&v, out, &f->err)
					      : sp_fold_write_speedscope(&v, out, &f->err);
	free((void *)v.threads);
	return rc;
}
