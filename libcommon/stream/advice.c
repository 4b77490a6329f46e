/* SPDX-License-Identifier: MIT
 * Findings and their fixes, worded once for every tool (see advice.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stream/advice.h"

static void say(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

#define WHAT(f, ...) say((f)->what, sizeof((f)->what), __VA_ARGS__)
#define FIX(f, ...) say((f)->fix, sizeof((f)->fix), __VA_ARGS__)

static double share(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/*
 * No samples, or few: head is "no samples" or "only N samples", used
 * "no" or "almost no"; the fix is the same.
 */
static void little_cpu(struct sp_finding *f, enum sp_target how, double seconds,
		       const char *head, const char *used)
{
	switch (how) {
	case SP_TARGET_ATTACHED:
		WHAT(f, "%s: the processes attached with -p used %s CPU in the %.1f s recorded "
		     "(they slept or waited)", head, used, seconds);
		FIX(f, "record while the process works (sp-capture -p PID during the work, with a "
		    "--duration that covers it), or launch the work itself: sp-capture -- COMMAND");
		break;
	case SP_TARGET_LAUNCHED:
		WHAT(f, "%s: the launched command used %s CPU in the %.1f s recorded (a program "
		     "that only sleeps or waits, such as a shell waiting for a child that sleeps)",
		     head, used, seconds);
		FIX(f, "launch the program that does the work (sp-capture -- PROGRAM, or exec it from "
		    "a wrapper: sh -c 'exec PROGRAM'), or attach to it with -p PID while it works");
		break;
	default:
		WHAT(f, "%s: the profiled processes used %s CPU in the %.1f s recorded", head, used,
		     seconds);
		FIX(f, "record while the program works: launch it (sp-capture -- COMMAND) or attach "
		    "to it with -p PID during the work");
		break;
	}
}

void sp_finding_no_samples(struct sp_finding *f, enum sp_target how, double seconds)
{
	little_cpu(f, how, seconds, "no samples", "no");
}

bool sp_few_samples(uint64_t samples, double seconds, uint64_t frequency)
{
	/* A command of a few milliseconds may well be sampled once: that is all it did. */
	return samples < SP_FEW_SAMPLES && seconds >= 0.5 &&
	       100.0 * (double)samples < seconds * (double)frequency;
}

void sp_finding_few_samples(struct sp_finding *f, enum sp_target how, double seconds,
			    uint64_t samples)
{
	char head[64];
	snprintf(head, sizeof(head), "only %" PRIu64 " sample%s", samples, samples == 1 ? "" : "s");
	little_cpu(f, how, seconds, head, "almost no");
}

void sp_finding_all_lost(struct sp_finding *f, uint64_t lost, uint64_t frequency,
			 uint64_t stack_size, uint64_t mmap_pages)
{
	WHAT(f, "no samples: all %" PRIu64 " events were lost (100%%), the ring buffers "
	     "(--mmap-pages %" PRIu64 ") overran before a sample was kept", lost, mmap_pages);
	FIX(f, "raise sp-capture --mmap-pages (now %" PRIu64 ", a power of two; the default is 2048), "
	    "or lower -F (now %" PRIu64 ") or --stack-size (now %" PRIu64 "): each sample takes "
	    "about its stack window in the buffer", mmap_pages, frequency, stack_size);
}

void sp_finding_lost(struct sp_finding *f, uint64_t lost, uint64_t samples, uint64_t frequency,
		     uint64_t poll_ms, uint64_t mmap_pages)
{
	WHAT(f, "%" PRIu64 " events lost (%.1f%%): the ring buffers overran", lost,
	     share(lost, lost + samples));
	FIX(f, "lower -F (now %" PRIu64 "), drain more often (--poll-ms, now %" PRIu64 "), use bigger "
	    "buffers (--mmap-pages, now %" PRIu64 ", a power of two), or profile fewer processes",
	    frequency, poll_ms, mmap_pages);
}

void sp_finding_missing_modules(struct sp_finding *f, uint64_t missing, uint64_t all,
				const char *archive)
{
	WHAT(f, "%" PRIu64 " of %" PRIu64 " module files (%.1f%%) were not found: their frames have "
	     "no names and their stacks end there", missing, all, share(missing, all));
	if (archive)
		FIX(f, "the recording was archived with sp-capture --archive: give sp-unwind and "
		    "sp-symbolize --archive %s", *archive ? archive : "DIR");
	else
		FIX(f, "give sp-unwind and sp-symbolize the recorded files: --root DIR (the recording "
		    "host's root) or --module-dir DIR (build-id layout); or record with sp-capture "
		    "--archive DIR, which keeps them");
}

const char *sp_end_remedy(enum sp_unwind_end e, const char *archive, bool full)
{
	static struct sp_finding f;
	switch (e) {
	case SP_END_TRUNCATED:
		return "raise sp-capture --stack-size (up to 65528); with --call-graph fp, "
		       "kernel.perf_event_max_stack";
	case SP_END_MISSING_MODULE:
		sp_finding_missing_modules(&f, 0, 0, archive);
		return f.fix;
	case SP_END_BUILD_ID_MISMATCH:
		return "the binaries changed after the recording: give the exact files with "
		       "--module-dir (sp-capture --archive keeps them)";
	case SP_END_NO_CFI:
		return "build with unwind tables (-fasynchronous-unwind-tables) or frame pointers "
		       "(-fno-omit-frame-pointer)";
	case SP_END_BAD_FP:
		return "build the code without unwind tables with frame pointers "
		       "(-fno-omit-frame-pointer), or give it unwind tables (-fasynchronous-unwind-tables); "
		       "a recording made with sp-capture --call-graph fp needs frame pointers in every "
		       "library on the stack, the C library's start-up code too: record with "
		       "--call-graph dwarf";
	case SP_END_JIT_NO_MAP:
		return "have the JIT keep frame pointers in its code and describe the code in a perf map "
		       "(/tmp/perf-PID.map) or a jitdump (jit-PID.dump)";
	case SP_END_MAX_DEPTH:
		return full ? "raise sp-unwind --max-depth and sp-capture --stack-size (at most 65528) "
			      "both: the copy ended before the stack did too" :
			      "raise sp-unwind --max-depth";
	case SP_END_NO_USER_STACK:
		return "the thread ran kernel code only, or the stack copy failed: check error_stats";
	default:
		return "check the binaries and their unwind tables";
	}
}

void sp_finding_incomplete(struct sp_finding *f, uint64_t complete, uint64_t user,
			   const char *main_reason, const char *fix)
{
	WHAT(f, "%" PRIu64 " of %" PRIu64 " stacks (%.1f%%) do not reach their thread's entry, "
	     "most because %s", user - complete, user, share(user - complete, user), main_reason);
	FIX(f, "%s", fix);
}

void sp_finding_perf_map_moved(struct sp_finding *f, uint64_t unnamed, uint64_t jit_frames,
			       const char *runtime, const char *archive)
{
	WHAT(f, "%" PRIu64 " of %" PRIu64 " frames (%.1f%%) of %s JIT code have no name although it "
	     "wrote a perf map: /tmp/perf-PID.map was moved or deleted before sp-symbolize read it, "
	     "or is on another host", unnamed, jit_frames, share(unnamed, jit_frames), runtime);
	if (archive)
		FIX(f, "give sp-symbolize --archive %s, which holds the perf maps", *archive ? archive : "DIR");
	else
		FIX(f, "run sp-symbolize on the recording host while /tmp/perf-PID.map is there, or "
		    "record with sp-capture --archive DIR, which keeps the perf maps, and give "
		    "sp-symbolize --archive DIR");
}

void sp_finding_kallsyms_other_boot(struct sp_finding *f, uint64_t address_only, uint64_t kernel_frames)
{
	WHAT(f, "%" PRIu64 " of %" PRIu64 " kernel frames (%.1f%%) have no name: the stream was "
	     "recorded on another host or boot, where this host's /proc/kallsyms does not apply",
	     address_only, kernel_frames, share(address_only, kernel_frames));
	FIX(f, "give sp-symbolize --kallsyms FILE, the kallsyms of the recording host and boot "
	    "(saved there with sp-capture --kallsyms-out FILE, or kept by sp-capture --archive DIR: "
	    "then give sp-symbolize --archive DIR)");
}

void sp_finding_kallsyms_hidden(struct sp_finding *f, long paranoid, long kptr_restrict)
{
	if (kptr_restrict == 0 && paranoid > 1) {
		WHAT(f, "/proc/kallsyms shows zero addresses to this user: kernel.perf_event_paranoid "
		     "is %ld, and with kernel.kptr_restrict 0 addresses are shown only when it is 1 "
		     "or less", paranoid);
		FIX(f, "run as root (or with CAP_SYSLOG), or set kernel.perf_event_paranoid to 1 "
		    "(sysctl -w kernel.perf_event_paranoid=1); kernel.kptr_restrict is not the cause");
	} else if (kptr_restrict == 1) {
		WHAT(f, "/proc/kallsyms shows zero addresses to this user: kernel.kptr_restrict is 1, "
		     "which shows them only with CAP_SYSLOG");
		FIX(f, "run as root (or with CAP_SYSLOG), or set kernel.kptr_restrict to 0 and "
		    "kernel.perf_event_paranoid to 1 or less");
	} else if (kptr_restrict >= 2) {
		WHAT(f, "/proc/kallsyms shows zero addresses to every user: kernel.kptr_restrict is %ld",
		     kptr_restrict);
		FIX(f, "set kernel.kptr_restrict to 1 and save kallsyms as root, or to 0 with "
		    "kernel.perf_event_paranoid 1 or less");
	} else {
		WHAT(f, "/proc/kallsyms showed zero addresses to the recording user: kernel.kptr_restrict "
		     "and kernel.perf_event_paranoid decide it (kptr_restrict 0 shows them only when "
		     "perf_event_paranoid is 1 or less, kptr_restrict 1 only with CAP_SYSLOG)");
		FIX(f, "record as root (or with CAP_SYSLOG), or lower those settings on the recording "
		    "host");
	}
}

void sp_finding_archive_failed(struct sp_finding *f, uint64_t failed, bool kallsyms)
{
	WHAT(f, "%" PRIu64 " file%s could not be kept in the --archive directory%s", failed,
	     failed == 1 ? "" : "s",
	     kallsyms ? ", kallsyms among them: the recording's kernel frames cannot be named elsewhere" : "");
	if (kallsyms)
		FIX(f, "record as root: as a user, /proc/kallsyms shows zero addresses unless "
		    "kernel.perf_event_paranoid is 1 or less with kernel.kptr_restrict 0, or the "
		    "recorder has CAP_SYSLOG with kernel.kptr_restrict 1 (sp-stat --system names "
		    "the setting of this host)");
	else
		FIX(f, "make the --archive directory writable with room for the files, and record "
		    "again; sp-capture's warnings name each file");
}

void sp_finding_not_at_stage(struct sp_finding *f, const char *measure, const char *stage,
			     const char *needed, const char *tool)
{
	WHAT(f, "%s cannot be measured: the stream is %s, not %s", measure, stage, needed);
	FIX(f, "run %s on it first", tool);
}

enum sp_jit_runtime sp_jit_runtime_of_exe(const char *path, size_t n)
{
	const char *slash = memrchr(path, '/', n), *b = slash ? slash + 1 : path;
	size_t bn = (size_t)(path + n - b);
	if ((bn == 4 && memcmp(b, "node", 4) == 0) || (bn == 6 && memcmp(b, "nodejs", 6) == 0))
		return SP_JIT_NODE;
	if (bn == 4 && memcmp(b, "java", 4) == 0)
		return SP_JIT_JVM;
	return SP_JIT_UNKNOWN;
}

bool sp_jit_map_flag(const char *arg, size_t n)
{
	static const char *const flags[] = {
		"--perf-basic-prof", "--perf-basic-prof-only-functions", "--perf-prof",
		"-XX:+DumpPerfMapAtExit",
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (n == strlen(flags[i]) && memcmp(arg, flags[i], n) == 0)
			return true;
	return false;
}

void sp_finding_jit_no_map(struct sp_finding *f, uint64_t unnamed, uint64_t jit_frames,
			   enum sp_jit_runtime rt)
{
	switch (rt) {
	case SP_JIT_NODE:
		WHAT(f, "%" PRIu64 " of %" PRIu64 " JIT frames (%.1f%%) of Node.js (V8) have no name: "
		     "node ran without --perf-basic-prof or --perf-prof, so it wrote no perf map or "
		     "jitdump to name its JavaScript functions", unnamed, jit_frames,
		     share(unnamed, jit_frames));
		FIX(f, "run node with --perf-basic-prof (the names in /tmp/perf-PID.map) or --perf-prof "
		    "(a jitdump, which sp-capture carries in the stream; add --perf-prof-unwinding-info), "
		    "and --interpreted-frames-native-stack so that interpreted functions have frames "
		    "of their own");
		break;
	case SP_JIT_JVM:
		WHAT(f, "%" PRIu64 " of %" PRIu64 " JIT frames (%.1f%%) of Java (JVM) have no name: "
		     "the JVM wrote no perf map to name its compiled Java methods (it writes none "
		     "unless asked)", unnamed, jit_frames, share(unnamed, jit_frames));
		FIX(f, "have the JVM write /tmp/perf-PID.map: on Java 17 or later run java with "
		    "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, or run jcmd PID "
		    "Compiler.perfmap while it works; before 17, load a perf map agent (perf-map-agent); "
		    "and add -XX:+PreserveFramePointer, without which stacks stop in compiled code");
		break;
	default:
		WHAT(f, "%" PRIu64 " of %" PRIu64 " JIT frames (%.1f%%) of an unknown runtime have no "
		     "name: the runtime wrote no perf map or jitdump to name its code", unnamed,
		     jit_frames, share(unnamed, jit_frames));
		FIX(f, "have the JIT describe its code in a perf map (/tmp/perf-PID.map) or a jitdump "
		    "(jit-PID.dump), and keep frame pointers in it");
		break;
	}
}

void sp_finding_pid_is_thread(struct sp_finding *f, uint64_t tid, uint64_t tgid)
{
	WHAT(f, "-p %" PRIu64 " is a thread of process %" PRIu64 ", not a process: the whole "
	     "process %" PRIu64 " is sampled, every thread of it, as perf record -p does", tid, tgid,
	     tgid);
	FIX(f, "to sample that thread alone give sp-capture -t %" PRIu64 "; to sample the process, "
	    "name it: -p %" PRIu64, tid, tgid);
}

const char *sp_container_remedy(const char *archive)
{
	static char fix[512];
	if (archive)
		snprintf(fix, sizeof(fix), "the recording was archived with sp-capture --archive, which "
			 "kept the container's files: give sp-unwind and sp-symbolize --archive %s",
			 *archive ? archive : "DIR");
	else
		snprintf(fix, sizeof(fix), "the files are in the container's own root, not at the "
			 "host's paths: unwind and symbolize while the container runs (its files are "
			 "read through /proc/PID/root), or record with sp-capture --archive DIR, which "
			 "keeps them, and give sp-unwind and sp-symbolize --archive DIR; or give them "
			 "--root DIR, the container's root filesystem");
	return fix;
}

void sp_finding_container_files(struct sp_finding *f, uint64_t stops, uint64_t user,
				const char *archive)
{
	WHAT(f, "%" PRIu64 " of %" PRIu64 " stacks (%.1f%%) are of processes in a container "
	     "(another mount namespace) and end where a module file was not found, or was "
	     "another file than the one recorded", stops, user, share(stops, user));
	FIX(f, "%s", sp_container_remedy(archive));
}
