/* SPDX-License-Identifier: MIT
 * The recorder's internals, shared by the files of the capture layer and
 * by nothing else (the public surface is capture/recorder.h).
 *
 *   events.c     perf events: attributes, one event per (thread, CPU,
 *                event of -e), permission hints, enabling, closing, lost
 *                counts
 *   evname.c     event names (-e) turned into a type and config
 *   ring.c       ring buffers: sizing, mapping, and converting each
 *                kernel record into a record in the queue
 *   drain.c      the drain of every ring, in time-ordered slices
 *   sample.c     samples: checked and queued as they came, written with
 *                their stack copy's shared tail
 *   ordered.c    the queue of stream records and its flush in time order
 *   synthetic.c  records synthesized from /proc at attach, the build-id
 *                cache, and the records both paths write (map, runtime,
 *                archive)
 *   attach.c     attaching to processes (events on, then /proc read),
 *                launching a command, SIGSTOP and SIGCONT of targets
 *                with --stop, reaping the command
 *   recorder.c   the handle: new, free, start (header), poll, finish
 *                (summary)
 *   vdso.c       the vDSO's image, read from the process, for the stream
 *   jitdump.c    jitdump files the processes announce, read as they grow
 *   system.c     system-wide recording (-a): one event per CPU for every
 *                task, and every process in /proc synthesized
 *   offcpu.c     --off-cpu: each thread's switch-out sample held until it
 *                runs again, then written weighted by the time it was off
 *   perfdata*.c  perf.data read, its records given to ring.c and sample.c
 *                in a ring's layout (perfdata.h, perfdata-int.h)
 *
 * Invariants:
 * - Every record but the header and the summary goes through the queue,
 *   and is packed only when it is written: sp_rec_q_begin() notes where
 *   it starts in qbuf, the converter appends a struct of its own (and the
 *   strings it names), sp_rec_q_end() files it under its kind and time.
 *   sp_rec_q_flush() writes the records stamped at or before a limit, in
 *   (time, seq) order, each through its kind's writer with sp_mapw (so
 *   nothing counts keys by hand).  A drain writes up to the instant it
 *   began, since every record stamped before it is already in its ring,
 *   in slices (drain.c): each ends at a time every ring has given up all
 *   it holds up to, so a drain holds about a slice, not all it took.
 * - A sample's stack copy shares its tail with the copy written just
 *   before it for the thread, in time order, which is known only when it
 *   is written: sp_rec_write_sample() is the one caller of
 *   sp_ustack_encode().
 * - rings[ci].fd is the fd of one event in events[] (the first opened on
 *   that CPU) or -1; closing that event unmaps the ring.
 * - procs maps a pid to a struct sp_rec_proc it owns; tids holds every
 *   thread id seen (the value is only a marker); ustacks holds the last
 *   stack copy written for each thread, forgotten when its exit record is
 *   written (which says "ustack_reset"); bids owns its entries.
 * - Functions returning int return 0 or -1 with the message in r->err.
 *   Nothing in the layer prints or exits.
 * - stopped_pids (attach.c) is the only global: it is read by
 *   sp_capture_continue_targets() from signal handlers.
 */
#ifndef SP_CAPTURE_INTERNAL_H
#define SP_CAPTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/recorder.h"
#include "stream/stream.h"
#include "stream/ustack.h"
#include "stream/vocab.h"
#include "util/buildid.h"
#include "util/error.h"
#include "util/hashmap.h"
#include "util/procfs.h"
#include "util/strbuf.h"

#if defined(__x86_64__)
/* perf_regs bits: ax bx cx dx si di bp sp ip (0-8) and r8-r15 (16-23). */
#define SP_REC_REGS_MASK 0xff01ffull
#define SP_REC_NREGS 17
#define SP_REC_SP_INDEX 7
#elif defined(__aarch64__)
/* perf_regs bits 0-32: x0-x29, lr, sp, pc. */
#define SP_REC_REGS_MASK 0x1ffffffffull
#define SP_REC_NREGS 33
#define SP_REC_SP_INDEX 31
#else
#error "stackpulse records registers for x86_64 and aarch64 only"
#endif

#define SP_REC_MAX_CPUS 1024

/* One CPU's ring buffer, shared by the events of that CPU. */
struct sp_rec_ring {
	int fd;			/* the event whose buffer this is; -1 for none */
	unsigned char *base;	/* the control page, then the data */
	size_t data_size;
};

struct sp_rec_event {
	int fd;
	pid_t pid, tid;
	int cpu;
	int ev;			/* its index in ev[] */
};

/* What the recorder knows of a process. */
struct sp_rec_proc {
	pid_t pid;
	bool cpython;
	bool alive;
	uint64_t start_key;	/* start_time of its process record, or its fork's time */
	uid_t uid;		/* its owner, for the trust rules of its perf map */
	/*
	 * In a container: its files are read inside /proc/PID/root, never at
	 * the host path (own_root), and its perf map is perf-NSPID.map
	 * (nspid, 0 when it shares our PID namespace or is unknown).
	 */
	bool own_root;
	uint32_t nspid;
};

/* A process given to attach or launch. */
struct sp_rec_target {
	pid_t pid;
	int pidfd;		/* -1 when pidfd_open is unavailable */
	bool alive;
	bool launched;
};

/* The kinds of queued records, each with its own writer. */
enum sp_rec_kind {
	SP_REC_SAMPLE,		/* sample.c */
	SP_REC_COMM,		/* ring.c */
	SP_REC_TASK,
	SP_REC_LOST,
	SP_REC_THROTTLE,
	SP_REC_MAP,		/* synthetic.c */
	SP_REC_RUNTIME,
	SP_REC_ARCHIVE,
	SP_REC_PROCESS,
	SP_REC_THREAD,
	SP_REC_JITDUMP,		/* jitdump.c */
	SP_REC_IMAGE,		/* vdso.c */
	SP_REC_SWITCH,		/* offcpu.c */
};

/* A record waiting in the queue to be written in time order. */
struct sp_rec_qent {
	uint64_t time, seq;
	size_t off, len;	/* its bytes in qbuf */
	pid_t sample_pid;	/* a sample's pid, checked when written; else 0 */
	enum sp_rec_kind kind;
};

/* A build-id read from a file, cached by (device, inode). */
struct sp_rec_bid {
	struct sp_hashmap_entry e;
	uint64_t dev, ino;
	int len;		/* -1: the file had none, or was unreadable */
	unsigned char id[SP_BUILD_ID_MAX];
};

/* A build-id of a vDSO image already in the stream (vdso.c). */
struct sp_rec_image {
	int len;
	unsigned char id[SP_BUILD_ID_MAX];
};

struct sp_capture {
	struct sp_capture_options o;
	struct sp_writer *w;
	struct sp_error err;

	int ncpus;
	int cpus[SP_REC_MAX_CPUS];
	struct sp_rec_ring rings[SP_REC_MAX_CPUS];
	size_t ring_pages;

	struct sp_rec_event *events;
	size_t nevents, allocevents;

	/*
	 * The events sampled, in the stream's order (o.events, or cpu-clock);
	 * a hardware event replaced by cpu-clock (--event-fallback) keeps
	 * the name asked for in fell_back[i].  With more than one, samples
	 * carry PERF_SAMPLE_IDENTIFIER, and ids maps it to the index + 1.
	 */
	struct sp_event ev[SP_MAX_EVENTS];
	size_t nev;
	bool ev_opened[SP_MAX_EVENTS];
	const char *fell_back[SP_MAX_EVENTS];
	struct sp_u64map ids;
	int offcpu_ev;			/* the index of "off-cpu" in ev[], or -1 */
	struct sp_u64map offcpu;	/* tid -> struct sp_rec_offcpu: switched out, not yet back */
	uint64_t offcpu_intervals, offcpu_no_stack;

	struct sp_u64map procs;		/* pid -> struct sp_rec_proc */
	struct sp_u64map tids;		/* tid -> a marker: the threads seen */
	struct sp_ustack_cache ustacks;	/* the last stack copy of each thread */

	struct sp_rec_target *targets;
	size_t ntargets, alloctargets;
	pid_t *only_tids;		/* -t: the threads given, for the header */
	size_t nonly_tids, alloconly_tids;

	/* The launched command. */
	pid_t child;
	int go_fd, err_fd;
	int child_status;
	char **command;

	/* The queue. */
	struct sp_buf qbuf;
	struct sp_rec_qent *q;
	size_t nq, allocq;
	uint64_t seq;
	unsigned char *tmp;	/* a record that wraps around the ring's end */

	bool kernel_enabled, kernel_fell_back;
	uint32_t max_stack;		/* --call-graph fp: the kernel's limit on callchain entries */
	bool use_build_id, use_format_lost;
	bool imported;			/* perfdata*.c: the mapped files are not ours to read */
	bool started, finished;
	uint64_t start_ns, end_ns;

	struct sp_hashmap bids;		/* of struct sp_rec_bid, at most 4096 */
	struct sp_rec_image *images;	/* the vDSO images written */
	struct sp_rec_jit *jits;	/* the jitdump files announced (jitdump.c) */
	size_t njits, allocjits;
	uint64_t jit_read_ns, jit_floor;
	size_t nimages, allocimages;

	/* Counters for the summary. */
	uint64_t sample_events, samples, lost_events, lost_samples_format;
	uint64_t empty_stack, truncated, ignored_user, throttles;
	uint64_t skipped_no_pid, skipped_no_tid, skipped_no_time, skipped_no_frames;
	uint64_t errors[SP_E_COUNT];
	/* sp_capture_set_stack_size(): the window chosen, the stacks it was chosen from. */
	uint32_t stack_chosen;
	uint64_t stack_cal_stacks;
};

/* CLOCK_MONOTONIC in ns, the clock of the events and of the stream. */
uint64_t sp_rec_now_ns(void);

/* recorder.c */

/* The header's "reg_names": the registers samples carry, in order. */
struct sp_mapw;
void sp_rec_pack_reg_names(struct sp_mapw *m);

/* The record of pid; with create, added when absent.  NULL when absent or out of memory. */
struct sp_rec_proc *sp_rec_proc_get(struct sp_capture *r, pid_t pid, bool create);
/* Notes a thread id; true the first time it is seen. */
bool sp_rec_tid_note(struct sp_capture *r, pid_t tid);

/* events.c */

/*
 * Opens tid's events on every CPU: 0, 1 when the thread has gone, or -1.
 * Each is enabled once in its ring; with on_exec, at the thread's exec.
 */
int sp_rec_open_thread(struct sp_capture *r, pid_t pid, pid_t tid, bool on_exec);
/* The same for every thread of pid without events: 0, 1 when pid has gone, or -1. */
int sp_rec_open_threads(struct sp_capture *r, pid_t pid, uint64_t time, bool synth);
/* Opens CPU ci's event for every task, enabled at once: 0 or -1. */
int sp_rec_open_cpu(struct sp_capture *r, int ci);
void sp_rec_enable_events(struct sp_capture *r, size_t from);
void sp_rec_disable_events(struct sp_capture *r);
/* Closes events[from..], unmapping the rings they own. */
void sp_rec_close_events(struct sp_capture *r, size_t from);
void sp_rec_read_format_lost(struct sp_capture *r);
/*
 * Event ev's fixed period (-c, or a tracepoint's 1), which its samples
 * do not carry; 0 when it samples at -F's rate and they carry it.
 */
uint64_t sp_rec_fixed_period(const struct sp_capture *r, int ev);

/* ring.c */

size_t sp_rec_ring_pages(const struct sp_capture *r);
/* Redirects event fd into CPU ci's ring, mapping it first if need be: 0 or -1. */
int sp_rec_ring_attach(struct sp_capture *r, int fd, int ci);
void sp_rec_write_event(struct sp_capture *r, enum sp_rec_kind kind, const unsigned char *p);
/* Converts one kernel record, as a ring holds it, into the queue. */
void sp_rec_handle_record(struct sp_capture *r, const unsigned char *rec, size_t size);

/*
 * drain.c: takes what every ring holds stamped up to limit, in slices,
 * and writes it; flushes: 0 or -1.  Before the header, and with a limit
 * of 0, everything the rings hold is converted into the queue instead
 * and nothing after 0 is written.
 */
int sp_rec_drain(struct sp_capture *r, uint64_t limit);

/* sample.c */

void sp_rec_handle_sample(struct sp_capture *r, const unsigned char *rec, size_t size);
/*
 * Writes a queued sample of len bytes; an off-CPU one is handed to
 * offcpu.c instead, which writes it when its thread runs again, with
 * the time, period and preempted of the struct it passes as off.
 */
struct sp_rec_off {
	uint64_t time, period;
	bool preempted;
};
void sp_rec_write_sample(struct sp_capture *r, const unsigned char *p, size_t len,
			 const struct sp_rec_off *off);
/* The thread and time of a queued sample. */
void sp_rec_sample_tid_time(const unsigned char *p, uint32_t *pid, uint32_t *tid,
			    uint64_t *time);

/*
 * offcpu.c.  A context-switch record as the queue keeps it; in: the
 * thread runs again, else it left the CPU (preempted: while runnable).
 */
struct sp_rec_switch {
	uint32_t pid, tid;
	uint64_t time;
	bool in, preempted;
};
/* Queues a PERF_RECORD_SWITCH or SWITCH_CPU_WIDE. */
void sp_rec_offcpu_queue(struct sp_capture *r, const struct sp_rec_switch *s);
/* Keeps a thread's switch-out sample (len bytes, as queued). */
void sp_rec_offcpu_keep(struct sp_capture *r, const unsigned char *p, size_t len);
void sp_rec_write_switch(struct sp_capture *r, const unsigned char *p);
/* A thread has exited: what it held is dropped. */
void sp_rec_offcpu_forget(struct sp_capture *r, uint32_t tid);
/* At the end: every thread still off the CPU, written as off until end. */
void sp_rec_offcpu_end(struct sp_capture *r, uint64_t end);
void sp_rec_offcpu_release(struct sp_capture *r);

/*
 * ordered.c: queueing a record, as the first invariant says.  A queued
 * struct may point only to string constants: qbuf moves.  An error (out
 * of memory) is kept on the handle and returned by the next flush.
 */
static inline size_t sp_rec_q_begin(struct sp_capture *r)
{
	return r->qbuf.len;
}
static inline void sp_rec_q_add(struct sp_capture *r, const void *p, size_t n)
{
	if (n)
		sp_buf_add(&r->qbuf, p, n);
}
int sp_rec_q_end(struct sp_capture *r, enum sp_rec_kind kind, uint64_t time, size_t start);
/* Writes the records stamped at or before limit: 0, or -1 on a write error. */
int sp_rec_q_flush(struct sp_capture *r, uint64_t limit);

/* synthetic.c */

/*
 * Whether a mapping's path names a module file (not //anon, [vdso],
 * /memfd:..., nor a jitdump file, which is mapped only to announce it).
 */
bool sp_rec_is_file_path(const char *path);
int sp_rec_bid_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata);
/*
 * Notes whether pid is in another mount namespace than ours (its files
 * are then read inside its root) and its pid in its own PID namespace, on
 * its process state; the namespace's inode and that pid (0: ours) into
 * *mntns and *nspid when given.  A process whose root cannot be read
 * counts proc_unreadable.
 */
void sp_rec_proc_ns(struct sp_capture *r, pid_t pid, uint32_t *nspid, uint64_t *mntns);
/*
 * A mapped file's build-id into id: its length, 0 for none, -1 when
 * unreadable.  For a process with its own root, read through alt (its
 * map_files entry, or NULL) or inside that root, never at the host path.
 */
int sp_rec_build_id(struct sp_capture *r, pid_t pid, const char *path, const char *alt,
		    uint64_t dev, uint64_t ino, unsigned char *id);
/* via is a string constant: "exe", "libpython", "parent", "none". */
void sp_rec_queue_runtime(struct sp_capture *r, pid_t pid, uint64_t time,
			  bool cpython, const char *via);
/* A newly mapped file may make pid a CPython process: a runtime record then. */
void sp_rec_note_mapping_runtime(struct sp_capture *r, pid_t pid, const char *path,
				 uint64_t time);

/* A map record; fields the kernel did not give are marked absent. */
struct sp_rec_map {
	pid_t pid, tid;		/* tid 0: absent */
	uint64_t time, start, len, pgoff;
	const char *path;
	bool have_dev;		/* maj, min, ino */
	unsigned maj, min;
	uint64_t ino;
	int prot, flags;	/* flags < 0: absent */
	const unsigned char *build_id;
	int build_id_len;	/* <= 0: absent */
	const unsigned char *content_id;	/* 20 bytes, or NULL: absent */
	bool deleted;
};
void sp_rec_queue_map(struct sp_capture *r, const struct sp_rec_map *m);

/* An archive record: a file kept in the --archive directory. */
struct sp_rec_archive {
	uint64_t time;
	const char *kind;	/* a string constant: "module", "perf-map", "kallsyms" */
	const char *file;	/* its name in the archive */
	const char *path;	/* where it was found; NULL: absent */
	const unsigned char *id;
	int idlen;		/* <= 0: absent */
	bool content;		/* id is a content id, not a build-id */
	bool debug;
	pid_t pid;		/* 0: absent, with start_time */
	uint64_t start_time;
};
void sp_rec_queue_archive(struct sp_capture *r, const struct sp_rec_archive *a);
/*
 * With --archive, keeps a mapped file in the archive; a file without a
 * build-id is known by its content id, written to cid (*have_cid says so).
 */
void sp_rec_archive_map(struct sp_capture *r, pid_t pid, uint64_t time, uint64_t start,
			uint64_t end, const char *path, const unsigned char *bid, int bidlen,
			unsigned char *cid, bool *have_cid);
void sp_rec_synth_process(struct sp_capture *r, pid_t pid, const struct sp_proc_stat *st,
			  uint64_t time);
void sp_rec_synth_thread(struct sp_capture *r, pid_t pid, pid_t tid, uint64_t time);
/* Queues pid's executable mappings; returns why it is CPython, or NULL. */
const char *sp_rec_synth_maps(struct sp_capture *r, pid_t pid, uint64_t time);
void sp_rec_write_synth(struct sp_capture *r, enum sp_rec_kind kind, const unsigned char *p);

/*
 * vdso.c: the build-id of pid's [vdso] mapping [start, start + len) into
 * bid: its length, or 0 when the image could not be read (counted).  The
 * first time a build-id is seen, the image is queued, stamped 0: the next
 * flush writes it before every record not yet written, so before every
 * sample of every process that maps it, whichever CPU's ring held which
 * process's map.
 */
int sp_rec_vdso_identify(struct sp_capture *r, pid_t pid, uint64_t start, uint64_t len,
			 unsigned char *bid);
void sp_rec_write_image(struct sp_capture *r, const unsigned char *p);
/*
 * An imported recording's vDSO of build-id bid (NULL: of a recording
 * known otherwise to be of this kernel): this process's own image is
 * queued (once) when it has that build-id.  Returns the length of the
 * build-id written to out, 0 when the image is not the one.
 */
int sp_rec_vdso_own(struct sp_capture *r, const unsigned char *bid, int bidlen,
		    unsigned char *out);

/*
 * jitdump.c: a map record of pid's file [start, start + len) at path,
 * when the path is a jitdump file's (jit-PID.dump), makes the file read
 * from then on.  sp_rec_jitdump_read() queues what the files have gained,
 * at most every 100 ms unless last is set; the caller drains up to now
 * right after.
 */
bool sp_rec_is_jitdump_path(const char *path);
void sp_rec_jitdump_note(struct sp_capture *r, pid_t pid, uint64_t start, uint64_t len,
			 const char *path, uint64_t time);
void sp_rec_jitdump_read(struct sp_capture *r, uint64_t now, bool last);
void sp_rec_write_jitdump(struct sp_capture *r, const unsigned char *p);
/* With --archive: each file as it is now, and its archive record. */
void sp_rec_jitdump_archive(struct sp_capture *r, uint64_t end);
void sp_rec_jitdump_release(struct sp_capture *r);

/* attach.c */

/* Lets a launched command exec: 0, or -1 when it could not. */
int sp_rec_release_command(struct sp_capture *r);
/* Notes the command's wait status once it has ended. */
void sp_rec_reap_command(struct sp_capture *r);
/* Ends the command if it still runs: SIGTERM, then SIGKILL after 2 s. */
void sp_rec_end_command(struct sp_capture *r);

#endif
