/* SPDX-License-Identifier: MIT
 * workload.h: what the test workloads share.  Each workload is a program
 * of one file that the Makefile builds on its own, so the helpers here
 * are static and each program gets its own copy; the inline keeps the
 * compiler quiet about those a program does not use.
 *
 * None of these helpers does the work that tests sample: the loops whose
 * stacks the tests assert stay in each workload's own STACK_FN functions,
 * and now() and clock_seconds() are small enough to be inlined into them.
 *
 * A workload that parses its command line with these helpers defines,
 * before it includes this file, the string progname and the macro
 * SYNOPSIS, the usage line without the program name.
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * The functions of a workload's asserted call chain are never inlined,
 * and on GCC also never cloned or folded together by interprocedural
 * passes, which would rename them (recurse.isra.0) or merge two of them
 * into one symbol.
 */
#ifdef __clang__
#define STACK_FN __attribute__((noinline))
#else
#define STACK_FN __attribute__((noinline, noipa))
#endif

/* Returns the time of the given clock in seconds. */
static inline double clock_seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Returns the CLOCK_MONOTONIC time in seconds. */
static inline double now(void)
{
	return clock_seconds(CLOCK_MONOTONIC);
}

/* Parses a decimal number of seconds; returns 0, or -1 when s is not one. */
static inline int parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= 0) || v > 1e6)
		return -1;
	*out = v;
	return 0;
}

/* Parses a whole decimal count in [min, max]; returns 0 or -1. */
static inline int parse_count(const char *s, long min, long max, long *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

#ifdef SYNOPSIS

/* Prints the usage line to f. */
static inline void usage_line(FILE *f)
{
	fprintf(f, "Usage: %s " SYNOPSIS "\n", progname);
}

/*
 * Says what is wrong with arg, if what is not NULL, prints the usage line
 * to stderr and exits with status 3.
 */
static inline _Noreturn void usage_error(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "%s: %s '%s'\n", progname, what, arg);
	usage_line(stderr);
	exit(3);
}

/*
 * The same for an option that getopt() rejected: c is what getopt()
 * returned, ':' for a missing value and '?' for an unknown option, with
 * opterr set to 0 and optstring starting with ':'.
 */
static inline _Noreturn void option_error(int c)
{
	char name[3] = { '-', (char)optopt, '\0' };
	usage_error(c == ':' ? "missing value for option" : "unknown option",
		    name);
}

/*
 * Takes the optional SECONDS operand, argv[i], into *seconds, leaving
 * *seconds alone when there is none.  Exits through usage_error() when
 * it is not a number of seconds or when more operands follow it.
 */
static inline void seconds_operand(int argc, char **argv, int i,
				   double *seconds)
{
	if (argc - i > 1)
		usage_error("unexpected argument", argv[i + 1]);
	if (i < argc && parse_seconds(argv[i], seconds))
		usage_error("bad number of seconds", argv[i]);
}

#endif /* SYNOPSIS */

#endif /* WORKLOAD_H */
