/* SPDX-License-Identifier: MIT
 * JIT names from the jitdump records of a stream: one reader per
 * process and file, fed the records' bytes in stream order, and per
 * process the code its loads and moves describe so far, with the line
 * tables of its debug-info records.  The stream alone suffices: the file
 * itself is never opened.
 */
#ifndef SP_SYM_JITDUMP_H
#define SP_SYM_JITDUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "stream/stream.h"
#include "sym/perfmaps.h"

struct sp_jitdumps;

/* A table for a stream's jitdump records; NULL when memory runs out. */
struct sp_jitdumps *sp_jitdumps_new(sp_sym_warn_fn *warn, void *warn_arg);
void sp_jitdumps_free(struct sp_jitdumps *jd);

/*
 * The end of a segment: a file whose last record was cut short is warned
 * about, once.
 */
void sp_jitdumps_end(struct sp_jitdumps *jd);

/* A new segment: sp_jitdumps_end(), then what the records said is forgotten. */
void sp_jitdumps_reset(struct sp_jitdumps *jd);

/*
 * A jitdump record: its bytes go to the reader of its pid and path, and
 * the records they complete are applied.  A gap in a file, or bytes that
 * are not a jitdump, are warned about once (naming the file offset) and
 * the file's later records ignored; what was applied before stays.
 * Returns 0, or -1 when memory runs out.
 */
int sp_jitdumps_note(struct sp_jitdumps *jd, const struct sp_record *rec);

/* How many times pid's code loads and moves have changed: a name holds for one. */
unsigned sp_jitdumps_generation(const struct sp_jitdumps *jd, uint32_t pid);

/* What names an address; the pointers stay valid until the next note. */
struct sp_jitdump_sym {
	const char *name;
	uint64_t start;		/* of the code */
	const char *file;	/* NULL when no debug-info line covers it */
	unsigned line;
};

/* Names addr of pid's JIT code into *out; false when no code load covers it. */
bool sp_jitdumps_find(struct sp_jitdumps *jd, uint32_t pid, uint64_t addr,
		      struct sp_jitdump_sym *out);

#endif
