/* SPDX-License-Identifier: MIT
 * inlined: a function inlined into its caller, for symbolization tests:
 * main -> outer_work, into which inner_step is inlined (always_inline);
 * the hot loop lies in inner_step's code.
 *
 * Usage: inlined [SECONDS]   (default 1)
 */
#include <stdlib.h>

#include "workload.h"

static volatile double sink;

static inline __attribute__((always_inline)) double inner_step(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;	/* INNER_STEP_LOOP */
	return x;
}

__attribute__((noinline)) static void outer_work(double seconds)
{
	double t0 = now(), x = 1;
	while (now() - t0 < seconds)
		x = inner_step(x);	/* OUTER_WORK_CALL */
	sink = x;
}

int main(int argc, char **argv)
{
	outer_work(argc > 1 ? atof(argv[1]) : 1);
	return 0;
}
