/* SPDX-License-Identifier: MIT
 * switcher: two threads that hand a token back and forth through a pair
 * of pipes, for the cost of a context switch under a profiler.  Each
 * hand-off blocks the thread that passed the token in read() until the
 * token comes back, so every round trip is two switch-outs, one of each
 * thread.  Off-CPU stacks (the thread blocked in read) are these,
 * innermost last:
 *
 *   main -> run_pair -> ping -> wait_token -> read
 *   pong_thread -> pong -> wait_token -> read
 *
 * By default both threads are bound to one CPU (the first the process may
 * run on), so that no hand-off finds its peer already running on another
 * CPU and every one switches; -a lets the scheduler place them.  Between
 * hand-offs each thread does STEPS arithmetic steps (-w), a fixed amount
 * of work, so that a run of a fixed number of round trips does the same
 * work with or without a profiler and its wall time alone tells what the
 * profiler added.  The default, some 8 microseconds of arithmetic on a
 * current x86-64 CPU, makes about 100k switches a second; -w 0 makes as
 * many as the kernel can.
 *
 * At the end it prints
 *
 *   round_trips=N switches=M elapsed_seconds=S
 *
 * where switches are the context switches of the two threads during the
 * round trips (getrusage(RUSAGE_THREAD), voluntary and involuntary) and
 * elapsed_seconds the wall time from the first hand-off to the last.
 *
 *   switcher [-n ROUND_TRIPS] [-w STEPS] [-a]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_ROUND_TRIPS 1000000000L
#define MAX_STEPS 100000000L

static const char *progname = "switcher";
#define SYNOPSIS "[-n ROUND_TRIPS] [-w STEPS] [-a]"

#include "workload.h"

/*
 * Prints the help for -h on stdout.  The defaults it states are those
 * main() starts from.
 */
static void usage(void)
{
	usage_line(stdout);
	printf("Pass a token between two threads ROUND_TRIPS times there and back\n"
	       "(default 200000) through a pair of pipes, with STEPS arithmetic\n"
	       "steps (default 5000) between hand-offs, then print\n"
	       "'round_trips=N switches=M elapsed_seconds=S'.\n"
	       "\n"
	       "  -n ROUND_TRIPS  round trips, 1 to %ld\n"
	       "  -w STEPS        arithmetic steps per hand-off, 0 to %ld\n"
	       "  -a              let the threads run on any CPU (default: both\n"
	       "                  on the first CPU the process may use)\n"
	       "  -h              show this help\n",
	       MAX_ROUND_TRIPS, MAX_STEPS);
}

struct pair {
	int to_pong[2];		/* pipe: ping writes, pong reads */
	int to_ping[2];		/* pipe: pong writes, ping reads */
	long round_trips;
	long steps;
	long pong_switches;	/* the pong thread's, during its loop */
	int error;		/* an errno of the pong thread, or 0 */
};

/* Written with every result, so the work between hand-offs is not dead. */
static volatile double sink;

/* The work between two hand-offs. */
STACK_FN double work(long steps)
{
	double x = sink;
	for (long i = 0; i < steps; i++)
		x = x * 1.0000001 + 1e-7;
	return x;
}

/* Returns the calling thread's context switches so far. */
static long thread_switches(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* Blocks until the token arrives on fd; returns 0, or an errno. */
STACK_FN int wait_token(int fd)
{
	char c;
	ssize_t n;
	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	__asm__ volatile("" ::: "memory");
	return n == 1 ? 0 : n < 0 ? errno : EPIPE;
}

/* Passes the token on through fd; returns 0, or an errno. */
static int pass_token(int fd)
{
	ssize_t n;
	do
		n = write(fd, "t", 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : errno;
}

/* The side that answers: waits for the token, works, sends it back. */
STACK_FN int pong(struct pair *p)
{
	int err = 0;
	for (long i = 0; i < p->round_trips && !err; i++) {
		err = wait_token(p->to_pong[0]);
		if (!err) {
			sink = work(p->steps);
			err = pass_token(p->to_ping[1]);
		}
	}
	__asm__ volatile("" ::: "memory");
	return err;
}

static void *pong_thread(void *arg)
{
	struct pair *p = arg;
	long before = thread_switches();
	p->error = pong(p);
	p->pong_switches = thread_switches() - before;
	/* Closing its end ends ping's wait if pong stopped early. */
	close(p->to_ping[1]);
	return NULL;
}

/* The side that starts each round trip; returns 0, or an errno. */
STACK_FN int ping(struct pair *p)
{
	int err = 0;
	for (long i = 0; i < p->round_trips && !err; i++) {
		sink = work(p->steps);
		err = pass_token(p->to_pong[1]);
		if (!err)
			err = wait_token(p->to_ping[0]);
	}
	__asm__ volatile("" ::: "memory");
	return err;
}

/*
 * Binds the calling thread, and the threads it creates after, to the
 * first CPU it may run on.  Returns 0, or an errno.
 */
static int bind_first_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return errno;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			return sched_setaffinity(0, sizeof(set), &set) ? errno : 0;
		}
	}
	return EINVAL;
}

/*
 * Runs the round trips of p between the calling thread (ping) and a new
 * one (pong).  Stores the wall time of the round trips in *elapsed and
 * the switches of both threads in *switches; returns 0, or an errno with
 * *what naming the call that failed.
 */
STACK_FN int run_pair(struct pair *p, double *elapsed, long *switches,
		      const char **what)
{
	pthread_t thread;
	int err;

	*what = "pipe";
	if (pipe(p->to_pong))
		return errno;
	if (pipe(p->to_ping)) {
		err = errno;
		close(p->to_pong[0]);
		close(p->to_pong[1]);
		return err;
	}
	err = pthread_create(&thread, NULL, pong_thread, p);
	if (err) {
		*what = "pthread_create";
		close(p->to_pong[0]);
		close(p->to_pong[1]);
		close(p->to_ping[0]);
		close(p->to_ping[1]);
		return err;
	}
	long before = thread_switches();
	double start = now();
	err = ping(p);
	*elapsed = now() - start;
	*switches = thread_switches() - before;
	/* Closing its end ends pong's wait if ping stopped early. */
	close(p->to_pong[1]);
	pthread_join(thread, NULL);
	close(p->to_pong[0]);
	close(p->to_ping[0]);
	*switches += p->pong_switches;
	if (!err)
		err = p->error;
	*what = "the hand-off";
	__asm__ volatile("" ::: "memory");
	return err;
}

/*
 * Passes a token between two threads a fixed number of times and reports
 * the round trips, the context switches they took and their wall time.
 */
int main(int argc, char **argv)
{
	struct pair p = { .round_trips = 200000, .steps = 5000 };
	int anywhere = 0;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":n:w:ah")) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 1, MAX_ROUND_TRIPS, &p.round_trips))
				usage_error("bad number of round trips", optarg);
			break;
		case 'w':
			if (parse_count(optarg, 0, MAX_STEPS, &p.steps))
				usage_error("bad number of steps", optarg);
			break;
		case 'a':
			anywhere = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument", argv[optind]);

	int err;
	if (!anywhere && (err = bind_first_cpu())) {
		fprintf(stderr, "%s: cannot bind to one CPU: %s (run with -a)\n",
			progname, strerror(err));
		return 2;
	}
	double elapsed = 0;
	long switches = 0;
	const char *what;
	err = run_pair(&p, &elapsed, &switches, &what);
	if (err) {
		fprintf(stderr, "%s: %s failed: %s\n", progname, what,
			strerror(err));
		return 2;
	}
	printf("round_trips=%ld switches=%ld elapsed_seconds=%.6f\n",
	       p.round_trips, switches, elapsed);
	return 0;
}
