/* SPDX-License-Identifier: MIT
 * The shared vocabulary of the stream: error kinds, stages, frame flags
 * and the reasons a stack ends, each with its stable name.  Every stage
 * and every exporter takes these from here; format/sp-stream.md
 * documents the same values.
 */
#ifndef SP_VOCAB_H
#define SP_VOCAB_H

/*
 * The error kinds counted in a summary's error_stats.
 * X(enum suffix, stable name, description).
 */
#define SP_ERROR_KINDS(X) \
	X(NO_USER_REGS, "no_user_regs", \
	  "sample without user registers (the thread ran kernel code only)") \
	X(NO_USER_STACK, "no_user_stack", \
	  "sample without a user stack copy") \
	X(BAD_KERNEL_RECORD, "bad_kernel_record", \
	  "a ring-buffer record shorter than its fields; it was skipped") \
	X(PROC_UNREADABLE, "proc_unreadable", \
	  "a /proc file of a profiled process could not be read") \
	X(BUILD_ID_UNREADABLE, "build_id_unreadable", \
	  "a mapped file's build-id could not be read") \
	X(THREAD_ATTACH_FAILED, "thread_attach_failed", \
	  "an event could not be opened for a thread (it may have exited)") \
	X(UNKNOWN_PROCESS, "unknown_process", \
	  "a sample from a process with no process record before it") \
	X(ARCHIVE_FAILED, "archive_failed", \
	  "a file could not be kept in the --archive directory")

enum sp_error_kind {
#define SP_X_ENUM(e, s, d) SP_E_##e,
	SP_ERROR_KINDS(SP_X_ENUM)
#undef SP_X_ENUM
	SP_E_COUNT
};

const char *sp_errkind_name(enum sp_error_kind k);
const char *sp_errkind_description(enum sp_error_kind k);

/* Stages of processing a stream has been through. */
enum sp_stage {
	SP_STAGE_RAW = 0,
	SP_STAGE_UNWOUND,
	SP_STAGE_SYMBOLIZED,
};

/* "raw", "unwound" or "symbolized". */
const char *sp_stage_name(enum sp_stage s);

/*
 * Flags of a frame in a "stack" record (the fourth element of each
 * frame).  The kind is in the low two bits.
 */
#define SP_FRAME_KIND_MASK	0x3u
#define SP_FRAME_USER		0x0u
#define SP_FRAME_KERNEL		0x1u
#define SP_FRAME_JIT		0x2u
#define SP_FRAME_RETADDR	0x4u	/* a return address: look up addr - 1 */
#define SP_FRAME_MARKER		0x8u	/* not a frame: why the stack ends */

/*
 * Flags of a symbolized "frame" record.  RETADDR and MARKER keep the
 * values of the stack frame flags they come from.
 */
#define SP_SYM_HIDDEN		0x1u	/* hidden in a profiler's default view */
#define SP_SYM_INLINE		0x2u	/* the frame is an inlined call */
#define SP_SYM_RETADDR		SP_FRAME_RETADDR
#define SP_SYM_MARKER		SP_FRAME_MARKER
#define SP_SYM_KERNEL		0x100u	/* a kernel frame */
#define SP_SYM_JIT		0x200u	/* JIT code (perf map, anonymous memory) */

/* Why a stack ends: 0 for a complete stack, else the marker's code. */
#define SP_UNWIND_ENDS(X) \
	X(COMPLETE, 0, "complete", "the stack reached the thread's entry") \
	X(TRUNCATED, 1, "truncated", "the unwinder ran out of stack copy: the copy filled its window (with --call-graph fp, the kernel's walk reached its limit) and the stack goes on beyond it") \
	X(NO_CFI, 2, "no_cfi", "no unwind information for the address, and the frame-pointer walk failed") \
	X(MISSING_MODULE, 3, "missing_module", "the module's file was not found") \
	X(BUILD_ID_MISMATCH, 4, "build_id_mismatch", "the module file found has another build-id; it was not used") \
	X(BAD_CFA, 5, "bad_cfa", "the unwind information gave an impossible frame or an unrecoverable register") \
	X(MAX_DEPTH, 6, "max_depth", "the stack reached the frame limit (--max-depth)") \
	X(NO_USER_STACK, 7, "no_user_stack", "the sample has no stack copy: only the interrupted instruction is known") \
	X(OUTSIDE_COPY, 8, "outside_copy", "a read fell outside the stack copy, which did not fill its window") \
	X(CYCLE, 9, "cycle", "the stack pointer did not move up: the walk would loop") \
	X(NO_MAPPING, 10, "no_mapping", "the address lies in no mapping the stream describes") \
	X(BAD_FP, 11, "bad_fp", "in code without CFI, or in the kernel's walk of --call-graph fp, the frame pointers stop short of the thread's entry: the code keeps no frame pointers") \
	X(JIT_NO_MAP, 12, "jit_no_map", "the walk stopped in JIT code that neither a frame record nor a jitdump's unwinding information could step over")

enum sp_unwind_end {
#define SP_X_END(e, n, s, d) SP_END_##e = n,
	SP_UNWIND_ENDS(SP_X_END)
#undef SP_X_END
	SP_END_COUNT
};

const char *sp_unwind_end_name(enum sp_unwind_end e);
const char *sp_unwind_end_description(enum sp_unwind_end e);

#endif
