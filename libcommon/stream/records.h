/* SPDX-License-Identifier: MIT
 * The writers of the records the stages make, one per record type,
 * beside the schema (record.h) and the spec (format/sp-stream.md): each
 * takes a struct holding the record's values and writes the map, with
 * the keys in the order and under the conditions the spec gives.  A key
 * added to one of these records is a field here, a line in record.h and
 * a row in the spec; the recorder only fills the field.
 *
 * Pointers in a struct are borrowed for the call.  Strings given with a
 * length need not be NUL-terminated.
 */
#ifndef SP_STREAM_RECORDS_H
#define SP_STREAM_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

struct sp_writer;

/* "comm", or "exec" when exec is set. */
struct sp_comm_rec {
	uint32_t pid, tid;
	uint64_t time;
	bool exec;
	char comm[64];
};
void sp_write_comm(struct sp_writer *w, const struct sp_comm_rec *c);

/* "fork", or "exit" when fork is not set. */
struct sp_task_rec {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
	bool fork;
	bool ustack_reset;	/* an exit's "ustack_reset": written only when set */
};
void sp_write_task(struct sp_writer *w, const struct sp_task_rec *t);

/* "lost": samples lost (samples set) or other records lost. */
struct sp_lost_rec {
	uint64_t lost, time;
	uint32_t cpu;
	bool samples;
};
void sp_write_lost(struct sp_writer *w, const struct sp_lost_rec *l);

/* "throttle", or "unthrottle" when throttle is not set. */
struct sp_throttle_rec {
	uint64_t time;
	uint32_t cpu;
	bool throttle;
};
void sp_write_throttle(struct sp_writer *w, const struct sp_throttle_rec *t);

/* "runtime". */
struct sp_runtime_rec {
	uint32_t pid;
	uint64_t time;
	bool cpython;
	const char *via;
};
void sp_write_runtime(struct sp_writer *w, const struct sp_runtime_rec *rt);

/* "map". */
struct sp_map_rec {
	uint32_t pid, tid;		/* tid 0: not written */
	uint64_t time, start, len, pgoff;
	const char *path;
	size_t pathlen;
	bool have_dev;			/* maj, min and ino are known */
	unsigned maj, min;
	uint64_t ino;
	int prot;
	int flags;			/* < 0: unknown, not written */
	const unsigned char *build_id;	/* build_id_len bytes; 0: none */
	int build_id_len;
	const unsigned char *content_id;	/* 20 bytes (SHA-1); NULL: none */
	bool deleted;
};
void sp_write_map(struct sp_writer *w, const struct sp_map_rec *m);

/* "archive". */
struct sp_archive_rec {
	const char *kind;
	const char *file;
	size_t filelen;
	const char *path;		/* NULL: not written */
	size_t pathlen;
	const unsigned char *id;	/* idlen bytes: the content_id when content, else the build_id */
	int idlen;
	bool content, debug;
	uint32_t pid;			/* 0: neither pid nor start_time written */
	uint64_t start_time;
};
void sp_write_archive(struct sp_writer *w, const struct sp_archive_rec *a);

/*
 * "jitdump": len bytes of the jitdump file pid mapped at path, from
 * offset off on (format/sp-stream.md says how a file is cut in records).
 */
struct sp_jitdump_rec {
	uint32_t pid;
	const char *path;
	size_t pathlen;
	uint64_t off;
	const void *data;
	size_t len;
	uint64_t time;			/* 0: not written */
};
void sp_write_jitdump(struct sp_writer *w, const struct sp_jitdump_rec *j);

/* "image": the bytes of a mapped object that is no file, such as the vDSO. */
struct sp_image_rec {
	const char *path;		/* the mapping's name, "[vdso]" */
	const unsigned char *build_id;
	int build_id_len;
	const void *data;		/* the whole ELF image, len bytes */
	size_t len;
	uint32_t pid;			/* 0: neither pid nor time written */
	uint64_t time;
};
void sp_write_image(struct sp_writer *w, const struct sp_image_rec *im);

/* "process". */
struct sp_process_rec {
	uint32_t pid, ppid, uid;
	uint64_t start_time, time;
	const char *exe;		/* NULL: not written */
	size_t exelen;
	const char *comm;
	const char *cmdline;		/* cmdlen bytes: NUL-separated arguments, the last NUL optional */
	size_t cmdlen;
	uint32_t nspid;			/* 0: not written (our PID namespace) */
	uint64_t mntns;			/* 0: not written (our mount namespace) */
	bool kernel_thread;		/* false: not written */
};
void sp_write_process(struct sp_writer *w, const struct sp_process_rec *p);

/* "thread". */
struct sp_thread_rec {
	uint32_t pid, tid;
	uint64_t time;
	const char *comm;		/* NULL: not written */
};
void sp_write_thread(struct sp_writer *w, const struct sp_thread_rec *t);

/*
 * "sample", as the recorder writes it (the raw stage): registers and
 * kernel addresses as the kernel gave them, nregs and nk little-endian
 * 64-bit values at possibly unaligned addresses; the part of the stack
 * copy not shared with the thread's previous one (stream/ustack.h).
 */
struct sp_raw_sample_rec {
	uint32_t pid, tid, cpu;
	uint64_t time, period, abi;
	const unsigned char *regs;
	size_t nregs;
	const void *ustack;		/* ustack_len bytes, then shared more */
	size_t ustack_len;
	uint64_t shared;		/* 0: not written */
	bool full;
	const unsigned char *kips;	/* NULL or nk 0: no kstack written */
	size_t nk;
	/*
	 * --call-graph fp: the user callchain, nu entries (uchain); regs,
	 * ustack and its keys are then not written.  NULL: a stack copy.
	 */
	const unsigned char *uips;
	size_t nu;
	bool ufull;
	uint32_t event;			/* index in the header's events; 0: not written */
	bool preempted;			/* an off-CPU sample of a thread preempted; false: not written */
};
void sp_write_raw_sample(struct sp_writer *w, const struct sp_raw_sample_rec *s);

/* "module" (unwound stage). */
struct sp_module_rec {
	uint64_t id;
	const char *path;
	const char *kind;		/* "elf", "kernel", "vdso", "jit", "anon" */
	const unsigned char *ident;	/* identlen bytes: content_id when content, else build_id */
	int identlen;			/* 0: neither written */
	bool content;
	uint32_t pid;			/* 0: not written */
};
void sp_write_module(struct sp_writer *w, const struct sp_module_rec *m);

/*
 * One frame of a "stack" record: [addr, module or nil, rel, flags]
 * (format/sp-stream.md, FRAMES).
 */
struct sp_stack_frame {
	uint64_t addr;
	uint64_t module;		/* SP_NO_MODULE: nil */
	uint64_t rel;			/* module-relative address; a marker's reason */
	uint64_t flags;			/* SP_FRAME_* */
};

#define SP_NO_MODULE UINT64_MAX

/* "stack": n frames, leaf first. */
void sp_write_stack(struct sp_writer *w, uint64_t id, const struct sp_stack_frame *f, size_t n);

/* Decodes one frame of a stack record; returns 0, or -1 when it is malformed. */
int sp_stack_frame_decode(const msgpack_object *o, struct sp_stack_frame *f);

/*
 * A stack record's id and frames, decoded or read undecoded
 * (sp_reader_undecoded()): the frames into *frames, malloc'd, which the
 * caller frees.  Returns 0, -1 when a frame is malformed (nothing kept),
 * -2 when memory runs out.
 */
struct sp_record;
int sp_stack_of(const struct sp_record *rec, uint64_t *id, struct sp_stack_frame **frames,
		size_t *n);

/* An inlined call of a symbolized frame, innermost first. */
struct sp_inline {
	const char *name, *file;	/* file NULL when unknown */
	unsigned line;			/* 0 when unknown */
};

/* "frame" (symbolized stage). */
struct sp_frame_rec {
	uint64_t id, addr;
	const char *origin, *name;
	bool has_module, has_offset;
	uint64_t module, offset;
	uint64_t rel;			/* written with module */
	const char *file;		/* NULL: not written */
	unsigned line;			/* 0: not written */
	const struct sp_inline *inl;	/* ninl entries; none: not written */
	size_t ninl;
	uint32_t flags;			/* SP_SYM_*; 0: not written */
};
void sp_write_frame(struct sp_writer *w, const struct sp_frame_rec *f);

/* "symstack": the frame ids of stack id, leaf first. */
void sp_write_symstack(struct sp_writer *w, uint64_t id, const uint64_t *frames, size_t n);

/*
 * The counter records.  Each stage writes its own just before the
 * summary; the error kinds and stack ends are written with their stable
 * names and descriptions (stream/vocab.h).
 */

/* "summary" (the recorder's). */
struct sp_summary_rec {
	uint64_t sample_events, samples, lost_events, empty_stack_samples;
	uint64_t truncated_frame_markers, ignored_user_callchain_frames;
	bool kernel_enabled;
	const uint64_t *errors;		/* SP_E_COUNT counts, by enum sp_error_kind */
	uint64_t skipped_no_pid, skipped_no_tid, skipped_no_time, skipped_no_frames;
	uint64_t lost_samples, throttle_events, processes, threads, duration_ns, time;
	bool has_command_status;
	int64_t command_status;
	bool off_cpu;			/* --off-cpu: the two counts below are written */
	uint64_t off_cpu_intervals, off_cpu_no_stack;
	/* --stack-size auto: the window chosen and from how many stacks; 0: not written. */
	uint64_t stack_size_chosen, stack_calibration_stacks;
};
void sp_write_summary(struct sp_writer *w, const struct sp_summary_rec *s);

/* "unwind" (sp-unwind's). */
struct sp_unwind_rec {
	uint64_t samples, user_samples, frames, stacks, modules;
	const uint64_t *ends;		/* SP_END_COUNT counts; [SP_END_COMPLETE] is "complete" */
	uint64_t bad_shared_copies, cache_hits, cache_misses, fp_frames, scan_frames;
	uint64_t modules_opened, modules_missing, modules_mismatched;
	uint64_t max_depth_full;	/* max_depth ends whose copy filled its window; 0: not written */
	/* What complete DWARF stacks needed of their copies, bytes; stacks 0: not written. */
	uint64_t copy_used_stacks, copy_used_p50, copy_used_p995, copy_used_max;
	const char *engine;		/* sp-unwind --engine; NULL: not written */
};
void sp_write_unwind(struct sp_writer *w, const struct sp_unwind_rec *u);

/* "symbolize" (sp-symbolize's). */
struct sp_symbolize_rec {
	uint64_t frames;
	const char *const *origin_names;	/* norigins names and their counts */
	const uint64_t *origin_counts;
	size_t norigins;
	uint64_t address_only, modules_missing, modules_mismatched, debuginfo_modules;
	uint64_t perf_maps_loaded, perf_maps_refused, perf_map_lines_skipped;
	const char *kallsyms;
};
void sp_write_symbolize(struct sp_writer *w, const struct sp_symbolize_rec *s);

#endif
