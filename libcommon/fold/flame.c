/* SPDX-License-Identifier: MIT
 * Flame graphs (flame.h): the layout of the merged tree (flame_tree.c)
 * and the SVG, whose script and style sheet are flame.js and flame.css
 * (and flame-selftest.js for the test suite), compiled in.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold/flame_internal.h"
#include "fold/flame.css.h"
#include "fold/flame.js.h"
#include "fold/flame-selftest.js.h"

/* The picture's geometry, in pixels. */
#define XPAD 10			/* left and right margins */
#define YPAD_TOP 50		/* the title, the buttons and the subtitle */
#define YPAD_BOTTOM 34		/* the details line */
#define FRAME_H 16		/* one level of frames, 1 of it between levels */
#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59)	/* a character's average width */

struct sp_flame *sp_flame_new(const struct sp_flame_options *o)
{
	struct sp_flame *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->o = *o;
	if (!f->o.width)
		f->o.width = SP_FLAME_DEFAULT_WIDTH;
	f->minwidth = o->minwidth_percent ? o->minwidth / 100 * (f->o.width - 2 * XPAD) :
		o->minwidth;
	if (sp_flame_tree_init(&f->t) < 0) {
		sp_flame_free(f);
		return NULL;
	}
	return f;
}

void sp_flame_free(struct sp_flame *f)
{
	if (!f)
		return;
	sp_flame_tree_release(&f->t);
	free(f->lo.w);
	free(f->lo.x);
	free(f->lo.drawn);
	free(f);
}

const char *sp_flame_error(const struct sp_flame *f)
{
	return sp_error_message(&f->err);
}

bool sp_flame_empty(const struct sp_flame *f)
{
	return f->t.node[0].count[0] == 0 && f->t.node[0].count[1] == 0;
}

static bool vanished(const struct flame_node *nd)
{
	return nd->count[1] == 0 && nd->count[0] > 0;
}

/* The change of a node's share of all samples, from before to after. */
static double delta(const struct flame_tree *t, const struct flame_node *nd)
{
	const struct flame_node *root = &t->node[0];
	double a = root->count[1] ? (double)nd->count[1] / (double)root->count[1] : 0;
	double b = root->count[0] ? (double)nd->count[0] / (double)root->count[0] : 0;
	return a - b;
}

/*
 * Lays the tree out.  A frame is as wide as its samples (after, in a
 * diff).  In a diff, a frame that vanished is as wide as its before
 * samples scaled to the after total, and its ancestors widen to hold it.
 * Returns 0, or -1 when memory runs out.
 */
static int layout(struct sp_flame *f)
{
	const struct flame_tree *t = &f->t;
	const struct flame_node *nd = t->node;
	struct flame_layout *lo = &f->lo;
	double scale = nd[0].count[0] && nd[0].count[1] ?
		(double)nd[0].count[1] / (double)nd[0].count[0] : 1;
	lo->w = malloc(t->n * sizeof(*lo->w));
	lo->x = malloc(t->n * sizeof(*lo->x));
	lo->drawn = malloc(t->n * sizeof(*lo->drawn));
	uint32_t *sub = malloc(t->n * sizeof(*sub));
	uint32_t *stack = malloc(t->n * sizeof(*stack));
	if (!lo->w || !lo->x || !lo->drawn || !sub || !stack) {
		free(sub);
		free(stack);
		return -1;
	}
	for (uint32_t i = 0; i < t->n; i++)
		lo->w[i] = f->diff && vanished(&nd[i]) ? (double)nd[i].count[0] * scale :
			(double)nd[i].count[1];
	/* Children come after their parents, so this sees each width final. */
	if (f->diff)
		for (uint32_t i = t->n - 1; i > 0; i--)
			if (!vanished(&nd[nd[i].parent]))
				lo->w[nd[i].parent] += lo->w[i] - (double)nd[i].count[1];
	lo->total = lo->w[0];
	lo->maxdelta = 0;
	if (f->diff)
		for (uint32_t i = 1; i < t->n; i++)
			if (fabs(delta(t, &nd[i])) > lo->maxdelta)
				lo->maxdelta = fabs(delta(t, &nd[i]));

	/* The frames in each subtree, counted for those left out. */
	for (uint32_t i = 0; i < t->n; i++)
		sub[i] = 1;
	for (uint32_t i = t->n - 1; i > 0; i--)
		sub[nd[i].parent] += sub[i];

	/* Depth first, parents before children, children in name order. */
	size_t sp = 0;
	double px = (f->o.width - 2 * XPAD) / (lo->total > 0 ? lo->total : 1);
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
		if (i != 0 && lo->w[i] * px < f->minwidth) {
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
	return 0;
}

int sp_flame_finish(struct sp_flame *f)
{
	if (f->one && f->two)
		return sp_error_set(&f->err, SP_ERR_BAD_INPUT, "some inputs have one count a "
				    "line and some two: give files of two counts alone, or "
				    "one-count files with --diff");
	if (sp_flame_tree_finish(&f->t) < 0 || layout(f) < 0)
		return sp_error_set(&f->err, SP_ERR_NOMEM, "out of memory");
	f->finished = true;
	return 0;
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

/*
 * A name's colour hash: 64-bit FNV-1a, mixed.  Pictures drawn before
 * keep their colours, so this is not the maps' 32-bit hash.
 */
static uint64_t color_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return sp_hash_u64(h);
}

/* A frame's fill colour, the same for the same name in every picture. */
static void frame_color(const struct sp_flame *f, uint32_t i, char *buf, size_t size)
{
	const struct flame_node *nd = &f->t.node[i];
	const char *name = f->t.names.str[nd->name];
	bool kinds = f->o.colors == SP_FLAME_COLORS_KINDS;
	if (f->diff) {
		double d = delta(&f->t, nd);
		double r = f->lo.maxdelta > 0 ? fabs(d) / f->lo.maxdelta : 0;
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
	uint64_t h = color_hash(name);
	double v1 = (double)(h & 0xffff) / 65535, v2 = (double)(h >> 16 & 0xffff) / 65535,
	       v3 = (double)(h >> 32 & 0xffff) / 65535;
	int r, g, b;
	bool waited = nd->count[1] > 0 && nd->off == nd->count[1];
	if (waited && strcmp(name, SP_FOLD_PREEMPTED) == 0) {	/* grey: could have run */
		r = g = 150 + (int)(40 * v1), b = 190 + (int)(40 * v1);
	} else if (waited) {	/* blue, as off-CPU flame graphs are */
		r = g = 60 + (int)(70 * v1), b = 190 + (int)(65 * v2);
	} else if (kinds && has_suffix(name, "_[k]")) {	/* orange */
		r = 190 + (int)(65 * v1), g = 90 + (int)(65 * v1), b = 0;
	} else if (kinds && has_suffix(name, "_[j]")) {	/* green */
		r = 50 + (int)(60 * v1), g = 200 + (int)(55 * v1), b = 50 + (int)(60 * v1);
	} else if (kinds && has_suffix(name, "_[i]")) {	/* aqua */
		r = 50 + (int)(60 * v1), g = 165 + (int)(55 * v1), b = 165 + (int)(55 * v1);
	} else if (kinds) {	/* red: user code */
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
static void put_title(FILE *out, const struct sp_flame *f, uint32_t i)
{
	const struct flame_node *nd = &f->t.node[i], *root = &f->t.node[0];
	const char *name = f->t.names.str[nd->name];
	put_xml(out, name, strlen(name));
	double a = root->count[1] ? 100.0 * (double)nd->count[1] / (double)root->count[1] : 0;
	if (!f->diff && root->off) {
		/* sp-fold --off-cpu or --wall: weights in nanoseconds. */
		fprintf(out, " (%.6f s, %.2f%%%s)", (double)nd->count[1] / 1e9, a,
			nd->off == 0 ? "" : nd->off == nd->count[1] ? ", off the CPU" : "");
		return;
	}
	if (!f->diff) {
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

/* The head of the picture: its size, patterns, style, script and texts. */
static void put_head(FILE *out, const struct sp_flame *f, unsigned height)
{
	const struct flame_layout *lo = &f->lo;
	unsigned width = f->o.width;
	const char *title = f->o.title;
	if (!title)
		title = f->diff ? (f->o.inverted ? "Differential Icicle Graph" :
				   "Differential Flame Graph") :
			f->o.inverted ? "Icicle Graph" : "Flame Graph";

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
	fprintf(out, "<style type=\"text/css\">\n%s</style>\n", sp_embed_flame_css);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n"
		"'use strict';\nvar W = %u, XPAD = %d, CHARW = %.4g, TOTAL = %llu, TOTALW = %.17g;\n"
		"%s%s%s]]></script>\n",
		width - 2 * XPAD, XPAD, CHAR_W, (unsigned long long)f->t.node[0].count[1],
		lo->total > 0 ? lo->total : 1, sp_embed_flame_js,
		f->o.self_test ? "\n" : "", f->o.self_test ? sp_embed_flame_selftest_js : "");

	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n",
		width, height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	put_xml(out, title, strlen(title));
	fputs("</text>\n", out);

	/* The subtitle: the diff's legend, and the frames left out. */
	fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"42\">", width / 2);
	if (f->diff)
		fputs("widths after; red grew, blue shrank (share of all samples); "
		      "hatched vanished, drawn as wide as before", out);
	if (f->diff && lo->dropped)
		fputs("; ", out);
	if (lo->dropped)
		fprintf(out, "%llu frame%s narrower than %g px not drawn", lo->dropped,
			plural(lo->dropped), f->minwidth);
	if (lo->total <= 0)
		fputs("no samples", out);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"button\" x=\"%u\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
		XPAD, width - XPAD, XPAD, height - 12, width - XPAD, height - 12);
}

int sp_flame_write(struct sp_flame *f, FILE *out)
{
	const struct flame_layout *lo = &f->lo;
	if (!f->finished) {
		errno = EINVAL;
		return sp_error_set(&f->err, SP_ERR_UNSUPPORTED,
				    "the graph is written after sp_flame_finish()");
	}
	unsigned fw = f->o.width - 2 * XPAD;
	unsigned height = YPAD_TOP + (lo->maxdepth + 1) * FRAME_H + YPAD_BOTTOM;
	put_head(out, f, height);

	fputs("<g id=\"frames\">\n", out);
	double px = fw / (lo->total > 0 ? lo->total : 1);
	char fill[32];
	for (size_t k = 0; k < lo->ndrawn; k++) {
		uint32_t i = lo->drawn[k];
		const struct flame_node *nd = &f->t.node[i];
		double x = XPAD + lo->x[i] * px, w = lo->w[i] * px;
		unsigned y = f->o.inverted ? YPAD_TOP + nd->depth * FRAME_H :
			height - YPAD_BOTTOM - (nd->depth + 1) * FRAME_H;
		frame_color(f, i, fill, sizeof(fill));
		fprintf(out, "<g class=\"%s\" data-x=\"%.17g\" data-w=\"%.17g\" data-d=\"%u\"",
			f->diff && vanished(nd) ? "f v" : "f", lo->x[i], lo->w[i], nd->depth);
		if (f->diff)
			fprintf(out, " data-n=\"%llu\"", (unsigned long long)nd->count[1]);
		fputs("><title>", out);
		put_title(out, f, i);
		fprintf(out, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
			"fill=\"%s\"/><text x=\"%.2f\" y=\"%u\">",
			x, y, w, FRAME_H - 1, fill, x + 3, y + 11);
		put_label(out, f->t.names.str[nd->name], w);
		fputs("</text></g>\n", out);
	}
	fputs("</g>\n</svg>\n", out);
	if (fflush(out) != 0 || ferror(out))
		return sp_error_errno(&f->err, "cannot write the graph");
	return 0;
}
