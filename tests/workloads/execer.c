/* SPDX-License-Identifier: MIT
 * execer: a process that execs itself again and again.  Each image spins
 * in exec_spin for an equal share of the time and then, while N is above
 * 0, execs its own executable with N-1 and the seconds that remain, so
 * one pid runs N+1 images in turn.  Samples have this stack:
 *
 *   main -> exec_spin
 *
 *   execer N [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_EXECS 100000

static const char *progname = "execer";
#define SYNOPSIS "N [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Spin for SECONDS/(N+1) seconds (SECONDS defaults to 2), then, if\n"
	       "N is above 0, exec this program again with N-1 and the seconds\n"
	       "that remain.  N is 0 to %d.\n"
	       "\n"
	       "  -h  show this help\n",
	       MAX_EXECS);
}

/* Written with the result, so the spin is not dead code. */
static volatile double sink;

/* Spins until the deadline. */
STACK_FN void exec_spin(double deadline)
{
	double x = 1;
	while (now() < deadline) {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 1.0000001 + 1e-7;
	}
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/*
 * Spins for its share of the time and execs itself with one exec fewer,
 * to test that a profiler follows a process through exec: the pid stays,
 * the mappings change.
 */
int main(int argc, char **argv)
{
	long n;
	double seconds = 2;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":h")) != -1) {
		switch (c) {
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	if (optind == argc)
		usage_error(NULL, NULL);
	if (parse_count(argv[optind], 0, MAX_EXECS, &n))
		usage_error("bad number of execs", argv[optind]);
	seconds_operand(argc, argv, optind + 1, &seconds);

	double slice = seconds / (n + 1);
	exec_spin(now() + slice);
	if (n == 0)
		return 0;

	/*
	 * Exec the file /proc/self/exe points to rather than the link itself:
	 * the kernel names the new image (its comm) after the last part of the
	 * path, which would make it "exe".
	 */
	char path[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (len < 0 || len == (ssize_t)sizeof(path) - 1)
		strcpy(path, "/proc/self/exe");
	else
		path[len] = '\0';

	char count[32], rest[64];
	snprintf(count, sizeof(count), "%ld", n - 1);
	snprintf(rest, sizeof(rest), "%.9g", seconds - slice);
	char *args[] = { argv[0], count, rest, NULL };
	execv(path, args);
	int err = errno;
	/* The file may have been replaced since it started: use the link. */
	if (strcmp(path, "/proc/self/exe") != 0)
		execv("/proc/self/exe", args);
	fprintf(stderr, "%s: cannot exec '%s': %s\n", progname, path,
		strerror(err));
	return 2;
}
