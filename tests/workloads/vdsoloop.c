/* SPDX-License-Identifier: MIT
 * vdsoloop: spends its time in the vDSO, so that most samples have their
 * leaf in code that is no file on disk:
 *
 *   main -> vdso_loop -> read_monotonic -> clock_gettime (glibc, then
 *                                          the vDSO's)
 *                     -> read_realtime  -> gettimeofday (the vDSO's,
 *                                          through glibc's IFUNC)
 *
 * Usage: vdsoloop [SECONDS]   (default 2)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static const char *progname = "vdsoloop";
#define SYNOPSIS "[SECONDS]"
#include "workload.h"

static volatile long sink;

STACK_FN static long read_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	__asm__ volatile("" ::: "memory");
	return ts.tv_nsec;
}

STACK_FN static long read_realtime(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	__asm__ volatile("" ::: "memory");
	return tv.tv_usec;
}

STACK_FN static void vdso_loop(double seconds)
{
	double t0 = now();
	long x = 0;
	while (now() - t0 < seconds)
		for (int i = 0; i < 200; i++)
			x += read_monotonic() ^ read_realtime();
	sink = x;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = 2;
	seconds_operand(argc, argv, 1, &seconds);
	vdso_loop(seconds);
	return 0;
}
