/* SPDX-License-Identifier: MIT
 * A raw sample's keys that unwinding consumes, read in one pass over the
 * pairs the reader found (sp_reader_undecoded()) or over its bytes: the
 * stage and the parallel driver's workers read samples the same way.
 */
#ifndef SP_UNWIND_RAWSAMPLE_H
#define SP_UNWIND_RAWSAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/rawmap.h"

struct sp_record;
struct sp_mapw;

#define SP_RAW_SAMPLE_KEYS(X) X(T, "t") X(PID, "pid") X(TID, "tid") X(TIME, "time") \
	X(CPU, "cpu") X(PERIOD, "period") X(ABI, "abi") X(REGS, "regs") X(USTACK, "ustack") \
	X(USTACK_SHARED, "ustack_shared") X(USTACK_FULL, "ustack_full") X(KSTACK, "kstack") \
	X(UCHAIN, "uchain") X(UCHAIN_FULL, "uchain_full") X(STACK, "stack")
enum sp_rawkey {
#define SP_RK_ENUM(e, s) RK_##e,
	SP_RAW_SAMPLE_KEYS(SP_RK_ENUM)
#undef SP_RK_ENUM
	RK_COUNT
};

/* A raw sample's values by key: kind SP_RAW_NONE for a key it lacks. */
#define SP_RAW_OTHERS 16
struct sp_raw_sample {
	struct sp_rawval v[RK_COUNT];
	/* The pairs passed on as they are (all of them unless many_others). */
	struct { const unsigned char *p; size_t len; } others[SP_RAW_OTHERS];
	unsigned nothers;
	bool many_others;
	const void *raw;
	size_t len;
};

/*
 * Reads a sample: each key's first value, as sp_map_get() finds it, and
 * where the other keys are.  False only when its bytes are not a map
 * (the reader framed and checked them).
 */
bool sp_raw_sample_read(const struct sp_record *rec, struct sp_raw_sample *rs);

/* Writes the sample's pairs of keys unwinding does not consume, as they are. */
void sp_raw_sample_others(const struct sp_raw_sample *rs, struct sp_mapw *out);

static inline bool sp_rs_u64(const struct sp_raw_sample *rs, enum sp_rawkey k, uint64_t *out)
{
	if (rs->v[k].kind != SP_RAW_UINT)
		return false;
	*out = rs->v[k].u;
	return true;
}

static inline bool sp_rs_bool(const struct sp_raw_sample *rs, enum sp_rawkey k)
{
	return rs->v[k].kind == SP_RAW_BOOL && rs->v[k].u;
}

/* The elements of an array key, or 0 when the sample lacks it. */
static inline uint64_t sp_rs_count(const struct sp_raw_sample *rs, enum sp_rawkey k)
{
	return rs->v[k].kind == SP_RAW_ARRAY ? rs->v[k].u : 0;
}

/* The bytes of the stack copy (ustack), or none. */
static inline const void *sp_rs_ustack(const struct sp_raw_sample *rs, size_t *len)
{
	*len = rs->v[RK_USTACK].kind == SP_RAW_BIN ? (size_t)rs->v[RK_USTACK].u : 0;
	return *len ? rs->v[RK_USTACK].p : NULL;
}

#endif
