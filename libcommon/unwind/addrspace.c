/* SPDX-License-Identifier: MIT
 * Process address spaces from stream records (see addrspace.h).
 *
 * Processes are kept in a table keyed by pid, with the one found last
 * tried first, as a stack's frames all ask for one process; each holds
 * its mappings sorted by start, in chunks, with the one found last tried
 * first.
 * Objects are kept once per identity (path, build-id and, for anonymous
 * memory, pid) in a hash map, and in creation order in an array.
 * Images of objects that are no file (the vDSO) are kept by path and
 * build-id, and hung on the objects of that identity.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/hashmap.h"
#include "unwind/addrspace.h"
#include "unwind/internal.h"
#include "util/search.h"

/*
 * A process's mappings, sorted by start and disjoint, in chunks of at
 * most CHUNK: a mapping is inserted by moving at most a chunk's worth of
 * mappings, wherever it goes (a JIT's code pages come at falling
 * addresses, each below the others), and a chunk that fills is split.
 */
#define CHUNK 128

struct chunk {
	size_t n;		/* 1 to CHUNK */
	struct sp_mapping m[CHUNK];
};

struct proc {
	uint32_t pid;
	struct chunk **ch;	/* in address order, none empty */
	size_t nch, allocch;
	size_t nmaps;
	const struct sp_mapping *last;	/* the mapping found last, tried first; NULL */
};

/* An object with its entry in the identity map. */
struct objent {
	struct sp_hashmap_entry ent;
	struct sp_object obj;
};

/* An identity looked up in the map. */
struct objkey {
	const char *path;
	size_t plen;
	const void *bid;
	size_t bidlen;
	uint32_t anon_pid;
};

/* An image record's object: only its first record of an identity is kept. */
struct image {
	char *path;
	unsigned char build_id[SP_BUILD_ID_MAX];
	int build_id_len;
	void *data;
	size_t len;
};

struct sp_addrspaces {
	struct sp_u64map procs;	/* pid -> struct proc */
	struct proc *lastp;	/* the process found last, or NULL */
	struct sp_hashmap ids;	/* identity -> struct objent */
	struct sp_object **objs;	/* in creation order */
	size_t nobjs, allocobjs;
	struct image *images;
	size_t nimages, allocimages;
	struct sp_jitcfi *jit;	/* from jitdump records (jitcfi.c); NULL: none */
	uint64_t gen;		/* see sp_addrspaces_gen() */
};

/* Generations, unique among every address spaces of the process. */
static _Atomic uint64_t next_gen = 1;

static void new_gen(struct sp_addrspaces *a)
{
	a->gen = atomic_fetch_add(&next_gen, 1);
}

uint64_t sp_addrspaces_gen(const struct sp_addrspaces *a)
{
	return a->gen;
}

static int objent_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		      const void *keydata)
{
	const struct sp_object *o = &sp_container_of(a, const struct objent, ent)->obj;
	const struct objkey *k = keydata;
	(void)b;
	return !(o->anon_pid == k->anon_pid && (size_t)o->build_id_len == k->bidlen &&
		 strlen(o->path) == k->plen && memcmp(o->path, k->path, k->plen) == 0 &&
		 (k->bidlen == 0 || memcmp(o->build_id, k->bid, k->bidlen) == 0));
}

static uint32_t objkey_hash(const struct objkey *k)
{
	uint32_t h = sp_hash_bytes(k->path, k->plen) ^ sp_hash_bytes(k->bid, k->bidlen);
	return h ^ (uint32_t)sp_hash_u64(k->anon_pid);
}

struct sp_addrspaces *sp_addrspaces_new(void)
{
	struct sp_addrspaces *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	sp_u64map_init(&a->procs);
	sp_hashmap_init(&a->ids, objent_cmp);
	new_gen(a);
	return a;
}

static void free_objects(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	for (size_t i = 0; i < a->nobjs; i++) {
		struct sp_object *o = a->objs[i];
		if (free_priv && o->priv)
			free_priv(o->priv);
		free(o->path);
		free(sp_container_of(o, struct objent, obj));
	}
	a->nobjs = 0;
	sp_hashmap_release(&a->ids, NULL);
	sp_hashmap_init(&a->ids, objent_cmp);
}

static void free_images(struct sp_addrspaces *a)
{
	for (size_t i = 0; i < a->nimages; i++) {
		free(a->images[i].path);
		free(a->images[i].data);
	}
	a->nimages = 0;
}

static void proc_clear(struct proc *p)
{
	for (size_t c = 0; c < p->nch; c++)
		free(p->ch[c]);
	p->nch = 0;
	p->nmaps = 0;
	p->last = NULL;
}

static void proc_free(void *v)
{
	struct proc *p = v;
	proc_clear(p);
	free(p->ch);
	free(p);
}

void sp_addrspaces_reset(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	sp_u64map_release(&a->procs, proc_free);
	a->lastp = NULL;
	free_objects(a, free_priv);
	free_images(a);
	sp_jitcfi_free(a->jit);
	a->jit = NULL;
	new_gen(a);
}

struct sp_jitcfi *sp_addrspaces_jitcfi(struct sp_addrspaces *a)
{
	return a->jit;
}

void sp_addrspaces_free(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	if (!a)
		return;
	sp_addrspaces_reset(a, free_priv);
	sp_hashmap_release(&a->ids, NULL);
	free(a->objs);
	free(a->images);
	free(a);
}

static inline struct proc *proc_find(struct sp_addrspaces *a, uint32_t pid)
{
	if (a->lastp && a->lastp->pid == pid)
		return a->lastp;
	struct proc *p = sp_u64map_get(&a->procs, pid);
	if (p)
		a->lastp = p;
	return p;
}

static void proc_remove(struct sp_addrspaces *a, struct proc *p)
{
	sp_u64map_remove(&a->procs, p->pid);
	if (a->lastp == p)
		a->lastp = NULL;
	proc_free(p);
}

static struct proc *proc_get(struct sp_addrspaces *a, uint32_t pid)
{
	struct proc *p = proc_find(a, pid);
	if (p)
		return p;
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	if (sp_u64map_put(&a->procs, pid, p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* Whether an image is the one of an object of this identity. */
static bool image_is(const struct image *im, const struct sp_object *o)
{
	return o->vdso && !o->content_id && im->build_id_len == o->build_id_len &&
	       memcmp(im->build_id, o->build_id, (size_t)im->build_id_len) == 0 &&
	       strcmp(im->path, o->path) == 0;
}

static void image_attach(struct sp_object *o, const struct image *im)
{
	o->image = im->data;
	o->image_len = im->len;
}

static struct sp_object *object_get(struct sp_addrspaces *a, const char *path, size_t plen,
				    const void *bid, size_t bidlen, uint32_t anon_pid)
{
	if (bidlen > SP_BUILD_ID_MAX)
		bidlen = SP_BUILD_ID_MAX;
	struct objkey k = { path, plen, bid, bidlen, anon_pid };
	struct sp_hashmap_entry key = { NULL, objkey_hash(&k) };
	struct sp_hashmap_entry *found = sp_hashmap_get(&a->ids, &key, &k);
	if (found)
		return &sp_container_of(found, struct objent, ent)->obj;
	if (SP_ALLOC_GROW(a->objs, a->nobjs + 1, a->allocobjs) < 0)
		return NULL;
	struct objent *e = calloc(1, sizeof(*e));
	if (!e || !(e->obj.path = malloc(plen + 1))) {
		free(e);
		return NULL;
	}
	struct sp_object *o = &e->obj;
	memcpy(o->path, path, plen);
	o->path[plen] = '\0';
	if (bidlen)
		memcpy(o->build_id, bid, bidlen);
	o->build_id_len = (int)bidlen;
	o->anon_pid = anon_pid;
	o->vdso = strcmp(o->path, "[vdso]") == 0;
	o->anon = anon_pid != 0;
	o->out_id = UINT64_MAX;
	for (size_t i = 0; o->vdso && bidlen && i < a->nimages; i++)
		if (image_is(&a->images[i], o))
			image_attach(o, &a->images[i]);
	e->ent.hash = key.hash;
	if (sp_hashmap_add(&a->ids, &e->ent) < 0) {
		free(o->path);
		free(e);
		return NULL;
	}
	o->index = a->nobjs;
	a->objs[a->nobjs++] = o;
	return o;
}

struct sp_object *sp_addrspaces_object(struct sp_addrspaces *a, size_t index)
{
	return index < a->nobjs ? a->objs[index] : NULL;
}

/* Whether a mapping's path names no file (anonymous or special memory). */
static bool path_is_anon(const char *p, size_t n)
{
	return n == 0 || p[0] != '/' || (n >= 6 && memcmp(p, "//anon", 6) == 0) ||
	       (n >= 7 && memcmp(p, "/memfd:", 7) == 0) ||
	       (n >= 9 && memcmp(p, "/dev/zero", 9) == 0);
}

/* Where the first mapping ending above addr is: chunk *c, index *i (c == nch: none). */
static void locate(const struct proc *p, uint64_t addr, size_t *c, size_t *i)
{
	*c = SP_PARTITION_POINT(p->nch, k, p->ch[k]->m[p->ch[k]->n - 1].end <= addr);
	*i = *c < p->nch ? SP_PARTITION_POINT(p->ch[*c]->n, k, p->ch[*c]->m[k].end <= addr) : 0;
}

/* Removes the mapping at (c, i); (c, i) is then where the next one is. */
static void remove_at(struct proc *p, size_t *c, size_t *i)
{
	struct chunk *ch = p->ch[*c];
	memmove(ch->m + *i, ch->m + *i + 1, (ch->n - *i - 1) * sizeof(*ch->m));
	ch->n--;
	p->nmaps--;
	if (ch->n == 0) {
		free(ch);
		memmove(p->ch + *c, p->ch + *c + 1, (p->nch - *c - 1) * sizeof(*p->ch));
		p->nch--;
		*i = 0;
	} else if (*i == ch->n) {
		++*c;
		*i = 0;
	}
}

/*
 * Inserts x before what is at (c, i) (c == nch: after the last), splitting
 * a full chunk; (c, i) is then just after x.  -1 when memory runs out.
 */
static int insert_at(struct proc *p, size_t *c, size_t *i, struct sp_mapping x)
{
	if (*c == p->nch && p->nch > 0) {
		/* After the last: at the end of the last chunk. */
		--*c;
		*i = p->ch[*c]->n;
	}
	if (p->nch == 0 || p->ch[*c]->n == CHUNK) {
		if (SP_ALLOC_GROW(p->ch, p->nch + 1, p->allocch) < 0)
			return -1;
		struct chunk *nc = malloc(sizeof(*nc));
		if (!nc)
			return -1;
		nc->n = 0;
		if (p->nch == 0) {
			p->ch[p->nch++] = nc;
			*c = *i = 0;
		} else if (*i == CHUNK || *i == 0) {
			/*
			 * Above or below a full chunk (as /proc lists mappings, as
			 * a JIT maps its pages): a chunk of its own, so that
			 * chunks filled in order stay full.
			 */
			size_t at = *i ? *c + 1 : *c;
			memmove(p->ch + at + 1, p->ch + at, (p->nch - at) * sizeof(*p->ch));
			p->ch[at] = nc;
			p->nch++;
			*c = at;
			*i = 0;
		} else {
			/* Split: the upper half moves to a new chunk after this one. */
			struct chunk *old = p->ch[*c];
			nc->n = CHUNK / 2;
			memcpy(nc->m, old->m + CHUNK - CHUNK / 2, nc->n * sizeof(*nc->m));
			old->n = CHUNK - CHUNK / 2;
			memmove(p->ch + *c + 2, p->ch + *c + 1, (p->nch - *c - 1) * sizeof(*p->ch));
			p->ch[*c + 1] = nc;
			p->nch++;
			if (*i > old->n) {
				*i -= old->n;
				++*c;
			}
		}
	}
	struct chunk *ch = p->ch[*c];
	memmove(ch->m + *i + 1, ch->m + *i, (ch->n - *i) * sizeof(*ch->m));
	ch->m[*i] = x;
	ch->n++;
	p->nmaps++;
	++*i;
	return 0;
}

/*
 * Inserts m, cutting away what it overlaps of older mappings: those are
 * removed, and the parts of the first and last that stick out go back in
 * around m.  Each step moves at most a chunk of mappings, so n mappings
 * cost O(n log n) in whatever order they come.
 */
static int map_insert(struct proc *p, struct sp_mapping m)
{
	size_t c, i;
	struct sp_mapping put[3];
	size_t nput = 0;
	p->last = NULL;
	locate(p, m.start, &c, &i);
	struct sp_mapping left = { 0 }, right = { 0 };
	bool have_left = false, have_right = false;
	while (c < p->nch && p->ch[c]->m[i].start < m.end) {
		struct sp_mapping o = p->ch[c]->m[i];
		if (o.start < m.start) {
			left = o;
			left.end = m.start;
			have_left = true;
		}
		if (o.end > m.end) {
			right = o;
			right.pgoff += m.end - o.start;
			right.start = m.end;
			have_right = true;
		}
		remove_at(p, &c, &i);
	}
	if (have_left)
		put[nput++] = left;
	put[nput++] = m;
	if (have_right)
		put[nput++] = right;
	for (size_t k = 0; k < nput; k++)
		if (insert_at(p, &c, &i, put[k]) < 0)
			return -1;
	return 0;
}

/*
 * Keeps an image record's bytes, the first of each path and build-id,
 * and hangs them on the objects of that identity already made.
 */
static int image_add(struct sp_addrspaces *a, const msgpack_object *rec)
{
	const char *path;
	size_t plen, bidlen, len;
	const void *bid, *data;
	if (!sp_map_str(rec, "path", &path, &plen) || !sp_map_bin(rec, "build_id", &bid, &bidlen) ||
	    !sp_map_bin(rec, "data", &data, &len) || bidlen == 0 || bidlen > SP_BUILD_ID_MAX ||
	    len == 0 || memchr(path, '\0', plen))
		return 0;
	struct image im = { .build_id_len = (int)bidlen, .len = len };
	memcpy(im.build_id, bid, bidlen);
	if (!(im.path = strndup(path, plen)))
		return -1;
	for (size_t i = 0; i < a->nimages; i++)
		if (a->images[i].build_id_len == im.build_id_len &&
		    memcmp(a->images[i].build_id, bid, bidlen) == 0 &&
		    strcmp(a->images[i].path, im.path) == 0) {
			free(im.path);
			return 0;
		}
	if (SP_ALLOC_GROW(a->images, a->nimages + 1, a->allocimages) < 0 ||
	    !(im.data = malloc(len))) {
		free(im.path);
		return -1;
	}
	memcpy(im.data, data, len);
	a->images[a->nimages++] = im;
	for (size_t i = 0; i < a->nobjs; i++)
		if (!a->objs[i]->image && image_is(&im, a->objs[i]))
			image_attach(a->objs[i], &im);
	return 0;
}

int sp_addrspaces_apply(struct sp_addrspaces *a, enum sp_rtype type,
			const msgpack_object *rec)
{
	uint64_t pid = 0, ppid = 0, tid = 0;
	new_gen(a);
	sp_map_u64(rec, "pid", &pid);
	if (pid > UINT32_MAX)
		return 0;
	switch (type) {
	case SP_R_PROCESS: {
		/* A process described afresh: a reused pid starts empty. */
		struct proc *p = proc_get(a, (uint32_t)pid);
		if (!p)
			return -1;
		proc_clear(p);
		return 0;
	}
	case SP_R_EXEC: {
		struct proc *p = proc_get(a, (uint32_t)pid);
		if (!p)
			return -1;
		proc_clear(p);
		return 0;
	}
	case SP_R_MAP: {
		uint64_t start = 0, len = 0, pgoff = 0;
		const char *path = "";
		size_t plen = 0;
		const void *bid = NULL;
		size_t bidlen = 0;
		sp_map_u64(rec, "start", &start);
		sp_map_u64(rec, "len", &len);
		sp_map_u64(rec, "pgoff", &pgoff);
		sp_map_str(rec, "path", &path, &plen);
		bool content = false;
		if (!sp_map_bin(rec, "build_id", &bid, &bidlen)) {
			bidlen = 0;
			/* A file without a build-id may carry its content identity. */
			content = sp_map_bin(rec, "content_id", &bid, &bidlen);
		}
		if (len == 0 || start + len < start)
			return 0;
		bool anon = path_is_anon(path, plen) &&
			    !(plen == 6 && memcmp(path, "[vdso]", 6) == 0);
		struct proc *p = proc_get(a, (uint32_t)pid);
		struct sp_object *o = p ? object_get(a, path, plen, bid, bidlen,
						    anon ? (uint32_t)pid : 0) : NULL;
		if (!o)
			return -1;
		o->content_id = content;
		o->last_pid = (uint32_t)pid;
		o->last_start = start;
		o->last_end = start + len;
		struct sp_mapping m = { start, start + len, pgoff, o };
		return map_insert(p, m);
	}
	case SP_R_FORK: {
		sp_map_u64(rec, "ppid", &ppid);
		if (pid == ppid || ppid > UINT32_MAX)
			return 0;	/* a new thread shares the address space */
		struct proc *parent = proc_find(a, (uint32_t)ppid);
		struct proc *child = proc_get(a, (uint32_t)pid);
		if (!child)
			return -1;
		proc_clear(child);
		if (parent && parent->nch) {
			if (SP_ALLOC_GROW(child->ch, parent->nch, child->allocch) < 0)
				return -1;
			for (size_t c = 0; c < parent->nch; c++) {
				if (!(child->ch[c] = malloc(sizeof(*child->ch[c]))))
					return -1;
				memcpy(child->ch[c], parent->ch[c], sizeof(*child->ch[c]));
				child->nch = c + 1;
			}
			child->nmaps = parent->nmaps;
		}
		return 0;
	}
	case SP_R_IMAGE:
		return image_add(a, rec);
	case SP_R_JITDUMP:
		return sp_jitcfi_note(&a->jit, rec);
	case SP_R_EXIT: {
		sp_map_u64(rec, "tid", &tid);
		struct proc *p = proc_find(a, (uint32_t)pid);
		if (p && tid == pid)
			proc_remove(a, p);
		return 0;
	}
	default:
		return 0;
	}
}

const struct sp_mapping *sp_addrspaces_find(struct sp_addrspaces *a,
					    uint32_t pid, uint64_t addr)
{
	struct proc *p = proc_find(a, pid);
	if (!p || !p->nmaps)
		return NULL;
	if (p->last && addr >= p->last->start && addr < p->last->end)
		return p->last;
	size_t c, i;
	locate(p, addr, &c, &i);
	if (c < p->nch && addr >= p->ch[c]->m[i].start)
		return p->last = &p->ch[c]->m[i];
	return NULL;
}

void sp_addrspaces_each_object(struct sp_addrspaces *a,
			       void (*fn)(struct sp_object *o, void *arg), void *arg)
{
	for (size_t i = 0; i < a->nobjs; i++)
		fn(a->objs[i], arg);
}
