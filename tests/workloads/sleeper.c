/* SPDX-License-Identifier: MIT
 * sleeper: a process that mostly sleeps, for attaching to and detaching
 * from with -p.  Every 10 milliseconds it wakes for a short burst of CPU
 * in sleeper_tick; samples on the CPU have this stack:
 *
 *   main -> sleeper_tick
 *
 *   sleeper [-p] [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Arithmetic steps in one burst, some 200 microseconds of CPU. */
#define TICK_STEPS 100000
/* The sleep between two bursts, in nanoseconds. */
#define TICK_NS 10000000L

static const char *progname = "sleeper";
#define SYNOPSIS "[-p] [SECONDS]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Sleep for SECONDS seconds (default 2), waking every 10 ms for a\n"
	       "short burst of CPU.  SIGTERM or SIGINT ends it early, with\n"
	       "status 0.\n"
	       "\n"
	       "  -p  print the pid on standard output at the start\n"
	       "  -h  show this help\n");
}

/* Set by SIGTERM or SIGINT: finish the loop and exit 0. */
static volatile sig_atomic_t stop;

/* Written with every result, so no burst is dead code. */
static volatile double sink;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One short burst of CPU. */
STACK_FN double sleeper_tick(double x)
{
	for (int i = 0; i < TICK_STEPS; i++)
		x = x * 1.0000001 + 1e-7;
	__asm__ volatile("" ::: "memory");
	return x;
}

/*
 * Sleeps in 10-millisecond naps with a short CPU burst between them for a
 * number of seconds, or until SIGTERM or SIGINT, and exits 0 either way.
 * It is the process that attach and detach tests profile with -p.
 */
int main(int argc, char **argv)
{
	double seconds = 2;
	int print_pid = 0;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":ph")) != -1) {
		switch (c) {
		case 'p':
			print_pid = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);

	/* No SA_RESTART: the signal cuts a nap short with EINTR. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (print_pid) {
		printf("%ld\n", (long)getpid());
		fflush(stdout);
	}

	double deadline = now() + seconds;
	double x = 1;
	const struct timespec nap = { 0, TICK_NS };
	while (!stop && now() < deadline) {
		x = sleeper_tick(x);
		/* An EINTR from a signal ends the nap; the loop sees stop. */
		nanosleep(&nap, NULL);
	}
	sink = x;
	return 0;
}
