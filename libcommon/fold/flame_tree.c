/* SPDX-License-Identifier: MIT
 * The merged tree of a flame graph (flame.h): folded text read line by
 * line, each stack merged into a tree with a node for each distinct
 * prefix, each frame name stored once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fold/flame_internal.h"
#include "util/alloc.h"
#include "util/utf8.h"

/* A frame name, the entry of the names' map. */
struct flame_name {
	struct sp_hashmap_entry e;
	uint32_t id;
	size_t len;
	char s[];		/* NUL-terminated */
};

/* What a name is looked up by: bytes of the input, not NUL-terminated. */
struct name_key {
	const char *p;
	size_t len;
};

static int name_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		    const void *keydata)
{
	const struct flame_name *x = sp_container_of(a, struct flame_name, e);
	const struct name_key *k = keydata;
	struct name_key other;
	if (!k) {
		const struct flame_name *y = sp_container_of(b, struct flame_name, e);
		other = (struct name_key){ y->s, y->len };
		k = &other;
	}
	return x->len != k->len || memcmp(x->s, k->p, k->len) != 0;
}

static void name_free(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct flame_name, e));
}

/* Stores a name once.  Returns 0 with its number in *id, or -1 (ENOMEM). */
static int name_intern(struct flame_names *nm, const char *p, size_t len, uint32_t *id)
{
	struct name_key k = { p, len };
	struct sp_hashmap_entry key = { .hash = sp_hash_bytes(p, len) };
	struct sp_hashmap_entry *e = sp_hashmap_get(&nm->map, &key, &k);
	if (e) {
		*id = sp_container_of(e, struct flame_name, e)->id;
		return 0;
	}
	struct flame_name *n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return -1;
	n->e.hash = key.hash;
	n->id = nm->n;
	n->len = len;
	memcpy(n->s, p, len);
	n->s[len] = '\0';
	if (SP_ALLOC_GROW(nm->str, (size_t)nm->n + 1, nm->alloc) < 0 ||
	    sp_hashmap_add(&nm->map, &n->e) < 0) {
		free(n);
		errno = ENOMEM;
		return -1;
	}
	nm->str[nm->n] = n->s;
	*id = nm->n++;
	return 0;
}

/* Makes a node.  Returns 0 with its number in *id, or -1 (ENOMEM, EOVERFLOW). */
static int tree_new_node(struct flame_tree *t, uint32_t parent, uint32_t name, uint32_t *id)
{
	if (t->n == UINT32_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	if (SP_ALLOC_GROW(t->node, (size_t)t->n + 1, t->alloc) < 0)
		return -1;
	t->node[t->n] = (struct flame_node){ .parent = parent, .name = name,
					     .depth = t->n ? t->node[parent].depth + 1 : 0 };
	*id = t->n++;
	return 0;
}

int sp_flame_tree_init(struct flame_tree *t)
{
	uint32_t name, root;
	memset(t, 0, sizeof(*t));
	sp_hashmap_init(&t->names.map, name_cmp);
	sp_u64map_init(&t->children);
	sp_buf_init(&t->clean);
	return name_intern(&t->names, "all", 3, &name) < 0 ||
		tree_new_node(t, 0, name, &root) < 0 ? -1 : 0;
}

/*
 * The child of parent with this name, made when there is none.
 * Returns 0 with it in *id, or -1 (ENOMEM, EOVERFLOW).
 */
static int tree_child(struct flame_tree *t, uint32_t parent, uint32_t name, uint32_t *id)
{
	uint64_t k = (uint64_t)parent << 32 | name;
	uintptr_t v = (uintptr_t)sp_u64map_get(&t->children, k);
	if (v) {
		*id = (uint32_t)(v - 1);
		return 0;
	}
	if (tree_new_node(t, parent, name, id) < 0)
		return -1;
	if (sp_u64map_put(&t->children, k, (void *)((uintptr_t)*id + 1)) < 0) {
		t->n--;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/*
 * Makes a name fit for XML: control characters and bytes that are not
 * UTF-8 (or are U+FFFE or U+FFFF, which XML does not allow either)
 * become U+FFFD.  Returns p itself when it needs no change, else the
 * tree's clean buffer, or NULL (ENOMEM); *len is updated.
 */
static const char *clean_name(struct flame_tree *t, const char *p, size_t *len)
{
	size_t n = *len, i;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
			break;
	if (i == n)
		return p;
	sp_buf_reset(&t->clean);
	for (i = 0; i < n;) {
		const unsigned char *s = (const unsigned char *)p + i;
		size_t k = sp_utf8_len(s, n - i);
		if (k == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
			k = 0;
		if (k == 0 || s[0] < 0x20 || s[0] == 0x7f) {
			sp_buf_add(&t->clean, "\xef\xbf\xbd", 3);
			i++;
		} else {
			sp_buf_add(&t->clean, s, k);
			i += k;
		}
	}
	if (t->clean.oom) {
		errno = ENOMEM;
		return NULL;
	}
	*len = t->clean.len;
	return t->clean.p;
}

/*
 * Adds one stack (frames root first, ';' between them) with its counts.
 * Returns 0; 1 when the stack cannot be added, with the reason in *why;
 * -1 when memory or the tree ran out (ENOMEM, EOVERFLOW).
 */
static int tree_add(struct flame_tree *t, const char *s, size_t len, bool reverse,
		    const uint64_t count[2], const char **why)
{
	size_t n = 0;
	for (size_t i = 0, j; i < len; i = j + 1) {
		const char *semi = memchr(s + i, ';', len - i);
		j = semi ? (size_t)(semi - s) : len;
		if (j == i)
			continue;	/* an empty frame, as in "a;;b" */
		if (SP_ALLOC_GROW(t->frames, n + 1, t->alloc_frames) < 0)
			return -1;
		t->frames[n++] = (struct flame_frame){ s + i, j - i, 0 };
	}
	*why = NULL;
	if (n == 0)
		*why = "no frames before the count";
	for (int c = 0; c < 2 && !*why; c++)
		if (count[c] > SP_FLAME_MAX_COUNT - t->node[0].count[c])
			*why = "the counts add up to more than 2^53";
	if (*why)
		return 1;
	/* sp-fold --off-cpu and --wall end an off-CPU stack so: its time is drawn apart. */
	const struct flame_frame *leaf = &t->frames[n - 1];
	bool off = (leaf->len == strlen(SP_FOLD_OFF_CPU) &&
		    memcmp(leaf->p, SP_FOLD_OFF_CPU, leaf->len) == 0) ||
		   (leaf->len == strlen(SP_FOLD_PREEMPTED) &&
		    memcmp(leaf->p, SP_FOLD_PREEMPTED, leaf->len) == 0);
	if (reverse)
		for (size_t i = 0; i < n / 2; i++) {
			struct flame_frame f = t->frames[i];
			t->frames[i] = t->frames[n - 1 - i];
			t->frames[n - 1 - i] = f;
		}
	uint32_t at = 0;
	bool same = true;	/* the same path as the previous line so far */
	for (int c = 0; c < 2; c++)
		t->node[0].count[c] += count[c];
	if (off)
		t->node[0].off += count[1];
	for (size_t i = 0; i < n; i++) {
		struct flame_frame *f = &t->frames[i];
		same = same && i < t->nprev && f->len == t->prev[i].len &&
			memcmp(f->p, t->prev[i].p, f->len) == 0;
		if (same) {
			at = t->prev[i].node;
		} else {
			size_t flen = f->len;
			const char *p = clean_name(t, f->p, &flen);
			uint32_t name;
			if (!p || name_intern(&t->names, p, flen, &name) < 0 ||
			    tree_child(t, at, name, &at) < 0)
				return -1;
		}
		f->node = at;
		for (int c = 0; c < 2; c++)
			t->node[at].count[c] += count[c];
		if (off)
			t->node[at].off += count[1];
	}
	struct flame_frame *swap = t->prev;
	size_t swap_alloc = t->alloc_prev;
	t->prev = t->frames;
	t->alloc_prev = t->alloc_frames;
	t->frames = swap;
	t->alloc_frames = swap_alloc;
	t->nprev = n;
	return 0;
}

/* qsort_r() orders of names, and of nodes by their names' ranks. */
static int name_order(const void *a, const void *b, void *arg)
{
	const struct flame_tree *t = arg;
	return strcmp(t->names.str[*(const uint32_t *)a], t->names.str[*(const uint32_t *)b]);
}

static int node_order(const void *a, const void *b, void *arg)
{
	const struct flame_tree *t = arg;
	uint32_t x = t->names.rank[t->node[*(const uint32_t *)a].name];
	uint32_t y = t->names.rank[t->node[*(const uint32_t *)b].name];
	return (x > y) - (x < y);
}

int sp_flame_tree_finish(struct flame_tree *t)
{
	struct flame_names *nm = &t->names;
	uint32_t *order = malloc(nm->n * sizeof(*order));
	uint32_t *fill = malloc(t->n * sizeof(*fill));
	nm->rank = malloc(nm->n * sizeof(*nm->rank));
	t->start = calloc((size_t)t->n + 1, sizeof(*t->start));
	t->child = malloc(t->n * sizeof(*t->child));
	if (!order || !fill || !nm->rank || !t->start || !t->child) {
		free(order);
		free(fill);
		errno = ENOMEM;
		return -1;
	}
	for (uint32_t i = 0; i < nm->n; i++)
		order[i] = i;
	qsort_r(order, nm->n, sizeof(*order), name_order, t);
	for (uint32_t i = 0; i < nm->n; i++)
		nm->rank[order[i]] = i;
	free(order);

	for (uint32_t i = 1; i < t->n; i++)
		t->start[t->node[i].parent + 1]++;
	for (uint32_t i = 0; i < t->n; i++)
		t->start[i + 1] += t->start[i];
	memcpy(fill, t->start, t->n * sizeof(*fill));
	for (uint32_t i = 1; i < t->n; i++)
		t->child[fill[t->node[i].parent]++] = i;
	free(fill);
	for (uint32_t i = 0; i < t->n; i++)
		if (t->start[i + 1] - t->start[i] > 1)
			qsort_r(t->child + t->start[i], t->start[i + 1] - t->start[i],
				sizeof(*t->child), node_order, t);
	return 0;
}

void sp_flame_tree_release(struct flame_tree *t)
{
	sp_hashmap_release(&t->names.map, name_free);
	free(t->names.str);
	free(t->names.rank);
	free(t->node);
	sp_u64map_release(&t->children, NULL);
	free(t->start);
	free(t->child);
	free(t->frames);
	free(t->prev);
	sp_buf_release(&t->clean);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parses a count; returns NULL, or why it is not one. */
static const char *parse_count(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > SP_FLAME_MAX_COUNT)
			return "the count is more than 2^53";
	}
	if (i == n && n > 0) {
		*out = v;
		return NULL;
	}
	if (i > 0 && i + 1 < n && s[i] == '.') {
		size_t k = i + 1;
		while (k < n && s[k] >= '0' && s[k] <= '9')
			k++;
		if (k == n)
			return "the count is not a whole number";
	}
	return "no count at the end of the line";
}

/* One line of folded stacks, read both as one-count and as two-count line. */
struct line {
	size_t len1, len2;	/* the stack's length before one count, before two */
	uint64_t last, prev;	/* the last count, and the one before it */
	bool two;		/* it may be a line of two counts */
};

/* Returns 1 for a stack line, 0 for a blank one, -1 for a malformed one. */
static int parse_line(const char *p, size_t n, struct line *l, const char **why)
{
	while (n > 0 && (is_blank(p[n - 1]) || p[n - 1] == '\r'))
		n--;
	if (n == 0)
		return 0;
	size_t i = n;
	while (i > 0 && !is_blank(p[i - 1]))
		i--;
	if (i == 0) {
		*why = "no count at the end of the line";
		return -1;
	}
	if ((*why = parse_count(p + i, n - i, &l->last)) != NULL)
		return -1;
	size_t j = i;
	while (j > 0 && is_blank(p[j - 1]))
		j--;
	if (j == 0) {
		*why = "no frames before the count";
		return -1;
	}
	l->len1 = j;
	l->two = false;
	/*
	 * A count before it makes a line of two counts: the digits before
	 * the blanks, with a blank before them (not the stack's last frame,
	 * which is not scanned through).
	 */
	size_t k = j;
	while (k > 0 && p[k - 1] >= '0' && p[k - 1] <= '9')
		k--;
	if (k > 0 && k < j && is_blank(p[k - 1]) && parse_count(p + k, j - k, &l->prev) == NULL) {
		while (k > 0 && is_blank(p[k - 1]))
			k--;
		l->two = k > 0;
		l->len2 = k;
	}
	return 1;
}

/* The lines of a buffer, the last one with or without a newline. */
struct lines {
	const char *buf;
	size_t len, at;
	unsigned long lineno;	/* the number of the line last returned */
};

static bool next_line(struct lines *it, const char **p, size_t *n)
{
	if (it->at >= it->len)
		return false;
	const char *nl = memchr(it->buf + it->at, '\n', it->len - it->at);
	*p = it->buf + it->at;
	*n = nl ? (size_t)(nl - *p) : it->len - it->at;
	it->at += *n + 1;
	it->lineno++;
	return true;
}

/*
 * Merges the lines of one input.  A file is of two counts a line when
 * most of its lines end with two; its lines that do not are then
 * skipped.  Returns 0, or -1 with the error set.
 */
static int add_lines(struct sp_flame *f, const char *buf, size_t len, const char *name,
		     enum sp_flame_side side, struct sp_flame_input *in)
{
	struct lines it = { .buf = buf, .len = len };
	struct line l;
	const char *p, *why;
	size_t n;
	unsigned long one = 0, two = 0;

	while (next_line(&it, &p, &n))
		if (parse_line(p, n, &l, &why) > 0) {
			one++;
			two += l.two;
		}
	in->columns = one == 0 ? 0 : 2 * two > one ? 2 : 1;
	if (side != SP_FLAME_AS_IS && in->columns == 2)
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "'%s' has two counts a line: "
				    "--diff takes two files of one count a line", name);

	it = (struct lines){ .buf = buf, .len = len };
	f->t.nprev = 0;
	while (next_line(&it, &p, &n)) {
		int r = parse_line(p, n, &l, &why);
		if (r == 0)
			continue;
		if (r > 0 && in->columns == 2 && !l.two) {
			why = "one count in a file of two counts a line";
			r = -1;
		}
		if (r > 0) {
			uint64_t count[2] = { 0, 0 };
			if (in->columns == 2) {
				count[0] = l.prev;
				count[1] = l.last;
			} else {
				count[side == SP_FLAME_AS_IS ? SP_FLAME_AFTER : side] = l.last;
			}
			r = tree_add(&f->t, p, in->columns == 2 ? l.len2 : l.len1,
				     f->o.reverse, count, &why);
			if (r < 0 && errno == EOVERFLOW)
				return sp_error_set(&f->err, SP_ERR_LIMIT,
						    "more than %u distinct frames", UINT32_MAX - 1);
			if (r < 0)
				return sp_error_set(&f->err, SP_ERR_NOMEM, "out of memory");
			if (r == 0)
				continue;
		}
		if (in->skipped++ == 0) {
			in->first_bad = it.lineno;
			in->why = why;
		}
	}
	return 0;
}

/*
 * Whether buf starts as every stream does (sp-stream(5)): a map whose
 * first key is "t" with the value "header".  Folded text never does.
 */
static bool looks_like_stream(const char *buf, size_t len)
{
	static const char key[] = "\xa1t\xa6header";
	const unsigned char *p = (const unsigned char *)buf;
	size_t at = len && p[0] >= 0x80 && p[0] <= 0x8f ? 1 :
		len >= 3 && p[0] == 0xde ? 3 : 0;
	return at && len >= at + sizeof(key) - 1 && memcmp(p + at, key, sizeof(key) - 1) == 0;
}

int sp_flame_read(struct sp_flame *f, int fd, const char *name, enum sp_flame_side side,
		  struct sp_flame_input *in)
{
	struct sp_buf b = SP_BUF_INIT;
	int r;
	*in = (struct sp_flame_input){ 0 };
	if (sp_buf_read_fd(&b, fd) < 0)
		r = errno == ENOMEM ? sp_error_set(&f->err, SP_ERR_NOMEM, "out of memory") :
			sp_error_errno(&f->err, "cannot read '%s'", name);
	else if (looks_like_stream(b.p, b.len))
		r = sp_error_set(&f->err, SP_ERR_BAD_INPUT, "'%s' is a stackpulse stream, not "
				 "folded stacks: run sp-fold first (sp-fold FILE | sp-flame)", name);
	else
		r = add_lines(f, b.p, b.len, name, side, in);
	sp_buf_release(&b);
	if (r == 0) {
		f->diff |= side != SP_FLAME_AS_IS || in->columns == 2;
		f->one |= in->columns == 1;
		f->two |= in->columns == 2;
	}
	return r;
}
