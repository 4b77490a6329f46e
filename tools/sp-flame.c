/*
 * sp-flame: draws folded stacks, sp-fold's or any other tool's, as one
 * self-contained interactive SVG: a flame graph, an icicle graph, or a
 * differential flame graph of two profiles.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

/* The picture's geometry, in pixels. */
#define DEFAULT_WIDTH 1200
#define DEFAULT_MINWIDTH 0.1
#define XPAD 10			/* left and right margins */
#define YPAD_TOP 50		/* the title, the buttons and the subtitle */
#define YPAD_BOTTOM 34		/* the details line */
#define FRAME_H 16		/* one level of frames, 1 of it between levels */
#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59)	/* a character's average width */

/*
 * The largest count of one line, and of all lines together: sample
 * counts stay exact in the doubles that lay the picture out.
 */
#define MAX_COUNT ((1ull << 53) - 1)

enum colors { COLORS_DEFAULT, COLORS_KINDS };

struct options {
	const char *output, *title;
	unsigned width;
	double minwidth;	/* pixels, after --minwidth PERCENT% is applied */
	bool inverted, reverse, diff;
	enum colors colors;
	bool colors_given;
};

static void usage(void)
{
	printf("Usage: %s [options] [FOLDED...]\n"
	       "       %s --diff [options] BEFORE AFTER\n"
	       "Draw folded stacks ('root;...;leaf COUNT' lines) as an interactive SVG flame\n"
	       "graph.  FOLDED is '-' or absent for standard input; several are added up.\n"
	       "Lines of two counts ('STACK BEFORE AFTER') draw a differential graph.\n"
	       "\n"
	       "  -o, --output FILE      write the SVG to FILE instead of standard output\n"
	       "  -t, --title TEXT       the title (default \"Flame Graph\")\n"
	       "  -w, --width PX         the picture's width (default %d)\n"
	       "  -m, --minwidth PX|P%%   leave out frames narrower than PX pixels, or than\n"
	       "                         P percent of the width (default %g)\n"
	       "  -c, --colors PALETTE   default (warm colours by name) or kinds (kernel _[k],\n"
	       "                         JIT _[j], inline _[i] and user frames apart)\n"
	       "  -i, --inverted         an icicle graph: the root at the top\n"
	       "  -r, --reverse          reverse each stack before merging: leaves at the root\n"
	       "  -d, --diff             a differential graph of two files, BEFORE and AFTER:\n"
	       "                         widths from AFTER, red for a frame that grew, blue for\n"
	       "                         one that shrank, hatched grey for one that vanished\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, DEFAULT_WIDTH, DEFAULT_MINWIDTH);
}

/*
 * Frame names, each stored once, as valid UTF-8 without control
 * characters so that any of them may go into XML.
 */
struct names {
	char **str;
	uint32_t n, cap;
	uint32_t *slot;		/* open addressing: index + 1, 0 when empty */
	size_t nslot;
	uint32_t *rank;		/* each name's place in byte order */
};

/* A frame of the merged tree; node 0 is the root, "all". */
struct node {
	uint64_t count[2];	/* samples before and after; after alone if not a diff */
	uint32_t parent, name, depth;
};

struct tree {
	struct node *node;
	uint32_t n, cap;
	/* The child table: key parent << 32 | name, val node index + 1. */
	struct slot { uint64_t key; uint32_t val; } *slot;
	size_t nslot;
	struct names names;
	/* Children in name order: child[start[i]] to child[start[i + 1]]. */
	uint32_t *start, *child;
	/*
	 * The frames of the line being added, and the previous line's with
	 * the nodes they led to: sorted input shares long prefixes, which
	 * then cost a memcmp() each.  The frames point into the input.
	 */
	struct frame { const char *p; size_t len; uint32_t node; } *frames, *prev;
	size_t capframes, nprev;
	char *clean;
	size_t capclean;
};

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The length of the valid UTF-8 character at s, or 0 if there is none. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	uint32_t cp, min;
	size_t len;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Surrogates, U+FFFE and U+FFFF are not allowed in XML either. */
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
	    cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

/*
 * Makes a name fit for XML: control characters and bytes that are not
 * UTF-8 become U+FFFD.  Returns p itself when it needs no change, else
 * t->clean; *len is updated.
 */
static const char *clean_name(struct tree *t, const char *p, size_t *len)
{
	size_t n = *len, i;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
			break;
	if (i == n)
		return p;
	if (t->capclean < 3 * n) {
		t->capclean = 3 * n;
		t->clean = sp_xrealloc(t->clean, t->capclean);
	}
	size_t o = 0;
	for (i = 0; i < n;) {
		const unsigned char *s = (const unsigned char *)p + i;
		size_t k = utf8_char(s, n - i);
		if (k == 0 || s[0] < 0x20 || s[0] == 0x7f) {
			memcpy(t->clean + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(t->clean + o, s, k);
			o += k;
			i += k;
		}
	}
	*len = o;
	return t->clean;
}

static uint32_t name_intern(struct names *nm, const char *p, size_t len)
{
	if (2 * (size_t)(nm->n + 1) > nm->nslot) {
		size_t nslot = nm->nslot ? 2 * nm->nslot : 1024;
		uint32_t *slot = sp_xcalloc(nslot, sizeof(*slot));
		for (size_t i = 0; i < nm->nslot; i++) {
			if (!nm->slot[i])
				continue;
			const char *s = nm->str[nm->slot[i] - 1];
			size_t j = hash_bytes(s, strlen(s)) & (nslot - 1);
			while (slot[j])
				j = (j + 1) & (nslot - 1);
			slot[j] = nm->slot[i];
		}
		free(nm->slot);
		nm->slot = slot;
		nm->nslot = nslot;
	}
	size_t j = hash_bytes(p, len) & (nm->nslot - 1);
	for (; nm->slot[j]; j = (j + 1) & (nm->nslot - 1)) {
		const char *s = nm->str[nm->slot[j] - 1];
		if (strncmp(s, p, len) == 0 && s[len] == '\0')
			return nm->slot[j] - 1;
	}
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? 2 * nm->cap : 1024;
		nm->str = sp_xrealloc(nm->str, nm->cap * sizeof(*nm->str));
	}
	char *s = sp_xmalloc(len + 1);
	memcpy(s, p, len);
	s[len] = '\0';
	nm->str[nm->n] = s;
	nm->slot[j] = ++nm->n;
	return nm->n - 1;
}

static uint32_t tree_new_node(struct tree *t, uint32_t parent, uint32_t name)
{
	if (t->n == UINT32_MAX)
		sp_die(SP_EXIT_FATAL, "more than %u distinct frames", UINT32_MAX - 1);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->node = sp_xrealloc(t->node, t->cap * sizeof(*t->node));
	}
	struct node *nd = &t->node[t->n];
	*nd = (struct node){ .parent = parent, .name = name,
			     .depth = t->n ? t->node[parent].depth + 1 : 0 };
	return t->n++;
}

static void tree_init(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	tree_new_node(t, 0, name_intern(&t->names, "all", 3));
}

/* The child of parent with this name, made when there is none. */
static uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t name)
{
	if (2 * (size_t)(t->n + 1) > t->nslot) {
		size_t nslot = t->nslot ? 2 * t->nslot : 4096;
		struct slot *slot = sp_xcalloc(nslot, sizeof(*slot));
		for (size_t i = 0; i < t->nslot; i++) {
			if (!t->slot[i].val)
				continue;
			size_t j = hash_u64(t->slot[i].key) & (nslot - 1);
			while (slot[j].val)
				j = (j + 1) & (nslot - 1);
			slot[j] = t->slot[i];
		}
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	}
	uint64_t k = (uint64_t)parent << 32 | name;
	size_t j = hash_u64(k) & (t->nslot - 1);
	for (; t->slot[j].val; j = (j + 1) & (t->nslot - 1))
		if (t->slot[j].key == k)
			return t->slot[j].val - 1;
	uint32_t c = tree_new_node(t, parent, name);
	t->slot[j] = (struct slot){ k, c + 1 };
	return c;
}

/*
 * Adds one stack (frames root first, ';' between them) with its counts.
 * Returns NULL, or why the stack cannot be added.
 */
static const char *tree_add(struct tree *t, const char *s, size_t len, bool reverse,
			    const uint64_t count[2])
{
	size_t n = 0;
	for (size_t i = 0, j; i < len; i = j + 1) {
		const char *semi = memchr(s + i, ';', len - i);
		j = semi ? (size_t)(semi - s) : len;
		if (j == i)
			continue;	/* an empty frame, as in "a;;b" */
		if (n == t->capframes) {
			t->capframes = t->capframes ? 2 * t->capframes : 64;
			t->frames = sp_xrealloc(t->frames, t->capframes * sizeof(*t->frames));
			t->prev = sp_xrealloc(t->prev, t->capframes * sizeof(*t->prev));
		}
		t->frames[n++] = (struct frame){ s + i, j - i, 0 };
	}
	if (n == 0)
		return "no frames before the count";
	for (int c = 0; c < 2; c++)
		if (count[c] > MAX_COUNT - t->node[0].count[c])
			return "the counts add up to more than 2^53";
	if (reverse)
		for (size_t i = 0; i < n / 2; i++) {
			struct frame f = t->frames[i];
			t->frames[i] = t->frames[n - 1 - i];
			t->frames[n - 1 - i] = f;
		}
	uint32_t at = 0;
	bool same = true;	/* the same path as the previous line so far */
	for (int c = 0; c < 2; c++)
		t->node[0].count[c] += count[c];
	for (size_t i = 0; i < n; i++) {
		struct frame *f = &t->frames[i];
		same = same && i < t->nprev && f->len == t->prev[i].len &&
			memcmp(f->p, t->prev[i].p, f->len) == 0;
		if (same) {
			at = t->prev[i].node;
		} else {
			size_t flen = f->len;
			const char *p = clean_name(t, f->p, &flen);
			at = tree_child(t, at, name_intern(&t->names, p, flen));
		}
		f->node = at;
		for (int c = 0; c < 2; c++)
			t->node[at].count[c] += count[c];
	}
	struct frame *swap = t->prev;
	t->prev = t->frames;
	t->frames = swap;
	t->nprev = n;
	return NULL;
}

/* What qsort() compares by: names, and nodes by their names' ranks. */
static const struct tree *sort_tree;

static int name_cmp(const void *a, const void *b)
{
	return strcmp(sort_tree->names.str[*(const uint32_t *)a],
		      sort_tree->names.str[*(const uint32_t *)b]);
}

static int node_cmp(const void *a, const void *b)
{
	const uint32_t *rank = sort_tree->names.rank;
	uint32_t x = rank[sort_tree->node[*(const uint32_t *)a].name];
	uint32_t y = rank[sort_tree->node[*(const uint32_t *)b].name];
	return (x > y) - (x < y);
}

/* Lists every node's children in byte order of their names. */
static void tree_finish(struct tree *t)
{
	struct names *nm = &t->names;
	uint32_t *order = sp_xmalloc(nm->n * sizeof(*order));
	for (uint32_t i = 0; i < nm->n; i++)
		order[i] = i;
	sort_tree = t;
	qsort(order, nm->n, sizeof(*order), name_cmp);
	nm->rank = sp_xmalloc(nm->n * sizeof(*nm->rank));
	for (uint32_t i = 0; i < nm->n; i++)
		nm->rank[order[i]] = i;
	free(order);

	t->start = sp_xcalloc((size_t)t->n + 1, sizeof(*t->start));
	t->child = sp_xmalloc(t->n * sizeof(*t->child));
	for (uint32_t i = 1; i < t->n; i++)
		t->start[t->node[i].parent + 1]++;
	for (uint32_t i = 0; i < t->n; i++)
		t->start[i + 1] += t->start[i];
	uint32_t *fill = sp_xmalloc(t->n * sizeof(*fill));
	memcpy(fill, t->start, t->n * sizeof(*fill));
	for (uint32_t i = 1; i < t->n; i++)
		t->child[fill[t->node[i].parent]++] = i;
	free(fill);
	for (uint32_t i = 0; i < t->n; i++)
		if (t->start[i + 1] - t->start[i] > 1)
			qsort(t->child + t->start[i], t->start[i + 1] - t->start[i],
			      sizeof(*t->child), node_cmp);
}

static void tree_release(struct tree *t)
{
	for (uint32_t i = 0; i < t->names.n; i++)
		free(t->names.str[i]);
	free(t->names.str);
	free(t->names.slot);
	free(t->names.rank);
	free(t->node);
	free(t->slot);
	free(t->start);
	free(t->child);
	free(t->frames);
	free(t->prev);
	free(t->clean);
}

/* What one input held. */
struct input {
	const char *name;
	int columns;		/* counts a line: 1 or 2, 0 for no stacks */
	unsigned long skipped, first_bad;
	const char *why;	/* why line first_bad was skipped */
};

/* Reads all of path ('-' or NULL for standard input); dies when it cannot. */
static char *read_all(const char *path, const char *name, size_t *len)
{
	int fd = sp_open_input(path);
	struct stat st;
	size_t cap = 1 << 16, n = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	char *buf = sp_xmalloc(cap);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = sp_xrealloc(buf, cap);
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			free(buf);
			sp_die(SP_EXIT_FATAL, "cannot read '%s': %s", name, strerror(e));
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	*len = n;
	return buf;
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
		if (v > MAX_COUNT)
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
	size_t k = j;
	while (k > 0 && !is_blank(p[k - 1]))
		k--;
	if (k > 0 && parse_count(p + k, j - k, &l->prev) == NULL) {
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
 * Reads one input into the tree.  col is 0 or 1 to add each line's count
 * to the before or the after side (--diff), -1 to take the input as it
 * is: a file of one count a line adds to after, one of two counts a line
 * adds to both.  A file is of two counts when most of its lines end with
 * two; its lines that do not are then skipped.
 */
static void read_folded(struct tree *t, const struct options *o, const char *path,
			int col, struct input *in)
{
	in->name = path ? path : "-";
	size_t len;
	char *buf = read_all(path, in->name, &len);
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
	if (col >= 0 && in->columns == 2) {
		free(buf);
		sp_die(SP_EXIT_FATAL, "'%s' has two counts a line: --diff takes two files "
		       "of one count a line", in->name);
	}

	it = (struct lines){ .buf = buf, .len = len };
	t->nprev = 0;
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
				count[col < 0 ? 1 : col] = l.last;
			}
			why = tree_add(t, p, in->columns == 2 ? l.len2 : l.len1, o->reverse, count);
			if (!why)
				continue;
		}
		if (in->skipped++ == 0) {
			in->first_bad = it.lineno;
			in->why = why;
		}
	}
	free(buf);
}

/* Where each frame goes: the layout in samples, and the frames drawn. */
struct layout {
	double *w, *x;		/* each node's width and start, in samples */
	double total;		/* the root's width */
	uint32_t *drawn;	/* the nodes drawn, parents before children */
	size_t ndrawn;
	uint32_t maxdepth;
	unsigned long long dropped;	/* frames narrower than --minwidth */
	bool diff;
	double maxdelta;	/* the largest change of a frame's share */
};

static bool vanished(const struct node *nd)
{
	return nd->count[1] == 0 && nd->count[0] > 0;
}

/* The change of a node's share of all samples, from before to after. */
static double delta(const struct tree *t, const struct node *nd)
{
	const struct node *root = &t->node[0];
	double a = root->count[1] ? (double)nd->count[1] / (double)root->count[1] : 0;
	double b = root->count[0] ? (double)nd->count[0] / (double)root->count[0] : 0;
	return a - b;
}

/*
 * Lays the tree out.  A frame is as wide as its samples (after, in a
 * diff).  In a diff, a frame that vanished is as wide as its before
 * samples scaled to the after total, and its ancestors widen to hold it.
 */
static void layout(const struct tree *t, const struct options *o, struct layout *lo)
{
	const struct node *nd = t->node;
	double scale = nd[0].count[0] && nd[0].count[1] ?
		(double)nd[0].count[1] / (double)nd[0].count[0] : 1;
	lo->w = sp_xmalloc(t->n * sizeof(*lo->w));
	lo->x = sp_xmalloc(t->n * sizeof(*lo->x));
	for (uint32_t i = 0; i < t->n; i++)
		lo->w[i] = lo->diff && vanished(&nd[i]) ? (double)nd[i].count[0] * scale :
			(double)nd[i].count[1];
	/* Children come after their parents, so this sees each width final. */
	if (lo->diff)
		for (uint32_t i = t->n - 1; i > 0; i--)
			if (!vanished(&nd[nd[i].parent]))
				lo->w[nd[i].parent] += lo->w[i] - (double)nd[i].count[1];
	lo->total = lo->w[0];
	lo->maxdelta = 0;
	if (lo->diff)
		for (uint32_t i = 1; i < t->n; i++)
			if (fabs(delta(t, &nd[i])) > lo->maxdelta)
				lo->maxdelta = fabs(delta(t, &nd[i]));

	/* The frames in each subtree, counted for those left out. */
	uint32_t *sub = sp_xmalloc(t->n * sizeof(*sub));
	for (uint32_t i = 0; i < t->n; i++)
		sub[i] = 1;
	for (uint32_t i = t->n - 1; i > 0; i--)
		sub[nd[i].parent] += sub[i];

	/* Depth first, parents before children, children in name order. */
	uint32_t *stack = sp_xmalloc(t->n * sizeof(*stack));
	size_t sp = 0;
	double px = (o->width - 2 * XPAD) / (lo->total > 0 ? lo->total : 1);
	lo->drawn = sp_xmalloc(t->n * sizeof(*lo->drawn));
	lo->ndrawn = 0;
	lo->maxdepth = 0;
	lo->dropped = 0;
	lo->x[0] = 0;
	if (lo->total > 0)
		stack[sp++] = 0;
	while (sp > 0) {
		uint32_t i = stack[--sp];
		if (i != 0 && lo->w[i] <= 0)
			continue;	/* a frame of no samples at all */
		if (i != 0 && lo->w[i] * px < o->minwidth) {
			lo->dropped += sub[i];
			continue;
		}
		lo->drawn[lo->ndrawn++] = i;
		if (nd[i].depth > lo->maxdepth)
			lo->maxdepth = nd[i].depth;
		double x = lo->x[i];
		for (uint32_t k = t->start[i]; k < t->start[i + 1]; k++) {
			lo->x[t->child[k]] = x;
			x += lo->w[t->child[k]];
		}
		for (uint32_t k = t->start[i + 1]; k > t->start[i]; k--)
			stack[sp++] = t->child[k - 1];
	}
	free(stack);
	free(sub);
}

static void layout_release(struct layout *lo)
{
	free(lo->w);
	free(lo->x);
	free(lo->drawn);
}

/* Writes s with &, <, >, " and ' escaped. */
static void put_xml(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: putc(s[i], out);
		}
	}
}

/*
 * Writes the label that fits a frame w pixels wide: the name, or as many
 * of its characters as fit followed by "..", or nothing.  The script's
 * fit() does the same when it zooms.
 */
static void put_label(FILE *out, const char *name, double w)
{
	double fits = floor((w - 6) / CHAR_W);
	if (fits < 3)
		return;
	size_t chars = 0, len = strlen(name), cut = len;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)name[i] & 0xc0) != 0x80) {
			if (chars == (size_t)fits - 2)
				cut = i;
			chars++;
		}
	if (chars <= fits) {
		put_xml(out, name, len);
	} else {
		put_xml(out, name, cut);
		fputs("..", out);
	}
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* A frame's fill colour, the same for the same name in every picture. */
static void frame_color(const struct tree *t, const struct layout *lo, enum colors colors,
			uint32_t i, char *buf, size_t size)
{
	const struct node *nd = &t->node[i];
	const char *name = t->names.str[nd->name];
	if (lo->diff) {
		double d = delta(t, nd), r = lo->maxdelta > 0 ? fabs(d) / lo->maxdelta : 0;
		int v = (int)lround(210 * (1 - r));
		if (vanished(nd))
			snprintf(buf, size, "url(#hatch)");
		else if (r < 1e-9)
			snprintf(buf, size, "rgb(250,250,250)");
		else if (d > 0)
			snprintf(buf, size, "rgb(255,%d,%d)", v, v);
		else
			snprintf(buf, size, "rgb(%d,%d,255)", v, v);
		return;
	}
	uint64_t h = hash_u64(hash_bytes(name, strlen(name)));
	double v1 = (double)(h & 0xffff) / 65535, v2 = (double)(h >> 16 & 0xffff) / 65535,
	       v3 = (double)(h >> 32 & 0xffff) / 65535;
	int r, g, b;
	if (colors == COLORS_KINDS && has_suffix(name, "_[k]")) {	/* orange */
		r = 190 + (int)(65 * v1), g = 90 + (int)(65 * v1), b = 0;
	} else if (colors == COLORS_KINDS && has_suffix(name, "_[j]")) {	/* green */
		r = 50 + (int)(60 * v1), g = 200 + (int)(55 * v1), b = 50 + (int)(60 * v1);
	} else if (colors == COLORS_KINDS && has_suffix(name, "_[i]")) {	/* aqua */
		r = 50 + (int)(60 * v1), g = 165 + (int)(55 * v1), b = 165 + (int)(55 * v1);
	} else if (colors == COLORS_KINDS) {	/* red: user code */
		r = 200 + (int)(55 * v1), g = 50 + (int)(80 * v1), b = 50 + (int)(80 * v1);
	} else {	/* the classic warm palette */
		r = 205 + (int)(50 * v3), g = (int)(230 * v1), b = (int)(55 * v2);
	}
	snprintf(buf, size, "rgb(%d,%d,%d)", r, g, b);
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The title of a frame: its name, then its counts in parentheses. */
static void put_title(FILE *out, const struct tree *t, const struct layout *lo, uint32_t i)
{
	const struct node *nd = &t->node[i], *root = &t->node[0];
	const char *name = t->names.str[nd->name];
	put_xml(out, name, strlen(name));
	double a = root->count[1] ? 100.0 * (double)nd->count[1] / (double)root->count[1] : 0;
	if (!lo->diff) {
		fprintf(out, " (%llu sample%s, %.2f%%)", (unsigned long long)nd->count[1],
			plural(nd->count[1]), a);
		return;
	}
	double b = root->count[0] ? 100.0 * (double)nd->count[0] / (double)root->count[0] : 0;
	double d = a - b;
	fprintf(out, " (after: %llu sample%s, %.2f%%; before: %llu sample%s, %.2f%%; ",
		(unsigned long long)nd->count[1], plural(nd->count[1]), a,
		(unsigned long long)nd->count[0], plural(nd->count[0]), b);
	if (fabs(d) < 1e-12)
		fputs("unchanged", out);
	else
		fprintf(out, "%s %.2f points", d > 0 ? "grew" : "shrank", fabs(d));
	if (vanished(nd))
		fputs(", vanished", out);
	else if (nd->count[0] == 0 && i != 0)
		fputs(", new", out);
	fputs(")", out);
}

static const char style[] =
	"text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	"#title { text-anchor: middle; font-size: 17px; }\n"
	"#subtitle { text-anchor: middle; fill: rgb(90,90,90); }\n"
	"#search, #matched { text-anchor: end; }\n"
	".button { cursor: pointer; fill: rgb(0,0,150); }\n"
	".button:hover { text-decoration: underline; }\n"
	"#frames g { cursor: pointer; }\n"
	"#frames g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	"#frames text { pointer-events: none; }\n"
	".hide { display: none; }\n"
	".parent { opacity: 0.5; }\n";

/* The script: hover, zoom, search, and a self-test for the test suite. */
static const char script[] =
	"/* Each frame is a g element of class f in #frames, holding a title, a\n"
	"   rect and a text; data-x and data-w are its start and width in samples,\n"
	"   data-d its depth, data-n its samples when that differs from data-w. */\n"
	"var frames = [], zoomed = null, searching = null, MATCH = 'rgb(230,0,230)';\n"
	"var svg, fr, details, matched, unzoombtn, searchbtn;\n"
	"\n"
	"function frameof(el) {\n"
	"\tfor (; el && el !== fr; el = el.parentNode)\n"
	"\t\tif (el.spf !== undefined)\n"
	"\t\t\treturn frames[el.spf];\n"
	"\treturn null;\n"
	"}\n"
	"\n"
	"/* The frame's name is its title up to the last ' ('. */\n"
	"function name(f) {\n"
	"\tif (f.name === null) {\n"
	"\t\tvar t = f.g.firstElementChild.textContent;\n"
	"\t\tf.name = t.substring(0, t.lastIndexOf(' ('));\n"
	"\t}\n"
	"\treturn f.name;\n"
	"}\n"
	"\n"
	"/* The label that fits w pixels: the name, cut with '..', or nothing. */\n"
	"function fit(s, w) {\n"
	"\tvar n = Math.floor((w - 6) / CHARW);\n"
	"\tif (n < 3)\n"
	"\t\treturn '';\n"
	"\tif (s.length <= n)\n"
	"\t\treturn s;\n"
	"\tvar c = Array.from(s);\n"
	"\treturn c.length <= n ? s : c.slice(0, n - 2).join('') + '..';\n"
	"}\n"
	"\n"
	"function place(f, x, w) {\n"
	"\tf.r.setAttribute('x', x.toFixed(2));\n"
	"\tf.r.setAttribute('width', w.toFixed(2));\n"
	"\tf.t.setAttribute('x', (x + 3).toFixed(2));\n"
	"\tf.t.textContent = fit(name(f), w);\n"
	"}\n"
	"\n"
	"/* Zooms into f: its descendants fill the width, its ancestors are dimmed\n"
	"   and stretched, every other frame is hidden. */\n"
	"function zoom(f) {\n"
	"\tif (f.d === 0) {\n"
	"\t\tunzoom();\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tvar eps = 1e-9 * TOTALW, ratio = W / f.w, end = f.x + f.w;\n"
	"\tzoomed = f;\n"
	"\tfor (var i = 0; i < frames.length; i++) {\n"
	"\t\tvar e = frames[i], c = e.g.classList;\n"
	"\t\tif (e.d < f.d && e.x <= f.x + eps && e.x + e.w >= end - eps) {\n"
	"\t\t\tc.remove('hide');\n"
	"\t\t\tc.add('parent');\n"
	"\t\t\tplace(e, XPAD, W);\n"
	"\t\t} else if (e.d >= f.d && e.x >= f.x - eps && e.x + e.w <= end + eps) {\n"
	"\t\t\tc.remove('hide', 'parent');\n"
	"\t\t\tplace(e, XPAD + (e.x - f.x) * ratio, e.w * ratio);\n"
	"\t\t} else {\n"
	"\t\t\tc.add('hide');\n"
	"\t\t}\n"
	"\t}\n"
	"\tunzoombtn.classList.remove('hide');\n"
	"}\n"
	"\n"
	"function unzoom() {\n"
	"\tzoomed = null;\n"
	"\tfor (var i = 0; i < frames.length; i++) {\n"
	"\t\tvar e = frames[i];\n"
	"\t\te.g.classList.remove('hide', 'parent');\n"
	"\t\te.r.setAttribute('x', e.rx);\n"
	"\t\te.r.setAttribute('width', e.rw);\n"
	"\t\te.t.setAttribute('x', e.tx);\n"
	"\t\te.t.textContent = e.label;\n"
	"\t}\n"
	"\tunzoombtn.classList.add('hide');\n"
	"}\n"
	"\n"
	"function resetsearch() {\n"
	"\tfor (var i = 0; i < frames.length; i++)\n"
	"\t\tif (frames[i].hit) {\n"
	"\t\t\tframes[i].r.setAttribute('fill', frames[i].fill);\n"
	"\t\t\tframes[i].hit = false;\n"
	"\t\t}\n"
	"\tsearching = null;\n"
	"\tmatched.textContent = ' ';\n"
	"\tsearchbtn.textContent = 'Search';\n"
	"}\n"
	"\n"
	"/* Highlights the frames whose name matches the regular expression term\n"
	"   and shows their share of all samples, each sample counted once however\n"
	"   many of its frames match.  Returns the number of frames that match. */\n"
	"function search(term) {\n"
	"\tvar re, i, hits = [];\n"
	"\ttry {\n"
	"\t\tre = new RegExp(term);\n"
	"\t} catch (err) {\n"
	"\t\tdetails.textContent = 'not a regular expression: ' + term;\n"
	"\t\treturn -1;\n"
	"\t}\n"
	"\tresetsearch();\n"
	"\tfor (i = 0; i < frames.length; i++)\n"
	"\t\tif (re.test(name(frames[i]))) {\n"
	"\t\t\tframes[i].hit = true;\n"
	"\t\t\tframes[i].r.setAttribute('fill', MATCH);\n"
	"\t\t\thits.push(frames[i]);\n"
	"\t\t}\n"
	"\t/* An ancestor comes before its descendants, which lie inside it. */\n"
	"\thits.sort(function (a, b) { return a.x - b.x || a.d - b.d; });\n"
	"\tvar eps = 1e-9 * TOTALW, end = -Infinity, sum = 0;\n"
	"\tfor (i = 0; i < hits.length; i++)\n"
	"\t\tif (hits[i].x + hits[i].w > end + eps) {\n"
	"\t\t\tsum += hits[i].n;\n"
	"\t\t\tend = hits[i].x + hits[i].w;\n"
	"\t\t}\n"
	"\tsearching = term;\n"
	"\tsearchbtn.textContent = 'Reset Search';\n"
	"\tmatched.textContent = 'Matched: ' + (TOTAL > 0 ? 100 * sum / TOTAL : 0).toFixed(2) +\n"
	"\t\t'% (' + hits.length + (hits.length === 1 ? ' frame)' : ' frames)');\n"
	"\treturn hits.length;\n"
	"}\n"
	"\n"
	"function searchprompt() {\n"
	"\tif (searching !== null) {\n"
	"\t\tresetsearch();\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tvar term = window.prompt('Search for a regular expression (e.g. ^ext4_ or _\\\\[k\\\\]$)', '');\n"
	"\tif (term)\n"
	"\t\tsearch(term);\n"
	"}\n"
	"\n"
	"function init() {\n"
	"\tsvg = document.documentElement;\n"
	"\tfr = document.getElementById('frames');\n"
	"\tdetails = document.getElementById('details');\n"
	"\tmatched = document.getElementById('matched');\n"
	"\tunzoombtn = document.getElementById('unzoom');\n"
	"\tsearchbtn = document.getElementById('search');\n"
	"\tvar gs = fr.children;\n"
	"\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\tvar g = gs[i], r = g.children[1], t = g.children[2];\n"
	"\t\tg.spf = i;\n"
	"\t\tframes.push({ g: g, r: r, t: t, name: null, hit: false,\n"
	"\t\t\tx: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),\n"
	"\t\t\td: +g.getAttribute('data-d'),\n"
	"\t\t\tn: +(g.getAttribute('data-n') || g.getAttribute('data-w')),\n"
	"\t\t\trx: r.getAttribute('x'), rw: r.getAttribute('width'),\n"
	"\t\t\ttx: t.getAttribute('x'), label: t.textContent,\n"
	"\t\t\tfill: r.getAttribute('fill') });\n"
	"\t}\n"
	"\tfr.addEventListener('mouseover', function (e) {\n"
	"\t\tvar f = frameof(e.target);\n"
	"\t\tif (f)\n"
	"\t\t\tdetails.textContent = f.g.firstElementChild.textContent;\n"
	"\t});\n"
	"\tfr.addEventListener('mouseout', function (e) {\n"
	"\t\tif (frameof(e.target))\n"
	"\t\t\tdetails.textContent = ' ';\n"
	"\t});\n"
	"\tfr.addEventListener('click', function (e) {\n"
	"\t\tvar f = frameof(e.target);\n"
	"\t\tif (f)\n"
	"\t\t\tzoom(f);\n"
	"\t});\n"
	"\tunzoombtn.addEventListener('click', unzoom);\n"
	"\tsearchbtn.addEventListener('click', searchprompt);\n"
	"\twindow.addEventListener('keydown', function (e) {\n"
	"\t\tif ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {\n"
	"\t\t\te.preventDefault();\n"
	"\t\t\tsearchprompt();\n"
	"\t\t} else if (e.key === 'Escape') {\n"
	"\t\t\tresetsearch();\n"
	"\t\t\tunzoom();\n"
	"\t\t}\n"
	"\t});\n"
	"\tvar h = location.hash;\n"
	"\tif (h === '#selftest' || h.indexOf('#selftest&') === 0)\n"
	"\t\tselftest(h);\n"
	"}\n"
	"\n"
	"/* With #selftest[&zoom=NAME][&search=REGEX] in the URL: hovers, clicks,\n"
	"   searches and resets as a user would, through the same handlers, checks\n"
	"   the result and writes it to the root's data-selftest attribute.  Then\n"
	"   it zooms again, so that a screenshot shows the zoom and the search. */\n"
	"function selftest(h) {\n"
	"\tvar args = {}, out = [], f = null, i, e;\n"
	"\th.split('&').slice(1).forEach(function (kv) {\n"
	"\t\tvar k = kv.indexOf('=');\n"
	"\t\tif (k > 0)\n"
	"\t\t\targs[kv.substring(0, k)] = decodeURIComponent(kv.substring(k + 1));\n"
	"\t});\n"
	"\tfor (i = 0; i < frames.length; i++) {\n"
	"\t\te = frames[i];\n"
	"\t\tif (args.zoom !== undefined) {\n"
	"\t\t\tif (e.d > 0 && name(e) === args.zoom) {\n"
	"\t\t\t\tf = e;\n"
	"\t\t\t\tbreak;\n"
	"\t\t\t}\n"
	"\t\t} else if (e.d === 1 && (!f || e.w > f.w)) {\n"
	"\t\t\tf = e;\n"
	"\t\t}\n"
	"\t}\n"
	"\tif (!f) {\n"
	"\t\tsvg.setAttribute('data-selftest', 'error=no-frame-to-click');\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tfunction fire(el, type) {\n"
	"\t\tel.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, view: window }));\n"
	"\t}\n"
	"\tfunction near(a, b) {\n"
	"\t\treturn Math.abs(a - b) < 0.006;\n"
	"\t}\n"
	"\tfire(f.r, 'mouseover');\n"
	"\tout.push('hover=' + (details.textContent === f.g.firstElementChild.textContent ? 'ok' : 'FAIL'));\n"
	"\n"
	"\tfire(f.r, 'click');\n"
	"\tvar eps = 1e-9 * TOTALW, ratio = W / f.w, bad = 0, shown = 0, hidden = 0, dimmed = 0;\n"
	"\tfor (i = 0; i < frames.length; i++) {\n"
	"\t\te = frames[i];\n"
	"\t\tvar c = e.g.classList, x = +e.r.getAttribute('x'), w = +e.r.getAttribute('width');\n"
	"\t\tvar inside = e.d >= f.d && e.x >= f.x - eps && e.x + e.w <= f.x + f.w + eps;\n"
	"\t\tif (c.contains('hide')) {\n"
	"\t\t\thidden++;\n"
	"\t\t\tbad += inside;\n"
	"\t\t} else if (c.contains('parent')) {\n"
	"\t\t\tdimmed++;\n"
	"\t\t\tbad += e.d >= f.d || !near(x, XPAD) || !near(w, W);\n"
	"\t\t} else {\n"
	"\t\t\tshown++;\n"
	"\t\t\tbad += !inside || !near(x, XPAD + (e.x - f.x) * ratio) || !near(w, e.w * ratio);\n"
	"\t\t}\n"
	"\t}\n"
	"\tvar zw = +f.r.getAttribute('width');\n"
	"\tout.push('zoom=' + (zoomed === f && bad === 0 && dimmed === f.d && near(zw, W) &&\n"
	"\t\t\t    !unzoombtn.classList.contains('hide') ? 'ok' : 'FAIL'),\n"
	"\t\t 'zoomed=' + encodeURIComponent(name(f)), 'width=' + zw.toFixed(2),\n"
	"\t\t 'shown=' + shown, 'dimmed=' + dimmed, 'hidden=' + hidden);\n"
	"\n"
	"\tvar term = args.search !== undefined ? args.search :\n"
	"\t\t'^' + name(f).replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&') + '$';\n"
	"\tvar n = search(term), lit = 0;\n"
	"\tfor (i = 0; i < frames.length; i++)\n"
	"\t\tlit += frames[i].r.getAttribute('fill') === MATCH;\n"
	"\tout.push('search=' + (n > 0 && lit === n && /^Matched: [0-9.]+%/.test(matched.textContent) ? 'ok' : 'FAIL'),\n"
	"\t\t 'matches=' + n, 'matched=' + matched.textContent.split(' ')[1]);\n"
	"\n"
	"\tfire(unzoombtn, 'click');\n"
	"\tvar back = zoomed === null && f.r.getAttribute('width') === f.rw;\n"
	"\tfor (i = 0; i < frames.length; i++)\n"
	"\t\tback = back && !frames[i].g.classList.contains('hide');\n"
	"\tout.push('unzoom=' + (back ? 'ok' : 'FAIL'));\n"
	"\tfire(f.r, 'click');\n"
	"\tsvg.setAttribute('data-selftest', out.join(' '));\n"
	"}\n"
	"\n"
	"window.addEventListener('load', init);\n";

/* Writes the whole SVG. */
static void write_svg(FILE *out, const struct tree *t, const struct layout *lo,
		      const struct options *o)
{
	const struct node *root = &t->node[0];
	unsigned width = o->width, fw = o->width - 2 * XPAD;
	unsigned height = YPAD_TOP + (lo->maxdepth + 1) * FRAME_H + YPAD_BOTTOM;
	const char *title = o->title;
	if (!title)
		title = lo->diff ? (o->inverted ? "Differential Icicle Graph" :
				    "Differential Flame Graph") :
			o->inverted ? "Icicle Graph" : "Flame Graph";

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<!-- Drawn by sp-flame (stackpulse %s) from folded stacks. -->\n",
		width, height, width, height, SP_VERSION);
	fputs("<defs>\n"
	      "<linearGradient id=\"background\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
	      "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient>\n"
	      "<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
	      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
	      "fill=\"rgb(215,215,215)\"/><rect width=\"2\" height=\"6\" "
	      "fill=\"rgb(160,160,160)\"/></pattern>\n"
	      "</defs>\n", out);
	fprintf(out, "<style type=\"text/css\">\n%s</style>\n", style);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n"
		"'use strict';\nvar W = %u, XPAD = %d, CHARW = %.4g, TOTAL = %llu, TOTALW = %.17g;\n%s]]></script>\n",
		fw, XPAD, CHAR_W, (unsigned long long)root->count[1],
		lo->total > 0 ? lo->total : 1, script);

	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n",
		width, height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	put_xml(out, title, strlen(title));
	fputs("</text>\n", out);

	/* The subtitle: the diff's legend, and what --minwidth left out. */
	fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"42\">", width / 2);
	if (lo->diff)
		fputs("widths after; red grew, blue shrank (share of all samples); "
		      "hatched vanished, drawn as wide as before", out);
	if (lo->diff && lo->dropped)
		fputs("; ", out);
	if (lo->dropped)
		fprintf(out, "%llu frame%s narrower than %g px not drawn", lo->dropped,
			plural(lo->dropped), o->minwidth);
	if (lo->total <= 0)
		fputs("no samples", out);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"button\" x=\"%u\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
		XPAD, width - XPAD, XPAD, height - 12, width - XPAD, height - 12);

	fputs("<g id=\"frames\">\n", out);
	double px = fw / (lo->total > 0 ? lo->total : 1);
	char fill[32];
	for (size_t k = 0; k < lo->ndrawn; k++) {
		uint32_t i = lo->drawn[k];
		const struct node *nd = &t->node[i];
		double x = XPAD + lo->x[i] * px, w = lo->w[i] * px;
		unsigned y = o->inverted ? YPAD_TOP + nd->depth * FRAME_H :
			height - YPAD_BOTTOM - (nd->depth + 1) * FRAME_H;
		frame_color(t, lo, o->colors, i, fill, sizeof(fill));
		fprintf(out, "<g class=\"%s\" data-x=\"%.17g\" data-w=\"%.17g\" data-d=\"%u\"",
			lo->diff && vanished(nd) ? "f v" : "f", lo->x[i], lo->w[i], nd->depth);
		if (lo->diff)
			fprintf(out, " data-n=\"%llu\"", (unsigned long long)nd->count[1]);
		fputs("><title>", out);
		put_title(out, t, lo, i);
		fprintf(out, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
			"fill=\"%s\"/><text x=\"%.2f\" y=\"%u\">",
			x, y, w, FRAME_H - 1, fill, x + 3, y + 11);
		put_label(out, t->names.str[nd->name], w);
		fputs("</text></g>\n", out);
	}
	fputs("</g>\n</svg>\n", out);
}

/* Parses --minwidth: PX, or P% of the frames' width. */
static double parse_minwidth(const char *s, unsigned width)
{
	char *end;
	double v = s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789.%") == strlen(s) ?
		strtod(s, &end) : -1;
	bool pct = v >= 0 && strcmp(end, "%") == 0;
	if (v < 0 || (*end && !pct))
		sp_usage_error("invalid --minwidth '%s' (pixels such as 0.5, or a percentage "
			       "of the width such as 0.1%%)", s);
	if (pct && v > 100)
		sp_usage_error("invalid --minwidth '%s' (at most 100%%)", s);
	return pct ? v / 100 * (width - 2 * XPAD) : v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "width", required_argument, NULL, 'w' },
		{ "minwidth", required_argument, NULL, 'm' },
		{ "colors", required_argument, NULL, 'c' },
		{ "inverted", no_argument, NULL, 'i' },
		{ "reverse", no_argument, NULL, 'r' },
		{ "diff", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .width = DEFAULT_WIDTH };
	const char *minwidth = NULL;
	uint64_t v;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:t:w:m:c:irdhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 't': o.title = optarg; break;
		case 'w':
			if (sp_parse_u64(optarg, 100000, &v) < 0 || v < 100)
				sp_usage_error("invalid --width '%s' (100 to 100000 pixels)", optarg);
			o.width = (unsigned)v;
			break;
		case 'm': minwidth = optarg; break;
		case 'c':
			if (strcmp(optarg, "default") == 0)
				o.colors = COLORS_DEFAULT;
			else if (strcmp(optarg, "kinds") == 0)
				o.colors = COLORS_KINDS;
			else
				sp_usage_error("invalid --colors '%s' (default or kinds)", optarg);
			o.colors_given = true;
			break;
		case 'i': o.inverted = true; break;
		case 'r': o.reverse = true; break;
		case 'd': o.diff = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	int nin = argc - optind;
	if (o.diff && nin != 2)
		sp_usage_error("--diff takes two files, BEFORE and AFTER");
	if (o.diff && o.colors_given)
		sp_usage_error("--colors does not apply to --diff: a differential graph is "
			       "coloured by change");
	o.minwidth = minwidth ? parse_minwidth(minwidth, o.width) : DEFAULT_MINWIDTH;

	/* Read every input into one tree of merged stacks. */
	struct tree t;
	tree_init(&t);
	int ninputs = nin ? nin : 1;
	struct input *in = sp_xcalloc((size_t)ninputs, sizeof(*in));
	int status = SP_EXIT_OK;
	bool one = false, two = false;
	for (int i = 0; i < ninputs; i++) {
		read_folded(&t, &o, nin ? argv[optind + i] : NULL, o.diff ? i : -1, &in[i]);
		one |= in[i].columns == 1;
		two |= in[i].columns == 2;
		if (in[i].skipped) {
			sp_warn("'%s': skipped %lu malformed line%s; the first, line %lu: %s",
				in[i].name, in[i].skipped, in[i].skipped == 1 ? "" : "s",
				in[i].first_bad, in[i].why);
			status = SP_EXIT_PARTIAL;
		}
	}
	if (one && two)
		sp_die(SP_EXIT_FATAL, "some inputs have one count a line and some two: "
		       "give files of two counts alone, or one-count files with --diff");
	if (two && o.colors_given)
		sp_warn("--colors does not apply to input of two counts a line: "
			"a differential graph is coloured by change");
	if (t.node[0].count[0] == 0 && t.node[0].count[1] == 0)
		sp_warn("the input holds no samples");

	/* Lay the frames out and draw them. */
	tree_finish(&t);
	struct layout lo = { .diff = o.diff || two };
	layout(&t, &o, &lo);
	int outfd = sp_open_output(o.output, false);
	FILE *out = fdopen(outfd, "w");
	if (!out)
		sp_die(SP_EXIT_FATAL, "cannot open the output: %s", strerror(errno));
	setvbuf(out, NULL, _IOFBF, 1 << 16);
	write_svg(out, &t, &lo, &o);
	if ((fflush(out) != 0 || ferror(out)) && errno != EPIPE) {
		sp_warn("cannot write to '%s': %s", o.output ? o.output : "-", strerror(errno));
		status = SP_EXIT_FATAL;
	}
	/* A reader that stopped early (sp-flame | head) is not an error. */
	fclose(out);

	layout_release(&lo);
	tree_release(&t);
	free(in);
	return status;
}
