/* SPDX-License-Identifier: MIT
 * How the files of the parallel driver (parallel.h) divide the work:
 * parallel.c the queue, the threads, the reader's and the writer's
 * loops; pbatch.c the batches' memory and the records copied in;
 * pworker.c a worker's unwinder and its share of the samples; preplay.c
 * the writer stage's engine and the workers' counters merged.  What they
 * share, and who may touch it when, is here.
 */
#ifndef SP_UNWIND_PARALLEL_INT_H
#define SP_UNWIND_PARALLEL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <msgpack.h>

#include "stream/stream.h"
#include "unwind/parallel.h"
#include "unwind/unwind.h"
#include "util/arena.h"

#define SP_PAR_NO_OBJ UINT64_MAX	/* a frame in no mapping */
#define SP_PAR_NO_SAMPLE SIZE_MAX	/* an item that is not a sample */

/* A user frame as a worker unwound it: its object by index (addrspace.h). */
struct sp_pframe {
	uint64_t addr, rel, obj;
	uint32_t flags;
};

/* A sample's user stack: n frames at off in its worker's slot. */
struct sp_presult {
	enum sp_unwind_end end;
	size_t off, n;
	uint64_t used;		/* sp_unwinder_copy_used() after it */
	int copy_status;	/* what sp_ustack_decode() returned */
};

/* A rule cached by a worker: (object index, 0, address) or (pid | JIT, code start, address). */
struct sp_rkey {
	uint64_t a, b, c;
};
#define SP_RKEY_JIT (1ull << 63)

/* A worker's unwinder at a summary record. */
struct sp_census {
	struct sp_unwind_stats st;
	unsigned char *objs;		/* enum sp_object_census by object index */
	size_t nobjs;
	struct sp_rkey *keys;
	size_t nkeys, allockeys;
	char *denied;			/* sp_unwinder_denied(), copied */
	uint32_t denied_pid;
	int denied_err;
};

/* One record of the input, copied with its parsed map into the batch. */
struct sp_item {
	struct sp_record rec;
	struct sp_header hdr;		/* a header record: the segment's header */
	size_t sample;			/* its index among the batch's samples */
};

/* What one worker made of a batch; only that worker writes it. */
struct sp_slot {
	struct sp_pframe *frames;
	size_t nframes, allocframes;
	struct sp_census *census;	/* the batch ends with a summary */
	bool oom;
};

/*
 * Records in input order.  The reader fills it, then it is read-only
 * but for each worker's slot and results (sample i is worker i % jobs's)
 * until pending is 0, under the lock; then the writer's alone.
 */
struct sp_batch {
	struct sp_batch *next;
	uint64_t seq;
	struct sp_arena arena;		/* the records' bytes, maps and stack copies (reset, kept) */
	struct sp_item *items;
	size_t nitems, allocitems;
	size_t nsamples, bytes;
	struct sp_presult *results;
	size_t allocresults;
	struct sp_slot *slots;		/* one per worker */
	unsigned pending;		/* workers yet to go through it */
};


/*
 * pbatch.c: copies a record, its map parsed (hdr: the segment's header,
 * kept with a header record), into b.  Returns 0, or -1 out of memory.
 */
int sp_batch_add(struct sp_batch *b, const struct sp_record *rec, const struct sp_header *hdr);
void sp_batch_free(struct sp_batch *b, unsigned jobs);

/*
 * preplay.c: the writer stage's engine.  Before the stage takes a sample
 * the writer points res and frames at its result; at a summary it merges
 * the workers' census into merged and denied (sp_replay_merge()).
 */
struct sp_replay {
	struct sp_unwind_engine engine;
	const struct sp_presult *res;	/* the sample being written */
	const struct sp_pframe *frames;	/* its worker's frames */
	struct sp_unwind_stats merged;	/* the workers' counters at the summary */
	char *denied;
	uint32_t denied_pid;
	int denied_err;
};

void sp_replay_init(struct sp_replay *r);
void sp_replay_release(struct sp_replay *r);
/* A batch that ends with a summary: every worker's census merged. */
void sp_replay_merge(struct sp_replay *r, struct sp_batch *b, unsigned jobs);

struct sp_pworker;

/* pworker.c: a worker following records of the options o; NULL: out of memory. */
struct sp_pworker *sp_pworker_new(const struct sp_unwind_options *o, unsigned id, unsigned jobs);
void sp_pworker_free(struct sp_pworker *w);

/* Goes through a batch: every record followed, its share of the samples unwound. */
void sp_pworker_batch(struct sp_pworker *w, struct sp_batch *b);

void sp_census_free(struct sp_census *c);

#endif
