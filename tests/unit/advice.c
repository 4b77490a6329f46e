/*
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
