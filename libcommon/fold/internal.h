/* SPDX-License-Identifier: MIT
 * The insides of a folding handle, shared by the files of the fold layer:
 * fold.c reads records and keeps the current segment's definitions,
 * aggregate.c keeps the tables of display frames, stacks, threads and
 * counts that outlive segments, filter.c decides which samples count,
 * names.c spells names for the outputs, and folded.c writes the folded
 * text and hands the exporters their view.
 * Not for tools: they use fold.h.
 */
#ifndef SP_FOLD_INTERNAL_H
#define SP_FOLD_INTERNAL_H

#include "fold/fold.h"
#include "stream/vocab.h"
#include "util/error.h"
#include "util/hashmap.h"
#include "util/strbuf.h"

/* A frame record of the current segment: its display frames in seg_disp. */
struct segframe {
	uint32_t off, n;	/* root first */
	bool defined;
};

/* A module record of the current segment. */
struct segmod {
	char *path;
	unsigned char bid[64];
	int bidlen;
	bool defined;
};

/* A map record of the current segment (with locations). */
struct segmap {
	uint64_t start, len, pgoff;
	char *path;
	unsigned char bid[64];
	int bidlen;
};

/* A thread as the output names it: the same tid under a new name is another. */
struct fold_thread {
	uint32_t pid, tid;
	const char *comm, *thread_comm;	/* kept strings */
	struct sp_fold_sample *seq;	/* speedscope and firefox only */
	size_t nseq, allocseq;
	uint64_t names_gen;		/* the names it was last found under */
};

struct sp_fold {
	struct sp_fold_options o;
	struct sp_error err;

	/*
	 * What outlives a segment (aggregate.c).  Every array grows with
	 * SP_ALLOC_GROW and keeps its pointer when a growth fails.  A stack's
	 * frames live in arena from stack_off[k]; stacks[k].frames is set
	 * only by the view, since arena moves as it grows.
	 */
	struct sp_fold_frame *frames;
	size_t nframes, allocframes;
	struct sp_hashmap frame_map;	/* of struct frame_ent */
	struct sp_fold_stack *stacks;
	size_t nstacks, allocstacks;
	size_t *stack_off;
	size_t alloc_stack_off;
	uint32_t *arena;
	size_t narena, allocarena;
	struct sp_hashmap stack_map;	/* of struct stack_ent */
	struct fold_thread *threads;
	size_t nthreads, allocthreads;
	struct sp_u64map thread_map;	/* pid << 32 | tid -> latest index + 1 */
	struct sp_fold_count *counts;
	size_t ncounts, alloccounts;
	uint64_t *shown;		/* weight of counts[i] written by sp_fold_write_new() */
	size_t allocshown;
	struct sp_u64map count_map;	/* thread << 32 | stack -> index + 1 */
	char **strings;			/* every kept string, freed at the end */
	size_t nstrings, allocstrings;

	/* The current segment (fold.c); ids index these arrays. */
	enum sp_stage stage;
	struct segframe *segframes;
	size_t nsegframes, allocsegframes;
	uint32_t *seg_disp;
	size_t nseg_disp, allocseg_disp;
	uint32_t *symstacks;		/* symstack/stack id -> global stack + 1 */
	size_t nsymstacks, allocsymstacks;
	struct segmod *mods;
	size_t nmods, allocmods;
	struct sp_u64map procs;		/* pid -> process name (malloc'd) */
	struct sp_u64map tcomms;	/* tid -> thread name (malloc'd) */
	struct sp_u64map kthreads;	/* pid -> a marker: the kernel threads */
	uint64_t names_gen;		/* changes with every name above */
	uint32_t *scratch;		/* one stack being read, root first */
	size_t nscratch, allocscratch;
	uint64_t seg_start;		/* stream clock of the recording's start */
	bool have_start;
	uint64_t anchor_clock, anchor_real;

	char **evnames;			/* the header's events (malloc'd) */
	size_t nevnames;
	long ev_picked;			/* the index of the event folded; -1: none */
	long ev_off_cpu;		/* the index of "off-cpu"; -1: none */
	/* With locations: the segment's map records, and every mapping a frame lies in. */
	struct segmap *segmaps;
	size_t nsegmaps, allocsegmaps;
	struct sp_fold_mapping *mappings;
	size_t nmappings, allocmappings;
	struct sp_u64map off_stacks;	/* stack << 1 | preempted -> its off-CPU stack + 1 */

	bool filtered, windowed;	/* the options filter by who, by time */
	uint64_t first_ns, last_ns, period_sum, period_n;
	bool any_sample;
	uint64_t wall_start;

	struct sp_fold_mark *marks;	/* firefox only (fold.c) */
	size_t nmarks, allocmarks;
	uint64_t prev_time;		/* of the last sample read, any event */
	bool have_prev;
};

/* aggregate.c */

/* Records running out of memory on f; returns -1. */
int fold_nomem(struct sp_fold *f);

/* A copy of s[0..n) (NUL added) that lives as long as f; NULL: out of memory. */
char *fold_keep(struct sp_fold *f, const char *s, size_t n);

/*
 * The index of the display frame equal to proto (same name, kind and
 * inlinedness), added with copies of its strings when new.  Returns 0, or
 * -1 with f's error set.
 */
int fold_frame(struct sp_fold *f, const struct sp_fold_frame *proto, uint32_t *out);

/* The index of the stack v[0..n) (display frames, root first), added when new. */
int fold_stack(struct sp_fold *f, const uint32_t *v, size_t n, uint32_t *out);

/* The index of the thread (pid, tid) under the process name comm. */
int fold_thread(struct sp_fold *f, uint32_t pid, uint32_t tid, const char *comm,
		const char *thread_comm, uint32_t *out);

/*
 * The thread of the last sample of (pid, tid) when no name has changed
 * since: the per-sample fast path, without name lookups.  A sample of a
 * thread found this way has passed the filters before.
 */
static inline bool fold_thread_cached(const struct sp_fold *f, uint32_t pid, uint32_t tid,
				      uint32_t *out)
{
	uintptr_t hit = (uintptr_t)sp_u64map_get(&f->thread_map, (uint64_t)pid << 32 | tid);
	if (!hit || f->threads[hit - 1].names_gen != f->names_gen)
		return false;
	*out = (uint32_t)(hit - 1);
	return true;
}

/* Counts one sample of stack k in thread t. */
int fold_count(struct sp_fold *f, uint32_t t, uint32_t k, uint64_t period, uint64_t time);

/* Sets up and frees the tables above. */
void fold_tables_init(struct sp_fold *f);
void fold_tables_release(struct sp_fold *f);

/* names.c */

/*
 * A name as a folded line shows it, into buf (len > 8): ';' becomes ':'
 * (it separates frames), cut to fit, suffix appended.
 */
void fold_shown_name(char *buf, size_t len, const char *name, size_t n, const char *suffix);

/* filter.c: whether the options keep a sample of this process and thread. */
bool fold_wanted(const struct sp_fold *f, uint64_t pid, uint64_t tid, const char *comm);

/* Whether the options keep a sample at time ns on the stream's clock. */
bool fold_in_range(const struct sp_fold *f, uint64_t ns);

#endif
