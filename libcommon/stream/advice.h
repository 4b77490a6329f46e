/* SPDX-License-Identifier: MIT
 * Findings: what went wrong in a recording and the change that fixes
 * it, in one set of words.  A tool that warns of a finding and sp-stat,
 * which lists it, both take the text from here, so that a user who
 * reads the warning finds the same line in sp-stat's diagnosis.
 *
 * Each function fills a struct sp_finding from the numbers it is
 * given; none of them prints.  A tool prints the two halves as it
 * likes, for instance "WHAT; FIX" after its program name.
 */
#ifndef SP_ADVICE_H
#define SP_ADVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/vocab.h"

struct sp_finding {
	char what[512];	/* the problem, with its counts and fraction */
	char fix[1024];	/* the exact change */
};

/* How the processes were chosen, for the advice on a recording without samples. */
enum sp_target { SP_TARGET_ATTACHED, SP_TARGET_LAUNCHED, SP_TARGET_UNKNOWN };

/*
 * The degraded share a tool warns of and sp-stat lists: above it, a
 * usable recording is degraded.
 */
#define SP_DEGRADED_PCT 5.0

/* No sample and nothing lost: the processes used no CPU while recorded. */
void sp_finding_no_samples(struct sp_finding *f, enum sp_target how, double seconds);

/* Events lost but no sample kept: the ring buffers overran from the start. */
void sp_finding_all_lost(struct sp_finding *f, uint64_t lost, uint64_t frequency,
			 uint64_t stack_size, uint64_t mmap_pages);

/* Some events lost (lost of lost + samples). */
void sp_finding_lost(struct sp_finding *f, uint64_t lost, uint64_t samples, uint64_t frequency,
		     uint64_t poll_ms, uint64_t mmap_pages);

/*
 * Module files not found by sp-unwind or sp-symbolize (missing of all);
 * archive, when not NULL, is the directory the recording was archived
 * in with sp-capture --archive ("" when it is not known).
 */
void sp_finding_missing_modules(struct sp_finding *f, uint64_t missing, uint64_t all,
				const char *archive);

/*
 * The fix for stacks that ended for reason e in native code: archive as
 * for sp_finding_missing_modules; full when the stacks that hit
 * --max-depth had filled their copy too (the unwind record's
 * max_depth_full).  The string lives until the next call.
 */
const char *sp_end_remedy(enum sp_unwind_end e, const char *archive, bool full);

/*
 * User stacks that did not reach their thread's entry (complete of
 * user), most for main_reason (sp_unwind_end_description of the
 * reason), and the fix: sp_end_remedy's, or a runtime's own.
 */
void sp_finding_incomplete(struct sp_finding *f, uint64_t complete, uint64_t user,
			   const char *main_reason, const char *fix);

/*
 * JIT frames left without a name although the runtime wrote a perf map
 * (CPython's -X perf trampolines exist only then): the map was moved
 * or deleted before sp-symbolize read it.
 */
void sp_finding_perf_map_moved(struct sp_finding *f, uint64_t unnamed, uint64_t jit_frames,
			       const char *runtime, const char *archive);

/* A JIT whose code a perf map or jitdump names, known by the program it runs in. */
enum sp_jit_runtime { SP_JIT_UNKNOWN, SP_JIT_NODE, SP_JIT_JVM };

/* The JIT runtime an executable is, by its name: node, nodejs, java. */
enum sp_jit_runtime sp_jit_runtime_of_exe(const char *path, size_t n);

/*
 * Whether one argument of a command line asks its runtime for a perf
 * map or a jitdump: node's --perf-basic-prof and --perf-prof, the JVM's
 * -XX:+DumpPerfMapAtExit.
 */
bool sp_jit_map_flag(const char *arg, size_t n);

/*
 * JIT frames left without a name (unnamed of jit_frames) by a runtime
 * that was not asked to write a perf map or a jitdump: how to get the
 * names of its functions, and for Java, complete stacks as well.
 */
void sp_finding_jit_no_map(struct sp_finding *f, uint64_t unnamed, uint64_t jit_frames,
			   enum sp_jit_runtime rt);

/*
 * A thread id given to sp-capture -p: the whole process tgid is
 * recorded, as perf record -p does; -t records the thread alone.
 */
void sp_finding_pid_is_thread(struct sp_finding *f, uint64_t tid, uint64_t tgid);

/*
 * The fix for module files not found, or found with another identity,
 * for processes in a container (another mount namespace); archive as
 * for sp_finding_missing_modules.  The string lives until the next call.
 */
const char *sp_container_remedy(const char *archive);

/*
 * Stacks of processes in containers (stops of user) that ended where a
 * module file was not found or was another file than the recorded one.
 */
void sp_finding_container_files(struct sp_finding *f, uint64_t stops, uint64_t user,
				const char *archive);

/*
 * Processes that used almost no CPU in a recording of at least half a
 * second: fewer than SP_FEW_SAMPLES samples, under 1% of one CPU at the
 * rate asked for.  The tools apply it to a launched command, which a
 * user expects to work, not to a service attached to, which may idle.
 */
#define SP_FEW_SAMPLES 10
bool sp_few_samples(uint64_t samples, double seconds, uint64_t frequency);

/* The words of sp_finding_no_samples, for a recording of these few samples. */
void sp_finding_few_samples(struct sp_finding *f, enum sp_target how, double seconds,
			    uint64_t samples);

/* Kernel frames left as addresses: recorded on another boot, no --kallsyms given. */
void sp_finding_kallsyms_other_boot(struct sp_finding *f, uint64_t address_only, uint64_t kernel_frames);

/*
 * Why /proc/kallsyms shows zero addresses to a user without root, from
 * the two settings that decide it (-1: unknown): with kptr_restrict 0
 * it is perf_event_paranoid above 1, with 1 the lack of CAP_SYSLOG,
 * with 2 nothing but root helps.  Used for --kallsyms-out, --archive
 * and sp-symbolize's reading of /proc/kallsyms alike.
 */
void sp_finding_kallsyms_hidden(struct sp_finding *f, long paranoid, long kptr_restrict);

/* Files sp-capture --archive could not keep; kallsyms says whether kallsyms is among them. */
void sp_finding_archive_failed(struct sp_finding *f, uint64_t failed, bool kallsyms);

/*
 * A measure asked of a stream of stage "stage" that only a stream of
 * stage "needed" has, which the tool makes.
 */
void sp_finding_not_at_stage(struct sp_finding *f, const char *measure, const char *stage,
			     const char *needed, const char *tool);

#endif
