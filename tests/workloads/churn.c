/* SPDX-License-Identifier: MIT
 * churn: threads that come and go, one after another, so that a profiler
 * sees many threads of one process exit while the process lives on.  The
 * main thread starts a thread, spins while it runs, joins it and starts
 * the next.  Samples have these stacks, innermost last:
 *
 *   thread:       churn_start -> churn_spin
 *   main thread:  main -> main_spin
 *
 * Below churn_start are the C library's thread start frames.
 *
 *   churn [-n THREADS] [-v] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The shortest life of a thread, in seconds. */
#define MIN_THREAD_SECONDS 0.02
/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_THREADS 100000

static const char *progname = "churn";
#define SYNOPSIS "[-n THREADS] [-v] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Start THREADS threads (default 50) one after another over\n"
	       "about SECONDS seconds (default 2).  Each spins for\n"
	       "SECONDS/THREADS seconds, at least %g, and exits; the main\n"
	       "thread spins for half that, then joins it.\n"
	       "\n"
	       "  -n THREADS   number of threads, 0 to %d\n"
	       "  -v           print each thread's id, one a line, and at the\n"
	       "               end 'threads=N'\n"
	       "  -h           show this help\n",
	       MIN_THREAD_SECONDS, MAX_THREADS);
}

/* Written with every result, so no spin is dead code. */
static volatile double sink;

/* A fixed amount of dependent floating-point work. */
STACK_FN double churn_spin(double x)
{
	for (int i = 0; i < SPIN_STEPS; i++)
		x = x * 1.0000001 + 1e-7;
	__asm__ volatile("" ::: "memory");
	return x;
}

/* A thread's whole life: spins for the seconds *arg holds, then returns its id. */
STACK_FN void *churn_start(void *arg)
{
	double deadline = now() + *(const double *)arg;
	double x = 1;
	while (now() < deadline)
		x = churn_spin(x);
	sink = x;
	__asm__ volatile("" ::: "memory");
	return (void *)(long)syscall(SYS_gettid);
}

/* The main thread's work while a thread runs: spins for the given seconds. */
STACK_FN void main_spin(double seconds)
{
	double deadline = now() + seconds;
	double x = 2;
	while (now() < deadline) {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 0.9999999 + 1e-7;
	}
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/*
 * Starts a number of short-lived CPU-bound threads one after another,
 * each joined before the next starts.  Exits 0, or 2 when a thread could
 * not be started.
 */
int main(int argc, char **argv)
{
	long nthreads = 50;
	double seconds = 2;
	int verbose = 0;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":n:vh")) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 0, MAX_THREADS, &nthreads))
				usage_error("bad number of threads", optarg);
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

	setvbuf(stdout, NULL, _IOLBF, 0);
	double slice = nthreads ? seconds / nthreads : 0;
	if (slice < MIN_THREAD_SECONDS)
		slice = MIN_THREAD_SECONDS;

	for (long i = 0; i < nthreads; i++) {
		pthread_t t;
		void *tid;
		int e = pthread_create(&t, NULL, churn_start, &slice);
		if (e) {
			fprintf(stderr, "%s: pthread_create: %s\n", progname, strerror(e));
			return 2;
		}
		main_spin(slice / 2);
		pthread_join(t, &tid);
		if (verbose)
			printf("%ld\n", (long)tid);
	}
	if (verbose)
		printf("threads=%ld\n", nthreads);
	return 0;
}
