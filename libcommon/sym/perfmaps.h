/* SPDX-License-Identifier: MIT
 * The perf maps of a stream's processes (perf-PID.map, written by JIT
 * runtimes), and the rules for trusting one: a map is read only through
 * a descriptor that was checked to be a regular file, not reached
 * through a symlink, not writable by every user, and owned by root or by
 * the recorded process's user (or, for a map kept in an archive, by
 * whoever copied it there); --force-perf-maps waives the owner checks.
 * A map that grows while a stream is read is read again.
 */
#ifndef SP_SYM_PERFMAPS_H
#define SP_SYM_PERFMAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "stream/stream.h"
#include "sym/search.h"
#include "sym/symtab.h"

/* Called with a warning the caller may show (e.g. a map refused). */
typedef void sp_sym_warn_fn(void *arg, const char *msg);

struct sp_perfmaps;

/*
 * A table of the perf maps of s (which must outlive it).  warn (may be
 * NULL) hears why a map was refused.  Returns NULL when memory runs out.
 */
struct sp_perfmaps *sp_perfmaps_new(const struct sp_sym_search *s, sp_sym_warn_fn *warn,
				    void *warn_arg);
void sp_perfmaps_free(struct sp_perfmaps *pm);

/*
 * Learns from a record what the rules need: a process's user and start
 * (process and fork records), whether it runs CPython (runtime records).
 * Other records are ignored.  Returns 0, or -1 when memory runs out.
 */
int sp_perfmaps_note(struct sp_perfmaps *pm, const struct sp_record *rec);

/* A new segment: what was learnt of its processes is forgotten; maps stay. */
void sp_perfmaps_reset(struct sp_perfmaps *pm);

/*
 * The symbol of pid's perf map containing addr, or NULL: when perf maps
 * of pid are not wanted, its map is missing or refused, or no line
 * covers addr even after reading a grown map again.  The symbol stays
 * valid until the map is read again (see sp_perfmaps_generation()).
 */
const struct sp_sym *sp_perfmaps_find(struct sp_perfmaps *pm, uint32_t pid, uint64_t addr);

/* How many times pid's map has been read: a name holds for one generation. */
unsigned sp_perfmaps_generation(const struct sp_perfmaps *pm, uint32_t pid);

struct sp_perfmaps_stats {
	uint64_t loaded, refused, lines_skipped;
};

void sp_perfmaps_stats(const struct sp_perfmaps *pm, struct sp_perfmaps_stats *st);

#endif
