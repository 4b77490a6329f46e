/* SPDX-License-Identifier: MIT
 * halfsleep: a thread that spends half its wall-clock time computing and
 * half asleep, for off-CPU and wall-clock profiles.  Each 20-millisecond
 * period starts with computing until its 10th millisecond, in
 * halfsleep_compute, then sleeps until the period's end, in
 * halfsleep_nap; both deadlines are absolute, so a late wake-up is taken
 * from the next burst.  On a busy machine a late wake-up makes the wait
 * longer than half; the program prints the time it waited, as it saw it,
 * for a test to compare with a profile's:
 *
 *   main -> halfsleep_run -> halfsleep_compute
 *   main -> halfsleep_run -> halfsleep_nap -> clock_nanosleep
 *
 *   halfsleep [-r] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* One period, in nanoseconds: half computing, half asleep. */
#define PERIOD_NS 20000000LL

static const char *progname = "halfsleep";
#define SYNOPSIS "[-r] [SECONDS]"

#include "workload.h"

static void usage(void)
{
	usage_line(stdout);
	printf("Compute for 10 ms, sleep for 10 ms, for SECONDS seconds (default 2),\n"
	       "then print \"waited W ns of R ns\": the time spent waiting, of the time run.\n"
	       "\n"
	       "  -r  block in read() on a pipe (a helper thread writes to it\n"
	       "      at each deadline) instead of clock_nanosleep()\n"
	       "  -h  show this help\n");
}

static volatile double sink;

static long long ns_of(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

static struct timespec ts_of(long long ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL };
}

static long long mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return ns_of(&t);
}

/* Computes until the monotonic clock reaches until (ns). */
STACK_FN double halfsleep_compute(long long until)
{
	double x = sink;
	do {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 1e-7;
		__asm__ volatile("" ::: "memory");
	} while (mono_ns() < until);
	return x;
}

/* Sleeps until the monotonic clock reaches until (ns). */
STACK_FN void halfsleep_nap(long long until)
{
	struct timespec t = ts_of(until);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
		;
}

static int pipefd[2];

/* Blocks in read() until the byte for the deadline comes. */
STACK_FN void halfsleep_wait(void)
{
	char c;
	while (read(pipefd[0], &c, 1) != 1)
		;
}

/* The time spent in halfsleep_nap or halfsleep_wait, as the thread saw it. */
static long long waited_ns;

STACK_FN void halfsleep_run(long long end, int use_read, long long start)
{
	for (long long p = start; p < end; p += PERIOD_NS) {
		sink = halfsleep_compute(p + PERIOD_NS / 2);
		long long t0 = mono_ns();
		if (use_read)
			halfsleep_wait();
		else
			halfsleep_nap(p + PERIOD_NS);
		waited_ns += mono_ns() - t0;
	}
}

#include <pthread.h>

static long long g_start, g_end;

/* -r: writes a byte to the pipe at the end of each period. */
static void *waker(void *arg)
{
	(void)arg;
	for (long long p = g_start; p < g_end; p += PERIOD_NS) {
		struct timespec t = ts_of(p + PERIOD_NS);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
			;
		if (write(pipefd[1], "x", 1) != 1)
			return NULL;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	int use_read = 0, c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":rh")) != -1) {
		switch (c) {
		case 'r':
			use_read = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);
	g_start = mono_ns();
	g_end = g_start + (long long)(seconds * 1e9);
	pthread_t t;
	if (use_read) {
		if (pipe(pipefd) != 0 || pthread_create(&t, NULL, waker, NULL) != 0) {
			perror(progname);
			return 2;
		}
	}
	halfsleep_run(g_end, use_read, g_start);
	long long ran = mono_ns() - g_start;
	if (use_read)
		pthread_join(t, NULL);
	/* What a profile of wall-clock time should find, with late wake-ups counted as waiting. */
	printf("waited %lld ns of %lld ns\n", waited_ns, ran);
	return 0;
}
