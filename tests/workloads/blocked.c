/* SPDX-License-Identifier: MIT
 * blocked: a service that waits, for attaching to without disturbing it.
 * One thread is blocked in read() on standard input (a pipe), one in
 * epoll_wait(), and one wakes every 10 ms for a short burst of CPU in
 * blocked_tick and sleeps again.  Handlers for SIGCONT, SIGCHLD, SIGURG
 * and SIGWINCH are installed without SA_RESTART, so any of those signals
 * interrupts the waits: each EINTR is counted and the wait is resumed.
 * Samples on the CPU have this stack:
 *
 *   tick_thread -> blocked_tick
 *
 * With -c, one more thread churns: it keeps CHURN_ALIVE threads that each
 * spin for 30 ms of their own CPU time in churn_spin and end, starting
 * another whenever one has ended, so threads are born all the time (as
 * while a profiler attaches); each has at most some 30 ms of samples.
 *
 * A byte (or the end) on standard input ends it; it prints
 * "eintr=N signals=M": the waits interrupted and the signals handled.
 *
 *   blocked [-p] [-c]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Arithmetic steps in one burst, some 200 microseconds of CPU. */
#define TICK_STEPS 100000
#define TICK_NS 10000000L

static const char *progname = "blocked";
#define SYNOPSIS "[-p] [-c]"

#include "workload.h"

#define CHURN_ALIVE 8

static unsigned long eintr, signals;
static int churn_alive;
static int done_fd = -1;	/* an eventfd: the reader has its byte */
static volatile int done;

static void usage(void)
{
	usage_line(stdout);
	printf("Wait in read() on standard input and in epoll_wait(), with a thread\n"
	       "that ticks every 10 ms, until a byte or the end arrives on standard\n"
	       "input; then print how many waits a signal interrupted (eintr=N)\n"
	       "and how many signals were handled (signals=M).\n"
	       "\n"
	       "  -p  print the pid on standard output once everything waits\n"
	       "  -c  also start threads that each spin 30 ms of CPU and end, one\n"
	       "      after the other\n"
	       "  -h  show this help\n");
}

static void on_signal(int sig)
{
	(void)sig;
	__atomic_add_fetch(&signals, 1, __ATOMIC_RELAXED);
}

static void count_eintr(void)
{
	__atomic_add_fetch(&eintr, 1, __ATOMIC_RELAXED);
}

static void *reader_thread(void *arg)
{
	char c;
	(void)arg;
	while (read(STDIN_FILENO, &c, 1) < 0 && errno == EINTR)
		count_eintr();
	uint64_t one = 1;
	if (write(done_fd, &one, sizeof(one)) < 0)
		perror("blocked: eventfd");
	return NULL;
}

static void *epoll_thread(void *arg)
{
	(void)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, done_fd, &ev) < 0) {
		perror("blocked: epoll");
		return NULL;
	}
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);
		if (n < 0 && errno == EINTR)
			count_eintr();
		else
			break;
	}
	close(ep);
	return NULL;
}

STACK_FN static double blocked_tick(double x)
{
	for (long i = 0; i < TICK_STEPS; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

static void *tick_thread(void *arg)
{
	volatile double x = 1;
	(void)arg;
	while (!done) {
		x = blocked_tick(x);
		struct timespec ts = { 0, TICK_NS };
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			count_eintr();
	}
	return NULL;
}

STACK_FN static double churn_spin(double x)
{
	double end = clock_seconds(CLOCK_THREAD_CPUTIME_ID) + 0.03;
	while (clock_seconds(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	return x;
}

static void *churn_one(void *arg)
{
	volatile double x = churn_spin(1);
	(void)x;
	(void)arg;
	__atomic_sub_fetch(&churn_alive, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *churn_thread(void *arg)
{
	pthread_attr_t attr;
	(void)arg;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (!done) {
		pthread_t t;
		if (__atomic_load_n(&churn_alive, __ATOMIC_RELAXED) < CHURN_ALIVE) {
			__atomic_add_fetch(&churn_alive, 1, __ATOMIC_RELAXED);
			if (pthread_create(&t, &attr, churn_one, NULL) != 0)
				break;
			continue;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* The last ones end before the process does. */
	while (__atomic_load_n(&churn_alive, __ATOMIC_RELAXED) > 0) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int c;
	int print_pid = 0, churn = 0;
	while ((c = getopt(argc, argv, ":pch")) != -1) {
		switch (c) {
		case 'p': print_pid = 1; break;
		case 'c': churn = 1; break;
		case 'h': usage(); return 0;
		default: option_error(c);
		}
	}
	if (optind < argc)
		usage_error("unexpected operand", argv[optind]);

	/* No SA_RESTART: a handled signal makes every wait fail with EINTR. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	int sigs[] = { SIGCONT, SIGCHLD, SIGURG, SIGWINCH };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);

	done_fd = eventfd(0, EFD_CLOEXEC);
	if (done_fd < 0) {
		perror("blocked: eventfd");
		return 1;
	}
	pthread_t rd, ep, tk, ch;
	pthread_create(&rd, NULL, reader_thread, NULL);
	pthread_create(&ep, NULL, epoll_thread, NULL);
	pthread_create(&tk, NULL, tick_thread, NULL);
	if (churn)
		pthread_create(&ch, NULL, churn_thread, NULL);
	/* The signals go to the waiting threads, not to pthread_join. */
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (print_pid) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
	}
	pthread_join(rd, NULL);
	pthread_join(ep, NULL);
	done = 1;
	pthread_join(tk, NULL);
	if (churn)
		pthread_join(ch, NULL);
	printf("eintr=%lu signals=%lu\n", eintr, signals);
	return 0;
}
