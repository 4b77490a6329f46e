/* SPDX-License-Identifier: MIT
 * The inside of a flame graph (flame.h), shared by flame_tree.c (the
 * merged tree and the reading of folded text) and flame.c (the layout
 * and the SVG).  Not part of the library's interface.
 */
#ifndef SP_FOLD_FLAME_INTERNAL_H
#define SP_FOLD_FLAME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fold/flame.h"
#include "fold/fold.h"
#include "util/error.h"
#include "util/hashmap.h"
#include "util/strbuf.h"

/*
 * The largest count of one line, and of all lines together: sample
 * counts stay exact in the doubles that lay the picture out.
 */
#define SP_FLAME_MAX_COUNT ((1ull << 53) - 1)

/*
 * Frame names, each stored once, as valid UTF-8 without control
 * characters so that any of them may go into XML.  Name 0 is "all".
 */
struct flame_names {
	struct sp_hashmap map;	/* of struct flame_name (flame_tree.c) */
	char **str;		/* by number; owned by the map's entries */
	uint32_t n;
	size_t alloc;
	uint32_t *rank;		/* each name's place in byte order */
};

/* A frame of the merged tree; node 0 is the root, "all". */
struct flame_node {
	uint64_t count[2];	/* samples before and after; after alone if not a diff */
	uint64_t off;		/* of count[1], stacks ending in [off-cpu] or [preempted] */
	uint32_t parent, name, depth;
};

/* A line's frames, pointing into the input, and the nodes they led to. */
struct flame_frame {
	const char *p;
	size_t len;
	uint32_t node;
};

struct flame_tree {
	struct flame_node *node;	/* parents before their children */
	uint32_t n;
	size_t alloc;
	/* Each node's children: key parent << 32 | name, value node + 1. */
	struct sp_u64map children;
	struct flame_names names;
	/* Children in name order: child[start[i]] to child[start[i + 1]]. */
	uint32_t *start, *child;
	/*
	 * The frames of the line being added, and the previous line's:
	 * sorted input shares long prefixes, which then cost a memcmp() each.
	 */
	struct flame_frame *frames, *prev;
	size_t nprev, alloc_frames, alloc_prev;
	struct sp_buf clean;	/* a name made fit for XML */
};

/* Where each frame goes: the layout in samples, and the frames drawn. */
struct flame_layout {
	double *w, *x;		/* each node's width and start, in samples */
	double total;		/* the root's width */
	uint32_t *drawn;	/* the nodes drawn, parents before children */
	size_t ndrawn;
	uint32_t maxdepth;
	unsigned long long dropped;	/* frames narrower than the minimum */
	double maxdelta;	/* the largest change of a frame's share */
};

struct sp_flame {
	struct sp_flame_options o;
	double minwidth;	/* pixels */
	struct flame_tree t;
	struct flame_layout lo;
	bool diff;		/* a differential graph */
	bool one, two;		/* inputs of one count a line, of two */
	bool finished;
	struct sp_error err;
};

/* Both return 0, or -1 with errno ENOMEM. */
int sp_flame_tree_init(struct flame_tree *t);
/* Lists every node's children in byte order of their names. */
int sp_flame_tree_finish(struct flame_tree *t);
void sp_flame_tree_release(struct flame_tree *t);

#endif
