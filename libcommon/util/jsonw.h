/* SPDX-License-Identifier: MIT
 * A JSON writer over a struct sp_buf, in the manner of git's
 * json-writer.h: the caller says what comes (object, key, value) and the
 * writer puts the commas, quotes and escapes.  Strings go through
 * sp_json_escape(), so the output is valid JSON whatever bytes they hold.
 * No library is used: Debian's JSON libraries (json-c, jansson) build a
 * tree of the whole document before writing it, where these writers
 * stream millions of records; they also reject the invalid UTF-8 that
 * names in a stream may hold, which this one escapes the way sp-cat's
 * JSON rendering defines.
 *
 * Invariants: begin/end calls nest properly (at most SP_JW_MAX_DEPTH
 * deep); inside an object every value follows a key.  The writer does
 * not check them: a mistake gives malformed JSON, not a crash.
 */
#ifndef SP_UTIL_JSONW_H
#define SP_UTIL_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

#define SP_JW_MAX_DEPTH 64

struct sp_jw {
	struct sp_buf *b;
	int depth;
	bool need_comma[SP_JW_MAX_DEPTH + 1];
	bool after_key;
};

/* Starts writing into b (not owned, appended to). */
void sp_jw_init(struct sp_jw *j, struct sp_buf *b);

void sp_jw_object_begin(struct sp_jw *j);
void sp_jw_object_end(struct sp_jw *j);
void sp_jw_array_begin(struct sp_jw *j);
void sp_jw_array_end(struct sp_jw *j);
void sp_jw_key(struct sp_jw *j, const char *key);

void sp_jw_str(struct sp_jw *j, const char *s);
void sp_jw_strn(struct sp_jw *j, const char *s, size_t n);
void sp_jw_u64(struct sp_jw *j, uint64_t v);
void sp_jw_i64(struct sp_jw *j, int64_t v);
/* A finite double in the shortest form that reads back the same; null otherwise. */
void sp_jw_double(struct sp_jw *j, double v);
void sp_jw_bool(struct sp_jw *j, bool v);
void sp_jw_null(struct sp_jw *j);
/* Appends text that is already JSON, as one value. */
void sp_jw_raw(struct sp_jw *j, const char *json, size_t n);

/* A key and its value. */
void sp_jw_kv_str(struct sp_jw *j, const char *key, const char *s);
void sp_jw_kv_u64(struct sp_jw *j, const char *key, uint64_t v);
void sp_jw_kv_i64(struct sp_jw *j, const char *key, int64_t v);
void sp_jw_kv_double(struct sp_jw *j, const char *key, double v);
void sp_jw_kv_bool(struct sp_jw *j, const char *key, bool v);

#endif
