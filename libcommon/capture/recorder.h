/* SPDX-License-Identifier: MIT
 * The recorder: samples processes with perf_event_open and writes the raw
 * stream (format/sp-stream.md).  Functions return 0 or -1 and keep the
 * message on the handle (sp_capture_error()); nothing prints.  The
 * kernel settings that bound a recording (sp_kernel_max_sample_rate(),
 * sp_perf_paranoid()) are read by util/procfs.h.
 *
 * Use: sp_capture_new(), then sp_capture_attach() for each running
 * process and/or sp_capture_launch() for a command, then
 * sp_capture_start() (writes the header and the state read at attach,
 * releases a launched command), sp_capture_poll() until done, and
 * sp_capture_finish() (disables sampling, drains, writes the summary).
 */
#ifndef SP_CAPTURE_RECORDER_H
#define SP_CAPTURE_RECORDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/archive.h"
#include "stream/stream.h"

/* The kernel's limit on the user stack copy (a u16 size, 8-byte aligned). */
#define SP_MAX_STACK_SIZE 65528u
#define SP_DEFAULT_STACK_SIZE 32768u
#define SP_DEFAULT_FREQUENCY 999u
#define SP_MAX_EVENTS 8

/* What an event counts, which decides its default period and fall-back. */
enum sp_event_kind {
	SP_EVENT_CLOCK,		/* cpu-clock, task-clock: time */
	SP_EVENT_SOFTWARE,	/* page-faults, context-switches, cpu-migrations */
	SP_EVENT_HARDWARE,	/* cycles, instructions: a PMU's */
	SP_EVENT_TRACEPOINT,	/* SUBSYSTEM:NAME */
	/*
	 * --off-cpu: the context-switches event at every switch-out, whose
	 * samples are held until the thread runs again and then written as
	 * samples of "off-cpu" weighted by the nanoseconds it was off the CPU.
	 */
	SP_EVENT_OFF_CPU,
};

/* One event to sample on, as sp_event_parse() made it. */
struct sp_event {
	char name[208];		/* as the stream names it: "page-faults", "sched:sched_switch" */
	uint32_t type;		/* perf_event_attr's type and config */
	uint64_t config;
	enum sp_event_kind kind;
	bool in_kernel;		/* it fires in kernel code: sampled with exclude_kernel off */
};

/*
 * Parses an event name as -e takes it (an alias gives the event's own
 * name); a tracepoint's id is read from tracefs.  Returns 0, or -1 with
 * the message in err: SP_ERR_INVALID for a name that is no event,
 * SP_ERR_NOT_FOUND for a tracepoint that does not exist, and
 * SP_ERR_UNSUPPORTED or SP_ERR_PERMISSION when tracefs cannot be read.
 */
struct sp_error;
int sp_event_parse(const char *name, struct sp_event *ev, struct sp_error *err);
/* cpu-clock, the default event. */
void sp_event_default(struct sp_event *ev);
/* The "off-cpu" event of --off-cpu (SP_EVENT_OFF_CPU). */
void sp_event_off_cpu(struct sp_event *ev);
/* The names sp_event_parse() knows, for messages (a string constant). */
const char *sp_event_known_names(void);

struct sp_capture_options {
	uint64_t frequency;		/* samples per second per thread */
	uint32_t stack_size;		/* bytes; a multiple of 8 */
	bool kernel;			/* kernel callchains */
	bool call_graph_fp;		/* user callchains the kernel walks by frame pointer, no stack copy */
	bool inherit;			/* follow new threads and children */
	/* The events, in the stream's order; none: cpu-clock. */
	struct sp_event events[SP_MAX_EVENTS];
	size_t nevents;
	uint64_t period;		/* -c: every period events, not -F's rate; 0: none */
	bool frequency_given;		/* -F was given: tracepoints sample at its rate too */
	bool event_fallback;		/* a hardware event that cannot be opened: cpu-clock */
	bool off_cpu;			/* --off-cpu: an "off-cpu" event after the others */
	bool stop;			/* SIGSTOP a -p target while attaching (--stop) */
	/*
	 * Every task on the CPUs (-a): events with pid -1, one per CPU of
	 * cpu_list[0..ncpu_list) (read by sp_capture_new() only; 0: every online
	 * CPU), and no target.
	 */
	bool system_wide;
	const int *cpu_list;
	int ncpu_list;
	unsigned mmap_pages;		/* ring pages per CPU; 0: sized for the stack */
	int poll_ms;
	bool has_start_timestamp, has_sample_interval;
	uint64_t start_timestamp_us, sample_interval_us;
	/* For the header's "options" map only. */
	const char *frequency_arg;	/* as given: "999", "max" */
	double duration_s;		/* 0: none */
	int refresh_threads_ms;		/* 0: off */
	bool descendants;
	const char *kallsyms_out;	/* NULL: none */
	struct sp_archive *archive;	/* --archive: keep the exact files; NULL: none */
	bool command_stdout_to_stderr;	/* the stream is on standard output */
	const char *tool_name;		/* the header's tool entry; NULL: "sp-capture" */
	/*
	 * Called for each map record of a file with a build-id, as it is
	 * queued (at attach, or as a drain reads the kernel's mmap event,
	 * when the mapping may already be gone); NULL: none.  deleted: the
	 * file was removed, read it through /proc/PID/map_files.
	 */
	void (*on_module)(void *arg, pid_t pid, uint64_t start, uint64_t end,
			  const char *path, bool deleted, const unsigned char *build_id,
			  int build_id_len);
	void *on_module_arg;
};

struct sp_capture;

/* Counters for a live status line. */
struct sp_capture_stats {
	uint64_t samples, lost, bytes;
	unsigned processes_alive;
};

/*
 * Creates a recorder writing to w (not owned).  Returns NULL only when
 * memory runs out.
 */
struct sp_capture *sp_capture_new(const struct sp_capture_options *o,
				  struct sp_writer *w);

/* Frees the recorder, closing its events; continues any stopped target. */
void sp_capture_free(struct sp_capture *r);

const char *sp_capture_error(const struct sp_capture *r);
/* The same with its code (util/error.h). */
struct sp_error;
const struct sp_error *sp_capture_last_error(const struct sp_capture *r);

/*
 * Attaches to a running process (pid is a TGID): opens and enables
 * events on each of its threads, then reads its state from /proc,
 * stamped before the events began, so that what the kernel reports from
 * then on overrides it.  No signal is sent unless opts.stop is set: the
 * process is then stopped meanwhile (unless it was already) and
 * continued.  Returns 0, or -1 (the process is left running as it was,
 * with no event of ours).
 */
int sp_capture_attach(struct sp_capture *r, pid_t pid);

/*
 * The same, stopping the process meanwhile when stop is set, whatever
 * opts.stop says.  Attaching works after the start as before it: the
 * process's records go through the queue, stamped before its events.
 */
int sp_capture_attach_stop(struct sp_capture *r, pid_t pid, bool stop);

/* The same for exactly the threads tids[0..n) of process pid (as perf -t). */
int sp_capture_attach_threads(struct sp_capture *r, pid_t pid, const pid_t *tids, size_t n);

/*
 * With opts.system_wide: opens and enables one event per CPU for every
 * task, then synthesizes the records of every process in /proc (and of
 * the idle task, pid 0, named "swapper"), stamped before the first
 * event opened.  Returns 0, or -1 (SP_ERR_PERMISSION when the kernel
 * refuses CPU-wide events; the message names the setting that allows
 * them).  No process is a target: polling goes on until told to stop.
 */
int sp_capture_attach_system(struct sp_capture *r);

/*
 * Starts argv[0] (searched in PATH) as a child held before exec; events
 * are opened on it now and enabled when it execs.  *child receives its
 * pid.  Returns 0, or -1 when it cannot be started or profiled.
 */
int sp_capture_launch(struct sp_capture *r, char *const argv[], pid_t *child);

/*
 * Writes the header (with the tool's argv and the target list) and the
 * state read at attach, then lets a launched command exec.
 */
int sp_capture_start(struct sp_capture *r, int argc, char **argv);

/*
 * Waits up to timeout_ms for data, then drains every ring buffer and
 * writes what is complete.  Returns 1 while some target is alive, 0 when
 * every target has exited, -1 on an error (a write error stops the
 * recording: see sp_writer_error()).
 */
int sp_capture_poll(struct sp_capture *r, int timeout_ms);

/* Opens events for threads of the targets that have none yet. */
int sp_capture_refresh_threads(struct sp_capture *r);

/*
 * The same for the threads of one process; returns the number of
 * threads added, or -1.
 */
int sp_capture_refresh_process(struct sp_capture *r, pid_t pid);

/*
 * Changes the user stack window of every sampling event (sp-capture
 * --stack-size auto): drains the rings, closes the events, and opens
 * them again with size bytes for the same threads (with inherit, for
 * every thread of the processes followed, whose inherited events closed
 * with their creator's) or CPUs.  A thread is not sampled between its
 * close and its open; one born meanwhile may get no events.  The summary
 * then says size as stack_size_chosen, chosen from stacks complete
 * stacks (stack_calibration_stacks).  Returns 0, or -1 (some events may
 * be missing).
 */
int sp_capture_set_stack_size(struct sp_capture *r, uint32_t size, uint64_t stacks);

/*
 * Ends the recording: disables sampling, drains once more, writes the
 * summary and flushes.  Returns 0 or -1.
 */
int sp_capture_finish(struct sp_capture *r);

/*
 * Continues every target the recorder stopped and has not yet continued.
 * Async-signal-safe: a fatal signal handler may call it.
 */
void sp_capture_continue_targets(void);

void sp_capture_get_stats(const struct sp_capture *r, struct sp_capture_stats *s);

/* Whether kernel sampling was asked for but denied (and dropped). */
bool sp_capture_kernel_fell_back(const struct sp_capture *r);

/*
 * The name asked for of event i when --event-fallback replaced it by
 * cpu-clock (its PMU could not be opened); NULL when it did not.
 */
const char *sp_capture_event_fell_back(const struct sp_capture *r, size_t i);

/* The launched command's wait status once it has ended; -1 before. */
int sp_capture_command_status(const struct sp_capture *r);

struct sp_summary_rec;

/*
 * The summary record's counters so far (at finish, as written); errors
 * points into r.  duration_ns runs from the start to now.
 */
void sp_capture_summary(const struct sp_capture *r, struct sp_summary_rec *s);

/* Whether a ring buffer holds records a poll would drain. */
bool sp_capture_has_pending(const struct sp_capture *r);

/*
 * Whether pid, a process given to attach or launch, still runs: 1, 0
 * once it has exited, -1 when it is not a target.
 */
int sp_capture_target_alive(struct sp_capture *r, pid_t pid);

/* How many targets still run, looked at now. */
unsigned sp_capture_targets_alive(struct sp_capture *r);

#endif
