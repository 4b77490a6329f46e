/* SPDX-License-Identifier: MIT
 * faulter: a process that page-faults.  It maps fresh anonymous memory,
 * writes one byte in each page of it, and unmaps it, again and again, so
 * almost every page fault it takes has this stack:
 *
 *   main -> faulter_touch
 *
 *   faulter [SECONDS]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* The memory mapped and touched in one round: 4 MiB. */
#define ROUND_BYTES (4u << 20)

static const char *progname = "faulter";
#define SYNOPSIS "[SECONDS]"

#include "workload.h"

static void usage(void)
{
	usage_line(stdout);
	printf("Map 4 MiB of fresh memory, write a byte in each page, unmap it,\n"
	       "and again, for SECONDS seconds (default 2).\n"
	       "\n"
	       "  -h  show this help\n");
}

/* Writes a byte in each page of p: a page fault each. */
STACK_FN void faulter_touch(volatile char *p, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		p[off] = (char)off;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = 2;
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":h")) != -1) {
		switch (c) {
		case 'h':
			usage();
			return 0;
		default:
			option_error(c);
		}
	}
	seconds_operand(argc, argv, optind, &seconds);

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	double deadline = now() + seconds;
	while (now() < deadline) {
		char *p = mmap(NULL, ROUND_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("faulter: mmap");
			return 1;
		}
		faulter_touch(p, ROUND_BYTES, page);
		munmap(p, ROUND_BYTES);
	}
	return 0;
}
