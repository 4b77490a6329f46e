/* SPDX-License-Identifier: MIT
 * Flame graphs: folded stacks ("root;...;leaf COUNT" lines, sp-fold's or
 * any stackcollapse tool's, or the "STACK BEFORE AFTER" lines of
 * difffolded.pl) merged into one tree and drawn as one self-contained
 * interactive SVG: a flame graph, an icicle graph, or a differential
 * graph of two profiles.  The picture's script and style sheet are
 * flame.js and flame.css, compiled in.  Core layer: no printing, no exits.
 *
 *	struct sp_flame *f = sp_flame_new(&options);
 *	sp_flame_read(f, fd, name, SP_FLAME_AS_IS, &in);	(each input)
 *	sp_flame_finish(f);
 *	sp_flame_write(f, out);
 *	sp_flame_free(f);
 *
 * Every function that can fail returns 0, or -1 with the reason in
 * sp_flame_error().
 */
#ifndef SP_FOLD_FLAME_H
#define SP_FOLD_FLAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The picture's width in pixels: the default and the limits. */
#define SP_FLAME_DEFAULT_WIDTH 1200
#define SP_FLAME_MIN_WIDTH 100
#define SP_FLAME_MAX_WIDTH 100000
/* The narrowest frame drawn by default, in pixels. */
#define SP_FLAME_DEFAULT_MINWIDTH 0.1

enum sp_flame_colors {
	SP_FLAME_COLORS_DEFAULT,	/* warm colours, chosen by name */
	SP_FLAME_COLORS_KINDS,		/* kernel _[k], JIT _[j], inline _[i], user */
};

struct sp_flame_options {
	const char *title;	/* NULL: named after the kind of graph; else
				   kept until sp_flame_free() */
	unsigned width;		/* pixels; 0 is SP_FLAME_DEFAULT_WIDTH */
	double minwidth;	/* leave out narrower frames: pixels, or, */
	bool minwidth_percent;	/* when this is set, percent of the frames' width */
	enum sp_flame_colors colors;	/* ignored by a differential graph */
	bool inverted;		/* an icicle graph: the root at the top */
	bool reverse;		/* merge each stack leaf first */
	bool self_test;		/* add flame-selftest.js: for the test suite */
};

/*
 * Which counts an input gives.  AS_IS: a file of one count a line gives
 * the samples of a flame graph, one of two counts a line (difffolded.pl)
 * a differential graph by itself.  BEFORE and AFTER: the two sides of a
 * differential graph, each a file of one count a line.
 */
enum sp_flame_side {
	SP_FLAME_AS_IS = -1,
	SP_FLAME_BEFORE = 0,
	SP_FLAME_AFTER = 1,
};

/* What one input held. */
struct sp_flame_input {
	int columns;		/* counts a line: 1 or 2; 0 when no stack */
	unsigned long skipped;	/* malformed lines left out */
	unsigned long first_bad;	/* the number of the first of them */
	const char *why;	/* why it was left out (a static string) */
};

struct sp_flame;

/*
 * A new, empty graph; the options are copied (the title is not: see
 * above).  Returns NULL when memory runs out.
 */
struct sp_flame *sp_flame_new(const struct sp_flame_options *o);

/* Frees the graph and everything it holds; NULL is allowed. */
void sp_flame_free(struct sp_flame *f);

/* The reason for the last failure; valid until the next call. */
const char *sp_flame_error(const struct sp_flame *f);

/*
 * Reads folded stacks from fd to its end and merges them into the graph;
 * name is what the messages call the input.  fd stays open.  Malformed
 * lines are skipped and counted in *in, which is always filled.  Returns
 * 0, or -1: a read error, memory ran out, more frames than the graph can
 * hold, or a file of two counts a line given as BEFORE or AFTER.
 */
int sp_flame_read(struct sp_flame *f, int fd, const char *name, enum sp_flame_side side,
		  struct sp_flame_input *in);

/*
 * Ends the input and lays the picture out.  Returns 0, or -1 when
 * inputs of one count a line and of two were mixed, or memory ran out.
 */
int sp_flame_finish(struct sp_flame *f);

/* Whether the inputs held no samples at all (an empty picture). */
bool sp_flame_empty(const struct sp_flame *f);

/*
 * Writes the SVG after sp_flame_finish().  Returns 0, or -1 with errno
 * set when out had an error (EPIPE when its reader went away).
 */
int sp_flame_write(struct sp_flame *f, FILE *out);

#endif
