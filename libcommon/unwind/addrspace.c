/* Process address spaces from stream records (see addrspace.h). */
#include <stdlib.h>
#include <string.h>

#include "unwind/addrspace.h"

struct proc {
	uint32_t pid;		/* 0: free slot */
	struct sp_mapping *maps;	/* sorted by start, not overlapping */
	size_t nmaps, capmaps;
	size_t last;		/* the mapping found last, tried first */
};

struct sp_addrspaces {
	struct proc *procs;	/* open addressing on pid */
	size_t cap, n;
	struct sp_object **objs;
	size_t nobjs, capobjs;
};

struct sp_addrspaces *sp_addrspaces_new(void)
{
	return calloc(1, sizeof(struct sp_addrspaces));
}

static void free_objects(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	for (size_t i = 0; i < a->nobjs; i++) {
		if (free_priv && a->objs[i]->priv)
			free_priv(a->objs[i]->priv);
		free(a->objs[i]->path);
		free(a->objs[i]);
	}
	a->nobjs = 0;
}

void sp_addrspaces_reset(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	for (size_t i = 0; i < a->cap; i++)
		free(a->procs[i].maps);
	free(a->procs);
	a->procs = NULL;
	a->cap = a->n = 0;
	free_objects(a, free_priv);
}

void sp_addrspaces_free(struct sp_addrspaces *a, void (*free_priv)(void *))
{
	if (!a)
		return;
	sp_addrspaces_reset(a, free_priv);
	free(a->objs);
	free(a);
}

static size_t slot(uint32_t pid, size_t cap)
{
	return (pid * 2654435761u) & (cap - 1);
}

static struct proc *proc_find(struct sp_addrspaces *a, uint32_t pid)
{
	if (!a->cap || !pid)
		return NULL;
	for (size_t h = slot(pid, a->cap);; h = (h + 1) & (a->cap - 1)) {
		if (a->procs[h].pid == pid)
			return &a->procs[h];
		if (!a->procs[h].pid)
			return NULL;
	}
}

/* Deleting from open addressing: re-insert the rest of the cluster. */
static void proc_remove(struct sp_addrspaces *a, struct proc *p)
{
	free(p->maps);
	size_t h = (size_t)(p - a->procs);
	memset(p, 0, sizeof(*p));
	a->n--;
	for (size_t j = (h + 1) & (a->cap - 1); a->procs[j].pid; j = (j + 1) & (a->cap - 1)) {
		struct proc moved = a->procs[j];
		memset(&a->procs[j], 0, sizeof(moved));
		size_t k = slot(moved.pid, a->cap);
		while (a->procs[k].pid)
			k = (k + 1) & (a->cap - 1);
		a->procs[k] = moved;
	}
}

static struct proc *proc_get(struct sp_addrspaces *a, uint32_t pid)
{
	struct proc *p = proc_find(a, pid);
	if (p)
		return p;
	if ((a->n + 1) * 2 > a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 64;
		struct proc *np = calloc(ncap, sizeof(*np));
		if (!np)
			return NULL;
		for (size_t i = 0; i < a->cap; i++) {
			if (!a->procs[i].pid)
				continue;
			size_t h = slot(a->procs[i].pid, ncap);
			while (np[h].pid)
				h = (h + 1) & (ncap - 1);
			np[h] = a->procs[i];
		}
		free(a->procs);
		a->procs = np;
		a->cap = ncap;
	}
	size_t h = slot(pid, a->cap);
	while (a->procs[h].pid)
		h = (h + 1) & (a->cap - 1);
	a->procs[h].pid = pid;
	a->n++;
	return &a->procs[h];
}

static void proc_clear(struct proc *p)
{
	p->nmaps = 0;
	p->last = 0;
}

static struct sp_object *object_get(struct sp_addrspaces *a, const char *path, size_t plen,
				    const void *bid, size_t bidlen, uint32_t anon_pid)
{
	if (bidlen > SP_BUILD_ID_MAX)
		bidlen = SP_BUILD_ID_MAX;
	for (size_t i = a->nobjs; i-- > 0;) {
		struct sp_object *o = a->objs[i];
		if (o->anon_pid == anon_pid && (size_t)o->build_id_len == bidlen &&
		    strlen(o->path) == plen && memcmp(o->path, path, plen) == 0 &&
		    (bidlen == 0 || memcmp(o->build_id, bid, bidlen) == 0))
			return o;
	}
	if (a->nobjs == a->capobjs) {
		size_t ncap = a->capobjs ? a->capobjs * 2 : 64;
		struct sp_object **no = realloc(a->objs, ncap * sizeof(*no));
		if (!no)
			return NULL;
		a->objs = no;
		a->capobjs = ncap;
	}
	struct sp_object *o = calloc(1, sizeof(*o));
	if (!o || !(o->path = malloc(plen + 1))) {
		free(o);
		return NULL;
	}
	memcpy(o->path, path, plen);
	o->path[plen] = '\0';
	if (bidlen)
		memcpy(o->build_id, bid, bidlen);
	o->build_id_len = (int)bidlen;
	o->anon_pid = anon_pid;
	o->vdso = strcmp(o->path, "[vdso]") == 0;
	o->anon = anon_pid != 0;
	o->out_id = UINT64_MAX;
	a->objs[a->nobjs++] = o;
	return o;
}

/* Whether a mapping's path names no file (anonymous or special memory). */
static bool path_is_anon(const char *p, size_t n)
{
	return n == 0 || p[0] != '/' || (n >= 6 && memcmp(p, "//anon", 6) == 0) ||
	       (n >= 7 && memcmp(p, "/memfd:", 7) == 0) ||
	       (n >= 9 && memcmp(p, "/dev/zero", 9) == 0);
}

static int maps_reserve(struct proc *p, size_t n)
{
	if (n <= p->capmaps)
		return 0;
	size_t ncap = p->capmaps ? p->capmaps * 2 : 16;
	while (ncap < n)
		ncap *= 2;
	struct sp_mapping *nm = realloc(p->maps, ncap * sizeof(*nm));
	if (!nm)
		return -1;
	p->maps = nm;
	p->capmaps = ncap;
	return 0;
}

/* Inserts m, cutting away what it overlaps of older mappings. */
static int map_insert(struct proc *p, struct sp_mapping m)
{
	if (maps_reserve(p, p->nmaps + 2) < 0)
		return -1;
	size_t out = 0;
	struct sp_mapping right = { 0 };
	bool have_right = false;
	for (size_t i = 0; i < p->nmaps; i++) {
		struct sp_mapping o = p->maps[i];
		if (o.end <= m.start || o.start >= m.end) {
			p->maps[out++] = o;
			continue;
		}
		if (o.start < m.start) {
			struct sp_mapping left = o;
			left.end = m.start;
			p->maps[out++] = left;
		}
		if (o.end > m.end) {
			right = o;
			right.pgoff += m.end - o.start;
			right.start = m.end;
			have_right = true;
		}
	}
	p->nmaps = out;
	/* Keep the array sorted: insert m (and a right remainder) in place. */
	struct sp_mapping add[2] = { m, right };
	for (int k = 0; k < 1 + have_right; k++) {
		size_t pos = p->nmaps;
		while (pos > 0 && p->maps[pos - 1].start > add[k].start)
			pos--;
		memmove(p->maps + pos + 1, p->maps + pos, (p->nmaps - pos) * sizeof(*p->maps));
		p->maps[pos] = add[k];
		p->nmaps++;
	}
	p->last = 0;
	return 0;
}

int sp_addrspaces_apply(struct sp_addrspaces *a, enum sp_rtype type,
			const msgpack_object *rec)
{
	uint64_t pid = 0, ppid = 0, tid = 0;
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
		parent = proc_find(a, (uint32_t)ppid);	/* the table may have grown */
		proc_clear(child);
		if (parent && parent->nmaps) {
			if (maps_reserve(child, parent->nmaps) < 0)
				return -1;
			memcpy(child->maps, parent->maps, parent->nmaps * sizeof(*child->maps));
			child->nmaps = parent->nmaps;
		}
		return 0;
	}
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
	if (p->last < p->nmaps && addr >= p->maps[p->last].start && addr < p->maps[p->last].end)
		return &p->maps[p->last];
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nmaps && addr >= p->maps[lo].start) {
		p->last = lo;
		return &p->maps[lo];
	}
	return NULL;
}

void sp_addrspaces_each_object(struct sp_addrspaces *a,
			       void (*fn)(struct sp_object *o, void *arg), void *arg)
{
	for (size_t i = 0; i < a->nobjs; i++)
		fn(a->objs[i], arg);
}
