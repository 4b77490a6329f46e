/* SPDX-License-Identifier: MIT
 * lifecycle: spends time where a process's life begins and ends, for the
 * unwinder's tests: in a child made by vfork before it execs, in main, and
 * in an atexit handler during exit.
 *
 * lifecycle SECONDS: each phase spins for SECONDS; the vfork child then
 * execs "lifecycle 0", which returns at once.
 */
#include <sys/wait.h>

static const char *progname = "lifecycle";
#define SYNOPSIS "SECONDS"

#include "workload.h"

static double seconds;
static volatile double sink;

STACK_FN static void spin_for(double s)
{
	double end = now() + s;
	double x = 1.0;
	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

STACK_FN static void in_vfork_child(void)
{
	spin_for(seconds);
	sink = sink + 1;	/* no tail call: the frame stays */
}

STACK_FN static void in_main(void)
{
	spin_for(seconds);
	sink = sink + 1;	/* no tail call: the frame stays */
}

STACK_FN static void in_atexit(void)
{
	spin_for(seconds);
	sink = sink + 1;	/* no tail call: the frame stays */
}

int main(int argc, char **argv)
{
	if (argc != 2)
		usage_error(NULL, NULL);
	if (parse_seconds(argv[1], &seconds))
		usage_error("bad number of seconds", argv[1]);
	if (seconds == 0)
		return 0;
	atexit(in_atexit);
	pid_t pid = vfork();
	if (pid == 0) {
		/* The child runs on its parent's stack until it execs. */
		in_vfork_child();
		execl("/proc/self/exe", "lifecycle", "0", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return 1;
	waitpid(pid, NULL, 0);
	in_main();
	return 0;
}
