/*
 * deep: a deep stack.  deep_recurse calls itself until there are DEPTH
 * frames of it, and the innermost one calls deep_leaf, which spins until
 * the time is up.  Nearly every sample has this stack, innermost last:
 *
 *   main -> deep_recurse (DEPTH frames) -> deep_leaf
 *
 *   deep [-d DEPTH] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * The functions of the asserted call chain are never inlined, and on GCC
 * also never cloned or folded together by interprocedural passes, which
 * would rename them (deep_recurse.isra.0) or merge two into one symbol.
 */
#ifdef __clang__
#define STACK_FN __attribute__((noinline))
#else
#define STACK_FN __attribute__((noinline, noipa))
#endif

/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
/* Each frame of deep_recurse takes a few dozen bytes of the 8 MiB stack. */
#define MAX_DEPTH 100000

static const char *progname = "deep";

/* Written with the result, so the spin is not dead code. */
static volatile double sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins until the deadline, looking at the clock every SPIN_STEPS steps. */
STACK_FN double deep_leaf(double deadline)
{
	double x = 1;
	do {
		for (int i = 0; i < SPIN_STEPS; i++)
			x = x * 1.0000001 + 1e-7;
	} while (now() < deadline);
	__asm__ volatile("" ::: "memory");
	return x;
}

/*
 * Recursion that stays recursion: the barrier and the addition after the
 * call keep GCC from turning it into a tail call or a loop.
 */
STACK_FN double deep_recurse(long depth, double deadline)
{
	double r;
	if (depth > 1)
		r = deep_recurse(depth - 1, deadline);
	else
		r = deep_leaf(deadline);
	__asm__ volatile("" ::: "memory");
	return r + depth;
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

#define SYNOPSIS "[-d DEPTH] [SECONDS]"

static void usage(void)
{
	printf("Usage: %s " SYNOPSIS "\n"
	       "Recurse DEPTH levels (default 200) and spin at the bottom for\n"
	       "SECONDS seconds (default 2).\n"
	       "\n"
	       "  -d DEPTH  frames of deep_recurse, 1 to %d\n"
	       "  -h        show this help\n",
	       progname, MAX_DEPTH);
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
 * Recurses to a given depth and spins in the innermost frame for a number
 * of seconds, to test unwinding through many frames.
 */
int main(int argc, char **argv)
{
	long depth = 200;
	double seconds = 2;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":d:h")) != -1) {
		switch (c) {
		case 'd':
			if (parse_count(optarg, 1, MAX_DEPTH, &depth))
				usage_error("bad depth", optarg);
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

	sink = deep_recurse(depth, now() + seconds);
	return 0;
}
