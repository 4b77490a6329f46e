/* SPDX-License-Identifier: MIT
 * Record types, their keys, and typed access to a record's values.
 *
 * SP_RECORD_TYPES and SP_RECORD_KEYS are the format's schema in one
 * place: the reader validates against them and a test checks that
 * format/sp-stream.md documents every entry with the same type and
 * requirement.  A new key is one line here and one table row there.
 */
#ifndef SP_RECORD_H
#define SP_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <msgpack.h>

#include "stream/vocab.h"

/* X(enum suffix, name in the stream) */
#define SP_RECORD_TYPES(X) \
	X(HEADER, "header") \
	X(PROCESS, "process") \
	X(THREAD, "thread") \
	X(COMM, "comm") \
	X(EXEC, "exec") \
	X(MAP, "map") \
	X(FORK, "fork") \
	X(EXIT, "exit") \
	X(RUNTIME, "runtime") \
	X(SAMPLE, "sample") \
	X(LOST, "lost") \
	X(THROTTLE, "throttle") \
	X(UNTHROTTLE, "unthrottle") \
	X(MODULE, "module") \
	X(STACK, "stack") \
	X(FRAME, "frame") \
	X(SYMSTACK, "symstack") \
	X(SUMMARY, "summary") \
	X(UNWIND, "unwind") \
	X(SYMBOLIZE, "symbolize") \
	X(ARCHIVE, "archive") \
	X(IMAGE, "image") \
	X(JITDUMP, "jitdump")

enum sp_rtype {
	SP_R_UNKNOWN = 0,
#define SP_X_ENUM(e, s) SP_R_##e,
	SP_RECORD_TYPES(SP_X_ENUM)
#undef SP_X_ENUM
	SP_R_COUNT
};

/* MessagePack value classes a key may hold. */
enum sp_vtype {
	SP_V_UINT,	/* non-negative integer */
	SP_V_INT,	/* any integer */
	SP_V_STR,
	SP_V_BIN,
	SP_V_BOOL,
	SP_V_ARRAY,
	SP_V_MAP,
	SP_V_UINT_OR_NIL,
};

#define SP_REQ 1
#define SP_OPT 0

/*
 * X(record enum suffix, key, value class, SP_REQ or SP_OPT).
 * Keys common to many records ("time", "pid") are listed per record.
 */
#define SP_RECORD_KEYS(X) \
	X(HEADER, "format", STR, SP_REQ) \
	X(HEADER, "version", ARRAY, SP_REQ) \
	X(HEADER, "stage", STR, SP_REQ) \
	X(HEADER, "tools", ARRAY, SP_REQ) \
	X(HEADER, "host", MAP, SP_REQ) \
	X(HEADER, "options", MAP, SP_OPT) \
	X(HEADER, "kernel_enabled", BOOL, SP_OPT) \
	X(HEADER, "reg_names", ARRAY, SP_OPT) \
	X(HEADER, "start_timestamp_us", UINT, SP_OPT) \
	X(HEADER, "sample_interval_us", UINT, SP_OPT) \
	X(HEADER, "events", ARRAY, SP_OPT) \
	X(PROCESS, "pid", UINT, SP_REQ) \
	X(PROCESS, "ppid", UINT, SP_OPT) \
	X(PROCESS, "start_time", UINT, SP_OPT) \
	X(PROCESS, "exe", STR, SP_OPT) \
	X(PROCESS, "comm", STR, SP_OPT) \
	X(PROCESS, "cmdline", ARRAY, SP_OPT) \
	X(PROCESS, "uid", UINT, SP_OPT) \
	X(PROCESS, "time", UINT, SP_OPT) \
	X(PROCESS, "nspid", UINT, SP_OPT) \
	X(PROCESS, "mntns", UINT, SP_OPT) \
	X(PROCESS, "kernel_thread", BOOL, SP_OPT) \
	X(THREAD, "pid", UINT, SP_REQ) \
	X(THREAD, "tid", UINT, SP_REQ) \
	X(THREAD, "comm", STR, SP_OPT) \
	X(THREAD, "time", UINT, SP_OPT) \
	X(COMM, "pid", UINT, SP_REQ) \
	X(COMM, "tid", UINT, SP_REQ) \
	X(COMM, "comm", STR, SP_REQ) \
	X(COMM, "time", UINT, SP_OPT) \
	X(EXEC, "pid", UINT, SP_REQ) \
	X(EXEC, "tid", UINT, SP_REQ) \
	X(EXEC, "comm", STR, SP_REQ) \
	X(EXEC, "exe", STR, SP_OPT) \
	X(EXEC, "time", UINT, SP_OPT) \
	X(MAP, "pid", UINT, SP_REQ) \
	X(MAP, "start", UINT, SP_REQ) \
	X(MAP, "len", UINT, SP_REQ) \
	X(MAP, "pgoff", UINT, SP_REQ) \
	X(MAP, "path", STR, SP_REQ) \
	X(MAP, "tid", UINT, SP_OPT) \
	X(MAP, "time", UINT, SP_OPT) \
	X(MAP, "maj", UINT, SP_OPT) \
	X(MAP, "min", UINT, SP_OPT) \
	X(MAP, "ino", UINT, SP_OPT) \
	X(MAP, "prot", UINT, SP_OPT) \
	X(MAP, "flags", UINT, SP_OPT) \
	X(MAP, "build_id", BIN, SP_OPT) \
	X(MAP, "deleted", BOOL, SP_OPT) \
	X(MAP, "content_id", BIN, SP_OPT) \
	X(FORK, "pid", UINT, SP_REQ) \
	X(FORK, "ppid", UINT, SP_REQ) \
	X(FORK, "tid", UINT, SP_REQ) \
	X(FORK, "ptid", UINT, SP_REQ) \
	X(FORK, "time", UINT, SP_OPT) \
	X(EXIT, "pid", UINT, SP_REQ) \
	X(EXIT, "ppid", UINT, SP_REQ) \
	X(EXIT, "tid", UINT, SP_REQ) \
	X(EXIT, "ptid", UINT, SP_REQ) \
	X(EXIT, "time", UINT, SP_OPT) \
	X(EXIT, "ustack_reset", BOOL, SP_OPT) \
	X(RUNTIME, "pid", UINT, SP_REQ) \
	X(RUNTIME, "cpython", BOOL, SP_REQ) \
	X(RUNTIME, "time", UINT, SP_OPT) \
	X(RUNTIME, "via", STR, SP_OPT) \
	X(IMAGE, "path", STR, SP_REQ) \
	X(IMAGE, "build_id", BIN, SP_REQ) \
	X(IMAGE, "data", BIN, SP_REQ) \
	X(IMAGE, "pid", UINT, SP_OPT) \
	X(IMAGE, "time", UINT, SP_OPT) \
	X(JITDUMP, "pid", UINT, SP_REQ) \
	X(JITDUMP, "path", STR, SP_REQ) \
	X(JITDUMP, "off", UINT, SP_REQ) \
	X(JITDUMP, "data", BIN, SP_REQ) \
	X(JITDUMP, "time", UINT, SP_OPT) \
	X(SAMPLE, "pid", UINT, SP_REQ) \
	X(SAMPLE, "tid", UINT, SP_REQ) \
	X(SAMPLE, "time", UINT, SP_REQ) \
	X(SAMPLE, "cpu", UINT, SP_OPT) \
	X(SAMPLE, "period", UINT, SP_OPT) \
	X(SAMPLE, "abi", UINT, SP_OPT) \
	X(SAMPLE, "regs", ARRAY, SP_OPT) \
	X(SAMPLE, "ustack", BIN, SP_OPT) \
	X(SAMPLE, "ustack_shared", UINT, SP_OPT) \
	X(SAMPLE, "ustack_full", BOOL, SP_OPT) \
	X(SAMPLE, "kstack", ARRAY, SP_OPT) \
	X(SAMPLE, "uchain", ARRAY, SP_OPT) \
	X(SAMPLE, "uchain_full", BOOL, SP_OPT) \
	X(SAMPLE, "stack", UINT, SP_OPT) \
	X(SAMPLE, "event", UINT, SP_OPT) \
	X(SAMPLE, "preempted", BOOL, SP_OPT) \
	X(LOST, "lost", UINT, SP_REQ) \
	X(LOST, "kind", STR, SP_OPT) \
	X(LOST, "time", UINT, SP_OPT) \
	X(LOST, "cpu", UINT, SP_OPT) \
	X(THROTTLE, "time", UINT, SP_OPT) \
	X(THROTTLE, "cpu", UINT, SP_OPT) \
	X(UNTHROTTLE, "time", UINT, SP_OPT) \
	X(UNTHROTTLE, "cpu", UINT, SP_OPT) \
	X(MODULE, "id", UINT, SP_REQ) \
	X(MODULE, "path", STR, SP_REQ) \
	X(MODULE, "kind", STR, SP_OPT) \
	X(MODULE, "build_id", BIN, SP_OPT) \
	X(MODULE, "pid", UINT, SP_OPT) \
	X(MODULE, "content_id", BIN, SP_OPT) \
	X(STACK, "id", UINT, SP_REQ) \
	X(STACK, "frames", ARRAY, SP_REQ) \
	X(FRAME, "id", UINT, SP_REQ) \
	X(FRAME, "addr", UINT, SP_REQ) \
	X(FRAME, "origin", STR, SP_REQ) \
	X(FRAME, "name", STR, SP_OPT) \
	X(FRAME, "module", UINT, SP_OPT) \
	X(FRAME, "rel", UINT, SP_OPT) \
	X(FRAME, "offset", UINT, SP_OPT) \
	X(FRAME, "file", STR, SP_OPT) \
	X(FRAME, "line", UINT, SP_OPT) \
	X(FRAME, "inline", ARRAY, SP_OPT) \
	X(FRAME, "flags", UINT, SP_OPT) \
	X(SYMSTACK, "id", UINT, SP_REQ) \
	X(SYMSTACK, "frames", ARRAY, SP_REQ) \
	X(SUMMARY, "sample_events", UINT, SP_REQ) \
	X(SUMMARY, "samples", UINT, SP_REQ) \
	X(SUMMARY, "lost_events", UINT, SP_REQ) \
	X(SUMMARY, "empty_stack_samples", UINT, SP_REQ) \
	X(SUMMARY, "truncated_frame_markers", UINT, SP_REQ) \
	X(SUMMARY, "ignored_user_callchain_frames", UINT, SP_REQ) \
	X(SUMMARY, "kernel_enabled", BOOL, SP_REQ) \
	X(SUMMARY, "error_stats", ARRAY, SP_REQ) \
	X(SUMMARY, "skipped_no_pid", UINT, SP_REQ) \
	X(SUMMARY, "skipped_no_tid", UINT, SP_REQ) \
	X(SUMMARY, "skipped_no_time", UINT, SP_REQ) \
	X(SUMMARY, "skipped_no_frames", UINT, SP_REQ) \
	X(SUMMARY, "lost_samples", UINT, SP_OPT) \
	X(SUMMARY, "throttle_events", UINT, SP_OPT) \
	X(SUMMARY, "processes", UINT, SP_OPT) \
	X(SUMMARY, "threads", UINT, SP_OPT) \
	X(SUMMARY, "duration_ns", UINT, SP_OPT) \
	X(SUMMARY, "time", UINT, SP_OPT) \
	X(SUMMARY, "command_status", INT, SP_OPT) \
	X(SUMMARY, "off_cpu_intervals", UINT, SP_OPT) \
	X(SUMMARY, "off_cpu_no_stack", UINT, SP_OPT) \
	X(SUMMARY, "stack_size_chosen", UINT, SP_OPT) \
	X(SUMMARY, "stack_calibration_stacks", UINT, SP_OPT) \
	X(UNWIND, "samples", UINT, SP_REQ) \
	X(UNWIND, "user_samples", UINT, SP_REQ) \
	X(UNWIND, "complete", UINT, SP_REQ) \
	X(UNWIND, "frames", UINT, SP_REQ) \
	X(UNWIND, "ends", ARRAY, SP_REQ) \
	X(UNWIND, "stacks", UINT, SP_OPT) \
	X(UNWIND, "modules", UINT, SP_OPT) \
	X(UNWIND, "bad_shared_copies", UINT, SP_OPT) \
	X(UNWIND, "cache_hits", UINT, SP_OPT) \
	X(UNWIND, "cache_misses", UINT, SP_OPT) \
	X(UNWIND, "fp_frames", UINT, SP_OPT) \
	X(UNWIND, "scan_frames", UINT, SP_OPT) \
	X(UNWIND, "modules_opened", UINT, SP_OPT) \
	X(UNWIND, "modules_missing", UINT, SP_OPT) \
	X(UNWIND, "modules_mismatched", UINT, SP_OPT) \
	X(UNWIND, "max_depth_full", UINT, SP_OPT) \
	X(UNWIND, "engine", STR, SP_OPT) \
	X(UNWIND, "copy_used_stacks", UINT, SP_OPT) \
	X(UNWIND, "copy_used_p50", UINT, SP_OPT) \
	X(UNWIND, "copy_used_p995", UINT, SP_OPT) \
	X(UNWIND, "copy_used_max", UINT, SP_OPT) \
	X(SYMBOLIZE, "frames", UINT, SP_REQ) \
	X(SYMBOLIZE, "origins", MAP, SP_REQ) \
	X(SYMBOLIZE, "address_only", UINT, SP_REQ) \
	X(SYMBOLIZE, "modules_missing", UINT, SP_OPT) \
	X(SYMBOLIZE, "modules_mismatched", UINT, SP_OPT) \
	X(SYMBOLIZE, "debuginfo_modules", UINT, SP_OPT) \
	X(SYMBOLIZE, "perf_maps_loaded", UINT, SP_OPT) \
	X(SYMBOLIZE, "perf_maps_refused", UINT, SP_OPT) \
	X(SYMBOLIZE, "perf_map_lines_skipped", UINT, SP_OPT) \
	X(SYMBOLIZE, "kallsyms", STR, SP_OPT) \
	X(ARCHIVE, "kind", STR, SP_REQ) \
	X(ARCHIVE, "file", STR, SP_REQ) \
	X(ARCHIVE, "path", STR, SP_OPT) \
	X(ARCHIVE, "build_id", BIN, SP_OPT) \
	X(ARCHIVE, "content_id", BIN, SP_OPT) \
	X(ARCHIVE, "debug", BOOL, SP_OPT) \
	X(ARCHIVE, "pid", UINT, SP_OPT) \
	X(ARCHIVE, "start_time", UINT, SP_OPT)



/* A parsed header record. */
struct sp_header {
	unsigned major, minor;
	enum sp_stage stage;
	const msgpack_object *map;	/* the whole header record */
};


/* Returns the record type for a name, or SP_R_UNKNOWN. */
enum sp_rtype sp_rtype_from_name(const char *name, size_t len);
const char *sp_rtype_name(enum sp_rtype t);

/*
 * Checks a record of a known type for its required keys and the value
 * class of every key it knows.  Returns 0, or -1 with a static text
 * naming the key in *why (and the key in *key).
 */
int sp_record_validate(enum sp_rtype t, const msgpack_object *map,
		       const char **why, const char **key);

/*
 * The index of key among type t's keys in the schema, as the pairs of a
 * record read undecoded name it (struct sp_rawpair's id): SP_KEY_TYPE
 * for "t", SP_KEY_OTHER for a key the schema does not give t.
 */
int sp_record_key_index(enum sp_rtype t, const char *key);

/*
 * Reads the record of type t that starts at p, within len bytes, from
 * its bytes: its pairs into pairs (at most max), each with its key's
 * index in the schema, their count into *npairs.  Returns the record's
 * length when it is whole and plainly passes sp_record_validate() (each
 * key it knows at most once and of its class, every required one there);
 * 0 otherwise, also when unsure: then framing and decoding the record
 * tells what is wrong, if anything.
 */
struct sp_rawpair;
size_t sp_record_scan_raw(enum sp_rtype t, const void *p, size_t len,
			  struct sp_rawpair *pairs, uint32_t max, uint32_t *npairs);

/*
 * The same read without its fast path for records whose keys come in the
 * schema's order: the reference that path must agree with (fuzz-reader
 * compares them).
 */
size_t sp_record_scan_general(enum sp_rtype t, const void *p, size_t len,
			      struct sp_rawpair *pairs, uint32_t max, uint32_t *npairs);

/* The schema as a table, for documentation checks. */
struct sp_key_schema {
	enum sp_rtype type;
	const char *key;
	enum sp_vtype vtype;
	int required;
};
extern const struct sp_key_schema sp_key_schema[];
extern const size_t sp_key_schema_len;
const char *sp_vtype_name(enum sp_vtype v);

/*
 * Typed access to a map.  Each returns true and stores the value when
 * key is present with a matching type; pointers point into the record
 * and share its lifetime.  Strings are not NUL-terminated.
 */
const msgpack_object *sp_map_get(const msgpack_object *map, const char *key);
bool sp_map_u64(const msgpack_object *map, const char *key, uint64_t *out);
bool sp_map_i64(const msgpack_object *map, const char *key, int64_t *out);
bool sp_map_bool(const msgpack_object *map, const char *key, bool *out);
bool sp_map_str(const msgpack_object *map, const char *key,
		const char **p, size_t *len);
bool sp_map_bin(const msgpack_object *map, const char *key,
		const void **p, size_t *len);
const msgpack_object_array *sp_map_array(const msgpack_object *map,
					 const char *key);

/* What every consumer of a sample record reads first. */
struct sp_sample_head {
	uint64_t pid, tid, time;
	uint64_t period;	/* 1 when absent */
	uint64_t stack;		/* the interned stack's id; UINT64_MAX when absent */
	uint64_t event;		/* its index in the header's events; 0 when absent */
	bool preempted;		/* an off-CPU sample's; false when absent */
};

/* Reads a sample record's head; keys that are absent keep the defaults above. */
void sp_sample_head_read(const msgpack_object *map, struct sp_sample_head *s);

/* The same, from a record decoded or read undecoded (sp_reader_undecoded()). */
struct sp_record;
void sp_sample_head_of(const struct sp_record *rec, struct sp_sample_head *s);

/* Whether a string object equals a C string. */
bool sp_obj_str_eq(const msgpack_object *o, const char *s);

#endif
