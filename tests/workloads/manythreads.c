/* SPDX-License-Identifier: MIT
 * manythreads: many threads alive at once, each of which burns a little
 * CPU, so that each one shows up in a profile, and then sleeps until the
 * end.  Samples on the CPU have this stack, innermost last:
 *
 *   many_start -> thread_spin
 *
 * Below many_start are the C library's thread start frames.
 *
 *   manythreads [-n THREADS] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Arithmetic steps between two looks at the clocks, some 20 microseconds. */
#define SPIN_STEPS 10000
/* The least CPU time each thread spins for, in seconds. */
#define MIN_SPIN_SECONDS 0.01
#define MAX_THREADS 10000
/* Small stacks, so that thousands of threads fit easily. */
#define THREAD_STACK (256 * 1024)

static const char *progname = "manythreads";
#define SYNOPSIS "[-n THREADS] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Start THREADS threads (default 200) that each spin for a share\n"
	       "of the CPUs, at least %g CPU seconds, and sleep until SECONDS\n"
	       "seconds (default 2) after the start; then join them all.  The\n"
	       "run ends late if the CPUs are too busy for all the spins.\n"
	       "\n"
	       "  -n THREADS  number of threads, 1 to %d\n"
	       "  -h          show this help\n",
	       MIN_SPIN_SECONDS, MAX_THREADS);
}

/* CPU seconds each thread spins for. */
static double spin_seconds;
/* The CLOCK_MONOTONIC time until which every thread sleeps. */
static struct timespec end_ts;

/*
 * The threads wait for the last one to be created before they spin;
 * otherwise the main thread, competing with all the spinners, would
 * start the last ones late.
 */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

/* Written with every result, so no spin is dead code. */
static volatile double sink;

/*
 * Spins until this thread has used the given CPU seconds.  It counts CPU
 * time, not wall time, so that each thread gets its samples even when
 * the CPUs are busy with other work.
 */
STACK_FN void thread_spin(double cpu_seconds)
{
	double cpu_end = clock_seconds(CLOCK_THREAD_CPUTIME_ID) + cpu_seconds;
	double x = 1;
	do {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 1.0000001 + 1e-7;
	} while (clock_seconds(CLOCK_THREAD_CPUTIME_ID) < cpu_end);
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* The entry of each thread: spin a little, then sleep to the end. */
STACK_FN void *many_start(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate_lock);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	thread_spin(spin_seconds);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end_ts, NULL) ==
	       EINTR)
		;
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/*
 * Starts many threads that each spin briefly and then sleep until the
 * end, and joins them, to test a profiler with many threads at once.
 * The threads start spinning together once all exist.  The spins ask
 * for about half of the online CPUs' time over the run, each at least
 * MIN_SPIN_SECONDS of CPU; when the CPUs cannot give them that in time,
 * the run ends late rather than leave a thread unsampled.
 */
int main(int argc, char **argv)
{
	long nthreads = 200;
	double seconds = 2;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":n:h")) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 1, MAX_THREADS, &nthreads))
				usage_error("bad thread count", optarg);
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);

	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	spin_seconds = seconds * ncpus / (2.0 * nthreads);
	if (spin_seconds < MIN_SPIN_SECONDS)
		spin_seconds = MIN_SPIN_SECONDS;
	double end_time = clock_seconds(CLOCK_MONOTONIC) + seconds;
	end_ts.tv_sec = (time_t)end_time;
	end_ts.tv_nsec = (long)((end_time - end_ts.tv_sec) * 1e9);
	if (end_ts.tv_nsec > 999999999)
		end_ts.tv_nsec = 999999999;

	pthread_t *threads = calloc(nthreads, sizeof(*threads));
	pthread_attr_t attr;
	if (!threads || pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, THREAD_STACK)) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return 2;
	}
	long started;
	int err = 0;
	for (started = 0; started < nthreads; started++) {
		err = pthread_create(&threads[started], &attr, many_start,
				     NULL);
		if (err)
			break;
	}
	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	for (long i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_attr_destroy(&attr);
	free(threads);
	if (err) {
		fprintf(stderr, "%s: cannot start thread %ld: %s\n", progname,
			started + 1, strerror(err));
		return 2;
	}
	return 0;
}
