/* SPDX-License-Identifier: MIT
 * profile-command: profile a command from its first instruction to its
 * exit, then print every counter of the recording's summary, one
 * "name value" line each.
 *
 *   profile-command [-k] [-F HZ] [-e EVENT] [-t US] [-i US] OUT.sps COMMAND [ARG...]
 *
 * -k asks for kernel frames too; when the kernel refuses them, the
 * recording goes on with user frames and kernel_enabled says 0.  -F is
 * the rate ("max": the kernel's cap), -e the event ("cpu-clock",
 * "task-clock"), -t and -i the start timestamp and the sample interval
 * the stream's header carries.  OUT.sps "-" is standard output (a
 * pipe will do); the summary then goes to standard error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

static int die(const char *what)
{
	fprintf(stderr, "profile-command: %s: %s\n", what, sp_errmsg(-1));
	return 1;
}

static void print_summary(FILE *f, const struct sp_summary *s)
{
	fprintf(f, "sample_events %llu\n", (unsigned long long)s->sample_events);
	fprintf(f, "samples %llu\n", (unsigned long long)s->samples);
	fprintf(f, "lost_events %llu\n", (unsigned long long)s->lost_events);
	fprintf(f, "lost_samples %llu\n", (unsigned long long)s->lost_samples);
	fprintf(f, "empty_stack_samples %llu\n", (unsigned long long)s->empty_stack_samples);
	fprintf(f, "truncated_frame_markers %llu\n", (unsigned long long)s->truncated_frame_markers);
	fprintf(f, "ignored_user_callchain_frames %llu\n",
		(unsigned long long)s->ignored_user_callchain_frames);
	fprintf(f, "skipped_no_pid %llu\n", (unsigned long long)s->skipped_no_pid);
	fprintf(f, "skipped_no_tid %llu\n", (unsigned long long)s->skipped_no_tid);
	fprintf(f, "skipped_no_time %llu\n", (unsigned long long)s->skipped_no_time);
	fprintf(f, "skipped_no_frames %llu\n", (unsigned long long)s->skipped_no_frames);
	fprintf(f, "throttle_events %llu\n", (unsigned long long)s->throttle_events);
	fprintf(f, "processes %llu\n", (unsigned long long)s->processes);
	fprintf(f, "threads %llu\n", (unsigned long long)s->threads);
	fprintf(f, "duration_ns %llu\n", (unsigned long long)s->duration_ns);
	fprintf(f, "kernel_enabled %d\n", s->kernel_enabled);
	if (s->has_command_status)
		fprintf(f, "command_status %d\n", s->command_status);
	for (unsigned k = 0; k < s->nerrors && sp_error_kind_name(k); k++)
		fprintf(f, "error.%s %llu\n", sp_error_kind_name(k),
			(unsigned long long)s->errors[k]);
}

int main(int argc, char **argv)
{
	struct sp_options *o = sp_options_new();
	int i = 1;
	if (!o)
		return die("options");
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-k") == 0) {
			sp_options_set_kernel(o, true);
		} else if (strcmp(argv[i], "-F") == 0 && i + 1 < argc) {
			const char *hz = argv[++i];
			if (sp_options_set_rate(o, strcmp(hz, "max") == 0 ? SP_RATE_MAX :
					       strtoull(hz, NULL, 10)) < 0)
				return die("-F");
		} else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
			if (sp_options_set_event(o, argv[++i]) < 0)
				return die("-e");
		} else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
			sp_options_set_start_timestamp_us(o, strtoull(argv[++i], NULL, 10));
		} else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) {
			sp_options_set_sample_interval_us(o, strtoull(argv[++i], NULL, 10));
		} else {
			break;
		}
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: profile-command [-k] [-F HZ] [-e EVENT] [-t US] [-i US] "
			"OUT.sps COMMAND [ARG...]\n");
		return 2;
	}

	bool to_stdout = strcmp(argv[i], "-") == 0;
	struct sp_recorder *r = to_stdout ? sp_recorder_new_fd(o, 1) : sp_recorder_new(o, argv[i]);
	sp_options_free(o);
	if (!r)
		return die(argv[i]);
	pid_t pid;
	if (sp_recorder_attach_command(r, argv + i + 1, &pid) < 0) {
		sp_recorder_free(r);
		return die(argv[i + 1]);
	}
	/* The first poll starts the recording, and the command with it. */
	while (sp_recorder_process_is_active(r, pid) == 1)
		if (sp_recorder_poll(r, 100) < 0) {
			sp_recorder_free(r);
			return die("poll");
		}
	struct sp_summary s;
	if (sp_recorder_finish(r, &s) < 0) {
		sp_recorder_free(r);
		return die("finish");
	}
	sp_recorder_free(r);
	print_summary(to_stdout ? stderr : stdout, &s);
	return 0;
}
