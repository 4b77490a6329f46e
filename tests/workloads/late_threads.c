/* SPDX-License-Identifier: MIT
 * late_threads: threads that appear after the process has started, as
 * they do when a profiler is already watching.  The main thread spins
 * alone for DELAY seconds, then starts THREADS threads, and all of them
 * spin until SECONDS after the start.  Samples have these stacks,
 * innermost last:
 *
 *   main thread:  main -> main_spin
 *   new threads:  late_start -> late_spin
 *
 * Below late_start are the C library's thread start frames.
 *
 *   late_threads [-n THREADS] [-w DELAY] [-v] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_THREADS 1024

static const char *progname = "late_threads";
#define SYNOPSIS "[-n THREADS] [-w DELAY] [-v] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Spin in the main thread, start THREADS more threads (default 2)\n"
	       "after DELAY seconds, and spin in all of them until SECONDS\n"
	       "seconds (default 2) after the start.  DELAY defaults to 0.5, or\n"
	       "to half of SECONDS when that is shorter.\n"
	       "\n"
	       "  -n THREADS  number of new threads, 0 to %d\n"
	       "  -w DELAY    seconds before they start, at most SECONDS\n"
	       "  -v          print the tid of each new thread, one a line\n"
	       "  -h          show this help\n",
	       MAX_THREADS);
}

/* The CLOCK_MONOTONIC second at which every thread stops. */
static double end_time;
/* Whether each new thread prints its tid. */
static int verbose;

/* Written with every result, so no spin is dead code. */
static volatile double sink;

/* The main thread's spin, until the deadline. */
STACK_FN void main_spin(double deadline)
{
	double x = 1;
	while (now() < deadline) {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 1.0000001 + 1e-7;
	}
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* A new thread's spin, until the deadline. */
STACK_FN void late_spin(double deadline)
{
	double x = 2;
	while (now() < deadline) {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 0.9999999 + 1e-7;
	}
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* The entry of each new thread. */
STACK_FN void *late_start(void *arg)
{
	(void)arg;
	/* The stdout lock keeps the lines of several threads whole. */
	if (verbose)
		printf("%ld\n", (long)syscall(SYS_gettid));
	late_spin(end_time);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/*
 * Spins in the main thread, starts more spinning threads after a delay,
 * and joins them all at the end, to test that a profiler follows threads
 * created after it started.
 */
int main(int argc, char **argv)
{
	long nthreads = 2;
	double delay = 0.5, seconds = 2;
	const char *delay_arg = NULL;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":n:w:vh")) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 0, MAX_THREADS, &nthreads))
				usage_error("bad thread count", optarg);
			break;
		case 'w':
			if (parse_seconds(optarg, &delay))
				usage_error("bad delay", optarg);
			delay_arg = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);
	if (!delay_arg && delay > seconds / 2)
		delay = seconds / 2;
	if (delay > seconds)
		usage_error("delay longer than the run", delay_arg);

	pthread_t *threads = calloc(nthreads ? nthreads : 1, sizeof(*threads));
	if (!threads) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return 2;
	}
	/* A reader of the tids sees each one as soon as its thread runs. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	double start = now();
	end_time = start + seconds;

	main_spin(start + delay);
	long started;
	int err = 0;
	for (started = 0; started < nthreads; started++) {
		err = pthread_create(&threads[started], NULL, late_start, NULL);
		if (err)
			break;
	}
	main_spin(end_time);
	for (long i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	if (err) {
		fprintf(stderr, "%s: cannot start thread %ld: %s\n", progname,
			started + 1, strerror(err));
		return 2;
	}
	return 0;
}
