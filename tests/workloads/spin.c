/* SPDX-License-Identifier: MIT
 * spin: the reference workload.  Every thread runs the same CPU-bound
 * call chain, so a sample taken in the math library has this stack,
 * innermost last, 16 frames from main to cos:
 *
 *   main -> run_workers -> worker -> stage_a -> stage_b -> stage_c
 *        -> recurse (8 frames) -> leaf_compute -> cos
 *
 * libm picks a variant of cos for the CPU at load time, so the innermost
 * symbol may read __cos_fma or the like.  The main thread calls worker()
 * itself; the other threads start in it, so their stacks begin at worker
 * below the C library's thread start.
 *
 *   spin [-t THREADS] [-r] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Levels of recurse() between stage_c and leaf_compute. */
#define RECURSE_DEPTH 8
/* cos() calls per pass of the chain, about 10 microseconds of work. */
#define LEAF_CALLS 512
#define MAX_THREADS 1024

struct worker {
	pthread_t thread;
	double deadline;		/* CLOCK_MONOTONIC seconds */
	unsigned long iterations;	/* passes through the call chain */
};

static const char *progname = "spin";
#define SYNOPSIS "[-t THREADS] [-r] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Run a CPU-bound call chain on THREADS threads (default 2, the\n"
	       "main thread included) for SECONDS seconds (default 2).\n"
	       "\n"
	       "  -t THREADS  number of threads, 1 to %d\n"
	       "  -r          print 'work_seconds=S iterations=N' at the end\n"
	       "  -h          show this help\n",
	       MAX_THREADS);
}

/* Read on every use, so the compiler can neither fold nor hoist cos(). */
static volatile double leaf_input = 0.25;
/* Written with every result, so no pass through the chain is dead code. */
static volatile double sink;

STACK_FN double leaf_compute(unsigned calls)
{
	double acc = 0;
	for (unsigned i = 0; i < calls; i++)
		acc += cos(leaf_input + i * 1e-3);
	return acc;
}

/*
 * Recursion that stays recursion: the barrier and the addition after the
 * call keep GCC from turning it into a tail call or a loop.
 */
STACK_FN double recurse(int depth, unsigned calls)
{
	double r;
	if (depth > 1)
		r = recurse(depth - 1, calls);
	else
		r = leaf_compute(calls);
	__asm__ volatile("" ::: "memory");
	return r + depth;
}

STACK_FN double stage_c(unsigned calls)
{
	double r = recurse(RECURSE_DEPTH, calls);
	__asm__ volatile("" ::: "memory");
	return r * 0.5;
}

STACK_FN double stage_b(unsigned calls)
{
	double r = stage_c(calls);
	__asm__ volatile("" ::: "memory");
	return r - 1.0;
}

STACK_FN double stage_a(unsigned calls)
{
	double r = stage_b(calls);
	__asm__ volatile("" ::: "memory");
	return r + 2.0;
}

/* The thread entry: passes through the chain until the deadline. */
STACK_FN void *worker(void *arg)
{
	struct worker *w = arg;
	while (now() < w->deadline) {
		sink = stage_a(LEAF_CALLS);
		w->iterations++;
	}
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/*
 * Runs worker() on nthreads threads, the calling one included, for the
 * given seconds.  Stores the wall time from the start of the work to the
 * last join in *elapsed and returns the passes made by all threads, or
 * -1 with errno set when a thread cannot be created.
 */
STACK_FN long run_workers(int nthreads, double seconds, double *elapsed)
{
	struct worker *w = calloc(nthreads, sizeof(*w));
	if (!w)
		return -1;
	double start = now();
	for (int i = 0; i < nthreads; i++)
		w[i].deadline = start + seconds;

	int started, err = 0;
	for (started = 1; started < nthreads; started++) {
		err = pthread_create(&w[started].thread, NULL, worker,
				     &w[started]);
		if (err)
			break;
	}
	if (started == nthreads)
		worker(&w[0]);
	unsigned long total = w[0].iterations;
	for (int i = 1; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		total += w[i].iterations;
	}
	*elapsed = now() - start;
	free(w);
	__asm__ volatile("" ::: "memory");
	if (err) {
		errno = err;
		return -1;
	}
	return total;
}

/*
 * Runs the reference call chain on a number of threads for a number of
 * seconds.  With -r it reports the wall time of its own work loop and the
 * passes through the chain, so a benchmark can compare the rate with and
 * without a profiler and leave the profiler's start-up out.
 */
int main(int argc, char **argv)
{
	long nthreads = 2;
	double seconds = 2;
	int report = 0;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":t:rh")) != -1) {
		switch (c) {
		case 't':
			if (parse_count(optarg, 1, MAX_THREADS, &nthreads))
				usage_error("bad thread count", optarg);
			break;
		case 'r':
			report = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);

	double elapsed;
	long iterations = run_workers(nthreads, seconds, &elapsed);
	if (iterations < 0) {
		fprintf(stderr, "%s: cannot start %ld threads: %s\n", progname,
			nthreads, strerror(errno));
		return 2;
	}
	if (report)
		printf("work_seconds=%.6f iterations=%ld\n", elapsed, iterations);
	return 0;
}
