/* SPDX-License-Identifier: MIT
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
#include <stdio.h>
#include <unistd.h>

/* Arithmetic steps between two looks at the clock, some 20 microseconds. */
#define SPIN_STEPS 10000
/* Each frame of deep_recurse takes a few dozen bytes of the 8 MiB stack. */
#define MAX_DEPTH 100000

static const char *progname = "deep";
#define SYNOPSIS "[-d DEPTH] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Recurse DEPTH levels (default 200) and spin at the bottom for\n"
	       "SECONDS seconds (default 2).\n"
	       "\n"
	       "  -d DEPTH  frames of deep_recurse, 1 to %d\n"
	       "  -h        show this help\n",
	       MAX_DEPTH);
}

/* Written with the result, so the spin is not dead code. */
static volatile double sink;

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
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);

	sink = deep_recurse(depth, now() + seconds);
	return 0;
}
