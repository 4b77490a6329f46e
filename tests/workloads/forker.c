/*
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
#include <time.h>
#include <unistd.h>

/*
 * The functions of the asserted call chain are never inlined, and on GCC
 * also never cloned or folded together by interprocedural passes, which
 * would rename them (child_spin.isra.0) or merge two into one symbol.
 */
#ifdef __clang__
#define STACK_FN __attribute__((noinline))
#else
#define STACK_FN __attribute__((noinline, noipa))
#endif

/* The shortest life of a child, in seconds. */
#define MIN_CHILD_SECONDS 0.02
/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
#define MAX_CHILDREN 100000

static const char *progname = "forker";

/* Written with every result, so no spin is dead code. */
static volatile double sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

#define SYNOPSIS "[-n CHILDREN] [-v] [SECONDS]"

static void usage(void)
{
	printf("Usage: %s " SYNOPSIS "\n"
	       "Fork CHILDREN children (default 50) one after another over\n"
	       "about SECONDS seconds (default 2).  Each child spins for\n"
	       "SECONDS/CHILDREN seconds, at least %g, and exits; the parent\n"
	       "spins for half that while it waits.\n"
	       "\n"
	       "  -n CHILDREN  number of children, 0 to %d\n"
	       "  -v           print each child's pid, one a line, and at the\n"
	       "               end 'children=N'\n"
	       "  -h           show this help\n",
	       progname, MIN_CHILD_SECONDS, MAX_CHILDREN);
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
		case ':':
			option_error("missing value for option", optopt);
		default:
			option_error("unknown option", optopt);
		}
	}
	if (argc - optind > 1)
		usage_error("unexpected argument", argv[optind + 1]);
	if (optind < argc && parse_seconds(argv[optind], &seconds))
		usage_error("bad number of seconds", argv[optind]);

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
