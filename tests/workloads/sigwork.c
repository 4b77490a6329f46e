/* SPDX-License-Identifier: MIT
 * sigwork: spends its time in a signal handler, so that samples have a
 * signal frame in their stacks: main -> main_loop, interrupted every
 * millisecond of CPU time by SIGPROF, whose handler on_prof calls
 * handler_work, which burns about 0.8 ms.
 *
 * Usage: sigwork [SECONDS]   (default 2)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "workload.h"

static volatile double sink;

__attribute__((noinline)) static void handler_work(void)
{
	double t0 = now();
	double x = sink;
	while (now() - t0 < 0.0008)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void on_prof(int sig)
{
	(void)sig;
	handler_work();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void main_loop(double seconds)
{
	double t0 = now();
	double x = 1;
	while (now() - t0 < seconds)
		for (int i = 0; i < 1000; i++)
			x = x * 0.9999999 + 0.25;
	sink = x;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	if (!(seconds >= 0)) {
		fprintf(stderr, "usage: sigwork [SECONDS]\n");
		return 3;
	}
	struct sigaction sa = { .sa_handler = on_prof };
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	main_loop(seconds);
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &it, NULL);
	return 0;
}
