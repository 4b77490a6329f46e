/*
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
