/* SPDX-License-Identifier: MIT
 * several-processes: one recording of several running processes.  The
 * first is attached before the recording starts; the second while it
 * runs, stopped while its threads are attached; then every descendant
 * of a third, attached as they run.  Every half second the threads the
 * targets started since are picked up.  The recording ends after
 * SECONDS, or when every target has exited.
 *
 *   several-processes OUT.sps PID1 PID2 ROOT SECONDS
 *
 * Prints what it attached ("attached PID mode"), how many threads the
 * refreshes added ("refreshed N"), then the summary ("name value").
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <stackpulse.h>

#define MAX_DESCENDANTS 64

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(struct sp_recorder *r, const char *what)
{
	fprintf(stderr, "several-processes: %s: %s\n", what, sp_errmsg(-1));
	sp_recorder_free(r);
	return 1;
}

/* Attaches the descendants of root that run now; returns how many, or -1. */
static int attach_descendants(struct sp_recorder *r, pid_t root)
{
	pid_t pids[MAX_DESCENDANTS];
	ssize_t n = sp_discover_descendants(root, pids, MAX_DESCENDANTS);
	if (n < 0)
		return -1;
	if (n > MAX_DESCENDANTS)
		n = MAX_DESCENDANTS;
	for (ssize_t i = 0; i < n; i++) {
		/* One that has ended meanwhile is no error. */
		if (sp_recorder_attach_process(r, pids[i], SP_ATTACH_NO_STOP) < 0)
			fprintf(stderr, "several-processes: %d: %s\n", (int)pids[i], sp_errmsg(-1));
		else
			printf("attached %d no-stop\n", (int)pids[i]);
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: several-processes OUT.sps PID1 PID2 ROOT SECONDS\n");
		return 2;
	}
	pid_t first = (pid_t)atoi(argv[2]), second = (pid_t)atoi(argv[3]);
	pid_t root = (pid_t)atoi(argv[4]);
	double seconds = atof(argv[5]);

	struct sp_options *o = sp_options_new();
	if (!o || sp_options_set_rate(o, 999) < 0)
		return die(NULL, "options");
	struct sp_recorder *r = sp_recorder_new(o, argv[1]);
	sp_options_free(o);
	if (!r)
		return die(NULL, argv[1]);

	if (sp_recorder_attach(r, first) < 0)
		return die(r, argv[2]);
	printf("attached %d before-start\n", (int)first);
	if (sp_recorder_poll(r, 0) < 0)
		return die(r, "poll");
	if (sp_recorder_attach_process(r, second, SP_ATTACH_STOP) < 0)
		return die(r, argv[3]);
	printf("attached %d stop\n", (int)second);
	if (attach_descendants(r, root) < 0)
		return die(r, argv[4]);

	int refreshed = 0;
	double start = now_s(), last = start;
	while (now_s() - start < seconds && sp_recorder_targets_active(r) == 1) {
		/* A poll returns early when a buffer fills: time by the clock. */
		if (sp_recorder_poll(r, 100) < 0)
			return die(r, "poll");
		if (now_s() - last < 0.5)
			continue;
		last = now_s();
		/* The slow tick: threads started since their process was attached. */
		int k = sp_recorder_refresh_threads(r, first);
		if (k > 0)
			refreshed += k;
		k = sp_recorder_refresh_threads(r, second);
		if (k > 0)
			refreshed += k;
	}
	printf("refreshed %d\n", refreshed);

	struct sp_summary s;
	if (sp_recorder_finish(r, &s) < 0)
		return die(r, "finish");
	sp_recorder_free(r);
	printf("samples %llu\n", (unsigned long long)s.samples);
	printf("lost_events %llu\n", (unsigned long long)s.lost_events);
	printf("processes %llu\n", (unsigned long long)s.processes);
	printf("threads %llu\n", (unsigned long long)s.threads);
	printf("kernel_enabled %d\n", s.kernel_enabled);
	for (unsigned k = 0; k < s.nerrors; k++)
		if (s.errors[k])
			printf("error.%s %llu\n", sp_error_kind_name(k), (unsigned long long)s.errors[k]);
	return 0;
}
