/*
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
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The functions of the asserted call chain are never inlined, and on GCC
 * also never cloned or folded together by interprocedural passes, which
 * would rename them (exec_spin.isra.0).
 */
#ifdef __clang__
#define STACK_FN __attribute__((noinline))
#else
#define STACK_FN __attribute__((noinline, noipa))
#endif

/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_EXECS 100000

static const char *progname = "execer";

/* Written with the result, so the spin is not dead code. */
static volatile double sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

/* Parses a decimal number of seconds; returns 0, or -1 when s is not one. */
static int parse_seconds(const char *s, double *out)
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
static int parse_count(const char *s, long min, long max, long *out)
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

#define SYNOPSIS "N [SECONDS]"

static void usage(void)
{
	printf("Usage: %s " SYNOPSIS "\n"
	       "Spin for SECONDS/(N+1) seconds (SECONDS defaults to 2), then, if\n"
	       "N is above 0, exec this program again with N-1 and the seconds\n"
	       "that remain.  N is 0 to %d.\n"
	       "\n"
	       "  -h  show this help\n",
	       progname, MAX_EXECS);
}

/* Says what is wrong with arg, if anything, and exits with status 3. */
static _Noreturn void usage_error(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "%s: %s '%s'\n", progname, what, arg);
	fprintf(stderr, "Usage: %s " SYNOPSIS "\n", progname);
	exit(3);
}

/* The same for an option that getopt() rejected. */
static _Noreturn void option_error(const char *what, int opt)
{
	char name[3] = { '-', (char)opt, '\0' };
	usage_error(what, name);
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
		case ':':
			option_error("missing value for option", optopt);
		default:
			option_error("unknown option", optopt);
		}
	}
	if (optind == argc)
		usage_error(NULL, NULL);
	if (parse_count(argv[optind], 0, MAX_EXECS, &n))
		usage_error("bad number of execs", argv[optind]);
	if (argc - optind > 2)
		usage_error("unexpected argument", argv[optind + 2]);
	if (optind + 1 < argc && parse_seconds(argv[optind + 1], &seconds))
		usage_error("bad number of seconds", argv[optind + 1]);

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
