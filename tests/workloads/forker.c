/* SPDX-License-Identifier: MIT
 * forker: a parent that forks many short-lived children, one at a time.
 * Each child burns CPU and leaves with _exit(0); the parent burns CPU
 * while it runs and then reaps it.  Samples have these stacks:
 *
 *   child:   main -> child_work -> child_spin
 *   parent:  main -> parent_work
 *
 *   forker [-n CHILDREN] [-v] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The shortest life of a child, in seconds. */
#define MIN_CHILD_SECONDS 0.02
/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_CHILDREN 100000

static const char *progname = "forker";
#define SYNOPSIS "[-n CHILDREN] [-v] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Fork CHILDREN children (default 50) one after another over\n"
	       "about SECONDS seconds (default 2).  Each child spins for\n"
	       "SECONDS/CHILDREN seconds, at least %g, and exits; the parent\n"
	       "spins for half that while it waits.\n"
	       "\n"
	       "  -n CHILDREN  number of children, 0 to %d\n"
	       "  -v           print each child's pid, one a line, and at the\n"
	       "               end 'children=N'\n"
	       "  -h           show this help\n",
	       MIN_CHILD_SECONDS, MAX_CHILDREN);
}

/* Written with every result, so no spin is dead code. */
static volatile double sink;

/* A fixed amount of dependent floating-point work. */
STACK_FN double child_spin(double x)
{
	for (int i = 0; i < SPIN_STEPS; i++)
		x = x * 1.0000001 + 1e-7;
	__asm__ volatile("" ::: "memory");
	return x;
}

/* The child's whole life: spins for the given seconds. */
STACK_FN void child_work(double seconds)
{
	double deadline = now() + seconds;
	double x = 1;
	while (now() < deadline)
		x = child_spin(x);
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* The parent's work between forks: spins for the given seconds. */
STACK_FN void parent_work(double seconds)
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
 * Forks a number of short-lived CPU-bound children one after another,
 * spinning in the parent while each one runs and reaping it before the
 * next, so a profiler sees many processes come and go.  Exits 0 when
 * every child exited 0.
 */
int main(int argc, char **argv)
{
	long nchildren = 50;
	double seconds = 2;
	int verbose = 0;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":n:vh")) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 0, MAX_CHILDREN, &nchildren))
				usage_error("bad number of children", optarg);
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

	/* A reader of the pids sees each one as soon as its child exists. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	double slice = nchildren ? seconds / nchildren : 0;
	if (slice < MIN_CHILD_SECONDS)
		slice = MIN_CHILD_SECONDS;

	for (long i = 0; i < nchildren; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", progname,
				strerror(errno));
			return 2;
		}
		if (pid == 0) {
			child_work(slice);
			_exit(0);
		}
		if (verbose)
			printf("%ld\n", (long)pid);
		parent_work(slice / 2);

		int status;
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				fprintf(stderr, "%s: waitpid: %s\n", progname,
					strerror(errno));
				return 2;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "%s: child %ld did not exit 0 (wait status %#x)\n",
				progname, (long)pid, status);
			return 2;
		}
	}
	if (verbose)
		printf("children=%ld\n", nchildren);
	return 0;
}
