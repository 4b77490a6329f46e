/* SPDX-License-Identifier: MIT
 * libstackpulse: the sampling profiler's library, for programs that embed
 * a profiler.  The tools (sp-capture, sp-symbolize, ...) are programs over
 * it; every record it reads and writes is the stream of sp-stream(5).
 *
 * Four handles, each opaque:
 *
 *   recorder     samples processes with perf_event_open and writes the raw
 *                stream to a file or a descriptor (sp_recorder_new()).
 *   snapshot     reads a finished stream of any stage, in batches of
 *                stacks (sp_snapshot_open()).
 *   tail         reads a stream while it is written: from a file-backed
 *                recorder (sp_recorder_tail()) or a path written elsewhere
 *                (sp_tail_open()).
 *   symbolizer   names the frames of the stacks of one profile, with a
 *                cache it keeps for the whole profile (sp_symbolizer_new()).
 *
 * A raw stack (a register set and a copy of the stack) is unwound as its
 * batch is read, with the library's DWARF unwinder; a stack of an
 * unwound or symbolized stream is read as it was written.
 *
 * Errors: a function returns 0 (or a count, or a pointer) on success, and
 * -1 (or NULL) on failure, with the code in sp_errno() and the message in
 * sp_errmsg(-1), kept per thread (stackpulse/errors.h).  Bad use (a NULL
 * handle, a call in the wrong state, a stack of another profile) is such
 * a failure (SP_ERR_INVALID, SP_ERR_STATE, SP_ERR_MISMATCH), never an
 * abort.  Nothing in the library prints or exits.
 *
 * Threads: a handle is used by one thread at a time; different handles
 * may be used by different threads.
 *
 * Each function has its section-3 manual page (man 3 sp_recorder_new).
 */
#ifndef STACKPULSE_H
#define STACKPULSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stackpulse/errors.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Built with hidden visibility, the library exports what is declared here. */
#pragma GCC visibility push(default)

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 1
#define SP_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH", as it was built. */
const char *sp_version(void);

/* ---- recording options ---------------------------------------------- */

/* The kernel's limit on the user stack copy, in bytes. */
#define SP_MAX_STACK_SIZE 65528u

/* sp_options_set_rate(): the highest rate the kernel allows now. */
#define SP_RATE_MAX UINT64_MAX

struct sp_options;

/*
 * Options with their defaults: 999 samples per second per thread, a
 * 32 KiB stack copy, user frames only, no inheritance, the cpu-clock
 * event.  NULL when memory runs out.
 */
struct sp_options *sp_options_new(void);
void sp_options_free(struct sp_options *o);

/* Samples per second per thread (not 0), or SP_RATE_MAX. */
int sp_options_set_rate(struct sp_options *o, uint64_t hz);

/* Bytes of stack copied per sample: a multiple of 8, at most SP_MAX_STACK_SIZE. */
int sp_options_set_stack_size(struct sp_options *o, uint32_t bytes);

/*
 * Kernel frames (perf callchains).  When the kernel refuses them, attach
 * falls back to user frames and sp_summary.kernel_enabled says so.
 */
int sp_options_set_kernel(struct sp_options *o, bool on);

/* Follow the threads and children the targets create while recording. */
int sp_options_set_inherit(struct sp_options *o, bool on);

/*
 * The event that samples, named as sp-capture -e names one:
 * "cpu-clock" (the default), "task-clock", "page-faults" ("faults"),
 * "context-switches" ("cs"), "cpu-migrations" ("migrations"), "cycles",
 * "instructions", or a tracepoint "SUBSYSTEM:NAME", whose id is read
 * from tracefs now.  A hardware event the machine cannot count fails
 * when the recorder attaches.  It replaces every event set or added
 * before: the recording samples on exactly this one.
 */
int sp_options_set_event(struct sp_options *o, const char *name);

/* The events one recording may sample on, off-CPU time included. */
#define SP_MAX_EVENTS 8

/*
 * Adds an event, named as for sp_options_set_event(), after those set or
 * added before; the first one added replaces the default cpu-clock.  The
 * stream's header lists the events in this order and each sample says
 * which it is of.  An event added twice, or one past SP_MAX_EVENTS, fails.
 */
int sp_options_add_event(struct sp_options *o, const char *name);

/*
 * Samples every events occurrences of each event (not 0), as sp-capture
 * -c does, instead of at a rate: exclusive with sp_options_set_rate(),
 * whichever is set first stays and the other fails.
 */
int sp_options_set_period(struct sp_options *o, uint64_t events);

/* How a sample's user frames are recorded. */
enum sp_call_graph {
	SP_CALL_GRAPH_DWARF,	/* registers and a stack copy, unwound later (the default) */
	SP_CALL_GRAPH_FP,	/* the kernel walks frame pointers; no stack is copied */
};

/*
 * The call-graph mode.  SP_CALL_GRAPH_FP and a stack size
 * (sp_options_set_stack_size()) exclude each other: whichever is set
 * first stays and the other fails.
 */
int sp_options_set_call_graph(struct sp_options *o, enum sp_call_graph mode);

/*
 * Off-CPU time, as sp-capture --off-cpu: besides the events, each
 * interval a thread spends off the CPU is written as a sample of the
 * event "off-cpu", with the stack where it left and weighted by the
 * nanoseconds until it ran again.  It takes one of the SP_MAX_EVENTS.
 */
int sp_options_set_off_cpu(struct sp_options *o, bool on);

/*
 * Metadata written into the stream's header, read back with
 * sp_snapshot_metadata(): the profile's start on an outside clock, and an
 * interval hint for a viewer.  Neither drives sampling.
 */
int sp_options_set_start_timestamp_us(struct sp_options *o, uint64_t us);
int sp_options_set_sample_interval_us(struct sp_options *o, uint64_t us);

/*
 * The highest sample rate the kernel allows now
 * (kernel.perf_event_max_sample_rate); 0 when it cannot be read.
 */
uint64_t sp_max_sample_rate(void);

/* ---- the summary ------------------------------------------------------ */

/* The number of error kinds a summary counts (sp_error_kind_name()). */
#define SP_ERROR_KINDS_MAX 16

/*
 * Every counter of the stream's summary record (sp-stream(5), "summary").
 * sp_recorder_summary() gives them so far, sp_recorder_finish() at the
 * end, sp_snapshot_summary() as the stream's summary record said.
 */
struct sp_summary {
	uint64_t sample_events;		/* samples the kernel delivered */
	uint64_t samples;		/* sample records written */
	uint64_t lost_events;		/* lost records (ring buffers overran) */
	uint64_t lost_samples;		/* samples those records say were lost */
	uint64_t empty_stack_samples;
	uint64_t truncated_frame_markers;
	uint64_t ignored_user_callchain_frames;
	uint64_t skipped_no_pid, skipped_no_tid, skipped_no_time, skipped_no_frames;
	uint64_t throttle_events;
	uint64_t processes, threads;
	uint64_t duration_ns;
	bool kernel_enabled;		/* kernel frames asked for and granted */
	bool has_command_status;
	int command_status;		/* a launched command's exit status, or -signal */
	unsigned nerrors;		/* error kinds counted in errors[] */
	uint64_t errors[SP_ERROR_KINDS_MAX];	/* by kind */
};

/* The stable name and the description of error kind k; NULL past the last. */
const char *sp_error_kind_name(unsigned k);
const char *sp_error_kind_description(unsigned k);

/* ---- the recorder ----------------------------------------------------- */

struct sp_recorder;

/*
 * A recorder writing the raw stream to a new file at path (replaced if it
 * exists); a tail may be taken from it (sp_recorder_tail()).  The options
 * are copied.  NULL on failure.
 */
struct sp_recorder *sp_recorder_new(const struct sp_options *o, const char *path);

/* The same, writing to descriptor fd (not closed; a pipe will do); no tail. */
struct sp_recorder *sp_recorder_new_fd(const struct sp_options *o, int fd);

/*
 * Attaches to running process pid, without stopping it, before the
 * recording starts.  The recording starts (the stream's header is
 * written and a launched command begins) at the first poll, flush or
 * finish.
 */
int sp_recorder_attach(struct sp_recorder *r, pid_t pid);

/*
 * Starts argv (argv[0] searched in PATH) as a child, held until the
 * recording starts, so that its first instruction is sampled.  *pid gets
 * its process id.  Before the recording starts only.
 */
int sp_recorder_attach_command(struct sp_recorder *r, char *const argv[], pid_t *pid);

enum sp_attach_mode {
	SP_ATTACH_STOP,		/* SIGSTOP pid while its threads are attached */
	SP_ATTACH_NO_STOP,	/* attach as it runs: a thread it starts meanwhile may be missed */
};

/*
 * Adds process pid at any time before finish: its threads are sampled
 * from now on, its mappings read from /proc.  Attaching a process
 * already attached does nothing.
 */
int sp_recorder_attach_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode);

/*
 * The processes below root (children, their children, ...) found in
 * /proc now, at most max of them into pids.  Returns how many there are
 * (more than max when pids was too short), or -1.
 */
ssize_t sp_discover_descendants(pid_t root, pid_t *pids, size_t max);

/*
 * Opens events for the threads of pid (an attached process) that have
 * none yet: for a slow maintenance tick, not the polling loop.
 * Returns the number of threads added, or -1.
 */
int sp_recorder_refresh_threads(struct sp_recorder *r, pid_t pid);

/*
 * Records every task on the CPUs cpus[0..n) (n 0: every online CPU), as
 * sp-capture -a and -C do, from now until finish: processes running now
 * and started later, kernel threads, and the idle task ("swapper").
 * Before the recording starts, on a recorder with no process and no
 * command attached; no process can be attached after it.
 */
int sp_recorder_attach_all_cpus(struct sp_recorder *r, const int *cpus, size_t n);

/*
 * Waits at most timeout_ms for samples (0: not at all), then drains every
 * ring buffer and writes what is complete.  The kernel's buffers fill
 * and drop samples if nothing polls: call it at least every 100 ms.
 */
int sp_recorder_poll(struct sp_recorder *r, int timeout_ms);

/* 1 when a ring buffer holds data poll would drain, 0 when none, -1. */
int sp_recorder_has_pending_events(struct sp_recorder *r);

/* 1 while process pid (a target) runs, 0 once it has exited, -1. */
int sp_recorder_process_is_active(struct sp_recorder *r, pid_t pid);

/*
 * 1 while any target runs, 0 once all have exited, -1.  A recording of
 * every CPU (sp_recorder_attach_all_cpus()) always has a task running: 1.
 */
int sp_recorder_targets_active(struct sp_recorder *r);

/* Writes out what poll has buffered, so that a tail sees it. */
int sp_recorder_flush(struct sp_recorder *r);

/* The counters so far (kernel_enabled is known once attached). */
int sp_recorder_summary(struct sp_recorder *r, struct sp_summary *s);

/*
 * Ends the recording: disables sampling, drains once more, writes the
 * summary record and closes the file; *s (may be NULL) gets the summary.
 * After it only sp_recorder_summary(), sp_recorder_tail() and
 * sp_recorder_free() may be called.
 */
int sp_recorder_finish(struct sp_recorder *r, struct sp_summary *s);

/*
 * Frees r: finishes it first if it started and did not finish (one never
 * started writes nothing, and a command it launched is killed), and
 * continues a target it stopped.
 */
void sp_recorder_free(struct sp_recorder *r);

/* ---- stacks, batches and their sources ------------------------------- */

/* A frame of a stack, leaf first.  flags: SP_FRAME_*. */
struct sp_frame {
	uint64_t ip;			/* the absolute address */
	uint64_t rel;			/* the address in the module's file (ELF virtual address) */
	uint32_t module;		/* the profile's module index, or SP_MODULE_NONE */
	uint32_t flags;
};

#define SP_MODULE_NONE UINT32_MAX

#define SP_FRAME_KERNEL		0x1u	/* a kernel frame */
#define SP_FRAME_JIT		0x2u	/* code in anonymous memory (JIT) */
#define SP_FRAME_RETADDR	0x4u	/* a return address: the call is at ip - 1 */

/* The module mapping recorded at capture time, for a symbolizer of one's own. */
struct sp_module {
	const char *path;		/* as the target mapped it; never NULL */
	const unsigned char *build_id;	/* NULL when unknown */
	size_t build_id_len;
	const char *kind;		/* "elf", "vdso", "kernel", "jit", "anon" */
};

/*
 * The frame of a stack with the module mapping it lies in (module.path ""
 * for a frame outside any module).
 */
struct sp_frame_context {
	const struct sp_frame *frame;
	struct sp_module module;
};

struct sp_stack;

/* The sample the stack belongs to. */
struct sp_sample_info {
	uint32_t pid, tid, cpu;
	uint64_t time_ns;		/* CLOCK_MONOTONIC */
	uint64_t period;		/* ns of CPU time the sample stands for */
};

/*
 * The stack's frames, leaf first, in *frames (valid as long as the
 * batch); returns their number.  Cheap: no lookup.
 */
size_t sp_stack_frames(const struct sp_stack *st, const struct sp_frame **frames);

/* Frame i of st with its module: 0, or -1 when i is past the end. */
int sp_stack_context(const struct sp_stack *st, size_t i, struct sp_frame_context *c);

void sp_stack_sample(const struct sp_stack *st, struct sp_sample_info *info);

/*
 * Why the walk ended (sp-stream(5), "stack ends"): 0 ("complete") when it
 * reached the thread's entry; sp_stack_end_name() names a code.
 */
int sp_stack_end(const struct sp_stack *st);
const char *sp_stack_end_name(int end);

/*
 * The stack's id in its profile: the same frames in the same segment have
 * the same id.
 */
uint64_t sp_stack_id(const struct sp_stack *st);

/* The stacks a snapshot or tail has read since the last batch. */
struct sp_batch;

size_t sp_batch_count(const struct sp_batch *b);
const struct sp_stack *sp_batch_stack(const struct sp_batch *b, size_t i);

/* Whether the source held more than this batch: ask again at once. */
bool sp_batch_has_more(const struct sp_batch *b);

/* A stream's metadata, from its header. */
struct sp_metadata {
	const char *stage;		/* "raw", "unwound", "symbolized" */
	const char *arch;		/* "x86_64" */
	bool has_start_timestamp, has_sample_interval;
	uint64_t start_timestamp_us, sample_interval_us;
	uint64_t frequency;		/* 0 when not recorded */
};

/* A CPython runtime marker (sp-stream(5), "runtime"), in stream order. */
struct sp_runtime {
	uint32_t pid;
	bool cpython;
};

struct sp_snapshot;

/*
 * Opens the finished stream at path (any stage; "-" is standard input).
 * NULL on failure.
 */
struct sp_snapshot *sp_snapshot_open(const char *path);

/*
 * The next batch of stacks in *b (owned by s, valid until the next call):
 * 1, 0 at the end of the stream, -1 on an error (the stream is corrupt or
 * cut: the batches before it were whole).
 */
int sp_snapshot_next(struct sp_snapshot *s, const struct sp_batch **b);

/* The metadata of the stream's first segment: 0, or -1 before it is read. */
int sp_snapshot_metadata(struct sp_snapshot *s, struct sp_metadata *m);

/* The summary record, once sp_snapshot_next() has returned 0: 0, or -1. */
int sp_snapshot_summary(struct sp_snapshot *s, struct sp_summary *sum);

/*
 * The runtime markers read so far, in stream order, in *r (valid until
 * the next call); returns their number.
 */
size_t sp_snapshot_runtimes(struct sp_snapshot *s, const struct sp_runtime **r);

void sp_snapshot_close(struct sp_snapshot *s);

struct sp_tail;

/*
 * A tail of r's file, which must be file-backed.  It can be taken once.
 * It takes over the recorder's handles on the files the targets mapped,
 * so a deleted or replaced file is still read as it was sampled.
 */
struct sp_tail *sp_recorder_tail(struct sp_recorder *r);

/* A tail of a stream written elsewhere at path (only the recorded paths are read). */
struct sp_tail *sp_tail_open(const char *path);

/*
 * The stacks written since the last poll, complete records only, in *b
 * (owned by t, valid until the next call).  Returns 1 with a batch (it may
 * hold no stack), 0 once the stream has ended (its summary was read), -1.
 * It never waits.
 */
int sp_tail_poll(struct sp_tail *t, const struct sp_batch **b);

int sp_tail_metadata(struct sp_tail *t, struct sp_metadata *m);
size_t sp_tail_runtimes(struct sp_tail *t, const struct sp_runtime **r);
void sp_tail_close(struct sp_tail *t);

/* ---- the symbolizer ---------------------------------------------------- */

/* Whose perf maps (/tmp/perf-PID.map) name JIT frames. */
enum sp_perf_map_policy {
	SP_PERF_MAP_ANY,	/* any process's (the default) */
	SP_PERF_MAP_PIDS,	/* only those of sp_symbolizer_options_perf_map_pids() */
	SP_PERF_MAP_PYTHON,	/* only of processes whose latest runtime marker says CPython */
	SP_PERF_MAP_OFF,
};

enum sp_stack_cache {
	SP_CACHE_INTERNAL,	/* resolved stacks are kept; repeated stacks cost nothing */
	SP_CACHE_EXTERNAL,	/* the caller keeps them, and consumes every invalidation */
};

struct sp_symbolizer_options;

struct sp_symbolizer_options *sp_symbolizer_options_new(void);
void sp_symbolizer_options_free(struct sp_symbolizer_options *o);

int sp_symbolizer_options_perf_maps(struct sp_symbolizer_options *o, enum sp_perf_map_policy policy);
int sp_symbolizer_options_perf_map_pids(struct sp_symbolizer_options *o,
					const uint32_t *pids, size_t n);
/* Perf maps saved elsewhere: DIR/perf-PID.map. */
int sp_symbolizer_options_perf_map_dir(struct sp_symbolizer_options *o, const char *dir);

/*
 * Kernel names: NULL or "" for this host's /proc/kallsyms when the stream
 * was recorded in this boot, a saved kallsyms file, or "none".
 */
int sp_symbolizer_options_kallsyms(struct sp_symbolizer_options *o, const char *path);
int sp_symbolizer_options_debuginfod(struct sp_symbolizer_options *o, bool on);
int sp_symbolizer_options_stack_cache(struct sp_symbolizer_options *o, enum sp_stack_cache c);

/*
 * Any option sp-symbolize(1) takes, by its long name without "--" and its
 * argument (NULL for none): "root", "module-dir", "debug-dir",
 * "archive", "no-inline", "no-demangle", ...
 */
int sp_symbolizer_options_set(struct sp_symbolizer_options *o, const char *name,
			      const char *value);

struct sp_symbolizer;

/*
 * A symbolizer for the stacks of snapshot s or tail t (one of them NULL),
 * with options o (NULL: the defaults; copied).  NULL on failure (a kallsyms
 * file that cannot be read).
 */
struct sp_symbolizer *sp_symbolizer_new(struct sp_snapshot *s, struct sp_tail *t,
					const struct sp_symbolizer_options *o);
void sp_symbolizer_free(struct sp_symbolizer *sym);

/*
 * What a batch changed for stacks resolved before it: resolve them again
 * before use.  all: every stack (a new segment began); else the stacks
 * with a JIT frame of one of the npids processes pids (their perf maps or
 * jitdump records changed).
 */
struct sp_invalidation {
	bool all;
	const uint32_t *pids;
	size_t npids;
};

/*
 * Learns the modules, processes and runtime markers batch b brings; call
 * it for every batch, in order, before resolving its stacks.  *inv (may be
 * NULL) gets what it invalidated, valid until the next call.
 */
int sp_symbolizer_update(struct sp_symbolizer *sym, const struct sp_batch *b,
			 struct sp_invalidation *inv);

/* Where a symbol came from. */
enum sp_symbol_origin {
	SP_SYMBOL_RESOLVED,	/* a symbol table, debug information, a map */
	SP_SYMBOL_ADDRESS_ONLY,	/* no name: "module+0xOFFSET" or an address */
};

#define SP_SYM_HIDDEN	0x1u	/* hidden in a profiler's default view */
#define SP_SYM_INLINE	0x2u	/* an inlined call, inside the next frame */
#define SP_SYM_KERNEL	0x100u
#define SP_SYM_JIT	0x200u

/* A named frame, owned by the symbolizer. */
struct sp_symbol {
	const char *name;		/* the display name; never NULL */
	const char *module;		/* the module's path; NULL for none */
	const char *file;		/* source file; NULL when unknown */
	unsigned line;			/* 0 when unknown */
	uint64_t ip;
	uint32_t id;			/* compact: the same frame has the same id */
	uint32_t flags;			/* SP_SYM_* */
	enum sp_symbol_origin origin;
	const char *source;		/* "symtab", "debuginfo", "perf-map", ... */
};

/*
 * The named frames of st, leaf first, inlined calls expanded, in *frames:
 * returns their number, or -1 (SP_ERR_MISMATCH: st is not of this
 * symbolizer's profile; SP_ERR_STATE: its batch was not given to
 * sp_symbolizer_update()).  With SP_CACHE_INTERNAL the frames stay valid
 * until an update invalidates st (the same pointer is returned for st
 * until then); with SP_CACHE_EXTERNAL until the next resolve.
 */
ssize_t sp_symbolizer_resolve(struct sp_symbolizer *sym, const struct sp_stack *st,
			      const struct sp_symbol **frames);

/*
 * Whether the stack last resolved may be cached by the caller: false when
 * it has a JIT frame, whose name may change.
 */
bool sp_symbolizer_is_cacheable(const struct sp_symbolizer *sym);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
