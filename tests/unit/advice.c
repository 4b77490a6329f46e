/* SPDX-License-Identifier: MIT
 * stream/advice: the findings' words, and which setting is named as
 * hiding /proc/kallsyms for each combination the kernel has.
 */
#include <string.h>

#include "stream/advice.h"
#include "unit.h"

SP_TEST(advice_kallsyms_names_the_setting_that_applies)
{
	struct sp_finding f;
	/* kptr_restrict 0 hides addresses only through perf_event_paranoid above 1. */
	sp_finding_kallsyms_hidden(&f, 2, 0);
	SP_CHECK(strstr(f.what, "kernel.perf_event_paranoid is 2") != NULL);
	SP_CHECK(strstr(f.fix, "kernel.perf_event_paranoid to 1") != NULL);
	SP_CHECK(strstr(f.fix, "kptr_restrict is not the cause") != NULL);
	sp_finding_kallsyms_hidden(&f, 2, 1);
	SP_CHECK(strstr(f.what, "kernel.kptr_restrict is 1") != NULL);
	SP_CHECK(strstr(f.what, "CAP_SYSLOG") != NULL);
	sp_finding_kallsyms_hidden(&f, -1, 2);
	SP_CHECK(strstr(f.what, "to every user: kernel.kptr_restrict is 2") != NULL);
	sp_finding_kallsyms_hidden(&f, -1, -1);
	SP_CHECK(strstr(f.what, "decide it") != NULL);
}

SP_TEST(advice_counts_and_fractions)
{
	struct sp_finding f;
	sp_finding_lost(&f, 10, 990, 999, 100, 64);
	SP_CHECK_STR(f.what, "10 events lost (1.0%): the ring buffers overran");
	SP_CHECK(strstr(f.fix, "--mmap-pages, now 64, a power of two") != NULL);
	sp_finding_missing_modules(&f, 1, 4, "arch");
	SP_CHECK_STR(f.what, "1 of 4 module files (25.0%) were not found: their frames have no "
		     "names and their stacks end there");
	SP_CHECK_STR(f.fix, "the recording was archived with sp-capture --archive: give sp-unwind "
		     "and sp-symbolize --archive arch");
	sp_finding_missing_modules(&f, 1, 4, "");
	SP_CHECK(strstr(f.fix, "--archive DIR") != NULL);
	sp_finding_missing_modules(&f, 0, 0, NULL);
	SP_CHECK(strstr(f.what, "(0.0%)") != NULL);
	SP_CHECK(strstr(f.fix, "--root DIR") != NULL);
	sp_finding_archive_failed(&f, 2, false);
	SP_CHECK_STR(f.what, "2 files could not be kept in the --archive directory");
	sp_finding_not_at_stage(&f, "address-only frames", "unwound", "symbolized", "sp-symbolize");
	SP_CHECK_STR(f.what, "address-only frames cannot be measured: the stream is unwound, not symbolized");
	SP_CHECK_STR(f.fix, "run sp-symbolize on it first");
}

SP_TEST(advice_few_samples_is_almost_no_cpu)
{
	struct sp_finding f;
	/* sh -c 'sleep 1' at 999 Hz: a start-up sample or three. */
	SP_CHECK(sp_few_samples(3, 1.0, 999));
	SP_CHECK(!sp_few_samples(10, 1.0, 999));
	/* A command of a few milliseconds, sampled once: its CPU is all there was. */
	SP_CHECK(!sp_few_samples(1, 0.003, 999));
	SP_CHECK(!sp_few_samples(5, 0.05, 99));
	sp_finding_few_samples(&f, SP_TARGET_LAUNCHED, 1.0, 1);
	SP_CHECK(strncmp(f.what, "only 1 sample: the launched command used almost no CPU in the "
			 "1.0 s recorded", 70) == 0);
	struct sp_finding none;
	sp_finding_no_samples(&none, SP_TARGET_LAUNCHED, 1.0);
	SP_CHECK_STR(f.fix, none.fix);
	sp_finding_few_samples(&f, SP_TARGET_ATTACHED, 2.0, 4);
	SP_CHECK(strncmp(f.what, "only 4 samples: the processes attached with -p used almost no CPU",
			 64) == 0);
}

SP_TEST(advice_jit_runtimes_and_map_flags)
{
	struct sp_finding f;
	SP_CHECK(sp_jit_runtime_of_exe("/usr/bin/node", 13) == SP_JIT_NODE);
	SP_CHECK(sp_jit_runtime_of_exe("nodejs", 6) == SP_JIT_NODE);
	SP_CHECK(sp_jit_runtime_of_exe("/usr/lib/jvm/java-17-openjdk-amd64/bin/java", 43) == SP_JIT_JVM);
	SP_CHECK(sp_jit_runtime_of_exe("/usr/bin/node-gyp", 17) == SP_JIT_UNKNOWN);
	SP_CHECK(sp_jit_runtime_of_exe("/usr/bin/javac", 14) == SP_JIT_UNKNOWN);
	SP_CHECK(sp_jit_map_flag("--perf-basic-prof", 17));
	SP_CHECK(sp_jit_map_flag("-XX:+DumpPerfMapAtExit", 22));
	SP_CHECK(!sp_jit_map_flag("--perf-basic-prof-x", 19));
	SP_CHECK(!sp_jit_map_flag("-XX:+PreserveFramePointer", 25));
	sp_finding_jit_no_map(&f, 3, 4, SP_JIT_NODE);
	SP_CHECK(strncmp(f.what, "3 of 4 JIT frames (75.0%) of Node.js (V8) have no name: ", 56) == 0);
	SP_CHECK(strstr(f.fix, "--perf-basic-prof") && strstr(f.fix, "--perf-prof "));
	sp_finding_jit_no_map(&f, 1, 1, SP_JIT_JVM);
	SP_CHECK(strstr(f.fix, "-XX:+DumpPerfMapAtExit") && strstr(f.fix, "Compiler.perfmap") &&
		 strstr(f.fix, "-XX:+PreserveFramePointer"));
	sp_finding_pid_is_thread(&f, 4243, 4242);
	SP_CHECK_STR(f.fix, "to sample that thread alone give sp-capture -t 4243; to sample the "
		     "process, name it: -p 4242");
	SP_CHECK(strstr(sp_container_remedy("arch"), "--archive arch") != NULL);
	SP_CHECK(strstr(sp_container_remedy(NULL), "--root DIR") != NULL);
}
